"""Simple shear at constant pressure in a deforming periodic cell (docs/cell.md):
frictional spheres (mu_p = 0.5), the friction coefficient mu(I) = |tau| / P and the
solid fraction phi(I) at inertial numbers I = gamma_dot d / sqrt(P / rho), fitted to
mu(I) = mu_s + (mu_2 - mu_s) / (1 + I0 / I) (GDR MiDi 2004; Jop, Forterre & Pouliquen
2006) and phi(I) = phi_c - b I.

    python examples/rheology/simple_shear.py [--I 0.3 0.1 0.01] [--side 10]
        [--discard 1.0 0.3] [--window 1.0 ...] [--kappa 1e4] [--dt] [--fresh] [--quick]
    python examples/rheology/simple_shear.py --replot A.npz [B.npz] [--labels a b]
    mpirun -n 2 python -m mpi4py examples/rheology/simple_shear.py ...

Units: d = 1 (mean diameter), rho = 1, P = 1; Hooke contacts kn = kappa P d with
kappa = 1e4 (--kappa; kt = 2/7 kn, pdem's default), restitution 0.5; dt = 1e-3
sqrt(1e4 / kappa) is 13.7 steps of the shortest contact pi sqrt(m*/kn) (two d = 0.9
spheres). A gas is compressed
isotropically to P (servo on xx, yy, zz), then sheared with L_xy = I while a servo
holds sigma_yy = -P (xx and zz fixed). The I are run in the order given, each from the
end of the previous one (continuation; --fresh: each from the packing): the first
`discard` strain of each I is a transient (first value: the first I, second: the
others), then mu and phi are time-averaged over `window` strain (one value, or one
per I). Every step's stress and volume enter the averages; errors are standard errors
of 10 block means of the window; `trend` is the change of a least-squares line over
the window, to compare with the error (steady state: no trend).
Writes <out>.npz (table, samples, fit), <out>.png with matplotlib. --quick: 216 spheres,
I = 0.05 then 0.3, short windows (a smoke test of the machinery, tests/unit).
"""
import argparse
import json
import time

import numpy as np
from mpi4py import MPI

import pdem

P, KAPPA, MU_P, REST = 1.0, 1.0e4, 0.5, 0.5
BLOCKS = 10


def packing(side, seed, comm, dt=1e-3, steps=20000, max_rate=0.5, kappa=KAPPA):
    """side^3 spheres (d uniform in 0.9 .. 1.1) from a jittered grid, compressed
    isotropically to P (Hooke, kn = kappa P d)."""
    spacing = 1.15
    L = side * spacing
    dom = pdem.Domain((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=dt, comm=comm)
    sim.material("g", density=1.0, kn=kappa * P, friction=MU_P, restitution=REST)
    rng = np.random.default_rng(seed)
    g = (np.arange(side) + 0.5) * spacing
    x, y, z = np.meshgrid(g, g, g, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()]) + rng.uniform(-0.05, 0.05, (side ** 3, 3))
    sim.add_spheres(pos, 0.5 * rng.uniform(0.9, 1.1, side ** 3), "g",
                    velocities=rng.normal(0.0, 0.5, (side ** 3, 3)))
    sim.cell.control(stress={"xx": -P, "yy": -P, "zz": -P}, max_rate=max_rate)
    sim.run(steps=steps)
    return sim


def solid_volume(sim):
    p = sim.particles(gather=True)
    return float(np.sum(4.0 / 3.0 * np.pi * p["radius"] ** 3))


class Sampler:
    """Sums every step's cell stress and volume; closes a sample every `every` steps."""

    def __init__(self, sim, every):
        self.sim, self.every = sim, every
        self.acc, self.n, self.rows = np.zeros(10), 0, []
        sim.events.every(1, self, name="rheology-sampler")

    def __call__(self, sim):
        s = sim.cell.last_stress
        self.acc += np.concatenate([s.ravel(), [sim.cell.volume]])
        self.n += 1
        if self.n == self.every:
            self.rows.append(self.acc / self.n)
            self.acc[:], self.n = 0.0, 0


def block_stats(x):
    """(mean, standard error of BLOCKS block means, change of a least-squares line over
    the series)."""
    x = np.asarray(x)
    blocks = np.array([b.mean() for b in np.array_split(x, BLOCKS)])
    slope = np.polyfit(np.arange(len(x)), x, 1)[0]
    return x.mean(), blocks.std(ddof=1) / np.sqrt(BLOCKS), slope * len(x)


