"""Material mixing rules (pdem/materials.py docstring), damping ratios, pair overrides.

Expected values are the documented closed forms evaluated here independently; the
pair table rows are read through the column map of the kernels (law_columns)."""
import math

import numpy as np
import pytest

import pdem
from pdem import materials as pm
from pdem._kernels.contacts import hertz_restitution, law_columns

COL = law_columns()


def sim_with(*mats):
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-6, threads=1)
    for name, rho, params in mats:
        sim.material(name, rho, **params)
    return sim


def row(sim, a, b):
    """Row of the pair table for materials a, b (by name)."""
    t = sim.materials.table()
    n = len(sim.materials.materials)
    ia, ib = sim.materials.by_name[a].index, sim.materials.by_name[b].index
    return t[ia * n + ib]


def estar_gstar(E1, nu1, E2, nu2):
    estar = 1.0 / ((1 - nu1 ** 2) / E1 + (1 - nu2 ** 2) / E2)
    gstar = 1.0 / (2 * (2 - nu1) * (1 + nu1) / E1 + 2 * (2 - nu2) * (1 + nu2) / E2)
    return estar, gstar


def zeta_linear(e):
    return -math.log(e) / math.sqrt(math.pi ** 2 + math.log(e) ** 2)


# ---------------------------------------------------------------- mixing rules
def test_hooke_from_moduli_uses_estar_gstar():
    E1, nu1, E2, nu2 = 1e7, 0.2, 3e7, 0.35
    sim = sim_with(("a", 1000, dict(young=E1, poisson=nu1)),
                   ("b", 2000, dict(young=E2, poisson=nu2)))
    es, gs = estar_gstar(E1, nu1, E2, nu2)
    for a, b in (("a", "b"), ("b", "a")):
        r = row(sim, a, b)
        assert r[COL["normal"]] == 0.0
        assert r[COL["kn0"]] == 0.0
        np.testing.assert_allclose(r[COL["kn1"]], 2.0 * es, rtol=1e-14)      # kn = 2 E* R*
        np.testing.assert_allclose(r[COL["kt_ratio"]], 4.0 * gs / es, rtol=1e-14)
    # equal materials: kt/kn = 2 (1 - nu) / (2 - nu) (Mindlin), kn = E / (1 - nu^2) R*
    r = row(sim, "a", "a")
    np.testing.assert_allclose(r[COL["kt_ratio"]], 2 * (1 - nu1) / (2 - nu1), rtol=1e-14)
    np.testing.assert_allclose(r[COL["kn1"]], E1 / (1 - nu1 ** 2), rtol=1e-14)


def test_hertz_estar_gstar_and_symmetry():
    E1, nu1, E2, nu2 = 7e10, 0.22, 2e11, 0.3
    sim = sim_with(("glass", 2500, dict(law="hertz", young=E1, poisson=nu1, restitution=0.6)),
                   ("steel", 7800, dict(law="hertz", young=E2, poisson=nu2, restitution=0.6)))
    es, gs = estar_gstar(E1, nu1, E2, nu2)
    r1, r2 = row(sim, "glass", "steel"), row(sim, "steel", "glass")
    np.testing.assert_array_equal(r1, r2)
    assert r1[COL["normal"]] == 1.0
    np.testing.assert_allclose(r1[COL["estar"]], es, rtol=1e-14)
    np.testing.assert_allclose(r1[COL["gstar"]], gs, rtol=1e-14)
    # restitution (geometric mean of equal values), turned into the Hertz damping ratio
    assert abs(hertz_restitution(r1[COL["zeta"]]) - 0.6) < 1e-6


