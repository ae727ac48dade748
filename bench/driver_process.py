"""Imported first by the benchmark drivers that start every pdem and LAMMPS run as a
separate `mpirun` process: one OpenMP / BLAS thread unless set, and no MPI_Init in
the driver itself (a singleton MPI process that starts mpirun children is asking for
trouble); the worker processes (`--worker`) initialize MPI as usual. It must be
imported before numpy and mpi4py."""
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

WORKER = "--worker" in sys.argv
if not WORKER:
    import mpi4py
    mpi4py.rc.initialize = False
    mpi4py.rc.finalize = False
