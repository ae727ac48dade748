"""Ellipsoids in the engine (issue 16): add_ellipsoids and its input checks, the
rigid-body rotation in the leap-frog step, ellipsoid-plane and ellipsoid pair contacts,
each against an independent value (closed forms, conservation laws, the sphere path)."""
import math

import numpy as np
import pytest

import pdem
from test_rigid_body import rot, top_half_period

G = 9.81


def box(length=1.0, periodic=(True, True, True), dt=1e-4, gravity=(0, 0, 0), **kw):
    return pdem.Simulation(pdem.Domain((0, 0, 0), (length,) * 3, periodic=periodic), dt=dt,
                           gravity=gravity, **kw)


def world_L(p):
    """L = R diag(I) R^T omega of each particle from particles() alone."""
    return np.array([rot(q) @ (I * (rot(q).T @ w)) for q, I, w in
                     zip(p["orientation"], p["inertia"], p["angular_velocity"])])


# ------------------------------------------------------------------- set-up and checks
def test_mass_properties_and_public_fields():
    sim = box()
    m = sim.material("m", density=2000.0, kn=1e3)
    a = np.array([0.1, 0.06, 0.03])
    ids = sim.add_ellipsoids([[0.5, 0.5, 0.5]], [a], m)
    sim.add_spheres([[0.2, 0.2, 0.2]], 0.05, m)
    p = sim.particles()
    mass = 2000.0 * 4.0 / 3.0 * math.pi * a.prod()
    assert list(ids) == [0] and list(p["shape"]) == [1, 0]
    assert p["mass"][0] == pytest.approx(mass, rel=1e-14)
    assert np.allclose(p["inertia"][0], mass / 5 * np.array([a[1] ** 2 + a[2] ** 2,
                                                             a[0] ** 2 + a[2] ** 2,
                                                             a[0] ** 2 + a[1] ** 2]), rtol=1e-14)
    assert p["radius"][0] == 0.1                      # bounding radius
    assert np.array_equal(p["semi_axes"], [a, [0.05] * 3])
    assert np.allclose(p["inertia"][1], 0.4 * p["mass"][1] * 0.05 ** 2, rtol=1e-14)


@pytest.mark.parametrize("kwargs,message", [
    (dict(semi_axes=[[0.1, -0.1, 0.1]]), r"semi_axes\[0\] = \[0.1, -0.1, 0.1\]: semi-axes must be finite and > 0"),
    (dict(semi_axes=[[0.1, np.nan, 0.1]]), r"semi_axes\[0\] = \[0.1, nan, 0.1\]"),
    (dict(semi_axes=[[0.1, 0.1]]), r"semi_axes must have shape \(1, 3\)"),
    (dict(orientations=[[1.0, 0.002, 0, 0]]), r"orientations\[0\] = \[1.0, 0.002, 0.*not a unit quaternion \(norm 1.000002"),
])
def test_bad_input_is_one_clear_line(kwargs, message):
    sim = box()
    m = sim.material("m", density=2000.0, kn=1e3)
    args = dict(positions=[[0.5, 0.5, 0.5]], semi_axes=[[0.1, 0.05, 0.02]], material=m)
    args.update(kwargs)
    with pytest.raises(pdem.InputError, match=message):
        sim.add_ellipsoids(**args)


def test_unit_quaternion_within_tolerance_is_normalized():
    sim = box()
    m = sim.material("m", density=2000.0, kn=1e3)
    sim.add_ellipsoids([[0.5, 0.5, 0.5]], [[0.1, 0.05, 0.02]], m,
                       orientations=[[1.0 + 5e-7, 0, 0, 0]])
    assert sim.particles()["orientation"][0, 0] == 1.0


