"""The rebuild kernels against the numpy code they replace: the pair rows in the order
of an order key (cells.build_pair_rows; rebuild.grid_keys), the spatial counting sort
(rebuild.cell_order), the carry-over of contact state (rebuild.carry_rows through
ContactBatch.carry_from) and the index-based ghost build (GhostExchange.build) against
the record-based one."""
import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem._kernels import cells, rebuild
from pdem.cell import fixed_cell
from pdem.contact import keys
from pdem.contact.store import NCOLS, ContactBatch
from pdem.parallel.decomposition import Decomposition
from pdem.parallel.exchange import pack, record_dtype, sendrecv_records, unpack
from pdem.parallel.ghosts import GhostExchange, PoolRows
from pdem.particles import empty_fields, spatial_order, spatial_permutation


# ---------------------------------------------------------------- references
def ref_pair_rows(pos, image, box, radius, ids, order_key, n_own, skin):
    """build_pairs (particles visited in stable id order), then a stable sort by key
    keeping the first row of each key (the former PairContacts.build), then sorted by
    the (lower, higher) order key of the two particles."""
    order = np.argsort(ids, kind="stable")
    i1, i2 = cells.build_pairs(pos, image, box, radius, ids, n_own, skin, order, 1)
    key = keys.make(ids[i1], ids[i2])
    srt = np.argsort(key, kind="stable")
    key, i1, i2 = key[srt], i1[srt], i2[srt]
    first = np.ones(len(key), bool)
    first[1:] = key[1:] != key[:-1]
    i1, i2, key = i1[first], i2[first], key[first]
    k1, k2 = order_key[i1], order_key[i2]
    srt = np.lexsort((np.maximum(k1, k2), np.minimum(k1, k2)))
    return i1[srt], i2[srt], key[srt]


def order_keys(kind, ids, rng):
    """Per-particle order keys, equal for the copies of a particle: the ids, or an
    injective map of them in random order."""
    if kind == "ids":
        return ids
    return (rng.permutation(int(ids.max()) + 1).astype(np.int64) * 7 + 3)[ids]


def ref_carry(new, old):
    """The former ContactBatch.carry_from: searchsorted of the old active keys."""
    keep = np.flatnonzero(old.active)
    okeys = old.key[keep]
    order = np.argsort(new.key, kind="stable")
    pos = np.searchsorted(new.key, okeys, sorter=order)
    pos[pos == len(new.key)] = 0
    dst = order[pos]
    hit = new.key[dst] == okeys
    src, dst = keep[hit], dst[hit]
    new.active[dst] = old.active[src]
    new.state[dst] = old.state[src]


def ref_ghosts(dec, owned, cutoff):
    """The former GhostExchange.build: records packed, sent (to this rank for
    periodic images) and unpacked, every field concatenated per axis."""
    box = dec.domain.length
    local = dict(owned)
    dtype = record_dtype(local)
    swaps = []
    for d in range(3):
        lower, upper = dec.neighbors[d]
        at_lo, at_hi = dec.coords[d] == 0, dec.coords[d] == dec.dims[d] - 1
        shifted = local["pos"][:, d] + local["image"][:, d] * box[d]
        received = []
        n_before = len(shifted)
        for near, dest, source, shift, tag in (
                (shifted < dec.lo[d] + cutoff, lower, upper, 1 if at_lo else 0, 10 * d),
                (shifted >= dec.hi[d] - cutoff, upper, lower, -1 if at_hi else 0, 10 * d + 5)):
            sel = np.flatnonzero(near) if dest >= 0 else np.empty(0, np.int64)
            rec = pack(local, dtype, sel)
            rec["image"][:, d] += shift
            got = sendrecv_records(dec.cart, rec, dest, source, dtype, tag)
            swaps.append((sel, dest, source, n_before + sum(len(r) for r in received), len(got)))
            received.append(got)
        if any(len(r) for r in received):
            new = unpack(np.concatenate(received))
            local = {k: np.concatenate([local[k], new[k]]) for k in local}
    return local, swaps


