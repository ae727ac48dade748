# cython: language_level=3
"""Contact batch kernels: sphere-sphere and sphere-plane geometry (L6Geom, seed 000)
followed by the pair's contact law (laws.pxd), and the per-particle force gather.

Data layout. A batch is a set of candidate pairs from the Verlet list, sorted by
(id1, id2) with id1 < id2; pair k refers to local particle indices i1[k], i2[k]
(owned or ghost). Per pair, the arrays hold the L6Geom state -- active flag, T
(rows, 9 doubles), u, phi, shifted origins u0, phi0 -- and the outputs: force on
particle 2 (global), torques on 1 and 2, contact point relative to particle 1.

Determinism. Pair k is computed from particle 1's position and x2 - x1 +
(image2 - image1) * L, the same numbers on every rank and thread count; the
gather sums each owned particle's contributions in the order of its CSR list
(ascending partner id), never with atomics.
"""
cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport sqrt, isfinite
from vecmath cimport v3, m33, V, vld, vst, mld, mst, vadd, vsub, vscale, vneg, vdot, \
    vcross, mtdot
from contact_row cimport *
from laws cimport law_eval, P_NCOLS, P_NORMAL, P_KN0, P_KN1, P_KT_RATIO, P_GAMMA_N, \
    P_ZETA, P_CT_RATIO, P_ESTAR, P_GSTAR, P_MU, P_ROLL_K, P_ROLL_MU, P_TWIST_K, P_TWIST_MU, \
    P_LIMIT_DAMPING
from omp cimport pdem_omp_max_threads, pdem_omp_available
import numpy as np


def state_columns():
    """Column offsets of the contact state row (used by pdem.contact.store)."""
    return dict(T=(S_T, 9), u=(S_U, 3), phi=(S_PHI, 3), u0=(S_U0, 3), phi0=(S_PHI0, 3),
                force=(S_FORCE, 3), torque1=(S_TORQUE1, 3), torque2=(S_TORQUE2, 3),
                ncols=S_NCOLS)


def openmp_available():
    return bool(pdem_omp_available())


def openmp_max_threads():
    return pdem_omp_max_threads()


@cython.boundscheck(False)
@cython.wraparound(False)
def sphere_sphere(const int[::1] i1, const int[::1] i2,
                  const double[:, ::1] pos, const int[:, ::1] image, const double[::1] box_len,
                  const double[:, ::1] vel, const double[:, ::1] angvel,
                  const double[::1] radius, const double[::1] mass, const int[::1] material,
                  const double[:, ::1] pair_table, int n_materials,
                  double dt, int flags,
                  signed char[::1] active, double[:, ::1] state, int n_threads):
    """Update every candidate pair of the batch; returns (max overlap / smaller radius, pair)."""
    cdef Py_ssize_t m = i1.shape[0], k
    cdef int a, b, tid, nt = max(1, n_threads)
    cdef v3 x2, n
    cdef double dist2, rs, dist, un, ratio, ra, rb
    cdef double[:, ::1] worst = _worst_init(nt)
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        a = i1[k]
        b = i2[k]
        x2 = V(pos[b, 0] - pos[a, 0] + (image[b, 0] - image[a, 0]) * box_len[0],
               pos[b, 1] - pos[a, 1] + (image[b, 1] - image[a, 1]) * box_len[1],
               pos[b, 2] - pos[a, 2] + (image[b, 2] - image[a, 2]) * box_len[2])
        dist2 = vdot(x2, x2)
        ra = radius[a]
        rb = radius[b]
        rs = ra + rb
        if dist2 >= rs * rs:
            active[k] = 0
            continue
        dist = sqrt(dist2)
        n = vscale(x2, 1.0 / dist)
        un = dist - rs
        contact_update(vscale(n, ra + 0.5 * un), n, un, x2, vld(&vel[a, 0]), vld(&vel[b, 0]),
                       vld(&angvel[a, 0]), vld(&angvel[b, 0]), ra, rb,
                       mass[a] * mass[b] / (mass[a] + mass[b]), ra * rb / rs,
                       &pair_table[material[a] * n_materials + material[b], 0], dt, flags,
                       &active[k], &state[k, 0])
        ratio = -un / (ra if ra < rb else rb)
        tid = threadid()
        if not (ratio <= worst[tid, 0]):
            worst[tid, 0] = ratio
            worst[tid, 1] = k
    return _worst(worst)


