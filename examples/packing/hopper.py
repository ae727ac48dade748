"""Fill a conical hopper with polydisperse glass beads and settle them to rest, two ways,
and compare the wall time (docs/packing.md, bench/README.md):

  pack     pdem.pack into the part of the hopper the settled grains fill (seed 002's
           relaxation), then settle under gravity;
  lattice  the usual way: a cubic lattice with jitter in the hopper's bounding box,
           clipped to the hopper (every sphere inside), the lowest N sites, then
           settle (the grains fall and dissipate).

Both use the same N radii and the same container: a region wall of the hopper
(Simulation.add_region_wall, seed 002's rule as a contact). "At rest": the kinetic
energy (translation + rotation) per grain below --rest x m_mean g d_mean, tested
every 100 steps.

    python examples/packing/hopper.py [--quick] [--out results/hopper] [--n 20000]
    mpirun -n 2 python -m mpi4py examples/packing/hopper.py
"""
import argparse
import math
import os
import time

import numpy as np
from mpi4py import MPI

import pdem

R0, R1, H = 0.03, 0.08, 0.16           # hopper: bottom and top radii, height (m)
RMIN, RMAX = 0.0009, 0.0016            # bead radii, uniform (m)
DENSITY, KN, RESTITUTION, FRICTION = 2500.0, 500.0, 0.5, 0.4


def hopper():
    return pdem.Cone((0, 0, 0), (0, 0, 1), R0, R1, H)


def cone_volume(h):
    rh = R0 + (R1 - R0) * h / H
    return math.pi * h / 3.0 * (R0 * R0 + R0 * rh + rh * rh)


def fill_height(solid_volume, fraction):
    """Height h of the hopper whose volume is solid_volume / fraction (bisection)."""
    lo, hi = 0.0, H
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if cone_volume(mid) * fraction < solid_volume else (lo, mid)
    return hi


def lattice(region, radii, seed):
    """The lowest len(radii) sites of a jittered cubic lattice (spacing 2.1 r_max, jitter
    +-0.05 r_max) in the region's bounding box with f(site) <= -1.05 r_max."""
    a, j = 2.1 * RMAX, 0.05 * RMAX
    lo, hi = region.bounds
    axes = [np.arange(lo[d] + a / 2, hi[d], a) for d in range(3)]
    sites = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    sites = sites[region(sites) <= -(RMAX + j)]
    if len(sites) < len(radii):
        raise SystemExit("the lattice holds %d sites, fewer than %d" % (len(sites), len(radii)))
    sites = sites[np.argsort(sites[:, 2], kind="stable")[:len(radii)]]
    return sites + np.random.default_rng(seed).uniform(-j, j, sites.shape)


def settle(x, r, comm, rest, dt, max_steps, label):
    """Settle (x, r) in the hopper under gravity until at rest; returns (seconds, steps,
    simulated time, particles)."""
    span = R1 + 0.005
    dom = pdem.Domain((-span, -span, -0.005), (span, span, H + 0.005))
    sim = pdem.Simulation(dom, dt=dt, gravity=(0, 0, -9.81), comm=comm)
    m_min = 4 / 3 * math.pi * RMIN ** 3 * DENSITY
    zeta = -math.log(RESTITUTION) / math.sqrt(math.pi ** 2 + math.log(RESTITUTION) ** 2)
    mat = sim.material("glass", density=DENSITY, kn=KN,
                       gamma_n=2 * zeta * math.sqrt(KN / (0.5 * m_min)), friction=FRICTION)
    sim.add_region_wall(hopper(), mat)
    sim.add_spheres(x, r, mat)
    m_mean = float(np.mean(4 / 3 * math.pi * r ** 3 * DENSITY))
    scale = len(r) * m_mean * 9.81 * 2 * float(np.mean(r))
    t0 = time.perf_counter()
    steps, e = 0, None
    while steps < max_steps:
        sim.run(steps=100)
        steps += 100
        en = sim.energy()
        e = (en["kinetic"] + en["rotational"]) / scale
        if comm.rank == 0 and steps % 2000 == 0:
            print("  %s: step %d, t = %.4f s, kinetic energy / (N m g d) = %.3g"
                  % (label, steps, sim.time, e), flush=True)
        if e < rest:
            break
    seconds = time.perf_counter() - t0
    return seconds, steps, sim.time, sim.particles(gather=True), e


