# cython: language_level=3
"""Boundary segments and points of zero thickness (seed 003, "boundary segments" and
the zero-radius "boundary disks" at their ends).

An element is a segment [a, b] or a point (a == b). The particle at x meets it at
its foot q: for a segment, with t = b - a and s = x - a, s_t = (s.t) / |t|^2 and
q = a + s_t t, only when 0 <= s_t <= 1 (outside, the end points take over); for a
point, q = a. The normal is n = (x - q) / |x - q| (from the wall into the particle;
a centre on the segment takes the left normal of t), the gap |x - q| - r.

Candidates (Verlet list of the wall kinds): element boxes inflated by r_max + skin
are binned into a cell grid over the owned particles; each owned particle visits its
cell and keeps the elements whose clamped distance is below r + skin. Two passes
(count, fill) in prange; rows sorted by (particle, element).
"""
cimport cython
from cython.parallel cimport prange
from libc.math cimport floor, INFINITY
from vecmath cimport v3, V, vld, vst, vsub, vadd, vscale, vdot, vnorm
from cellgrid cimport cell_index, cell_sort, grid_size
from ellipsoid cimport Ell, ell2_make
from ellipsoid_facet cimport ell_line, vertex_normal
import numpy as np


cdef inline double foot(v3 x, v3 a, v3 b, v3* q, v3* n) noexcept nogil:
    """|x - q| with the foot q and unit normal n (seed 003); -1 when the foot of a
    segment lies outside its span."""
    cdef v3 t = vsub(b, a), s = vsub(x, a), d
    cdef double tt = vdot(t, t), st = 0.0, dist
    if tt > 0.0:
        st = vdot(s, t) / tt
        if st < 0.0 or st > 1.0:
            return -1.0
    q[0] = vadd(a, vscale(t, st))
    d = vsub(s, vscale(t, st))              # the seed's n = s - s_t t
    dist = vnorm(d)
    if dist > 0.0:
        n[0] = vscale(d, 1.0 / dist)
    elif t.x != 0.0 or t.y != 0.0:          # centre on the segment: left normal of t
        n[0] = vscale(V(-t.y, t.x, 0.0), 1.0 / vnorm(V(-t.y, t.x, 0.0)))
    elif tt > 0.0:
        n[0] = vscale(V(0.0, -t.z, t.y), 1.0 / vnorm(V(0.0, -t.z, t.y)))
    else:                                   # centre on the point
        n[0] = V(1.0, 0.0, 0.0)
    return dist


cdef inline double clamped_distance(v3 x, v3 a, v3 b) noexcept nogil:
    """Distance from x to the closest point of [a, b] (the candidate test)."""
    cdef v3 t = vsub(b, a), s = vsub(x, a)
    cdef double tt = vdot(t, t), st = 0.0
    if tt > 0.0:
        st = vdot(s, t) / tt
        st = 0.0 if st < 0.0 else (1.0 if st > 1.0 else st)
    return vnorm(vsub(s, vscale(t, st)))


@cython.boundscheck(False)
@cython.wraparound(False)
def feet(const int[::1] particle, const int[::1] element, const double[:, ::1] pos,
         const double[::1] radius, const double[:, ::1] a, const double[:, ::1] b,
         const long[::1] ptr, const int[::1] ends, const double[:, ::1] sa,
         const double[:, ::1] sb, double[:, ::1] q, double[:, ::1] n, double[::1] gap,
         int n_threads):
    """For each row k (particle[k], element[k]): foot q, normal n and gap. A segment
    foot outside the span gives gap = inf and q = x - 2 r n (beyond reach of the
    plane law, which then ends the contact). Points: the segments [sa, sb] ending at
    point w are ends[ptr[w]:ptr[w + 1]]; a particle whose foot lies within the span of
    one of them is that segment's (gap = inf for the point): the end disks act only
    outside the spans (seed 003), so a joint of two segments is no bump."""
    cdef Py_ssize_t k, m = particle.shape[0], e
    cdef int p, w, nt = max(1, n_threads)
    cdef v3 x, qk, nk, t
    cdef double dist, st
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        p = particle[k]
        w = element[k]
        x = vld(&pos[p, 0])
        nk = V(1.0, 0.0, 0.0)
        dist = foot(x, vld(&a[w, 0]), vld(&b[w, 0]), &qk, &nk)
        for e in range(ptr[w], ptr[w + 1]):
            t = vsub(vld(&sb[ends[e], 0]), vld(&sa[ends[e], 0]))
            st = vdot(vsub(x, vld(&sa[ends[e], 0])), t) / vdot(t, t)
            if st >= 0.0 and st <= 1.0:
                dist = -1.0
        if dist < 0.0:
            gap[k] = INFINITY
            qk = vsub(x, vscale(nk, 2.0 * radius[p]))
        else:
            gap[k] = dist - radius[p]
        vst(&q[k, 0], qk)
        vst(&n[k, 0], nk)


