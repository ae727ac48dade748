"""The job scripts in jobs/ submitted to a real Slurm with `sbatch --wait`.

Needs a reachable Slurm controller with an idle node (`sinfo`); skipped otherwise.
`bash scripts/test.sh` starts a single-node Slurm on this machine first
(scripts/slurm.sh). Each job runs a small case from the repository root, with its
output file in the test's tmp_path; a job that fails (non-zero exit from
`sbatch --wait`, which returns the job's exit code) fails its test, the job's output
shown. `sacct` is not used: the CI Slurm keeps no accounting.

Adding a job script = one more entry in JOBS: the script, its arguments, sbatch
options and environment, and a check of its output.
"""
import os
import re
import shutil
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 600                   # per test (pytest-timeout)
WAIT = TIMEOUT - 60             # sbatch --wait, queueing included; the job is cancelled after
JOB_TIME = "00:08:00"           # Slurm's own limit on each job
# CI's node is small and shared (2 cores, other tests running): idle MPI ranks and
# OpenMP threads yield the core instead of spinning, as in scripts/test.sh's mpirun
# runs. sbatch passes the environment on to the job.
CI_ENV = {"OMP_WAIT_POLICY": "passive", "OMPI_MCA_mpi_yield_when_idle": "1"}


def _slurm_problem():
    """None if Slurm takes jobs here, else why not."""
    if not (shutil.which("sinfo") and shutil.which("sbatch")):
        return "sinfo/sbatch not installed"
    try:
        r = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, timeout=15)
    except subprocess.TimeoutExpired:
        return "sinfo timed out"
    if r.returncode:
        return "sinfo failed: %s" % (r.stderr.strip() or r.returncode)
    states = r.stdout.split()
    if not any(s in ("idle", "mixed", "allocated", "completing") for s in states):
        return "no usable node (states: %s)" % (", ".join(states) or "none")
    if not (ROOT / ".venv" / "bin" / "python").exists():
        return "no .venv/bin/python (run bash scripts/setup.sh)"
    return None


_PROBLEM = _slurm_problem()
pytestmark = pytest.mark.skipif(
    _PROBLEM is not None,
    reason="no Slurm here (%s); bash scripts/slurm.sh starts a single-node Slurm, "
           "bash scripts/test.sh does so before the tests" % _PROBLEM)


@dataclass
class Result:
    job_id: str
    returncode: int
    output: str                 # the job's output file (stdout and stderr)
    outdir: Path                # tmp_path: put the job's results here
    info: str                   # sbatch's stderr and `scontrol show job` if still known
    output_file: Path = None    # the job's output file

    def fail(self, msg):
        pytest.fail("%s\n--- sbatch exit code %d, job %s\n%s\n--- job output\n%s"
                    % (msg, self.returncode, self.job_id, self.info, self.output), pytrace=False)


def submit(script, args=(), outdir=None, sbatch=(), env=None):
    """sbatch --wait jobs/<script> args from the repository root; the Result."""
    name = "pdem-ci-%s-%s" % (Path(script).stem, uuid.uuid4().hex[:8])
    output = Path(outdir) / ("%s.out" % name)
    cmd = ["sbatch", "--wait", "--parsable", "--job-name=" + name, "--output=%s" % output,
           "--time=" + JOB_TIME, *sbatch, str(ROOT / "jobs" / script), *map(str, args)]
    full_env = dict(os.environ, **CI_ENV, **(env or {}))
    try:
        r = subprocess.run(cmd, cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=WAIT)
    except subprocess.TimeoutExpired:
        subprocess.run(["scancel", "--name=" + name], capture_output=True, timeout=60)
        text = output.read_text(errors="replace") if output.exists() else "(no output file)"
        pytest.fail("job %s did not finish in %d s; cancelled\n--- job output\n%s" % (name, WAIT, text),
                    pytrace=False)
    job_id = r.stdout.strip().split(";")[0]
    info = r.stderr.strip()
    if job_id:
        s = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True, timeout=60)
        info += "\n" + " ".join(w for w in s.stdout.split()
                                if w.split("=")[0] in ("JobId", "JobState", "Reason", "ExitCode", "RunTime"))
    text = output.read_text(errors="replace") if output.exists() else "(no output file %s)" % output
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)          # colours, should a tool force them
    res = Result(job_id, r.returncode, text, Path(outdir), info.strip(), output)
    if "JobState=" in info and "JobState=COMPLETED" not in info and r.returncode == 0:
        res.returncode = -1
    return res


