"""An exception on one rank aborts the whole MPI job with its message (python -m
mpi4py), instead of leaving the other ranks waiting in a collective."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = """
from mpi4py import MPI
import pdem
dom = pdem.Domain((0, 0, 0), (4.0, 4.0, 4.0))
sim = pdem.Simulation(dom, dt=1e-3)
if MPI.COMM_WORLD.rank == 1:
    raise RuntimeError("rank 1 failed on purpose")
sim.comm.Barrier()          # rank 0 would wait here forever without the abort
"""


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs mpirun")
def test_exception_on_one_rank_aborts_the_job(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    # the pdem of this checkout (as the parent's), not whichever one is installed
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run(["mpirun", "-n", "2", sys.executable, "-m", "mpi4py", str(script)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode != 0
    assert "rank 1 failed on purpose" in run.stdout + run.stderr
