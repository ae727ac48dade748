"""Fixtures of the MPI tests (run with `mpirun -n N python -m pytest --with-mpi`)."""
import shutil
import tempfile

import pytest
from mpi4py import MPI


@pytest.fixture
def shared_dir():
    """A temporary directory created by rank 0, its path broadcast to every rank."""
    comm = MPI.COMM_WORLD
    path = comm.bcast(tempfile.mkdtemp(prefix="pdem-test-") if comm.rank == 0 else None)
    yield path
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(path, ignore_errors=True)
