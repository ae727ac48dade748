"""Fixtures and hooks of the MPI tests (run with `mpirun -n N python -m pytest --with-mpi`).

A test that fails on some ranks only leaves the other ranks waiting in the next
collective (a Barrier, a gather, a collective HDF5 write) until the job's time limit.
So, as HOOMD-blue's test suite does, a failure on one rank of a run on several ranks
prints that rank's failure report and aborts the whole MPI job at once
(MPI_Abort, exit status 1): the job ends within seconds, with the assertion on screen.
The rest of the session does not run; fix that failure first (or run the test alone).
"""
import shutil
import sys
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


def _print_and_abort(item, report):
    """Print the failure of `report` (this rank only) and MPI_Abort the job."""
    comm = MPI.COMM_WORLD
    text = ("\n%s\npdem tests: %s FAILED (%s) on rank %d of %d; aborting the MPI job so "
            "that the other ranks do not wait for it in a collective\n%s\n%s\n"
            % ("=" * 78, item.nodeid, report.when, comm.rank, comm.size,
               report.longreprtext, "=" * 78))
    capture = item.config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        with capture.global_and_fixture_disabled():     # write to the real terminal
            sys.stdout.flush()
            sys.stderr.write(text)
            sys.stderr.flush()
    else:
        sys.stderr.write(text)
        sys.stderr.flush()
    comm.Abort(1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Abort the MPI job as soon as a test's set-up, call or tear-down fails on this
    rank, when running on more than one rank (an expected failure, xfail, is not a
    failure here: its report is 'skipped')."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and MPI.COMM_WORLD.size > 1:
        _print_and_abort(item, report)
