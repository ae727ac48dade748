# cython: language_level=3
"""Neighbor search: cell list + Verlet list of candidate pairs (linear in particle count).

Particles (owned and ghosts) are binned by their shifted position x + image * L
into cubic cells of edge >= the largest pair range (2 r_max + skin). A pair
(a, b) is a candidate when id_a < id_b, at least one of them is owned, and
|x_b - x_a| < r_a + r_b + skin ("alert distance"). Output is sorted by
(id_a, id_b): particles are visited in ascending id and each particle's partners
are sorted by id. Two passes (count, fill) make the build parallel and
deterministic.
"""
cimport cython
from cython.parallel cimport prange
from cellgrid cimport cell_coord, cell_index, cell_sort, grid_size, sort_run_by_id
import numpy as np


cdef tuple _binned(const double[:, ::1] pos, const int[:, ::1] image,
                   const double[:, ::1] cell, const double[::1] radius, double skin,
                   double* lo, long* nc, double* inv_cell):
    """Shifted positions sp = x + image L binned in cubic cells of edge 2 r_max + skin
    over their bounding box: (sp, start, members, cell_of) with
    members[start[c]:start[c+1]] the particles of cell c and cell_of[i] particle i's
    cell; sets lo, nc and inv_cell (cellgrid.pxd)."""
    cdef Py_ssize_t n = pos.shape[0], i
    cdef int d
    cdef double rmax = 0.0
    cdef double hi[3]
    for d in range(3):
        lo[d] = 1e308
        hi[d] = -1e308
    sp_arr = np.empty((n, 3))
    cdef double[:, ::1] sp = sp_arr
    for i in range(n):
        if radius[i] > rmax:
            rmax = radius[i]
        for d in range(3):
            sp[i, d] = pos[i, d] + (image[i, 0] * cell[d, 0] + image[i, 1] * cell[d, 1]
                                    + image[i, 2] * cell[d, 2])
            if sp[i, d] < lo[d]:
                lo[d] = sp[i, d]
            if sp[i, d] > hi[d]:
                hi[d] = sp[i, d]
    inv_cell[0] = grid_size(lo, hi, 2.0 * rmax + skin, n, nc)
    cell_of_arr = np.empty(n, dtype=np.int64)
    cdef long[::1] cell_of = cell_of_arr
    for i in range(n):
        cell_of[i] = cell_index(sp[i, 0], sp[i, 1], sp[i, 2], lo, inv_cell[0], nc)
    # counting sort of particles by cell
    start_arr = np.zeros(nc[0] * nc[1] * nc[2] + 1, dtype=np.int64)
    members_arr = np.empty(n, dtype=np.int32)
    cell_sort(cell_of, start_arr, members_arr)
    return sp_arr, start_arr, members_arr, cell_of_arr


@cython.boundscheck(False)
@cython.wraparound(False)
def build_pairs(const double[:, ::1] pos, const int[:, ::1] image, const double[:, ::1] cell,
                const double[::1] radius, const long[::1] ids, int n_own, double skin,
                const long[::1] order, int n_threads):
    """Return (i1, i2) int32 local indices of the candidate pairs, sorted by (id1, id2)."""
    cdef Py_ssize_t n = pos.shape[0], i, j, s, e, t
    cdef double inv_cell
    cdef double lo[3]
    cdef long nc[3]
    if n == 0:
        return np.empty(0, np.int32), np.empty(0, np.int32)
    sp_arr, start_arr, members_arr, cell_of_arr = _binned(pos, image, cell, radius,
                                                          skin, lo, nc, &inv_cell)
    cdef double[:, ::1] sp = sp_arr
    cdef long[::1] start = start_arr
    cdef int[::1] members = members_arr
    cdef long[::1] cell_of = cell_of_arr
    # pass 1: count partners of each particle (in visiting order)
    count_arr = np.zeros(n + 1, dtype=np.int64)
    cdef long[::1] count = count_arr
    cdef int nt = max(1, n_threads)
    cdef int[::1] none = np.empty(1, dtype=np.int32)
    for t in prange(n, nogil=True, schedule='static', num_threads=nt):
        count[t + 1] = _visit(order[t], sp, radius, ids, n_own, skin, cell_of, start, members,
                              nc[0], nc[1], nc[2], none, none, 0, 0)
    for t in range(n):
        count[t + 1] += count[t]
    i1_arr = np.empty(count[n], dtype=np.int32)
    i2_arr = np.empty(count[n], dtype=np.int32)
    cdef int[::1] i1 = i1_arr, i2 = i2_arr
    # pass 2: fill, then sort each particle's partners by id (insertion sort, short runs)
    for t in prange(n, nogil=True, schedule='static', num_threads=nt):
        _visit(order[t], sp, radius, ids, n_own, skin, cell_of, start, members,
               nc[0], nc[1], nc[2], i1, i2, count[t], 1)
        sort_run_by_id(i2, ids, count[t], count[t + 1])
    return i1_arr, i2_arr


