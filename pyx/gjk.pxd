# Header-only Minkowski-difference geometry of convex shapes (issue 17, seed 002 "Contact
# modelling of mixed pairs of shapes", docs/polyhedra.md): support functions, GJK
# (Gilbert, Johnson and Keerthi, IEEE J. Robot. Autom. 4:193, 1988) for separation and
# distance, EPA (van den Bergen, Proc. GDC 2001; Collision Detection in Interactive 3D
# Environments, 2003, sec. 4.3.6) for the penetration depth and normal.
#
# A shape is its core (a point, a convex polytope, an ellipsoid) plus a margin: the
# Minkowski sum with a ball of radius `margin` (a sphere = a point with margin r), so
# sphere-polytope contacts are exact. D = A - B is the Minkowski difference of the
# cores; A and B intersect iff the origin is in D (seed 002) and, with margins m_A, m_B,
# their signed gap is dist(o, D) - m_A - m_B when the origin is outside D and
# -(depth of o in D) - m_A - m_B when inside. The support point of D along d is
# s_A(d) - s_B(-d) (supports are additive), and "v . s_D(v) < 0" separates (the seed's
# early exit: max_{x in D} x.v < 0 puts the origin outside D).
#
# Normal convention: n from A to B. Separated: the point of D nearest the origin is
# -dist n; overlapping: the nearest boundary point of D is depth n, so translating B by
# (depth + m_A + m_B) n separates the shapes: the Minkowski overlap d_M = delta_M n_M of
# the seed. Witness points p_A on A's surface, p_B on B's, p_A - p_B = -gap n.
from libc.math cimport sqrt, fabs, INFINITY
from vecmath cimport v3, m33, quat, V, vld, vadd, vsub, vscale, vneg, vdot, vcross, vnorm, \
    mdot, mtdot, q2m
from ellipsoid cimport Ell, ell_make, ell_support

cdef enum:
    CV_POINT = 0          # a point (a sphere: margin r)
    CV_POLY = 1           # the convex hull of nv body-frame vertices
    CV_ELL = 2            # an ellipsoid (ellipsoid.pxd)

cdef enum:
    MK_SEPARATED = 0      # early exit: a separating axis with gap > exit_gap (n, gap valid)
    MK_DISTANCE = 1       # converged: gap >= 0, n, witness points valid
    MK_OVERLAP = 2        # converged: gap < 0 (depth -gap), n, witness points valid
    MK_FAILED = 3         # iteration or polytope capacity exhausted, or a degenerate D
    MK_BAD_INPUT = 4      # non-finite data

cdef enum:
    EPA_MAXV = 128
    EPA_MAXF = 256

ctypedef struct Convex:
    int kind
    v3 o                  # centre (world)
    m33 M                 # rows: body axes in world coordinates (body = M world)
    const double* verts   # CV_POLY: nv body-frame vertices, rows x, y, z
    int nv
    Ell ell               # CV_ELL
    double margin
    double size           # bounding radius of the whole shape (tolerances)

ctypedef struct MinkResult:
    v3 n                  # unit normal, from A to B
    double gap            # signed: negative = overlap (depth -gap)
    v3 pa                 # witness points on A's and B's surfaces
    v3 pb
    int iters             # GJK iterations
    int epa_iters         # EPA expansions (0: no EPA)
    int status

ctypedef struct Simplex:
    int n
    v3 w[4]               # points of D: w = a - b
    v3 a[4]
    v3 b[4]
    double lam[4]         # barycentric weights of the nearest point v


cdef inline Convex cv_point(v3 o, double r) noexcept nogil:
    cdef Convex c
    c.kind = CV_POINT
    c.o = o
    c.margin = r
    c.size = r
    c.nv = 0
    c.verts = NULL
    return c


cdef inline Convex cv_poly(v3 o, const double* q, const double* verts, int nv,
                           double bound) noexcept nogil:
    """A polytope: centre o, orientation q (w, x, y, z; body to world), nv body-frame
    vertices; bound = largest vertex distance from o. q NULL: identity (world vertices
    relative to o, e.g. a triangle facet)."""
    cdef Convex c
    cdef quat qq
    c.kind = CV_POLY
    c.o = o
    if q == NULL:
        c.M.r0 = V(1.0, 0.0, 0.0)
        c.M.r1 = V(0.0, 1.0, 0.0)
        c.M.r2 = V(0.0, 0.0, 1.0)
    else:
        qq.w = q[0]; qq.x = q[1]; qq.y = q[2]; qq.z = q[3]
        c.M = q2m(qq)
    c.verts = verts
    c.nv = nv
    c.margin = 0.0
    c.size = bound
    return c


