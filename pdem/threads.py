"""The one place that decides how many OpenMP threads the kernels use."""
import os
import warnings

from mpi4py import MPI

from ._kernels import contacts as _k
from .errors import ThreadsWarning


def thread_count(requested=None, comm=None):
    """Threads per rank: `requested`, else OMP_NUM_THREADS, else 1 (as LAMMPS: one MPI
    rank per core unless threads are asked for; spinning OpenMP threads on
    oversubscribed cores cost far more than they bring). Results never depend on
    this number: every kernel gives the same bits for any thread count. More threads
    than the cores this process may run on warn (ThreadsWarning); with `comm`
    (collective), so do a node's ranks whose threads together outnumber the cores they
    may use (2 ranks x 2 threads on 2 cores: the chute of bench/chute_vs_lammps.py took
    125 s against 3.4 s for 2 ranks x 1 thread), once per node."""
    if not _k.openmp_available():
        return 1
    if requested is not None:
        n = int(requested)
    elif os.environ.get("OMP_NUM_THREADS", "").strip().isdigit():
        n = int(os.environ["OMP_NUM_THREADS"])
    else:
        n = 1
    n = max(1, n)
    cores = len(os.sched_getaffinity(0))
    node = node_threads(comm, n) if comm is not None else None
    if n > cores:
        warnings.warn(ThreadsWarning(
            "%d OpenMP threads per rank, but this process may run on %d core(s), which the "
            "threads share (mpirun binds each rank to one core by default: give it "
            "--bind-to none or --map-by slot:PE=%d; srun: --cpus-per-task=%d)"
            % (n, cores, n, n)), stacklevel=3)
    # more threads than cores on the node, some rank with more than one (ranks alone on
    # shared cores are the MPI tests' oversubscription, which yields: not warned)
    elif node is not None and node["first"] and node["threads"] > max(node["ranks"],
                                                                          node["cores"]):
        warnings.warn(ThreadsWarning(
            "%d ranks on this node run %d OpenMP threads in all on %d core(s): the threads "
            "take turns and spin waiting for a core; use ranks x threads <= cores"
            % (node["ranks"], node["threads"], node["cores"])), stacklevel=3)
    return n


def node_threads(comm, threads):
    """This node's share of `comm`: its ranks, their `threads` in all, the cores they may
    use together (the union of their CPU affinities: mpirun and srun bind a rank to a
    core by default) and whether this rank is the node's first. Collective."""
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        got = local.allgather((threads, os.sched_getaffinity(0)))
        first = local.Get_rank() == 0
    finally:
        local.Free()
    return {"ranks": len(got), "threads": sum(t for t, _ in got),
            "cores": len(set().union(*(c for _, c in got))), "first": first}


def openmp_available():
    return bool(_k.openmp_available())
