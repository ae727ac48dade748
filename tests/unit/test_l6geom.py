"""L6Geom local contact coordinates (seed 000) through pdem._kernels.contacts.geometry_step.

geometry_step runs the kernel's inline L6Geom routine alone for sphere pairs: particle 1
at the origin, x2 = position of 2 relative to 1, velocities at t - dt/2, positions at t.
T is stored by rows (row 0 = normal). Every expected value below is a closed form
(rigid rotations, circular orbits, constant spins) or an independent numpy
re-implementation of the seed's formulas, never pdem output.

Orders of accuracy (derived from the seed's formulas, see each test's docstring):
  * rigid motion about an axis with Omega_n Omega_t != 0 drifts u_t at FIRST order:
    the seed takes branch vectors at t but velocities at t - dt/2, so
    v_r = Omega x (d(t-dt/2) - d(t)) ~ -(dt/2) Omega x (Omega x d), whose tangential
    part -(dt/2)|d| Omega_n Omega_t is constant in the co-rotating frame;
  * the frame T follows any rigid rotation to second order (a symmetric
    re-normalization of the linearized row update a - a x o; Gram-Schmidt would
    leave a first-order twist drift -(dt/2) Omega_1 Omega_2 t);
  * the approximation flags are first order wherever they matter (mid-step normal
    with approaching + rotating normal, mid-step frame with a twisting frame).
"""
import math

import numpy as np
import pytest

from pdem._kernels.contacts import geometry_step

APPROX_MID_NORMAL = 1
NO_RENORM_MID_NORMAL = 2
APPROX_MID_TRSF = 4
NO_RENORM_TRSF = 8
NO_RATCH = 16
APPROX = APPROX_MID_NORMAL | APPROX_MID_TRSF

EX, EY, EZ = np.eye(3)


# ---------------------------------------------------------------- helpers
def unit(a):
    return np.asarray(a, float) / np.linalg.norm(a)


def rotmat(rv):
    """Rotation matrix of the rotation vector rv (Rodrigues, exact)."""
    rv = np.asarray(rv, float)
    th = np.linalg.norm(rv)
    if th == 0.0:
        return np.eye(3)
    k = rv / th
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(th) * K + (1.0 - math.cos(th)) * (K @ K)


class Geom:
    """State arrays of m contacts, driven through geometry_step."""

    def __init__(self, m=1):
        self.m = m
        self.active = np.zeros(m, np.int8)
        self.T = np.zeros((m, 9))
        self.u = np.zeros((m, 3))
        self.phi = np.zeros((m, 3))
        self.udot = np.zeros((m, 3))
        self.phidot = np.zeros((m, 3))

    def _a(self, v):
        return np.array(np.broadcast_to(np.asarray(v, float), (self.m, 3)), order="C")

    def step(self, x2, v1=0.0, v2=0.0, w1=0.0, w2=0.0, r1=0.5, r2=0.3, dt=1e-3, flags=0):
        geometry_step(self._a(x2), self._a(v1), self._a(v2), self._a(w1), self._a(w2),
                      float(r1), float(r2), float(dt), int(flags), self.active, self.T,
                      self.u, self.phi, self.udot, self.phidot)

    def Tm(self, k=0):
        return self.T[k].reshape(3, 3).copy()


def run_motion(x1f, x2f, v1f, v2f, w1f, w2f, t_end, n, flags, r1=0.5, r2=0.3):
    """Form at t = 0, then n steps to t_end: positions at t, velocities at t - dt/2.
    Returns (geom, T0)."""
    dt = t_end / n
    g = Geom()
    g.step(x2f(0.0) - x1f(0.0), r1=r1, r2=r2, dt=dt, flags=flags)
    T0 = g.Tm()
    for k in range(1, n + 1):
        t, tm = k * dt, (k - 0.5) * dt
        g.step(x2f(t) - x1f(t), v1f(tm), v2f(tm), w1f(tm), w2f(tm), r1, r2, dt, flags)
    return g, T0


def rigid_run(Omega, d0, t_end, n, flags, X0=(0.2, -1.0, 0.4), x10=(1.0, 2.0, 3.0),
              V=(0.3, 0.1, -0.2), r1=0.5, r2=0.3):
    """The pair moves as a rigid body: translation V plus rotation Omega about the axis
    through the point X0 + V t. Positions exact, v_i(t - dt/2) = V + Omega x (x_i(t - dt/2)
    - X0 - V (t - dt/2)), w_i = Omega. Returns (u_t error, |phi|, T error, T0, geom)."""
    Omega, d0, X0, x10, V = (np.asarray(a, float) for a in (Omega, d0, X0, x10, V))

    def x(i):
        return lambda s: X0 + V * s + rotmat(Omega * s) @ (x10 + (d0 if i == 2 else 0.0) - X0)

    def v(i):
        return lambda s: V + np.cross(Omega, x(i)(s) - X0 - V * s)

    g, T0 = run_motion(x(1), x(2), v(1), v(2), lambda s: Omega, lambda s: Omega,
                       t_end, n, flags, r1, r2)
    T_exact = T0 @ rotmat(Omega * t_end).T          # rows rotated rigidly
    return (np.linalg.norm(g.u[0, 1:]), np.linalg.norm(g.phi[0]),
            np.abs(g.Tm() - T_exact).max(), T0, g)


