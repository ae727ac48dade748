# cython: language_level=3
"""2D convex polygons against boundary segments and points (issue 17 with seed 004's
facet rules as docs/walls.md applies them to mesh walls; docs/polyhedra.md, "Segments").

Rows are the candidate (polygon, element) pairs of a kind, sorted by (particle,
element); the rows of one polygon form a group (group_start), resolved independently
(any thread count gives the same bits). Per group:
 1. per row, the element's geometry (a segment [a, b], or a point a == b):
    face part, when the centroid projects onto the straight chain of segments joined
      end to end with this one (its side is then the centroid's, as seed 004 takes a
      ball's; beyond it, at a bend or an end, the polygon's side is undecided and the
      edge part decides): the polygon's corners (the prism's vertices at z < 0: each
      corner once) below the segment's line (normal ns on the centroid's side) whose
      projection lies in the closed span, each with its depth d_v, and the free ends (no
      other segment ends there) inside the polygon, each with how far it leaves the
      polygon along -ns (the vertices of both bodies beyond the other's boundary: a face
      sliding over the end of a wall keeps its support, the end taking over from the
      corner that passes it; at a bend the other segment's row sees the end):
      the vertex sums of the phplane law (pyx/polyhedron_contacts.pyx). A corner counts
      once among parallel rows: the first row (row order) that holds it claims it, so a
      floor of collinear segments partitions the corners exactly as one line does.
      Around a free end of the segments parallel to this one, when the polygon leaves
      the line's side sideways sooner than by its deepest corner (polyhedron_facet
      sheet_escape's 2D form), the corners are no overlap and the edge part decides;
    edge part (no corner below): GJK/EPA of the element (a 2-vertex or 1-vertex
      polytope) and the polygon's prism (gjk.pxd): a segment end pushing into a side of
      the polygon; overlap delta_M, normal n_M (wall to polygon, back in the plane),
      wall contact point WP = the witness on the element.
    The overlap U: the deepest corner's or end's depth (face part; WP its foot, or the
    end) or delta_M (edge part).
 2. links (seed 004 rule 2): rows with U > 0 whose WPs lie on the same end point
    (parameter within 1e-9 of 0 or 1) of segments sharing it are linked (a corner of the
    wall in a side of the polygon, seen by both segments; a polygon's face on one
    segment and its corner on the other, in a valley, are two contacts); rows of
    parallel segments sharing an end point are linked too (the seed's proximity contact
    of a flat wall split in many facets: it counts once);
 3. the largest U of a linked set is its active contact (rule 3; ties: row order), the
    holder of the set's state; when the holder changes, the state of the set's previous
    holder is copied (continuity, as ball_facet does within a linked set);
 4. the contact: the wall is body 1 at the foot (fixed: zero velocity), the polygon body
    2; with face sums in the set, phplane's vertex-sum law over all of them: u_n = -sum
    d_v along the d-weighted normal, at the d-weighted centroid projected on the
    holder's line and lifted by half the weighted mean depth; otherwise the holder's
    edge part: u_n = -delta_M at the middle of the overlap.
Isolated points (kind phpoint) take the edge part alone; points that end a segment are
the segments' (skip[w]): a segment's GJK/EPA sees its end points.
"""
cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport sqrt, atan2, INFINITY
from vecmath cimport v3, V, vld, vst, vadd, vsub, vscale, vdot, vneg, mtdot, q2m, quat, m33, lowest_along
from contact_row cimport S_NCOLS, Load, contact_update
from gjk cimport Convex, MinkResult, cv_poly, mk_query, MK_OVERLAP
from union_find cimport uf_root, uf_join
from worst_overlap cimport pick_worst, insert_deepest, worst_init
import numpy as np

cdef enum:
    MAXR = 128              # candidate elements of one polygon
    MAXV = 128              # corners of one polygon

MAX_ROWS = MAXR
MAX_CORNERS = MAXV
cdef double PARALLEL = 1.0 - 1e-12     # cosine of parallel segment normals
cdef double AT_END = 1e-9              # WP parameter within this of 0 or 1: an end point


cdef inline double span(v3 x, v3 a, v3 t, double tt) noexcept nogil:
    """Parameter of the projection of x on the line a + s t."""
    return vdot(vsub(x, a), t) / tt


