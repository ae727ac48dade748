# cython: language_level=3
"""Ball-facet geometry for faceted walls: closest point of a facet to each ball centre,
its distance and the region of the facet it lies on (seed 004, "Faceted Wall Contact
Resolution"; parametric form of seed 002's particle-triangle section; region method of
Ericson, Real-Time Collision Detection 5.1.5 -- see trigeom.pxd for the region codes:
0 face, 1..3 edges E1..E3, 4..6 vertices V1..V3).

Data layout. Queries k = 0..n-1: centre (n, 3) float64 and the facet to test,
facet_index (n,) int32, into a wall's vertices (nv, 3) float64 and facets (nf, 3) int64
(pdem.contact.mesh.Mesh). Outputs per query: closest point (n, 3), unsigned distance
(n,), region (n,) int32, barycentric weights (n, 3). Each query is independent, so the
static prange gives the same bits for any thread count.
"""
cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport sqrt
from prefetch cimport prefetch
from vecmath cimport v3, vld, vst, vsub, vdot, lowest_along
from trigeom cimport tri_closest
import numpy as np


cdef inline double one_query(v3 p, v3 a, v3 b, v3 c, double* point, int* region,
                             double* bary) noexcept nogil:
    """One query with its own locals (a variable only written through a pointer inside
    a prange body would be shared between threads)."""
    cdef v3 q, d
    region[0] = tri_closest(p, a, b, c, &q, &bary[0], &bary[1], &bary[2])
    vst(point, q)
    d = vsub(q, p)
    return sqrt(vdot(d, d))


def closest_points(centres, facet_index, vertices, facets, int threads=1):
    """Closest point of facet facet_index[k] to centres[k] for every k.

    Returns (points (n, 3), distance (n,), region (n,) int32, bary (n, 3)); region codes
    0 face, 1 edge V1-V2, 2 edge V2-V3, 3 edge V3-V1, 4 V1, 5 V2, 6 V3 (local vertex
    r - 4 of the facet; local edge r - 1)."""
    cdef const double[:, ::1] x = np.ascontiguousarray(centres, dtype=np.float64).reshape(-1, 3)
    cdef const int[::1] fi = np.ascontiguousarray(facet_index, dtype=np.int32).reshape(-1)
    cdef const double[:, ::1] vert = np.ascontiguousarray(vertices, dtype=np.float64)
    cdef const long long[:, ::1] fac = np.ascontiguousarray(facets, dtype=np.int64)
    cdef Py_ssize_t n = x.shape[0], k
    if fi.shape[0] != n:
        raise ValueError("closest_points: %d centres but %d facet indices" % (n, fi.shape[0]))
    if vert.shape[1] != 3 or fac.shape[1] != 3:
        raise ValueError("closest_points: vertices and facets must have 3 columns")
    fi_np = np.asarray(fi)
    if n and (fi_np.min() < 0 or fi_np.max() >= fac.shape[0]):
        raise ValueError("closest_points: facet index outside 0..%d" % (fac.shape[0] - 1))
    fac_np = np.asarray(fac)
    if fac.shape[0] and (fac_np.min() < 0 or fac_np.max() >= vert.shape[0]):
        raise ValueError("closest_points: facets refer to vertices outside 0..%d"
                         % (vert.shape[0] - 1))
    points_np = np.empty((n, 3))
    dist_np = np.empty(n)
    region_np = np.empty(n, dtype=np.int32)
    bary_np = np.empty((n, 3))
    cdef double[:, ::1] points = points_np
    cdef double[::1] dist = dist_np
    cdef int[::1] region = region_np
    cdef double[:, ::1] bary = bary_np
    cdef int nt = max(1, threads)
    cdef long long f
    for k in prange(n, nogil=True, schedule='static', num_threads=nt):
        f = fi[k]
        dist[k] = one_query(vld(&x[k, 0]), vld(&vert[fac[f, 0], 0]), vld(&vert[fac[f, 1], 0]),
                            vld(&vert[fac[f, 2], 0]), &points[k, 0], &region[k], &bary[k, 0])
    return points_np, dist_np, region_np, bary_np