def _local_axes(n):
    """Initial frame rule (|n_y| < |n_z| -> y in xz plane), computed independently."""
    y = unit(np.cross(n, EY) if abs(n[1]) < abs(n[2]) else np.cross(n, EZ))
    return np.array([n, y, np.cross(n, y)])


def ratios(errors):
    e = np.asarray(errors, float)
    return e[:-1] / e[1:]


# ---------------------------------------------------------------- contact formation
def _special_normals():
    s = [EX, -EX, EY, -EY, EZ, -EZ,
         (0.0, 0.3, 0.9), (0.0, 0.9, 0.3), (0.5, -0.2, 0.6), (0.5, -0.6, 0.2),
         (0.1, 0.2, -0.9),     # n_y > n_z but |n_y| < |n_z|: the magnitude rule applies
         (0.1, -0.9, 0.2),     # n_y < n_z but |n_y| > |n_z|
         (0.3, 0.5, -0.5), (1.0, 1.0, 1.0), (0.0, 1.0, -1.0),  # ties |n_y| = |n_z|
         (1.0, 1e-12, -2e-12), (1e-9, 1.0, 1e-9), (1e-9, 1e-9, -1.0)]
    return [unit(a) for a in s]


def test_initial_axes_rule_random_and_special_normals():
    rng = np.random.default_rng(42)
    normals = np.array(_special_normals() + [unit(a) for a in rng.normal(size=(400, 3))])
    m = len(normals)
    r1, r2 = 0.5, 0.3
    dist = rng.uniform(0.5, 1.0, m)                      # overlapping and separated alike
    x2 = normals * dist[:, None]
    g = Geom(m)
    g.step(x2, v1=rng.normal(size=(m, 3)), v2=rng.normal(size=(m, 3)),
           w1=rng.normal(size=(m, 3)), w2=rng.normal(size=(m, 3)), r1=r1, r2=r2)
    assert np.all(g.active == 1)
    T = g.T.reshape(m, 3, 3)
    eye = np.broadcast_to(np.eye(3), (m, 3, 3))
    np.testing.assert_allclose(T @ T.transpose(0, 2, 1), eye, atol=2e-15)
    np.testing.assert_allclose(np.linalg.det(T), 1.0, atol=2e-15)          # right-handed
    np.testing.assert_allclose(np.cross(T[:, 0], T[:, 1]), T[:, 2], atol=2e-15)
    np.testing.assert_allclose(T[:, 0], normals, atol=1e-15)                # row 0 = n
    xz = np.abs(normals[:, 1]) < np.abs(normals[:, 2])
    assert xz.any() and (~xz).any()
    # local y in the xz plane (y component 0) if |n_y| < |n_z|, else in the xy plane
    assert np.all(np.abs(T[xz, 1, 1]) <= 1e-15)
    assert np.all(np.abs(T[~xz, 1, 2]) <= 1e-15)
    # u = (|x2| - r1 - r2, 0, 0), phi = 0, rates 0 at formation
    np.testing.assert_allclose(g.u[:, 0], np.linalg.norm(x2, axis=1) - (r1 + r2),
                               rtol=0, atol=1e-15)
    assert np.all(g.u[:, 1:] == 0.0) and np.all(g.phi == 0.0)
    assert np.all(g.udot == 0.0) and np.all(g.phidot == 0.0)


@pytest.mark.parametrize("n, plane_axis", [
    (EX, 2), (-EX, 2), (EY, 2), (-EY, 2), (EZ, 1), (-EZ, 1)])
def test_initial_axes_of_coordinate_normals(n, plane_axis):
    """For n = +-e_i the local y axis is a unit coordinate axis in the required plane."""
    g = Geom()
    g.step(0.7 * n)
    T = g.Tm()
    assert T[1, plane_axis] == 0.0
    assert abs(abs(T[1]).max() - 1.0) < 1e-15 and abs(T[1] @ n) == 0.0
    np.testing.assert_allclose(np.cross(T[0], T[1]), T[2], atol=0)


# ---------------------------------------------------------------- normal displacement
@pytest.mark.parametrize("flags", [0, APPROX, NO_RATCH, 31])
def test_normal_displacement_is_non_incremental(flags):
    rng = np.random.default_rng(7)
    m, r1, r2 = 16, 0.41, 0.27
    g = Geom(m)
    x2 = rng.normal(size=(m, 3))
    x2 *= (0.6 / np.linalg.norm(x2, axis=1))[:, None]
    g.step(x2, r1=r1, r2=r2, flags=flags)
    for _ in range(50):
        x2 = x2 + rng.normal(scale=0.02, size=(m, 3))      # arbitrary relative motion
        g.step(x2, rng.normal(size=(m, 3)), rng.normal(size=(m, 3)),
               rng.normal(size=(m, 3)), rng.normal(size=(m, 3)), r1, r2, 1e-3, flags)
        expected = np.array([math.sqrt(a @ a) for a in x2]) - (r1 + r2)
        np.testing.assert_allclose(g.u[:, 0], expected, rtol=0, atol=4e-16)


