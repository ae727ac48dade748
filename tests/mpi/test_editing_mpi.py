"""Editing during a run on any number of ranks: removal by region, external loads and
a new radius give the same particles, bitwise, as on one rank."""
import numpy as np
from mpi4py import MPI

import pdem
from pdem.regions import Sphere


def edited_pile(comm):
    dom = pdem.Domain((0, 0, 0), (6, 6, 12), periodic=(True, True, False))
    sim = pdem.Simulation(dom, 2e-4, gravity=(0, 0, -9.81), comm=comm)
    sim.material("m", 1000.0, kn=1e6, restitution=0.3, friction=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    rng = np.random.default_rng(7)
    g = np.arange(6) + 0.5
    x = np.stack(np.meshgrid(g, g, np.arange(8) * 1.2 + 0.6), -1).reshape(-1, 3)
    sim.add_spheres(x + rng.uniform(-0.05, 0.05, x.shape), rng.uniform(0.4, 0.5, len(x)), "m")
    sim.run(steps=1500)
    removed = sim.remove(region=Sphere((3, 3, 2), 1.5))
    sim.set_external_load(sim.particles(gather=True)["id"][::7], force=(3.0, 0.0, 0.0))
    sim.set_radius([100, 101], 0.3)
    sim.run(steps=1500)
    return sim, removed


def test_editing_equal_on_any_rank_count():
    comm = MPI.COMM_WORLD
    sim, removed = edited_pile(comm)
    mine = sim.particles(gather=True)
    if comm.rank == 0:
        one, removed1 = edited_pile(MPI.COMM_SELF)
        ref = one.particles()
        assert removed == removed1 > 0
        for k in ("id", "position", "velocity", "angular_velocity", "radius", "mass"):
            assert np.array_equal(mine[k], ref[k]), k
    comm.Barrier()