def random_fields(rng, n, lo, hi):
    f = empty_fields(n)
    f["id"][:] = rng.permutation(3 * n)[:n]
    f["pos"][:] = rng.uniform(lo, hi, (n, 3))
    for k in ("vel", "angvel", "force", "torque"):
        f[k][:] = rng.normal(size=(n, 3))
    f["orient"][:] = rng.normal(size=(n, 4))
    f["radius"][:] = rng.uniform(0.02, 0.05, n)
    f["mass"][:] = rng.uniform(1, 2, n)
    f["inertia"][:] = rng.uniform(1, 2, n)
    f["material"][:] = rng.integers(0, 3, n)
    f["blocked"][:] = rng.integers(0, 64, n)
    return f


# ---------------------------------------------------------------- pair rows
def periodic_locals(seed, n=1500, periodic=(True, True, False), sparse_ids=False):
    """Owned particles plus their periodic images from a one-rank ghost build."""
    rng = np.random.default_rng(seed)
    lo, hi = np.zeros(3), np.ones(3)
    dom = pdem.Domain(lo, hi, periodic=periodic)
    dec = Decomposition(MPI.COMM_SELF, dom)
    own = random_fields(rng, n, lo, hi)
    if sparse_ids:
        own["id"][:] = rng.permutation(1000 * n)[:n]
    skin = 0.01
    cutoff = 2 * 0.05 + skin
    local, _ = ref_ghosts(dec, own, cutoff)
    return local, n, skin, dom.length


@pytest.mark.parametrize("order", ["ids", "shuffled"])
@pytest.mark.parametrize("sparse_ids", [False, True])
@pytest.mark.parametrize("periodic", [(True, True, False), (True, True, True),
                                      (False, False, False)])
@pytest.mark.parametrize("seed", [0, 1])
def test_pair_rows_equal_sorted_deduplicated_build_pairs(seed, periodic, sparse_ids, order):
    local, n_own, skin, box = periodic_locals(seed, periodic=periodic, sparse_ids=sparse_ids)
    args = (local["pos"], local["image"], fixed_cell(box), local["radius"], local["id"],
            order_keys(order, local["id"], np.random.default_rng(seed)), n_own, skin)
    expected = ref_pair_rows(*args)
    got = cells.build_pair_rows(*args)
    assert len(expected[0]) > 1000
    if any(periodic):
        assert len(local["id"]) > n_own          # images make duplicates to drop
    for e, g in zip(expected, got):
        assert e.dtype == g.dtype
        np.testing.assert_array_equal(g, e)
    assert (order == "ids") == bool(np.all(np.diff(got[2]) > 0))


@pytest.mark.parametrize("scene", ["clusters", "flat", "tall"])
def test_pair_rows_sparse_flat_and_tall_clouds(scene):
    """Clouds whose cell grid grows (two far clusters), has one cell layer (all z
    equal) or tall columns; radii from 0.5 to 2 (the range of the largest): the
    rows of the brute-force reference."""
    rng = np.random.default_rng(7)
    n = 1200
    if scene == "clusters":
        pos = rng.uniform(0, 6, (n, 3))
        pos[n // 2:] += 1e4
    elif scene == "flat":
        pos = np.column_stack([rng.uniform(0, 40, (n, 2)), np.full(n, 3.0)])
    else:
        pos = rng.uniform(0, 1, (n, 3)) * [8.0, 8.0, 60.0]
    radius = rng.uniform(0.5, 2.0, n) if scene != "flat" else rng.uniform(0.5, 1.0, n)
    ids = rng.permutation(n).astype(np.int64)
    args = (np.ascontiguousarray(pos), np.zeros((n, 3), np.int32), fixed_cell(np.ones(3)),
            radius, ids, ids, n, 0.2)
    expected = ref_pair_rows(*args)
    got = cells.build_pair_rows(*args)
    assert len(expected[0]) > 500
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g, e)
    # brute force: every pair within r1 + r2 + skin, once
    d = np.linalg.norm(pos[:, None] - pos[None], axis=2)
    i, j = np.nonzero(np.triu(d < radius[:, None] + radius[None] + 0.2, 1))
    lo, hi = np.minimum(ids[i], ids[j]), np.maximum(ids[i], ids[j])
    np.testing.assert_array_equal(np.sort((lo << 32) | hi), got[2])