# ---------------------------------------------------------------- tangential sliding
def test_orbit_sliding_accumulates_s_t_exactly():
    """Particle 2 slides around particle 1 on a circle at constant distance D with speed
    s = Omega D, no particle rotation: the frame bends with n and the tangential
    displacement in local coordinates is exactly s t along the sliding direction. The
    orbit axis is the initial local z axis, so the motion stays in the plane of n and
    local y, where the frame update is exact up to round-off."""
    r1, r2, D, Om = 0.5, 0.3, 0.79, 0.8
    T0_rule = _local_axes(unit((0.3, -0.5, 0.8)))
    a = T0_rule[2]                                 # orbit axis
    d0 = D * T0_rule[0]
    x2 = lambda s: rotmat(a * Om * s) @ d0
    v2 = lambda s: np.cross(a * Om, x2(s))
    zero = lambda s: np.zeros(3)
    t_end = 1.0
    for flags in (0, APPROX_MID_TRSF):
        g, T0 = run_motion(zero, x2, zero, v2, zero, zero, t_end, 200, flags, r1, r2)
        np.testing.assert_allclose(T0, T0_rule, atol=1e-15)
        expected = np.array([Om * D * t_end, 0.0])   # along local y = a x n
        # APPROX_MID_TRSF maps by T(t - dt): factor cos(Om dt / 2), second order
        tol = 1e-13 if flags == 0 else (Om * t_end / 200) ** 2 / 8 * Om * D * t_end * 1.01
        np.testing.assert_allclose(g.u[0, 1:], expected, rtol=0, atol=tol)
        assert np.all(g.phi == 0.0)
        np.testing.assert_allclose(g.Tm(), T0 @ rotmat(a * Om * t_end).T, rtol=0, atol=1e-13)


def test_straight_sliding_closed_form_second_order():
    """Particle 2 translates along a fixed tangential direction e at speed s, no rotation:
    d(t) = d0 + s e t, the frame bends about n0 x e, and u_t = D0 asinh(s t / D0) along
    T0 e (-> s t for s t << D0). Error second order in dt for the accurate flags."""
    r1, r2 = 0.5, 0.3
    n0 = unit((0.3, -0.5, 0.8))
    D0 = 0.78
    e = unit(np.cross(n0, (1.0, 0.2, -0.1)))     # tangential, not along a local axis
    s, t_end = 0.3, 1.0
    zero = lambda t: np.zeros(3)
    errs = []
    for n in (50, 100, 200):
        g, T0 = run_motion(zero, lambda t: D0 * n0 + s * e * t, zero, lambda t: s * e,
                           zero, zero, t_end, n, 0, r1, r2)
        expected = D0 * math.asinh(s * t_end / D0) * (T0 @ e)[1:]
        errs.append(np.abs(g.u[0, 1:] - expected).max())
        assert np.all(g.phi == 0.0)
        alpha = math.atan2(s * t_end, D0)
        np.testing.assert_allclose(g.Tm(), T0 @ rotmat(unit(np.cross(n0, e)) * alpha).T,
                                   rtol=0, atol=1e-7)
        assert abs(g.u[0, 0] - (math.hypot(D0, s * t_end) - r1 - r2)) < 1e-15
    assert errs[-1] < 1e-6 * s * t_end
    assert np.all((ratios(errs) > 3.0) & (ratios(errs) < 5.0)), errs


def test_orbit_with_approach_mid_normal_flag_is_first_order():
    """Particle 2 orbits particle 1 in a plane while approaching, D(t) = D0 - a t.
    Exact: u_t = Omega (D0 t - a t^2 / 2) along the sliding direction (the mid-step
    bisector normal is exactly the mid-step direction, so the accurate scheme is exact
    up to round-off). With APPROX_MID_NORMAL the normal velocity -a is removed along
    n(t-dt) instead, leaving a spurious in-plane part ~ a Omega dt / 2: first order."""
    r1, r2, D0, a_speed, Om = 0.5, 0.3, 0.79, 0.05, 1.0
    T0_rule = _local_axes(unit((0.2, 0.3, -1.0)))
    axis, d0dir = -T0_rule[1], T0_rule[0]      # orbit about local y
    D = lambda s: D0 - a_speed * s
    x2 = lambda s: D(s) * (rotmat(axis * Om * s) @ d0dir)
    v2 = lambda s: (-a_speed * (rotmat(axis * Om * s) @ d0dir)
                    + np.cross(axis * Om, x2(s)))
    zero = lambda s: np.zeros(3)
    t_end = 0.5
    e_slide = unit(np.cross(axis, d0dir))

    def err(n, flags):
        g, T0 = run_motion(zero, x2, zero, v2, zero, zero, t_end, n, flags, r1, r2)
        exact = Om * (D0 * t_end - 0.5 * a_speed * t_end ** 2) * (T0 @ e_slide)[1:]
        return np.abs(g.u[0, 1:] - exact).max()

    assert err(100, 0) < 1e-14
    e_mid = [err(n, APPROX_MID_NORMAL) for n in (100, 200, 400)]
    assert np.all((ratios(e_mid) > 1.8) & (ratios(e_mid) < 2.2)), e_mid
    # leading error: a Omega (dt/2) t_end
    dt = t_end / 400
    assert abs(e_mid[-1] / (a_speed * Om * 0.5 * dt * t_end) - 1.0) < 0.02


