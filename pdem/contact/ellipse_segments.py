"""Ellipses (2D) against boundary segments and points (issue 16 with seed 003's
boundary elements): per row the tangent line of pyx/segments.pyx ellipse_feet, then the
ellipse-plane kernel (pyx/ellipsoid_contacts.pyx, planar) as for infinite lines; the
torques from this step's branch vectors."""
import numpy as np

from .._kernels import ellipsoid_contacts as ek, segments as sk
from ..particles import SHAPES
from .kinds import PointContacts, SegmentContacts, ShapeWallRows, overlap_message, register


class EllipseFeet(ShapeWallRows):
    """Shared by the segment and point kinds of ellipses."""
    shape_code = SHAPES["ellipse"]
    in_pass = False                 # sums by add_forces (branch vectors)

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


@register
class EllipseSegmentContacts(EllipseFeet, SegmentContacts):
    name = "ellseg"
    label = "segment"


@register
class EllipsePointContacts(EllipseFeet, PointContacts):
    name = "ellpoint"
    label = "point"
