"""Integrator, prescribed motion, rolling/twisting resistance and thread-count
determinism, each against a closed form or an exact equality."""
import math

import numpy as np
import pytest

import pdem

G = 9.81


def dense_periodic_scene(threads, n_side=8, seed=3):
    """A compressed, sheared, frictional periodic packing with a plane: many contacts."""
    r, a = 1e-3, 1.9e-3
    L = n_side * a
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (L, L, 3 * L), periodic=(True, True, False)),
                          dt=2e-6, gravity=(0, 0, -G), threads=threads)
    m = sim.material("g", density=2500, kn=2e3, gamma_n=20.0, friction=0.5,
                     rolling_friction=0.1, rolling_stiffness=0.3, twisting_friction=0.1,
                     twisting_stiffness=0.3)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    g = (np.arange(n_side) + 0.5) * a
    x, y, z = np.meshgrid(g, g, g, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    rng = np.random.default_rng(seed)
    pos += rng.uniform(-0.05, 0.05, pos.shape) * r
    vel = rng.normal(0, 0.05, pos.shape)
    vel[:, 0] += 0.2 * (pos[:, 2] / L - 0.5)          # shear: migrations across x
    sim.add_spheres(pos, r * rng.uniform(0.9, 1.1, len(pos)), m, velocities=vel,
                    angular_velocities=rng.normal(0, 20, pos.shape))
    return sim


def test_same_bits_on_one_and_two_threads():
    """The serial scatter (1 thread) and the parallel gather (2 threads) sum each
    particle's forces in the same order: trajectories must be bitwise identical."""
    runs = []
    for threads in (1, 2):
        sim = dense_periodic_scene(threads)
        sim.run(steps=300)
        runs.append((sim.particles(), sim.contacts(), sim.n_rebuilds))
    (p1, c1, nb1), (p2, c2, nb2) = runs
    assert len(c1["id1"]) > 2 * len(p1["id"])                 # a dense, contacting scene
    assert nb1 == nb2 and nb1 >= 2                            # lists were rebuilt
    for key in ("position", "velocity", "angular_velocity", "force", "torque", "orientation"):
        assert np.array_equal(p1[key], p2[key]), key
    for key in ("id1", "id2", "force", "u", "phi", "u0", "phi0"):
        assert np.array_equal(c1[key], c2[key]), key


def test_prescribed_velocity_ignores_forces():
    """A blocked particle keeps its prescribed velocity through gravity and contacts."""
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-5, gravity=(0, 0, -G))
    m = sim.material("m", density=1000, kn=1e4, restitution=0.5, friction=0.5)
    ids = sim.add_spheres([[0.3, 0.5, 0.5], [0.5, 0.5, 0.5]], 0.05, m)
    v = np.array([2.0, 0.0, 0.0])
    sim.set_velocity(ids[0], velocity=v, angular_velocity=(0, 0, 3.0), block=True)
    sim.run(steps=10000)                                      # 0.1 s: the pusher hits ball 2
    p = sim.particles()
    assert np.allclose(p["velocity"][0], v, rtol=0, atol=0)
    assert np.allclose(p["position"][0], [0.3 + 2.0 * sim.time, 0.5, 0.5], rtol=0, atol=1e-12)
    assert np.array_equal(p["angular_velocity"][0], [0.0, 0.0, 3.0])
    assert p["velocity"][1, 0] > 0.5                          # ball 2 was pushed
    assert p["velocity"][1, 2] < -0.5                         # and falls freely


def test_block_single_dof():
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-4, gravity=(0, 0, -G))
    m = sim.material("m", density=1000, kn=1e4)
    ids = sim.add_spheres([[0.5, 0.5, 0.5]], 0.01, m, velocities=[[1.0, 0, 0]])
    sim.block(ids, "z")
    sim.run(steps=100)
    p = sim.particles()
    assert p["velocity"][0, 2] == 0.0 and p["position"][0, 2] == 0.5
    assert p["velocity"][0, 0] == 1.0


def test_orientation_follows_exact_rotation():
    """A free sphere spinning at constant omega: q(t) = exp(omega t / 2) q(0)."""
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=5e-4)
    m = sim.material("m", density=1000, kn=1e4)
    w = np.array([3.0, -4.0, 12.0])                           # |w| = 13 rad/s
    sim.add_spheres([[0.5, 0.5, 0.5]], 0.01, m, angular_velocities=[w])
    sim.run(steps=2000)                                       # 13 rad: two full turns
    q = sim.particles()["orientation"][0]
    ang = np.linalg.norm(w) * sim.time
    exact = np.concatenate([[math.cos(ang / 2)], math.sin(ang / 2) * w / np.linalg.norm(w)])
    assert np.allclose(q * np.sign(q[0] * exact[0]), exact, atol=1e-12)


def ball_on_plane(**law):
    """A sphere resting on a plane (settled with heavy damping); returns sim, ids, R."""
    R, rho = 0.01, 2500.0
    sim = pdem.Simulation(pdem.Domain((-1, -1, -1), (1, 1, 1)), dt=2e-5, gravity=(0, 0, -G))
    m = sim.material("m", density=rho, kn=1e5, restitution=0.1, friction=0.9, **law)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    mass = 4 / 3 * math.pi * R ** 3 * rho
    ids = sim.add_spheres([[0, 0, R - mass * G / 1e5]], R, m)
    sim.run(steps=2000)
    return sim, ids, R


