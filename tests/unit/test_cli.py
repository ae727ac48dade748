"""The command line, run as users run it: `python -m pdem ...` in a subprocess (and
once under `mpirun -n 2`), on a small case file written into tmp_path."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from pdem.contact.kinds import KINDS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = 6000                    # about 1.5 s on one core

CASE = '''
import math
import numpy as np
import pdem


def build(comm):
    radius, density, kn = 1e-3, 2500.0, 2e3
    mass = 4 / 3 * math.pi * radius ** 3 * density
    dt = math.pi / math.sqrt(kn / (0.5 * mass)) / 25
    side, layers, spacing = 6, 8, 2.4 * radius
    dom = pdem.Domain((0, 0, 0), (side * spacing, side * spacing, layers * spacing + 0.01),
                      periodic=(True, True, False))
    sim = pdem.Simulation(dom, dt=dt, gravity=(0, 0, -9.81), comm=comm)
    glass = sim.material("glass", density=density, kn=kn, gamma_n=20.0, friction=0.4)
    sim.add_plane((0, 0, 0), (0, 0, 1), glass)
    g = (np.arange(side) + 0.5) * spacing
    x, y, z = np.meshgrid(g, g, 1.1 * radius + np.arange(layers) * spacing, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    rng = np.random.default_rng(3)
    pos[:, :2] += rng.uniform(-0.1, 0.1, (len(pos), 2)) * radius
    sim.add_spheres(pos, radius, glass, velocities=rng.normal(0.0, 0.1, (len(pos), 3)))
    return sim
'''


def pdem_cmd(*args, mpi=None):
    launcher = ["mpirun", "-n", str(mpi), sys.executable, "-m", "mpi4py"] if mpi else [sys.executable]
    return launcher + ["-m", "pdem"] + [str(a) for a in args]


def env():
    e = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_mpi_yield_when_idle="1",
             OMP_WAIT_POLICY="passive", OMP_NUM_THREADS="1")
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("PDEM_PROGRESS", None)
    return e


def pdem_run(*args, mpi=None, timeout=120, extra_env=None):
    return subprocess.run(pdem_cmd(*args, mpi=mpi), capture_output=True, text=True,
                          timeout=timeout, env=dict(env(), **(extra_env or {})))


def ok(r):
    assert r.returncode == 0, "exit %d\n--- stdout\n%s\n--- stderr\n%s" % (r.returncode, r.stdout, r.stderr)
    return r


def particles(path):
    """Every particle dataset of a checkpoint, rows sorted by id."""
    with h5py.File(path, "r") as f:
        g = f["particles"]
        order = np.argsort(g["id"][...], kind="stable")
        return {k: g[k][...][order] for k in g}


def assert_same_state(a, b):
    pa, pb = particles(a), particles(b)
    assert sorted(pa) == sorted(pb)
    for k in pa:
        assert pa[k].dtype == pb[k].dtype and pa[k].shape == pb[k].shape, k
        assert pa[k].tobytes() == pb[k].tobytes(), "%s differs" % k


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    path = tmp_path_factory.mktemp("case") / "case.py"
    path.write_text(CASE)
    return path


@pytest.fixture(scope="module")
def reference(case, tmp_path_factory):
    """An uninterrupted run of STEPS steps: (output folder, completed process)."""
    out = tmp_path_factory.mktemp("reference") / "run"
    r = ok(pdem_run("run", case, "--steps", STEPS, "--out", out, "--output-every", 2000,
                    "--contacts", "--thermo-every", 500))
    return out, r


def test_run_writes_results_logs_and_timing(reference):
    out, r = reference
    assert sorted(os.listdir(out)) == ["checkpoint.h5", "results-all.xdmf", "results.h5",
                                       "results.xdmf", "status"]
    assert (out / "status").read_text().startswith("finished step %d" % STEPS)
    assert re.search(r"^\s+step\s+time\s+particles\s+contacts\s+kinetic\s+p-steps/s\s+left$",
                     r.stdout, re.M)
    thermo = re.findall(r"^\s+(\d+) +\S+ +288 +(\d+) +\S+ +(\S+) +\d+:\d\d:\d\d$", r.stdout, re.M)
    assert [int(s) for s, _, _ in thermo] == list(range(500, STEPS + 1, 500))
    assert all(float(rate) > 0 for _, _, rate in thermo)
    assert int(thermo[-1][1]) > 0                       # the bed has contacts by the end
    shares = []
    for phase in ("neighbor", "comm", "contact", "integrate", "output", "other"):
        m = re.search(r"^  %s +[\d.]+ +[\d.]+ +[\d.]+ +([\d.]+)$" % phase, r.stdout, re.M)
        assert m, phase
        shares.append(float(m.group(1)))
    assert abs(sum(shares) - 100.0) < 0.5, shares      # the shares of the wall time add up
    assert "timing over 1 rank(s), %d step(s)" % STEPS in r.stdout
    assert r.stderr == ""
    with h5py.File(out / "results.h5", "r") as f:
        assert [f["frames"][k].attrs["step"] for k in sorted(f["frames"])] == [0, 2000, 4000, 6000]
        assert list(f["series/step"][...]) == list(range(0, STEPS + 1, 500))
        assert "contacts" in f["frames/000003"]


def test_info_on_result_file_and_checkpoint(reference):
    out, _ = reference
    r = ok(pdem_run("info", out / "results.h5", timeout=60))
    assert re.search(r"kind: +result file", r.stdout)
    assert re.search(r"frames: +4$", r.stdout, re.M)
    assert re.search(r"steps: +0 \.\. %d$" % STEPS, r.stdout, re.M)
    assert re.search(r"particles: +288$", r.stdout, re.M)
    assert re.search(r"series: +13 rows", r.stdout)
    assert re.search(r"contact fields: .*overlap", r.stdout)
    r = ok(pdem_run("info", out / "checkpoint.h5", timeout=60))
    assert re.search(r"kind: +checkpoint", r.stdout)
    assert re.search(r"step: +%d$" % STEPS, r.stdout, re.M)
    assert re.search(r"particles: +288$", r.stdout, re.M)
    kinds = ", ".join(r"\d+ " + k.name for k in KINDS if k.name != "bond")   # every kind
    assert re.search(r"contacts: +\d+ \(%s\)" % kinds, r.stdout)
    assert re.search(r"mesh walls: +none$", r.stdout, re.M)


def test_plot_writes_pngs(reference, tmp_path):
    out, _ = reference
    r = ok(pdem_run("plot", out / "results.h5", "--out", tmp_path / "plots", timeout=120))
    for name in ("energy", "contacts", "wall_forces"):
        png = tmp_path / "plots" / ("results-%s.png" % name)
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert str(png) in r.stdout


def test_plot_shows_series_extra(tmp_path):
    code = """
