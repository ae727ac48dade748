"""Closest point of a facet to a ball centre (pdem._kernels.facets, seed 004 "Faceted
Wall Contact Resolution", seed 002 particle-triangle parametric form), checked against
an independent brute force: exact projections on the three vertices, the three edge
segments and the plane (seed 002's (alpha, beta, lambda) system solved by numpy), plus a
dense sampling of the triangle that nothing may beat."""
import numpy as np
import pytest

from pdem._kernels.facets import closest_points

TRI = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])


def brute(p, tri):
    """Closest point of triangle tri (3, 3) to p (3,), by exhaustive candidates."""
    a, b, c = tri
    cands = [a, b, c]
    for s, e in ((a, b), (b, c), (c, a)):
        t = np.clip(np.dot(p - s, e - s) / np.dot(e - s, e - s), 0.0, 1.0)
        cands.append(s + t * (e - s))
    v1, v2 = b - a, c - a
    M = np.column_stack([v1, v2, np.cross(v1, v2)])
    al, be, _ = np.linalg.solve(M, p - a)
    if al >= 0 and be >= 0 and al + be <= 1:
        cands.append(a + al * v1 + be * v2)
    cands = np.array(cands)
    d = np.linalg.norm(cands - p, axis=1)
    return cands[np.argmin(d)], d.min()


SAMPLES = 30


def sampled_min(P, tris, n=SAMPLES):
    """Distance of each P[k] (m, 3) to the nearest of the (n+1)(n+2)/2 points of a
    regular grid on its triangle tris[k] (m, 3, 3): points of the triangle, so the true
    distance is never larger; and every point of the triangle lies within one grid cell
    (edges at most longest edge / n) of a grid point, so it is never smaller than the
    sampled one minus longest edge / n."""
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = i + j <= n
    w = np.c_[i[keep], j[keep]] / n
    a, b, c = tris[:, 0, None], tris[:, 1, None], tris[:, 2, None]
    pts = a + w[None, :, :1] * (b - a) + w[None, :, 1:] * (c - a)      # (m, points, 3)
    return np.min(np.linalg.norm(P[:, None, :] - pts, axis=2), axis=1)


def run(P, tris, threads=1):
    """One facet per query: vertices = stacked triangle corners."""
    V = tris.reshape(-1, 3)
    F = np.arange(len(V)).reshape(-1, 3)
    return closest_points(P, np.arange(len(tris), dtype=np.int32), V, F, threads=threads)


def check_region(q, region, bary, tri, scale):
    """The point lies where its region code says; its weights reproduce it."""
    tol = 16 * EPS * scale * (1 + aspect(tri))
    wtol = 16 * EPS * (1 + aspect(tri))
    if region >= 4:
        assert np.linalg.norm(q - tri[region - 4]) <= tol
        assert bary[region - 4] == 1.0
    elif region >= 1:
        s, e = tri[region - 1], tri[region % 3]
        opposite = (region + 1) % 3
        assert bary[opposite] == 0.0
        t = np.dot(q - s, e - s) / np.dot(e - s, e - s)
        assert -wtol <= t <= 1 + wtol
        assert np.linalg.norm(s + t * (e - s) - q) <= tol
    else:
        assert np.all(bary >= -wtol)
    assert np.isclose(bary.sum(), 1.0, rtol=0, atol=wtol)
    assert np.linalg.norm(bary @ tri - q) <= tol


EPS = np.finfo(float).eps


def aspect(tri):
    """Longest edge over the height on it: the condition number of a triangle's plane.
    A sliver's normal is known only to ~EPS * aspect, so the distance of a point at
    distance L is known to ~EPS * L * aspect; well-shaped triangles have aspect ~ 1."""
    L = np.max(np.linalg.norm(tri - tri[[1, 2, 0]], axis=1))
    return L * L / np.linalg.norm(np.cross(tri[1] - tri[0], tri[2] - tri[0]))


def compare(P, tris):
    q, d, reg, bary = run(P, tris)
    # the sampling oracle, on every query's own triangle (it used to run only when all
    # triangles were the same object, which rows of an ndarray never are)
    smin = sampled_min(P, tris)
    for k in range(len(P)):
        scale = np.abs(tris[k]).max() + np.abs(P[k]).max()
        tol = 16 * EPS * scale * (1 + aspect(tris[k]))   # first-order round-off bound
        qb, db = brute(P[k], tris[k])
        assert abs(d[k] - db) <= tol, (k, d[k], db, tol)
        assert np.linalg.norm(q[k] - qb) <= tol, (k, q[k], qb, tol)
        assert abs(d[k] - np.linalg.norm(q[k] - P[k])) <= 1e-14 * scale
        check_region(q[k], reg[k], bary[k], tris[k], scale)
        # no point of the triangle is nearer than the kernel's (up to the same round-off
        # bound), and the kernel's is no nearer than the grid's resolution allows
        longest = np.max(np.linalg.norm(tris[k] - tris[k][[1, 2, 0]], axis=1))
        assert d[k] <= smin[k] + tol, (k, d[k], smin[k], tol)
        assert smin[k] <= d[k] + longest / SAMPLES + tol, (k, d[k], smin[k], longest)
    return q, d, reg


