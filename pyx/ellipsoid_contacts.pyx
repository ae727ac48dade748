# cython: language_level=3
"""Contact batches of ellipsoids (issue 16): pairs with at least one ellipsoid (the other
an ellipsoid or a sphere) and ellipsoid-plane contacts. Geometry by the common normal
(ellipsoid.pxd cn_solve, seed 002) or the analytic plane support; then L6Geom and the law
exactly as for spheres through contact_row.contact_update, fed with the directly computed
contact point c, normal n and u_n = gap (seed 000, "equivalent sphere geometry").

Data layout. As the sphere kernels (contacts.pyx): one state row per candidate (S_*
columns of contact_row.pxd). The row's local x axis T.r0 is the last normal: an active
row starts its solve from it (warm start, the seed's temporal coherence); an inactive
row starts cold from the line of centres, so that the result never depends on state a
checkpoint or a migration would not carry (bitwise restarts, any rank count). Positions
are relative to body 1 (x1 = 0, the same numbers on every rank). branch (m, 6): the
branch vectors b1 = c - x1 and b2 = c - x2 of this step (the torque levers: c is off the
line of centres, so contact_row.row_torques does not apply), for the force sums.
Spheres in a mixed pair are the ellipsoid (r, r, r). No-ratch is refused by the caller.
planar: 2D ellipses and disks in the xy plane (one unknown angle, ellipsoid.pxd), their
equivalent radius that of a line contact, 1 / R* = 1 / rho1 + 1 / rho2.

Equivalent sphere quantities: m* = m1 m2 / (m1 + m2) (a plane: m2), R* = the equivalent
Hertz radius 1 / sqrt(det(R1^-1 + R2^-1)) of the two surfaces' radius-of-curvature
tensors at c1, c2 (ellipsoid.pxd hertz_radius; two spheres: r1 r2 / (r1 + r2)). The
overlap ratio for max_overlap is -u_n / the smallest semi-axis of the two.
"""
cimport cython
from cython.parallel cimport prange
from libc.math cimport INFINITY, cbrt
from vecmath cimport v3, V, vld, vst, vadd, vsub, vscale, vdot, vcross, image_shift, image_velocity, cell_moving
from worst_overlap cimport keep_worst, pick_worst, solve_stats, worst_init
from contact_row cimport Load, contact_update, S_NCOLS, S_T, S_FORCE, S_MOMENT
from laws cimport P_NCOLS, P_REACH
from ellipsoid cimport Ell, CNResult, ell_make, ell2_make, ell_support, ell_radii, tangent_basis, \
    cn_solve, hertz_radius, CN_CONVERGED, CN_SEPARATED, CN_FAILED, CN_BAD_INPUT
import numpy as np


