"""Checkpoints continue a run bit for bit on another rank count, and a signal on one
rank checkpoints all ranks at the end of the step (pytest-mpi, N = 1..4)."""
import os
import signal

import pytest
from mpi4py import MPI

import pdem
from scenes import assert_same_state, corner_pile, sheared_box, state

N = 600


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("dim", [3, 2])
def test_restart_on_another_rank_count_is_bitwise_identical(dim, shared_dir):
    comm = MPI.COMM_WORLD
    whole = sheared_box(comm, dim=dim)
    whole.run(steps=2 * N)
    reference = state(whole)
    # N steps on all ranks + checkpoint, then N steps on fewer ranks
    first = sheared_box(comm, dim=dim)
    first.run(steps=N)
    path = os.path.join(shared_dir, "all.h5")
    first.checkpoint(path)
    fewer = comm.Split(0 if comm.rank < max(1, comm.size - 1) else MPI.UNDEFINED, comm.rank)
    if fewer != MPI.COMM_NULL:
        resumed = pdem.restart(path, comm=fewer)
        assert resumed.step_count == N
        resumed.run(steps=N)
        got = state(resumed)
        if fewer.rank == 0:
            assert_same_state(got, reference)
    # and the other way: N steps on rank 0 alone + checkpoint, then N on all ranks
    path = os.path.join(shared_dir, "one.h5")
    if comm.rank == 0:
        alone = sheared_box(MPI.COMM_SELF, dim=dim)
        alone.run(steps=N)
        alone.checkpoint(path)
    comm.Barrier()
    resumed = pdem.restart(path, comm=comm, threads=2)
    resumed.run(steps=N)
    assert_same_state(state(resumed), reference)


@pytest.mark.mpi(min_size=1)
def test_signal_on_one_rank_checkpoints_every_rank(shared_dir):
    comm = MPI.COMM_WORLD
    whole = sheared_box(comm)
    whole.run(steps=2 * N)
    reference = state(whole)
    path = os.path.join(shared_dir, "signal.h5")
    sim = sheared_box(comm)
    sim.checkpoint_on_signal(path)
    try:
        sim.run(steps=N - 1)
        if comm.rank == comm.size - 1:
            os.kill(os.getpid(), signal.SIGUSR1)      # as Slurm's --signal would
        with pytest.raises(pdem.CheckpointExit, match="SIGUSR1 received: checkpoint of step %d" % N):
            sim.run(steps=N)
    finally:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    assert sim.step_count == N                        # stopped at the end of that step
    resumed = pdem.restart(path, comm=comm)
    resumed.run(steps=N)
    assert_same_state(state(resumed), reference)


@pytest.mark.mpi(min_size=1)
def test_checkpoint_with_ranks_that_own_nothing(shared_dir):
    """Ranks with no particles or no contacts take part in every collective write."""
    comm = MPI.COMM_WORLD
    whole = corner_pile(comm, balance=None)
    whole.run(steps=400)
    reference = state(whole)
    first = corner_pile(comm, balance=None)
    first.run(steps=200)
    if comm.size > 1:
        assert min(comm.allgather(first.n_local)) == 0
    path = os.path.join(shared_dir, "pile.h5")
    first.checkpoint(path)
    resumed = pdem.restart(path, comm=comm)
    resumed.run(steps=200)
    assert_same_state(state(resumed), reference)