# --------------------------------------------------------------------------------------
# Ball-facet contacts of faceted walls, one step (seed 004, "Faceted Wall Contact
# Resolution", "Continuity of Contact-State Information", "... at Concave Edges").
#
# Rows are the candidate (ball, facet) pairs of the Verlet list, sorted by (ball id,
# facet); the rows of one ball and one wall form a group (group_start). Per group:
#  1. wall contact point WP = closest point of the facet, its region, d = |x - WP|,
#     overlap U = R - d; a ball on an inactive side of a facet does not see it;
#  2. associative logic (pdem/contact/associative.py states the rules): links through
#     shared edges/vertices between contacts with U > 0, processed in decreasing U
#     (ties: facet index); the largest U of a linked set is its active contact;
#  3. "full" mode: the sliver/wedge check (resolve_full);
#  4. proximity contacts: active contacts whose facet normals differ by less than the
#     wall's cutoff angle Theta are combined; once combined, linked sets with a
#     positive-overlap member on a facet adjacent (sharing a vertex) to a facet of the
#     proximity contact whose normal differs from it by less than Theta join it. A
#     proximity contact has the overlap-weighted normal sum_a U_a n_a / |.| and the
#     mean overlap over its linked sets' active contacts (one per set, so a flat wall
#     split in many facets counts once);
#  5. continuity: the state of an effective contact (a linked set's active contact or a
#     proximity contact) lives in the row of its holder, its active contact of largest
#     U. When the holder changes, the state (T, u, phi, u0, phi0: the law history) of
#     the previously active row of the same linked set / proximity contact whose facet
#     normal is within Theta of the new holder's is copied over; otherwise the contact
#     forms afresh. Membership of a linked set is the seed's proxy for "no hole";
#  6. the contact: wall = body 1, an equivalent sphere of radius 0 at the foot point
#     WP (for a proximity contact x - (R - U) n), moving with the wall's velocity there
#     (rigid: v + w x (foot - W_r), spin w; deformable: the holder facet's barycentric
#     interpolation of the vertex velocities, no spin); ball = body 2. n points from
#     the wall to the ball centre (the seed's n from the centre to WP, reversed, as
#     for planes), u_n = -U; the contact point is the middle of the overlap.
# Polyhedra (kind phmesh, docs/polyhedra.md "Mesh walls"): step 1 per facet the vertex
# sums below the face (polyhedron_facet.pxd; sheet_escape for a body around a sheet's
# boundary edge) or GJK/EPA; step 6 phplane's vertex-sum law over the contact's rows.
# Each group is independent and writes only its own rows: any thread count gives the
# same bits.
# --------------------------------------------------------------------------------------
from libc.math cimport INFINITY
from libc.stdlib cimport malloc, realloc, free
from cellgrid cimport cell_index, cell_sort, grid_size
from contact_row cimport S_NCOLS, Load, contact_update, wall_work, opened
from laws cimport E_NCOLS
from vecmath cimport V, vadd, vscale, vcross, vneg
from ellipsoid cimport Ell, ell_make, ell_support, ell_radii, tangent_basis, hertz_radius
from ellipsoid_facet cimport ell_triangle
from gjk cimport MinkResult, MK_OVERLAP, cv_poly, cv_support, Convex
from polyhedron_facet cimport PF_MAXV, poly_world, face_sums, edge_query
from union_find cimport uf_root, uf_join
from worst_overlap cimport insert_deepest, worst_init, pick_worst

cdef enum:
    GROUP_AHEAD = 4       # ball_facet: a group's particle data is fetched this far ahead
    MAXC = 256      # candidate facets of one ball and one wall

MAX_FACETS_PER_BALL = MAXC
MAX_POLYHEDRON_VERTICES = PF_MAXV


cdef inline bint seg_crosses(v3 a, v3 b, v3 t0, v3 t1, v3 t2) noexcept nogil:
    """associative.segment_crosses_triangles for one triangle (Moeller-Trumbore)."""
    cdef v3 d = vsub(b, a), e1 = vsub(t1, t0), e2 = vsub(t2, t0), p, s, q
    cdef double det, inv, u, v, t, tol = 1e-12
    p = vcross(d, e2)
    det = vdot(e1, p)
    if not (fabs_(det) > 1e-14 * sqrt(vdot(d, d)) * sqrt(vdot(e1, e1)) * sqrt(vdot(e2, e2))):
        return False
    inv = 1.0 / det
    s = vsub(a, t0)
    u = vdot(s, p) * inv
    q = vcross(s, e1)
    v = vdot(q, d) * inv
    t = vdot(e2, q) * inv
    return u >= -tol and v >= -tol and u + v <= 1.0 + tol and t > tol and t < 1.0 - tol


cdef inline double fabs_(double x) noexcept nogil:
    return -x if x < 0.0 else x


cdef inline bint share_vertex(const long long[:, ::1] fac, long long f, long long g) noexcept nogil:
    cdef int i, j
    for i in range(3):
        for j in range(3):
            if fac[f, i] == fac[g, j]:
                return True
    return False


cdef struct Mesh:
    const double* vert
    const long long* fac
    const double* normal
    const long long* facet_edges
    const long long* edge_facets
    const long long* vf_ptr
    const long long* vf_idx
    const signed char* side_off
    double* energy          # NULL, or per row the energy terms (laws.pxd E_*)


cdef inline v3 corner(Mesh M, long long f, int i) noexcept nogil:
    return vld(&M.vert[3 * M.fac[3 * f + i]])


