# cython: language_level=3
"""Contact batches of convex polyhedra (issue 17, docs/polyhedra.md): pairs with at least
one polyhedron (the other a polyhedron, a sphere or an ellipsoid) by GJK + EPA on the
Minkowski difference (gjk.pxd), and polyhedron-plane contacts (the vertices below it).

The law is seed 002's Minkowski-overlap ECC model: w = w(delta_M), F = w'(delta_M) n_M,
with w the potential of the pair's elastic normal law (Hooke: w = k delta^2 / 2, linear
force; Hertz: w = 2/5 k delta^(5/2), "Hertz-like"), fed to contact_update as u_n = -delta_M
with n = n_M (then L6Geom's tangential force, damping and friction as for spheres, seed
000). The contact point: x_c = x_o + n x M_n / F_n + lambda n (seed 002) with M_n the
moment of -dw/dtheta; rotating A by dtheta changes delta_M by dtheta . ((p_A - x_A) x n)
(envelope theorem: p_A is A's support point along n_M), so the force acts on the line
through the witness points p_A, p_B (p_A - p_B = delta_M n_M); c = (p_A + p_B) / 2.

As the ellipsoid kernels (ellipsoid_contacts.pyx, whose add_forces sums these rows): one
state row per candidate; an active row warm-starts GJK from its last normal (T.r0), an
inactive one starts from the line of centres, so results depend only on state that
checkpoints and migration carry; positions relative to body 1; branch (m, 6) holds this
step's b1 = c - x1, b2 = c - x2. Polyhedron vertices: the template tables (offsets, data)
of pdem.shape_templates, indexed by the particle's `template`.

Contact models (per material pair, `contact_model`; pdem/contact/polyhedron_kinds.py;
pairs of two polyhedra and polyhedron-plane contacts, other pairs always use the first):
MINKOWSKI (above); VOLUME, seed 002's contact-volume ECC model: w = k_v V^p / p with V
the volume of A n B (clip_volume.pxd; p = 1, the seed's linear w, by default), so with
k = w'(V) = k_v V^(p-1): F_B = -k S_B, M_B = -k (G_B - x_B x S_B): the normal force
k |S_B| along n = -S_B / |S_B| acts on the line x_c = S x G / |S|^2 + lambda n (lambda:
the point of the line nearest the centroid of A n B) with the couple -k (G . S) S /
|S|^2 about n; the force enters contact_update as the equivalent overlap d_eq at which
the pair's normal law gives k |S| (Hooke: k |S| / k_n), so damping,
the tangential spring, friction, rolling and twisting act on L6Geom's u and phi as for
every shape (seed 000); COMMON_PLANE (Cundall 1988, the comparison the seed names): the
plane maximising the gap between A and B, for overlapping convex bodies the plane normal
to EPA's n_M through the middle of the witness points (max over n of -(h_A(n) +
h_B(-n)) = -delta_M), the overlap delta_M (the deepest vertex of each body beyond the
plane: delta_M / 2 each) and the force at the centroid of the vertices of both bodies
beyond the plane, projected onto it: not the gradient of a potential.

Equivalent sphere quantities: m* = m1 m2 / (m1 + m2) (a plane: m2); R* = r1 r2 / (r1 +
r2) of the bounding radii (sphere: r; a plane: the particle's), a choice for the
radius-dependent laws (seed 002 leaves w free). Overlap ratio for max_overlap: delta_M /
the smaller bounding radius.
"""
cimport cython
from cython.parallel cimport prange
from libc.math cimport INFINITY, fabs, sqrt, cbrt, pow
from libc.stdlib cimport malloc, free
from vecmath cimport v3, V, vld, vst, vadd, vsub, vscale, vdot, vunit, vcross, vnorm, mdot, \
    mtdot, q2m, quat, image_shift, image_velocity, cell_moving, m33
from worst_overlap cimport keep_worst, pick_worst, solve_stats, worst_init
from contact_row cimport Load, contact_update, S_NCOLS, S_T
from laws cimport P_NCOLS, P_NORMAL, P_KN0, P_KN1, P_ESTAR
from contact_row cimport S_MOMENT
from clip_volume cimport CVSums, cv_zero, cv_planes, cv_surface
from gjk cimport Convex, MinkResult, cv_point, cv_poly, cv_ellipsoid, mk_query, MK_OVERLAP, \
    MK_FAILED, MK_BAD_INPUT, MK_SEPARATED
import numpy as np

