"""Love-Weber stress, particle stress, coordination and fabric (pdem/analysis.py)
against closed forms of regular lattices and of a sphere resting on a plane."""
import numpy as np
import pytest

import pdem
from pdem.regions import Box

KN, DELTA = 1.0e4, 1.0e-3


def cubic_lattice(n=4, r=0.5, comm=None):
    """Simple-cubic lattice of spacing a = 2r - delta filling a periodic box."""
    a = 2 * r - DELTA
    dom = pdem.Domain((0, 0, 0), (n * a,) * 3, periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=1e-4, comm=comm)
    m = sim.material("m", density=1.0, kn=KN, friction=0.5)
    g = (np.arange(n) + 0.5) * a
    x, y, z = np.meshgrid(g, g, g, indexing="ij")
    sim.add_spheres(np.column_stack([x.ravel(), y.ravel(), z.ravel()]), r, m)
    sim.run(steps=1)
    return sim, a


def test_cubic_lattice_stress_is_kn_delta_over_a_squared():
    sim, a = cubic_lattice()
    expected = -KN * DELTA / a ** 2                   # compression negative
    s = sim.stress()
    assert np.allclose(np.diag(s), expected, rtol=1e-12, atol=0)
    assert np.max(np.abs(s - np.diag(np.diag(s)))) < 1e-12 * abs(expected)
    # a Box region holding half of the particles, over its own volume: the same stress
    half = Box((0, 0, 0), (2 * a, 4 * a, 4 * a))
    assert np.allclose(sim.stress(region=half), s, rtol=1e-12, atol=1e-12 * abs(expected))


def test_cubic_lattice_particle_stress_coordination_and_fabric():
    sim, a = cubic_lattice()
    p = sim.particle_stress()
    r = 0.5
    # each particle: two contacts per axis, arm a/2, force kn delta
    expected = -a * KN * DELTA / (4.0 / 3.0 * np.pi * r ** 3)
    assert np.allclose(p["stress"][:, [0, 1, 2], [0, 1, 2]], expected, rtol=1e-12, atol=0)
    assert np.all(p["coordination"] == 6)
    f = sim.fabric()
    assert f["contacts"] == 3 * 64 and f["coordination"] == 6.0
    assert np.allclose(f["tensor"], np.eye(3) / 3, rtol=0, atol=1e-15)


def test_hexagonal_disks_stress_is_sqrt3_f_over_a():
    r, nx, ny = 0.5, 6, 6
    a = 2 * r - DELTA
    h = a * np.sqrt(3) / 2
    dom = pdem.Domain((0, 0), (nx * a, ny * h), periodic=(True, True), dim=2)
    sim = pdem.Simulation(dom, dt=1e-4)
    m = sim.material("m", density=1.0, kn=KN, friction=0.5)
    i, j = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
    x = (i + 0.5 * (j % 2) + 0.25) * a
    y = (j + 0.5) * h
    sim.add_spheres(np.column_stack([x.ravel(), y.ravel()]), r, m)
    sim.run(steps=1)
    # three contacts per disk at 0, 60, 120 degrees: sum n n = 3/2 I over an area
    # sqrt(3)/2 a^2 of unit thickness
    expected = -np.sqrt(3) * KN * DELTA / a
    s = sim.stress()
    assert np.allclose(s[:2, :2], np.diag([expected, expected]), rtol=1e-12,
                       atol=1e-12 * abs(expected))
    assert np.all(s[2] == 0) and np.all(s[:, 2] == 0)
    assert np.all(sim.particle_stress()["coordination"] == 6)


def test_sphere_resting_on_a_plane():
    """At rest, the floor pushes with m g at the contact point (r - delta/2) below the
    centre: sigma_zz V = -(r - delta/2) m g, delta = m g / kn."""
    r, rho, g = 0.01, 2500.0, 9.81
    dom = pdem.Domain((-0.05, -0.05, 0), (0.05, 0.05, 0.1))
    sim = pdem.Simulation(dom, dt=2e-5, gravity=(0, 0, -g))
    kn = 1.0e4
    m = sim.material("m", density=rho, kn=kn, restitution=0.1)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    sim.add_spheres([(0, 0, r)], r, m)
    sim.run(steps=20000)
    mass = rho * 4 / 3 * np.pi * r ** 3
    delta = mass * g / kn
    p = sim.particle_stress()
    vol = 4 / 3 * np.pi * r ** 3
    assert p["stress"][0, 2, 2] * vol == pytest.approx(-(r - delta / 2) * mass * g, rel=1e-6)
    assert p["coordination"][0] == 0                 # walls are not particle contacts
    assert np.abs(p["stress"][0]).max() == pytest.approx(abs(p["stress"][0, 2, 2]))


def test_kinetic_part_of_a_gas():
    """Without contacts the stress is -sum m v' v' / V, v' about the mean velocity."""
    rng = np.random.default_rng(3)
    dom = pdem.Domain((0, 0, 0), (10, 10, 10), periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=1e-4)
    m = sim.material("m", density=1.0, kn=KN)
    pos = (np.arange(64)[:, None] // np.array([16, 4, 1]) % 4 + 0.5) * 2.5
    vel = rng.normal(size=(64, 3)) + (1.0, -2.0, 0.5)
    sim.add_spheres(pos, 0.2, m, velocities=vel)
    mass = np.full(64, 4 / 3 * np.pi * 0.2 ** 3)
    dv = vel - vel.mean(axis=0)
    expected = -(mass[:, None, None] * dv[:, :, None] * dv[:, None, :]).sum(axis=0) / 1000.0
    sim.run(steps=0)
    assert np.allclose(sim.stress(), expected, rtol=1e-12, atol=1e-15)
    assert np.all(sim.stress(kinetic=False) == 0)


def test_bad_volume():
    sim, _ = cubic_lattice(n=3)
    with pytest.raises(pdem.InputError, match="volume"):
        sim.stress(volume=-1.0)


def test_ellipsoid_resting_on_a_plane():
    """The lever of an ellipsoid resting on its shortest axis c is the contact point's
    height, c - delta/2: sigma_zz V = -(c - delta/2) m g with V = 4/3 pi a b c."""
    a, b, c, rho, g, kn = 0.03, 0.02, 0.01, 2500.0, 9.81, 1.0e4
    dom = pdem.Domain((-0.1, -0.1, 0), (0.1, 0.1, 0.1))
    sim = pdem.Simulation(dom, dt=2e-5, gravity=(0, 0, -g))
    m = sim.material("m", density=rho, kn=kn, restitution=0.1)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    sim.add_ellipsoids([(0, 0, c + 1e-4)], (a, b, c), m)
    sim.run(steps=20000)
    volume = 4 / 3 * np.pi * a * b * c
    mass = rho * volume
    delta = mass * g / kn
    s = sim.particle_stress()["stress"][0]
    assert s[2, 2] * volume == pytest.approx(-(c - delta / 2) * mass * g, rel=1e-6)
    assert sim.stress(volume=1.0)[2, 2] == pytest.approx(s[2, 2] * volume, rel=1e-12)