cdef inline double min3(const double* a, bint planar) noexcept nogil:
    """The smallest semi-axis (planar: of the two in-plane ones)."""
    cdef double m = a[0]
    if a[1] < m:
        m = a[1]
    if a[2] < m and not planar:
        m = a[2]
    return m


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline double _pair_one(Py_ssize_t k, int a, int b, const double[:, ::1] pos,
                      const int[:, ::1] image, const double* box,
                      const double[:, ::1] vel, const double[:, ::1] angvel,
                      const double[:, ::1] orient, const signed char[::1] shape,
                      const double[:, ::1] semi_axes, const double[::1] radius,
                      const double[::1] mass, const int[::1] material,
                      const double[:, ::1] pair_table, int nmat, double dt, int flags,
                      double tol, int max_iter, bint planar, bint warm,
                      signed char[::1] active,
                      double[:, ::1] state, double[:, ::1] branch, int[::1] iters,
                      signed char[::1] status) noexcept nogil:
    """Pair k; returns the overlap ratio (-1 when not in contact)."""
    cdef Ell e1, e2
    cdef CNResult res
    cdef v3 x2, n0, c, v2
    cdef double ax1[3]
    cdef double ax2[3]
    cdef double zero[3]
    cdef double m1, m2, r1, r2, s
    cdef Load L
    cdef double* row = &state[k, 0]
    cdef const double* P = &pair_table[material[a] * nmat + material[b], 0]
    cdef bint sticky = active[k] != 0 and P[P_REACH] > 0.0   # JKR: held beyond touching
    x2 = vsub(vld(&pos[b, 0]), vld(&pos[a, 0]))
    x2 = vadd(x2, image_shift(box, image[b, 0] - image[a, 0], image[b, 1] - image[a, 1],
                              image[b, 2] - image[a, 2]))
    r1 = radius[a]
    r2 = radius[b]
    iters[k] = 0
    status[k] = CN_SEPARATED
    if vdot(x2, x2) >= (r1 + r2) * (r1 + r2) and not sticky:     # bounding spheres apart
        active[k] = 0
        return -1.0
    if shape[a] == 0:
        ax1[0] = r1; ax1[1] = r1; ax1[2] = r1
    else:
        ax1[0] = semi_axes[a, 0]; ax1[1] = semi_axes[a, 1]; ax1[2] = semi_axes[a, 2]
    if shape[b] == 0:
        ax2[0] = r2; ax2[1] = r2; ax2[2] = r2
    else:
        ax2[0] = semi_axes[b, 0]; ax2[1] = semi_axes[b, 1]; ax2[2] = semi_axes[b, 2]
    zero[0] = 0.0; zero[1] = 0.0; zero[2] = 0.0
    if planar:
        e1 = ell2_make(zero, &orient[a, 0], ax1)
        e2 = ell2_make(zero, &orient[b, 0], ax2)
    else:
        e1 = ell_make(zero, &orient[a, 0], ax1)
        e2 = ell_make(zero, &orient[b, 0], ax2)
    e2.o = x2
    n0 = vld(row + S_T) if active[k] and warm else V(0.0, 0.0, 0.0)   # warm / cold start
    # exit_gap 0: stop at the first separating normal; a held JKR contact (sticky)
    # converges to the distance, and lives while it is below the law's reach
    # P_REACH cbrt(R*) (as contacts.pyx `held` for spheres)
    cn_solve(&e1, &e2, n0, planar, INFINITY if sticky else 0.0, tol, max_iter, &res)
    iters[k] = res.iters
    status[k] = res.status
    if res.status == CN_FAILED or res.status == CN_BAD_INPUT:
        return -1.0
    if res.status == CN_SEPARATED or not (res.gap < 0.0):
        if not (sticky and res.status == CN_CONVERGED and
                res.gap < P[P_REACH] * cbrt(hertz_radius(res.R1, res.R2, planar))):
            status[k] = CN_SEPARATED
            active[k] = 0
            return -1.0
    c = vscale(vadd(res.c1, res.c2), 0.5)
    m1 = mass[a]
    m2 = mass[b]
    v2 = vld(&vel[b, 0])
    if cell_moving(box):          # seed 000's v~2 (docs/cell.md)
        v2 = image_velocity(box, v2, image[b, 0] - image[a, 0], image[b, 1] - image[a, 1],
                            image[b, 2] - image[a, 2])
    L = contact_update(c, res.n, res.gap, x2, vld(&vel[a, 0]), v2,
                       vld(&angvel[a, 0]), vld(&angvel[b, 0]), r1, r2, m1 * m2 / (m1 + m2),
                       hertz_radius(res.R1, res.R2, planar), P, dt, flags, &active[k], row, NULL)
    vst(&branch[k, 0], c)
    vst(&branch[k, 3], vsub(c, x2))
    s = min3(ax1, planar)
    if min3(ax2, planar) < s:
        s = min3(ax2, planar)
    return -res.gap / s