@pytest.mark.parametrize("case,message", [
    ("2d", "ellipsoids need a 3D domain, got dim=2"),
    ("nscd", "scheme 'nscd' does not support ellipsoid particles"),
    ("no_ratch", "no_ratch=True does not apply to ellipsoid particles"),
])
def test_unsupported_settings_are_refused(case, message):
    if case == "2d":
        sim = pdem.Simulation(pdem.Domain((0, 0), (1, 1), dim=2), dt=1e-4)
    elif case == "nscd":
        sim = box(scheme=pdem.NSCD())
    else:
        sim = box(no_ratch=True)
    m = sim.material("m", density=2000.0, kn=1e3)
    with pytest.raises(pdem.InputError, match=message):
        sim.add_ellipsoids([[0.5, 0.5, 0.0 if case == "2d" else 0.5]], [[0.1, 0.05, 0.02]], m)


# ------------------------------------------------------------------- rotation
def test_torque_free_ellipsoid_keeps_L_and_flips_with_the_rigid_body_period():
    """Spun near its intermediate axis, a free ellipsoid keeps its world angular
    momentum (computed here from particles(): R I R^T omega) to 1e-12 and turns over
    with the elliptic-integral half period of the free top (test_rigid_body's closed
    form), to O(dt^2): 1000 steps per half period."""
    sim = box(2.0, periodic=(False,) * 3, dt=1.0)
    m = sim.material("m", density=1000.0, kn=1e3)
    a = [0.3, 0.2, 0.1]
    omega_body = np.array([0.01, 1.0, 0.01])
    q = np.array([0.9, 0.3, -0.2, 0.1])
    q /= np.linalg.norm(q)
    sim.add_ellipsoids([[0.5, 0.5, 0.5]], [a], m, orientations=[q],
                       angular_velocities=[rot(q) @ omega_body])
    p = sim.particles()
    inertia = p["inertia"][0]
    L0 = world_L(p)[0]
    stored = sim.store.angmom[0].copy()
    T_half = top_half_period(inertia, omega_body)
    sim.dt = T_half / 1000
    l2, worst = [], 0.0
    for _ in range(3500):
        sim.step()
        p = sim.particles()
        L = sim.store.angmom[0]
        worst = max(worst, np.max(np.abs(world_L(p)[0] - L0)) / np.linalg.norm(L0))
        l2.append((rot(p["orientation"][0]).T @ L)[1])
    assert np.array_equal(sim.store.angmom[0], stored)       # no torque: L untouched
    assert worst < 1e-12
    l2 = np.array(l2)
    idx = np.flatnonzero(np.sign(l2[1:]) != np.sign(l2[:-1]))
    tc = (idx + l2[idx] / (l2[idx] - l2[idx + 1])) * sim.dt
    half = np.diff(tc)
    assert len(half) >= 2
    print("flip half period %.6f vs closed form %.6f" % (half.mean(), T_half))
    assert np.max(np.abs(half / T_half - 1)) < 5e-4


# ------------------------------------------------------------------- contacts
def dropped(steps=20000, floor=None):
    """An ellipsoid (0.03, 0.02, 0.01) dropped on a plane in a random orientation, with
    normal damping, friction, rolling and twisting resistance (a point contact alone
    does not damp spin about the normal, nor rocking without slip). floor(sim, m): the
    wall to add instead of the plane z = 0."""
    sim = box(0.4, periodic=(True, True, False), dt=2e-4, gravity=(0, 0, -G))
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.5, restitution=0.05,
                     twisting_friction=0.3, twisting_stiffness=0.3, rolling_friction=0.02,
                     rolling_stiffness=0.3)
    if floor is None:
        sim.add_plane((0, 0, 0), (0, 0, 1), m)
    else:
        floor(sim, m)
    q = np.random.default_rng(1).normal(size=4)
    sim.add_ellipsoids([[0.2, 0.2, 0.032]], [[0.03, 0.02, 0.01]], m,
                       orientations=[q / np.linalg.norm(q)])
    sim.run(steps)
    return sim