# ---------------------------------------------------------------- relative rotation
def test_relative_rotation_static_frame_phi_exact():
    """Centres fixed, spins with (w1 + w2).n = 0: no bending, no twist of the frame, so
    phi = T0 (w2 - w1) t and phidot = T0 (w2 - w1), for any flags."""
    n = unit((0.4, 0.1, -0.7))
    p, q = unit(np.cross(n, EX)), unit(np.cross(n, EY))
    w1 = 0.7 * p - 0.4 * n + 0.1 * q
    w2 = -0.2 * p + 0.4 * n + 1.3 * q            # normal parts cancel
    dt, nsteps = 1e-3, 300
    for flags in (0, APPROX, NO_RATCH):
        g = Geom()
        g.step(0.75 * n, dt=dt, flags=flags)
        T0 = g.Tm()
        for _ in range(nsteps):
            g.step(0.75 * n, 0.0, 0.0, w1, w2, dt=dt, flags=flags)
        np.testing.assert_allclose(g.Tm(), T0, rtol=0, atol=1e-15)
        np.testing.assert_allclose(g.phi[0], T0 @ (w2 - w1) * dt * nsteps, rtol=0, atol=1e-14)
        np.testing.assert_allclose(g.phidot[0], T0 @ (w2 - w1), rtol=0, atol=1e-15)


def _twisting_spin_run(n_steps, flags, t_end=1.0):
    """Centres fixed; both particles spin W about n, particle 2 also rolls (B) and
    particle 1 (A), A, B perpendicular to n. The frame twists at rate W about n;
    v_r = B x b2 - A x b1 is a fixed global vector perpendicular to n."""
    r1, r2 = 0.5, 0.3
    n = unit((0.2, -0.6, 0.3))
    D = 0.77
    W = 1.3
    A = 0.4 * unit(np.cross(n, (1.0, 0.0, 0.5)))
    B = 0.9 * unit(np.cross(n, (0.0, 1.0, -0.3)))
    w1, w2 = W * n + A, W * n + B
    un = D - r1 - r2
    b1, b2 = (r1 + 0.5 * un) * n, -(r2 + 0.5 * un) * n
    vr = np.cross(B, b2) - np.cross(A, b1)
    const = lambda v: (lambda s: v)
    g, T0 = run_motion(const(np.zeros(3)), const(D * n), const(np.zeros(3)),
                       const(np.zeros(3)), const(w1), const(w2), t_end, n_steps, flags, r1, r2)

    def integral(y):     # int_0^t Rn(-W s) y ds for y perpendicular to n
        return (math.sin(W * t_end) * y - (1 - math.cos(W * t_end)) * np.cross(n, y)) / W

    return g, T0, T0 @ integral(vr), T0 @ integral(B - A), T0 @ rotmat(n * W * t_end).T


def test_twisting_frame_phi_and_u_second_order():
    eu, ep, eT = [], [], []
    for n_steps in (50, 100, 200):
        g, T0, u_ex, phi_ex, T_ex = _twisting_spin_run(n_steps, 0)
        eu.append(np.abs(g.u[0, 1:] - u_ex[1:]).max())
        ep.append(np.abs(g.phi[0] - phi_ex).max())
        eT.append(np.abs(g.Tm() - T_ex).max())
    for e in (eu, ep, eT):
        assert e[-1] < 1e-4
        assert np.all((ratios(e) > 3.0) & (ratios(e) < 5.0)), e


def test_twisting_frame_mid_trsf_flag_is_first_order():
    """With APPROX_MID_TRSF the increments are mapped by T(t - dt) instead of the Slerp
    mid-step frame: a left Riemann sum of the rotating integrand, first order in dt,
    with leading error W dt / 2 * |int|, larger than the accurate scheme's."""
    eu, ep = [], []
    for n_steps in (100, 200, 400):
        g, T0, u_ex, phi_ex, _ = _twisting_spin_run(n_steps, APPROX_MID_TRSF)
        eu.append(np.abs(g.u[0, 1:] - u_ex[1:]).max())
        ep.append(np.abs(g.phi[0] - phi_ex).max())
        g0, _, u0_ex, phi0_ex, _ = _twisting_spin_run(n_steps, 0)
        assert np.abs(g0.phi[0] - phi0_ex).max() < 0.1 * ep[-1]
    for e in (eu, ep):
        assert np.all((ratios(e) > 1.8) & (ratios(e) < 2.2)), e


# ---------------------------------------------------------------- rigid-body motion
R1, R2 = 0.5, 0.3
D_RIGID = 0.99 * (R1 + R2)                 # slightly overlapping
N0_RIGID = unit((1.0, 0.4, -0.2))


def _special_axes():
    T0 = _local_axes(N0_RIGID)
    return {
        "twist": 0.9 * T0[0],                       # Omega parallel to n
        "bend_y": 1.1 * T0[1],                      # Omega along local y
        "bend_z": -0.8 * T0[2],                     # Omega along local z
    }


