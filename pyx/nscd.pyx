# cython: language_level=3
"""Non-smooth contact dynamics (seed 003): potential-contact detection and the
per-sweep kernels of the non-linear Gauss-Seidel (NLGS) and Jacobi solvers.

Data layout. Grains are rows of (n, dim) float64 C arrays (dim 2: disks in the xy
plane; dim 3: spheres); angular velocities are (n, nw) with nw = 1 in 2D (the z
component) and 3 in 3D. The kernels load every vector into a v3 with z = 0 (and
omega = (0, 0, w) in 2D), so 2D is 3D restricted to the plane: the zero components
add exact zeros and the 2D numbers are those of the 2D formulas.

A contact c joins grain i = ci[c] (always a grain) and body j = cj[c] of kind
kind[c]: 0 grain, 1 boundary segment, 2 boundary disk (radius 0), 3 plane, 4 mesh
facet (3D; listed by pdem.nscd.problem with the facet kernels and merged into this
list). The solver only tells kind 0 (two grains) from the others: every boundary
kind, facets included, is a body of infinite mass and inertia whose velocity at the
contact point is vb[c] (zero for fixed walls; pdem.Simulation's moving planes and mesh
walls). The normal n points from j to i (seed 003: v_n = (v_i - v_j).n, a positive
correction pushes i along +n); for a boundary it points from the wall into the grain.
The gap d is the surface-to-surface distance (negative in overlap). Mu[c] and e[c]
are the contact's friction and restitution coefficients. Contacts are listed by
(id_i, kind, id_j) with id_i < id_j for grain pairs (ids: global grain ids, the row
index on one rank).

Solver (one contact, increments of the impulse P = P_n n + P_t acting on i, -P on j):
  W   = (m_i + m_j) / (m_i m_j)   (seed W_nn; 1 / m_i for a boundary)
  w_t = W + r_i^2 / I_i + r_j^2 / I_j   (tangential Delassus diagonal of spheres)
  normal: dv = target - v_n, target = -max(0, d)/dt; an impact with e > 0 aims at
          -e u_n^- instead (Newton, Moreau-Jean: the gap is not closed in that step)
          (overlaps: -beta d/dt with overlap_correction beta > 0; seed: beta = 0)
          seed rule (projected=0): dv = max(0, dv)          -> seed 003 exactly
          projected rule:          P_n + dv / W >= 0 (release allowed)
          v_i += dv / (W m_i) n,  v_j -= dv / (W m_j) n,  P_n += dv / W
  tangential (mu[c] > 0): u_t = tangential part of the relative velocity at the
          contact point (rotations included), P_t' = proj_{|P| <= mu P_n}(P_t - u_t / w_t),
          dP_t = P_t' - P_t applied to velocities and (b x dP_t) / I to omegas.
  The sweep residual is the largest |velocity correction|: |dv| and |dP_t| w_t.
NLGS applies each contact at once, contacts in list order (on several ranks each
contact is solved once, by the owner of grain i, see sweep_nlgs). Jacobi computes every
contact from the sweep's start velocities (prange over contacts) and then adds the
increments per grain in ascending contact order (prange over grains): the same bits
for any thread count.

Detection. A cell grid of edge >= 2 r_max + alert over the grains' bounding box;
grains are binned by centre, boundary segments and disks are listed in every cell
their bounding box inflated by r_max + alert touches. Each grain visits the 3^dim
cells around it for grains and its own cell for boundaries: linear cost. Two
passes (count, fill) in prange; each grain's partners are sorted by id.
"""
from cython.parallel cimport prange
from libc.math cimport sqrt, fabs, floor, INFINITY
from vecmath cimport v3, V, vadd, vsub, vscale, vdot, vcross, vnorm
from omp cimport pdem_omp_available
from cellgrid cimport cell_index, cell_sort, grid_size, sort_run_by_id
import numpy as np


# ---------------------------------------------------------------- loaders (2D = z 0)
cdef inline v3 ld(const double[:, ::1] a, Py_ssize_t i, int dim) noexcept nogil:
    if dim == 3:
        return V(a[i, 0], a[i, 1], a[i, 2])
    return V(a[i, 0], a[i, 1], 0.0)


