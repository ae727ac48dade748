"""Parallel bonds (pyx/bonds.pyx): loads and breakage of one bond against closed forms
(F = kn A delta, bending at M = sigma_c I / R, twist at T = tau_c J / R, shear at
F_s = tau_c A, combined tension and bending, PFC's cohesion + friction), the discrete
cantilever's tip deflection, strength scatter statistics, and equivalences (a
super-weak bond changes nothing, swapped ids, periodic images). Threads, restarts and
rank counts: tests/mpi/test_bonds_mpi.py (on one rank too)."""
import math

import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem.contact.bonds import strength_factors

KN = KS = 1e7
DT = 1e-4
A, I, J = math.pi, math.pi / 4, math.pi / 2          # section of R = 1


def pair(gap=0.0, strengths=(1e5, 1e9), friction_angle=0.0, cohesion=None, dim=3, **extra):
    """Two spheres of radius 1 at x = 0 and 2 + gap bonded (particle 0 fixed, both
    blocked: their motion is prescribed)."""
    dom = pdem.Domain((-5, -5, -5), (5, 5, 5)) if dim == 3 else pdem.Domain((-5, -5), (5, 5), dim=2)
    sim = pdem.Simulation(dom, DT, comm=MPI.COMM_SELF)
    sim.material("m", 1000.0, kn=1e6)
    sim.add_spheres([[0, 0, 0], [2 + gap, 0, 0]], 1.0, "m")
    shear = dict(shear_strength=strengths[1]) if cohesion is None else \
        dict(cohesion=cohesion, friction_angle=friction_angle)
    sim.bond_material("b", kn=KN, ks=KS, tensile_strength=strengths[0], **shear, **extra)
    assert sim.bond_contacts("b", gap=gap + 1e-9) == 1
    sim.set_velocity([0, 1], (0, 0, 0), (0, 0, 0), block=True)
    return sim


def run_until_break(sim, limit=100000):
    for _ in range(limit):
        sim.step()
        b = sim.bonds()
        if not b["intact"][0]:
            return b
    raise AssertionError("the bond did not break")


def test_axial_force_and_tensile_break():
    sim = pair()
    v = 1.0
    sim.set_velocity([1], (v, 0, 0), block=True)
    sim.run(37)
    b = sim.bonds()
    assert b["force"][0] == pytest.approx([-KN * A * v * 37 * DT, 0, 0], rel=1e-12, abs=1e-6)
    assert b["length"][0] == pytest.approx(2 + v * 37 * DT, rel=1e-14)
    b = run_until_break(sim)
    t_star = 1e5 / KN / v                          # sigma_c / kn
    assert t_star - 1e-12 <= b["broken_time"][0] < t_star + DT + 1e-12
    assert b["mode"][0] == 1 and sim.n_bonds == 0 and sim.n_broken == 1
    assert b["point"][0] == pytest.approx([1 + 0.5 * v * b["broken_time"][0], 0, 0])
    sim.step()
    assert np.all(sim.particles()["force"] == 0.0)


def test_bending_breaks_at_sigma_c_I_over_R():
    """Opposite spins about z: no shear at the contact, relative rotation 2 w t."""
    sim = pair(strengths=(1e5, 1e12))
    w = 0.5
    sim.set_velocity([0], angular_velocity=(0, 0, -w), block=True)
    sim.set_velocity([1], angular_velocity=(0, 0, w), block=True)
    sim.run(50)
    b = sim.bonds()
    assert np.linalg.norm(b["moment"][0]) == pytest.approx(KN * I * 2 * w * 50 * DT, rel=1e-9)
    assert np.linalg.norm(b["force"][0]) < 1e-6 * KN * I * 2 * w * 50 * DT
    b = run_until_break(sim)
    m_star = 1e5 * I / 1.0                         # sigma_c I / R
    t_star = m_star / (KN * I * 2 * w)
    assert abs(b["broken_time"][0] - t_star) <= DT * (1 + 1e-9)
    assert b["mode"][0] == 1


def test_twist_breaks_at_tau_c_J_over_R():
    sim = pair(strengths=(1e12, 2e4))
    w = 0.5
    sim.set_velocity([0], angular_velocity=(-w, 0, 0), block=True)
    sim.set_velocity([1], angular_velocity=(w, 0, 0), block=True)
    sim.run(10)
    b = sim.bonds()
    assert b["moment"][0] == pytest.approx([-KS * J * 2 * w * 10 * DT, 0, 0], rel=1e-9,
                                           abs=1e-9 * KS * J * w * 10 * DT)
    b = run_until_break(sim)
    t_star = 2e4 * J / 1.0 / (KS * J * 2 * w)       # T = tau_c J / R
    assert abs(b["broken_time"][0] - t_star) <= DT * (1 + 1e-9)
    assert b["mode"][0] == 2


