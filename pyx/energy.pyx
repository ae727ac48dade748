# cython: language_level=3
"""Exact sums for the energy tracker (pdem/energy.py, docs/energy.md).

A running sum is a fixed-point superaccumulator (Kulisch's long accumulator, in the
"binned" form of Neal 2015, arXiv:1505.05571): every double x = m 2^(e - BIAS) (m an
integer of 53 bits) adds m, shifted to its exponent, into int64 bins of 32 bits each;
integer additions are exact, so the value does not depend on the order of the additions,
on how contacts and particles are split over ranks and threads, or on where a restart
put them. `value` rounds the exact sum of the bins of all ranks once (Python integers and
Fraction: correctly rounded). A row of `bins` is one sum: NBIN bins, then the number of
additions since the last carry, then a flag for a non-finite term (the value is NaN).
"""
cimport cython
from libc.string cimport memcpy
from fractions import Fraction

cdef enum:
    NBIN = 72           # 72 x 32 bits cover every double (exponents -1126 .. 1024 + BIAS)
    BIAS = 1152         # e + BIAS >= 0 for subnormals too (frexp exponent >= -1073)
    COUNT = NBIN        # additions since the last carry (bins hold < 2^53 per addition)
    BAD = NBIN + 1      # a non-finite term was added
    WIDTH = NBIN + 2
    CARRY_EVERY = 512   # carries propagated before any bin can reach 2^63 (512 x 2^53 + 2^32)


SCALE = pow(2, <object>BIAS)     # a Python integer


def width():
    return WIDTH


cdef inline void carry(long long* acc) noexcept nogil:
    """Normalize bins 0 .. NBIN-2 to [0, 2^32) by moving carries up (the value stays)."""
    cdef int i
    cdef long long c
    for i in range(NBIN - 1):
        c = acc[i] >> 32            # floor division by 2^32 (arithmetic shift)
        acc[i] -= c << 32
        acc[i + 1] += c
    acc[COUNT] = 0


cdef inline void accumulate(long long* acc, double x) noexcept nogil:
    """acc += x exactly: x = m 2^(ex - 1075) from its IEEE 754 fields (m with the
    implicit bit; subnormals ex = 1), m shifted into bins b, b + 1 at e = ex - 1075 + BIAS."""
    cdef unsigned long long bits, a, lo
    cdef int ex, e, b, s
    cdef long long low, high
    memcpy(&bits, &x, 8)
    ex = <int>((bits >> 52) & 0x7FF)
    a = bits & 0xFFFFFFFFFFFFFULL
    if ex == 0x7FF:
        acc[BAD] = 1
        return
    if ex == 0:
        if a == 0:
            return
        ex = 1
    else:
        a = a | (1ULL << 52)
    e = ex - 1075 + BIAS
    b = e >> 5
    s = e & 31
    lo = (a & 0xFFFFFFFFULL) << s           # < 2^63
    low = <long long>(lo & 0xFFFFFFFFULL)
    high = <long long>((lo >> 32) + ((a >> 32) << s))     # < 2^53
    if bits >> 63:
        acc[b] -= low
        acc[b + 1] -= high
    else:
        acc[b] += low
        acc[b + 1] += high
    acc[COUNT] += 1
    if acc[COUNT] >= CARRY_EVERY:
        carry(acc)


@cython.boundscheck(False)
@cython.wraparound(False)
def add_rows(long long[:, ::1] bins, const int[::1] dest, const double[:, ::1] values,
             const int[::1] cols, const signed char[::1] use):
    """bins[dest[j]] += values[k, cols[j]] for every row k with use[k] != 0."""
    cdef Py_ssize_t k, m = values.shape[0]
    cdef int j, nc = cols.shape[0]
    if bins.shape[1] != WIDTH or dest.shape[0] != nc or use.shape[0] < m:
        raise ValueError("add_rows: bins (%d, %d), %d destinations for %d columns, %d flags "
                         "for %d rows" % (bins.shape[0], bins.shape[1], dest.shape[0], nc,
                                          use.shape[0], m))
    with nogil:
        for k in range(m):
            if use[k]:
                for j in range(nc):
                    accumulate(&bins[dest[j], 0], values[k, cols[j]])


@cython.boundscheck(False)
@cython.wraparound(False)
def add_values(long long[:, ::1] bins, int dest, const double[::1] values):
    """bins[dest] += every entry of values."""
    cdef Py_ssize_t k
    if bins.shape[1] != WIDTH:
        raise ValueError("add_values: bins must have %d columns" % WIDTH)
    with nogil:
        for k in range(values.shape[0]):
            accumulate(&bins[dest, 0], values[k])


def exact(rows):
    """The exact sum (a Python integer in units of 2^-BIAS, or None for a non-finite term)
    of accumulator rows (e.g. one sum's rows of all ranks)."""
    total = 0
    for row in rows:
        row = [int(v) for v in row]
        if row[BAD]:
            return None
        total += sum(v << (32 * i) for i, v in enumerate(row[:NBIN]))
    return total


def value(rows):
    """The exact sum of accumulator rows, rounded once to the nearest double."""
    total = exact(rows)
    return float("nan") if total is None else float(Fraction(total, SCALE))


def from_exact(total):
    """An accumulator row holding the exact sum `total` (from `exact`)."""
    row = [0] * WIDTH
    if total is None:
        row[BAD] = 1
        return row
    sign = -1 if total < 0 else 1
    total = abs(total)
    for i in range(NBIN):
        row[i] = sign * ((total >> (32 * i)) & 0xFFFFFFFF)
    return row
