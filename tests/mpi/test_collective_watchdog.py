"""A collective property read on one rank only (inside `if sim.rank == 0:`) hangs:
pdem's watchdog says so on stderr, naming the user's line (issue 21 part 7). Here the
other ranks join the collective after a while, so the test ends."""
import time

import pytest
from mpi4py import MPI

import pdem
from pdem.collective import Watchdog


@pytest.mark.mpi(min_size=2)
def test_collective_on_one_rank_is_reported():
    comm = MPI.COMM_WORLD
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-6, comm=comm, threads=1)
    sim.material("m", 1000.0, kn=1e7)
    sim.add_spheres([[0.2, 0.5, 0.5], [0.8, 0.5, 0.5]], 0.01, "m")
    dog = Watchdog(comm.rank, timeout=0.4)
    sim.collective.watchdog = dog
    dog.start()
    if sim.rank == 0:
        n = sim.n_particles                 # alone in the collective ...
    else:
        time.sleep(3.0)                     # ... until the others come
        n = sim.n_particles
    assert n == 2
    said = comm.allgather(dog.messages)
    assert len(said[0]) == 1 and not any(said[1:]), said
    msg = said[0][0]
    assert "rank 0 has waited" in msg and "collective" in msg, msg
    assert "test_collective_watchdog.py" in msg and "n = sim.n_particles" in msg, msg
    assert "if sim.rank == 0:" in msg
