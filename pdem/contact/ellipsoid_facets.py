"""Ellipsoid-facet contacts of the mesh walls (issue 16 with seed 004): the ball-facet
kind's groups, associative logic, proximity contacts, contact-state continuity and wall
motion (pyx/facets.pyx), with the ellipsoid-triangle geometry of
pyx/ellipsoid_facet.pxd in place of the closest point to a ball centre, and the
torques from this step's branch vectors (as the other ellipsoid kinds)."""
import numpy as np

from .._kernels import ellipsoid_contacts as ek, facets as fk
from .kinds import FacetContacts, ShapeRows, register


@register
class EllipsoidFacetContacts(ShapeRows, FacetContacts):
    """Ellipsoids within the skin of mesh-wall facets (rows as FacetContacts)."""
    name = "ellmesh"
    ellipsoids = True

    def __init__(self, sim):
        super().__init__(sim)
        self._sized()

    def build(self, b):
        if not self.sim.shapes:
            self.batch, self.groups = type(self.batch)(), np.zeros(1, np.int64)
        else:
            super().build(b)
        self._sized()

    def compute(self, table, nmat, f, t):
        sim, fr = self.sim, self.batch
        st, mw = sim.store, sim.mesh_walls
        if len(fr) == 0:
            return None
        ratio, k, crowded = fk.ball_facet(
            self.groups, fr.i1, fr.i2, st.pos, st.vel, st.angvel, st.radius, st.mass,
            st.material, mw.vertices, mw.facets, mw.normals, mw.facet_wall, mw.facet_edges,
            mw.edge_facets, mw.vertex_facet_ptr, mw.vertex_facet_idx, mw.side_off,
            mw.wall_material, mw.wall_cos_theta, mw.wall_full, mw.wall_rigid, mw.wall_v,
            mw.wall_w, mw.wall_ref, mw.vertex_vel, table, nmat, sim.dt, sim.flags, fr.active,
            fr.state, self.holder, sim.threads, orient=st.orient, semi_axes=st.semi_axes,
            branch=self.branch)
        return self._checked(ratio, k, crowded)

    def add_forces(self, f, t, flags, threads):
        b = self.batch
        if len(b):
            ek.add_forces(None, b.i1, b.active, b.state, self.branch, f, t)

    def _torques(self, a):
        return ek.row_torques(np.ascontiguousarray(self.batch.state[a]),
                              np.ascontiguousarray(self.branch[a]), 2)

    def public(self):
        b, st = self.batch, self.sim.store
        a = np.flatnonzero(b.active)
        p = b.i1[a]
        return self._public_shape(a, np.full(len(a), -1), st.id[p], self.wall_of(b.i2[a]),
                                  st.pos[p] + self.branch[a, 3:])
