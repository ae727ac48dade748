# Header-only inline 3-vector, 3x3 matrix (rows) and quaternion math for the kernels.
# Everything is pass-by-value on small structs so the C compiler keeps it in
# registers. No allocation, no Python objects: safe inside nogil/prange.
from libc.math cimport sqrt, fabs, sin, cos, INFINITY

ctypedef struct v3:
    double x
    double y
    double z

# Rotation matrix stored by rows: r0, r1, r2 are the local axes in global coordinates,
# so local = M . global and global = M^T . local.
ctypedef struct m33:
    v3 r0
    v3 r1
    v3 r2

ctypedef struct quat:
    double w
    double x
    double y
    double z

cdef inline v3 V(double x, double y, double z) noexcept nogil:
    cdef v3 r
    r.x = x; r.y = y; r.z = z
    return r

cdef inline v3 vld(const double* p) noexcept nogil:
    return V(p[0], p[1], p[2])

cdef inline void vst(double* p, v3 v) noexcept nogil:
    p[0] = v.x; p[1] = v.y; p[2] = v.z

cdef inline m33 mld(const double* p) noexcept nogil:
    cdef m33 m
    m.r0 = V(p[0], p[1], p[2])
    m.r1 = V(p[3], p[4], p[5])
    m.r2 = V(p[6], p[7], p[8])
    return m

cdef inline void mst(double* p, m33 m) noexcept nogil:
    p[0] = m.r0.x; p[1] = m.r0.y; p[2] = m.r0.z
    p[3] = m.r1.x; p[4] = m.r1.y; p[5] = m.r1.z
    p[6] = m.r2.x; p[7] = m.r2.y; p[8] = m.r2.z

cdef inline v3 image_shift(const double* H, int i0, int i1, int i2) noexcept nogil:
    """The shift H i of a periodic image i (integer cell vectors; H row-major 3x3, its
    columns the cell vectors, docs/cell.md). A fixed box has a diagonal H: the same
    bits as i_d L_d (the off-diagonal terms add signed zeros only)."""
    return V(i0 * H[0] + i1 * H[1] + i2 * H[2], i0 * H[3] + i1 * H[4] + i2 * H[5],
             i0 * H[6] + i1 * H[7] + i2 * H[8])


cdef inline v3 vadd(v3 a, v3 b) noexcept nogil:
    return V(a.x + b.x, a.y + b.y, a.z + b.z)

cdef inline bint cell_moving(const double* C) noexcept nogil:
    """The kernels' cell array C (6 x 3: H, then L H_prev, the velocities of the cell
    vectors) has a moving cell (a deforming one, docs/cell.md)."""
    cdef int i
    for i in range(9, 18):
        if C[i] != 0.0:
            return True
    return False


cdef inline v3 image_velocity(const double* C, v3 v, int i0, int i1, int i2) noexcept nogil:
    """v + L H_prev i: the velocity of particle 2 seen through the image difference i of a
    pair (seed 000's v~2: the relative velocity is that of the same pair inside the
    cell); a function of the image difference only, as the position shift, so every
    rank forms the same numbers."""
    return vadd(v, image_shift(C + 9, i0, i1, i2))


cdef inline v3 vsub(v3 a, v3 b) noexcept nogil:
    return V(a.x - b.x, a.y - b.y, a.z - b.z)

cdef inline v3 vscale(v3 a, double s) noexcept nogil:
    return V(a.x * s, a.y * s, a.z * s)

cdef inline v3 vneg(v3 a) noexcept nogil:
    return V(-a.x, -a.y, -a.z)

cdef inline double vdot(v3 a, v3 b) noexcept nogil:
    return a.x * b.x + a.y * b.y + a.z * b.z

cdef inline v3 vcross(v3 a, v3 b) noexcept nogil:
    return V(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x)

cdef inline double lowest_along(v3 d, const v3* pts, int n) noexcept nogil:
    """min over the n points of d . p: how far the point set reaches along -d."""
    cdef double lo = INFINITY
    cdef int i
    for i in range(n):
        if vdot(d, pts[i]) < lo:
            lo = vdot(d, pts[i])
    return lo