@cython.boundscheck(False)
@cython.wraparound(False)
def sphere_plane(const int[::1] particle, const int[::1] plane,
                 const double[:, ::1] pos, const double[:, ::1] vel,
                 const double[:, ::1] angvel, const double[::1] radius,
                 const double[::1] mass, const int[::1] material,
                 const double[:, ::1] plane_point, const double[:, ::1] plane_normal,
                 const double[:, ::1] plane_vel, const int[::1] plane_material,
                 const double[:, ::1] pair_table, int n_materials,
                 double dt, int flags,
                 signed char[::1] active, double[:, ::1] state, int n_threads):
    """Plane = body 1 (equivalent sphere of radius 0 at the foot of the perpendicular,
    infinite mass, no rotation), sphere = body 2; the plane pushes along its normal."""
    cdef Py_ssize_t m = particle.shape[0], k
    cdef int p, w, tid, nt = max(1, n_threads)
    cdef v3 x2, n
    cdef double d, un, ratio, r
    cdef double[:, ::1] worst = _worst_init(nt)
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        p = particle[k]
        w = plane[k]
        r = radius[p]
        n = vld(&plane_normal[w, 0])
        d = vdot(vsub(vld(&pos[p, 0]), vld(&plane_point[w, 0])), n)
        if d >= r:
            active[k] = 0
            continue
        un = d - r
        x2 = vscale(n, d)                     # sphere centre relative to the foot point
        contact_update(vscale(n, 0.5 * un), n, un, x2, vld(&plane_vel[w, 0]), vld(&vel[p, 0]),
                       V(0.0, 0.0, 0.0), vld(&angvel[p, 0]), 0.0, r, mass[p], r,
                       &pair_table[plane_material[w] * n_materials + material[p], 0], dt,
                       flags, &active[k], &state[k, 0])
        ratio = -un / r
        tid = threadid()
        if not (ratio <= worst[tid, 0]):
            worst[tid, 0] = ratio
            worst[tid, 1] = k
    return _worst(worst)


cdef double[:, ::1] _worst_init(int nt):
    w = np.zeros((nt, 2))
    w[:, 1] = -1
    return w


cdef tuple _worst(double[:, ::1] worst):
    cdef Py_ssize_t t, best = 0
    for t in range(worst.shape[0]):
        if not isfinite(worst[t, 0]) or worst[t, 0] > worst[best, 0]:
            best = t
            if not isfinite(worst[t, 0]):
                break
    return worst[best, 0], int(worst[best, 1])


