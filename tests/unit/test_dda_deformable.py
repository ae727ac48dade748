"""Deformable particle DDA (pdem.DDA(rigid=False), docs/dda.md): uniaxial compression
against Hooke's law (the stress from the contact forces, the strain from the
compliance), the matrix-free product with strain dofs against a scipy matrix built
here from Shi's first-order displacement function, free fall, the rigid limit, a
restart and bad input."""
import math
import warnings

import numpy as np
import pytest

import pdem
from pdem.errors import InputError
from pdem.io import ResultFile

from test_dda import assert_product_equals, compliance, drop, packing_operator

G = 9.81


def squeeze(dim, E=1e7, nu=0.3, r=0.1, delta=1e-4, kn=1e9, steps=12, dt=1e-2, axis=0):
    """A disk (sphere) of radius r between two frictionless fixed planes normal to
    `axis`, 2 (r - delta) apart, quasi-static (dynamic=0), no gravity."""
    dom = pdem.Domain((-1,) * dim, (1,) * dim, dim=dim)
    sim = pdem.Simulation(dom, dt, gravity=(0, 0, 0),
                          scheme=pdem.DDA(penalty=kn, rigid=False, dynamic=0.0))
    sim.material("m", 1000.0, young=E, poisson=nu, friction=0.0)
    e = np.eye(3)[axis]
    sim.add_plane(tuple(-(r - delta) * e), tuple(e), "m")
    sim.add_plane(tuple((r - delta) * e), tuple(-e), "m")
    sim.add_spheres([(0.0,) * dim], r, "m")
    sim.run(steps)
    return sim


@pytest.mark.parametrize("dim, axis", [(2, 0), (2, 1), (3, 0), (3, 2)])
def test_uniaxial_compression_follows_hooke(dim, axis):
    """Squeezed between two planes: the stress is the contact forces' average stress
    sigma = -2 F r / V along the axis (zero otherwise), the strain sigma / E along it
    and the Poisson contraction -nu sigma / E across (2D: plane stress), to 1e-10; the
    deformed radius closes the gap up to the penalty spring, r (1 + eps) = r - delta +
    F / k_n."""
    E, nu, r, delta, kn = 1e7, 0.3, 0.1, 1e-4, 1e9
    sim = squeeze(dim, E, nu, r, delta, kn, axis=axis)
    p, c = sim.particles(), sim.contacts()
    F = np.linalg.norm(c["force"], axis=1)
    assert len(F) == 2 and F[0] == pytest.approx(F[1], rel=1e-12) and F[0] > 0
    V = math.pi * r * r if dim == 2 else 4.0 / 3.0 * math.pi * r ** 3
    s_axis = -2.0 * F[0] * r / V
    expected_stress = np.zeros(6)
    expected_stress[axis] = s_axis
    scale = abs(s_axis)
    np.testing.assert_allclose(p["stress"][0], expected_stress, rtol=0, atol=1e-10 * scale)
    strain = p["strain"][0]
    plane = [0, 1, 2] if dim == 3 else [0, 1]
    for k in range(6):
        if k == axis:
            want = s_axis / E
        elif k in plane:
            want = -nu * s_axis / E
        else:
            want = 0.0
        assert strain[k] == pytest.approx(want, rel=1e-10, abs=1e-10 * abs(s_axis / E))
    assert r * (1 + strain[axis]) == pytest.approx(r - delta + F[0] / kn, rel=1e-12)
    np.testing.assert_array_equal(p["position"][0], 0.0)


def test_matrix_free_product_with_strain_dofs_equals_assembled_matrix():
    """A x of the per-particle 12 x 12 rows equals K x with K assembled by scipy from
    every overlapping pair and plane contact with T(a) = [I, -[a]x, E(a)] (E(a) eps =
    eps a), the inertia of int rho T^T T, the elastic block V S^-1 (S: the compliance)
    and a blocked dof (test_dda.packing_operator)."""
    assert_product_equals(*packing_operator(young=5e6, poisson=0.2, rigid=False))


