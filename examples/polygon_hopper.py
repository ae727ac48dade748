"""2D convex polygons discharging from a hopper of boundary segments (issue 17,
docs/polyhedra.md "Segments").

    PYTHONPATH=$PWD python examples/polygon_hopper.py [--quick] [--out results/polyhopper]

The hopper is a polyline of segments (each side two segments: a joint half way), open
at the outlet: its two lower end points are free ends. Random convex heptagons and
squares (a few cm) start in a lattice in the hopper and settle on a gate (a plane:
segments are fixed) that a motion law then moves away. Particles falling out of the
domain are removed (lost="remove"). Prints the wall loads before opening against the
weight and the discharged count against time; --out writes a picture.
"""
import argparse
import os

import numpy as np

import pdem
from pdem import polyhedra as P
from pdem.motion import Ramp

G = 9.81
SLOT = 0.12                 # outlet width
HALF = 0.5                  # half width at the top
TOP = 0.7                   # hopper height above the outlet


def build(n_rows=6, threads=1):
    """The filled hopper on its (plane) gate; returns (sim, hopper segment indices)."""
    sim = pdem.Simulation(pdem.Domain((-0.6, -0.3), (0.6, 1.0), dim=2), dt=1e-4,
                          gravity=(0, -G, 0), lost="remove", threads=threads)
    m = sim.material("grain", density=1000.0, kn=2e5, friction=0.5, restitution=0.1)
    w = sim.material("wall", density=1000.0, kn=2e5, friction=0.3, restitution=0.1)
    side = np.array([[SLOT / 2, 0.0], [(SLOT / 2 + HALF) / 2, TOP / 2], [HALF, TOP]])
    left = side * [-1, 1]
    hopper = sim.add_segments(np.vstack([left[:-1], side[:-1]]),
                              np.vstack([left[1:], side[1:]]), w)
    sim.add_plane((0, 0, 0), (0, 1, 0), w)            # the gate
    rng = np.random.default_rng(1)
    shapes = [P.random_polygon(7, seed=s, axes=(0.025, 0.018)) for s in range(3)]
    shapes.append(P.regular_polygon(4, 0.022))
    y = np.arange(n_rows) * 0.07 + 0.25
    for k, yk in enumerate(y):
        half = SLOT / 2 + (HALF - SLOT / 2) * yk / TOP - 0.04
        xs = np.arange(-half, half, 0.07)
        for i, x in enumerate(xs):
            sim.add_polygons([[x, yk]], shapes[(i + k) % 4], m, angles=rng.uniform(0, 6))
    return sim, hopper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    sim, hopper = build(n_rows=2 if args.quick else 6)
    n0 = sim.n_particles
    mass = sim.particles()["mass"].sum()
    sim.run(8000 if args.quick else 12000)           # settle on the gate
    walls = -sim.segment_forces()[hopper, 1].sum()
    gate = -sim.plane_forces()[0, 1]
    kinds, count = np.unique(sim.contacts()["kind"], return_counts=True)
    print("settled at t = %.2f s: %d polygons, hopper walls %.4f and gate %.4f of the weight "
          "(sum %.6f); contacts %s" % (sim.time, n0, walls / (mass * G), gate / (mass * G),
                                      (walls + gate) / (mass * G), dict(zip(kinds, count))))
    sim.set_plane_motion(0, Ramp((0, -2.0, 0), 0.01))  # the gate drops away
    times, out = [], []
    for _ in range(8 if args.quick else 30):
        sim.run(500)
        times.append(sim.time)
        out.append(n0 - sim.n_particles)
    for t, k in zip(times, out):
        print("t = %.3f s: %d of %d discharged" % (t, k, n0))
    if args.out:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        os.makedirs(args.out, exist_ok=True)
        plt.plot(times, out, "o-")
        plt.xlabel("t (s)")
        plt.ylabel("polygons discharged")
        plt.savefig(os.path.join(args.out, "discharge.png"), dpi=100)


if __name__ == "__main__":
    main()
