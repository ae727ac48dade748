"""Fill a torus with 20,000+ polydisperse spheres (pdem.pack: seed 002's relaxation),
then let them settle under gravity on a floor, and draw both states.

    python examples/packing/torus.py [--out results/torus] [--steps 3000]
    mpirun -n 2 python -m mpi4py examples/packing/torus.py     (the same packing)

Writes packed.png, settled.png and prints the times (docs/packing.md).
"""
import argparse
import math
import os
import time

import numpy as np
from mpi4py import MPI

import pdem

R, A = 0.05, 0.02                      # torus: major radius, tube radius (m)
RMIN, RMAX = 0.0009, 0.0016            # glass beads, radii uniform (m)


def draw(x, r, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 5))
    cut = np.abs(x[:, 1]) < 0.005                   # slab through the axis: tube sections
    order = np.argsort(x[cut, 1])
    for a, (i, j, sel, name) in zip(ax, ((0, 1, np.ones(len(x), bool), "top view (x, y)"),
                                         (0, 2, cut, "section |y| < 5 mm (x, z)"))):
        xs, rs = x[sel], r[sel]
        if sel is cut:
            xs, rs = xs[order], rs[order]
        a.scatter(xs[:, i], xs[:, j], s=(rs / RMAX) ** 2 * 4, c=rs, cmap="viridis",
                  linewidths=0)
        a.set_aspect("equal")
        a.set_title(name)
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results/torus")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--fraction", type=float, default=0.58)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    os.makedirs(args.out, exist_ok=True)
    torus = pdem.Torus((0, 0, A + 1e-4), (0, 0, 1), R, A)
    t0 = time.perf_counter()
    p = pdem.pack(torus, lambda rng, n: rng.uniform(RMIN, RMAX, n),
                  solid_fraction=args.fraction, seed=1, comm=comm)
    t_pack = time.perf_counter() - t0
    x, r = p
    if comm.rank == 0:
        print("pack: %d spheres, solid fraction %.3f, %d iterations, max overlap %.2g, "
              "max f + r %.2g, %.1f s" % (len(r), p.solid_fraction, p.iterations,
                                           p.max_overlap, p.max_outside, t_pack), flush=True)
        draw(x, r, os.path.join(args.out, "packed.png"),
             "pdem.pack: %d spheres in a torus, solid fraction %.2f" % (len(r), p.solid_fraction))
    # settle under gravity on a floor (frictional, damped spring-dashpot)
    density, kn, restitution = 2500.0, 2e3, 0.5         # as examples/settle.py
    mass = 4 / 3 * math.pi * RMIN ** 3 * density
    zeta = -math.log(restitution) / math.sqrt(math.pi ** 2 + math.log(restitution) ** 2)
    dt = math.pi / math.sqrt(kn / (0.5 * mass)) / 25
    span = R + A + 0.05
    dom = pdem.Domain((-span, -span, 0.0), (span, span, 2 * A + 0.02))
    sim = pdem.Simulation(dom, dt=dt, gravity=(0, 0, -9.81), comm=comm, lost="remove")
    m = sim.material("grain", density=density, kn=kn,
                     gamma_n=2 * zeta * math.sqrt(kn / (0.5 * mass)), friction=0.4)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    sim.add_spheres(x, r, m)
    t0 = time.perf_counter()
    sim.run(steps=args.steps)
    t_settle = time.perf_counter() - t0
    q = sim.particles(gather=True)
    if comm.rank == 0:
        v = np.linalg.norm(q["velocity"], axis=1)
        print("settle: %d steps (%.3f s simulated), %.1f s, max speed %.3g m/s, top %.2f m"
              % (args.steps, args.steps * dt, t_settle, v.max(),
                 (q["position"][:, 2] + q["radius"]).max()), flush=True)
        draw(q["position"], q["radius"], os.path.join(args.out, "settled.png"),
             "after %d steps under gravity on a floor" % args.steps)


if __name__ == "__main__":
    main()
