"""A small case file for `python -m pdem run`: 432 glass beads falling onto a floor in
a box periodic in x and y (linear spring-dashpot law with friction).

    python -m pdem run examples/settle.py --steps 2000 --out results/settle
    mpirun -n 2 python -m mpi4py -m pdem run examples/settle.py --steps 2000 --out results/settle

A case file is a Python file defining build(comm) -> pdem.Simulation (docs/cli.md).
"""
import math

import numpy as np

import pdem


def build(comm):
    radius, density, kn = 1e-3, 2500.0, 2e3
    mass = 4 / 3 * math.pi * radius ** 3 * density
    restitution = 0.5
    zeta = -math.log(restitution) / math.sqrt(math.pi ** 2 + math.log(restitution) ** 2)
    gamma_n = 2 * zeta * math.sqrt(kn / (0.5 * mass))
    dt = math.pi / math.sqrt(kn / (0.5 * mass)) / 25         # 25 steps per collision
    side, layers, spacing = 6, 12, 2.4 * radius
    width = side * spacing
    dom = pdem.Domain((0, 0, 0), (width, width, layers * spacing + 0.01),
                      periodic=(True, True, False))
    sim = pdem.Simulation(dom, dt=dt, gravity=(0, 0, -9.81), comm=comm)
    glass = sim.material("glass", density=density, kn=kn, gamma_n=gamma_n, friction=0.4)
    sim.add_plane((0, 0, 0), (0, 0, 1), glass)
    g = (np.arange(side) + 0.5) * spacing
    x, y, z = np.meshgrid(g, g, 1.1 * radius + np.arange(layers) * spacing, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    rng = np.random.default_rng(3)                 # same scene on every rank
    pos[:, :2] += rng.uniform(-0.1, 0.1, (len(pos), 2)) * radius
    sim.add_spheres(pos, radius, glass, velocities=rng.normal(0.0, 0.05, (len(pos), 3)))
    return sim