def test_pair_rows_empty_and_single():
    z = np.zeros((0, 3))
    out = cells.build_pair_rows(z, np.zeros((0, 3), np.int32), fixed_cell(np.ones(3)), np.zeros(0),
                                np.zeros(0, np.int64), np.zeros(0, np.int64), 0, 0.1)
    assert all(len(a) == 0 for a in out)
    out = cells.build_pair_rows(np.zeros((1, 3)), np.zeros((1, 3), np.int32), fixed_cell(np.ones(3)),
                                np.ones(1), np.zeros(1, np.int64), np.zeros(1, np.int64), 1,
                                0.1)
    assert all(len(a) == 0 for a in out)


# ---------------------------------------------------------------- spatial order
def ref_order(pos, cell):
    c = np.floor((pos - pos.min(axis=0)) / cell).astype(np.int64)
    dims = c.max(axis=0) + 1
    return np.argsort((c[:, 0] * dims[1] + c[:, 1]) * dims[2] + c[:, 2], kind="stable")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cell_order_equals_stable_argsort(seed):
    rng = np.random.default_rng(seed)
    pos = rng.uniform(-3.0, 5.0, (5000, 3))
    pos[::7] = pos[3]                              # ties: the order must be stable
    for cell in (0.05, 0.37, 1.0, 100.0):
        got = rebuild.cell_order(pos, cell, 10 ** 9)
        np.testing.assert_array_equal(got, ref_order(pos, cell))
    assert rebuild.cell_order(pos, 1e-6, 4 * len(pos)) is None     # too many cells


def test_spatial_order_fields():
    rng = np.random.default_rng(5)
    own = random_fields(rng, 3000, np.zeros(3), np.full(3, 10.0))
    order = spatial_permutation(own)
    np.testing.assert_array_equal(order, ref_order(own["pos"], 4 * own["radius"].max()))
    sparse = dict(own, pos=own["pos"] * 1e6)       # a sparse cloud: argsort fallback
    np.testing.assert_array_equal(spatial_permutation(sparse),
                                  ref_order(sparse["pos"], 4 * own["radius"].max()))
    out = spatial_order(own)
    for k in own:
        np.testing.assert_array_equal(out[k], own[k][order])


# ---------------------------------------------------------------- carry
def random_batch(rng, keys_, active_fraction=0.5):
    b = ContactBatch(key=keys_)
    b.active[:] = rng.uniform(size=len(keys_)) < active_fraction
    b.state[:] = rng.normal(size=(len(keys_), NCOLS))
    return b