cdef inline Convex cv_ellipsoid(v3 o, const double* q, const double* axes) noexcept nogil:
    cdef Convex c
    cdef double z[3]
    z[0] = 0.0; z[1] = 0.0; z[2] = 0.0
    c.kind = CV_ELL
    c.ell = ell_make(z, q, axes)
    c.ell.o = o
    c.o = o
    c.margin = 0.0
    c.size = axes[0] if axes[0] > axes[1] else axes[1]
    if axes[2] > c.size:
        c.size = axes[2]
    c.nv = 0
    c.verts = NULL
    return c


cdef inline v3 poly_support_body(const double* verts, int nv, v3 db, int* best) noexcept nogil:
    """The vertex maximising v . db (body frame; ties: the first), and its index."""
    cdef int i, k = 0
    cdef double h, hk = verts[0] * db.x + verts[1] * db.y + verts[2] * db.z
    for i in range(1, nv):
        h = verts[3 * i] * db.x + verts[3 * i + 1] * db.y + verts[3 * i + 2] * db.z
        if h > hk:
            hk = h
            k = i
    best[0] = k
    return V(verts[3 * k], verts[3 * k + 1], verts[3 * k + 2])


cdef inline v3 cv_support(const Convex* c, v3 d) noexcept nogil:
    """Support point of the core of c along d (world; d need not be unit)."""
    cdef v3 s
    cdef int k
    cdef double nd
    if c.kind == CV_POLY:
        return vadd(c.o, mtdot(c.M, poly_support_body(c.verts, c.nv, mdot(c.M, d), &k)))
    if c.kind == CV_ELL:
        nd = vnorm(d)
        ell_support(&c.ell, vscale(d, 1.0 / nd), &s)
        return vadd(c.o, s)
    return c.o


cdef inline void mk_support(const Convex* A, const Convex* B, v3 d, v3* w, v3* a,
                            v3* b) noexcept nogil:
    """s_D(d) = s_A(d) - s_B(-d), with its two parts."""
    a[0] = cv_support(A, d)
    b[0] = cv_support(B, vneg(d))
    w[0] = vsub(a[0], b[0])


# ------------------------------------------------------------ nearest point of a simplex
# Voronoi-region tests (Ericson, Real-Time Collision Detection, 2005, sec. 5.1): the
# point of conv(simplex) nearest the origin, the simplex reduced to the smallest face
# that holds it, and its barycentric weights.

cdef inline void sx_keep(Simplex* s, int i0, int i1, int i2, int m, double l0, double l1,
                         double l2) noexcept nogil:
    """Reduce s to its points i0, i1, i2 (the first m of them) with weights l."""
    cdef v3 w[3]
    cdef v3 a[3]
    cdef v3 b[3]
    cdef int idx[3]
    cdef int j
    idx[0] = i0; idx[1] = i1; idx[2] = i2
    for j in range(m):
        w[j] = s.w[idx[j]]; a[j] = s.a[idx[j]]; b[j] = s.b[idx[j]]
    for j in range(m):
        s.w[j] = w[j]; s.a[j] = a[j]; s.b[j] = b[j]
    s.n = m
    s.lam[0] = l0; s.lam[1] = l1; s.lam[2] = l2


cdef inline v3 sx_segment(Simplex* s, int i, int j, bint reduce) noexcept nogil:
    cdef v3 p = s.w[i], e = vsub(s.w[j], s.w[i])
    cdef double ee = vdot(e, e), t
    t = -vdot(p, e) / ee if ee > 0.0 else 0.0
    if t <= 0.0:
        if reduce:
            sx_keep(s, i, i, i, 1, 1.0, 0.0, 0.0)
        return p
    if t >= 1.0:
        if reduce:
            sx_keep(s, j, j, j, 1, 1.0, 0.0, 0.0)
        return s.w[j]
    if reduce:
        sx_keep(s, i, j, j, 2, 1.0 - t, t, 0.0)
    return vadd(p, vscale(e, t))


