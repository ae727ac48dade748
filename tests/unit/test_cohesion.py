"""Cohesion sub-models of the law table (docs/laws.md, pyx/laws.pxd): DMT, JKR, linear.

Expected values are the closed forms of the papers, evaluated here: pull-off forces
2 pi W R* (DMT; Derjaguin, Muller & Toporov 1975) and (3/2) pi W R* (JKR; Johnson,
Kendall & Roberts 1971), the JKR force-overlap relation d = a^2/R* - sqrt(2 pi W a / E*),
F = 4 E* a^3 / (3 R*) - sqrt(8 pi W E* a^3) solved with numpy's polynomial roots, the JKR
separation d_c = -(3/4) (pi^2 W^2 R* / E*^2)^(1/3). Forces are measured by pulling
two bodies apart (or pushing them together) under velocity control, without damping,
so that each step's contact force is the elastic law at that step's overlap.
"""
import math

import numpy as np
import pytest

import pdem
from pdem._kernels.contacts import jkr_force

E, NU, W, RHO = 1e7, 0.25, 0.1, 1000.0
DT = 1e-6
ESTAR_SAME = E / (2.0 * (1.0 - NU ** 2))       # 1/E* = sum (1 - nu^2) / E_i


def jkr_closed_form(d, rs, es, w):
    """(a, F) of the JKR relation at overlap d (stable branch: the largest real root
    s = sqrt(a) of s^4 - c R* s - d R* = 0, c = sqrt(2 pi W / E*))."""
    c = math.sqrt(2.0 * math.pi * w / es)
    roots = np.roots([1.0, 0.0, 0.0, -c * rs, -d * rs])
    s = max(r.real for r in roots if abs(r.imag) <= 1e-9 * abs(r))
    a = s * s
    return a, 4.0 * es * a ** 3 / (3.0 * rs) - math.sqrt(8.0 * math.pi * w * es * a ** 3)


def jkr_separation(rs, es, w):
    return -0.75 * (math.pi ** 2 * w ** 2 * rs / es ** 2) ** (1.0 / 3.0)


def two_bodies(cohesion, radii, d0, wall=False, skin=1e-7, law="hertz", **params):
    """Sphere 2 (the last id) at overlap d0 with sphere 1 at the origin (radii[0]), or
    with a plane z = 0 (wall=True, radii[1] only); no damping, no gravity."""
    sim = pdem.Simulation(pdem.Domain((-0.01,) * 3, (0.01,) * 3), dt=DT, threads=1, skin=skin)
    if law == "hertz":
        params.update(young=E, poisson=NU)
    sim.material("m", RHO, law=law, cohesion=cohesion, **params)
    if wall:
        sim.add_plane((0, 0, 0), (0, 0, 1), "m")
        ids = sim.add_spheres([[0.0, 0.0, radii[1] - d0]], [radii[1]], "m")
    else:
        ids = sim.add_spheres([[0, 0, 0], [radii[0] + radii[1] - d0, 0, 0]], radii, "m")
    return sim, ids


def drive(sim, ids, velocity, steps, wall=False):
    """Prescribe the velocity of the last body (the other, if any, at rest) and record
    per step (overlap, normal force on the moving body: < 0 pulls), NaN without contact."""
    axis = 2 if wall else 0
    v = np.zeros((len(ids), 3))
    v[-1, axis] = velocity
    sim.set_velocity(ids, v, block=True)
    out = np.full((steps, 2), np.nan)
    for k in range(steps):
        sim.step()
        c = sim.contacts()
        if len(c["id2"]):
            out[k] = c["overlap"][0], c["force"][0][axis]
    return out


CASES = [((1e-3, 1e-3), False), ((1e-3, 2e-3), False), ((None, 1.5e-3), True)]


def reduced(radii, wall):
    return radii[1] if wall else radii[0] * radii[1] / (radii[0] + radii[1])


@pytest.mark.parametrize("radii, wall", CASES)
def test_jkr_pulloff_force_and_separation(radii, wall):
    rs, es = reduced(radii, wall), ESTAR_SAME
    dc = jkr_separation(rs, es, W)
    d0, step = 2e-6, 2e-9
    sim, ids = two_bodies("jkr", radii, d0, wall, surface_energy=W)
    rec = drive(sim, ids, step / DT, int((d0 - 1.3 * dc) / step), wall)
    held = np.isfinite(rec[:, 0])
    # the contact held from the start to its last step, then broke for good
    last = np.flatnonzero(held)[-1]
    assert held[:last + 1].all() and not held[last + 1:].any() and last < len(rec) - 10
    # pull-off force (3/2) pi W R*: the largest pull under displacement control
    pull = -np.nanmin(rec[:, 1])
    assert pull == pytest.approx(1.5 * math.pi * W * rs, rel=1e-5)
    # the contact lives in tension down to d_c, and breaks within one step of it
    assert dc <= rec[last, 0] < dc + step * 1.001
    assert rec[last, 1] == pytest.approx(jkr_closed_form(rec[last, 0], rs, es, W)[1], rel=1e-6)
    # with the list skin (1e-7) much below |d_c| the pair outlived Verlet rebuilds
    assert -dc > 5 * sim.skin and sim.n_rebuilds > 10