def test_dropped_ellipsoid_rests_on_its_flat_side():
    """At rest the centre is lowest: height = the support function along the vertical
    h(e_z) = sqrt(sum a_i^2 (R^T e_z)_i^2) less the static overlap W / k_n, which is the
    smallest semi-axis to 5e-6 (a small tilt held by the rolling resistance, ~7e-3 rad,
    raises it by (a^2/c - c) theta^2 / 2 ~ 2e-6); the shortest axis vertical, and the
    plane carries the weight to 1e-6."""
    sim = dropped()
    p = sim.particles()
    W = p["mass"][0] * G
    z = p["position"][0, 2]
    axes = rot(p["orientation"][0])            # columns: body axes in world coordinates
    support = math.sqrt(np.sum((np.array([0.03, 0.02, 0.01]) * axes[2]) ** 2))  # h(e_z)
    assert abs(z - (support - W / 1e4)) < 1e-8, (z, support)
    assert abs(z - (0.01 - W / 1e4)) < 5e-6, z
    assert abs(axes[2, 2]) > math.cos(0.02)    # the shortest axis vertical
    assert abs(axes[2, 0]) < 0.02              # the longest one horizontal
    load = sim.plane_forces()[0]
    assert abs(-load[2] / W - 1) < 1e-6, load / W
    assert np.linalg.norm(p["velocity"][0]) < 1e-4
    c = sim.contacts()
    assert list(c["kind"]) == ["ellplane"]
    assert c["point"][0, 2] == pytest.approx(-0.5 * c["overlap"][0], abs=1e-9)


def two_particles(kind, law="hooke", dt=1e-5, restitution=0.5, friction=0.4,
                  gravity=(0, 0, -G), settle=0):
    """A sphere (or the ellipsoid a = b = c of the same radius) hitting another one
    obliquely while both rest on a plane: pair, plane, friction, rotation. settle > 0:
    the other one is a sphere, alone for `settle` steps (rebuilds of a scene of spheres)
    before the first is added."""
    sim = box(1.0, periodic=(True, True, False), dt=dt, gravity=gravity)
    stiffness = dict(kn=2e3) if law == "hooke" else dict(law="hertz", young=5e6, poisson=0.3)
    m = sim.material("m", density=1000.0, friction=friction, restitution=restitution,
                     **stiffness)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    pos = [[0.40, 0.50, 0.0502], [0.52, 0.53, 0.0503]]   # not exactly touching
    vel = [[0.5, 0.1, 0.0], [0.0, 0.0, 0.0]]
    w = [[0, 0, 3.0], [1.0, 0, 0]]
    if settle:
        sim.add_spheres(pos[1:], 0.05, m, velocities=vel[1:], angular_velocities=w[1:])
        sim.run(settle)
        assert sim.n_rebuilds >= 1 and not sim.shapes
        pos, vel, w = pos[:1], vel[:1], w[:1]
    if kind == "sphere":
        sim.add_spheres(pos, 0.05, m, velocities=vel, angular_velocities=w)
    else:
        sim.add_ellipsoids(pos, [[0.05] * 3] * len(pos), m, orientations=[Q0] * len(pos),
                           velocities=vel, angular_velocities=w)
    return sim


def assert_same_motion(p, c, q, d):
    """Positions, velocities and spins of two runs (particles(), contacts()) equal to
    1e-10 of their scale, the contact forces (matched by wall and ids) to 1e-8."""
    assert len(c["id2"]) == len(d["id2"]) >= 2
    for k in ("position", "velocity", "angular_velocity"):
        scale = np.abs(p[k]).max()
        assert np.max(np.abs(p[k] - q[k])) < 1e-10 * scale, k
    fc, fd = (x["force"][np.lexsort((x["id2"], x["id1"], x["wall"]))] for x in (c, d))
    assert np.max(np.abs(fc - fd)) < 1e-8 * np.abs(fc).max()


Q0 = np.array([0.8, 0.2, 0.4, -0.4])          # a unit quaternion


@pytest.mark.parametrize("law", ["hooke", "hertz"])
def test_ellipsoid_with_equal_axes_follows_the_sphere(law):
    """a = b = c: the same trajectory as the sphere, to round-off: not bitwise, since
    the normal comes from the common-normal solve (support maps through the shape
    matrix) instead of x2/|x2|, R* (Hertz) from curvature tensors, the torque from the
    branch vector c - x instead of -(r + u_n/2) n, and the rotation from L through q."""
    runs = []
    for kind in ("sphere", "ellipsoid"):
        sim = two_particles(kind, law)
        sim.run(6000)
        runs.append((sim.particles(), sim.contacts()))
    (p, c), (q, d) = runs
    assert np.any(c["kind"] == "pair")
    assert_same_motion(p, c, q, d)
    for qs, qe in zip(p["orientation"], q["orientation"]):   # the same turn from Q0
        assert np.max(np.abs(rot(qe) @ rot(Q0).T - rot(qs))) < 1e-10


