# Header-only ellipse/ellipsoid geometry: support map, radius-of-curvature tensor and
# the common-normal contact solve of seed 002 ("椭圆颗粒接触模型", ellipse contact
# model), shared by ellipsoid.pyx and, later, the shape-pair interaction kernels.
#
# Conventions. An ellipsoid is its centre o, the rotation matrix M of its orientation
# quaternion (vecmath.q2m: rows = body axes in world coordinates, body = M.world) and
# its squared semi-axes a2 = (a^2, b^2, c^2). In the body frame its support map is
#   c(n) = o + D n / sqrt(n^T D n),  D = diag(a2)          (seed 002 "Contact point")
# and in the world frame s(n) = c(n) - o = M^T D M n / h(n), h(n) = sqrt(n^T M^T D M n)
# = n.s(n) is the support function. 2D ellipses use the same structs with z = 0, the
# rotation about z only, and a2.z unused.
#
# The solve. Body 1 touches along n at c1 = o1 + s1(n), body 2 along -n at
# c2 = o2 - s2(n) (both shapes are centrally symmetric). The gap along n is
#   g(n) = n.(c2 - c1) = n.(o2 - o1) - h1(n) - h2(n)
# and g(n) > 0 for ANY unit n proves that the bodies are apart (a separating axis: the
# seed's "c.n > 0, no contact"). Its gradient on the unit sphere is the part of
# d = c2 - c1 orthogonal to n (d/dn h = s), so the common-normal condition "d parallel
# to n" (the seed's system with f1, f2, mu, nu) is g stationary; the solution sought
# is the local MAXIMUM of g: the distance for separated convex bodies (separating-axis
# duality), minus the Minkowski penetration depth for overlapping ones (seed 002,
# "Minkowski overlap"). Newton on the tangential residual F = (t1.d, t2.d) needs the
# Hessian  -(R1 + R2 + g I), where R_i = T^T (ds_i/dn) T is body i's radius-of-curvature
# tensor at its contact point in the tangent basis T = (t1, t2) of n.
#
# Chart. The two unknowns are the coordinates (alpha, beta) of the gnomonic chart
# n(alpha, beta) = unit(n_k + alpha t1 + beta t2) centred at the current iterate n_k,
# re-centred every iteration: no pole, any normal is interior to its own chart.
#
# Levenberg-Marquardt fallback. The step solves (R1 + R2 + g I + lam I) delta = F; a
# Newton step (lam = 0) is taken while R1 + R2 + g I is positive definite and the trial
# normal does not lower g (to round-off); otherwise lam grows (x4) until it does, and
# shrinks again (/4) after accepted steps. Steps are capped at |delta| <= 0.5. A step
# whose predicted gain F.delta is below the round-off of g is accepted regardless
# (g cannot judge it; without this, thin disks could stall near the solution).
# Converged when |F| <= tol L (L = largest semi-axis of the two) at a point where the
# Hessian says maximum, or right after an undamped Newton step with |delta|^2 <= tol/100
# (quadratic convergence: the remaining error is ~ |delta|^2, which saves the last
# Hessian); at a saddle/minimum the solve steps off along the eigenvector of the
# smallest eigenvalue. The iteration cap turns into status CN_FAILED. Iterations =
# Newton/LM steps taken (trial normals evaluated); 0 when the initial normal already
# satisfies the test (or separates the bodies).
from vecmath cimport v3, m33, quat, V, vadd, vsub, vscale, vneg, vdot, vcross, vnorm, \
    mdot, mtdot, q2m
from libc.math cimport sqrt, fabs, isfinite

cdef enum:
    CN_CONVERGED = 0      # common normal found, |F| <= tol L at a maximum of g
    CN_SEPARATED = 1      # stopped early: g(n) > exit_gap for some n (no contact)
    CN_FAILED = 2         # iteration cap reached: the outputs are the last iterate
    CN_BAD_INPUT = 3      # non-finite or non-positive data

ctypedef struct Ell:
    v3 o      # centre (world)
    m33 M     # rows: body axes in world coordinates
    v3 a2     # squared semi-axes
    m33 A     # M^T D M (symmetric): the support map is s(n) = A n / sqrt(n.A n)

ctypedef struct CNResult:
    v3 n      # unit normal, from body 1 to body 2
    v3 c1     # contact point on body 1 (support along n)
    v3 c2     # contact point on body 2 (support along -n)
    double gap    # n.(c2 - c1): negative = overlap
    double R1[3]  # radius-of-curvature tensors of body 1 and 2 at c1, c2 in the final
    double R2[3]  # tangent basis (t1, t2): (11, 12, 22); planar: R_11 only
    v3 t1        # the tangent basis of R1, R2
    v3 t2
    int iters
    int status


