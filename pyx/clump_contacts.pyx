# cython: language_level=3
"""Contact batches of clumps (issue 21 part 8, docs/clumps.md): a candidate pair of the
Verlet list with a clump (the other a clump or a sphere) expands into rows of member
sphere pairs, a clump-plane candidate into rows of member-plane pairs. Each row is a
sphere-sphere (sphere-plane) contact between two member spheres, through L6Geom and the
pair's law (contact_row.contact_update), with its own history; forces and torques go to
the bodies through the branch vectors from each centre of mass to the contact point
(ellipsoid_contacts.add_forces sums them).

Members: the rows (x, y, z, r) of the template's "spheres" table (principal frame)
`spheres[offsets[t] + m]`; a sphere particle is one member (0, 0, 0, radius). A row's
sub-key packs its member indices, m1 << 16 | m2 (pairs) or m (planes).

Rows are made at a rebuild for every member pair that can touch before the next one
whatever the bodies turn: |x2 - x1| - (|b1| + r1) - (|b2| + r2) < skin, with |b| + r a
member's reach about its body's centre (the rebuild trigger watches the centres only).
Positions are relative to body 1 (the same numbers on every rank); the row's contact
point c is the middle of the members' overlap on their line of centres; branch (m, 6):
c - x1 and c - x2. m* = m1 m2 / (m1 + m2) of the bodies, R* = r1 r2 / (r1 + r2) of the
members. No-ratch is refused by the caller.
"""
cimport cython
from cython.parallel cimport prange
from libc.math cimport sqrt
from vecmath cimport v3, quat, V, vld, vst, vadd, vsub, vscale, vdot, vnorm, mtdot, q2m, \
    image_shift, image_velocity, cell_moving
from worst_overlap cimport keep_worst, pick_worst, worst_init
from contact_row cimport Load, contact_update, S_NCOLS
from laws cimport P_NCOLS
import numpy as np

cdef enum:
    SHAPE_CLUMP = 3


cdef inline int n_members(int p, const signed char[::1] shape, const int[::1] template,
                          const long[::1] offsets) noexcept nogil:
    if shape[p] != SHAPE_CLUMP:
        return 1
    return <int>(offsets[template[p] + 1] - offsets[template[p]])


cdef inline v3 member(int p, int m, const signed char[::1] shape, const int[::1] template,
                      const long[::1] offsets, const double[:, ::1] spheres,
                      const double[::1] radius, double* r) noexcept nogil:
    """Member m of particle p: its body-frame centre, its radius in r."""
    cdef long row
    if shape[p] != SHAPE_CLUMP:
        r[0] = radius[p]
        return V(0.0, 0.0, 0.0)
    row = offsets[template[p]] + m
    r[0] = spheres[row, 3]
    return vld(&spheres[row, 0])


cdef inline v3 rel(int a, int b, const double[:, ::1] pos, const int[:, ::1] image,
                   const double* cell) noexcept nogil:
    """x_b - x_a through the pair's periodic image difference (cell: H, then L H)."""
    return vadd(vsub(vld(&pos[b, 0]), vld(&pos[a, 0])),
                image_shift(cell, image[b, 0] - image[a, 0], image[b, 1] - image[a, 1],
                            image[b, 2] - image[a, 2]))


cdef inline quat qload(const double* q) noexcept nogil:
    cdef quat out
    out.w = q[0]; out.x = q[1]; out.y = q[2]; out.z = q[3]
    return out


@cython.boundscheck(False)
@cython.wraparound(False)
def member_pairs(const int[::1] i1, const int[::1] i2, const long[::1] key,
                 const double[:, ::1] pos, const int[:, ::1] image, const double[:, ::1] cell,
                 const signed char[::1] shape, const int[::1] template,
                 const double[::1] radius, const long[::1] offsets,
                 const double[:, ::1] spheres, double skin):
    """The member-pair rows (i1, i2, key, sub) of the candidate pairs, in their order
    (each candidate's members by sub)."""
    cdef Py_ssize_t m = i1.shape[0], k, n = 0
    cdef int a, b, ma, mb, na, nb
    cdef double d, ra, rb, reach_a
    cdef v3 ca, cb
    cdef Py_ssize_t total = 0
    cdef int pass_
    o1 = np.zeros(0, np.int32)
    cdef int[::1] p1 = o1, p2 = o1, sub = o1
    cdef long[::1] kk = np.zeros(0, np.int64)
    for pass_ in range(2):
        if pass_ == 1:
            o1, o2, osub = (np.empty(total, np.int32) for _ in range(3))
            okey = np.empty(total, np.int64)
            p1, p2, sub, kk = o1, o2, osub, okey
        n = 0
        with nogil:
            for k in range(m):
                a = i1[k]
                b = i2[k]
                d = vnorm(rel(a, b, pos, image, &cell[0, 0]))
                na = n_members(a, shape, template, offsets)
                nb = n_members(b, shape, template, offsets)
                for ma in range(na):
                    ca = member(a, ma, shape, template, offsets, spheres, radius, &ra)
                    reach_a = vnorm(ca) + ra
                    for mb in range(nb):
                        cb = member(b, mb, shape, template, offsets, spheres, radius, &rb)
                        if d - reach_a - vnorm(cb) - rb < skin:
                            if pass_ == 1:
                                p1[n] = a
                                p2[n] = b
                                kk[n] = key[k]
                                sub[n] = (ma << 16) | mb
                            n += 1
        total = n
    return o1, o2, okey, osub


