"""The contact kernels' in-pass sums (sphere_sphere / sphere_plane adding each contact
to its particles) must add exactly what the separate passes (`scatter`, `gather`) add,
in the same order: the same bits on 1, 2 and 3 threads, where each particle is added to
by one thread and those with rows on two threads after the kernel (split_owners), here
with plane walls (test_dynamics covers a periodic scene without walls)."""
import numpy as np
import pytest

import pdem
from pdem._kernels import contacts as ck
from pdem.contact.kinds import NO_ROWS


def walled_bed(threads, shuffle=False):
    """Frictional spheres of mixed sizes with spins on a floor in a walled box (shuffle:
    ids in random order in space, so that most particles have rows on several threads)."""
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (0.02, 0.02, 0.05)), dt=1e-5,
                          gravity=(0, 0, -9.81), threads=threads)
    m = sim.material("g", density=2500, law="hooke", kn=200.0, kt=200.0 * 2 / 7, gamma_n=7000.0,
                     gamma_t=3500.0, friction=0.5)
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)), ((0.02, 0, 0), (-1, 0, 0)),
                          ((0, 0, 0), (0, 1, 0)), ((0, 0.02, 0), (0, -1, 0))):
        sim.add_plane(point, normal, m)
    rng = np.random.default_rng(5)
    g = (np.arange(8) + 0.5) * 0.0024
    x, y, z = np.meshgrid(g, g, g[:5], indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    pos[:, :2] += rng.uniform(-0.1, 0.1, (len(pos), 2)) * 1e-3
    if shuffle:
        pos = pos[np.random.default_rng(2).permutation(len(pos))]
    sim.add_spheres(pos, 1e-3 * rng.uniform(0.95, 1.2, len(pos)), m,
                    velocities=rng.normal(0, 0.05, pos.shape),
                    angular_velocities=rng.normal(0, 20, pos.shape))
    return sim


@pytest.mark.parametrize("shuffle", [False, True])
def test_inpass_sums_same_bits_on_threads(shuffle):
    runs = []
    for threads in (1, 2, 3):
        sim = walled_bed(threads, shuffle)
        sim.run(steps=3000)
        runs.append((sim.particles(), sim.contacts(), sim.n_rebuilds))
    (p1, c1, nb1) = runs[0]
    assert len(c1["id1"]) > len(p1["id"]) // 2                # contacts, walls included
    assert (c1["kind"] == "plane").any()
    for p2, c2, nb2 in runs[1:]:
        assert nb1 == nb2 and nb1 >= 1
        for key in ("position", "velocity", "angular_velocity", "force", "torque",
                    "orientation"):
            assert np.array_equal(p1[key], p2[key]), key
        for key in ("id1", "id2", "force", "torque", "u", "phi", "u0", "phi0"):
            assert np.array_equal(c1[key], c2[key]), key


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_split_owners(threads):
    """Each particle goes to the kernel's owners when all its rows lie in one thread's
    range [m t / T, m (t + 1) / T) (no two threads add to it), else to the shared ones:
    checked against the thread ranges computed here."""
    rng = np.random.default_rng(threads)
    n, m = 50, 400
    o1 = np.sort(rng.integers(0, n, m)).astype(np.int32)        # rows by particle 1
    o2 = np.minimum(o1 + rng.integers(1, 4, m), n - 1).astype(np.int32)
    far = rng.random(m) < 0.05                                   # some partners far away
    o2[far] = rng.integers(0, n, far.sum())
    o1[rng.random(m) < 0.1] = -1                                 # not owned here
    o2[rng.random(m) < 0.1] = -1
    thread = np.searchsorted([m * t // threads for t in range(1, threads)], np.arange(m),
                             side="right")
    homes = [set() for _ in range(n)]
    for k in range(m):
        for p in (o1[k], o2[k]):
            if p >= 0:
                homes[p].add(thread[k])
    alone = np.array([len(h) == 1 for h in homes])
    in1, in2, sh1, sh2 = ck.split_owners(o1, o2, n, threads)
    for own, inp, sh in ((o1, in1, sh1), (o2, in2, sh2)):
        ok = own >= 0
        assert np.array_equal(inp[ok], np.where(alone[own[ok]], own[ok], -1))
        assert np.array_equal(sh[ok], np.where(alone[own[ok]], -1, own[ok]))
        assert (inp[~ok] == -1).all() and (sh[~ok] == -1).all()
    assert alone.any() and not alone.all()
    w_in, w_sh = ck.split_owners(o1, None, n, threads)
    assert ((w_in >= 0) | (w_sh >= 0) | (o1 < 0)).all() and not ((w_in >= 0) & (w_sh >= 0)).any()


def test_inpass_sums_argument_checks():
    sim = walled_bed(1)
    sim.run(steps=1)
    st, table = sim.store, sim.materials.table()
    pairs = sim.interactions["pair"]
    b = pairs.batch
    args = (b.i1, b.i2, st.pos, st.image, sim.cell.kernel, st.vel, st.angvel,
            st.radius, st.mass, st.material, table, 1, sim.dt, sim.flags, b.active, b.state)
    f, t = st.force[:st.n_own], st.torque[:st.n_own]
    with pytest.raises(ValueError, match="need all"):
        ck.sphere_sphere(*args, 1, pairs.owner, None, t)
    with pytest.raises(ValueError, match="owner: %d entries for %d" % (st.n - 1, st.n)):
        ck.sphere_sphere(*args, 1, pairs.owner[:-1], f, t)


@pytest.mark.parametrize("periodic", [False, True])
def test_inpass_pair_sums_equal_scatter(periodic):
    """The pair kernel's in-pass sums, which read the owner of each local particle
    (Build.owner: a periodic image's is its owned particle's), add exactly what `scatter`
    adds from the per-row owners owner1 = owner[i1], owner2 = owner[i2], in the same
    order: the same bits."""
    if periodic:
        sim = pdem.Simulation(pdem.Domain((0, 0, 0), (0.012, 0.012, 0.012), periodic=(True,) * 3),
                              dt=1e-5)
        m = sim.material("g", density=2500, law="hooke", kn=200.0, kt=60.0, gamma_n=7000.0,
                         friction=0.5)
        rng = np.random.default_rng(3)
        g = (np.arange(5) + 0.5) * 0.0024
        pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
        sim.add_spheres(pos + rng.uniform(-2e-4, 2e-4, pos.shape), 1.25e-3, m,
                        velocities=rng.normal(0, 0.05, pos.shape),
                        angular_velocities=rng.normal(0, 20, pos.shape))
    else:
        sim = walled_bed(1, shuffle=True)
    sim.run(steps=200)
    st, table, pairs = sim.store, sim.materials.table(), sim.interactions["pair"]
    b = pairs.batch
    assert np.count_nonzero(b.active) > 20
    if periodic:
        assert (b.i2 >= st.n_own).any() and (pairs.owner2[b.i2 >= st.n_own] >= 0).all()
    sums = []
    for inpass in (True, False):
        state, active, slot = b.state.copy(), b.active.copy(), b.slot.copy()
        pool = type("Pool", (), dict(state=state, slot=slot, free=b.free.copy(), n_free=b.n_free))
        f, t = np.zeros((st.n_own, 3)), np.zeros((st.n_own, 3))
        args = (b.i1, b.i2, st.pos, st.image, sim.cell.kernel, st.vel, st.angvel, st.radius,
                st.mass, st.material, table, 1, sim.dt, sim.flags, active, state, 1)
        if inpass:
            ck.sphere_sphere(*args, pairs.owner, f, t, pool=pool, image_from=pairs.image_from)
        else:
            ck.sphere_sphere(*args, pool=pool, image_from=pairs.image_from)
            ck.scatter(pairs.owner1, pairs.owner2, active, pool.state, *NO_ROWS, st.radius,
                       sim.lever_flags, f, t, False, pool.slot)
        sums.append((f, t))
    assert np.abs(sums[0][0]).max() > 0
    for a, c in zip(*sums):
        assert a.tobytes() == c.tobytes()
