"""The interaction kinds of clumps (docs/clumps.md, pyx/clump_contacts.pyx): member-sphere
pairs of the Verlet pairs with a clump, and member-plane contacts of clumps.

A row is one member pair: its key is the pair's (or the particle and plane's), as in the
other kinds, and its sub-key (ContactBatch.sub, carried by migration and checkpoints)
the member indices, m1 << 16 | m2 (planes: m). Rows are sorted by (key, sub), so each
particle's forces are summed in ascending (partner id, members): the same bits on any
number of ranks and threads.
"""
import numpy as np

from .._kernels import cells, clump_contacts as cc, rebuild as _r
from . import keys
from .kinds import (EllipsoidPairs, EllipsoidPlaneContacts, overlap_message, pair_candidates,
                    register, shaped)
from .store import ContactBatch

CLUMP = 3                       # pdem.particles.SHAPES["clump"]


def carry_by_subkey(new, old):
    """ContactBatch.carry_from matching (key, sub): both mapped to the dense rank of the
    pair among the keys of the two lists (numpy), then carry_rows on the ranks."""
    act = np.flatnonzero(old.active)
    if len(new) == 0 or len(act) == 0:
        return
    key = np.concatenate([new.key, old.key[act]])
    sub = np.concatenate([new.sub, old.sub[act]])
    order = np.lexsort((sub, key))
    step = np.ones(len(key), np.int64)
    step[1:] = (key[order][1:] != key[order][:-1]) | (sub[order][1:] != sub[order][:-1])
    rank = np.empty(len(key), np.int64)
    rank[order] = np.cumsum(step)
    old_rank = np.ascontiguousarray(rank[len(new):])
    _r.carry_rows(np.ascontiguousarray(rank[:len(new)]), old_rank,
                  np.ascontiguousarray(old.active[act]), np.ascontiguousarray(old.state[act]),
                  new.active, new.state)


def _templates(sim):
    offsets, data = sim.templates.table("spheres")
    if data.shape[1] != 4:                  # no clump template yet
        data = np.zeros((0, 4))
    return offsets, np.ascontiguousarray(data)


class ClumpRows:
    """Rows with sub-keys; the force sums (explicit branch vectors), public rows and
    per-row outputs are the ellipsoid kinds' (ShapeRows)."""
    subkeys = True                  # checkpoints write ContactBatch.sub

    def _new_rows(self, i1, i2, key, sub):
        order = np.lexsort((sub, key))
        rows = ContactBatch(i1[order], i2[order], key[order])
        rows.sub[:] = sub[order]
        carry_by_subkey(rows, self.batch)
        return rows


@register
class ClumpPairs(ClumpRows, EllipsoidPairs):
    """Pairs of the Verlet list with at least one clump (the other a clump or a sphere),
    one row per member-sphere pair."""
    name = "clump"

    def build(self, b):
        sim = self.sim
        if not sim.shapes:
            self.take(ContactBatch(), b)
        else:
            st = sim.store
            i1, i2, key = pair_candidates(sim, b)
            k = np.flatnonzero(shaped(sim, i1, i2, code=CLUMP))
            offsets, spheres = _templates(sim)
            rows = cc.member_pairs(i1[k], i2[k], key[k], st.pos, st.image, sim.cell.kernel,
                                   st.shape, st.template, st.radius, offsets, spheres, b.skin)
            self.take(self._new_rows(*rows), b)
        self._sized()

    def compute(self, table, nmat, f, t):
        sim, b = self.sim, self.batch
        st = sim.store
        if len(b) == 0:
            return None
        offsets, spheres = _templates(sim)
        ratio, k = cc.clump_pairs(b.i1, b.i2, b.sub, st.pos, st.image, sim.cell.kernel, st.vel,
                                  st.angvel, st.orient, st.shape, st.template, st.radius,
                                  st.mass, st.material, offsets, spheres, table, nmat, sim.dt,
                                  sim.flags, b.active, b.state, self.branch, sim.threads)
        if k >= 0 and not (ratio <= sim.max_overlap):
            i, j = st.id[b.i1[k]], st.id[b.i2[k]]
            return overlap_message(sim, ratio, "particles %d and %d (members %d and %d)"
                                   % (i, j, b.sub[k] >> 16, b.sub[k] & 0xffff))
        return None


@register
class ClumpPlaneContacts(ClumpRows, EllipsoidPlaneContacts):
    """Clumps within the skin of an infinite plane, one row per member sphere."""
    name = "clplane"

    def build(self, b):
        sim = self.sim
        st, pl = sim.store, sim.planes
        if not sim.shapes:
            self.batch = ContactBatch()
        else:
            wp, ww = cells.build_plane_pairs(st.pos, st.radius, b.n_own, pl.point, pl.normal,
                                             b.skin)
            k = np.flatnonzero(shaped(sim, wp, code=CLUMP))
            offsets, spheres = _templates(sim)
            p, w, sub = cc.member_planes(wp[k], ww[k], st.pos, st.shape, st.template,
                                         st.radius, offsets, spheres, pl.point, pl.normal,
                                         b.skin)
            self.batch = self._new_rows(p, w, keys.make(st.id[p], w), sub)
        self._sized()

    def compute(self, table, nmat, f, t):
        sim, b = self.sim, self.batch
        st, pl = sim.store, sim.planes
        if len(b) == 0:
            return None
        offsets, spheres = _templates(sim)
        ratio, k = cc.clump_plane(b.i1, b.i2, b.sub, st.pos, st.vel, st.angvel, st.orient,
                                  st.shape, st.template, st.radius, st.mass, st.material,
                                  offsets, spheres, pl.point, pl.normal, pl.vel, pl.material,
                                  table, nmat, sim.dt, sim.flags, b.active, b.state,
                                  self.branch, sim.threads)
        if k >= 0 and not (ratio <= sim.max_overlap):
            return overlap_message(sim, ratio, "clump %d (member %d) and plane %d"
                                   % (st.id[b.i1[k]], b.sub[k], b.i2[k]))
        return None