@pytest.mark.parametrize("dim", [2, 3])
def test_free_fall_is_exact_and_unstrained(dim):
    v0 = (1.0, 2.0, 3.0)[:dim]
    g = (0.5, -G, 0.0) if dim == 2 else (0.5, 0.3, -G)
    sim = pdem.Simulation(pdem.Domain((-50,) * dim, (50,) * dim, dim=dim), 1e-2, gravity=g,
                          scheme=pdem.DDA(penalty=1e6, rigid=False))
    sim.material("m", 1000.0, young=1e6)
    sim.add_spheres([(0.5,) * dim], 0.1, "m", velocities=[v0])
    sim.run(137)
    p, t = sim.particles(), sim.time
    expected = 0.5 + np.array(v0) * t + 0.5 * np.array(g[:dim]) * t * t
    assert np.allclose(p["position"][0, :dim], expected, rtol=1e-13, atol=0)
    assert np.allclose(p["velocity"][0, :dim], np.array(v0) + np.array(g[:dim]) * t,
                       rtol=1e-12, atol=0)
    assert np.all(p["strain"] == 0) and np.all(p["stress"] == 0)


def column(rigid, E=None, n=6, r=0.05, rho=2000.0, steps=40):
    sim = pdem.Simulation(pdem.Domain((-1, -1, -0.5), (1, 1, 2)), 1e-2, gravity=(0, 0, -G),
                          scheme=pdem.DDA(penalty=1e7, dynamic=0.0, rigid=rigid))
    sim.material("m", rho, friction=0.5, young=E)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    sim.add_spheres([(0, 0, r + 2 * r * k) for k in range(n)], r, "m")
    sim.run(steps)
    return sim


def test_very_stiff_particles_reproduce_rigid_dda():
    """A column of spheres: with E = 2e7 k_n / r the deformable run is the rigid one up
    to the particles' own compression; each sphere
    carries the weight above it, its vertical stress is that of the two contact
    forces (sigma_zz = -(F_below + F_above) r / V) and E sigma_zz its strain."""
    n, r, rho = 6, 0.05, 2000.0
    rigid, soft = column(True), column(False, E=1e13)
    a, b = rigid.particles(), soft.particles()
    # heights: the rigid ones lowered by the compression of the spheres below and half
    # of its own, r eps_zz each (first order)
    ez = b["strain"][:, 2]
    shift = r * (np.cumsum(2 * ez) - ez)
    assert np.all(shift < 0)
    np.testing.assert_allclose(b["position"][:, 2] - a["position"][:, 2], shift, rtol=1e-5)
    np.testing.assert_array_equal(b["position"][:, :2], 0.0)
    np.testing.assert_allclose(soft.contacts()["force"], rigid.contacts()["force"],
                               rtol=1e-6)
    m = rho * 4 / 3 * math.pi * r ** 3
    V = 4 / 3 * math.pi * r ** 3
    above = m * G * (n - 1 - np.arange(n))            # the force from the sphere above
    below = above + m * G
    np.testing.assert_allclose(b["stress"][:, 2], -(above + below) * r / V, rtol=1e-9)
    np.testing.assert_allclose(b["strain"][:, 2] * 1e13, b["stress"][:, 2]
                               - 0.25 * (b["stress"][:, 0] + b["stress"][:, 1]), rtol=1e-9)


def test_restart_continues_bit_for_bit(tmp_path):
    """Strains, stresses and strain rates travel in the checkpoint."""
    def pile():
        return drop(rigid=False, young=1e8)
    a = pile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pdem.DDAWarning)
        a.run(20)
        a.checkpoint(str(tmp_path / "c.h5"))
        a.run(15)
        b = pdem.restart(str(tmp_path / "c.h5"))
        b.run(15)
    pa, pb = a.particles(), b.particles()
    assert np.any(pa["stress"] != 0)
    for k in ("position", "velocity", "angular_velocity", "strain", "stress"):
        assert np.array_equal(pa[k], pb[k]), k


