"""Faceted wall meshes (seed 004 "Faceted Walls in PFC"): readers, merged vertices,
topology, and the rejections the seed asks for, each naming the facet."""
import struct

import numpy as np
import pytest

from pdem.contact.mesh import Mesh, MeshOrientationWarning
from test_bad_input import input_error

# unit cube, quads seen from outside counter-clockwise (outward normals)
CUBE_V = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                   [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], dtype=float)
CUBE_Q = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
CUBE_F = np.array([t for q in CUBE_Q for t in ((q[0], q[1], q[2]), (q[0], q[2], q[3]))])


def flat_grid(n, z=0.0):
    """Square [0,1]^2 at height z split into 2 n^2 facets, normals +z."""
    xs = np.linspace(0.0, 1.0, n + 1)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    V = np.c_[X.ravel(), Y.ravel(), np.full(X.size, z)]
    F = []
    for i in range(n):
        for j in range(n):
            a, b, c, d = i * (n + 1) + j, (i + 1) * (n + 1) + j, (i + 1) * (n + 1) + j + 1, \
                i * (n + 1) + j + 1
            F += [(a, b, c), (a, c, d)]
    return V, np.array(F)




def check_cube(m):
    assert m.n_vertices == 8 and m.n_facets == 12
    assert len(m.edges) == 18 and np.all(m.edge_facets >= 0)   # closed: every edge twice
    centre = m.vertices[m.facets].mean(axis=1)
    assert np.all(np.einsum("ij,ij->i", m.normals, centre - 0.5) > 0)   # outward
    assert np.allclose(m.areas.sum(), 6.0)
    for v in range(8):
        fs = m.facets_of_vertex(v)
        assert np.all(np.diff(fs) > 0) and np.all(np.any(m.facets[fs] == v, axis=1))
    assert sum(len(m.facets_of_vertex(v)) for v in range(8)) == 36


# ------------------------------------------------------------------ topology
def test_cube_topology():
    check_cube(Mesh(CUBE_V, CUBE_F))


def test_edges_link_facets_both_ways():
    m = Mesh(*flat_grid(5))
    for f in range(m.n_facets):
        for k in range(3):
            e = m.facet_edges[f, k]
            assert f in m.edge_facets[e]
            assert sorted(m.edges[e]) == sorted((m.facets[f, k], m.facets[f, (k + 1) % 3]))
    # boundary edges of an n x n grid: 4 n; interior: 3 n^2 + 2 n - 4 n ... count both
    assert np.sum(m.edge_facets[:, 1] < 0) == 20
    assert len(m.edges) == 3 * 25 + 2 * 5
    assert np.allclose(m.normals, [0, 0, 1])


def test_duplicate_coordinates_are_merged():
    tri = CUBE_V[CUBE_F].reshape(-1, 3)          # 36 corners, STL style
    m = Mesh(tri, np.arange(36).reshape(12, 3))
    check_cube(m)
    assert np.array_equal(m.vertices[m.vertex_map], tri)


def test_inactive_flags():
    m = Mesh(CUBE_V, CUBE_F)
    assert not m.inactive_front.any() and not m.inactive_back.any()
    m.set_inactive([0, 3], "front")
    m.set_inactive(5, "both")
    assert np.flatnonzero(m.inactive_front).tolist() == [0, 3, 5]
    assert np.flatnonzero(m.inactive_back).tolist() == [5]
    m.set_inactive([5], "back", inactive=False)
    assert not m.inactive_back.any()
    input_error(lambda: m.set_inactive([12], "front"), "0..11")
    input_error(lambda: m.set_inactive([1], "top"), "side")


def test_large_grid_is_fast():
    import time
    t = time.perf_counter()
    m = Mesh(*flat_grid(40))                      # 3200 facets, intersection check on
    assert m.n_facets == 3200
    assert time.perf_counter() - t < 2.0


# ------------------------------------------------------------------ rejections
def test_repeated_vertex_names_facet():
    F = CUBE_F.copy()
    F[7] = (2, 6, 2)
    input_error(lambda: Mesh(CUBE_V, F), "facet 7", "repeated vertex")


def test_repeated_vertex_after_merge_names_facet():
    V = np.vstack([CUBE_V, CUBE_V[6]])           # vertex 8 == vertex 6
    F = CUBE_F.copy()
    F[7] = (8, 6, 5)
    input_error(lambda: Mesh(V, F), "facet 7", "repeated vertex")