# _pair_one with `planar` a constant, so that the compiler drops the other dimension's
# branches (bench/ellipsoid_engine.py: 245 -> 210 ns per contact)
cdef double _pair_3d(Py_ssize_t k, int a, int b, const double[:, ::1] pos,
                     const int[:, ::1] image, const double* box, const double[:, ::1] vel,
                     const double[:, ::1] angvel, const double[:, ::1] orient,
                     const signed char[::1] shape, const double[:, ::1] semi_axes,
                     const double[::1] radius, const double[::1] mass,
                     const int[::1] material, const double[:, ::1] pair_table, int nmat,
                     double dt, int flags, double tol, int max_iter, bint warm,
                     signed char[::1] active, double[:, ::1] state, double[:, ::1] branch,
                     int[::1] iters, signed char[::1] status) noexcept nogil:
    return _pair_one(k, a, b, pos, image, box, vel, angvel, orient, shape, semi_axes, radius,
                     mass, material, pair_table, nmat, dt, flags, tol, max_iter, False, warm,
                     active, state, branch, iters, status)


cdef double _pair_2d(Py_ssize_t k, int a, int b, const double[:, ::1] pos,
                     const int[:, ::1] image, const double* box, const double[:, ::1] vel,
                     const double[:, ::1] angvel, const double[:, ::1] orient,
                     const signed char[::1] shape, const double[:, ::1] semi_axes,
                     const double[::1] radius, const double[::1] mass,
                     const int[::1] material, const double[:, ::1] pair_table, int nmat,
                     double dt, int flags, double tol, int max_iter, bint warm,
                     signed char[::1] active, double[:, ::1] state, double[:, ::1] branch,
                     int[::1] iters, signed char[::1] status) noexcept nogil:
    return _pair_one(k, a, b, pos, image, box, vel, angvel, orient, shape, semi_axes, radius,
                     mass, material, pair_table, nmat, dt, flags, tol, max_iter, True, warm,
                     active, state, branch, iters, status)


