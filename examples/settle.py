"""A small case file for `python -m pdem run`: 432 glass beads falling onto a floor in
a box periodic in x and y (linear spring-dashpot law with friction).

    python -m pdem run examples/settle.py --steps 2000 --out results/settle
    mpirun -n 2 python -m mpi4py -m pdem run examples/settle.py --steps 2000 --out results/settle

A case file is a Python file defining build(comm) -> pdem.Simulation (docs/cli.md).
"""
import math

import numpy as np

import pdem


RADIUS, SIDE, LAYERS = 1e-3, 6, 12
SPACING = 2.4 * RADIUS


def domain():
    """The box: SIDE x SIDE beads across, periodic in x and y, open at the top."""
    width = SIDE * SPACING
    return pdem.Domain((0, 0, 0), (width, width, LAYERS * SPACING + 0.01),
                       periodic=(True, True, False))


def add_beads(sim, material):
    """A floor plane and SIDE^2 x LAYERS beads on a jittered lattice above it, with
    small random velocities (the same scene on every rank)."""
    sim.add_plane((0, 0, 0), (0, 0, 1), material)
    g = (np.arange(SIDE) + 0.5) * SPACING
    x, y, z = np.meshgrid(g, g, 1.1 * RADIUS + np.arange(LAYERS) * SPACING, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    rng = np.random.default_rng(3)
    pos[:, :2] += rng.uniform(-0.1, 0.1, (len(pos), 2)) * RADIUS
    sim.add_spheres(pos, RADIUS, material, velocities=rng.normal(0.0, 0.05, (len(pos), 3)))


def build(comm):
    density, kn = 2500.0, 2e3
    mass = 4 / 3 * math.pi * RADIUS ** 3 * density
    restitution = 0.5
    zeta = -math.log(restitution) / math.sqrt(math.pi ** 2 + math.log(restitution) ** 2)
    gamma_n = 2 * zeta * math.sqrt(kn / (0.5 * mass))
    dt = math.pi / math.sqrt(kn / (0.5 * mass)) / 25         # 25 steps per collision
    sim = pdem.Simulation(domain(), dt=dt, gravity=(0, 0, -9.81), comm=comm)
    add_beads(sim, sim.material("glass", density=density, kn=kn, gamma_n=gamma_n,
                                friction=0.4))
    return sim