@cython.boundscheck(False)
@cython.wraparound(False)
def gather(const long[::1] pair_start, const int[::1] pair_entry,
           const signed char[::1] active, const double[:, ::1] state,
           const long[::1] wall_start, const signed char[::1] wall_active,
           const double[:, ::1] wall_state, double[:, ::1] f_out, double[:, ::1] t_out,
           int n_threads):
    """Sum contact forces and torques per owned particle in a fixed order.

    pair_entry[pair_start[p]:pair_start[p+1]] lists 2*k + side for the pairs of owned
    particle p in ascending partner id (side 1: p is particle 2); wall contacts of p
    follow in plane order. Same order on any rank or thread count -> same bits.
    """
    cdef Py_ssize_t n = f_out.shape[0], p, e, k
    cdef double sign
    cdef const double* row
    cdef const double* t
    cdef double fx, fy, fz, tx, ty, tz
    for p in prange(n, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        fx = 0.0; fy = 0.0; fz = 0.0; tx = 0.0; ty = 0.0; tz = 0.0
        for e in range(pair_start[p], pair_start[p + 1]):
            k = pair_entry[e] >> 1
            if active[k] == 0:
                continue
            row = &state[k, 0]
            if pair_entry[e] & 1:
                sign = 1.0
                t = row + S_TORQUE2
            else:
                sign = -1.0
                t = row + S_TORQUE1
            fx = fx + sign * row[S_FORCE]
            fy = fy + sign * row[S_FORCE + 1]
            fz = fz + sign * row[S_FORCE + 2]
            tx = tx + t[0]; ty = ty + t[1]; tz = tz + t[2]
        for k in range(wall_start[p], wall_start[p + 1]):
            if wall_active[k] == 0:
                continue
            row = &wall_state[k, 0]
            fx = fx + row[S_FORCE]; fy = fy + row[S_FORCE + 1]; fz = fz + row[S_FORCE + 2]
            tx = tx + row[S_TORQUE2]; ty = ty + row[S_TORQUE2 + 1]; tz = tz + row[S_TORQUE2 + 2]
        f_out[p, 0] = fx; f_out[p, 1] = fy; f_out[p, 2] = fz
        t_out[p, 0] = tx; t_out[p, 1] = ty; t_out[p, 2] = tz


@cython.boundscheck(False)
@cython.wraparound(False)
def scatter(const int[::1] owner1, const int[::1] owner2, const signed char[::1] active,
            const double[:, ::1] state, const int[::1] wall_owner,
            const signed char[::1] wall_active, const double[:, ::1] wall_state,
            double[:, ::1] f_out, double[:, ::1] t_out):
    """Single-thread equivalent of `gather`: streams through the contacts in order and
    adds each to its owned particles. Pairs are sorted by (id1, id2), so every particle
    receives its contributions in ascending partner id, then its wall contacts in plane
    order: the same additions in the same order as `gather`, hence the same bits, with
    sequential instead of random reads of the contact rows."""
    cdef Py_ssize_t m = active.shape[0], k, d
    cdef int p
    cdef const double* row
    with nogil:
        for p in range(f_out.shape[0]):
            for d in range(3):
                f_out[p, d] = 0.0
                t_out[p, d] = 0.0
        for k in range(m):
            if active[k] == 0:
                continue
            row = &state[k, 0]
            p = owner1[k]
            if p >= 0:
                for d in range(3):
                    f_out[p, d] = f_out[p, d] + (-1.0) * row[S_FORCE + d]
                    t_out[p, d] = t_out[p, d] + row[S_TORQUE1 + d]
            p = owner2[k]
            if p >= 0:
                for d in range(3):
                    f_out[p, d] = f_out[p, d] + 1.0 * row[S_FORCE + d]
                    t_out[p, d] = t_out[p, d] + row[S_TORQUE2 + d]
        _add_wall_rows(wall_owner, wall_active, wall_state, f_out, t_out)


cdef void _add_wall_rows(const int[::1] owner, const signed char[::1] active,
                         const double[:, ::1] state, double[:, ::1] f_out,
                         double[:, ::1] t_out) noexcept nogil:
    """Add the active wall contact rows (particle = body 2) to their particles, in row
    order (rows are sorted by particle, then wall: a fixed order on any rank count)."""
    cdef Py_ssize_t k, d
    cdef int p
    for k in range(active.shape[0]):
        if active[k] == 0:
            continue
        p = owner[k]
        for d in range(3):
            f_out[p, d] = f_out[p, d] + state[k, S_FORCE + d]
            t_out[p, d] = t_out[p, d] + state[k, S_TORQUE2 + d]


@cython.boundscheck(False)
@cython.wraparound(False)
def add_wall_forces(const int[::1] owner, const signed char[::1] active,
                    const double[:, ::1] state, double[:, ::1] f_out, double[:, ::1] t_out):
    """Add a further batch of wall contacts (faceted walls) after scatter/gather."""
    with nogil:
        _add_wall_rows(owner, active, state, f_out, t_out)


@cython.boundscheck(False)
@cython.wraparound(False)
def build_gather_lists(const int[::1] owner1, const int[::1] owner2, int n_own):
    """CSR of pair entries per owned particle. owner1/2[k] = owned index of the pair's
    particles on this rank or -1. Pairs come sorted by (id1, id2), so a stable
    counting sort lists each particle's partners in ascending id."""
    cdef Py_ssize_t m = owner1.shape[0], k, p
    start_arr = np.zeros(n_own + 1, dtype=np.int64)
    cdef long[::1] start = start_arr
    for k in range(m):
        if owner1[k] >= 0:
            start[owner1[k] + 1] += 1
        if owner2[k] >= 0:
            start[owner2[k] + 1] += 1
    for p in range(n_own):
        start[p + 1] += start[p]
    entry_arr = np.empty(start[n_own], dtype=np.int32)
    cdef int[::1] entry = entry_arr
    cdef long[::1] fill = start_arr[:-1].copy()
    for k in range(m):
        if owner1[k] >= 0:
            entry[fill[owner1[k]]] = <int>(2 * k)
            fill[owner1[k]] += 1
        if owner2[k] >= 0:
            entry[fill[owner2[k]]] = <int>(2 * k + 1)
            fill[owner2[k]] += 1
    return start_arr, entry_arr


def geometry_step(double[:, ::1] x2, const double[:, ::1] v1, const double[:, ::1] v2,
                  const double[:, ::1] w1, const double[:, ::1] w2,
                  double r1, double r2, double dt, int flags,
                  signed char[::1] active, double[:, ::1] T, double[:, ::1] u,
                  double[:, ::1] phi, double[:, ::1] udot, double[:, ::1] phidot):
    """L6Geom alone for sphere pairs given relative positions x2 (particle 1 at the
    origin): the same inline routine the batch kernel uses, exposed for unit tests."""
    cdef Py_ssize_t k
    cdef v3 n, c, uu, pp, uu0, pp0, ud, pd, xx
    cdef m33 TT
    cdef double dist, un
    for k in range(x2.shape[0]):
        xx = vld(&x2[k, 0])
        dist = sqrt(vdot(xx, xx))
        n = vscale(xx, 1.0 / dist)
        un = dist - (r1 + r2)
        c = vscale(n, r1 + 0.5 * un)
        uu = vld(&u[k, 0]); pp = vld(&phi[k, 0])
        if active[k] == 0:
            active[k] = 1
            l6_form(n, un, &TT, &uu, &pp, &uu0, &pp0, &ud, &pd)
        else:
            TT = mld(&T[k, 0])
            l6_update(c, n, un, xx, vld(&v1[k, 0]), vld(&v2[k, 0]), vld(&w1[k, 0]), vld(&w2[k, 0]),
                      r1, r2, dt, flags, &TT, &uu, &pp, &ud, &pd)
        mst(&T[k, 0], TT)
        vst(&u[k, 0], uu); vst(&phi[k, 0], pp); vst(&udot[k, 0], ud); vst(&phidot[k, 0], pd)


def law_columns():
    """Column indices of the pair table (single source of truth: laws.pxd)."""
    return dict(normal=P_NORMAL, kn0=P_KN0, kn1=P_KN1, kt_ratio=P_KT_RATIO,
                gamma_n=P_GAMMA_N, zeta=P_ZETA, ct_ratio=P_CT_RATIO, estar=P_ESTAR,
                gstar=P_GSTAR, mu=P_MU, roll_k=P_ROLL_K, roll_mu=P_ROLL_MU,
                twist_k=P_TWIST_K, twist_mu=P_TWIST_MU, limit_damping=P_LIMIT_DAMPING,
                ncols=P_NCOLS)


def hertz_restitution(double zeta, double floor=1e-9, double h=2e-5):
    """Coefficient of restitution of a Hertz contact with damping c = 2 zeta sqrt(m* S_n)
    (laws.pxd), from the dimensionless impact y'' = -y^1.5 - 2 sqrt(1.5) zeta y^0.25 y',
    y(0) = 0, y'(0) = 1, integrated with RK4 until y returns to 0 (e = -y' there).
    Independent of the impact velocity (Tsuji et al. 1992), so one solve per material
    pair gives the exact input e. Results below `floor` are not resolved: the
    integration stops, returning a value below floor, as soon as the energy bound
    sqrt(y'^2 + 4/5 y^2.5) (damping only removes energy) drops below it."""
    cdef double y = 0.0, v = 1.0, c = 2.0 * sqrt(1.5) * zeta, t = 0.0
    cdef double k1y, k1v, k2y, k2v, k3y, k3v, k4y, k4v, yn, vn
    while True:
        k1y = v; k1v = _hz_acc(y, v, c)
        k2y = v + 0.5 * h * k1v; k2v = _hz_acc(y + 0.5 * h * k1y, k2y, c)
        k3y = v + 0.5 * h * k2v; k3v = _hz_acc(y + 0.5 * h * k2y, k3y, c)
        k4y = v + h * k3v; k4v = _hz_acc(y + h * k3y, k4y, c)
        yn = y + h / 6.0 * (k1y + 2 * k2y + 2 * k3y + k4y)
        vn = v + h / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v)
        t += h
        if yn <= 0.0 and t > h:
            # linear interpolation of the velocity at the crossing
            return -(v + (vn - v) * y / (y - yn))
        if (vn >= 0.0 and v < 0.0) or t > 1e3:
            return 0.0                       # turned back (or crept) inside the contact
        if yn > 0.0 and vn * vn + 0.8 * yn * yn * sqrt(yn) < floor * floor:
            return 0.5 * floor
        y = yn
        v = vn


cdef inline double _hz_acc(double y, double v, double c) noexcept:
    if y <= 0.0:
        return 0.0
    return -y * sqrt(y) - c * sqrt(sqrt(y)) * v