cdef inline void ell_shape_matrix(Ell* e) noexcept nogil:
    """A = M^T D M, computed once per body and pair: A_ij = sum_k a2_k M_ki M_kj."""
    e.A.r0 = mtdot(e.M, V(e.a2.x * e.M.r0.x, e.a2.y * e.M.r1.x, e.a2.z * e.M.r2.x))
    e.A.r1 = mtdot(e.M, V(e.a2.x * e.M.r0.y, e.a2.y * e.M.r1.y, e.a2.z * e.M.r2.y))
    e.A.r2 = mtdot(e.M, V(e.a2.x * e.M.r0.z, e.a2.y * e.M.r1.z, e.a2.z * e.M.r2.z))


cdef inline Ell ell_make(const double* o, const double* q, const double* a) noexcept nogil:
    """o: centre (3), q: unit quaternion (w, x, y, z), a: semi-axes (3)."""
    cdef Ell e
    cdef quat qq
    qq.w = q[0]; qq.x = q[1]; qq.y = q[2]; qq.z = q[3]
    e.o = V(o[0], o[1], o[2])
    e.M = q2m(qq)
    e.a2 = V(a[0] * a[0], a[1] * a[1], a[2] * a[2])
    ell_shape_matrix(&e)
    return e


cdef inline Ell ell2_make(const double* o, const double* q, const double* a) noexcept nogil:
    """2D ellipse in the xy plane: only the rotation about z of q is used (angle
    theta = 2 atan2(q_z, q_w), cos = w^2 - z^2, sin = 2 w z for a unit z-rotation)."""
    cdef Ell e
    cdef double c = q[0] * q[0] - q[3] * q[3], s = 2.0 * q[0] * q[3]
    cdef double r = 1.0 / sqrt(c * c + s * s)
    c *= r; s *= r
    e.o = V(o[0], o[1], 0.0)
    e.M.r0 = V(c, s, 0.0)
    e.M.r1 = V(-s, c, 0.0)
    e.M.r2 = V(0.0, 0.0, 1.0)
    e.a2 = V(a[0] * a[0], a[1] * a[1], 0.0)
    ell_shape_matrix(&e)
    return e


cdef inline double ell_support(const Ell* e, v3 n, v3* s) noexcept nogil:
    """s = c(n) - o (world), returns h(n) = n.s = sqrt(n^T M^T D M n) (seed 002)."""
    cdef v3 an = mdot(e.A, n)
    cdef double h = sqrt(vdot(n, an))
    s[0] = vscale(an, 1.0 / h)
    return h


cdef inline void ell_radii(const Ell* e, v3 s, double h, v3 t1, v3 t2, double* R) noexcept nogil:
    """Radius-of-curvature tensor at the support point s = s(n), in the tangent basis
    (t1, t2) of n: R_ij = t_i^T (ds/dn) t_j = [t_i^T A t_j - (t_i.s)(t_j.s)] / h with
    A = M^T D M. ds/dn is the inverse of the Weingarten map (the support map is the
    inverse Gauss map), so the eigenvalues of R are the principal radii of curvature.
    R[0] = R_11, R[1] = R_12, R[2] = R_22."""
    cdef v3 b1 = mdot(e.A, t1), b2 = mdot(e.A, t2)
    cdef double p1 = vdot(t1, s), p2 = vdot(t2, s), ih = 1.0 / h
    R[0] = (vdot(t1, b1) - p1 * p1) * ih
    R[1] = (vdot(t1, b2) - p1 * p2) * ih
    R[2] = (vdot(t2, b2) - p2 * p2) * ih


cdef inline void tangent_basis(v3 n, v3* t1, v3* t2, bint planar) noexcept nogil:
    """A deterministic orthonormal basis of the plane orthogonal to the unit n: t1 is
    n x e_k for the axis e_k of the smallest |n_k| (never parallel to n), t2 = n x t1;
    planar (n in the xy plane): t1 = (-n_y, n_x, 0), t2 = e_z."""
    cdef v3 e
    if planar:
        t1[0] = V(-n.y, n.x, 0.0)
        t2[0] = V(0.0, 0.0, 1.0)
        return
    cdef double ax = fabs(n.x), ay = fabs(n.y), az = fabs(n.z)
    if ax <= ay and ax <= az:
        e = V(1.0, 0.0, 0.0)
    elif ay <= az:
        e = V(0.0, 1.0, 0.0)
    else:
        e = V(0.0, 0.0, 1.0)
    t1[0] = vcross(n, e)
    t1[0] = vscale(t1[0], 1.0 / vnorm(t1[0]))
    t2[0] = vcross(n, t1[0])


cdef inline double max3(double a, double b, double c) noexcept nogil:
    return a if (a >= b and a >= c) else (b if b >= c else c)


