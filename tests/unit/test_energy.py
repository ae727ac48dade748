"""Energy tracker (docs/energy.md) against closed forms: free fall, an elastic and a
damped normal impact, a block sliding to rest, a wall driving a sphere; the balance of a
settling pile converging with dt; tracking never changes the trajectory; what it does
not cover is refused in one line."""
import math

import numpy as np
import pytest

import pdem
from pdem.errors import InputError

R, RHO = 0.05, 2500.0
M = RHO * 4.0 / 3.0 * math.pi * R ** 3


def scene(dt=1e-5, gravity=(0, 0, 0), e=1.0, mu=0.0, z=0.2, vel=(0, 0, 0), track=True,
          plane_velocity=None, **law):
    dom = pdem.Domain((-1, -1, -1), (1, 1, 3), (False,) * 3)
    sim = pdem.Simulation(dom, dt, gravity=gravity, track_energy=track)
    sim.material("m", RHO, kn=1e5, restitution=e, friction=mu, **law)
    sim.add_spheres([(0, 0, z)], R, "m", velocities=[vel])
    sim.add_plane((0, 0, 0), (0, 0, 1), "m", velocity=plane_velocity)
    return sim


def test_free_fall_potential_to_kinetic():
    g, dt = 9.81, 1e-4
    sim = scene(dt, gravity=(0, 0, -g), z=2.0)
    sim.run(3000)
    e = sim.energy()
    t = sim.time
    # K(t) = m v(t-dt/2).v(t+dt/2)/2 with v(t+dt/2) = g (t + dt/2)... from v = 0 at dt/2
    v_minus, v_plus = g * (t - dt), g * t
    assert e["kinetic"] == pytest.approx(0.5 * M * v_minus * v_plus, rel=1e-12)
    fall = 2.0 - sim.particles()["position"][0, 2]
    assert e["gravity_work"] == pytest.approx(M * g * fall, rel=1e-12)
    assert e["gravity"] == pytest.approx(M * g * (2.0 - fall), rel=1e-12)   # potential
    assert abs(e["error"]) < 1e-13
    assert e["elastic"] == e["damping"] == e["friction"] == e["walls"] == 0.0


def test_elastic_bounce_closes_and_stores_the_kinetic_energy():
    v0 = 1.0
    sim = scene(vel=(0, 0, -v0), z=R + 0.01)
    peak, worst = 0.0, 0.0
    for _ in range(500):
        sim.run(10)
        e = sim.energy()
        peak, worst = max(peak, e["elastic"]), max(worst, abs(e["error"]))
    assert sim.particles()["velocity"][0, 2] > 0.99 * v0          # bounced
    assert peak == pytest.approx(0.5 * M * v0 ** 2, rel=2e-3)    # all of K at max compression
    assert worst < 1e-6 and e["damping"] == 0.0


@pytest.mark.parametrize("e_in", [0.5, 0.8])
def test_damped_bounce_dissipates_the_lost_kinetic_energy(e_in):
    v0 = 1.0
    sim = scene(vel=(0, 0, -v0), z=R + 0.01, e=e_in)
    sim.run(5000)
    e = sim.energy()
    lost = 0.5 * M * v0 ** 2 * (1.0 - e_in ** 2)                  # restitution e_in (Hooke)
    assert e["damping"] == pytest.approx(lost, rel=2e-3)
    assert abs(e["error"]) < 2e-3


def test_sliding_block_friction_work():
    mu, g, v0 = 0.4, 9.81, 0.5
    rest = R - M * g / 1e5                                    # resting overlap m g / k_n
    sim = scene(2e-5, gravity=(0, 0, -g), e=1.0, mu=mu, z=rest, vel=(v0, 0, 0))
    sim.block([0], ["rx", "ry", "rz"])                         # slides, does not roll
    x0 = sim.particles()["position"][0, 0]
    sim.run(int(1.2 * v0 / (mu * g) / 2e-5))
    e = sim.energy()
    distance = sim.particles()["position"][0, 0] - x0
    assert distance == pytest.approx(v0 ** 2 / (2 * mu * g), rel=1e-2)
    assert e["friction"] == pytest.approx(mu * M * g * distance, rel=1e-2)
    assert e["friction"] == pytest.approx(0.5 * M * v0 ** 2, rel=1e-2)
    assert abs(e["error"]) < 1e-3


