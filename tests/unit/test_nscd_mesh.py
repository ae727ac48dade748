"""NSCD with faceted walls (GrainProblem.add_mesh, contact kind 4): detection against a
brute-force numpy search, rest on a triangulated floor as on the equivalent plane,
restitution, rolling and slipping on an inclined mesh (closed forms), inactive sides,
a closed box, several meshes, mesh files, bad input."""
import math

import numpy as np
import pytest

from pdem import Mesh
from pdem.contact.mesh_files import write_stl
from pdem.contact.shapes import box, frustum, rectangle
from pdem.errors import InputError
from pdem.nscd import GrainProblem

G = 9.81


def rotated_rectangle(angle, half=1.0, n=6):
    """The square [-half, half]^2 (n x n squares of two triangles) turned by `angle` about
    the y axis: normal (sin a, 0, cos a), down the slope (cos a, 0, -sin a)."""
    m = rectangle((-half, -half), (half, half), 0.0, n=n)
    c, s = math.cos(angle), math.sin(angle)
    rot = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    return Mesh(m.vertices @ rot.T, m.facets)


# ---------------------------------------------------------------- brute force
def closest_on_triangle(p, a, b, c):
    """Closest point of triangle abc to p, written independently of the kernels: the
    projection on the plane when its barycentric coordinates are >= 0, else the nearest
    of the three edges' closest points. Returns (point, on_face)."""
    n = np.cross(b - a, c - a)
    n = n / np.linalg.norm(n)
    proj = p - ((p - a) @ n) * n
    T = np.column_stack([b - a, c - a])
    uv = np.linalg.lstsq(T, proj - a, rcond=None)[0]
    if uv[0] >= 0.0 and uv[1] >= 0.0 and uv.sum() <= 1.0:
        return proj, True
    best = None
    for s, e in ((a, b), (b, c), (c, a)):
        t = np.clip((p - s) @ (e - s) / ((e - s) @ (e - s)), 0.0, 1.0)
        q = s + t * (e - s)
        if best is None or np.linalg.norm(p - q) < np.linalg.norm(p - best):
            best = q
    return best, False


def brute_force_facets(p, alert):
    """{(i, j): (gap, normal)} of every grain-facet pair: surface distance below alert,
    on an active side, not a rim contact hidden by a nearer facet that holds its closest
    point (pdem.nscd.facet_contacts._shadowed)."""
    V, F, N = p.mesh_vertices, p.mesh_facets, p.mesh_normals
    front_off = np.concatenate([m.inactive_front for m in p.meshes])
    back_off = np.concatenate([m.inactive_back for m in p.meshes])
    out, hidden_count = {}, 0
    for i in range(p.n):
        x, r = p.x[i], p.r[i]
        near = {}
        for f in range(len(F)):
            a, b, c = V[F[f]]
            q, face = closest_on_triangle(x, a, b, c)
            s = (x - a) @ N[f]
            if (s >= 0.0 and front_off[f]) or (s < 0.0 and back_off[f]):
                continue
            d = np.linalg.norm(x - q)
            if d - r < alert:
                normal = (x - q) / d if not face and d > 1e-9 else (1 if s >= 0 else -1) * N[f]
                near[f] = (d, q, face, normal)
        for f, (d, q, face, normal) in near.items():
            hidden = False
            if not face:
                # vertices of f that the closest point lies on: one (a vertex) or two
                on = [v for v in F[f] if np.linalg.norm(V[v] - q) < 1e-12]
                if not on:
                    for k in range(3):
                        u, w = V[F[f][k]], V[F[f][(k + 1) % 3]]
                        t = (q - u) @ (w - u) / ((w - u) @ (w - u))
                        if np.linalg.norm(u + t * (w - u) - q) < 1e-12:
                            on = [F[f][k], F[f][(k + 1) % 3]]
                for g, (d2, *_rest) in near.items():
                    if g != f and d2 < d - 1e-9 and all(v in F[g] for v in on):
                        hidden = True
            if hidden:
                hidden_count += 1
            else:
                out[(i, f)] = (d - r, normal)
    return out, hidden_count


