# Ellipsoid-triangle contact geometry for faceted walls (issue 16 with seed 004).
#
# The triangle T (vertices a, b, c) is body 1, the ellipsoid E (centre o, support map
# s(n) = A n / h(n), ellipsoid.pxd) body 2. For a unit n from the wall to the particle,
# the gap along n is (seed 002's c.n test; docs/ellipsoids.md "The common-normal solve")
#
#     g(n) = min_t n.t' - max_e n.e' = -h(n) - max_i n.(V_i - o)      (V_i the corners)
#
# and max_n g(n) is the distance of separated bodies, minus the (Minkowski) penetration
# depth of overlapping ones. Because h_T(n) = max_i n.V_i is piecewise linear, the
# maximum lies in the normal cone of one feature of T, where it is the maximum of that
# feature's own gap; each has a closed form or a 1D root:
#   face:   n = the facet normal on the side of the centre: the ellipsoid-plane formula;
#   edge:   n orthogonal to the edge: the signed distance of the edge's line (a point
#           in the plane orthogonal to it) to the shadow ellipse of E in that plane;
#   vertex: the signed distance of the vertex to E (nearest surface point, inside or out).
# When the face's foot (below) lies inside the triangle the face decides: for separated
# bodies it is the maximum, and overlapping it is seed 004's rule for a ball whose
# centre projects onto the face (the depth below the facet's plane, not a shallower
# sideways way out of a small facet). Otherwise each candidate n is scored by the true
# g(n) above (never above the maximum, equal to it for the feature whose cone holds
# it), and the best is kept (ties within 1e-12 of the largest semi-axis: face, edges,
# vertices in order). Then c2 = o - s(n) is E's contact point, the wall contact point
# (seed 004's WP) is the foot c2 - g n, and its region and barycentric weights are
# those of trigeom.tri_closest at that foot (it lies on T whenever n is in its feature's
# cone). A sphere (a1 = a2 = a3 = r) gives the ball-facet geometry: the closest point of
# T to the centre, distance - r.
from libc.math cimport sqrt, fabs, atan2, cos, sin
from vecmath cimport v3, V, vadd, vsub, vscale, vneg, vdot, vcross, vnorm, mdot, mtdot
from ellipsoid cimport Ell, ell_support
from trigeom cimport tri_closest


cdef inline double ell_nearest(int dim, const double* a2, const double* y,
                               double* x) noexcept nogil:
    """Nearest point x of the ellipsoid sum_i x_i^2 / a2_i = 1 (its axis frame, dim 2
    or 3 axes) to the point y, inside or outside; returns t with y - x = t grad, grad_i
    = x_i / a2_i, so that the signed distance is t |grad| (negative inside). x_i =
    a2_i y_i / (a2_i + t) with t the root in (-min a2, inf) of S(t) = sum_i a2_i y_i^2 /
    (a2_i + t)^2 = 1, S decreasing there (Eberly, "Distance from a point to an
    ellipse, an ellipsoid, or a hyperellipsoid", Geometric Tools, 2013). Start: lo =
    max_i (-a2_i + a_i |y_i|) (that term alone is 1 there, so the root is not below);
    Newton on sqrt(S) - 1, which is convex and decreasing (the norm of the convex
    positive a_i |y_i| / (a2_i + t)), so its steps from the left never pass the root:
    4.3 iterations on average, at most 9, over 20000 random points and aspect ratios
    up to 150 (|x|_A - 1 <= 7e-13). y on the plane of the smallest axis too close to
    the centre for a root: t = -min a2 (Eberly's degenerate case)."""
    cdef int i, it, im = 0
    cdef double lo, t, tn, S, dS, d, r, amax = 0.0, rest
    for i in range(dim):
        if a2[i] < a2[im]:
            im = i
        if a2[i] > amax:
            amax = a2[i]
    lo = -a2[im]
    for i in range(dim):
        t = -a2[i] + sqrt(a2[i]) * fabs(y[i])
        if t > lo:
            lo = t
    if y[im] == 0.0:               # the degenerate case: S at the pole, without 0/0
        S = 0.0
        for i in range(dim):
            d = a2[i] - a2[im]
            if y[i] != 0.0 and d > 0.0:
                S = S + a2[i] * y[i] * y[i] / (d * d)
            elif y[i] != 0.0:            # an equal smallest axis off the plane: a root
                S = 2.0
        if S <= 1.0:
            rest = 1.0
            for i in range(dim):
                d = a2[i] - a2[im]
                x[i] = a2[i] * y[i] / d if (d > 0.0 and y[i] != 0.0) else 0.0
                rest = rest - x[i] * x[i] / a2[i]
            x[im] = sqrt(a2[im] * rest) if rest > 0.0 else 0.0
            return -a2[im]
    t = lo                         # S(lo) >= 1: left of the root
    for it in range(100):
        S = 0.0
        dS = 0.0
        for i in range(dim):
            if y[i] != 0.0:
                d = a2[i] + t
                r = a2[i] * y[i] * y[i] / (d * d)
                S = S + r
                dS = dS - 2.0 * r / d
        if not (S > 1.0):
            break
        r = sqrt(S)
        tn = t - (r - 1.0) / (0.5 * dS / r)
        if tn - t <= 1e-14 * (fabs(t) + amax):
            t = tn
            break
        t = tn
    for i in range(dim):
        x[i] = a2[i] * y[i] / (a2[i] + t)
    return t