def test_friction_min_restitution_geometric_kn_harmonic_means():
    pa = dict(kn=2e5, kt=4e4, friction=0.7, restitution=0.9, rolling_friction=0.3,
              twisting_friction=0.05, rolling_stiffness=1.0, twisting_stiffness=0.4)
    pb = dict(kn=6e5, kt=1e5, friction=0.2, restitution=0.4, rolling_friction=0.1,
              twisting_friction=0.2, rolling_stiffness=3.0, twisting_stiffness=0.2)
    sim = sim_with(("a", 1000, pa), ("b", 3000, pb))
    r = row(sim, "a", "b")
    np.testing.assert_array_equal(r, row(sim, "b", "a"))
    kn = 2 * 2e5 * 6e5 / (2e5 + 6e5)
    kt = 2 * 4e4 * 1e5 / (4e4 + 1e5)
    np.testing.assert_allclose(r[COL["kn0"]], kn, rtol=1e-15)
    np.testing.assert_allclose(r[COL["kt_ratio"]], kt / kn, rtol=1e-15)
    assert r[COL["kn1"]] == 0.0
    assert r[COL["mu"]] == 0.2
    assert r[COL["roll_mu"]] == 0.1
    assert r[COL["twist_mu"]] == 0.05
    np.testing.assert_allclose(r[COL["roll_k"]], 2.0, rtol=1e-15)
    np.testing.assert_allclose(r[COL["twist_k"]], 0.3, rtol=1e-15)
    # no gamma_n: damping from the restitution sqrt(e1 e2), c_t = c_n / 2
    np.testing.assert_allclose(r[COL["zeta"]], zeta_linear(math.sqrt(0.9 * 0.4)), rtol=1e-14)
    assert r[COL["gamma_n"]] == 0.0 and r[COL["ct_ratio"]] == 0.5


def test_equal_materials_keep_their_parameters():
    p = dict(kn=3.3e5, friction=0.45, restitution=0.55)
    sim = sim_with(("a", 1000, p))
    r = row(sim, "a", "a")
    np.testing.assert_allclose(r[COL["kn0"]], 3.3e5, rtol=2.3e-16)
    np.testing.assert_allclose(r[COL["kt_ratio"]], 2.0 / 7.0, rtol=1e-15)   # kt = 2/7 kn
    assert r[COL["mu"]] == 0.45
    np.testing.assert_allclose(r[COL["zeta"]], zeta_linear(0.55), rtol=1e-14)


def test_gamma_arithmetic_mean_and_default_tangential():
    sim = sim_with(("a", 1000, dict(kn=1e5, gamma_n=10.0, gamma_t=2.0)),
                   ("b", 1000, dict(kn=1e5, gamma_n=30.0, gamma_t=6.0)),
                   ("c", 1000, dict(kn=1e5, gamma_n=8.0)))
    r = row(sim, "a", "b")
    assert r[COL["gamma_n"]] == 20.0
    np.testing.assert_allclose(r[COL["ct_ratio"]], 4.0 / 20.0, rtol=1e-15)
    assert r[COL["zeta"]] == 0.0
    r = row(sim, "c", "c")
    assert r[COL["gamma_n"]] == 8.0 and r[COL["ct_ratio"]] == 0.5        # gamma_t = gamma_n / 2


def test_mixed_laws_need_a_pair_law():
    sim = sim_with(("soft", 1000, dict(kn=1e5)),
                   ("hard", 2000, dict(law="hertz", young=1e9, poisson=0.3)))
    sim.add_spheres([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5 + 0.019]], 0.01, "soft")
    sim.add_spheres([[0.5, 0.5, 0.52 + 0.018]], 0.01, "hard")
    with pytest.raises(pdem.InputError) as info:
        sim.run(steps=1)
    msg = str(info.value)
    assert "'soft'" in msg and "'hard'" in msg and "law" in msg and "\n" not in msg


# ---------------------------------------------------------------- damping ratios
@pytest.mark.parametrize("e", [1e-3, 0.05, 0.2, 0.5, 0.8, 0.95, 0.999])
def test_damping_ratio_linear_inverts_restitution(e):
    zeta = pm.damping_ratio_linear(e)
    assert 0.0 < zeta < 1.0
    assert abs(math.exp(-zeta * math.pi / math.sqrt(1 - zeta ** 2)) - e) < 1e-13