def test_shear_breaks_at_tau_c_A():
    """Particle 1 slides along y with rotations blocked: F_s = ks A s (to (s/d)^2)."""
    sim = pair(strengths=(1e12, 1e3))
    v = 0.01
    sim.set_velocity([1], (0, v, 0), block=True)
    sim.run(30)
    b = sim.bonds()
    assert np.hypot(*b["force"][0, 1:]) == pytest.approx(KS * A * v * 30 * DT, rel=1e-8)
    b = run_until_break(sim)
    t_star = 1e3 / KS / v                           # F_s = tau_c A
    assert abs(b["broken_time"][0] - t_star) <= DT * (1 + 1e-6)
    assert b["mode"][0] == 2


def test_combined_tension_and_bending():
    """sigma = kn v t + kn I (2 w t) R / I reaches sigma_c at t = sigma_c / (kn (v + 2 w R))."""
    sim = pair(strengths=(1e5, 1e12))
    v, w = 0.4, 0.5
    sim.set_velocity([0], angular_velocity=(0, 0, -w), block=True)
    sim.set_velocity([1], (v, 0, 0), (0, 0, w), block=True)
    b = run_until_break(sim)
    t_star = 1e5 / (KN * (v + 2 * w * 1.0))
    assert abs(b["broken_time"][0] - t_star) <= DT * (1 + 1e-6)
    assert b["mode"][0] == 1


def test_shear_strength_grows_with_compression():
    """PFC: tau_c = c - sigma tan(phi) with sigma < 0 in compression. Bonded at a gap
    of 0.2 (no contact), pressed by delta, then sheared: breaks at
    s = (c + kn delta tan(phi)) / ks."""
    sim = pair(gap=0.2, strengths=(1e12, None), cohesion=1e3, friction_angle=30.0)
    sim.set_velocity([1], (-0.01, 0, 0), block=True)
    sim.run(100)                                    # delta = 1e-4
    sim.set_velocity([1], (0, 0.01, 0), block=True)
    b = run_until_break(sim)
    s_star = (1e3 + KN * 1e-4 * math.tan(math.radians(30.0))) / KS
    t_star = 100 * DT + s_star / 0.01
    assert abs(b["broken_time"][0] - t_star) <= DT * (1 + 1e-6)
    assert b["mode"][0] == 2


@pytest.mark.parametrize("n", [1, 4])
def test_cantilever_tip_deflection(n):
    """n bonds of length L0 (contact points mid-bond), particle 0 clamped, the tip
    pushed by delta along y (its rotation free) and held until the chain is at rest:
    delta = F L0^2 n (4 n^2 - 1) / (12 k_b) + n F / k_s, F the tip's shear force."""
    gap = 0.02
    L0 = 2.0 + gap
    dom = pdem.Domain((-2, -5, -5), (n * L0 + 2, 5, 5))
    sim = pdem.Simulation(dom, 2e-4, comm=MPI.COMM_SELF)
    sim.material("m", 100.0, kn=1e6)
    sim.add_spheres([[k * L0, 0, 0] for k in range(n + 1)], 1.0, "m")
    sim.bond_material("b", kn=KN, ks=KS / 3, tensile_strength=1e12, shear_strength=1e12,
                      damping=0.7)
    assert sim.bond_contacts("b", gap=gap * 1.5) == n
    sim.block([0], ["x", "y", "z", "rx", "ry", "rz"])
    sim.set_velocity([n], (0, 1e-3, 0), block=True)
    sim.run(50)                                     # delta = 1e-5
    sim.set_velocity([n], (0, 0, 0), block=True)
    for _ in range(40):
        sim.run(500)
        if np.abs(sim.particles()["velocity"]).max() < 1e-13:
            break
    delta = 50 * 2e-4 * 1e-3
    b = sim.bonds()
    F = abs(b["force"][-1, 1])          # shear of the tip's bond = the tip force
    k_b, k_s = KN * I, KS / 3 * A
    expected = F * L0 ** 2 * n * (4 * n ** 2 - 1) / (12 * k_b) + n * F / k_s
    assert delta == pytest.approx(expected, rel=2e-6)
    assert np.allclose(np.abs(b["force"][:, 1]), F, rtol=1e-6)   # the same shear in every bond