import pdem
from pdem.io import ResultFile
sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-4, gravity=(0, 0, -9.81))
sim.material("m", 1000.0, kn=1e4)
sim.add_spheres([[0.5, 0.5, 0.5]], 0.01, "m")
with ResultFile(%r, sim, series_every=5, series_extra={"height": lambda s: s.particles()["position"][0, 2]}) as rf:
    rf.write_series()
    rf.run(steps=20)
""" % str(tmp_path / "x.h5")
    subprocess.run([sys.executable, "-c", code], check=True, env=env(), timeout=60)
    r = ok(pdem_run("plot", tmp_path / "x.h5", timeout=120))
    png = tmp_path / "x-extra.png"
    assert png.exists() and str(png) in r.stdout


def test_restart_continues_bit_for_bit(case, reference, tmp_path):
    half = tmp_path / "half"
    ok(pdem_run("run", case, "--steps", STEPS // 2, "--out", half, "--checkpoint-every", 1000))
    r = ok(pdem_run("run", "--restart", half / "checkpoint.h5", "--steps", STEPS, "--out", half,
                    "--output-every", 2000, "--thermo-every", 500))
    assert "restart from" in r.stdout
    assert_same_state(half / "checkpoint.h5", reference[0] / "checkpoint.h5")
    # the restarted part goes into its own result file, frames after the restart only
    with h5py.File(half / ("results-from-step-%d.h5" % (STEPS // 2)), "r") as f:
        assert [f["frames"][k].attrs["step"] for k in sorted(f["frames"])] == [4000, 6000]
        assert list(f["series/step"][...]) == list(range(3500, STEPS + 1, 500))
    assert (half / "results.h5").exists()
    # one XDMF time series over both segments: frames 0, 3000 of results.h5, then 4000,
    # 6000 of the continued file (written after every frame of the continued run)
    import xml.etree.ElementTree as ET
    root = ET.parse(half / "results-all.xdmf").getroot()
    grids = [g for c in root.find("Domain") if c.get("Name") == "particles"
             for g in c.findall("Grid")]
    dt = float(re.search(r"dt ([\d.e+-]+),", r.stdout).group(1))
    times = [float(g.find("Time").get("Value")) for g in grids]
    assert np.allclose(times, [0, 3000 * dt, 4000 * dt, 6000 * dt], rtol=1e-5), times
    files = [g.find("Geometry/DataItem").text.split(":")[0] for g in grids]
    assert files == ["results.h5"] * 2 + ["results-from-step-%d.h5" % (STEPS // 2)] * 2


def test_progress_bar(case, tmp_path):
    r = ok(pdem_run("run", case, "--steps", 200, "--out", tmp_path, "--thermo-every", 50,
                    extra_env={"PDEM_PROGRESS": "bar"}))
    # (text mode turns the bar's carriage returns into newlines)
    assert re.search(r"^\[#{30}\] 100%  step 200/200 ", r.stdout, re.M)
    assert not re.search(r"^\s+step\s+time\s+particles", r.stdout, re.M)    # no plain lines
    assert "p-steps/s" in r.stdout and "timing over" in r.stdout


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun")
def test_two_ranks_same_state(case, reference, tmp_path):
    out = tmp_path / "mpi"
    r = ok(pdem_run("run", case, "--steps", STEPS, "--out", out, "--output-every", 2000,
                    "--thermo-every", 1000, mpi=2, timeout=300))
    assert "2 rank(s)" in r.stdout and "timing over 2 rank(s)" in r.stdout
    assert r.stdout.count("pdem run: finished") == 1            # rank 0 alone prints
    assert_same_state(out / "checkpoint.h5", reference[0] / "checkpoint.h5")
    with h5py.File(out / "results.h5", "r") as f:
        assert f.attrs["n_ranks"] == 2 and f.attrs["n_frames"] == 4
        ids = np.sort(f["frames/000003/particles/id"][...])
        assert np.array_equal(ids, np.arange(288))


def test_sigterm_checkpoints_and_restart_finishes_alike(case, reference, tmp_path):
    out = tmp_path / "stopped"
    proc = subprocess.Popen(pdem_cmd("run", case, "--steps", STEPS, "--out", out, "--thermo-every", 500),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    try:
        deadline = time.time() + 60
        while not (out / "status").exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert "SIGTERM received: checkpoint of step" in stderr
    assert "stopped at step" in stdout and "--restart %s" % (out / "checkpoint.h5") in stdout
    assert "timing over" in stdout
    status = (out / "status").read_text()
    assert status.startswith("interrupted step"), status
    stopped_at = int(status.split()[2])
    assert 0 < stopped_at < STEPS
    ok(pdem_run("run", case, "--restart", out / "checkpoint.h5", "--steps", STEPS, "--out", out))
    assert (out / "status").read_text().startswith("finished")
    assert_same_state(out / "checkpoint.h5", reference[0] / "checkpoint.h5")


@pytest.mark.parametrize("args, message", [
    (["run", "{case}", "--steps", 10, "--bogus"], "unrecognized arguments: --bogus"),
    (["run", "{case}"], "one of the arguments --steps --until is required"),
    (["run", "{case}", "--steps", "-3"], "--steps: expected a positive integer"),
    (["run", "{case}", "--until", "nan"], "--until: expected a positive finite time, got 'nan'"),
    (["run", "{case}", "--until", "-1"], "--until: expected a positive finite time, got '-1'"),
    (["run", "{tmp}/nothing.py", "--steps", 10], "case file '{tmp}/nothing.py' does not exist"),
    (["run", "{tmp}/nobuild.py", "--steps", 10], "nobuild.py' defines no function build(comm)"),
    (["run", "{tmp}/broken.py", "--steps", 10], "broken.py': line 1: "),
    (["run", "{case}", "--steps", 10, "--out", "{tmp}/file/sub"], "output folder '{tmp}/file/sub' is not writable"),
    (["run", "{case}", "--steps", 10, "--fields", "position,colour"], "unknown field 'colour'"),
    (["run", "--restart", "{tmp}/none.h5", "--steps", 10], "cannot read checkpoint '{tmp}/none.h5'"),
    (["run", "--restart", "{tmp}/file", "--steps", 10], "cannot read checkpoint '{tmp}/file'"),
    (["info", "{tmp}/file"], "cannot read '{tmp}/file'"),
    (["plot", "{tmp}/none.h5"], "cannot read '{tmp}/none.h5'"),
])
def test_bad_input_exits_2_with_one_line(args, message, case, tmp_path):
    (tmp_path / "nobuild.py").write_text("x = 1\n")
    (tmp_path / "broken.py").write_text("def build(comm) return 1\n")
    (tmp_path / "file").write_text("not HDF5\n")
    fill = lambda s: str(s).replace("{case}", str(case)).replace("{tmp}", str(tmp_path))  # noqa: E731
    extra = ["--out", tmp_path / "out"] if args[0] == "run" and "--out" not in args else []
    r = pdem_run(*[fill(a) for a in args], *extra, timeout=60)
    assert r.returncode == 2, r.stderr
    assert fill(message) in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert not (tmp_path / "out").exists()          # no empty results folder left behind


def test_damaged_restart_checkpoint_is_refused_and_kept(case, reference, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    data = (reference[0] / "checkpoint.h5").read_bytes()
    (out / "checkpoint.h5").write_bytes(data[:len(data) // 2])
    r = pdem_run("run", case, "--restart", out / "checkpoint.h5", "--steps", STEPS, "--out", out, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "checkpoint.h5" in r.stderr and r.stderr.count("\n") == 1
    assert (out / "checkpoint.h5").read_bytes() == data[:len(data) // 2]
    assert sorted(os.listdir(out)) == ["checkpoint.h5"]


def test_nscd_case_reports_sweeps(tmp_path):
    """examples/settle_nscd.py (scheme=pdem.NSCD): the thermo lines carry the sweeps of
    the last step, the series solver_sweeps, and the run ends cleanly."""
    out = tmp_path / "nscd"
    r = ok(pdem_run("run", os.path.join(ROOT, "examples", "settle_nscd.py"), "--steps", 200,
                    "--out", out, "--thermo-every", 100, "--output-every", 100))
    assert re.search(r"^\s+step\s+time\s+particles\s+contacts\s+kinetic\s+p-steps/s\s+left"
                     r"\s+sweeps$", r.stdout, re.M)
    sweeps = re.findall(r"^\s+(\d+) +\S+ +432 +\d+ +\S+ +\S+ +\d+:\d\d:\d\d +(\d+)$",
                        r.stdout, re.M)
    assert [int(s) for s, _ in sweeps] == [100, 200] and int(sweeps[-1][1]) > 1
    with h5py.File(out / "results.h5", "r") as f:
        assert f["series/solver_sweeps"][-1] == int(sweeps[-1][1])


@pytest.mark.parametrize("user", [None, "0"])
def test_plain_python_is_an_isolated_mpi_singleton_unless_the_user_says_otherwise(tmp_path, user):
    """`python scene.py` without a launcher: importing pdem asks Open MPI for an isolated
    singleton (no helper daemon started at MPI_Init); a user's own setting is kept, and
    MPI works on the one rank either way (a reduction and a collective parallel-HDF5
    write, as a run's output makes)."""
    e = env()
    e.pop("OMPI_MCA_ess_singleton_isolated", None)
    if user is not None:
        e["OMPI_MCA_ess_singleton_isolated"] = user
    script = ("import os, sys, h5py, pdem\n"
              "from mpi4py import MPI\n"
              "c = MPI.COMM_WORLD\n"
              "with h5py.File(sys.argv[1], 'w', driver='mpio', comm=c) as f:\n"
              "    f['x'] = [c.allreduce(c.rank + 1)]\n"
              "print(os.environ['OMPI_MCA_ess_singleton_isolated'], c.size)\n")
    path = tmp_path / "one.h5"
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                         text=True, env=e, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [user or "1", "1"]
    with h5py.File(path, "r") as f:
        assert f["x"][()].tolist() == [1]
