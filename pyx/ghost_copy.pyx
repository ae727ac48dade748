# cython: language_level=3
"""The per-step ghost refresh (pdem/parallel/ghosts.py) without temporaries: a periodic
image of this rank takes its source row's values; rows for another rank are packed into
one message and unpacked from one."""
from prefetch cimport prefetch
from arrays cimport data, rows, width, F64, I64
cimport numpy as cnp

cnp.import_array()         # numpy's C API, for arrays.pxd

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


def gather_rows(out, Py_ssize_t col, a, src, dst=None):
    """out[dst[k], col:col + width of a] = a[src[k]] for k in order (out may be a: a
    periodic image, whose source may be an earlier copy); without dst, row k of out (a
    message to another rank). out and a: float64 (n, w) arrays, src and dst int64
    (arrays.pxd data; the indices in src and dst are not checked)."""
    cdef double* o = <double*>data(out, "out", F64, 2, -1, True)
    cdef const double* x = <const double*>data(a, "a", F64, 2, -1, False)
    cdef const long* s = <const long*>data(src, "src", I64, 1, 0, False)
    cdef const long* d = NULL if dst is None else <const long*>data(dst, "dst", I64, 1, 0, False)
    cdef Py_ssize_t k, n = rows(src), w = width(a), wo = width(out)
    if n == 0 or w == 0:
        return
    if col < 0 or col + w > wo or (d != NULL and rows(dst) < n):
        raise ValueError("gather_rows: columns %d + %d of %d, %d sources, %d targets"
                         % (col, w, wo, n, rows(dst) if d != NULL else n))
    with nogil:
        for k in range(n):
            if k + AHEAD < n:
                prefetch(x + s[k + AHEAD] * w)
            if d != NULL:
                copy_row(o + d[k] * wo + col, x + s[k] * w, w)
            else:
                copy_row(o + k * wo + col, x + s[k] * w, w)


def unpack_rows(a, Py_ssize_t first, buf, Py_ssize_t col):
    """a[first + k] = buf[k, col:col + width of a]: a message from another rank (float64
    (n, w) arrays, arrays.pxd data)."""
    cdef double* x = <double*>data(a, "a", F64, 2, -1, True)
    cdef const double* b = <const double*>data(buf, "buf", F64, 2, -1, False)
    cdef Py_ssize_t k, n = rows(buf), w = width(a), wb = width(buf)
    if n == 0 or w == 0:
        return
    if first < 0 or first + n > rows(a) or col < 0 or col + w > wb:
        raise ValueError("unpack_rows: rows %d + %d of %d, columns %d + %d of %d"
                         % (first, n, rows(a), col, w, wb))
    with nogil:
        for k in range(n):
            copy_row(x + (first + k) * w, b + k * wb + col, w)