@pytest.mark.parametrize("radii, wall", CASES)
def test_dmt_pulloff_force(radii, wall):
    rs = reduced(radii, wall)
    d0, step = 1e-6, 2e-9
    sim, ids = two_bodies("dmt", radii, d0, wall, surface_energy=W)
    rec = drive(sim, ids, step / DT, int(1.5 * d0 / step), wall)
    held = np.isfinite(rec[:, 0])
    last = np.flatnonzero(held)[-1]
    # DMT contacts end at zero overlap, pulled by 2 pi W R* (+ Hertz of the last overlap)
    assert 0.0 <= rec[last, 0] < step * 1.001 and not held[last + 1:].any()
    # (the sampled pull misses 2 pi W R* by at most Hertz at one step's overlap)
    pull, hertz_step = -np.nanmin(rec[:, 1]), 4.0 / 3.0 * ESTAR_SAME * math.sqrt(rs) * step ** 1.5
    assert 0.0 <= 2.0 * math.pi * W * rs - pull <= hertz_step < 1e-4 * pull
    hertz = 4.0 / 3.0 * ESTAR_SAME * math.sqrt(rs) * rec[held, 0] ** 1.5
    np.testing.assert_allclose(rec[held, 1], hertz - 2.0 * math.pi * W * rs, rtol=1e-9,
                               atol=1e-12 * W * rs)


def test_jkr_force_overlap_curve():
    """Loading to a compressive overlap, then unloading into tension: the force follows
    the JKR relation at every recorded overlap, on either side of zero."""
    radii = (1e-3, 2e-3)
    rs, es = reduced(radii, False), ESTAR_SAME
    sim, ids = two_bodies("jkr", radii, 1e-7, surface_energy=W)
    push = drive(sim, ids, -5e-3, 800)             # 4 um further in
    pull = drive(sim, ids, 5e-3, 1000)             # then out past d_c
    rec = np.r_[push, pull]
    rec = rec[np.isfinite(rec[:, 0])]
    assert rec[:, 0].max() > 3e-6 and rec[:, 0].min() < 0.9 * jkr_separation(rs, es, W)
    picks = np.linspace(0, len(rec) - 1, 40).astype(int)
    want = [jkr_closed_form(d, rs, es, W)[1] for d in rec[picks, 0]]
    np.testing.assert_allclose(rec[picks, 1], want, rtol=1e-9)


def test_jkr_kernel_solve_matches_closed_form():
    rs, es = 6e-4, 3e6
    dc = jkr_separation(rs, es, W)
    for d in np.r_[np.linspace(0.999 * dc, 0, 7), np.geomspace(1e-9, 1e-4, 7)]:
        a, f = jkr_force(d, rs, es, W)
        a_ref, f_ref = jkr_closed_form(d, rs, es, W)
        assert a == pytest.approx(a_ref, rel=1e-7)     # near d_c the root is double
        assert f == pytest.approx(f_ref, rel=1e-7, abs=1e-12 * W * rs)
    # without surface energy: Hertz, a = sqrt(R* d)
    a, f = jkr_force(1e-6, rs, es, 0.0)
    assert a == pytest.approx(math.sqrt(rs * 1e-6), rel=1e-14)
    assert f == pytest.approx(4.0 / 3.0 * es * math.sqrt(rs) * 1e-6 ** 1.5, rel=1e-13)