@cython.boundscheck(False)
@cython.wraparound(False)
def member_planes(const int[::1] particle, const int[::1] plane, const double[:, ::1] pos,
                  const signed char[::1] shape, const int[::1] template,
                  const double[::1] radius, const long[::1] offsets,
                  const double[:, ::1] spheres, const double[:, ::1] plane_point,
                  const double[:, ::1] plane_normal, double skin):
    """The member-plane rows (particle, plane, member) of clump-plane candidates."""
    cdef Py_ssize_t m = particle.shape[0], k, n = 0, total = 0
    cdef int p, w, j, nm, pass_
    cdef double d, r
    cdef v3 c
    o1 = np.zeros(0, np.int32)
    cdef int[::1] pp = o1, ww = o1, sub = o1
    for pass_ in range(2):
        if pass_ == 1:
            o1, o2, osub = (np.empty(total, np.int32) for _ in range(3))
            pp, ww, sub = o1, o2, osub
        n = 0
        with nogil:
            for k in range(m):
                p = particle[k]
                w = plane[k]
                d = vdot(vsub(vld(&pos[p, 0]), vld(&plane_point[w, 0])),
                         vld(&plane_normal[w, 0]))
                nm = n_members(p, shape, template, offsets)
                for j in range(nm):
                    c = member(p, j, shape, template, offsets, spheres, radius, &r)
                    if d - vnorm(c) - r < skin:
                        if pass_ == 1:
                            pp[n] = p
                            ww[n] = w
                            sub[n] = j
                        n += 1
        total = n
    return o1, o2, osub


@cython.boundscheck(False)
@cython.wraparound(False)
cdef double _pair_one(Py_ssize_t k, int a, int b, int sub, const double[:, ::1] pos,
                      const int[:, ::1] image, const double* cell,
                      const double[:, ::1] vel, const double[:, ::1] angvel,
                      const double[:, ::1] orient, const signed char[::1] shape,
                      const int[::1] template, const double[::1] radius,
                      const double[::1] mass, const int[::1] material,
                      const long[::1] offsets, const double[:, ::1] spheres,
                      const double[:, ::1] pair_table, int nmat, double dt, int flags,
                      signed char[::1] active, double[:, ::1] state,
                      double[:, ::1] branch) noexcept nogil:
    """Row k: member sub >> 16 of a and sub & 0xffff of b; returns the overlap ratio
    (-1 when not in contact)."""
    cdef double r1, r2, dist, un, m1, m2
    cdef v3 x2, c1, c2, d, nrm, c, v2
    cdef Load L
    x2 = rel(a, b, pos, image, cell)
    c1 = mtdot(q2m(qload(&orient[a, 0])),
               member(a, sub >> 16, shape, template, offsets, spheres, radius, &r1))
    c2 = vadd(x2, mtdot(q2m(qload(&orient[b, 0])),
                        member(b, sub & 0xffff, shape, template, offsets, spheres, radius,
                               &r2)))
    d = vsub(c2, c1)
    dist = vdot(d, d)
    if dist >= (r1 + r2) * (r1 + r2):
        active[k] = 0
        return -1.0
    dist = sqrt(dist)
    nrm = vscale(d, 1.0 / dist)
    un = dist - r1 - r2
    c = vadd(c1, vscale(nrm, r1 + 0.5 * un))
    m1 = mass[a]
    m2 = mass[b]
    v2 = vld(&vel[b, 0])
    if cell_moving(cell):          # seed 000's v~2 (docs/cell.md)
        v2 = image_velocity(cell, v2, image[b, 0] - image[a, 0], image[b, 1] - image[a, 1],
                            image[b, 2] - image[a, 2])
    L = contact_update(c, nrm, un, x2, vld(&vel[a, 0]), v2, vld(&angvel[a, 0]),
                       vld(&angvel[b, 0]), r1, r2, m1 * m2 / (m1 + m2), r1 * r2 / (r1 + r2),
                       &pair_table[material[a] * nmat + material[b], 0], dt, flags,
                       &active[k], &state[k, 0], NULL)
    vst(&branch[k, 0], c)
    vst(&branch[k, 3], vsub(c, x2))
    return -un / (r1 if r1 < r2 else r2)


