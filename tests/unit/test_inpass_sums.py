"""The contact kernels' in-pass sums (sphere_sphere / sphere_plane adding each contact
to its particles, the 1-thread path of Simulation) must add exactly what the separate
passes add, in the same order: bitwise the trajectories of `gather` (2 threads), here
with plane walls (test_dynamics covers a periodic scene without walls)."""
import numpy as np
import pytest

import pdem
from pdem._kernels import contacts as ck


def walled_bed(threads):
    """Frictional spheres of mixed sizes with spins on a floor in a walled box."""
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
    sim.add_spheres(pos, 1e-3 * rng.uniform(0.95, 1.2, len(pos)), m,
                    velocities=rng.normal(0, 0.05, pos.shape),
                    angular_velocities=rng.normal(0, 20, pos.shape))
    return sim


def test_inpass_sums_same_bits_as_gather():
    runs = []
    for threads in (1, 2):
        sim = walled_bed(threads)
        sim.run(steps=3000)
        runs.append((sim.particles(), sim.contacts(), sim.n_rebuilds))
    (p1, c1, nb1), (p2, c2, nb2) = runs
    assert len(c1["id1"]) > len(p1["id"]) // 2                # contacts, walls included
    assert (c1["kind"] == "plane").any()
    assert nb1 == nb2 and nb1 >= 1
    for key in ("position", "velocity", "angular_velocity", "force", "torque", "orientation"):
        assert np.array_equal(p1[key], p2[key]), key
    for key in ("id1", "id2", "force", "torque", "u", "phi", "u0", "phi0"):
        assert np.array_equal(c1[key], c2[key]), key


def test_inpass_sums_argument_checks():
    sim = walled_bed(1)
    sim.run(steps=1)
    st, table = sim.store, sim.materials.table()
    pairs = sim.interactions["pair"]
    b = pairs.batch
    args = (b.i1, b.i2, st.pos, st.image, sim.cell.kernel, st.vel, st.angvel,
            st.radius, st.mass, st.material, table, 1, sim.dt, sim.flags, b.active, b.state)
    f, t = st.force[:st.n_own], st.torque[:st.n_own]
    with pytest.raises(ValueError, match="single-threaded"):
        ck.sphere_sphere(*args, 2, pairs.owner1, pairs.owner2, f, t)
    with pytest.raises(ValueError, match="need all"):
        ck.sphere_sphere(*args, 1, pairs.owner1, None, f, t)
    with pytest.raises(ValueError, match="owner arrays"):
        ck.sphere_sphere(*args, 1, pairs.owner1[:-1], pairs.owner2, f, t)
