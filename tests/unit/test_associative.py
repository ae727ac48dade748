"""Associative logic, reduced mode (seed 004 "Faceted Wall Contact Resolution"): a ball
pressed onto a flat wall, on a face, a shared edge or a shared vertex, has exactly one
active contact with the overlap of a single flat contact; Figure 4's linked set; a
concave corner keeps two active contacts (Figure 6b); a convex ridge keeps one."""
import numpy as np
import pytest

import pdem
from pdem._kernels.facets import closest_points
from pdem.contact.associative import resolve_full, resolve_reduced, segment_crosses_triangles
from pdem.contact.mesh import Mesh


def flat_grid(n):
    xs = np.linspace(0.0, 1.0, n + 1)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    V = np.c_[X.ravel(), Y.ravel(), np.zeros(X.size)]
    F = []
    for i in range(n):
        for j in range(n):
            a, b = i * (n + 1) + j, (i + 1) * (n + 1) + j
            F += [(a, b, b + 1), (a, b + 1, a + 1)]
    return Mesh(V, np.array(F))


def contacts(mesh, centre, radius, perm=None):
    """All facets as candidates (small meshes): overlap, region, resolution."""
    facet = np.arange(mesh.n_facets) if perm is None else perm
    q, d, region, _ = closest_points(np.repeat([centre], len(facet), axis=0),
                                     facet.astype(np.int32), mesh.vertices, mesh.facets)
    overlap = radius - d
    active, leader = resolve_reduced(facet, overlap, region, mesh)
    return facet, overlap, region, q, active, leader


@pytest.mark.parametrize("xy, where", [((0.30, 0.40), "face"), ((0.25, 0.40), "edge"),
                                       ((0.40, 0.40), "diagonal edge"),
                                       ((0.50, 0.50), "vertex of 6 facets"),
                                       ((0.25, 0.75), "vertex")])
def test_ball_pressed_on_flat_wall_has_one_active_contact(xy, where):
    mesh = flat_grid(4)
    R, h = 0.1, 0.09
    facet, overlap, region, q, active, leader = contacts(mesh, (xy[0], xy[1], h), R)
    assert active.sum() == 1, where
    k = np.flatnonzero(active)[0]
    assert overlap[k] == pytest.approx(R - h, abs=1e-15)        # a single flat contact
    assert np.allclose(q[k], (xy[0], xy[1], 0.0), atol=1e-15)
    assert np.all(leader[overlap > 0] == k) and np.all(leader[overlap <= 0] == -1)
    if where != "face":
        assert (overlap > 0).sum() >= 2                      # several facets do overlap
    # the answer does not depend on the candidates' order
    perm = np.random.default_rng(1).permutation(mesh.n_facets)
    f2, _, _, _, active2, _ = contacts(mesh, (xy[0], xy[1], h), R, perm)
    assert f2[active2].tolist() == facet[active].tolist()


def test_large_ball_on_many_facets():
    mesh = flat_grid(8)
    rng = np.random.default_rng(3)
    for xy in rng.uniform(0.3, 0.7, size=(20, 2)):
        facet, overlap, region, q, active, _ = contacts(mesh, (xy[0], xy[1], 0.4), 0.5)
        assert (overlap > 0).sum() > 20
        assert active.sum() == 1
        k = np.flatnonzero(active)[0]
        assert overlap[k] == pytest.approx(0.1, abs=1e-14)
        assert np.allclose(q[k], (xy[0], xy[1], 0.0), atol=1e-14)


def region_of_shared_edge(mesh, f, g):
    e = np.intersect1d(mesh.facet_edges[f], mesh.facet_edges[g])[0]
    return 1 + int(np.flatnonzero(mesh.facet_edges[f] == e)[0])