cdef inline v3 sx_triangle(Simplex* s, int i, int j, int k, v3 p, double* lam) noexcept nogil:
    """Nearest point to p of triangle (w_i, w_j, w_k), weights into lam[3] (Ericson
    5.1.5)."""
    cdef v3 a = s.w[i], b = s.w[j], c = s.w[k]
    cdef v3 ab = vsub(b, a), ac = vsub(c, a), ap = vsub(p, a), bp, cp
    cdef double d1 = vdot(ab, ap), d2 = vdot(ac, ap), d3, d4, d5, d6, va, vb, vc, t, den
    lam[0] = 0.0; lam[1] = 0.0; lam[2] = 0.0
    if d1 <= 0.0 and d2 <= 0.0:
        lam[0] = 1.0
        return a
    bp = vsub(p, b)
    d3 = vdot(ab, bp)
    d4 = vdot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        lam[1] = 1.0
        return b
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3)
        lam[0] = 1.0 - t; lam[1] = t
        return vadd(a, vscale(ab, t))
    cp = vsub(p, c)
    d5 = vdot(ab, cp)
    d6 = vdot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        lam[2] = 1.0
        return c
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = d2 / (d2 - d6)
        lam[0] = 1.0 - t; lam[2] = t
        return vadd(a, vscale(ac, t))
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        lam[1] = 1.0 - t; lam[2] = t
        return vadd(b, vscale(vsub(c, b), t))
    den = 1.0 / (va + vb + vc)
    lam[1] = vb * den
    lam[2] = vc * den
    lam[0] = 1.0 - lam[1] - lam[2]
    return vadd(a, vadd(vscale(ab, lam[1]), vscale(ac, lam[2])))


cdef inline v3 sx_nearest_triangle(Simplex* s, int i, int j, int k) noexcept nogil:
    """sx_triangle for the origin, reducing s to the face that holds the point."""
    cdef double lam[3]
    cdef v3 v = sx_triangle(s, i, j, k, V(0.0, 0.0, 0.0), lam)
    cdef int idx[3]
    cdef double l[3]
    cdef int m = 0, t
    if lam[0] > 0.0:
        idx[m] = i; l[m] = lam[0]; m += 1
    if lam[1] > 0.0:
        idx[m] = j; l[m] = lam[1]; m += 1
    if lam[2] > 0.0:
        idx[m] = k; l[m] = lam[2]; m += 1
    if m == 0:
        idx[0] = i; l[0] = 1.0; m = 1
    for t in range(m, 3):
        idx[t] = idx[0]; l[t] = 0.0
    sx_keep(s, idx[0], idx[1], idx[2], m, l[0], l[1], l[2])
    return v


cdef inline v3 sx_nearest(Simplex* s) noexcept nogil:
    """The point of conv(s) nearest the origin; s reduced, lam set. A tetrahedron that
    holds the origin is kept whole (v = 0)."""
    cdef int f, i, j, k, l, best = -1
    cdef double sp, sd, dist, best_d = INFINITY, vol
    cdef v3 nf, v, vbest
    cdef Simplex t, tb
    cdef bint flat
    if s.n == 1:
        s.lam[0] = 1.0
        return s.w[0]
    if s.n == 2:
        return sx_segment(s, 0, 1, True)
    if s.n == 3:
        return sx_nearest_triangle(s, 0, 1, 2)
    # tetrahedron (Ericson 5.1.6): the nearest point of the faces the origin is outside of
    vol = vdot(vsub(s.w[3], s.w[0]), vcross(vsub(s.w[1], s.w[0]), vsub(s.w[2], s.w[0])))
    sd = (vdot(vsub(s.w[1], s.w[0]), vsub(s.w[1], s.w[0])) +
          vdot(vsub(s.w[2], s.w[0]), vsub(s.w[2], s.w[0])) +
          vdot(vsub(s.w[3], s.w[0]), vsub(s.w[3], s.w[0])))
    flat = fabs(vol) <= 1e-14 * sd * sqrt(sd)
    for f in range(4):
        i = (f + 1) % 4; j = (f + 2) % 4; k = (f + 3) % 4      # face opposite w_f
        nf = vcross(vsub(s.w[j], s.w[i]), vsub(s.w[k], s.w[i]))
        sp = -vdot(s.w[i], nf)                  # origin side
        sd = vdot(vsub(s.w[f], s.w[i]), nf)     # the opposite vertex's side
        if flat or sp * sd < 0.0 or sp == 0.0:
            t = s[0]
            v = sx_nearest_triangle(&t, i, j, k)
            dist = vdot(v, v)
            if dist < best_d:
                best_d = dist
                best = f
                vbest = v
                tb = t
    if best < 0:                                # inside: keep the tetrahedron
        return V(0.0, 0.0, 0.0)
    s[0] = tb
    return vbest