def scattered(p, n, lo, hi, seed):
    rng = np.random.default_rng(seed)
    p.add_grains(rng.uniform(lo, hi, (n, 3)), rng.uniform(0.03, 0.08, n), density=1000.0)


@pytest.mark.parametrize("seed", [0, 1])
def test_detection_matches_brute_force(seed):
    p = GrainProblem(dim=3)
    p.add_planes([[0, 0, -0.05]], [[0, 0, 1]])
    p.add_mesh(box((0, 0, 0), (1, 1, 1), n=3, open_top=True))
    cone = frustum(0.2, 0.3, 0.8, 0.1, n_around=12, n_along=2)
    cone.set_inactive(np.arange(0, cone.n_facets, 5), side="front")
    cone.set_inactive(np.arange(1, cone.n_facets, 7), side="back")
    first = p.add_mesh(cone)
    assert first[0] == 5 * 9 * 2 and p.mesh_facet_offset[-1] == len(p.mesh_facets)
    scattered(p, 200, -0.1, 1.1, seed)
    alert = 0.05
    p.detect_contacts(alert)
    c = p.contacts
    k4 = c["kind"] == 4
    found = {(int(i), int(j)): (g, nv) for i, j, g, nv in
             zip(c["i"][k4], c["j"][k4], c["gap"][k4], c["normal"][k4])}
    expect, hidden = brute_force_facets(p, alert)
    assert len(expect) > 120 and hidden > 5
    assert set(found) == set(expect)
    for key, (g, nv) in expect.items():
        assert found[key][0] == pytest.approx(g, abs=1e-12)
        np.testing.assert_allclose(found[key][1], nv, atol=1e-9)
    keys = list(zip(c["i"].tolist(), c["kind"].tolist(), c["j"].tolist()))
    assert keys == sorted(keys)                       # (i, kind, j), planes before facets
    assert set(c["kind"].tolist()) == {0, 3, 4}
    np.testing.assert_allclose(np.linalg.norm(c["normal"], axis=1), 1.0, rtol=1e-14)


def test_alert_is_surface_to_surface_and_region_normals():
    p = GrainProblem(dim=3, gravity=(0, 0, 0))
    p.add_mesh(Mesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]]))
    # above the face, beyond the edge x + y = 1, beyond the vertex (0, 0), below the face
    p.add_grains([[0.2, 0.2, 0.15], [0.6, 0.6, 0.0], [-0.1, -0.1, 0.1], [0.3, 0.1, -0.125]],
                 0.1)
    assert p.detect_contacts(0.08) == 4
    c = p.contacts
    np.testing.assert_array_equal(c["kind"], 4)
    np.testing.assert_array_equal(c["j"], 0)
    h = math.sqrt(0.02) - 0.1
    l3 = math.sqrt(0.03)
    np.testing.assert_allclose(c["gap"], [0.05, h, l3 - 0.1, 0.025], atol=1e-15)
    s = 1 / math.sqrt(2)
    np.testing.assert_allclose(c["normal"], [[0, 0, 1], [s, s, 0],
                                             np.array([-0.1, -0.1, 0.1]) / l3, [0, 0, -1]],
                               atol=1e-15)
    assert p.detect_contacts(0.03) == 1 and p.contacts["i"].tolist() == [3]
    assert p.detect_contacts(0.02) == 0


# ---------------------------------------------------------------- rest, as on a plane
def floor(kind, mu=0.3, e=0.0):
    p = GrainProblem(dim=3, friction=mu, restitution=e)
    if kind == "mesh":
        p.add_mesh(rectangle((-1, -1), (1, 1), 0.0, n=8))      # 128 triangles, edges 0.25
    else:
        p.add_planes([[0, 0, 0]], [[0, 0, 1]])
    return p


@pytest.mark.parametrize("x0", [(0.13, 0.07), (0.0, 0.0), (0.25, 0.1), (0.1, 0.1)],
                         ids=["face", "vertex", "edge", "diagonal"])
