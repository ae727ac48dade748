"""Checkpoints continue a run bit for bit on another rank count, and a signal on one
rank checkpoints all ranks at the end of the step (pytest-mpi, N = 1..4); Ctrl-C on one
rank ends the run on all ranks at the end of the step."""
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


def interrupt_inside_step(sim, step, rank, times=1):
    """Deliver SIGINT (Ctrl-C) to this process in the middle of step `step` (after its
    drift and clock tick, before its forces and kick) on rank `rank` only, `times` times."""
    advance = sim.scheme.advance

    def advance_interrupted(s):
        if s.step_count == step and s.rank == rank:
            for _ in range(times):
                os.kill(os.getpid(), signal.SIGINT)
        return advance(s)
    sim.scheme.advance = advance_interrupted


@pytest.mark.mpi(min_size=1)
def test_ctrl_c_on_one_rank_ends_the_run_after_the_step_on_every_rank():
    """Ctrl-C lands inside a step: every rank finishes that step and raises
    KeyboardInterrupt at its end, so run() continues the same trajectory bit for bit."""
    comm = MPI.COMM_WORLD
    whole = sheared_box(comm)
    whole.run(steps=N)
    reference = state(whole)
    sim = sheared_box(comm)
    interrupt_inside_step(sim, 100, comm.size - 1)
    with pytest.raises(KeyboardInterrupt, match="after step 100"):
        sim.run(steps=N)
    assert sim.step_count == 100
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    sim.run(steps=N - 100)
    assert_same_state(state(sim), reference)


@pytest.mark.mpi(min_size=1)
def test_a_second_ctrl_c_interrupts_at_once_and_none_is_lost():
    if MPI.COMM_WORLD.size > 1:
        pytest.skip("one rank: a second Ctrl-C stops its own process at once")
    sim = sheared_box(MPI.COMM_SELF, n_side=6, layers=4)
    interrupt_inside_step(sim, 10, 0, times=2)
    with pytest.raises(KeyboardInterrupt) as raised:
        sim.run(steps=50)
    assert "after step" not in str(raised.value)     # not the deferred one: at once
    assert sim.step_count == 10                        # inside step 10, before its kick
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    # Ctrl-C after the last step's reduction (from an event): at the run's end
    sim = sheared_box(MPI.COMM_SELF, n_side=6, layers=4)
    sim.events.every(20, lambda s: os.kill(os.getpid(), signal.SIGINT))
    with pytest.raises(KeyboardInterrupt, match="after the run's last step"):
        sim.run(steps=20)
    assert sim.step_count == 20


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