def test_ellipsoid_added_to_a_running_sphere_scene_collides_as_a_sphere():
    """Rebuilds of a scene of spheres skip the non-sphere kinds (needs_build); an
    ellipsoid a = b = c added after such rebuilds gets its contacts: the same trajectory
    as a sphere added instead, to round-off (see the test above)."""
    runs = []
    for kind in ("sphere", "ellipsoid"):
        sim = two_particles(kind, settle=500)
        sim.run(6000)
        runs.append((sim.particles(), sim.contacts()))
    (p, c), (q, d) = runs
    assert np.any(c["kind"] == "pair") and np.any(d["kind"] == "ellpair")
    assert_same_motion(p, c, q, d)


def head_on(dt, orientations=None):
    """Two ellipsoids (0.1, 0.05, 0.03), aligned by default, approaching along their
    major axes; elastic and frictionless."""
    sim = box(1.0, dt=dt)
    m = sim.material("m", density=1000.0, kn=1e3, friction=0.0, restitution=1.0)
    sim.add_ellipsoids([[0.38, 0.5, 0.5], [0.62, 0.5, 0.5]], [[0.1, 0.05, 0.03]] * 2, m,
                       orientations=orientations, velocities=[[0.5, 0, 0], [-0.3, 0, 0]])
    return sim


def test_head_on_collision_along_the_major_axis():
    """Momentum to round-off; the elastic rebound is the 1D linear spring's: relative
    velocity reversed, contact duration pi sqrt(m*/k_n) (the gap is d - 2a, the normal
    the major axis), energy back to 1e-6."""
    sim = head_on(2e-5)
    p = sim.particles()
    mv0 = (p["mass"][:, None] * p["velocity"]).sum(axis=0)
    e0 = sum(sim.energy().values())
    m_star = p["mass"][0] / 2
    t_contact = math.pi * math.sqrt(m_star / 1e3)
    touching = []
    worst = 0.0
    for _ in range(120):
        sim.run(50)
        touching.append(sim.n_contacts)
        p = sim.particles()
        mv = (p["mass"][:, None] * p["velocity"]).sum(axis=0)
        worst = max(worst, np.max(np.abs(mv - mv0)) / np.abs(mv0).max())
    print("momentum error %.3g" % worst)
    assert worst < 1e-13
    v = p["velocity"]
    assert v[1, 0] - v[0, 0] == pytest.approx(0.8, rel=1e-6)
    assert np.max(np.abs(v[:, 1:])) < 1e-12 and np.max(np.abs(p["angular_velocity"])) < 1e-12
    assert abs(sum(sim.energy().values()) / e0 - 1) < 1e-6
    # the contact lasts pi sqrt(m*/k): first touch at gap 0.24 - 0.2 closed at 0.8
    assert sum(touching) * 50 * 2e-5 == pytest.approx(t_contact, abs=1e-3)
    # the line of centres is the common normal: every solve ends at its start
    stats = sim.shape_stats()
    assert stats["contacts"] > 2000 and stats["iterations_max"] == 0