# ------------------------------------------------------------------ checks of outputs
def summary_check(particles, ranks, threads):
    """pour_box.py's summary.txt in <outdir>/run: right particle count and layout."""
    def check(res):
        summary = res.outdir / "run" / "summary.txt"
        if not summary.exists():
            res.fail("no %s" % summary)
        text = summary.read_text()
        if not re.search(r"^particles\s+%d\b" % particles, text, re.M):
            res.fail("summary.txt does not report %d particles:\n%s" % (particles, text))
        if "(%d rank(s) x %d thread(s))" % (ranks, threads) not in text:
            res.fail("summary.txt is not from %d rank(s) x %d thread(s):\n%s" % (ranks, threads, text))
        if not (res.outdir / "run" / "final_state.png").exists():
            res.fail("no final_state.png")
    return check


def pytest_passed_on(ranks):
    """Every rank's pytest summary says passed, none failed."""
    def check(res):
        summaries = re.findall(r"^=*\s*(\d+ passed.*) in [\d.]+s", res.output, re.M)
        if len(summaries) != ranks or any(re.search(r"failed|error", s) for s in summaries):
            res.fail("expected %d pytest summaries with only passed tests, got %s" % (ranks, summaries))
    return check


def scaling_lines(ranks):
    """A 'scaling:' line with a positive particle-steps/s per rank count."""
    def check(res):
        got = {int(m.group(1)): float(m.group(2)) for m in re.finditer(
            r"^scaling: ranks (\d+) .* particle-steps/s (\S+) speedup", res.output, re.M)}
        if sorted(got) != sorted(ranks) or not all(v > 0 for v in got.values()):
            res.fail("expected scaling lines for ranks %s, got %s" % (ranks, got))
    return check


CHAIN_STEPS = 12000            # examples/settle.py: about 12 s on 2 ranks


def _read(path):
    try:
        return path.read_text()
    except OSError:
        return ""


def signal_links(at_steps):
    """During a restart chain: send SIGUSR1 (what Slurm sends before a time limit with
    --signal) to the k-th job of the chain once its log shows a thermo line at a step
    >= at_steps[k-1] (the job ids are in <outdir>/run/chain_jobs). Late steps: the
    settled bed has pair and wall contacts on every rank (see the report on
    pdem/io/checkpoint.py's empty collective writes)."""
    thermo = re.compile(r"^\s+(\d+)\s+\d\.\d+e[-+]\d+\s+\d+\s+\d+\s", re.M)

    def during(outdir, stop):
        outdir = Path(outdir)
        for k, step in enumerate(at_steps, 1):
            while not stop.is_set():
                jobs = _read(outdir / "run" / "chain_jobs").split()
                logs = [_read(p) for p in outdir.glob("*.out")]
                links = logs[0].split("restart_chain: job ")[1:] if logs else []
                if len(jobs) >= k and len(links) >= k and any(
                        int(m.group(1)) >= step for m in thermo.finditer(links[k - 1])):
                    break
                time.sleep(0.1)
            if stop.is_set():
                return
            subprocess.run(["scancel", "--signal=USR1", jobs[k - 1]], capture_output=True, timeout=60)
    return during


def chain_check(steps, case="examples/settle.py", run="run", min_jobs=2):
    """The chain in <outdir>/<run> ended (waits for its LAST job) finished, after at
    least min_jobs jobs (so at least one restart), in the state of an uninterrupted
    run of the same case: every particle dataset of the final checkpoints, sorted by
    id, bitwise."""
    def check(res):
        import h5py
        import numpy as np

        folder = res.outdir / run
        deadline = time.time() + WAIT
        while True:
            jobs = _read(folder / "chain_jobs").split()
            q = subprocess.run(["squeue", "-h", "-j", jobs[-1], "-o", "%T"], capture_output=True,
                               text=True, timeout=60) if jobs else None
            if q is not None and not q.stdout.strip() and _read(folder / "chain_jobs").split() == jobs:
                break                                 # the last job is gone, no new one
            if time.time() > deadline:
                subprocess.run(["scancel"] + jobs, capture_output=True, timeout=60)
                res.fail("the chain %s did not end in %d s; cancelled" % (jobs, WAIT))
            time.sleep(1)
        out = Path(res.output_file)
        res.output = re.sub(r"\x1b\[[0-9;]*m", "", _read(out))
        status = _read(folder / "status").strip()
        if not status.startswith("finished step %d" % steps):
            res.fail("the chain %s ended with status %r" % (jobs, status))
        if len(jobs) < min_jobs or res.output.count("submitted job") != len(jobs) - 1:
            res.fail("expected a chain of at least %d jobs, got %s" % (min_jobs, jobs))
        if "restart_chain: finished step %d after %d job(s)" % (steps, len(jobs)) not in res.output:
            res.fail("no final line of the chain's last job")
        ref = res.outdir / "reference"
        r = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "pdem", "run", case,
                            "--steps", str(steps), "--out", str(ref)], cwd=ROOT, capture_output=True,
                           text=True, timeout=WAIT, env=dict(os.environ, **CI_ENV))
        if r.returncode:
            res.fail("the uninterrupted reference run failed:\n%s%s" % (r.stdout, r.stderr))
        with h5py.File(folder / "checkpoint.h5", "r") as a, h5py.File(ref / "checkpoint.h5", "r") as b:
            pa, pb = a["particles"], b["particles"]
            oa, ob = np.argsort(pa["id"][...]), np.argsort(pb["id"][...])
            for k in sorted(set(pa) | set(pb)):
                if k not in pa or k not in pb or pa[k][...][oa].tobytes() != pb[k][...][ob].tobytes():
                    res.fail("after the chain %s, particles/%s differs from the uninterrupted run"
                             % (jobs, k))
    return check