def test_sphere_comes_to_rest_on_mesh_as_on_plane(x0):
    """Dropped from 1 cm: the same rest height, velocities and impulses as on the plane
    z = 0, wherever it lands (a face, a vertex of 8 facets, an edge, a diagonal)."""
    runs = []
    for kind in ("mesh", "plane"):
        p = floor(kind)
        p.add_grains([[x0[0], x0[1], 0.06]], 0.05, density=2500.0)
        for _ in range(100):
            p.step(1e-3, 1e-12, 0.005)
        runs.append(p)
    a, b = runs
    np.testing.assert_allclose(a.x, [[x0[0], x0[1], 0.05]], atol=1e-12)
    np.testing.assert_allclose(a.x, b.x, atol=1e-12)
    np.testing.assert_allclose(a.v, b.v, atol=1e-12)
    np.testing.assert_allclose(a.v, 0.0, atol=1e-12)
    assert set(a.contacts["kind"].tolist()) == {4}
    assert a.contacts["impulse_n"].sum() == pytest.approx(b.contacts["impulse_n"].sum(),
                                                          rel=1e-9)
    assert a.contacts["impulse_n"].sum() == pytest.approx(a.m[0] * G * 1e-3, rel=1e-9)


@pytest.mark.parametrize("solver", ["nlgs", "jacobi"])
def test_sphere_rolling_across_facets_follows_the_plane(solver):
    """Launched sideways with friction: it slides, then rolls, across many facet edges;
    positions and velocities follow the run on the plane (the edges of the neighbour
    facets, hidden by the facet under the sphere, do not lift it)."""
    runs = []
    for kind in ("mesh", "plane"):
        p = floor(kind, mu=0.2)
        p.add_grains([[0.13, 0.07, 0.05]], 0.05, density=2500.0, v=[[1.5, 0.6, 0.0]])
        for _ in range(300):
            p.step(1e-3, 1e-12, 0.005, solver=solver)
        runs.append(p)
    a, b = runs
    assert a.x[0, 0] > 0.5                           # crossed about ten facets
    np.testing.assert_allclose(a.x, b.x, atol=1e-10)
    np.testing.assert_allclose(a.v, b.v, atol=1e-9)
    np.testing.assert_allclose(a.omega, b.omega, atol=1e-8)
    assert abs(a.x[0, 2] - 0.05) < 1e-9 and abs(a.v[0, 2]) < 1e-9


# ---------------------------------------------------------------- restitution
@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
def test_restitution_bounce_on_mesh_floor(e):
    """Touching and moving down at 2 m/s: leaves at 2 e (gravity off); dropped on an edge
    shared by two facets: leaves at e |u^-| (e > 0) or lands with -h/dt (e = 0), the
    closed forms of the segment test."""
    p = floor("mesh", mu=0.0, e=e)
    p.gravity[:] = 0.0
    p.add_grains([[0.13, 0.07, 0.05]], 0.05, v=[[0.3, 0.0, -2.0]])
    p.step(1e-3, 1e-12, 0.01)
    assert p.v[0, 2] == pytest.approx(2.0 * e, rel=1e-12, abs=1e-15)
    assert p.v[0, 0] == 0.3
    q = floor("mesh", mu=0.0, e=e)
    q.add_grains([[0.25, 0.1, 0.1]], 0.05)            # above the edge x = 0.25
    dt = 1e-3
    for _ in range(200):
        v_free = q.v[0, 2] - G * dt
        h = q.x[0, 2] - 0.05
        q.step(dt, 1e-12, 0.01)
        if q.v[0, 2] != v_free:
            break
    assert len(q.contacts["kind"]) == 2
    assert q.v[0, 2] == pytest.approx(-e * v_free if e > 0 else -h / dt, rel=1e-12)
    assert v_free < -0.9                             # a real impact (fell 5 cm)


