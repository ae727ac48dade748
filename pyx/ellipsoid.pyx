# cython: language_level=3
"""Ellipse / ellipsoid contact geometry by the common normal (seed 002, "椭圆颗粒接触模型";
issue 16 section 2): batched kernels over pairs and particle-plane contacts, and thin
Python wrappers for the tests. The algorithm (support map, gap function, gnomonic chart,
Newton with Levenberg-Marquardt fallback, early exit on a separating axis) is stated in
ellipsoid.pxd, where the inline functions live.

Data layout. Particles: pos (n, 3), orient (n, 4) unit quaternions (w, x, y, z) taking
body to world coordinates (pdem's orientation), semi_axes (n, 3) (2D: columns 0, 1 in
the xy plane; a sphere is semi-axes (r, r, r)). Pair k: local indices i1[k], i2[k],
and shift[k] added to particle 2's position (periodic image). Per pair in/out: normal
(the last step's normal in, the new one out: the warm start the caller keeps in the
contact row). Outputs: gap (signed distance along n, negative = overlap), point (the
contact point c = (c1 + c2) / 2, what L6Geom takes), point1, point2 (c1, c2), radius
(the equivalent Hertz radius, ellipsoid.pxd hertz_radius), iters, status (CN_*).

Determinism: every pair is computed from its own inputs only, so the result does not
depend on the thread count. A pair whose solve fails keeps status CN_FAILED with its
last iterate; the callers must report it (the batch returns how many failed).
"""
cimport cython
from cython.parallel cimport prange
from libc.math cimport sqrt, INFINITY
from vecmath cimport v3, m33, V, vld, vst, vadd, vsub, vscale, vdot, mdot
from ellipsoid cimport Ell, CNResult, ell_make, ell2_make, ell_support, ell_radii, \
    tangent_basis, cn_solve, hertz_radius, CN_CONVERGED, CN_SEPARATED, CN_FAILED, CN_BAD_INPUT
import numpy as np

STATUS = {"converged": CN_CONVERGED, "separated": CN_SEPARATED, "failed": CN_FAILED,
          "bad_input": CN_BAD_INPUT}


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _pair_one(Py_ssize_t k, int p, int q, const double* shift, const double[:, ::1] pos,
                   const double[:, ::1] orient, const double[:, ::1] semi_axes,
                   double[:, ::1] normal, double[::1] gap, double[:, ::1] point,
                   double[:, ::1] point1, double[:, ::1] point2, double[::1] radius,
                   int[::1] iters, signed char[::1] status, double exit_gap, double tol,
                   int max_iter, bint planar) noexcept nogil:
    """One pair of pair_contacts (a function, so that every local is private to its
    thread); returns 1 if the solve failed or the input was bad."""
    cdef Ell e1, e2
    cdef CNResult res
    if planar:
        e1 = ell2_make(&pos[p, 0], &orient[p, 0], &semi_axes[p, 0])
        e2 = ell2_make(&pos[q, 0], &orient[q, 0], &semi_axes[q, 0])
    else:
        e1 = ell_make(&pos[p, 0], &orient[p, 0], &semi_axes[p, 0])
        e2 = ell_make(&pos[q, 0], &orient[q, 0], &semi_axes[q, 0])
    e2.o = vadd(e2.o, V(shift[0], shift[1], 0.0 if planar else shift[2]))
    cn_solve(&e1, &e2, vld(&normal[k, 0]), planar, exit_gap, tol, max_iter, &res)
    status[k] = res.status
    iters[k] = res.iters
    if res.status == CN_BAD_INPUT:
        return 1
    gap[k] = res.gap
    vst(&normal[k, 0], res.n)
    vst(&point1[k, 0], res.c1)
    vst(&point2[k, 0], res.c2)
    vst(&point[k, 0], vscale(vadd(res.c1, res.c2), 0.5))
    radius[k] = 0.0 if res.status == CN_SEPARATED else hertz_radius(res.R1, res.R2, planar)
    return 1 if res.status == CN_FAILED else 0