@pytest.mark.parametrize("flags", [0, APPROX], ids=["accurate", "approx"])
@pytest.mark.parametrize("axis", ["twist", "bend_y", "bend_z"])
def test_rigid_motion_second_order_for_axes_without_drift(axis, flags):
    """Rigid translation + rotation by 0.5 rad about an axis through an arbitrary point,
    for axes where Omega_n Omega_t = 0 and Omega_1 Omega_2 = 0 (local components): phi
    stays exactly 0; twist: u_t = 0 and T second order (ratio ~4 when dt halves);
    bending about a local axis: T exact to round-off, u_t second order."""
    Omega = _special_axes()[axis]
    t_end = 0.5 / np.linalg.norm(Omega)
    eu, eT = [], []
    for n in (100, 200, 400):
        e_u, e_phi, e_T, T0, _ = rigid_run(Omega, D_RIGID * N0_RIGID, t_end, n, flags)
        np.testing.assert_allclose(T0, _local_axes(N0_RIGID), atol=1e-15)
        assert e_phi == 0.0
        eu.append(e_u)
        eT.append(e_T)
    if axis == "twist":
        assert eT[-1] < 1e-5
        assert np.all((ratios(eT) > 3.0) & (ratios(eT) < 5.0)), eT
    else:                   # motion in the plane (n, local y or z): frame exact
        assert max(eT) < 1e-14, eT
    if axis == "twist":
        assert max(eu) < 1e-15                 # no tangential relative velocity at all
    else:
        assert eu[-1] < 1e-6
        assert np.all((ratios(eu) > 3.0) & (ratios(eu) < 5.0)), eu


GENERAL_OMEGA = unit((0.3, -0.7, 0.5))


@pytest.mark.parametrize("flags", [0, APPROX], ids=["accurate", "approx"])
def test_rigid_general_axis_u_t_drift_is_first_order_as_seed_prescribes(flags):
    """Arbitrary axis (Omega_n Omega_t != 0): the seed's branch vectors are taken at t
    while velocities are at t - dt/2, so v_r = Omega x (d(t-dt/2) - d(t)) =
    -(dt/2) Omega x (Omega x d) + O(dt^2), whose tangential part in the co-rotating frame
    is the constant -(dt/2) |d| Omega_n (T0 Omega)_t. Hence
        u_t(t) = -(dt/2) |d| Omega_n t (T0 Omega)[1:3] + O(dt^2)
    for both flag settings (the approximation flags only add O(dt^2) terms here).
    Checked: convergence ratio ~2 and the Richardson-extrapolated coefficient."""
    Omega = GENERAL_OMEGA
    t_end = 0.5
    ns = (100, 200, 400)
    res = [rigid_run(Omega, D_RIGID * N0_RIGID, t_end, n, flags) for n in ns]
    eu = [r[0] for r in res]
    assert all(r[1] == 0.0 for r in res)                   # phi: w2 - w1 = 0 exactly
    assert np.all((ratios(eu) > 1.9) & (ratios(eu) < 2.1)), eu
    T0 = res[0][3]
    Ol = T0 @ Omega
    coef = -0.5 * D_RIGID * Ol[0] * t_end * Ol[1:]          # u_t / dt as dt -> 0
    per_dt = [r[4].u[0, 1:] / (t_end / n) for r, n in zip(res, ns)]
    richardson = 2 * per_dt[2] - per_dt[1]
    np.testing.assert_allclose(richardson, coef, rtol=0, atol=1e-3 * np.abs(coef).max())


def test_rigid_single_step_increments_are_second_order():
    """Per step, rigid motion changes u_t only at O(dt^2) (both flag settings) and phi
    not at all: the increment after one step from formation scales as dt^2."""
    Omega = GENERAL_OMEGA
    for flags in (0, APPROX):
        inc = []
        for dt in (4e-3, 2e-3, 1e-3):
            e_u, e_phi, _, _, _ = rigid_run(Omega, D_RIGID * N0_RIGID, dt, 1, flags)
            assert e_phi == 0.0
            inc.append(e_u)
        assert np.all((ratios(inc) > 3.8) & (ratios(inc) < 4.2)), (flags, inc)
        assert inc[-1] < 1e-6


@pytest.mark.parametrize("flags", [0, APPROX], ids=["accurate", "approx"])
def test_rigid_general_axis_frame_second_order(flags):
    """Arbitrary axis: T stays the rigidly rotated initial frame to second order (ratio
    ~4), row 0 is the exact normal, and the frame's twist error psi about n vanishes
    like dt^2. (The linearized row update a - a x o drops (1/2) o x (o x a), whose
    in-plane part is symmetric between rows 1 and 2; a Gram-Schmidt re-normalization
    would put all of it on row 2 and twist the frame by -(dt/2) Omega_1 Omega_2 t.)"""
    Omega = GENERAL_OMEGA
    t_end = 0.5
    eT, psis = [], []
    for n in (100, 200, 400):
        _, _, e_T, T0, g = rigid_run(Omega, D_RIGID * N0_RIGID, t_end, n, flags)
        T_ex = T0 @ rotmat(Omega * t_end).T
        T = g.Tm()
        np.testing.assert_allclose(T[0], T_ex[0], atol=1e-15)    # the normal is exact
        np.testing.assert_allclose(T @ T.T, np.eye(3), atol=1e-14)
        eT.append(e_T)
        psis.append(abs(math.atan2(T[1] @ T_ex[2], T[1] @ T_ex[1])))
        Ol = T0 @ Omega
        gram_schmidt_drift = abs(0.5 * (t_end / n) * Ol[1] * Ol[2] * t_end)
        assert psis[-1] < 0.01 * gram_schmidt_drift
    assert eT[-1] < 1e-7
    assert np.all((ratios(eT) > 3.0) & (ratios(eT) < 5.0)), eT
    assert np.all((ratios(psis) > 3.0) & (ratios(psis) < 5.0)), psis