cdef inline v3 sx_point(const Simplex* s, const v3* p) noexcept nogil:
    cdef int i
    cdef v3 r = V(0.0, 0.0, 0.0)
    for i in range(s.n):
        r = vadd(r, vscale(p[i], s.lam[i]))
    return r


# ------------------------------------------------------------------------------ EPA
ctypedef struct Polytope:
    int nv
    int nf
    v3 w[EPA_MAXV]
    v3 a[EPA_MAXV]
    v3 b[EPA_MAXV]
    int f[EPA_MAXF][3]
    v3 fn[EPA_MAXF]          # outward unit normal
    double fd[EPA_MAXF]      # distance of the face plane from the origin (signed)
    bint alive[EPA_MAXF]
    v3 inner                 # a point inside the polytope (the first tetrahedron's centroid)


cdef inline bint epa_face(Polytope* P, int slot, int i, int j, int k) noexcept nogil:
    """Face (i, j, k) into slot, oriented away from P.inner; False if degenerate."""
    cdef v3 nrm = vcross(vsub(P.w[j], P.w[i]), vsub(P.w[k], P.w[i]))
    cdef double l = vnorm(nrm)
    P.f[slot][0] = i; P.f[slot][1] = j; P.f[slot][2] = k
    P.alive[slot] = True
    if not (l > 0.0):
        P.fn[slot] = V(0.0, 0.0, 0.0)
        P.fd[slot] = INFINITY                     # never the nearest; kept for topology
        return False
    nrm = vscale(nrm, 1.0 / l)
    if vdot(nrm, vsub(P.w[i], P.inner)) < 0.0:
        nrm = vneg(nrm)
        P.f[slot][1] = k; P.f[slot][2] = j
    P.fn[slot] = nrm
    P.fd[slot] = vdot(nrm, P.w[i])
    return True


cdef inline bint epa_blow_up(const Convex* A, const Convex* B, Simplex* s,
                             double eps) noexcept nogil:
    """Grow GJK's final simplex (the origin in it, fewer than 4 points: touching, or the
    origin on an edge or face) into a tetrahedron of D. False: D is degenerate."""
    cdef v3 d[6]
    cdef v3 w, a, b, e, t1, t2, nrm
    cdef int i
    cdef double ax, ay, az
    while s.n < 4:
        if s.n == 1:
            d[0] = V(1.0, 0.0, 0.0); d[1] = V(-1.0, 0.0, 0.0); d[2] = V(0.0, 1.0, 0.0)
            d[3] = V(0.0, -1.0, 0.0); d[4] = V(0.0, 0.0, 1.0); d[5] = V(0.0, 0.0, -1.0)
            for i in range(6):
                mk_support(A, B, d[i], &w, &a, &b)
                if vnorm(vsub(w, s.w[0])) > eps:
                    break
            else:
                return False
        elif s.n == 2:
            e = vsub(s.w[1], s.w[0])
            ax = fabs(e.x); ay = fabs(e.y); az = fabs(e.z)
            if ax <= ay and ax <= az:
                t1 = vcross(e, V(1.0, 0.0, 0.0))
            elif ay <= az:
                t1 = vcross(e, V(0.0, 1.0, 0.0))
            else:
                t1 = vcross(e, V(0.0, 0.0, 1.0))
            t2 = vcross(e, t1)
            d[0] = t1; d[1] = vneg(t1); d[2] = t2; d[3] = vneg(t2)
            for i in range(4):
                mk_support(A, B, d[i], &w, &a, &b)
                if vnorm(vcross(vsub(w, s.w[0]), e)) > eps * vnorm(e):
                    break
            else:
                return False
        else:
            nrm = vcross(vsub(s.w[1], s.w[0]), vsub(s.w[2], s.w[0]))
            mk_support(A, B, nrm, &w, &a, &b)
            if not (fabs(vdot(vsub(w, s.w[0]), nrm)) > eps * vnorm(nrm)):
                mk_support(A, B, vneg(nrm), &w, &a, &b)
                if not (fabs(vdot(vsub(w, s.w[0]), nrm)) > eps * vnorm(nrm)):
                    return False
        s.w[s.n] = w; s.a[s.n] = a; s.b[s.n] = b
        s.n += 1
    return True


