"""Fill a torus with 20,000+ polydisperse spheres (pdem.pack: seed 002's relaxation),
then let them settle to rest under gravity inside the torus (Simulation.add_region_wall:
the torus is the container), and draw both states.

    python examples/packing/torus.py [--quick] [--out results/torus]
    mpirun -n 2 python -m mpi4py examples/packing/torus.py     (the same packing)

Writes packed.png, settled.png and prints the times and the wall load (docs/packing.md).
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


def draw(x, r, path, title, a, zc):
    """Top view, and the section of the tube of minor radius a (centre height zc)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from hopper import section                      # true circles of section
    fig, ax = plt.subplots(1, 2, figsize=(11, 5), gridspec_kw={"width_ratios": [1.4, 1]})
    ax[0].scatter(x[:, 0], x[:, 1], s=(r / RMAX) ** 2 * 5, c=r, cmap="viridis", linewidths=0)
    ax[0].set_title("top view (x, y)")
    section(ax[1], x, r)
    c = np.linspace(0, 2 * np.pi, 200)
    ax[1].plot(R + a * np.cos(c), zc + a * np.sin(c), "k-", lw=0.8)
    ax[1].set_xlim(R - 1.1 * a, R + 1.1 * a)
    ax[1].set_ylim(zc - 1.1 * a, zc + 1.1 * a)
    ax[1].set_title("tube section at y = 0, x > 0 (x, z)")
    for k in ax:
        k.set_aspect("equal")
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results/torus")
    ap.add_argument("--quick", action="store_true", help="a thinner tube (~3,000 grains)")
    ap.add_argument("--fraction", type=float, default=None, help="default 0.58 (--quick 0.55)")
    ap.add_argument("--rest", type=float, default=1e-4, help="kinetic energy / (N m g d)")
    ap.add_argument("--max-steps", type=int, default=100000)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    os.makedirs(args.out, exist_ok=True)
    a = 0.008 if args.quick else A
    fraction = args.fraction or (0.55 if args.quick else 0.58)
    torus = pdem.Torus((0, 0, a + 1e-4), (0, 0, 1), R, a)
    t0 = time.perf_counter()
    p = pdem.pack(torus, lambda rng, n: rng.uniform(RMIN, RMAX, n),
                  solid_fraction=fraction, seed=1, comm=comm)
    t_pack = time.perf_counter() - t0
    x, r = p
    if comm.rank == 0:
        print("pack: %d spheres, solid fraction %.3f, %d iterations, max overlap %.2g, "
              "max f + r %.2g, %.1f s" % (len(r), p.solid_fraction, p.iterations,
                                           p.max_overlap, p.max_outside, t_pack), flush=True)
        draw(x, r, os.path.join(args.out, "packed.png"),
             "pdem.pack: %d spheres in a torus, solid fraction %.2f" % (len(r), p.solid_fraction),
             a, a + 1e-4)
    # settle under gravity inside the torus: the torus itself is the container, a region
    # wall (seed 002's rule as a contact); frictional, damped spring-dashpot
    density, kn, restitution = 2500.0, 500.0, 0.5        # as examples/packing/hopper.py
    mass = 4 / 3 * math.pi * RMIN ** 3 * density
    zeta = -math.log(restitution) / math.sqrt(math.pi ** 2 + math.log(restitution) ** 2)
    dt = math.pi / math.sqrt(kn / (0.5 * mass)) / 25
    span = R + a + 0.005
    dom = pdem.Domain((-span, -span, -0.005), (span, span, 2 * a + 0.005))
    sim = pdem.Simulation(dom, dt=dt, gravity=(0, 0, -9.81), comm=comm)
    m = sim.material("grain", density=density, kn=kn,
                     gamma_n=2 * zeta * math.sqrt(kn / (0.5 * mass)), friction=0.4)
    sim.add_region_wall(torus, m)
    sim.add_spheres(x, r, m)
    scale = len(r) * float(np.mean(4 / 3 * math.pi * r ** 3 * density)) * 9.81 * 2 * r.mean()
    t0 = time.perf_counter()
    steps = 0
    while steps < args.max_steps:
        sim.run(steps=100)
        steps += 100
        en = sim.energy()
        e = (en["kinetic"] + en["rotational"]) / scale
        if e < args.rest:
            break
    t_settle = time.perf_counter() - t0
    q = sim.particles(gather=True)
    load = sim.region_wall_forces()[0]
    if comm.rank == 0:
        weight = float(q["mass"].sum()) * 9.81
        inside = float(np.max(torus(q["position"]) + q["radius"]))
        print("settle inside the torus: at rest (kinetic energy / (N m g d) %.2g) after %d "
              "steps (%.3f s simulated), %.1f s; wall load / weight %.4f; max f + r %.2g m "
              "(%.2g r_min)" % (e, steps, steps * dt, t_settle, -load[2] / weight, inside,
                                inside / RMIN), flush=True)
        draw(q["position"], q["radius"], os.path.join(args.out, "settled.png"),
             "settled to rest inside the torus (a region wall): %d steps" % steps, a, a + 1e-4)


if __name__ == "__main__":
    main()