def test_oblique_elastic_collision_of_turned_ellipsoids():
    """One ellipsoid turned: the contact point is off the line of centres, so the pair
    spins up. Momentum to round-off, angular momentum about the origin (sum of r x m v
    + R I R^T omega from particles()) and energy (elastic, frictionless) back after the
    contact; the warm-started solve takes 1-2 iterations per contact and step."""
    q = np.array([0.9, 0.1, 0.3, 0.2])
    sim = head_on(2e-5, orientations=[[1, 0, 0, 0], q / np.linalg.norm(q)])

    def invariants():
        p = sim.particles()
        mom = (p["mass"][:, None] * p["velocity"]).sum(axis=0)
        ang = (np.cross(p["position"], p["mass"][:, None] * p["velocity"]) + world_L(p)).sum(axis=0)
        return mom, ang, sum(sim.energy().values())

    mom0, ang0, e0 = invariants()
    sim.run(8000)
    mom, ang, e = invariants()
    p = sim.particles()
    assert sim.n_contacts == 0 and np.abs(p["angular_velocity"]).max() > 0.1
    assert np.max(np.abs(mom - mom0)) < 1e-13 * np.abs(mom0).max()
    print("angular momentum error %.3g, energy error %.3g" % (
        np.max(np.abs(ang - ang0)) / np.abs(mom0).max(), e / e0 - 1))
    assert np.max(np.abs(ang - ang0)) < 1e-12 * np.abs(mom0).max()
    assert abs(e / e0 - 1) < 1e-6
    stats = sim.shape_stats()
    print(stats)
    assert stats["contacts"] > 1000 and 0.5 < stats["iterations_mean"] <= 2.5
    assert stats["iterations_max"] <= 10


def test_failed_solve_stops_with_step_ids_and_iterations():
    q = np.array([0.9, 0.1, 0.3, 0.2])
    sim = head_on(2e-5, orientations=[[1, 0, 0, 0], q / np.linalg.norm(q)])
    sim.interactions["ellpair"].max_iter = 0
    with pytest.raises(pdem.SimulationError, match=r"step \d+ \(t=.*\): the common-normal "
                       r"contact solve of particles 0 and 1 did not converge in 0 iterations"):
        sim.run(20000)


def test_frames_carry_shape_and_a_tensor_for_paraview(tmp_path):
    """A result file of ellipsoids holds shape, semi-axes and orientation by default, and
    the shape tensor R diag(a) R^T (eigenvalues the semi-axes, eigenvectors the body
    axes) as an XDMF Tensor attribute."""
    import h5py
    from pdem.io import ResultFile
    sim = box()
    m = sim.material("m", density=1000.0, kn=1e3)
    q = np.array([0.9, 0.1, 0.3, 0.2])
    q /= np.linalg.norm(q)
    sim.add_ellipsoids([[0.5, 0.5, 0.5]], [[0.1, 0.06, 0.03]], m, orientations=[q])
    sim.add_spheres([[0.2, 0.2, 0.2]], 0.05, m)
    with ResultFile(str(tmp_path / "r.h5"), sim) as rf:
        rf.write_frame()
    with h5py.File(tmp_path / "r.h5", "r") as f:
        g = f["frames/000000/particles"]
        assert list(g["shape"][...]) == [1, 0]
        assert np.array_equal(g["semi_axes"][...], [[0.1, 0.06, 0.03], [0.05] * 3])
        tensor = g["shape_tensor"][0].reshape(3, 3)
    values, vectors = np.linalg.eigh(tensor)
    assert np.allclose(values, [0.03, 0.06, 0.1], rtol=1e-12)
    assert abs(abs(vectors[:, 2] @ rot(q)[:, 0]) - 1) < 1e-12   # the major axis
    assert 'Name="shape_tensor" AttributeType="Tensor"' in (tmp_path / "r.xdmf").read_text()


def test_editing_ellipsoids():
    """set_velocity gives an ellipsoid its angular momentum R I R^T omega; set_material
    its mass from its semi-axes; set_radius is refused."""
    sim = box()
    m = sim.material("m", density=1000.0, kn=1e3)
    heavy = sim.material("heavy", density=3000.0, kn=1e3)
    sim.add_ellipsoids([[0.5, 0.5, 0.5]], [[0.1, 0.06, 0.03]], m,
                       orientations=[[0.9, 0.1, 0.3, 0.2] / np.linalg.norm([0.9, 0.1, 0.3, 0.2])])
    sim.set_velocity([0], angular_velocity=[1.0, 2.0, 3.0])
    p = sim.particles()
    assert np.allclose(sim.store.angmom[0], world_L(p)[0], rtol=1e-14, atol=0)
    sim.set_material([0], heavy)
    p = sim.particles()
    assert p["mass"][0] == pytest.approx(3000 * 4 / 3 * math.pi * 0.1 * 0.06 * 0.03, rel=1e-14)
    assert np.allclose(sim.store.angmom[0], world_L(p)[0], rtol=1e-14, atol=0)
    with pytest.raises(pdem.InputError, match="set_radius: particle id 0 is an ellipsoid"):
        sim.set_radius([0], 0.1)
    sim.block([0], "xyz")