cdef inline int epa(const Convex* A, const Convex* B, Simplex* s, double eps,
                    MinkResult* r) noexcept nogil:
    """Penetration depth and normal of the cores (the origin inside D, s GJK's last
    simplex): expand a polytope of support points of D towards its boundary face
    nearest the origin until the support along that face's normal is within eps of
    it. Sets r.n, r.gap (= -core depth), r.pa, r.pb (cores), r.epa_iters; returns the
    status."""
    cdef Polytope P
    cdef int i, j, k, f, best, nh, e, slot
    cdef int horizon[EPA_MAXF][2]
    cdef v3 w, a, b, n, p, q
    cdef double dbest, lam[3], lt[3], h, err
    cdef bint shared
    cdef Simplex t
    if not epa_blow_up(A, B, s, eps):
        return MK_FAILED
    P.nv = 4
    P.inner = V(0.0, 0.0, 0.0)
    for i in range(4):
        P.w[i] = s.w[i]; P.a[i] = s.a[i]; P.b[i] = s.b[i]
        P.inner = vadd(P.inner, vscale(s.w[i], 0.25))
    epa_face(&P, 0, 0, 1, 2)
    epa_face(&P, 1, 0, 3, 1)
    epa_face(&P, 2, 0, 2, 3)
    epa_face(&P, 3, 1, 3, 2)
    P.nf = 4
    r.epa_iters = 0
    while True:
        best = -1
        dbest = INFINITY
        for f in range(P.nf):
            if P.alive[f] and P.fd[f] < dbest:
                dbest = P.fd[f]
                best = f
        if best < 0:
            return MK_FAILED
        n = P.fn[best]
        mk_support(A, B, n, &w, &a, &b)
        h = vdot(w, n)
        if h - dbest <= eps or P.nv == EPA_MAXV:
            if h - dbest > eps:
                return MK_FAILED
            break
        r.epa_iters += 1
        # faces seen from w go; their edges not shared by two of them are the horizon
        for f in range(P.nf):
            if P.alive[f] and vdot(P.fn[f], vsub(w, P.w[P.f[f][0]])) > 0.0:
                P.alive[f] = False
        nh = 0
        for f in range(P.nf):
            if P.alive[f]:              # (dead faces are all of this expansion)
                continue
            for e in range(3):
                i = P.f[f][e]
                j = P.f[f][(e + 1) % 3]
                shared = False          # does a live face hold the edge (j, i)?
                for k in range(P.nf):
                    if P.alive[k] and ((P.f[k][0] == j and P.f[k][1] == i) or
                                       (P.f[k][1] == j and P.f[k][2] == i) or
                                       (P.f[k][2] == j and P.f[k][0] == i)):
                        shared = True
                        break
                if shared:
                    if nh == EPA_MAXF:
                        return MK_FAILED
                    horizon[nh][0] = i
                    horizon[nh][1] = j
                    nh += 1
        P.w[P.nv] = w; P.a[P.nv] = a; P.b[P.nv] = b
        P.nv += 1
        # compact: keep the live faces, then the new ones
        k = 0
        for f in range(P.nf):
            if P.alive[f]:
                if k != f:
                    P.f[k][0] = P.f[f][0]; P.f[k][1] = P.f[f][1]; P.f[k][2] = P.f[f][2]
                    P.fn[k] = P.fn[f]; P.fd[k] = P.fd[f]; P.alive[k] = True
                k += 1
        if k + nh > EPA_MAXF:
            return MK_FAILED
        P.nf = k
        for e in range(nh):
            epa_face(&P, P.nf, horizon[e][0], horizon[e][1], P.nv - 1)
            P.nf += 1
    # the nearest point p = dbest n and its weights, in the face that holds it: faces of
    # D are often split into coplanar triangles (parallel faces or edges of A and B),
    # and the first of them need not contain p
    p = vscale(n, dbest)
    err = INFINITY
    for f in range(P.nf):
        if P.alive[f] and P.fd[f] <= dbest + eps and vdot(P.fn[f], n) >= 1.0 - 1e-12:
            t.w[0] = P.w[P.f[f][0]]; t.w[1] = P.w[P.f[f][1]]; t.w[2] = P.w[P.f[f][2]]
            q = vsub(sx_triangle(&t, 0, 1, 2, p, lt), p)
            if vdot(q, q) < err:
                err = vdot(q, q)
                best = f
                lam[0] = lt[0]; lam[1] = lt[1]; lam[2] = lt[2]
    r.pa = V(0.0, 0.0, 0.0)
    r.pb = V(0.0, 0.0, 0.0)
    for i in range(3):
        r.pa = vadd(r.pa, vscale(P.a[P.f[best][i]], lam[i]))
        r.pb = vadd(r.pb, vscale(P.b[P.f[best][i]], lam[i]))
    r.n = n
    r.gap = -h                                 # h = h_D(n): the depth along n
    return MK_OVERLAP