DEF SHAPE_ELLIPSOID = 1
DEF SHAPE_POLYHEDRON = 4
DEF SHAPE_POLYGON = 5
DEF MODEL_MINKOWSKI = 0
DEF MODEL_VOLUME = 1
DEF MODEL_COMMON_PLANE = 2
DEF CLIP_OVERFLOW = -1        # iters of a volume row whose clipping overflowed (status failed)


cdef inline Convex _body(int p, v3 o, const signed char[::1] shape, const int[::1] template,
                         const double[:, ::1] orient, const double[:, ::1] semi_axes,
                         const double[::1] radius, const long[::1] voff,
                         const double[:, ::1] vdata) noexcept nogil:
    cdef int t
    if shape[p] >= SHAPE_POLYHEDRON:                # polyhedra, 2D polygons (prisms)
        t = template[p]
        return cv_poly(o, &orient[p, 0], &vdata[voff[t], 0], <int>(voff[t + 1] - voff[t]),
                       radius[p])
    if shape[p] == SHAPE_ELLIPSOID:
        return cv_ellipsoid(o, &orient[p, 0], &semi_axes[p, 0])
    return cv_point(o, radius[p])


cdef inline double _equivalent_overlap(const double* P, double reff, double f) noexcept nogil:
    """The overlap at which the pair's elastic normal law gives the force f (Hooke:
    f / k_n; Hertz: (f / (4/3 E* sqrt(R*)))^(2/3))."""
    cdef double a
    if P[P_NORMAL] == 0.0:
        return f / (P[P_KN0] + P[P_KN1] * reff)
    a = f / ((4.0 / 3.0) * P[P_ESTAR] * sqrt(reff))
    return cbrt(a * a)


cdef inline double _volume_k(const double* law, double vol) noexcept nogil:
    """w'(V) of w = k_v V^p / p (law: k_v, p)."""
    if law[1] == 1.0:
        return law[0]
    return law[0] * pow(vol, law[1] - 1.0)


cdef inline v3 _volume_point(CVSums* part, v3 Q, double vol, v3 n) noexcept nogil:
    """The seed's x_c = n x G_n / S_n + lambda n of the surface part (S, G): the point of
    the force line S x G / |S|^2 + lambda n nearest the centroid Q / vol of A n B."""
    cdef v3 x0 = vscale(vcross(part.S, part.G), 1.0 / vdot(part.S, part.S))
    return vadd(x0, vscale(n, vdot(vsub(vscale(Q, 1.0 / vol), x0), n)))


cdef inline void _add_couple(double* row, CVSums* part, double kv) noexcept nogil:
    """The couple of the volume law about n on body 2 (whose surface part is `part`),
    -k_v (G . S) S / |S|^2, added to the row's law moment (summed by add_forces)."""
    cdef v3 m = vadd(vld(row + S_MOMENT), vscale(part.S, -kv * vdot(part.G, part.S)
                                                 / vdot(part.S, part.S)))
    vst(row + S_MOMENT, m)


cdef inline double* _world_vertices(const double* v, int nv, m33 M, v3 o,
                                    double* out) noexcept nogil:
    """o + M^T v for nv body-frame vertices v, into out; returns out."""
    cdef int i
    cdef v3 w
    for i in range(nv):
        w = vadd(o, mtdot(M, V(v[3 * i], v[3 * i + 1], v[3 * i + 2])))
        out[3 * i] = w.x
        out[3 * i + 1] = w.y
        out[3 * i + 2] = w.z
    return out