@cython.boundscheck(False)
@cython.wraparound(False)
def pair_contacts(const int[::1] i1, const int[::1] i2, const double[:, ::1] shift,
                  const double[:, ::1] pos, const double[:, ::1] orient,
                  const double[:, ::1] semi_axes, double[:, ::1] normal, double[::1] gap,
                  double[:, ::1] point, double[:, ::1] point1, double[:, ::1] point2,
                  double[::1] radius, int[::1] iters, signed char[::1] status,
                  double exit_gap, double tol, int max_iter, bint planar, int n_threads):
    """Common-normal contact of every pair (ellipsoid-ellipsoid, ellipsoid-sphere, or
    with planar=True ellipse-ellipse / ellipse-disk). The solve stops as soon as the gap
    along some normal exceeds exit_gap (0: contact detection; +inf: converge separated
    pairs too, to their distance). Returns the number of pairs with status CN_FAILED or
    CN_BAD_INPUT."""
    cdef Py_ssize_t m = i1.shape[0], k
    cdef int nt = max(1, n_threads)
    cdef long bad = 0
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        bad += _pair_one(k, i1[k], i2[k], &shift[k, 0], pos, orient, semi_axes, normal, gap,
                         point, point1, point2, radius, iters, status, exit_gap, tol, max_iter,
                         planar)
    return bad


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _plane_one(Py_ssize_t k, int p, int w, const double[:, ::1] pos,
                     const double[:, ::1] orient, const double[:, ::1] semi_axes,
                     const double[:, ::1] plane_point, const double[:, ::1] plane_normal,
                     double[:, ::1] normal, double[::1] gap, double[:, ::1] point,
                     double[:, ::1] point2, double[::1] radius, bint planar) noexcept nogil:
    cdef Ell e
    cdef v3 mm, s, t1, t2
    cdef double h, g
    cdef double R[3]
    cdef double Z[3]
    Z[0] = 0.0; Z[1] = 0.0; Z[2] = 0.0
    if planar:
        e = ell2_make(&pos[p, 0], &orient[p, 0], &semi_axes[p, 0])
        mm = V(plane_normal[w, 0], plane_normal[w, 1], 0.0)
    else:
        e = ell_make(&pos[p, 0], &orient[p, 0], &semi_axes[p, 0])
        mm = vld(&plane_normal[w, 0])
    h = ell_support(&e, mm, &s)
    g = vdot(vsub(e.o, V(plane_point[w, 0], plane_point[w, 1],
                         0.0 if planar else plane_point[w, 2])), mm) - h
    gap[k] = g
    vst(&normal[k, 0], mm)
    vst(&point2[k, 0], vsub(e.o, s))
    vst(&point[k, 0], vsub(vsub(e.o, s), vscale(mm, 0.5 * g)))
    tangent_basis(mm, &t1, &t2, planar)
    ell_radii(&e, s, h, t1, t2, R)
    radius[k] = hertz_radius(R, Z, planar)


@cython.boundscheck(False)
@cython.wraparound(False)
def plane_contacts(const int[::1] particle, const int[::1] plane, const double[:, ::1] pos,
                   const double[:, ::1] orient, const double[:, ::1] semi_axes,
                   const double[:, ::1] plane_point, const double[:, ::1] plane_normal,
                   double[:, ::1] normal, double[::1] gap, double[:, ::1] point,
                   double[:, ::1] point2, double[::1] radius, bint planar, int n_threads):
    """Ellipsoid (ellipse) - plane (line), analytic: plane = body 1 with unit normal m
    towards the particles, particle = body 2. n = m, c2 = o - s(m) (the support point
    along -m), gap = (o - p).m - h(m) = (o - p).m - sqrt(m^T M^T D M m), point = c2 -
    gap m / 2 (midway to the plane), radius = equivalent Hertz radius against a flat
    surface (sqrt(det R), or the radius of curvature in 2D)."""
    cdef Py_ssize_t m = particle.shape[0], k
    cdef int nt = max(1, n_threads)
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        _plane_one(k, particle[k], plane[k], pos, orient, semi_axes, plane_point, plane_normal,
                   normal, gap, point, point2, radius, planar)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _support_one(Py_ssize_t k, const double[:, ::1] pos, const double[:, ::1] orient,
                       const double[:, ::1] semi_axes, const double[:, ::1] dirs,
                       double[:, ::1] points, double[::1] h, double[:, ::1] radii,
                       bint planar) noexcept nogil:
    cdef Ell e
    cdef v3 n, s, t1, t2
    cdef double R[3]
    cdef double tr, disc
    if planar:
        e = ell2_make(&pos[k, 0], &orient[k, 0], &semi_axes[k, 0])
        n = V(dirs[k, 0], dirs[k, 1], 0.0)
    else:
        e = ell_make(&pos[k, 0], &orient[k, 0], &semi_axes[k, 0])
        n = vld(&dirs[k, 0])
    tangent_basis(n, &t1, &t2, planar)
    h[k] = ell_support(&e, n, &s)
    vst(&points[k, 0], vadd(e.o, s))
    ell_radii(&e, s, h[k], t1, t2, R)
    if planar:
        radii[k, 0] = R[0]
        radii[k, 1] = R[0]
    else:
        tr = 0.5 * (R[0] + R[2])
        disc = sqrt(0.25 * (R[0] - R[2]) * (R[0] - R[2]) + R[1] * R[1])
        radii[k, 0] = tr - disc
        radii[k, 1] = tr + disc