cdef inline double tri_gap(const Ell* e, v3 n, v3 a, v3 b, v3 c, v3* s) noexcept nogil:
    """g(n) = -h(n) - max_i n.(V_i - o); s = s(n)."""
    cdef double h = ell_support(e, n, s), m = vdot(n, vsub(a, e.o)), k
    k = vdot(n, vsub(b, e.o))
    if k > m:
        m = k
    k = vdot(n, vsub(c, e.o))
    if k > m:
        m = k
    return -h - m


cdef inline v3 vertex_normal(const Ell* e, v3 p, int dim) noexcept nogil:
    """n (from p to E) of the signed distance of the point p to E: minus the outward
    normal at the nearest surface point (dim 2: an ellipse of ellipsoid.ell2_make and p
    in its plane)."""
    cdef double y[3]
    cdef double x[3]
    cdef double a2[3]
    cdef v3 yb = mdot(e.M, vsub(p, e.o)), gb
    y[0] = yb.x; y[1] = yb.y; y[2] = yb.z
    a2[0] = e.a2.x; a2[1] = e.a2.y; a2[2] = e.a2.z
    x[2] = 0.0
    ell_nearest(dim, a2, y, x)
    gb = mtdot(e.M, V(x[0] / a2[0], x[1] / a2[1], x[2] / a2[2] if dim == 3 else 0.0))
    return vscale(gb, -1.0 / vnorm(gb))


cdef inline v3 edge_normal(const Ell* e, v3 p, v3 q) noexcept nogil:
    """n (orthogonal to the line pq, from it to E) of the signed distance of the line to
    E: in an orthonormal basis (u, w) of the plane orthogonal to the line, the point
    (u.(p - o), w.(p - o)) against the shadow ellipse of E, whose shape matrix is the
    restriction [[u.Au, u.Aw], [u.Aw, w.Aw]] of A (support functions agree on the plane),
    turned to its principal axes."""
    cdef v3 d = vsub(q, p), u, w, k, au, aw, gb
    cdef double y[2]
    cdef double x[2]
    cdef double a2[2]
    cdef double P, R, Q, m, rr, th, cs, sn, y0, y1
    d = vscale(d, 1.0 / vnorm(d))
    k = V(1.0, 0.0, 0.0) if (fabs(d.x) <= fabs(d.y) and fabs(d.x) <= fabs(d.z)) else \
        (V(0.0, 1.0, 0.0) if fabs(d.y) <= fabs(d.z) else V(0.0, 0.0, 1.0))
    u = vcross(d, k)
    u = vscale(u, 1.0 / vnorm(u))
    w = vcross(d, u)
    au = mdot(e.A, u)
    aw = mdot(e.A, w)
    P = vdot(u, au)
    R = vdot(u, aw)
    Q = vdot(w, aw)
    m = 0.5 * (P + Q)
    rr = sqrt(0.25 * (P - Q) * (P - Q) + R * R)
    th = 0.5 * atan2(2.0 * R, P - Q)           # principal axis 1 at angle th from u
    cs = cos(th)
    sn = sin(th)
    a2[0] = m + rr
    a2[1] = m - rr
    y0 = vdot(u, vsub(p, e.o))
    y1 = vdot(w, vsub(p, e.o))
    y[0] = cs * y0 + sn * y1
    y[1] = -sn * y0 + cs * y1
    ell_nearest(2, a2, y, x)
    x[0] = x[0] / a2[0]
    x[1] = x[1] / a2[1]
    gb = vadd(vscale(u, cs * x[0] - sn * x[1]), vscale(w, sn * x[0] + cs * x[1]))
    return vscale(gb, -1.0 / vnorm(gb))