cdef inline double vnorm(v3 a) noexcept nogil:
    return sqrt(vdot(a, a))

cdef inline v3 vunit(v3 a) noexcept nogil:
    return vscale(a, 1.0 / vnorm(a))

cdef inline bint near_one(double e) noexcept nogil:
    """A squared length e so close to 1 (| e - 1 | < 1e-8) that newton_rsqrt(e) is
    1/sqrt(e) to a relative error below 1e-16 (round-off)."""
    return fabs(e - 1.0) < 1e-8

cdef inline double newton_rsqrt(double e) noexcept nogil:
    """One Newton step of 1/sqrt(e) about 1."""
    return 0.5 * (3.0 - e)

cdef inline v3 vunit_near(v3 a) noexcept nogil:
    """Normalize a vector whose length is close to 1 (a small rotation of a unit vector):
    newton_rsqrt when near_one, otherwise the exact formula. Both are computed and one is
    selected, not branched to, so that loops over contacts vectorize."""
    cdef double e = vdot(a, a)
    cdef double exact = 1.0 / sqrt(e)
    return vscale(a, newton_rsqrt(e) if near_one(e) else exact)

cdef inline v3 vunit_near_small(v3 a, bint* small) noexcept nogil:
    """vunit_near's small-step value alone (no square root, no division); small[0] is
    cleared when it does not apply (vunit_near's exact value is then the right one)."""
    cdef double e = vdot(a, a)
    small[0] = small[0] & near_one(e)
    return vscale(a, newton_rsqrt(e))

cdef inline v3 mdot(m33 m, v3 a) noexcept nogil:
    """Global -> local components."""
    return V(vdot(m.r0, a), vdot(m.r1, a), vdot(m.r2, a))

cdef inline v3 mtdot(m33 m, v3 a) noexcept nogil:
    """Local -> global: M^T a = a.x r0 + a.y r1 + a.z r2."""
    return V(m.r0.x * a.x + m.r1.x * a.y + m.r2.x * a.z,
             m.r0.y * a.x + m.r1.y * a.y + m.r2.y * a.z,
             m.r0.z * a.x + m.r1.z * a.y + m.r2.z * a.z)

cdef inline quat qnormalized(quat q) noexcept nogil:
    cdef double s = 1.0 / sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z)
    q.w *= s; q.x *= s; q.y *= s; q.z *= s
    return q

cdef inline quat qmul(quat a, quat b) noexcept nogil:
    cdef quat r
    r.w = a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z
    r.x = a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y
    r.y = a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x
    r.z = a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w
    return r

cdef inline bint in_series(double h2) noexcept nogil:
    """qaxisangle takes the series below this squared half-angle (integrate.pyx evaluates
    them for a block of particles at once, where the divisions vectorize)."""
    return h2 < 1e-4

cdef inline double half_cos_series(double h2) noexcept nogil:
    """cos h for h2 = h^2 in_series: its Taylor series to h^8."""
    return 1.0 - h2 * (0.5 - h2 * (1.0 / 24.0 - h2 * (1.0 / 720.0 - h2 / 40320.0)))

cdef inline double half_sinc_series(double h2) noexcept nogil:
    """sin(h) / (2 h) for h2 = h^2 in_series: its Taylor series to h^8."""
    return 0.5 * (1.0 - h2 * (1.0 / 6.0 - h2 * (1.0 / 120.0 - h2 / 5040.0)))

cdef inline quat qaxisangle(v3 rot) noexcept nogil:
    """Unit quaternion of the rotation vector rot (axis * angle), exact for any angle.
    For half-angles h < 0.01 (every DEM step in practice) cos h and sin(h)/h come from
    their Taylor series to h^8, exact to round-off, without sqrt or trigonometry."""
    cdef double h2 = 0.25 * vdot(rot, rot), ang, s
    cdef quat q
    if in_series(h2):
        q.w = half_cos_series(h2)
        s = half_sinc_series(h2)
    else:
        ang = sqrt(4.0 * h2)
        q.w = cos(0.5 * ang)
        s = sin(0.5 * ang) / ang
    q.x = rot.x * s; q.y = rot.y * s; q.z = rot.z * s
    return q


