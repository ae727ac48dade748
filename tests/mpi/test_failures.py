"""Failures on one rank stop every rank with the same message (no hang)."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem.errors import InputError, SimulationError
from scenes import corner_gas


def flyer(comm, lost):
    """A closed box and one fast sphere (id 7) heading out through the +x face."""
    dom = pdem.Domain((0, 0, 0), (8.0, 8.0, 8.0))
    sim = pdem.Simulation(dom, dt=1e-3, comm=comm, lost=lost, check_ids=True, skin=0.1)
    m = sim.material("m", density=1.0, kn=1000.0)
    pos = [[1.0 + i, 1.0 + (i % 3), 4.0] for i in range(7)] + [[7.0, 4.0, 4.0]]
    vel = [[0, 0, 0]] * 7 + [[50.0, 0, 0]]
    sim.add_spheres(pos, 0.3, m, velocities=vel)
    return sim


@pytest.mark.mpi(min_size=1)
def test_lost_particle_is_reported_on_every_rank():
    sim = flyer(MPI.COMM_WORLD, "error")
    with pytest.raises(SimulationError, match=r"particle id 7 at \[8(\.[0-9]*)?, 4(\.0)?, 4(\.0)?\] left"):
        sim.run(steps=100)


@pytest.mark.mpi(min_size=1)
def test_lost_particle_removed_by_policy():
    comm = MPI.COMM_WORLD
    sim = flyer(comm, "remove")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim.run(steps=100)                  # check_ids: the removal is seen by every rank
    # one summary for the run, the same on every rank (whichever rank owned it)
    warned = comm.allgather([str(w.message) for w in caught if w.category is RuntimeWarning])
    assert all(len(w) == 1 and "1 particle(s) left" in w[0] and "lowest id 7" in w[0]
               for w in warned), warned
    assert sim.n_removed == 1
    assert sim.n_particles == 7
    assert 7 not in sim.particles(gather=True)["id"]


@pytest.mark.mpi(min_size=1)
def test_non_finite_velocity_on_one_rank_stops_all_ranks():
    comm = MPI.COMM_WORLD
    sim = corner_gas(comm)
    sim.run(steps=5)
    holder = comm.size - 1 if comm.size > 1 else 0
    victim = None
    if comm.rank == holder:
        victim = int(sim.store.id[0]) if sim.n_local else None
    victim = comm.bcast(victim, root=holder)
    if victim is None:                         # the last rank owns nothing: use rank 0's
        victim = comm.bcast(int(sim.store.id[0]) if comm.rank == 0 else None, root=0)
    if victim in sim.store.id[:sim.n_local]:
        sim.store.vel[np.flatnonzero(sim.store.id[:sim.n_local] == victim)[0]] = np.nan
    with pytest.raises(SimulationError, match="particle id %d has a non-finite" % victim):
        sim.run(steps=5)


@pytest.mark.mpi(min_size=2)
def test_subdomains_thinner_than_the_ghost_cutoff_are_refused():
    comm = MPI.COMM_WORLD
    dom = pdem.Domain((0, 0, 0), (1.0 * comm.size, 10.0, 10.0))    # slabs 1.0 < 2 r + skin
    sim = pdem.Simulation(dom, dt=1e-3, comm=comm, dims=[comm.size, 1, 1])
    m = sim.material("m", density=1.0, kn=1000.0)
    sim.add_spheres([[0.5, 5.0, 5.0]], 0.5, m)
    with pytest.raises(InputError, match="thinner than the ghost cutoff"):
        sim.step()


@pytest.mark.mpi(min_size=1)
def test_bad_dims_are_refused():
    with pytest.raises(InputError, match="dims must be 3 positive integers"):
        pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-3, comm=MPI.COMM_WORLD,
                        dims=[MPI.COMM_WORLD.size + 1, 1, 1])
