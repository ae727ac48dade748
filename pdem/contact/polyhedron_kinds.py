"""Interaction kinds of convex polyhedra (issue 17, docs/polyhedra.md): pairs with a
polyhedron (GJK + EPA, the Minkowski-overlap ECC law of seed 002) and polyhedron-plane
contacts (pyx/polyhedron_contacts.pyx). Rows, warm start, branch vectors and force sums
as the ellipsoid kinds (kinds.ShapeRows, ellipsoid_contacts.add_forces)."""
import numpy as np

from .._kernels import cells, ellipsoid_contacts as ek, polyhedron_contacts as pk
from ..particles import SHAPES
from . import keys
from .kinds import ShapeRows, TwoBodyRows, WallContacts, overlap_message, pair_candidates, \
    register
from .store import ContactBatch

POLY = SHAPES["polyhedron"]


def with_polyhedron(sim, *particles):
    """Mask of the rows whose particles (local indices, one array per slot) include a
    polyhedron; None when the simulation has none."""
    if not sim.polyhedra:
        return None
    shape = sim.store.shape
    mask = shape[particles[0]] >= POLY               # polyhedra and 2D polygons
    for p in particles[1:]:
        mask |= shape[p] >= POLY
    return mask


def gjk_failure(sim, kind, k, id1, id2):
    """The message of a GJK/EPA query that failed (never silent, issue 17)."""
    what = "exhausted its iterations or polytope (%d iterations)" % kind.iters[k] \
        if kind.status[k] == 3 else "had non-finite input"
    return ("step %d (t=%.6g): the GJK/EPA contact query of particles %d and %d %s "
            "(active contact: %s; max_iter=%d)" % (sim.step_count, sim.time, min(id1, id2),
                                                   max(id1, id2), what,
                                                   bool(kind.batch.active[k]), kind.max_iter))


class PolyRows(ShapeRows):
    tol = 1e-12                     # GJK distance and EPA depth, relative to the sizes
    max_iter = 100

    def vertices(self):
        return self.sim.templates.table("vertices")


@register
class PolyhedronPairs(PolyRows, TwoBodyRows):
    """Pairs of the Verlet list with at least one polyhedron (the other a polyhedron, a
    sphere or an ellipsoid)."""
    name = "phpair"

    def __init__(self, sim):
        super().__init__(sim)
        self._sized()
        self.stats = np.zeros(3)        # contact queries, their GJK + EPA iterations, the most

    def build(self, b):
        sim = self.sim
        if not sim.polyhedra:
            self.take(ContactBatch(), b)
        else:
            i1, i2, key = pair_candidates(sim, b)
            mask = with_polyhedron(sim, i1, i2)
            rows = ContactBatch(i1[mask], i2[mask], key[mask])
            rows.carry_from(self.batch)
            self.take(rows, b)
        self._sized()

    def compute(self, table, nmat, f, t):
        sim, b = self.sim, self.batch
        st = sim.store
        if len(b) == 0:
            return None
        voff, vdata = self.vertices()
        ratio, k, failed, n, it_sum, it_max = pk.polyhedron_pairs(
            b.i1, b.i2, st.pos, st.image, sim.box_length, st.vel, st.angvel, st.orient,
            st.shape, st.template, st.semi_axes, st.radius, st.mass, st.material, voff, vdata,
            table, nmat, sim.dt, sim.flags, self.tol, self.max_iter, b.active, b.state,
            self.branch, self.iters, self.status, sim.threads, warm=self.warm)
        self.stats += (n, it_sum, 0)
        self.stats[2] = max(self.stats[2], it_max)
        if failed >= 0:
            return gjk_failure(sim, self, failed, st.id[b.i1[failed]], st.id[b.i2[failed]])
        if k >= 0 and not (ratio <= sim.max_overlap):
            i, j = st.id[b.i1[k]], st.id[b.i2[k]]
            return overlap_message(sim, ratio, "particles %d and %d" % (min(i, j), max(i, j)))
        return None

    def add_forces(self, f, t, flags, threads):
        b = self.batch
        if len(b):
            ek.add_forces(self.owner1, self.owner2, b.active, b.state, self.branch, f, t)

    def public(self):
        b, st = self.batch, self.sim.store
        a = np.flatnonzero(b.active)
        a = a[self.owner1[a] >= 0]
        p, q = b.i1[a], b.i2[a]
        return self._public_shape(a, st.id[p], st.id[q], np.full(len(a), -1),
                                  st.pos[p] + self.branch[a, :3])


@register
class PolyhedronPlaneContacts(PolyRows, WallContacts):
    """Polyhedra within the skin of an infinite plane: the deepest vertex."""
    name = "phplane"

    def __init__(self, sim):
        super().__init__(sim)
        self._sized()

    def build(self, b):
        sim = self.sim
        st, pl = sim.store, sim.planes
        if not sim.polyhedra:
            self.batch = ContactBatch()
        else:
            wp, ww = cells.build_plane_pairs(st.pos, st.radius, b.n_own, pl.point, pl.normal,
                                             b.skin)
            mask = with_polyhedron(sim, wp)
            wp, ww = wp[mask], ww[mask]
            rows = ContactBatch(wp, ww, keys.make(st.id[wp], ww))
            rows.carry_from(self.batch)
            self.batch = rows
        self._sized()

    def n_elements(self):
        return len(self.sim.planes)

    def compute(self, table, nmat, f, t):
        sim, b = self.sim, self.batch
        st, pl = sim.store, sim.planes
        if len(b) == 0:
            return None
        voff, vdata = self.vertices()
        ratio, k = pk.polyhedron_plane(b.i1, b.i2, st.pos, st.vel, st.angvel, st.orient,
                                       st.shape, st.template, st.radius, st.mass, st.material, voff,
                                       vdata, pl.point, pl.normal, pl.vel, pl.material, table,
                                       nmat, sim.dt, sim.flags, b.active, b.state,
                                       self.branch, sim.threads)
        if k >= 0 and not (ratio <= sim.max_overlap):
            p, w = b.i1[k], b.i2[k]
            return overlap_message(sim, ratio, "polyhedron %d and plane %d" % (st.id[p], w))
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
