"""Non-smooth contact dynamics (seed 003): detection, the seed's NLGS and Jacobi
formulas (bit for bit against a plain Python transcription), convergence criterion,
friction, restitution, 3D spheres and planes, thread-count determinism, bad input."""
import copy
import math
import warnings

import numpy as np
import pytest

from pdem.errors import InputError
from pdem.nscd import ConvergenceWarning, GrainProblem

G = 9.81


# ---------------------------------------------------------------- seed 003 in Python
def _seed_correction(c, k, v, m, dt):
    """Seed 003's correction of contact k from velocities v: (i, j, dv_n, W)."""
    i, j, n, d = c["i"][k], c["j"][k], c["normal"][k], c["gap"][k]
    if c["kind"][k] == 0:
        vn = (v[i, 0] - v[j, 0]) * n[0] + (v[i, 1] - v[j, 1]) * n[1]
        W = (m[i] + m[j]) / (m[i] * m[j])
    else:
        vn = v[i, 0] * n[0] + v[i, 1] * n[1]
        W = 1.0 / m[i]
    return i, j, max(0.0, -vn - max(0.0, d) / dt), W


def _seed_sweep(p, dt, target, v_from):
    """Every contact's correction from v_from, added to `target` (worst correction)."""
    c, m = p.contacts, p.m
    worst = 0.0
    for k in range(len(c["kind"])):
        i, j, dvn, W = _seed_correction(c, k, v_from, m, dt)
        n = c["normal"][k]
        worst = max(worst, dvn)
        target[i] += dvn / (W * m[i]) * n
        if c["kind"][k] == 0:
            target[j] -= dvn / (W * m[j]) * n
    return worst


def seed_sweep_nlgs(p, dt):
    """One NLGS sweep of seed 003 written out in Python (contact order of p.contacts):
    each correction applied at once."""
    return _seed_sweep(p, dt, p.v, p.v)


def seed_sweep_jacobi(p, dt):
    """One Jacobi sweep of seed 003: corrections from the start velocities, summed per
    grain in ascending contact order, applied at the end of the sweep."""
    acc = np.zeros_like(p.v)
    worst = _seed_sweep(p, dt, acc, p.v.copy())
    p.v += acc
    return worst


def covered(xi, c, segments):
    """pdem's rule for the boundary disks (seed 003: useful where s_t < 0 or s_t > 1):
    a disk does not act on a grain whose foot lies within the span of a segment
    ending at it (no bump at the joint of two segments)."""
    for a, b in segments:
        if np.array_equal(a, c) or np.array_equal(b, c):
            t, s = b - a, xi - a
            if 0.0 <= s @ t / (t @ t) <= 1.0:
                return True
    return False


def brute_force_contacts(p, alert):
    """(kind, i, j) -> gap of every potential contact, from the seed's definitions."""
    out = {}
    x, r = p.x, p.r
    for i in range(p.n):
        for j in range(i + 1, p.n):
            d = np.linalg.norm(x[i] - x[j]) - r[i] - r[j]
            if d < alert:
                out[(0, i, j)] = d
        for k, (a, b) in enumerate(p.segments):
            t, s = b - a, x[i] - a
            st = s @ t / (t @ t)
            if 0.0 <= st <= 1.0:
                d = np.linalg.norm(s - st * t) - r[i]
                if d < alert:
                    out[(1, i, k)] = d
        for k, c in enumerate(p.disks):
            d = np.linalg.norm(x[i] - c) - r[i]
            if d < alert and not covered(x[i], c, p.segments):
                out[(2, i, k)] = d
        for k, (q, nv) in enumerate(zip(p.plane_points, p.plane_normals)):
            d = (x[i] - q) @ nv - r[i]
            if d < alert:
                out[(3, i, k)] = d
    return out


def random_scene(dim=2, n=60, seed=0, threads=1, **kw):
    rng = np.random.default_rng(seed)
    p = GrainProblem(dim=dim, threads=threads, **kw)
    x = rng.uniform(0.0, 1.0, (n, dim))
    p.add_grains(x, rng.uniform(0.03, 0.06, n), density=rng.uniform(500, 2000, n),
                 v=rng.normal(0.0, 1.0, (n, dim)))
    if dim == 2:
        p.add_segments([[0.0, 0.0], [1.0, 0.0], [0.3, 0.5]], [[1.0, 0.0], [1.0, 1.0], [0.6, 0.55]])
        p.add_disks([[0.5, 0.5]])
    else:
        p.add_planes([[0, 0, 0], [1, 1, 1]], [[0, 0, 1], [-1, 0, -1]])
    return p


