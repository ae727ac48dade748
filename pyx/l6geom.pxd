# L6Geom local contact coordinates, implemented formula by formula from seed 000
# (Woo's Cg2_Any_Any_L6Geom "generic contact routine"), as inline functions that the
# contact batch kernels (contacts.pyx) call once per contact.
#
# Conventions. T is stored by rows: T.r0 = n (local x axis), T.r1, T.r2 the local y, z
# axes in global coordinates. The seed writes the axes as columns of T and local
# components as T^T a; with rows that is T.a (mdot). All positions are relative to
# particle 1 (x1 = 0, x2 = rel), so a pair that crosses a periodic or rank boundary
# is computed from the same numbers on every rank.
#
# Time indices (leap-frog): positions, c, n, T, u, phi at t; velocities at t - dt/2.
#
# small: NULL, or (the vector blocks of contacts.pyx) a flag: the routines then take the
# small-step forms alone -- vunit_near's Newton step, l6_mid_closed's series -- with no
# square root or division, and clear the flag for a pair where one does not apply; the
# caller computes that pair again with small NULL (both forms, then a select), which
# gives the bits the exact routines give.
from vecmath cimport v3, m33, quat, V, vadd, vsub, vscale, vneg, vdot, vcross, vnorm, \
    vunit, vunit_near, vunit_near_small, mdot, m2q, q2m, qslerp_half
from libc.math cimport fabs, sqrt

# Approximation flags (seed 000 "approximation flags"; names after Woo's approxMask).
cdef enum:
    APPROX_MID_NORMAL = 1       # n(t-dt/2) ~ n(t-dt) instead of (n(t-dt) + n(t))/2
    NO_RENORM_MID_NORMAL = 2    # do not re-normalize the mid-step normal
    APPROX_MID_TRSF = 4         # T(t-dt/2) ~ T(t-dt) instead of Slerp(T(t-dt), T(t); 1/2)
    NO_RENORM_TRSF = 8          # do not re-orthonormalize T after the column update
    NO_RATCH = 16               # branch vectors r1 n and -r2 n (Yade's avoidGranularRatcheting)


cdef inline m33 l6_initial_axes(v3 n) noexcept nogil:
    """Initial local axes at contact formation (seed 000, "Contact formation").

    The local y axis lies in the xz plane when |n_y| < |n_z| and in the xy plane
    otherwise. The seed writes n_y < n_z without absolute values; taken literally
    that rule gives a zero y axis for n = -e_y (n x e_y = 0), so the comparison is on
    magnitudes, as in Woo's implementation. y = n x e_y lies in the xz plane,
    y = n x e_z in the xy plane; z = x cross y.
    """
    cdef m33 T
    cdef v3 y
    if fabs(n.y) < fabs(n.z):
        y = vcross(n, V(0.0, 1.0, 0.0))
    else:
        y = vcross(n, V(0.0, 0.0, 1.0))
    y = vunit(vsub(y, vscale(n, vdot(y, n))))
    T.r0 = n
    T.r1 = y
    T.r2 = vcross(n, y)
    return T


cdef inline m33 l6_orthonormalize(m33 T, bint* small) noexcept nogil:
    """Re-normalization of T after the column update. Row 0 is the directly computed
    normal and stays. Rows 1, 2 lose their n component, then are orthogonalized
    symmetrically: the linear update a + o x a leaves r1.r2 = -(o.r1)(o.r2) = O(dt^2),
    and splitting that correction half and half between the two rows restores the
    exactly rotated frame to second order, whereas Gram-Schmidt (all of it on one row)
    would leave a twist bias of O(dt^2) per step, i.e. first-order drift of the frame
    of a rigidly rotating contact. Row 2 is then rebuilt as r0 x r1 (right-handed)."""
    cdef v3 a = vsub(T.r1, vscale(T.r0, vdot(T.r1, T.r0)))
    cdef v3 b = vsub(T.r2, vscale(T.r0, vdot(T.r2, T.r0)))
    cdef double e = 0.5 * vdot(a, b)
    a = vsub(a, vscale(b, e))
    T.r1 = vunit_near(a) if small == NULL else vunit_near_small(a, small)
    T.r2 = vcross(T.r0, T.r1)
    return T


cdef inline v3 _half_apply(m33 Tp, m33 Tc, double a01, double a02, double a12, double al,
                           double be, double ga, v3 v) noexcept nogil:
    """al Tp v + be Tc v + ga (K - K^T) Tp v (see l6_mid_closed)."""
    cdef v3 a = mdot(Tp, v)
    cdef v3 b = mdot(Tc, v)
    cdef v3 aa = V(a01 * a.y + a02 * a.z, a12 * a.z - a01 * a.x, -(a02 * a.x + a12 * a.y))
    return vadd(vadd(vscale(a, al), vscale(b, be)), vscale(aa, ga))


