# cython: language_level=3
"""Python access to the Minkowski-difference routines of gjk.pxd (issue 17, seed 002):
one query for tests and scripts, and a batched nogil kernel over polyhedron pairs
(benchmarks). The engine kernels cimport gjk.pxd directly (polyhedron_contacts.pyx)."""
cimport cython
from cython.parallel cimport prange
from libc.math cimport INFINITY
from vecmath cimport v3, V, vld, vst
from gjk cimport Convex, MinkResult, cv_point, cv_poly, cv_ellipsoid, mk_query, \
    MK_SEPARATED, MK_DISTANCE, MK_OVERLAP, MK_FAILED, MK_BAD_INPUT
import numpy as np

STATUS = {"separated": MK_SEPARATED, "distance": MK_DISTANCE, "overlap": MK_OVERLAP,
          "failed": MK_FAILED, "bad_input": MK_BAD_INPUT}
NAMES = {v: k for k, v in STATUS.items()}


cdef v3 _v(p):
    return V(float(p[0]), float(p[1]), float(p[2]))


cdef Convex _shape(tuple spec, double[:, ::1] keep):
    """spec: ("sphere", centre, r), ("poly", centre, quaternion, vertices (n, 3) body
    frame), ("ellipsoid", centre, quaternion, semi-axes), ("triangle", p0, p1, p2).
    keep: the array the polytope's vertices live in (kept alive by the caller)."""
    cdef double[::1] q, ax
    cdef v3 o
    kind = spec[0]
    if kind == "sphere":
        o = _v(spec[1])
        return cv_point(o, float(spec[2]))
    if kind == "poly" or kind == "triangle":
        o = _v(spec[1]) if kind == "poly" else V(0.0, 0.0, 0.0)
        if kind == "poly":
            q = np.ascontiguousarray(spec[2], dtype=float)
        return cv_poly(o, &q[0] if kind == "poly" else NULL, &keep[0, 0], keep.shape[0],
                       float(np.linalg.norm(keep, axis=1).max()))
    if kind == "ellipsoid":
        q = np.ascontiguousarray(spec[2], dtype=float)
        ax = np.ascontiguousarray(spec[3], dtype=float)
        return cv_ellipsoid(_v(spec[1]), &q[0], &ax[0])
    raise ValueError("shape kind must be sphere, poly, ellipsoid or triangle, got %r" % (kind,))


def _verts(spec):
    if spec[0] == "poly":
        return np.ascontiguousarray(spec[3], dtype=float)
    if spec[0] == "triangle":
        return np.ascontiguousarray(np.array(spec[1:4], dtype=float))
    return np.zeros((1, 3))


def query(a, b, normal0=None, double exit_gap=INFINITY, double tol=1e-12, int max_iter=100):
    """Gap, normal (from a to b), witness points of two convex shapes (specs as _shape).
    Returns a dict: status (name), gap (negative: overlap depth), normal, point_a,
    point_b, iters, epa_iters."""
    cdef double[:, ::1] va = _verts(a), vb = _verts(b)
    cdef Convex A = _shape(tuple(a), va), B = _shape(tuple(b), vb)
    cdef MinkResult r
    cdef v3 d0 = V(0.0, 0.0, 0.0) if normal0 is None else _v(normal0)
    mk_query(&A, &B, d0, exit_gap, tol, max_iter, &r)
    out = {"status": NAMES[r.status], "iters": r.iters, "epa_iters": r.epa_iters}
    if r.status in (MK_SEPARATED, MK_DISTANCE, MK_OVERLAP):
        out["gap"] = r.gap
        out["normal"] = np.array([r.n.x, r.n.y, r.n.z])
    if r.status in (MK_DISTANCE, MK_OVERLAP):
        out["point_a"] = np.array([r.pa.x, r.pa.y, r.pa.z])
        out["point_b"] = np.array([r.pb.x, r.pb.y, r.pb.z])
    return out


@cython.boundscheck(False)
@cython.wraparound(False)
def poly_pairs(const double[:, ::1] pos1, const double[:, ::1] q1, const double[:, ::1] pos2,
               const double[:, ::1] q2, const double[:, ::1] verts1,
               const double[:, ::1] verts2, double[:, ::1] normal, double[::1] gap,
               int[::1] iters, signed char[::1] status, double exit_gap=INFINITY,
               double tol=1e-12, int max_iter=100, int n_threads=1):
    """Pairs k of one polytope shape each (verts1, verts2: body frames), normal (in: warm
    start, zero = cold; out), gap, iterations (GJK + EPA), status. For benchmarks."""
    cdef Py_ssize_t m = pos1.shape[0], k
    cdef double b1 = float(np.linalg.norm(verts1, axis=1).max())
    cdef double b2 = float(np.linalg.norm(verts2, axis=1).max())
    cdef Convex A, B
    cdef MinkResult r
    for k in prange(m, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        A = cv_poly(vld(&pos1[k, 0]), &q1[k, 0], &verts1[0, 0], verts1.shape[0], b1)
        B = cv_poly(vld(&pos2[k, 0]), &q2[k, 0], &verts2[0, 0], verts2.shape[0], b2)
        mk_query(&A, &B, vld(&normal[k, 0]), exit_gap, tol, max_iter, &r)
        status[k] = r.status
        iters[k] = r.iters + r.epa_iters
        if r.status != MK_FAILED and r.status != MK_BAD_INPUT:
            gap[k] = r.gap
            vst(&normal[k, 0], r.n)
