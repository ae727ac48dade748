# Header-only uniform cell grid helpers shared by the neighbor search (cells.pyx), the
# facet candidates (facets.pyx) and the NSCD contact detection (nscd.pyx): the cell
# coordinate of a point, clamped to the grid, and its cell's flat index; the grid size (cells grown until there
# are at most about 2 per item, so a sparse cloud never allocates a huge grid); the
# counting sort of items by cell (CSR:
# the items of cell c are members[start[c]:start[c + 1]], in increasing item order);
# and the sort of one particle's partner run by global id (deterministic lists).
from libc.math cimport floor


cdef inline long cell_coord(double x, double origin, double inv_cell, long n) noexcept nogil:
    cdef long c = <long>floor((x - origin) * inv_cell)
    if c < 0:
        return 0
    if c >= n:
        return n - 1
    return c


cdef inline long cell_index(double x, double y, double z, const double* lo, double inv_cell,
                            const long* nc) noexcept nogil:
    """Flat index (x-major) of the cell holding the point (x, y, z), clamped to the grid."""
    return (cell_coord(x, lo[0], inv_cell, nc[0]) * nc[1]
            + cell_coord(y, lo[1], inv_cell, nc[1])) * nc[2] + cell_coord(z, lo[2], inv_cell, nc[2])


cdef inline double grid_size(const double* lo, const double* hi, double cell, long n,
                             long* nc) noexcept nogil:
    """Cells per axis nc[0..2] over the box lo..hi with cells of at least `cell` (a
    non-positive cell means 1), grown by 1.26 until nc[0] nc[1] nc[2] <= 2 n + 27.
    Returns 1 / the cell size."""
    cdef double inv_cell
    cdef int d
    if not cell > 0.0:
        cell = 1.0
    while True:
        inv_cell = 1.0 / cell
        for d in range(3):
            nc[d] = <long>((hi[d] - lo[d]) * inv_cell) + 1
        if nc[0] * nc[1] * nc[2] <= 2 * n + 27:
            return inv_cell
        cell *= 1.26


cdef inline void cell_sort(const long[::1] cell_of, long[::1] start,
                           int[::1] members) noexcept nogil:
    """start (ncell + 1, zeros on entry) and members (len(cell_of)) filled. start is
    used as the fill cursor, then shifted back by one cell."""
    cdef Py_ssize_t i, n = cell_of.shape[0], ncell = start.shape[0] - 1, c
    for i in range(n):
        start[cell_of[i] + 1] += 1
    for c in range(ncell):
        start[c + 1] += start[c]
    for i in range(n):
        members[start[cell_of[i]]] = <int>i
        start[cell_of[i]] += 1
    for c in range(ncell, 0, -1):
        start[c] = start[c - 1]
    start[0] = 0


cdef inline void sort_run_by_id(int[::1] a, const long[::1] ids, long s, long e) noexcept nogil:
    """Insertion sort of a[s:e] (local indices) by ids[a[k]]: partner runs are short."""
    cdef long i, j
    cdef int v
    for i in range(s + 1, e):
        v = a[i]
        j = i - 1
        while j >= s and ids[a[j]] > ids[v]:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v
