# cython: language_level=3
"""The per-step ghost refresh (pdem/parallel/ghosts.py) without temporaries, every
refreshed field of a row in one pass: a periodic image of this rank takes its source
row's values; rows for another rank are packed into one message and unpacked from one."""
from prefetch cimport prefetch
from arrays cimport data, rows, width, F64, I64
cimport numpy as cnp

cnp.import_array()         # numpy's C API, for arrays.pxd

cdef enum:
    AHEAD = 16          # rows: the sources are scattered and cold after the contact phase
    MAX_FIELDS = 8      # arrays refreshed together (pos, vel, angvel, orient; NSCD v, w)


cdef struct Fields:
    int n
    double* at[MAX_FIELDS]
    Py_ssize_t w[MAX_FIELDS]
    Py_ssize_t width            # of a message row: the fields' widths summed
    Py_ssize_t n_rows           # the fewest rows of any field


cdef int fields(Fields* F, object arrays) except -1:
    """The float64 (n, w) C-contiguous arrays of the sequence `arrays` into F."""
    cdef Py_ssize_t i = 0
    if len(arrays) > MAX_FIELDS:
        raise ValueError("arrays: at most %d fields, got %d" % (MAX_FIELDS, len(arrays)))
    F.n, F.width, F.n_rows = len(arrays), 0, -1
    for a in arrays:
        F.at[i] = <double*>data(a, "arrays", F64, 2, -1, True)
        F.w[i] = width(a)
        F.width += F.w[i]
        F.n_rows = rows(a) if F.n_rows < 0 else min(F.n_rows, rows(a))
        i += 1
    return 0


cdef inline void copy_row(double* dst, const double* src, Py_ssize_t w) noexcept nogil:
    """A row of w doubles (3: x, v, w; 4: q) without a call to memcpy."""
    cdef Py_ssize_t c
    if w == 3:
        dst[0] = src[0]; dst[1] = src[1]; dst[2] = src[2]
    else:
        for c in range(w):
            dst[c] = src[c]


def copy_images(arrays, src, dst):
    """a[dst[k]] = a[src[k]] for every array a of `arrays`, k in order (a later row may
    copy an earlier copy: a corner image of an edge image). src, dst: int64; the indices
    are not checked."""
    cdef Fields F
    fields(&F, arrays)
    cdef const long* s = <const long*>data(src, "src", I64, 1, 0, False)
    cdef const long* d = <const long*>data(dst, "dst", I64, 1, 0, False)
    cdef Py_ssize_t k, n = rows(src)
    cdef int f
    if rows(dst) < n:
        raise ValueError("copy_images: %d sources, %d targets" % (n, rows(dst)))
    with nogil:
        for k in range(n):
            if k + AHEAD < n:
                for f in range(F.n):
                    prefetch(F.at[f] + s[k + AHEAD] * F.w[f])
            for f in range(F.n):
                copy_row(F.at[f] + d[k] * F.w[f], F.at[f] + s[k] * F.w[f], F.w[f])


def pack(buf, arrays, src):
    """Row k of the message buf = the rows src[k] of `arrays`, side by side (buf: float64
    (len(src), their widths summed)); the indices are not checked."""
    cdef Fields F
    fields(&F, arrays)
    cdef double* o = <double*>data(buf, "buf", F64, 2, F.width, True)
    cdef const long* s = <const long*>data(src, "src", I64, 1, 0, False)
    cdef Py_ssize_t k, c, n = rows(src)
    cdef int f
    if rows(buf) != n:
        raise ValueError("pack: %d message rows for %d sources" % (rows(buf), n))
    with nogil:
        for k in range(n):
            if k + AHEAD < n:
                for f in range(F.n):
                    prefetch(F.at[f] + s[k + AHEAD] * F.w[f])
            c = 0
            for f in range(F.n):
                copy_row(o + k * F.width + c, F.at[f] + s[k] * F.w[f], F.w[f])
                c += F.w[f]


def unpack(arrays, Py_ssize_t first, buf):
    """The rows first, first + 1, ... of `arrays` = the rows of the message buf, as `pack`
    laid them out."""
    cdef Fields F
    fields(&F, arrays)
    cdef const double* b = <const double*>data(buf, "buf", F64, 2, F.width, False)
    cdef Py_ssize_t k, c, n = rows(buf)
    cdef int f
    if first < 0 or first + n > F.n_rows:
        raise ValueError("unpack: rows %d + %d of %d" % (first, n, F.n_rows))
    with nogil:
        for k in range(n):
            c = 0
            for f in range(F.n):
                copy_row(F.at[f] + (first + k) * F.w[f], b + k * F.width + c, F.w[f])
                c += F.w[f]
