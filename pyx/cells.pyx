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
from cellgrid cimport cell_index, cell_sort, grid_size, sort_run_by_id
import numpy as np


@cython.boundscheck(False)
@cython.wraparound(False)
def build_pairs(const double[:, ::1] pos, const int[:, ::1] image, const double[::1] box_len,
                const double[::1] radius, const long[::1] ids, int n_own, double skin,
                const long[::1] order, int n_threads):
    """Return (i1, i2) int32 local indices of the candidate pairs, sorted by (id1, id2)."""
    cdef Py_ssize_t n = pos.shape[0], i, j, s, e, t
    cdef int d
    cdef double rmax = 0.0, cell, inv_cell
    cdef double lo[3]
    cdef double hi[3]
    cdef long nc[3]
    if n == 0:
        return np.empty(0, np.int32), np.empty(0, np.int32)
    sp_arr = np.empty((n, 3))
    cdef double[:, ::1] sp = sp_arr
    for i in range(n):
        if radius[i] > rmax:
            rmax = radius[i]
        for d in range(3):
            sp[i, d] = pos[i, d] + image[i, d] * box_len[d]
    cell = 2.0 * rmax + skin
    for d in range(3):
        lo[d] = sp_arr[:, d].min()
        hi[d] = sp_arr[:, d].max()
    inv_cell = grid_size(lo, hi, cell, n, nc)
    cdef long ncell = nc[0] * nc[1] * nc[2]
    cell_of_arr = np.empty(n, dtype=np.int64)
    cdef long[::1] cell_of = cell_of_arr
    for i in range(n):
        cell_of[i] = cell_index(sp[i, 0], sp[i, 1], sp[i, 2], lo, inv_cell, nc)
    # counting sort of particles by cell
    start_arr = np.zeros(ncell + 1, dtype=np.int64)
    cdef long[::1] start = start_arr
    members_arr = np.empty(n, dtype=np.int32)
    cdef int[::1] members = members_arr
    cell_sort(cell_of, start, members)
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
