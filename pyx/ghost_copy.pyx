# cython: language_level=3
"""The per-step copy of periodic images of this rank (pdem/parallel/ghosts.py): a ghost
row takes its source row's values, in one pass without temporaries."""
cimport cython
from libc.string cimport memcpy


@cython.boundscheck(False)
@cython.wraparound(False)
def copy_rows(double[:, ::1] a, const long[::1] sel, Py_ssize_t first):
    """a[first + k] = a[sel[k]] for every k (sources are rows before first)."""
    cdef Py_ssize_t k, n = sel.shape[0], w = a.shape[1]
    cdef size_t row = w * sizeof(double)
    if n == 0 or w == 0:
        return
    with nogil:
        for k in range(n):
            memcpy(&a[first + k, 0], &a[sel[k], 0], row)