@cython.boundscheck(False)
@cython.wraparound(False)
def support_batch(const double[:, ::1] pos, const double[:, ::1] orient,
                  const double[:, ::1] semi_axes, const double[:, ::1] dirs,
                  double[:, ::1] points, double[::1] h, double[:, ::1] radii, bint planar,
                  int n_threads):
    """Per row: the support point c(n) of the body along the unit direction dirs[k],
    h = n.(c - o), and the principal radii of curvature there (radii[k, 0] <=
    radii[k, 1]; 2D: radii[k, 0] = radii[k, 1] = the radius of curvature)."""
    cdef Py_ssize_t m = pos.shape[0], k
    cdef int nt = max(1, n_threads)
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        _support_one(k, pos, orient, semi_axes, dirs, points, h, radii, planar)


def support(pos, orient, semi_axes, dirs, planar=False, n_threads=1):
    """Python wrapper of support_batch: returns (points, h, radii)."""
    pos = np.ascontiguousarray(np.atleast_2d(pos), dtype=np.float64)
    m = pos.shape[0]
    orient = np.ascontiguousarray(np.broadcast_to(orient, (m, 4)), dtype=np.float64)
    semi_axes = np.ascontiguousarray(np.broadcast_to(semi_axes, (m, 3)), dtype=np.float64)
    dirs = np.ascontiguousarray(np.broadcast_to(dirs, (m, 3)), dtype=np.float64)
    points = np.zeros((m, 3))
    h = np.zeros(m)
    radii = np.zeros((m, 2))
    support_batch(pos, orient, semi_axes, dirs, points, h, radii, planar, n_threads)
    return points, h, radii


def solve_pairs(pos1, orient1, axes1, pos2, orient2, axes2, normal0=None, exit_gap=INFINITY,
                tol=1e-12, max_iter=50, planar=False, n_threads=1):
    """Python wrapper of pair_contacts for m independent pairs given by their bodies
    (arrays of shape (m, 3), (m, 4), (m, 3), broadcast). normal0: warm start (m, 3), or
    None for a cold start from o2 - o1. Returns a dict of the output arrays."""
    pos1 = np.atleast_2d(np.asarray(pos1, dtype=np.float64))
    pos2 = np.atleast_2d(np.asarray(pos2, dtype=np.float64))
    m = max(pos1.shape[0], pos2.shape[0])
    pos = np.ascontiguousarray(np.concatenate([np.broadcast_to(pos1, (m, 3)),
                                               np.broadcast_to(pos2, (m, 3))]))
    orient = np.ascontiguousarray(np.concatenate([np.broadcast_to(orient1, (m, 4)),
                                                  np.broadcast_to(orient2, (m, 4))]),
                                  dtype=np.float64)
    axes = np.ascontiguousarray(np.concatenate([np.broadcast_to(axes1, (m, 3)),
                                                np.broadcast_to(axes2, (m, 3))]),
                                dtype=np.float64)
    i1 = np.arange(m, dtype=np.int32)
    i2 = np.arange(m, 2 * m, dtype=np.int32)
    normal = np.zeros((m, 3)) if normal0 is None else np.array(
        np.broadcast_to(normal0, (m, 3)), dtype=np.float64, order="C")
    out = dict(normal=normal, gap=np.full(m, np.nan), point=np.zeros((m, 3)),
               point1=np.zeros((m, 3)), point2=np.zeros((m, 3)), radius=np.zeros(m),
               iters=np.zeros(m, dtype=np.int32), status=np.zeros(m, dtype=np.int8))
    out["n_bad"] = pair_contacts(i1, i2, np.zeros((m, 3)), pos, orient, axes, normal,
                                 out["gap"], out["point"], out["point1"], out["point2"],
                                 out["radius"], out["iters"], out["status"], exit_gap, tol,
                                 max_iter, planar, n_threads)
    return out


def plane(pos, orient, semi_axes, plane_point, plane_normal, planar=False, n_threads=1):
    """Python wrapper of plane_contacts, one plane for all bodies: returns a dict."""
    pos = np.ascontiguousarray(np.atleast_2d(pos), dtype=np.float64)
    m = pos.shape[0]
    orient = np.ascontiguousarray(np.broadcast_to(orient, (m, 4)), dtype=np.float64)
    semi_axes = np.ascontiguousarray(np.broadcast_to(semi_axes, (m, 3)), dtype=np.float64)
    out = dict(normal=np.zeros((m, 3)), gap=np.zeros(m), point=np.zeros((m, 3)),
               point2=np.zeros((m, 3)), radius=np.zeros(m))
    plane_contacts(np.arange(m, dtype=np.int32), np.zeros(m, dtype=np.int32), pos, orient,
                   semi_axes, np.ascontiguousarray([plane_point], dtype=np.float64),
                   np.ascontiguousarray([plane_normal], dtype=np.float64), out["normal"],
                   out["gap"], out["point"], out["point2"], out["radius"], planar, n_threads)
    return out
