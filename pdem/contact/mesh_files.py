"""Triangle mesh readers for faceted walls (seed 004, "Faceted Walls in PFC": a wall is
a triangular mesh the user brings from CAD). Small numpy readers, no dependency:

- STL, ASCII and binary (binary when the size is exactly 84 + 50 n bytes for the n
  triangles announced in the header). Stored normals are ignored: the vertex order
  (right-hand rule) defines the facet normal, as in the seed.
- Wavefront OBJ: `v x y z [w]` and `f i j k ...` lines (1-based indices, negative ones
  relative to the end, `i/t/n` forms accepted); polygons are split by a fan from their
  first vertex. Every other line (vt, vn, g, o, usemtl, ...) is ignored.
- Gmsh .msh, ASCII, format 4.1 or 2.2 (pdem.io.gmsh): elements of type 2 (3-node
  triangle) and type 3 (4-node quadrangle, split in two triangles); other element
  types (points, lines, volumes) are ignored.

Each reader returns (vertices (nv, 3) float64, facets (nf, 3) int64) with vertices
not yet merged; pdem.contact.mesh.Mesh merges exactly equal coordinates and checks
the result. Problems raise pdem.InputError naming the file and the line or record.
"""
import os
import re

import numpy as np

from ..errors import InputError
from ..io import gmsh


def read_mesh_file(path):
    """(vertices, facets) of a .stl, .obj or .msh file (chosen by the extension)."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    readers = {".stl": read_stl, ".obj": read_obj, ".msh": read_msh}
    if ext not in readers:
        raise InputError("mesh file %r: unknown extension %r (expected .stl, .obj or .msh)"
                         % (path, ext))
    if not os.path.isfile(path):
        raise InputError("mesh file %r: no such file" % (path,))
    return readers[ext](path)


def _fan(verts):
    """Triangles (0, k, k+1) of a polygon given its vertex indices."""
    return [(verts[0], verts[k], verts[k + 1]) for k in range(1, len(verts) - 1)]


# ------------------------------------------------------------------------------ STL
_STL_BINARY = np.dtype([("normal", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
_FLOAT = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)"


def write_stl(path, vertices, facets, binary=True, name="pdem"):
    """Write triangles to an STL file (binary: float32, as CAD tools write it; ASCII:
    17 significant digits, exact float64 round trip). Facet normals by the right-hand
    rule."""
    tri = np.asarray(vertices, dtype=np.float64)[np.asarray(facets)]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 1])
    n /= np.maximum(np.linalg.norm(n, axis=1), 1e-300)[:, None]
    if binary:
        rec = np.zeros(len(tri), _STL_BINARY)
        rec["normal"], rec["v"] = n, tri
        header = ("%s binary STL" % name).encode("ascii")[:80].ljust(80, b" ")
        with open(path, "wb") as fh:
            fh.write(header + np.uint32(len(tri)).tobytes() + rec.tobytes())
        return
    with open(path, "w") as fh:
        fh.write("solid %s\n" % name)
        for k in range(len(tri)):
            fh.write("  facet normal %.17g %.17g %.17g\n    outer loop\n" % tuple(n[k]))
            for v in tri[k]:
                fh.write("      vertex %.17g %.17g %.17g\n" % tuple(v))
            fh.write("    endloop\n  endfacet\n")
        fh.write("endsolid %s\n" % name)


def read_stl(path):
    with open(path, "rb") as fh:
        data = fh.read()
    if len(data) >= 84:
        n = int(np.frombuffer(data, "<u4", 1, 80)[0])
        if len(data) == 84 + 50 * n:
            tri = np.frombuffer(data, _STL_BINARY, n, 84)["v"].astype(np.float64)
            return tri.reshape(-1, 3), np.arange(3 * n, dtype=np.int64).reshape(-1, 3)
    if not data.lstrip()[:5].lower() == b"solid":
        raise InputError("STL file %r: neither binary (size %d is not 84 + 50 n) nor ASCII "
                         "(does not start with 'solid')" % (path, len(data)))
    text = data.decode("ascii", errors="replace")
    coords = []
    per_facet = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        key = words[0].lower()
        if key == "vertex":
            if len(words) != 4 or not all(re.fullmatch(_FLOAT, w, re.I) for w in words[1:]):
                raise InputError("STL file %r line %d: expected 'vertex x y z', got %r"
                                 % (path, lineno, line.strip()))
            coords.append([float(w) for w in words[1:]])
            per_facet += 1
        elif key == "endloop":
            if per_facet != 3:
                raise InputError("STL file %r line %d: a facet loop has %d vertices, "
                                 "expected 3" % (path, lineno, per_facet))
            per_facet = 0
    if not coords:
        raise InputError("STL file %r: no facets" % (path,))
    v = np.array(coords, dtype=np.float64)
    if len(v) % 3:
        raise InputError("STL file %r: %d vertices is not a multiple of 3" % (path, len(v)))
    return v, np.arange(len(v), dtype=np.int64).reshape(-1, 3)


# ------------------------------------------------------------------------------ OBJ
def read_obj(path):
    verts, tris = [], []
    with open(path, "r", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if words[0] == "v":
                try:
                    verts.append([float(w) for w in words[1:4]])
                except ValueError:
                    verts.append(None)
                if len(words) < 4 or verts[-1] is None:
                    raise InputError("OBJ file %r line %d: expected 'v x y z', got %r"
                                     % (path, lineno, line.strip()))
            elif words[0] == "f":
                idx = []
                for w in words[1:]:
                    try:
                        i = int(w.split("/", 1)[0])
                    except ValueError:
                        i = 0
                    if i < 0:
                        i = len(verts) + 1 + i  # relative: -1 is the last vertex so far
                    if not 1 <= i <= len(verts):
                        raise InputError("OBJ file %r line %d: face vertex %r does not name "
                                         "one of the %d vertices defined so far"
                                         % (path, lineno, w, len(verts)))
                    idx.append(i - 1)
                if len(idx) < 3:
                    raise InputError("OBJ file %r line %d: a face needs at least 3 vertices, "
                                     "got %d" % (path, lineno, len(idx)))
                tris.extend(_fan(idx))
    if not tris:
        raise InputError("OBJ file %r: no faces" % (path,))
    return np.array(verts, dtype=np.float64), np.array(tris, dtype=np.int64)


# ------------------------------------------------------------------------------ Gmsh
def read_msh(path):
    """Triangles (type 2) and quadrangles (type 3, split in two) of an ASCII Gmsh file,
    format 4.1 or 2.2 (pdem.io.gmsh reads and checks the file)."""
    _tags, coords, row, elements = gmsh.read_msh(path)
    tris = []
    for etag, etype, nodes in elements:
        if etype in (gmsh.TRIANGLE, gmsh.QUADRANGLE):
            gmsh.check_count(path, etag, etype, nodes)
            tris.extend(_fan(gmsh.node_rows(path, row, etag, nodes)))
    if not tris:
        raise InputError("Gmsh file %r: no triangle or quadrangle elements" % (path,))
    return coords, np.array(tris, dtype=np.int64)