# ------------------------------------------------------------------------------ GJK
cdef inline void mk_query(const Convex* A, const Convex* B, v3 dir0, double exit_gap,
                          double tol, int max_iter, MinkResult* r) noexcept nogil:
    """Signed gap, normal and witness points of A and B (margins included).
    dir0: warm start, the last normal from A to B (zero: cold start from o_B - o_A).
    exit_gap: stop as soon as a separating axis proves gap > exit_gap (MK_SEPARATED;
    +inf: converge to the distance). tol: relative convergence of GJK's distance and
    EPA's depth (to tol x the sizes)."""
    cdef Simplex s, prev
    cdef v3 v, w, a, b, d
    cdef double vv, vw, vv_prev, L = A.size + B.size, eps0, m = A.margin + B.margin, dist
    cdef int i, st
    cdef bint dup
    r.iters = 0
    r.epa_iters = 0
    r.status = MK_FAILED
    if not (L > 0.0 and L < INFINITY and vdot(B.o, B.o) < INFINITY and
            vdot(A.o, A.o) < INFINITY):
        r.status = MK_BAD_INPUT
        return
    eps0 = 1e-12 * L                          # "the origin is on D": EPA decides
    d = dir0 if vdot(dir0, dir0) > 0.0 else vsub(B.o, A.o)
    if not (vdot(d, d) > 0.0):
        d = V(1.0, 0.0, 0.0)
    # v = s_D(d): the seed's test, v . d < 0 separates along d (d from A to B)
    mk_support(A, B, d, &w, &a, &b)
    s.n = 1
    s.w[0] = w; s.a[0] = a; s.b[0] = b; s.lam[0] = 1.0
    v = w
    vw = -vdot(w, d) / vnorm(d) - m           # a lower bound of the gap
    if vw > exit_gap:
        r.n = vscale(d, 1.0 / vnorm(d))
        r.gap = vw
        r.status = MK_SEPARATED
        return
    while True:
        vv = vdot(v, v)
        if vv <= eps0 * eps0:
            break                             # the origin is in (or on) D
        if r.iters >= max_iter:
            return
        r.iters += 1
        mk_support(A, B, vneg(v), &w, &a, &b)
        vw = vdot(v, w)
        if vw > 0.0 and vw / sqrt(vv) - m > exit_gap:
            r.n = vscale(v, -1.0 / sqrt(vv))
            r.gap = vw / sqrt(vv) - m
            r.status = MK_SEPARATED
            return
        dup = False
        for i in range(s.n):
            if w.x == s.w[i].x and w.y == s.w[i].y and w.z == s.w[i].z:
                dup = True
        if dup or vv - vw <= tol * vv:        # converged: |v| - dist <= tol |v|
            st = MK_DISTANCE
            break
        prev = s
        vv_prev = vv
        s.w[s.n] = w; s.a[s.n] = a; s.b[s.n] = b
        s.n += 1
        v = sx_nearest(&s)
        if s.n == 4:
            vv = 0.0
            break                             # the origin is inside the tetrahedron
        if vdot(v, v) >= vv_prev:             # no progress (round-off): the last one
            s = prev
            v = sx_point(&s, s.w)
            break
    vv = vdot(v, v)
    if vv > eps0 * eps0:                      # the cores are apart
        dist = sqrt(vv)
        r.n = vscale(v, -1.0 / dist)
        r.pa = sx_point(&s, s.a)
        r.pb = sx_point(&s, s.b)
        r.gap = dist
    else:
        st = epa(A, B, &s, tol * L, r)
        if st != MK_OVERLAP:
            r.status = st
            return
    r.pa = vadd(r.pa, vscale(r.n, A.margin))
    r.pb = vsub(r.pb, vscale(r.n, B.margin))
    r.gap = r.gap - m
    r.status = MK_OVERLAP if r.gap < 0.0 else MK_DISTANCE
