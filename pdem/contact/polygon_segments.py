"""2D convex polygons against boundary segments and points (issue 17 with seed 004's
facet rules; docs/polyhedra.md "Segments"): per polygon, the vertex sums of its corners
below each segment or GJK/EPA for a segment end in a side, linked across shared end
points, one contact per linked set (pyx/polygon_segments.pyx). Rows, force sums (branch
vectors), public rows and wall loads are the ellipse kinds'."""
import numpy as np

from .._kernels import polygon_segments as pk
from ..errors import InputError
from ..materials import CONTACT_MODELS
from ..particles import SHAPES
from .kinds import PointContacts, SegmentContacts, ShapeWallRows, overlap_message, register

POLYGON = SHAPES["polygon"]


def check_models(sim, what, element_materials, polygon_materials):
    """One InputError line when a (segment, polygon) material pair asks for a contact
    model other than 'minkowski' (the vertex-sum law is the one polygons have against
    lines; the volume and common-plane models are 3D)."""
    codes, _ = sim.materials.contact_models()
    n = len(sim.materials.materials)
    for a in sorted(set(int(m) for m in element_materials)):
        for b in sorted(set(int(m) for m in polygon_materials)):
            if codes[a * n + b] != 0:
                mats = [sim.materials.materials[m] for m in (a, b)]
                model = CONTACT_MODELS[codes[a * n + b]] if codes[a * n + b] >= 0 else \
                    "%s'/'%s" % (mats[0].contact_model, mats[1].contact_model)
                raise InputError("%s: materials %r (segments) and %r (polygons) use "
                                 "contact_model '%s': polygons against boundary segments take "
                                 "'minkowski' only" % (what, mats[0].name, mats[1].name, model))


def polygon_materials(sim):
    """Material indices of the polygons on any rank (collective)."""
    st = sim.store
    have = np.zeros(max(len(sim.materials.materials), 1))
    own = st.shape[:st.n_own] == POLYGON
    have[np.unique(st.material[:st.n_own][own])] = 1.0
    return np.flatnonzero(sim.collective.max(have))


def segment_topology(a, b):
    """free_end (n, 2) int8: no other segment ends at a[s] / b[s]; chain (n, 2): the
    extent, as parameters of a[s] + t (b[s] - a[s]), of the straight chain of segments
    joined end to end with s (collinear, sharing end points): [0, 1] for a lone one, 0
    (1) exactly when a (b) ends the chain."""
    n = len(a)
    ends = np.concatenate([a, b])
    _, inverse, count = np.unique(ends, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    free = np.ascontiguousarray((count[inverse] == 1).astype(np.int8).reshape(2, n).T)
    parent = list(range(n))

    def root(k):
        while parent[k] != k:
            k = parent[k]
        return k
    t = b - a
    t = t / np.linalg.norm(t, axis=1)[:, None]
    at = {}
    for k, v in enumerate(inverse.tolist()):          # segments sharing each end point
        at.setdefault(v, []).append(k % n)
    for members in at.values():
        for i in members:
            for j in members:
                if i < j and abs(abs(np.dot(t[i], t[j])) - 1.0) <= 1e-12:
                    parent[max(root(i), root(j))] = min(root(i), root(j))
    groups = {}
    for k in range(n):
        groups.setdefault(root(k), []).append(k)
    chain = np.zeros((n, 2))
    for members in groups.values():
        pts = np.concatenate([a[members], b[members]])
        for s in members:
            span = (pts - a[s]) @ (b[s] - a[s]) / np.dot(b[s] - a[s], b[s] - a[s])
            lo, hi = span.min(), span.max()          # exactly 0, 1 at the chain's ends
            chain[s] = 0.0 if lo >= -1e-12 else lo, 1.0 if hi <= 1.0 + 1e-12 else hi
    return free, chain


class PolygonElements(ShapeWallRows):
    """Shared by the segment and point kinds of polygons."""
    shape_code = POLYGON
    in_pass = False                 # sums by add_forces (branch vectors)

    def __init__(self, sim):
        super().__init__(sim)
        self._free = (None, None)

    def build(self, b):
        if not self.sim.polyhedra:
            self.batch = type(self.batch)()
        else:
            super().build(b)
        self._sized()

    def topology(self):
        """(skip, free_end, chain) of the elements (pyx/polygon_segments.pyx)."""
        raise NotImplementedError

    def compute(self, table, nmat, f, t):
        sim, b = self.sim, self.batch
        if len(b) == 0:
            return None
        st, el = sim.store, self.elements()
        start = np.flatnonzero(np.diff(b.i1)) + 1
        group_start = np.concatenate([[0], start, [len(b)]]).astype(np.int64)
        voff, vdata = sim.templates.table("vertices")
        ratio, k, crowded = pk.polygon_elements(
            group_start, b.i1, b.i2, st.pos, st.vel, st.angvel, st.orient, st.template,
            st.radius, st.mass, st.material, voff, vdata, el.a, el.b, el.material,
            *self.topology(), table, nmat, sim.dt, sim.flags, b.active,
            b.state, self.branch, self.status, sim.threads)
        if crowded >= 0:
            return ("step %d: polygon %d has more than %d candidate %ss or %d corners"
                    % (sim.step_count, st.id[b.i1[crowded]], pk.MAX_ROWS, self.label,
                       pk.MAX_CORNERS))
        bad = np.flatnonzero(self.status[:len(b)] >= 3)          # gjk.pxd MK_FAILED, BAD_INPUT
        if len(bad):
            k = bad[0]
            return ("step %d (t=%.6g): the GJK/EPA query of polygon %d and %s %d %s"
                    % (sim.step_count, sim.time, st.id[b.i1[k]], self.label, b.i2[k],
                       "failed (iterations or polytope exhausted)"
                       if self.status[k] == 3 else "had non-finite input"))
        if k >= 0 and not (ratio <= sim.max_overlap):
            return overlap_message(sim, ratio, "polygon %d and %s %d"
                                   % (st.id[b.i1[k]], self.label, b.i2[k]))
        return None


@register
class PolygonSegmentContacts(PolygonElements, SegmentContacts):
    name = "phseg"
    label = "segment"

    def topology(self):
        """Computed again when the number of segments changes (walls only grow)."""
        sg = self.sim.segments
        if self._free[0] != len(sg):
            self._free = (len(sg), (np.zeros(len(sg), np.int8),) + segment_topology(sg.a, sg.b))
        return self._free[1]


@register
class PolygonPointContacts(PolygonElements, PointContacts):
    name = "phpoint"
    label = "point"

    def topology(self):
        ptr, _ = self.segment_ends()
        n = len(self.sim.points)
        return (np.diff(ptr) > 0).astype(np.int8), np.zeros((n, 2), np.int8), np.zeros((n, 2))
