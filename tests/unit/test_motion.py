"""Wall motion laws (pdem/motion.py): prescribed displacements against their closed
forms, a servo-controlled piston against its target load, restarts."""
import numpy as np
import pytest

import pdem
from pdem.contact.mesh import Mesh


def empty_box(dt=1e-3):
    dom = pdem.Domain((0, 0, 0), (1, 1, 1))
    sim = pdem.Simulation(dom, dt=dt)
    sim.material("m", 1000.0, kn=1e5)
    sim.add_plane((0, 0, 0.1), (0, 0, 1), "m")
    return sim


def test_sine_vibration_follows_its_displacement_and_amplitude():
    sim = empty_box()
    sim.set_plane_motion(0, pdem.Sine((0, 0, 0.02), frequency=5.0, phase=0.3))
    z = []
    for _ in range(1000):
        sim.step()
        z.append(sim.planes.point[0, 2])
    t = np.arange(1, 1001) * 1e-3
    exact = 0.1 + 0.02 * (np.sin(2 * np.pi * 5.0 * t + 0.3) - np.sin(0.3))
    assert np.max(np.abs(np.array(z) - exact)) < 1e-14
    # peak to peak of the sampled motion: 2 A to the sampling error (1 - cos(w dt / 2))
    assert (max(z) - min(z)) / 2 == pytest.approx(0.02, rel=2e-4)


def test_ramp_and_table():
    sim = empty_box()
    sim.run(steps=100)                        # laws start when attached: t = 0.1
    sim.set_plane_motion(0, pdem.Ramp((0.0, 0.0, 1.0), duration=0.2))
    sim.run(steps=100)                        # s = 0.1 < T: v s^2 / (2 T)
    assert sim.planes.point[0, 2] == pytest.approx(0.1 + 0.1 ** 2 / 0.4, abs=1e-14)
    sim.run(steps=200)                        # s = 0.3 > T: v (s - T/2)
    assert sim.planes.point[0, 2] == pytest.approx(0.1 + 0.2, abs=1e-13)
    assert sim.planes.vel[0, 2] == pytest.approx(1.0, abs=1e-12)
    sim.set_plane_motion(0, pdem.Table([0.0, 0.1, 0.3], [(0, 0, 0), (0.05, 0, 0), (0.05, 0, -0.1)]))
    sim.run(steps=200)                        # s = 0.2: halfway down the second segment
    assert np.allclose(sim.planes.point[0], (0.05, 0.0, 0.3 - 0.05), atol=1e-13)
    sim.run(steps=200)                        # after the last time: it holds
    assert np.allclose(sim.planes.point[0], (0.05, 0.0, 0.2), atol=1e-13)
    assert np.all(np.abs(sim.planes.vel[0]) < 1e-12)
    sim.set_plane_motion(0, None)
    assert np.all(sim.planes.vel[0] == 0)


def test_servo_piston_holds_its_load():
    """A piston (plane facing down) on a column of beads under gravity: at rest its
    load is the target and the floor carries the target plus the weight. (Stable:
    gain x (16 kn dt + 16 c_n) = 0.3 < 1, c_n the contacts' damping.)"""
    dom = pdem.Domain((0, 0, 0), (1, 1, 3), periodic=(True, True, False))
    sim = pdem.Simulation(dom, dt=2e-4, gravity=(0, 0, -10.0))
    sim.material("m", 1000.0, kn=1e5, restitution=0.2, friction=0.0)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    g = np.arange(4) * 0.25 + 0.125
    x = np.stack(np.meshgrid(g, g, np.arange(6) * 0.25 + 0.125), -1).reshape(-1, 3)
    sim.add_spheres(x, 0.125, "m")
    sim.run(steps=5000)                       # settled: the top at 1.4826
    sim.add_plane((0, 0, 1.484), (0, 0, -1), "m")
    target = 50.0
    sim.set_plane_motion(1, pdem.Servo(load=target, gain=2e-5, max_speed=0.05))
    sim.run(steps=20000)
    load = -sim.plane_forces()[1] @ sim.planes.normal[1]
    weight = sim.particles()["mass"].sum() * 10.0
    assert load == pytest.approx(target, rel=1e-3)
    assert sim.plane_forces()[0, 2] == pytest.approx(-(target + weight), rel=1e-3)


def test_mesh_wall_sine_and_restart(tmp_path):
    sim = empty_box()
    v = np.array([(0.2, 0.2, 0.5), (0.8, 0.2, 0.5), (0.5, 0.8, 0.5)])
    sim.add_mesh_wall(Mesh(v, [(0, 1, 2)]), "m", name="lid")
    sim.add_spheres([(0.5, 0.4, 0.3)], 0.05, "m", velocities=[(0, 0, 1.0)])
    sim.set_mesh_motion("lid", pdem.Sine((0.0, 0.0, 0.05), frequency=2.0))
    sim.run(steps=300)
    z = sim.mesh_walls[0].mesh.vertices[:, 2]
    assert np.allclose(z, 0.5 + 0.05 * np.sin(2 * np.pi * 2.0 * 0.3), atol=1e-12)
    sim.checkpoint(str(tmp_path / "c.h5"))
    sim.run(steps=300)
    again = pdem.restart(str(tmp_path / "c.h5"))
    again.run(steps=300)
    assert np.array_equal(again.mesh_walls[0].mesh.vertices, sim.mesh_walls[0].mesh.vertices)
    assert np.array_equal(again.particles()["position"], sim.particles()["position"])


def test_bad_motion_input():
    sim = empty_box()
    with pytest.raises(pdem.InputError, match="plane must be a plane index"):
        sim.set_plane_motion(3, pdem.Sine((0, 0, 1), 1.0))
    with pytest.raises(pdem.InputError, match="frequency"):
        pdem.Sine((0, 0, 1), -1.0)
    with pytest.raises(pdem.InputError, match="times must be 2 or more"):
        pdem.Table([0.0, 0.0], [(0, 0, 0), (1, 0, 0)])
    with pytest.raises(pdem.InputError, match="motion law must be"):
        sim.set_plane_motion(0, lambda t: t)
    with pytest.raises(pdem.InputError, match="mesh wall must be"):
        sim.set_mesh_motion("nothing", pdem.Sine((0, 0, 1), 1.0))


CASE = '''
import pdem

def build(comm):
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-3, gravity=(0, 0, -10.0),
                          comm=comm)
    sim.material("m", 1000.0, kn=1e5, restitution=0.3)
    sim.add_plane((0, 0, 0.1), (0, 0, 1), "m")
    sim.add_spheres([(0.5, 0.5, 0.3)], 0.1, "m")
    sim.set_plane_motion(0, pdem.Sine((0, 0, 0.01), frequency=10.0))
    return sim
'''


def test_cli_thermo_shows_the_driven_wall_load(tmp_path):
    import os
    import subprocess
    import sys
    case = tmp_path / "case.py"
    case.write_text(CASE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-m", "pdem", "run", str(case), "--steps", "1000",
                        "--thermo-every", "500", "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = next(line for line in lines if line.split()[:1] == ["step"])
    assert header.split()[-1] == "plane0"
    last = next(line for line in lines if line.split()[:1] == ["1000"])
    # the ball rests on the plane by t = 1 s: its load is about its weight, 41.9 N
    assert float(last.split()[-1]) == pytest.approx(1000 * 4 / 3 * np.pi * 1e-3 * 10.0, rel=0.3)
