"""Ellipses (2D) against boundary segments and points (issue 16 with seed 003's
boundary elements): per row the tangent line of pyx/segments.pyx ellipse_feet, then the
ellipse-plane kernel (pyx/ellipsoid_contacts.pyx, planar) as for infinite lines; the
torques from this step's branch vectors."""
import numpy as np

from .._kernels import ellipsoid_contacts as ek, segments as sk
from .kinds import PointContacts, SegmentContacts, ShapeRows, overlap_message, register


class EllipseFeet(ShapeRows):
    """Shared by the segment and point kinds of ellipses."""
    ellipses = True
    in_pass = False                 # sums by add_forces (branch vectors)

    def __init__(self, sim):
        super().__init__(sim)
        self._sized()

    def build(self, b):
        if not self.sim.shapes:
            self.batch = type(self.batch)()
        else:
            super().build(b)
        self._sized()

    def planes(self):
        b, sim, el = self.batch, self.sim, self.elements()
        st = sim.store
        m = len(b)
        q, n = np.empty((m, 3)), np.empty((m, 3))
        ptr, ends = self.segment_ends()
        sk.ellipse_feet(b.i1, b.i2, st.pos, st.orient, st.semi_axes, st.radius, el.a, el.b,
                        ptr, ends, sim.segments.a, sim.segments.b, q, n, sim.threads)
        return q, n, None

    def compute(self, table, nmat, f, t):
        sim, b = self.sim, self.batch
        if len(b) == 0:
            return None
        st = sim.store
        q, n, _ = self.planes()
        rows = np.arange(len(b), dtype=np.int32)
        ratio, k = ek.ellipsoid_plane(b.i1, rows, st.pos, st.vel, st.angvel, st.orient,
                                      st.semi_axes, st.mass, st.material, q, n,
                                      np.zeros((len(b), 3)), self.element_materials(b.i2),
                                      table, nmat, sim.dt, sim.flags, b.active, b.state,
                                      self.branch, sim.threads, planar=True)
        if k >= 0 and not (ratio <= sim.max_overlap):
            return overlap_message(sim, ratio, "ellipse %d and %s %d"
                                   % (st.id[b.i1[k]], self.label, b.i2[k]))
        return None

    def add_forces(self, f, t, flags, threads):
        b = self.batch
        if len(b):
            ek.add_forces(None, b.i1, b.active, b.state, self.branch, f, t)

    def public(self):
        b, st = self.batch, self.sim.store
        a = np.flatnonzero(b.active)
        p = b.i1[a]
        return self._public_shape(a, np.full(len(a), -1), st.id[p], b.i2[a],
                                  st.pos[p] + self.branch[a, 3:])


@register
class EllipseSegmentContacts(EllipseFeet, SegmentContacts):
    name = "ellseg"
    label = "segment"


@register
class EllipsePointContacts(EllipseFeet, PointContacts):
    name = "ellpoint"
    label = "point"