def test_strain_fields_only_in_deformable_runs(tmp_path):
    """Other runs hold no strain fields (no memory, migration or ghost traffic), refuse
    them as output, and their checkpoints restart without them."""
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), 1e-4)
    sim.material("m", 1000.0, kn=1e3)
    sim.add_spheres([(0.5, 0.5, 0.5)], 0.1, "m")
    assert not {"strain", "stress", "strain_rate"} & set(sim.store.f)
    assert "strain" not in sim.particles()
    with pytest.raises(pdem.InputError, match="strain"):
        ResultFile(str(tmp_path / "r.h5"), sim, fields=["position", "strain"])
    sim.checkpoint(str(tmp_path / "c.h5"))
    assert not {"strain", "stress", "strain_rate"} & set(pdem.restart(str(tmp_path / "c.h5")).store.f)


def test_strain_and_stress_frames(tmp_path):
    """A deformable run writes its strain and stress fields to the HDF5 frames."""
    import h5py
    sim = drop(rigid=False, young=1e8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pdem.DDAWarning)
        sim.run(10)
        with ResultFile(str(tmp_path / "r.h5"), sim,
                                fields=["position", "strain", "stress"]) as rf:
            rf.write_frame()
    p = sim.particles()
    assert np.any(p["stress"] != 0)
    with h5py.File(tmp_path / "r.h5", "r") as f:
        g = f["frames/000000/particles"]
        order = np.argsort(g["id"][()])
        for k in ("strain", "stress"):
            assert np.array_equal(g[k][()][order], p[k]), k


def test_bad_input():
    with pytest.raises(InputError, match="DDA: rigid must be True or False, got 'no'"):
        pdem.DDA(penalty=1e6, rigid="no")
    sim = pdem.Simulation(pdem.Domain((0, 0), (1, 1), dim=2), 1e-3,
                          scheme=pdem.DDA(penalty=1e6, rigid=False))
    sim.material("sand", 1000.0)
    sim.material("wall", 1000.0)                # a wall's material needs no modulus
    sim.add_plane((0, 0, 0), (0, 1, 0), "wall")
    sim.add_spheres([(0.5, 0.5)], 0.1, "sand")
    with pytest.raises(InputError, match="material 'sand' needs young"):
        sim.step()
    ok = pdem.Simulation(pdem.Domain((0, 0), (1, 1), dim=2), 1e-3,
                         scheme=pdem.DDA(penalty=1e6, rigid=False))
    ok.material("rubber", 1000.0, young=1e6)
    ok.material("wall", 1000.0)
    ok.add_plane((0, 0, 0), (0, 1, 0), "wall")
    ok.add_spheres([(0.5, 0.0999)], 0.1, "rubber")
    ok.run(3)
    assert ok.contacts()["force"][0, 1] > 0 and ok.particles()["stress"][0, 1] < 0


@pytest.mark.parametrize("preconditioner", ["jacobi", "sgs"])
def test_same_bits_on_any_thread_count(preconditioner):
    runs = []
    for threads in (1, 2):
        sim = drop(rigid=False, young=1e8, threads=threads, preconditioner=preconditioner)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pdem.DDAWarning)
            sim.run(30)
        runs.append(sim.particles())
    for k in ("position", "velocity", "angular_velocity", "strain", "stress"):
        assert np.array_equal(runs[0][k], runs[1][k]), k