cdef double sheet_escape(Mesh M, const int* facet, int m, v3 x, v3 nk, double cosc,
                         const v3* xv, int nv) noexcept nogil:
    """How far the polyhedron (world vertices xv, centroid x) must move to leave, across
    a boundary edge (an edge of one facet only), the sheet of the candidate facets whose
    normal on the centroid's side is within the cutoff of nk: min over those edges of
    m.A - min_v m.x_v, m the edge's outward normal in its facet's plane. Smaller than a
    face's deepest vertex: the body wraps around the sheet's edge (a rock across the top
    of a rim) and the vertex depths below the face are not its overlap."""
    cdef double best = INFINITY, pen, sd
    cdef int j, e
    cdef long long g, edge
    cdef v3 ng, A, B, C, mm
    for j in range(m):
        g = facet[j]
        ng = vld(&M.normal[3 * g])
        sd = vdot(ng, vsub(x, corner(M, g, 0)))
        if sd < 0.0:
            ng = vneg(ng)
        if vdot(ng, nk) < cosc:
            continue
        for e in range(3):
            edge = M.facet_edges[3 * g + e]
            if M.edge_facets[2 * edge] >= 0 and M.edge_facets[2 * edge + 1] >= 0:
                continue                   # shared: the surface goes on
            A = corner(M, g, e)
            B = corner(M, g, (e + 1) % 3)
            C = corner(M, g, (e + 2) % 3)
            mm = vcross(vsub(B, A), ng)
            if vdot(mm, vsub(C, A)) > 0.0:
                mm = vneg(mm)
            mm = vscale(mm, 1.0 / sqrt(vdot(mm, mm)))
            pen = vdot(mm, A) - lowest_along(mm, xv, nv)
            if pen < best:
                best = pen
    return best