cdef inline bint l6_mid_closed(m33 Tp, m33 Tc, v3 v1, v3 v2, v3* m1, v3* m2,
                               bint* small) noexcept nogil:
    """m1 = Tm v1, m2 = Tm v2 with Tm = Slerp(Tp, Tc; 1/2) (seed 000), in closed form;
    False (m1, m2 meaningless) for relative rotations beyond 90 degrees.

    With the relative rotation K = Tc Tp^T (local axes), r_w = sqrt(1 + tr K) / 2 the
    scalar part of its quaternion, a = Tp v and b = Tc v = K a, the half rotation of K
    applied to a is  Tm v = [(1 + 2 r_w) a + b + (K - K^T) a / (2 r_w)] / (2 (1 + r_w)),
    the same as normalizing the sum of the aligned quaternions of Tp and Tc (the Slerp at
    1/2) and rotating by it, to round-off. It needs no m2q, hence no branch on the frames'
    orientation (Shepperd's case choice is unpredictable per contact and its
    mispredictions cost more than the arithmetic). With e = (3 - tr K) / 4 = sin^2(angle/2),
    the coefficients 1/(2(1 + r_w)) and 1/(4 r_w (1 + r_w)) are series in e, exact to
    round-off for |e| < 1e-4 (angles below 0.02 rad: every DEM step). The formula loses
    accuracy as r_w -> 0, hence the limit at 90 degrees (tr K = 1). Branch-free (both
    coefficient forms, then a select) so that loops over contacts vectorize."""
    cdef double tr = vdot(Tc.r0, Tp.r0) + vdot(Tc.r1, Tp.r1) + vdot(Tc.r2, Tp.r2)
    cdef double e = 0.25 * (3.0 - tr)
    cdef double e2 = e * e        # Estrin's scheme: a shorter dependency chain than Horner's
    cdef double be_s = (0.25 + e * (1.0 / 16.0)) + e2 * (1.0 / 32.0 + e * (5.0 / 256.0))
    cdef double ga_s = (0.125 + e * (3.0 / 32.0)) + e2 * (5.0 / 64.0 + e * (35.0 / 512.0))
    cdef double rw, be_r, ga_r, be = be_s, ga = ga_s
    cdef bint series = fabs(e) < 1e-4
    if small != NULL:
        small[0] = small[0] & series
    else:
        rw = 0.5 * sqrt(1.0 + tr)
        be_r = 0.5 / (1.0 + rw)
        ga_r = 0.25 / (rw * (1.0 + rw))
        be = be_s if series else be_r
        ga = ga_s if series else ga_r
    # (K - K^T)_ij = Tc_i . Tp_j - Tc_j . Tp_i; (1 + 2 r_w) / (2 (1 + r_w)) = 1 - be
    cdef double a01 = vdot(Tc.r0, Tp.r1) - vdot(Tc.r1, Tp.r0)
    cdef double a02 = vdot(Tc.r0, Tp.r2) - vdot(Tc.r2, Tp.r0)
    cdef double a12 = vdot(Tc.r1, Tp.r2) - vdot(Tc.r2, Tp.r1)
    m1[0] = _half_apply(Tp, Tc, a01, a02, a12, 1.0 - be, be, ga, v1)
    m2[0] = _half_apply(Tp, Tc, a01, a02, a12, 1.0 - be, be, ga, v2)
    return series | (tr > 1.0)       # bitwise: no short-circuit branch


cdef inline bint l6_mid_rates(m33 Tp, m33 Tc, v3 vr2, v3 dw, int flags, v3* udot,
                              v3* phidot, bint* small) noexcept nogil:
    """The local rates udot = T_mid vr2 and phidot = T_mid dw with the mid-step
    transformation T_mid = T(t-dt) (APPROX_MID_TRSF) or Slerp(T(t-dt), T(t); 1/2) in
    closed form; False when that needs the quaternion route (l6_mid_slerp)."""
    if flags & APPROX_MID_TRSF:
        udot[0] = mdot(Tp, vr2)
        phidot[0] = mdot(Tp, dw)
        return True
    return l6_mid_closed(Tp, Tc, vr2, dw, udot, phidot, small)


cdef inline void l6_mid_slerp(m33 Tp, m33 Tc, v3 v1, v3 v2, v3* m1, v3* m2) noexcept nogil:
    """m1 = Tm v1, m2 = Tm v2 with Tm = Slerp(Tp, Tc; 1/2) through quaternions: relative
    turns beyond 90 degrees (never a time step in practice), where l6_mid_closed fails."""
    cdef m33 Tm = q2m(qslerp_half(m2q(Tp), m2q(Tc)))
    m1[0] = mdot(Tm, v1)
    m2[0] = mdot(Tm, v2)


cdef inline void l6_branches(v3 c, v3 n, v3 x2, double r1, double r2, int flags,
                             v3* b1, v3* b2) noexcept nogil:
    """Branch vectors from the centres (x1 = 0, x2) to the contact point c (seed 000)."""
    if flags & NO_RATCH:
        b1[0] = vscale(n, r1)
        b2[0] = vscale(n, -r2)
    else:
        b1[0] = c
        b2[0] = vsub(c, x2)