cdef inline bint ell_valid(const Ell* e, bint planar) noexcept nogil:
    """Positive finite semi-axes, finite rotation (False for any NaN)."""
    cdef double m = (e.M.r0.x + e.M.r0.y + e.M.r0.z + e.M.r1.x + e.M.r1.y + e.M.r1.z
                     + e.M.r2.x + e.M.r2.y + e.M.r2.z)
    return (e.a2.x > 0.0 and e.a2.y > 0.0 and (planar or e.a2.z > 0.0) and isfinite(e.a2.x)
            and isfinite(e.a2.y) and isfinite(e.a2.z) and isfinite(m))


cdef inline void cn_eval(const Ell* e1, const Ell* e2, v3 d0, v3 n, v3* s1, v3* s2,
                         double* h1, double* h2, double* g, v3* d) noexcept nogil:
    h1[0] = ell_support(e1, n, s1)
    h2[0] = ell_support(e2, n, s2)
    g[0] = vdot(n, d0) - h1[0] - h2[0]
    d[0] = vsub(vsub(d0, s1[0]), s2[0])


cdef inline void cn_solve(const Ell* e1, const Ell* e2, v3 n0, bint planar, double exit_gap,
                          double tol, int max_iter, CNResult* res) noexcept nogil:
    """Common-normal solve between two ellipsoids (planar: two ellipses in the xy
    plane, one unknown angle, t2 unused). n0: initial normal (the last step's normal,
    or anything non-finite/zero for a cold start from o2 - o1). See the file header."""
    cdef v3 d0 = vsub(e2.o, e1.o), n, s1, s2, d, t1, t2, nt, s1t, s2t, dt
    cdef double R1[3]
    cdef double R2[3]
    cdef double h1, h2, g, h1t, h2t, gt, H11, H12, H22, F1, F2, lam = 0.0
    cdef double L, tr, det, disc, emin, mu, a11, a22, dl1, dl2, dn, slack, ev1, ev2, en
    cdef int it = 0, kind
    cdef bint pd
    tr = 0.0; emin = 0.0; mu = 0.0; dl1 = 0.0; dl2 = 0.0
    R1[0] = R1[1] = R1[2] = R2[0] = R2[1] = R2[2] = 0.0
    t1 = V(0.0, 0.0, 0.0)
    t2 = t1
    cdef double nn = vdot(n0, n0)
    L = sqrt(max3(max3(e1.a2.x, e1.a2.y, 0.0 if planar else e1.a2.z),
                  max3(e2.a2.x, e2.a2.y, 0.0 if planar else e2.a2.z), 0.0))
    res.iters = 0
    if not (ell_valid(e1, planar) and ell_valid(e2, planar) and isfinite(vdot(d0, d0))):
        res.status = CN_BAD_INPUT
        res.gap = 0.0
        return
    if planar:
        n0.z = 0.0
        d0.z = 0.0
        nn = vdot(n0, n0)
    if nn > 0.0 and isfinite(nn):
        n = vscale(n0, 1.0 / sqrt(nn))
    elif vdot(d0, d0) > 0.0:
        n = vscale(d0, 1.0 / vnorm(d0))
    else:
        n = V(1.0, 0.0, 0.0)
    cn_eval(e1, e2, d0, n, &s1, &s2, &h1, &h2, &g, &d)
    res.status = CN_FAILED
    while True:
        if g > exit_gap:                       # separating axis: no contact
            res.status = CN_SEPARATED
            break
        tangent_basis(n, &t1, &t2, planar)
        F1 = vdot(t1, d)
        F2 = 0.0 if planar else vdot(t2, d)
        ell_radii(e1, s1, h1, t1, t2, R1)
        ell_radii(e2, s2, h2, t1, t2, R2)
        H11 = R1[0] + R2[0] + g
        H12 = 0.0 if planar else R1[1] + R2[1]
        H22 = L if planar else R1[2] + R2[2] + g      # planar: a positive dummy (a length)
        # positive definite (a maximum of g) without an eigenvalue: H11 > 0, det > 0
        det = H11 * H22 - H12 * H12
        pd = H11 > 1e-12 * L and det > 1e-12 * L * (H11 + H22)
        if F1 * F1 + F2 * F2 <= tol * tol * L * L and pd:
            res.status = CN_CONVERGED
            break
        if it >= max_iter:
            break
        it += 1
        kind = 0
        mu = lam
        if F1 * F1 + F2 * F2 <= tol * tol * L * L or not (det > 1e-6 * L * (H11 + H22)
                                                        and H11 > 0.0):
            # smallest eigenvalue (det / (H11 + H22) bounds it from below when positive)
            tr = 0.5 * (H11 + H22)
            disc = sqrt(0.25 * (H11 - H22) * (H11 - H22) + H12 * H12)
            emin = H11 if planar else tr - disc
            if emin + mu <= 1e-6 * L:
                mu = 1e-6 * L - emin + lam
        if F1 * F1 + F2 * F2 <= tol * tol * L * L:
            # stationary but not a maximum of g: step off along the worst direction
            kind = 1
            if planar:
                dl1 = 0.5; dl2 = 0.0
            else:
                if fabs(H12) > 0.0:
                    ev1 = H12; ev2 = emin - H11
                elif H11 <= H22:
                    ev1 = 1.0; ev2 = 0.0
                else:
                    ev1 = 0.0; ev2 = 1.0
                en = 0.5 / sqrt(ev1 * ev1 + ev2 * ev2)
                dl1 = ev1 * en; dl2 = ev2 * en
        else:
            # (H + mu I) delta = F with H + mu I positive definite (mu = 0: Newton)
            a11 = H11 + mu; a22 = H22 + mu
            if planar:
                dl1 = F1 / a11; dl2 = 0.0
            else:
                det = a11 * a22 - H12 * H12
                dl1 = (a22 * F1 - H12 * F2) / det
                dl2 = (a11 * F2 - H12 * F1) / det
            dn = sqrt(dl1 * dl1 + dl2 * dl2)
            if dn > 0.5:
                dl1 *= 0.5 / dn; dl2 *= 0.5 / dn
        nt = vadd(n, vadd(vscale(t1, dl1), vscale(t2, dl2)))
        nt = vscale(nt, 1.0 / vnorm(nt))
        cn_eval(e1, e2, d0, nt, &s1t, &s2t, &h1t, &h2t, &gt, &dt)
        slack = 8e-16 * (fabs(vdot(n, d0)) + h1 + h2)
        # accept when g does not drop, or when the predicted gain F.delta is below the
        # round-off of g (g cannot judge such a step; it is deep in the Newton basin)
        if kind == 1 or gt >= g - slack or F1 * dl1 + F2 * dl2 <= slack:
            n = nt; s1 = s1t; s2 = s2t; h1 = h1t; h2 = h2t; g = gt; d = dt
            lam = 0.25 * lam
            if lam < 1e-9 * L:
                lam = 0.0
            if kind == 0 and mu == 0.0 and dl1 * dl1 + dl2 * dl2 <= 0.01 * tol:
                # a full Newton step this small leaves an error ~ |delta|^2 (quadratic
                # convergence): done, without a new Hessian (R1, R2, t1, t2 stay those
                # of the previous iterate, |delta| away)
                res.status = CN_CONVERGED
                break
        else:                                  # Levenberg-Marquardt: damp and retry
            lam = 4.0 * lam if lam > 0.0 else 1e-2 * (0.5 * fabs(H11 + H22) + L)
    res.n = n
    res.c1 = vadd(e1.o, s1)
    res.c2 = vsub(e2.o, s2)
    if planar:
        res.c1.z = 0.0
        res.c2.z = 0.0
    res.gap = g
    res.iters = it
    res.t1 = t1
    res.t2 = t2
    if planar:
        R1[1] = 0.0; R2[1] = 0.0; R1[2] = 0.0; R2[2] = 0.0
    res.R1[0] = R1[0]; res.R1[1] = R1[1]; res.R1[2] = R1[2]
    res.R2[0] = R2[0]; res.R2[1] = R2[1]; res.R2[2] = R2[2]


