"""The same scene gives bitwise-identical states on any number of ranks and threads.

Run as `mpirun -n N python -m pytest --with-mpi tests/mpi` for N = 1..4: each test
runs the scene on all N ranks, then rank 0 runs it alone (MPI.COMM_SELF, one
thread) and compares every particle and contact field bit for bit. On one rank with
one thread that reference would be the very same run, so there it is made by another
route that must give the same bits (restarted_reference).
"""
import os

import pytest
from mpi4py import MPI

import pdem
from scenes import assert_same_state, sheared_box, state

STEPS = 2000
SPLIT = 777         # restarted_reference's checkpoint: off the tested run's 500-step chunks


def serial_reference(comm, build, steps):
    """State of the scene run on rank 0 alone, broadcast to all ranks."""
    ref = None
    if comm.rank == 0:
        sim = build(MPI.COMM_SELF)
        sim.run(steps=steps)
        ref = state(sim)
    return comm.bcast(ref, root=0)


def restarted_reference(dim, steps, folder):
    """State of the scene after `steps` on one rank and one thread, by another route than
    the tested run's: on one rank there is no other decomposition (dims 1 x 1 x 1) and
    the other thread count is the threads=2 case's, so the reference differs in every
    other way that must not change a bit: particles added in 3 add_spheres calls instead
    of one, no per-step id check (check_ids=False), no gathers between chunks, and the
    run cut at step SPLIT by a checkpoint written to `folder` and continued by
    pdem.restart in a new Simulation (particles, contact histories and the Verlet-list
    schedule all go through the file)."""
    first = sheared_box(MPI.COMM_SELF, dim=dim, batches=3, check_ids=False)
    first.run(steps=SPLIT)
    path = os.path.join(folder, "equivalence-%dd.h5" % dim)
    first.checkpoint(path)
    del first
    resumed = pdem.restart(path, comm=MPI.COMM_SELF, threads=1)
    assert resumed.step_count == SPLIT
    resumed.run(steps=steps - SPLIT)
    assert resumed.step_count == steps
    return state(resumed)


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dim", [3, 2])
def test_sheared_layer_identical_on_any_rank_count(dim, threads, shared_dir):
    comm = MPI.COMM_WORLD
    sim = sheared_box(comm, dim=dim, threads=threads, check_ids=True)
    n = sim.n_particles
    assert n >= 2000
    contacts, traction = [], []
    for _ in range(4):
        sim.run(steps=STEPS // 4)
        contacts.append(len(sim.contacts(gather=True)["id1"]))
        f = sim.plane_forces()[0]            # force on the lower, moving wall
        traction.append(abs(f[0]) / abs(f[dim - 1]))
    got = state(sim)
    migrated = comm.allreduce(sim.n_migrated)
    if comm.size == 1 and threads == 1:
        ref = restarted_reference(dim, STEPS, shared_dir)
    else:
        ref = serial_reference(comm, lambda c: sheared_box(c, dim=dim), STEPS)
    assert_same_state(got, ref)
    # the scene is what it claims: the moving wall shears the layer through friction,
    # contacts last (more than one per particle once settled), and (on several ranks)
    # particles change rank many times
    assert max(traction) > 0.05, traction
    assert min(contacts[1:]) > 1.0 * n, contacts
    if comm.size > 1:
        assert migrated > 0.05 * n, migrated
