# cython: language_level=3
"""Contact batches of convex polyhedra (issue 17, docs/polyhedra.md): pairs with at least
one polyhedron (the other a polyhedron, a sphere or an ellipsoid) by GJK + EPA on the
Minkowski difference (gjk.pxd), and polyhedron-plane contacts (the vertices below it).

The law is seed 002's Minkowski-overlap ECC model: w = w(delta_M), F = w'(delta_M) n_M,
with w the potential of the pair's elastic normal law (Hooke: w = k delta^2 / 2, linear
force; Hertz: w = 2/5 k delta^(5/2), "Hertz-like"), fed to contact_update as u_n = -delta_M
with n = n_M (then L6Geom's tangential force, damping and friction as for spheres, seed
000). The contact point: x_c = x_o + n x M_n / F_n + lambda n (seed 002) with M_n the
moment of -dw/dtheta; rotating A by dtheta changes delta_M by dtheta . ((p_A - x_A) x n)
(envelope theorem: p_A is A's support point along n_M), so the force acts on the line
through the witness points p_A, p_B (p_A - p_B = delta_M n_M); c = (p_A + p_B) / 2.

As the ellipsoid kernels (ellipsoid_contacts.pyx, whose add_forces sums these rows): one
state row per candidate; an active row warm-starts GJK from its last normal (T.r0), an
inactive one starts from the line of centres, so results depend only on state that
checkpoints and migration carry; positions relative to body 1; branch (m, 6) holds this
step's b1 = c - x1, b2 = c - x2. Polyhedron vertices: the template tables (offsets, data)
of pdem.shape_templates, indexed by the particle's `template`.

Equivalent sphere quantities: m* = m1 m2 / (m1 + m2) (a plane: m2); R* = r1 r2 / (r1 +
r2) of the bounding radii (sphere: r; a plane: the particle's), a choice for the
radius-dependent laws (seed 002 leaves w free). Overlap ratio for max_overlap: delta_M /
the smaller bounding radius.
"""
cimport cython
from cython.parallel cimport prange
from libc.math cimport INFINITY, fabs
from vecmath cimport v3, V, vld, vst, vadd, vsub, vscale, vdot, vunit, mdot, mtdot, q2m, quat, \
    image_shift, image_velocity, cell_moving, \
    m33
from worst_overlap cimport keep_worst, pick_worst, solve_stats
from contact_row cimport Load, contact_update, S_NCOLS, S_T
from laws cimport P_NCOLS
from gjk cimport Convex, MinkResult, cv_point, cv_poly, cv_ellipsoid, mk_query, MK_OVERLAP, \
    MK_FAILED, MK_BAD_INPUT, MK_SEPARATED
import numpy as np

DEF SHAPE_ELLIPSOID = 1
DEF SHAPE_POLYHEDRON = 4
DEF SHAPE_POLYGON = 5


cdef inline Convex _body(int p, v3 o, const signed char[::1] shape, const int[::1] template,
                         const double[:, ::1] orient, const double[:, ::1] semi_axes,
                         const double[::1] radius, const long[::1] voff,
                         const double[:, ::1] vdata) noexcept nogil:
    cdef int t
    if shape[p] >= SHAPE_POLYHEDRON:                # polyhedra, 2D polygons (prisms)
        t = template[p]
        return cv_poly(o, &orient[p, 0], &vdata[voff[t], 0], <int>(voff[t + 1] - voff[t]),
                       radius[p])
    if shape[p] == SHAPE_ELLIPSOID:
        return cv_ellipsoid(o, &orient[p, 0], &semi_axes[p, 0])
    return cv_point(o, radius[p])