def test_super_weak_bond_breaks_at_once_and_changes_nothing():
    """Two colliding spheres with and without a bond of tiny strength: it breaks at its
    first update and the trajectories are bitwise those of the unbonded pair."""
    def run(bonded):
        sim = pdem.Simulation(pdem.Domain((-5, -5, -5), (5, 5, 5)), DT, comm=MPI.COMM_SELF)
        sim.material("m", 1000.0, kn=1e6)
        sim.add_spheres([[0, 0, 0], [2.001, 0.3, 0]], 1.0, "m",
                        velocities=[[0.5, 0, 0], [-0.5, 0.1, 0]])
        if bonded:
            sim.bond_material("b", kn=KN, ks=KS, tensile_strength=1e-30, shear_strength=1e-30)
            assert sim.add_bonds([[1, 0]], "b") == 1
        sim.run(2500)
        return sim
    free, bonded = run(False), run(True)
    assert bonded.n_broken == 1 and bonded.bonds()["broken_time"][0] == pytest.approx(DT)
    a, b = free.particles(), bonded.particles()
    assert free.n_contacts == 0 and a["velocity"][0, 0] < 0.0    # they collided, bounced
    for k in ("position", "velocity", "angular_velocity"):
        assert np.array_equal(a[k], b[k]), k


def test_swapped_ids_give_the_same_forces():
    """The same bonded pair with the ids of its particles exchanged."""
    def run(order):
        sim = pdem.Simulation(pdem.Domain((-5, -5, -5), (5, 5, 5)), DT, comm=MPI.COMM_SELF)
        sim.material("m", 1000.0, kn=1e6)
        x = np.array([[0, 0, 0], [2.0, 0.1, 0.05]])[order]
        v = np.array([[0.1, 0.2, -0.1], [-0.3, 0.05, 0.2]])[order]
        w = np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.1]])[order]
        sim.add_spheres(x, np.array([1.0, 0.8])[order], "m", velocities=v,
                        angular_velocities=w)
        sim.bond_material("b", kn=KN, ks=KS, tensile_strength=1e9, shear_strength=1e9)
        sim.add_bonds([[0, 1]], "b")
        sim.run(300)
        p = sim.particles()
        return {k: p[k][np.argsort(order)] for k in ("position", "force", "torque")}
    a, b = run(np.array([0, 1])), run(np.array([1, 0]))
    scale = np.abs(a["force"]).max()
    assert scale > 1.0
    assert np.allclose(a["force"], b["force"], rtol=0, atol=1e-9 * scale)
    assert np.allclose(a["torque"], b["torque"], rtol=0, atol=1e-9 * scale)
    assert np.allclose(a["position"], b["position"], rtol=0, atol=1e-12)


def test_bond_across_the_periodic_boundary():
    """A bond across x = L acts as the same bond in the middle of the box."""
    def run(shift):
        dom = pdem.Domain((0, -5, -5), (10, 5, 5), periodic=(True, False, False))
        sim = pdem.Simulation(dom, DT, comm=MPI.COMM_SELF)
        sim.material("m", 1000.0, kn=1e6)
        x = (np.array([[4.0, 0, 0], [6.0, 0.1, 0]]) + [shift, 0, 0]) % [10, 100, 100]
        sim.add_spheres(x, 1.0, "m", velocities=[[0, 0.1, 0], [0.2, -0.1, 0]])
        sim.bond_material("b", kn=KN, ks=KS, tensile_strength=1e9, shear_strength=1e9)
        assert sim.bond_contacts("b", gap=0.01) == 1
        sim.run(200)
        return sim.bonds()
    mid, across = run(0.0), run(5.0)
    assert across["length"][0] == pytest.approx(mid["length"][0], rel=1e-12)
    assert np.allclose(across["force"], mid["force"], rtol=1e-9)
    assert np.allclose(across["moment"], mid["moment"], rtol=1e-9, atol=1e-9)


def test_bond_contacts_of_a_cubic_lattice():
    """n^3 spheres at a gap of 0.1: 3 n^2 (n - 1) bonds, made by gap >= 0.1, not 0.05."""
    n = 4
    sim = pdem.Simulation(pdem.Domain((-1, -1, -1), (9, 9, 9)), DT, comm=MPI.COMM_SELF)
    sim.material("m", 1000.0, kn=1e6)
    g = np.arange(n) * 2.1
    sim.add_spheres(np.stack(np.meshgrid(g, g, g), -1).reshape(-1, 3), 1.0, "m")
    sim.bond_material("b", kn=KN, ks=KS, tensile_strength=1e9, shear_strength=1e9)
    assert sim.bond_contacts("b", gap=0.05) == 0
    layer = np.flatnonzero(sim.particles()["position"][:, 2] == 0.0)     # a 4 x 4 square
    assert sim.bond_contacts("b", gap=0.11, ids=layer) == 2 * n * (n - 1)
    assert sim.bond_contacts("b", gap=0.11) == 3 * n * n * (n - 1) - 2 * n * (n - 1)
    assert sim.n_bonds == 3 * n * n * (n - 1)