def shear(sim, inertial, discard, window, samples=100):
    """Shear at L_xy = I with sigma_yy = -P: discard, then average over window strain.
    A dict of I, mu, phi, p = sigma_yy / -P, skew = (sigma_xy - sigma_yx) / P, their
    errors and trends, the samples, CPU seconds."""
    clock = time.process_time()
    sim.cell.control(stress={"yy": -P}, strain_rate={"xy": inertial}, max_rate=2.0 * inertial)
    rate = inertial * sim.dt                        # strain per step
    sim.run(steps=int(round(discard / rate)))
    steps = int(round(window / rate))
    every = max(1, steps // samples)
    sampler = Sampler(sim, every)
    sim.run(steps=every * samples)
    sim.events.cancel("rheology-sampler")
    rows = np.array(sampler.rows)
    sig = rows[:, :9].reshape(-1, 3, 3)
    mu = -0.5 * (sig[:, 0, 1] + sig[:, 1, 0]) / -sig[:, 1, 1]
    phi = solid_volume(sim) / rows[:, 9]
    out = {"I": inertial, "discard": discard, "window": every * samples * rate,
           "cpu": time.process_time() - clock, "mu_t": np.abs(mu), "phi_t": phi}
    skew = (sig[:, 0, 1] - sig[:, 1, 0]) / P          # torque balance: 0 on average
    for name, x in (("mu", np.abs(mu)), ("phi", phi), ("p", -sig[:, 1, 1] / P), ("skew", skew)):
        out[name], out[name + "_err"], out[name + "_trend"] = block_stats(x)
    return out


def law(i, mu_s, dmu, i0):
    return mu_s + dmu / (1.0 + i0 / i)


def fit(rows):
    """mu(I) (weighted by the errors) and phi = phi_c - b I, scipy curve_fit; parameters,
    their standard errors (scaled by the fit's scatter) and chi^2 per degree of freedom."""
    from scipy.optimize import curve_fit
    i = np.array([r["I"] for r in rows])
    mu = np.array([r["mu"] for r in rows])
    mu_err = np.maximum([r["mu_err"] for r in rows], 1e-4)
    phi = np.array([r["phi"] for r in rows])
    phi_err = np.maximum([r["phi_err"] for r in rows], 1e-5)
    (mu_s, dmu, i0), cov = curve_fit(law, i, mu, p0=(0.35, 0.3, 0.3), sigma=mu_err,
                                     maxfev=20000)
    e = np.sqrt(np.diag(cov))
    (phi_c, b), cov2 = curve_fit(lambda x, c, b: c - b * x, i, phi, sigma=phi_err)
    e2 = np.sqrt(np.diag(cov2))
    dof = max(1, len(i) - 3)
    grad = np.array([0.0, 1.0 / i0, -dmu / i0 ** 2])     # of the slope at I -> 0, dmu / I0
    return {"mu_s": mu_s, "mu_s_err": e[0], "mu_2": mu_s + dmu,
            "mu_2_err": np.sqrt(cov[0, 0] + cov[1, 1] + 2 * cov[0, 1]), "I0": i0,
            "I0_err": e[2], "slope": dmu / i0, "slope_err": np.sqrt(grad @ cov @ grad),
            "phi_c": phi_c, "phi_c_err": e2[0], "b": b, "b_err": e2[1],
            "chi2_mu": np.sum(((mu - law(i, mu_s, dmu, i0)) / mu_err) ** 2) / dof,
            "chi2_phi": np.sum(((phi - phi_c + b * i) / phi_err) ** 2) / (dof + 1)}


def plot(sets, f, out):
    """mu(I) and phi(I) of each (label, rows) in sets, with the fit f of the first."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for (label, rows), fmt in zip(sets, ("o", "s", "^", "v")):
        i = np.array([r["I"] for r in rows])
        kw = {"fmt": fmt, "label": label, "capsize": 2, "mfc": "none" if fmt != "o" else None}
        a1.errorbar(i, [r["mu"] for r in rows], [r["mu_err"] for r in rows], **kw)
        a2.errorbar(i, [r["phi"] for r in rows], [r["phi_err"] for r in rows], **kw)
    ii = np.logspace(-3.3, np.log10(0.5), 100)
    if f:
        a1.plot(ii, law(ii, f["mu_s"], f["mu_2"] - f["mu_s"], f["I0"]),
                label="fit: mu_s %.3f, mu_2 %.3f, I0 %.3f" % (f["mu_s"], f["mu_2"], f["I0"]))
        a2.plot(ii, f["phi_c"] - f["b"] * ii,
                label="fit: phi_c - b I, phi_c %.4f, b %.3f" % (f["phi_c"], f["b"]))
    a1.plot(ii, law(ii, 0.383, 0.26, 0.279), "--", label="Jop et al. 2006 (glass beads)")
    for a, name in ((a1, "mu = |tau| / P"), (a2, "phi")):
        a.set_xscale("log")
        a.set_xlabel("I")
        a.set_ylabel(name)
        a.legend(fontsize="small")
    a1.set_title("simple shear at constant P, mu_p = 0.5", fontsize="medium")
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=120)


def table(rows):
    """Markdown rows: I, mu, phi (errors), sigma_yy / -P, the trends of mu and phi over
    the window in units of their standard error (sqrt(12) x the error of the mean, for
    a line through independent blocks), strains, CPU seconds."""
    for r in rows:
        t = [r[k + "_trend"] / (np.sqrt(12.0) * r[k + "_err"]) for k in ("mu", "phi")]
        print("| %g | %.4f +- %.4f | %.4f +- %.4f | %.3f | %+.1f, %+.1f | %.2f + %.2f | %.0f |" % (
            r["I"], r["mu"], r["mu_err"], r["phi"], r["phi_err"], r["p"], t[0], t[1],
            r["discard"], r["window"], r["cpu"]))


def load(path):
    return json.loads(str(np.load(path)["rows"]))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--I", type=float, nargs="+", default=[0.3, 0.1, 0.03])
    ap.add_argument("--side", type=int, default=10)
    ap.add_argument("--dt", type=float, default=None, help="default 1e-3 sqrt(1e4 / kappa)")
    ap.add_argument("--kappa", type=float, default=KAPPA, help="kn / (P d)")
    ap.add_argument("--discard", type=float, nargs=2, default=[1.0, 0.3],
                    help="transient strain: first I, the others")
    ap.add_argument("--window", type=float, nargs="+", default=[1.0],
                    help="averaging strain: one value, or one per I")
    ap.add_argument("--fresh", action="store_true", help="each I from the packing")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="rheology")
    ap.add_argument("--replot", nargs="+", metavar="NPZ",
                    help="no run: fit the first study's rows, plot them with the others'")
    ap.add_argument("--labels", nargs="+", help="--replot: a label per file")
    args = ap.parse_args(argv)
    if args.replot:
        sets = [(label, load(path)) for label, path in
                zip(args.labels or args.replot, args.replot)]
        f = fit(sets[0][1])
        for label, rows in sets:
            print(label)
            table(rows)
        print("fit: %s" % json.dumps({k: round(float(v), 4) for k, v in f.items()}))
        plot(sets, f, args.out)
        return sets[0][1], f
    if args.dt is None:
        args.dt = 1e-3 * np.sqrt(KAPPA / args.kappa)       # 13.7 steps per contact
    pack_steps = int(round(20.0 / args.dt))
    if args.quick:
        args.I, args.side, args.discard, args.window = [0.05, 0.3], 6, [0.15, 0.3], [0.25]
        pack_steps = 4000
    windows = args.window * len(args.I) if len(args.window) == 1 else args.window
    if len(windows) != len(args.I):
        raise SystemExit("--window: one value or one per I")
    comm = MPI.COMM_WORLD
    clock = time.process_time()
    sim = packing(args.side, 1, comm, args.dt, pack_steps, kappa=args.kappa)
    path = args.out + "-packed.h5"
    if args.fresh:
        sim.checkpoint(path)
    say = print if comm.rank == 0 else (lambda *a, **k: None)
    say("packed: N = %d, phi = %.4f, sigma = %s, cell %.2f d, %.0f s CPU" % (
        args.side ** 3, solid_volume(sim) / sim.cell.volume,
        np.diag(sim.cell.last_stress).round(3), sim.cell.volume ** (1 / 3),
        time.process_time() - clock), flush=True)
    rows = []
    for k, (inertial, window) in enumerate(zip(args.I, windows)):
        if args.fresh and k:
            sim = pdem.restart(path, comm=comm)
        r = shear(sim, inertial, args.discard[0 if (k == 0 or args.fresh) else 1], window)
        rows.append(r)
        say("I = %.4g: mu = %.4f +- %.4f (trend %+.4f), phi = %.4f +- %.4f (trend %+.4f), "
            "sigma_yy/-P = %.4f, strain %.2f + %.2f, %.0f s CPU" % (
                inertial, r["mu"], r["mu_err"], r["mu_trend"], r["phi"], r["phi_err"],
                r["phi_trend"], r["p"], r["discard"], r["window"], r["cpu"]), flush=True)
        if comm.rank == 0:
            np.savez(args.out + ".npz", rows=json.dumps(rows, default=lambda a: np.asarray(a).tolist()))
    if comm.rank != 0:
        return rows, {}
    f = fit(rows) if len(rows) >= 4 else {}
    if f:
        say("fit: %s" % json.dumps({k: round(float(v), 4) for k, v in f.items()}))
    np.savez(args.out + ".npz", rows=json.dumps(rows, default=lambda a: np.asarray(a).tolist()),
             fit=json.dumps({k: float(v) for k, v in f.items()}))
    if not args.quick:
        plot([("pdem, N = %d" % args.side ** 3, rows)], f, args.out)
    return rows, f


if __name__ == "__main__":
    main()