@cython.boundscheck(False)
@cython.wraparound(False)
cdef double _pair_one(Py_ssize_t k, int a, int b, const double[:, ::1] pos,
                      const int[:, ::1] image, const double* cell,
                      const double[:, ::1] vel, const double[:, ::1] angvel,
                      const double[:, ::1] orient, const signed char[::1] shape,
                      const int[::1] template, const double[:, ::1] semi_axes,
                      const double[::1] radius, const double[::1] mass,
                      const int[::1] material, const long[::1] voff,
                      const double[:, ::1] vdata, const double[:, ::1] pair_table, int nmat,
                      double dt, int flags, double tol, int max_iter, bint warm,
                      signed char[::1] active, double[:, ::1] state, double[:, ::1] branch,
                      int[::1] iters, signed char[::1] status) noexcept nogil:
    """Pair k; returns the overlap ratio (-1 when not in contact)."""
    cdef Convex A, B
    cdef MinkResult res
    cdef v3 x2, n0, c, v2
    cdef double m1, m2, r1, r2
    cdef Load L
    cdef double* row = &state[k, 0]
    x2 = vsub(vld(&pos[b, 0]), vld(&pos[a, 0]))
    x2 = vadd(x2, image_shift(cell, image[b, 0] - image[a, 0], image[b, 1] - image[a, 1],
                              image[b, 2] - image[a, 2]))
    r1 = radius[a]
    r2 = radius[b]
    iters[k] = 0
    status[k] = MK_SEPARATED
    if vdot(x2, x2) >= (r1 + r2) * (r1 + r2):     # bounding spheres apart
        active[k] = 0
        return -1.0
    A = _body(a, V(0.0, 0.0, 0.0), shape, template, orient, semi_axes, radius, voff, vdata)
    B = _body(b, x2, shape, template, orient, semi_axes, radius, voff, vdata)
    n0 = vld(row + S_T) if active[k] and warm else V(0.0, 0.0, 0.0)   # warm / cold start
    mk_query(&A, &B, n0, 0.0, tol, max_iter, &res)
    iters[k] = res.iters + res.epa_iters
    status[k] = res.status
    if res.status == MK_FAILED or res.status == MK_BAD_INPUT:
        return -1.0
    if res.status != MK_OVERLAP:
        active[k] = 0
        return -1.0
    c = vscale(vadd(res.pa, res.pb), 0.5)
    if shape[a] == SHAPE_POLYGON or shape[b] == SHAPE_POLYGON:
        # 2D: the prisms' witnesses lie anywhere along z, and a side face of D may tilt
        # its normal by round-off: back into the plane, so torques stay along z
        c.z = 0.0
        res.n = vunit(V(res.n.x, res.n.y, 0.0))
    m1 = mass[a]
    m2 = mass[b]
    v2 = vld(&vel[b, 0])
    if cell_moving(cell):          # seed 000's v~2 (docs/cell.md)
        v2 = image_velocity(cell, v2, image[b, 0] - image[a, 0], image[b, 1] - image[a, 1],
                            image[b, 2] - image[a, 2])
    L = contact_update(c, res.n, res.gap, x2, vld(&vel[a, 0]), v2,
                       vld(&angvel[a, 0]), vld(&angvel[b, 0]), r1, r2, m1 * m2 / (m1 + m2),
                       r1 * r2 / (r1 + r2), &pair_table[material[a] * nmat + material[b], 0],
                       dt, flags, &active[k], row, NULL)
    vst(&branch[k, 0], c)
    vst(&branch[k, 3], vsub(c, x2))
    return -res.gap / (r1 if r1 < r2 else r2)


