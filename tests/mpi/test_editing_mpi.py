"""Editing during a run on any number of ranks: removal by region, external loads and
a new radius give the same particles, bitwise, as on one rank."""
import numpy as np
from mpi4py import MPI

from pdem.regions import Sphere
from scenes import random_pile


def edited_pile(comm):
    sim = random_pile(comm, steps=1500)
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