def describe(p, label, seconds, steps, t, e, before=0.0):
    z = p["position"][:, 2]
    top = np.sort(z + p["radius"])[-len(z) // 100:].mean()      # mean of the top 1 %
    solid = float(np.sum(4 / 3 * math.pi * p["radius"] ** 3))
    print("%s: %d grains at rest after %d steps (%.3f s simulated) in %.1f s%s; "
          "kinetic energy / (N m g d) %.2g; bed top %.4f m, mean z %.4f m, solid fraction "
          "below the top %.3f" % (label, len(z), steps, t, seconds,
                                   " (+ %.1f s pack = %.1f s)" % (before, before + seconds)
                                   if before else "", e, top, z.mean(),
                                   solid / cone_volume(top)), flush=True)
    return top


def section(ax, x, r, axis=1):
    """The spheres cut by the plane x[axis] = 0, as their true circles of section."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Circle
    cut = np.abs(x[:, axis]) < r
    rho = np.sqrt(r[cut] ** 2 - x[cut, axis] ** 2)
    u, v = [d for d in range(3) if d != axis]
    pc = PatchCollection([Circle((a, b), c) for a, b, c in zip(x[cut, u], x[cut, v], rho)],
                         cmap="viridis", linewidths=0)
    pc.set_array(r[cut])
    ax.add_collection(pc)


def draw(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = (len(results) + 1) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(11, 4.2 * rows), squeeze=False)
    for ax in axes.ravel()[len(results):]:
        ax.axis("off")
    for ax, (title, p) in zip(axes.T.ravel(), results):
        section(ax, p["position"], p["radius"])
        ax.plot([-R0, -R1, R1, R0, -R0], [0, H, H, 0, 0], "k-", lw=0.8)
        ax.set_aspect("equal")
        ax.set_xlim(-R1 - 0.002, R1 + 0.002)
        ax.set_ylim(-0.002, 0.115)
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results/hopper")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--quick", action="store_true", help="2,000 grains (a minute or two)")
    ap.add_argument("--fraction", type=float, default=0.55, help="of the packed region")
    ap.add_argument("--rest", type=float, default=1e-4, help="kinetic energy / (N m g d)")
    ap.add_argument("--max-steps", type=int, default=200000)
    ap.add_argument("--only", choices=("pack", "lattice"), default=None)
    args = ap.parse_args()
    n = 2000 if args.quick else args.n
    comm = MPI.COMM_WORLD
    os.makedirs(args.out, exist_ok=True)
    radii = np.random.default_rng(1).uniform(RMIN, RMAX, n)
    m_min = 4 / 3 * math.pi * RMIN ** 3 * DENSITY
    dt = math.pi * math.sqrt(0.5 * m_min / KN) / 25       # 25 steps per contact
    results = []
    if args.only in (None, "pack"):
        h = fill_height(float(np.sum(4 / 3 * math.pi * radii ** 3)), args.fraction)
        region = hopper() & pdem.Box((-R1, -R1, -0.01), (R1, R1, h))     # tight bounds
        t0 = time.perf_counter()
        packed = pdem.pack(region, radii, seed=1, comm=comm, progress=False)
        t_pack = time.perf_counter() - t0
        if comm.rank == 0:
            print("pack: %d grains below z = %.4f m, %d iterations, %.1f s"
                  % (n, h, packed.iterations, t_pack), flush=True)
        results.append(("pdem.pack: %d grains, %d iterations" % (n, packed.iterations),
                        {"position": packed.positions, "radius": packed.radii}))
        s, steps, t, p, e = settle(packed.positions, packed.radii, comm, args.rest, dt,
                                   args.max_steps, "pack")
        if comm.rank == 0:
            describe(p, "pack + settle", s, steps, t, e, t_pack)
        results.append(("+ settled to rest: %d steps" % steps, p))
    if args.only in (None, "lattice"):
        t0 = time.perf_counter()
        x = lattice(hopper(), radii, seed=2)
        t_lat = time.perf_counter() - t0
        results.append(("lattice with jitter, clipped: %d grains" % n,
                        {"position": x, "radius": radii}))
        s, steps, t, p, e = settle(x, radii, comm, args.rest, dt, args.max_steps, "lattice")
        if comm.rank == 0:
            print("lattice: %d grains up to z = %.4f m (%.2f s to build)"
                  % (n, x[:, 2].max(), t_lat))
            describe(p, "lattice + settle", s, steps, t, e, t_lat)
        results.append(("+ settled to rest: %d steps" % steps, p))
    if comm.rank == 0:
        draw(results, os.path.join(args.out, "hopper_settled.png"))


if __name__ == "__main__":
    main()
