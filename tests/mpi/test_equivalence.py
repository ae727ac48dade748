"""The same scene gives bitwise-identical states on any number of ranks and threads.

Run as `mpirun -n N python -m pytest --with-mpi tests/mpi` for N = 1..4: each test
runs the scene on all N ranks, then rank 0 runs it alone (MPI.COMM_SELF, one
thread) and compares every particle and contact field bit for bit.
"""
import pytest
from mpi4py import MPI

from scenes import assert_same_state, sheared_box, state

STEPS = 2000


def serial_reference(comm, build, steps):
    """State of the scene run on rank 0 alone, broadcast to all ranks."""
    ref = None
    if comm.rank == 0:
        sim = build(MPI.COMM_SELF)
        sim.run(steps=steps)
        ref = state(sim)
    return comm.bcast(ref, root=0)


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dim", [3, 2])
def test_sheared_layer_identical_on_any_rank_count(dim, threads):
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
    ref = serial_reference(comm, lambda c: sheared_box(c, dim=dim), STEPS)
    assert_same_state(got, ref)
    # the scene is what it claims: the moving wall shears the layer through friction,
    # contacts last (more than one per particle once settled), and (on several ranks)
    # particles change rank many times
    assert max(traction) > 0.05, traction
    assert min(contacts[1:]) > 1.0 * n, contacts
    if comm.size > 1:
        assert migrated > 0.05 * n, migrated