cdef inline v3 ldw(const double[:, ::1] w, Py_ssize_t i) noexcept nogil:
    if w.shape[1] == 3:
        return V(w[i, 0], w[i, 1], w[i, 2])
    return V(0.0, 0.0, w[i, 0])


cdef inline void addv(double[:, ::1] a, Py_ssize_t i, int dim, v3 d) noexcept nogil:
    a[i, 0] = a[i, 0] + d.x
    a[i, 1] = a[i, 1] + d.y
    if dim == 3:
        a[i, 2] = a[i, 2] + d.z


cdef inline void addw(double[:, ::1] w, Py_ssize_t i, v3 d) noexcept nogil:
    if w.shape[1] == 3:
        w[i, 0] = w[i, 0] + d.x
        w[i, 1] = w[i, 1] + d.y
        w[i, 2] = w[i, 2] + d.z
    else:
        w[i, 0] = w[i, 0] + d.z


def openmp_available():
    return bool(pdem_omp_available())


# ---------------------------------------------------------------- geometry
cdef inline double seg_geom(v3 xg, v3 a, v3 b, v3* n) noexcept nogil:
    """Distance from xg to segment [a, b] with seed 003's projection; returns -1 when
    the foot s_t lies outside [0, 1] (the end disks take over there)."""
    cdef v3 t = vsub(b, a), s = vsub(xg, a), nv
    cdef double st = vdot(s, t) / vdot(t, t), dist
    if st < 0.0 or st > 1.0:
        return -1.0
    nv = vsub(s, vscale(t, st))
    dist = vnorm(nv)
    if dist > 0.0:
        n[0] = vscale(nv, 1.0 / dist)
    else:                       # centre on the segment: left normal of t (2D) / any normal
        if t.x != 0.0 or t.y != 0.0:
            nv = V(-t.y, t.x, 0.0)
        else:
            nv = V(0.0, -t.z, t.y)
        n[0] = vscale(nv, 1.0 / vnorm(nv))
    return dist


cdef inline double point_geom(v3 xg, v3 p, v3* n) noexcept nogil:
    """Distance from p to xg and the unit vector p -> xg (x axis when they coincide)."""
    cdef v3 dv = vsub(xg, p)
    cdef double dist = vnorm(dv)
    if dist > 0.0:
        n[0] = vscale(dv, 1.0 / dist)
    else:
        n[0] = V(1.0, 0.0, 0.0)
    return dist


cdef inline v3 _segpt(const double[:, ::1] seg, Py_ssize_t w, int end, int dim) noexcept nogil:
    cdef int o = end * dim
    if dim == 3:
        return V(seg[w, o], seg[w, o + 1], seg[w, o + 2])
    return V(seg[w, o], seg[w, o + 1], 0.0)


cdef inline void _put(signed char[::1] kind, int[::1] ci, int[::1] cj, double[:, ::1] normal,
                      double[::1] gap, long k, int kd, long a, int w, v3 n,
                      double d) noexcept nogil:
    kind[k] = kd
    ci[k] = <int>a
    cj[k] = w
    gap[k] = d
    normal[k, 0] = n.x; normal[k, 1] = n.y; normal[k, 2] = n.z


