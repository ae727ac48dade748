"""The sphere-sphere kernel computes touching pairs in vector blocks (pyx/contacts.pyx):
a screening pass, one vectorized L6Geom loop per block of 16 pairs, then the law in
pair order. Each pair's arithmetic is that of one pair at a time (blocks=False), so both
must give the same bits -- contact rows, active flags, the worst overlap and the in-pass
force sums -- for pairs that form, persist, separate and turn by up to 150 degrees in
one step (the closed-form Slerp's series and square-root forms, and the quaternion
route beyond 90 degrees), across periodic images, with each L6Geom flag, with two
materials (one with rolling and twisting laws), and on 1 or 2 threads. The pooled
layout (state rows only for the pairs in contact, pdem.contact.store) gives the same
bits too, and the same rows on 1 and 2 threads."""
import numpy as np
import pytest

import pdem
from pdem._kernels import contacts as ck
from pdem.cell import fixed_cell
from pdem.contact.store import ContactBatch

L = 4.0                                     # box length (periodic images)


def rotation(axis, angle):
    """Rotation matrix about a unit axis (Rodrigues)."""
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def unit_rows(rng, m):
    v = rng.normal(size=(m, 3))
    return v / np.linalg.norm(v, axis=1)[:, None]


class PairScene:
    """m independent pairs (2i, 2i+1); particle 2i + 1 sits at offset d_i from 2i, shifted
    by whole box lengths through the periodic images when `periodic`."""

    def __init__(self, rng, m, periodic, pooled=False):
        sim = pdem.Simulation(pdem.Domain((0, 0, 0), (L, L, L)), dt=1e-3)
        sim.material("plain", density=1000.0, law="hooke", kn=1e4, kt=3e3, gamma_n=50.0,
                     gamma_t=25.0, friction=0.4)
        sim.material("rolling", density=3000.0, law="hooke", kn=2e4, kt=6e3, gamma_n=20.0,
                     gamma_t=10.0, friction=0.6, rolling_stiffness=0.5, rolling_friction=0.05,
                     twisting_stiffness=0.4, twisting_friction=0.05)
        self.table = np.ascontiguousarray(sim.materials.table())
        n = 2 * m
        self.radius = rng.uniform(0.05, 0.12, n)
        self.mass = 1000.0 * self.radius ** 3
        self.material = rng.integers(0, 2, n).astype(np.int32)
        self.i1 = np.arange(0, n, 2, dtype=np.int32)
        self.i2 = self.i1 + 1
        self.image = np.zeros((n, 3), np.int32)
        if periodic:
            self.image[1::2] = rng.integers(-1, 2, (m, 3))
        self.base = rng.uniform(0.5, L - 0.5, (m, 3))
        self.vel = rng.normal(0, 0.3, (n, 3))
        self.angvel = rng.normal(0, 5.0, (n, 3))
        self.active = np.zeros(m, np.int8)
        self.state = np.zeros((m, 27))
        self.pos = np.zeros((n, 3))
        self.pool = None
        if pooled:                  # an empty pool: the kernel grows it
            self.pool = ContactBatch(self.i1, self.i2, np.arange(m, dtype=np.int64), pooled=True)
            self.active = self.pool.active

    def place(self, offsets):
        """Particle 2i + 1 at base_i + offset_i, written through its periodic image."""
        self.pos[0::2] = self.base
        self.pos[1::2] = self.base + offsets - self.image[1::2] * L

    def step(self, blocks, flags, threads=1):
        """One kernel call; returns its worst overlap, the in-pass sums (1 thread) and
        the number of pairs in contact."""
        n = len(self.radius)
        f, t = np.zeros((n, 3)), np.zeros((n, 3))
        # every particle owned, adding to itself
        sums = (np.arange(n, dtype=np.int32), f, t) if threads == 1 else (None, None, None)
        pool = self.pool
        worst = ck.sphere_sphere(self.i1, self.i2, self.pos, self.image,
                                 fixed_cell(np.full(3, L)), self.vel,
                                 self.angvel, self.radius, self.mass, self.material, self.table,
                                 2, 1e-3, flags, self.active,
                                 self.state if pool is None else pool.state, threads, *sums,
                                 periodic=bool(self.image.any()), blocks=blocks, pool=pool)
        if pool is not None:        # the rows per pair, for comparisons (none: zero)
            self.state = np.where((pool.slot >= 0)[:, None], pool.state[pool.slot], 0.0)
        return worst, f, t, int(self.active.sum())