cdef inline m33 _rot(const double[:, ::1] orient, int p) noexcept nogil:
    cdef quat q
    q.w = orient[p, 0]; q.x = orient[p, 1]; q.y = orient[p, 2]; q.z = orient[p, 3]
    return q2m(q)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _volume(int a, int b, v3 x2, const double[::1] radius,
                 const double[:, ::1] orient, const int[::1] template,
                 const long[::1] voff, const double[:, ::1] vdata, const long[::1] toff,
                 const double[:, ::1] tdata, CVSums* sa, CVSums* sb) noexcept nogil:
    """The contact-volume sums of polyhedra a (at the origin) and b (at x2): sa, the part
    of a's surface inside b; sb, b's inside a. 0, or CLIP_OVERFLOW."""
    cdef int ta = template[a], tb = template[b], ok = CLIP_OVERFLOW
    cdef int nva = <int>(voff[ta + 1] - voff[ta]), nvb = <int>(voff[tb + 1] - voff[tb])
    cdef int nta = <int>(toff[ta + 1] - toff[ta]), ntb = <int>(toff[tb + 1] - toff[tb])
    cdef double* wa = <double*>malloc((3 * (nva + nvb) + 4 * (nta + ntb)) * sizeof(double))
    cdef double* wb
    cdef double* pa
    cdef double* pb
    cv_zero(sa)
    cv_zero(sb)
    if wa == NULL:
        return CLIP_OVERFLOW
    wb = wa + 3 * nva
    pa = wb + 3 * nvb
    pb = pa + 4 * nta
    _world_vertices(&vdata[voff[ta], 0], nva, _rot(orient, a), V(0.0, 0.0, 0.0), wa)
    _world_vertices(&vdata[voff[tb], 0], nvb, _rot(orient, b), x2, wb)
    cv_planes(wa, &tdata[toff[ta], 0], nta, pa)
    cv_planes(wb, &tdata[toff[tb], 0], ntb, pb)
    ok = cv_surface(wa, nva, &tdata[toff[ta], 0], nta, pb, ntb, x2, radius[b], sa)
    if ok == 0:
        ok = cv_surface(wb, nvb, &tdata[toff[tb], 0], ntb, pa, nta, V(0.0, 0.0, 0.0),
                        radius[a], sb)
    free(wa)
    return ok


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int _beyond(const double* v, int nv, m33 M, v3 o, v3 n, v3 c0, double sgn,
                 v3* sum) noexcept nogil:
    """Common plane: add the vertices x = o + M^T v with sgn (x - c0) . n > 0 to sum;
    returns their count."""
    cdef int i, cnt = 0
    cdef v3 x
    for i in range(nv):
        x = vadd(o, mtdot(M, V(v[3 * i], v[3 * i + 1], v[3 * i + 2])))
        if sgn * vdot(vsub(x, c0), n) > 0.0:
            sum[0] = vadd(sum[0], x)
            cnt += 1
    return cnt


