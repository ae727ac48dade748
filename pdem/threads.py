"""The one place that decides how many OpenMP threads the kernels use."""
import os

from ._kernels import contacts as _k


def thread_count(requested=None):
    """Threads per rank: `requested`, else OMP_NUM_THREADS, else 1 (as LAMMPS: one MPI
    rank per core unless threads are asked for; spinning OpenMP threads on
    oversubscribed cores cost far more than they bring). Results never depend on
    this number: every kernel gives the same bits for any thread count."""
    if not _k.openmp_available():
        return 1
    if requested is not None:
        n = int(requested)
    elif os.environ.get("OMP_NUM_THREADS", "").strip().isdigit():
        n = int(os.environ["OMP_NUM_THREADS"])
    else:
        n = 1
    return max(1, n)


def openmp_available():
    return bool(_k.openmp_available())