@cython.boundscheck(False)
@cython.wraparound(False)
def clump_pairs(const int[::1] i1, const int[::1] i2, const int[::1] sub,
                const double[:, ::1] pos, const int[:, ::1] image, const double[:, ::1] cell,
                const double[:, ::1] vel, const double[:, ::1] angvel,
                const double[:, ::1] orient, const signed char[::1] shape,
                const int[::1] template, const double[::1] radius, const double[::1] mass,
                const int[::1] material, const long[::1] offsets,
                const double[:, ::1] spheres, const double[:, ::1] pair_table,
                int n_materials, double dt, int flags, signed char[::1] active,
                double[:, ::1] state, double[:, ::1] branch, int n_threads):
    """Update every member-pair row; returns (worst overlap ratio, its row or -1)."""
    cdef Py_ssize_t m = i1.shape[0], k
    cdef int nt = max(1, n_threads)
    cdef double ratio
    cdef double[:, ::1] worst = worst_init(nt)
    if m == 0:
        return 0.0, -1
    if state.shape[1] != S_NCOLS or pair_table.shape[1] != P_NCOLS or branch.shape[0] < m:
        raise ValueError("clump pair arrays: state (%d, %d), table width %d, branch %d"
                         % (state.shape[0], state.shape[1], pair_table.shape[1],
                            branch.shape[0]))
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        ratio = _pair_one(k, i1[k], i2[k], sub[k], pos, image, &cell[0, 0], vel, angvel,
                          orient, shape, template, radius, mass, material, offsets, spheres,
                          pair_table, n_materials, dt, flags, active, state, branch)
        keep_worst(worst, ratio, k)
    return pick_worst(worst)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef double _plane_one(Py_ssize_t k, int p, int w, int j, const double[:, ::1] pos,
                       const double[:, ::1] vel, const double[:, ::1] angvel,
                       const double[:, ::1] orient, const signed char[::1] shape,
                       const int[::1] template, const double[::1] radius,
                       const double[::1] mass, const int[::1] material,
                       const long[::1] offsets, const double[:, ::1] spheres,
                       const double[:, ::1] plane_point, const double[:, ::1] plane_normal,
                       const double[:, ::1] plane_vel, const int[::1] plane_material,
                       const double[:, ::1] pair_table, int nmat, double dt, int flags,
                       signed char[::1] active, double[:, ::1] state,
                       double[:, ::1] branch) noexcept nogil:
    """Plane w = body 1 at the foot of the perpendicular from the clump's centre (as the
    ellipsoid-plane kernel), member j of clump p = body 2: n = the plane normal, gap =
    (c_j - foot) . n - r_j, c = c_j - (r_j + gap / 2) n. Returns the overlap ratio."""
    cdef double r, d, g
    cdef v3 mm, cm, x2, c
    cdef Load L
    mm = vld(&plane_normal[w, 0])
    d = vdot(vsub(vld(&pos[p, 0]), vld(&plane_point[w, 0])), mm)
    x2 = vscale(mm, d)                              # the centre relative to the foot
    cm = vadd(x2, mtdot(q2m(qload(&orient[p, 0])),
                        member(p, j, shape, template, offsets, spheres, radius, &r)))
    g = vdot(cm, mm) - r
    if not (g < 0.0):
        active[k] = 0
        return -1.0
    c = vsub(cm, vscale(mm, r + 0.5 * g))
    L = contact_update(c, mm, g, x2, vld(&plane_vel[w, 0]), vld(&vel[p, 0]), V(0.0, 0.0, 0.0),
                       vld(&angvel[p, 0]), 0.0, r, mass[p], r,
                       &pair_table[plane_material[w] * nmat + material[p], 0], dt, flags,
                       &active[k], &state[k, 0], NULL)
    vst(&branch[k, 0], c)
    vst(&branch[k, 3], vsub(c, x2))
    return -g / r


@cython.boundscheck(False)
@cython.wraparound(False)
def clump_plane(const int[::1] particle, const int[::1] plane, const int[::1] sub,
                const double[:, ::1] pos, const double[:, ::1] vel,
                const double[:, ::1] angvel, const double[:, ::1] orient,
                const signed char[::1] shape, const int[::1] template,
                const double[::1] radius, const double[::1] mass, const int[::1] material,
                const long[::1] offsets, const double[:, ::1] spheres,
                const double[:, ::1] plane_point, const double[:, ::1] plane_normal,
                const double[:, ::1] plane_vel, const int[::1] plane_material,
                const double[:, ::1] pair_table, int n_materials, double dt, int flags,
                signed char[::1] active, double[:, ::1] state, double[:, ::1] branch,
                int n_threads):
    """Update every member-plane row; returns (worst overlap ratio, its row or -1)."""
    cdef Py_ssize_t m = particle.shape[0], k
    cdef int nt = max(1, n_threads)
    cdef double ratio
    cdef double[:, ::1] worst = worst_init(nt)
    if m == 0:
        return 0.0, -1
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        ratio = _plane_one(k, particle[k], plane[k], sub[k], pos, vel, angvel, orient, shape,
                           template, radius, mass, material, offsets, spheres, plane_point,
                           plane_normal, plane_vel, plane_material, pair_table, n_materials,
                           dt, flags, active, state, branch)
        keep_worst(worst, ratio, k)
    return pick_worst(worst)
