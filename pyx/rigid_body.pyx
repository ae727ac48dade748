# cython: language_level=3
"""Rotation of rigid bodies with a full (diagonal in the body frame) inertia tensor, in
the leap-frog time indices of seed 000: orientation q at full steps t, angular momentum
L (world frame) at half steps t + dt/2 (issue 16, section 1).

Euler's equations are integrated by the symmetric splitting of the free rotor of
Dullweber, Leimkuhler and McLachlan (J. Chem. Phys. 107:5840, 1997), the rotational
part of NO_SQUISH (Miller et al., J. Chem. Phys. 116:8649, 2002): the kinetic energy
T = sum_i Lb_i^2 / (2 I_i) (Lb = R(q)^T L, body frame) is split into its three terms,
each of which is a rotation about one fixed body axis e_i by phi_i = Lb_i h / I_i,
solved exactly: q <- q (x) exp(phi_i e_i / 2), Lb <- Rot(e_i, -phi_i) Lb. A drift over
dt is the palindrome R1(dt/2) R2(dt/2) R3(dt) R2(dt/2) R1(dt/2): symplectic and
time-reversible, so the energy error is O(dt^2) and bounded (no drift), and, since every
sub-step rotates q and Lb together, the world angular momentum R(q) Lb does not change
at all -- it is kept as is, exactly conserved without torque.

Step (the engine's order, integrate.pyx): drift q(t) -> q(t+dt) with L(t+dt/2) and give
omega(t+dt/2) = R(q_m) I^-1 R(q_m)^T L with q_m = Slerp(q(t), q(t+dt); 1/2) (the
mid-step angular velocity the contacts need); forces and torques at t+dt; kick
L(t+3dt/2) = L(t+dt/2) + torque(t+dt) dt (world torque, exact for the world L).
Bodies with equal moments (spheres) take the sphere rotation of integrate.drift,
q <- exp(omega dt) q with omega = L / I, so they reduce to today's spheres.

Data: orient (n, 4) unit quaternions (w, x, y, z), body -> world; angmom, angvel,
torque (n, 3) world; inertia (n, 3) principal moments in the body frame. Only the
first n_own rows are advanced. Bodies are independent: prange, bitwise the same for
any thread count.
"""
cimport cython
from cython.parallel cimport prange
from libc.math cimport isfinite
from vecmath cimport v3, m33, quat, V, vld, vst, vscale, mdot, mtdot, qmul, qaxisangle, \
    qrenorm, q2m, qslerp_half
import numpy as np


cdef inline void _axis_rotation(quat* q, v3* Lb, int axis, double phi) noexcept nogil:
    """Exact flow of T_i = Lb_i^2 / (2 I_i) with phi = Lb_i h / I_i: the body turns by
    phi about its axis e_i (q <- q r, r = exp(phi e_i / 2)) and Lb by -phi about e_i.
    cos phi, sin phi are taken from r itself (w^2 - s^2, 2 w s) so that q and Lb turn by
    the same angle to round-off."""
    cdef quat r
    cdef double c, s, a, b
    if axis == 0:
        r = qaxisangle(V(phi, 0.0, 0.0))
        c = r.w * r.w - r.x * r.x; s = 2.0 * r.w * r.x
        a = Lb.y; b = Lb.z
        Lb.y = c * a + s * b; Lb.z = c * b - s * a
    elif axis == 1:
        r = qaxisangle(V(0.0, phi, 0.0))
        c = r.w * r.w - r.y * r.y; s = 2.0 * r.w * r.y
        a = Lb.z; b = Lb.x
        Lb.z = c * a + s * b; Lb.x = c * b - s * a
    else:
        r = qaxisangle(V(0.0, 0.0, phi))
        c = r.w * r.w - r.z * r.z; s = 2.0 * r.w * r.z
        a = Lb.x; b = Lb.y
        Lb.x = c * a + s * b; Lb.y = c * b - s * a
    q[0] = qmul(q[0], r)


cdef inline double _comp(v3 a, int i) noexcept nogil:
    return a.x if i == 0 else (a.y if i == 1 else a.z)