def test_strain_and_stress_turn_with_the_particle():
    """The large-rotation correction: the end-of-step strain and stress are the
    predicted ones plus the increment, turned by the exact rotation of the step's
    theta: R T R^T with R from scipy (engineering shears for the strain)."""
    from scipy.spatial.transform import Rotation
    from pdem._kernels import dda as _k
    rng = np.random.default_rng(8)
    n, dt = 5, 0.1
    pred = rng.standard_normal((n, 12))
    pred_stress = rng.standard_normal((n, 6))
    x = rng.standard_normal((n, 12))
    theta = rng.standard_normal((n, 3))
    C = np.linalg.inv(compliance(2.0, 0.3, 3))
    elastic = np.tile(C.ravel(), (n, 1))
    mask = np.ones((n, 12))
    strain, stress, rate = (np.empty((n, 6)) for _ in range(3))
    _k.strain_update(pred, pred_stress, x, theta, elastic, mask, dt, 0.5, strain, stress,
                     rate, n, 1)

    def tensor(v, shear):
        return np.array([[v[0], v[5] / shear, v[4] / shear], [v[5] / shear, v[1], v[3] / shear],
                         [v[4] / shear, v[3] / shear, v[2]]])
    for p in range(n):
        R = Rotation.from_rotvec(theta[p]).as_matrix()
        e = R @ tensor(pred[p, :6] + x[p, 6:], 2.0) @ R.T
        s = R @ tensor(pred_stress[p] + C @ x[p, 6:], 1.0) @ R.T
        np.testing.assert_allclose(tensor(strain[p], 2.0), e, rtol=0, atol=1e-13)
        np.testing.assert_allclose(tensor(stress[p], 1.0), s, rtol=0, atol=1e-12)
        np.testing.assert_allclose(rate[p], 0.5 * (pred[p, 6:] + 2 * x[p, 6:] / dt),
                                   rtol=1e-14)


@pytest.mark.parametrize("dim", [2, 3])
def test_free_particle_vibrates_as_shi_step_of_its_strain_modes(dim):
    """A free particle given a strain rate: its strains follow Shi's constant-
    acceleration step (2 M / dt^2 + K) d = 2 M v0 / dt - K x0, v1 = 2 d / dt - v0
    applied in the test to the linear system of the strain modes, M = J diag(1, 1, 1,
    1/2, 1/2, 1/2) (J = m r^2 / 5 sphere, m r^2 / 4 disk), K = V S^-1 from the
    compliance: the mass matrix and the elastic sub-matrix of the strain dofs in a
    dynamic run (strain and stress to 1e-10 of their amplitude)."""
    E, nu, rho, r, dt, steps = 1e6, 0.3, 1000.0, 0.1, 2e-4, 60
    sim = pdem.Simulation(pdem.Domain((-1,) * dim, (1,) * dim, dim=dim), dt, gravity=(0, 0, 0),
                          scheme=pdem.DDA(penalty=1e6, rigid=False))
    sim.material("m", rho, young=E, poisson=nu)
    sim.add_spheres([(0.0,) * dim], r, "m")
    free = [0, 1, 2, 3, 4, 5] if dim == 3 else [0, 1, 5]
    rate0 = np.zeros(6)
    rate0[free] = np.array([3.0, -1.0, 2.0, 1.5, -2.5, 0.5])[:len(free)]
    sim.store.strain_rate[0] = rate0
    sim.run(steps)
    m = rho * (4 / 3 * math.pi * r ** 3 if dim == 3 else math.pi * r * r)
    V = m / rho
    J = m * r * r / (5 if dim == 3 else 4)
    M = J * np.diag([1, 1, 1, 0.5, 0.5, 0.5])[np.ix_(free, free)]
    C = np.linalg.inv(compliance(E, nu, dim)[np.ix_(free, free)])
    x, v = np.zeros(len(free)), rate0[free]
    A = 2 * M / dt ** 2 + V * C
    for _ in range(steps):
        d = np.linalg.solve(A, 2 * M @ v / dt - V * C @ x)
        x, v = x + d, 2 * d / dt - v
    p = sim.particles()
    amp = np.abs(x).max()
    assert amp > 1e-4                        # omega dt ~ 0.15: more than a period
    np.testing.assert_allclose(p["strain"][0, free], x, rtol=0, atol=1e-10 * amp)
    np.testing.assert_allclose(p["stress"][0, free], C @ x, rtol=0,
                               atol=1e-10 * np.abs(C @ x).max())
    np.testing.assert_array_equal(p["position"][0], 0.0)
