"""Faceted wall geometry: a triangle mesh, its topology and the checks the seed asks for.

Seed 004 ("Faceted Walls in PFC"), implemented here:
- facet i has vertices V1, V2, V3 (here local 0, 1, 2), edges E1 = V2 - V1, E2 = V3 - V2,
  E3 = V1 - V3 (here local edges 0, 1, 2: edge k runs from local vertex k to k+1 mod 3)
  and the right-hand-rule normal n = E1 x E2 / |E1 x E2|;
- "the three vertices delineating a facet must be unique": repeated vertices, and
  collinear vertices (no normal), are rejected (`Mesh.__init__`);
- "normals of all facets are oriented consistently with neighbouring facets": two
  facets sharing an edge must traverse it in opposite directions (`_build_edges`).
  Meshes as users have them (CAD exports, the LIGGGHTS examples) often have a few
  facets wound the other way: an orientable mesh is reoriented consistently by a walk
  over the facet adjacency (outward for a closed part; an open part keeps the winding
  of its lowest facet) with a MeshOrientationWarning giving the count (`_reorient`);
  a non-orientable surface is refused naming a facet, and an edge shared by more
  than two facets has no consistent orientation and is rejected;
- "the wall data structure allows efficient identification of neighbouring facets,
  those sharing edges or vertices": `edges`, `edge_facets`, `facet_edges`,
  `vertex_facet_ptr` / `vertex_facet_idx` (CSR), built once;
- "nor may facets of the same wall intersect one another": `_check_self_intersection`;
- "the user can flag individual facets as inactive on either or both facet sides":
  `inactive_front` / `inactive_back` arrays, set with `set_inactive`.

Vertices with exactly equal coordinates are merged (STL stores every triangle's
corners separately); `vertex_map[k]` is the mesh vertex of input vertex k.
File readers live in pdem.contact.mesh_files (`Mesh.read`).
"""
import warnings

import numpy as np

from ..errors import InputError


class MeshOrientationWarning(UserWarning):
    """A mesh's facets were wound inconsistently and were flipped (Mesh, the count)."""