cdef inline quat free_rotor(quat q, v3 L, v3 I, double dt) noexcept nogil:
    """q(t+dt) of a torque-free body with world angular momentum L (the DLM palindrome
    R1(dt/2) R2(dt/2) R3(dt) R2(dt/2) R1(dt/2)), renormalized."""
    cdef v3 Lb = mdot(q2m(q), L)
    _axis_rotation(&q, &Lb, 0, 0.5 * dt * Lb.x / I.x)
    _axis_rotation(&q, &Lb, 1, 0.5 * dt * Lb.y / I.y)
    _axis_rotation(&q, &Lb, 2, dt * Lb.z / I.z)
    _axis_rotation(&q, &Lb, 1, 0.5 * dt * Lb.y / I.y)
    _axis_rotation(&q, &Lb, 0, 0.5 * dt * Lb.x / I.x)
    return qrenorm(q)


cdef inline v3 world_angvel(quat q, v3 L, v3 I) noexcept nogil:
    """omega = R I^-1 R^T L."""
    cdef m33 M = q2m(q)
    cdef v3 Lb = mdot(M, L)
    return mtdot(M, V(Lb.x / I.x, Lb.y / I.y, Lb.z / I.z))


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _drift_one(Py_ssize_t i, double[:, ::1] orient, const double[:, ::1] angmom,
                     double[:, ::1] angvel, const double[:, ::1] inertia,
                     double dt) noexcept nogil:
    cdef quat q0, q1
    cdef v3 L = vld(&angmom[i, 0]), I = vld(&inertia[i, 0]), w
    q0.w = orient[i, 0]; q0.x = orient[i, 1]; q0.y = orient[i, 2]; q0.z = orient[i, 3]
    if I.x == I.y and I.y == I.z:          # sphere: integrate.drift's rotation
        w = vscale(L, 1.0 / I.x)
        vst(&angvel[i, 0], w)
        if L.x != 0.0 or L.y != 0.0 or L.z != 0.0:
            q1 = qrenorm(qmul(qaxisangle(V(w.x * dt, w.y * dt, w.z * dt)), q0))
            orient[i, 0] = q1.w; orient[i, 1] = q1.x; orient[i, 2] = q1.y; orient[i, 3] = q1.z
        return
    if L.x == 0.0 and L.y == 0.0 and L.z == 0.0:
        angvel[i, 0] = 0.0; angvel[i, 1] = 0.0; angvel[i, 2] = 0.0
        return
    q1 = free_rotor(q0, L, I, dt)
    vst(&angvel[i, 0], world_angvel(qslerp_half(q0, q1), L, I))
    orient[i, 0] = q1.w; orient[i, 1] = q1.x; orient[i, 2] = q1.y; orient[i, 3] = q1.z