def hourglass_check(ranks):
    """The hourglass files exist; the run was on `ranks` ranks, with every grain in
    each frame and grains through the neck by the end."""
    def check(res):
        import h5py
        folder = res.outdir / "hourglass"
        for name in ("hourglass.msh", "hourglass.h5", "hourglass_frames.png",
                     "hourglass_flow.png"):
            if not (folder / name).is_file():
                res.fail("no %s in %s" % (name, folder))
        with h5py.File(folder / "hourglass.h5", "r") as f:
            if int(f.attrs["n_ranks"]) != ranks:
                res.fail("ran on %s ranks, expected %d" % (f.attrs["n_ranks"], ranks))
            n = int(f.attrs["n_grains"])
            for name in f["frames"]:
                if sorted(f["frames"][name]["id"][...].tolist()) != list(range(n)):
                    res.fail("frame %s does not hold each of the %d grains once" % (name, n))
            if not f["series/n_below"][-1] > 0:
                res.fail("no grain went through the neck")
    return check


# ------------------------------------------------------------------ the jobs
SMALL = ["--particles", 2000, "--time", 0.02]     # a few seconds on 2 cores


@dataclass
class Job:
    script: str
    args: list                  # "{out}" is replaced by the test's tmp_path
    check: Callable
    sbatch: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    during: Callable = None     # during(outdir, stop_event), in a thread while the job runs


JOBS = {
    # the shipped #SBATCH resources, unchanged: 1 rank x 2 threads
    "pour_box": Job("pour_box.slurm", SMALL + ["--out", "{out}/run"], summary_check(2000, 1, 2)),
    # 2 ranks x 1 thread, scene and options as arguments
    "production": Job("production.slurm", ["examples/pour_box.py"] + SMALL + ["--out", "{out}/run"],
                      summary_check(2000, 2, 1)),
    # a quick subset of tests/mpi (scripts/test.sh runs them all under mpirun)
    "mpi_tests": Job("mpi_tests.slurm", [], pytest_passed_on(2),
                     env={"PDEM_TESTS": "tests/mpi/test_failures.py"}),
    "scaling": Job("scaling.slurm", SMALL, scaling_lines([1, 2]), env={"PDEM_OUT": "{out}/scaling"}),
    # the README's demo (NSCD hourglass) on the shipped 2 ranks, a short run
    "hourglass": Job("hourglass.slurm", ["--grains", 150, "--settle", 0.05, "--duration", 0.3],
                     hourglass_check(2), env={"PDEM_OUT": "{out}/hourglass"}),
    # a chain of 3 jobs: SIGUSR1 (scancel) to the first two, each checkpoints and submits
    # the next; the last one's final state equals an uninterrupted run's
    "restart_chain": Job("restart_chain.slurm",
                         ["examples/settle.py", "--out", "{out}/run", "--steps", CHAIN_STEPS,
                          "--thermo-every", 1000],
                         chain_check(CHAIN_STEPS, min_jobs=3), during=signal_links([6000, 9000])),
}


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("name", list(JOBS))
def test_job(name, tmp_path):
    job = JOBS[name]
    fill = lambda v: str(v).replace("{out}", str(tmp_path))   # noqa: E731
    stop = threading.Event()
    helper = threading.Thread(target=job.during, args=(tmp_path, stop), daemon=True) if job.during else None
    if helper:
        helper.start()
    try:
        res = submit(job.script, [fill(a) for a in job.args], tmp_path, job.sbatch,
                     {k: fill(v) for k, v in job.env.items()})
        if res.returncode != 0:
            res.fail("job %s failed" % job.script)
        job.check(res)
    finally:
        stop.set()
        if helper:
            helper.join(timeout=60)


@pytest.mark.timeout(TIMEOUT)
def test_failing_job_fails(tmp_path):
    """A scene that raises must end the job with a non-zero exit code (set -e, srun,
    python -m mpi4py), or the tests above would pass on broken jobs."""
    res = submit("production.slurm", ["examples/no_such_scene.py"], tmp_path)
    if res.returncode == 0:
        res.fail("a job running a missing scene exited 0")
    assert "no_such_scene.py" in res.output