cdef inline int edge_point(v3 p, v3 a, v3 b, v3 c, int k, v3* wp, double* bary) noexcept nogil:
    """The point of local edge k (0: ab, 1: bc, 2: ca) nearest to p, its region code
    (edge 1 + k, or the end vertex when beyond it) and barycentric weights."""
    cdef v3 s = a if k == 0 else (b if k == 1 else c)
    cdef v3 t = b if k == 0 else (c if k == 1 else a)
    cdef int i = k, j = (k + 1) % 3
    cdef v3 d = vsub(t, s)
    cdef double lam = vdot(vsub(p, s), d) / vdot(d, d)
    if lam <= 0.0:
        wp[0] = s
        bary[i] = 1.0
        return 4 + i
    if lam >= 1.0:
        wp[0] = t
        bary[j] = 1.0
        return 4 + j
    wp[0] = vadd(s, vscale(d, lam))
    bary[i] = 1.0 - lam
    bary[j] = lam
    return 1 + k


cdef inline int ell_triangle(const Ell* e, v3 a, v3 b, v3 c, v3 nf, v3* n, double* g,
                             v3* foot, v3* wp, double* bary, bint detect) noexcept nogil:
    """Contact geometry of E and the triangle abc (unit normal nf): n (from the wall to
    E), the gap g, the foot c2 - g n (c2 = o - s(n) on E), the wall contact point wp and
    its barycentric weights; returns wp's region (trigeom codes). detect: contact
    detection only, so a positive gap along the face normal (a separating axis) ends
    the search (g > 0 then, but not always the distance)."""
    cdef v3 cand[7]
    cdef v3 s, best_s
    cdef double gk, best, tol
    cdef int k, kb = 0
    cand[0] = nf if vdot(nf, vsub(e.o, a)) >= 0.0 else vneg(nf)
    best = tri_gap(e, cand[0], a, b, c, &best_s)
    n[0] = cand[0]
    g[0] = best
    foot[0] = vsub(vsub(e.o, best_s), vscale(cand[0], best))
    k = tri_closest(foot[0], a, b, c, wp, &bary[0], &bary[1], &bary[2])
    if k == 0 or (detect and best > 0.0):
        return k
    cand[1] = edge_normal(e, a, b)
    cand[2] = edge_normal(e, b, c)
    cand[3] = edge_normal(e, c, a)
    cand[4] = vertex_normal(e, a, 3)
    cand[5] = vertex_normal(e, b, 3)
    cand[6] = vertex_normal(e, c, 3)
    tol = 1e-12 * sqrt(max(max(e.a2.x, e.a2.y), e.a2.z))
    for k in range(1, 7):
        gk = tri_gap(e, cand[k], a, b, c, &s)
        if gk > best + tol:        # ties (to round-off): the earlier feature
            best = gk
            best_s = s
            kb = k
    n[0] = cand[kb]
    g[0] = best
    foot[0] = vsub(vsub(e.o, best_s), vscale(cand[kb], best))
    if kb == 0:
        return tri_closest(foot[0], a, b, c, wp, &bary[0], &bary[1], &bary[2])
    # an edge or a vertex won: its region by construction (the foot lies on the edge up
    # to round-off, which tri_closest could place inside the face, unlinking the
    # neighbour facets of seed 004's associative logic)
    bary[0] = 0.0; bary[1] = 0.0; bary[2] = 0.0
    if kb >= 4:
        bary[kb - 4] = 1.0
        wp[0] = a if kb == 4 else (b if kb == 5 else c)
        return kb
    return edge_point(foot[0], a, b, c, kb - 1, wp, bary)


cdef inline double ell_line(const Ell* e, v3 a, v3 b, v3* m, v3* q) noexcept nogil:
    """An ellipse (xy plane) against the line through the segment ab: m = the line's
    unit normal on the centre's side, the gap (o - a).m - h(m) (the ellipsoid-plane
    formula), q = the foot on the line of E's contact point c2 = o - s(m); returns the
    foot's parameter along ab (in [0, 1]: within the segment's span)."""
    cdef v3 t = vsub(b, a), s
    cdef double tt = vdot(t, t), sd
    m[0] = vscale(V(-t.y, t.x, 0.0), 1.0 / sqrt(t.x * t.x + t.y * t.y))
    if vdot(vsub(e.o, a), m[0]) < 0.0:
        m[0] = vneg(m[0])
    ell_support(e, m[0], &s)
    sd = vdot(vsub(vsub(e.o, s), a), t) / tt
    q[0] = vadd(a, vscale(t, sd))
    return sd