def test_collinear_facet_names_facet():
    V = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 1, 0]], float)
    input_error(lambda: Mesh(V, [[0, 1, 3], [0, 1, 2]]), "facet 1", "collinear")


def test_inconsistent_orientation_is_repaired_with_a_warning():
    F = CUBE_F.copy()
    F[4] = F[4][::-1]
    with pytest.warns(MeshOrientationWarning, match=r"1 facet\(s\) .* flipped \(4\).*outward"):
        m = Mesh(CUBE_V, F)
    assert m.n_reoriented == 1
    check_cube(m)


def test_inward_closed_mesh_with_one_odd_facet_turns_outward():
    F = CUBE_F[:, ::-1].copy()                   # every facet inward ...
    F[7] = CUBE_F[7]                              # ... but one
    with pytest.warns(MeshOrientationWarning, match="11 facet"):
        m = Mesh(CUBE_V, F)
    check_cube(m)


def test_consistent_inward_mesh_is_left_alone():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = Mesh(CUBE_V, CUBE_F[:, ::-1])
    assert m.n_reoriented == 0
    centre = m.vertices[m.facets].mean(axis=1)
    assert np.all(np.einsum("ij,ij->i", m.normals, centre - 0.5) < 0)


def test_open_mesh_keeps_the_first_facets_winding():
    V, F = flat_grid(3)
    F[[2, 5, 11]] = F[[2, 5, 11]][:, ::-1]
    with pytest.warns(MeshOrientationWarning, match="3 facet"):
        m = Mesh(V, F)
    assert np.allclose(m.normals, [0, 0, 1])


def test_moebius_strip_is_refused_naming_a_facet():
    n = 12
    t = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    V = []
    for k in range(n):
        for s in (-0.3, 0.3):
            w = s * np.cos(t[k] / 2)
            V.append([(2 + w) * np.cos(t[k]), (2 + w) * np.sin(t[k]), s * np.sin(t[k] / 2)])
    F = []
    for k in range(n):
        a, b = 2 * k, 2 * k + 1
        c, d = (2 * k + 2, 2 * k + 3) if k < n - 1 else (1, 0)   # the half twist
        F += [(a, c, b), (b, c, d)]
    msg = input_error(lambda: Mesh(np.array(V), np.array(F)), "not orientable")
    assert "facet" in msg


def closed_cylinder(n=23, radius=1.0, height=2.0):
    """Closed cylinder of 4 n facets (sides 2 n, two fans of n), outward normals."""
    t = 2 * np.pi * np.arange(n) / n
    ring = np.c_[radius * np.cos(t), radius * np.sin(t)]
    V = np.r_[np.c_[ring, np.zeros(n)], np.c_[ring, np.full(n, height)],
              [[0, 0, 0], [0, 0, height]]]
    F = []
    for k in range(n):
        k1 = (k + 1) % n
        F += [(k, k1, n + k1), (k, n + k1, n + k)]
    F += [(2 * n, k1, k) for k, k1 in ((k, (k + 1) % n) for k in range(n))]
    F += [(2 * n + 1, n + k, n + k1) for k, k1 in ((k, (k + 1) % n) for k in range(n))]
    return V, np.array(F)


def test_liggghts_like_stl_with_four_flipped_facets(tmp_path):
    """92 facets, closed and orientable, 4 wound the other way (as in a LIGGGHTS
    example STL that Mesh.read used to refuse): loads, and every facet faces outward."""
    from pdem.contact.mesh_files import write_stl
    V, F = closed_cylinder()
    assert len(F) == 92
    F[[60, 61, 88, 5]] = F[[60, 61, 88, 5]][:, ::-1]
    path = tmp_path / "liggghts_like.stl"
    write_stl(path, V, F, binary=False)
    with pytest.warns(MeshOrientationWarning, match="4 facet"):
        m = Mesh.read(path)
    assert m.n_facets == 92 and m.n_reoriented == 4
    c = m.vertices[m.facets].mean(axis=1)
    side = np.abs(m.normals[:, 2]) < 0.5
    out = c.copy()
    out[side, 2] = 0.0                        # sides: away from the axis
    out[~side] = [0, 0, 1] * np.sign(c[~side, 2] - 1.0)[:, None]   # caps: up / down
    assert np.all(np.einsum("ij,ij->i", m.normals, out) > 0)
    vol = np.einsum("ij,ij->i", m.vertices[m.facets[:, 0]],
                    np.cross(m.vertices[m.facets[:, 1]], m.vertices[m.facets[:, 2]])).sum() / 6
    assert vol > 0


