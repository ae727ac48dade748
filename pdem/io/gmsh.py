"""ASCII Gmsh .msh files, formats 4.1 (Gmsh 4's default) and 2.2 (legacy): nodes and
elements, checked. Used by the faceted-wall reader (triangles and quadrangles,
pdem.contact.mesh_files) and by the hourglass's boundary segments (line elements,
pdem.nscd.msh_segments).

read_msh(path) -> (tags, coords, row, elements): node tags (list), coordinates (n, 3)
float64, {node tag: row}, and [(element tag, element type, [node tags])] in file
order. Every problem raises pdem.InputError naming the file and what is wrong:
missing file, binary or unknown format version, missing or truncated sections,
counts that do not match their headers, a node tag defined twice, coordinates that
are not numbers.
"""
import os

import numpy as np

from ..errors import InputError

LINE, TRIANGLE, QUADRANGLE, LINE3 = 1, 2, 3, 8
NODES_PER_TYPE = {1: 2, 2: 3, 3: 4, 4: 4, 5: 8, 6: 6, 7: 5, 8: 3, 9: 6, 10: 9, 11: 10,
                  15: 1, 16: 8, 17: 20, 21: 10, 26: 4, 27: 5, 28: 6}


class _Lines:
    """The body lines of one $Section, read in order; errors name file and section."""

    def __init__(self, path, name, lines):
        self.path, self.name, self.lines, self.p = path, name, lines, 0

    def fail(self, what):
        raise InputError("Gmsh file %r: section $%s: %s" % (self.path, self.name, what))

    def ints(self, count=None, what="a line of integers"):
        words = self.words(what)
        try:
            values = [int(w) for w in words]
        except ValueError:
            self.fail("expected %s, got %r" % (what, " ".join(words)))
        if count is not None and len(values) < count:
            self.fail("expected %s (%d integers), got %r" % (what, count, " ".join(words)))
        return values

    def words(self, what):
        while self.p < len(self.lines) and not self.lines[self.p]:
            self.p += 1                                    # blank lines are harmless
        if self.p >= len(self.lines):
            self.fail("ends early (expected %s)" % what)
        self.p += 1
        return self.lines[self.p - 1].split()


def _sections(path):
    """{name: [stripped lines]} of the $Name ... $EndName sections of an ASCII file."""
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise InputError("Gmsh file %r: not an ASCII file (binary .msh is not supported: "
                         "save it with Mesh.Binary = 0)" % (path,))
    sections, name, body = {}, None, []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if name is None:
            if s.startswith("$"):
                name, body = s[1:], []
            elif s:
                raise InputError("Gmsh file %r line %d: text outside a $Section: %r"
                                 % (path, lineno, s[:60]))
        elif s == "$End" + name:
            sections.setdefault(name, body)
            name = None
        elif s.startswith("$"):
            raise InputError("Gmsh file %r line %d: section $%s is not closed by $End%s "
                             "before %r" % (path, lineno, name, name, s))
        else:
            body.append(s)
    if name is not None:
        raise InputError("Gmsh file %r: section $%s is not closed by $End%s"
                         % (path, name, name))
    return sections


def _format(path, sections):
    if "MeshFormat" not in sections or not sections["MeshFormat"]:
        raise InputError("Gmsh file %r: no $MeshFormat section (is it a Gmsh .msh file?)"
                         % (path,))
    words = sections["MeshFormat"][0].split()
    if len(words) < 2:
        raise InputError("Gmsh file %r: $MeshFormat line %r should read 'version type "
                         "size'" % (path, sections["MeshFormat"][0]))
    version, ftype = words[0], words[1]
    if ftype != "0":
        raise InputError("Gmsh file %r: binary file (type %s; save it as ASCII with "
                         "Mesh.Binary = 0)" % (path, ftype))
    if version.startswith("4.1"):
        return 4
    if version.startswith("2."):
        return 2
    raise InputError("Gmsh file %r: MeshFormat version %s is not supported (use 4.1 or "
                     "2.2: Mesh.MshFileVersion = 4.1)" % (path, version))


