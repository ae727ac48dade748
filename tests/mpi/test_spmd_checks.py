"""SPMD mistakes (issue 21 part 7): set-up calls with arguments that differ between
ranks (an unseeded random generator) stop with one InputError on every rank, naming
the call and the argument, instead of a scene with missing and duplicated ids."""
import numpy as np
import pytest
from mpi4py import MPI

import pdem


def make_sim(comm):
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-6, comm=comm, threads=1)
    sim.material("m", 1000.0, kn=1e7)
    return sim


def same_error(func, *must_contain):
    """func() raises an InputError on every rank, with the same message."""
    comm = MPI.COMM_WORLD
    with pytest.raises(pdem.InputError) as info:
        func()
    msg = str(info.value)
    assert "\n" not in msg
    for s in must_contain:
        assert s in msg, (s, msg)
    assert len(set(comm.allgather(msg))) == 1
    return msg


@pytest.mark.mpi(min_size=2)
def test_positions_from_an_unseeded_generator():
    comm = MPI.COMM_WORLD
    sim = make_sim(comm)
    rng = np.random.default_rng(1000 + comm.rank)          # a different seed per rank
    pos = 0.1 + 0.8 * rng.random((1000, 3))
    same_error(lambda: sim.add_spheres(pos, 0.001, "m"), "add_spheres", "positions",
               "differs between ranks")
    assert sim.n_particles == 0
    # the same arrays on every rank: accepted, every particle once
    pos = 0.1 + 0.8 * np.random.default_rng(7).random((1000, 3))
    ids = sim.add_spheres(pos, 0.001, "m")
    assert sim.n_particles == 1000 and len(ids) == 1000


@pytest.mark.mpi(min_size=2)
def test_other_set_up_calls_are_checked():
    comm = MPI.COMM_WORLD
    sim = make_sim(comm)
    same_error(lambda: sim.material("glass", 2500.0 + comm.rank, kn=1e7), "material 'glass'",
               "density")
    same_error(lambda: sim.add_plane((0, 0, 0.01 * comm.rank), (0, 0, 1), "m"), "add_plane",
               "point")
    assert len(sim.planes) == 0
    sim.add_spheres([[0.5, 0.5, 0.5], [0.2, 0.5, 0.5]], 0.01, "m", velocities=[[0, 0, 0]] * 2)
    same_error(lambda: sim.set_velocity([0], (comm.rank, 0, 0)), "set_velocity", "velocity")
    same_error(lambda: sim.add_spheres([[0.7, 0.5, 0.5]], 0.01, "m",
                                       velocities=[[comm.rank, 0, 0]]),
               "add_spheres", "velocities")
    sim.run(steps=2)                        # no hang, nothing half-added
    assert sim.n_particles == 2
