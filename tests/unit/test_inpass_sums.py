"""The contact kernels' in-pass sums (sphere_sphere / sphere_plane adding each contact
to its particles) must add exactly what the separate passes (`scatter`, `gather`) add,
in the same order: the same bits on 1, 2 and 3 threads, where each particle is added to
by one thread and those with rows on two threads after the kernel (split_owners), here
with plane walls (test_dynamics covers a periodic scene without walls)."""
import numpy as np
import pytest

import pdem
from pdem._kernels import contacts as ck


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
        ck.sphere_sphere(*args, 1, pairs.owner1, None, f, t)
    with pytest.raises(ValueError, match="owner arrays"):
        ck.sphere_sphere(*args, 1, pairs.owner1[:-1], pairs.owner2, f, t)
