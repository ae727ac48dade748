"""Rigid-body rotation with full inertia (pdem._kernels.rigid_body; issue 16 section 1):
the free-rotor splitting of Dullweber-Leimkuhler-McLachlan / NO_SQUISH in leap-frog
time indices (orientation at t, world angular momentum at t + dt/2).

Expected values are independent of the kernel: conservation laws evaluated in numpy
from the quaternions, the exact motion about a principal axis, the half period of
the torque-free asymmetric top from its elliptic-integral closed form (Landau and
Lifshitz, Mechanics, sec. 37: T/2 = 2 K(k) / lambda, K by the arithmetic-geometric
mean), and integrate.drift/kick (today's sphere rotation) for equal moments.
"""
import math

import numpy as np
import pytest

from pdem._kernels import integrate
from pdem._kernels import rigid_body as RB


def rot(q):
    """Rotation matrices (body -> world) of unit quaternions (..., 4)."""
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=float), -1, 0)
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)],
                    -2)


def body_L(qs, L):
    """Body-frame angular momentum R(q)^T L for orientations qs (t, n, 4)."""
    return np.einsum("tnji,nj->tni", rot(qs), L)


def energy(qs, L, inertia):
    return 0.5 * np.sum(body_L(qs, L) ** 2 / inertia, -1)


def start(omega_body, inertia, q=(1.0, 0, 0, 0)):
    q = np.array([q], dtype=float)
    q /= np.linalg.norm(q)
    L = (rot(q[0]) @ (np.asarray(inertia) * np.asarray(omega_body)))[None]
    return q, np.ascontiguousarray(L), np.array([inertia], dtype=float)


def ellipk(m):
    """Complete elliptic integral of the first kind K(m) = pi / (2 AGM(1, sqrt(1 - m)))."""
    a, b = 1.0, math.sqrt(1.0 - m)
    for _ in range(60):
        a, b = 0.5 * (a + b), math.sqrt(a * b)
    return math.pi / (2 * a)


def top_half_period(inertia, omega):
    """Time between sign changes of omega_2 (intermediate axis) of the free asymmetric
    top I1 < I2 < I3 (Landau-Lifshitz sec. 37; indices 1, 3 swapped when L^2 < 2 E I2)."""
    I1, I2, I3 = inertia
    E2 = float(np.sum(np.asarray(inertia) * np.asarray(omega) ** 2))
    L2 = float(np.sum((np.asarray(inertia) * np.asarray(omega)) ** 2))
    if L2 > E2 * I2:
        lam = math.sqrt((I3 - I2) * (L2 - E2 * I1) / (I1 * I2 * I3))
        k2 = (I2 - I1) * (E2 * I3 - L2) / ((I3 - I2) * (L2 - E2 * I1))
    else:
        lam = math.sqrt((I2 - I1) * (E2 * I3 - L2) / (I1 * I2 * I3))
        k2 = (I3 - I2) * (L2 - E2 * I1) / ((I2 - I1) * (E2 * I3 - L2))
    return 2 * ellipk(k2) / lam


