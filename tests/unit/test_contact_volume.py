"""The contact-volume quantities of seed 002 (pyx/contact_volume.pyx, issue 17): V, S, G
of the intersection of two convex polyhedra, against closed forms (overlapping boxes, a
face on a large block: V = A_f delta, a cube's corner: V = sqrt(3)/2 delta^3), scipy's
half-space intersection, and the ECC identities (F = -k grad V: the finite-difference
gradient of V equals S_b; the torque likewise; a closed surface: S_a = -S_b)."""
import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.spatial import ConvexHull, HalfspaceIntersection

from pdem import polyhedra as P
from pdem._kernels.contact_volume import contact_volume


def rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_overlapping_boxes_and_a_face_on_a_block():
    c = P.cube(2.0)
    r = contact_volume(c.vertices, c.triangles, c.vertices + [0.3, -0.5, 1.9], c.triangles)
    # overlap box [-0.7, 1] x [-1, 0.5] x [0.9, 1]
    assert r["V"] == pytest.approx(1.7 * 1.5 * 0.1, rel=1e-13)
    # dV/dx_B: the overlap's faces on B: bottom (-z, 1.7 x 1.5), x = -0.7 (-x... on A's
    # side: B's face x = -0.7 inside A has normal -x), y = 0.5 (+y)
    assert np.allclose(r["S_b"], [-0.15, 0.17, -2.55], atol=1e-14)
    assert np.allclose(r["S_a"], -r["S_b"], atol=1e-14)
    # a small cube's face pressed delta into a big block: V = A_f delta, |S| = A_f, the
    # force line through the face's centre
    big, small = P.box(10.0, 10.0, 2.0), P.cube(0.5)
    for delta in (1e-3, 0.05):
        vb = small.vertices + [0.7, -1.1, 1.0 + 0.25 - delta]
        r = contact_volume(big.vertices, big.triangles, vb, small.triangles)
        assert r["V"] == pytest.approx(0.25 * delta, rel=1e-12)
        assert np.allclose(r["S_b"], [0, 0, -0.25], atol=1e-14)
        assert np.allclose(r["point"][:2], [0.7, -1.1], atol=1e-12)


def test_cube_corner_into_a_block():
    """A cube with its diagonal vertical, its lowest corner delta into a block: the cut
    is a tetrahedron of edges sqrt(3) delta (V = sqrt(3)/2 delta^3), its top an
    equilateral triangle of area 3 sqrt(3)/2 delta^2 = |S| = dV/d delta."""
    # the rotation taking (1, 1, 1)/sqrt 3 to -z
    a = np.array([1.0, 1.0, 1.0]) / np.sqrt(3)
    axis = np.cross(a, [0, 0, -1.0])
    ang = np.arccos(-a[2])
    q = np.concatenate([[np.cos(ang / 2)], np.sin(ang / 2) * axis / np.linalg.norm(axis)])
    cube, big = P.cube(1.0), P.box(10.0, 10.0, 2.0)
    v = cube.vertices @ rot(q).T
    for delta in (0.01, 0.2):
        vb = v + [0.3, 0.2, 1.0 - v[:, 2].min() - delta]
        r = contact_volume(big.vertices, big.triangles, vb, cube.triangles)
        assert r["V"] == pytest.approx(np.sqrt(3) / 2 * delta ** 3, rel=1e-11)
        assert np.allclose(r["S_b"], [0, 0, -1.5 * np.sqrt(3) * delta ** 2], rtol=1e-11,
                           atol=1e-15)
        corner = vb[np.argmin(vb[:, 2])]
        assert np.allclose(r["point"][:2], corner[:2], atol=1e-12)   # on the diagonal


def chebyshev_centre(eqs):
    norm = np.linalg.norm(eqs[:, :3], axis=1)
    res = linprog([0, 0, 0, -1], A_ub=np.column_stack([eqs[:, :3], norm]), b_ub=-eqs[:, 3],
                  bounds=[(None, None)] * 3 + [(0, None)])
    return res.x[:3], res.x[3]


@pytest.mark.parametrize("seed", range(6))
def test_random_rocks_against_scipy_and_the_gradient_identities(seed):
    rng = np.random.default_rng(seed)
    A, B = P.rock(15, seed=(seed, 0)), P.rock(12, seed=(seed, 1), axes=(0.8, 0.6, 0.5))
    qa, qb = rng.normal(size=4), rng.normal(size=4)
    d = rng.normal(size=3)
    xb = d / np.linalg.norm(d) * 0.5
    va = A.vertices @ rot(qa / np.linalg.norm(qa)).T
    vb = xb + B.vertices @ rot(qb / np.linalg.norm(qb)).T
    r = contact_volume(va, A.triangles, vb, B.triangles)
    eqs = np.vstack([ConvexHull(va).equations, ConvexHull(vb).equations])
    centre, radius = chebyshev_centre(eqs)
    assert radius > 1e-3                                # they overlap
    ref = ConvexHull(HalfspaceIntersection(eqs, centre).intersections).volume
    assert r["V"] == pytest.approx(ref, rel=1e-10)
    assert np.allclose(r["S_a"], -r["S_b"], atol=1e-14)
    assert np.allclose(r["G_a"], -r["G_b"], atol=1e-14)
    h = 1e-6
    for k, e in enumerate(np.eye(3)):                   # dV/dx_B = S_b
        dv = (contact_volume(va, A.triangles, vb + h * e, B.triangles)["V"] -
              contact_volume(va, A.triangles, vb - h * e, B.triangles)["V"]) / (2 * h)
        assert dv == pytest.approx(r["S_b"][k], abs=1e-8)
        # dV/dtheta_B about x_B (B turned about its centre xb) = G_b - x_B x S_b
        def turned(s):
            c, sn = np.cos(s * h), np.sin(s * h)
            K = np.array([[0, -e[2], e[1]], [e[2], 0, -e[0]], [-e[1], e[0], 0]])
            R = np.eye(3) + sn * K + (1 - c) * K @ K
            return contact_volume(va, A.triangles, xb + (vb - xb) @ R.T, B.triangles)["V"]
        dt = (turned(1) - turned(-1)) / (2 * h)
        assert dt == pytest.approx((r["G_b"] - np.cross(xb, r["S_b"]))[k], abs=1e-8)