def test_jkr_hysteresis_snap_in_at_contact_release_at_separation():
    """Approach: no force until the surfaces touch (a gap inside the pull-off distance
    does not form a contact), then a snap to the JKR force at zero overlap,
    -(4/3) pi W R* (= -8/9 of the pull-off force). Release: the contact holds through
    zero overlap into tension, to d_c."""
    radii = (1e-3, 1e-3)
    rs, es = reduced(radii, False), ESTAR_SAME
    dc = jkr_separation(rs, es, W)
    step = 1e-9
    sim, ids = two_bodies("jkr", radii, 0.8 * dc, surface_energy=W)    # a gap of 0.8 |d_c|
    rec = drive(sim, ids, -step / DT, 2000)
    touch = np.flatnonzero(np.isfinite(rec[:, 0]))[0]
    assert touch > 0.7 * (-dc) / step                  # no contact across the gap
    assert 0.0 < rec[touch, 0] <= 1.001 * step
    assert rec[touch, 1] == pytest.approx(-4.0 / 3.0 * math.pi * W * rs, rel=2e-2)
    assert rec[touch, 1] == pytest.approx(jkr_closed_form(rec[touch, 0], rs, es, W)[1],
                                          rel=1e-9)
    back = drive(sim, ids, step / DT, 3000)
    held = np.isfinite(back[:, 0])
    last = np.flatnonzero(held)[-1]
    assert held[:last + 1].all() and dc <= back[last, 0] < dc + 1.001 * step


def test_linear_cohesion_force():
    """cohesion='linear': F = k_n d - k_c 2 pi R* d (Hooke, no damping)."""
    kn, kc, radii = 1e3, 2e4, (1e-3, 3e-3)
    rs = reduced(radii, False)
    sim, ids = two_bodies("linear", radii, 2e-5, law="hooke", kn=kn, cohesion_density=kc)
    rec = drive(sim, ids, 1e-2, 3000)
    held = np.isfinite(rec[:, 0])
    assert held[:5].all() and not held[-5:].any()
    np.testing.assert_allclose(rec[held, 1], (kn - kc * 2 * math.pi * rs) * rec[held, 0],
                               rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("cohesion", ["jkr", "dmt", "linear"])
def test_sliding_limit(cohesion):
    """Coulomb limit with cohesion: JKR mu |F_e + 3 pi W R*| (LAMMPS pair granular:
    |F_ne + 2 F_pulloff|); DMT mu (F_hertz + 2 pi W R*); linear mu (k_n d + k_c A) (the
    limit sees the cohesive pull, LIGGGHTS' default). A sphere pressed on another slides
    tangentially (rotations blocked), without damping."""
    mu, radii, kn, kc = 0.4, (1e-3, 1e-3), 1e3, 2e4
    rs, es = reduced(radii, False), ESTAR_SAME
    if cohesion == "linear":
        sim, ids = two_bodies("linear", radii, 1e-5, law="hooke", kn=kn, cohesion_density=kc,
                              friction=mu)
    else:
        sim, ids = two_bodies(cohesion, radii, 1e-7, surface_energy=W, friction=mu)
    v = np.zeros((2, 3))
    v[1, 1] = 0.05
    sim.set_velocity(ids, v, block=True)
    sim.block(ids, ["rx", "ry", "rz"])                  # pure sliding, no rolling
    sim.run(steps=600 if cohesion == "linear" else 100)  # slipping after 300 / 10 steps
    c = sim.contacts()
    f, n, d = c["force"][0], c["normal"][0], c["overlap"][0]
    ft = np.linalg.norm(f - np.dot(f, n) * n)
    if cohesion == "jkr":
        fe = jkr_closed_form(d, rs, es, W)[1]
        want = mu * abs(fe + 3 * math.pi * W * rs)
    elif cohesion == "dmt":
        hertz = 4.0 / 3.0 * es * math.sqrt(rs) * d ** 1.5
        fe, want = hertz - 2 * math.pi * W * rs, mu * (hertz + 2 * math.pi * W * rs)
    else:
        fe, want = (kn - kc * 2 * math.pi * rs) * d, mu * (kn + kc * 2 * math.pi * rs) * d
    assert d > 0 and np.dot(f, n) == pytest.approx(fe, rel=1e-9)
    assert ft == pytest.approx(want, rel=1e-9)


def falling(cohesion=None, law="hertz", restitution=0.5, friction=0.5, **params):
    """Six spheres falling onto a plane and one another, with friction and damping."""
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (0.02, 0.02, 0.03)), dt=5 * DT, threads=1,
                          gravity=(0, 0, -9.81))
    if law == "hertz":
        params.update(young=E, poisson=NU)
    else:
        params.update(kn=1e3)
    sim.material("m", RHO, law=law, restitution=restitution, friction=friction, cohesion=cohesion,
                 **params)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    rng = np.random.default_rng(3)
    pos = np.c_[0.01 + rng.uniform(-1e-3, 1e-3, 6), 0.01 + rng.uniform(-1e-3, 1e-3, 6),
                1.05e-3 + 2.1e-3 * np.arange(6)]
    sim.add_spheres(pos, 1e-3, "m", velocities=rng.normal(0, 0.05, (6, 3)) - [0, 0, 0.1])
    seen = 0
    for _ in range(60):
        sim.run(steps=60)
        seen += sim.n_contacts
    assert seen >= 20                     # sampled contacts: on the plane and one another
    p = sim.particles()
    return np.c_[p["position"], p["velocity"], p["angular_velocity"]]


