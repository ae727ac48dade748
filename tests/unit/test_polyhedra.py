"""Convex polyhedron templates (pdem/polyhedra.py): hull, exact mass properties in the
principal frame and generators, against trimesh (an independent implementation) and
closed forms."""
import numpy as np
import pytest
import trimesh

import pdem
from pdem import polyhedra as P
from pdem.shape_templates import ShapeTemplates


def rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


@pytest.mark.parametrize("seed", range(6))
def test_mass_properties_match_trimesh(seed):
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(12 + 5 * seed, 3)) * [1.0, 0.6, 0.3] + rng.normal(size=3)
    poly = P.Polyhedron(pts)
    ref = trimesh.convex.convex_hull(pts)
    assert poly.volume == pytest.approx(ref.volume, rel=1e-12)
    assert np.allclose(poly.centroid, ref.center_mass, atol=1e-12)
    # trimesh's inertia is of the solid of unit density about its centre of mass
    assert np.allclose(poly.moments, np.linalg.eigvalsh(ref.moment_inertia), rtol=1e-11)
    # the stored frame: principal, and the given vertices are centroid + R v_body
    R = rot(poly.orientation)
    world = poly.centroid + poly.vertices @ R.T
    assert np.allclose(np.sort(world, axis=0), np.sort(ref.vertices, axis=0), atol=1e-12)
    body = trimesh.Trimesh(poly.vertices, poly.triangles)
    assert body.is_watertight and body.volume > 0          # outward triangles
    assert np.allclose(body.moment_inertia, np.diag(poly.moments), atol=1e-12)
    assert poly.bound == pytest.approx(np.linalg.norm(poly.vertices, axis=1).max())
    assert np.linalg.det(R) == pytest.approx(1.0)


def test_box_and_platonic_closed_forms():
    b = P.box(1.0, 2.0, 3.0)
    assert b.volume == pytest.approx(6.0, rel=1e-14)
    # I = m (b^2 + c^2) / 12 and cyclic, ascending: about the long axis first
    assert np.allclose(b.moments, [6 * 5 / 12, 6 * 10 / 12, 6 * 13 / 12], rtol=1e-13)
    assert b.bound == pytest.approx(np.sqrt(14) / 2)
    c = P.cube(2.0)
    assert np.allclose(c.moments, 8 * 8 / 12) and np.allclose(c.orientation, [1, 0, 0, 0])
    assert np.allclose(np.abs(c.vertices), 1.0)
    a = 1.5                                          # regular tetrahedron of edge a
    t = P.tetrahedron(a)
    assert t.volume == pytest.approx(a ** 3 / (6 * 2 ** 0.5), rel=1e-13)
    assert np.allclose(t.moments, t.volume * a * a / 20, rtol=1e-12)
    counts = {"tetrahedron": (4, 4), "cube": (8, 12), "octahedron": (6, 8),
              "dodecahedron": (20, 36), "icosahedron": (12, 20)}
    vol = {"octahedron": 4 / 3, "icosahedron": 2.5361507101204093}
    for name, (nv, nt) in counts.items():
        p = P.regular(name, 1.0)
        assert (len(p.vertices), len(p.triangles)) == (nv, nt)
        assert p.bound == pytest.approx(1.0, rel=1e-14)
        assert np.ptp(p.moments) < 1e-12                 # every Platonic solid is isotropic
        if name in vol:
            assert p.volume == pytest.approx(vol[name], rel=1e-12)


def test_interior_points_are_dropped_and_rocks_are_reproducible():
    rng = np.random.default_rng(3)
    cube = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], float)
    p = P.Polyhedron(np.vstack([cube, rng.uniform(-0.9, 0.9, (30, 3))]))
    assert len(p.vertices) == 8 and p.volume == pytest.approx(8.0)
    r1, r2 = P.rock(25, seed=7, axes=(1, 0.7, 0.4)), P.rock(25, seed=7, axes=(1, 0.7, 0.4))
    assert np.array_equal(r1.vertices, r2.vertices)
    assert not np.array_equal(r1.vertices, P.rock(25, seed=8).vertices)
    ref = trimesh.convex.convex_hull(r1.vertices)
    assert ref.volume == pytest.approx(r1.volume, rel=1e-12) and len(ref.vertices) == \
        len(r1.vertices)


def test_from_an_stl_file(tmp_path):
    from pdem.contact.mesh_files import write_stl
    r = P.rock(18, seed=4, axes=(1.0, 0.6, 0.5))
    path = str(tmp_path / "rock.stl")
    write_stl(path, r.vertices, r.triangles, binary=False)   # ASCII: exact round trip
    p = P.from_file(path)
    assert p.volume == pytest.approx(r.volume, rel=1e-13)
    assert np.allclose(p.moments, r.moments, rtol=1e-12)
    with pytest.raises(pdem.InputError, match="no such file"):
        P.from_file(str(tmp_path / "none.stl"))


def test_template_registration():
    t = ShapeTemplates()
    cube = P.cube(1.0)
    k = cube.register(t)
    assert t.shapes == [4] and k == 0
    assert np.array_equal(t.rows("vertices", k), cube.vertices)
    assert t.rows("triangles", k).shape == (12, 3)
    assert np.allclose(t.props[k], [1.0, 1 / 6, 1 / 6, 1 / 6, 3 ** 0.5 / 2])


def test_bad_input_is_refused_with_one_line():
    with pytest.raises(pdem.InputError, match="span no volume"):
        P.Polyhedron([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]])
    with pytest.raises(pdem.InputError, match=r"vertices must be \(n >= 4, 3\)"):
        P.Polyhedron([[0, 0, 0], [1, 0, 0], [0, 1, 0]])
    with pytest.raises(pdem.InputError, match="name must be"):
        P.regular("cuboctahedron")
    with pytest.raises(pdem.InputError, match="n_vertices"):
        P.rock(3)


@pytest.mark.parametrize("seed", range(3))
def test_polygon_mass_properties_match_trimesh_prisms(seed):
    """A polygon's area and moments per unit thickness: the prism of thickness t has
    volume A t and moment about z Izz t (trimesh, independent)."""
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(8 + 4 * seed, 2)) * [1.0, 0.5] + rng.normal(size=2)
    poly = P.Polygon(pts)
    t = 0.3
    prism = trimesh.convex.convex_hull(np.vstack([np.column_stack([pts, np.zeros(len(pts))]),
                                                  np.column_stack([pts, np.full(len(pts), t)])]))
    assert poly.area * t == pytest.approx(prism.volume, rel=1e-12)
    assert np.allclose(poly.centroid, prism.center_mass[:2], atol=1e-12)
    Ic = prism.moment_inertia                      # about the centre of mass, unit density
    assert poly.moments[2] * t == pytest.approx(Ic[2, 2], rel=1e-11)
    # Ixx of the prism = t (int y^2 dA) + A t^3 / 12
    assert poly.moments[0] * t + poly.area * t ** 3 / 12 == pytest.approx(Ic[0, 0], rel=1e-11)
    # the contact prism: the polygon at z = +-2 bound
    assert np.allclose(np.abs(poly.vertices[:, 2]), 2 * poly.bound)
    sq = P.regular_polygon(4, np.sqrt(2), np.pi / 4)   # square of side 2
    assert sq.area == pytest.approx(4.0) and np.allclose(sq.moments, [4 / 3, 4 / 3, 8 / 3])
    with pytest.raises(pdem.InputError, match="span no area"):
        P.Polygon([[0, 0], [1, 1], [2, 2]])
