"""The one place that decides how many OpenMP threads the kernels use."""
import os
import warnings

from ._kernels import contacts as _k
from .errors import ThreadsWarning


def thread_count(requested=None):
    """Threads per rank: `requested`, else OMP_NUM_THREADS, else 1 (as LAMMPS: one MPI
    rank per core unless threads are asked for; spinning OpenMP threads on
    oversubscribed cores cost far more than they bring). Results never depend on
    this number: every kernel gives the same bits for any thread count. More threads
    than the cores this process may run on warn (ThreadsWarning)."""
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
    if n > cores:
        warnings.warn(ThreadsWarning(
            "%d OpenMP threads per rank, but this process may run on %d core(s), which the "
            "threads share (mpirun binds each rank to one core by default: give it "
            "--bind-to none or --map-by slot:PE=%d; srun: --cpus-per-task=%d)"
            % (n, cores, n, n)), stacklevel=3)
    return n


def openmp_available():
    return bool(_k.openmp_available())