@cython.boundscheck(False)
@cython.wraparound(False)
cdef double _pair_one(Py_ssize_t k, int a, int b, const double[:, ::1] pos,
                      const int[:, ::1] image, const double* cell,
                      const double[:, ::1] vel, const double[:, ::1] angvel,
                      const double[:, ::1] orient, const signed char[::1] shape,
                      const int[::1] template, const double[:, ::1] semi_axes,
                      const double[::1] radius, const double[::1] mass,
                      const int[::1] material, const long[::1] voff,
                      const double[:, ::1] vdata, const long[::1] toff,
                      const double[:, ::1] tdata, const double[:, ::1] pair_table,
                      const signed char[::1] models, const double[:, ::1] kvol, int nmat,
                      double dt, int flags, double tol, int max_iter, bint warm,
                      signed char[::1] active, double[:, ::1] state, double[:, ::1] branch,
                      int[::1] iters, signed char[::1] status) noexcept nogil:
    """Pair k; returns the overlap ratio (-1 when not in contact)."""
    cdef Convex A, B
    cdef MinkResult res
    cdef CVSums sa, sb
    cdef v3 x2, n0, c, v2, q
    cdef double m1, m2, r1, r2, un, area, vol, ratio, kv = 0.0
    cdef int mp = material[a] * nmat + material[b], model = MODEL_MINKOWSKI, cnt
    cdef Load L
    cdef double* row = &state[k, 0]
    x2 = vsub(vld(&pos[b, 0]), vld(&pos[a, 0]))
    x2 = vadd(x2, image_shift(cell, image[b, 0] - image[a, 0], image[b, 1] - image[a, 1],
                              image[b, 2] - image[a, 2]))
    r1 = radius[a]
    r2 = radius[b]
    iters[k] = 0
    status[k] = MK_SEPARATED
    if vdot(x2, x2) >= (r1 + r2) * (r1 + r2):     # bounding spheres apart
        active[k] = 0
        return -1.0
    if shape[a] == SHAPE_POLYHEDRON and shape[b] == SHAPE_POLYHEDRON:
        model = models[mp]
    if model == MODEL_VOLUME:
        if _volume(a, b, x2, radius, orient, template, voff, vdata, toff, tdata, &sa,
                   &sb) != 0:
            status[k] = MK_FAILED
            iters[k] = CLIP_OVERFLOW
            return -1.0
        vol = sa.vol + sb.vol
        area = vnorm(sb.S)
        if not (vol > 0.0 and area > 0.0):
            active[k] = 0
            return -1.0
        status[k] = MK_OVERLAP
        res.n = vscale(sb.S, -1.0 / area)               # from A to B
        c = _volume_point(&sb, vadd(sa.Q, sb.Q), vol, res.n)
        kv = _volume_k(&kvol[mp, 0], vol)
        un = -_equivalent_overlap(&pair_table[mp, 0], r1 * r2 / (r1 + r2), kv * area)
        ratio = vol / area / (r1 if r1 < r2 else r2)   # the mean depth V / |S|
    else:
        A = _body(a, V(0.0, 0.0, 0.0), shape, template, orient, semi_axes, radius, voff,
                  vdata)
        B = _body(b, x2, shape, template, orient, semi_axes, radius, voff, vdata)
        n0 = vld(row + S_T) if active[k] and warm else V(0.0, 0.0, 0.0)   # warm / cold
        mk_query(&A, &B, n0, 0.0, tol, max_iter, &res)
        iters[k] = res.iters + res.epa_iters
        status[k] = res.status
        if res.status == MK_FAILED or res.status == MK_BAD_INPUT:
            return -1.0
        if res.status != MK_OVERLAP:
            active[k] = 0
            return -1.0
        c = vscale(vadd(res.pa, res.pb), 0.5)
        if model == MODEL_COMMON_PLANE:
            # the vertices of both beyond the common plane (through c, normal n_M):
            # the force at their centroid, projected onto the plane
            q = V(0.0, 0.0, 0.0)
            cnt = _beyond(A.verts, A.nv, A.M, A.o, res.n, c, 1.0, &q)
            cnt = cnt + _beyond(B.verts, B.nv, B.M, B.o, res.n, c, -1.0, &q)
            if cnt > 0:
                q = vsub(vscale(q, 1.0 / cnt), c)
                c = vadd(c, vsub(q, vscale(res.n, vdot(q, res.n))))
        if shape[a] == SHAPE_POLYGON or shape[b] == SHAPE_POLYGON:
            # 2D: the prisms' witnesses lie anywhere along z, and a side face of D may
            # tilt its normal by round-off: back into the plane, so torques stay along z
            c.z = 0.0
            res.n = vunit(V(res.n.x, res.n.y, 0.0))
        un = res.gap
        ratio = -res.gap / (r1 if r1 < r2 else r2)
    m1 = mass[a]
    m2 = mass[b]
    v2 = vld(&vel[b, 0])
    if cell_moving(cell):          # seed 000's v~2 (docs/cell.md)
        v2 = image_velocity(cell, v2, image[b, 0] - image[a, 0], image[b, 1] - image[a, 1],
                            image[b, 2] - image[a, 2])
    L = contact_update(c, res.n, un, x2, vld(&vel[a, 0]), v2,
                       vld(&angvel[a, 0]), vld(&angvel[b, 0]), r1, r2, m1 * m2 / (m1 + m2),
                       r1 * r2 / (r1 + r2), &pair_table[mp, 0], dt, flags, &active[k], row,
                       NULL)
    if model == MODEL_VOLUME:
        _add_couple(row, &sb, kv)
    vst(&branch[k, 0], c)
    vst(&branch[k, 3], vsub(c, x2))
    return ratio