cdef inline double tip_depth(v3 e, v3 u, const v3* xv, int nc) noexcept nogil:
    """How far e, strictly inside the convex polygon of ccw corners xv, moves along the
    unit u to leave it (-1 outside): min over the sides m.(v_i - e) / m.u with m.u > 0, m
    their outward normals."""
    cdef double t = INFINITY, h, mu
    cdef int i
    cdef v3 m, d
    for i in range(nc):
        d = vsub(xv[(i + 1) % nc], xv[i])
        m = V(d.y, -d.x, 0.0)
        h = vdot(m, vsub(xv[i], e))
        if not (h > 0.0):
            return -1.0
        mu = vdot(m, u)
        if mu > 0.0 and h / mu < t:
            t = h / mu
    return t


cdef inline double escape(const int* element, const double[:, ::1] ea,
                          const double[:, ::1] eb, const signed char[:, ::1] free_end,
                          const v3* ns, const double* U0, int m, v3 nk, const v3* xv,
                          int nc) noexcept nogil:
    """How far the polygon must move along a segment, out past a free end, to leave the
    segments parallel to nk (polyhedron_facet's sheet_escape in 2D): min over those ends
    of m.e - min_v m.x_v, m the segment's direction out of the end e."""
    cdef double best = INFINITY, pen, ll
    cdef int j, end
    cdef v3 a, b, mm, e
    for j in range(m):
        if U0[j] == -INFINITY or vdot(ns[j], nk) < PARALLEL:
            continue
        a = vld(&ea[element[j], 0])
        b = vld(&eb[element[j], 0])
        for end in range(2):
            if not free_end[element[j], end]:
                continue
            mm = vsub(a, b) if end == 0 else vsub(b, a)
            ll = sqrt(vdot(mm, mm))
            mm = vscale(mm, 1.0 / ll)
            e = a if end == 0 else b
            pen = vdot(mm, e) - lowest_along(mm, xv, nc)
            if pen < best:
                best = pen
    return best


cdef inline bint same(v3 a, v3 b) noexcept nogil:
    return a.x == b.x and a.y == b.y and a.z == b.z


