"""Verlet candidate list: pdem._kernels.cells.build_pairs against brute force, the
periodic list of a Simulation against minimum-image brute force, and the skin/2
rebuild criterion."""

import numpy as np
import pytest

import pdem
from pdem.contact import keys
from pdem._kernels.cells import build_pairs
from pdem.cell import fixed_cell


def brute_pairs(pos, radius, ids, skin, n_own=None, box=None, periodic=(False,) * 3):
    """All (id_a, id_b), id_a < id_b, at least one owned, |x_b - x_a| < r_a + r_b + skin
    (minimum image on periodic axes), sorted."""
    n = len(pos)
    n_own = n if n_own is None else n_own
    d = pos[None, :, :] - pos[:, None, :]
    for ax in range(3):
        if periodic[ax]:
            d[:, :, ax] -= box[ax] * np.round(d[:, :, ax] / box[ax])
    dist2 = np.einsum("ijk,ijk->ij", d, d)
    reach = radius[:, None] + radius[None, :] + skin
    ok = (dist2 < reach * reach) & (ids[:, None] < ids[None, :])
    owned = np.arange(n) < n_own
    ok &= owned[:, None] | owned[None, :]
    a, b = np.nonzero(ok)
    out = sorted(zip(ids[a].tolist(), ids[b].tolist()))
    return out


def kernel_pairs(pos, radius, ids, skin, n_own=None, threads=1):
    n = len(pos)
    ids = np.ascontiguousarray(ids, np.int64)
    i1, i2 = build_pairs(np.ascontiguousarray(pos, float), np.zeros((n, 3), np.int32),
                         fixed_cell(np.ones(3)), np.ascontiguousarray(radius, float), ids,
                         n if n_own is None else n_own, float(skin),
                         np.argsort(ids, kind="stable").astype(np.int64), threads)
    return list(zip(ids[i1].tolist(), ids[i2].tolist()))


def cloud(rng, n, lo=0.0, hi=1.0, rmin=0.01, rmax=0.05):
    return rng.uniform(lo, hi, size=(n, 3)), rng.uniform(rmin, rmax, n)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_build_pairs_equals_brute_force(seed, threads):
    rng = np.random.default_rng(seed)
    pos, rad = cloud(rng, 800)
    ids = rng.permutation(10 * 800)[:800].astype(np.int64)      # arbitrary, unsorted ids
    skin = 0.015
    got = kernel_pairs(pos, rad, ids, skin, threads=threads)
    expected = brute_pairs(pos, rad, ids, skin)
    assert len(expected) > 400
    assert got == expected                     # same set, sorted by (id1, id2)
    assert len(set(got)) == len(got)
    assert all(a < b for a, b in got)


def test_build_pairs_owned_and_ghosts():
    """Pairs need at least one owned particle (the first n_own); ghost-ghost pairs are
    left out."""
    rng = np.random.default_rng(5)
    pos, rad = cloud(rng, 400)
    ids = rng.permutation(400).astype(np.int64)
    got = kernel_pairs(pos, rad, ids, 0.01, n_own=250, threads=2)
    assert got == brute_pairs(pos, rad, ids, 0.01, n_own=250)


def test_build_pairs_sparse_and_clustered_cloud():
    """A few far-away particles plus dense clusters: the grid coarsens (cell cap) and
    must still find every pair."""
    rng = np.random.default_rng(9)
    parts = [rng.uniform(-500, 500, size=(30, 3))]
    for c in ((0.0, 0.0, 0.0), (200.0, -100.0, 50.0)):
        parts.append(np.asarray(c) + rng.uniform(0, 0.5, size=(150, 3)))
    pos = np.concatenate(parts)
    rad = rng.uniform(0.005, 0.04, len(pos))
    ids = np.arange(len(pos), dtype=np.int64)[::-1].copy()
    got = kernel_pairs(pos, rad, ids, 0.02, threads=2)
    expected = brute_pairs(pos, rad, ids, 0.02)
    assert len(expected) > 200
    assert got == expected


def test_build_pairs_threshold_is_strict():
    """|d| < r1 + r2 + skin: exactly at the alert distance is not a candidate."""
    pos = np.array([[0.0, 0.0, 0.0], [0.75, 0.0, 0.0], [1.5 - 1e-12, 0.0, 0.0]])
    rad = np.array([0.25, 0.25, 0.25])
    got = kernel_pairs(pos, rad, np.arange(3), 0.25)
    assert got == [(1, 2)]


def test_build_pairs_empty_and_single():
    assert kernel_pairs(np.zeros((0, 3)), np.zeros(0), np.zeros(0, np.int64), 0.1) == []
    assert kernel_pairs(np.full((1, 3), 0.5), np.array([0.1]), np.array([3]), 0.1) == []


