"""Run-time events (pdem/events.py): at a time, every N steps, when a condition holds;
sim.stop(); once-events across a checkpoint and restart; the CLI case file's events."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pdem
import pdem.io


def falling_ball(dt=1e-3):
    dom = pdem.Domain((-1, -1, 0), (1, 1, 2))
    sim = pdem.Simulation(dom, dt=dt, gravity=(0, 0, -10.0))
    m = sim.material("m", density=1000.0, kn=1e5, restitution=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    sim.add_spheres([(0, 0, 1.5)], 0.1, m)
    return sim


def test_at_every_and_when_fire_on_the_right_steps():
    sim = falling_ball()
    seen = {"at": [], "every": [], "when": []}
    sim.events.at(0.0106, lambda s: seen["at"].append(s.step_count))
    sim.events.every(7, lambda s: seen["every"].append(s.step_count), name="log")
    # free fall from z = 1.5: z < 1.0 first after t = sqrt(2 * 0.5 / 10) = 0.316 s
    sim.events.when(lambda s: s.particles()["position"][0, 2] < 1.0,
                    lambda s: seen["when"].append(s.step_count), name="half")
    sim.run(steps=400)
    assert seen["at"] == [11]                 # t = 0.011 >= 0.0106 - dt/2, t = 0.010 is not
    assert seen["every"] == list(range(7, 401, 7))
    # leap-frog from rest (drift, then kick): z_n = 1.5 - g dt^2 n (n - 1) / 2
    n = np.arange(1, 400)
    first = int(n[1.5 - 10.0 * 1e-6 * n * (n - 1) / 2 < 1.0][0])
    assert seen["when"] == [first]


def test_stop_ends_run_and_result_file_writes_the_stop_state(tmp_path):
    sim = falling_ball()
    sim.events.when(lambda s: s.particles()["velocity"][0, 2] < -2.0, lambda s: s.stop())
    with pdem.io.ResultFile(str(tmp_path / "r.h5"), sim, every=1000, series_every=1000) as rf:
        rf.run(steps=5000)
    # stopped at the first step whose velocity is below -2: one kick (g dt) earlier it was not
    v = sim.particles()["velocity"][0, 2]
    assert v < -2.0 <= v + 10.0 * 1e-3 and sim.step_count < 5000
    import h5py
    with h5py.File(str(tmp_path / "r.h5"), "r") as f:
        assert int(f["series/step"][-1]) == sim.step_count


def test_once_event_not_fired_again_after_restart(tmp_path):
    sim = falling_ball()
    fired = []
    sim.events.when(lambda s: s.time > 0.05, lambda s: fired.append(s.step_count), name="gate")
    sim.run(steps=100)
    sim.checkpoint(str(tmp_path / "c.h5"))
    assert len(fired) == 1
    again = pdem.restart(str(tmp_path / "c.h5"))
    later = []
    again.events.when(lambda s: s.time > 0.05, lambda s: later.append(1), name="gate")
    again.events.when(lambda s: s.time > 0.05, lambda s: later.append(2), name="other")
    again.run(steps=10)
    assert later == [2]


def test_bad_event_input():
    sim = falling_ball()
    with pytest.raises(pdem.InputError, match="steps must be an integer"):
        sim.events.every(0, print)
    with pytest.raises(pdem.InputError, match="callback must be callable"):
        sim.events.at(1.0, None)
    with pytest.raises(pdem.InputError, match="time must be"):
        sim.events.at(float("nan"), print)
    sim.events.every(3, print, name="x")
    with pytest.raises(pdem.InputError, match="already registered"):
        sim.events.every(3, print, name="x")


CASE = '''
import pdem

def build(comm):
    dom = pdem.Domain((-1, -1, 0), (1, 1, 2))
    sim = pdem.Simulation(dom, dt=1e-3, gravity=(0, 0, -10.0), comm=comm)
    m = sim.material("m", density=1000.0, kn=1e5, restitution=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    sim.add_spheres([(0, 0, 1.5)], 0.1, m)
    return sim

def events(sim):
    sim.events.when(lambda s: s.time >= 0.1 - 1e-9, lambda s: s.stop(), name="halt")
'''


def test_cli_case_events_stop_the_run(tmp_path):
    case = tmp_path / "case.py"
    case.write_text(CASE)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-m", "pdem", "run", str(case), "--steps", "1000",
                        "--out", str(out)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "stopped by an event at step 100" in r.stdout + r.stderr
    ck = pdem.restart(str(out / "checkpoint.h5"))
    assert ck.step_count == 100


def test_progress_line_on_request(capsys):
    sim = falling_ball()
    sim.run(steps=50, progress=True)          # under a second: no line
    assert capsys.readouterr().out == ""
    import time
    sim.events.every(10, lambda s: time.sleep(0.15), name="slow")
    sim.run(steps=100, progress=True)         # 1.5 s: a line with the step and time left
    out = capsys.readouterr().out
    assert out.startswith("\rstep ") and "s left" in out and out.endswith("\n")
    sim.run(steps=100)                        # not a terminal: quiet
    assert capsys.readouterr().out == ""