cdef inline double hertz_radius(const double* R1, const double* R2, bint planar) noexcept nogil:
    """Equivalent Hertz radius from the radius-of-curvature tensors of the two surfaces
    at their contact points, in the same tangent basis (Johnson, Contact Mechanics, 1985,
    sec. 4.1-4.2): the gap between the surfaces near the contact is 1/2 x^T C x with the
    relative curvature C = R1^-1 + R2^-1; with its principal values 1/R', 1/R'' the
    equivalent radius is R_e = sqrt(R' R'') = 1 / sqrt(det C). Two spheres give
    r1 r2 / (r1 + r2). A body with R2 = 0 passed as NULL-like zeros is a plane (C = R1^-1).
    Planar (ellipses, line contact): 1 / R_e = 1 / rho1 + 1 / rho2."""
    cdef double c11 = 0.0, c12 = 0.0, c22 = 0.0, det
    if planar:
        if R1[0] > 0.0:
            c11 = 1.0 / R1[0]
        if R2[0] > 0.0:
            c11 = c11 + 1.0 / R2[0]
        return 1.0 / c11
    det = R1[0] * R1[2] - R1[1] * R1[1]
    if det > 0.0:
        c11 = R1[2] / det; c12 = -R1[1] / det; c22 = R1[0] / det
    det = R2[0] * R2[2] - R2[1] * R2[1]
    if det > 0.0:
        c11 = c11 + R2[2] / det; c12 = c12 - R2[1] / det; c22 = c22 + R2[0] / det
    return 1.0 / sqrt(c11 * c22 - c12 * c12)
