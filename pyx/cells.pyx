# cython: language_level=3
"""Neighbor search: cell list + Verlet list of candidate pairs (linear in particle count).

Particles (owned and ghosts) are binned by their shifted position x + image * L
into cubic cells of edge >= the largest pair range (2 r_max + skin). A pair
(a, b) is a candidate when id_a < id_b, at least one of them is owned, and
|x_b - x_a| < r_a + r_b + skin ("alert distance"). build_pairs' output is sorted by
(id_a, id_b): particles are visited in ascending id and each particle's partners
are sorted by id; two passes (count, fill) make it parallel and deterministic.
build_pair_rows (the contact kinds' list) sorts by a per-particle order key instead.
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


# ---------------------------------------------------------------- rows in order-key order
from libc.stdlib cimport malloc, qsort, realloc, free
from libc.math cimport ceil, fabs, floor
from libc.string cimport memset


cdef inline bint _less_entry(long ka, int pa, long kb, int pb) noexcept nogil:
    return ka < kb or (ka == kb and pa < pb)


@cython.boundscheck(False)
@cython.wraparound(False)
def build_pair_rows(const double[:, ::1] pos, const int[:, ::1] image,
                    const double[:, ::1] cell, const double[::1] radius, const long[::1] ids,
                    const long[::1] order_key, int n_own, double skin):
    """The candidate pairs of build_pairs as contact rows (i1, i2, key), key = id1 << 32
    | id2 (particle 1 the lower id), each key once, sorted by (min, max) of the two
    particles' order_key (one value per particle, equal for copies of a particle; with
    order_key = ids: sorted by key). Where periodic images (or any copies of one
    particle) make a pair appear more than once, the row whose particle 1 is the copy
    with the lowest local index is kept. One pass over a cell list in cell order, each
    unordered pair visited once (half stencil; the distance test is symmetric in a and
    b); rows are then grouped by the dense rank of their lower order_key (a counting
    sort; the ranks by a bucket sort of the keys) and each group sorted by (rank of the
    other particle, local index of particle 1). The result does not depend on the order
    in which pairs are found."""
    cdef Py_ssize_t n = pos.shape[0]
    if n == 0:
        return np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0, np.int64)
    rank_arr = np.empty(n, np.int64)
    n_groups = _dense_rank(order_key, rank_arr)
    return _pair_rows(pos, image, cell, radius, ids, n_own, skin, rank_arr, n_groups)


cdef struct KeyIndex:
    long key
    int i

cdef int _key_cmp(const void* a, const void* b) noexcept nogil:
    cdef long ka = (<const KeyIndex*>a).key, kb = (<const KeyIndex*>b).key
    return (ka > kb) - (ka < kb)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef long _dense_rank(const long[::1] key, long[::1] rank) except -1:
    """rank[i] = the number of distinct keys below key[i] (keys >= 0); returns the
    number of distinct keys. A counting sort into at most 2 n + 64 buckets of the
    leading bits of key - min, each bucket sorted (insertion, or qsort when large)."""
    cdef Py_ssize_t n = key.shape[0], i, j, s, e
    cdef long lo = key[0], hi = key[0], nb, b, r = -1
    cdef int shift = 0
    cdef long* start = NULL
    cdef KeyIndex* item = NULL
    cdef KeyIndex t
    for i in range(n):
        lo = min(lo, key[i])
        hi = max(hi, key[i])
    while ((hi - lo) >> shift) + 1 > 2 * n + 64:
        shift += 1
    nb = ((hi - lo) >> shift) + 1
    try:
        start = <long*>malloc((nb + 1) * sizeof(long))
        item = <KeyIndex*>malloc(n * sizeof(KeyIndex))
        if start == NULL or item == NULL:
            raise MemoryError()
        with nogil:
            memset(start, 0, (nb + 1) * sizeof(long))
            for i in range(n):
                start[((key[i] - lo) >> shift) + 1] += 1
            for b in range(nb):
                start[b + 1] += start[b]
            for i in range(n):
                b = (key[i] - lo) >> shift
                item[start[b]].key = key[i]
                item[start[b]].i = <int>i
                start[b] += 1
            s = 0                                   # start[b]: now the end of bucket b
            for b in range(nb):
                e = start[b]
                if e - s > 32:
                    qsort(&item[s], e - s, sizeof(KeyIndex), _key_cmp)
                else:
                    for i in range(s + 1, e):
                        t = item[i]
                        j = i - 1
                        while j >= s and item[j].key > t.key:
                            item[j + 1] = item[j]
                            j -= 1
                        item[j + 1] = t
                s = e
            for i in range(n):
                if i == 0 or item[i].key != item[i - 1].key:
                    r += 1
                rank[item[i].i] = r
    finally:
        free(start)
        free(item)
    return r + 1


cdef inline void _shifted(const double[:, ::1] pos, const int[:, ::1] image,
                          const double[:, ::1] cell, Py_ssize_t i, double* x) noexcept nogil:
    """x = pos[i] + image[i] L (the same operations wherever it is needed)."""
    cdef int d
    for d in range(3):
        x[d] = pos[i, d] + (image[i, 0] * cell[d, 0] + image[i, 1] * cell[d, 1]
                            + image[i, 2] * cell[d, 2])


cdef inline long _cell3(const double* x, const double* lo, const double* inv,
                        const long* nc) noexcept nogil:
    """Flat index (x-major, z fastest) of the cell of x, cells of 1 / inv[d] per axis."""
    return ((cell_coord(x[0], lo[0], inv[0], nc[0]) * nc[1]
             + cell_coord(x[1], lo[1], inv[1], nc[1])) * nc[2]
            + cell_coord(x[2], lo[2], inv[2], nc[2]))


cdef struct Sphere:             # a particle in cell order: shifted position, radius
    double x, y, z, r

cdef struct Row:                # a candidate row: the ranks of the lower (its group) and
    int g, o                    # higher order key, the local indices of particles 1 and
    int a, b                    # 2 (1: the lower id)

cdef Row* _more_rows(Row* rows, Py_ssize_t* cap) noexcept nogil:
    """The row buffer grown by half, its rows kept (NULL: out of memory, `rows` still
    valid)."""
    cdef Py_ssize_t more = cap[0] + cap[0] // 2 + 1024
    cdef void* p = realloc(rows, more * sizeof(Row))
    if p != NULL:
        cap[0] = more
    return <Row*>p


@cython.boundscheck(False)
@cython.wraparound(False)
cdef _pair_rows(const double[:, ::1] pos, const int[:, ::1] image, const double[:, ::1] cell,
                const double[::1] radius, const long[::1] ids, int n_own, double skin,
                const long[::1] rank, long n_groups):
    cdef Py_ssize_t n = pos.shape[0], i, m, cap
    cdef int d
    cdef long ncell, kz
    cdef double reach, big
    cdef double lo[3]
    cdef double hi[3]
    cdef double x[3]
    cdef double edge[3]
    cdef double inv[3]
    cdef long nc[3]
    cdef double rmax = 0.0
    cdef Sphere* sph = NULL
    cdef long* cid = NULL
    cdef int* members = NULL
    cdef int* start = NULL
    cdef int* cellof = NULL
    cdef long* gstart = NULL
    cdef Row* rows = NULL
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
    # cells of the pair range in x and y and of half of it in z, the range taken a
    # little longer so that rounding never hides a pair, grown while there are more
    # than 8 n cells (a sparse cloud): a pair is at most 1 column apart in x and y and
    # kz cells in z, and the cells of a column are contiguous (z fastest), so that the
    # candidates of a particle in one column are one run of the cell list
    big = 0.0
    for d in range(3):
        big = max(big, fabs(lo[d]), fabs(hi[d]))
    reach = (2.0 * rmax + skin) * (1.0 + 1e-9) + big * 1e-13
    if not reach > 0.0:                         # no pair possible: any cells
        reach = 1.0
    edge[0] = edge[1] = reach
    edge[2] = 0.5 * reach
    while (floor((hi[0] - lo[0]) / edge[0]) + 1.0) * (floor((hi[1] - lo[1]) / edge[1]) + 1.0) \
            * (floor((hi[2] - lo[2]) / edge[2]) + 1.0) > 8.0 * n + 1024.0:
        for d in range(3):
            edge[d] *= 1.26
    for d in range(3):
        nc[d] = <long>((hi[d] - lo[d]) / edge[d]) + 1
    for d in range(3):
        inv[d] = 1.0 / edge[d]
    kz = <long>ceil(reach * inv[2])             # 2, or 1 once the cells grew
    ncell = nc[0] * nc[1] * nc[2]
    cap = 3 * n + 1024                          # rows: grown if needed
    try:
        sph = <Sphere*>malloc(n * sizeof(Sphere))
        cid = <long*>malloc(n * sizeof(long))
        members = <int*>malloc(n * sizeof(int))
        cellof = <int*>malloc(n * sizeof(int))
        start = <int*>malloc((ncell + 1) * sizeof(int))
        gstart = <long*>malloc((n_groups + 1) * sizeof(long))
        rows = <Row*>malloc(cap * sizeof(Row))
        if (sph == NULL or cid == NULL or members == NULL or cellof == NULL or start == NULL
                or gstart == NULL or rows == NULL):
            raise MemoryError()
        memset(gstart, 0, (n_groups + 1) * sizeof(long))
        with nogil:
            m = _candidates(pos, image, cell, radius, ids, n_own, skin, rank,
                            lo, inv, nc, kz, sph, cid, members, cellof, start, gstart, &rows,
                            &cap)
        if m < 0:
            raise MemoryError()
        free(sph)                               # the cell list goes before the sorted
        free(cid)                               # rows are made
        free(members)
        free(cellof)
        free(start)
        sph, cid, members, cellof, start = NULL, NULL, NULL, NULL, NULL
        return _sorted_rows(rows, m, gstart, n_groups, ids)
    finally:
        free(sph)
        free(cid)
        free(members)
        free(cellof)
        free(start)
        free(gstart)
        free(rows)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef Py_ssize_t _candidates(const double[:, ::1] pos, const int[:, ::1] image,
                            const double[:, ::1] cell, const double[::1] radius,
                            const long[::1] ids, int n_own, double skin,
                            const long[::1] rank, const double* lo,
                            const double* inv, const long* nc, long kz, Sphere* sph,
                            long* cid, int* members, int* cellof, int* start, long* gstart,
                            Row** rows_out, Py_ssize_t* cap) noexcept nogil:
    """The cell list (counting sort by cell, stable; the particles copied in cell order,
    so that the candidate loop streams through memory) and the candidate rows, each pair
    once, in *rows_out (grown as needed); gstart[g + 1] counts the rows of group g (the
    lower rank of the two particles).
    Returns the number of rows, -1 when out of memory."""
    cdef Py_ssize_t n = pos.shape[0], ncell = nc[0] * nc[1] * nc[2], i, e, f, m = 0
    cdef Py_ssize_t fs, fe, e0, e1
    cdef long c, cx, cy, cz, g, other, col, zlo, zhi, ox, oy, ide
    cdef int st
    cdef int sx[4]
    cdef int sy[4]
    cdef double x[3]
    cdef double dx, dy, dz, rr
    cdef bint ghost
    cdef Sphere p
    cdef Row* rows = rows_out[0]
    cdef Row* more
    sx[0], sy[0] = 0, 1                         # the forward columns: (0, 1), (1, -1..1)
    for st in range(1, 4):
        sx[st], sy[st] = 1, st - 2
    # counting sort by cell, stable; the particles copied in cell order, so that the
    # candidate loop streams through memory
    memset(start, 0, (ncell + 1) * sizeof(int))
    for i in range(n):
        _shifted(pos, image, cell, i, x)
        c = _cell3(x, lo, inv, nc)
        cellof[i] = <int>c
        start[c] += 1
    for c in range(1, ncell):
        start[c] += start[c - 1]            # the end of each cell
    start[ncell] = <int>n
    for i in range(n - 1, -1, -1):          # backwards: each cell's start at the end
        c = cellof[i]
        start[c] -= 1
        e = start[c]
        _shifted(pos, image, cell, i, x)
        sph[e].x = x[0]
        sph[e].y = x[1]
        sph[e].z = x[2]
        sph[e].r = radius[i]
        cid[e] = ids[i]
        members[e] = <int>i
    # each pair once: from particle e to the later particles of its column and to
    # the particles of the four forward columns, kz cells up and down
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
                zlo = cz - kz if cz >= kz else 0
                zhi = cz + kz if cz + kz < nc[2] else nc[2] - 1
                for e in range(e0, e1):
                    p = sph[e]
                    ide = cid[e]
                    ghost = members[e] >= n_own
                    for st in range(5):
                        if st == 4:                 # this column, after e
                            fs = e + 1
                            fe = start[col + zhi + 1]
                        else:
                            ox = cx + sx[st]
                            oy = cy + sy[st]
                            if ox >= nc[0] or oy < 0 or oy >= nc[1]:
                                continue
                            g = (ox * nc[1] + oy) * nc[2]
                            fs = start[g + zlo]
                            fe = start[g + zhi + 1]
                        for f in range(fs, fe):
                            if ghost and members[f] >= n_own:
                                continue
                            if cid[f] == ide:
                                continue
                            dx = sph[f].x - p.x
                            dy = sph[f].y - p.y
                            dz = sph[f].z - p.z
                            rr = p.r + sph[f].r + skin
                            if dx * dx + dy * dy + dz * dz < rr * rr:
                                if m == cap[0]:
                                    more = _more_rows(rows, cap)
                                    if more == NULL:
                                        rows_out[0] = rows
                                        return -1
                                    rows = more
                                if ide < cid[f]:
                                    rows[m].a = members[e]
                                    rows[m].b = members[f]
                                else:
                                    rows[m].a = members[f]
                                    rows[m].b = members[e]
                                g = rank[rows[m].a]
                                other = rank[rows[m].b]
                                if other < g:
                                    g, other = other, g
                                rows[m].g = <int>g
                                rows[m].o = <int>other
                                gstart[g + 1] += 1
                                m += 1
    rows_out[0] = rows
    return m


@cython.boundscheck(False)
@cython.wraparound(False)
cdef _sorted_rows(Row* rows, Py_ssize_t m, long* gstart, long n_groups, const long[::1] ids):
    """The rows grouped by their lower rank (a stable counting sort; gstart[g + 1]: the
    rows of group g), each group sorted by (the other rank, local index of particle 1),
    the first row of each pair kept: (i1, i2, key = id1 << 32 | id2)."""
    cdef Py_ssize_t nrow = 0
    cdef Row* grouped = <Row*>malloc(max(m, 1) * sizeof(Row))
    cdef int[::1] i1
    cdef int[::1] i2
    cdef long[::1] key
    if grouped == NULL:
        raise MemoryError()
    try:
        i1_arr = np.empty(m, dtype=np.int32)
        i2_arr = np.empty(m, dtype=np.int32)
        key_arr = np.empty(m, dtype=np.int64)
        i1, i2, key = i1_arr, i2_arr, key_arr
        with nogil:
            _group_rows(rows, grouped, m, gstart, n_groups, ids, i1, i2, key, &nrow)
    finally:
        free(grouped)
    return i1_arr[:nrow], i2_arr[:nrow], key_arr[:nrow]


cdef void _group_rows(Row* rows, Row* grouped, Py_ssize_t m, long* gstart,
                      long n_groups, const long[::1] ids,
                      int[::1] i1, int[::1] i2, long[::1] key,
                      Py_ssize_t* n_out) noexcept nogil:
    """_sorted_rows' loops: grouped holds m rows; *n_out the rows kept."""
    cdef Py_ssize_t i, j, s, e, k, nrow
    cdef long g
    cdef Row r
    for g in range(n_groups):
        gstart[g + 1] += gstart[g]
    for k in range(m):
        g = rows[k].g
        grouped[gstart[g]] = rows[k]
        gstart[g] += 1
    # gstart[g] is now the end of group g; sort each group by (other rank, local index
    # of particle 1) and keep the first row of each pair (copies share a rank)
    nrow = 0
    s = 0
    for g in range(n_groups):
        e = gstart[g]
        for i in range(s + 1, e):          # insertion sort: groups are short
            r = grouped[i]
            j = i - 1
            while j >= s and _less_entry(r.o, r.a, grouped[j].o, grouped[j].a):
                grouped[j + 1] = grouped[j]
                j -= 1
            grouped[j + 1] = r
        for i in range(s, e):
            if i > s and grouped[i].o == grouped[i - 1].o:
                continue
            key[nrow] = (ids[grouped[i].a] << 32) | ids[grouped[i].b]
            i1[nrow] = grouped[i].a
            i2[nrow] = grouped[i].b
            nrow += 1
        s = e
    n_out[0] = nrow
