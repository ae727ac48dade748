"""Particle DDA (pdem.DDA, docs/dda.md): the matrix-free product against a sparse
matrix assembled here from Shi's contact sub-matrices, closed forms of free fall, a
block and a disk on an incline, a column's contact forces, the penetration tolerance,
restarts and bad input."""
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import pdem
from pdem.dda.scheme import Operator
from pdem.errors import InputError, SimulationError

G = 9.81


def skew(a):
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


def compliance(E, nu, dim):
    """The compliance in Voigt order (xx, yy, zz, yz, zx, xy), engineering shears: its
    inverse is the elasticity matrix (2D: plane stress on xx, yy, xy)."""
    S = np.zeros((6, 6))
    idx = [0, 1, 2] if dim == 3 else [0, 1]
    for a in idx:
        for b in idx:
            S[a, b] = 1.0 / E if a == b else -nu / E
    for k in ([3, 4, 5] if dim == 3 else [5]):
        S[k, k] = 2.0 * (1.0 + nu) / E
    return S


def tmat(a, nd):
    """u(a) = T(a) d, d = (t, theta) or (t, theta, exx, eyy, ezz, gyz, gzx, gxy) (nd = 12):
    Shi's first-order displacement function at the branch vector a."""
    T = np.zeros((3, nd))
    T[:, :3] = np.eye(3)
    T[:, 3:6] = -skew(a)
    for k, (i, j) in enumerate([(0, 0), (1, 1), (2, 2), (1, 2), (2, 0), (0, 1)][:nd - 6]):
        eps = np.zeros((3, 3))
        eps[i, j] = eps[j, i] = 1.0 if i == j else 0.5
        T[:, 6 + k] = eps @ a
    return T


def packing_operator(young=None, poisson=0.25, **options):
    """A random packing of 60 spheres on a plane, one blocked dof, its assembled DDA
    operator and the same operator assembled by scipy (below); returns (sim, op, A
    (rows in id order), order (store rows in id order), rng). Deformable (rigid=False
    in options): 12 dofs per particle, the mass matrix int rho T^T T (translation m,
    rotation 2/5 m r^2, strains m r^2 / 5 on the normal strains, m r^2 / 10 on the
    engineering shears) and the elastic block V S^-1 (S: the compliance)."""
    rng = np.random.default_rng(3)
    n, r, dt, kn, ks = 60, 0.05, 1e-3, 3e6, 1e6
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (0.6, 0.6, 0.6)), dt, gravity=(0, 0, -G),
                          scheme=pdem.DDA(penalty=kn, shear_penalty=ks, **options))
    sim.material("m", 2500.0, friction=10.0, young=young, poisson=poisson)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    pos = rng.uniform(0.06, 0.54, (n, 3))
    pos[:, 2] = rng.uniform(0.04, 0.3, n)
    radii = r * rng.uniform(0.8, 1.2, n)
    ids = sim.add_spheres(pos, radii, "m")
    sim.block(ids[7], ["y", "rz"])
    sim.rebuild()
    op = Operator(sim, sim.scheme)
    op.assemble()
    st = sim.store
    nd = sim.scheme.nd

    # the same operator, assembled globally in the test (rows in id order)
    order = np.argsort(st.id[:st.n])
    p, rad = st.pos[order], st.radius[order]
    mass, inertia = st.mass[order], st.inertia[order]
    rows, cols, vals = [], [], []

    def add(bi, bj, block):
        ii, jj = np.meshgrid(np.arange(nd) + nd * bi, np.arange(nd) + nd * bj, indexing="ij")
        rows.append(ii.ravel()), cols.append(jj.ravel()), vals.append(block.ravel())

    contacts = 0
    for i in range(n):
        J = mass[i] * rad[i] ** 2 / 5
        M = np.diag([mass[i]] * 3 + [inertia[i]] * 3 + [J] * 3 + [J / 2] * 3)[:nd, :nd]
        block = 2 * M / dt ** 2
        if nd == 12:
            block[6:, 6:] += 4 / 3 * math.pi * rad[i] ** 3 * np.linalg.inv(
                compliance(young, poisson, 3))
        add(i, i, block)
        for j in range(n):
            d = p[i] - p[j]
            dist = np.linalg.norm(d)
            if i == j or dist >= rad[i] + rad[j]:
                continue
            nrm = d / dist                               # from j to i
            S = kn * np.outer(nrm, nrm) + ks * (np.eye(3) - np.outer(nrm, nrm))
            D = np.hstack([tmat(-rad[i] * nrm, nd), -tmat(rad[j] * nrm, nd)])  # Delta = D [x_i; x_j]
            K = D.T @ S @ D
            add(i, i, K[:nd, :nd])       # each pair twice (i, j) and (j, i): half each
            add(i, j, K[:nd, nd:])
            contacts += 1
        if p[i, 2] < rad[i]:                             # the plane z = 0
            nrm = np.array([0, 0, 1.0])
            S = kn * np.outer(nrm, nrm) + ks * (np.eye(3) - np.outer(nrm, nrm))
            Gi = tmat(-rad[i] * nrm, nd)
            add(i, i, Gi.T @ S @ Gi)
            contacts += 1
    K = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(nd * n, nd * n)).tocsr()
    free = np.ones(nd * n)
    k = int(np.flatnonzero(st.id[order] == ids[7])[0])
    free[[nd * k + 1, nd * k + 5]] = 0.0
    P = sp.diags(free)
    A = P @ K @ P + sp.diags(1.0 - free)
    assert contacts > 2 * n                              # a packing with many contacts
    return sim, op, A, order, rng