# ---------------------------------------------------------------- inclined mesh
def incline(angle, mu, steps=100, dt=1e-3, r=0.05):
    n = np.array([math.sin(angle), 0.0, math.cos(angle)])
    down = np.array([math.cos(angle), 0.0, -math.sin(angle)])
    p = GrainProblem(dim=3, friction=mu)
    p.add_mesh(rotated_rectangle(angle, half=0.5, n=20))    # edges 0.05: crosses several
    p.add_grains([r * n + [0.0, 0.013, 0.0]], r)
    for _ in range(steps):
        p.step(dt, 1e-13, 0.01)
    return p, n, down


def test_sphere_rolls_down_inclined_mesh():
    """mu = 0.3 >= 2/7 tan a: rolling without slip, a = 5/7 g sin a, omega = v / r about
    n x down (as test_nscd's plane test)."""
    angle, steps, dt, r = math.radians(25.0), 200, 1e-3, 0.05
    assert 2.0 / 7.0 * math.tan(angle) < 0.3 < math.tan(angle)
    p, n, down = incline(angle, 0.3, steps, dt, r)
    v = 5.0 / 7.0 * G * math.sin(angle) * steps * dt
    np.testing.assert_allclose(p.v[0], v * down, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(p.omega[0], v / r * np.cross(n, down), rtol=1e-10, atol=1e-11)
    travel = sum(5.0 / 7.0 * G * math.sin(angle) * k * dt for k in range(1, steps + 1)) * dt
    assert (p.x[0] - r * n) @ down == pytest.approx(travel, rel=1e-10)
    assert travel > 0.05                              # over a facet row


def test_sphere_slips_down_steep_inclined_mesh():
    """mu = 0.1 < 2/7 tan a: slides at g (sin a - mu cos a) and spins up at
    mu m g cos a r / I = 5 mu g cos a / (2 r)."""
    angle, steps, dt, r, mu = math.radians(40.0), 150, 1e-3, 0.05, 0.1
    assert mu < 2.0 / 7.0 * math.tan(angle)
    p, n, down = incline(angle, mu, steps, dt, r)
    t = steps * dt
    assert p.v[0] @ down == pytest.approx(G * (math.sin(angle) - mu * math.cos(angle)) * t,
                                          rel=1e-10)
    assert abs(p.v[0] @ n) < 1e-12
    np.testing.assert_allclose(p.omega[0], 2.5 * mu * G * math.cos(angle) / r * t
                               * np.cross(n, down), rtol=1e-10, atol=1e-11)


# ---------------------------------------------------------------- inactive sides
@pytest.mark.parametrize("side, falls", [("front", True), ("back", False), ("both", True)])
def test_inactive_side_lets_grain_through(side, falls):
    mesh = rectangle((-1, -1), (1, 1), 0.0, n=4)
    mesh.set_inactive(np.arange(mesh.n_facets), side=side)
    p = GrainProblem(dim=3)
    p.add_mesh(mesh)
    p.add_grains([[0.1, 0.2, 0.06]], 0.05)
    for _ in range(200):
        p.step(1e-3, 1e-12, 0.01)
    if falls:
        assert p.x[0, 2] < -0.1 and p.v[0, 2] == pytest.approx(-G * 0.2, rel=1e-12)
    else:
        assert p.x[0, 2] == pytest.approx(0.05, abs=1e-12)


def test_back_side_stops_grain_from_below():
    """Gravity up, grain under the floor: the back side stops it with normal -n_f, unless
    flagged inactive (read at every detection)."""
    mesh = rectangle((-1, -1), (1, 1), 0.0, n=4)
    p = GrainProblem(dim=3, gravity=(0, 0, G))
    p.add_mesh(mesh)
    p.add_grains([[0.1, 0.2, -0.07]], 0.05)
    for _ in range(100):
        p.step(1e-3, 1e-12, 0.01)
    assert p.x[0, 2] == pytest.approx(-0.05, abs=1e-12)
    np.testing.assert_allclose(p.contacts["normal"], [[0, 0, -1]])
    mesh.set_inactive(np.arange(mesh.n_facets), side="back")
    for _ in range(150):
        p.step(1e-3, 1e-12, 0.01)
    assert p.x[0, 2] > 0.0


# ---------------------------------------------------------------- a closed box
@pytest.mark.parametrize("solver", ["nlgs", "jacobi"])
def test_spheres_poured_into_mesh_box_stay_inside(solver):
    lo, hi = np.array([0.0, 0.0, 0.0]), np.array([0.1, 0.1, 0.3])
    rng = np.random.default_rng(5)
    p = GrainProblem(dim=3, friction=0.3, overlap_correction=1.0, threads=1)
    p.add_mesh(box(lo, hi, n=3, open_top=True))
    g = np.array([0.025, 0.05, 0.075])
    x = np.array([[a, b, 0.03 + 0.03 * k] for k in range(4) for a in g[::2] for b in g[::2]])
    r = rng.uniform(0.01, 0.013, len(x))
    p.add_grains(x + rng.uniform(-2e-3, 2e-3, x.shape), r, density=2500.0,
                 v=rng.normal(0.0, 0.5, x.shape))
    tol = 1e-6
    worst = 0.0
    for _ in range(400):
        p.step(1e-3, tol / 2, 0.003, solver=solver, itmax=5000)
        inside = np.concatenate([p.x - p.r[:, None] - lo, (hi - p.x - p.r[:, None])[:, :2]],
                                axis=1)
        d = np.linalg.norm(p.x[:, None] - p.x[None], axis=2) - p.r[:, None] - p.r[None]
        d[np.diag_indices(p.n)] = np.inf
        worst = min(worst, inside.min(), d.min())
    assert worst > -tol
    assert p.x[:, 2].max() < 0.1                      # fell from up to 0.12 to the floor
    assert np.any(p.contacts["kind"] == 4) and np.any(p.contacts["kind"] == 0)


# ---------------------------------------------------------------- meshes and files
def test_several_meshes_and_files(tmp_path):
    p = GrainProblem(dim=3)
    a = p.add_mesh(rectangle((-1, -1), (0, 1), 0.0, n=1))
    path = tmp_path / "right.stl"
    right = rectangle((0, -1), (1, 1), -0.5, n=2)
    write_stl(path, right.vertices, right.facets, binary=False)
    b = p.add_mesh(str(path))
    c = p.add_mesh(path)                              # a path object, the same facets again
    np.testing.assert_array_equal(a, [0, 1])
    np.testing.assert_array_equal(b, np.arange(2, 10))
    np.testing.assert_array_equal(c, np.arange(10, 18))
    np.testing.assert_array_equal(p.mesh_facet_offset, [0, 2, 10, 18])
    assert len(p.meshes) == 3 and p.mesh_vertices.shape == (4 + 9 + 9, 3)
    p.add_grains([[-0.5, 0.3, 0.05], [0.3, 0.3, -0.45]], 0.05)
    for _ in range(20):
        p.step(1e-3, 1e-12, 0.01)
    np.testing.assert_allclose(p.x[:, 2], [0.05, -0.45], atol=1e-12)
    c = p.contacts
    assert c["i"].tolist() == [0, 1, 1] and c["j"][1:].tolist() == [c["j"][1], c["j"][1] + 8]
    assert 2 <= c["j"][1] < 10


def test_bad_input(tmp_path):
    p2 = GrainProblem(dim=2)
    mesh = rectangle((0, 0), (1, 1))
    for call in (lambda: p2.add_mesh(mesh), lambda: p2.add_mesh("wall.stl")):
        with pytest.raises(InputError, match=r"add_mesh: .*dim=3.*dim=2"):
            call()
    p = GrainProblem(dim=3)
    with pytest.raises(InputError, match=r"add_mesh: mesh must be a pdem.Mesh .* got list"):
        p.add_mesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]])
    with pytest.raises(InputError, match="no such file"):
        p.add_mesh(tmp_path / "missing.stl")
    (tmp_path / "wall.txt").write_text("x")
    with pytest.raises(InputError, match="unknown extension"):
        p.add_mesh(str(tmp_path / "wall.txt"))
    assert p.meshes == [] and len(p.mesh_facets) == 0 and p2.meshes == []