@cython.boundscheck(False)
@cython.wraparound(False)
def ellipsoid_pairs(const int[::1] i1, const int[::1] i2, const double[:, ::1] pos,
                    const int[:, ::1] image, const double[:, ::1] cell,
                    const double[:, ::1] vel, const double[:, ::1] angvel,
                    const double[:, ::1] orient, const signed char[::1] shape,
                    const double[:, ::1] semi_axes, const double[::1] radius,
                    const double[::1] mass, const int[::1] material,
                    const double[:, ::1] pair_table, int n_materials, double dt, int flags,
                    double tol, int max_iter, signed char[::1] active, double[:, ::1] state,
                    double[:, ::1] branch, int[::1] iters, signed char[::1] status,
                    int n_threads, bint planar=False, bint warm=True):
    """Update every candidate pair (the pair's first particle a, second b; at least one
    an ellipsoid; warm=False: every solve from a cold start, for benchmarks). Returns
    (worst overlap ratio, its pair or -1, first pair whose solve
    failed or -1, contacts, their total and largest iteration counts)."""
    cdef Py_ssize_t m = i1.shape[0], k
    cdef int nt = max(1, n_threads)
    cdef double ratio
    cdef double[:, ::1] worst = worst_init(nt)
    if cell.shape[0] != 6 or cell.shape[1] != 3:
        raise ValueError("cell must be (6, 3): H, then L H (pdem.cell.fixed_cell for a box)")
    if m == 0:
        return 0.0, -1, -1, 0, 0, 0
    if state.shape[1] != S_NCOLS or pair_table.shape[1] != P_NCOLS or branch.shape[0] < m:
        raise ValueError("ellipsoid pair arrays: state (%d, %d), table width %d, branch %d"
                         % (state.shape[0], state.shape[1], pair_table.shape[1],
                            branch.shape[0]))
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        if planar:
            ratio = _pair_2d(k, i1[k], i2[k], pos, image, &cell[0, 0], vel, angvel, orient,
                             shape, semi_axes, radius, mass, material, pair_table,
                             n_materials, dt, flags, tol, max_iter, warm, active, state,
                             branch, iters, status)
        else:
            ratio = _pair_3d(k, i1[k], i2[k], pos, image, &cell[0, 0], vel, angvel, orient,
                             shape, semi_axes, radius, mass, material, pair_table,
                             n_materials, dt, flags, tol, max_iter, warm, active, state,
                             branch, iters, status)
        keep_worst(worst, ratio, k)
    return pick_worst(worst) + solve_stats(status, iters, m, CN_FAILED, CN_BAD_INPUT, CN_CONVERGED)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef double _plane_one(Py_ssize_t k, int p, int w, const double[:, ::1] pos,
                       const double[:, ::1] vel, const double[:, ::1] angvel,
                       const double[:, ::1] orient, const double[:, ::1] semi_axes,
                       const double[::1] mass, const int[::1] material,
                       const double[:, ::1] plane_point, const double[:, ::1] plane_normal,
                       const double[:, ::1] plane_vel, const int[::1] plane_material,
                       const double[:, ::1] pair_table, int nmat, double dt, int flags,
                       bint planar, signed char[::1] active, double[:, ::1] state,
                       double[:, ::1] branch) noexcept nogil:
    """Plane w = body 1 (the foot of the perpendicular from the centre, no rotation),
    ellipsoid p = body 2 (ellipsoid.pyx plane_contacts' geometry): n = m, gap = d - h(m),
    c = the support point c2 = o - s(m) moved back by gap / 2 along m. Returns the
    overlap ratio (-1 when not in contact)."""
    cdef Ell e
    cdef v3 mm, s, t1, t2, x2, c
    cdef double h, d, g
    cdef double R[3]
    cdef double Z[3]
    cdef Load L
    cdef const double* P
    if planar:                  # a line of the xy plane; the ellipse in that plane
        e = ell2_make(&pos[p, 0], &orient[p, 0], &semi_axes[p, 0])
    else:
        e = ell_make(&pos[p, 0], &orient[p, 0], &semi_axes[p, 0])
    mm = vld(&plane_normal[w, 0])
    d = vdot(vsub(e.o, vld(&plane_point[w, 0])), mm)
    h = ell_support(&e, mm, &s)
    g = d - h
    P = &pair_table[plane_material[w] * nmat + material[p], 0]
    if not (g < 0.0) and not (active[k] != 0 and P[P_REACH] > 0.0):
        active[k] = 0
        return -1.0
    x2 = vscale(mm, d)                       # the centre relative to the foot point
    c = vsub(vscale(mm, d - 0.5 * g), s)     # (o - s - g m / 2) relative to the foot
    tangent_basis(mm, &t1, &t2, planar)
    ell_radii(&e, s, h, t1, t2, R)
    Z[0] = 0.0; Z[1] = 0.0; Z[2] = 0.0
    if not (g < 0.0) and not (g < P[P_REACH] * cbrt(hertz_radius(R, Z, planar))):
        active[k] = 0                        # a held JKR contact beyond its reach
        return -1.0
    L = contact_update(c, mm, g, x2, vld(&plane_vel[w, 0]), vld(&vel[p, 0]), V(0.0, 0.0, 0.0),
                       vld(&angvel[p, 0]), 0.0, h, mass[p], hertz_radius(R, Z, planar), P,
                       dt, flags, &active[k], &state[k, 0], NULL)
    vst(&branch[k, 0], c)
    vst(&branch[k, 3], vsub(c, x2))
    return -g / min3(&semi_axes[p, 0], planar)