cdef int ball_wall_group(Py_ssize_t s, Py_ssize_t e, int p, int w, const int* facet, Mesh M,
                         const long long[:, ::1] fac,
                         const double[:, ::1] pos, const double[:, ::1] vel,
                         const double[:, ::1] angvel, const double[::1] radius,
                         const double[::1] mass, const int[::1] material,
                         const int[::1] wall_material, const double[::1] wall_cos_theta,
                         const signed char[::1] wall_full, const signed char[::1] wall_rigid,
                         const double[:, ::1] wall_v, const double[:, ::1] wall_w,
                         const double[:, ::1] wall_ref, const double[:, ::1] vertex_vel,
                         const double[:, ::1] table, int nmat, double dt, int flags,
                         signed char[::1] active, double[:, ::1] state,
                         int[::1] holder_out,
                         double* worst, bint ell, const double[:, ::1] orient,
                         const double[:, ::1] semi_axes, double[:, ::1] branch,
                         bint poly, const int[::1] template, const long[::1] voff,
                         const double[:, ::1] vdata, signed char[::1] status) noexcept nogil:
    """One ball and the candidate facets of one wall (rows s..e-1); returns 0, or -1
    when the group has more than MAXC rows. ell: the particle is an ellipsoid
    (ellipsoid_facet.pxd geometry; the rows' branch vectors b1 = c - foot, b2 = c - x
    go to `branch` for the torques, as in ellipsoid_contacts.pyx). poly: a polyhedron
    (polyhedron_facet.pxd: per row the vertex sums or GJK/EPA, status per row; the
    effective contact's law below; branch vectors as for ellipsoids)."""
    cdef int m = <int>(e - s), k, j, t, i, npos = 0, r, g, a, b, h, nsets, changed
    cdef double U[MAXC]
    cdef double bw[MAXC][3]
    cdef v3 q[MAXC]
    cdef v3 nc[MAXC]
    cdef int reg[MAXC]
    cdef int order[MAXC]
    cdef int parent[MAXC]
    cdef int lead[MAXC]
    cdef int first[MAXC]
    cdef int pcp[MAXC]
    cdef int npc[MAXC]
    cdef signed char was[MAXC]
    cdef signed char handed[MAXC]        # an active row whose state a new holder took
    cdef signed char act[MAXC]
    cdef signed char done[MAXC]
    cdef v3 fp[MAXC]
    cdef v3 x, dv, fn, nsum, n, x2, foot, v1, w1, es, t1, t2
    cdef double R, d, sd, cos_t, usum, un, reff, r2, eh, size
    cdef double Rc[3]
    cdef double Z[3]
    cdef double* En
    cdef Load L
    cdef long long f, edge, vtx, ii
    cdef Ell E
    cdef v3 cr
    # polyhedra: world vertices, their claims, per row the face sums (face_sums)
    cdef v3 xv[PF_MAXV]
    cdef int claim[PF_MAXV]
    cdef double fs[MAXC][6]
    cdef v3 ns[MAXC]
    cdef int nv = 0, tp
    cdef double cosc
    cdef MinkResult res
    cdef Convex P
    if m > MAXC:
        return -1
    if poly:
        tp = template[p]
        nv = <int>(voff[tp + 1] - voff[tp])
        poly_world(&pos[p, 0], &orient[p, 0], &vdata[voff[tp], 0], nv, xv)
        for i in range(nv):
            claim[i] = -1
    x = vld(&pos[p, 0])
    R = radius[p]
    size = R
    if ell:
        E = ell_make(&pos[p, 0], &orient[p, 0], &semi_axes[p, 0])
        size = min(min(semi_axes[p, 0], semi_axes[p, 1]), semi_axes[p, 2])
    cos_t = wall_cos_theta[w]
    # 1. closest points, overlaps, sides; positive overlaps sorted (-U, facet)
    for k in range(m):
        f = facet[s + k]
        was[k] = active[s + k]
        handed[k] = 0
        holder_out[s + k] = -1
        parent[k] = k
        first[k] = -1
        lead[k] = -1
        act[k] = 0
        done[k] = 0
        fn = vld(&M.normal[3 * f])
        sd = vdot(fn, vsub(x, corner(M, f, 0)))
        reg[k] = tri_closest(x, corner(M, f, 0), corner(M, f, 1), corner(M, f, 2), &q[k],
                             &bw[k][0], &bw[k][1], &bw[k][2])
        dv = vsub(x, q[k])
        d = sqrt(vdot(dv, dv))
        if ell and d < R:                  # within the bounding sphere: E's geometry
            reg[k] = ell_triangle(&E, corner(M, f, 0), corner(M, f, 1), corner(M, f, 2), fn,
                                  &nc[k], &d, &fp[k], &q[k], &bw[k][0], True)
            U[k] = -d
        if (sd >= 0.0 and (M.side_off[f] & 1)) or (sd < 0.0 and (M.side_off[f] & 2)):
            U[k] = -INFINITY
            continue
        if poly:
            status[s + k] = 0
            ns[k] = fn if sd >= 0.0 else vneg(fn)
            for i in range(6):
                fs[k][i] = 0.0
            if d < R:                      # within the bounding sphere
                cosc = cos_t if cos_t < 1.0 - 1e-12 else 1.0 - 1e-12
                i = face_sums(xv, nv, corner(M, f, 0), corner(M, f, 1), corner(M, f, 2), ns[k],
                              k, claim, ns, cosc, fs[k])
                if i >= 0 and sheet_escape(M, &facet[s], m, x, ns[k], cosc, xv, nv) < fs[k][5]:
                    for j in range(nv):    # around a sheet's edge: the edge part decides
                        if claim[j] == k:
                            claim[j] = -1
                    for j in range(6):
                        fs[k][j] = 0.0
                    i = -1
                if i >= 0:                 # WP: the deepest vertex's projection
                    U[k] = fs[k][5]
                    nc[k] = ns[k]
                    reg[k] = tri_closest(vadd(xv[i], vscale(ns[k], U[k])), corner(M, f, 0),
                                         corner(M, f, 1), corner(M, f, 2), &q[k], &bw[k][0],
                                         &bw[k][1], &bw[k][2])
                else:
                    edge_query(&pos[p, 0], &orient[p, 0], &vdata[voff[tp], 0], nv, R,
                               corner(M, f, 0), corner(M, f, 1), corner(M, f, 2), &res)
                    status[s + k] = res.status
                    U[k] = -res.gap if res.status == MK_OVERLAP else -INFINITY
                    if res.status == MK_OVERLAP:   # WP: the witness point on the triangle
                        nc[k] = res.n
                        reg[k] = tri_closest(res.pa, corner(M, f, 0), corner(M, f, 1),
                                             corner(M, f, 2), &q[k], &bw[k][0], &bw[k][1],
                                             &bw[k][2])
            else:
                U[k] = R - d
        elif not ell or R <= sqrt(vdot(dv, dv)):   # a sphere, or E beyond its bounding sphere
            U[k] = R - d
            if d > 1e-12 * R:
                nc[k] = vscale(dv, 1.0 / d)
            else:
                nc[k] = fn if sd >= 0.0 else vneg(fn)
        if not (U[k] > 0.0):
            continue
        npos = insert_deepest(order, npos, U, k)     # rows come in facet order: stable
    # 2. associative logic: links through the region's shared edge or vertex
    for t in range(npos):
        k = order[t]
        f = facet[s + k]
        r = reg[k]
        if 1 <= r <= 3:
            edge = M.facet_edges[3 * f + r - 1]
            for i in range(2):
                g = <int>M.edge_facets[2 * edge + i]
                if g >= 0 and g != f:
                    for j in range(m):
                        if facet[s + j] == g and U[j] > 0.0:
                            uf_join(parent, k, j)
        elif 4 <= r <= 6:
            vtx = M.fac[3 * f + r - 4]
            for ii in range(M.vf_ptr[vtx], M.vf_ptr[vtx + 1]):
                g = <int>M.vf_idx[ii]
                if g != f:
                    for j in range(m):
                        if facet[s + j] == g and U[j] > 0.0:
                            uf_join(parent, k, j)
    for t in range(npos):
        k = order[t]
        r = uf_root(parent, k)
        if first[r] < 0:
            first[r] = k
        lead[k] = first[r]
        act[k] = lead[k] == k
    # 3. full mode: sliver and wedge check
    if wall_full[w]:
        for t in range(npos):
            k = order[t]
            if not act[k]:
                continue
            for i in range(npos):
                j = order[i]
                if lead[j] == lead[k] or not act[lead[j]]:
                    continue
                f = facet[s + j]
                if seg_crosses(x, q[k], corner(M, f, 0), corner(M, f, 1), corner(M, f, 2)):
                    act[k] = 0
                    g = lead[j]
                    for a in range(m):
                        if lead[a] == k:
                            lead[a] = g
                    break
    # 4. proximity contacts: union of active contacts (pcp over rows)
    for k in range(m):
        pcp[k] = k
    if cos_t < 1.0:
        for t in range(npos):
            a = order[t]
            if not act[a]:
                continue
            for i in range(t + 1, npos):
                b = order[i]
                if act[b] and vdot(vld(&M.normal[3 * facet[s + a]]),
                                   vld(&M.normal[3 * facet[s + b]])) > cos_t:
                    uf_join(pcp, a, b)
        changed = 1
        while changed:             # growth of proximity contacts through adjacent facets
            changed = 0
            for k in range(m):
                npc[k] = 0
            for t in range(npos):
                k = order[t]
                if act[k]:
                    npc[uf_root(pcp, k)] += 1
            for t in range(npos):
                a = order[t]
                for i in range(npos):
                    b = order[i]
                    g = uf_root(pcp, lead[a])
                    h = uf_root(pcp, lead[b])
                    if g == h or npc[g] < 2:
                        continue
                    if share_vertex(fac, facet[s + a], facet[s + b]) and \
                            vdot(vld(&M.normal[3 * facet[s + a]]),
                                 vld(&M.normal[3 * facet[s + b]])) > cos_t:
                        uf_join(pcp, g, h)
                        changed = 1
    # 5./6. one effective contact per proximity root
    for t in range(npos):
        h = order[t]
        g = uf_root(pcp, h)
        if not act[h] or done[g]:
            continue
        done[g] = 1
        nsets = 0
        nsum = V(0.0, 0.0, 0.0)
        usum = 0.0
        for i in range(t, npos):
            a = order[i]
            if act[a] and uf_root(pcp, a) == g:
                nsets += 1
                nsum = vadd(nsum, vscale(nc[a], U[a]))
                usum = usum + U[a]
        if nsets == 1:
            n = nc[h]
            un = -U[h]
            foot = fp[h] if ell else q[h]
            x2 = vsub(x, foot)
        else:
            n = vscale(nsum, 1.0 / sqrt(vdot(nsum, nsum)))
            un = -usum / nsets
            if ell:                        # E's support point along -n, back by u_n
                eh = ell_support(&E, n, &es)
                x2 = vadd(es, vscale(n, un))
            elif poly:                     # the polyhedron's support point along -n
                P = cv_poly(x, &orient[p, 0], &vdata[voff[tp], 0], nv, R)
                x2 = vadd(vsub(x, cv_support(&P, vneg(n))), vscale(n, un))
            else:
                x2 = vscale(n, R + un)
            foot = vsub(x, x2)
        cr = vscale(n, 0.5 * un)           # the contact point, from the foot
        if poly:                           # the vertex sums of the contact's facets
            usum = 0.0
            d = 0.0
            es = V(0.0, 0.0, 0.0)
            nsum = V(0.0, 0.0, 0.0)
            for i in range(npos):          # (full mode can put rows before the holder)
                a = order[i]
                if uf_root(pcp, lead[a]) == g:
                    usum = usum + fs[a][0]
                    d = d + fs[a][1]
                    es = vadd(es, V(fs[a][2], fs[a][3], fs[a][4]))
                    nsum = vadd(nsum, vscale(ns[a], fs[a][0]))
            if usum > 0.0:                 # phplane's law: u_n = -sum d_v along the
                n = vscale(nsum, 1.0 / sqrt(vdot(nsum, nsum)))   # d-weighted normal at
                es = vscale(es, 1.0 / usum)      # the d-weighted centroid, on the
                foot = vsub(es, vscale(n, vdot(vsub(es, q[h]), n)))   # holder's plane,
                x2 = vsub(x, foot)         # lifted to half the weighted mean depth
                un = -usum
                cr = vscale(n, -0.5 * d / usum)
        if not was[h]:                     # continuity from this contact's last holder
            fn = vld(&M.normal[3 * facet[s + h]])
            for i in range(npos):
                a = order[i]
                if was[a] and uf_root(pcp, lead[a]) == g and \
                        vdot(vld(&M.normal[3 * facet[s + a]]), fn) >= cos_t - 1e-12:
                    for j in range(S_NCOLS):
                        state[s + h, j] = state[s + a, j]
                    active[s + h] = 1
                    handed[a] = 1
                    break
        for i in range(npos):
            a = order[i]
            if uf_root(pcp, lead[a]) == g:
                holder_out[s + a] = <int>(s + h)
        if wall_rigid[w]:
            w1 = vld(&wall_w[w, 0])
            v1 = vadd(vld(&wall_v[w, 0]), vcross(w1, vsub(foot, vld(&wall_ref[w, 0]))))
        else:
            w1 = V(0.0, 0.0, 0.0)
            f = facet[s + h]
            v1 = V(0.0, 0.0, 0.0)
            for i in range(3):
                v1 = vadd(v1, vscale(vld(&vertex_vel[fac[f, i], 0]), bw[h][i]))
        r2 = R
        reff = R
        if ell:                            # as ellipsoid-plane: R* of E's surface at c2
            eh = ell_support(&E, n, &es)
            tangent_basis(n, &t1, &t2, False)
            ell_radii(&E, es, eh, t1, t2, Rc)
            Z[0] = 0.0; Z[1] = 0.0; Z[2] = 0.0
            reff = hertz_radius(Rc, Z, False)
            r2 = eh
        if ell or poly:
            vst(&branch[s + h, 0], cr)
            vst(&branch[s + h, 3], vsub(cr, x2))
        En = NULL if M.energy == NULL else M.energy + (s + h) * E_NCOLS
        L = contact_update(cr, n, un, x2, v1, vld(&vel[p, 0]), w1,
                           vld(&angvel[p, 0]), 0.0, r2, mass[p], reff,
                           &table[wall_material[w] * nmat + material[p], 0], dt, flags,
                           &active[s + h], &state[s + h, 0], En)
        wall_work(En, L, cr, v1, w1, dt)
        if poly:                           # the deepest overlap, not the vertex sum
            un = -U[h]
        if not (-un / size <= worst[0]):
            worst[0] = -un / size
            worst[1] = <double>(s + h)
    for k in range(m):                     # only holders keep a state
        if holder_out[s + k] != s + k:
            if M.energy != NULL and was[k] and not handed[k]:     # a contact that opened
                opened(&table[wall_material[w] * nmat + material[p], 0], R, &state[s + k, 0],
                       M.energy + (s + k) * E_NCOLS)
            active[s + k] = 0
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
def ball_facet(const long long[::1] group_start, const int[::1] particle, const int[::1] facet,
               const double[:, ::1] pos, const double[:, ::1] vel, const double[:, ::1] angvel,
               const double[::1] radius, const double[::1] mass, const int[::1] material,
               const double[:, ::1] vertices, const long long[:, ::1] facets,
               const double[:, ::1] normals, const int[::1] facet_wall,
               const long long[:, ::1] facet_edges, const long long[:, ::1] edge_facets,
               const long long[::1] vertex_facet_ptr, const long long[::1] vertex_facet_idx,
               const signed char[::1] side_off,
               const int[::1] wall_material, const double[::1] wall_cos_theta,
               const signed char[::1] wall_full, const signed char[::1] wall_rigid,
               const double[:, ::1] wall_v, const double[:, ::1] wall_w,
               const double[:, ::1] wall_ref, const double[:, ::1] vertex_vel,
               const double[:, ::1] pair_table, int n_materials, double dt, int flags,
               signed char[::1] active, double[:, ::1] state, int[::1] holder,
               int n_threads, const double[:, ::1] orient=None,
               const double[:, ::1] semi_axes=None, double[:, ::1] branch=None,
               double[:, ::1] energy=None, const int[::1] template=None,
               const long[::1] voff=None, const double[:, ::1] vdata=None,
               signed char[::1] status=None):
    """All ball-facet contacts of one step (see the section comment above). side_off[f]:
    bit 1 = front side (where the normal points) inactive, bit 2 = back side inactive.
    Outputs: state/active of holder rows; holder[k] = holder row of the effective
    contact row k belongs to, or -1.
    Ellipsoids: orient, semi_axes (per particle) and branch (rows, 6: b1, b2 of each
    holder row, the torque levers) given: every particle is an ellipsoid (semi_axes
    three) and the overlap ratio is U / the smallest semi-axis. energy: None, or per
    row the energy terms (pyx/laws.pxd E_*) of the rows computed (energy tracking).
    Polyhedra: orient, template, voff, vdata (the vertex tables of
    pdem.shape_templates), branch and status (rows: the GJK/EPA status of the edge
    queries, gjk.pxd MK_*) given: every particle is a polyhedron (polyhedron_facet.pxd);
    the overlap ratio is the deepest overlap / the bounding radius.
    Returns (max U / R, its row, first row of a group with more than MAXC facets or -1)."""
    cdef Py_ssize_t ng = group_start.shape[0] - 1, gi
    cdef int nt = max(1, n_threads), tid, ahead
    cdef Mesh M
    cdef bint ell = semi_axes is not None
    cdef bint poly = vdata is not None
    if ng <= 0:
        return 0.0, -1, -1
    if (ell or poly) and (orient is None or branch is None or
                          branch.shape[0] < particle.shape[0]):
        raise ValueError("ball_facet: ellipsoids and polyhedra need orient and branch (rows, 6)")
    if poly and (template is None or voff is None or status is None or
                 status.shape[0] < particle.shape[0] or
                 np.max(np.diff(np.asarray(voff))) > PF_MAXV):
        raise ValueError("ball_facet: polyhedra need template, voff, status (rows) and at "
                         "most %d vertices each" % PF_MAXV)
    if not poly:
        template = np.zeros(1, np.int32)
        voff = np.zeros(2, np.int64)
        vdata = np.zeros((1, 3))
        status = np.zeros(1, np.int8)
    if not ell:
        semi_axes = np.zeros((1, 6))
    if not (ell or poly):
        orient = branch = np.zeros((1, 6))
    M.vert = &vertices[0, 0]
    M.fac = &facets[0, 0]
    M.normal = &normals[0, 0]
    M.facet_edges = &facet_edges[0, 0]
    M.edge_facets = &edge_facets[0, 0]
    M.vf_ptr = &vertex_facet_ptr[0]
    M.vf_idx = &vertex_facet_idx[0]
    M.side_off = &side_off[0]
    M.energy = NULL if energy is None or energy.shape[0] == 0 else &energy[0, 0]
    cdef double[:, ::1] worst = worst_init(nt)
    # first row of a crowded group, per thread (a scalar assigned in a prange body
    # would be lastprivate: only the last iteration's value would survive)
    cdef long long[::1] crowded = np.full(nt, -1, np.int64)
    for gi in prange(ng, nogil=True, schedule='static', num_threads=nt):
        tid = threadid()
        if gi + GROUP_AHEAD < ng:
            # a group's particle is anywhere in memory: its data is fetched while the
            # groups before it are computed
            ahead = particle[group_start[gi + GROUP_AHEAD]]
            prefetch(&pos[ahead, 0])
            prefetch(&vel[ahead, 0])
            prefetch(&angvel[ahead, 0])
            prefetch(&radius[ahead])
            prefetch(&mass[ahead])
            prefetch(&material[ahead])
        if ball_wall_group(group_start[gi], group_start[gi + 1], particle[group_start[gi]],
                           facet_wall[facet[group_start[gi]]], &facet[0], M, facets, pos, vel,
                           angvel, radius, mass, material, wall_material, wall_cos_theta,
                           wall_full, wall_rigid, wall_v, wall_w, wall_ref, vertex_vel,
                           pair_table, n_materials, dt, flags, active, state, holder,
                           &worst[tid, 0], ell, orient, semi_axes, branch, poly, template,
                           voff, vdata, status) < 0:
            if crowded[tid] < 0:
                crowded[tid] = group_start[gi]
    found = [int(c) for c in crowded if c >= 0]
    return pick_worst(worst) + (min(found) if found else -1,)