@cython.boundscheck(False)
@cython.wraparound(False)
def polyhedron_pairs(const int[::1] i1, const int[::1] i2, const double[:, ::1] pos,
                     const int[:, ::1] image, const double[:, ::1] cell,
                     const double[:, ::1] vel, const double[:, ::1] angvel,
                     const double[:, ::1] orient, const signed char[::1] shape,
                     const int[::1] template, const double[:, ::1] semi_axes,
                     const double[::1] radius, const double[::1] mass,
                     const int[::1] material, const long[::1] voff,
                     const double[:, ::1] vdata, const long[::1] toff,
                     const double[:, ::1] tdata, const double[:, ::1] pair_table,
                     const signed char[::1] models, const double[:, ::1] kvol,
                     int n_materials, double dt, int flags, double tol, int max_iter,
                     signed char[::1] active, double[:, ::1] state, double[:, ::1] branch,
                     int[::1] iters, signed char[::1] status, int n_threads, bint warm=True):
    """Update every candidate pair (at least one polyhedron). models, kvol: the contact
    model (MODEL_*) and the volume law (k_v, p) of each material pair (row a * n + b). Returns (worst
    overlap ratio, its pair or -1, first pair whose GJK/EPA or clipping failed or -1,
    contacts, their total and largest GJK + EPA iteration counts)."""
    cdef Py_ssize_t m = i1.shape[0], k
    cdef int nt = max(1, n_threads)
    cdef double ratio
    cdef double[:, ::1] worst = worst_init(nt)
    if m == 0:
        return 0.0, -1, -1, 0, 0, 0
    if state.shape[1] != S_NCOLS or pair_table.shape[1] != P_NCOLS or branch.shape[0] < m:
        raise ValueError("polyhedron pair arrays: state (%d, %d), table width %d, branch %d"
                         % (state.shape[0], state.shape[1], pair_table.shape[1],
                            branch.shape[0]))
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        ratio = _pair_one(k, i1[k], i2[k], pos, image, &cell[0, 0], vel, angvel, orient,
                          shape, template, semi_axes, radius, mass, material, voff, vdata,
                          toff, tdata, pair_table, models, kvol, n_materials, dt, flags, tol,
                          max_iter, warm, active,
                          state, branch, iters, status)
        keep_worst(worst, ratio, k)
    return pick_worst(worst) + solve_stats(status, iters, m, MK_FAILED, MK_BAD_INPUT, MK_OVERLAP)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef double _plane_one(Py_ssize_t k, int p, int w, const double[:, ::1] pos,
                       const double[:, ::1] vel, const double[:, ::1] angvel,
                       const double[:, ::1] orient, const signed char[::1] shape,
                       const int[::1] template,
                       const double[::1] radius, const double[::1] mass,
                       const int[::1] material, const long[::1] voff,
                       const double[:, ::1] vdata, const long[::1] toff,
                       const double[:, ::1] tdata, const double[:, ::1] plane_point,
                       const double[:, ::1] plane_normal, const double[:, ::1] plane_vel,
                       const int[::1] plane_material, const double[:, ::1] pair_table,
                       const signed char[::1] models, const double[:, ::1] kvol,
                       int nmat, double dt, int flags, signed char[::1] active,
                       double[:, ::1] state, double[:, ::1] branch) noexcept nogil:
    """Plane w = body 1 (the foot of the perpendicular from the centre), polyhedron p =
    body 2, n = m. MINKOWSKI: every vertex below the plane is a Minkowski overlap of its
    own (a half-space and a point: delta_v = its depth), w = sum_v w(delta_v): for Hooke
    the forces k delta_v at the vertices x_v add up to F = k sum delta_v at their
    delta-weighted centroid (a rigid motion moves points affinely), so one row carries
    u_n = -sum delta_v at c = sum delta_v x_v / sum delta_v, lifted to half the weighted
    mean depth. One vertex below: exactly the Minkowski overlap of the polytope (its
    deepest vertex). A face on the plane thus pushes at its centre and the body can
    rest on it (with the deepest vertex alone, the force would jump from corner to corner
    every step: a face-down cube would rattle). VOLUME: the plane is one clipping
    half-space, m . x <= 0 about the foot point: S, G of the polyhedron's surface below
    it, F = -w'(V) S = w'(V) A m (A the area of the cut), on the line through the cut's
    centroid (G . S = 0: no couple). COMMON_PLANE: the plane itself, the deepest vertex's
    depth, the force at the centroid of the vertices below it."""
    cdef m33 M
    cdef v3 mm, mb, sb, x2, c
    cdef CVSums sp
    cdef Load L
    cdef int t = template[p], i, nbelow = 0, ok
    cdef int mp = plane_material[w] * nmat + material[p]
    cdef int model = models[mp] if shape[p] == SHAPE_POLYHEDRON else MODEL_MINKOWSKI
    cdef const double* v = &vdata[voff[t], 0]
    cdef int nv = <int>(voff[t + 1] - voff[t])
    cdef int nt = <int>(toff[t + 1] - toff[t])
    cdef double h, d, dv, dsum = 0.0, d2sum = 0.0, dmax = 0.0, un, area
    cdef double plane[4]
    cdef double* wv
    M = _rot(orient, p)
    mm = vld(&plane_normal[w, 0])
    mb = mdot(M, mm)                         # the normal in the body frame
    d = vdot(vsub(vld(&pos[p, 0]), vld(&plane_point[w, 0])), mm)
    x2 = vscale(mm, d)                       # the centre relative to the foot point
    sb = V(0.0, 0.0, 0.0)
    for i in range(nv):
        h = v[3 * i] * mb.x + v[3 * i + 1] * mb.y + v[3 * i + 2] * mb.z
        dv = -(d + h)                        # the vertex's depth below the plane
        if dv > 0.0:
            dsum += dv
            d2sum += dv * dv
            nbelow += 1
            if model == MODEL_COMMON_PLANE:
                sb = vadd(sb, V(v[3 * i], v[3 * i + 1], v[3 * i + 2]))
            else:
                sb = vadd(sb, vscale(V(v[3 * i], v[3 * i + 1], v[3 * i + 2]), dv))
            if dv > dmax:
                dmax = dv
    if not (dsum > 0.0):
        active[k] = 0
        return -1.0
    if model == MODEL_VOLUME:
        wv = <double*>malloc(3 * nv * sizeof(double))
        if wv == NULL:
            return -1.0
        plane[0] = mm.x; plane[1] = mm.y; plane[2] = mm.z; plane[3] = 0.0
        cv_zero(&sp)
        ok = cv_surface(_world_vertices(v, nv, M, x2, wv), nv, &tdata[toff[t], 0], nt,
                        plane, 1, V(0.0, 0.0, 0.0), INFINITY, &sp)
        free(wv)
        area = vnorm(sp.S)
        if ok != 0 or not (sp.vol > 0.0 and area > 0.0):
            active[k] = 0
            return -1.0
        c = _volume_point(&sp, sp.Q, sp.vol, mm)
        un = -_equivalent_overlap(&pair_table[mp, 0], radius[p],
                                  _volume_k(&kvol[mp, 0], sp.vol) * area)
        dmax = sp.vol / area                 # the mean depth, for max_overlap
    elif model == MODEL_COMMON_PLANE:
        sb = vadd(x2, mtdot(M, vscale(sb, 1.0 / nbelow)))
        c = vsub(sb, vscale(mm, vdot(sb, mm) + 0.5 * dmax))
        un = -dmax
    else:
        sb = mtdot(M, vscale(sb, 1.0 / dsum))    # the weighted centroid, world offset
        c = vadd(x2, vsub(sb, vscale(mm, vdot(sb, mm) + d + 0.5 * d2sum / dsum)))
        un = -dsum
        if shape[p] == SHAPE_POLYGON:            # a 2D polygon's prism: each corner twice,
            un *= 0.5                            # and c in the plane (the +-z sums round)
            c.z = 0.0
    L = contact_update(c, mm, un, x2, vld(&plane_vel[w, 0]), vld(&vel[p, 0]),
                       V(0.0, 0.0, 0.0), vld(&angvel[p, 0]), 0.0, radius[p], mass[p],
                       radius[p], &pair_table[mp, 0], dt, flags, &active[k], &state[k, 0],
                       NULL)
    vst(&branch[k, 0], c)
    vst(&branch[k, 3], vsub(c, x2))
    return dmax / radius[p]