# ------------------------------------------------------------------- 2D ellipses
def box2d(length=0.4, dt=2e-4, gravity=(0, -G, 0)):
    return pdem.Simulation(pdem.Domain((0, 0), (length, length), periodic=(True, False), dim=2),
                           dt=dt, gravity=gravity)


def test_ellipse_mass_properties_and_checks():
    sim = box2d()
    m = sim.material("m", density=1000.0, kn=1e3)
    sim.add_ellipses([[0.2, 0.2]], [[0.03, 0.01]], m, angles=0.4, angular_velocities=2.0)
    p = sim.particles()
    mass = 1000 * math.pi * 0.03 * 0.01
    assert list(p["shape"]) == [2] and p["mass"][0] == pytest.approx(mass, rel=1e-14)
    assert p["inertia"][0, 2] == pytest.approx(mass * (0.03 ** 2 + 0.01 ** 2) / 4, rel=1e-14)
    assert np.allclose(p["orientation"][0], [math.cos(0.2), 0, 0, math.sin(0.2)], atol=1e-15)
    assert np.array_equal(p["angular_velocity"][0], [0, 0, 2.0])
    with pytest.raises(pdem.InputError, match=r"semi_axes must have shape \(1, 2\) \(two "
                                               r"semi-axes per ellipse\)"):
        sim.add_ellipses([[0.1, 0.2]], [[0.03, 0.01, 0.01]], m)
    with pytest.raises(pdem.InputError, match="ellipses need a 2D domain, got dim=3"):
        box().add_ellipses([[0.5, 0.5, 0.5]], [[0.03, 0.01]], m)


def test_ellipse_with_equal_axes_follows_the_disk():
    """a = b: the disk's trajectory to round-off (an oblique impact of two on a line)."""
    runs = []
    for kind in ("disk", "ellipse"):
        sim = box2d(1.0, dt=1e-5)
        m = sim.material("m", density=1000.0, kn=2e3, friction=0.4, restitution=0.5)
        sim.add_plane((0, 0, 0), (0, 1, 0), m)
        pos, vel, w = [[0.40, 0.0502], [0.52, 0.06]], [[0.5, 0.0], [0.0, 0.0]], [3.0, -1.0]
        if kind == "disk":
            sim.add_spheres(pos, 0.05, m, velocities=vel, angular_velocities=w)
        else:
            sim.add_ellipses(pos, [[0.05, 0.05]] * 2, m, velocities=vel, angular_velocities=w)
        sim.run(6000)
        runs.append(sim.particles())
    p, q = runs
    for k in ("position", "velocity", "angular_velocity"):
        assert np.max(np.abs(p[k] - q[k])) < 1e-10 * np.abs(p[k]).max(), k


def test_dropped_ellipse_rests_on_its_long_side():
    """Centre height = the support function sqrt(a^2 sin^2 theta + b^2 cos^2 theta) of the
    resting tilt theta (|theta| < 0.02, held by the rolling resistance) less W / k_n (2D,
    per unit thickness): the major axis horizontal; the line carries the weight;
    the angular momentum stays along z exactly."""
    sim = box2d()
    m = sim.material("m", density=1000.0, kn=1e6, friction=0.5, restitution=0.05,
                     rolling_friction=0.02, rolling_stiffness=0.3)
    sim.add_plane((0, 0, 0), (0, 1, 0), m)
    sim.add_ellipses([[0.2, 0.05]], [[0.03, 0.01]], m, angles=1.0, angular_velocities=3.0)
    sim.run(20000)
    p = sim.particles()
    W = p["mass"][0] * G
    theta = 2 * math.atan2(p["orientation"][0, 3], p["orientation"][0, 0])
    # the support function along the vertical less the static overlap W / k_n: the
    # height for the small tilt theta the rolling resistance holds
    support = math.sqrt((0.03 * math.sin(theta)) ** 2 + (0.01 * math.cos(theta)) ** 2)
    assert abs(p["position"][0, 1] - (support - W / 1e6)) < 1e-8, (p["position"][0], theta)
    assert abs(math.sin(theta)) < 0.02, theta
    assert abs(-sim.plane_forces()[0, 1] / W - 1) < 1e-6
    assert np.all(sim.store.angmom[0, :2] == 0.0) and np.all(p["orientation"][0, 1:3] == 0.0)