@pytest.mark.parametrize("sort_new", [True, False])
@pytest.mark.parametrize("sort_old", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_carry_from_equals_searchsorted_carry(seed, sort_new, sort_old):
    rng = np.random.default_rng(seed)
    universe = np.unique(rng.integers(0, 1 << 40, 6100))[:6000]      # distinct keys
    new_keys = rng.choice(universe, 3000, replace=False)
    old_keys = rng.choice(universe, 2500, replace=False)
    old_keys = np.concatenate([old_keys, old_keys[:40]])    # rows received twice (the
    # last one wins, in both)
    if sort_new:
        new_keys = np.sort(new_keys)
    if sort_old:
        old_keys = np.sort(old_keys, kind="stable")
    old = random_batch(rng, old_keys)
    a, b = ContactBatch(key=new_keys), ContactBatch(key=new_keys)
    a.state[:] = b.state[:] = 0.0
    ref_carry(a, old)
    b.carry_from(old)
    assert np.count_nonzero(a.active) > 100
    np.testing.assert_array_equal(b.active, a.active)
    assert b.state.tobytes() == a.state.tobytes()
    # pooled (state rows only for the active candidates), from a list of one row per
    # candidate, then from a pooled list
    act = a.active != 0
    c = ContactBatch(key=new_keys, pooled=True)
    c.carry_from(old)
    d = ContactBatch(key=new_keys, pooled=True)
    d.carry_from(c)
    for p in (c, d):
        np.testing.assert_array_equal(p.active, a.active)
        np.testing.assert_array_equal(p.slot >= 0, act)
        assert len(np.unique(p.slot[act])) == act.sum() == len(p.state) - p.n_free
        assert p.state[p.slot[act]].tobytes() == a.state[act].tobytes()


def test_pooled_carry_keeps_the_pool():
    """A pooled list carried into a pooled list passes on its pool (no second pool):
    the same array, its rows moved within it into the new list's order (the i-th
    carried candidate in row i, each row's values unchanged), every other row free (the
    lowest taken first); a pool over twice its contacts (+1024) is compacted instead."""
    rng = np.random.default_rng(3)
    keys_ = np.unique(rng.integers(0, 1 << 40, 5000))
    old = ContactBatch(key=keys_, pooled=True)
    old.pool(4000, 0)
    act = np.flatnonzero(rng.uniform(size=len(keys_)) < 0.5)
    old.active[act] = 1
    old.slot[act] = rng.permutation(4000)[:len(act)]       # rows scattered over the pool
    old.state[:] = rng.normal(size=old.state.shape)
    before, old_slot = old.state.copy(), old.slot.copy()
    new_keys = np.sort(rng.choice(keys_, 4000, replace=False))
    new = ContactBatch(key=new_keys, pooled=True)
    new.carry_from(old)
    assert new.state is old.state
    hit = np.isin(new_keys, keys_[act])
    np.testing.assert_array_equal(new.active != 0, hit)
    np.testing.assert_array_equal(new.slot[hit], np.arange(hit.sum()))
    np.testing.assert_array_equal(new.slot[~hit], -1)
    src = old_slot[act][np.isin(keys_[act], new_keys)]
    assert new.state[:hit.sum()].tobytes() == before[src].tobytes()
    np.testing.assert_array_equal(new.free[:new.n_free], np.arange(hit.sum(), 4000)[::-1])
    old.state[:] = before                  # the old list as it was, for the next case
    old.slot[:] = old_slot
    # few contacts in a large pool: compacted (a new pool, the rows copied)
    few = ContactBatch(key=new_keys, pooled=True)
    old.active[act[20:]] = 0
    few.carry_from(old)
    assert few.state is not old.state and len(few.state) < 1000
    k = few.active != 0
    assert k.sum() == np.isin(new_keys, keys_[act[:20]]).sum()
    src = old.slot[act[:20]][np.searchsorted(keys_[act[:20]], new_keys[k])]
    assert few.state[few.slot[k]].tobytes() == old.state[src].tobytes()


@pytest.mark.parametrize("layout", ["scattered", "packed", "reversed", "rotated", "empty"])
def test_pack_pool_moves_rows_into_candidate_order(layout):
    """rebuild.pack_pool against numpy fancy indexing: the i-th candidate with a row
    gets row i with its values, in place (chains ending in free rows, cycles); rows
    already in sequence are left alone."""
    rng = np.random.default_rng(7)
    cap, m = 300, 500
    has = np.flatnonzero(rng.uniform(size=m) < (0.0 if layout == "empty" else 0.4))
    rows = {"scattered": rng.permutation(cap)[:len(has)], "packed": np.arange(len(has)),
            "reversed": np.arange(len(has))[::-1],
            "rotated": (np.arange(len(has)) + 1) % max(1, len(has))}[
        "scattered" if layout == "empty" else layout]
    slot = np.full(m, -1, np.int32)
    slot[has] = rows
    state = rng.normal(size=(cap, NCOLS))
    expect = state[slot[has]].copy()
    free = np.zeros(cap, np.int32)
    before = slot.copy()
    # rotated: one row out of sequence, moved only when any is enough (one long cycle)
    moved = rebuild.pack_pool(state, slot, free, 0.0 if layout == "rotated" else 0.05)
    assert moved == (layout in ("scattered", "reversed", "rotated"))   # packed: as it was
    used = len(has)
    if not moved:
        np.testing.assert_array_equal(slot, before)
        assert state[:used].tobytes() == expect.tobytes()
        return
    np.testing.assert_array_equal(slot[has], np.arange(used))
    np.testing.assert_array_equal(np.delete(slot, has), -1)
    assert state[:used].tobytes() == expect.tobytes()
    np.testing.assert_array_equal(free[:cap - used], np.arange(used, cap)[::-1])


def test_carry_rows_last_of_equal_keys_wins():
    new = ContactBatch(key=np.array([5, 7, 9], np.int64))
    old = ContactBatch.from_rows(np.array([7, 7, 9, 11], np.int64), np.ones(4, np.int8),
                                 np.arange(4 * NCOLS, dtype=float).reshape(4, NCOLS))
    new.carry_from(old)
    np.testing.assert_array_equal(new.active, [0, 1, 1])
    np.testing.assert_array_equal(new.state[1], old.state[1])
    np.testing.assert_array_equal(new.state[2], old.state[2])
    assert not new.state[0].any()


# ---------------------------------------------------------------- ghosts
@pytest.mark.parametrize("periodic", [(True, True, False), (True, True, True),
                                      (False, True, False), (False, False, False)])
@pytest.mark.parametrize("seed", [0, 1])
def test_ghost_build_equals_record_build(seed, periodic):
    rng = np.random.default_rng(seed)
    lo, hi = np.array([0.0, -1.0, 2.0]), np.array([1.5, 0.5, 3.2])
    dom = pdem.Domain(lo, hi, periodic=periodic)
    dec = Decomposition(MPI.COMM_SELF, dom)
    own = random_fields(rng, 2000, lo, hi)
    cutoff = 0.17
    order = spatial_permutation(own)
    expected, swaps = ref_ghosts(dec, spatial_order(own), cutoff)
    gx = GhostExchange(dec)
    given = dict(own)
    got = gx.build(given, cutoff, order)
    assert not given            # emptied: its arrays were dropped as the fields were gathered
    assert set(got) == set(expected)
    for k in expected:
        assert got[k].dtype == expected[k].dtype
        assert got[k].flags.c_contiguous
        np.testing.assert_array_equal(got[k], expected[k])
    assert len(gx.swaps) == len(swaps)
    for (s1, *r1), (s2, *r2) in zip(gx.swaps, swaps):
        np.testing.assert_array_equal(s1, s2)
        assert r1 == r2
    if any(periodic):
        assert len(got["id"]) > len(own["id"])
    # the source row of every local particle: its fields come from that owned row
    src = gx.source
    assert np.all(src < gx.n_pool_owned)
    np.testing.assert_array_equal(got["id"], own["id"][src])
    # without an order: the owned rows as given
    plain = GhostExchange(dec).build(dict(own), cutoff)
    expected, _ = ref_ghosts(dec, own, cutoff)
    for k in expected:
        np.testing.assert_array_equal(plain[k], expected[k])


@pytest.mark.parametrize("dtype, cols", [(np.float64, (3,)), (np.int64, ()), (np.uint8, ())])
def test_pool_rows_equal_rows_of_the_concatenated_pool(dtype, cols):
    """A ghost build's pool kept as owned rows + received records gives the rows numpy
    gives from the two concatenated (the build's former pool)."""
    rng = np.random.default_rng(3)
    owned = rng.integers(0, 200, (50,) + cols).astype(dtype)
    received = rng.integers(0, 200, (20,) + cols).astype(dtype)
    pool = np.concatenate([owned, received])
    order = rng.permutation(50)
    for index in (rng.integers(0, 50, 30), rng.integers(0, 70, 40),        # owned only, both
                  np.r_[order, rng.integers(0, 70, 25)], order,            # a build's rows
                  np.zeros(0, np.int64)):
        for rec in (received, None) if np.all(index < 50) else (received,):
            got = PoolRows(index, 50).take(owned, rec)
            assert got.dtype == owned.dtype and got.flags.c_contiguous
            np.testing.assert_array_equal(got, pool[index])
    # a rank that owns nothing: every row is a received record
    index = rng.integers(0, 20, 15)
    got = PoolRows(index, 0).take(owned[:0], received)
    assert got.dtype == owned.dtype
    np.testing.assert_array_equal(got, received[index])


# ---------------------------------------------------------------- lost particles
@pytest.mark.parametrize("seed", range(3))
def test_outside_equals_numpy(seed):
    rng = np.random.default_rng(seed)
    lo, hi = np.array([0.0, -1.0, 2.0]), np.array([1.0, 1.0, 3.0])
    pos = rng.uniform(lo - 0.05, hi + 0.05, (4000, 3))
    pos[rng.integers(0, 4000, 5), rng.integers(0, 3, 5)] = lo[0]        # on the faces
    pos[rng.integers(0, 4000, 5), 2] = hi[2]
    for periodic in ((True, True, False), (False, True, True), (True, True, True)):
        p = pos.copy()
        if seed:
            p[rng.integers(1000, 4000, 3), rng.integers(0, 3, 3)] = [np.nan, np.inf, -np.inf]
        bad = np.flatnonzero(~np.all(np.isfinite(p), axis=1))
        out = np.zeros(len(p), bool)
        for axis in range(3):
            if not periodic[axis]:
                out |= (p[:, axis] < lo[axis]) | (p[:, axis] >= hi[axis])
        got = rebuild.outside(p, lo, hi, np.asarray(periodic, np.uint8))
        expected = (int(bad[0]) if len(bad) else -1,
                    int(np.flatnonzero(out)[0]) if out.any() else -1, int(out.sum()))
        assert got == expected


def _collisional_gas(steps, shuffled=False):
    """A dense periodic gas of 1,000 spheres: contacts form and open all the time, so the
    pair pool's rows leave candidate order between rebuilds. shuffled: ids in random
    order in space (else in lattice order)."""
    dom = pdem.Domain((0, 0, 0), (10.0, 10.0, 10.0), periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=2e-3, comm=MPI.COMM_SELF, threads=1)
    m = sim.material("m", density=1.0, kn=2000.0, friction=0.5, gamma_n=1.0)
    g = 0.5 + np.arange(10) * 1.0
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    rng = np.random.default_rng(5)
    if shuffled:
        pos = rng.permutation(pos)
    sim.add_spheres(pos, rng.uniform(0.48, 0.52, len(pos)), m,
                    velocities=rng.normal(0, 0.5, pos.shape))
    sim.run(steps=steps)
    return sim


def test_pool_packing_changes_no_result_and_happens(monkeypatch):
    """The same run with and without rebuild.pack_pool ends in the same state to the bit
    (which row holds a contact never enters a result), the packing did move rows, and
    right after a rebuild the pool is in candidate order."""
    from pdem.contact import store
    moved = []

    class Packing:
        def __getattr__(self, name):
            return getattr(rebuild, name)

        @staticmethod
        def pack_pool(*args):
            moved.append(rebuild.pack_pool(*args))
            return moved[-1]

    class NoPacking(Packing):
        @staticmethod
        def pack_pool(*args):
            return False

    monkeypatch.setattr(store, "_r", NoPacking())
    b = _collisional_gas(400)
    monkeypatch.setattr(store, "_r", Packing())
    a = _collisional_gas(400)
    assert a.n_rebuilds >= 4 and any(moved)
    pa, pb = a.particles(), b.particles()
    for k in pa:
        assert np.asarray(pa[k]).tobytes() == np.asarray(pb[k]).tobytes(), k
    ca, cb = a.contacts(), b.contacts()
    assert len(ca["id1"]) > 500
    for k in ca:
        assert np.asarray(ca[k]).tobytes() == np.asarray(cb[k]).tobytes(), k
    a._rebuild()                                        # a rebuild now: rows in order
    pool = a.interactions["pair"].batch
    rows = pool.slot[pool.slot >= 0]
    assert np.count_nonzero(np.diff(rows) != 1) <= 0.05 * len(rows)


# ---------------------------------------------------------------- pair list order
def ref_grid_keys(pos, ids, lo, hi, edge):
    """numpy: cells of edge `edge` (doubled while the grid has 2^32 cells or more),
    positions outside the box in the nearest cell, key = flat cell << 31 | id."""
    with np.errstate(over="ignore"):                   # a tiny edge: inf cells
        while np.prod(np.floor((hi - lo) / edge) + 1) >= 2.0 ** 32:
            edge *= 2
    dims = (np.floor((hi - lo) / edge) + 1).astype(np.int64)
    c = np.clip(np.floor((pos - lo) / edge), 0, dims - 1).astype(np.int64)
    return (((c[:, 0] * dims[1] + c[:, 1]) * dims[2] + c[:, 2]) << 31) | ids


@pytest.mark.parametrize("edge", [0.3, 1e-4, 1e-300])
def test_grid_keys_equal_numpy(edge):
    rng = np.random.default_rng(4)
    lo, hi = np.array([-1.0, 0.0, 2.0]), np.array([4.0, 3.0, 9.0])
    pos = rng.uniform(lo - 1.0, hi + 1.0, (5000, 3))        # some outside: nearest cell
    ids = rng.permutation(np.unique(rng.integers(0, 1 << 30, 5200))[:5000]).astype(np.int64)
    got = rebuild.grid_keys(pos, ids, lo, hi, edge)
    np.testing.assert_array_equal(got, ref_grid_keys(pos, ids, lo, hi, edge))
    assert np.all(got >= 0) and len(np.unique(got >> 31)) > 100


def test_pair_list_in_order_of_build_positions():
    """The live pair list (periodic gas, after rebuilds) is sorted by the (lower, higher)
    grid key of its two particles, computed here from the build positions, particle 1
    the lower id, and each particle's rows thus in ascending partner key."""
    sim = _collisional_gas(120, shuffled=True)
    assert sim.n_rebuilds >= 2
    st, dom = sim.store, sim.domain
    n = st.n_own
    key = dict(zip(st.id[:n], ref_grid_keys(sim.build_positions(), st.id[:n], dom.lo, dom.hi,
                                            2 * st.radius[:n].max())))
    b = sim.interactions["pair"].batch
    k1 = np.array([key[i] for i in st.id[b.i1]])
    k2 = np.array([key[i] for i in st.id[b.i2]])
    lo_, hi_ = np.minimum(k1, k2), np.maximum(k1, k2)
    assert len(b) > 2000 and np.count_nonzero(b.active) > 500
    assert np.all((lo_[1:] > lo_[:-1]) | ((lo_[1:] == lo_[:-1]) & (hi_[1:] > hi_[:-1])))
    assert np.all(st.id[b.i1] < st.id[b.i2])
    assert np.any(np.diff(b.key) < 0)                       # not the key order