def three_steps(seed, blocks, flags, periodic, threads=1, pooled=False):
    """Formation; a turn of every pair by 0 to 150 degrees (some pairs separate); a
    small further move (the separated pairs form again). Returns every step's outputs
    and the turn angles of the frames in the second step."""
    rng = np.random.default_rng(seed)
    m = 300
    sc = PairScene(rng, m, periodic, pooled)
    rs = sc.radius[0::2] + sc.radius[1::2]
    d = unit_rows(rng, m) * (rs * rng.uniform(0.97, 1.01, m))[:, None]
    sc.place(d)
    out = [sc.step(blocks, flags, threads)]
    frames0 = sc.state[:, :9].reshape(-1, 3, 3).copy()
    angles = np.concatenate([rng.uniform(0, 1e-3, m // 3), rng.uniform(0.03, 1.2, m // 3),
                             rng.uniform(1.7, 2.6, m - 2 * (m // 3))])
    axes = unit_rows(rng, m)
    d = np.array([rotation(axes[k], angles[k]) @ d[k] for k in range(m)])
    d *= rng.uniform(0.985, 1.004, m)[:, None]
    sc.place(d)
    out.append(sc.step(blocks, flags, threads))
    frames1 = sc.state[:, :9].reshape(-1, 3, 3).copy()
    sc.place(d * 0.99)
    out.append(sc.step(blocks, flags, threads))
    cos_turn = 0.5 * (np.einsum("kij,kij->k", frames1, frames0) - 1.0)
    return out, sc, cos_turn


@pytest.mark.parametrize("periodic", [False, True])
@pytest.mark.parametrize("flags", [0, 16, 5, 10])
def test_blocks_same_bits_as_one_pair_at_a_time(flags, periodic):
    got, sc_b, cos_turn = three_steps(1, True, flags, periodic)
    ref, sc_1, _ = three_steps(1, False, flags, periodic)
    # the scene exercises what it should: contacts in every step, pairs that separate,
    # and frames turned beyond 90 degrees (cos < 0) next to small turns
    m = len(sc_b.active)
    in_contact = [out[3] for out in got]
    assert min(in_contact) > 0.5 * m and in_contact[1] < 0.9 * m
    if not flags & 4:           # APPROX_MID_TRSF: no Slerp at all
        assert (cos_turn < 0).sum() > 30 and (cos_turn > 0.999).sum() > 30
    for (wb, fb, tb, nb), (w1, f1, t1, n1) in zip(got, ref):
        assert wb == w1 and nb == n1
        assert np.array_equal(fb, f1) and np.array_equal(tb, t1)
    assert np.array_equal(sc_b.active, sc_1.active)
    assert np.array_equal(sc_b.state, sc_1.state)
    assert np.isfinite(sc_b.state).all()


@pytest.mark.parametrize("flags", [0, 16, 5, 10])     # 10: no renormalization: the series decides
def test_small_step_forms_and_their_fallback_match_the_exact_routine(flags):
    """Turns of 1e-7 to 0.3 rad in a step and slow spins: the blocks take the small-step
    forms alone (no square root or division) for the smaller turns and send the pairs
    beyond them (about 1e-4 rad for the unit vectors, 0.02 rad for the mid-step
    rotation's series) to the scalar route. Each pair's frame, u and phi must
    be those of the L6Geom routine with its exact forms (geometry_step, one pair per
    call) to the bit."""
    rng = np.random.default_rng(5)
    m = 300
    sc = PairScene(rng, m, False)
    sc.angvel *= 1e-3                       # spins turn a frame by ~5e-6 rad in a step
    rs = sc.radius[0::2] + sc.radius[1::2]
    d = unit_rows(rng, m) * (rs * rng.uniform(0.97, 0.995, m))[:, None]
    sc.place(d)
    sc.step(True, flags)
    before = sc.state.copy()
    angles = 10.0 ** rng.uniform(-7, -0.5, m)
    assert (angles < 3e-5).sum() > 50 and (angles > 0.03).sum() > 30
    assert ((angles > 3e-4) & (angles < 0.01)).sum() > 50
    axes = unit_rows(rng, m)
    sc.place(np.array([rotation(axes[k], angles[k]) @ d[k] for k in range(m)]))
    assert sc.step(True, flags)[3] == m
    col = ck.state_columns()
    x2 = sc.pos[1::2] - sc.pos[0::2]
    v, w = sc.vel, sc.angvel
    for k in range(m):
        T = before[k:k + 1, 0:9].copy()
        u = before[k:k + 1, col["u"][0]:col["u"][0] + 3].copy()
        phi = before[k:k + 1, col["phi"][0]:col["phi"][0] + 3].copy()
        ck.geometry_step(x2[k:k + 1].copy(), v[2 * k:2 * k + 1], v[2 * k + 1:2 * k + 2],
                         w[2 * k:2 * k + 1], w[2 * k + 1:2 * k + 2], sc.radius[2 * k],
                         sc.radius[2 * k + 1], 1e-3, flags, np.ones(1, np.int8), T, u, phi,
                         np.zeros((1, 3)), np.zeros((1, 3)))
        assert np.array_equal(sc.state[k, 0:9], T[0])
        assert np.array_equal(sc.state[k, col["u"][0]:col["u"][0] + 3], u[0])
        assert np.array_equal(sc.state[k, col["phi"][0]:col["phi"][0] + 3], phi[0])


def test_blocks_same_bits_on_two_threads():
    _, sc1, _ = three_steps(2, True, 0, True, threads=1)
    _, sc2, _ = three_steps(2, True, 0, True, threads=2)
    assert np.array_equal(sc1.active, sc2.active)
    assert np.array_equal(sc1.state, sc2.state)


@pytest.mark.parametrize("threads", [1, 3])
def test_non_finite_distance_is_reported_not_skipped(threads):
    """A NaN position must not screen a pair out as 'not touching': the kernel computes
    it and reports a non-finite overlap (Simulation then stops naming the particles).
    On 3 threads the NaN is in the first thread's range and deeper finite overlaps in
    the others': the NaN is still the one reported."""
    rng = np.random.default_rng(3)
    sc = PairScene(rng, 40, False)
    sc.place(unit_rows(rng, 40) * (sc.radius[0::2] + sc.radius[1::2])[:, None] * 0.99)
    sc.pos[17, 1] = np.nan                   # particle 17 = partner of pair 8
    (ratio, k), _, _, _ = sc.step(True, 0, threads)
    assert k == 8 and not np.isfinite(ratio)


@pytest.mark.parametrize("threads", [1, 2])
def test_pooled_rows_same_bits(threads):
    """State rows only for the pairs in contact: the same bits as one row per pair, the
    rows of separated pairs given back and taken again, the same rows on 1 and 2
    threads."""
    ref, sc_r, _ = three_steps(2, True, 0, True, threads)
    got, sc_p, _ = three_steps(2, True, 0, True, threads, pooled=True)
    one, sc_1, _ = three_steps(2, True, 0, True, 1, pooled=True)
    for (wp, fp, tp, n_p), (wr, fr, tr, nr) in zip(got, ref):
        assert wp == wr and n_p == nr
        assert np.array_equal(fp, fr) and np.array_equal(tp, tr)
    pool, act = sc_p.pool, sc_p.active != 0
    assert np.array_equal(sc_p.active, sc_r.active)
    assert np.array_equal(sc_p.state[act], sc_r.state[act])
    # a row for each pair in contact, and only for those; no row given twice
    assert np.array_equal(pool.slot >= 0, act)
    used = pool.slot[act]
    assert len(np.unique(used)) == act.sum()
    assert len(pool.state) - pool.n_free == act.sum()
    free = pool.free[:pool.n_free]
    assert len(np.intersect1d(free, used)) == 0 and len(np.unique(free)) == len(free)
    # pairs separated in the second step and formed again in the third
    assert got[1][3] < got[2][3]
    assert np.array_equal(pool.slot, sc_1.pool.slot)
    assert np.array_equal(pool.state, sc_1.pool.state)


def test_pairs_through_images_of_a_sheared_cell():
    """A pair's relative position is x_b - x_a + H (image_b - image_a) (H with an
    off-diagonal term; the screening takes a precomputed H 0 for pairs in the same
    image): the normal and the overlap of every forming pair, against numpy."""
    rng = np.random.default_rng(5)
    m = 200
    sc = PairScene(rng, m, True)
    sc.image[1::2][: m // 2] = 0                      # half the pairs in one image
    H = np.array([[L, 0.7, 0.0], [0.0, L, -0.3], [0.0, 0.0, L]])
    cell = np.ascontiguousarray(np.vstack([H, np.zeros((3, 3))]))
    rs = sc.radius[0::2] + sc.radius[1::2]
    d = unit_rows(rng, m) * (rs * rng.uniform(0.97, 0.999, m))[:, None]
    sc.pos[0::2] = sc.base
    sc.pos[1::2] = sc.base + d - sc.image[1::2] @ H.T
    ck.sphere_sphere(sc.i1, sc.i2, sc.pos, sc.image, cell, sc.vel, sc.angvel, sc.radius,
                     sc.mass, sc.material, sc.table, 2, 1e-3, 0, sc.active, sc.state, 1)
    x2 = sc.pos[1::2] - sc.pos[0::2] + (sc.image[1::2] - sc.image[0::2]) @ H.T
    dist = np.linalg.norm(x2, axis=1)
    assert sc.active.all()
    assert np.allclose(sc.state[:, 0:3], x2 / dist[:, None], rtol=0, atol=1e-13)
    assert np.allclose(sc.state[:, 9], dist - rs, rtol=0, atol=1e-13)


def test_rows_below_image_from_read_no_image():
    """image_from (the owned rows after a build, whose images are zero): a pair of two
    rows below it takes the shift H 0 without reading the images; a pair with either
    particle at or above it reads both. The same bits as image_from=0 (every pair reads
    its images), pairs whose particle 1 or particle 2 has the image included, against
    numpy; claiming too much (image_from past an imaged row) moves those pairs."""
    rng = np.random.default_rng(11)
    m = 240
    sc = PairScene(rng, m, True)
    sc.image[:] = 0
    third = m // 3
    sc.image[2 * np.arange(third, 2 * third) + 1] = rng.integers(1, 3, (third, 3))   # particle 2
    sc.image[2 * np.arange(2 * third, m)] = rng.integers(-2, 0, (m - 2 * third, 3))  # particle 1
    H = np.array([[L, 0.7, 0.0], [0.0, L, -0.3], [0.0, 0.0, L]])
    cell = np.ascontiguousarray(np.vstack([H, np.zeros((3, 3))]))
    rs = sc.radius[0::2] + sc.radius[1::2]
    d = unit_rows(rng, m) * (rs * rng.uniform(0.97, 0.999, m))[:, None]
    sc.pos[0::2] = sc.base
    sc.pos[1::2] = sc.base + d - (sc.image[1::2] - sc.image[0::2]) @ H.T
    # the rows with a zero image first, as after a build
    perm = np.argsort(sc.image.any(axis=1), kind="stable")
    new = np.empty_like(perm)
    new[perm] = np.arange(len(perm))
    n_zero = int(np.count_nonzero(~sc.image.any(axis=1)))
    part = [np.ascontiguousarray(a[perm]) for a in (sc.pos, sc.image, sc.vel, sc.angvel,
                                                      sc.radius, sc.mass, sc.material)]
    i1, i2 = new[sc.i1].astype(np.int32), new[sc.i2].astype(np.int32)

    def run(image_from):
        active, state = np.zeros(m, np.int8), np.zeros((m, 27))
        ck.sphere_sphere(i1, i2, part[0], part[1], cell, *part[2:], sc.table, 2, 1e-3, 0,
                         active, state, 1, image_from=image_from)
        return active, state

    a0, s0 = run(0)
    a1, s1 = run(n_zero)
    assert a0.all() and a1.all()
    assert s1.tobytes() == s0.tobytes()
    x2 = d
    dist = np.linalg.norm(x2, axis=1)
    assert np.allclose(s1[:, 0:3], x2 / dist[:, None], rtol=0, atol=1e-13)
    assert np.allclose(s1[:, 9], dist - rs, rtol=0, atol=1e-13)
    _, wrong = run(len(perm))       # every image ignored: the imaged pairs move
    moved = np.flatnonzero(np.any(wrong != s0, axis=1))
    assert set(moved) == set(range(third, m))



def plane_steps(blocks, flags, threads=1, one_law=False, energy=False):
    """Sphere-plane rows through sphere_plane: m spheres, each near one of 6 moving
    planes (the scene's two materials); formation, then the planes' normals turned by 0
    to 150 degrees (frames through every Slerp route; some rows separate), then a small
    move. Returns each step's worst overlap, sums and rows in contact, the final active
    flags and state, and the scene with its first step's rows. one_law: every row of the
    plain material (the law in the vector blocks); energy: with energy tracking (the
    scalar law)."""
    rng = np.random.default_rng(7)
    m = 300
    sc = PairScene(rng, m // 2, False)          # the scene's materials and particles
    if one_law:
        sc.material[:] = 0
    particle = np.arange(m, dtype=np.int32)
    plane = (particle % 6).astype(np.int32)
    point = rng.uniform(-1, 1, (6, 3))
    normal = unit_rows(rng, 6)
    pvel = rng.normal(0, 0.2, (6, 3))
    pmat = np.array([0, 0, 0, 0, 0, 0] if one_law else [0, 1, 0, 1, 0, 1], np.int32)
    gap = rng.uniform(0.97, 1.01, m)
    lateral = rng.normal(0, 1.0, (m, 3))
    vel, angvel = rng.normal(0, 0.3, (m, 3)), rng.normal(0, 5.0, (m, 3))
    active, state = np.zeros(m, np.int8), np.zeros((m, 27))
    out, scene = [], None
    for step in range(3):
        if step == 1:
            angles = np.array([1e-4, 0.02, 0.6, 1.2, 1.8, 2.6])   # radians
            normal = np.array([rotation(unit_rows(rng, 1)[0], a) @ v
                               for a, v in zip(angles, normal)])
            gap = gap * rng.uniform(0.985, 1.004, m)
        if step == 2:
            gap = gap * 0.99
        n = normal[plane]
        tang = lateral - np.einsum("ij,ij->i", lateral, n)[:, None] * n
        pos = point[plane] + tang + n * (sc.radius * gap)[:, None]
        f, t = np.zeros((m, 3)), np.zeros((m, 3))
        sums = (particle, f, t) if threads == 1 else ()
        worst = ck.sphere_plane(particle, plane, pos, vel, angvel, sc.radius, sc.mass,
                                sc.material, point, np.ascontiguousarray(normal), pvel, pmat,
                                sc.table, 2, 1e-3, flags, active, state, threads, *sums,
                                blocks=blocks, energy=np.zeros((m, 6)) if energy else None)
        out.append((worst, f, t, int(active.sum())))
        if step == 0:
            scene = dict(pos=pos.copy(), n=n, point=point[plane], state=state.copy(),
                         active=active.copy(), kn=sc.table[pmat[plane] * 2 + sc.material,
                                                           ck.law_columns()["kn0"]],
                         radius=sc.radius)
    return out, active, state, scene


@pytest.mark.parametrize("flags", [0, 16, 5, 10])
def test_plane_blocks_same_bits_as_one_row_at_a_time(flags):
    got, act_b, st_b, sc = plane_steps(True, flags)
    ref, act_1, st_1, _ = plane_steps(False, flags)
    m = len(act_b)
    assert min(o[3] for o in got) > 0.5 * m and got[1][3] < 0.9 * m
    for (wb, fb, tb, nb), (w1, f1, t1, n1) in zip(got, ref):
        assert wb == w1 and nb == n1
        assert np.array_equal(fb, f1) and np.array_equal(tb, t1)
    assert np.array_equal(act_b, act_1) and np.array_equal(st_b, st_1)
    assert np.isfinite(st_b).all()
    # independent of the kernel: a row that forms has no rates yet, so the force on the
    # sphere is the Hooke spring's, k_n (r - (x - x_plane) . n) along the plane's normal
    a = np.flatnonzero(sc["active"])
    n = sc["n"][a]
    overlap = sc["radius"][a] - np.einsum("ij,ij->i", sc["pos"][a] - sc["point"][a], n)
    assert len(a) > 100 and (overlap > 0).all()
    assert np.allclose(sc["state"][a, 21:24], n * (sc["kn"][a] * overlap)[:, None],
                       rtol=1e-12, atol=1e-9)


def test_plane_blocks_same_bits_on_two_threads():
    _, act1, st1, _ = plane_steps(True, 0, threads=1)
    _, act2, st2, _ = plane_steps(True, 0, threads=2)
    assert np.array_equal(act1, act2) and np.array_equal(st1, st2)


# The law in the block: blocks whose pairs all take one pair-table row of the Hooke +
# Coulomb law (no cohesion, rolling or twisting; energy tracking off) evaluate the law in
# the vector loop (laws.pxd law_hooke); energy tracking sends every pair through the
# scalar law_eval, whose forces do not depend on it: both must give the same bits.
LAW_MATERIALS = (("plain", dict(kn=1e4, kt=3e3, gamma_n=50.0, gamma_t=25.0, friction=0.4)),
                 ("frictionless", dict(kn=2e4, friction=0.0, restitution=0.6)),
                 ("limited", dict(kn=1.5e4, friction=0.8, restitution=0.3, limit_damping=True)),
                 ("rolling", dict(kn=2e4, kt=6e3, gamma_n=20.0, friction=0.6,
                                  rolling_stiffness=0.5, rolling_friction=0.05)))


def law_steps(energy, blocks=True, threads=1):
    """Formation, then two turns by 0 to 0.5 radians (every other pair slides fast:
    pairs stick and slip) on pairs whose materials come in runs of 40 pairs, cycling
    through (plain, plain), (frictionless, frictionless), (limited, limited), (plain,
    frictionless) and (plain, rolling): blocks of one plain row, blocks across two rows
    and blocks with a rolling law. energy: the scalar law for every pair. Returns each
    step's outputs, the final state, active flags and the pair table."""
    rng = np.random.default_rng(11)
    m = 400
    sc = PairScene(rng, m, True)
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (L, L, L)), dt=1e-3)
    for name, p in LAW_MATERIALS:
        sim.material(name, density=1000.0, law="hooke", **p)
    sc.table = np.ascontiguousarray(sim.materials.table())
    runs = np.array([(0, 0), (1, 1), (2, 2), (0, 1), (0, 3)], np.int32)
    sc.material = runs[(np.arange(m) // 40) % len(runs)].reshape(-1).astype(np.int32)
    sc.vel[1::4] *= 30.0            # every other pair slides fast enough to slip
    rs = sc.radius[0::2] + sc.radius[1::2]
    d = unit_rows(rng, m) * (rs * rng.uniform(0.97, 1.01, m))[:, None]
    angles = np.concatenate([rng.uniform(0, 1e-3, m // 2), rng.uniform(0.01, 0.5, m // 2)])
    axes = unit_rows(rng, m)
    moves = [d, np.array([rotation(axes[k], angles[k]) @ d[k] for k in range(m)])
             * rng.uniform(0.985, 1.004, m)[:, None]]
    moves.append(np.array([rotation(axes[k], angles[k]) @ moves[1][k] for k in range(m)]) * 0.99)
    out = []
    for d in moves:
        sc.place(d)
        f, t = np.zeros((2 * m, 3)), np.zeros((2 * m, 3))
        sums = (np.arange(2 * m, dtype=np.int32), f, t) if threads == 1 else (None,) * 3
        e = np.zeros((m, len(ck.energy_columns()) - 1)) if energy else None
        worst = ck.sphere_sphere(sc.i1, sc.i2, sc.pos, sc.image, fixed_cell(np.full(3, L)),
                                 sc.vel, sc.angvel, sc.radius, sc.mass, sc.material, sc.table,
                                 len(LAW_MATERIALS), 1e-3, 0, sc.active, sc.state, threads,
                                 *sums, periodic=True, blocks=blocks, energy=e)
        out.append((worst, f, t, int(sc.active.sum())))
    return out, sc.state, sc.active, sc.table, sc.material


@pytest.mark.parametrize("blocks, threads", [(True, 1), (False, 1), (True, 2)])
def test_block_law_same_bits_as_scalar_law(blocks, threads):
    got, st_v, act_v, table, material = law_steps(False, blocks, threads)
    ref, st_s, act_s, _, _ = law_steps(True, True, threads)
    for (wv, fv, tv, nv), (ws, fs, ts, ns) in zip(got, ref):
        assert wv == ws and nv == ns
        assert np.array_equal(fv, fs) and np.array_equal(tv, ts)
    assert np.array_equal(act_v, act_s) and np.array_equal(st_v, st_s)
    # the scene holds what the vector law must get right: in the last step, pairs of the
    # plain and limited rows that stick and that slip (|F_t| = mu F_n), and
    # frictionless pairs (F_t = 0), in contact since the first step
    a = np.flatnonzero(act_v)
    T = st_v[a, :9].reshape(-1, 3, 3)
    f = np.einsum("kij,kj->ki", T, st_v[a, 21:24])          # local force on particle 2
    ft = np.hypot(f[:, 1], f[:, 2])
    cols = ck.law_columns()
    row = material[2 * a] * len(LAW_MATERIALS) + material[2 * a + 1]
    mu = table[row, cols["mu"]]
    plain = np.isin(row, [0, 2 * len(LAW_MATERIALS) + 2])
    slip = plain & np.isclose(ft, mu * f[:, 0], rtol=1e-12, atol=0)
    stick = plain & (ft < 0.99 * mu * f[:, 0])
    assert slip.sum() > 20 and stick.sum() > 20
    frictionless = row == len(LAW_MATERIALS) + 1
    assert frictionless.sum() > 20
    assert np.all(ft[frictionless] <= 1e-12 * abs(f[frictionless, 0]))   # T F: round-off


@pytest.mark.parametrize("flags, threads", [(0, 1), (16, 1), (0, 2)])
def test_plane_block_law_same_bits_as_scalar_law(flags, threads):
    """Sphere-plane rows of one plain law: the law in the vector blocks (no energy
    tracking) against law_eval (energy tracking), the same bits."""
    got, act_v, st_v, _ = plane_steps(True, flags, threads, one_law=True)
    ref, act_s, st_s, _ = plane_steps(True, flags, threads, one_law=True, energy=True)
    for (wv, fv, tv, nv), (ws, fs, ts, ns) in zip(got, ref):
        assert wv == ws and nv == ns
        assert np.array_equal(fv, fs) and np.array_equal(tv, ts)
    assert np.array_equal(act_v, act_s) and np.array_equal(st_v, st_s)
    assert act_v.sum() > 100