@cython.boundscheck(False)
@cython.wraparound(False)
def polyhedron_plane(const int[::1] particle, const int[::1] plane, const double[:, ::1] pos,
                     const double[:, ::1] vel, const double[:, ::1] angvel,
                     const double[:, ::1] orient, const signed char[::1] shape,
                     const int[::1] template,
                     const double[::1] radius, const double[::1] mass,
                     const int[::1] material, const long[::1] voff,
                     const double[:, ::1] vdata, const long[::1] toff,
                     const double[:, ::1] tdata, const double[:, ::1] plane_point,
                     const double[:, ::1] plane_normal, const double[:, ::1] plane_vel,
                     const int[::1] plane_material, const double[:, ::1] pair_table,
                     const signed char[::1] models, const double[:, ::1] kvol,
                     int n_materials, double dt, int flags, signed char[::1] active,
                     double[:, ::1] state, double[:, ::1] branch, int n_threads):
    """Update every polyhedron-plane candidate; returns (worst overlap ratio, its row)."""
    cdef Py_ssize_t m = particle.shape[0], k
    cdef int nt = max(1, n_threads)
    cdef double ratio
    cdef double[:, ::1] worst = worst_init(nt)
    if m == 0:
        return 0.0, -1
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        ratio = _plane_one(k, particle[k], plane[k], pos, vel, angvel, orient, shape, template,
                           radius, mass, material, voff, vdata, toff, tdata, plane_point,
                           plane_normal, plane_vel, plane_material, pair_table, models, kvol,
                           n_materials, dt, flags, active, state, branch)
        keep_worst(worst, ratio, k)
    return pick_worst(worst)