def test_driven_wall_work():
    """A wall at v_w hits a sphere at rest elastically: the sphere leaves at 2 v_w, and
    the wall did the work 2 m v_w^2."""
    vw = 0.5
    sim = scene(z=R + 0.002, plane_velocity=(0, 0, vw))
    sim.run(3000)
    e = sim.energy()
    assert sim.particles()["velocity"][0, 2] == pytest.approx(2 * vw, rel=1e-3)
    assert e["walls"] == pytest.approx(2 * M * vw ** 2, rel=2e-3)
    assert abs(e["error"]) < 1e-3


def pile(dt, track=True, steps=None):
    dom = pdem.Domain((0, 0, 0), (4, 4, 8), periodic=(True, True, False))
    sim = pdem.Simulation(dom, dt, gravity=(0, 0, -9.81), track_energy=track)
    sim.material("m", 1000.0, kn=1e6, restitution=0.5, friction=0.5, rolling_friction=0.1,
                 rolling_stiffness=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    rng = np.random.default_rng(7)
    g = np.arange(4) + 0.5
    x = np.stack(np.meshgrid(g, g, np.arange(3) * 1.2 + 0.6), -1).reshape(-1, 3)
    sim.add_spheres(x + rng.uniform(-0.05, 0.05, x.shape), rng.uniform(0.4, 0.5, len(x)), "m",
                    velocities=rng.normal(0, 0.5, x.shape))
    worst = 0.0
    for _ in range(10):
        sim.run(steps or int(0.08 / dt))
        if track:
            worst = max(worst, abs(sim.energy()["error"]))
    return sim, worst


def test_settling_pile_balance_shrinks_with_dt():
    coarse = pile(4e-4)[1]
    fine = pile(2e-4)[1]
    assert coarse < 2e-2 and fine < 0.6 * coarse


def test_tracking_only_observes():
    on, _ = pile(4e-4, steps=100)
    off, _ = pile(4e-4, track=False, steps=100)
    a, b = on.particles(), off.particles()
    for k in ("position", "velocity", "angular_velocity"):
        assert np.array_equal(a[k], b[k])
    e = on.energy()
    assert e["friction"] > 0 and e["damping"] > 0 and e["rolling"] > 0


def test_edit_moves_the_reference():
    sim = scene(gravity=(0, 0, -9.81), z=1.0)
    sim.run(10)
    sim.set_velocity([0], (0, 0, 3.0))
    sim.run(10)
    e = sim.energy()
    assert e["edits"] == 1 and abs(e["error"]) < 1e-12


def test_refused_in_one_line():
    with pytest.raises(InputError, match="track_energy=True: not available with the nscd"):
        pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), 1e-4, scheme=pdem.NSCD(),
                        track_energy=True)
    sim = scene()
    sim.material("sticky", 1000.0, law="hertz", young=1e7, poisson=0.3, cohesion="jkr",
                 surface_energy=0.1)
    with pytest.raises(InputError, match="JKR cohesion"):
        sim.run(1)
    with pytest.raises(InputError, match="track_energy must be True or False"):
        scene().track_energy = "yes"


def test_driven_mesh_wall_work():
    """As test_driven_wall_work with a two-triangle mesh wall (facet kernel)."""
    from pdem.contact.mesh import Mesh
    vw = 0.5
    dom = pdem.Domain((-1, -1, -1), (1, 1, 3), (False,) * 3)
    sim = pdem.Simulation(dom, 1e-5, track_energy=True)
    sim.material("m", RHO, kn=1e5, restitution=1.0, friction=0.3)
    sim.add_spheres([(0.1, 0.05, R + 0.002)], R, "m")
    square = Mesh(np.array([(-0.5, -0.5, 0), (0.5, -0.5, 0), (0.5, 0.5, 0), (-0.5, 0.5, 0.0)]),
                  np.array([(0, 1, 2), (0, 2, 3)]))
    sim.add_mesh_wall(square, "m", velocity=(0, 0, vw))
    sim.run(3000)
    e = sim.energy()
    assert sim.particles()["velocity"][0, 2] == pytest.approx(2 * vw, rel=1e-3)
    assert e["walls"] == pytest.approx(2 * M * vw ** 2, rel=2e-3)
    assert abs(e["error"]) < 1e-3