def test_checkpoint_before_shapes_restarts_as_spheres(tmp_path):
    """A version 6 checkpoint (no shape fields, no ellipsoid kinds) is read with every
    particle a sphere, and continues bit for bit."""
    import h5py
    from mpi4py import MPI

    def scene():
        sim = two_particles("sphere")
        sim.run(300)
        return sim

    straight = scene()
    straight.run(200)
    path = str(tmp_path / "old.h5")
    scene().checkpoint(path)
    with h5py.File(path, "a") as f:
        for k in ("shape", "semi_axes", "inertia_body", "angmom", "template"):
            del f["particles/" + k]
        for k in ("ellpair", "ellplane"):
            del f["interactions/" + k]
        del f["templates"]
        f.attrs["version"] = 6
    resumed = pdem.restart(path, comm=MPI.COMM_SELF)
    assert not resumed.shapes
    resumed.run(200)
    p, q = straight.particles(), resumed.particles()
    for k in p:
        assert np.array_equal(p[k], q[k]), k


# ------------------------------------------------------------------- blocked rotations
def spinning_on_a_plane(blocked, omega, steps=1500):
    """A tilted ellipsoid pressed on a rough plane and spun, with the given rotations
    blocked (set_velocity(..., block=True) holds omega's blocked components)."""
    sim = box(0.4, periodic=(True, True, False), dt=2e-4, gravity=(0, 0, -G))
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.5, restitution=0.3,
                     rolling_friction=0.1, rolling_stiffness=0.3)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    q = np.array([0.9, 0.3, -0.2, 0.1])
    q /= np.linalg.norm(q)
    ids = sim.add_ellipsoids([[0.2, 0.2, 0.022]], [[0.03, 0.02, 0.01]], m, orientations=[q],
                             velocities=[[0.3, -0.1, 0]], angular_velocities=[omega])
    sim.block(ids, blocked)
    q0 = sim.particles()["orientation"][0].copy()
    out = []
    for _ in range(steps):
        sim.step()
        p = sim.particles()
        out.append((p["orientation"][0].copy(), p["angular_velocity"][0].copy(),
                    sim.store.angmom[0].copy()))
    return q0, out, sim


def test_all_rotations_blocked_keeps_the_orientation_bit_for_bit():
    q0, out, sim = spinning_on_a_plane(["rx", "ry", "rz"], [0.0, 0.0, 0.0])
    assert len(sim.contacts()["kind"]) == 1            # torques acted on it
    for q, w, L in out:
        assert np.array_equal(q, q0)
        assert not np.any(w) and not np.any(L)


def test_rx_ry_blocked_turns_about_z_only():
    """Blocked x and y rotations: omega_x = omega_y = 0 held, the body turns about the
    world z axis only (the z components of its axes stay, to round-off) while the
    free omega_z follows L_z = I_zz omega_z (I_zz constant under z rotations) and the
    friction torque about z."""
    q0, out, sim = spinning_on_a_plane(["rx", "ry"], [0.0, 0.0, 20.0])
    z0 = rot(q0)[2]                                   # z components of the body axes
    turned = 0.0
    for q, w, L in out:
        assert w[0] == 0.0 and w[1] == 0.0
        assert np.abs(rot(q)[2] - z0).max() < 1e-13
        I_w = rot(q) @ np.diag(sim.particles()["inertia"][0]) @ rot(q).T
        assert abs(L[2] - I_w[2, 2] * w[2]) < 1e-14 * abs(L[2]) + 1e-18
        turned = max(turned, abs(w[2]))
    assert out[-1][1][2] != 20.0 and turned > 0       # omega_z is free (changed)