@cython.boundscheck(False)
@cython.wraparound(False)
def ellipsoid_plane(const int[::1] particle, const int[::1] plane, const double[:, ::1] pos,
                    const double[:, ::1] vel, const double[:, ::1] angvel,
                    const double[:, ::1] orient, const double[:, ::1] semi_axes,
                    const double[::1] mass, const int[::1] material,
                    const double[:, ::1] plane_point, const double[:, ::1] plane_normal,
                    const double[:, ::1] plane_vel, const int[::1] plane_material,
                    const double[:, ::1] pair_table, int n_materials, double dt, int flags,
                    signed char[::1] active, double[:, ::1] state, double[:, ::1] branch,
                    int n_threads, bint planar=False):
    """Update every ellipsoid-plane candidate (planar: ellipse-line); returns (worst
    overlap ratio, its row)."""
    cdef Py_ssize_t m = particle.shape[0], k
    cdef int nt = max(1, n_threads)
    cdef double ratio
    cdef double[:, ::1] worst = worst_init(nt)
    if m == 0:
        return 0.0, -1
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        ratio = _plane_one(k, particle[k], plane[k], pos, vel, angvel, orient, semi_axes, mass,
                           material, plane_point, plane_normal, plane_vel, plane_material,
                           pair_table, n_materials, dt, flags, planar, active, state, branch)
        keep_worst(worst, ratio, k)
    return pick_worst(worst)


@cython.boundscheck(False)
@cython.wraparound(False)
def add_forces(const int[::1] owner1, const int[::1] owner2, const signed char[::1] active,
               const double[:, ::1] state, const double[:, ::1] branch,
               double[:, ::1] f_out, double[:, ::1] t_out):
    """Add the active rows to their owned particles (owner -1: not owned; owner1 None:
    a wall kind, body 1 is the wall), in row order (pairs in grid order: each particle
    in ascending partner order key; wall rows by particle): F on body 2, -F on body 1,
    torques b1 x (-F) - M and b2 x F + M with this step's branch vectors."""
    cdef Py_ssize_t m = active.shape[0], k
    cdef int p
    cdef v3 F, M, tq
    cdef bint pairs = owner1 is not None
    with nogil:
        for k in range(m):
            if active[k] == 0:
                continue
            F = vld(&state[k, S_FORCE])
            M = vld(&state[k, S_MOMENT])
            if pairs:
                p = owner1[k]
                if p >= 0:
                    tq = vsub(vcross(vld(&branch[k, 0]), vscale(F, -1.0)), M)
                    f_out[p, 0] = f_out[p, 0] - F.x
                    f_out[p, 1] = f_out[p, 1] - F.y
                    f_out[p, 2] = f_out[p, 2] - F.z
                    t_out[p, 0] = t_out[p, 0] + tq.x
                    t_out[p, 1] = t_out[p, 1] + tq.y
                    t_out[p, 2] = t_out[p, 2] + tq.z
            p = owner2[k]
            if p >= 0:
                tq = vadd(vcross(vld(&branch[k, 3]), F), M)
                f_out[p, 0] = f_out[p, 0] + F.x
                f_out[p, 1] = f_out[p, 1] + F.y
                f_out[p, 2] = f_out[p, 2] + F.z
                t_out[p, 0] = t_out[p, 0] + tq.x
                t_out[p, 1] = t_out[p, 1] + tq.y
                t_out[p, 2] = t_out[p, 2] + tq.z


@cython.boundscheck(False)
@cython.wraparound(False)
def row_torques(const double[:, ::1] state, const double[:, ::1] branch, int side):
    """Torques on body `side` (1 or 2) of rows, as add_forces computes them."""
    cdef Py_ssize_t k
    out_arr = np.empty((state.shape[0], 3))
    cdef double[:, ::1] out = out_arr
    cdef v3 F, M
    for k in range(state.shape[0]):
        F = vld(&state[k, S_FORCE])
        M = vld(&state[k, S_MOMENT])
        if side == 1:
            vst(&out[k, 0], vsub(vcross(vld(&branch[k, 0]), vscale(F, -1.0)), M))
        else:
            vst(&out[k, 0], vadd(vcross(vld(&branch[k, 3]), F), M))
    return out_arr
