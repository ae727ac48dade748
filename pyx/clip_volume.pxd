# Header-only nogil core of seed 002's contact-volume quantities ("The ECC theory and the
# general contact model", issue 17, docs/polyhedra.md), shared by the geometry kernel
# (contact_volume.pyx) and the engine's volume law (polyhedron_contacts.pyx).
#
# The part of a body's surface inside a convex set given by half-spaces n . x <= d: each
# outward triangle is clipped (Sutherland-Hodgman) by every half-space; the clipped
# polygon, fanned from its first point into triangles (p0, pi, pi+1) of vector area s and
# centroid c, adds s to S (= int dS), c x s to G (= int x x dS), c . s / 3 to 3V's share
# (divergence theorem over the closed surface of the intersection) and (c . s / 3)(3c / 4)
# to the first moment of the volume (the tetrahedron (0, p0, pi, pi+1)).
from libc.math cimport sqrt
from libc.stdlib cimport malloc, free
from vecmath cimport v3, V, vadd, vsub, vscale, vdot, vcross

cdef enum:
    CV_MAXP = 64

ctypedef struct CVSums:
    v3 S              # int dS over the part of the surface (the body's outward normals)
    v3 G              # int x x dS
    double vol        # its share of V (1/3 int x . dS)
    v3 Q              # its share of int x dV


cdef inline void cv_zero(CVSums* s) noexcept nogil:
    s.S = V(0.0, 0.0, 0.0)
    s.G = V(0.0, 0.0, 0.0)
    s.Q = V(0.0, 0.0, 0.0)
    s.vol = 0.0


cdef inline int cv_clip(v3* p, int n, v3 nrm, double d, v3* out) noexcept nogil:
    """The part of polygon p (n points) with nrm . x <= d, into out; its size (-1 when it
    would exceed CV_MAXP points)."""
    cdef int i, m = 0
    cdef v3 a, b
    cdef double da, db
    for i in range(n):
        a = p[i]
        b = p[(i + 1) % n]
        da = vdot(nrm, a) - d
        db = vdot(nrm, b) - d
        if da <= 0.0:
            out[m] = a
            m += 1
        if (da <= 0.0) != (db <= 0.0) and m < CV_MAXP:
            out[m] = vadd(a, vscale(vsub(b, a), da / (da - db)))
            m += 1
        if m >= CV_MAXP - 1:
            return -1
    return m


cdef inline v3 _vtx(const double* v, double i) noexcept nogil:
    cdef int k = 3 * <int>i
    return V(v[k], v[k + 1], v[k + 2])


cdef inline void cv_planes(const double* v, const double* tri, int nt,
                           double* planes) noexcept nogil:
    """The face planes (nrm, d: nrm . x <= d inside) of outward triangles tri (vertex
    indices as doubles, 3 per triangle) of vertices v (3 per vertex), into planes (4 per
    triangle)."""
    cdef int f
    cdef v3 a, nrm
    for f in range(nt):
        a = _vtx(v, tri[3 * f])
        nrm = vcross(vsub(_vtx(v, tri[3 * f + 1]), a), vsub(_vtx(v, tri[3 * f + 2]), a))
        planes[4 * f] = nrm.x
        planes[4 * f + 1] = nrm.y
        planes[4 * f + 2] = nrm.z
        planes[4 * f + 3] = vdot(nrm, a)


cdef inline int cv_surface(const double* v, int nv, const double* tri, int nt,
                           const double* planes, int np, v3 o, double r,
                           CVSums* out) noexcept nogil:
    """Add the part of the surface (nv vertices v, outward triangles tri) inside the
    half-spaces `planes` (np of them, 4 doubles each) to out; -1 on overflow. The
    vertices' plane distances are computed once: a triangle with its three vertices
    inside a plane skips it (so does every polygon clipped from it), one with all three
    outside is dropped; so are triangles wholly outside the ball (o, r) that holds the
    half-spaces' intersection (r = INFINITY: no ball)."""
    cdef v3 buf1[CV_MAXP]
    cdef v3 buf2[CV_MAXP]
    cdef v3* cur
    cdef v3* nxt
    cdef v3* tmp
    cdef v3 s, c
    cdef int t, f, i, n, i0, i1, i2, k
    cdef double cs, rho, d0, d1, d2
    cdef double* dist = <double*>malloc(nv * np * sizeof(double))
    if dist == NULL:
        return -1
    for i in range(nv):
        for f in range(np):
            dist[i * np + f] = (v[3 * i] * planes[4 * f] + v[3 * i + 1] * planes[4 * f + 1]
                                + v[3 * i + 2] * planes[4 * f + 2]) - planes[4 * f + 3]
    for t in range(nt):
        i0 = <int>tri[3 * t]
        i1 = <int>tri[3 * t + 1]
        i2 = <int>tri[3 * t + 2]
        buf1[0] = _vtx(v, i0)
        buf1[1] = _vtx(v, i1)
        buf1[2] = _vtx(v, i2)
        c = vscale(vadd(buf1[0], vadd(buf1[1], buf1[2])), 1.0 / 3.0)
        rho = sqrt(max(vdot(vsub(buf1[0], c), vsub(buf1[0], c)),
                       max(vdot(vsub(buf1[1], c), vsub(buf1[1], c)),
                           vdot(vsub(buf1[2], c), vsub(buf1[2], c)))))
        if vdot(vsub(c, o), vsub(c, o)) > (r + rho) * (r + rho):
            continue                          # the triangle's ball misses (o, r)
        n = 3
        cur = buf1
        nxt = buf2
        for f in range(np):
            d0 = dist[i0 * np + f]
            d1 = dist[i1 * np + f]
            d2 = dist[i2 * np + f]
            if d0 <= 0.0 and d1 <= 0.0 and d2 <= 0.0:
                continue                      # inside this plane
            if d0 > 0.0 and d1 > 0.0 and d2 > 0.0:
                n = 0                         # outside it
                break
            n = cv_clip(cur, n, V(planes[4 * f], planes[4 * f + 1], planes[4 * f + 2]),
                        planes[4 * f + 3], nxt)
            if n < 0:
                free(dist)
                return -1
            tmp = cur
            cur = nxt
            nxt = tmp
            if n < 3:
                break
        for k in range(1, n - 1):
            s = vscale(vcross(vsub(cur[k], cur[0]), vsub(cur[k + 1], cur[0])), 0.5)
            c = vscale(vadd(cur[0], vadd(cur[k], cur[k + 1])), 1.0 / 3.0)
            cs = vdot(c, s) / 3.0
            out.S = vadd(out.S, s)
            out.G = vadd(out.G, vcross(c, s))
            out.vol += cs
            out.Q = vadd(out.Q, vscale(c, 0.75 * cs))
    free(dist)
    return 0