cdef inline bint seen(v3 a, const v3* pts, int n) noexcept nogil:
    cdef int i
    for i in range(n):
        if same(a, pts[i]):
            return True
    return False


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int polygon_group(Py_ssize_t s, Py_ssize_t e, int p, const int[::1] element,
                       const double[:, ::1] pos, const double[:, ::1] vel,
                       const double[:, ::1] angvel, const double[:, ::1] orient,
                       const int[::1] template, const double[::1] radius,
                       const double[::1] mass, const int[::1] material, const long[::1] voff,
                       const double[:, ::1] vdata, const double[:, ::1] ea,
                       const double[:, ::1] eb, const int[::1] ematerial,
                       const signed char[::1] skip, const signed char[:, ::1] free_end,
                       const double[:, ::1] chain, const double[:, ::1] table, int nmat,
                       double dt, int flags,
                       signed char[::1] active, double[:, ::1] state, double[:, ::1] branch,
                       signed char[::1] status, double* worst) noexcept nogil:
    """One polygon and its candidate elements (rows s..e-1); -1: too many rows or
    corners."""
    cdef int m = <int>(e - s), k, j, i, t, npos = 0, h, g, tp = template[p], nc = 0, nvs
    cdef int nv = <int>(voff[tp + 1] - voff[tp]), w, deepest
    cdef double U[MAXR]
    cdef double U0[MAXR]        # -inf: the element is not seen (skipped, or too far)
    cdef double fs[MAXR][5]     # sum d, sum d^2, sum d x, sum d y, max d
    cdef double tq[MAXR]        # WP's parameter on the segment
    cdef v3 ns[MAXR]            # segment normal on the centroid's side
    cdef v3 nk[MAXR]            # the row's contact normal
    cdef v3 wp[MAXR]            # wall contact point
    cdef int order[MAXR]
    cdef int parent[MAXR]
    cdef int lead[MAXR]
    cdef signed char was[MAXR]
    cdef signed char done[MAXR]
    cdef v3 xv[MAXV]
    cdef int claim[MAXV]
    cdef v3 tips[2 * MAXR]      # segment ends counted (once per group)
    cdef int ntips = 0
    cdef double tv[6]
    cdef quat qq
    cdef m33 M
    cdef v3 x, a, b, tt_v, y, foot, x2, cr, n, es, nsum
    cdef double R = radius[p], tt, d, st, dsum, d2sum, un, ll
    cdef Convex A, B
    cdef MinkResult res
    cdef Load L
    if m > MAXR:
        return -1
    qq.w = orient[p, 0]; qq.x = orient[p, 1]; qq.y = orient[p, 2]; qq.z = orient[p, 3]
    M = q2m(qq)
    x = vld(&pos[p, 0])
    for i in range(nv):                      # the corners: the prism's vertices at z < 0
        if vdata[voff[tp] + i, 2] < 0.0:
            if nc == MAXV:
                return -1
            y = vadd(x, mtdot(M, V(vdata[voff[tp] + i, 0], vdata[voff[tp] + i, 1], 0.0)))
            y.z = 0.0
            t = nc                           # counter-clockwise about the centroid
            while t > 0 and atan2(xv[t - 1].y - x.y, xv[t - 1].x - x.x) > \
                    atan2(y.y - x.y, y.x - x.x):
                xv[t] = xv[t - 1]
                t -= 1
            xv[t] = y
            claim[nc] = -1
            nc += 1
    # 1. per row: face part, else edge part
    for k in range(m):
        w = element[s + k]
        was[k] = active[s + k]
        parent[k] = k
        lead[k] = -1
        done[k] = 0
        U[k] = -INFINITY
        U0[k] = -INFINITY
        status[s + k] = 0
        ns[k] = V(0.0, 0.0, 0.0)
        for i in range(5):
            fs[k][i] = 0.0
        if skip[w]:
            continue
        a = vld(&ea[w, 0])
        b = vld(&eb[w, 0])
        tt_v = vsub(b, a)
        tt = vdot(tt_v, tt_v)
        st = 0.0
        if tt > 0.0:
            st = span(x, a, tt_v, tt)
            st = 0.0 if st < 0.0 else (1.0 if st > 1.0 else st)
        y = vsub(x, vadd(a, vscale(tt_v, st)))
        if vdot(y, y) >= R * R:              # beyond the bounding circle
            continue
        U0[k] = 0.0
        if tt > 0.0:
            ll = sqrt(tt)
            ns[k] = V(-tt_v.y / ll, tt_v.x / ll, 0.0)
            if vdot(ns[k], vsub(x, a)) < 0.0:
                ns[k] = vneg(ns[k])
    for k in range(m):
        if U0[k] == -INFINITY:
            continue
        w = element[s + k]
        a = vld(&ea[w, 0])
        b = vld(&eb[w, 0])
        tt_v = vsub(b, a)
        tt = vdot(tt_v, tt_v)
        deepest = -1
        st = span(x, a, tt_v, tt) if tt > 0.0 else 0.0
        if tt > 0.0 and st >= chain[w, 0] - 1e-12 and st <= chain[w, 1] + 1e-12:
            for i in range(nc):
                d = -vdot(ns[k], vsub(xv[i], a))
                if not (d > 0.0):
                    continue
                if claim[i] >= 0 and vdot(ns[claim[i]], ns[k]) >= PARALLEL:
                    continue
                st = span(xv[i], a, tt_v, tt)
                if st < -1e-12 or st > 1.0 + 1e-12:
                    continue
                fs[k][0] += d
                fs[k][1] += d * d
                fs[k][2] += d * xv[i].x
                fs[k][3] += d * xv[i].y
                if d > fs[k][4]:
                    fs[k][4] = d
                    deepest = i
            for i in range(2):               # the free ends inside the polygon
                y = a if i == 0 else b
                if not free_end[w, i] or seen(y, tips, ntips):
                    continue
                d = tip_depth(y, vneg(ns[k]), xv, nc)
                if not (d > 0.0):
                    continue
                tips[ntips] = y
                ntips += 1
                fs[k][0] += d
                fs[k][1] += d * d
                fs[k][2] += d * y.x
                fs[k][3] += d * y.y
                if d > fs[k][4]:
                    fs[k][4] = d
                    deepest = nc + i
            if deepest >= 0 and escape(&element[s], ea, eb, free_end, ns, U0, m, ns[k], xv,
                                       nc) < fs[k][4]:
                deepest = -1                 # around a free end: the edge part decides
                for i in range(5):
                    fs[k][i] = 0.0
            if deepest >= 0:
                for i in range(nc):          # claim the row's corners
                    d = -vdot(ns[k], vsub(xv[i], a))
                    st = span(xv[i], a, tt_v, tt)
                    if d > 0.0 and claim[i] < 0 and st >= -1e-12 and st <= 1.0 + 1e-12:
                        claim[i] = k
                U[k] = fs[k][4]
                nk[k] = ns[k]
                tq[k] = <double>(deepest - nc) if deepest >= nc else span(xv[deepest], a, tt_v,
                                                                          tt)
                wp[k] = vadd(a, vscale(tt_v, tq[k]))
        if deepest < 0:                      # GJK/EPA of the element and the prism
            nvs = 2 if tt > 0.0 else 1
            y = vscale(vadd(a, b), 0.5)
            tv[0] = a.x - y.x; tv[1] = a.y - y.y; tv[2] = 0.0
            tv[3] = b.x - y.x; tv[4] = b.y - y.y; tv[5] = 0.0
            A = cv_poly(y, NULL, tv, nvs, 0.5 * sqrt(tt))
            B = cv_poly(x, &orient[p, 0], &vdata[voff[tp], 0], nv, R)
            mk_query(&A, &B, V(0.0, 0.0, 0.0), 0.0, 1e-12, 100, &res)
            status[s + k] = res.status
            if res.status == MK_OVERLAP:
                U[k] = -res.gap
                n = V(res.n.x, res.n.y, 0.0)   # back in the plane (prism round-off)
                nk[k] = vscale(n, 1.0 / sqrt(vdot(n, n)))
                wp[k] = V(res.pa.x, res.pa.y, 0.0)
                tq[k] = span(wp[k], a, tt_v, tt) if tt > 0.0 else 0.0
        if not (U[k] > 0.0):
            continue
        npos = insert_deepest(order, npos, U, k)     # positive overlaps by (-U, row)
    # 2. links: WP on an end point; parallel segments sharing an end point
    for t in range(npos):
        k = order[t]
        w = element[s + k]
        for i in range(npos):
            j = order[i]
            g = element[s + j]
            if j == k or ea[w, 0] == eb[w, 0] and ea[w, 1] == eb[w, 1]:
                continue
            if tq[k] <= AT_END and (tq[j] <= AT_END and same(vld(&ea[w, 0]), vld(&ea[g, 0])) or
                                    tq[j] >= 1.0 - AT_END and same(vld(&ea[w, 0]),
                                                                   vld(&eb[g, 0]))):
                uf_join(parent, k, j)
            elif tq[k] >= 1.0 - AT_END and (
                    tq[j] <= AT_END and same(vld(&eb[w, 0]), vld(&ea[g, 0])) or
                    tq[j] >= 1.0 - AT_END and same(vld(&eb[w, 0]), vld(&eb[g, 0]))):
                uf_join(parent, k, j)
            elif vdot(ns[k], ns[j]) >= PARALLEL and (
                    same(vld(&ea[w, 0]), vld(&ea[g, 0])) or same(vld(&ea[w, 0]), vld(&eb[g, 0]))
                    or same(vld(&eb[w, 0]), vld(&ea[g, 0]))
                    or same(vld(&eb[w, 0]), vld(&eb[g, 0]))):
                uf_join(parent, k, j)
    # 3./4. one contact per linked set, held by its largest U
    for t in range(npos):
        h = order[t]
        g = uf_root(parent, h)
        if done[g]:
            continue
        done[g] = 1
        dsum = 0.0
        d2sum = 0.0
        es = V(0.0, 0.0, 0.0)
        nsum = V(0.0, 0.0, 0.0)
        for i in range(t, npos):
            j = order[i]
            if uf_root(parent, j) == g:
                lead[j] = h
                dsum = dsum + fs[j][0]
                d2sum = d2sum + fs[j][1]
                es = vadd(es, V(fs[j][2], fs[j][3], 0.0))
                nsum = vadd(nsum, vscale(ns[j], fs[j][0]))
        if dsum > 0.0:                       # phplane's law over the set's corners
            n = vscale(nsum, 1.0 / sqrt(vdot(nsum, nsum)))
            es = vscale(es, 1.0 / dsum)
            foot = vsub(es, vscale(n, vdot(vsub(es, wp[h]), n)))
            un = -dsum
            cr = vscale(n, -0.5 * d2sum / dsum)
        else:                                # the holder's Minkowski overlap
            n = nk[h]
            foot = wp[h]
            un = -U[h]
            cr = vscale(n, 0.5 * un)
        x2 = vsub(x, foot)
        if not was[h]:                       # continuity from the set's last holder
            for i in range(npos):
                j = order[i]
                if was[j] and lead[j] == h:
                    for k in range(S_NCOLS):
                        state[s + h, k] = state[s + j, k]
                    active[s + h] = 1
                    break
        vst(&branch[s + h, 0], cr)
        vst(&branch[s + h, 3], vsub(cr, x2))
        L = contact_update(cr, n, un, x2, V(0.0, 0.0, 0.0), vld(&vel[p, 0]), V(0.0, 0.0, 0.0),
                           vld(&angvel[p, 0]), 0.0, R, mass[p], R,
                           &table[ematerial[element[s + h]] * nmat + material[p], 0], dt, flags,
                           &active[s + h], &state[s + h, 0], NULL)
        if not (U[h] / R <= worst[0]):
            worst[0] = U[h] / R
            worst[1] = <double>(s + h)
    for k in range(m):                       # only holders keep a state
        if lead[k] != k:
            active[s + k] = 0
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
def polygon_elements(const long[::1] group_start, const int[::1] particle,
                     const int[::1] element, const double[:, ::1] pos,
                     const double[:, ::1] vel, const double[:, ::1] angvel,
                     const double[:, ::1] orient, const int[::1] template,
                     const double[::1] radius, const double[::1] mass,
                     const int[::1] material, const long[::1] voff,
                     const double[:, ::1] vdata, const double[:, ::1] ea,
                     const double[:, ::1] eb, const int[::1] ematerial,
                     const signed char[::1] skip, const signed char[:, ::1] free_end,
                     const double[:, ::1] chain, const double[:, ::1] pair_table,
                     int n_materials, double dt, int flags,
                     signed char[::1] active, double[:, ::1] state, double[:, ::1] branch,
                     signed char[::1] status, int n_threads):
    """All polygon-element contacts of one step (the module comment). Elements: a[w],
    b[w] (a == b: a point), material, skip (a point ending a segment), free_end (w, 2):
    no other segment ends at a / b. Outputs: state, active (holders only), branch (b1,
    b2 of the holders), status (gjk.pxd MK_* of the edge queries). chain (w, 2): the
    parameter range of the straight chain of segments through w (the face part needs
    the centroid's projection in it). Returns (worst U / R,
    its row, first row of a group over MAX_ROWS rows or MAX_CORNERS corners, or -1)."""
    cdef Py_ssize_t ng = group_start.shape[0] - 1, gi
    cdef int nt = max(1, n_threads), tid
    if ng <= 0:
        return 0.0, -1, -1
    if state.shape[1] != S_NCOLS or branch.shape[0] < particle.shape[0] or \
            status.shape[0] < particle.shape[0]:
        raise ValueError("polygon_elements: state width %d, branch %d, status %d rows"
                         % (state.shape[1], branch.shape[0], status.shape[0]))
    cdef double[:, ::1] worst = worst_init(nt)
    cdef long[::1] crowded = np.full(nt, -1, np.int64)
    for gi in prange(ng, nogil=True, schedule='static', num_threads=nt):
        tid = threadid()
        if polygon_group(group_start[gi], group_start[gi + 1], particle[group_start[gi]],
                         element, pos, vel, angvel, orient, template, radius, mass, material,
                         voff, vdata, ea, eb, ematerial, skip, free_end, chain, pair_table,
                         n_materials, dt, flags, active, state, branch, status,
                         &worst[tid, 0]) < 0:
            if crowded[tid] < 0:
                crowded[tid] = group_start[gi]
    found = [int(c) for c in crowded if c >= 0]
    return pick_worst(worst) + (min(found) if found else -1,)
