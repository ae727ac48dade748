# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Overlap tests of insertion candidates (pdem/insertion.py): against the particles a
rank owns, and among the candidates in order. Distances use the minimum image on
periodic axes (period > 0)."""
from libc.math cimport floor


cdef inline double _d2(const double* a, const double* b, const double* period) noexcept nogil:
    cdef double s = 0.0, d
    cdef int k
    for k in range(3):
        d = a[k] - b[k]
        if period[k] > 0.0:
            d -= period[k] * floor(d / period[k] + 0.5)
        s += d * d
    return s


def blocked(const double[:, ::1] cand, const double[::1] rc, const double[:, ::1] pos,
            const double[::1] r, const double[::1] period, unsigned char[::1] out):
    """out[i] = 1 where candidate i overlaps one of the particles (pos, r)."""
    cdef Py_ssize_t i, j, n = cand.shape[0], m = pos.shape[0]
    cdef double s
    with nogil:
        for i in range(n):
            for j in range(m):
                s = rc[i] + r[j]
                if _d2(&cand[i, 0], &pos[j, 0], &period[0]) < s * s:
                    out[i] = 1
                    break


def greedy(const double[:, ::1] cand, const double[::1] rc, const long[::1] which,
           const unsigned char[::1] skip, const double[::1] period, Py_ssize_t wanted,
           unsigned char[::1] accepted):
    """Accept candidates in order, each when not skipped, its sphere (which[i], in
    0..wanted-1) not placed yet and clear of those accepted before it; returns how
    many were placed."""
    cdef Py_ssize_t i, j, n = cand.shape[0], count = 0
    cdef double s
    cdef bint ok
    cdef unsigned char[::1] placed = bytearray(wanted)
    with nogil:
        for i in range(n):
            if count == wanted:
                break
            if skip[i] or placed[which[i]]:
                continue
            ok = True
            for j in range(i):
                if accepted[j]:
                    s = rc[i] + rc[j]
                    if _d2(&cand[i, 0], &cand[j, 0], &period[0]) < s * s:
                        ok = False
                        break
            if ok:
                accepted[i] = 1
                placed[which[i]] = 1
                count += 1
    return count