def test_damping_ratio_linear_limits():
    assert pm.damping_ratio_linear(1.0) == 0.0
    assert pm.damping_ratio_linear(0.0) == 1.0


# few values: each new e costs ~3 s (hertz_restitution(1.0) integrates to t = 1000)
@pytest.mark.parametrize("e", [0.6, 0.9])
def test_damping_ratio_hertz_round_trip(e):
    zeta = pm.damping_ratio_hertz(e)
    assert zeta > 0.0
    assert abs(hertz_restitution(zeta) - e) < 1e-6


def test_damping_ratio_hertz_limits_and_monotonic():
    assert pm.damping_ratio_hertz(1.0) == 0.0
    assert abs(hertz_restitution(0.0) - 1.0) < 1e-6
    z = [hertz_restitution(zeta) for zeta in (0.05, 0.1, 0.3, 0.6)]
    assert 1.0 > z[0] > z[1] > z[2] > z[3] > 0.0


def _hertz_e_independent(zeta, h=2e-4):
    """Own RK4 of the dimensionless Hertz impact y'' = -y^1.5 - 2 sqrt(1.5) zeta y^0.25 y'
    (F = 4/3 E* sqrt(R*) d^1.5, c = 2 zeta sqrt(m* 2 E* sqrt(R* d)), scaled by the impact
    velocity), y(0) = 0, y'(0) = 1; e = -y' when y returns to 0."""
    c = 2.0 * math.sqrt(1.5) * zeta

    def acc(y, v):
        return 0.0 if y <= 0 else -y ** 1.5 - c * y ** 0.25 * v

    y, v = 0.0, 1.0
    for _ in range(200000):
        k1y, k1v = v, acc(y, v)
        k2y, k2v = v + 0.5 * h * k1v, acc(y + 0.5 * h * k1y, v + 0.5 * h * k1v)
        k3y, k3v = v + 0.5 * h * k2v, acc(y + 0.5 * h * k2y, v + 0.5 * h * k2v)
        k4y, k4v = v + h * k3v, acc(y + h * k3y, v + h * k3v)
        yn = y + h / 6 * (k1y + 2 * k2y + 2 * k3y + k4y)
        vn = v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        if yn <= 0.0 and y > 0.0:
            return -(v + (vn - v) * y / (y - yn))
        if vn >= 0.0 > v:
            return 0.0
        y, v = yn, vn
    raise AssertionError("no rebound")


@pytest.mark.parametrize("zeta", [0.0, 0.15, 0.6])
def test_hertz_restitution_matches_independent_integration(zeta):
    assert abs(hertz_restitution(zeta) - _hertz_e_independent(zeta)) < 2e-5


@pytest.mark.parametrize("law, e", [("hooke", 0.6), ("hooke", 0.2), ("hertz", 0.6)])
def test_head_on_impact_rebounds_with_input_restitution(law, e):
    """End to end: two equal spheres collide head on; the relative velocity after the
    contact is e times the one before (exact for both laws by construction, up to the
    time discretization)."""
    r, rho, v = 0.01, 2500.0, 0.5
    params = dict(kn=2e4, restitution=e) if law == "hooke" else \
        dict(law="hertz", young=1e8, poisson=0.3, restitution=e)
    m = 4.0 / 3.0 * math.pi * r ** 3 * rho
    if law == "hooke":
        t_c = math.pi / math.sqrt(2e4 / (0.5 * m))
    else:   # Hertz contact time 2.87 (m*^2 / (R* E*^2 v))^(1/5)
        es = 1e8 / (2 * (1 - 0.09))
        t_c = 2.87 * ((0.5 * m) ** 2 / (0.5 * r * es ** 2 * 2 * v)) ** 0.2
    dt = t_c / 400
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=dt, threads=1)
    sim.material("m", rho, **params)
    gap = 0.2 * v * t_c
    sim.add_spheres([[0.5 - r - gap / 2, 0.5, 0.5], [0.5 + r + gap / 2, 0.5, 0.5]], r, "m",
                    velocities=[[v, 0, 0], [-v, 0, 0]])
    sim.run(until=1.6 * t_c + 0.2 * t_c)
    assert len(sim.contacts()["id1"]) == 0
    vel = sim.particles()["velocity"]
    np.testing.assert_allclose((vel[1, 0] - vel[0, 0]) / (2 * v), e, rtol=0, atol=5e-3)
    np.testing.assert_allclose(vel[:, 1:], 0.0, atol=1e-15)


