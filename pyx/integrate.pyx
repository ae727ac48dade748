# cython: language_level=3
"""Leap-frog integration with the time indices of seed 000.

State between steps: positions, orientations and forces at t, velocities and
angular velocities at t + dt/2. A step to t + dt is
  drift:  x(t+dt) = x(t) + v(t+dt/2) dt,  q(t+dt) = exp(w(t+dt/2) dt) q(t)
  (forces at t+dt from x(t+dt) and v(t+dt/2), the mid-step velocity of the contact)
  kick:   v(t+3dt/2) = v(t+dt/2) + (F/m + g) dt,  w += T/I dt  (spheres: isotropic I)
Blocked degrees of freedom (bit 0..5 = x, y, z, rx, ry, rz) keep their velocity,
which is how a prescribed velocity is imposed. Only owned particles (first n_own)
are integrated; ghosts are copies refreshed from their owners.
"""
cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport isfinite
from vecmath cimport v3, quat, V, qmul, qaxisangle, qrenorm
import numpy as np


@cython.boundscheck(False)
@cython.wraparound(False)
def drift(double[:, ::1] pos, const double[:, ::1] vel, const double[:, ::1] angvel,
          double[:, ::1] orient, const double[:, ::1] pos_at_build, double dt, int n_own,
          int n_threads):
    """Advance positions and orientations; return the largest squared displacement
    since the last neighbor-list build (the rebuild criterion)."""
    cdef Py_ssize_t i
    cdef int nt = max(1, n_threads), tid
    cdef double dx, dy, dz, d2
    cdef quat q, r
    cdef double[::1] worst = np.zeros(nt)
    for i in prange(n_own, nogil=True, schedule='static', num_threads=nt):
        pos[i, 0] = pos[i, 0] + vel[i, 0] * dt
        pos[i, 1] = pos[i, 1] + vel[i, 1] * dt
        pos[i, 2] = pos[i, 2] + vel[i, 2] * dt
        if angvel[i, 0] != 0.0 or angvel[i, 1] != 0.0 or angvel[i, 2] != 0.0:
            q.w = orient[i, 0]; q.x = orient[i, 1]; q.y = orient[i, 2]; q.z = orient[i, 3]
            r = qrenorm(qmul(qaxisangle(V(angvel[i, 0] * dt, angvel[i, 1] * dt,
                                              angvel[i, 2] * dt)), q))
            orient[i, 0] = r.w; orient[i, 1] = r.x; orient[i, 2] = r.y; orient[i, 3] = r.z
        dx = pos[i, 0] - pos_at_build[i, 0]
        dy = pos[i, 1] - pos_at_build[i, 1]
        dz = pos[i, 2] - pos_at_build[i, 2]
        d2 = dx * dx + dy * dy + dz * dz
        tid = threadid()
        if not (d2 <= worst[tid]):       # also catches NaN
            worst[tid] = d2
    return max(worst)


@cython.boundscheck(False)
@cython.wraparound(False)
def kick(double[:, ::1] vel, double[:, ::1] angvel, const double[:, ::1] force,
         const double[:, ::1] torque, const double[::1] mass, const double[::1] inertia,
         const unsigned char[::1] blocked, const double[::1] gravity, double dt, int n_own,
         int n_threads):
    """Advance velocities; return the index of the first particle whose new velocity
    or angular velocity is not finite, or -1."""
    cdef Py_ssize_t i
    cdef int nt = max(1, n_threads), d
    cdef double im, ii, check
    cdef unsigned char blk
    cdef double gdt[3]
    for d in range(3):
        gdt[d] = gravity[d] * dt
    check = 0.0
    for i in prange(n_own, nogil=True, schedule='static', num_threads=nt):
        im = dt / mass[i]
        ii = dt / inertia[i]
        blk = blocked[i]
        for d in range(3):
            if not (blk & (1 << d)):
                vel[i, d] = vel[i, d] + force[i, d] * im + gdt[d]
            if not (blk & (8 << d)):
                angvel[i, d] = angvel[i, d] + torque[i, d] * ii
        # 0 * x is 0 for finite x and NaN otherwise: one sum flags any non-finite value
        check += 0.0 * (vel[i, 0] + vel[i, 1] + vel[i, 2] + angvel[i, 0] + angvel[i, 1]
                        + angvel[i, 2])
    if check == 0.0:
        return -1
    for i in range(n_own):
        if not (isfinite(vel[i, 0]) and isfinite(vel[i, 1]) and isfinite(vel[i, 2])
                and isfinite(angvel[i, 0]) and isfinite(angvel[i, 1])
                and isfinite(angvel[i, 2])):
            return i
    return -1