def _nodes_v4(path, body):
    """(tags list, coords list of [x, y, z]) of a version 4.1 $Nodes section."""
    s = _Lines(path, "Nodes", body)
    nblocks, nnodes = s.ints(2, "'numEntityBlocks numNodes minNodeTag maxNodeTag'")[:2]
    tags, coords = [], []
    for b in range(nblocks):
        _dim, _ent, parametric, n = s.ints(4, "entity block %d header 'entityDim "
                                           "entityTag parametric numNodesInBlock'" % b)
        for _ in range(n):
            tags.append(s.ints(1, "a node tag")[0])
        for k in range(n):
            w = s.words("coordinates of node %d" % tags[len(tags) - n + k])
            if len(w) < 3 + (parametric != 0):
                s.fail("node %d: expected 'x y z', got %r" % (tags[len(tags) - n + k],
                                                               " ".join(w)))
            coords.append(w[:3])
    if len(tags) != nnodes:
        s.fail("the header announces %d nodes, the blocks hold %d" % (nnodes, len(tags)))
    return tags, coords


def _elements_v4(path, body):
    """[(element tag, type, [node tags])] of a version 4.1 $Elements section."""
    s = _Lines(path, "Elements", body)
    nblocks, nelems = s.ints(2, "'numEntityBlocks numElements minElementTag "
                             "maxElementTag'")[:2]
    out = []
    for b in range(nblocks):
        _dim, _ent, etype, n = s.ints(4, "entity block %d header 'entityDim entityTag "
                                      "elementType numElementsInBlock'" % b)
        for _ in range(n):
            v = s.ints(1, "an element 'tag node ...'")
            out.append((v[0], etype, v[1:]))
    if len(out) != nelems:
        s.fail("the header announces %d elements, the blocks hold %d" % (nelems, len(out)))
    return out


def _nodes_v2(path, body):
    s = _Lines(path, "Nodes", body)
    n = s.ints(1, "the number of nodes")[0]
    tags, coords = [], []
    for _ in range(n):
        w = s.words("a node 'tag x y z'")
        if len(w) < 4:
            s.fail("expected a node 'tag x y z', got %r" % " ".join(w))
        try:
            tags.append(int(w[0]))
        except ValueError:
            s.fail("node tag %r is not an integer" % w[0])
        coords.append(w[1:4])
    return tags, coords


def _elements_v2(path, body):
    s = _Lines(path, "Elements", body)
    n = s.ints(1, "the number of elements")[0]
    out = []
    for _ in range(n):
        v = s.ints(3, "an element 'tag type ntags tags... nodes...'")
        tag, etype, ntags = v[0], v[1], v[2]
        out.append((tag, etype, v[3 + ntags:]))
    return out


def _is_float3(words):
    try:
        [float(w) for w in words]
        return len(words) == 3
    except ValueError:
        return False


def check_count(path, etag, etype, nodes):
    """InputError when an element of a known type has the wrong number of nodes."""
    want = NODES_PER_TYPE.get(etype)
    if want is not None and len(nodes) != want:
        raise InputError("Gmsh file %r: element %d of type %d should have %d nodes, it "
                         "has %d" % (path, etag, etype, want, len(nodes)))


def read_msh(path):
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise InputError("Gmsh file %r: no such file" % (path,))
    sections = _sections(path)
    version = _format(path, sections)
    for name in ("Nodes", "Elements"):
        if name not in sections:
            raise InputError("Gmsh file %r: no $%s section" % (path, name))
    if version == 4:
        tags, words = _nodes_v4(path, sections["Nodes"])
        elements = _elements_v4(path, sections["Elements"])
    else:
        tags, words = _nodes_v2(path, sections["Nodes"])
        elements = _elements_v2(path, sections["Elements"])
    try:
        coords = np.array(words, dtype=np.float64).reshape(-1, 3)
    except ValueError:
        bad = next(i for i, w in enumerate(words) if not _is_float3(w))
        raise InputError("Gmsh file %r: node %d has coordinates %r that are not numbers"
                         % (path, tags[bad], " ".join(words[bad])))
    row = {}
    for r, t in enumerate(tags):
        if t in row:
            raise InputError("Gmsh file %r: node tag %d is defined twice" % (path, t))
        row[t] = r
    return tags, coords, row, elements


def node_rows(path, row, etag, nodes):
    """Rows of an element's node tags; InputError for a tag not in $Nodes."""
    out = []
    for t in nodes:
        if t not in row:
            raise InputError("Gmsh file %r: element %d names node %d, which is not in "
                             "$Nodes" % (path, etag, t))
        out.append(row[t])
    return out
