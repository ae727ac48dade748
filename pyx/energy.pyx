# cython: language_level=3
"""Exact sums for the energy tracker (pdem/energy.py, docs/energy.md).

Each running sum is a Shewchuk expansion (Shewchuk 1997, "Adaptive precision
floating-point arithmetic", grow-expansion; the algorithm behind Python's math.fsum):
up to MAXP non-overlapping doubles whose exact sum is the value. Adding a double is
exact (two-sum per component), so the value does not depend on the order of the
additions, on how contacts and particles are split over ranks and threads, or on where a
restart put them: math.fsum of the components of all ranks rounds the same exact value
on every rank count. Rows of `parts` are sums, columns their components (zeros beyond
the used ones).
"""
cimport cython
from libc.math cimport isfinite

cdef enum:
    MAXP = 48       # non-overlapping doubles span at most ~40 (2098 exponents / 53 bits)


def max_parts():
    return MAXP


cdef inline void grow(double* parts, double x) noexcept nogil:
    """parts += x exactly (zero components dropped, the rest kept in increasing order).
    A non-finite x (or an overflow) leaves a NaN in component 0: the value is NaN."""
    cdef int i, j = 0
    cdef double y, hi, lo, yr
    if x == 0.0:
        return
    if not isfinite(x):
        parts[0] = x - x                # NaN: the sum is NaN
        return
    for i in range(MAXP):
        y = parts[i]
        if y == 0.0:
            break
        # two-sum (Knuth): hi + lo == x + y exactly
        hi = x + y
        yr = hi - x
        lo = (x - (hi - yr)) + (y - yr)
        if lo != 0.0:
            parts[j] = lo
            j += 1
        x = hi
    if j < MAXP:
        parts[j] = x
        j += 1
    for i in range(j, MAXP):
        if parts[i] == 0.0:
            break
        parts[i] = 0.0


@cython.boundscheck(False)
@cython.wraparound(False)
def add_rows(double[:, ::1] parts, const int[::1] dest, const double[:, ::1] values,
             const int[::1] cols, const signed char[::1] use):
    """parts[dest[j]] += values[k, cols[j]] for every row k with use[k] != 0."""
    cdef Py_ssize_t k, m = values.shape[0]
    cdef int j, nc = cols.shape[0]
    if parts.shape[1] != MAXP or dest.shape[0] != nc or use.shape[0] < m:
        raise ValueError("add_rows: parts (%d, %d), %d destinations for %d columns, %d flags "
                         "for %d rows" % (parts.shape[0], parts.shape[1], dest.shape[0], nc,
                                          use.shape[0], m))
    with nogil:
        for k in range(m):
            if use[k]:
                for j in range(nc):
                    grow(&parts[dest[j], 0], values[k, cols[j]])


@cython.boundscheck(False)
@cython.wraparound(False)
def add_values(double[:, ::1] parts, int dest, const double[::1] values):
    """parts[dest] += every entry of values."""
    cdef Py_ssize_t k
    if parts.shape[1] != MAXP:
        raise ValueError("add_values: parts must have %d columns" % MAXP)
    with nogil:
        for k in range(values.shape[0]):
            grow(&parts[dest, 0], values[k])
