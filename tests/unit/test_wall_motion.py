"""Wall motion (seed 004, "Faceted Walls"): a wall rotating about W_r for many steps
stays at the analytic rotation with its shape exact (no drift); rotation combined with
translation; the wall velocity at a point is the rigid-body formula; deformable walls
move by their vertex velocities and interpolate them barycentrically."""
import numpy as np
import pytest

from pdem.contact.mesh import Mesh
from pdem.contact.wall_motion import (DeformableMotion, RigidMotion, quat_to_matrix,
                                      axis_angle_quaternion)
from pdem.errors import InputError


def box_mesh(lo=(0.2, -0.3, 0.1), hi=(1.3, 0.5, 0.7)):
    """Closed box surface, 12 facets, outward normals."""
    lo, hi = np.array(lo), np.array(hi)
    V = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                  for z in (lo[2], hi[2])])
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    F = []
    for a, b, c, d in quads:
        F += [(a, b, c), (a, c, d)]
    return Mesh(V, np.array(F))


def rodrigues(axis, angle):
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def edge_lengths(mesh):
    v = mesh.vertices
    return np.linalg.norm(v[mesh.edges[:, 0]] - v[mesh.edges[:, 1]], axis=1)


def test_quaternion_turns_by_the_intended_angle():
    # exact axis-angle: |w| dt per step; the seed's literal normalized q(1, w dt) would
    # turn by 2 atan(|w| dt) (about twice as much)
    axis, a = np.array([1.0, 2.0, -2.0]) / 3.0, 0.3
    assert np.allclose(quat_to_matrix(axis_angle_quaternion(axis, a)), rodrigues(axis, a),
                       atol=1e-15)
    literal = quat_to_matrix(np.r_[1.0, axis * a])
    assert np.allclose(literal, rodrigues(axis, 2 * np.arctan(a)), atol=1e-15)


def test_rotation_about_reference_point_has_no_drift():
    mesh = box_mesh()
    V0, L0, A0, N0 = mesh.vertices.copy(), edge_lengths(mesh), mesh.areas.copy(), mesh.normals.copy()
    Wr = np.array([0.4, 0.1, -0.2])
    w = np.array([0.3, -0.5, 0.8]) * 7.0
    dt, n = 1e-4, 100_000
    motion = RigidMotion(mesh, angular_velocity=w, reference_point=Wr)
    for _ in range(n):
        motion.step(dt)
    R = rodrigues(w, np.linalg.norm(w) * n * dt)          # ~ 67 rad turned
    expect = Wr + (V0 - Wr) @ R.T
    scale = np.max(np.linalg.norm(V0 - Wr, axis=1))
    assert np.max(np.abs(mesh.vertices - expect)) <= 1e-12 * scale
    assert np.allclose(edge_lengths(mesh), L0, rtol=4e-15, atol=0)
    assert np.allclose(mesh.areas, A0, rtol=4e-15, atol=0)
    assert np.max(np.abs(mesh.normals - N0 @ R.T)) <= 1e-12
    assert np.array_equal(motion.reference_point, Wr)
    # a vertex on the axis through W_r stays put: W_r itself
    assert np.allclose(Wr + (Wr - Wr) @ motion.rotation_matrix().T, Wr)


def test_translation_and_rotation_combined():
    mesh = box_mesh()
    V0 = mesh.vertices.copy()
    Wr, v, w = np.array([1.0, 0.0, 0.5]), np.array([0.2, -0.1, 0.05]), np.array([0.0, 0.0, 3.0])
    dt, n = 1e-3, 2000
    motion = RigidMotion(mesh, velocity=v, angular_velocity=w, reference_point=Wr)
    for _ in range(n):
        motion.step(dt)
    t = n * dt
    expect = Wr + v * t + (V0 - Wr) @ rodrigues(w, 3.0 * t).T
    assert np.max(np.abs(mesh.vertices - expect)) <= 1e-13
    assert np.allclose(motion.reference_point, Wr + v * t, rtol=0, atol=1e-15)
    # one step is "rotate about W_r, then translate W_r and the vertices by v dt"
    before, W = mesh.vertices.copy(), motion.reference_point.copy()
    motion.step(dt)
    one = W + (before - W) @ rodrigues(w, 3.0 * dt).T + v * dt
    assert np.max(np.abs(mesh.vertices - one)) <= 1e-14