@pytest.mark.parametrize("law, cohesion, params", [
    ("hertz", "dmt", dict(surface_energy=0.0)),
    ("hooke", "dmt", dict(surface_energy=0.0)),
    ("hooke", "linear", dict(cohesion_density=0.0))])
def test_zero_cohesion_is_the_law_without_cohesion(law, cohesion, params):
    """DMT with W = 0 and linear with k_c = 0 take the cohesion path of the kernel and
    subtract zero: the same bits as no cohesion."""
    a, b = falling(law=law), falling(cohesion, law=law, **params)
    assert np.array_equal(a, b)


def test_jkr_without_surface_energy_is_hertz():
    """JKR with W = 0 solves a = sqrt(R* d) iteratively: Hertz-Mindlin to rounding. Without
    friction: the Coulomb limit of JKR sees the elastic force (LAMMPS), that of Hertz
    the total, damping included."""
    a, b = falling(friction=0.0), falling("jkr", friction=0.0, surface_energy=0.0)
    assert np.all(np.abs(b - a) <= 1e-9 * np.abs(a).max(axis=0) + 1e-12), np.abs(b - a).max(axis=0)
    assert not np.array_equal(a[:, 2], falling("jkr", surface_energy=W)[:, 2])


# ---------------------------------------------------------------- bad input
def sim3d(dim=3, scheme=None):
    lo, hi = ((0, 0, 0), (1, 1, 1)) if dim == 3 else ((0, 0), (1, 1))
    return pdem.Simulation(pdem.Domain(lo, hi, dim=dim) if dim == 2 else pdem.Domain(lo, hi),
                           dt=1e-6, threads=1, scheme=scheme)


@pytest.mark.parametrize("params, words", [
    (dict(cohesion="jkr", surface_energy=-0.1), ["surface_energy", "-0.1"]),
    (dict(cohesion="dmt", surface_energy=float("nan")), ["surface_energy", "nan"]),
    (dict(cohesion="jkr", surface_energy=float("inf")), ["surface_energy", "inf"]),
    (dict(cohesion="linear", cohesion_density=-5.0), ["cohesion_density", "-5.0"]),
    (dict(cohesion="sjkr3", surface_energy=0.1), ["cohesion", "'sjkr3'"]),
    (dict(surface_energy=0.1), ["surface_energy", "without a cohesion model"]),
    (dict(cohesion="linear", surface_energy=0.1), ["surface_energy", "linear"]),
])
def test_bad_cohesion_input_one_line(params, words):
    sim = sim3d()
    with pytest.raises(pdem.InputError) as e:
        sim.material("m", 1000.0, law="hertz", young=E, **params)
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


def test_bad_pair_cohesion_and_jkr_needs_hertz():
    sim = sim3d()
    sim.material("a", 1000.0, kn=1e3)
    sim.material("b", 1000.0, kn=1e3)
    with pytest.raises(pdem.InputError, match="pair.*surface_energy.*-1"):
        sim.pair("a", "b", cohesion="dmt", surface_energy=-1.0)
    sim.pair("a", "b", cohesion="jkr", surface_energy=0.1)
    with pytest.raises(pdem.InputError, match="cohesion 'jkr' needs law 'hertz'"):
        sim.materials.table()


def test_different_cohesion_models_need_a_pair_setting():
    sim = pdem.Simulation(pdem.Domain((-0.01,) * 3, (0.01,) * 3), dt=1e-6, threads=1)
    sim.material("a", RHO, law="hertz", young=E, cohesion="jkr", surface_energy=W)
    sim.material("b", RHO, law="hertz", young=E, cohesion="dmt", surface_energy=W)
    sim.add_spheres([[0, 0, 0]], 1e-3, "a")
    sim.add_spheres([[1.9e-3, 0, 0]], 1e-3, "b")
    with pytest.raises(pdem.InputError, match="'a' and 'b' use different cohesion models"):
        sim.step()
    sim.pair("a", "b", cohesion="dmt", surface_energy=0.05)
    sim.step()
    assert sim.contacts()["force"][0][0] == pytest.approx(
        4 / 3 * ESTAR_SAME * math.sqrt(5e-4) * 1e-4 ** 1.5 - 2 * math.pi * 0.05 * 5e-4, rel=1e-6)