@cython.boundscheck(False)
@cython.wraparound(False)
def facet_candidates(const double[:, ::1] pos, const double[::1] radius, int n_own,
                     const double[:, ::1] vertices, const long long[:, ::1] facets,
                     const int[::1] facet_list, double skin):
    """Verlet list of ball-facet pairs: (particle, facet) with the ball's surface within
    `skin` of the facet (closest-point distance < R + skin), for owned particles
    0..n_own-1 and the facets in facet_list. Particles are binned in a grid of cells
    of size >= 2 r_max + skin; each facet visits the cells its box enlarged by
    r_max + skin covers: O(particles + facets + pairs). Unsorted."""
    cdef Py_ssize_t n = n_own, nf = facet_list.shape[0], i, k, c, cnt = 0, cap = 1024
    cdef int ax, p
    cdef long long f, ncell
    cdef double rmax = 0.0, inv_h
    cdef double lo[3]
    cdef double hi[3]
    cdef long nc[3]
    cdef long long ilo[3]
    cdef long long ihi[3]
    cdef long long ix, iy, iz
    cdef double blo, bhi, dd, wa, wb, wc
    cdef v3 a, b, cc, qq, x
    if n == 0 or nf == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int32)
    for ax in range(3):
        lo[ax] = pos[0, ax]
        hi[ax] = pos[0, ax]
    for i in range(n):
        rmax = max(rmax, radius[i])
        for ax in range(3):
            lo[ax] = min(lo[ax], pos[i, ax])
            hi[ax] = max(hi[ax], pos[i, ax])
    inv_h = grid_size(lo, hi, 2.0 * rmax + skin, n, nc)
    ncell = nc[0] * nc[1] * nc[2]
    cdef long[::1] cell_of = np.empty(n, np.int64)
    for i in range(n):
        cell_of[i] = cell_index(pos[i, 0], pos[i, 1], pos[i, 2], lo, inv_h, nc)
    cdef long[::1] start = np.zeros(ncell + 1, np.int64)
    cdef int[::1] items = np.empty(n, np.int32)
    cell_sort(cell_of, start, items)
    cdef int* out = <int*>malloc(2 * cap * sizeof(int))
    cdef int* grown
    cdef bint failed = False
    if out == NULL:
        raise MemoryError()
    try:
        with nogil:
            for k in range(nf):
                f = facet_list[k]
                a = vld(&vertices[facets[f, 0], 0])
                b = vld(&vertices[facets[f, 1], 0])
                cc = vld(&vertices[facets[f, 2], 0])
                for ax in range(3):
                    blo = min(min(vertices[facets[f, 0], ax], vertices[facets[f, 1], ax]),
                              vertices[facets[f, 2], ax]) - rmax - skin
                    bhi = max(max(vertices[facets[f, 0], ax], vertices[facets[f, 1], ax]),
                              vertices[facets[f, 2], ax]) + rmax + skin
                    ilo[ax] = <long long>max(0.0, (blo - lo[ax]) * inv_h)
                    ihi[ax] = <long long>min(<double>(nc[ax] - 1), (bhi - lo[ax]) * inv_h)
                    if bhi < lo[ax]:
                        ihi[ax] = -1
                if ilo[0] > ihi[0] or ilo[1] > ihi[1] or ilo[2] > ihi[2]:
                    continue
                for ix in range(ilo[0], ihi[0] + 1):
                    for iy in range(ilo[1], ihi[1] + 1):
                        for iz in range(ilo[2], ihi[2] + 1):
                            c = (ix * nc[1] + iy) * nc[2] + iz
                            for i in range(start[c], start[c + 1]):
                                p = items[i]
                                x = vld(&pos[p, 0])
                                tri_closest(x, a, b, cc, &qq, &wa, &wb, &wc)
                                qq = vsub(qq, x)
                                dd = radius[p] + skin
                                if vdot(qq, qq) < dd * dd:
                                    if cnt == cap:
                                        grown = <int*>realloc(out, 4 * cap * sizeof(int))
                                        if grown == NULL:
                                            failed = True
                                            break
                                        out = grown
                                        cap *= 2
                                    out[2 * cnt] = p
                                    out[2 * cnt + 1] = <int>f
                                    cnt += 1
        if failed:
            raise MemoryError()
        res = np.array(<int[:cnt, :2]>out if cnt else np.zeros((0, 2), np.int32), np.int32)
    finally:
        free(out)
    return np.ascontiguousarray(res[:, 0]), np.ascontiguousarray(res[:, 1])


