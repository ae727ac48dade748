"""One global reduction per step between rebuilds (issue 14): the kick computes the
next drift's rebuild test, which rides on the step's reduction of errors and signals
(pdem/simulation.py). The run must be the one of single steps, where every step
reduces its own drift's test (the schedule of rebuilds and every bit the same)."""
from mpi4py import MPI

from scenes import assert_same_state, sheared_box, state


def test_one_reduction_per_step_and_the_same_run():
    comm = MPI.COMM_WORLD
    steps = 120
    a, b = sheared_box(comm), sheared_box(comm)
    calls, rebuilt, rebuilt_b = [], [], []
    reduce, rebuild, rebuild_b = a.collective._allreduce, a._rebuild, b._rebuild

    def counted(*args, **kw):
        calls.append(a.step_count)
        return reduce(*args, **kw)

    def build(*args, **kw):
        rebuilt.append(a.step_count)
        return rebuild(*args, **kw)

    def build_b(*args, **kw):
        rebuilt_b.append(b.step_count)
        return rebuild_b(*args, **kw)
    a.run(steps=1)
    a.collective._allreduce, a._rebuild = counted, build
    a.run(steps=steps)
    b.run(steps=1)
    b._rebuild = build_b
    for _ in range(steps):
        b.run(steps=1)                       # no next step in the run: no prediction
    assert rebuilt == rebuilt_b and len(rebuilt) >= 2
    assert_same_state(state(a), state(b))
    if comm.size == 1:
        assert not calls                     # one rank: no reduction at all
        return
    per_step = {s: calls.count(s) for s in set(calls)}
    first = min(per_step)                    # the run's first step reduces its own test
    quiet = [s for s in range(first + 1, first + steps) if s not in rebuilt]
    assert per_step[first] == 2 or first in rebuilt
    assert [per_step.get(s, 0) for s in quiet] == [1] * len(quiet)


def test_near_lists_take_every_rank_s_speed():
    """Near lists (pdem/contact/near.py) on N ranks, whose travel bound comes from every
    rank's largest speed through the step's reduction (predicted by the kick between the
    steps of a run, reduced after the drift at a run's single steps): the serial run
    without near lists, bit for bit."""
    comm = MPI.COMM_WORLD
    steps, single = 400, 40
    sim = sheared_box(comm)
    sim.near_margin = 0.1
    sim.run(steps=steps)
    for _ in range(single):
        sim.run(steps=1)
    ref = None
    if comm.rank == 0:
        alone = sheared_box(MPI.COMM_SELF)
        alone.near_margin = 0.0
        alone.run(steps=steps + single)
        ref = state(alone)
    assert_same_state(state(sim), comm.bcast(ref, root=0))
    near = sim.interactions["pair"].near
    assert comm.allreduce(near.builds, op=MPI.MIN) > sim.n_rebuilds


def test_lists_follow_the_mean_flow():
    """The sheared layer seen from a frame moving at 6.7 d/s along the walls (every
    particle and wall faster by that): the rebuild test in the frame of the mean flow
    (pdem/contact/frame.py, whose velocity is every rank's) gives N ranks and one every
    bit the same."""
    comm = MPI.COMM_WORLD
    steps = 300
    moving = sheared_box(comm, flow=(6.0, 3.0, 0.0))
    moving.run(steps=steps)
    assert moving.frame.velocity[0] > 4.0 and moving.n_rebuilds >= 10
    ref = None
    if comm.rank == 0:
        alone = sheared_box(MPI.COMM_SELF, flow=(6.0, 3.0, 0.0))
        alone.run(steps=steps)
        ref = state(alone)
        assert alone.n_rebuilds == moving.n_rebuilds
    assert_same_state(state(moving), comm.bcast(ref, root=0))
