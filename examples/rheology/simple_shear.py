"""Simple shear at constant pressure in a deforming periodic cell (docs/cell.md):
frictional spheres (mu_p = 0.5), the friction coefficient mu(I) = |tau| / P and the
solid fraction phi(I) at inertial numbers I = gamma_dot d / sqrt(P / rho), fitted to
mu(I) = mu_s + (mu_2 - mu_s) / (1 + I0 / I) (GDR MiDi 2004; Jop, Forterre & Pouliquen
2006) and phi(I) = phi_c - b I.

    python examples/rheology/simple_shear.py [--I 0.3 0.1 0.03] [--side 8] [--strain 3]
    mpirun -n 2 python -m mpi4py examples/rheology/simple_shear.py ...

Units: d = 1 (mean diameter), rho = 1, P = 1; stiffness kn = kappa P d with kappa = 1e4.
Each I starts from the same isotropically compressed packing (servo on xx, yy, zz),
then shears with L_xy = I (gamma_dot = I sqrt(P/rho)/d) while a servo holds
sigma_yy = -P (xx and zz fixed); mu and phi are averaged over strain 1 .. end.
Writes rheology.npz, and with matplotlib rheology.png.
"""
import argparse
import json
import time

import numpy as np
from mpi4py import MPI

import pdem

P, KAPPA, MU_P, REST = 1.0, 1.0e4, 0.5, 0.5


def packing(side, seed, comm):
    """A gas of side^3 spheres (d uniform in 0.9 .. 1.1) on a jittered grid, compressed
    isotropically to P."""
    spacing = 1.15
    L = side * spacing
    dom = pdem.Domain((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=5e-4, comm=comm)
    sim.material("g", density=1.0, kn=KAPPA * P, friction=MU_P, restitution=REST)
    rng = np.random.default_rng(seed)
    g = (np.arange(side) + 0.5) * spacing
    x, y, z = np.meshgrid(g, g, g, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()]) + rng.uniform(-0.05, 0.05, (side ** 3, 3))
    sim.add_spheres(pos, 0.5 * rng.uniform(0.9, 1.1, side ** 3), "g",
                    velocities=rng.normal(0.0, 0.5, (side ** 3, 3)))
    sim.cell.control(stress={"xx": -P, "yy": -P, "zz": -P}, max_rate=0.5)
    return sim


def solid_fraction(sim):
    p = sim.particles(gather=True)
    return float(np.sum(4.0 / 3.0 * np.pi * p["radius"] ** 3) / sim.cell.volume)


def shear(sim, inertial, strain, every=200):
    """Shear at L_xy = I with sigma_yy = -P; (I, mu, phi, their standard errors)."""
    sim.cell.control(stress={"yy": -P}, strain_rate={"xy": inertial}, max_rate=2.0 * inertial)
    steps = int(round(strain / (inertial * sim.dt)))
    mu, phi = [], []
    for k in range(0, steps, every):
        sim.run(steps=every)
        gamma = (k + every) * sim.dt * inertial
        if gamma >= 1.0:
            s = sim.cell.last_stress
            mu.append(-0.5 * (s[0, 1] + s[1, 0]) / -s[1, 1])
            phi.append(solid_fraction(sim))
    mu, phi = np.array(mu), np.array(phi)
    return inertial, abs(mu.mean()), phi.mean(), mu.std() / np.sqrt(len(mu)), phi.std() / np.sqrt(len(phi))


def law(i, mu_s, dmu, i0):
    return mu_s + dmu / (1.0 + i0 / i)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--I", type=float, nargs="+", default=[0.3, 0.1, 0.03])
    ap.add_argument("--side", type=int, default=8)
    ap.add_argument("--strain", type=float, default=3.0)
    ap.add_argument("--out", default="rheology")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    clock = time.time()
    base = packing(args.side, 1, comm)
    base.run(steps=20000)
    path = args.out + "-packed.h5"
    base.checkpoint(path)
    if comm.rank == 0:
        print("packed: phi = %.4f, sigma = %s, %.0f s" % (
            solid_fraction(base), np.diag(base.cell.last_stress).round(3), time.time() - clock),
            flush=True)
    rows = []
    for inertial in args.I:
        sim = pdem.restart(path, comm=comm)
        rows.append(shear(sim, inertial, args.strain))
        if comm.rank == 0:
            print("I = %.4g: mu = %.4f +- %.4f, phi = %.4f +- %.4f (%.0f s)"
                  % (rows[-1][0], rows[-1][1], rows[-1][3], rows[-1][2], rows[-1][4],
                     time.time() - clock), flush=True)
    rows = np.array(rows)
    if comm.rank != 0:
        return
    fit = {}
    if len(rows) >= 3:
        from scipy.optimize import curve_fit
        (mu_s, dmu, i0), _ = curve_fit(law, rows[:, 0], rows[:, 1], p0=(0.35, 0.3, 0.3),
                                       sigma=np.maximum(rows[:, 3], 1e-3), maxfev=20000)
        b, phi_c = np.polyfit(rows[:, 0], rows[:, 2], 1)
        fit = {"mu_s": mu_s, "mu_2": mu_s + dmu, "I0": i0, "phi_c": phi_c, "b": -b}
        print("fit: %s" % json.dumps({k: round(float(v), 4) for k, v in fit.items()}))
    np.savez(args.out + ".npz", rows=rows, **fit)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.6))
    a1.errorbar(rows[:, 0], rows[:, 1], rows[:, 3], fmt="o", label="pdem, mu_p = 0.5")
    ii = np.logspace(-3, 0, 100)
    if fit:
        a1.plot(ii, law(ii, fit["mu_s"], fit["mu_2"] - fit["mu_s"], fit["I0"]), label="fit")
    a1.plot(ii, law(ii, 0.383, 0.26, 0.279), "--", label="Jop et al. 2006 (glass beads)")
    a1.set_xscale("log")
    a1.set_xlabel("I")
    a1.set_ylabel("mu = |tau| / P")
    a1.legend(fontsize="small")
    a2.errorbar(rows[:, 0], rows[:, 2], rows[:, 4], fmt="o")
    if fit:
        a2.plot(ii, fit["phi_c"] - fit["b"] * ii)
    a2.set_xscale("log")
    a2.set_xlabel("I")
    a2.set_ylabel("phi")
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=120)


if __name__ == "__main__":
    main()
