"""Convex polyhedra against mesh-wall facets (issue 17 with seed 004, docs/polyhedra.md
"Mesh walls"): the kind phmesh. Expected values: the same motion and load as on an
infinite plane (a flat mesh of many triangles is a plane), statics (the weight, the
Minkowski depth of a mesh corner in a face, one contact across the facets that share
it), a moving plane."""
import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem import polyhedra as P
from pdem.contact import shapes

G = 9.81


def scene(wall, dt=2e-4, wall_velocity=None, **kw):
    """Periodic in x, y; the wall: a plane z = 0 or a flat mesh of 2 n^2 triangles."""
    sim = pdem.Simulation(pdem.Domain((0, 0, -0.1), (0.4, 0.4, 0.3), periodic=(True, True, False)),
                          dt=dt, gravity=(0, 0, -G), comm=MPI.COMM_SELF, **kw)
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.5, restitution=0.05,
                     twisting_friction=0.3, twisting_stiffness=0.3)
    if wall == "plane":
        sim.add_plane((0, 0, 0), (0, 0, 1), m, velocity=wall_velocity)
    else:
        sim.add_mesh_wall(shapes.rectangle((0.05, 0.05), (0.35, 0.35), 0.0, wall), m,
                          velocity=wall_velocity)
    return sim, m


def dropped(wall, steps=5000, wall_velocity=None):
    sim, m = scene(wall, wall_velocity=wall_velocity)
    q = np.random.default_rng(1).normal(size=4)
    sim.add_polyhedra([[0.2013, 0.1987, 0.05]], P.cube(0.04), m,
                      orientations=[q / np.linalg.norm(q)], velocities=[[0.05, 0.02, 0]])
    sim.run(steps)
    return sim


def close(p, q, tol):
    for k in ("position", "orientation", "velocity", "angular_velocity"):
        assert np.abs(p[k] - q[k]).max() <= tol * (1 + np.abs(p[k]).max()), k


def test_cube_dropped_on_a_flat_mesh_follows_the_plane():
    """A turned cube lands on a corner, rocks, slides and settles face down over 6 x 6
    squares: the same motion as on a plane (the vertex sums of the facets partition
    the vertices below the plane; one proximity contact), the resting height a/2 -
    W/(4 k_n) and the load = weight."""
    plane, mesh = dropped("plane"), dropped(6)
    p, q = plane.particles(), mesh.particles()
    close(p, q, 1e-11)
    W = q["mass"][0] * G
    assert q["position"][0, 2] == pytest.approx(0.02 - W / 4e4, abs=1e-10)
    load = mesh.mesh_wall_forces()["force"][0]
    assert np.abs(load - [0, 0, -W]).max() < 1e-9 * W
    assert np.abs(plane.plane_forces()[0] - load).max() < 1e-11 * W
    assert list(mesh.contacts()["kind"]) == ["phmesh"]


def test_vertices_on_mesh_vertices_count_once():
    """A cube (side 0.06) at rest face down with its four bottom corners exactly on
    vertices of the mesh (5 x 5 squares of 0.06 from 0.05: corners at 0.11 and 0.17, each
    shared by up to 6 triangles that all hold its projection): each corner is claimed
    once, so the cube stays at a/2 - W/(4 k_n) with the load = weight."""
    sim, m = scene(5)
    W = 0.06 ** 3 * 1000 * G
    z = 0.03 - W / 4e4
    sim.add_polyhedra([[0.14, 0.14, z]], P.cube(0.06), m)
    sim.run(1000)
    p = sim.particles()
    assert abs(p["position"][0, 2] - z) < 1e-12 and np.abs(p["velocity"][0]).max() < 1e-10
    assert np.abs(sim.mesh_wall_forces()["force"][0] - [0, 0, -W]).max() < 1e-9 * W


def test_moving_mesh_drags_like_a_moving_plane():
    v = (0.03, -0.02, 0.0)
    plane, mesh = dropped("plane", 3000, v), dropped(4, 3000, v)
    p, q = plane.particles(), mesh.particles()
    close(p, q, 1e-11)
    assert np.linalg.norm(q["velocity"][0, :2] - v[:2]) < 1e-3     # dragged along


def test_sliding_across_facet_edges_without_a_jump():
    """A cube face down, driven sideways (x, y prescribed) with friction over 8 x 8
    squares: its vertices change facets and the holder changes; the force history
    equals the plane's (seed 004's continuity: no jump at the crossings)."""
    def run(wall):
        sim, m = scene(wall, dt=4e-5, skin=0.002)
        W = 0.04 ** 3 * 1000 * G
        ids = sim.add_polyhedra([[0.1113, 0.1237, 0.02 - W / 4e4]], P.cube(0.04), m)
        sim.set_velocity(ids, velocity=(0.5, 0.2, 0.0))
        sim.block(ids, ["x", "y"])
        f, holders = [], set()
        for _ in range(1200):
            sim.step()
            c = sim.contacts()
            assert len(c["kind"]) == 1
            f.append(c["force"][0])
            if wall != "plane":
                b = sim.interactions["phmesh"].batch
                holders.add(int(b.i2[np.flatnonzero(b.active)[0]]))
        return np.array(f), holders
    fp, _ = run("plane")
    fm, holders = run(8)
    assert len(holders) >= 4
    assert np.abs(fp[:, :2]).max() > 0.1 * np.abs(fp[:, 2]).max()      # sliding friction
    assert np.abs(fm - fp).max() <= 1e-10 * np.abs(fp).max()