def ellipsoid_triangle(centre, orientation, semi_axes, triangle):
    """Tests and scripts: ellipsoid_facet.ell_triangle for one ellipsoid (centre, unit
    quaternion w, x, y, z, semi-axes) and one triangle (3, 3) with the right-hand
    normal. Returns (n from the wall to the ellipsoid, gap, foot c2 - g n, wall
    contact point, region code)."""
    cdef double[::1] o = np.ascontiguousarray(centre, dtype=np.float64).reshape(3)
    cdef double[::1] q = np.ascontiguousarray(orientation, dtype=np.float64).reshape(4)
    cdef double[::1] a = np.ascontiguousarray(semi_axes, dtype=np.float64).reshape(3)
    tri = np.ascontiguousarray(triangle, dtype=np.float64).reshape(3, 3)
    nf_np = np.cross(tri[1] - tri[0], tri[2] - tri[0])
    nf_np /= np.linalg.norm(nf_np)
    cdef Ell E = ell_make(&o[0], &q[0], &a[0])
    cdef v3 n, foot, wp
    cdef double g
    cdef double bary[3]
    cdef int region = ell_triangle(&E, V(tri[0, 0], tri[0, 1], tri[0, 2]),
                                   V(tri[1, 0], tri[1, 1], tri[1, 2]),
                                   V(tri[2, 0], tri[2, 1], tri[2, 2]),
                                   V(nf_np[0], nf_np[1], nf_np[2]), &n, &g, &foot, &wp, bary,
                                   False)
    return (np.array([n.x, n.y, n.z]), g, np.array([foot.x, foot.y, foot.z]),
            np.array([wp.x, wp.y, wp.z]), region)
