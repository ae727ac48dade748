"""pdem.pack: random insertion + seed 002's boundary push + Jacobi overlap removal."""
import math

import numpy as np
import pytest

import pdem
from test_bad_input import input_error


def max_pair_overlap(x, r):
    """Largest (r_i + r_j - |x_i - x_j|) / min(r_i, r_j), brute force (independent)."""
    d = np.linalg.norm(x[:, None] - x[None], axis=2)
    s = r[:, None] + r[None]
    m = np.minimum(r[:, None], r[None])
    np.fill_diagonal(d, np.inf)
    return float(np.max((s - d) / m))


def test_polydisperse_torus_every_sphere_inside():
    t = pdem.Torus((0, 0, 0), (1, 0, 1), 4.0, 1.6)
    p = pdem.pack(t, lambda rng, n: rng.uniform(0.2, 0.35, n), solid_fraction=0.5, seed=3)
    x, r = p
    assert len(r) > 300 and r.min() >= 0.2 and r.max() <= 0.35
    assert np.all(t(x) <= -r + 1e-3 * r.min())
    assert max_pair_overlap(x, r) <= 1e-3
    assert p.solid_fraction == pytest.approx(0.5, abs=0.01)


def test_monodisperse_box_bulk_solid_fraction():
    L, r = 10.0, 0.5
    x, rad = pdem.pack(pdem.Box((0, 0, 0), (L, L, L)), r, solid_fraction=0.56, seed=1)
    assert max_pair_overlap(x, rad) <= 1e-3
    # solid fraction of the bulk (2 diameters from the walls): covered test points
    q = np.random.default_rng(9).uniform(2.0, L - 2.0, (20000, 3))
    near = x[np.all((x > 1.0) & (x < L - 1.0), axis=1)]
    covered = np.zeros(len(q), dtype=bool)
    for k in range(0, len(q), 2000):
        d2 = ((q[k:k + 2000, None] - near[None]) ** 2).sum(axis=2)
        covered[k:k + 2000] = np.any(d2 <= r * r, axis=1)
    bulk = covered.mean()
    assert 0.55 <= bulk <= 0.64, bulk      # 0.617 (the walls loosen the first layers)


def test_mesh_region_packing(tmp_path):
    from pdem.contact.mesh_files import write_stl
    from test_mesh import closed_cylinder
    V, F = closed_cylinder(n=32, radius=1.5, height=3.0)
    write_stl(tmp_path / "c.stl", V, F)
    region = pdem.MeshRegion(tmp_path / "c.stl", cells=32)
    x, r = pdem.pack(region, 0.25, count=150, seed=2)           # solid fraction 0.46
    assert np.all(region(x) <= -r + 1e-3 * 0.25)
    assert np.all(pdem.Cylinder((0, 0, 0), (0, 0, 1), 1.5, 3.0)(x) <= -0.25 + region.h)
    assert max_pair_overlap(x, r) <= 1e-3


def test_packing_settles_without_an_overlap_explosion():
    """A packing in a box, then gravity in a Simulation: the overlap at step 1 stays
    below 0.2 % of a radius (the packing's 0.1 % plus one step of motion)."""
    L, rad = 0.02, 1e-3
    x, r = pdem.pack(pdem.Box((0, 0, 0), (L, L, L)), rad, solid_fraction=0.5, seed=4)
    assert max_pair_overlap(x, r) <= 1e-3
    density, kn = 2500.0, 2e3
    mass = 4 / 3 * math.pi * rad ** 3 * density
    dt = math.pi / math.sqrt(kn / (0.5 * mass)) / 25
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (L, L, 1.5 * L)), dt=dt, gravity=(0, 0, -9.81))
    # gamma_n is a rate (1/s): c / m* = sqrt(kn / m), damping ratio 0.35
    m = sim.material("glass", density=density, kn=kn, gamma_n=math.sqrt(kn / mass),
                     friction=0.0)
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)), ((L, 0, 0), (-1, 0, 0)),
                          ((0, 0, 0), (0, 1, 0)), ((0, L, 0), (0, -1, 0))):
        sim.add_plane(point, normal, m)
    sim.add_spheres(x, r, m)
    sim.run(steps=1)
    p = sim.particles(gather=True)
    first = max_pair_overlap(p["position"], p["radius"])
    walls = float(np.max(np.r_[p["radius"] - p["position"][:, 2],
                               p["radius"] - p["position"][:, 0], p["position"][:, 0] + p["radius"] - L]))
    assert first <= 2e-3 and walls / rad <= 2e-3, (first, walls)
    sim.run(steps=200)
    p = sim.particles(gather=True)
    assert max_pair_overlap(p["position"], p["radius"]) < 0.05
    assert np.all(np.abs(p["velocity"]) < 0.1)


def test_bad_input():
    box = pdem.Box((0, 0, 0), (1, 1, 1))
    input_error(lambda: pdem.pack(pdem.HalfSpace((0, 0, 0), (0, 0, 1)), 0.1, count=3),
                "unbounded")
    input_error(lambda: pdem.pack(box, 0.1, count=3, solid_fraction=0.3), "exactly one")
    input_error(lambda: pdem.pack(box, 0.1, solid_fraction=0.9), "solid_fraction", "0.9")
    input_error(lambda: pdem.pack(box, 0.6, count=2), "could not insert")
    input_error(lambda: pdem.pack(box, 0.1, solid_fraction=0.7, max_iterations=5),
                "not converged")