def test_cohesion_refused_in_2d_and_nscd():
    with pytest.raises(pdem.InputError, match="2D disks"):
        sim3d(dim=2).material("m", 1000.0, kn=1e3, cohesion="dmt", surface_energy=0.1)
    with pytest.raises(pdem.InputError, match="NSCD"):
        sim3d(scheme=pdem.NSCD()).material("m", 1000.0, cohesion="jkr", surface_energy=0.1)


def test_pair_cohesion_mixing():
    """W and k_c mix as geometric means; a material without cohesion gives none; a pair
    override sets it for one pair."""
    from pdem._kernels.contacts import law_columns
    col = law_columns()
    sim = sim3d()
    for name, w in (("a", 0.04), ("b", 0.09)):
        sim.material(name, 1000.0, young=E, law="hertz", cohesion="jkr", surface_energy=w)
    sim.material("c", 1000.0, young=E, law="hertz")
    t = sim.materials.table()
    assert t[0 * 3 + 1, col["work"]] == pytest.approx(0.06, rel=1e-14)
    assert t[0 * 3 + 1, col["cohesion"]] == 2 and t[0 * 3 + 2, col["cohesion"]] == 0
    sim.pair("a", "c", cohesion="dmt", surface_energy=0.5)
    sim.pair("a", "b", cohesion="dmt")              # W still mixed from the materials
    t = sim.materials.table()
    assert t[0 * 3 + 2, col["cohesion"]] == 1 and t[2 * 3 + 0, col["work"]] == 0.5
    assert t[0 * 3 + 1, col["cohesion"]] == 1
    assert t[0 * 3 + 1, col["work"]] == pytest.approx(0.06, rel=1e-14)
    sim.pair("a", "b", cohesion="linear", cohesion_density=3.0)
    t = sim.materials.table()
    assert t[1 * 3 + 0, col["cohesion"]] == 3 and t[1 * 3 + 0, col["coh_k"]] == 3.0
    assert t[1 * 3 + 0, col["work"]] == 0.0


def test_critical_time_step_still_checked_with_jkr():
    """The Rayleigh-time limit of Hertz holds for JKR pairs too (pdem refuses dt above)."""
    r = 1e-3
    t_r = math.pi * r * math.sqrt(RHO / (E / (2 * (1 + NU)))) / (0.1631 * NU + 0.8766)
    sim = pdem.Simulation(pdem.Domain((-0.01,) * 3, (0.01,) * 3), dt=1.5 * t_r, threads=1)
    sim.material("m", RHO, law="hertz", young=E, poisson=NU, cohesion="jkr", surface_energy=W)
    sim.add_spheres([[0, 0, 0], [0.003, 0, 0]], r, "m")
    with pytest.raises(pdem.InputError, match="critical time step"):
        sim.step()


def test_jkr_refused_against_mesh_walls_dmt_allowed():
    from pdem.contact import shapes
    for coh, refused in (("jkr", True), ("dmt", False)):
        sim = pdem.Simulation(pdem.Domain((-0.1,) * 3, (0.1,) * 3), dt=1e-6, threads=1)
        sim.material("m", RHO, law="hertz", young=E, poisson=NU, cohesion=coh, surface_energy=W)
        sim.add_mesh_wall(shapes.box((-0.04, -0.04, 0.0), (0.04, 0.04, 0.1), 3), "m")
        sim.add_spheres([[0.0, 0.0, 0.05]], 1e-3, "m")
        if refused:
            with pytest.raises(pdem.InputError, match="'jkr' is not available against mesh"):
                sim.step()
        else:
            sim.step()


def test_jkr_contact_in_tension_survives_a_restart(tmp_path):
    """Checkpoint while a JKR contact is held in tension (beyond touching): the restarted
    run keeps it and continues with the same bits as the uninterrupted one."""
    from mpi4py import MPI
    radii, step = (1e-3, 1e-3), 2e-9

    def start():
        sim, ids = two_bodies("jkr", radii, 1e-7, surface_energy=W)
        v = np.zeros((2, 3))
        v[1, 0] = step / DT
        sim.set_velocity(ids, v, block=True)
        return sim

    whole = start()
    whole.run(steps=400)                    # 0.8 um: in tension, |d_c| = 0.9 um
    assert whole.contacts()["overlap"][0] < -0.5e-6
    path = str(tmp_path / "coh.h5")
    whole.checkpoint(path)
    resumed = pdem.restart(path, comm=MPI.COMM_SELF, threads=1)
    for sim in (whole, resumed):
        sim.run(steps=30)
    a, b = whole.contacts(), resumed.contacts()
    assert len(a["id1"]) == 1 and a["overlap"][0] < -0.5e-6
    assert np.array_equal(a["force"], b["force"]) and np.array_equal(a["overlap"], b["overlap"])
