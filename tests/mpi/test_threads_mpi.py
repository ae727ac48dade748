"""Ranks x threads against a node's cores (pdem/threads.py): a Simulation warns, once
per node, when the OpenMP threads of the node's ranks together outnumber the cores
those ranks may use (the threads would take turns and spin waiting for a core)."""
import os
import warnings

import pytest
from mpi4py import MPI

import pdem
from pdem.threads import openmp_available


def thread_warnings(threads):
    """The ThreadsWarning messages of creating a Simulation with `threads` per rank."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-6, threads=threads)
    return [str(w.message) for w in caught if issubclass(w.category, pdem.ThreadsWarning)]


@pytest.mark.mpi(min_size=1)
def test_threads_outnumbering_the_nodes_cores_warn_once(monkeypatch):
    if not openmp_available():
        pytest.skip("kernels built without OpenMP: always one thread")
    comm = MPI.COMM_WORLD            # the tests' ranks all run on this machine: one node
    # every rank may run on cores 0 and 1 (mpirun --bind-to none on two cores)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    got = thread_warnings(2)
    if comm.size > 1 and comm.rank == 0:        # 2 x size threads on 2 cores
        assert len(got) == 1 and "\n" not in got[0], got
        assert got[0].startswith("%d ranks on this node run %d OpenMP threads in all on 2 "
                                 "core(s)" % (comm.size, 2 * comm.size)), got
    else:                                       # one rank: 2 threads on 2 cores fit
        assert got == []
    assert thread_warnings(1) == []             # one thread per rank: never this warning
    # two cores of its own per rank: two threads each fit
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2 * comm.rank, 2 * comm.rank + 1})
    assert thread_warnings(2) == []
