# cython: language_level=3
"""The intersection of two convex polyhedra by clipping, and the quantities of seed
002's contact-volume ECC model ("The ECC theory and the general contact model", issue
17, docs/polyhedra.md): V = vol(A n B), and for each body the part of its surface
inside the other, with S = int dS (vector area, the body's outward normals) and G =
int x x dS. With w = k V, translating B by dx changes V by -(S_B . dx)... precisely
dV/dx_B = S_B and dV/dtheta_B = G_B - x_B x S_B, so F_B = -k S_B, M_B = -k (G_B - x_B x
S_B); S_A = -S_B and G_A = -G_B (a closed surface), and the force acts on the line
x_c = (S_B x G_B) / |S_B|^2 + lambda S_B (the seed's x_c = n x G_n / S_n + lambda n).
A geometry kernel: not yet a law of the engine (refused there, docs/polyhedra.md).

Each outward triangle of one body is clipped (Sutherland-Hodgman) by the face planes of
the other; the clipped polygon, fanned from its first point into triangles (p0, pi,
pi+1) of vector area s and centroid c, adds s to S, c x s to G and c . s / 3 to V
(divergence theorem over the closed surface of A n B).
"""
cimport cython
from vecmath cimport v3, V, vld, vadd, vsub, vscale, vdot, vcross
import numpy as np

DEF MAXP = 64


cdef inline int _clip(v3* p, int n, v3 nrm, double d, v3* out) noexcept nogil:
    """The part of polygon p (n points) with nrm . x <= d, into out; its size."""
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
        if (da <= 0.0) != (db <= 0.0) and m < MAXP:
            out[m] = vadd(a, vscale(vsub(b, a), da / (da - db)))
            m += 1
        if m >= MAXP - 1:
            return -1
    return m


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _surface(const double[:, ::1] va, const long[:, ::1] ta,
                  const double[:, ::1] vb, const long[:, ::1] tb,
                  double* S, double* G, double* vol) noexcept nogil:
    """Add the part of A's surface inside B to S, G, vol; -1 on overflow."""
    cdef v3 buf1[MAXP]
    cdef v3 buf2[MAXP]
    cdef v3* cur
    cdef v3* nxt
    cdef v3* tmp
    cdef v3 nrm, s, c, g
    cdef int t, f, i, n
    cdef double d
    for t in range(ta.shape[0]):
        buf1[0] = vld(&va[ta[t, 0], 0])
        buf1[1] = vld(&va[ta[t, 1], 0])
        buf1[2] = vld(&va[ta[t, 2], 0])
        n = 3
        cur = buf1
        nxt = buf2
        for f in range(tb.shape[0]):
            nrm = vcross(vsub(vld(&vb[tb[f, 1], 0]), vld(&vb[tb[f, 0], 0])),
                         vsub(vld(&vb[tb[f, 2], 0]), vld(&vb[tb[f, 0], 0])))
            d = vdot(nrm, vld(&vb[tb[f, 0], 0]))
            n = _clip(cur, n, nrm, d, nxt)
            if n < 0:
                return -1
            tmp = cur
            cur = nxt
            nxt = tmp
            if n < 3:
                break
        for i in range(1, n - 1):
            s = vscale(vcross(vsub(cur[i], cur[0]), vsub(cur[i + 1], cur[0])), 0.5)
            c = vscale(vadd(cur[0], vadd(cur[i], cur[i + 1])), 1.0 / 3.0)
            g = vcross(c, s)
            S[0] += s.x; S[1] += s.y; S[2] += s.z
            G[0] += g.x; G[1] += g.y; G[2] += g.z
            vol[0] += vdot(c, s) / 3.0
    return 0


def contact_volume(va, ta, vb, tb):
    """Contact-volume quantities of the convex polyhedra A, B given by world vertices
    (n, 3) and outward triangles (t, 3): a dict with V, S_a, G_a, S_b, G_b (S, G of the
    part of each body's surface inside the other) and point (the seed's x_c with
    lambda = 0; None without overlap)."""
    cdef double[:, ::1] a = np.ascontiguousarray(va, dtype=float)
    cdef double[:, ::1] b = np.ascontiguousarray(vb, dtype=float)
    cdef long[:, ::1] fa = np.ascontiguousarray(ta, dtype=np.int64)
    cdef long[:, ::1] fb = np.ascontiguousarray(tb, dtype=np.int64)
    cdef double[::1] out = np.zeros(13)
    cdef int ok
    with nogil:
        ok = _surface(a, fa, b, fb, &out[0], &out[3], &out[12])
        if ok == 0:
            ok = _surface(b, fb, a, fa, &out[6], &out[9], &out[12])
    if ok != 0:
        raise ValueError("contact_volume: a clipped polygon exceeded %d points" % MAXP)
    r = {"V": out[12], "S_a": np.array(out[0:3]), "G_a": np.array(out[3:6]),
         "S_b": np.array(out[6:9]), "G_b": np.array(out[9:12]), "point": None}
    S, G = r["S_b"], r["G_b"]
    if S @ S > 0.0:
        r["point"] = np.cross(S, G) / (S @ S)
    return r
