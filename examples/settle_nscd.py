"""examples/settle.py with non-smooth contact dynamics (pdem.NSCD) instead of the
spring-dashpot law: 432 rigid glass beads falling onto a floor in a box periodic in x
and y, Coulomb friction 0.4, restitution 0.5, a time step 20 times larger.

    python -m pdem run examples/settle_nscd.py --steps 400 --out results/settle_nscd
    mpirun -n 2 python -m mpi4py -m pdem run examples/settle_nscd.py --steps 400 \\
        --out results/settle_nscd

The thermo lines get a column `sweeps` (NLGS sweeps of the last step).
"""
import numpy as np

import pdem


def build(comm):
    radius, density = 1e-3, 2500.0
    side, layers, spacing = 6, 12, 2.4 * radius
    width = side * spacing
    dom = pdem.Domain((0, 0, 0), (width, width, layers * spacing + 0.01),
                      periodic=(True, True, False))
    scheme = pdem.NSCD("nlgs", tol=2e-8, alert=0.1 * radius, overlap_correction=0.2)
    sim = pdem.Simulation(dom, dt=2e-4, gravity=(0, 0, -9.81), comm=comm, skin=0.1 * radius,
                          scheme=scheme)
    glass = sim.material("glass", density=density, friction=0.4, restitution=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), glass)
    g = (np.arange(side) + 0.5) * spacing
    x, y, z = np.meshgrid(g, g, 1.1 * radius + np.arange(layers) * spacing, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    rng = np.random.default_rng(3)                 # same scene on every rank
    pos[:, :2] += rng.uniform(-0.1, 0.1, (len(pos), 2)) * radius
    sim.add_spheres(pos, radius, glass, velocities=rng.normal(0.0, 0.05, (len(pos), 3)))
    return sim