cdef tuple bin_boxes(const double[:, ::1] lo_box, const double[:, ::1] hi_box,
                     const double* lo, double inv_cell, const long* nc):
    """CSR (start, members) of the grid cells each box touches, members ascending."""
    cdef Py_ssize_t k, nb = lo_box.shape[0]
    cdef long ncell = nc[0] * nc[1] * nc[2], ix, iy, iz, q
    cdef long[:, ::1] rng = np.zeros((nb, 6), dtype=np.int64)
    start_arr = np.zeros(ncell + 1, dtype=np.int64)
    cdef long[::1] start = start_arr
    cdef int d
    cdef long lo_c[3]
    cdef long hi_c[3]
    cdef bint skip
    for k in range(nb):
        skip = False
        for d in range(3):
            lo_c[d] = <long>floor((lo_box[k, d] - lo[d]) * inv_cell)
            hi_c[d] = <long>floor((hi_box[k, d] - lo[d]) * inv_cell)
            if hi_c[d] < 0 or lo_c[d] >= nc[d]:
                skip = True
            lo_c[d] = max(lo_c[d], 0)
            hi_c[d] = min(hi_c[d], nc[d] - 1)
        if skip:                         # no particle can reach it: empty range
            rng[k, 0] = 0
            rng[k, 1] = -1
            continue
        for d in range(3):
            rng[k, 2 * d] = lo_c[d]
            rng[k, 2 * d + 1] = hi_c[d]
        for ix in range(lo_c[0], hi_c[0] + 1):
            for iy in range(lo_c[1], hi_c[1] + 1):
                for iz in range(lo_c[2], hi_c[2] + 1):
                    start[(ix * nc[1] + iy) * nc[2] + iz + 1] += 1
    for q in range(ncell):
        start[q + 1] += start[q]
    mem_arr = np.empty(start[ncell], dtype=np.int32)
    cdef int[::1] mem = mem_arr
    cdef long[::1] fill = start_arr[:ncell].copy()
    for k in range(nb):
        for ix in range(rng[k, 0], rng[k, 1] + 1):
            for iy in range(rng[k, 2], rng[k, 3] + 1):
                for iz in range(rng[k, 4], rng[k, 5] + 1):
                    q = (ix * nc[1] + iy) * nc[2] + iz
                    mem[fill[q]] = <int>k
                    fill[q] += 1
    return start_arr, mem_arr


cdef long _visit(long p, const double[:, ::1] pos, const double[::1] radius,
                 const double[:, ::1] a, const double[:, ::1] b, double skin,
                 const long[::1] cell_of, const long[::1] start, const int[::1] mem,
                 int[::1] out_p, int[::1] out_w, long off, int fill) noexcept nogil:
    """Count (fill=0) or write (fill=1, from row off) the candidates of particle p."""
    cdef long c = cell_of[p], e, found = 0
    cdef int w
    cdef v3 x = vld(&pos[p, 0])
    for e in range(start[c], start[c + 1]):
        w = mem[e]
        if clamped_distance(x, vld(&a[w, 0]), vld(&b[w, 0])) < radius[p] + skin:
            if fill:
                out_p[off + found] = <int>p
                out_w[off + found] = w
            found += 1
    return found


