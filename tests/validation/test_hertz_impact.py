"""Hertz normal impact (law='hertz'): Chung & Ooi (2011) tests 1, 1b, 2 and 3.

Closed forms (VALIDATION.md): 1/E* = sum (1 - nu_i^2)/E_i, 1/R* = sum 1/R_i,
1/m* = sum 1/m_i (a rigid wall drops its terms), v = approach speed,
delta_max = (15 m* v^2 / (16 E* sqrt(R*)))^(2/5), F_max = 4/3 E* sqrt(R*) delta_max^1.5,
t_c = 2.9432 delta_max / v.

The "rigid plane" is a plane whose material has young = 1e30 Pa: its term in 1/E*
is 1e-19 of the sphere's, far below the tolerances.

Elastic tests: F_max (largest contact force over the steps) and the contact time
(first to last step with an active contact; that interval is shorter than the true
one by less than 2 dt) within 0.5 % of the closed forms, with dt = t_c / 2000 so
that the sampling error (2 dt = 0.1 % of t_c) is well inside. The published values
must agree with the closed forms within 0.5 % as well.

Test 3: restitution e = v_n after / v_n before in free flight, within 1e-3 of the
input. For e = 0 the sphere must not rebound.
"""
import math

import numpy as np
import pytest

import pdem

pytestmark = pytest.mark.slow     # validation: not in the fast loop (-m "not slow")

NSUB = 2000
RIGID = 1.0e30


def hertz_closed_form(m_eff, r_eff, estar, v):
    dmax = (15.0 * m_eff * v * v / (16.0 * estar * math.sqrt(r_eff))) ** 0.4
    fmax = 4.0 / 3.0 * estar * math.sqrt(r_eff) * dmax ** 1.5
    return dmax, fmax, 2.9432 * dmax / v


def sphere_mass(r, rho):
    return 4.0 / 3.0 * math.pi * r ** 3 * rho


def track_contact(sim, nsub, max_steps):
    """Step until the (single) contact has ended; returns first/last active step,
    largest force magnitude and overlap."""
    active, fmax, dmax = [], 0.0, 0.0
    while True:
        sim.step()
        c = sim.contacts()
        if len(c["id1"]):
            assert len(c["id1"]) == 1
            active.append(sim.step_count)
            fmax = max(fmax, float(np.linalg.norm(c["force"][0])))
            dmax = max(dmax, float(c["overlap"][0]))
        elif active and sim.step_count > active[-1] + 5:
            return active[0], active[-1], fmax, dmax
        if sim.step_count > max_steps:
            return (active[0] if active else None), None, fmax, dmax


# Chung & Ooi test 1 (glass) and 1b (limestone): two equal spheres at +-10 m/s
PAIR_CASES = {
    "test1_glass": dict(young=4.8e10, poisson=0.20, density=2800.0, radius=0.010, speed=10.0,
                        published=dict(fmax=10.697e3, dmax=274.1e-6, tc=40.34e-6)),
    "test1b_limestone": dict(young=2.0e10, poisson=0.25, density=2500.0, radius=0.010,
                             speed=10.0, published=dict(fmax=7.108e3, tc=54.20e-6)),
}


@pytest.mark.validation
@pytest.mark.parametrize("case", sorted(PAIR_CASES))
def test_chung_ooi_sphere_sphere(case):
    p = PAIR_CASES[case]
    R, v = p["radius"], p["speed"]
    m = sphere_mass(R, p["density"])
    estar = 1.0 / (2.0 * (1.0 - p["poisson"] ** 2) / p["young"])
    dmax, fmax, tc = hertz_closed_form(0.5 * m, 0.5 * R, estar, 2.0 * v)
    for key, expected in (("fmax", fmax), ("dmax", dmax), ("tc", tc)):
        if key in p["published"]:
            assert p["published"][key] == pytest.approx(expected, rel=5e-3), key
    dt = tc / NSUB
    sim = pdem.Simulation(pdem.Domain(lo=(-1, -1, -1), hi=(1, 1, 1)), dt=dt, threads=1)
    mat = sim.material("s", density=p["density"], law="hertz", young=p["young"],
                       poisson=p["poisson"], restitution=1.0, friction=0.0)
    gap = 10.37 * 2.0 * v * dt
    sim.add_spheres([[-R - gap / 2, 0, 0], [R + gap / 2, 0, 0]], R, mat,
                    velocities=[[v, 0, 0], [-v, 0, 0]])
    k1, k2, f_meas, d_meas = track_contact(sim, NSUB, 3 * NSUB)
    assert k2 is not None, "contact did not end"
    t_meas = (k2 - k1) * dt
    assert f_meas == pytest.approx(fmax, rel=5e-3)
    assert d_meas == pytest.approx(dmax, rel=5e-3)
    assert t_meas == pytest.approx(tc, rel=5e-3)
    vel = sim.particles()["velocity"]
    assert (vel[1, 0] - vel[0, 0]) / (2.0 * v) == pytest.approx(1.0, abs=1e-3)