def test_rolling_resistance_decelerates_at_closed_form_rate():
    """Rolling without slipping against a plastic rolling moment mu_r R N:
    a = -5/7 mu_r g (sphere on a plane, R* = R)."""
    mu_r = 0.05
    sim, ids, R = ball_on_plane(rolling_friction=mu_r, rolling_stiffness=5.0)
    v0 = 0.5
    sim.set_velocity(ids, velocity=(v0, 0, 0), angular_velocity=(0, v0 / R, 0))
    sim.run(steps=2000)                                       # past the elastic transient
    t0, v_a = sim.time, sim.particles()["velocity"][0, 0]
    sim.run(steps=10000)
    t1, v_b = sim.time, sim.particles()["velocity"][0, 0]
    slope = (v_b - v_a) / (t1 - t0)
    assert slope == pytest.approx(-5.0 / 7.0 * mu_r * G, rel=5e-3)
    p = sim.particles()                                       # still rolling, not sliding
    assert p["angular_velocity"][0, 1] * R == pytest.approx(v_b, rel=2e-3)


def test_twisting_resistance_decelerates_spin_at_closed_form_rate():
    """Spin about the normal against a plastic twisting moment mu_t R N:
    d omega / dt = -mu_t R m g / I = -2.5 mu_t g / R."""
    mu_t = 0.1
    sim, ids, R = ball_on_plane(twisting_friction=mu_t, twisting_stiffness=5.0)
    sim.set_velocity(ids, angular_velocity=(0, 0, 50.0))
    sim.run(steps=500)
    t0, w_a = sim.time, sim.particles()["angular_velocity"][0, 2]
    sim.run(steps=2000)
    t1, w_b = sim.time, sim.particles()["angular_velocity"][0, 2]
    assert (w_b - w_a) / (t1 - t0) == pytest.approx(-2.5 * mu_t * G / R, rel=5e-3)


def test_wall_contact_history_survives_rebuilds():
    """Many spheres sticking on a plane while the plane slides under them: the tangential
    spring of every wall contact must be carried over each neighbor rebuild (the spatial
    sort makes memory order differ from id order). With sticking friction the spring
    elongation grows steadily, u_t = v_plane * t in magnitude, until the Coulomb limit."""
    rng = np.random.default_rng(5)
    R = 0.01
    sim = pdem.Simulation(pdem.Domain((-1, -1, -1), (1, 1, 1)), dt=1e-5, gravity=(0, 0, -G),
                          skin=0.1 * R)
    m = sim.material("m", density=2500, kn=1e5, kt=10.0, gamma_n=50.0, friction=1.0)  # sticks
    # ids in a random spatial order, well apart so that only wall contacts exist
    xy = rng.permutation(np.array([(x, y) for x in range(6) for y in range(6)], float)) * 3 * R
    pos = np.column_stack([xy, np.full(len(xy), R - 1e-6)])
    ids = sim.add_spheres(pos, R, m)
    sim.block(ids, ["x", "y", "z", "rx", "ry", "rz"])          # particles held in place
    v = 0.01
    sim.add_plane((0, 0, 0), (0, 0, 1), m, velocity=(v, 0, 0))
    sim.run(steps=1)
    start = sim.time
    rebuilds = sim.n_rebuilds
    for _ in range(40):                                       # a rebuild before every chunk
        sim.request_rebuild()
        sim.run(steps=50)
    assert sim.n_rebuilds >= rebuilds + 40
    c = sim.contacts()
    assert len(c["id1"]) == len(ids) and np.all(c["kind"] == "plane")
    slip = np.linalg.norm(c["u"][:, 1:] - c["u0"][:, 1:], axis=1)
    # sticking: the elastic tangential displacement equals the plane's travel since contact
    assert np.allclose(slip, v * (sim.time - start), rtol=2e-3)


def piston(e=0.5, speed=1.0):
    """Spheres at rest, well apart, ahead of a plane that moves along its normal: no
    particle moves until the plane reaches it, so only the plane's own travel can
    make the lists stale."""
    sim = pdem.Simulation(pdem.Domain((-2, -2, -1), (2, 2, 6)), dt=1e-4, gravity=(0, 0, 0))
    sim.material("m", density=1000.0, kn=1e5, friction=0.3, restitution=e)
    gaps = np.array([0.5, 1.0, 1.7])                # from the plane at the start
    sim.add_spheres(np.column_stack([[-1.0, 0.0, 1.0], [0.0] * 3, gaps + 0.25]), 0.25, "m")
    sim.add_plane((0, 0, 0), (0, 0, 1), "m", velocity=(0, 0, speed))
    return sim


def test_plane_moving_along_its_normal_meets_resting_spheres(tmp_path):
    """A plane moving at V along its normal hits spheres at rest: each leaves at
    (1 + e) V (an infinitely heavy wall; e the pair's restitution), the later ones as
    well, so every one was in the plane's list when the plane arrived. The lists
    follow the plane's travel along its normal (half the skin), not only the
    particles'; a restart keeps that schedule (the plane's position at the build)."""
    e, speed = 0.5, 1.0
    sim = piston(e, speed)
    sim.run(steps=22000)                            # the plane has travelled 2.2
    v = sim.particles()["velocity"]
    assert np.allclose(v[:, :2], 0.0)
    assert np.allclose(v[:, 2], (1 + e) * speed, rtol=2e-3)
    # a restart between two of the plane's rebuilds (one per 250 steps: half the skin,
    # 0.025, at V dt = 1e-4), before the first hit: the same rebuilds after it
    whole = piston(e, speed)
    whole.run(steps=3234)
    path = str(tmp_path / "piston.h5")
    whole.checkpoint(path)
    whole.run(steps=1400)
    again = pdem.restart(path)
    again.run(steps=1400)
    assert again.n_rebuilds == whole.n_rebuilds >= 4634 // 250
    assert np.array_equal(whole.particles()["position"], again.particles()["position"])
