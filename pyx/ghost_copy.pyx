# cython: language_level=3
"""The per-step ghost refresh (pdem/parallel/ghosts.py) without temporaries: a periodic
image of this rank takes its source row's values; rows for another rank are packed into
one message and unpacked from one."""
cimport cython
from prefetch cimport prefetch

cdef enum:
    AHEAD = 16          # rows: the sources are scattered and cold after the contact phase


cdef inline void copy_row(double* dst, const double* src, Py_ssize_t w) noexcept nogil:
    """A row of w doubles (3: x, v, w; 4: q) without a call to memcpy."""
    cdef Py_ssize_t c
    if w == 3:
        dst[0] = src[0]; dst[1] = src[1]; dst[2] = src[2]
    else:
        for c in range(w):
            dst[c] = src[c]


@cython.boundscheck(False)
@cython.wraparound(False)
def gather_rows(double[:, ::1] out, Py_ssize_t col, const double[:, ::1] a,
                const long[::1] src, const long[::1] dst=None):
    """out[dst[k], col:col + width of a] = a[src[k]] for k in order (out may be a: a
    periodic image, whose source may be an earlier copy); without dst, row k of out (a
    message to another rank)."""
    cdef Py_ssize_t k, n = src.shape[0], w = a.shape[1]
    cdef bint rows = dst is not None
    if n == 0 or w == 0:
        return
    with nogil:
        for k in range(n):
            if k + AHEAD < n:
                prefetch(&a[src[k + AHEAD], 0])
            if rows:
                copy_row(&out[dst[k], col], &a[src[k], 0], w)
            else:
                copy_row(&out[k, col], &a[src[k], 0], w)


@cython.boundscheck(False)
@cython.wraparound(False)
def unpack_rows(double[:, ::1] a, Py_ssize_t first, const double[:, ::1] buf, Py_ssize_t col):
    """a[first + k] = buf[k, col:col + width of a]: a message from another rank."""
    cdef Py_ssize_t k, n = buf.shape[0], w = a.shape[1]
    if n == 0 or w == 0:
        return
    with nogil:
        for k in range(n):
            copy_row(&a[first + k, 0], &buf[k, col], w)