def test_hand_made_regions():
    P = np.array([[0.2, 0.2, 1.0],      # above the face
                  [0.5, -1.0, 0.3],     # beyond edge V1-V2
                  [1.0, 1.0, 0.5],      # beyond edge V2-V3
                  [-1.0, 0.5, -0.2],    # beyond edge V3-V1
                  [-1.0, -1.0, 1.0],    # beyond V1
                  [2.0, -0.5, 0.0],     # beyond V2
                  [-0.5, 2.0, 0.0],     # beyond V3
                  [0.2, 0.3, -2.0]])    # below the face
    tris = np.repeat(TRI[None], len(P), axis=0)
    q, d, reg, bary = run(P, tris)
    assert reg.tolist() == [0, 1, 2, 3, 4, 5, 6, 0]
    expect_q = [[0.2, 0.2, 0], [0.5, 0, 0], [0.5, 0.5, 0], [0, 0.5, 0], [0, 0, 0], [1, 0, 0],
                [0, 1, 0], [0.2, 0.3, 0]]
    assert np.allclose(q, expect_q, rtol=0, atol=1e-15)
    assert np.allclose(d, np.linalg.norm(P - expect_q, axis=1), rtol=0, atol=1e-15)
    assert np.allclose(bary[0], [0.6, 0.2, 0.2]) and np.allclose(bary[2], [0, 0.5, 0.5])
    compare(P, tris)


def test_region_numbering_follows_vertex_order():
    # the same geometric triangle, vertices rotated: codes rotate with them
    P = np.array([[0.5, -1.0, 0.3], [-1.0, -1.0, 1.0]])
    rot = TRI[[1, 2, 0]]                  # V1 = (1,0,0), V2 = (0,1,0), V3 = (0,0,0)
    _, _, reg, _ = run(P, np.array([rot, rot]))
    assert reg.tolist() == [3, 6]         # edge V3-V1 and vertex V3


def test_points_on_the_triangle():
    P = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.5, 0, 0], [0.5, 0.5, 0], [0, 0.5, 0],
                  [0.25, 0.25, 0]], float)
    q, d, reg, _ = run(P, np.repeat(TRI[None], len(P), axis=0))
    assert np.all(d == 0.0) and np.array_equal(q, P)
    assert reg.tolist()[:3] == [4, 5, 6] and reg[6] == 0
    assert reg[3] in (1,) and reg[4] == 2 and reg[5] == 3


def random_triangles(rng, n):
    tris = rng.normal(size=(n, 3, 3))
    # near-degenerate families: slivers, needles, very obtuse, tiny and far away
    m = n // 5
    t = rng.uniform(0.2, 0.8, size=(m, 1))
    perp = np.cross(tris[:m, 1] - tris[:m, 0], rng.normal(size=(m, 3)))
    tris[:m, 2] = tris[:m, 0] + t * (tris[:m, 1] - tris[:m, 0]) + 1e-7 * perp   # sliver
    tris[m:2 * m, 2] = tris[m:2 * m, 1] + 1e-6 * rng.normal(size=(m, 3))        # needle
    tris[2 * m:3 * m] = 1e3 + 1e-3 * tris[2 * m:3 * m]                          # tiny, far
    return tris


def test_random_against_brute_force():
    rng = np.random.default_rng(5)
    tris = random_triangles(rng, 250)
    centre = tris.mean(axis=1)
    size = np.linalg.norm(tris[:, 1] - tris[:, 0], axis=1)[:, None]
    tris_q = np.repeat(tris, 8, axis=0)
    P = np.repeat(centre, 8, axis=0) + np.repeat(size, 8, axis=0) * rng.normal(size=(2000, 3))
    # points on the plane, on vertices and on edges of some of them
    P[::8] -= np.einsum("ij,ij->i", P[::8] - tris_q[::8, 0], np.cross(
        tris_q[::8, 1] - tris_q[::8, 0], tris_q[::8, 2] - tris_q[::8, 0])
        / np.linalg.norm(np.cross(tris_q[::8, 1] - tris_q[::8, 0],
                                  tris_q[::8, 2] - tris_q[::8, 0]), axis=1)[:, None]**2)[:, None] \
        * np.cross(tris_q[::8, 1] - tris_q[::8, 0], tris_q[::8, 2] - tris_q[::8, 0])
    P[1::8] = tris_q[1::8, 1]
    P[2::8] = 0.5 * (tris_q[2::8, 1] + tris_q[2::8, 2])
    _, _, reg = compare(P, tris_q)
    assert set(np.unique(reg)) == set(range(7))   # every region visited
    assert np.all(reg[1::8] == 5)


def test_sampling_never_beats_kernel():
    rng = np.random.default_rng(7)
    tri = rng.normal(size=(3, 3))
    P = tri.mean(axis=0) + 2 * rng.normal(size=(300, 3))
    compare(P, np.repeat(tri[None], len(P), axis=0))


def test_threads_give_identical_bits_and_shared_vertices():
    rng = np.random.default_rng(9)
    V = rng.normal(size=(30, 3))
    F = np.array([rng.choice(30, 3, replace=False) for _ in range(40)])
    fi = rng.integers(0, 40, size=5000).astype(np.int32)
    P = rng.normal(size=(5000, 3))
    one = closest_points(P, fi, V, F, threads=1)
    two = closest_points(P, fi, V, F, threads=2)
    for a, b in zip(one, two):
        assert np.array_equal(a, b)
    for k in range(0, 5000, 97):
        _, db = brute(P[k], V[F[fi[k]]])
        assert abs(one[1][k] - db) <= 1e-12 * 10


def test_bad_arguments():
    with pytest.raises(ValueError):
        closest_points(np.zeros((2, 3)), np.zeros(3, np.int32), TRI, [[0, 1, 2]])
    with pytest.raises(ValueError):
        closest_points(np.zeros((1, 3)), np.array([1], np.int32), TRI, [[0, 1, 2]])
    with pytest.raises(ValueError):
        closest_points(np.zeros((1, 3)), np.array([0], np.int32), TRI, [[0, 1, 3]])
    out = closest_points(np.zeros((0, 3)), np.zeros(0, np.int32), TRI, [[0, 1, 2]])
    assert out[0].shape == (0, 3) and out[2].dtype == np.int32
