"""Boundary segments from Gmsh files (seed 003, "Contacts with boundaries": the
hourglass walls are the line elements of a .msh): formats 4.1 and 2.2 on small
hand-written files, deduplication, the outline of a triangle mesh, and bad files
rejected with a one-line message naming the file and the problem."""
import numpy as np
import pytest

from pdem.nscd.hourglass_geometry import (distance_to_segments, hourglass_outline,
                                          inside_polygon, neck_of_segments)
from pdem.nscd.msh_segments import read_msh_segments
from test_bad_input import input_error

# unit square as 4 lines (nodes 1..4 counter-clockwise), plus a point element
SQUARE_41 = """$MeshFormat
4.1 0 8
$EndMeshFormat
$Nodes
2 4 1 4
0 1 0 1
1
0 0 0
1 1 0 3
2
3
4
1 0 0
1 1 0
0 1 0
$EndNodes
$Elements
2 5 1 5
0 1 15 1
1 1
1 1 1 4
2 1 2
3 2 3
4 3 4
5 4 1
$EndElements
"""

SQUARE_22 = """$MeshFormat
2.2 0 8
$EndMeshFormat
$PhysicalNames
1
1 1 "walls"
$EndPhysicalNames
$Nodes
4
1 0 0 0
2 1 0 0
3 1 1 0
4 0 1 0
$EndNodes
$Elements
5
1 15 2 0 1 1
2 1 2 1 1 1 2
3 1 2 1 1 2 3
4 1 2 1 1 3 4
5 1 2 1 1 4 1
$EndElements
"""

SQUARE = (np.array([[0, 0], [1, 0], [1, 1], [0, 1]], float),
          np.array([[1, 0], [1, 1], [0, 1], [0, 0]], float))