@cython.boundscheck(False)
@cython.wraparound(False)
def drift_rotation(double[:, ::1] orient, const double[:, ::1] angmom, double[:, ::1] angvel,
                   const double[:, ::1] inertia, double dt, int n_own, int n_threads):
    """q(t) -> q(t+dt) with L(t+dt/2), and angvel = omega(t+dt/2) (see the header)."""
    cdef Py_ssize_t i
    for i in prange(n_own, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        _drift_one(i, orient, angmom, angvel, inertia, dt)


@cython.boundscheck(False)
@cython.wraparound(False)
def kick_rotation(double[:, ::1] angmom, const double[:, ::1] torque, double dt, int n_own,
                  int n_threads):
    """L += torque dt (world frame); returns the index of the first body whose new L is
    not finite, or -1."""
    cdef Py_ssize_t i
    cdef double check = 0.0
    for i in prange(n_own, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        angmom[i, 0] = angmom[i, 0] + torque[i, 0] * dt
        angmom[i, 1] = angmom[i, 1] + torque[i, 1] * dt
        angmom[i, 2] = angmom[i, 2] + torque[i, 2] * dt
        check += 0.0 * (angmom[i, 0] + angmom[i, 1] + angmom[i, 2])
    if check == 0.0:
        return -1
    for i in range(n_own):
        if not (isfinite(angmom[i, 0]) and isfinite(angmom[i, 1]) and isfinite(angmom[i, 2])):
            return i
    return -1


@cython.boundscheck(False)
@cython.wraparound(False)
def angmom_from_angvel(const double[:, ::1] orient, const double[:, ::1] angvel,
                       const double[:, ::1] inertia, double[:, ::1] angmom, int n_threads):
    """L = R I R^T omega (world), to start from given angular velocities."""
    cdef Py_ssize_t i, n = orient.shape[0]
    for i in prange(n, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        _angmom_one(i, orient, angvel, inertia, angmom)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _angmom_one(Py_ssize_t i, const double[:, ::1] orient, const double[:, ::1] angvel,
                      const double[:, ::1] inertia, double[:, ::1] angmom) noexcept nogil:
    cdef quat q
    cdef m33 M
    cdef v3 wb
    q.w = orient[i, 0]; q.x = orient[i, 1]; q.y = orient[i, 2]; q.z = orient[i, 3]
    M = q2m(q)
    wb = mdot(M, vld(&angvel[i, 0]))
    vst(&angmom[i, 0], mtdot(M, V(wb.x * inertia[i, 0], wb.y * inertia[i, 1],
                                  wb.z * inertia[i, 2])))


def run_free(orient, angmom, inertia, double dt, int steps, int every=1, int n_threads=1):
    """Test/bench helper: `steps` torque-free drifts of every body; returns the
    orientations after every `every` steps, shape (steps // every + 1, n, 4) (the
    first is the input). The loop is in C; orient is advanced in place."""
    cdef double[:, ::1] q = orient
    cdef const double[:, ::1] L = angmom
    cdef const double[:, ::1] I = inertia
    cdef double[:, ::1] w = np.zeros((q.shape[0], 3))
    cdef int s, n = q.shape[0]
    cdef Py_ssize_t i
    cdef double[:, :, ::1] o
    out = np.empty((steps // every + 1, n, 4))
    o = out
    o[0, :, :] = q
    with nogil:
        for s in range(1, steps + 1):
            for i in range(n):
                _drift_one(i, q, L, w, I, dt)
            if s % every == 0:
                o[s // every, :, :] = q
    return out


@cython.boundscheck(False)
@cython.wraparound(False)
def drift_bodies(const int[::1] idx, const double[:, ::1] q_start, double[:, ::1] orient,
                 const double[:, ::1] angmom, double[:, ::1] angvel,
                 const double[:, ::1] inertia, double dt, int n_threads):
    """drift_rotation of the particles idx (the non-spherical ones of the engine's store):
    orient[idx[j]] = q_start[j] advanced by dt (q_start: their orientations at t, saved
    before integrate.drift rotated every particle as a sphere), angvel[idx[j]] =
    omega(t+dt/2)."""
    cdef Py_ssize_t j
    cdef int i
    for j in prange(idx.shape[0], nogil=True, schedule='static', num_threads=max(1, n_threads)):
        i = idx[j]
        orient[i, 0] = q_start[j, 0]; orient[i, 1] = q_start[j, 1]
        orient[i, 2] = q_start[j, 2]; orient[i, 3] = q_start[j, 3]
        _drift_one(i, orient, angmom, angvel, inertia, dt)


@cython.boundscheck(False)
@cython.wraparound(False)
def kick_bodies(const int[::1] idx, const double[:, ::1] orient, double[:, ::1] angmom,
                double[:, ::1] angvel, const double[:, ::1] torque,
                const double[:, ::1] inertia, double dt, int n_threads):
    """kick_rotation of the particles idx: L(t+3dt/2) = L(t+dt/2) + torque(t+dt) dt, and
    angvel = R I^-1 R^T L with R = R(q(t+dt)) (the angular velocity reported between
    steps; the next drift replaces it by the mid-step one). Returns the first idx entry
    whose L is not finite, or -1."""
    cdef Py_ssize_t j
    cdef int i
    cdef double check = 0.0
    for j in prange(idx.shape[0], nogil=True, schedule='static', num_threads=max(1, n_threads)):
        i = idx[j]
        angmom[i, 0] = angmom[i, 0] + torque[i, 0] * dt
        angmom[i, 1] = angmom[i, 1] + torque[i, 1] * dt
        angmom[i, 2] = angmom[i, 2] + torque[i, 2] * dt
        _angvel_one(i, orient, angmom, angvel, inertia)
        check += 0.0 * (angmom[i, 0] + angmom[i, 1] + angmom[i, 2])
    if check == 0.0:
        return -1
    for j in range(idx.shape[0]):
        i = idx[j]
        if not (isfinite(angmom[i, 0]) and isfinite(angmom[i, 1]) and isfinite(angmom[i, 2])):
            return i
    return -1


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _angvel_one(Py_ssize_t i, const double[:, ::1] orient, const double[:, ::1] angmom,
                      double[:, ::1] angvel, const double[:, ::1] inertia) noexcept nogil:
    cdef quat q
    q.w = orient[i, 0]; q.x = orient[i, 1]; q.y = orient[i, 2]; q.z = orient[i, 3]
    vst(&angvel[i, 0], world_angvel(q, vld(&angmom[i, 0]), vld(&inertia[i, 0])))