def test_matrix_free_product_equals_assembled_matrix():
    """A x of the per-particle rows equals K x with K assembled by scipy from every
    overlapping pair and plane contact (stick: S = k_n n n^T + k_s (I - n n^T),
    u(contact point) = translation + rotation x branch), inertia 2 M / dt^2 and a
    blocked dof (identity row and column), on a random packing."""
    assert_product_equals(*packing_operator())


def assert_product_equals(sim, op, A, order, rng):
    """The matrix-free A x equals the scipy matrix's product, 1e-12 relative."""
    x = rng.standard_normal((sim.store.n, sim.scheme.nd))
    y = np.zeros_like(x)
    op.matvec(x, y)
    expected = A @ x[order].ravel()
    got = y[order].ravel()
    assert np.linalg.norm(got - expected) <= 1e-12 * np.linalg.norm(expected)


def run_free_fall(dim):
    v0 = (1.0, 2.0, 3.0)[:dim]
    g = (0.5, -G, 0.0) if dim == 2 else (0.5, 0.3, -G)
    dom = pdem.Domain((-50,) * dim, (50,) * dim, dim=dim)
    sim = pdem.Simulation(dom, 1e-2, gravity=g, scheme=pdem.DDA(penalty=1e6))
    sim.material("m", 1000.0)
    sim.add_spheres([(0.5,) * dim], 0.1, "m", velocities=[v0])
    sim.run(137)
    p = sim.particles()
    t = sim.time
    expected = 0.5 + np.array(v0) * t + 0.5 * np.array(g[:dim]) * t * t
    assert np.allclose(p["position"][0, :dim], expected, rtol=1e-13, atol=0)
    assert np.allclose(p["velocity"][0, :dim], np.array(v0) + np.array(g[:dim]) * t,
                       rtol=1e-12, atol=0)


def test_free_fall_is_exact():
    """Shi's step is exact for a constant acceleration: x0 + v0 t + g t^2 / 2."""
    run_free_fall(2)
    run_free_fall(3)


def incline(theta, mu, lock, steps=200, dt=1e-3, kn=1e8):
    """A disk (radius 0.1, 2D) on a plane inclined by theta under gravity, starting at
    rest with the static overlap m g cos(theta) / k_n; returns (distance down the
    slope, time, angular velocity, speed)."""
    r, rho = 0.1, 1000.0
    sim = pdem.Simulation(pdem.Domain((-5, -5), (5, 5), dim=2), dt, gravity=(0, -G, 0),
                          scheme=pdem.DDA(penalty=kn))
    sim.material("m", rho, friction=mu)
    nrm = np.array([-math.sin(theta), math.cos(theta), 0.0])
    sim.add_plane((0, 0, 0), nrm, "m")
    m = rho * math.pi * r * r
    ids = sim.add_spheres([tuple(nrm[:2] * (r - m * G * math.cos(theta) / kn))], r, "m")
    if lock:
        sim.block(ids, "rz")
    x0 = sim.particles()["position"][0].copy()
    sim.run(steps)
    p = sim.particles()
    down = np.array([-math.cos(theta), -math.sin(theta), 0.0])
    return ((p["position"][0] - x0) @ down, sim.time, p["angular_velocity"][0, 2],
            np.linalg.norm(p["velocity"][0]), m)


