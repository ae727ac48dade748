"""Level-set regions and seed 002's static relaxation rule ("静力弛豫"): expected values
from closed forms (the issue's numbers), not from the code."""
import math

import numpy as np
import pytest

import pdem
from pdem.regions import relax, relax_step
from test_mesh import closed_cylinder


def z_points(*z):
    return np.array([[0.3, -0.2, v] for v in z])


def test_half_space_one_step_to_z_0_6():
    # f = z - 1, r = 0.4: from z = 5.0 and z = 1.3 one step puts the centre at 0.6
    h = pdem.HalfSpace((0, 0, 1), (0, 0, 1))
    x, moved = relax_step(h, z_points(5.0, 1.3, 0.5, -0.5), 0.4)
    assert moved == 2
    assert x[:2, 2] == pytest.approx([0.6, 0.6], abs=1e-14)
    assert np.array_equal(x[2:], z_points(0.5, -0.5))        # inside: no move
    assert np.all(x[:, :2] == [0.3, -0.2])                     # along the normal only


def test_sphere_one_step_from_anywhere_outside():
    R, r = 5.0, 1.0
    rng = np.random.default_rng(4)
    d = rng.normal(size=(200, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    x0 = d * rng.uniform(R - r + 0.5, 40.0, 200)[:, None] + [1, 2, 3]
    s = pdem.Sphere((1, 2, 3), R)
    x, moved = relax_step(s, x0, r)
    assert moved == 200
    assert np.linalg.norm(x - [1, 2, 3], axis=1) == pytest.approx(np.full(200, R - r), abs=1e-12)
    assert relax_step(s, x, r)[1] == 0                      # idempotent


def test_non_distance_f_is_a_secant_iteration():
    # f = |x|^2 - R^2, R = 5, r = 1, from distance 7: 7 -> 4.1538 -> 3.9860, then still
    R = 5.0
    f = pdem.FunctionRegion(lambda x: np.einsum("ij,ij->i", x, x) - R * R,
                            grad=lambda x: 2 * x)
    x1, m1 = relax_step(f, [[7.0, 0, 0]], 1.0)
    x2, m2 = relax_step(f, x1, 1.0)
    x3, m3 = relax_step(f, x2, 1.0)
    # closed forms: d0 = 24, d1 = 11 -> 7 - (1 + 24/13) = 54/13
    assert x1[0, 0] == pytest.approx(54 / 13, rel=1e-14) and abs(x1[0, 0] - 4.1538) < 1e-4
    a = 54 / 13
    d0, d1 = a * a - 25, (a + 1) ** 2 - 25
    assert x2[0, 0] == pytest.approx(a - (1 + abs(d0) / (d0 - d1)), rel=1e-13)
    assert abs(x2[0, 0] - 3.9860) < 1e-4
    assert (m1, m2, m3) == (1, 1, 0) and np.array_equal(x3, x2)
    # the same with a finite-difference gradient, and relax() counts the steps
    fd = pdem.FunctionRegion(lambda x: np.einsum("ij,ij->i", x, x) - R * R)
    y, steps = relax(fd, [[7.0, 0, 0]], 1.0)
    assert steps == 2 and y[0, 0] == pytest.approx(x2[0, 0], rel=1e-8)


def test_scale_invariance_of_a_signed_distance():
    rng = np.random.default_rng(5)
    x0 = rng.uniform(-8, 8, (300, 3))
    t = pdem.Torus((0.5, 0, 0), (0, 1, 1), 4.0, 1.5)
    t3 = pdem.FunctionRegion(lambda x: 3 * t(x), grad=lambda x: 3 * t.evaluate(x)[1])
    a, ma = relax_step(t, x0, 0.5)
    b, mb = relax_step(t3, x0, 0.5)
    assert ma == mb and np.allclose(a, b, rtol=0, atol=1e-12)
    # one step of a true distance puts every moved centre at f = -r, exactly once
    moved = np.any(a != x0, axis=1)
    assert t(a[moved]) == pytest.approx(np.full(moved.sum(), -0.5), abs=1e-12)
    assert relax_step(t, a, 0.5)[1] == 0


@pytest.mark.parametrize("region, inside, outside, dist", [
    (pdem.Box((0, 0, 0), (2, 4, 6)), (1, 1, 1), (3, 4.5, 3), math.hypot(1, 0.5)),
    (pdem.Cylinder((0, 0, 0), (0, 0, 1), 2.0, 3.0), (0.5, 0, 1), (0, 4, 5), math.hypot(2, 2)),
    (pdem.Cone((0, 0, 0), (0, 0, 1), 0.0, 2.0, 2.0), (0, 0, 1), (0, 0, -1), 1.0),
    (pdem.Torus((0, 0, 0), (0, 0, 1), 3.0, 1.0), (3, 0, 0.5), (0, 0, 0), 2.0),
    (pdem.Sphere((0, 0, 0), 1.0).translate((5, 0, 0)), (5, 0, 0.5), (7, 0, 0), 1.0),
    (pdem.Box((-1, -1, -1), (1, 1, 1)).rotate((0, 0, 1), math.pi / 4).scale(2.0),
     (0, 0, 0), (2 * math.sqrt(2) + 1, 0, 0), 1.0),
])
def test_analytic_distances(region, inside, outside, dist):
    f, g = region.evaluate([inside, outside])
    assert f[0] < 0 and f[1] == pytest.approx(dist, rel=1e-12)
    assert np.linalg.norm(g, axis=1) == pytest.approx([1, 1], rel=1e-12)
    assert region.exact


def test_set_operations():
    a = pdem.Sphere((0, 0, 0), 2.0)
    b = pdem.Sphere((3, 0, 0), 2.0)
    x = np.array([[-1.5, 0, 0], [1.5, 0, 0], [4.5, 0, 0], [10, 0, 0]])
    assert np.array_equal((a | b).contains(x), [True, True, True, False])
    assert np.array_equal((a & b).contains(x), [False, True, False, False])
    assert np.array_equal((a - b).contains(x), [True, False, False, False])
    half = a & pdem.HalfSpace((0, 0, 0), (0, 0, 1))           # lower half ball
    assert half.volume() == pytest.approx(2 / 3 * math.pi * 8, rel=0.01)


def test_mesh_region_inside_and_distance(tmp_path):
    from pdem.contact.mesh_files import write_stl
    V, F = closed_cylinder(n=64, radius=1.0, height=2.0)
    F[[3, 70, 130]] = F[[3, 70, 130]][:, ::-1]                  # a few flipped facets
    write_stl(tmp_path / "cyl.stl", V, F)
    with pytest.warns(pdem.contact.mesh.MeshOrientationWarning):
        grid = pdem.MeshRegion(tmp_path / "cyl.stl", cells=40)
    exact = pdem.MeshRegion(grid.mesh, exact=True)
    inverted = pdem.MeshRegion(pdem.Mesh(grid.mesh.vertices, grid.mesh.facets[:, ::-1]),
                               exact=True)                       # inward: same inside
    cyl = pdem.Cylinder((0, 0, 0), (0, 0, 1), 1.0, 2.0)
    rng = np.random.default_rng(6)
    x = rng.uniform([-1.1, -1.1, -0.1], [1.1, 1.1, 2.1], (3000, 3))
    sag = 1 - math.cos(math.pi / 64)                             # polygon vs circle
    assert np.abs(exact(x) - cyl(x)).max() < sag + 1e-6          # float32 STL
    assert np.allclose(inverted(x), exact(x), rtol=0, atol=1e-14)
    assert np.abs(grid(x) - cyl(x)).max() < 0.5 * grid.h
    # the rule alone: at rims (kinks of the interpolated f) it may stop within a cell
    y, _ = relax(grid, rng.uniform(-3, 3, (500, 3)), 0.2)
    assert np.all(cyl(y) <= -0.2 + grid.h)
    # pack's boundary step adds a Newton step there: f(x) <= -r
    from pdem.packing import _boundary
    for _ in range(5):
        y = _boundary(grid, y, np.full(len(y), 0.2), 1e-6, 1)
    assert np.all(grid(y) <= -0.2 + 1e-6)
    assert np.all(cyl(y) <= -0.2 + 0.5 * grid.h)