def write(tmp_path, text, name="m.msh"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text", [SQUARE_41, SQUARE_22], ids=["4.1", "2.2"])
def test_square(tmp_path, text):
    x0, x1 = read_msh_segments(write(tmp_path, text))
    assert x0.shape == (4, 2) and x1.shape == (4, 2) and x0.dtype == np.float64
    assert np.array_equal(x0, SQUARE[0]) and np.array_equal(x1, SQUARE[1])


def test_duplicates_removed_either_orientation(tmp_path):
    # the same 4 lines listed again reversed (a line in two physical groups)
    text = SQUARE_22.replace("5\n1 15", "9\n1 15").replace(
        "5 1 2 1 1 4 1\n", "5 1 2 1 1 4 1\n6 1 2 2 2 2 1\n7 1 2 2 2 3 2\n"
                           "8 1 2 2 2 4 3\n9 1 2 2 2 1 4\n")
    x0, x1 = read_msh_segments(write(tmp_path, text))
    assert np.array_equal(x0, SQUARE[0]) and np.array_equal(x1, SQUARE[1])


def test_second_order_line_split(tmp_path):
    text = """$MeshFormat
2.2 0 8
$EndMeshFormat
$Nodes
3
7 0 0 0
8 2 0 0
9 1 0.5 0
$EndNodes
$Elements
1
1 8 0 7 8 9
$EndElements
"""
    x0, x1 = read_msh_segments(write(tmp_path, text))
    assert np.array_equal(x0, [[0, 0], [1, 0.5]]) and np.array_equal(x1, [[1, 0.5], [2, 0]])


def test_outline_of_triangles(tmp_path):
    # square split in two triangles, no line element: the 4 outer edges, not the diagonal
    text = """$MeshFormat
4.1 0 8
$EndMeshFormat
$Nodes
1 4 1 4
2 1 0 4
1
2
3
4
0 0 0
1 0 0
1 1 0
0 1 0
$EndNodes
$Elements
1 2 1 2
2 1 2 2
1 1 2 3
2 1 3 4
$EndElements
"""
    x0, x1 = read_msh_segments(write(tmp_path, text))
    assert len(x0) == 4
    mid = 0.5 * (x0 + x1)
    assert not np.any(np.all(np.isclose(mid, 0.5), axis=1))      # no diagonal
    assert np.allclose(sorted(np.hypot(*(x1 - x0).T)), 1.0)


def test_plane_other_than_z0(tmp_path):
    x0, _ = read_msh_segments(write(tmp_path, SQUARE_22.replace(" 0\n", " 2.5\n")))
    assert len(x0) == 4


# ------------------------------------------------------------------ bad files
def bad(tmp_path, text, *words):
    path = write(tmp_path, text, "bad.msh")
    msg = input_error(lambda: read_msh_segments(path), "bad.msh", *words)
    return msg


def test_missing_file(tmp_path):
    input_error(lambda: read_msh_segments(str(tmp_path / "none.msh")), "none.msh",
                "no such file")


def test_not_a_msh(tmp_path):
    bad(tmp_path, "solid cube\nendsolid\n", "outside a $Section")
    bad(tmp_path, "$Nodes\n0\n$EndNodes\n", "no $MeshFormat")


def test_binary_and_versions(tmp_path):
    bad(tmp_path, SQUARE_41.replace("4.1 0 8", "4.1 1 8"), "binary")
    bad(tmp_path, SQUARE_41.replace("4.1 0 8", "4 0 8"), "version 4", "not supported")
    bad(tmp_path, SQUARE_41.replace("4.1 0 8", "3.0 0 8"), "version 3.0")
    path = tmp_path / "bin.msh"
    path.write_bytes(b"$MeshFormat\n4.1 1 8\n\x01\xff\x00\n$EndMeshFormat\n")
    input_error(lambda: read_msh_segments(str(path)), "bin.msh", "not an ASCII")


def test_missing_and_unclosed_sections(tmp_path):
    bad(tmp_path, SQUARE_22.split("$Elements")[0], "no $Elements")
    bad(tmp_path, SQUARE_22.replace("$EndNodes\n", ""), "$Nodes", "not closed")
    bad(tmp_path, SQUARE_22.replace("$EndElements\n", ""), "$Elements", "not closed")


def test_truncated_and_counts(tmp_path):
    bad(tmp_path, SQUARE_41.replace("4 3 4\n5 4 1\n", "4 3 4\n"), "$Elements", "ends early")
    bad(tmp_path, SQUARE_41.replace("2 4 1 4", "2 5 1 5"), "$Nodes", "announces 5 nodes")
    bad(tmp_path, SQUARE_41.replace("2 5 1 5", "2 6 1 6"), "announces 6 elements")
    bad(tmp_path, SQUARE_22.replace("\n4\n1 0 0 0", "\nfour\n1 0 0 0"), "$Nodes",
        "number of nodes")


def test_bad_references_and_values(tmp_path):
    bad(tmp_path, SQUARE_22.replace("5 1 2 1 1 4 1", "5 1 2 1 1 4 9"), "element 5",
        "node 9")
    bad(tmp_path, SQUARE_22.replace("3 1 1 0", "3 1 x 0"), "node 3", "not numbers")
    bad(tmp_path, SQUARE_22.replace("3 1 1 0", "3 1 nan 0"), "node 3", "non-finite")
    bad(tmp_path, SQUARE_22.replace("3 1 1 0", "3 1 1 0.5"), "not in one plane", "2D")
    bad(tmp_path, SQUARE_22.replace("3 1 1 0", "3 1 0 0"), "element 3", "zero length")
    bad(tmp_path, SQUARE_22.replace("2 1 2 1 1 1 2", "2 1 2 1 1 1 2 3"), "element 2",
        "should have 2 nodes")
    bad(tmp_path, SQUARE_22.replace("4 0 1 0", "1 0 1 0"), "node tag 1", "twice")


def test_no_segment(tmp_path):
    text = SQUARE_22.split("$Elements")[0] + "$Elements\n1\n1 15 2 0 1 1\n$EndElements\n"
    bad(tmp_path, text, "no boundary segment")


# ---------------------------------------------------------- outline helpers
def test_outline_helpers():
    v = hourglass_outline(0.3, 0.06, 1.0, funnel_angle=45.0, neck_length=0.02)
    x0, x1 = v, np.roll(v, -1, axis=0)
    y, xl, xr = neck_of_segments(x0, x1)
    assert y == pytest.approx(0.5, abs=1e-3) and (xl, xr) == pytest.approx((-0.03, 0.03))
    inside = inside_polygon([[0, 0.5], [0, 0.9], [0.1, 0.5], [0.2, 0.9], [0, 1.1]], x0, x1)
    assert inside.tolist() == [True, True, False, False, False]
    assert distance_to_segments([[0, 0.9], [0.1, 0.05]], x0, x1) == pytest.approx([0.1, 0.05])


@pytest.mark.parametrize("kw, words", [
    (dict(neck_width=0.4), ("neck_width", "smaller than bulb_width")),
    (dict(height=0.1), ("height", "too small")),
    (dict(funnel_angle=90), ("funnel_angle",)),
    (dict(bulb_width=-1), ("bulb_width", "positive")),
])
def test_outline_rejects(kw, words):
    args = dict(bulb_width=0.3, neck_width=0.06, height=1.0)
    args.update(kw)
    input_error(lambda: hourglass_outline(**args), *words)


def test_gmsh_round_trip(tmp_path):
    pytest.importorskip("gmsh")
    from pdem.nscd.hourglass_geometry import build_hourglass_msh
    path = tmp_path / "hourglass.msh"
    v = build_hourglass_msh(path, 0.3, 0.06, 1.0, mesh_size=0.05)
    x0, x1 = read_msh_segments(path)
    length = np.hypot(*(x1 - x0).T)
    assert np.all(length <= 0.05 * 1.01) and length.sum() == pytest.approx(
        np.hypot(*(np.roll(v, -1, axis=0) - v).T).sum())
    # every segment lies on the outline: its middle is on one of the polygon's sides
    assert np.all(distance_to_segments(0.5 * (x0 + x1), v, np.roll(v, -1, axis=0)) < 1e-12)
    assert neck_of_segments(x0, x1)[0] == pytest.approx(0.5, abs=1e-3)


def test_fill_above():
    from pdem.nscd.hourglass_geometry import fill_above
    v = hourglass_outline(0.12, 0.03, 0.7, funnel_angle=45.0)
    x0, x1 = v, np.roll(v, -1, axis=0)
    y = neck_of_segments(x0, x1)[0]
    pos, r = fill_above(x0, x1, y, 0.002, 0.2, fill_height=0.1, seed=3)
    assert len(pos) > 300 and np.all((r >= 0.0016) & (r <= 0.0024))
    d = np.sqrt(((pos[:, None] - pos[None]) ** 2).sum(-1)) - r[:, None] - r[None]
    np.fill_diagonal(d, np.inf)
    assert d.min() > 0.0                                        # no overlap
    assert np.all(distance_to_segments(pos, x0, x1) > r)        # no wall contact
    assert np.all(inside_polygon(pos, x0, x1)) and np.all(pos[:, 1] - r >= y)
    assert np.all(pos[:, 1] <= y + 0.1 + 0.0025)
    again = fill_above(x0, x1, y, 0.002, 0.2, fill_height=0.1, seed=3)
    assert np.array_equal(again[0], pos) and np.array_equal(again[1], r)
    low, _ = fill_above(x0, x1, y, 0.002, 0.2, count=50, seed=3)
    assert len(low) == 50 and low[:, 1].max() <= pos[:, 1].max()
    input_error(lambda: fill_above(x0, x1, y, 0.002, 0.2, count=10 ** 6), "fit", "asked")
    input_error(lambda: fill_above(x0, x1, y, 0.002, 1.5, count=5), "polydispersity")
    input_error(lambda: fill_above(x0, x1, y, 0.002, 0.2), "count or fill_height")