@cython.boundscheck(False)
@cython.wraparound(False)
def polyhedron_pairs(const int[::1] i1, const int[::1] i2, const double[:, ::1] pos,
                     const int[:, ::1] image, const double[:, ::1] cell,
                     const double[:, ::1] vel, const double[:, ::1] angvel,
                     const double[:, ::1] orient, const signed char[::1] shape,
                     const int[::1] template, const double[:, ::1] semi_axes,
                     const double[::1] radius, const double[::1] mass,
                     const int[::1] material, const long[::1] voff,
                     const double[:, ::1] vdata, const double[:, ::1] pair_table,
                     int n_materials, double dt, int flags, double tol, int max_iter,
                     signed char[::1] active, double[:, ::1] state, double[:, ::1] branch,
                     int[::1] iters, signed char[::1] status, int n_threads, bint warm=True):
    """Update every candidate pair (at least one polyhedron). Returns (worst overlap
    ratio, its pair or -1, first pair whose GJK/EPA failed or -1, contacts, their total
    and largest GJK + EPA iteration counts)."""
    cdef Py_ssize_t m = i1.shape[0], k
    cdef int nt = max(1, n_threads)
    cdef double ratio
    cdef double[:, ::1] worst = np.zeros((nt, 2))
    if m == 0:
        return 0.0, -1, -1, 0, 0, 0
    if state.shape[1] != S_NCOLS or pair_table.shape[1] != P_NCOLS or branch.shape[0] < m:
        raise ValueError("polyhedron pair arrays: state (%d, %d), table width %d, branch %d"
                         % (state.shape[0], state.shape[1], pair_table.shape[1],
                            branch.shape[0]))
    worst[:, 1] = -1
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        ratio = _pair_one(k, i1[k], i2[k], pos, image, &cell[0, 0], vel, angvel, orient,
                          shape, template, semi_axes, radius, mass, material, voff, vdata,
                          pair_table, n_materials, dt, flags, tol, max_iter, warm, active,
                          state, branch, iters, status)
        keep_worst(worst, ratio, k)
    return pick_worst(worst) + solve_stats(status, iters, m, MK_FAILED, MK_BAD_INPUT, MK_OVERLAP)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef double _plane_one(Py_ssize_t k, int p, int w, const double[:, ::1] pos,
                       const double[:, ::1] vel, const double[:, ::1] angvel,
                       const double[:, ::1] orient, const signed char[::1] shape,
                       const int[::1] template,
                       const double[::1] radius, const double[::1] mass,
                       const int[::1] material, const long[::1] voff,
                       const double[:, ::1] vdata, const double[:, ::1] plane_point,
                       const double[:, ::1] plane_normal, const double[:, ::1] plane_vel,
                       const int[::1] plane_material, const double[:, ::1] pair_table,
                       int nmat, double dt, int flags, signed char[::1] active,
                       double[:, ::1] state, double[:, ::1] branch) noexcept nogil:
    """Plane w = body 1 (the foot of the perpendicular from the centre), polyhedron p =
    body 2, n = m. Every vertex below the plane is a Minkowski overlap of its own
    (a half-space and a point: delta_v = its depth), w = sum_v w(delta_v): for Hooke the
    forces k delta_v at the vertices x_v add up to F = k sum delta_v at their
    delta-weighted centroid (a rigid motion moves points affinely), so one row carries
    u_n = -sum delta_v at c = sum delta_v x_v / sum delta_v, lifted to half the weighted
    mean depth. One vertex below: exactly the Minkowski overlap of the polytope (its
    deepest vertex). A face on the plane thus pushes at its centre and the body can
    rest on it (with the deepest vertex alone, the force would jump from corner to corner
    every step: a face-down cube would rattle)."""
    cdef quat q
    cdef m33 M
    cdef v3 mm, mb, sb, x2, c
    cdef Load L
    cdef int t = template[p], i
    cdef const double* v = &vdata[voff[t], 0]
    cdef int nv = <int>(voff[t + 1] - voff[t])
    cdef double h, d, dv, dsum = 0.0, d2sum = 0.0, dmax = 0.0
    q.w = orient[p, 0]; q.x = orient[p, 1]; q.y = orient[p, 2]; q.z = orient[p, 3]
    M = q2m(q)
    mm = vld(&plane_normal[w, 0])
    mb = mdot(M, mm)                         # the normal in the body frame
    d = vdot(vsub(vld(&pos[p, 0]), vld(&plane_point[w, 0])), mm)
    sb = V(0.0, 0.0, 0.0)
    for i in range(nv):
        h = v[3 * i] * mb.x + v[3 * i + 1] * mb.y + v[3 * i + 2] * mb.z
        dv = -(d + h)                        # the vertex's depth below the plane
        if dv > 0.0:
            dsum += dv
            d2sum += dv * dv
            sb = vadd(sb, vscale(V(v[3 * i], v[3 * i + 1], v[3 * i + 2]), dv))
            if dv > dmax:
                dmax = dv
    if not (dsum > 0.0):
        active[k] = 0
        return -1.0
    sb = mtdot(M, vscale(sb, 1.0 / dsum))    # the weighted centroid, world offset
    x2 = vscale(mm, d)                       # the centre relative to the foot point
    c = vadd(x2, vsub(sb, vscale(mm, vdot(sb, mm) + d + 0.5 * d2sum / dsum)))
    if shape[p] == SHAPE_POLYGON:            # a 2D polygon's prism: each corner twice,
        dsum *= 0.5                          # and c in the plane (the +-z sums round)
        c.z = 0.0
    L = contact_update(c, mm, -dsum, x2, vld(&plane_vel[w, 0]), vld(&vel[p, 0]),
                       V(0.0, 0.0, 0.0), vld(&angvel[p, 0]), 0.0, radius[p], mass[p],
                       radius[p], &pair_table[plane_material[w] * nmat + material[p], 0], dt,
                       flags, &active[k], &state[k, 0], NULL)
    vst(&branch[k, 0], c)
    vst(&branch[k, 3], vsub(c, x2))
    return dmax / radius[p]


@cython.boundscheck(False)
@cython.wraparound(False)
def polyhedron_plane(const int[::1] particle, const int[::1] plane, const double[:, ::1] pos,
                     const double[:, ::1] vel, const double[:, ::1] angvel,
                     const double[:, ::1] orient, const signed char[::1] shape,
                     const int[::1] template,
                     const double[::1] radius, const double[::1] mass,
                     const int[::1] material, const long[::1] voff,
                     const double[:, ::1] vdata, const double[:, ::1] plane_point,
                     const double[:, ::1] plane_normal, const double[:, ::1] plane_vel,
                     const int[::1] plane_material, const double[:, ::1] pair_table,
                     int n_materials, double dt, int flags, signed char[::1] active,
                     double[:, ::1] state, double[:, ::1] branch, int n_threads):
    """Update every polyhedron-plane candidate; returns (worst overlap ratio, its row)."""
    cdef Py_ssize_t m = particle.shape[0], k
    cdef int nt = max(1, n_threads)
    cdef double ratio
    cdef double[:, ::1] worst = np.zeros((nt, 2))
    if m == 0:
        return 0.0, -1
    worst[:, 1] = -1
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        ratio = _plane_one(k, particle[k], plane[k], pos, vel, angvel, orient, shape, template,
                           radius, mass, material, voff, vdata, plane_point, plane_normal,
                           plane_vel, plane_material, pair_table, n_materials, dt, flags,
                           active, state, branch)
        keep_worst(worst, ratio, k)
    return pick_worst(worst)
