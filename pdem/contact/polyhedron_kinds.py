"""Interaction kinds of convex polyhedra (issue 17, docs/polyhedra.md): pairs with a
polyhedron (GJK + EPA, the Minkowski-overlap ECC law of seed 002) and polyhedron-plane
contacts (pyx/polyhedron_contacts.pyx). Pairs of two polyhedra and polyhedron-plane
contacts follow the material pair's contact_model (pdem.materials: 'minkowski', the
contact-volume ECC law 'volume', Cundall's 'common_plane'). Rows, candidates, warm start, branch vectors,
force sums and public rows are the ellipsoid kinds' (subclasses with their own mask and
kernel)."""
import numpy as np

from .._kernels import polyhedron_contacts as pk
from ..materials import CONTACT_MODELS
from ..particles import SHAPES
from .kinds import EllipsoidPairs, EllipsoidPlaneContacts, overlap_message, register

POLY = SHAPES["polyhedron"]


def with_polyhedron(sim, *particles):
    """Mask of the rows whose particles (local indices, one array per slot) include a
    polyhedron or polygon; None when the simulation has none."""
    if not sim.polyhedra:
        return None
    shape = sim.store.shape
    mask = shape[particles[0]] >= POLY               # polyhedra and 2D polygons
    for p in particles[1:]:
        mask |= shape[p] >= POLY
    return mask


def gjk_failure(sim, kind, k, id1, id2):
    """The message of a GJK/EPA query that failed (never silent, issue 17)."""
    if kind.status[k] == 3 and kind.iters[k] < 0:
        what = "overflowed the contact-volume clipping (a polygon of over 62 points)"
    elif kind.status[k] == 3:
        what = "exhausted its iterations or polytope (%d iterations)" % kind.iters[k]
    else:
        what = "had non-finite input"
    return ("step %d (t=%.6g): the GJK/EPA contact query of particles %d and %d %s "
            "(active contact: %s; max_iter=%d)" % (sim.step_count, sim.time, min(id1, id2),
                                                   max(id1, id2), what,
                                                   bool(kind.batch.active[k]), kind.max_iter))


class PolyRows:
    tol = 1e-12                     # GJK distance and EPA depth, relative to the sizes
    max_iter = 100

    def rows_mask(self, *particles):
        return with_polyhedron(self.sim, *particles)

    def tables(self):
        """(vertex offsets, vertices, triangle offsets, triangles, model codes, k_v)."""
        t = self.sim.templates
        return t.table("vertices") + t.table("triangles") + self.sim.materials.contact_models()

    def check_models(self, codes, mat1, mat2, both):
        """The message refusing a touching pair of polyhedra whose materials' contact
        models differ (code -1; mat1, mat2: material indices per row; both: the rows
        concerned), or None."""
        if not (codes < 0).any():
            return None
        n = len(self.sim.materials.materials)
        bad = np.flatnonzero(both & (codes[mat1 * n + mat2] < 0) & (self.batch.active != 0))
        if len(bad):
            a, b = (self.sim.materials.materials[int(m[bad[0]])].name for m in (mat1, mat2))
            return ("step %d: materials %r and %r use different contact models (%s): set the "
                    "pair's with Simulation.pair(%r, %r, contact_model=...)" % (
                        self.sim.step_count, a, b, "/".join(CONTACT_MODELS), a, b))
        return None


@register
class PolyhedronPairs(PolyRows, EllipsoidPairs):
    """Pairs of the Verlet list with at least one polyhedron or polygon (the other a
    polyhedron, a sphere or an ellipsoid); rows, build, force sums and public rows are
    EllipsoidPairs'."""
    name = "phpair"

    def compute(self, table, nmat, f, t):
        sim, b = self.sim, self.batch
        st = sim.store
        if len(b) == 0:
            return None
        voff, vdata, toff, tdata, codes, kv = self.tables()
        ratio, k, failed, n, it_sum, it_max = pk.polyhedron_pairs(
            b.i1, b.i2, st.pos, st.image, sim.cell.kernel, st.vel, st.angvel, st.orient,
            st.shape, st.template, st.semi_axes, st.radius, st.mass, st.material, voff, vdata,
            toff, tdata, table, codes, kv, nmat, sim.dt, sim.flags, self.tol, self.max_iter,
            b.active, b.state, self.branch, self.iters, self.status, sim.threads,
            warm=self.warm)
        bad = self.check_models(codes, st.material[b.i1], st.material[b.i2],
                                (st.shape[b.i1] == POLY) & (st.shape[b.i2] == POLY))
        if bad:
            return bad
        self.stats += (n, it_sum, 0)
        self.stats[2] = max(self.stats[2], it_max)
        if failed >= 0:
            return gjk_failure(sim, self, failed, st.id[b.i1[failed]], st.id[b.i2[failed]])
        if k >= 0 and not (ratio <= sim.max_overlap):
            i, j = st.id[b.i1[k]], st.id[b.i2[k]]
            return overlap_message(sim, ratio, "particles %d and %d" % (min(i, j), max(i, j)))
        return None


@register
class PolyhedronPlaneContacts(PolyRows, EllipsoidPlaneContacts):
    """Polyhedra and polygons within the skin of an infinite plane: the vertices below
    it (pyx/polyhedron_contacts.pyx)."""
    name = "phplane"

    def compute(self, table, nmat, f, t):
        sim, b = self.sim, self.batch
        st, pl = sim.store, sim.planes
        if len(b) == 0:
            return None
        voff, vdata, toff, tdata, codes, kv = self.tables()
        ratio, k = pk.polyhedron_plane(b.i1, b.i2, st.pos, st.vel, st.angvel, st.orient,
                                       st.shape, st.template, st.radius, st.mass, st.material,
                                       voff, vdata, toff, tdata, pl.point, pl.normal, pl.vel,
                                       pl.material, table, codes, kv, nmat, sim.dt, sim.flags,
                                       b.active, b.state, self.branch, sim.threads)
        bad = self.check_models(codes, pl.material[b.i2], st.material[b.i1],
                                st.shape[b.i1] == POLY)
        if bad:
            return bad
        if k >= 0 and not (ratio <= sim.max_overlap):
            p, w = b.i1[k], b.i2[k]
            return overlap_message(sim, ratio, "polyhedron %d and plane %d" % (st.id[p], w))
        return None