@pytest.mark.parametrize("mu", [0.3, 0.7])
def test_block_on_incline(mu):
    """Rotation locked: d = g (sin th - cos th tan phi) t^2 / 2 when tan phi < tan th,
    else at rest (the shear spring's compliance m g sin th / k_s only)."""
    th, kn = math.radians(30), 1e8
    d, t, w, speed, m = incline(th, mu, lock=True, kn=kn)
    if mu < math.tan(th):
        assert d == pytest.approx(G * (math.sin(th) - math.cos(th) * mu) * t * t / 2, rel=1e-12)
    else:
        assert 0 <= d <= 2 * m * G * math.sin(th) / kn
        assert speed < 1e-6


@pytest.mark.parametrize("mu", [0.3, 0.1])
def test_disk_rolls_or_slips(mu):
    """A free disk rolls without slip (a = 2/3 g sin th, omega = v / r) when tan th <=
    3 mu, else slips with a = g (sin th - mu cos th)."""
    th = math.radians(30)
    d, t, w, speed, m = incline(th, mu, lock=False)
    if math.tan(th) <= 3 * mu:
        assert d == pytest.approx(2 / 3 * G * math.sin(th) * t * t / 2, rel=1e-4)
        assert w * 0.1 == pytest.approx(speed, rel=1e-4)
    else:
        assert d == pytest.approx(G * (math.sin(th) - mu * math.cos(th)) * t * t / 2,
                                  rel=1e-12)
        # the friction torque mu m g cos th r over I = m r^2 / 2
        assert w == pytest.approx(2 * mu * G * math.cos(th) / 0.1 * t, rel=1e-12)


def test_column_carries_the_weight_above():
    """A column of spheres on a plane (quasi-static, dynamic=0): each contact carries
    the weight of the spheres above it."""
    r, rho, n = 0.05, 2000.0, 6
    sim = pdem.Simulation(pdem.Domain((-1, -1, -0.5), (1, 1, 2)), 1e-2, gravity=(0, 0, -G),
                          scheme=pdem.DDA(penalty=1e7, dynamic=0.0))
    sim.material("m", rho, friction=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    sim.add_spheres([(0, 0, r + 2 * r * k) for k in range(n)], r, "m")
    sim.run(50)
    c = sim.contacts()
    m = rho * 4 / 3 * math.pi * r ** 3
    below = np.where(c["kind"] == "plane", -1, c["id1"])      # the body under id2
    assert np.all(below == c["id2"] - 1)
    np.testing.assert_allclose(c["force"][:, 2], m * G * (n - c["id2"]), rtol=1e-9)
    np.testing.assert_allclose(c["force"][:, :2], 0.0, atol=1e-9)


def drop(tol=None, kn=1e8, threads=1, young=None, **kwargs):
    rng = np.random.default_rng(5)
    sim = pdem.Simulation(pdem.Domain((0, 0), (1, 2), dim=2), 2e-3, gravity=(0, -G, 0),
                          threads=threads,
                          scheme=pdem.DDA(penalty=kn, tol=tol, **kwargs))
    sim.material("m", 2000.0, friction=0.4, young=young)
    for point, normal in (((0, 0), (0, 1)), ((0, 0), (1, 0)), ((1, 0), (-1, 0))):
        sim.add_plane(point + (0,), normal + (0,), "m")
    gx, gy = np.meshgrid(np.linspace(0.1, 0.9, 5), np.linspace(0.1, 0.9, 5))
    pos = np.column_stack([gx.ravel(), gy.ravel()]) + rng.uniform(-0.01, 0.01, (25, 2))
    sim.add_spheres(pos, rng.uniform(0.07, 0.09, 25), "m")
    return sim


def test_penetration_below_tolerance_every_step():
    """A pile settling: after every step no closed contact overlaps more than tol; a
    penalty far too soft stops the run naming the contact."""
    sim = drop(tol=1e-3)
    deepest = 0.0
    for _ in range(60):
        sim.step()
        c = sim.contacts()
        deepest = max(deepest, float(-c["u"][:, 0].min()) if len(c["u"]) else 0.0)
    assert 0 < deepest <= 1e-3
    assert sim.scheme.total_open_close >= 60
    soft = drop(tol=1e-3, kn=1e5)
    with pytest.raises(SimulationError, match="DDA: overlap of .* above tol"):
        soft.run(60)


def test_restart_continues_bit_for_bit(tmp_path):
    """Velocities and contact states (open, stick, slide, shear elongation) survive a
    checkpoint: the restarted run has the same bits."""
    a = drop()
    a.run(30)
    a.checkpoint(str(tmp_path / "c.h5"))
    a.run(20)
    b = pdem.restart(str(tmp_path / "c.h5"))
    assert isinstance(b.scheme, pdem.DDA) and b.scheme.penalty == 1e8
    b.run(20)
    pa, pb = a.particles(), b.particles()
    for k in ("position", "velocity", "angular_velocity"):
        assert np.array_equal(pa[k], pb[k]), k


def test_same_bits_on_any_thread_count():
    runs = []
    for threads in (1, 2):
        sim = drop(threads=threads)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pdem.DDAWarning)
            sim.run(40)
        runs.append((sim.particles(), sim.contacts(), sim.scheme.total_cg))
    for k in ("position", "velocity", "angular_velocity"):
        assert np.array_equal(runs[0][0][k], runs[1][0][k]), k
    assert np.array_equal(runs[0][1]["force"], runs[1][1]["force"])
    assert runs[0][2] == runs[1][2]