# ---------------------------------------------------------------- noRatch branch vectors
@pytest.mark.parametrize("which", [1, 2])
def test_no_ratch_branch_vectors(which):
    """Only one particle spins (w perpendicular to n, centres fixed, frame static).
    Tangential relative velocity: w2 x b2 (or -w1 x b1) with b2 = -r2 n, b1 = r1 n under
    NO_RATCH, otherwise b2 = c - x2 = -(r2 + u_n/2) n, b1 = c = (r1 + u_n/2) n."""
    r1, r2 = 0.5, 0.3
    n = unit((-0.3, 0.8, 0.2))
    D = 0.74                                   # overlap 0.06
    un = D - r1 - r2
    w = 1.7 * unit(np.cross(n, (0.2, 0.1, 1.0))) + 0.0 * n
    dt = 1e-3
    out = {}
    for flags in (0, NO_RATCH):
        g = Geom()
        g.step(D * n, r1=r1, r2=r2, dt=dt, flags=flags)
        T0 = g.Tm()
        w1, w2 = (w, 0.0) if which == 1 else (0.0, w)
        g.step(D * n, 0.0, 0.0, w1, w2, r1, r2, dt, flags)
        if which == 2:
            b = -(r2 if flags else r2 + 0.5 * un) * n
            vr = np.cross(w, b)
        else:
            b = (r1 if flags else r1 + 0.5 * un) * n
            vr = -np.cross(w, b)
        np.testing.assert_allclose(g.Tm(), T0, atol=1e-15)
        np.testing.assert_allclose(g.udot[0, 1:], (T0 @ vr)[1:], rtol=1e-14, atol=1e-15)
        assert abs(g.udot[0, 0]) < 1e-15
        np.testing.assert_allclose(g.u[0, 1:], (T0 @ vr)[1:] * dt, rtol=1e-14, atol=1e-18)
        out[flags] = g.udot[0, 1:].copy()
    ratio = np.linalg.norm(out[NO_RATCH]) / np.linalg.norm(out[0])
    rr = r2 if which == 2 else r1
    assert abs(ratio - rr / (rr + 0.5 * un)) < 1e-13


def test_no_ratch_is_not_rigid_invariant_under_overlap():
    """Consequence of b = +-r n under overlap: a rigidly spinning overlapping pair sees
    the tangential velocity Omega x n (|d| - r1 - r2) (O(1), not O(dt)), so u_t grows
    linearly -- the price of NO_RATCH documented by Yade's avoidGranularRatcheting."""
    Omega = 0.8 * _local_axes(N0_RIGID)[1]           # bending about local y
    t_end = 0.5 / 0.8
    e_u, _, _, T0, g = rigid_run(Omega, D_RIGID * N0_RIGID, t_end, 200, NO_RATCH)
    un = D_RIGID - (R1 + R2)
    expected = (T0 @ np.cross(Omega, N0_RIGID))[1:] * un * t_end
    # (relative O(|d| Omega^2 dt^2 / u_n) corrections from the mid-step velocities)
    np.testing.assert_allclose(g.u[0, 1:], expected, rtol=0, atol=1e-3 * abs(un) * 0.4)


# ---------------------------------------------------------------- reference implementation
def _m2q(R):
    """Unit quaternion (w, x, y, z) of a rotation matrix R (Bar-Itzhack eigenvector)."""
    K = np.array([
        [R[0, 0] - R[1, 1] - R[2, 2], R[1, 0] + R[0, 1], R[2, 0] + R[0, 2], R[2, 1] - R[1, 2]],
        [R[1, 0] + R[0, 1], R[1, 1] - R[0, 0] - R[2, 2], R[2, 1] + R[1, 2], R[0, 2] - R[2, 0]],
        [R[2, 0] + R[0, 2], R[2, 1] + R[1, 2], R[2, 2] - R[0, 0] - R[1, 1], R[1, 0] - R[0, 1]],
        [R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1], R[0, 0] + R[1, 1] + R[2, 2]]])
    q = np.linalg.eigh(K / 3.0)[1][:, -1]
    return np.array([q[3], q[0], q[1], q[2]])


