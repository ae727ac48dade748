"""Potential NSCD contacts of grains with the facets of triangle meshes (3D), from
candidate (grain, facet) pairs: the mesh walls' rows for pdem.Simulation's NSCD scheme
(FacetContacts.gaps).

Grain i and facet f are a potential contact when |x_i - q| - r_i < alert, q the
closest point of the triangle to the centre. The normal is (x_i - q)/|x_i - q| (from
the facet into the grain), exactly the facet normal on the grain's side when q is
inside the face (or the centre lies on the facet), and the gap |x_i - q| - r_i. A grain
on an inactive side of the facet (side_off bit 1: the side the normal points to, n_f.(x
- V0) >= 0; bit 2: the other) does not see it.

Every facet within reach gives its own contact, even when several facets share the
closest point (a grain on an edge or a vertex of the mesh): for impulses, redundant
unilateral constraints with the same normal and gap share the impulse (the solver
converges to the same velocities), so none of them is dropped, except rim contacts
hidden by a nearer facet (`_shadowed`). Seed 004's associative logic is for the
explicit penalty contacts (pdem.contact.associative), where each duplicate would add
its own stiffness; NSCD does not need it.
"""
import numpy as np

from .._kernels import facets as _fk


def facet_contacts(x, r, gi, gf, vertices, facets, normals, side_off, alert, threads):
    """Candidates k (grain row gi[k], facet gf[k]) that are potential contacts: returns
    (kept candidate indices, normals (m, 3), gaps (m,), closest points q (m, 3)), in
    candidate order."""
    empty = (np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)))
    if len(gi) == 0:
        return empty
    gi = gi.astype(np.int64)
    gf = gf.astype(np.int64)
    xi = x[gi]
    q, dist, region, _ = _fk.closest_points(xi, gf, vertices, facets, threads)
    nf = normals[gf]
    side = np.einsum("ij,ij->i", xi - vertices[facets[gf, 0]], nf)    # >= 0: front side
    front = side >= 0.0
    seen = (side_off[gf] & np.where(front, 1, 2)) == 0
    gap = dist - r[gi]
    cand = np.flatnonzero(seen & (gap < alert))
    gi, gf, xi, q, dist, region = gi[cand], gf[cand], xi[cand], q[cand], dist[cand], \
        region[cand]
    nf, front, side, gap = nf[cand], front[cand], side[cand], gap[cand]
    # normal from the closest point to the centre; inside the face (region 0) or with
    # the centre on the facet (distance at rounding level), the facet normal on the
    # grain's side
    normal = np.where(front, 1.0, -1.0)[:, None] * nf
    tiny = 1e-12 * (r[gi] + np.abs(xi).max(axis=1)
                    + np.abs(vertices[facets[gf, 0]] - xi).max(axis=1))
    rim = (region != 0) & (dist > tiny)
    normal[rim] = (xi[rim] - q[rim]) / dist[rim, None]
    face = region == 0
    gap[face] = np.abs(side[face]) - r[gi[face]]
    keep = np.flatnonzero((gap < alert) & ~_shadowed(facets, gi, gf, region, dist, tiny))
    return cand[keep], np.ascontiguousarray(normal[keep]), gap[keep], q[keep]


def _shadowed(facets, gi, gf, region, dist, tiny):
    """Rim contacts hidden by a nearer facet: contact k (grain gi[k], facet gf[k])
    whose closest point lies on an edge or a vertex of its facet (region != 0) is
    dropped when another listed facet of the same grain contains that edge or vertex
    and is nearer (distance < dist[k] - tiny[k]). The closest point q then belongs
    to the nearer facet, so |x - q| >= r follows from that facet's own constraint;
    kept, the contact at q would act on its linearization, which lies below the true
    distance: a grain sliding on a flat mesh towards an edge would be lifted by the
    neighbour facet's edge within about 2 |v| dt of it. Ties (several facets sharing
    the closest point: same normal, same gap) are all kept."""
    k = len(gi)
    if k < 2 or not np.any(region != 0):
        return np.zeros(k, bool)
    # contacts are grouped by grain: every ordered pair (a, b) within a group
    order = np.argsort(gi, kind="stable")
    g = gi[order]
    start = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    size = np.diff(np.r_[start, k])
    rep = np.repeat(size, size)
    a = np.repeat(np.arange(k), rep)
    first = np.repeat(np.repeat(start, size), rep)
    b = first + (np.arange(len(a)) - np.repeat(np.cumsum(rep) - rep, rep))
    a, b = order[a], order[b]
    sel = (a != b) & (region[a] != 0) & (dist[b] < dist[a] - tiny[a])
    a, b = a[sel], b[sel]
    ra = region[a]
    loc = np.where(ra >= 4, ra - 4, ra - 1)            # edge k: vertices k, k + 1
    v1 = facets[gf[a], loc]
    v2 = np.where(ra >= 4, v1, facets[gf[a], (loc + 1) % 3])
    fb = facets[gf[b]]
    holds = np.any(fb == v1[:, None], axis=1) & np.any(fb == v2[:, None], axis=1)
    out = np.zeros(k, bool)
    out[a[holds]] = True
    return out