def test_set_velocity_with_block_holds_a_spin():
    """set_velocity(..., block=True) prescribes all three components: the body spins at
    the given omega whatever the contact torques, its L = I_w omega."""
    q0, out, sim = spinning_on_a_plane([], [1.0, -2.0, 3.0], steps=1)
    sim.set_velocity([0], angular_velocity=[1.0, -2.0, 3.0], block=True)
    for _ in range(500):
        sim.step()
        p = sim.particles()
        assert np.array_equal(p["angular_velocity"][0], [1.0, -2.0, 3.0])
    assert np.allclose(world_L(p)[0], sim.store.angmom[0], rtol=1e-13, atol=1e-18)


# ------------------------------------------------------------------- time-step check
def test_hertz_timestep_check_uses_the_smallest_semi_axis():
    """A flat Hertz ellipsoid (0.05, 0.04, 0.005): the critical step is the Rayleigh
    time pi R sqrt(rho/G) / (0.1631 nu + 0.8766) with R = the thickness 0.005, ten times
    below the bounding radius' (which would accept a step ~4x its contact-frequency
    limit: pdem.shapes.timestep_radii)."""
    rho, E, nu = 2500.0, 1e7, 0.3
    t_r = math.pi * 0.005 * math.sqrt(rho / (E / (2 * (1 + nu)))) / (0.1631 * nu + 0.8766)
    for dt, refused in ((1.02 * t_r, True), (0.98 * t_r, False), (5 * t_r, True)):
        sim = box(1.0, periodic=(False,) * 3, dt=dt)
        m = sim.material("m", density=rho, law="hertz", young=E, poisson=nu)
        sim.add_plane((0, 0, 0), (0, 0, 1), m)
        sim.add_ellipsoids([[0.5, 0.5, 0.5]], [[0.05, 0.04, 0.005]], m)
        if refused:
            with pytest.raises(pdem.InputError, match="Rayleigh time of material 'm'"):
                sim.step()
        else:
            with pytest.warns(pdem.TimeStepWarning):
                sim.step()


@pytest.mark.parametrize("wall", [True, False])
def test_jkr_pulloff_of_a_round_ellipsoid_equals_the_sphere(wall):
    """a = b = c ellipsoids held beyond touching (JKR's reach): pulled off a plane or
    another one under displacement control, the largest pull is (3/2) pi W R* (R* = R,
    or R/2 for two), the contact breaks at the separation d_c of the closed form, as
    test_cohesion checks for spheres."""
    from test_cohesion import DT, ESTAR_SAME, E, NU, RHO, W, drive, jkr_separation
    r = 1e-3
    rs = r if wall else r / 2
    dc = jkr_separation(rs, ESTAR_SAME, W)
    d0, step = 2e-6, 2e-9
    sim = pdem.Simulation(pdem.Domain((-0.01,) * 3, (0.01,) * 3), dt=DT, threads=1, skin=1e-7)
    sim.material("m", RHO, law="hertz", young=E, poisson=NU, cohesion="jkr", surface_energy=W)
    if wall:
        sim.add_plane((0, 0, 0), (0, 0, 1), "m")
        ids = sim.add_ellipsoids([[0.0, 0.0, r - d0]], [r, r, r], "m")
    else:
        ids = sim.add_ellipsoids([[0, 0, 0], [2 * r - d0, 0, 0]], [r, r, r], "m")
    rec = drive(sim, ids, step / DT, int((d0 - 1.3 * dc) / step), wall)
    held = np.isfinite(rec[:, 0])
    last = np.flatnonzero(held)[-1]
    assert held[:last + 1].all() and not held[last + 1:].any() and last < len(rec) - 10
    assert -np.nanmin(rec[:, 1]) == pytest.approx(1.5 * math.pi * W * rs, rel=1e-5)
    assert dc <= rec[last, 0] < dc + step * 1.001