def _q2R(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _slerp_rows(Ta, Tb, t=0.5):
    """Slerp between two frames stored by rows (rotation R = T^T), general formula."""
    qa, qb = _m2q(Ta.T), _m2q(Tb.T)
    if qa @ qb < 0:
        qb = -qb
    om = math.acos(min(1.0, qa @ qb))
    if om < 1e-12:
        q = qa + qb
    else:
        q = (math.sin((1 - t) * om) * qa + math.sin(t * om) * qb) / math.sin(om)
    return _q2R(q).T


def _polar_rows(n, a, b):
    """Nearest orthonormal pair to rows a, b within the plane normal to n (polar factor,
    SVD), completed right-handed: the symmetric re-normalization."""
    P = np.array([a - n * (n @ a), b - n * (n @ b)])
    U, _, Vt = np.linalg.svd(P, full_matrices=False)
    Q = U @ Vt
    np.testing.assert_allclose(np.cross(n, Q[0]), Q[1], atol=1e-9)
    return np.array([n, Q[0], np.cross(n, Q[0])])


def _reference_update(Tp, u, phi, x2, v1, v2, w1, w2, r1, r2, dt, flags):
    """Seed 000 "Contact update", formula by formula (numpy); the unspecified
    re-normalization of T is the symmetric (polar) one."""
    d = np.linalg.norm(x2)
    n = x2 / d
    un = d - r1 - r2
    c = n * (r1 + 0.5 * un)
    n_prev = Tp[0]
    o_r = np.cross(n_prev, n)
    nm = n_prev if flags & APPROX_MID_NORMAL else 0.5 * (n_prev + n)
    if not flags & NO_RENORM_MID_NORMAL:
        nm = unit(nm)
    o_t = nm * (nm @ (0.5 * (w1 + w2))) * dt
    if flags & NO_RATCH:
        b1, b2 = r1 * n, -r2 * n
    else:
        b1, b2 = c, c - x2
    vr = (v2 + np.cross(w2, b2)) - (v1 + np.cross(w1, b1))
    vr2 = vr - (nm @ vr) * nm
    Tc = np.array([n, Tp[1] - np.cross(Tp[1], o_r) - np.cross(Tp[1], o_t),
                   Tp[2] - np.cross(Tp[2], o_r) - np.cross(Tp[2], o_t)])
    if not flags & NO_RENORM_TRSF:
        Tc = _polar_rows(n, Tc[1], Tc[2])
    Tm = Tp if flags & APPROX_MID_TRSF else _slerp_rows(Tp, Tc)
    ud = Tm @ vr2
    pd = Tm @ (w2 - w1)
    u = u + ud * dt
    u[0] = un
    phi = phi + pd * dt
    ud[0] = nm @ vr
    return Tc, u, phi, ud, pd


ALL_FLAGS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 17, 20, 23, 31]


def _random_frames(rng, m):
    """m active contacts with random normals n(t-dt) and orthonormal frames T(t-dt)
    (row 0 = n): (n_prev, T_prev, Geom)."""
    n_prev = np.array([unit(a) for a in rng.normal(size=(m, 3))])
    T_prev = np.empty((m, 3, 3))
    for k in range(m):
        y = unit(np.cross(n_prev[k], rng.normal(size=3)))
        T_prev[k] = [n_prev[k], y, np.cross(n_prev[k], y)]
    g = Geom(m)
    g.active[:] = 1
    g.T[:] = T_prev.reshape(m, 9)
    return n_prev, T_prev, g


@pytest.mark.parametrize("flags", ALL_FLAGS)
def test_single_step_matches_reference_implementation(flags):
    """One update from random prior states (random orthonormal frame with row 0 = n(t-dt),
    random u, phi; random new normal, velocities and spins; small rotation per step)
    equals the seed's formulas evaluated independently, to round-off. The symmetric
    re-normalizations differ only at O(eps^2), eps ~ |o|^2 ~ 1e-8 here."""
    rng = np.random.default_rng(1000 + flags)
    m, r1, r2, dt = 40, 0.45, 0.35, 1e-4
    n_prev, T_prev, g = _random_frames(rng, m)
    g.u[:] = rng.normal(scale=1e-3, size=(m, 3))
    g.phi[:] = rng.normal(scale=1e-2, size=(m, 3))
    u_prev, phi_prev = g.u.copy(), g.phi.copy()
    x2 = np.array([rotmat(rng.normal(scale=2e-4, size=3)) @ n_prev[k] for k in range(m)])
    x2 *= rng.uniform(0.74, 0.8, size=(m, 1))
    v1, v2, w1, w2 = rng.normal(size=(4, m, 3))
    g.step(x2, v1, v2, w1, w2, r1, r2, dt, flags)
    rate_tol = 1e-6 if flags & NO_RENORM_TRSF else 1e-12   # Slerp of a non-rotation T
    for k in range(m):
        T, u, phi, ud, pd = _reference_update(T_prev[k], u_prev[k], phi_prev[k], x2[k], v1[k],
                                              v2[k], w1[k], w2[k], r1, r2, dt, flags)
        np.testing.assert_allclose(g.Tm(k), T, rtol=0, atol=1e-13)
        np.testing.assert_allclose(g.u[k], u, rtol=0, atol=1e-15 + rate_tol * dt)
        np.testing.assert_allclose(g.phi[k], phi, rtol=0, atol=1e-15 + rate_tol * dt)
        np.testing.assert_allclose(g.udot[k], ud, rtol=0, atol=rate_tol)
        np.testing.assert_allclose(g.phidot[k], pd, rtol=0, atol=rate_tol)


ROUTES = {0.002: 2, 0.05: 1, 0.6: 1, 2.8: 0}      # turn -> route exercised (see below)