def test_edge_shared_by_three_facets():
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, -1, 0.1], [0.5, 0.5, 1]], float)
    F = [[0, 1, 2], [1, 0, 3], [0, 1, 4]]
    input_error(lambda: Mesh(V, F), "facet 2", "shared by 3 facets")


def test_repeated_facet():
    input_error(lambda: Mesh(CUBE_V, np.vstack([CUBE_F, CUBE_F[3, [1, 2, 0]]])),
                "facet 12 repeats facet 3")


def test_crossing_facets_named():
    V, F = flat_grid(6)
    nv = len(V)
    V = np.vstack([V, [[0.31, 0.31, -0.5], [0.61, 0.33, 0.5], [0.32, 0.62, 0.4]]])
    F = np.vstack([F, [[nv, nv + 1, nv + 2]]])
    input_error(lambda: Mesh(V, F), "intersect", "and 72")
    Mesh(V, F, check_intersections=False)         # the check can be switched off


def test_coplanar_overlap_is_an_intersection():
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.2, 0.2, 0], [1.2, 0.2, 0],
                  [0.2, 1.2, 0]], float)
    input_error(lambda: Mesh(V, [[0, 1, 2], [3, 4, 5]]), "facets 0 and 1 intersect")


def test_touching_and_separate_facets_are_not_intersections():
    # T-junction: vertex 3 of facet 1 on the edge of facet 0, coplanar, no overlap
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.5, 0.5, 0], [1, 1, 0], [1.5, 0.5, 0]], float)
    Mesh(V, [[0, 1, 2], [3, 5, 4]])
    # a facet hanging just above another, and one standing on it (touching edge)
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.2, 0.2, 1e-6], [0.5, 0.2, 1e-6],
                  [0.2, 0.5, 1e-6], [0.1, 0.1, 0.0], [0.3, 0.1, 0.0], [0.2, 0.1, 1.0]], float)
    Mesh(V, [[0, 1, 2], [3, 4, 5]])
    Mesh(V, [[0, 1, 2], [6, 7, 8]])


@pytest.mark.parametrize("v, f, words", [
    (np.zeros((3, 2)), [[0, 1, 2]], ("vertices", "shape")),
    ([[0, 0, 0], [1, 0, np.nan], [0, 1, 0]], [[0, 1, 2]], ("vertices[1]", "not finite")),
    (CUBE_V, [[0, 1, 8]], ("facet 0", "outside 0..7")),
    (CUBE_V, [[0.0, 1.0, 2.0]], ("facets", "integers")),
])
def test_bad_arrays(v, f, words):
    input_error(lambda: Mesh(v, f), *words)


# ------------------------------------------------------------------ readers
def write_stl_ascii(path, tris):
    with open(path, "w") as fh:
        fh.write("solid cube\n")
        for t in tris:
            fh.write("  facet normal 0 0 0\n    outer loop\n")
            for p in t:
                fh.write("      vertex %.17g %.17g %.17g\n" % tuple(p))
            fh.write("    endloop\n  endfacet\n")
        fh.write("endsolid cube\n")


def write_stl_binary(path, tris):
    with open(path, "wb") as fh:
        fh.write(b"solid but binary".ljust(80, b" "))   # binary files may start with 'solid'
        fh.write(struct.pack("<I", len(tris)))
        for t in tris:
            fh.write(struct.pack("<3f", 0, 0, 0))
            fh.write(np.asarray(t, "<f4").tobytes())
            fh.write(b"\0\0")


def test_stl_ascii_and_binary(tmp_path):
    tris = CUBE_V[CUBE_F]
    write_stl_ascii(tmp_path / "a.stl", tris)
    write_stl_binary(tmp_path / "b.stl", tris)
    for name in ("a.stl", "b.stl"):
        m = Mesh.read(tmp_path / name)
        check_cube(m)
        assert np.array_equal(m.vertices[m.facets], tris)


def test_obj_quads_negative_indices_and_slashes(tmp_path):
    lines = ["# cube", "o cube"] + ["v %g %g %g" % tuple(p) for p in CUBE_V] + ["vn 0 0 1"]
    for q in CUBE_Q[:3]:
        lines.append("f " + " ".join("%d/1/1" % (i + 1) for i in q))
    for q in CUBE_Q[3:]:
        lines.append("f " + " ".join(str(i - 8) for i in q))     # relative indices
    (tmp_path / "c.obj").write_text("\n".join(lines) + "\n")
    m = Mesh.read(tmp_path / "c.obj")
    check_cube(m)
    assert m.facets[:2].tolist() == [[0, 3, 2], [0, 2, 1]]     # fan of the first quad