def test_torque_free_conservation():
    """1e5 steps of a torque-free asymmetric body: the world angular momentum does not
    change (the kernel never writes it), |R(q)^T L| = |L| to 1e-12 (q stays unit), the
    energy error is bounded with no drift (the mean error over the last tenth of the run
    equals that over the first tenth within 20 %) and is O(dt^2) (halving dt divides
    it by 4 +- 10 %)."""
    inertia = (1.0, 2.0, 3.5)
    q, L, I = start((0.4, 1.0, -0.7), inertia, (0.9, 0.1, -0.3, 0.2))
    L0 = L.copy()
    errs = []
    for dt, steps in ((0.02, 100000), (0.01, 20000), (0.005, 40000)):
        qq = q.copy()
        out = RB.run_free(qq, L, I, dt, steps, every=10)
        assert np.array_equal(L, L0)
        assert np.max(np.abs(np.linalg.norm(out, axis=-1) - 1)) < 1e-15 * 4
        Lb = body_L(out, L)
        assert np.max(np.abs(np.linalg.norm(Lb, axis=-1) / np.linalg.norm(L) - 1)) < 1e-12
        e = energy(out, L, I)[:, 0]
        rel = np.abs(e / e[0] - 1)
        if steps == 100000:
            tenth = len(rel) // 10
            early, late = rel[1:tenth].mean(), rel[-tenth:].mean()
            assert abs(late / early - 1) < 0.2, (early, late)
            print("dt %.3g: max |dE/E| over 1e5 steps %.3g (first tenth mean %.3g, last %.3g)"
                  % (dt, rel.max(), early, late))
        else:
            errs.append(rel[: int(200 / dt) // 10 + 1].max())      # the same 200 time units
    ratio = errs[0] / errs[1]
    print("energy error dt=0.01: %.3g, dt=0.005: %.3g, ratio %.3f (order %.3f)"
          % (errs[0], errs[1], ratio, math.log2(ratio)))
    assert 3.6 < ratio < 4.4


@pytest.mark.parametrize("omega,axis", [((0.01, 1.0, 0.01), 1), ((0.002, 2.0, -0.003), 1),
                                        ((0.3, 1.0, 0.1), 1)])
def test_intermediate_axis_flips_with_the_rigid_body_period(omega, axis):
    """Tennis racket (Dzhanibekov) effect: started near the intermediate axis, the body
    turns over again and again; the time between flips (sign changes of the body-frame
    L_2) equals the elliptic-integral half period to O(dt^2) (2e-5 relative with
    4000 steps per half period; measured 1e-6 to 2e-6)."""
    inertia = (1.0, 2.0, 3.0)
    q, L, I = start(omega, inertia)
    T_half = top_half_period(inertia, omega)
    dt = T_half / 4000
    steps = int(3.5 * T_half / dt)
    out = RB.run_free(q, L, I, dt, steps)
    l2 = body_L(out, L)[:, 0, axis]
    idx = np.where(np.sign(l2[1:]) != np.sign(l2[:-1]))[0]
    # linear interpolation of the crossing times
    tc = (idx + l2[idx] / (l2[idx] - l2[idx + 1])) * dt
    assert len(tc) >= 3
    half = np.diff(tc)
    print("flip half period %.6f vs closed form %.6f" % (half.mean(), T_half))
    assert np.max(np.abs(half / T_half - 1)) < 2e-5
    # it really turns over: L_2 goes from about +|L| to about -|L|
    assert l2.max() > 0.9 * np.abs(l2).max() and l2.min() < -0.9 * np.abs(l2).max()


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_principal_axis_rotation_is_steady(axis):
    """Spin about a principal axis (any of the three, the intermediate one included):
    the body-frame L stays on the axis to round-off and the orientation is the exact
    rotation q0 (x) exp(omega t e_axis / 2) to 1e-10 after 1e4 steps."""
    inertia = np.array([1.0, 2.0, 3.0])
    w = np.zeros(3)
    w[axis] = 1.7
    q0 = np.array([0.8, 0.2, -0.4, 0.4])
    q0 /= np.linalg.norm(q0)
    q, L, I = start(w, inertia, q0)
    dt, steps = 1e-3, 10000
    out = RB.run_free(q, L, I, dt, steps, every=100)
    Lb = body_L(out, L)[:, 0]
    off = np.delete(Lb, axis, axis=1)
    assert np.max(np.abs(off)) < 1e-12 * np.linalg.norm(L)
    t = np.arange(len(out)) * 100 * dt
    e = np.zeros((len(t), 4))
    e[:, 0] = np.cos(1.7 * t / 2)
    e[:, 1 + axis] = np.sin(1.7 * t / 2)
    w0, v0 = q0[0], q0[1:]
    ew, ev = e[:, 0], e[:, 1:]
    exact = np.column_stack([w0 * ew - ev @ v0, w0 * ev + ew[:, None] * v0 + np.cross(v0, ev)])
    assert np.max(np.abs(out[:, 0] - exact)) < 1e-10


@pytest.mark.parametrize("axis", [0, 2])
def test_stable_axes_stay_near(axis):
    """A small perturbation of a spin about the largest or smallest moment stays small
    (the intermediate axis flips instead, see above)."""
    inertia = (1.0, 2.0, 3.0)
    w = [0.01, 0.01, 0.01]
    w[axis] = 1.0
    q, L, I = start(w, inertia)
    out = RB.run_free(q, L, I, 0.01, 20000, every=10)
    Lb = body_L(out, L)[:, 0]
    assert np.min(np.abs(Lb[:, axis]) / np.linalg.norm(L)) > 0.999


def test_sphere_reduces_to_the_sphere_integrator():
    """Equal moments: drift_rotation/kick_rotation reproduce integrate.drift/kick (the
    engine's sphere rotation) under random torques to round-off."""
    rng = np.random.default_rng(2)
    n, dt = 50, 1e-3
    I = rng.uniform(0.5, 2.0, n)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w = rng.normal(size=(n, 3))
    q_s, w_s = q.copy(), w.copy()
    q_r, L_r = q.copy(), w * I[:, None]
    w_r = np.zeros((n, 3))
    inertia3 = np.repeat(I[:, None], 3, 1).copy()
    zeros, pos_build = np.zeros((n, 3)), np.zeros((n, 3))
    for step in range(1000):
        integrate.drift(zeros.copy(), zeros, w_s, q_s, pos_build, dt, n, 1)
        RB.drift_rotation(q_r, L_r, w_r, inertia3, dt, n, 1)
        assert np.allclose(w_r, w_s, rtol=1e-13, atol=1e-14)
        tq = rng.normal(size=(n, 3))
        integrate.kick(zeros.copy(), w_s, zeros, tq, np.ones(n), I, np.zeros(n, np.uint8),
                       np.zeros(3), dt, n, 1)
        assert RB.kick_rotation(L_r, tq, dt, n, 1) == -1
    assert np.max(np.abs(q_r - q_s)) < 1e-12
    assert np.max(np.abs(L_r / I[:, None] - w_s)) < 1e-12


def test_leapfrog_with_torque():
    """Constant world torque along a principal axis from rest, kick-drift leap-frog:
    L(k dt + dt/2) = (k + 1) tau dt exactly (kick first, as after the first force), and
    the angle after n drifts is sum_k (k + 1) tau dt^2 / I = n (n + 1) tau dt^2 / (2 I)."""
    inertia = np.array([[1.0, 2.0, 3.0]])
    tau = np.array([[0.0, 0.0, 0.6]])
    q = np.array([[1.0, 0.0, 0.0, 0.0]])
    L = np.zeros((1, 3))
    w = np.zeros((1, 3))
    dt, n = 1e-3, 2000
    for k in range(n):
        RB.kick_rotation(L, tau, dt, 1, 1)
        RB.drift_rotation(q, L, w, inertia, dt, 1, 1)
    assert abs(L[0, 2] - n * 0.6 * dt) < 1e-12
    angle = 2 * math.atan2(q[0, 3], q[0, 0])
    assert abs(angle - n * (n + 1) * 0.6 * dt * dt / (2 * 3.0)) < 1e-11
    assert np.allclose(w[0], L[0] / inertia[0], rtol=1e-14)


def test_kick_reports_non_finite():
    L = np.zeros((3, 3))
    tq = np.zeros((3, 3))
    tq[1, 2] = np.inf
    assert RB.kick_rotation(L, tq, 1e-3, 3, 1) == 1


def test_threads_bitwise():
    rng = np.random.default_rng(9)
    n = 4000
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    L = rng.normal(size=(n, 3))
    I = rng.uniform(0.5, 3.0, (n, 3))
    w1, w2 = np.zeros((n, 3)), np.zeros((n, 3))
    q1, q2 = q.copy(), q.copy()
    for _ in range(20):
        RB.drift_rotation(q1, L, w1, I, 1e-2, n, 1)
        RB.drift_rotation(q2, L, w2, I, 1e-2, n, 2)
    assert np.array_equal(q1, q2) and np.array_equal(w1, w2)


def test_a_body_gets_the_same_bits_alone_and_in_a_batch():
    """Every body is computed on its own (no sum across bodies), so its angular momentum
    must not depend on the batch it is in: the compiled vector loop and its scalar
    remainder must round alike (a fused multiply-add in one of them did not)."""
    rng = np.random.default_rng(0)
    n = 41
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    w, inertia = rng.normal(size=(n, 3)), rng.uniform(0.1, 2.0, (n, 3))
    batch = np.zeros((n, 3))
    RB.angmom_from_angvel(q, w, inertia, batch, 2)
    for i in range(n):
        alone = np.zeros((1, 3))
        RB.angmom_from_angvel(q[i:i + 1].copy(), w[i:i + 1].copy(),
                              inertia[i:i + 1].copy(), alone, 1)
        assert np.array_equal(alone[0], batch[i]), i
