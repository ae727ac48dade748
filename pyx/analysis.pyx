# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Per-particle sums over contact rows for the stress and fabric analysis
(pdem/analysis.py): the Love-Weber moment sum_c (x_c - x_p) (x) f_c of each owned
particle and its number of particle contacts."""
cimport cython
from libc.math cimport ldexp, trunc
from contact_row cimport S_T, S_U, S_FORCE
import numpy as np


def contact_moments(const signed char[::1] active, const double[:, ::1] state,
                    const int[::1] owner1, const int[::1] local1,
                    const int[::1] owner2, const int[::1] local2,
                    const double[::1] radius, double[:, ::1] moment, int[::1] coordination,
                    const double[:, ::1] branch):
    """Add the rows of one interaction kind to the owned particles' sums.

    Row k: normal n (from body 1 to body 2, row 0 of the local axes), u_n (< 0 in
    overlap), force F on body 2. The contact point is the middle of the overlap, so
    x_c - x_2 = -(r_2 + u_n / 2) n and, for a particle as body 1, x_c - x_1 =
    (r_1 + u_n / 2) n with the force -F. owner1/owner2: owned index of body 1/2 or -1
    (ghost copies are summed on their own rank); an empty owner1 means body 1 is a wall
    (not counted in the coordination). moment (n_own, 9): row-major 3x3 sums, a_i f_j.
    Rows in batch order (the pair list's grid order): the same order on any number of
    ranks.
    branch (m, 6): the kind's own branch vectors c - x1, c - x2 (non-spheres, whose
    contact point is off the line of centres); (0, 6): the sphere formula above."""
    cdef Py_ssize_t m = active.shape[0], k
    cdef bint pairs = owner1.shape[0] > 0, own_branch = branch.shape[0] > 0
    cdef int p, i, j
    cdef double arm, n[3], a[3]
    cdef const double* f
    with nogil:
        for k in range(m):
            if not active[k]:
                continue
            f = &state[k, S_FORCE]
            for i in range(3):
                n[i] = state[k, S_T + i]
            p = owner2[k]
            if p >= 0:
                arm = -(radius[local2[k]] + 0.5 * state[k, S_U])
                for i in range(3):
                    a[i] = branch[k, 3 + i] if own_branch else arm * n[i]
                for i in range(3):
                    for j in range(3):
                        moment[p, 3 * i + j] += a[i] * f[j]
                if pairs:
                    coordination[p] += 1
            if pairs and owner1[k] >= 0:
                p = owner1[k]
                arm = radius[local1[k]] + 0.5 * state[k, S_U]     # (r1 + u_n/2) n, with -F
                for i in range(3):
                    a[i] = branch[k, i] if own_branch else arm * n[i]
                for i in range(3):
                    for j in range(3):
                        moment[p, 3 * i + j] -= a[i] * f[j]
                coordination[p] += 1


@cython.boundscheck(False)
@cython.wraparound(False)
def exact_limbs(const double[:, ::1] rows, const long[::1] e):
    """Integer column sums of rows (n, k) cut into two 40-bit limbs at the column scales
    2^(40 - e_j): out[j] = sum trunc(x 2^(40 - e_j)), out[k + j] = sum of the next 40
    bits (pdem.analysis.exact_sum; exact, so any split of the rows gives the same sums)."""
    cdef Py_ssize_t n = rows.shape[0], k = rows.shape[1], i, j
    out_arr = np.zeros(2 * k, np.int64)
    cdef long[::1] out = out_arr
    cdef double s, h, two40 = ldexp(1.0, 40)
    scale_arr = np.array([ldexp(1.0, 40 - e[j]) for j in range(k)])
    cdef double[::1] scale = scale_arr           # powers of 2: exact products
    with nogil:
        for i in range(n):
            for j in range(k):
                s = rows[i, j] * scale[j]
                h = trunc(s)
                out[j] += <long>h
                out[k + j] += <long>trunc((s - h) * two40)
    return out_arr


def stress_rows(const double[:, ::1] moment, const long[::1] rows_of,
                const double[::1] mass, const double[:, ::1] pos, const double[:, ::1] vel,
                const double[:, ::1] grad, const double[::1] origin, bint fluctuate):
    """The rows of the exact stress sum (pdem.analysis.stress) of the particles rows_of,
    in one pass: moment (9), m v' (3), m (1), m v'_i v'_j (9), with v' = v - grad (x - lo)
    if fluctuate (a deforming cell: the operations of pdem.cell.apply, in its order),
    else v. Returns (rows (m, 22), the largest |value| of each column)."""
    cdef Py_ssize_t m = rows_of.shape[0], k, i, j, p
    out_arr = np.empty((m, 22))
    big_arr = np.zeros(22)
    cdef double[:, ::1] out = out_arr
    cdef double[::1] big = big_arr
    cdef double dx[3], v[3], mv[3], w
    with nogil:
        for k in range(m):
            p = rows_of[k]
            for i in range(3):
                v[i] = vel[p, i]
            if fluctuate:
                for i in range(3):
                    dx[i] = pos[p, i] - origin[i]
                for i in range(3):
                    v[i] = v[i] - ((dx[0] * grad[i, 0] + dx[1] * grad[i, 1]) + dx[2] * grad[i, 2])
            for i in range(9):
                out[k, i] = moment[p, i]
            for i in range(3):
                mv[i] = mass[p] * v[i]
                out[k, 9 + i] = mv[i]
            out[k, 12] = mass[p]
            for i in range(3):
                for j in range(3):
                    out[k, 13 + 3 * i + j] = mv[i] * v[j]
            for i in range(22):
                w = out[k, i] if out[k, i] >= 0.0 else -out[k, i]
                if w > big[i] or w != w:           # NaN propagates, as np.max does
                    big[i] = w
    return out_arr, big_arr
