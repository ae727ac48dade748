"""Clumps (docs/clumps.md): 500 rigid bodies of overlapping spheres of two shapes (a
dumbbell and a tetrahedral cluster of four spheres) poured onto a floor, with their
member spheres written for ParaView. Run: python examples/clumps.py [results folder]
(also under `mpirun -n 4 python -m mpi4py examples/clumps.py`)."""
import os
import sys

import numpy as np

import pdem
from pdem.io import ResultFile

out = sys.argv[1] if len(sys.argv) > 1 else "results/clumps"
domain = pdem.Domain(lo=(0, 0, 0), hi=(0.12, 0.12, 0.25), periodic=(True, True, False))
sim = pdem.Simulation(domain, dt=2e-5, gravity=(0, 0, -9.81))
rock = sim.material("rock", density=2600, kn=2e4, restitution=0.3, friction=0.5,
                    rolling_friction=0.05, rolling_stiffness=0.25)
sim.add_plane(point=(0, 0, 0), normal=(0, 0, 1), material=rock)

r = 2.5e-3
dumbbell = sim.clump_template([[-0.6 * r, 0, 0], [0.6 * r, 0, 0]], r)
tetra = sim.clump_template(0.7 * r * np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1],
                                               [-1, -1, 1]]), r)

rng = np.random.default_rng(0)
g = np.linspace(0.008, 0.112, 10)
x, y, z = np.meshgrid(g, g, 0.01 + 0.012 * np.arange(5), indexing="ij")
positions = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
q = rng.normal(size=(len(positions), 4))
q /= np.linalg.norm(q, axis=1)[:, None]
kind = rng.random(len(positions)) < 0.5
sim.add_clumps(positions[kind], dumbbell, rock, orientations=q[kind])
sim.add_clumps(positions[~kind], tetra, rock, orientations=q[~kind])

os.makedirs(out, exist_ok=True)
with ResultFile(os.path.join(out, "clumps.h5"), sim, every=2500) as results:
    results.run(until=0.3)

p = sim.particles(gather=True)
floor = -sim.plane_forces()[0, 2]                 # collective: on every rank
if sim.rank == 0:
    print("t = %.3f s: %d clumps, %d member contacts, floor load / weight = %.4f"
          % (sim.time, len(p["id"]), sim.n_contacts, floor / (p["mass"].sum() * 9.81)))
    print("members for ParaView: %s (the 'members' block; docs/clumps.md)"
          % os.path.join(out, "clumps.xdmf"))