@pytest.mark.parametrize("flags", [0, 16])
@pytest.mark.parametrize("turn", sorted(ROUTES))
def test_large_frame_turns_match_reference_implementation(flags, turn):
    """The mid-step Slerp is evaluated in closed form from K = T(t) T(t-dt)^T, with a
    series for small turns, sqrt(1 + tr K) beyond |e| = 1e-4 and the quaternion route
    beyond 90 degrees: on every route, phidot = Slerp(T(t-dt), T(t); 1/2) (w2 - w1) with
    the general Slerp formula, to round-off."""
    rng = np.random.default_rng(7)
    m, r1, r2, dt = 40, 0.45, 0.35, 1e-4
    n_prev, T_prev, g = _random_frames(rng, m)
    axes = np.array([unit(np.cross(n_prev[k], rng.normal(size=3))) for k in range(m)])
    x2 = np.array([rotmat(turn * axes[k]) @ n_prev[k] for k in range(m)]) * 0.78
    v1, v2, w1, w2 = rng.normal(size=(4, m, 3))
    w1 *= 1e3 * turn           # twist of the frame about the normal, o_t ~ turn / 10
    g.step(x2, v1, v2, w1, w2, r1, r2, dt, flags)
    cos_turn = []
    for k in range(m):
        # T(t) itself matches the reference only to O(|o|^4) here (symmetric vs polar
        # re-normalization), so the Slerp is taken between pdem's frames
        Tm = _slerp_rows(T_prev[k], g.Tm(k))
        dw = w2[k] - w1[k]
        np.testing.assert_allclose(g.phidot[k], Tm @ dw, rtol=0, atol=1e-14 * np.abs(dw).max())
        cos_turn.append(0.5 * (np.trace(g.Tm(k) @ T_prev[k].T) - 1.0))
    routes = np.digitize(cos_turn, [0.0, 1.0 - 2e-4])   # quaternion, sqrt, series routes
    assert ROUTES[turn] in routes


@pytest.mark.parametrize("flags", [0, 5, 16, 23])
def test_many_steps_match_reference_implementation(flags):
    """Random smooth relative motion with random spins, 60 steps: pdem stays on the
    independent implementation (a Gram-Schmidt re-normalization would be ~1e-3 off)."""
    rng = np.random.default_rng(100 + flags)
    r1, r2, dt = 0.45, 0.35, 2e-3
    x2 = 0.78 * unit(rng.normal(size=3))
    g = Geom()
    g.step(x2, r1=r1, r2=r2, dt=dt, flags=flags)
    T, u, phi = _local_axes(unit(x2)), np.array([np.linalg.norm(x2) - r1 - r2, 0, 0]), np.zeros(3)
    np.testing.assert_allclose(g.Tm(), T, atol=1e-15)
    vel = rng.normal(scale=0.5, size=3)
    for _ in range(60):
        vel = vel + rng.normal(scale=0.3, size=3)
        v1, w1, w2 = rng.normal(size=(3, 3))
        v2 = v1 + vel
        x2 = x2 + vel * dt
        g.step(x2, v1, v2, w1, w2, r1, r2, dt, flags)
        T, u, phi, ud, pd = _reference_update(T, u, phi, x2, v1, v2, w1, w2, r1, r2, dt, flags)
        np.testing.assert_allclose(g.Tm(), T, rtol=0, atol=1e-6)
        np.testing.assert_allclose(g.u[0], u, rtol=0, atol=1e-6)
        np.testing.assert_allclose(g.phi[0], phi, rtol=0, atol=1e-6)
        np.testing.assert_allclose(g.udot[0], ud, rtol=0, atol=1e-5)
        np.testing.assert_allclose(g.phidot[0], pd, rtol=0, atol=1e-5)


def test_no_renorm_trsf_keeps_linearized_rows():
    """With NO_RENORM_TRSF the rows 1, 2 are exactly a - a x o_r - a x o_t (no
    re-orthonormalization): their norms grow like 1 + O(o^2) per step."""
    rng = np.random.default_rng(3)
    r1, r2, dt = 0.5, 0.3, 5e-3
    x2 = 0.79 * unit((0.1, 0.7, -0.3))
    g = Geom()
    g.step(x2, r1=r1, r2=r2, dt=dt, flags=NO_RENORM_TRSF)
    for _ in range(40):
        Tp = g.Tm()
        w1, w2 = rng.normal(size=(2, 3))
        x2n = rotmat(rng.normal(scale=0.02, size=3)) @ x2
        g.step(x2n, 0.0, (x2n - x2) / dt, w1, w2, r1, r2, dt, NO_RENORM_TRSF)
        x2 = x2n
        n = unit(x2)
        o_r = np.cross(Tp[0], n)
        nm = unit(Tp[0] + n)
        o_t = nm * (nm @ (0.5 * (w1 + w2))) * dt
        for i in (1, 2):
            np.testing.assert_allclose(g.Tm()[i], Tp[i] - np.cross(Tp[i], o_r)
                                       - np.cross(Tp[i], o_t), rtol=0, atol=1e-15)
    assert np.linalg.norm(g.Tm()[1]) > 1.0 + 1e-6