def plane_scene(young, poisson, density, R, restitution, friction, vel, dt, gap):
    sim = pdem.Simulation(pdem.Domain(lo=(-1, -1, -1), hi=(1, 1, 1)), dt=dt, threads=1)
    mat = sim.material("s", density=density, law="hertz", young=young, poisson=poisson,
                       restitution=restitution, friction=friction)
    wall = sim.material("rigid", density=density, law="hertz", young=RIGID, poisson=poisson,
                        restitution=restitution, friction=friction)
    # the pair takes exactly the input values (mixing: sqrt(e1 e2), min(mu1, mu2))
    sim.pair(mat, wall, restitution=restitution, friction=friction)
    sim.add_plane((0, 0, 0), (0, 0, 1), wall)
    sim.add_spheres([[0, 0, R + gap]], R, mat, velocities=[vel])
    return sim


@pytest.mark.validation
def test_chung_ooi_test2_sphere_on_rigid_plane():
    E, nu, rho, R, v = 7.0e10, 0.30, 2699.0, 0.10, 0.2
    m = sphere_mass(R, rho)
    estar = E / (1.0 - nu ** 2)
    dmax, fmax, tc = hertz_closed_form(m, R, estar, v)
    assert 11.370e3 == pytest.approx(fmax, rel=5e-3)
    assert 49.72e-6 == pytest.approx(dmax, rel=5e-3)
    assert 731.6e-6 == pytest.approx(tc, rel=5e-3)
    dt = tc / NSUB
    sim = plane_scene(E, nu, rho, R, 1.0, 0.0, [0, 0, -v], dt, 10.37 * v * dt)
    k1, k2, f_meas, d_meas = track_contact(sim, NSUB, 3 * NSUB)
    assert k2 is not None, "contact did not end"
    assert f_meas == pytest.approx(fmax, rel=5e-3)
    assert d_meas == pytest.approx(dmax, rel=5e-3)
    assert (k2 - k1) * dt == pytest.approx(tc, rel=5e-3)
    assert sim.particles()["velocity"][0, 2] / v == pytest.approx(1.0, abs=1e-3)


# Chung & Ooi test 3: Al oxide sphere onto a rigid plane at 3.9 m/s
AL2O3 = dict(young=3.8e11, poisson=0.23, density=4000.0, radius=2.5e-3)


def al2o3_impact(e, wait_tc):
    E, nu, rho, R = AL2O3["young"], AL2O3["poisson"], AL2O3["density"], AL2O3["radius"]
    v = 3.9
    _, _, tc = hertz_closed_form(sphere_mass(R, rho), R, E / (1 - nu ** 2), v)
    dt = tc / NSUB
    sim = plane_scene(E, nu, rho, R, e, 0.0, [0, 0, -v], dt, 10.37 * v * dt)
    k1, k2, _, _ = track_contact(sim, NSUB, int(wait_tc * NSUB))
    return sim, k1, k2, v, R, dt


@pytest.mark.validation
@pytest.mark.parametrize("e", [0.2, 0.4, 0.6, 0.8, 1.0])
def test_chung_ooi_test3_restitution(e):
    sim, k1, k2, v, R, dt = al2o3_impact(e, 5.0)
    assert k2 is not None, "no rebound"
    e_meas = sim.particles()["velocity"][0, 2] / v
    assert abs(e_meas - e) <= 1e-3, (e_meas, e)


@pytest.mark.validation
def test_chung_ooi_test3_no_rebound_at_zero_restitution():
    """e = 0: after 20 elastic contact times the sphere is still on the plane, with a
    normal velocity below 1e-3 of the impact speed."""
    sim, k1, k2, v, R, dt = al2o3_impact(0.0, 20.0)
    assert k1 is not None
    p = sim.particles()
    vz = p["velocity"][0, 2]
    assert abs(vz) <= 1e-3 * v, vz / v
    # still in contact (or at most a vanishing gap opened at that speed)
    gap = p["position"][0, 2] - R
    print("e=0: in contact=%s v_z/v=%.3g gap=%.3g m" % (k2 is None, vz / v, gap))
    elapsed = (sim.step_count - k1) * dt
    assert k2 is None or gap <= 1e-3 * v * elapsed
    if k2 is None:
        assert len(sim.contacts()["id1"]) == 1