def test_vibrating_plate_closes():
    """A sphere on a plate vibrated by a motion law (pdem.Sine), with damping and
    friction: the wall's work is balanced by the other terms."""
    sim = scene(1e-5, gravity=(0, 0, -9.81), e=0.6, mu=0.5, z=R, vel=(0.1, 0, 0))
    sim.set_plane_motion(0, pdem.Sine((0, 0, 2e-3), frequency=25.0))
    worst = 0.0
    for _ in range(8):
        sim.run(1500)
        worst = max(worst, abs(sim.energy()["error"]))
    e = sim.energy()
    assert e["walls"] > 0 and e["damping"] > 0
    assert worst < 2e-3


def test_series_columns(tmp_path):
    """pdem.energy.series_extra(): the terms as columns of the HDF5 time series."""
    import h5py
    from pdem.io import ResultFile
    sim = scene(1e-4, gravity=(0, 0, -9.81), z=1.0)
    path = str(tmp_path / "e.h5")
    with ResultFile(path, sim, series_every=10, series_extra=pdem.energy.series_extra()) as rf:
        rf.run(steps=100)
    with h5py.File(path, "r") as f:
        s = f["series"]
        work, kin = s["energy_gravity_work"][...], s["kinetic_energy"][...]
        assert len(work) >= 10 and np.allclose(work, kin, rtol=1e-9, atol=1e-15)
        assert np.all(np.abs(s["energy_error"][...]) < 1e-12)


CASE = '''
import pdem
def build(comm):
    sim = pdem.Simulation(pdem.Domain((-1, -1, -1), (1, 1, 3)), 1e-4, gravity=(0, 0, -9.81),
                          comm=comm, track_energy=True)
    sim.material("m", 2500.0, kn=1e5, restitution=0.5, friction=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    sim.add_spheres([(0, 0, 0.06), (0.02, 0, 0.2)], 0.05, "m")
    return sim
'''


@pytest.mark.slow
def test_command_line_thermo_series_and_plot(tmp_path):
    """`pdem run` of a case with track_energy: the thermo lines carry the balance's
    error, the time series the terms, and `pdem plot` draws them."""
    import h5py
    from test_cli import ok, pdem_run
    (tmp_path / "case.py").write_text(CASE)
    r = ok(pdem_run("run", tmp_path / "case.py", "--steps", 2000, "--out", tmp_path / "out",
                    "--thermo-every", 500))
    assert "energy_error" in r.stdout
    with h5py.File(tmp_path / "out" / "results.h5", "r") as f:
        err = f["series/energy_error"][...]
        assert len(err) >= 4 and np.all(np.abs(err) < 1e-2)
        assert f["series/energy_damping"][-1] > 0
    r = ok(pdem_run("plot", tmp_path / "out" / "results.h5", "--out", tmp_path / "plots",
                    timeout=120))
    assert (tmp_path / "plots" / "results-extra.png").exists()


def test_ellipsoids_refused():
    sim = scene()
    sim.add_ellipsoids([(0.5, 0.5, 0.5)], [(0.05, 0.04, 0.03)], "m")
    with pytest.raises(InputError, match="track_energy=True: not available with ellipsoids"):
        sim.run(1)


@pytest.mark.slow
def test_servo_piston_work():
    """A servo piston squeezes a sphere onto a floor to the load L, slowly: the two
    contacts are springs k_n in series, so the piston's work and the stored energy are both
    L^2 / k_n (quasi-static: little damping)."""
    load, kn = 10.0, 1e5
    dom = pdem.Domain((-1, -1, -1), (1, 1, 3), (False,) * 3)
    sim = pdem.Simulation(dom, 1e-4, track_energy=True)
    sim.material("m", RHO, kn=kn, restitution=0.5, friction=0.5)
    sim.add_spheres([(0, 0, R)], R, "m")
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    sim.add_plane((0, 0, 2 * R + 1e-4), (0, 0, -1), "m")
    sim.set_plane_motion(1, pdem.Servo(load, gain=1e-4, max_speed=0.05))
    sim.run(15000)
    e = sim.energy()
    assert sim.plane_forces()[1][2] == pytest.approx(load, rel=5e-3)
    assert e["elastic"] == pytest.approx(load ** 2 / kn, rel=5e-3)
    assert e["walls"] == pytest.approx(load ** 2 / kn, rel=1e-2)    # damping: 0.8 %
    assert abs(e["error"]) < 1e-3