def box_pile(seed=1, **kw):
    """30 disks above the floor of a box of three segments (no initial overlap)."""
    rng = np.random.default_rng(seed)
    kw.setdefault("threads", 1)
    p = GrainProblem(dim=2, gravity=(0.0, -G), **kw)
    w, h = 0.11, 0.3
    p.add_segments([[0, h], [0, 0], [w, 0]], [[0, 0], [w, 0], [w, h]])
    x = [[0.012 + 0.0195 * (k % 5) + 0.001 * rng.random(), 0.012 + 0.02 * (k // 5)]
         for k in range(30)]
    p.add_grains(np.array(x), 0.008 + 0.001 * rng.random(30), density=1000.0)
    return p


@pytest.fixture(scope="module")
def settled_pile():
    p = box_pile()
    for _ in range(500):
        p.step(1e-3, 1e-7, 0.004)
    return p


# ---------------------------------------------------------------- two grains, walls
def test_two_grains_approaching_closed_form():
    """Seed formula on one contact: the gap closes exactly in dt, momentum is kept."""
    p = GrainProblem(dim=2, gravity=(0, 0))
    m1, m2, u1, u2, d, dt = 2.0, 3.0, 1.5, -0.5, 0.05, 0.1
    p.add_grains([[0.0, 0.0], [1.0 + d, 0.0]], [0.5, 0.5], mass=[m1, m2],
                 v=[[u1, 0.0], [u2, 0.0]])
    assert p.detect_contacts(0.1) == 1
    c = p.contacts
    assert (c["kind"][0], c["i"][0], c["j"][0]) == (0, 0, 1)
    np.testing.assert_allclose(c["normal"][0], [-1.0, 0.0])    # from j to i
    assert c["gap"][0] == pytest.approx(d)
    it = p.solve_contacts_nlgs(1e-9, dt)
    assert it == 2                       # one correction, one sweep to verify
    # closed form: relative velocity after = -d/dt (gap closed exactly), momentum kept
    dvn = -(u2 - u1) - d / dt            # v_n = (v1 - v2).n with n = -x
    W = (m1 + m2) / (m1 * m2)
    assert p.v[0, 0] == pytest.approx(u1 - dvn / (W * m1), rel=1e-14)
    assert p.v[1, 0] == pytest.approx(u2 + dvn / (W * m2), rel=1e-14)
    assert p.v[1, 0] - p.v[0, 0] == pytest.approx(-d / dt, rel=1e-12)
    assert m1 * p.v[0, 0] + m2 * p.v[1, 0] == pytest.approx(m1 * u1 + m2 * u2, rel=1e-14)
    assert p.contacts["impulse_n"][0] == pytest.approx(dvn / W, rel=1e-14)
    assert np.all(p.v[:, 1] == 0.0)


def test_grains_too_slow_to_meet_are_untouched():
    p = GrainProblem(dim=2, gravity=(0, 0))
    p.add_grains([[0.0, 0.0], [1.1, 0.0]], 0.5, v=[[0.4, 0.0], [-0.4, 0.0]])
    assert p.detect_contacts(0.2) == 1
    assert p.solve_contacts_nlgs(1e-9, 0.1) == 1           # 0.08 travel < 0.1 gap
    np.testing.assert_array_equal(p.v, [[0.4, 0.0], [-0.4, 0.0]])


def test_grain_on_segment_rests():
    """A disk touching a horizontal segment under gravity stays exactly at rest."""
    p = GrainProblem(dim=2)
    p.add_segments([[-1.0, 0.0]], [[1.0, 0.0]])
    p.add_grains([[0.2, 0.1]], 0.1, density=2.0)
    for _ in range(20):
        p.step(1e-2, 1e-9, 0.01)
    np.testing.assert_array_equal(p.v, [[0.0, 0.0]])
    np.testing.assert_array_equal(p.x, [[0.2, 0.1]])
    c = p.contacts
    assert list(c["kind"]) == [1] and list(c["j"]) == [0]
    np.testing.assert_allclose(c["normal"][0], [0.0, 1.0])
    assert c["impulse_n"][0] == pytest.approx(p.m[0] * G * 1e-2, rel=1e-14)


def test_grain_falling_on_segment_stops_at_contact():
    """Gap d, speed u: the step closes the gap exactly (seed: dv = -v_n - d/dt)."""
    p = GrainProblem(dim=2, gravity=(0, 0))
    p.add_segments([[-1.0, 0.0]], [[1.0, 0.0]], end_disks=False)
    p.add_grains([[0.3, 0.1 + 0.004]], 0.1, v=[[0.25, -1.0]])
    p.step(0.01, 1e-12, 0.01)
    assert p.v[0, 1] == pytest.approx(-0.4, rel=1e-12)
    assert p.v[0, 0] == 0.25                           # frictionless: tangent untouched
    assert p.x[0, 1] == pytest.approx(0.1, abs=1e-15)


def test_end_disk_catches_grain_past_segment_end():
    """s_t > 1 (past x1): no segment contact, the end disk stops the grain."""
    r = 0.1
    p = GrainProblem(dim=2, gravity=(0, 0))
    p.add_segments([[0.0, 0.0]], [[1.0, 0.0]])
    np.testing.assert_array_equal(p.disks, [[0.0, 0.0], [1.0, 0.0]])
    # centre beyond the end (s_t = 1.05 <= 1 + r/|t|), moving down onto the corner
    p.add_grains([[1.05, 0.1]], r, v=[[0.0, -1.0]])
    assert p.detect_contacts(0.05) == 1
    assert (p.contacts["kind"][0], p.contacts["j"][0]) == (2, 1)
    gap = math.hypot(0.05, 0.1) - r
    assert p.contacts["gap"][0] == pytest.approx(gap, rel=1e-14)
    n = np.array([0.05, 0.1]) / math.hypot(0.05, 0.1)
    np.testing.assert_allclose(p.contacts["normal"][0], n, rtol=1e-14)
    dt = 0.1
    p.solve_contacts_nlgs(1e-12, dt)
    # normal velocity after = -gap/dt, tangential part unchanged
    assert p.v[0] @ n == pytest.approx(-gap / dt, rel=1e-12)
    t = np.array([-n[1], n[0]])
    assert p.v[0] @ t == pytest.approx(np.array([0.0, -1.0]) @ t, rel=1e-12)


def test_grain_beside_segment_outside_its_span_is_not_detected():
    p = GrainProblem(dim=2, gravity=(0, 0))
    p.add_segments([[0.0, 0.0]], [[1.0, 0.0]], end_disks=False)
    p.add_grains([[1.05, 0.05]], 0.1)              # s_t = 1.05: past the end
    p.add_grains([[-0.02, 0.05]], 0.1)             # s_t = -0.02: before the start
    assert p.detect_contacts(0.5) == 0
    p.add_disks([[1.0, 0.0]])
    assert p.detect_contacts(0.5) == 1


def test_shared_segment_ends_give_one_disk():
    p = GrainProblem(dim=2)
    p.add_segments([[0, 0], [1, 0], [1, 1]], [[1, 0], [1, 1], [0, 0]])
    assert p.disks.shape == (3, 2)
    p.add_segments([[0, 0]], [[-1, 0]])
    np.testing.assert_array_equal(p.disks, [[0, 0], [1, 0], [1, 1], [-1, 0]])
    assert p.segments.shape == (4, 2, 2)


def test_alert_is_surface_to_surface():
    """Large grains whose surfaces are 0.09 apart: found with alert 0.1, not 0.08."""
    p = GrainProblem(dim=2)
    p.add_grains([[0.0, 0.0], [2.09, 0.0]], 1.0)
    p.add_segments([[-2.0, -1.05]], [[4.0, -1.05]])        # 0.05 below grain surfaces
    assert p.detect_contacts(0.1) == 3
    assert sorted(zip(p.contacts["kind"], p.contacts["i"])) == [(0, 0), (1, 0), (1, 1)]
    assert p.detect_contacts(0.08) == 2
    assert set(p.contacts["kind"]) == {1}
    assert p.detect_contacts(0.04) == 0
    assert p.detect_contacts(0.0) == 0


@pytest.mark.parametrize("dim", [2, 3])
def test_detection_matches_brute_force(dim):
    p = random_scene(dim, n=150)
    alert = 0.02
    p.detect_contacts(alert)
    c = p.contacts
    found = {(int(k), int(i), int(j)): g for k, i, j, g in zip(c["kind"], c["i"], c["j"], c["gap"])}
    expect = brute_force_contacts(p, alert)
    assert set(found) == set(expect)
    for key, g in expect.items():
        assert found[key] == pytest.approx(g, abs=1e-14)
    # order: (i, kind, j)
    keys = list(zip(c["i"].tolist(), c["kind"].tolist(), c["j"].tolist()))
    assert keys == sorted(keys)
    assert np.all(c["i"][c["kind"] == 0] < c["j"][c["kind"] == 0])
    np.testing.assert_allclose(np.linalg.norm(c["normal"], axis=1), 1.0, rtol=1e-14)


def test_detection_of_sparse_cloud_is_linear_sized():
    """Grains far apart (a sparse bounding box) still bin into about 2n cells."""
    p = GrainProblem(dim=3)
    x = np.array([[0, 0, 0], [1e6, 0, 0], [0, 1e6, 1e6], [0.5, 0, 0]], float)
    p.add_grains(x, 0.3)
    assert p.detect_contacts(0.01) == 1


# ---------------------------------------------------------------- seed formulas, bitwise
def _seed_solve(p, sweep, dt):
    """The seed's loop on a copy of p: sweeps until the worst correction < 1e-9/dt (at
    most 1000). Returns (the copy, each sweep's worst correction)."""
    ref = copy.deepcopy(p)
    its = []
    while True:
        its.append(sweep(ref, dt))
        if its[-1] < 1e-9 / dt or len(its) == 1000:
            return ref, its


def test_nlgs_sweeps_are_seed_formulas_bitwise():
    p = random_scene(2, n=80, seed=4, gravity=(0, -G))
    dt = 0.02
    p.detect_contacts(0.05)
    assert len(p.contacts["kind"]) > 40 and set(p.contacts["kind"]) >= {0, 1, 2}
    ref, its = _seed_solve(p, seed_sweep_nlgs, dt)
    it = p.solve_contacts_nlgs(1e-9, dt)
    assert it == len(its) > 3
    np.testing.assert_array_equal(p.v, ref.v)
    assert p.residual == its[-1]
    np.testing.assert_array_equal(p.omega, 0.0)


def test_jacobi_sweeps_are_seed_formulas_bitwise():
    p = random_scene(2, n=80, seed=5, gravity=(0, -G))
    dt = 0.02
    p.detect_contacts(0.05)
    ref, its = _seed_solve(p, seed_sweep_jacobi, dt)
    it = p.solve_contacts_jacobi(1e-9, dt)
    assert it == len(its) > 3
    np.testing.assert_array_equal(p.v, ref.v)


def test_steps_are_seed_formulas_bitwise():
    """Whole steps (gravity, detection, NLGS, drift) against the Python transcription."""
    p = box_pile()
    ref = copy.deepcopy(p)
    dt, tol, alert = 1e-3, 1e-7, 0.004
    for _ in range(60):
        p.step(dt, tol, alert)
        ref.v += ref.gravity * dt
        ref.detect_contacts(alert)
        while seed_sweep_nlgs(ref, dt) >= tol / dt:
            pass
        ref.x += ref.v * dt
    np.testing.assert_array_equal(p.x, ref.x)
    np.testing.assert_array_equal(p.v, ref.v)


# ---------------------------------------------------------------- convergence
def test_pile_comes_to_rest(settled_pile):
    """30 disks in a box: velocities ~ tol/dt, and a step adds less than tol of overlap
    per contact (the seed's criterion bounds the interpenetration of one step)."""
    p = copy.deepcopy(settled_pile)
    dt, tol = 1e-3, 1e-7
    assert np.abs(p.v).max() < 1e-3
    p.detect_contacts(0.004)
    before = {(k, i, j): g for k, i, j, g in zip(p.contacts["kind"], p.contacts["i"],
                                                  p.contacts["j"], p.contacts["gap"])}
    for _ in range(50):
        p.step(dt, tol, 0.004)
    assert np.abs(p.v).max() < 10 * tol / dt
    c = p.contacts
    after = {(k, i, j): g for k, i, j, g in zip(c["kind"], c["i"], c["j"], c["gap"])}
    common = set(before) & set(after)
    assert len(common) > 60
    # overlaps grow by less than tol per step
    deepening = max(max(0.0, -after[key]) - max(0.0, -before[key]) for key in common)
    assert deepening < 50 * tol
    assert np.all(p.x[:, 1] > 0.0) and np.all(p.x[:, 0] > 0.0) and np.all(p.x[:, 0] < 0.11)


def test_nlgs_and_jacobi_converge_to_the_same_velocities(settled_pile):
    """With the projected normal rule the frictionless velocities are unique: NLGS and
    (relaxed) Jacobi, each solved to tol/100, agree within tol/dt."""
    dt, tol = 1e-3, 1e-8
    out = {}
    for solver in ("nlgs", "jacobi"):
        q = copy.deepcopy(settled_pile)
        q.normal_rule = "projected"                # Jacobi relaxation 0.5 by default
        q.v += q.gravity * dt
        q.detect_contacts(0.004)
        getattr(q, "solve_contacts_" + solver)(tol / 100, dt, itmax=100000)
        out[solver] = q.v
    assert np.abs(out["nlgs"] - out["jacobi"]).max() < tol / dt


def test_seed_rule_limit_depends_on_the_order(settled_pile):
    """The seed rule never takes back an impulse: NLGS and Jacobi both meet every
    constraint but may stop in different admissible states (documented behaviour)."""
    dt = 1e-3
    for solver in ("nlgs", "jacobi"):
        q = copy.deepcopy(settled_pile)
        q.v += q.gravity * dt
        q.detect_contacts(0.004)
        getattr(q, "solve_contacts_" + solver)(1e-10, dt, itmax=100000)
        c = q.contacts
        vi = q.v[c["i"]]
        vj = np.where((c["kind"] == 0)[:, None], q.v[c["j"]], 0.0)
        vn = np.einsum("ij,ij->i", vi - vj, c["normal"])
        assert np.all(vn >= -np.maximum(c["gap"], 0.0) / dt - 1e-10 / dt * 10)
        assert np.all(c["impulse_n"] >= 0.0)


def test_itmax_cap_warns_with_residual():
    p = random_scene(2, n=80, seed=4, gravity=(0, -G))
    p.detect_contacts(0.05)
    for name in ("nlgs", "jacobi"):
        q = copy.deepcopy(p)
        with pytest.warns(ConvergenceWarning) as rec:
            it = getattr(q, "solve_contacts_" + name)(1e-9, 0.02, itmax=1)
        assert it == 1
        w = rec[0].message
        assert w.iterations == 1 and w.residual == q.residual > 1e-9 / 0.02
        assert "itmax=1" in str(w) and ("%.6g" % w.residual) in str(w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        it = copy.deepcopy(p).solve_contacts_nlgs(1e-9, 0.02)
    assert 1 < it < 1000


def test_no_contacts_zero_iterations():
    p = GrainProblem(dim=2)
    p.add_grains([[0, 0]], 0.1)
    assert p.step(1e-3, 1e-6, 0.01) == 0
    assert p.v[0, 1] == pytest.approx(-G * 1e-3)
    assert p.x[0, 1] == pytest.approx(-G * 1e-6)
    assert p.time == pytest.approx(1e-3)


# ---------------------------------------------------------------- friction
def incline(angle, mu, rotation, steps=100, dt=1e-3):
    """A disk touching a segment inclined by `angle`, released at rest. Returns the
    problem and the unit vector down the slope."""
    p = GrainProblem(dim=2, gravity=(0, -G), friction=mu)
    down = np.array([math.cos(angle), -math.sin(angle)])
    up_n = np.array([math.sin(angle), math.cos(angle)])
    p.add_segments([-2.0 * down], [2.0 * down])
    r = 0.05
    p.add_grains([r * up_n], r, density=1000.0)
    if not rotation:
        p.inertia[:] = np.inf
    for _ in range(steps):
        p.step(dt, 1e-12, 0.01)
    return p, down, up_n


def test_block_on_incline_sticks_when_mu_exceeds_tan():
    angle = math.radians(20.0)
    p, down, up_n = incline(angle, 1.05 * math.tan(angle), rotation=False)
    assert np.abs(p.v).max() < 1e-15
    np.testing.assert_allclose(p.x[0], 0.05 * up_n, atol=1e-15)
    c = p.contacts
    assert abs(np.linalg.norm(c["impulse_t"][0])) == pytest.approx(
        p.m[0] * G * math.sin(angle) * 1e-3, rel=1e-12)


def test_block_on_incline_slides_with_coulomb_acceleration():
    angle, mu, steps, dt = math.radians(30.0), 0.2, 100, 1e-3
    p, down, up_n = incline(angle, mu, rotation=False, steps=steps, dt=dt)
    a = G * (math.sin(angle) - mu * math.cos(angle))
    assert p.v[0] @ down == pytest.approx(a * steps * dt, rel=1e-12)
    assert p.v[0] @ up_n == pytest.approx(0.0, abs=1e-14)
    # implicit Euler positions: sum of k a dt^2, k = 1..steps
    assert (p.x[0] - 0.05 * up_n) @ down == pytest.approx(
        a * dt * dt * steps * (steps + 1) / 2, rel=1e-12)
    assert np.all(p.omega == 0.0)


def test_disk_rolls_down_incline_without_slipping():
    """Free rotation, enough friction: a = g sin / (1 + I/(m r^2)) = 2/3 g sin, v = omega r."""
    angle, steps, dt = math.radians(30.0), 100, 1e-3
    p, down, up_n = incline(angle, 0.5, rotation=True, steps=steps, dt=dt)
    v = p.v[0] @ down
    assert v == pytest.approx(2.0 / 3.0 * G * math.sin(angle) * steps * dt, rel=1e-12)
    assert -p.omega[0] * 0.05 == pytest.approx(v, rel=1e-12)      # clockwise rolling
    assert p.orientation[0] == pytest.approx(-sum(
        2.0 / 3.0 * G * math.sin(angle) * k * dt for k in range(1, steps + 1)) * dt / 0.05,
        rel=1e-10)


def test_disk_slips_and_spins_on_steep_incline():
    """mu < tan/3: sliding at g (sin - mu cos), spin-up d omega/dt = mu m g cos r / I."""
    angle, mu, steps, dt = math.radians(45.0), 0.1, 100, 1e-3
    p, down, up_n = incline(angle, mu, rotation=True, steps=steps, dt=dt)
    t = steps * dt
    assert p.v[0] @ down == pytest.approx(G * (math.sin(angle) - mu * math.cos(angle)) * t,
                                          rel=1e-12)
    r, m = 0.05, p.m[0]
    assert -p.omega[0] == pytest.approx(mu * m * G * math.cos(angle) * r / p.inertia[0] * t,
                                        rel=1e-12)


def test_mu_zero_never_turns_grains():
    p = random_scene(2, n=80, seed=4, gravity=(0, -G))
    for _ in range(3):
        p.step(0.01, 1e-8, 0.05)
    assert np.all(p.omega == 0.0) and np.all(p.contacts["impulse_t"] == 0.0)


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_overlap_correction(beta):
    """An overlap of 0.01 at rest: kept by the seed rule (beta 0), reduced by the
    fraction beta in one step otherwise."""
    p = GrainProblem(dim=2, gravity=(0, 0), overlap_correction=beta)
    p.add_grains([[0.0, 0.0], [0.19, 0.0]], 0.1)
    p.step(1e-3, 1e-12, 0.01)
    gap = np.linalg.norm(p.x[1] - p.x[0]) - 0.2
    assert gap == pytest.approx(-0.01 * (1.0 - beta), abs=1e-13)
    assert p.v[1, 0] - p.v[0, 0] == pytest.approx(0.01 * beta / 1e-3, rel=1e-12, abs=1e-12)


# ---------------------------------------------------------------- restitution
@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
def test_restitution_bounce_on_segment(e):
    """A disk touching the segment and moving down at u bounces at e u (gravity off);
    with gravity, dropped from a height, it leaves at e |u^-| (e > 0: Newton's law of
    Moreau-Jean) or lands with -d/dt (e = 0: the seed's gap closure)."""
    p = GrainProblem(dim=2, gravity=(0, 0), restitution=e)
    p.add_segments([[-1, 0]], [[1, 0]])
    p.add_grains([[0.0, 0.1]], 0.1, v=[[0.3, -2.0]])
    p.step(1e-3, 1e-12, 0.01)
    assert p.v[0, 1] == pytest.approx(2.0 * e, rel=1e-12, abs=1e-15)
    assert p.v[0, 0] == 0.3
    # drop: find the impact step, compare with the closed form
    q = GrainProblem(dim=2, restitution=e)
    q.add_segments([[-1, 0]], [[1, 0]])
    q.add_grains([[0.0, 0.15]], 0.1)
    dt = 1e-3
    for _ in range(200):
        v_free = q.v[0, 1] - G * dt
        h = q.x[0, 1] - 0.1
        q.step(dt, 1e-12, 0.01)
        if q.v[0, 1] != v_free:            # the contact acted this step
            break
    if e > 0:
        assert q.v[0, 1] == pytest.approx(-e * v_free, rel=1e-12)
    else:
        assert q.v[0, 1] == pytest.approx(-h / dt, rel=1e-12)


def test_restitution_two_grains_conserves_momentum():
    e, m1, m2, u1, u2 = 0.7, 1.0, 4.0, 2.0, -1.0
    p = GrainProblem(dim=2, gravity=(0, 0), restitution=e)
    p.add_grains([[0, 0], [0.2, 0]], 0.1, mass=[m1, m2], v=[[u1, 0], [u2, 0]])
    p.step(1e-3, 1e-12, 0.01)
    w1 = (m1 * u1 + m2 * u2 - m2 * e * (u1 - u2)) / (m1 + m2)
    w2 = (m1 * u1 + m2 * u2 + m1 * e * (u1 - u2)) / (m1 + m2)
    np.testing.assert_allclose(p.v[:, 0], [w1, w2], rtol=1e-12)


# ---------------------------------------------------------------- 3D
def test_sphere_rests_on_plane():
    p = GrainProblem(dim=3, friction=0.3)
    p.add_planes([[0, 0, 0]], [[0, 0, 2.0]])
    np.testing.assert_array_equal(p.plane_normals, [[0, 0, 1]])
    p.add_grains([[0.1, 0.2, 0.05]], 0.05, density=2500.0)
    for _ in range(50):
        p.step(1e-3, 1e-12, 0.005)
    np.testing.assert_array_equal(p.v, 0.0)
    np.testing.assert_array_equal(p.x, [[0.1, 0.2, 0.05]])
    m = 4.0 / 3.0 * math.pi * 0.05 ** 3 * 2500.0
    assert p.m[0] == pytest.approx(m)
    assert p.contacts["impulse_n"][0] == pytest.approx(m * G * 1e-3, rel=1e-13)


@pytest.mark.parametrize("e", [0.0, 1.0])
def test_two_spheres_head_on(e):
    m1, m2 = 1.0, 2.0
    p = GrainProblem(dim=3, gravity=(0, 0, 0), restitution=e)
    d = np.array([1.0, 2.0, 2.0]) / 3.0                # line of centres
    p.add_grains([np.zeros(3), 0.2 * d], 0.1, mass=[m1, m2], v=[1.5 * d, -0.5 * d])
    p.step(1e-3, 1e-13, 0.01)
    u1, u2 = 1.5, -0.5
    w1 = (m1 * u1 + m2 * u2 - m2 * e * (u1 - u2)) / (m1 + m2)
    w2 = (m1 * u1 + m2 * u2 + m1 * e * (u1 - u2)) / (m1 + m2)
    np.testing.assert_allclose(p.v, [w1 * d, w2 * d], rtol=1e-12, atol=1e-15)


def test_sphere_rolls_on_inclined_plane():
    """3D rolling: a = 5/7 g sin, omega = v / r about the axis n x down."""
    angle, dt, steps, r = math.radians(25.0), 1e-3, 100, 0.05
    n = np.array([math.sin(angle), 0.0, math.cos(angle)])
    down = np.array([math.cos(angle), 0.0, -math.sin(angle)])
    p = GrainProblem(dim=3, friction=0.8)
    p.add_planes([[0, 0, 0]], [n])
    p.add_grains([r * n], r)
    for _ in range(steps):
        p.step(dt, 1e-13, 0.01)
    v = 5.0 / 7.0 * G * math.sin(angle) * steps * dt
    np.testing.assert_allclose(p.v[0], v * down, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(p.omega[0], v / r * np.cross(n, down), rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(np.linalg.norm(p.orientation[0]), 1.0, rtol=1e-14)


def test_3d_pile_on_plane_settles():
    rng = np.random.default_rng(2)
    p = GrainProblem(dim=3, friction=0.3)
    p.add_planes([[0, 0, 0], [0, 0, 0], [0.1, 0.1, 0], [0, 0, 0], [0.1, 0.1, 0]],
                 [[0, 0, 1], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]])
    g = np.arange(3) * 0.03 + 0.02
    x = np.array([[a, b, c] for a in g for b in g for c in g[:2]])
    p.add_grains(x + rng.uniform(-1e-3, 1e-3, x.shape), 0.012, density=1000.0)
    for _ in range(1000):
        p.step(1e-3, 1e-8, 0.003)
    assert np.abs(p.v).max() < 1e-2
    assert p.contacts["gap"].min() > -1e-4
    assert np.all((p.x > 0.0) & (p.x[:, :2] < 0.1).all(axis=1)[:, None])


# ---------------------------------------------------------------- determinism
@pytest.mark.parametrize("mu", [0.0, 0.4])
def test_jacobi_and_detection_same_bits_on_1_and_2_threads(mu):
    runs = []
    for threads in (1, 2):
        p = box_pile(friction=mu, threads=threads)
        for _ in range(50):
            p.step(1e-3, 1e-7, 0.004, solver="jacobi")
        runs.append(p)
    a, b = runs
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.v, b.v)
    np.testing.assert_array_equal(a.omega, b.omega)
    for k in a.contacts:
        np.testing.assert_array_equal(a.contacts[k], b.contacts[k])


# ---------------------------------------------------------------- bad input
def _err(func, *words):
    with pytest.raises(InputError) as info:
        func()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_bad_input():
    p = GrainProblem(dim=2)
    _err(lambda: GrainProblem(dim=4), "dim", "4")
    _err(lambda: GrainProblem(dim=2, gravity=(0, 0, 1)), "gravity")
    _err(lambda: GrainProblem(friction=-0.1), "friction", "-0.1")
    _err(lambda: GrainProblem(restitution=1.5), "restitution", "1.5")
    _err(lambda: GrainProblem(normal_rule="x"), "normal_rule", "'x'")
    _err(lambda: GrainProblem(relaxation=1.5), "relaxation", "1.5")
    _err(lambda: GrainProblem(overlap_correction=-0.5), "overlap_correction", "-0.5")
    _err(lambda: GrainProblem(threads=0), "threads", "0")
    _err(lambda: p.add_grains([[0, 0], [1, 1]], [0.1, -0.2]), "r[1]", "-0.2")
    _err(lambda: p.add_grains([[0, 0]], 0.0), "r[0]", "0.0")
    _err(lambda: p.add_grains([[0, 0], [1, float("nan")]], 0.1), "x[1]", "nan")
    _err(lambda: p.add_grains([[0, 0]], 0.1, mass=-1.0), "mass", "-1.0")
    _err(lambda: p.add_grains([[0, 0]], 0.1, density=1.0, mass=1.0), "density", "mass")
    _err(lambda: p.add_grains([[0, 0, 0]], 0.1), "x", "(n, 2)")
    _err(lambda: p.add_segments([[0, 0], [1, 1]], [[1, 0], [1, 1]]), "segment 1",
         "zero length", "[1.0, 1.0]")
    _err(lambda: p.add_planes([[0, 0]], [[0, 0]]), "normals[0]")
    assert p.n == 0 and len(p.segments) == 0
    p.add_grains([[0, 0]], 0.1)
    for tol, dt, itmax, words in ((0.0, 1e-3, 10, ("tol", "0.0")),
                                  (-1e-6, 1e-3, 10, ("tol", "-1e-06")),
                                  (1e-6, 0.0, 10, ("dt", "0.0")),
                                  (1e-6, float("inf"), 10, ("dt", "inf")),
                                  (1e-6, 1e-3, 0, ("itmax", "0")),
                                  (1e-6, 1e-3, 2.5, ("itmax", "2.5"))):
        _err(lambda: p.solve_contacts_nlgs(tol, dt, itmax), *words)
        _err(lambda: p.solve_contacts_jacobi(tol, dt, itmax), *words)
        _err(lambda: p.step(dt, tol, 0.01, itmax=itmax), *words)
    _err(lambda: p.step(1e-3, 1e-6, 0.01, solver="sor"), "solver", "'sor'")
    _err(lambda: p.detect_contacts(-0.1), "alert", "-0.1")
    assert p.time == 0.0 and np.all(p.v == 0.0)


# ---------------------------------------------------------------- attributes
def test_masses_inertia_indices_and_writable_state():
    p = GrainProblem(dim=2)
    ids = p.add_grains([[0, 0], [1, 0]], [0.1, 0.2], density=[1000.0, 10.0])
    np.testing.assert_array_equal(ids, [0, 1])
    np.testing.assert_allclose(p.m, [math.pi * 0.01 * 1000.0, math.pi * 0.04 * 10.0])
    np.testing.assert_allclose(p.inertia, 0.5 * p.m * p.r ** 2)
    np.testing.assert_array_equal(p.add_grains([[3, 0]], 0.1, mass=2.0), [2])
    assert p.m[2] == 2.0 and p.x.shape == (3, 2) and p.omega.shape == (3,)
    q = GrainProblem(dim=3)
    q.add_grains([[0, 0, 0]], 0.1, density=1000.0)
    assert q.m[0] == pytest.approx(4.0 / 3.0 * math.pi * 1e-3 * 1000.0)
    assert q.inertia[0] == pytest.approx(0.4 * q.m[0] * 0.01)
    assert q.omega.shape == (1, 3) and q.orientation.shape == (1, 4)
    # a course script may overwrite the state with lists or other dtypes
    p.v = [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    p.x[2] = [0.5, 0.0]
    p.step(1e-3, 1e-9, 0.5)
    assert isinstance(p.v, np.ndarray) and p.v.dtype == np.float64
    assert set(p.contacts) == {"kind", "i", "j", "normal", "gap", "impulse_n", "impulse_t"}
    p.x = np.zeros((2, 2))
    with pytest.raises(InputError, match=r"x must have shape \(3, 2\)"):
        p.step(1e-3, 1e-9, 0.5)


# ---------------------------------------------------------------- row widths of the sweeps
def _planar_problem(n=60, nc=150, seed=3):
    """A random 2D contact problem (grain pairs and walls, friction, some gaps open) with
    its per-contact constants from the prepare kernel."""
    from pdem._kernels import nscd as k
    rng = np.random.default_rng(seed)
    kind = np.where(rng.random(nc) < 0.15, 1, 0).astype(np.int8)
    ci = rng.integers(0, n, nc).astype(np.int32)
    cj = np.where(kind == 0, (ci + rng.integers(1, n, nc)) % n, 0).astype(np.int32)
    angle = rng.uniform(0.0, 2.0 * np.pi, nc)
    normal = np.column_stack([np.cos(angle), np.sin(angle), np.zeros(nc)])
    gap = rng.uniform(-1e-4, 2e-4, nc)
    vb = np.zeros((nc, 3))
    v = np.zeros((n, 3))
    v[:, :2] = rng.normal(0.0, 0.1, (n, 2))
    r = rng.uniform(0.8e-3, 1.2e-3, n)
    m = 2500.0 * np.pi * r ** 2
    inv_inertia = 2.0 / (m * r ** 2)
    mu = np.full(nc, 0.4)
    W, wt, target, pn, pt = (np.zeros(nc), np.zeros(nc), np.zeros(nc), np.zeros(nc),
                             np.zeros((nc, 3)))
    k.prepare(kind, ci, cj, normal, gap, vb, v, r, m, inv_inertia, 1e-3, np.zeros(nc), 0.0,
              W, wt, target, pn, pt, 1)
    spin = rng.normal(0.0, 5.0, n)
    return dict(kind=kind, ci=ci, cj=cj, normal=normal, vb=vb, W=W, wt=wt, target=target,
                v=v, spin=spin, r=r, m=m, inv_inertia=inv_inertia, mu=mu)


@pytest.mark.parametrize("solver", ["nlgs", "jacobi"])
def test_sweeps_give_the_same_bits_for_every_row_width(solver):
    """The sweeps specialize on the widths of the velocity rows (2 or 3) and spin rows
    (1 or 3); a planar problem stored three ways ((n, 2) and (n, 1) as GrainProblem,
    (n, 3) and (n, 1) as a 2D Simulation, (n, 3) and (n, 3) as 3D) gives the same
    velocities, spins and impulses bit for bit."""
    from pdem._kernels import contacts as ck, nscd as k
    p = _planar_problem()
    nc, n = len(p["kind"]), len(p["v"])
    out = []
    for sv, nw in ((2, 1), (3, 1), (3, 3)):
        v = p["v"][:, :sv].copy()
        w = np.zeros((n, nw))
        w[:, nw - 1] = p["spin"]
        pn, pt = np.zeros(nc), np.zeros((nc, 3))
        args = (p["kind"], p["ci"], p["cj"], p["normal"], p["vb"], p["W"], p["wt"],
                p["target"], v, w, p["r"], p["m"], p["inv_inertia"], p["mu"], 0)
        if solver == "nlgs":
            res = [k.sweep_nlgs(*args, pn, pt, np.ones(n, np.int8), np.zeros_like(v),
                                np.zeros_like(w)) for _ in range(4)]
        else:
            start, entry = ck.build_gather_lists(p["ci"], np.where(p["kind"] == 0, p["cj"], -1)
                                                 .astype(np.int32), n)
            res = [k.sweep_jacobi(*args, 0.8, pn, pt, start, entry, np.empty((nc, 12)),
                                  np.empty(nc), n, 2) for _ in range(4)]
        out.append((res, v[:, :2].copy(), w[:, nw - 1].copy(), pn, pt[:, :2].copy()))
    assert out[0][0][0] > 0.0 and np.any(out[0][3] > 0.0)    # contacts did work
    for other in out[1:]:
        assert other[0] == out[0][0]
        for a, b in zip(other[1:], out[0][1:]):
            assert a.tobytes() == b.tobytes()


def test_sweeps_refuse_rows_of_other_widths():
    from pdem._kernels import nscd as k
    p = _planar_problem(n=4, nc=3)
    nc, n = 3, 4
    with pytest.raises(ValueError, match="v \\(n, 2\\|3\\) and w \\(n, 1\\|3\\) expected, got 4"):
        k.sweep_nlgs(p["kind"], p["ci"], p["cj"], p["normal"], p["vb"], p["W"], p["wt"],
                     p["target"], np.zeros((n, 4)), np.zeros((n, 1)), p["r"], p["m"],
                     p["inv_inertia"], p["mu"], 0, np.zeros(nc), np.zeros((nc, 3)),
                     np.ones(n, np.int8), np.zeros((n, 4)), np.zeros((n, 1)))
    with pytest.raises(ValueError, match="every per-contact array needs 3 rows"):
        k.sweep_nlgs(p["kind"], p["ci"], p["cj"], p["normal"], p["vb"], p["W"], p["wt"],
                     p["target"], np.zeros((n, 3)), np.zeros((n, 1)), p["r"], p["m"],
                     p["inv_inertia"], p["mu"], 0, np.zeros(2), np.zeros((nc, 3)),
                     np.ones(n, np.int8), np.zeros((n, 3)), np.zeros((n, 1)))