def test_open_close_cap_warns():
    sim = drop(max_open_close=1)
    with pytest.warns(pdem.DDAWarning, match="open-close iteration not converged"):
        sim.run(30)


@pytest.mark.parametrize("kwargs, match", [
    ({}, "DDA: penalty"),
    ({"penalty": 1e6, "rigid": None}, "DDA: rigid must be True or False"),
    ({"penalty": 1e6, "dynamic": 1.5}, "DDA: dynamic"),
    ({"penalty": -1.0}, "DDA: penalty"),
])
def test_bad_input(kwargs, match):
    with pytest.raises(InputError, match=match):
        pdem.DDA(**kwargs)


def test_sgs_preconditioner_is_symmetric_gauss_seidel_in_colour_order():
    """preconditioner="sgs": no two particles in contact share a colour, and z = M^-1 r
    with M = (D + L) D^-1 (D + U), D the diagonal blocks and L (U) the blocks below
    (above) the diagonal once the rows are sorted by colour, all from the scipy
    matrix of the packing."""
    sim, op, A, order, rng = packing_operator(preconditioner="sgs")
    st = sim.store
    r = rng.standard_normal((st.n, 6))
    z = np.zeros_like(r)
    op.precondition(r, z)
    colour = op.colour[:st.n, 0][order].astype(int)
    A = A.toarray()
    n = len(colour)
    block = np.abs(A).reshape(n, 6, n, 6).sum(axis=(1, 3)) > 0
    np.fill_diagonal(block, False)
    assert block.any() and not np.any(block & (colour[:, None] == colour[None, :]))
    dof_colour = np.repeat(colour, 6)
    same = np.repeat(np.repeat(np.eye(n, dtype=bool), 6, 0), 6, 1)
    D = np.where(same, A, 0.0)
    L = np.where(dof_colour[:, None] > dof_colour[None, :], A, 0.0)
    U = np.where(dof_colour[:, None] < dof_colour[None, :], A, 0.0)
    M = (D + L) @ np.linalg.solve(D, D + U)
    expected = np.linalg.solve(M, r[order].ravel())
    got = z[order].ravel()
    assert np.linalg.norm(got - expected) <= 1e-12 * np.linalg.norm(expected)
    assert len(op.colour_rows) >= 4


def test_sgs_preconditioner_reaches_the_jacobi_solution_in_fewer_iterations():
    """A triangular stack of 45 disks on a fixed row (quasi-static, dt 25 x the
    explicit critical step): the same settled positions (to 1e-9 of a radius) with
    fewer CG iterations."""
    r, kn = 0.01, 1e7
    m = 2500.0 * math.pi * r * r
    runs = []
    for pc in ("jacobi", "sgs"):
        sim = pdem.Simulation(pdem.Domain((-0.2, -r), (0.2, 0.3), dim=2),
                              25 * 2 * math.sqrt(0.5 * m / kn), gravity=(0, -G, 0),
                              skin=0.2 * r, scheme=pdem.DDA(penalty=kn, shear_penalty=0.4 * kn,
                                                            dynamic=0.0, preconditioner=pc))
        sim.material("m", 2500.0, friction=0.5)
        pts = [((k - (9 - row) / 2 + 0.5) * 2 * r, r + row * math.sqrt(3) * r)
               for row in range(10) for k in range(10 - row)]
        ids = sim.add_spheres(np.array(pts), r, "m")
        sim.block(ids[:10], ["x", "y", "rz"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pdem.DDAWarning)
            sim.run(10)
        runs.append((sim.particles()["position"], sim.scheme.total_cg))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=0, atol=1e-9 * r)
    assert runs[1][1] < 0.8 * runs[0][1]