# ---------------------------------------------------------------- periodic simulation
def make_sim(periodic, skin, dt=1e-5, lo=(0.0, 0.0, 0.0), hi=(1.0, 0.8, 1.2)):
    sim = pdem.Simulation(pdem.Domain(lo, hi, periodic=periodic), dt=dt, skin=skin, threads=1,
                          max_overlap=float("inf"))      # random clouds overlap deeply
    sim.material("m", 1000.0, kn=10.0)
    return sim


def sim_pair_ids(sim):
    """The pair list's (id1, id2), sorted (the list is in grid order: test_rebuild_kernels)."""
    key = np.sort(sim.interactions["pair"].batch.key)
    assert np.all(np.diff(key) > 0), "pair keys must be unique"
    return list(zip(keys.particle(key).tolist(), keys.partner(key).tolist()))


@pytest.mark.parametrize("periodic", [(True, True, True), (True, False, True),
                                      (False, False, False)])
def test_simulation_pairs_minimum_image_brute_force(periodic):
    rng = np.random.default_rng(11)
    lo, hi = np.array([-0.3, 0.0, 0.1]), np.array([0.7, 0.8, 1.3])
    n, skin = 300, 0.02
    pos = rng.uniform(lo, hi, size=(n, 3))
    rad = rng.uniform(0.01, 0.04, n)
    sim = make_sim(periodic, skin, lo=lo, hi=hi)
    sim.add_spheres(pos, rad, "m")
    sim.run(steps=1)
    assert sim.n_rebuilds == 1
    p = sim.particles()
    np.testing.assert_array_equal(p["id"], np.arange(n))
    expected = brute_pairs(p["position"], p["radius"], p["id"], skin, box=hi - lo,
                           periodic=periodic)
    got = sim_pair_ids(sim)
    assert got == expected
    # the list includes pairs across each periodic face (and none across walls)
    d = p["position"][[a for a, _ in got]] - p["position"][[b for _, b in got]]
    for ax in range(3):
        crossing = np.abs(d[:, ax]) > 0.5 * (hi - lo)[ax]
        assert crossing.any() == periodic[ax]


# ---------------------------------------------------------------- rebuild criterion
def test_rebuild_when_a_particle_moves_more_than_half_skin():
    """Particle 2 moves skin/7.5 per step, the other two are at rest: the list is built
    at step 1 (drift first, then build), and rebuilt at the first step whose
    displacement since the last build exceeds skin/2 relative to the frame of the mean
    flow (pdem/contact/frame.py: the centre of the velocities, v/2: each particle moves
    v/2 relative to it), i.e. every 8 steps; between rebuilds it is not."""
    skin = 0.02
    dt = 1e-3
    v = (skin / 7.5) / dt
    sim = make_sim((False, False, False), skin, dt=dt)
    # mover (id 2) along x at y = 0.45: leaves id 0's alert range, enters id 1's,
    # never touches either (centre distance stays above r1 + r2 = 0.06)
    sim.add_spheres([[0.25, 0.4, 0.6], [0.42, 0.4, 0.6]], 0.03, "m")       # static
    sim.add_spheres([[0.3, 0.45, 0.6]], 0.03, "m", velocities=[[v, 0.0, 0.0]])
    history = [0]
    for k in range(1, 30):
        sim.step()
        history.append(sim.n_rebuilds)
        assert sim.n_rebuilds == 1 + (k - 1) // 8, (k, history)
        p = sim.particles()
        if history[-1] != history[-2]:          # rebuilt now: list = brute force now
            assert sim_pair_ids(sim) == brute_pairs(p["position"], p["radius"], p["id"], skin)
        # Verlet guarantee: every pair in actual contact range is a candidate
        touching = brute_pairs(p["position"], p["radius"], p["id"], 0.0)
        assert set(touching) <= set(sim_pair_ids(sim))
        if k == 1:
            assert sim_pair_ids(sim) == [(0, 2)]
    assert sim_pair_ids(sim) == [(1, 2)]
    assert len(sim.contacts()["id1"]) == 0
    np.testing.assert_array_equal(sim.particles()["velocity"][2], [v, 0.0, 0.0])


def test_no_rebuild_without_motion():
    sim = make_sim((True, True, True), 0.02)
    rng = np.random.default_rng(2)
    sim.add_spheres(rng.uniform(0, 0.8, size=(50, 3)), 0.005, "m")
    sim.run(steps=20)
    assert sim.n_rebuilds == 1


def test_adding_particles_forces_rebuild():
    sim = make_sim((False, False, False), 0.02)
    sim.add_spheres([[0.5, 0.5, 0.5]], 0.03, "m")
    sim.run(steps=3)
    assert sim.n_rebuilds == 1
    sim.add_spheres([[0.5, 0.5, 0.57]], 0.03, "m")
    sim.run(steps=1)
    assert sim.n_rebuilds == 2
    assert sim_pair_ids(sim) == [(0, 1)]
