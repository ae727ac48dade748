"""Ellipsoid-facet contacts of the mesh walls (issue 16 with seed 004): the ball-facet
kind's groups, associative logic, proximity contacts, contact-state continuity and wall
motion (pyx/facets.pyx), with the ellipsoid-triangle geometry of
pyx/ellipsoid_facet.pxd in place of the closest point to a ball centre, and the
torques from this step's branch vectors (as the other ellipsoid kinds)."""
import numpy as np

from .._kernels import ellipsoid_contacts as ek
from ..particles import SHAPES
from .kinds import FacetContacts, ShapeWallRows, register


@register
class EllipsoidFacetContacts(ShapeWallRows, FacetContacts):
    """Ellipsoids within the skin of mesh-wall facets (rows as FacetContacts)."""
    name = "ellmesh"
    ellipsoids = True
    particle_shape = SHAPES["ellipsoid"]

    def build(self, b):
        if not self.sim.shapes:
            self.batch, self.groups = type(self.batch)(), np.zeros(1, np.int64)
        else:
            super().build(b)
        self._sized()

    def _shape_args(self):
        st = self.sim.store
        return {"orient": st.orient, "semi_axes": st.semi_axes, "branch": self.branch}

    def _torques(self, a):
        return ek.row_torques(np.ascontiguousarray(self.batch.state[a]),
                              np.ascontiguousarray(self.branch[a]), 2)
