# cython: language_level=3
"""Ball-facet geometry for faceted walls: closest point of a facet to each ball centre,
its distance and the region of the facet it lies on (seed 004, "Faceted Wall Contact
Resolution"; parametric form of seed 002's particle-triangle section; region method of
Ericson, Real-Time Collision Detection 5.1.5 -- see trigeom.pxd for the region codes:
0 face, 1..3 edges E1..E3, 4..6 vertices V1..V3).

Data layout. Queries k = 0..n-1: centre (n, 3) float64 and the facet to test,
facet_index (n,) int32, into a wall's vertices (nv, 3) float64 and facets (nf, 3) int64
(pdem.contact.mesh.Mesh). Outputs per query: closest point (n, 3), unsigned distance
(n,), region (n,) int32, barycentric weights (n, 3). Each query is independent, so the
static prange gives the same bits for any thread count.
"""
from cython.parallel cimport prange
from libc.math cimport sqrt
from vecmath cimport v3, vld, vst, vsub, vdot
from trigeom cimport tri_closest
import numpy as np


cdef inline double one_query(v3 p, v3 a, v3 b, v3 c, double* point, int* region,
                             double* bary) noexcept nogil:
    """One query with its own locals (a variable only written through a pointer inside
    a prange body would be shared between threads)."""
    cdef v3 q, d
    region[0] = tri_closest(p, a, b, c, &q, &bary[0], &bary[1], &bary[2])
    vst(point, q)
    d = vsub(q, p)
    return sqrt(vdot(d, d))


def closest_points(centres, facet_index, vertices, facets, int threads=1):
    """Closest point of facet facet_index[k] to centres[k] for every k.

    Returns (points (n, 3), distance (n,), region (n,) int32, bary (n, 3)); region codes
    0 face, 1 edge V1-V2, 2 edge V2-V3, 3 edge V3-V1, 4 V1, 5 V2, 6 V3 (local vertex
    r - 4 of the facet; local edge r - 1)."""
    cdef const double[:, ::1] x = np.ascontiguousarray(centres, dtype=np.float64).reshape(-1, 3)
    cdef const int[::1] fi = np.ascontiguousarray(facet_index, dtype=np.int32).reshape(-1)
    cdef const double[:, ::1] vert = np.ascontiguousarray(vertices, dtype=np.float64)
    cdef const long long[:, ::1] fac = np.ascontiguousarray(facets, dtype=np.int64)
    cdef Py_ssize_t n = x.shape[0], k
    if fi.shape[0] != n:
        raise ValueError("closest_points: %d centres but %d facet indices" % (n, fi.shape[0]))
    if vert.shape[1] != 3 or fac.shape[1] != 3:
        raise ValueError("closest_points: vertices and facets must have 3 columns")
    fi_np = np.asarray(fi)
    if n and (fi_np.min() < 0 or fi_np.max() >= fac.shape[0]):
        raise ValueError("closest_points: facet index outside 0..%d" % (fac.shape[0] - 1))
    fac_np = np.asarray(fac)
    if fac.shape[0] and (fac_np.min() < 0 or fac_np.max() >= vert.shape[0]):
        raise ValueError("closest_points: facets refer to vertices outside 0..%d"
                         % (vert.shape[0] - 1))
    points_np = np.empty((n, 3))
    dist_np = np.empty(n)
    region_np = np.empty(n, dtype=np.int32)
    bary_np = np.empty((n, 3))
    cdef double[:, ::1] points = points_np
    cdef double[::1] dist = dist_np
    cdef int[::1] region = region_np
    cdef double[:, ::1] bary = bary_np
    cdef int nt = max(1, threads)
    cdef long long f
    for k in prange(n, nogil=True, schedule='static', num_threads=nt):
        f = fi[k]
        dist[k] = one_query(vld(&x[k, 0]), vld(&vert[fac[f, 0], 0]), vld(&vert[fac[f, 1], 0]),
                            vld(&vert[fac[f, 2], 0]), &points[k, 0], &region[k], &bary[k, 0])
    return points_np, dist_np, region_np, bary_np
