"""Stress and fabric on any number of ranks: a settling pile gives the same per-particle
stress (bitwise: the same contact rows summed in the same order) and the same
Love-Weber and fabric tensors (up to the order of the sum over ranks) as on one rank."""
import numpy as np
from mpi4py import MPI

from scenes import random_pile


def pile(comm):
    return random_pile(comm, steps=5000)


def test_stress_equal_on_any_rank_count():
    comm = MPI.COMM_WORLD
    here = pile(comm)
    mine = here.particle_stress(gather=True)
    s, f = here.stress(), here.fabric()
    if comm.rank == 0:
        one = pile(MPI.COMM_SELF)
        ref = one.particle_stress()
        assert np.array_equal(mine["id"], ref["id"])
        assert np.array_equal(mine["stress"], ref["stress"])
        assert np.array_equal(mine["coordination"], ref["coordination"])
        assert f["contacts"] == one.fabric()["contacts"] > 100
        scale = np.abs(one.stress()).max()
        assert scale > 0 and np.allclose(s, one.stress(), rtol=0, atol=1e-12 * scale)
        assert np.allclose(f["tensor"], one.fabric()["tensor"], rtol=0, atol=1e-14)
    comm.Barrier()