class Mesh:
    """Triangle mesh of one faceted wall, validated, with its topology.

    Arrays (all C-contiguous):
      vertices (nv, 3) float64; facets (nf, 3) int64 (mesh vertex ids);
      normals (nf, 3) unit right-hand-rule normals; edges (ne, 2) vertex ids (lo < hi);
      edge_facets (ne, 2) the one or two facets of each edge (-1 when on the boundary);
      facet_edges (nf, 3): edge id of local edge k (vertex k -> vertex k+1 mod 3);
      vertex_facet_ptr (nv + 1,), vertex_facet_idx: facets around vertex v are
      vertex_facet_idx[ptr[v]:ptr[v+1]] in increasing order;
      inactive_front / inactive_back (nf,) bool: the side the normal points to / the other.
    """

    def __init__(self, vertices, facets, check_intersections=True, name="mesh"):
        self.name = name
        v = np.asarray(vertices, dtype=np.float64)
        f = np.asarray(facets)
        if v.ndim != 2 or v.shape[1] != 3 or len(v) < 3:
            raise InputError("%s: vertices must have shape (nv >= 3, 3), got %r"
                             % (name, v.shape))
        bad = np.flatnonzero(~np.all(np.isfinite(v), axis=1))
        if len(bad):
            raise InputError("%s: vertices[%d] is not finite: %r"
                             % (name, bad[0], v[bad[0]].tolist()))
        if f.ndim != 2 or f.shape[1] != 3 or len(f) < 1 or not np.issubdtype(f.dtype, np.integer):
            raise InputError("%s: facets must be integers of shape (nf >= 1, 3), got %s %r"
                             % (name, f.dtype, f.shape))
        bad = np.flatnonzero(np.any((f < 0) | (f >= len(v)), axis=1))
        if len(bad):
            raise InputError("%s: facet %d refers to a vertex outside 0..%d: %r"
                             % (name, bad[0], len(v) - 1, f[bad[0]].tolist()))
        self.n_reoriented = 0                     # facets flipped to agree with their neighbours
        self.vertices, self.vertex_map = _merge_vertices(v)
        self.facets = np.ascontiguousarray(self.vertex_map[f], dtype=np.int64)
        self._check_facets()
        self._build_edges()
        self._build_vertex_facets()
        self.inactive_front = np.zeros(self.n_facets, dtype=bool)
        self.inactive_back = np.zeros(self.n_facets, dtype=bool)
        if check_intersections:
            self._check_self_intersection()

    @classmethod
    def read(cls, path, **kw):
        """Mesh from an STL (ASCII or binary), OBJ or Gmsh v4 ASCII .msh file."""
        from .mesh_files import read_mesh_file
        v, f = read_mesh_file(path)
        kw.setdefault("name", "mesh file %r" % (str(path),))
        return cls(v, f, **kw)

    @property
    def n_facets(self):
        return len(self.facets)

    @property
    def n_vertices(self):
        return len(self.vertices)

    def facets_of_vertex(self, v):
        return self.vertex_facet_idx[self.vertex_facet_ptr[v]:self.vertex_facet_ptr[v + 1]]

    def set_inactive(self, facets, side="both", inactive=True):
        """Flag facets inactive (or active again) on side "front" (where the normal
        points), "back" or "both" (seed 004)."""
        if side not in ("front", "back", "both"):
            raise InputError("%s: set_inactive side must be 'front', 'back' or 'both', "
                             "got %r" % (self.name, side))
        idx = np.atleast_1d(np.asarray(facets))
        if idx.dtype == bool:
            idx = np.flatnonzero(idx) if len(idx) == self.n_facets else idx
        if not np.issubdtype(idx.dtype, np.integer) or np.any((idx < 0) | (idx >= self.n_facets)):
            raise InputError("%s: set_inactive facets must be indices in 0..%d, got %r"
                             % (self.name, self.n_facets - 1, idx.tolist()[:10]))
        if side in ("front", "both"):
            self.inactive_front[idx] = inactive
        if side in ("back", "both"):
            self.inactive_back[idx] = inactive

    # --------------------------------------------------------------- construction
    def _check_facets(self):
        f, v = self.facets, self.vertices
        rep = np.flatnonzero((f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 2] == f[:, 0]))
        if len(rep):
            i = rep[0]
            raise InputError("%s: facet %d is degenerate: repeated vertex (vertex ids %r, "
                             "coordinates %r); the three vertices of a facet must be unique"
                             % (self.name, i, f[i].tolist(), v[f[i]].tolist()))
        e1 = v[f[:, 1]] - v[f[:, 0]]
        e2 = v[f[:, 2]] - v[f[:, 1]]
        c = np.cross(e1, e2)
        area2 = np.linalg.norm(c, axis=1)
        longest = np.max(np.linalg.norm(v[f] - v[f[:, [1, 2, 0]]], axis=2), axis=1)
        flat = np.flatnonzero(~(area2 > 1e-12 * longest ** 2))
        if len(flat):
            i = flat[0]
            raise InputError("%s: facet %d is degenerate: its vertices %r are collinear "
                             "(no normal)" % (self.name, i, v[f[i]].tolist()))
        self.normals = np.ascontiguousarray(c / area2[:, None])
        self.areas = 0.5 * area2
        key = np.sort(f, axis=1)
        order = np.lexsort(key.T[::-1])
        same = np.flatnonzero(np.all(key[order[1:]] == key[order[:-1]], axis=1))
        if len(same):
            i, j = sorted((order[same[0]], order[same[0] + 1]))
            raise InputError("%s: facet %d repeats facet %d (same three vertices %r)"
                             % (self.name, j, i, f[j].tolist()))

    def _build_edges(self):
        f = self.facets
        nf, nv = len(f), self.n_vertices
        a = f.ravel()                              # directed edge 3 i + k: f[i,k] -> f[i,k+1]
        b = f[:, [1, 2, 0]].ravel()
        key = np.minimum(a, b) * nv + np.maximum(a, b)
        order = np.argsort(key, kind="stable")
        ks = key[order]
        start = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
        count = np.diff(np.r_[start, len(ks)])
        many = np.flatnonzero(count > 2)
        if len(many):
            s = start[many[0]]
            fs = sorted(order[s:s + count[many[0]]] // 3)
            raise InputError("%s: facet %d: edge (vertices %d, %d) is shared by %d facets %r; "
                             "an edge may be shared by at most two facets"
                             % (self.name, fs[-1], a[order[s]], b[order[s]], len(fs), fs))
        two = start[count == 2]
        p, q = order[two], order[two + 1]          # p < q (stable sort)
        wrong = np.flatnonzero(a[p] == a[q])
        if len(wrong):
            self._reorient(p // 3, q // 3, a[p] == a[q], order[start[count == 1]] // 3)
            return self._build_edges()           # facets flipped: the edges once more
        ne = len(start)
        self.edges = np.ascontiguousarray(
            np.stack([np.minimum(a, b)[order[start]], np.maximum(a, b)[order[start]]], 1))
        self.edge_facets = np.full((ne, 2), -1, dtype=np.int64)
        self.edge_facets[:, 0] = order[start] // 3
        self.edge_facets[count == 2, 1] = order[two + 1] // 3
        edge_of = np.empty(3 * nf, dtype=np.int64)
        edge_of[order] = np.repeat(np.arange(ne), count)
        self.facet_edges = edge_of.reshape(nf, 3)

    def _reorient(self, fi, fj, same, boundary):
        """Flip facets so that every shared edge is traversed in opposite directions.
        fi, fj: the two facets of each shared edge; same: True where both traverse it
        in the same direction (one of them must flip). A breadth-first walk over the
        facet adjacency, from the lowest facet of each connected part, gives each facet
        its flip relative to that seed; a contradiction means the surface is not
        orientable (a Moebius strip), refused naming the facet. A closed part (no
        boundary edge; `boundary`: the facets of the edges used once) is then
        turned outward (positive signed volume); an open part keeps its seed facet's
        winding. Warns with the count of flipped facets."""
        nf = self.n_facets
        nbr_a = np.r_[fi, fj]
        nbr_b = np.r_[fj, fi]
        parity = np.r_[same, same].astype(np.int8)
        order = np.argsort(nbr_a, kind="stable")
        nbr_b, parity = nbr_b[order], parity[order]
        ptr = np.r_[0, np.cumsum(np.bincount(nbr_a, minlength=nf))]
        flip = np.full(nf, -1, dtype=np.int8)
        part = np.full(nf, -1, dtype=np.int64)
        n_parts = 0
        for s in range(nf):
            if flip[s] >= 0:
                continue
            flip[s], part[s] = 0, n_parts
            queue = [s]
            while queue:
                i = queue.pop()
                for k in range(ptr[i], ptr[i + 1]):
                    j, want = nbr_b[k], flip[i] ^ parity[k]
                    if flip[j] < 0:
                        flip[j], part[j] = want, n_parts
                        queue.append(j)
                    elif flip[j] != want:
                        raise InputError(
                            "%s: facet %d cannot be oriented consistently with facet %d: the "
                            "surface is not orientable (no winding of its facets makes every "
                            "shared edge run in opposite directions)"
                            % (self.name, max(i, j), min(i, j)))
            n_parts += 1
        f = self.facets
        f[flip == 1] = f[flip == 1][:, [0, 2, 1]]
        open_part = np.zeros(n_parts, dtype=bool)
        open_part[part[boundary]] = True
        v = self.vertices[f]
        vol = np.bincount(part, np.einsum("ij,ij->i", v[:, 0], np.cross(v[:, 1], v[:, 2])),
                          minlength=n_parts)
        inward = ~open_part & (vol < 0)
        turn = inward[part]
        f[turn] = f[turn][:, [0, 2, 1]]
        flipped = (flip == 1) ^ turn
        self._check_facets()                       # normals of the new windings
        self.n_reoriented = int(flipped.sum())
        warnings.warn("%s: %d facet(s) were wound inconsistently with their neighbours and "
                      "were flipped (%s%s); the surface is now oriented consistently%s"
                      % (self.name, self.n_reoriented,
                         ", ".join(str(i) for i in np.flatnonzero(flipped)[:10]),
                         ", ..." if self.n_reoriented > 10 else "",
                         ", outward" if np.all(~open_part) else ""),
                      MeshOrientationWarning, stacklevel=4)

    def _build_vertex_facets(self):
        flat = self.facets.ravel()
        order = np.argsort(flat, kind="stable")
        self.vertex_facet_idx = np.ascontiguousarray(order // 3)
        self.vertex_facet_ptr = np.r_[0, np.cumsum(np.bincount(flat, minlength=self.n_vertices))]

    def _check_self_intersection(self):
        i, j = _overlapping_facet_pairs(self.vertices, self.facets)
        if len(i) == 0:
            return
        f = self.facets
        share = np.zeros(len(i), dtype=bool)
        for a in range(3):
            for b in range(3):
                share |= f[i, a] == f[j, b]
        i, j = i[~share], j[~share]
        hit = _triangles_intersect(self.vertices, f[i], f[j])
        if np.any(hit):
            k = np.flatnonzero(hit)
            k = k[np.lexsort((j[k], i[k]))[0]]
            raise InputError("%s: facets %d and %d intersect each other; facets of one wall "
                             "may not intersect" % (self.name, i[k], j[k]))


def _merge_vertices(v):
    """Merge exactly equal coordinates, keeping first-occurrence order.
    Returns (unique vertices, map from input index to unique index)."""
    _, first, inv = np.unique(v + 0.0, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return np.ascontiguousarray(v[first[order]]), rank[inv.ravel()]


def _overlapping_facet_pairs(vert, fac):
    """Pairs (i < j) of facets whose bounding boxes overlap, found with a uniform grid
    (cell size ~ the median facet extent): O(n) entries, then pairs within each cell."""
    tri = vert[fac]
    lo, hi = tri.min(axis=1), tri.max(axis=1)
    nf = len(fac)
    h = float(np.median(np.max(hi - lo, axis=1)))
    g0 = lo.min(axis=0)
    while True:
        ilo = np.floor((lo - g0) / h).astype(np.int64)
        ihi = np.floor((hi - g0) / h).astype(np.int64)
        ncell = ihi - ilo + 1
        cnt = np.prod(ncell, axis=1)
        if cnt.sum() <= 64 * nf + 1000:
            break
        h *= 2.0
    dims = ihi.max(axis=0) + 1
    total = int(cnt.sum())
    fid = np.repeat(np.arange(nf), cnt)
    off = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    ny, nz = np.repeat(ncell[:, 1], cnt), np.repeat(ncell[:, 2], cnt)
    cx = np.repeat(ilo[:, 0], cnt) + off // (ny * nz)
    cy = np.repeat(ilo[:, 1], cnt) + (off // nz) % ny
    cz = np.repeat(ilo[:, 2], cnt) + off % nz
    cell = (cx * dims[1] + cy) * dims[2] + cz
    order = np.lexsort((fid, cell))
    cell, fid = cell[order], fid[order]
    start = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    end = np.repeat(np.r_[start[1:], total], np.diff(np.r_[start, total]))
    m = end - np.arange(total) - 1
    first = np.repeat(fid, m)
    second_pos = np.repeat(np.arange(total) + 1, m) + (np.arange(m.sum()) - np.repeat(np.cumsum(m) - m, m))
    second = fid[second_pos]
    key = np.unique(np.minimum(first, second) * nf + np.maximum(first, second))
    a, b = key // nf, key % nf
    ok = np.all(lo[a] <= hi[b], axis=1) & np.all(lo[b] <= hi[a], axis=1) & (a != b)
    return a[ok], b[ok]


def _triangles_intersect(vert, fa, fb):
    """For facet pairs sharing no vertex: True where the triangles cross. Non-coplanar
    pairs cross iff an edge of one pierces the other's interior (both edge ends strictly
    on either side of its plane, piercing point strictly inside); coplanar pairs iff two
    edges cross at interior points or a vertex lies strictly inside the other triangle.
    Touching along boundaries (a vertex on an edge, a T-junction) is not a crossing.
    Tolerances: 1e-10 of the mesh size for lengths, 1e-10 for barycentric coordinates."""
    A, B = vert[fa], vert[fb]
    size = float(np.linalg.norm(vert.max(axis=0) - vert.min(axis=0)))
    eps_l, eps_b = 1e-10 * size, 1e-10

    def normal(T):
        c = np.cross(T[:, 1] - T[:, 0], T[:, 2] - T[:, 0])
        return c / np.linalg.norm(c, axis=1)[:, None]

    def bary_inside(X, T, n):
        # strict: every barycentric coordinate of X (projected on T's plane) > eps_b
        den = np.einsum("ij,ij->i", np.cross(T[:, 1] - T[:, 0], T[:, 2] - T[:, 0]), n)
        ok = np.ones(len(X), dtype=bool)
        for k in range(3):
            c = np.cross(T[:, (k + 1) % 3] - X, T[:, (k + 2) % 3] - X)
            ok &= np.einsum("ij,ij->i", c, n) / den > eps_b
        return ok

    nA, nB = normal(A), normal(B)
    dB = np.einsum("ikj,ij->ik", B - A[:, :1], nA)     # B's vertices above A's plane
    dA = np.einsum("ikj,ij->ik", A - B[:, :1], nB)
    coplanar = np.all(np.abs(dB) <= eps_l, axis=1) & np.all(np.abs(dA) <= eps_l, axis=1)
    hit = np.zeros(len(A), dtype=bool)
    for S, dS, T, nT in ((A, dA, B, nB), (B, dB, A, nA)):
        for k in range(3):
            d0, d1 = dS[:, k], dS[:, (k + 1) % 3]
            cross = ((d0 > eps_l) & (d1 < -eps_l)) | ((d0 < -eps_l) & (d1 > eps_l))
            t = np.where(cross, d0 / np.where(cross, d0 - d1, 1.0), 0.0)
            X = S[:, k] + t[:, None] * (S[:, (k + 1) % 3] - S[:, k])
            hit |= cross & bary_inside(X, T, nT)
    if np.any(coplanar):
        c = np.flatnonzero(coplanar)
        Ac, Bc, n = A[c], B[c], nA[c]
        hc = np.zeros(len(c), dtype=bool)
        for k in range(3):
            hc |= bary_inside(Bc[:, k], Ac, n) | bary_inside(Ac[:, k], Bc, n)
            p, r = Ac[:, k], Ac[:, (k + 1) % 3] - Ac[:, k]
            for m in range(3):
                q, s = Bc[:, m], Bc[:, (m + 1) % 3] - Bc[:, m]
                den = np.einsum("ij,ij->i", np.cross(r, s), n)
                good = np.abs(den) > 1e-14 * np.linalg.norm(r, axis=1) * np.linalg.norm(s, axis=1)
                den = np.where(good, den, 1.0)
                t = np.einsum("ij,ij->i", np.cross(q - p, s), n) / den
                u = np.einsum("ij,ij->i", np.cross(q - p, r), n) / den
                hc |= good & (t > eps_b) & (t < 1 - eps_b) & (u > eps_b) & (u < 1 - eps_b)
        hit[c] |= hc
    return hit
