# Header-only closest point of a triangle to a point (seed 004 "Faceted Wall Contact
# Resolution": the wall contact point is the point of the facet closest to the ball
# centre, found with the triangle in parametric form and the region identified).
#
# Parametric form (seed 002, particle-triangle section): X(v, w) = A + v (B - A) + w (C - A).
# Region selection is the Voronoi-region method of Ericson, Real-Time Collision
# Detection (2005) section 5.1.5 (ClosestPtPointTriangle): dot products of the edge
# vectors with P - A, P - B, P - C decide, in order, vertex A, vertex B, edge AB,
# vertex C, edge AC, edge BC, else the face; only then is the parametric point formed,
# so no division by a vanishing determinant happens outside the face region.
# The edge tests use Ericson's first form, va = n . ((B - P) x (C - P)) (and cyclic) with
# n = AB x AC, rather than his Lagrange-identity shortcut d3 d6 - d5 d4: the shortcut
# cancels catastrophically on slivers (products of size L^4 for a result of size
# |n| L d), which misplaces the point by up to ~1e-16 L^4 / |n|; the cross-product form
# errs by ~1e-16 L. In the face region the point is the projection of P on the plane,
# P - n (n . AP) / (n . n), exact to round-off however thin the triangle; its weights
# are va, vb, vc over n . n (= va + vb + vc for any P).
#
# Region codes (A, B, C = local vertices 0, 1, 2 of the facet; seed 004 edges
# E1 = V2 - V1, E2 = V3 - V2, E3 = V1 - V3):
#   0 face interior
#   1 edge E1 (A-B, local edge 0)   2 edge E2 (B-C, local edge 1)   3 edge E3 (C-A, local edge 2)
#   4 vertex A (local 0)            5 vertex B (local 1)            6 vertex C (local 2)
# so region r in 1..3 is Mesh.facet_edges[f, r - 1] and r in 4..6 is Mesh.facets[f, r - 4].
# Barycentric weights (wa, wb, wc) of the closest point are returned too (wall velocity
# at the contact point for deformable walls).
from vecmath cimport v3, V, vadd, vsub, vscale, vdot, vcross, vneg

cdef enum:
    REGION_FACE = 0
    REGION_EDGE_AB = 1
    REGION_EDGE_BC = 2
    REGION_EDGE_CA = 3
    REGION_VERTEX_A = 4
    REGION_VERTEX_B = 5
    REGION_VERTEX_C = 6


cdef inline int _found(int region, v3 point, double a, double b, double c, v3* q,
                       double* wa, double* wb, double* wc) noexcept nogil:
    """Store the closest point and its barycentric weights; return the region."""
    q[0] = point; wa[0] = a; wb[0] = b; wc[0] = c
    return region


cdef inline int tri_closest(v3 p, v3 a, v3 b, v3 c, v3* q, double* wa, double* wb,
                            double* wc) noexcept nogil:
    cdef v3 ab = vsub(b, a), ac = vsub(c, a)
    cdef v3 ap = vsub(p, a), bp, cp
    cdef v3 n = vcross(ab, ac)
    cdef double d1, d2, d3, d4, d5, d6, va, vb, vc, s, den
    d1 = vdot(ab, ap)
    d2 = vdot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return _found(REGION_VERTEX_A, a, 1.0, 0.0, 0.0, q, wa, wb, wc)
    bp = vsub(p, b)
    d3 = vdot(ab, bp)
    d4 = vdot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return _found(REGION_VERTEX_B, b, 0.0, 1.0, 0.0, q, wa, wb, wc)
    vc = vdot(n, vcross(vsub(a, p), vneg(bp)))
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        s = d1 / (d1 - d3)
        return _found(REGION_EDGE_AB, vadd(a, vscale(ab, s)), 1.0 - s, s, 0.0, q, wa, wb, wc)
    cp = vsub(p, c)
    d5 = vdot(ab, cp)
    d6 = vdot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return _found(REGION_VERTEX_C, c, 0.0, 0.0, 1.0, q, wa, wb, wc)
    vb = vdot(n, vcross(vneg(cp), vsub(a, p)))
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        s = d2 / (d2 - d6)
        return _found(REGION_EDGE_CA, vadd(a, vscale(ac, s)), 1.0 - s, 0.0, s, q, wa, wb, wc)
    va = vdot(n, vcross(vneg(bp), vneg(cp)))
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        s = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return _found(REGION_EDGE_BC, vadd(b, vscale(vsub(c, b), s)), 0.0, 1.0 - s, s,
                      q, wa, wb, wc)
    den = 1.0 / vdot(n, n)
    q[0] = vsub(p, vscale(n, vdot(n, ap) * den))
    wb[0] = vb * den; wc[0] = vc * den; wa[0] = 1.0 - wb[0] - wc[0]
    return REGION_FACE