@cython.boundscheck(False)
@cython.wraparound(False)
def candidates(const double[:, ::1] pos, const double[::1] radius, long n_own,
               const double[:, ::1] a, const double[:, ::1] b, double skin, int n_threads):
    """(particle, element) int32 rows of the owned particles (rows < n_own) within
    r + skin of an element [a[w], b[w]] (a point when equal), sorted by (particle,
    element)."""
    cdef Py_ssize_t i, t
    cdef int d, nt = max(1, n_threads)
    cdef double rmax = 0.0, reach, inv_cell
    cdef double lo[3]
    cdef double hi[3]
    cdef long nc[3]
    if n_own == 0 or a.shape[0] == 0:
        return np.empty(0, np.int32), np.empty(0, np.int32)
    own = np.asarray(pos)[:n_own]
    for i in range(n_own):
        if radius[i] > rmax:
            rmax = radius[i]
    for d in range(3):
        lo[d] = own[:, d].min()
        hi[d] = own[:, d].max()
    reach = rmax + skin
    inv_cell = grid_size(lo, hi, 2.0 * reach, n_own, nc)
    cell_of_arr = np.empty(n_own, dtype=np.int64)
    cdef long[::1] cell_of = cell_of_arr
    for i in range(n_own):
        cell_of[i] = cell_index(pos[i, 0], pos[i, 1], pos[i, 2], lo, inv_cell, nc)
    ea, eb = np.asarray(a), np.asarray(b)
    start_arr, mem_arr = bin_boxes(np.ascontiguousarray(np.minimum(ea, eb) - reach),
                                   np.ascontiguousarray(np.maximum(ea, eb) + reach),
                                   lo, inv_cell, nc)
    cdef long[::1] start = start_arr
    cdef int[::1] mem = mem_arr
    count_arr = np.zeros(n_own + 1, dtype=np.int64)
    cdef long[::1] count = count_arr
    cdef int[::1] none = np.empty(1, np.int32)
    for t in prange(n_own, nogil=True, schedule='static', num_threads=nt):
        count[t + 1] = _visit(t, pos, radius, a, b, skin, cell_of, start, mem, none, none,
                              0, 0)
    for t in range(n_own):
        count[t + 1] += count[t]
    out_p_arr = np.empty(count[n_own], np.int32)
    out_w_arr = np.empty(count[n_own], np.int32)
    cdef int[::1] out_p = out_p_arr, out_w = out_w_arr
    for t in prange(n_own, nogil=True, schedule='static', num_threads=nt):
        _visit(t, pos, radius, a, b, skin, cell_of, start, mem, out_p, out_w, count[t], 1)
    return out_p_arr, out_w_arr



@cython.boundscheck(False)
@cython.wraparound(False)
def ellipse_feet(const int[::1] particle, const int[::1] element, const double[:, ::1] pos,
                 const double[:, ::1] orient, const double[:, ::1] semi_axes,
                 const double[::1] radius, const double[:, ::1] a, const double[:, ::1] b,
                 const long[::1] ptr, const int[::1] ends, const double[:, ::1] sa,
                 const double[:, ::1] sb, double[:, ::1] q, double[:, ::1] n, int n_threads):
    """feet for ellipses (2D, issue 16): per row the tangent line (point q, normal n
    towards the ellipse) that the ellipse-plane kernel takes. A segment: its line, when
    the ellipse's contact point c2 = o - s(n) has its foot within the span
    (ellipsoid_facet.ell_line); a point: the normal of the point-ellipse signed
    distance (the tangent line at the nearest point of the ellipse, moved to the point),
    when that foot lies outside the span of every segment ending at the point (seed
    003's rule with the contact point in place of the centre). Spans are half-open,
    [0, 1) along a -> b, so a foot on the joint of two segments belongs to one of
    them (two rows there would double the stiffness). Otherwise q = x - 2 r n, beyond
    reach (the row's contact ends)."""
    cdef Py_ssize_t k, m = particle.shape[0], e
    cdef int p, w, nt = max(1, n_threads)
    cdef v3 qk, nk, mm, qq
    cdef double st
    cdef bint off
    cdef Ell E
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        p = particle[k]
        w = element[k]
        E = ell2_make(&pos[p, 0], &orient[p, 0], &semi_axes[p, 0])
        off = False
        if a[w, 0] != b[w, 0] or a[w, 1] != b[w, 1]:
            st = ell_line(&E, vld(&a[w, 0]), vld(&b[w, 0]), &nk, &qk)
            off = st < 0.0 or st >= 1.0
        else:
            qk = vld(&a[w, 0])
            nk = vertex_normal(&E, qk, 2)
            for e in range(ptr[w], ptr[w + 1]):
                st = ell_line(&E, vld(&sa[ends[e], 0]), vld(&sb[ends[e], 0]), &mm, &qq)
                if st >= 0.0 and st < 1.0:
                    off = True
        if off:
            qk = vsub(E.o, vscale(nk, 2.0 * radius[p]))
        vst(&q[k, 0], qk)
        vst(&n[k, 0], nk)