def test_seed_figure_4_linked_set():
    """C_a on the edge shared with b, C_b on b's face, C_c on the edge shared with b,
    C_d on the edge shared with c; all overlapping: one active contact, C_b."""
    mesh = flat_grid(3)
    # a chain of adjacent facets a - b - c - d
    b = 8
    nb = [int(g) for e in mesh.facet_edges[b] for g in mesh.edge_facets[e] if g not in (b, -1)]
    a, c = nb[0], nb[1]
    d = [int(g) for e in mesh.facet_edges[c] for g in mesh.edge_facets[e]
         if g not in (b, c, -1)][0]
    facet = [d, a, b, c]                     # the seed's arbitrary traversal order
    overlap = [0.02, 0.03, 0.05, 0.04]
    region = [region_of_shared_edge(mesh, d, c), region_of_shared_edge(mesh, a, b), 0,
              region_of_shared_edge(mesh, c, b)]
    active, leader = resolve_reduced(facet, overlap, region, mesh)
    assert active.tolist() == [False, False, True, False]
    assert leader.tolist() == [2, 2, 2, 2]
    # without the link d-c, d forms its own set and stays active
    region[0] = 0
    active, _ = resolve_reduced(facet, overlap, region, mesh)
    assert active.tolist() == [True, False, True, False]


def test_concave_corner_keeps_two_active_contacts():
    # floor z = 0 (normal +z) and wall x = 0 (normal +x) meeting on the y axis
    V = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [0, 1, 1]], float)
    mesh = Mesh(V, [[0, 1, 2], [0, 2, 3], [0, 3, 5], [0, 5, 4]])
    facet, overlap, region, q, active, _ = contacts(mesh, (0.09, 0.5, 0.09), 0.1)
    assert active.sum() == 2                         # not linked: seed Figure 6b
    assert sorted(np.abs(mesh.normals[facet[active]]).argmax(axis=1).tolist()) == [0, 2]
    assert np.all(region[active] == 0)


def test_convex_ridge_one_active_contact():
    V = np.array([[-1, 0, -0.5], [0, 0, 0], [0, 1, 0], [-1, 1, -0.5], [1, 0, -0.5],
                  [1, 1, -0.5]], float)
    mesh = Mesh(V, [[0, 1, 2], [0, 2, 3], [1, 4, 5], [1, 5, 2]])
    # straight above the ridge: both contact points on the shared edge, equal overlaps
    facet, overlap, region, q, active, _ = contacts(mesh, (0.0, 0.5, 0.05), 0.1)
    assert (overlap > 0).sum() == 2 and active.sum() == 1
    assert facet[active].tolist() == [0]             # tie: lower facet index
    assert overlap[active][0] == pytest.approx(0.05)
    # to the right, beyond the ridge wedge: the right face wins, the left edge point links
    facet, overlap, region, q, active, _ = contacts(mesh, (0.05, 0.5, 0.05), 0.1)
    assert active.sum() == 1 and region[active][0] == 0
    assert (overlap > 0).sum() == 2
    assert mesh.normals[facet[active]][0][0] > 0


def test_no_overlap_no_active_contact():
    mesh = flat_grid(2)
    _, _, _, _, active, leader = contacts(mesh, (0.5, 0.5, 0.2), 0.1)
    assert not active.any() and np.all(leader == -1)


def test_bad_candidates():
    mesh = flat_grid(2)
    with pytest.raises(pdem.InputError, match="twice"):
        resolve_reduced([1, 1], [0.1, 0.1], [0, 0], mesh)
    with pytest.raises(pdem.InputError, match="same length"):
        resolve_reduced([1, 2], [0.1], [0, 0], mesh)


# ------------------------------------------------------------------ full mode
def folded_sheet(n_sheets, gap=0.05):
    """Sheets folded in a zig-zag (xz profile (0, 0), (gap, 1), (2 gap, 0), ...), extruded
    along y in [-1, 1], each sheet two triangles: 2 sheets make a sliver (a thin fin),
    3 a folded wedge (seed Figure 8)."""
    prof = [(k * gap, float(k % 2)) for k in range(n_sheets + 1)]
    V = [(x, y, z) for x, z in prof for y in (-1.0, 1.0)]
    F = []
    for k in range(n_sheets):
        a, b, c, d = 2 * k, 2 * k + 1, 2 * k + 3, 2 * k + 2     # (k,-1) (k,1) (k+1,1) (k+1,-1)
        F += [(a, b, c), (a, c, d)]
    return Mesh(np.array(V), np.array(F))


