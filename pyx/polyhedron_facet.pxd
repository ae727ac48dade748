# Polyhedron-triangle contact geometry for faceted walls (issue 17 with seed 004;
# docs/polyhedra.md "Mesh walls"), used by the group kernel of pyx/facets.pyx.
#
# Per candidate facet f (corners a, b, c; ns its unit normal on the side of the
# polyhedron's centroid) two contributions:
#   face part:  the polyhedron's vertices below f's plane whose projection along ns lies
#               in the closed triangle, each with its depth d_v: the vertex sum of the
#               phplane law (docs/polyhedra.md "Planes") restricted to the facet. A vertex
#               counts once among near-coplanar facets (normals within the wall's cutoff
#               angle): the first row (facet order) that holds it claims it, so a flat
#               mesh of many triangles partitions the vertices exactly as a plane does;
#   edge part:  when no vertex lies below the face, GJK/EPA of the triangle (body A) and
#               the polytope (body B) (gjk.pxd): a mesh edge or corner pushing into a
#               face of the polyhedron, its Minkowski overlap delta_M, normal n_M (wall
#               to particle) and witness points (p_A on the triangle: seed 004's wall
#               contact point WP).
# The group kernel then applies seed 004's linking, proximity and continuity rules with
# the overlap U = the deepest vertex's depth (face part) or delta_M (edge part).
from libc.math cimport sqrt
from vecmath cimport v3, V, vld, vadd, vsub, vscale, vdot, vcross, mtdot, q2m, quat, m33
from gjk cimport Convex, MinkResult, cv_poly, mk_query

cdef enum:
    PF_MAXV = 256           # vertices of one polyhedron (per-group stack arrays)


cdef inline void poly_world(const double* x, const double* q, const double* verts, int nv,
                            v3* xv) noexcept nogil:
    """World positions of the nv body-frame vertices of a polyhedron at x, turned by q."""
    cdef quat qq
    cdef m33 M
    cdef int i
    qq.w = q[0]; qq.x = q[1]; qq.y = q[2]; qq.z = q[3]
    M = q2m(qq)
    for i in range(nv):
        xv[i] = vadd(vld(x), mtdot(M, V(verts[3 * i], verts[3 * i + 1], verts[3 * i + 2])))


cdef inline int face_sums(const v3* xv, int nv, v3 a, v3 b, v3 c, v3 ns, int k,
                          int* claim, const v3* row_normal, double cos_t,
                          double* sums) noexcept nogil:
    """The face part of row k: sums[0] = sum d_v, sums[1] = sum d_v^2, sums[2:5] = sum
    d_v x_v, sums[5] = max d_v over the unclaimed vertices below the plane of abc
    (normal ns) that project into the closed triangle (barycentric weights >= -1e-12);
    claims them (claim[v] = k; a vertex claimed by a row whose normal is within the
    cutoff angle, cos_t, is skipped). Returns the deepest vertex or -1."""
    cdef v3 e1 = vsub(b, a), e2 = vsub(c, a), nt = vcross(e1, e2), w, p
    cdef double inv = 1.0 / vdot(nt, nt), d, u, v
    cdef int i, deepest = -1
    for i in range(6):
        sums[i] = 0.0
    for i in range(nv):
        d = -vdot(ns, vsub(xv[i], a))
        if not (d > 0.0):
            continue
        if claim[i] >= 0 and vdot(row_normal[claim[i]], ns) >= cos_t:
            continue
        p = vadd(xv[i], vscale(ns, d))          # the projection on the plane
        w = vsub(p, a)
        u = vdot(vcross(w, e2), nt) * inv       # weight of b
        v = vdot(vcross(e1, w), nt) * inv       # weight of c
        if u < -1e-12 or v < -1e-12 or u + v > 1.0 + 1e-12:
            continue
        if claim[i] < 0:
            claim[i] = k
        sums[0] += d
        sums[1] += d * d
        sums[2] += d * xv[i].x
        sums[3] += d * xv[i].y
        sums[4] += d * xv[i].z
        if d > sums[5]:
            sums[5] = d
            deepest = i
    return deepest


cdef inline void edge_query(const double* x, const double* q, const double* verts, int nv,
                            double bound, v3 a, v3 b, v3 c, MinkResult* res) noexcept nogil:
    """GJK/EPA of the triangle abc (body A) and the polyhedron (body B); contact
    detection (exit_gap 0), cold start from the line of centres, tol 1e-12."""
    cdef double tv[9]
    cdef v3 o = vscale(vadd(vadd(a, b), c), 1.0 / 3.0), r
    cdef double ra = 0.0, t
    cdef Convex A, B
    cdef int i
    for i in range(3):
        r = vsub(a if i == 0 else (b if i == 1 else c), o)
        tv[3 * i] = r.x; tv[3 * i + 1] = r.y; tv[3 * i + 2] = r.z
        t = vdot(r, r)
        if t > ra:
            ra = t
    A = cv_poly(o, NULL, tv, 3, sqrt(ra))
    B = cv_poly(vld(x), q, verts, nv, bound)
    mk_query(&A, &B, V(0.0, 0.0, 0.0), 0.0, 1e-12, 100, res)