cdef inline quat qrenorm(quat q) noexcept nogil:
    """Renormalize a quaternion that is unit up to round-off: one Newton step of
    1/sqrt(|q|^2) about 1, so no sqrt or division."""
    cdef double f = 0.5 * (3.0 - (q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z))
    q.w *= f; q.x *= f; q.y *= f; q.z *= f
    return q

cdef inline quat m2q(m33 m) noexcept nogil:
    """Quaternion of the rotation whose matrix (local->global) is M^T (Shepperd's method).

    The rows of M are the local axes; the rotation taking global unit vectors
    to them has matrix R = M^T.
    """
    cdef double r00 = m.r0.x, r01 = m.r1.x, r02 = m.r2.x
    cdef double r10 = m.r0.y, r11 = m.r1.y, r12 = m.r2.y
    cdef double r20 = m.r0.z, r21 = m.r1.z, r22 = m.r2.z
    cdef double tr = r00 + r11 + r22, s, inv
    cdef quat q
    if tr > 0.0:
        s = 2.0 * sqrt(tr + 1.0)
        inv = 1.0 / s
        q.w = 0.25 * s; q.x = (r21 - r12) * inv; q.y = (r02 - r20) * inv; q.z = (r10 - r01) * inv
    elif r00 > r11 and r00 > r22:
        s = 2.0 * sqrt(1.0 + r00 - r11 - r22)
        inv = 1.0 / s
        q.w = (r21 - r12) * inv; q.x = 0.25 * s; q.y = (r01 + r10) * inv; q.z = (r02 + r20) * inv
    elif r11 > r22:
        s = 2.0 * sqrt(1.0 + r11 - r00 - r22)
        inv = 1.0 / s
        q.w = (r02 - r20) * inv; q.x = (r01 + r10) * inv; q.y = 0.25 * s; q.z = (r12 + r21) * inv
    else:
        s = 2.0 * sqrt(1.0 + r22 - r00 - r11)
        inv = 1.0 / s
        q.w = (r10 - r01) * inv; q.x = (r02 + r20) * inv; q.y = (r12 + r21) * inv; q.z = 0.25 * s
    return q

cdef inline m33 q2m(quat q) noexcept nogil:
    """Inverse of m2q: rows of the returned M are the rotated global axes."""
    cdef m33 m
    cdef double ww = q.w * q.w, xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z
    cdef double xy = q.x * q.y, xz = q.x * q.z, yz = q.y * q.z
    cdef double wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z
    # R = rotation matrix; M = R^T (row i of M = column i of R).
    m.r0 = V(ww + xx - yy - zz, 2.0 * (xy + wz), 2.0 * (xz - wy))
    m.r1 = V(2.0 * (xy - wz), ww - xx + yy - zz, 2.0 * (yz + wx))
    m.r2 = V(2.0 * (xz + wy), 2.0 * (yz - wx), ww - xx - yy + zz)
    return m

cdef inline quat qslerp_half(quat a, quat b) noexcept nogil:
    """Slerp(a, b; t=1/2) on the shorter arc. For t = 1/2 spherical interpolation is
    exactly the normalized sum (the bisector of the arc), so no trigonometry is needed."""
    cdef quat r
    if a.w * b.w + a.x * b.x + a.y * b.y + a.z * b.z < 0.0:
        b.w = -b.w; b.x = -b.x; b.y = -b.y; b.z = -b.z
    r.w = 0.5 * (a.w + b.w); r.x = 0.5 * (a.x + b.x); r.y = 0.5 * (a.y + b.y)
    r.z = 0.5 * (a.z + b.z)
    cdef double e = r.w * r.w + r.x * r.x + r.y * r.y + r.z * r.z
    if near_one(e):               # small step: Newton normalization
        e = newton_rsqrt(e)
        r.w *= e; r.x *= e; r.y *= e; r.z *= e
        return r
    return qnormalized(r)
