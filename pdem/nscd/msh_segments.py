"""Boundary segments of a 2D Gmsh mesh (seed 003, "Contacts with boundaries": the
walls of the hourglass are segments x_w^0 -> x_w^1, read from the boundary lines of
"hourglass.msh").

read_msh_segments(path) returns (x0, x1), two (k, 2) float64 arrays, one row per
boundary segment. It reads ASCII Gmsh files of format 4.1 (the default of Gmsh 4)
and 2.2 (the legacy one many course files use):

- elements of type 1 (2-node line) are segments; type 8 (3-node, second-order line)
  becomes two segments through its middle node;
- a file with no line element but with triangles (type 2) or quadrangles (type 3),
  as Gmsh writes when only a surface is in a physical group, gives the edges that
  belong to exactly one of those elements (the outline of the surface);
- other element types (points, volumes, higher orders) are ignored.

Segments are deduplicated on their end-point coordinates, in either orientation (a
line in two physical groups is listed twice), and returned in file order. The nodes
of the segments must lie in one plane z = const (the hourglass is 2D: x, y are kept).

Every problem raises pdem.InputError naming the file and what is wrong: missing
file, binary or unknown format version, missing or truncated sections, counts that do
not match their headers, an element naming an unknown node, non-finite coordinates,
nodes outside a plane z = const, zero-length segments, no segment at all.
"""
import os

import numpy as np

from ..errors import InputError
from ..io.gmsh import LINE, LINE3, QUADRANGLE, TRIANGLE, check_count, node_rows, read_msh


def read_msh_segments(path):
    """(x0, x1): (k, 2) float64 end points of the boundary segments of the 2D Gmsh
    mesh `path` (ASCII, format 4.1 or 2.2). See the module docstring for the rules."""
    path = os.fspath(path)
    tags, coords, row, elements = read_msh(path)
    pairs = _line_pairs(path, elements)
    if not pairs:
        pairs = _outline_pairs(path, elements)
    if not pairs:
        raise InputError("Gmsh file %r: no boundary segment (no line element of type 1 or "
                         "8, and no triangle or quadrangle to take the outline of)" % (path,))
    idx = np.array([node_rows(path, row, etag, (a, b)) for etag, a, b in pairs], np.int64)
    etags = [p[0] for p in pairs]
    used = np.unique(idx)
    xyz = coords[used]
    if not np.all(np.isfinite(xyz)):
        bad = used[np.nonzero(~np.all(np.isfinite(xyz), axis=1))[0][0]]
        raise InputError("Gmsh file %r: node %d has non-finite coordinates %s"
                         % (path, tags[bad], coords[bad].tolist()))
    scale = max(float(np.ptp(xyz[:, 0])), float(np.ptp(xyz[:, 1])), 1e-300)
    z = xyz[:, 2]
    if np.ptp(z) > 1e-9 * scale:
        bad = used[int(np.argmax(np.abs(z - z[0])))]
        raise InputError("Gmsh file %r: the segment nodes are not in one plane z = const "
                         "(node %d has z = %r, node %d has z = %r): a 2D mesh is needed"
                         % (path, tags[used[0]], float(z[0]), tags[bad], float(coords[bad, 2])))
    x0, x1 = coords[idx[:, 0], :2], coords[idx[:, 1], :2]
    length = np.hypot(*(x1 - x0).T)
    if np.any(length <= 1e-12 * scale):
        k = int(np.nonzero(length <= 1e-12 * scale)[0][0])
        raise InputError("Gmsh file %r: element %d is a segment of zero length (nodes %d "
                         "and %d at %s)" % (path, etags[k], tags[idx[k, 0]], tags[idx[k, 1]],
                                            x0[k].tolist()))
    # deduplicate on coordinates, either orientation, keeping the first occurrence
    a, b = x0.copy(), x1.copy()
    swap = (a[:, 0] > b[:, 0]) | ((a[:, 0] == b[:, 0]) & (a[:, 1] > b[:, 1]))
    a[swap], b[swap] = x1[swap], x0[swap]
    _, first = np.unique(np.c_[a, b], axis=0, return_index=True)
    keep = np.sort(first)
    return np.ascontiguousarray(x0[keep]), np.ascontiguousarray(x1[keep])


def _line_pairs(path, elements):
    """[(element tag, node a, node b)] of the line elements (type 1, and type 8 split)."""
    pairs = []
    for etag, etype, nodes in elements:
        if etype == LINE:
            check_count(path, etag, etype, nodes)
            pairs.append((etag, nodes[0], nodes[1]))
        elif etype == LINE3:
            check_count(path, etag, etype, nodes)
            pairs.append((etag, nodes[0], nodes[2]))
            pairs.append((etag, nodes[2], nodes[1]))
    return pairs


def _outline_pairs(path, elements):
    """Edges that belong to exactly one triangle or quadrangle, as (tag, a, b)."""
    count, first = {}, {}
    for etag, etype, nodes in elements:
        if etype not in (TRIANGLE, QUADRANGLE):
            continue
        check_count(path, etag, etype, nodes)
        for k in range(len(nodes)):
            a, b = nodes[k], nodes[(k + 1) % len(nodes)]
            key = (a, b) if a < b else (b, a)
            count[key] = count.get(key, 0) + 1
            first.setdefault(key, (etag, a, b))
    return [first[key] for key in first if count[key] == 1]
