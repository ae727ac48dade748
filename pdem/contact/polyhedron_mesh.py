"""Polyhedron-facet contacts of the mesh walls (issue 17 with seed 004, docs/polyhedra.md
"Mesh walls"): the ball-facet kind's groups, linking, proximity contacts, contact-state
continuity and wall motion (pyx/facets.pyx), with the polyhedron-triangle geometry of
pyx/polyhedron_facet.pxd (per facet: the vertex sums of the phplane law, or GJK/EPA for
a mesh edge or corner in a face) and the torques from this step's branch vectors."""
import numpy as np

from .._kernels import facets as fk
from ..errors import InputError
from ..particles import SHAPES
from .ellipsoid_facets import EllipsoidFacetContacts
from .kinds import register


@register
class PolyhedronFacetContacts(EllipsoidFacetContacts):
    """Polyhedra within the skin of mesh-wall facets (rows as FacetContacts)."""
    name = "phmesh"
    particle_shape = SHAPES["polyhedron"]

    def _shape_args(self):
        st = self.sim.store
        voff, vdata = self.sim.templates.table("vertices")
        big = np.flatnonzero(np.diff(voff) > fk.MAX_POLYHEDRON_VERTICES)
        if len(big):
            raise InputError("polyhedron template %d has %d vertices: at most %d can touch "
                             "mesh walls" % (big[0], np.diff(voff)[big[0]],
                                             fk.MAX_POLYHEDRON_VERTICES))
        return {"orient": st.orient, "template": st.template, "voff": voff, "vdata": vdata,
                "branch": self.branch, "status": self.status}

    def compute(self, table, nmat, f, t):
        message = super().compute(table, nmat, f, t)
        b, st = self.batch, self.sim.store
        bad = np.flatnonzero(self.status[:len(b)] >= 3)          # gjk.pxd MK_FAILED, BAD_INPUT
        if len(bad):
            k = bad[0]
            return ("step %d (t=%.6g): the GJK/EPA query of polyhedron %d and facet %d of mesh "
                    "wall %d %s" % (self.sim.step_count, self.sim.time, st.id[b.i1[k]],
                                    b.i2[k], self.wall_of(b.i2[k]),
                                    "failed (iterations or polytope exhausted)"
                                    if self.status[k] == 3 else "had non-finite input"))
        return message