@cython.boundscheck(False)
@cython.wraparound(False)
cdef long _visit(long a, const double[:, ::1] sp, const double[::1] radius,
                 const long[::1] ids, int n_own, double skin, const long[::1] cell_of,
                 const long[::1] start, const int[::1] members, long n0, long n1, long n2,
                 int[::1] out1, int[::1] out2, long offset, int do_fill) noexcept nogil:
    cdef long c = cell_of[a], cx, cy, cz, x, y, z, e, found = 0
    cdef int b
    cdef double dx, dy, dz, rr
    cz = c % n2
    cy = (c // n2) % n1
    cx = c // (n1 * n2)
    for x in range(cx - 1 if cx > 0 else 0, cx + 2 if cx + 2 <= n0 else n0):
        for y in range(cy - 1 if cy > 0 else 0, cy + 2 if cy + 2 <= n1 else n1):
            for z in range(cz - 1 if cz > 0 else 0, cz + 2 if cz + 2 <= n2 else n2):
                c = (x * n1 + y) * n2 + z
                for e in range(start[c], start[c + 1]):
                    b = members[e]
                    if ids[b] <= ids[a] or (a >= n_own and b >= n_own):
                        continue
                    dx = sp[b, 0] - sp[a, 0]
                    dy = sp[b, 1] - sp[a, 1]
                    dz = sp[b, 2] - sp[a, 2]
                    rr = radius[a] + radius[b] + skin
                    if dx * dx + dy * dy + dz * dz < rr * rr:
                        if do_fill:
                            out1[offset + found] = <int>a
                            out2[offset + found] = b
                        found += 1
    return found


@cython.boundscheck(False)
@cython.wraparound(False)
def build_plane_pairs(const double[:, ::1] pos, const double[::1] radius, int n_own,
                      const double[:, ::1] plane_point, const double[:, ::1] plane_normal,
                      double skin):
    """Candidate (particle, plane) pairs for owned particles, sorted by (particle, plane):
    signed distance below r + skin (the plane is one-sided, particles on the normal side)."""
    cdef Py_ssize_t p, w, nw = plane_point.shape[0], m = 0
    cdef double d
    out_p = np.empty(n_own * nw, dtype=np.int32)
    out_w = np.empty(n_own * nw, dtype=np.int32)
    cdef int[::1] op = out_p, ow = out_w
    for p in range(n_own):
        for w in range(nw):
            d = ((pos[p, 0] - plane_point[w, 0]) * plane_normal[w, 0]
                 + (pos[p, 1] - plane_point[w, 1]) * plane_normal[w, 1]
                 + (pos[p, 2] - plane_point[w, 2]) * plane_normal[w, 2])
            if d < radius[p] + skin:
                op[m] = <int>p
                ow[m] = <int>w
                m += 1
    return out_p[:m].copy(), out_w[:m].copy()


# ---------------------------------------------------------------- rows sorted by key
from libc.stdlib cimport malloc, realloc, free
from libc.math cimport sqrt, ceil, fabs
from time import perf_counter as _pc
PH = [0.0] * 5
cdef long NT = 0
def ntests():
    global NT
    t = NT
    NT = 0
    return t
cdef bint OLD = False, NARROW = True
def set_flags(old, narrow):
    global OLD, NARROW
    OLD = old
    NARROW = narrow


cdef inline bint _less_entry(long ka, int pa, long kb, int pb) noexcept nogil:
    return ka < kb or (ka == kb and pa < pb)


@cython.boundscheck(False)
@cython.wraparound(False)
def build_pair_rows(const double[:, ::1] pos, const int[:, ::1] image,
                    const double[:, ::1] cell, const double[::1] radius, const long[::1] ids,
                    int n_own, double skin):
    """The candidate pairs of build_pairs as contact rows (i1, i2, key), sorted by key
    = id1 << 32 | id2, each key once: where periodic images (or any copies of one
    particle) make a pair appear more than once, the row whose particle 1 is the copy
    with the lowest local index is kept (what a stable sort by key of build_pairs'
    output, particles visited in stable id order, followed by keeping the first row of
    each key gives). One pass over a cell list in cell order, each unordered pair
    visited once (half stencil; the distance test is symmetric in a and b); rows are
    then grouped by particle 1's id (counting sort over the id range when it is dense,
    np.unique otherwise) and each group sorted by (id2, local index of particle 1)."""
    cdef Py_ssize_t n = pos.shape[0]
    cdef long id_lo, id_hi
    if n == 0:
        return np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0, np.int64)
    ids_arr = np.asarray(ids)
    id_lo, id_hi = int(ids_arr.min()), int(ids_arr.max())
    if id_hi - id_lo <= 4 * n + 64:
        group_arr = np.empty(0, np.int64)
        n_groups = id_hi - id_lo + 1
    else:
        uniq, group_arr = np.unique(ids_arr, return_inverse=True)
        group_arr = np.ascontiguousarray(group_arr, np.int64)
        n_groups = len(uniq)
    if OLD:
        return _pair_rows_old(pos, image, cell, radius, ids, n_own, skin, group_arr, id_lo,
                      n_groups)
    return _pair_rows(pos, image, cell, radius, ids, n_own, skin, group_arr, id_lo,
                      n_groups)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef _pair_rows_old(const double[:, ::1] pos, const int[:, ::1] image, const double[:, ::1] cell,
                const double[::1] radius, const long[::1] ids, int n_own, double skin,
                const long[::1] group, long id_lo, long n_groups):
    global NT
    cdef Py_ssize_t n = pos.shape[0], i, j, k, e, f, s, m, cap, nrow
    cdef int d, a, b
    cdef long c, cx, cy, cz, x, y, z, g, nb, kb, ka
    cdef double inv_cell, dx, dy, dz, rr, xj, yj, zj, rj
    cdef double lo[3]
    cdef long nc[3]
    cdef bint dense = group.shape[0] == 0, gj, oom = False
    sp_arr, start_arr, members_arr, _ = _binned(pos, image, cell, radius, skin, lo, nc,
                                                &inv_cell)
    cdef double[:, ::1] sp = sp_arr
    cdef long[::1] start = start_arr
    cdef int[::1] members = members_arr
    cdef long ncell = nc[0] * nc[1] * nc[2]
    # copies in cell order: the candidate loop reads contiguous memory
    cs_arr = np.empty((n, 4))
    cid_arr = np.empty(n, dtype=np.int64)
    cdef double[:, ::1] cs = cs_arr
    cdef long[::1] cid = cid_arr
    for e in range(n):
        i = members[e]
        cs[e, 0] = sp[i, 0]
        cs[e, 1] = sp[i, 1]
        cs[e, 2] = sp[i, 2]
        cs[e, 3] = radius[i]
        cid[e] = ids[i]
    cap = 8 * n + 1024
    cdef int* pa = <int*>malloc(cap * sizeof(int))
    cdef int* pb = <int*>malloc(cap * sizeof(int))
    cdef long* pk = <long*>malloc(cap * sizeof(long))
    cdef int* tmp
    cdef long* tmpk
    if pa == NULL or pb == NULL or pk == NULL:
        free(pa)
        free(pb)
        free(pk)
        raise MemoryError()
    m = 0
    with nogil:
        for c in range(ncell):
            if start[c] == start[c + 1]:
                continue
            cz = c % nc[2]
            cy = (c // nc[2]) % nc[1]
            cx = c // (nc[1] * nc[2])
            for nb in range(14):        # the cell itself, then 13 forward neighbors
                if nb == 0:
                    x, y, z = cx, cy, cz
                elif nb < 10:
                    x, y, z = cx + 1, cy + (nb - 1) // 3 - 1, cz + (nb - 1) % 3 - 1
                elif nb < 13:
                    x, y, z = cx, cy + 1, cz + nb - 11
                else:
                    x, y, z = cx, cy, cz + 1
                if x >= nc[0] or y < 0 or y >= nc[1] or z < 0 or z >= nc[2]:
                    continue
                g = (x * nc[1] + y) * nc[2] + z
                for e in range(start[c], start[c + 1]):
                    xj, yj, zj, rj = cs[e, 0], cs[e, 1], cs[e, 2], cs[e, 3]
                    gj = members[e] >= n_own
                    for f in range(e + 1 if nb == 0 else start[g], start[g + 1]):
                        if gj and members[f] >= n_own:
                            continue
                        if cid[f] == cid[e]:
                            continue
                        NT += 1
                        dx = cs[f, 0] - xj
                        dy = cs[f, 1] - yj
                        dz = cs[f, 2] - zj
                        rr = rj + cs[f, 3] + skin
                        if dx * dx + dy * dy + dz * dz < rr * rr:
                            if m == cap and not oom:
                                tmp = <int*>realloc(pa, 2 * cap * sizeof(int))
                                if tmp == NULL:
                                    oom = True
                                else:
                                    pa = tmp
                                    tmp = <int*>realloc(pb, 2 * cap * sizeof(int))
                                    if tmp == NULL:
                                        oom = True
                                    else:
                                        pb = tmp
                                        tmpk = <long*>realloc(pk, 2 * cap * sizeof(long))
                                        if tmpk == NULL:
                                            oom = True
                                        else:
                                            pk = tmpk
                                            cap *= 2
                            if oom:
                                continue
                            if cid[e] < cid[f]:
                                pa[m] = members[e]
                                pb[m] = members[f]
                                pk[m] = (cid[e] << 32) | cid[f]
                            else:
                                pa[m] = members[f]
                                pb[m] = members[e]
                                pk[m] = (cid[f] << 32) | cid[e]
                            m += 1
    if oom:
        free(pa)
        free(pb)
        free(pk)
        raise MemoryError()
    # group the rows by particle 1's id: counting sort (stable in emission order)
    gstart_arr = np.zeros(n_groups + 1, dtype=np.int64)
    cdef long[::1] gstart = gstart_arr
    ea_arr = np.empty(m, dtype=np.int32)
    eb_arr = np.empty(m, dtype=np.int32)
    ek_arr = np.empty(m, dtype=np.int64)
    cdef int[::1] ea = ea_arr, eb = eb_arr
    cdef long[::1] ek = ek_arr
    with nogil:
        for k in range(m):
            g = ((pk[k] >> 32) - id_lo) if dense else group[pa[k]]
            gstart[g + 1] += 1
        for g in range(n_groups):
            gstart[g + 1] += gstart[g]
        for k in range(m):
            g = ((pk[k] >> 32) - id_lo) if dense else group[pa[k]]
            j = gstart[g]
            ea[j] = pa[k]
            eb[j] = pb[k]
            ek[j] = pk[k]
            gstart[g] = j + 1
        free(pa)
        free(pb)
        free(pk)
        # gstart[g] is now the end of group g; sort each group by (key, local index of
        # particle 1) and keep the first row of each key
        nrow = 0
        s = 0
        for g in range(n_groups):
            e = gstart[g]
            for i in range(s + 1, e):          # insertion sort: groups are short
                ka, a, b = ek[i], ea[i], eb[i]
                j = i - 1
                while j >= s and _less_entry(ka, a, ek[j], ea[j]):
                    ek[j + 1] = ek[j]
                    ea[j + 1] = ea[j]
                    eb[j + 1] = eb[j]
                    j -= 1
                ek[j + 1] = ka
                ea[j + 1] = a
                eb[j + 1] = b
            for i in range(s, e):
                if i > s and ek[i] == ek[i - 1]:
                    continue
                ek[nrow] = ek[i]
                ea[nrow] = ea[i]
                eb[nrow] = eb[i]
                nrow += 1
            s = e
    return ea_arr[:nrow].copy(), eb_arr[:nrow].copy(), ek_arr[:nrow].copy()


cdef inline void _shifted(const double[:, ::1] pos, const int[:, ::1] image,
                          const double[:, ::1] cell, Py_ssize_t i, double* x) noexcept nogil:
    """x = pos[i] + image[i] L (the same operations wherever it is needed)."""
    cdef int d
    for d in range(3):
        x[d] = pos[i, d] + (image[i, 0] * cell[d, 0] + image[i, 1] * cell[d, 1]
                            + image[i, 2] * cell[d, 2])


cdef int _grow_rows(int** pa, int** pb, long** pk, Py_ssize_t* cap) noexcept nogil:
    """Double the row buffers; -1 when out of memory (the old buffers stay valid)."""
    cdef int* t
    cdef long* tk
    t = <int*>realloc(pa[0], 2 * cap[0] * sizeof(int))
    if t == NULL:
        return -1
    pa[0] = t
    t = <int*>realloc(pb[0], 2 * cap[0] * sizeof(int))
    if t == NULL:
        return -1
    pb[0] = t
    tk = <long*>realloc(pk[0], 2 * cap[0] * sizeof(long))
    if tk == NULL:
        return -1
    pk[0] = tk
    cap[0] *= 2
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
cdef _pair_rows(const double[:, ::1] pos, const int[:, ::1] image, const double[:, ::1] cell,
                const double[::1] radius, const long[::1] ids, int n_own, double skin,
                const long[::1] group, long id_lo, long n_groups):
    global NT
    cdef Py_ssize_t n = pos.shape[0], i, j, k, e, f, s, m, cap, nrow, fs, fe, e0, e1
    cdef int d, a, b, st, dxy, nst
    cdef long c, cx, cy, cz, g, ka, col, zlo, zhi, ncell, ox, oy
    cdef double h, inv_h, reach, reach2, big, dx, dy, dz, rr, xj, yj, zj, rj, gx2, w
    cdef double lo[3]
    cdef double hi[3]
    cdef double x[3]
    cdef double gxs[5]
    cdef double gys[5]
    cdef long nc[3]
    cdef int sx[12]
    cdef int sy[12]
    cdef bint dense = group.shape[0] == 0, gj, oom = False
    cdef double rmax = 0.0
    _t0 = _pc()
    # the bounding box of the shifted positions and the pair range
    for d in range(3):
        lo[d] = 1e308
        hi[d] = -1e308
    with nogil:
        for i in range(n):
            if radius[i] > rmax:
                rmax = radius[i]
            _shifted(pos, image, cell, i, x)
            for d in range(3):
                if x[d] < lo[d]:
                    lo[d] = x[d]
                if x[d] > hi[d]:
                    hi[d] = x[d]
    PH[0] += _pc() - _t0; _t0 = _pc()
    # cells of edge half the pair range (LAMMPS's binsize), a little wider than the
    # range so that rounding never hides a pair; grown while there are more than
    # 8 n cells (a sparse cloud); the stencil reaches k = ceil(reach / h) <= 2 cells
    big = 0.0
    for d in range(3):
        big = max(big, fabs(lo[d]), fabs(hi[d]))
    reach = (2.0 * rmax + skin) * (1.0 + 1e-9) + big * 1e-13
    h = 0.5 * reach
    while True:
        for d in range(3):
            nc[d] = <long>((hi[d] - lo[d]) / h) + 1
        if nc[0] * nc[1] * nc[2] <= 8 * n + 1024:
            break
        h *= 1.26
    inv_h = 1.0 / h
    cdef int kk = <int>ceil(reach * inv_h)
    if kk > 2:
        kk = 2
    reach2 = reach * reach
    ncell = nc[0] * nc[1] * nc[2]
    # the forward half of the columns (dx, dy) within kk cells
    nst = 0
    for ox in range(-kk, kk + 1):
        for oy in range(-kk, kk + 1):
            if ox > 0 or (ox == 0 and oy > 0):
                sx[nst] = <int>ox
                sy[nst] = <int>oy
                nst += 1
    # counting sort by cell (x-major, z fastest: the cells of a column are contiguous);
    # copies in cell order, so that the candidate loop streams through memory
    cell_arr = np.empty(n, dtype=np.int32)
    start_arr = np.zeros(ncell + 1, dtype=np.int64)
    cs_arr = np.empty((n, 4))
    cid_arr = np.empty(n, dtype=np.int64)
    mem_arr = np.empty(n, dtype=np.int32)
    cdef int[::1] cellof = cell_arr
    cdef long[::1] start = start_arr
    cdef double[:, ::1] cs = cs_arr
    cdef long[::1] cid = cid_arr
    cdef int[::1] members = mem_arr
    with nogil:
        for i in range(n):
            _shifted(pos, image, cell, i, x)
            c = cell_index(x[0], x[1], x[2], lo, inv_h, nc)
            cellof[i] = <int>c
            start[c + 1] += 1
        for c in range(ncell):
            start[c + 1] += start[c]
        for i in range(n):
            c = cellof[i]
            e = start[c]
            start[c] = e + 1
            _shifted(pos, image, cell, i, x)
            cs[e, 0] = x[0]
            cs[e, 1] = x[1]
            cs[e, 2] = x[2]
            cs[e, 3] = radius[i]
            cid[e] = ids[i]
            members[e] = <int>i
        for c in range(ncell, 0, -1):
            start[c] = start[c - 1]
        start[0] = 0
    PH[1] += _pc() - _t0; _t0 = _pc()
    cap = 4 * n + 1024
    cdef int* pa = <int*>malloc(cap * sizeof(int))
    cdef int* pb = <int*>malloc(cap * sizeof(int))
    cdef long* pk = <long*>malloc(cap * sizeof(long))
    if pa == NULL or pb == NULL or pk == NULL:
        free(pa)
        free(pb)
        free(pk)
        raise MemoryError()
    m = 0
    with nogil:
        for cx in range(nc[0]):
            for cy in range(nc[1]):
                col = (cx * nc[1] + cy) * nc[2]
                if start[col] == start[col + nc[2]]:
                    continue
                for cz in range(nc[2]):
                    e0 = start[col + cz]
                    e1 = start[col + cz + 1]
                    if e0 == e1:
                        continue
                    zlo = cz - kk if cz >= kk else 0
                    zhi = cz + kk if cz + kk < nc[2] else nc[2] - 1
                    for e in range(e0, e1):
                        xj, yj, zj, rj = cs[e, 0], cs[e, 1], cs[e, 2], cs[e, 3]
                        gj = members[e] >= n_own
                        # squared distances in x and y to the columns kk cells around
                        for dxy in range(-kk, kk + 1):
                            if dxy < 0:
                                gxs[dxy + 2] = xj - (lo[0] + (cx + dxy + 1) * h)
                                gys[dxy + 2] = yj - (lo[1] + (cy + dxy + 1) * h)
                            elif dxy > 0:
                                gxs[dxy + 2] = (lo[0] + (cx + dxy) * h) - xj
                                gys[dxy + 2] = (lo[1] + (cy + dxy) * h) - yj
                            else:
                                gxs[2] = 0.0
                                gys[2] = 0.0
                        for st in range(nst + 1):
                            if st == nst:              # this column, rows after e
                                fs = e + 1
                                fe = start[col + zhi + 1]
                            else:
                                ox = cx + sx[st]
                                oy = cy + sy[st]
                                if ox >= nc[0] or oy < 0 or oy >= nc[1]:
                                    continue
                                gx2 = (gxs[sx[st] + 2] * gxs[sx[st] + 2]
                                       + gys[sy[st] + 2] * gys[sy[st] + 2])
                                if gx2 >= reach2:
                                    continue
                                g = (ox * nc[1] + oy) * nc[2]
                                if NARROW:
                                    w = sqrt(reach2 - gx2)
                                    fs = start[g + cell_coord(zj - w, lo[2], inv_h, nc[2])]
                                    fe = start[g + cell_coord(zj + w, lo[2], inv_h, nc[2]) + 1]
                                else:
                                    fs = start[g + zlo]
                                    fe = start[g + zhi + 1]
                            for f in range(fs, fe):
                                if gj and members[f] >= n_own:
                                    continue
                                if cid[f] == cid[e]:
                                    continue
                                NT += 1
                                dx = cs[f, 0] - xj
                                dy = cs[f, 1] - yj
                                dz = cs[f, 2] - zj
                                rr = rj + cs[f, 3] + skin
                                if dx * dx + dy * dy + dz * dz < rr * rr:
                                    if m == cap and not oom:
                                        oom = _grow_rows(&pa, &pb, &pk, &cap) < 0
                                    if oom:
                                        continue
                                    if cid[e] < cid[f]:
                                        pa[m] = members[e]
                                        pb[m] = members[f]
                                        pk[m] = (cid[e] << 32) | cid[f]
                                    else:
                                        pa[m] = members[f]
                                        pb[m] = members[e]
                                        pk[m] = (cid[f] << 32) | cid[e]
                                    m += 1
    if oom:
        free(pa)
        free(pb)
        free(pk)
        raise MemoryError()
    PH[2] += _pc() - _t0; _t0 = _pc()
    out = _sorted_rows(pa, pb, pk, m, group, id_lo, n_groups, dense)
    PH[3] += _pc() - _t0
    PH[4] += m
    return out


@cython.boundscheck(False)
@cython.wraparound(False)
cdef _sorted_rows(int* pa, int* pb, long* pk, Py_ssize_t m, const long[::1] group, long id_lo,
                  long n_groups, bint dense):
    """The rows (pa, pb, pk) (freed here) grouped by particle 1's id (a counting sort,
    stable), each group sorted by (key, local index of particle 1), the first row of
    each key kept."""
    cdef Py_ssize_t i, j, s, e, k, nrow
    cdef long g, ka
    cdef int a, b
    gstart_arr = np.zeros(n_groups + 1, dtype=np.int64)
    cdef long[::1] gstart = gstart_arr
    ea_arr = np.empty(m, dtype=np.int32)
    eb_arr = np.empty(m, dtype=np.int32)
    ek_arr = np.empty(m, dtype=np.int64)
    cdef int[::1] ea = ea_arr, eb = eb_arr
    cdef long[::1] ek = ek_arr
    with nogil:
        for k in range(m):
            g = ((pk[k] >> 32) - id_lo) if dense else group[pa[k]]
            gstart[g + 1] += 1
        for g in range(n_groups):
            gstart[g + 1] += gstart[g]
        for k in range(m):
            g = ((pk[k] >> 32) - id_lo) if dense else group[pa[k]]
            j = gstart[g]
            ea[j] = pa[k]
            eb[j] = pb[k]
            ek[j] = pk[k]
            gstart[g] = j + 1
        free(pa)
        free(pb)
        free(pk)
        nrow = 0
        s = 0
        for g in range(n_groups):
            e = gstart[g]
            for i in range(s + 1, e):          # insertion sort: groups are short
                ka, a, b = ek[i], ea[i], eb[i]
                j = i - 1
                while j >= s and _less_entry(ka, a, ek[j], ea[j]):
                    ek[j + 1] = ek[j]
                    ea[j + 1] = ea[j]
                    eb[j + 1] = eb[j]
                    j -= 1
                ek[j + 1] = ka
                ea[j + 1] = a
                eb[j + 1] = b
            for i in range(s, e):
                if i > s and ek[i] == ek[i - 1]:
                    continue
                ek[nrow] = ek[i]
                ea[nrow] = ea[i]
                eb[nrow] = eb[i]
                nrow += 1
            s = e
    return ea_arr[:nrow].copy(), eb_arr[:nrow].copy(), ek_arr[:nrow].copy()