cdef long _visit(long a, int dim, const double[:, ::1] x, const double[::1] r,
                 const long[::1] ids, long n_own, double alert,
                 const double[:, ::1] seg, const double[:, ::1] disk,
                 const double[:, ::1] plane_p, const double[:, ::1] plane_n,
                 const long[::1] cell_of, const long* nc,
                 const long[::1] gstart, const int[::1] gmem,
                 const long[::1] sstart, const int[::1] smem,
                 const long[::1] dstart, const int[::1] dmem,
                 signed char[::1] kind, int[::1] ci, int[::1] cj, double[:, ::1] normal,
                 double[::1] gap, long off, int fill) noexcept nogil:
    """Count (fill=0) or write (fill=1, from row `off`) the potential contacts of grain a."""
    cdef long c = cell_of[a], cx, cy, cz, ix, iy, iz, e, found = 0, k, q, s0
    cdef int b, w
    cdef v3 xa = ld(x, a, dim), n
    cdef double ra = r[a], dist
    cz = c % nc[2]
    cy = (c // nc[2]) % nc[1]
    cx = c // (nc[1] * nc[2])
    # grains: partners of larger id, not both ghosts
    for ix in range(cx - 1 if cx > 0 else 0, cx + 2 if cx + 2 <= nc[0] else nc[0]):
        for iy in range(cy - 1 if cy > 0 else 0, cy + 2 if cy + 2 <= nc[1] else nc[1]):
            for iz in range(cz - 1 if cz > 0 else 0, cz + 2 if cz + 2 <= nc[2] else nc[2]):
                q = (ix * nc[1] + iy) * nc[2] + iz
                for e in range(gstart[q], gstart[q + 1]):
                    b = gmem[e]
                    if ids[b] <= ids[a] or (a >= n_own and b >= n_own):
                        continue
                    if point_geom(xa, ld(x, b, dim), &n) - ra - r[b] < alert:
                        if fill:
                            cj[off + found] = b
                        found += 1
    if fill:
        # sort the run by partner id (insertion sort: short runs), then geometry
        sort_run_by_id(cj, ids, off, off + found)
        for k in range(off, off + found):
            b = cj[k]
            dist = point_geom(xa, ld(x, b, dim), &n)
            kind[k] = 0
            ci[k] = <int>a
            gap[k] = dist - ra - r[b]
            normal[k, 0] = n.x; normal[k, 1] = n.y; normal[k, 2] = n.z
    if a >= n_own:
        return found
    # boundary segments and disks listed in this cell (ascending index), then planes
    for k in range(sstart[c], sstart[c + 1]):
        w = smem[k]
        dist = seg_geom(xa, _segpt(seg, w, 0, dim), _segpt(seg, w, 1, dim), &n)
        if dist >= 0.0 and dist - ra < alert:
            if fill:
                _put(kind, ci, cj, normal, gap, off + found, 1, a, w, n, dist - ra)
            found += 1
    for k in range(dstart[c], dstart[c + 1]):
        w = dmem[k]
        dist = point_geom(xa, ld(disk, w, dim), &n)
        if dist - ra < alert:
            if fill:
                _put(kind, ci, cj, normal, gap, off + found, 2, a, w, n, dist - ra)
            found += 1
    for w in range(plane_p.shape[0]):
        n = ld(plane_n, w, dim)
        dist = vdot(vsub(xa, ld(plane_p, w, dim)), n)
        if dist - ra < alert:
            if fill:
                _put(kind, ci, cj, normal, gap, off + found, 3, a, w, n, dist - ra)
            found += 1
    return found


cdef tuple _bin_boxes(const double[:, ::1] lo_box, const double[:, ::1] hi_box, int dim,
               const double* lo, double inv_cell, const long* nc):
    """CSR (start, members) of the cells touched by each box, members ascending."""
    cdef Py_ssize_t k, nb = lo_box.shape[0]
    cdef long ncell = nc[0] * nc[1] * nc[2], a0, a1, b0, b1, c0, c1, ix, iy, iz, q, tot = 0
    cdef long[:, ::1] rng = np.zeros((nb, 6), dtype=np.int64)
    start_arr = np.zeros(ncell + 1, dtype=np.int64)
    cdef long[::1] start = start_arr
    cdef int d
    cdef long lo_c[3]
    cdef long hi_c[3]
    cdef bint skip
    for k in range(nb):
        skip = False
        for d in range(3):
            if d < dim:
                lo_c[d] = <long>floor((lo_box[k, d] - lo[d]) * inv_cell)
                hi_c[d] = <long>floor((hi_box[k, d] - lo[d]) * inv_cell)
                if hi_c[d] < 0 or lo_c[d] >= nc[d]:
                    skip = True
                lo_c[d] = max(lo_c[d], 0)
                hi_c[d] = min(hi_c[d], nc[d] - 1)
            else:
                lo_c[d] = 0
                hi_c[d] = 0
        if skip:                         # no grain can reach it: empty range
            rng[k, 0] = 0; rng[k, 1] = -1
            continue
        for d in range(3):
            rng[k, 2 * d] = lo_c[d]
            rng[k, 2 * d + 1] = hi_c[d]
        for ix in range(lo_c[0], hi_c[0] + 1):
            for iy in range(lo_c[1], hi_c[1] + 1):
                for iz in range(lo_c[2], hi_c[2] + 1):
                    start[(ix * nc[1] + iy) * nc[2] + iz + 1] += 1
    for q in range(ncell):
        start[q + 1] += start[q]
    mem_arr = np.empty(start[ncell], dtype=np.int32)
    cdef int[::1] mem = mem_arr
    cdef long[::1] fill = start_arr[:ncell].copy()
    for k in range(nb):
        for ix in range(rng[k, 0], rng[k, 1] + 1):
            for iy in range(rng[k, 2], rng[k, 3] + 1):
                for iz in range(rng[k, 4], rng[k, 5] + 1):
                    q = (ix * nc[1] + iy) * nc[2] + iz
                    mem[fill[q]] = <int>k
                    fill[q] += 1
    return start_arr, mem_arr


def detect(const double[:, ::1] x, const double[::1] r, const long[::1] ids,
           const long[::1] order, long n_own, double alert,
           const double[:, ::1] seg, const double[:, ::1] disk,
           const double[:, ::1] plane_p, const double[:, ::1] plane_n, int n_threads):
    """Potential contacts (surface distance < alert) of grains x (n, dim) with each other
    and with segments seg (k, 2 dim: x0 then x1), disks (k, dim) and planes (point,
    unit normal). Grains are visited in `order` (ascending id); grain pairs need one
    owned grain (rows < n_own), boundary contacts an owned grain.
    Returns kind (int8), i, j (int32), normal (m, 3), gap (m,)."""
    cdef Py_ssize_t n = x.shape[0], i, t
    cdef int dim = x.shape[1], d, nt = max(1, n_threads)
    cdef double rmax = 0.0, cell, inv_cell, reach
    cdef double lo[3]
    cdef double hi[3]
    cdef long nc[3]
    if n == 0:
        return (np.empty(0, np.int8), np.empty(0, np.int32), np.empty(0, np.int32),
                np.empty((0, 3)), np.empty(0))
    xa = np.asarray(x)
    for i in range(n):
        if r[i] > rmax:
            rmax = r[i]
    for d in range(3):
        lo[d] = xa[:, d].min() if d < dim else 0.0
        hi[d] = xa[:, d].max() if d < dim else 0.0
    cell = 2.0 * rmax + alert
    inv_cell = grid_size(lo, hi, cell, n, nc)
    cdef long ncell = nc[0] * nc[1] * nc[2]
    cell_of_arr = np.empty(n, dtype=np.int64)
    cdef long[::1] cell_of = cell_of_arr
    for i in range(n):
        cell_of[i] = cell_index(x[i, 0], x[i, 1], x[i, 2] if dim == 3 else lo[2], lo,
                                inv_cell, nc)
    gstart_arr = np.zeros(ncell + 1, dtype=np.int64)
    cdef long[::1] gstart = gstart_arr
    gmem_arr = np.empty(n, dtype=np.int32)
    cdef int[::1] gmem = gmem_arr
    cell_sort(cell_of, gstart, gmem)
    # boundaries: bounding boxes inflated by the largest reach r_max + alert
    reach = rmax + (alert if alert > 0.0 else 0.0)
    sega = np.asarray(seg).reshape(-1, 2, dim) if seg.shape[0] else np.zeros((0, 2, dim))
    slo = np.ascontiguousarray(sega.min(axis=1) - reach) if seg.shape[0] else np.zeros((0, dim))
    shi = np.ascontiguousarray(sega.max(axis=1) + reach) if seg.shape[0] else np.zeros((0, dim))
    sstart_arr, smem_arr = _bin_boxes(slo, shi, dim, lo, inv_cell, nc)
    dka = np.asarray(disk)
    dstart_arr, dmem_arr = _bin_boxes(np.ascontiguousarray(dka - reach),
                                      np.ascontiguousarray(dka + reach), dim, lo, inv_cell, nc)
    cdef long[::1] sstart = sstart_arr, dstart = dstart_arr
    cdef int[::1] smem = smem_arr, dmem = dmem_arr
    count_arr = np.zeros(n + 1, dtype=np.int64)
    cdef long[::1] count = count_arr
    cdef signed char[::1] k0 = np.empty(1, np.int8)
    cdef int[::1] i0 = np.empty(1, np.int32)
    cdef double[:, ::1] n0 = np.empty((1, 3))
    cdef double[::1] g0 = np.empty(1)
    for t in prange(n, nogil=True, schedule='static', num_threads=nt):
        count[t + 1] = _visit(order[t], dim, x, r, ids, n_own, alert, seg, disk, plane_p,
                              plane_n, cell_of, nc, gstart, gmem, sstart, smem, dstart, dmem,
                              k0, i0, i0, n0, g0, 0, 0)
    for t in range(n):
        count[t + 1] += count[t]
    cdef long m = count[n]
    kind_arr = np.empty(m, np.int8)
    ci_arr = np.empty(m, np.int32)
    cj_arr = np.empty(m, np.int32)
    normal_arr = np.empty((m, 3))
    gap_arr = np.empty(m)
    cdef signed char[::1] kind = kind_arr
    cdef int[::1] ci = ci_arr, cj = cj_arr
    cdef double[:, ::1] normal = normal_arr
    cdef double[::1] gap = gap_arr
    for t in prange(n, nogil=True, schedule='static', num_threads=nt):
        _visit(order[t], dim, x, r, ids, n_own, alert, seg, disk, plane_p, plane_n, cell_of,
               nc, gstart, gmem, sstart, smem, dstart, dmem, kind, ci, cj, normal, gap,
               count[t], 1)
    return kind_arr, ci_arr, cj_arr, normal_arr, gap_arr


def verlet_pair_gaps(const int[::1] i1, const int[::1] i2, const double[:, ::1] pos,
                     const int[:, ::1] image, const double[::1] box_len,
                     const double[::1] radius, double[:, ::1] normal, double[::1] gap,
                     int n_threads):
    """Normal (from particle i2 to i1, seed 003's j -> i) and surface gap of every pair
    of a pdem.Simulation Verlet list (periodic images as in contacts.sphere_sphere).
    Coincident centres get the x axis."""
    cdef Py_ssize_t m = i1.shape[0], k
    cdef int a, b
    cdef double dist
    cdef v3 d
    for k in prange(m, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        a = i1[k]
        b = i2[k]
        d = V(pos[a, 0] - pos[b, 0] + (image[a, 0] - image[b, 0]) * box_len[0],
              pos[a, 1] - pos[b, 1] + (image[a, 1] - image[b, 1]) * box_len[1],
              pos[a, 2] - pos[b, 2] + (image[a, 2] - image[b, 2]) * box_len[2])
        dist = vnorm(d)
        if dist > 0.0:
            d = vscale(d, 1.0 / dist)
        else:
            d = V(1.0, 0.0, 0.0)
        normal[k, 0] = d.x; normal[k, 1] = d.y; normal[k, 2] = d.z
        gap[k] = dist - radius[a] - radius[b]


# ---------------------------------------------------------------- solver
def prepare(const signed char[::1] kind, const int[::1] ci, const int[::1] cj,
            const double[:, ::1] normal, const double[::1] gap, const double[:, ::1] vb,
            const double[:, ::1] v, const double[::1] r, const double[::1] m,
            const double[::1] inv_inertia, double dt, const double[::1] e, double beta,
            double[::1] W, double[::1] wt, double[::1] target, double[::1] pn,
            double[:, ::1] pt, int n_threads):
    """Per-contact constants of a solve: seed W_nn, tangential Delassus w_t and the
    normal velocity target from the start velocities: -max(0, d)/dt (seed 003); with
    restitution e[c] > 0 an impacting contact (u_n^- < 0 and d + u_n^- dt < 0) aims at
    -e u_n^- (Newton's law as in Moreau-Jean: the grain leaves with e times its
    approach velocity; aiming at -e u_n^- - d/dt instead would take d/dt off every
    bounce for good). beta > 0 adds -beta d/dt for an overlap (d < 0): a separating
    velocity that removes beta of it in the step.
    A grain of infinite mass (m = inf: prescribed velocity) counts as a boundary:
    W = 1/m of the other body. vb[c]: velocity of a boundary body j at the contact
    (moving walls; zero for fixed ones). Impulses start at zero."""
    cdef Py_ssize_t nc = kind.shape[0], c
    cdef int i, j, dim = v.shape[1], nt = max(1, n_threads)
    cdef double mi, mj, un, dpos
    cdef v3 n, vj
    for c in prange(nc, nogil=True, schedule='static', num_threads=nt):
        i = ci[c]
        j = cj[c]
        mi = m[i]
        n = ld(normal, c, 3)
        if kind[c] == 0:
            mj = m[j]
            if mi == INFINITY:
                W[c] = 1.0 / mj
            elif mj == INFINITY:
                W[c] = 1.0 / mi
            else:
                W[c] = (mi + mj) / (mi * mj)
            wt[c] = W[c] + r[i] * r[i] * inv_inertia[i] + r[j] * r[j] * inv_inertia[j]
            vj = ld(v, j, dim)
        else:
            W[c] = 1.0 / mi
            wt[c] = W[c] + r[i] * r[i] * inv_inertia[i]
            vj = ld(vb, c, 3)
        un = vdot(vsub(ld(v, i, dim), vj), n)
        dpos = gap[c] if gap[c] > 0.0 else (beta * gap[c] if beta > 0.0 else 0.0)
        if e[c] > 0.0 and un < 0.0 and gap[c] + un * dt < 0.0:
            target[c] = -e[c] * un - (dpos / dt if dpos < 0.0 else 0.0)
        else:
            target[c] = -dpos / dt
        pn[c] = 0.0
        pt[c, 0] = 0.0; pt[c, 1] = 0.0; pt[c, 2] = 0.0


cdef inline double solve_one(v3 n, double W, double wt, double target, double ri, double rj,
                             double mi, double mj, double iIi, double iIj,
                             v3 vi, v3 vj, v3 wi, v3 wj, double mu, int projected,
                             double relax, double* pn, double* pt, v3* dvi, v3* dvj, v3* dwi,
                             v3* dwj) noexcept nogil:
    """One contact from the given velocities: updates the impulses pn, pt[0:3] and
    returns the increments to add to v_i, v_j, w_i, w_j and the residual."""
    cdef double dv, res, un, ptn, lim
    cdef v3 bi, bj, u, ut, trial, dpt, z = V(0.0, 0.0, 0.0)
    # normal: seed 003
    dv = target - vdot(vsub(vi, vj), n)
    if relax != 1.0:
        dv = dv * relax
    if projected:
        if pn[0] + dv / W < 0.0:
            dv = -pn[0] * W
    elif dv < 0.0:
        dv = 0.0
    pn[0] = pn[0] + dv / W
    res = fabs(dv) if relax == 1.0 else fabs(dv) / relax    # the unrelaxed correction
    dvi[0] = vscale(n, dv / (W * mi))
    dvj[0] = vscale(n, -(dv / (W * mj)))
    dwi[0] = z
    dwj[0] = z
    if mu <= 0.0:
        return res
    # tangential: Coulomb disk, rotations included
    vi = vadd(vi, dvi[0])
    vj = vadd(vj, dvj[0])
    bi = vscale(n, -ri)
    bj = vscale(n, rj)
    u = vsub(vadd(vi, vcross(wi, bi)), vadd(vj, vcross(wj, bj)))
    ut = vsub(u, vscale(n, vdot(u, n)))
    if relax != 1.0:
        ut = vscale(ut, relax)
    trial = vsub(V(pt[0], pt[1], pt[2]), vscale(ut, 1.0 / wt))
    lim = mu * pn[0]
    ptn = vnorm(trial)
    if ptn > lim:
        trial = vscale(trial, lim / ptn) if ptn > 0.0 else z
    dpt = vsub(trial, V(pt[0], pt[1], pt[2]))
    pt[0] = trial.x; pt[1] = trial.y; pt[2] = trial.z
    lim = vnorm(dpt) * wt if relax == 1.0 else vnorm(dpt) * wt / relax
    if lim > res:
        res = lim
    dvi[0] = vadd(dvi[0], vscale(dpt, 1.0 / mi))
    dvj[0] = vsub(dvj[0], vscale(dpt, 1.0 / mj))
    dwi[0] = vscale(vcross(bi, dpt), iIi)
    dwj[0] = vscale(vcross(bj, dpt), -iIj)
    return res


cdef inline double solve_at(Py_ssize_t c, const signed char[::1] kind, const int[::1] ci,
                            const int[::1] cj, const double[:, ::1] normal,
                            const double[:, ::1] vb, const double[::1] W, const double[::1] wt,
                            const double[::1] target, const double[:, ::1] v,
                            const double[:, ::1] w, const double[::1] r, const double[::1] m,
                            const double[::1] inv_inertia, const double[::1] mu,
                            int projected, double relax, double[::1] pn, double[:, ::1] pt, v3* dvi,
                            v3* dvj, v3* dwi, v3* dwj) noexcept nogil:
    cdef int i = ci[c], j = cj[c], dim = v.shape[1]
    cdef v3 z = V(0.0, 0.0, 0.0)
    if kind[c] == 0:
        return solve_one(ld(normal, c, 3), W[c], wt[c], target[c], r[i], r[j], m[i], m[j],
                         inv_inertia[i], inv_inertia[j], ld(v, i, dim), ld(v, j, dim),
                         ldw(w, i), ldw(w, j), mu[c], projected, relax, &pn[c], &pt[c, 0],
                         dvi, dvj, dwi, dwj)
    return solve_one(ld(normal, c, 3), W[c], wt[c], target[c], r[i], 0.0, m[i], INFINITY,
                     inv_inertia[i], 0.0, ld(v, i, dim), ld(vb, c, 3), ldw(w, i), z, mu[c], projected,
                     relax, &pn[c], &pt[c, 0], dvi, dvj, dwi, dwj)


def sweep_nlgs(const signed char[::1] kind, const int[::1] ci, const int[::1] cj,
               const double[:, ::1] normal, const double[:, ::1] vb, const double[::1] W,
               const double[::1] wt, const double[::1] target, double[:, ::1] v,
               double[:, ::1] w, const double[::1] r, const double[::1] m,
               const double[::1] inv_inertia, const double[::1] mu, int projected,
               double[::1] pn, double[:, ::1] pt,
               const signed char[::1] owned, double[:, ::1] ghost_dv,
               double[:, ::1] ghost_dw):
    """One Gauss-Seidel sweep in list order, velocities updated after each contact.
    On several ranks (owned[g] == 0 for ghost rows) a contact is solved by the owner of
    its grain i: contacts whose i is a ghost are skipped (the other rank solves them),
    and the increments given to a ghost j are applied to the local copy (Gauss-Seidel
    within the rank) and summed into ghost_dv, ghost_dw for its owner.
    Returns the largest |velocity correction|."""
    cdef Py_ssize_t nc = kind.shape[0], c
    cdef int i, j, dim = v.shape[1]
    cdef double res = 0.0, rc
    cdef v3 dvi, dvj, dwi, dwj
    with nogil:
        for c in range(nc):
            i = ci[c]
            if not owned[i]:
                continue
            rc = solve_at(c, kind, ci, cj, normal, vb, W, wt, target, v, w, r, m,
                          inv_inertia, mu, projected, 1.0, pn, pt, &dvi, &dvj, &dwi, &dwj)
            if rc > res:
                res = rc
            addv(v, i, dim, dvi)
            if mu[c] > 0.0:
                addw(w, i, dwi)
            if kind[c] == 0:
                j = cj[c]
                addv(v, j, dim, dvj)
                if mu[c] > 0.0:
                    addw(w, j, dwj)
                if not owned[j]:
                    addv(ghost_dv, j, dim, dvj)
                    if mu[c] > 0.0:
                        addw(ghost_dw, j, dwj)
    return res


cdef void _jacobi_contact(Py_ssize_t c, const signed char[::1] kind, const int[::1] ci,
                          const int[::1] cj, const double[:, ::1] normal,
                          const double[:, ::1] vb, const double[::1] W, const double[::1] wt,
                          const double[::1] target, const double[:, ::1] v,
                          const double[:, ::1] w, const double[::1] r, const double[::1] m,
                          const double[::1] inv_inertia, const double[::1] mu,
                          int projected, double relax, double[::1] pn, double[:, ::1] pt,
                          double[:, ::1] inc, double[::1] res) noexcept nogil:
    """Contact c of a Jacobi sweep (its own stack: safe in prange)."""
    cdef v3 dvi, dvj, dwi, dwj
    res[c] = solve_at(c, kind, ci, cj, normal, vb, W, wt, target, v, w, r, m, inv_inertia,
                      mu, projected, relax, pn, pt, &dvi, &dvj, &dwi, &dwj)
    inc[c, 0] = dvi.x; inc[c, 1] = dvi.y; inc[c, 2] = dvi.z
    inc[c, 3] = dvj.x; inc[c, 4] = dvj.y; inc[c, 5] = dvj.z
    inc[c, 6] = dwi.x; inc[c, 7] = dwi.y; inc[c, 8] = dwi.z
    inc[c, 9] = dwj.x; inc[c, 10] = dwj.y; inc[c, 11] = dwj.z


def sweep_jacobi(const signed char[::1] kind, const int[::1] ci, const int[::1] cj,
                 const double[:, ::1] normal, const double[:, ::1] vb, const double[::1] W,
                 const double[::1] wt, const double[::1] target, double[:, ::1] v,
                 double[:, ::1] w, const double[::1] r, const double[::1] m,
                 const double[::1] inv_inertia, const double[::1] mu, int projected,
                 double relax, double[::1] pn, double[:, ::1] pt,
                 const long[::1] start, const int[::1] entry, double[:, ::1] inc,
                 double[::1] res, long n_update, int n_threads):
    """One Jacobi sweep: every contact from the sweep's start velocities (increments in
    inc (nc, 12): dv_i, dv_j, dw_i, dw_j; each correction scaled by relax), then grains
    g < n_update add their increments in ascending contact order. Returns the largest
    |velocity correction|."""
    cdef Py_ssize_t nc = kind.shape[0], c, g, e
    cdef int dim = v.shape[1], nt = max(1, n_threads), side
    cdef double rmax = 0.0
    cdef v3 sv, sw
    for c in prange(nc, nogil=True, schedule='static', num_threads=nt):
        _jacobi_contact(c, kind, ci, cj, normal, vb, W, wt, target, v, w, r, m, inv_inertia,
                        mu, projected, relax, pn, pt, inc, res)
    for g in prange(n_update, nogil=True, schedule='static', num_threads=nt):
        if start[g] == start[g + 1]:
            continue
        sv = V(0.0, 0.0, 0.0)
        sw = V(0.0, 0.0, 0.0)
        for e in range(start[g], start[g + 1]):
            c = entry[e] >> 1
            side = <int>(entry[e] & 1)
            sv = vadd(sv, V(inc[c, 3 * side], inc[c, 3 * side + 1], inc[c, 3 * side + 2]))
            sw = vadd(sw, V(inc[c, 6 + 3 * side], inc[c, 7 + 3 * side],
                            inc[c, 8 + 3 * side]))
        addv(v, g, dim, sv)
        addw(w, g, sw)
    for c in range(nc):
        if res[c] > rmax:
            rmax = res[c]
    return rmax
