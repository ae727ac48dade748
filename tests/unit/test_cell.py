"""The deforming periodic cell (pdem/cell.py, docs/cell.md): tilted-cell lattice stress
against kn delta / a^2, an affine gas that stays affine under simple shear through
flips, a pair across the sheared boundary against the same pair inside the cell (seed
000's v~2), the energy balance of the cell work, the stress servo, flips keeping the
contacts and stress history, checkpoints, and the refusals."""
import numpy as np
import pytest

import pdem
from pdem.errors import InputError

KN, DELTA = 1.0e4, 1.0e-3


def tilted_lattice(n=4, r=0.5, tilts=(1, 2, -1)):
    """Simple-cubic lattice of spacing a = 2r - delta in a cell tilted by whole
    spacings (xy, xz, yz): the images are lattice points, so the stress is the fixed
    box's, kn delta / a^2 per axis (compression negative)."""
    a = 2 * r - DELTA
    dom = pdem.Domain((0, 0, 0), (n * a,) * 3, periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=1e-4)
    m = sim.material("m", density=1.0, kn=KN, friction=0.5)
    H = np.diag([n * a] * 3)
    H[0, 1], H[0, 2], H[1, 2] = (t * a for t in tilts)
    sim.cell.matrix = H
    g = (np.arange(n) + 0.5) * a
    x, y, z = np.meshgrid(g, g, g, indexing="ij")
    sim.add_spheres(np.column_stack([x.ravel(), y.ravel(), z.ravel()]), r, m)
    sim.run(steps=1)
    return sim, a


def test_tilted_cubic_lattice_stress_is_kn_delta_over_a_squared():
    sim, a = tilted_lattice()
    expected = -KN * DELTA / a ** 2
    s = sim.stress()
    assert np.allclose(np.diag(s), expected, rtol=1e-12, atol=0)
    assert np.max(np.abs(s - np.diag(np.diag(s)))) < 1e-12 * abs(expected)
    assert sim.fabric()["contacts"] == 3 * 64


def test_tilted_hexagonal_disks_stress_is_sqrt3_f_over_a():
    """2D hexagonal lattice (spacing a, rows h = a sqrt(3)/2 apart) in a cell tilted by
    one spacing: each disk has 6 contacts of force kn delta; sigma = -sqrt(3) kn delta /
    a on both axes per unit thickness (Love-Weber: 3 contacts per disk of area a h)."""
    r, nx, ny = 0.5, 6, 6
    a = 2 * r - DELTA
    h = a * np.sqrt(3) / 2
    dom = pdem.Domain((0, 0), (nx * a, ny * h), periodic=(True, True), dim=2)
    sim = pdem.Simulation(dom, dt=1e-4)
    m = sim.material("m", density=1.0, kn=KN, friction=0.5)
    sim.cell.matrix = [[nx * a, a], [0.0, ny * h]]
    i, j = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
    sim.add_spheres(np.column_stack([((i + 0.5 * (j % 2) + 0.25) * a).ravel(),
                                     ((j + 0.5) * h).ravel()]), r, m)
    sim.run(steps=1)
    s = sim.stress()
    expected = -np.sqrt(3) * KN * DELTA / a       # 3 f a / (2 a h) with f = kn delta
    assert np.allclose([s[0, 0], s[1, 1]], expected, rtol=1e-12, atol=0)
    assert abs(s[0, 1]) < 1e-12 * abs(expected)


