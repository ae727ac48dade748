"""Insertion during a run (pdem/insertion.py) and size distributions (pdem/sizes.py):
rates, no overlaps, inside the region, restarts; distributions against their
definitions."""
import numpy as np
import pytest
from math import erf, sqrt

import pdem
from pdem.regions import Box

RHO = 2500.0


def bin_with_floor(comm=None):
    dom = pdem.Domain((0, 0, 0), (0.2, 0.2, 0.6), periodic=(True, True, False))
    sim = pdem.Simulation(dom, dt=2e-5, gravity=(0, 0, -9.81), comm=comm)
    sim.material("glass", RHO, kn=2e3, restitution=0.3, friction=0.4)
    sim.add_plane((0, 0, 0), (0, 0, 1), "glass")
    return sim


def check_no_overlap(p, box_length=0.2):
    x, r = p["position"], p["radius"]
    d = x[:, None, :] - x[None, :, :]
    d[..., :2] -= box_length * np.round(d[..., :2] / box_length)     # periodic x, y
    dist = np.sqrt((d ** 2).sum(-1)) + np.eye(len(r)) * 1e9
    return float((dist - (r[:, None] + r[None, :])).min())


def test_number_rate_fills_on_schedule_without_overlaps():
    sim = bin_with_floor()
    region = Box((0, 0, 0.4), (0.2, 0.2, 0.58))
    ins = sim.add_insertion(region, "glass", pdem.sizes.uniform(0.004, 0.006), rate=5000.0,
                            every=500, seed=3, velocity=(0, 0, -0.5))
    sim.run(steps=500)                 # t = 0.01: 50 due
    assert sim.n_particles == 50 == ins.state["number"]
    p = sim.particles()
    assert np.all(region.contains(p["position"], p["radius"]))
    assert check_no_overlap(p) >= 0.0
    assert np.all(p["velocity"][:, 2] == -0.5)
    sim.run(steps=1500)                # t = 0.04: 200 due
    assert sim.n_particles == 200 and ins.deficit == 0
    # the new batches never overlap particles already there (falling ones included)
    assert check_no_overlap(sim.particles()) > -1e-3 * 0.004


def test_mass_rate_and_count_cap():
    sim = bin_with_floor()
    region = Box((0, 0, 0.3), (0.2, 0.2, 0.58))
    ins = sim.add_insertion(region, "glass", 0.005, mass_rate=0.5, count=50, every=250,
                            seed=1)
    m1 = RHO * 4 / 3 * np.pi * 0.005 ** 3
    sim.run(steps=1000)                # t = 0.02: 0.01 kg due, whole particles below it
    assert sim.n_particles == int(np.floor(0.5 * 0.02 / m1 + 1e-9))
    sim.run(steps=8000)                # 0.09 kg due: 68 particles, above the cap
    assert sim.n_particles == 50 == ins.state["number"]


def test_restart_continues_the_insertion_bitwise(tmp_path):
    def make():
        sim = bin_with_floor()
        sim.add_insertion(Box((0, 0, 0.4), (0.2, 0.2, 0.58)), "glass",
                          pdem.sizes.uniform(0.004, 0.006), rate=5000.0, every=400, seed=3)
        return sim
    whole = make()
    whole.run(steps=2000)
    part = make()
    part.run(steps=1000)
    part.checkpoint(str(tmp_path / "c.h5"))
    again = pdem.restart(str(tmp_path / "c.h5"))
    again.add_insertion(Box((0, 0, 0.4), (0.2, 0.2, 0.58)), "glass",
                        pdem.sizes.uniform(0.004, 0.006), rate=5000.0, every=400, seed=3)
    again.run(steps=1000)
    a, b = whole.particles(), again.particles()
    assert len(a["id"]) == 200
    for k in ("id", "position", "velocity", "radius"):
        assert np.array_equal(a[k], b[k]), k


def test_candidates_avoid_planes_and_mesh_walls():
    sim = bin_with_floor()
    sim.add_plane((0, 0, 0.5), (0, 0, -1), "glass")            # a lid through the region
    v = np.array([(0.0, 0.0, 0.45), (0.2, 0.0, 0.45), (0.0, 0.2, 0.45)])
    sim.add_mesh_wall(pdem.Mesh(v, [(0, 1, 2)]), "glass", name="baffle")
    sim.add_insertion(Box((0, 0, 0.4), (0.2, 0.2, 0.58)), "glass", 0.005, rate=2000.0,
                      every=100, seed=2)
    sim.run(steps=100)
    p = sim.particles()
    z, r = p["position"][:, 2], p["radius"]
    assert len(z) == 4
    assert np.all(z + r <= 0.5)                                  # below the lid
    xy_in = p["position"][:, 0] + p["position"][:, 1] <= 0.2     # over the baffle triangle
    assert np.all(np.abs(z[xy_in] - 0.45) >= r[xy_in])


def ks_distance(sample, cdf):
    """Kolmogorov-Smirnov distance of a sample to a CDF; below 1.63 / sqrt(n) with
    probability 0.99 when the sample is drawn from it."""
    x = np.sort(sample)
    f = cdf(x)
    n = len(x)
    return max((np.arange(1, n + 1) / n - f).max(), (f - np.arange(n) / n).max()) * sqrt(n)


def test_size_distributions():
    rng = np.random.default_rng(0)
    r = pdem.sizes.uniform(1.0, 2.0)(rng, 20000)
    assert r.min() >= 1.0 and r.max() <= 2.0
    assert ks_distance(r, lambda x: x - 1.0) < 1.63
    r = pdem.sizes.lognormal(1.0, 0.3)(rng, 20000)
    normal = np.vectorize(lambda x: 0.5 * (1 + erf(x / (0.3 * sqrt(2)))))
    assert ks_distance(np.log(r), normal) < 1.63
    r = pdem.sizes.lognormal(1.0, 0.3, rmin=0.8, rmax=1.5)(rng, 5000)
    assert r.min() >= 0.8 and r.max() <= 1.5
    # a sieve table by mass: the mass fractions of a large sample are the table's
    t = pdem.sizes.table([1.0, 2.0, 3.0], [0.2, 0.3, 0.5], by="mass")
    r = t(rng, 200000)
    mass = np.array([(r[r == k] ** 3).sum() for k in (1.0, 2.0, 3.0)])
    assert np.allclose(mass / mass.sum(), [0.2, 0.3, 0.5], atol=0.01)
    with pytest.raises(pdem.InputError, match="rmax"):
        pdem.sizes.uniform(2.0, 1.0)
    with pytest.raises(pdem.InputError, match="by must be"):
        pdem.sizes.table([1.0], [1.0], by="volume")


def test_bad_insertion_input():
    sim = bin_with_floor()
    box = Box((0, 0, 0.4), (0.2, 0.2, 0.58))
    with pytest.raises(pdem.InputError, match="give rate"):
        sim.add_insertion(box, "glass", 0.005)
    with pytest.raises(pdem.InputError, match="rate must be"):
        sim.add_insertion(box, "glass", 0.005, rate=-1.0)
    with pytest.raises(pdem.InputError, match="every must be"):
        sim.add_insertion(box, "glass", 0.005, rate=1.0, every=0)
    sim.add_insertion(box, "glass", 0.005, rate=1.0)
    with pytest.raises(pdem.InputError, match="already in use"):
        sim.add_insertion(box, "glass", 0.005, rate=1.0)
