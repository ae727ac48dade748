"""The energy tracker on any number of ranks and threads (docs/energy.md): its sums are
exact (pyx/energy.pyx), so sim.energy() is bitwise the same on 1-4 ranks, 1-2 threads
and after a restart on another rank count; tracking never changes the trajectory.
The scene: the sheared layer of scenes.py (moving frictional walls, damping, rolling
resistance, gravity, periodic axes)."""
import os

import numpy as np
from mpi4py import MPI

import pdem
from scenes import assert_same_state, sheared_box, state

STEPS = 240


def sheared(comm, threads=1, track=True):
    sim = sheared_box(comm, n_side=8, layers=5, threads=threads, track_energy=track)
    sim.run(STEPS)
    return sim


def test_energy_bitwise_on_any_rank_and_thread_count():
    comm = MPI.COMM_WORLD
    here = sheared(comm)
    e, s = here.energy(), state(here)
    off = sheared(comm, track=False)
    assert_same_state(s, state(off))                # the tracker only observes
    assert e["walls"] != 0 and e["friction"] > 0 and e["damping"] > 0 and e["rolling"] > 0
    if comm.rank == 0:
        for threads in (1, 2):
            one = sheared(MPI.COMM_SELF, threads=threads)
            assert one.energy() == e, (threads, one.energy(), e)
    comm.Barrier()


def test_energy_restart_bitwise(shared_dir):
    comm = MPI.COMM_WORLD
    path = os.path.join(shared_dir, "energy.h5")
    first = sheared_box(comm, n_side=8, layers=5, track_energy=True)
    first.run(STEPS // 2)
    first.checkpoint(path)
    first.run(STEPS // 2)
    e = first.energy()
    if comm.rank == 0:
        resumed = pdem.restart(path, comm=MPI.COMM_SELF)
        assert resumed.track_energy
        resumed.run(STEPS // 2)
        assert resumed.energy() == e
    comm.Barrier()