def test_affine_gas_stays_affine_through_flips():
    """Spheres in layers of constant y (never touching: layers 3 r apart along y,
    spheres of one layer move together), at rest until L_xy = g is set: homoDeform puts
    them on v = L (x - lo) (simple shear); the fluctuation velocity stays exactly zero, x moves by g t y, and the
    cell flips each time the tilt passes half its length."""
    L, r, g = 6.0, 0.3, 2.0
    dom = pdem.Domain((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=1e-3)
    m = sim.material("m", density=1.0, kn=KN)
    xs = np.arange(0.5, L, 1.0)
    x, y, z = np.meshgrid(xs, np.arange(0.5, L, 1.0), xs, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    ids = sim.add_spheres(pos, r, m)
    sim.cell.velocity_gradient = [[0, g, 0], [0, 0, 0], [0, 0, 0]]
    steps = 1600                      # strain 3.2: flips at tilts 0.5, 1.5, 2.5 cell lengths
    sim.run(steps=steps)
    p = sim.particles()
    assert np.array_equal(p["id"], ids)
    assert sim.cell.n_flips == 3
    assert sim.interactions["pair"].batch.active.sum() == 0
    assert np.all(p["velocity"][:, 0] == g * p["position"][:, 1])
    assert np.all(p["velocity"][:, 1:] == 0.0)
    assert np.all(sim.stress() == 0.0)
    expected_x = np.mod(pos[:, 0] + g * steps * 1e-3 * pos[:, 1], L)
    dx = np.abs(p["position"][:, 0] - expected_x)
    assert np.all(np.minimum(dx, L - dx) < 1e-9)
    assert abs(sim.cell.matrix[0, 1] - (g * steps * 1e-3 * L - 3 * L)) < 1e-9
    assert np.allclose(sim.cell.strain[0, 1], 0.5 * g * steps * 1e-3, rtol=1e-12)


def test_affine_disks_stay_affine_in_2d():
    """2D: the xy block of L (2x2); rows of disks 1 apart along y, radius 0.3, shear
    g = 2 to strain 1.2: exact affine velocities, one flip."""
    L, g = 6.0, 2.0
    dom = pdem.Domain((0, 0), (L, L), periodic=(True, True), dim=2)
    sim = pdem.Simulation(dom, dt=1e-3)
    m = sim.material("m", density=1.0, kn=KN)
    x, y = np.meshgrid(np.arange(0.5, L, 1.0), np.arange(0.5, L, 1.0), indexing="ij")
    sim.add_spheres(np.column_stack([x.ravel(), y.ravel()]), 0.3, m)
    sim.cell.velocity_gradient = [[0, g], [0, 0]]
    sim.run(steps=600)
    p = sim.particles()
    assert sim.cell.n_flips == 1 and sim.interactions["pair"].batch.active.sum() == 0
    assert np.all(p["velocity"][:, 0] == g * p["position"][:, 1])
    assert np.all(p["velocity"][:, 1:] == 0.0)
    assert np.all(sim.stress() == 0.0)


def pair_history(a_pos, steps=300, g=0.8, ellipsoids=False):
    """Two frictional spheres in contact in a cell under simple shear L_xy = g, started on
    the same fluctuation velocities (setting L adds the affine field at their wrapped
    positions): u, phi and force of their contact every step."""
    dom = pdem.Domain((0, 0, 0), (6.0, 6.0, 6.0), periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=2e-4)
    m = sim.material("m", density=100.0, kn=KN, friction=0.9)
    d = np.array([-0.6, 1.6, 0.5])              # L d . d < 0: the pair is pressed
    d *= 1.99 / np.linalg.norm(d)
    pos = np.array([a_pos, a_pos + d])
    kw = dict(velocities=[[0.0, 0.0, 0.0], [0.1, -0.05, 0.02]],
              angular_velocities=[[0, 0, 1.0], [0.5, 0, 0]])
    if ellipsoids:
        sim.add_ellipsoids(np.mod(pos, 6.0), [[1.05, 1.0, 0.95]] * 2, m, **kw)
    else:
        sim.add_spheres(np.mod(pos, 6.0), 1.0, m, **kw)
    sim.cell.velocity_gradient = [[0, g, 0], [0, 0, 0], [0, 0, 0]]
    out = []
    for _ in range(steps):
        sim.step()
        c = sim.contacts()
        assert len(c["id1"]) == 1
        out.append(np.concatenate([c["u"][0], c["phi"][0], c["force"][0]]))
    return np.array(out), sim


@pytest.mark.parametrize("ellipsoids", [False, True])
def test_pair_across_sheared_boundary_equals_pair_inside_cell(ellipsoids):
    """Seed 000's v~2: the pair straddling the y faces (its image shifted by the tilting
    cell vector, moving at L H e_y) has the history of the same pair in the middle
    (spheres, and ellipsoids through their own kernel)."""
    inside, _ = pair_history(np.array([2.0, 1.5, 2.0]), ellipsoids=ellipsoids)
    across, sim = pair_history(np.array([2.0, 5.2, 2.0]), ellipsoids=ellipsoids)
    assert sim.n_rebuilds > 1 and sim.cell.matrix[0, 1] > 0.04 * 6
    scale = np.abs(inside).max(axis=0)
    assert np.all(np.abs(across - inside) <= 1e-9 * scale + 1e-15)
    assert np.abs(inside[-1, 1:3]).max() > 1e-4       # a tangential history built up


def test_energy_balance_of_cell_work():
    """Elastic, undamped, no sliding (friction 1e4): the work V sigma : L dt done on the
    cell under simple shear equals the change of elastic energy (F_n^2 / 2 kn +
    |F_t|^2 / 2 kt per contact) plus the kinetic energy of the fluctuations
    (translation v - L x and rotation), within 2e-4 of the work (measured: 2.6e-5)."""
    r, n = 0.5, 4
    a = 2 * r - 0.01
    dom = pdem.Domain((0, 0, 0), (n * a,) * 3, periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=5e-5)
    kt = 0.5 * KN
    m = sim.material("m", density=1.0, kn=KN, kt=kt, friction=1e4)
    rng = np.random.default_rng(3)
    g = (np.arange(n) + 0.5) * a
    x, y, z = np.meshgrid(g, g, g, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()]) + rng.uniform(-2e-3, 2e-3, (n ** 3, 3))
    sim.add_spheres(pos, r, m)

    def energy():
        c = sim.contacts()
        ft = c["force"] - np.sum(c["force"] * c["normal"], axis=1)[:, None] * c["normal"]
        fn2 = np.sum(c["force"] ** 2, axis=1) - np.sum(ft * ft, axis=1)
        p = sim.particles()
        L = sim.cell.velocity_gradient
        v = p["velocity"] - p["position"] @ L.T
        mass = 4.0 / 3.0 * np.pi * r ** 3
        kin = 0.5 * mass * np.sum(v * v) + 0.5 * 0.4 * mass * r * r * np.sum(p["angular_velocity"] ** 2)
        return np.sum(fn2) / (2 * KN) + np.sum(ft * ft) / (2 * kt) + kin

    sim.cell.velocity_gradient = np.zeros((3, 3))
    sim.run(steps=1)
    e0, w0 = energy(), sim.cell.work
    sim.cell.velocity_gradient = [[0, 2.0, 0], [0, 0, 0], [0, 0, 0]]
    sim.run(steps=1000)           # shear strain 0.1 (y neighbours part at 0.14)
    assert len(sim.contacts()["id1"]) == 192
    sim.cell.velocity_gradient = np.zeros((3, 3))
    sim.run(steps=1)
    work = sim.cell.work - w0
    assert work > 0
    assert abs(energy() - e0 - work) < 2e-4 * work, (energy() - e0, work)


def test_servo_reaches_target_pressure():
    """Isotropic stress control of a damped cubic lattice: the cell shrinks until
    sigma = -p on every axis (1 %), and the lattice stress is then kn delta' / a'^2
    with a' the cell length / 4 (the lattice follows the cell affinely)."""
    sim, a = tilted_lattice(tilts=(0, 0, 0))
    sim.material("d", density=1.0, kn=KN, restitution=0.3)
    ids = sim.particles()["id"]
    sim.set_material(ids, "d")
    p = 3.0 * KN * DELTA / a ** 2
    sim.cell.control(stress={"xx": -p, "yy": -p, "zz": -p}, max_rate=1.0)
    sim.run(steps=3000)
    s = sim.stress()
    assert np.allclose(np.diag(s), -p, rtol=1e-2)
    a2 = sim.cell.matrix[0, 0] / 4
    assert np.allclose(np.diag(s), -KN * (1.0 - a2) / a2 ** 2, rtol=1e-2)


def frictional_gas(n_side=5, seed=2, flips=True, comm=None, rate=5.0):
    L = n_side * 1.1
    dom = pdem.Domain((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=2e-4, comm=comm)
    m = sim.material("m", density=1.0, kn=KN, friction=0.5, restitution=0.5)
    rng = np.random.default_rng(seed)
    g = (np.arange(n_side) + 0.5) * 1.1
    x, y, z = np.meshgrid(g, g, g, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()]) + rng.uniform(-0.02, 0.02, (n_side ** 3, 3))
    sim.add_spheres(pos, rng.uniform(0.5, 0.56, len(pos)), m,
                    velocities=rng.normal(0, 0.3, (len(pos), 3)))
    sim.cell.flips = flips
    if rate:
        sim.cell.velocity_gradient = [[0, rate, 0], [0, 0, 0], [0, 0, 0]]
    return sim


def test_flips_keep_contacts_and_stress_history():
    """The same sheared frictional gas with and without flips (strain 1: one flip):
    every contact (u, phi, force) and the stress history agree to 1e-8."""
    hist = []
    for flips in (True, False):
        sim = frictional_gas(flips=flips)
        stress = []
        for _ in range(10):
            sim.run(steps=100)
            stress.append(sim.stress())
        hist.append((sim, np.array(stress), sim.contacts()))
    (s1, h1, c1), (s2, h2, c2) = hist
    assert s1.cell.n_flips == 1 and s2.cell.n_flips == 0
    assert np.array_equal(c1["id1"], c2["id1"]) and np.array_equal(c1["id2"], c2["id2"])
    assert len(c1["id1"]) > 20
    scale = np.abs(h1).max()
    assert np.abs(h1 - h2).max() < 1e-8 * scale
    for k in ("u", "phi", "force"):
        assert np.abs(c1[k] - c2[k]).max() <= 1e-8 * np.abs(c1[k]).max()


def test_checkpoint_restart_is_bitwise(tmp_path):
    sim = frictional_gas()
    sim.cell.control(stress={"yy": -1.0}, strain_rate={"xy": 5.0}, max_rate=2.0)
    sim.run(steps=400)
    sim.checkpoint(str(tmp_path / "c.h5"))
    sim.run(steps=300)
    again = pdem.restart(str(tmp_path / "c.h5"))
    again.run(steps=300)
    a, b = sim.particles(), again.particles()
    for k in ("position", "velocity", "angular_velocity", "force"):
        assert np.array_equal(a[k], b[k]), k
    assert np.array_equal(sim.cell.matrix, again.cell.matrix)
    assert np.array_equal(sim.cell.velocity_gradient, again.cell.velocity_gradient)
    assert sim.cell.work == again.cell.work and sim.cell.n_flips == again.cell.n_flips


def test_refusals():
    dom = pdem.Domain((0, 0, 0), (6, 6, 6), periodic=(True, True, False))
    sim = pdem.Simulation(dom, dt=1e-4)
    with pytest.raises(InputError, match=r"velocity_gradient\[1\]\[0\]"):
        sim.cell.velocity_gradient = [[0, 0, 0], [1.0, 0, 0], [0, 0, 0]]
    with pytest.raises(InputError, match=r"velocity_gradient\[0\]\[2\].*periodic"):
        sim.cell.velocity_gradient = [[0, 0, 1.0], [0, 0, 0], [0, 0, 0]]
    with pytest.raises(InputError, match="max_rate"):
        sim.cell.control(stress={"xx": -1.0})
    with pytest.raises(InputError, match="component 'xq'"):
        sim.cell.control(strain_rate={"xq": 1.0})
    assert not sim.cell.deforming
    sim.cell.velocity_gradient = [[0, 1.0, 0], [0, 0, 0], [0, 0, 0]]
    with pytest.raises(InputError, match="add_insertion 'insertion': insertions are not"):
        sim.add_insertion(None, "m", 0.1)


def test_series_holds_cell_and_stress(tmp_path):
    """The HDF5 time series of a deforming cell: H, L, the stress and the work per row,
    the same numbers as the simulation's at those steps; the frames and XDMF hold the
    cell's faces."""
    import h5py
    from pdem.io import ResultFile
    sim = frictional_gas(n_side=4)
    seen = []
    with ResultFile(str(tmp_path / "r.h5"), sim, every=100, series_every=50) as rf:
        for _ in range(4):
            rf.run(steps=50)
            seen.append((sim.cell.matrix.copy(), sim.cell.last_stress.copy(), sim.cell.work))
    with h5py.File(str(tmp_path / "r.h5"), "r") as f:
        s = f["series"]
        assert s["cell_matrix"].shape == (4, 3, 3)
        for k, (H, sigma, work) in enumerate(seen):
            assert np.array_equal(s["cell_matrix"][k], H)
            assert np.array_equal(s["cell_stress"][k], sigma)
            assert s["cell_work"][k] == work
        assert s["cell_velocity_gradient"][0, 0, 1] == 5.0
        # each frame (every 100 steps) holds the cell's faces: corners lo + H (i, j, k)
        vertices = f["frames/000001/cell/vertices"][...]
        H = seen[3][0]
        assert np.allclose(vertices[7], H.sum(axis=1), rtol=1e-14)
        assert np.allclose(vertices[2], H[:, 1], rtol=1e-14)
    xdmf = (tmp_path / "r.xdmf").read_text()
    assert '<Grid Name="cell" GridType="Collection"' in xdmf and "cell_000001" in xdmf


def test_series_of_a_cell_that_starts_deforming_later(tmp_path):
    """Series rows written before the cell deforms hold the fixed box (H = diag of the
    domain's lengths, L = 0, work 0, stress not computed: NaN); the rows after, the
    deforming cell's values; the other columns go on."""
    import h5py
    from pdem.io import ResultFile
    sim = frictional_gas(n_side=4, rate=None)
    box = np.diag(sim.domain.length)
    with ResultFile(str(tmp_path / "r.h5"), sim, series_every=50, series_buffer=1) as rf:
        rf.run(steps=100)
        sim.cell.velocity_gradient = [[0, 5.0, 0], [0, 0, 0], [0, 0, 0]]
        rf.run(steps=100)
        last = (sim.cell.matrix.copy(), sim.cell.last_stress.copy(), sim.cell.work)
    with h5py.File(str(tmp_path / "r.h5"), "r") as f:
        s = f["series"]
        assert list(s["step"][...]) == [50, 100, 150, 200]
        assert s["cell_matrix"].shape == s["cell_stress"].shape == (4, 3, 3)
        for k in (0, 1):
            assert np.array_equal(s["cell_matrix"][k], box)
            assert not np.any(s["cell_velocity_gradient"][k])
            assert np.all(np.isnan(s["cell_stress"][k])) and s["cell_work"][k] == 0.0
        assert s["cell_velocity_gradient"][2, 0, 1] == 5.0
        assert np.array_equal(s["cell_matrix"][3], last[0])
        assert np.array_equal(s["cell_stress"][3], last[1]) and s["cell_work"][3] == last[2]
        assert s["cell_matrix"][3, 0, 1] > 0.0                  # sheared: xy tilt grew
