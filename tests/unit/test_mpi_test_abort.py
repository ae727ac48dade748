"""The MPI tests' conftest (tests/mpi/conftest.py) aborts the whole job as soon as a
test fails on one rank, instead of leaving the other ranks waiting in a collective until
the job's time limit: `mpirun -n 2 python -m pytest --with-mpi` on a generated test that
fails an assertion on rank 0 only and then calls a Barrier must end non-zero within a
short time, with the assertion's text in its output."""
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

CONFTEST = os.path.join(os.path.dirname(__file__), os.pardir, "mpi", "conftest.py")

FAILING = '''
import pytest
from mpi4py import MPI


@pytest.mark.mpi(min_size=2)
def test_fails_on_rank_0_only():
    comm = MPI.COMM_WORLD
    assert comm.rank != 0, "rank 0 fails on purpose"
    comm.Barrier()          # rank 1 would wait here forever without the abort


@pytest.mark.mpi(min_size=2)
def test_never_reached():
    with open("reached-%d" % MPI.COMM_WORLD.rank, "w"):
        pass
'''

LIMIT = 120     # seconds; without the abort the job would hang past any limit


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs mpirun")
def test_failure_on_one_rank_aborts_the_job(tmp_path):
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_generated.py").write_text(FAILING)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")     # not the project's settings
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_mpi_yield_when_idle="1", OMP_WAIT_POLICY="passive",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "-n", "2", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "--with-mpi", "test_generated.py"]
    start = time.monotonic()
    job = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = job.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)           # mpirun and both ranks
        out, _ = job.communicate()
        pytest.fail("a failure on rank 0 left the job hanging for %d s:\n%s" % (LIMIT, out))
    elapsed = time.monotonic() - start
    assert job.returncode != 0, out
    assert "rank 0 fails on purpose" in out, out
    assert "test_fails_on_rank_0_only FAILED (call) on rank 0 of 2" in out, out
    # the job stopped at the failure: the next test ran on no rank
    assert not list(tmp_path.glob("reached-*")), out
    assert elapsed < LIMIT