def pyramid(apex, height, half):
    """Four triangles around an apex (a mesh corner pointing up)."""
    x, y, z = apex
    base = [[x - half, y - half, z - height], [x + half, y - half, z - height],
            [x + half, y + half, z - height], [x - half, y + half, z - height]]
    return pdem.Mesh(np.array(base + [apex]), np.array([[0, 1, 4], [1, 2, 4], [2, 3, 4],
                                                         [3, 0, 4]]))


DELTA = 1e-4


def pressed(mesh, centre, q=(1, 0, 0, 0)):
    """A cube (side 0.04, all motion blocked) at `centre` over `mesh`, one step: its
    contacts, and the mesh wall's force; every expected contact is delta = 1e-4 along z,
    F = k_n delta."""
    sim = pdem.Simulation(pdem.Domain((-0.1, -0.1, -0.1), (0.1, 0.1, 0.1)), dt=1e-4,
                          gravity=(0, 0, 0), comm=MPI.COMM_SELF)
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.5)
    sim.add_mesh_wall(mesh, m)
    ids = sim.add_polyhedra([centre], P.cube(0.04), m, orientations=[q])
    sim.block(ids, ["x", "y", "z", "rx", "ry", "rz"])
    sim.step()
    c = sim.contacts()
    assert list(c["kind"]) == ["phmesh"]
    assert np.allclose(c["normal"][0], [0, 0, 1], atol=1e-12)
    assert c["overlap"][0] == pytest.approx(DELTA, rel=1e-9)
    assert np.allclose(c["force"][0], [0, 0, 1e4 * DELTA], rtol=1e-9, atol=1e-14)
    return c, sim.mesh_wall_forces()["force"][0]


def test_a_mesh_corner_in_a_face_is_one_contact_of_its_minkowski_depth():
    """A cube's face (turned about z) pressed by delta onto the apex of a 4-facet pyramid
    (no cube vertex above a facet: GJK/EPA): the Minkowski depth is delta along z, and
    the four facets that share the apex give one contact (seed 004's links), F = k_n
    delta at the apex."""
    c, load = pressed(pyramid([0.003, -0.002, 0.0], 0.01, 0.01), [0.0, 0.0, 0.02 - DELTA],
                      [np.cos(0.15), 0, 0, np.sin(0.15)])
    assert np.allclose(c["point"][0], [0.003, -0.002, -DELTA / 2], atol=1e-12)
    assert np.abs(load - [0, 0, -1e4 * DELTA]).max() < 1e-12


def test_a_cube_across_the_top_of_a_thin_rim_rests_on_its_edge():
    """A cube's bottom face pressed by delta onto the top edge of a vertical one-sheet
    rim (two triangles), the cube's vertices on both sides of the sheet: the vertices
    behind the sheet are not an overlap of depth ~a/2 (the body wraps around the sheet's
    boundary edge), the contact is the edge in the face: delta along z."""
    rim = pdem.Mesh(np.array([[0, -0.05, -0.03], [0, 0.05, -0.03], [0, 0.05, 0.0],
                              [0, -0.05, 0.0]]), np.array([[0, 1, 2], [0, 2, 3]]))
    c, load = pressed(rim, [0.0013, 0.002, 0.02 - DELTA])
    assert np.abs(load - [0, 0, -1e4 * DELTA]).max() < 1e-12


@pytest.mark.slow
def test_rocks_settled_in_a_mesh_box_load_it_with_their_weight():
    """12 random rocks poured into a mesh box (4 x 4 squares per side) settle; the
    total vertical load on the box equals their weight."""
    sim = pdem.Simulation(pdem.Domain((-0.05, -0.05, -0.01), (0.05, 0.05, 0.2)), dt=5e-5,
                          gravity=(0, 0, -G), comm=MPI.COMM_SELF)
    m = sim.material("m", density=2500.0, kn=2e4, friction=0.5, restitution=0.1)
    sim.add_mesh_wall(shapes.box((-0.04, -0.04, 0.0), (0.04, 0.04, 0.15), 4), m)
    rocks = [P.rock(16, seed=s, axes=(0.012, 0.009, 0.007)) for s in range(3)]
    rng = np.random.default_rng(3)
    for i in range(12):
        x = [(-0.02 + 0.04 * (i % 2)), (-0.02 + 0.04 * ((i // 2) % 2)), 0.02 + 0.025 * (i // 4)]
        q = rng.normal(size=4)
        sim.add_polyhedra([x], rocks[i % 3], m, orientations=[q / np.linalg.norm(q)])
    sim.run(16000)
    p = sim.particles()
    W = p["mass"].sum() * G
    assert np.abs(p["velocity"]).max() < 2e-3
    load = sim.mesh_wall_forces()["force"][0]
    assert load[2] == pytest.approx(-W, rel=2e-3)
    assert "phmesh" in set(sim.contacts()["kind"])