cdef inline void l6_form(v3 n, double un, m33* T, v3* u, v3* phi, v3* u0, v3* phi0,
                         v3* udot, v3* phidot) noexcept nogil:
    """Contact formation: initial axes, u = (u_n, 0, 0), phi = 0, rates zero, origins zero."""
    T[0] = l6_initial_axes(n)
    u[0] = V(un, 0.0, 0.0)
    phi[0] = V(0.0, 0.0, 0.0)
    u0[0] = V(0.0, 0.0, 0.0)
    phi0[0] = V(0.0, 0.0, 0.0)
    udot[0] = V(0.0, 0.0, 0.0)
    phidot[0] = V(0.0, 0.0, 0.0)


cdef inline void l6_frame(v3 c, v3 n, v3 x2, v3 v1, v3 v2, v3 w1, v3 w2, double r1,
                          double r2, double dt, int flags, m33 Tp, m33* Tc, v3* vr2,
                          double* vn, bint* small) noexcept nogil:
    """First half of the contact update (seed 000): T(t) from T(t-dt) = Tp, and the
    relative velocity at c with its normal part removed (vr2) and its normal rate vn."""
    cdef v3 n_prev = Tp.r0
    cdef v3 o_r, o_t, o, n_mid, b1, b2, vr
    # bending rotation o_r = n(t-dt) x n(t)
    o_r = vcross(n_prev, n)
    # mid-step normal, accurate or approximate, then re-normalized
    if flags & APPROX_MID_NORMAL:
        n_mid = n_prev
    else:
        n_mid = vscale(vadd(n_prev, n), 0.5)
    if not (flags & NO_RENORM_MID_NORMAL):
        n_mid = vunit_near(n_mid) if small == NULL else vunit_near_small(n_mid, small)
    # twist rotation o_t = n_mid (n_mid . (w1 + w2)/2) dt
    o_t = vscale(n_mid, vdot(n_mid, vscale(vadd(w1, w2), 0.5)) * dt)
    # relative velocity at c, then its normal part removed
    l6_branches(c, n, x2, r1, r2, flags, &b1, &b2)
    vr = vsub(vadd(v2, vcross(w2, b2)), vadd(v1, vcross(w1, b1)))
    vn[0] = vdot(n_mid, vr)
    vr2[0] = vsub(vr, vscale(n_mid, vn[0]))
    # column update of T: a(t) = a - a x o_r - a x o_t = a - a x (o_r + o_t) for the two
    # in-plane axes (one cross product per axis)
    o = vadd(o_r, o_t)
    Tc.r0 = n
    Tc.r1 = vsub(Tp.r1, vcross(Tp.r1, o))
    Tc.r2 = vsub(Tp.r2, vcross(Tp.r2, o))
    if not (flags & NO_RENORM_TRSF):
        Tc[0] = l6_orthonormalize(Tc[0], small)


cdef inline void l6_advance(double un, double vn, double dt, v3* u, v3* phi, v3* udot,
                            v3* phidot) noexcept nogil:
    """Second half: incremental u and phi from the local rates T_mid v_r2 (udot) and
    T_mid (w2 - w1) (phidot); u_x non-incrementally; udot.x = the normal rate vn."""
    u[0] = vadd(u[0], vscale(udot[0], dt))
    u[0].x = un
    phi[0] = vadd(phi[0], vscale(phidot[0], dt))
    udot[0].x = vn


cdef inline void l6_update(v3 c, v3 n, double un, v3 x2, v3 v1, v3 v2, v3 w1, v3 w2,
                           double r1, double r2, double dt, int flags,
                           m33* T, v3* u, v3* phi, v3* udot, v3* phidot) noexcept nogil:
    """Update an existing contact from t-dt to t (seed 000, "Contact update").

    In: c, n, un computed directly at t; x2 = position of 2 relative to 1; v, w at
    t-dt/2. In/out: T, u, phi at t-dt -> t. Out: udot (normal component = n.v_r, the
    rate the normal law damps; tangential = T_mid v_r2) and phidot = T_mid (w2 - w1).
    """
    cdef m33 Tc
    cdef v3 vr2
    cdef double vn
    l6_frame(c, n, x2, v1, v2, w1, w2, r1, r2, dt, flags, T[0], &Tc, &vr2, &vn, NULL)
    # mid-step transformation applied to the relative velocities: incremental u and phi
    # in local coordinates
    if not l6_mid_rates(T[0], Tc, vr2, vsub(w2, w1), flags, udot, phidot, NULL):
        l6_mid_slerp(T[0], Tc, vr2, vsub(w2, w1), udot, phidot)
    l6_advance(un, vn, dt, u, phi, udot, phidot)
    T[0] = Tc