def test_changing_angular_velocity():
    """Two constant-axis segments: the orientation composes R2 R1."""
    mesh = box_mesh()
    V0 = mesh.vertices.copy()
    Wr = np.array([0.5, 0.5, 0.5])
    motion = RigidMotion(mesh, angular_velocity=(1.0, 0.0, 0.0), reference_point=Wr)
    for _ in range(1000):
        motion.step(1e-3)
    motion.set_velocity(angular_velocity=(0.0, -2.0, 1.0))
    for _ in range(500):
        motion.step(1e-3)
    R = rodrigues((0.0, -2.0, 1.0), np.sqrt(5.0) * 0.5) @ rodrigues((1, 0, 0), 1.0)
    assert np.max(np.abs(mesh.vertices - (Wr + (V0 - Wr) @ R.T))) <= 1e-13


def test_rigid_wall_velocity_at_point():
    mesh = box_mesh()
    Wr, v, w = np.array([0.3, 0.2, 0.1]), np.array([1.0, -2.0, 0.5]), np.array([0.4, 0.7, -1.1])
    motion = RigidMotion(mesh, velocity=v, angular_velocity=w, reference_point=Wr)
    for _ in range(10):
        motion.step(1e-2)
    p = np.random.default_rng(0).uniform(-1, 1, (20, 3))
    Wn = Wr + 0.1 * v
    r = p - Wn
    expect = np.c_[v[0] + w[1] * r[:, 2] - w[2] * r[:, 1],
                   v[1] + w[2] * r[:, 0] - w[0] * r[:, 2],
                   v[2] + w[0] * r[:, 1] - w[1] * r[:, 0]]
    assert np.allclose(motion.velocity_at(p), expect, rtol=0, atol=1e-14)
    # the velocity of a vertex is the finite difference of its motion (to O(dt))
    dt = 1e-6
    before = mesh.vertices.copy()
    vel = motion.velocity_at(before)
    motion.step(dt)
    assert np.allclose((mesh.vertices - before) / dt, vel, rtol=0, atol=1e-5)


def test_deformable_motion_and_interpolated_velocity():
    mesh = box_mesh()
    V0 = mesh.vertices.copy()
    rng = np.random.default_rng(2)
    U = rng.uniform(-0.01, 0.01, V0.shape)
    motion = DeformableMotion(mesh, U)
    for _ in range(1000):
        motion.step(1e-2)
    assert np.allclose(mesh.vertices, V0 + 10.0 * U, rtol=0, atol=1e-15)
    v = mesh.vertices
    c = np.cross(v[mesh.facets[:, 1]] - v[mesh.facets[:, 0]], v[mesh.facets[:, 2]] - v[mesh.facets[:, 1]])
    assert np.allclose(mesh.normals, c / np.linalg.norm(c, axis=1)[:, None], atol=1e-15)
    # velocity at a point of a facet: barycentric interpolation of its vertex velocities
    f = np.arange(mesh.n_facets)
    b = rng.dirichlet((1, 1, 1), size=len(f))
    p = np.einsum("nk,nkj->nj", b, v[mesh.facets[f]])
    expect = np.einsum("nk,nkj->nj", b, U[mesh.facets[f]])
    assert np.allclose(motion.velocity_at(p, f, b), expect, atol=1e-16)
    assert np.allclose(motion.velocity_at(p, f), expect, atol=1e-15)   # bary from p
    assert np.allclose(motion.velocity_at(v[mesh.facets[f, 1]], f), U[mesh.facets[f, 1]],
                       atol=1e-15)
    with pytest.raises(InputError, match="one per mesh vertex"):
        motion.set_velocity(U[:-1])


def test_bad_rigid_motion_input():
    with pytest.raises(InputError, match="angular_velocity"):
        RigidMotion(box_mesh(), angular_velocity=(1.0, 2.0))
    with pytest.raises(InputError, match="time step"):
        RigidMotion(box_mesh()).step(-1.0)
