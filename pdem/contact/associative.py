"""Associative logic of faceted wall contacts, "reduced" mode (seed 004, "Faceted Wall
Contact Resolution", rules 1-3):

1) only one active contact can exist between a ball and a wall facet, shared edges and
   vertices included;
2) contacts between a ball and adjacent facets are linked when a wall contact point lies
   on their shared edge or vertex, provided its overlap is positive;
3) in a linked set only the contact with the largest overlap is active; contacts are
   processed in order of decreasing overlap and the checks stop at the first
   non-positive overlap.

A linked set is a connected component of the links (the seed's Figure 4: a-b, c-b, d-c
give one set {a, b, c, d} whose active contact is b). When a contact's point lies on an
edge or vertex it shares with another candidate facet, that facet is at most as far from
the centre, so its overlap is at least as large and positive too. Equal overlaps (a ball
centred over a shared edge or vertex of a flat wall) are ordered by facet index, so the
choice is deterministic and independent of the candidate order.

This is the pure rule over the few candidates of one ball, in Python: the reference
that tests hold the step's kernel (pyx/facets.pyx, ball_facet, which applies the same
rules per ball and adds continuity of contact state and proximity contacts) to.

"Full" mode (`resolve_full`) adds the seed's sliver and wedge check (Figure 8): after the
associative logic, an active contact whose segment from the ball centre to its wall
contact point crosses another facet with an active contact is deactivated; the contact
with the largest overlap is kept. "A facet with an active contact" is read as a facet of
another linked set whose active contact survives: a facet a segment crosses is nearer
the centre than the segment's end, so it overlaps more than the crossing contact and is
itself a candidate with positive overlap, but it may be an inactive member of its set
(a face split in two triangles, the active contact on one, the crossing on the other).
"""
import numpy as np

from ..errors import InputError


def resolve_reduced(facet, overlap, region, mesh):
    """Active contacts among the candidate facets of one ball.

    facet (m,) facet indices (distinct), overlap (m,) R - d, region (m,) region codes of
    the wall contact points (pdem._kernels.facets.closest_points: 0 face, 1..3 edges,
    4..6 vertices); mesh: pdem.contact.mesh.Mesh (its topology).

    Returns (active (m,) bool, leader (m,) int): leader[k] is the candidate index of the
    active contact of k's linked set (k itself when active), -1 when overlap[k] <= 0.
    """
    facet = np.asarray(facet, dtype=np.int64).reshape(-1)
    overlap = np.asarray(overlap, dtype=np.float64).reshape(-1)
    region = np.asarray(region).reshape(-1)
    m = len(facet)
    if len(overlap) != m or len(region) != m:
        raise InputError("resolve_reduced: facet, overlap and region must have the same "
                         "length, got %d, %d, %d" % (m, len(overlap), len(region)))
    if len(np.unique(facet)) != m:
        raise InputError("resolve_reduced: a facet appears twice among the candidates %r"
                         % (facet.tolist(),))
    order = np.lexsort((facet, -overlap))      # decreasing overlap, then facet index
    slot = {int(f): k for k, f in enumerate(facet)}
    parent = list(range(m))

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for k in order:
        if not overlap[k] > 0.0:
            break                               # rule 3: checks cease at overlap <= 0
        f, r = int(facet[k]), int(region[k])
        if 1 <= r <= 3:
            others = mesh.edge_facets[mesh.facet_edges[f, r - 1]]
        elif 4 <= r <= 6:
            others = mesh.facets_of_vertex(mesh.facets[f, r - 4])
        else:
            continue                            # on the face: links come from the others
        for g in others:
            j = slot.get(int(g))
            if j is not None and j != k and overlap[j] > 0.0:
                a, b = root(k), root(j)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    leader = np.full(m, -1, dtype=np.int64)
    first = {}
    for k in order:                             # first of a set in this order = largest
        if not overlap[k] > 0.0:
            break
        leader[k] = first.setdefault(root(k), k)
    active = leader == np.arange(m)
    return active, leader


def resolve_full(facet, overlap, region, points, centre, mesh):
    """Active contacts among the candidate facets of one ball, "full" mode: the
    associative logic of `resolve_reduced`, then the sliver and wedge check.

    points (m, 3) wall contact points of the candidates, centre (3,) the ball centre
    (the other arguments as in resolve_reduced; facet vertices from mesh.vertices).
    Active contacts are checked in order of decreasing overlap (ties by facet index);
    one whose segment centre -> wall contact point crosses (closed triangle, ends
    excluded) a facet of another linked set with a still active contact is
    deactivated, and its set joins that set: its members' leader becomes that set's
    active contact.

    Returns (active (m,) bool, leader (m,) int) as resolve_reduced.
    """
    facet = np.asarray(facet, dtype=np.int64).reshape(-1)
    overlap = np.asarray(overlap, dtype=np.float64).reshape(-1)
    active, leader = resolve_reduced(facet, overlap, region, mesh)
    m = len(facet)
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    centre = np.asarray(centre, dtype=np.float64).reshape(3)
    if len(points) != m:
        raise InputError("resolve_full: points must have one row per candidate, got %d "
                         "for %d candidates" % (len(points), m))
    if active.sum() < 2:
        return active, leader
    pos = np.flatnonzero(leader >= 0)            # candidates with positive overlap
    tri = mesh.vertices[mesh.facets[facet[pos]]]
    order = np.lexsort((facet, -overlap))
    for k in order:
        if not overlap[k] > 0.0:
            break
        if not active[k]:
            continue
        other = active[leader[pos]] & (leader[pos] != leader[k])
        if not other.any():
            continue
        hit = segment_crosses_triangles(centre, points[k], tri[other])
        if hit.any():
            j = pos[other][np.flatnonzero(hit)[0]]
            active[k] = False
            leader[leader == leader[k]] = leader[j]
    return active, leader


def segment_crosses_triangles(a, b, tri, tol=1e-12):
    """Whether the segment a -> b crosses each triangle tri (n, 3, 3): the crossing
    point lies at a segment parameter strictly between tol and 1 - tol and inside the
    closed triangle (barycentric weights >= -tol). A segment parallel to a triangle's
    plane does not cross it (Moeller-Trumbore)."""
    d = b - a
    e1 = tri[:, 1] - tri[:, 0]
    e2 = tri[:, 2] - tri[:, 0]
    p = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, p)
    scale = np.linalg.norm(d) * np.linalg.norm(e1, axis=1) * np.linalg.norm(e2, axis=1)
    ok = np.abs(det) > 1e-14 * scale
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = a - tri[:, 0]
    u = np.einsum("ij,ij->i", s, p) * inv
    q = np.cross(s, e1)
    v = (q @ d) * inv
    t = np.einsum("ij,ij->i", e2, q) * inv
    return ok & (u >= -tol) & (v >= -tol) & (u + v <= 1.0 + tol) & (t > tol) & (t < 1.0 - tol)