def test_external_load_work():
    """A constant external force F on a free sphere: its work F x and the kinetic energy
    agree (a free fall driven by set_external_load)."""
    f = np.array([0.3, -0.2, 0.5])
    sim = scene(1e-4, z=1.0)
    sim.set_external_load([0], force=f)
    x0 = sim.particles()["position"][0].copy()
    sim.run(2000)
    e = sim.energy()
    assert e["external"] == pytest.approx(f @ (sim.particles()["position"][0] - x0), rel=1e-12)
    assert e["external"] == pytest.approx(e["kinetic"], rel=1e-3)
    assert abs(e["error"]) < 1e-12


def test_prescribed_velocity_work():
    """A sphere at a prescribed velocity v (blocked) hits a free one elastically: the free
    sphere leaves at 2 v and the prescribed motion did the work 2 m v^2."""
    v = 0.4
    dom = pdem.Domain((-1, -1, -1), (1, 1, 1), (False,) * 3)
    sim = pdem.Simulation(dom, 1e-5, track_energy=True)
    sim.material("m", RHO, kn=1e5, restitution=1.0, friction=0.3)
    sim.add_spheres([(0, 0, 0), (2 * R + 1e-3, 0, 0)], R, "m")
    sim.set_velocity([0], (v, 0, 0), block=True)
    sim.run(3000)
    e = sim.energy()
    assert sim.particles()["velocity"][1, 0] == pytest.approx(2 * v, rel=1e-3)
    assert e["prescribed"] == pytest.approx(2 * M * v ** 2, rel=2e-3)
    assert abs(e["error"]) < 1e-3


def test_oblique_bounce_mesh_as_plane():
    """An oblique frictional bounce on a flat mesh wall gives the energy terms of the same
    bounce on a plane (facet and plane kernels alike), the tangential spring's energy
    at separation included; the balance closes."""
    from pdem.contact.mesh import Mesh
    out = []
    for wall in ("plane", "mesh"):
        dom = pdem.Domain((-1, -1, -1), (1, 1, 3), (False,) * 3)
        sim = pdem.Simulation(dom, 1e-5, track_energy=True)
        sim.material("m", RHO, kn=1e5, restitution=1.0, friction=0.3)
        sim.add_spheres([(0.0, 0.05, R + 0.002)], R, "m", velocities=[(0.6, 0, -0.5)])
        if wall == "plane":
            sim.add_plane((0, 0, 0), (0, 0, 1), "m")
        else:
            sim.add_mesh_wall(Mesh(np.array([(-0.5, -0.5, 0), (0.5, -0.5, 0), (0.5, 0.5, 0),
                                             (-0.5, 0.5, 0.0)]), np.array([(0, 1, 2), (0, 2, 3)])),
                              "m")
        sim.run(3000)
        out.append(sim.energy())
    assert out[0]["friction"] > 0 and abs(out[0]["error"]) < 1e-5
    for k in ("kinetic", "rotational", "friction", "elastic", "balance"):
        assert out[1][k] == pytest.approx(out[0][k], rel=1e-9, abs=1e-15), k


def test_exact_sums_are_math_fsum_in_any_order():
    """pyx/energy.pyx against math.fsum (correctly rounded): any split and order, the
    whole double range with subnormals, no overflow in between, NaN for inf."""
    from pdem._kernels import energy as xk
    rng = np.random.default_rng(1)
    v = rng.normal(size=20000) * 10.0 ** rng.integers(-300, 300, size=20000)
    v[:3] = (5e-324, -3e-320, 1.7e308)
    parts = np.zeros((3, xk.width()), np.int64)
    order = rng.permutation(len(v))
    for i, chunk in enumerate(np.array_split(v[order], 3)):
        xk.add_values(parts, i, np.ascontiguousarray(chunk))
    assert xk.value(parts) == math.fsum(v)
    one = np.zeros((1, xk.width()), np.int64)
    xk.add_values(one, 0, v)
    assert xk.value(one) == math.fsum(v)
    assert xk.value([xk.from_exact(xk.exact(parts))]) == math.fsum(v)
    big = np.zeros((1, xk.width()), np.int64)
    xk.add_values(big, 0, np.array([1e308, 1e308, -1e308]))
    assert xk.value(big) == 1e308
    xk.add_values(big, 0, np.array([np.inf]))
    assert math.isnan(xk.value(big))