# ---------------------------------------------------------------- pair overrides
def test_pair_override_friction_restitution_and_symmetry():
    sim = sim_with(("a", 1000, dict(kn=1e5, friction=0.6, restitution=0.9)),
                   ("b", 1000, dict(kn=3e5, friction=0.5, restitution=0.8)))
    before_aa = row(sim, "a", "a").copy()
    sim.pair("b", "a", friction=0.1, restitution=0.3, kn=7e5)
    for x, y in (("a", "b"), ("b", "a")):
        r = row(sim, x, y)
        assert r[COL["mu"]] == 0.1
        assert r[COL["kn0"]] == 7e5
        np.testing.assert_allclose(r[COL["zeta"]], zeta_linear(0.3), rtol=1e-14)
    np.testing.assert_array_equal(row(sim, "a", "a"), before_aa)
    # a later override replaces the earlier one
    sim.pair("a", "b", friction=0.25)
    r = row(sim, "a", "b")
    assert r[COL["mu"]] == 0.25
    np.testing.assert_allclose(r[COL["kn0"]], 2 * 1e5 * 3e5 / 4e5, rtol=1e-15)
    np.testing.assert_allclose(r[COL["zeta"]], zeta_linear(math.sqrt(0.72)), rtol=1e-14)


def test_pair_override_law_allows_mixed_materials():
    sim = sim_with(("soft", 1000, dict(kn=1e5, young=1e7, poisson=0.25)),
                   ("hard", 2000, dict(law="hertz", young=1e9, poisson=0.3)))
    sim.pair("soft", "hard", law="hertz")
    r = row(sim, "soft", "hard")
    es, gs = estar_gstar(1e7, 0.25, 1e9, 0.3)
    assert r[COL["normal"]] == 1.0
    np.testing.assert_allclose(r[COL["estar"]], es, rtol=1e-14)
    np.testing.assert_allclose(r[COL["gstar"]], gs, rtol=1e-14)


def test_pair_override_unknown_parameter():
    sim = sim_with(("a", 1000, dict(kn=1e5)), ("b", 1000, dict(kn=1e5)))
    with pytest.raises(pdem.InputError) as info:
        sim.pair("a", "b", density=5.0)
    assert "density" in str(info.value)


def test_pair_override_young_is_not_silently_ignored():
    """Regression: Simulation.pair accepted young= / poisson= but ignored them."""
    sim = sim_with(("a", 1000, dict(young=1e7, poisson=0.2)),
                   ("b", 2000, dict(young=3e7, poisson=0.3)))
    before = row(sim, "a", "b").copy()
    for override in (dict(young=1e9), dict(poisson=0.1)):
        try:
            sim.pair("a", "b", **override)
        except pdem.InputError as err:      # refusing it is fine, naming the parameter
            assert list(override)[0] in str(err)
            continue
        assert not np.array_equal(row(sim, "a", "b"), before), override


def test_harmonic_mixing_does_not_overflow():
    """Regression: 2 a b / (a + b) overflowed for stiffnesses above ~1e154 (kn = inf,
    kt_ratio = nan for a single material)."""
    sim = sim_with(("a", 1000, dict(kn=1e200)))
    r = row(sim, "a", "a")
    np.testing.assert_allclose(r[COL["kn0"]], 1e200, rtol=1e-15)
    np.testing.assert_allclose(r[COL["kt_ratio"]], 2.0 / 7.0, rtol=1e-15)
