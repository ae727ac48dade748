"""Ellipsoids against mesh-wall facets (issue 16 with seed 004): the ellipsoid-triangle
geometry against an independent optimizer (faces, edges, vertices, separated and
overlapping), and in the step: a flat mesh equals a plane (dropped and tumbling, at
rest: load = weight, height = c - W/k_n), sliding across shared edges without a jump."""
import numpy as np
import pytest
from scipy.optimize import minimize

import pdem
from pdem._kernels.facets import ellipsoid_triangle
from pdem.contact import shapes
from test_ellipsoids import dropped
from test_rigid_body import rot

G = 9.81


# ------------------------------------------------------------------- geometry
def brute_distance(o, q, a, tri, rng):
    """min |e - t| over the ellipsoid surface e = o + R (a * u / |u|) and the triangle
    t = V0 + s (V1 - V0) + w (V2 - V0), s, w >= 0, s + w <= 1: dense sampling, then
    SLSQP from the best sample (scipy: independent of the kernel's feature solves)."""
    R = rot(q)
    u = rng.normal(size=(4000, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    e = o + (u * a) @ R.T
    sw = rng.random((4000, 2))
    sw[sw.sum(1) > 1] = 1 - sw[sw.sum(1) > 1][:, ::-1]
    t = tri[0] + sw @ (tri[1:] - tri[0])
    d2 = ((e[:, None, :] - t[None, ::20, :]) ** 2).sum(-1)
    i, j = np.unravel_index(np.argmin(d2), d2.shape)

    def f(z):
        v = z[:3] / np.linalg.norm(z[:3])
        diff = o + R @ (a * v) - (tri[0] + z[3] * (tri[1] - tri[0]) + z[4] * (tri[2] - tri[0]))
        return diff @ diff

    cons = [{"type": "ineq", "fun": lambda z: 1 - z[3] - z[4]}]
    res = minimize(f, np.r_[u[i], sw[::20][j]], method="SLSQP", bounds=[(None, None)] * 3
                   + [(0, 1), (0, 1)], constraints=cons, options={"ftol": 1e-16, "maxiter": 500})
    return np.sqrt(res.fun)


def random_case(rng):
    a = rng.uniform(0.3, 1.5, 3)
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return np.zeros(3), q, a


@pytest.mark.parametrize("feature", ["face", "edge", "vertex"])
def test_separated_distance_matches_an_optimizer(feature):
    """Triangles placed so that their nearest feature is the face, an edge or a vertex:
    the kernel's gap = the minimum distance (SLSQP) to 1e-7 relative, the region is
    that feature, and the wall contact point is on the triangle at the gap from E's
    contact point along n."""
    rng = np.random.default_rng({"face": 1, "edge": 2, "vertex": 3}[feature])
    done = 0
    while done < 6:
        o, q, a = random_case(rng)
        d = rng.normal(size=3)
        d /= np.linalg.norm(d)
        tri = o + d * rng.uniform(2.0, 3.0) + rng.normal(size=(3, 3)) * 1.2
        n, gap, foot, wp, region = ellipsoid_triangle(o, q, a, tri)
        want = {"face": region == 0, "edge": 1 <= region <= 3, "vertex": region >= 4}[feature]
        if not want or gap <= 0:
            continue
        ref = brute_distance(o, q, a, tri, rng)
        assert abs(gap - ref) <= 1e-7 * ref, (feature, gap, ref)
        assert np.allclose(foot, wp, atol=1e-12)
        c2 = foot + gap * n                # on E, with the outward normal -n there
        y = rot(q).T @ (c2 - o)
        assert abs(np.sum((y / a) ** 2) - 1) < 1e-12
        grad = rot(q) @ (y / a ** 2)
        assert np.allclose(-grad / np.linalg.norm(grad), n, atol=1e-9)
        done += 1


def test_sphere_equals_the_closest_point_of_the_triangle():
    """a = b = c = r: gap = |x - closest point| - r (Ericson's region tests redone in
    numpy by projection onto the plane, the edges and the corners)."""
    rng = np.random.default_rng(4)
    for _ in range(200):
        tri = rng.normal(size=(3, 3))
        x = rng.normal(size=3) * 1.5
        r = rng.uniform(0.1, 1.0)
        n, gap, foot, wp, region = ellipsoid_triangle(x, [1, 0, 0, 0], [r, r, r], tri)
        nf = np.cross(tri[1] - tri[0], tri[2] - tri[0])
        nf /= np.linalg.norm(nf)
        p = x - nf * ((x - tri[0]) @ nf)
        bary = np.linalg.lstsq(np.c_[tri[1] - tri[0], tri[2] - tri[0]], p - tri[0], rcond=None)[0]
        cands = [p] if (bary.min() >= 0 and bary.sum() <= 1) else []
        for i in range(3):
            s, t = tri[i], tri[(i + 1) % 3]
            lam = np.clip((x - s) @ (t - s) / ((t - s) @ (t - s)), 0, 1)
            cands.append(s + lam * (t - s))
        ref = min(np.linalg.norm(x - c) for c in cands) - r
        assert abs(gap - ref) < 1e-12, (gap, ref)


@pytest.mark.parametrize("feature", ["edge", "vertex"])
def test_overlap_at_an_edge_and_a_vertex(feature):
    """A corner or an edge pushed into the ellipsoid (the face normal pointing away
    from it, so the face does not decide): the depth is that of the corner (the
    distance from the vertex to E's surface: dense surface sampling refined by SLSQP)
    or of the edge's line (the same over the line)."""
    rng = np.random.default_rng(5)
    a = np.array([1.0, 0.6, 0.3])
    q = np.array([0.9, 0.2, -0.3, 0.1])
    q /= np.linalg.norm(q)
    R = rot(q)
    u = rng.normal(size=(5000, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    surf = (u * a) @ R.T
    out = R @ np.array([0.0, 0.0, 1.0])          # a point over the short axis, inside
    tip = 0.25 * out
    side = R @ np.array([1.0, 0.0, 0.0])
    if feature == "vertex":
        tri = np.array([tip, tip + 2 * out + side, tip + 2 * out - side + 0.3 * np.cross(out, side)])
    else:
        e = np.cross(out, side)
        tri = np.array([tip - 0.2 * e, tip + 0.2 * e, tip + 2 * out])
    n, gap, foot, wp, region = ellipsoid_triangle(np.zeros(3), q, a, tri)
    assert (region >= 4) if feature == "vertex" else (1 <= region <= 3), region

    def surface_distance(p):      # sampled, then refined by Nelder-Mead
        k = np.argmin(np.linalg.norm(surf - p, axis=1))
        res = minimize(lambda v: np.sum((R @ (a * v / np.linalg.norm(v)) - p) ** 2), u[k],
                       method="Nelder-Mead", options={"xatol": 1e-13, "fatol": 1e-20,
                                                      "maxiter": 20000})
        return np.sqrt(res.fun)

    if feature == "vertex":
        ref = surface_distance(tip)
    else:                         # the line's depth: its deepest point's, here the
        e = 0.05 * np.cross(out, side)    # middle one (E is symmetric about it)
        ref = surface_distance(tip)
        assert surface_distance(tip + e) < ref and surface_distance(tip - e) < ref
    assert abs(-gap - ref) < 1e-8, (gap, ref)
    assert gap < 0


# ------------------------------------------------------------------- in the step
def drop_scene(wall, n=1, steps=6000):
    """test_ellipsoids.dropped on a plane or a flat mesh of 2 n^2 triangles (the mesh
    covers where the ellipsoid tumbles)."""
    if wall == "plane":
        return dropped(steps)
    return dropped(steps, lambda sim, m: sim.add_mesh_wall(
        shapes.rectangle((0.1, 0.1), (0.3, 0.3), 0.0, n), m))


def test_dropped_on_a_flat_mesh_follows_the_plane():
    """Bounces, tumbles and crosses facet edges (4 x 4 squares): the same motion and
    wall load as on a plane to round-off (the face case is the plane formula; seed
    004's links keep one contact at the shared edges)."""
    plane, mesh = drop_scene("plane"), drop_scene("mesh", 4)
    p, q = plane.particles(), mesh.particles()
    for k in ("position", "orientation", "velocity", "angular_velocity"):
        assert np.abs(p[k] - q[k]).max() < 1e-12, k
    assert np.abs(plane.plane_forces()[0] - mesh.mesh_wall_forces()["force"][0]).max() < 1e-12
    assert list(mesh.contacts()["kind"]) == ["ellmesh"]


def test_resting_on_two_triangles_carries_the_weight():
    """Flat (shortest axis c vertical) over the shared diagonal of two triangles, damped:
    height c - W/k_n, load = weight, one contact; the moment about the wall's
    reference point = (x - W_r) x (-W)."""
    sim = pdem.Simulation(pdem.Domain((-1, -1, -1), (1, 1, 1)), dt=2e-4, gravity=(0, 0, -G))
    m = sim.material("m", density=1000.0, kn=1e4, restitution=0.05, friction=0.5)
    sim.add_mesh_wall(shapes.rectangle((-0.1, -0.1), (0.1, 0.1), 0.0, 1), "m")
    a = np.array([0.03, 0.02, 0.01])
    q = np.array([np.cos(0.2), 0, 0, np.sin(0.2)])       # turned about z
    sim.add_ellipsoids([[0.011, 0.01, 0.01]], [a], m, orientations=[q])
    sim.run(4000)
    p = sim.particles()
    W = p["mass"][0] * G
    assert abs(p["position"][0, 2] - (a[2] - W / 1e4)) < 1e-9
    loads = sim.mesh_wall_forces()
    assert np.abs(loads["force"][0] - [0, 0, -W]).max() < 1e-9 * W
    ref = sim.mesh_walls.reference_points()[0]
    arm = p["position"][0] - ref
    assert np.abs(loads["moment"][0] - np.cross(arm, [0, 0, -W])).max() < 1e-9 * W
    assert len(sim.contacts()["kind"]) == 1


def test_sliding_across_shared_edges_without_a_jump():
    """Driven sideways (x, y prescribed) over 8 x 8 squares, with friction: the force
    history equals that on a plane (no jump at the crossings: the state follows the
    holder, seed 004 'Continuity of Contact-State Information')."""
    def run(wall):
        sim = pdem.Simulation(pdem.Domain((-1, -1, -1), (1, 1, 1)), dt=4e-5, gravity=(0, 0, -G),
                              skin=0.002)
        m = sim.material("m", density=1000.0, kn=1e4, friction=0.5, gamma_n=20.0)
        if wall == "plane":
            sim.add_plane((0, 0, 0), (0, 0, 1), m)
        else:
            sim.add_mesh_wall(shapes.rectangle((-0.1, -0.1), (0.1, 0.1), 0.0, 8), "m")
        a = [0.02, 0.015, 0.01]
        mass = 1000.0 * 4 / 3 * np.pi * np.prod(a)
        ids = sim.add_ellipsoids([[-0.031, -0.0237, 0.01 - mass * G / 1e4]], [a], m)
        sim.set_velocity(ids, velocity=(0.5, 0.2, 0.0))
        sim.block(ids, ["x", "y"])
        f, walls = [], set()
        for _ in range(1300):
            sim.step()
            c = sim.contacts()
            assert len(c["kind"]) == 1
            f.append(c["force"][0])
            if wall == "mesh":
                walls.add(int(sim.interactions["ellmesh"].batch.i2[
                    np.flatnonzero(sim.interactions["ellmesh"].batch.active)[0]]))
        return np.array(f), walls
    fp, _ = run("plane")
    fm, holders = run("mesh")
    assert len(holders) >= 4                 # the contact moved over several facets
    assert np.abs(fm - fp).max() <= 1e-10 * np.abs(fp).max()


def test_ellipses_and_mesh_walls_are_refused():
    """Mesh walls touch 3D ellipsoids only: ellipses (2D) with a mesh wall are refused
    in either order."""
    sim = pdem.Simulation(pdem.Domain((0, 0), (1, 1), dim=2), dt=1e-4)
    sim.material("m", density=1000.0, kn=1e3)
    sim.add_ellipses([[0.5, 0.5]], [[0.1, 0.05]], "m")
    with pytest.raises(pdem.InputError, match="add_mesh_wall: contacts of ellipse particles with "
                       "mesh walls are not available"):
        sim.add_mesh_wall(shapes.rectangle((0, 0), (1, 1), 0.0, 1), "m")
    sim = pdem.Simulation(pdem.Domain((0, 0), (1, 1), dim=2), dt=1e-4)
    sim.material("m", density=1000.0, kn=1e3)
    sim.add_mesh_wall(shapes.rectangle((0, 0), (1, 1), 0.0, 1), "m")
    with pytest.raises(pdem.InputError, match="add_ellipses: contacts of ellipse particles with mesh walls"):
        sim.add_ellipses([[0.5, 0.5]], [[0.1, 0.05]], "m")


def test_moving_mesh_drags_like_a_moving_plane():
    """A flat mesh translating sideways (rigid motion) under the dropped ellipsoid: the
    same motion as on a plane with the same velocity (friction drags it along), and the
    same load."""
    v = (0.03, -0.02, 0.0)
    plane = dropped(4000, lambda sim, m: sim.add_plane((0, 0, 0), (0, 0, 1), m, velocity=v))
    mesh = dropped(4000, lambda sim, m: sim.add_mesh_wall(
        shapes.rectangle((0.05, 0.05), (0.35, 0.35), 0.0, 3), m, velocity=v))
    p, q = plane.particles(), mesh.particles()
    for k in ("position", "orientation", "velocity", "angular_velocity"):
        assert np.abs(p[k] - q[k]).max() < 1e-12 * (1 + np.abs(p[k]).max()), k
    assert np.linalg.norm(q["velocity"][0, :2]) > 0.01          # dragged along
    assert np.abs(plane.plane_forces()[0] - mesh.mesh_wall_forces()["force"][0]).max() < 1e-12