def contacts_full(mesh, centre, radius):
    facet = np.arange(mesh.n_facets)
    q, d, region, _ = closest_points(np.repeat([centre], len(facet), axis=0),
                                     facet.astype(np.int32), mesh.vertices, mesh.facets)
    overlap = radius - d
    reduced, _ = resolve_reduced(facet, overlap, region, mesh)
    active, leader = resolve_full(facet, overlap, region, q, centre, mesh)
    return facet, overlap, region, reduced, active, leader


@pytest.mark.parametrize("n_sheets, centre", [(2, (-0.3, 0.3, 0.5)), (3, (-0.3, 0.3, 0.5)),
                                              (3, (-0.3, -0.6, 0.4))])
def test_sliver_and_wedge_full_mode_one_active_contact(n_sheets, centre):
    mesh = folded_sheet(n_sheets)
    facet, overlap, region, reduced, active, leader = contacts_full(mesh, centre, 0.6)
    sheet_of = facet // 2
    assert len(np.unique(sheet_of[overlap > 0])) == n_sheets       # the ball overlaps all
    assert reduced.sum() == n_sheets                               # reduced: no links
    assert active.sum() == 1                                       # full: one
    k = np.flatnonzero(active)[0]
    assert sheet_of[k] == 0 and overlap[k] == overlap.max()        # the largest overlap
    assert np.all(leader[overlap > 0] == k) and np.all(leader[overlap <= 0] == -1)
    # independent of the candidates' order
    perm = np.random.default_rng(4).permutation(len(facet))
    q, d, region_p, _ = closest_points(np.repeat([centre], len(facet), axis=0),
                                       perm.astype(np.int32), mesh.vertices, mesh.facets)
    active_p, _ = resolve_full(perm, 0.6 - d, region_p, q, centre, mesh)
    assert perm[active_p].tolist() == [facet[k]]


def test_full_mode_keeps_legitimate_contacts():
    """No segment crosses another facet: full mode = reduced mode (a flat wall, a large
    ball on many facets, the concave corner's two contacts, a small ball on
    the sliver and on the wedge's top fold)."""
    corner = Mesh(np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1],
                            [0, 1, 1]], float), [[0, 1, 2], [0, 2, 3], [0, 3, 5], [0, 5, 4]])
    cases = [(flat_grid(4), (0.5, 0.5, 0.09), 0.1), (flat_grid(8), (0.43, 0.61, 0.4), 0.5),
             (corner, (0.09, 0.5, 0.09), 0.1), (folded_sheet(2), (-0.1, 0.3, 0.5), 0.15),
             (folded_sheet(3), (0.05, 0.2, 1.05), 0.2)]
    for mesh, centre, R in cases:
        facet, overlap, region, reduced, active, leader = contacts_full(mesh, centre, R)
        assert (overlap > 0).any()
        assert active.tolist() == reduced.tolist()
    assert contacts_full(corner, (0.09, 0.5, 0.09), 0.1)[4].sum() == 2


def test_segment_crosses_triangles():
    tri = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0]]], float)
    a = np.array([0.2, 0.2, 1.0])
    assert segment_crosses_triangles(a, np.array([0.2, 0.2, -1.0]), tri)[0]
    assert not segment_crosses_triangles(a, np.array([0.2, 0.2, 0.5]), tri)[0]   # short
    assert not segment_crosses_triangles(a, np.array([0.2, 0.2, 0.0]), tri)[0]   # ends on it
    assert not segment_crosses_triangles(a, np.array([0.9, 0.9, -1.0]), tri)[0]  # misses
    assert segment_crosses_triangles(np.array([0.5, 0.5, 1.0]), np.array([0.5, 0.5, -1.0]),
                                     tri)[0]                                    # on an edge
    assert not segment_crosses_triangles(np.array([-1, 0.2, 0.0]), np.array([2, 0.2, 0.0]),
                                         tri)[0]                                # in its plane