def test_strength_scatter():
    id1 = np.arange(20000, dtype=np.int64)
    id2 = id1 * 7 + 3
    t, s = strength_factors({"distribution": "normal", "cv": 0.2, "seed": 3}, id1, id2)
    assert abs(t.mean() - 1) < 0.006 and abs(t.std() - 0.2) < 0.005
    assert abs(np.corrcoef(t, s)[0, 1]) < 0.03
    m = 5.0
    t, _ = strength_factors({"distribution": "weibull", "modulus": m, "seed": 1}, id1, id2)
    cv = math.sqrt(math.gamma(1 + 2 / m) / math.gamma(1 + 1 / m) ** 2 - 1)
    assert abs(t.mean() - 1) < 0.01 and abs(t.std() - cv) < 0.01
    # per bond, from its ids: any order of the bonds gives the same factors
    perm = np.random.default_rng(0).permutation(len(id1))
    again, _ = strength_factors({"distribution": "weibull", "modulus": m, "seed": 1},
                                id1[perm], id2[perm])
    assert np.array_equal(again, t[perm])


def test_bad_input():
    sim = pair()
    with pytest.raises(pdem.InputError, match="bonds particle 1 with itself"):
        sim.add_bonds([[1, 1]], "b")
    with pytest.raises(pdem.InputError, match="unknown particle id 7"):
        sim.add_bonds([[0, 7]], "b")
    with pytest.raises(pdem.InputError, match="already bonded"):
        sim.add_bonds([[1, 0]], "b")
    with pytest.raises(pdem.InputError, match=r"id_pairs\[1\] = \(1, 0\) repeats id_pairs\[0\]"):
        sim.add_bonds([[0, 1], [1, 0]], "b")
    with pytest.raises(pdem.InputError, match="unknown bond material 'x'"):
        sim.add_bonds([[0, 1]], "x")
    with pytest.raises(pdem.InputError, match="'c': kn must be a positive finite number, got -1"):
        sim.bond_material("c", kn=-1, ks=1, tensile_strength=1, shear_strength=1)
    with pytest.raises(pdem.InputError, match="give shear_strength or cohesion"):
        sim.bond_material("c", kn=1, ks=1, tensile_strength=1)
    with pytest.raises(pdem.InputError, match="tensile_strength must be a positive"):
        sim.bond_material("c", kn=1, ks=1, tensile_strength=0, shear_strength=1)
    with pytest.raises(pdem.InputError, match="scatter: the weibull distribution needs modulus"):
        sim.bond_material("c", kn=1, ks=1, tensile_strength=1, shear_strength=1,
                          scatter={"distribution": "weibull"})
    with pytest.raises(pdem.InputError, match="already defined"):
        sim.bond_material("b", kn=1, ks=1, tensile_strength=1, shear_strength=1)
    nscd = pdem.Simulation(pdem.Domain((-5, -5, -5), (5, 5, 5)), DT, comm=MPI.COMM_SELF,
                           scheme=pdem.NSCD())
    with pytest.raises(pdem.InputError, match="the nscd scheme does not support bonds"):
        nscd.bond_material("b", kn=1, ks=1, tensile_strength=1, shear_strength=1)
    s2 = pdem.Simulation(pdem.Domain((-5, -5, -5), (5, 5, 5)), DT, comm=MPI.COMM_SELF)
    s2.material("m", 1000.0, kn=1e6)
    s2.add_spheres([[0, 0, 0], [2, 0, 0]], 1.0, "m")
    s2.bond_material("c", kn=1e14, ks=1e14, tensile_strength=1, shear_strength=1)
    s2.bond_contacts("c")
    with pytest.raises(pdem.InputError, match="critical time step .* bond material 'c'"):
        s2.step()


def test_bond_made_during_a_run_acts_from_the_next_step():
    """The kinds with rows are kept between steps (Simulation.working_kinds): a bond
    made after steps without any still loads its particles, F = kn A v t from the
    length at which it formed."""
    dom = pdem.Domain((-5, -5, -5), (5, 5, 5))
    sim = pdem.Simulation(dom, DT, comm=MPI.COMM_SELF)
    sim.material("m", 1000.0, kn=1e6)
    sim.add_spheres([[0, 0, 0], [2.5, 0, 0]], 1.0, "m")
    sim.bond_material("b", kn=KN, ks=KS, tensile_strength=1e9, shear_strength=1e9)
    v = 1.0
    sim.set_velocity([0], (0, 0, 0), (0, 0, 0), block=True)
    sim.set_velocity([1], (v, 0, 0), (0, 0, 0), block=True)
    sim.run(5)
    assert "bond" not in [k.name for k in sim.working_kinds()]
    assert sim.bond_contacts("b", gap=0.6) == 1
    sim.run(37)
    assert sim.particles()["force"][0] == pytest.approx([KN * A * v * 37 * DT, 0, 0],
                                                       rel=1e-9)
