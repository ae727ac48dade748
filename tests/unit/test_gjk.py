"""GJK + EPA on the Minkowski difference (pyx/gjk.pxd, issue 17): depth and normal of
overlapping convex polyhedra against the separating-axis theorem (numpy brute force over
face normals and edge-edge cross products: exact for polytopes), distances of separated
pairs against python-fcl, the issue's hard cases exactly, spheres and ellipsoids by closed
forms, warm start, early exit and failure statuses."""
import numpy as np
import pytest
from scipy.spatial import ConvexHull

from pdem import polyhedra as P
from pdem._kernels import gjk

fcl = pytest.importorskip("fcl")
I = [1.0, 0.0, 0.0, 0.0]
CUBE2 = P.cube(2.0).vertices


def rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def axis_angle(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def sat(va, vb):
    """(depth, unit normal from A to B) of overlapping polytopes (world vertices): the
    smallest overlap max(a.u) - min(b.u) over the candidate axes u (face normals of both,
    cross products of their edge directions, both signs): the Minkowski penetration."""
    axes, edges = [], []
    for v in (va, vb):
        h = ConvexHull(v)
        axes.append(h.equations[:, :3])
        e = {tuple(sorted((s[i], s[(i + 1) % 3]))) for s in h.simplices for i in range(3)}
        E = np.array([v[b] - v[a] for a, b in e])
        edges.append(E / np.linalg.norm(E, axis=1)[:, None])
    cr = np.cross(edges[0][:, None, :], edges[1][None, :, :]).reshape(-1, 3)
    ln = np.linalg.norm(cr, axis=1)
    U = np.vstack(axes + [cr[ln > 1e-9] / ln[ln > 1e-9, None]])
    U = np.vstack([U, -U])
    overlap = (va @ U.T).max(axis=0) - (vb @ U.T).min(axis=0)
    k = int(np.argmin(overlap))
    return overlap[k], U[k]


def fcl_object(poly, q, x):
    f = poly.triangles
    faces = np.hstack([np.full((len(f), 1), 3), f]).ravel()
    return fcl.CollisionObject(fcl.Convex(poly.vertices, len(f), faces),
                               fcl.Transform(rot(q), np.asarray(x, float)))


def unit_quaternion(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def random_pairs(n, seed):
    rng = np.random.default_rng(seed)
    for t in range(n):
        A = P.rock(int(rng.integers(4, 25)), seed=(seed, t, 0), axes=rng.uniform(0.3, 1.0, 3))
        B = P.rock(int(rng.integers(4, 25)), seed=(seed, t, 1), axes=rng.uniform(0.3, 1.0, 3))
        qa, qb = unit_quaternion(rng), unit_quaternion(rng)
        xa = rng.normal(size=3)
        d = rng.normal(size=3)
        xb = xa + d / np.linalg.norm(d) * rng.uniform(0.15, 1.1) * (A.bound + B.bound)
        yield A, B, qa, qb, xa, xb


@pytest.mark.parametrize("n", [250, pytest.param(1000, marks=pytest.mark.slow)])
def test_random_pairs_depth_against_sat_and_distance_against_fcl(n):
    n_over = n_sep = 0
    depth_err = normal_err = dist_err = witness_err = 0.0
    for A, B, qa, qb, xa, xb in random_pairs(n, 0):
        r = gjk.query(("poly", xa, qa, A.vertices), ("poly", xb, qb, B.vertices))
        L = A.bound + B.bound
        assert r["status"] in ("overlap", "distance"), r
        va, vb = xa + A.vertices @ rot(qa).T, xb + B.vertices @ rot(qb).T
        # witness points: on each body's hull (the support along +-n), p_a - p_b = -gap n
        witness_err = max(witness_err,
                          np.linalg.norm(r["point_a"] - r["point_b"] + r["gap"] * r["normal"]) / L,
                          abs(r["point_a"] @ r["normal"] - (va @ r["normal"]).max()) / L,
                          abs(r["point_b"] @ r["normal"] - (vb @ r["normal"]).min()) / L)
        if r["status"] == "overlap":
            n_over += 1
            depth, normal = sat(va, vb)
            depth_err = max(depth_err, abs(-r["gap"] - depth) / L)
            # the normal is unique unless two axes tie (none did in this set)
            normal_err = max(normal_err, np.linalg.norm(r["normal"] - normal))
        else:
            n_sep += 1
            res = fcl.DistanceResult()
            dist = fcl.distance(fcl_object(A, qa, xa), fcl_object(B, qb, xb),
                                fcl.DistanceRequest(), res)
            dist_err = max(dist_err, abs(r["gap"] - dist) / L)
    assert n_over > 0.3 * n and n_sep > 0.3 * n
    assert depth_err < 1e-13 and normal_err < 1e-10
    assert dist_err < 1e-12 and witness_err < 1e-12


def cubes(z2, x2=0.0, y2=0.0, q2=I, **kw):
    return gjk.query(("poly", [0, 0, 0], I, CUBE2), ("poly", [x2, y2, z2], q2, CUBE2), **kw)


def test_face_to_face_cubes_the_libccd_case():
    """Two cubes of side 2 at heights 0 and 1.9 (libccd's GJK-EPA failed this one)."""
    for x2, y2 in ((0.0, 0.0), (1.0, 1.0), (0.37, -1.2), (1.5, -1.5)):
        r = cubes(1.9, x2, y2)
        assert r["status"] == "overlap"
        assert r["gap"] == pytest.approx(-0.1, abs=1e-15)
        assert np.array_equal(np.abs(r["normal"]), [0.0, 0.0, 1.0]) and r["normal"][2] == 1.0
        assert r["point_a"][2] == 1.0 and r["point_b"][2] == pytest.approx(0.9, abs=1e-15)


def test_edge_edge_contact():
    """A cube turned 45 degrees about y (top: an edge along y at sqrt 2) under one turned
    45 degrees about x (bottom: an edge along x): depth 2 sqrt 2 - h, normal z."""
    qa, qb = axis_angle([0, 1, 0], np.pi / 4), axis_angle([1, 0, 0], np.pi / 4)
    for depth in (0.05, 1e-6):
        h = 2 * np.sqrt(2) - depth
        r = gjk.query(("poly", [0, 0, 0], qa, CUBE2), ("poly", [0.1, -0.2, h], qb, CUBE2))
        assert r["status"] == "overlap"
        assert -r["gap"] == pytest.approx(depth, abs=1e-14)
        assert np.allclose(r["normal"], [0, 0, 1], atol=1e-14)
        assert np.allclose(r["point_a"], [0, -0.2, np.sqrt(2)], atol=1e-13)


def test_touching_and_origin_on_a_simplex_face():
    for x2, y2 in ((0.0, 0.0), (1.0, 1.0), (2.0, 0.0)):     # face, quarter face, edge touch
        r = cubes(2.0, x2, y2)
        assert r["status"] == "distance" and abs(r["gap"]) < 1e-15
        if x2 < 2.0:                        # (an edge touch: any normal between x and z)
            assert np.allclose(r["normal"], [0, 0, 1], atol=1e-15)
    r = cubes(2.0 + 1e-9)
    assert r["status"] == "distance" and r["gap"] == pytest.approx(1e-9, rel=1e-6)
    r = cubes(2.0 - 1e-9)
    assert r["status"] == "overlap" and r["gap"] == pytest.approx(-1e-9, rel=1e-6)
    # side contact: the origin on a face of D, found along x
    r = cubes(0.0, 1.99, 0.0)
    assert r["gap"] == pytest.approx(-0.01, abs=1e-15) and np.allclose(r["normal"], [1, 0, 0])


def test_size_ratio_100():
    small = P.cube(0.02).vertices
    for q in (I, axis_angle([1, 2, 3], 0.7)):
        corner = (rot(q) @ small.T).T[:, 2].min()           # its lowest vertex, relative
        r = gjk.query(("poly", [0, 0, 0], I, CUBE2),
                      ("poly", [0.3, -0.7, 1.0 - corner - 0.003], q, small))
        assert r["status"] == "overlap" and -r["gap"] == pytest.approx(0.003, abs=1e-15)
        assert np.allclose(r["normal"], [0, 0, 1], atol=1e-14)
    rock = P.rock(20, seed=5, axes=(0.01, 0.008, 0.006))
    big = P.rock(30, seed=6, axes=(1.0, 0.9, 0.8))
    q = axis_angle([0.3, -1, 0.2], 1.1)
    for frac in (0.2, 0.5, 0.9):
        x = np.array([0.0, 0.0, 0.0])
        va = big.vertices
        top = va[:, 2].max()
        xb = np.array([0.0, 0.0, top + 0.01 - 0.02 * frac])
        r = gjk.query(("poly", x, I, va), ("poly", xb, q, rock.vertices))
        vb = xb + rock.vertices @ rot(q).T
        if r["status"] == "overlap":
            depth, normal = sat(va, vb)
            assert -r["gap"] == pytest.approx(depth, abs=1e-14)
            assert np.allclose(r["normal"], normal, atol=1e-10)


def test_spheres_and_ellipsoids_closed_forms():
    # sphere centre above the face of a cube: gap = z - 1 - r (core distance, then EPA)
    for z, x in ((1.5, 0.3), (1.2, -0.9), (0.9, 0.2), (0.7, 0.1)):   # (inside: nearest face z)
        r = gjk.query(("poly", [0, 0, 0], I, CUBE2), ("sphere", [x, 0.4, z], 0.6))
        assert r["gap"] == pytest.approx(z - 1.0 - 0.6, abs=1e-14)
        assert np.allclose(r["normal"], [0, 0, 1], atol=1e-14)
    # sphere near a cube corner: distance to the corner
    c = np.array([1.3, 1.2, 1.4])
    r = gjk.query(("poly", [0, 0, 0], I, CUBE2), ("sphere", c, 0.2))
    assert r["gap"] == pytest.approx(np.linalg.norm(c - 1.0) - 0.2, abs=1e-14)
    # sphere and a triangle facet (world vertices): the distance to its plane
    tri = ("triangle", [0, 0, 0], [2, 0, 0], [0, 2, 0])
    r = gjk.query(tri, ("sphere", [0.4, 0.5, 0.3], 0.5))
    assert r["gap"] == pytest.approx(-0.2, abs=1e-14)
    # ellipsoid above a cube's top face, tilted: depth = h(e_z) - (z - 1), h the support
    q = axis_angle([1, 1, 0], 0.6)
    axes = np.array([0.5, 0.3, 0.2])
    A = rot(q) @ np.diag(axes ** 2) @ rot(q).T
    h = np.sqrt(A[2, 2])
    for z in (1.0 + h + 0.05, 1.0 + h - 0.02):
        r = gjk.query(("poly", [0, 0, 0], I, CUBE2), ("ellipsoid", [0.1, 0, z], q, axes),
                      tol=1e-12)
        assert r["gap"] == pytest.approx(z - 1.0 - h, abs=1e-9)
        assert np.allclose(r["normal"], [0, 0, 1], atol=1e-5)


def test_warm_start_early_exit_and_failure_statuses():
    rng = np.random.default_rng(9)
    cold = warm = 0
    for A, B, qa, qb, xa, xb in random_pairs(100, 3):
        a, b = ("poly", xa, qa, A.vertices), ("poly", xb, qb, B.vertices)
        r0 = gjk.query(a, b)
        # a small turn of B later: start from the last normal
        q2 = qb + 1e-3 * rng.normal(size=4)
        b2 = ("poly", xb, q2 / np.linalg.norm(q2), B.vertices)
        rc, rw = gjk.query(a, b2), gjk.query(a, b2, normal0=r0["normal"])
        assert rw["status"] == rc["status"] and rw["gap"] == pytest.approx(rc["gap"], abs=1e-13)
        cold += rc["iters"]
        warm += rw["iters"]
        if r0["gap"] > 0:   # the last separating normal proves separation at once
            re = gjk.query(a, b, normal0=r0["normal"], exit_gap=0.0)
            assert re["status"] == "separated" and re["iters"] == 0
            assert 0 < re["gap"] <= r0["gap"] + 1e-12
    assert warm < cold
    r = cubes(1.9, q2=axis_angle([1, 1, 1], 0.3), max_iter=0)
    assert r["status"] == "failed"
    r = gjk.query(("poly", [0, 0, np.nan], I, CUBE2), ("poly", [0, 0, 1], I, CUBE2))
    assert r["status"] == "bad_input"