def test_gmsh_v4_ascii(tmp_path):
    # 4 nodes in two entity blocks; a line element (ignored), 2 triangles, 1 quad
    text = """$MeshFormat
4.1 0 8
$EndMeshFormat
$Nodes
2 6 1 6
0 1 0 2
1
2
0 0 0
1 0 0
2 1 0 4
3
4
5
6
1 1 0
0 1 0
2 1 0
2 0 0
$EndNodes
$Elements
3 4 1 4
1 1 1 1
1 1 2
2 1 2 2
2 1 2 3
3 1 3 4
2 2 3 1
4 2 6 5 3
$EndElements
"""
    (tmp_path / "s.msh").write_text(text)
    m = Mesh.read(tmp_path / "s.msh")
    assert m.n_facets == 4 and m.n_vertices == 6
    assert np.allclose(m.normals, [0, 0, 1])
    assert np.allclose(m.areas.sum(), 2.0)


def test_reader_errors(tmp_path):
    input_error(lambda: Mesh.read(tmp_path / "x.ply"), "unknown extension")
    input_error(lambda: Mesh.read(tmp_path / "none.stl"), "no such file")
    (tmp_path / "bad.obj").write_text("v 0 0 0\nv 1 0 0\nf 1 2 3\n")
    input_error(lambda: Mesh.read(tmp_path / "bad.obj"), "line 3", "'3'")
    (tmp_path / "bad.stl").write_text("solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 zero\n")
    input_error(lambda: Mesh.read(tmp_path / "bad.stl"), "line 4")
    (tmp_path / "junk.stl").write_bytes(b"\x01" * 90)
    input_error(lambda: Mesh.read(tmp_path / "junk.stl"), "neither binary")
    (tmp_path / "old.msh").write_text("$MeshFormat\n1.0 0 8\n$EndMeshFormat\n")
    input_error(lambda: Mesh.read(tmp_path / "old.msh"), "version 1.0", "not supported")
    (tmp_path / "empty.msh").write_text("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n")
    input_error(lambda: Mesh.read(tmp_path / "empty.msh"), "empty.msh", "no $Nodes")
    # an error in the mesh itself names the file
    F = CUBE_F.copy()
    F[4] = (0, 1, 1)
    write_stl_ascii(tmp_path / "degenerate.stl", CUBE_V[F])
    input_error(lambda: Mesh.read(tmp_path / "degenerate.stl"), "degenerate.stl", "facet 4",
                "degenerate")


@pytest.mark.parametrize("binary", [True, False])
def test_stl_written_by_pdem_reads_back(tmp_path, binary):
    """write_stl then Mesh.read: the same triangles (vertex order aside), the same
    normals; float32 (binary) or exact (ASCII) coordinates."""
    from pdem.contact import shapes
    from pdem.contact.mesh_files import write_stl
    m = shapes.frustum(0.0, 0.3, 1.0, 1.1, n_around=12, n_along=2)
    path = tmp_path / "hopper.stl"
    write_stl(path, m.vertices, m.facets, binary=binary)
    r = Mesh.read(path)
    want = m.vertices.astype(np.float32).astype(float) if binary else m.vertices
    def triangles(mesh, v):
        return sorted(map(tuple, np.round(v[mesh.facets].reshape(-1, 9), 12)))
    assert triangles(r, r.vertices) == triangles(m, want)
    assert r.n_vertices == m.n_vertices
    assert np.allclose(np.sort(r.normals, axis=0), np.sort(m.normals, axis=0), atol=1e-6)


def test_gmsh_v22_ascii(tmp_path):
    """The legacy 2.2 format: a unit square of two triangles (tags with physical and
    elementary entity numbers) and a line element, which is ignored."""
    text = """$MeshFormat
2.2 0 8
$EndMeshFormat
$Nodes
4
1 0 0 0
2 1 0 0
3 1 1 0
4 0 1 0
$EndNodes
$Elements
3
1 1 2 7 1 1 2
2 2 2 8 2 1 2 3
3 2 2 8 2 1 3 4
$EndElements
"""
    (tmp_path / "sq.msh").write_text(text)
    m = Mesh.read(tmp_path / "sq.msh")
    assert m.n_facets == 2 and m.n_vertices == 4
    assert np.allclose(m.normals, [0, 0, 1]) and m.areas.sum() == pytest.approx(1.0)
