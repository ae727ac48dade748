"""Pouring: particles added in batches during a run give the same bits on any number
of ranks (pytest-mpi, N = 1..4), and their contacts keep their history."""
import pytest
from mpi4py import MPI

from scenes import assert_same_state, poured_box, run_pour, state


@pytest.mark.mpi(min_size=1)
def test_pouring_in_ten_batches_is_identical_on_any_rank_count():
    comm = MPI.COMM_WORLD
    sim = poured_box(comm, check_ids=True)
    run_pour(sim)
    got = state(sim)
    ref = None
    if comm.rank == 0:
        alone = poured_box(MPI.COMM_SELF)
        run_pour(alone)
        ref = state(alone)
    ref = comm.bcast(ref, root=0)
    assert_same_state(got, ref)
    p, c = got
    assert len(p["id"]) == 160
    # the batches landed on each other: a bed with lasting contacts
    assert (c["kind"] == "pair").sum() > 100, (c["kind"] == "pair").sum()
