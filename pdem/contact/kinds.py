"""Interaction kinds: the contact batches of a simulation, each one class registered
once with its row layout, candidate list, kernel, force sum and public rows.

A kind owns a ContactBatch (pdem.contact.store: one row of doubles per candidate,
or, for sphere pairs, per candidate with state; keyed by pdem.contact.keys) and says:
  build(b)        the new candidate list at a neighbor rebuild, state carried over by key
  owners()        for each particle slot of a row, the owned particle's index or -1
                  (migration sends a row with each of its owned particles that moves)
  key_particles(key)  the particle ids a key names (a checkpoint row goes to their owners)
  set_owners(...) the owners of rows read from a checkpoint, one array per particle
                  slot (Interaction.attach finds them from the keys)
  compute(...)    geometry + law of the explicit scheme (a kernel); a message on failure
  add_forces(...) add the active rows to their owned particles in a fixed order
  public()        the rows of contacts(): kind, wall, id1, id2, point, normal, ...
  saved()         the rows a checkpoint writes (each contact once over all ranks)
Wall kinds also give gaps(alert), the rows within an alert distance at the current
positions with their normal, gap, wall velocity and material (the NSCD scheme).
Simulation, migration, checkpoints, contacts(), n_contacts, the force sums and the
HDF5 contact network iterate over KINDS; a new kind is one class here plus its kernel.
Force sums go kind by kind in KINDS order, each particle's contributions within a kind
in ascending partner (pairs first: their sums start from zero), the same bits on any
number of ranks and threads.
"""
import numpy as np

from .._kernels import cells, contacts as ck, ellipsoid_contacts as ek, facets as fk, \
    segments as sk
from . import keys
from .facet_contacts import facet_contacts
from .near import NearList
from .wall_motion import barycentric
from .store import NCOLS, ContactBatch
from ..particles import SHAPES

KINDS = []                          # registered classes, in force-sum order


def register(cls):
    cls.code = len(KINDS)
    KINDS.append(cls)
    return cls


class Build:
    """What a kind's candidate search needs at a rebuild: n_own owned particles,
    owner[k] the owned index of local particle k (a periodic image of an owned
    particle: that particle; other ghosts -1), the list skin, the ghost cutoff,
    restore (first build after a restart: see Simulation._rebuild) and the pair
    list's order key of each local particle (rebuild.grid_keys)."""

    def __init__(self, n_own, owner, skin, cutoff, restore, order_key):
        self.n_own, self.owner, self.skin, self.cutoff, self.restore, self.order_key = \
            n_own, owner, skin, cutoff, restore, order_key


def owned_index(wanted, ids):
    """Index in `ids` of each of `wanted`, -1 where absent."""
    if len(ids) == 0:
        return np.full(len(wanted), -1, np.int32)
    order = np.argsort(ids)
    at = order[np.minimum(np.searchsorted(ids, wanted, sorter=order), len(ids) - 1)]
    return np.where(ids[at] == wanted, at, -1).astype(np.int32)


def overlap_message(sim, ratio, who, radius=None, behind=None):
    """The message of an overlap deeper than max_overlap x the smaller radius: in the
    first step after particles or walls were added, an overlap of the set-up; later,
    a time step too large or a stiffness too low. behind: how far the particle's
    centre is behind a plane (the wrong side)."""
    depth = "" if radius is None else " (%.3g)" % (ratio * radius)
    text = ("step %d (t=%.6g): overlap of %s is %.3g of the smaller radius%s (limit "
            "max_overlap=%g)" % (sim.step_count, sim.time, who, ratio, depth, sim.max_overlap))
    if behind is not None and behind > 0:
        return text + (": the particle's centre is %.3g behind the plane (particles live on "
                       "the side its normal points to)" % behind)
    if sim.fresh_scene:
        return text + (" at the first step after the scene was set up: the particles overlap "
                       "in the set-up (positions and radii given to add_spheres, or a wall "
                       "added over particles)")
    return text + ": time step too large or stiffness too low"


def pair_candidates(sim, b):
    """(i1, i2, key) of the Verlet pair list at the build `b`, in the order of b's
    order keys, periodic duplicates dropped (pyx/cells.pyx); computed once per build
    and shared by the pair kinds, which split it by shape."""
    if getattr(b, "pairs", None) is None:
        st = sim.store
        b.pairs = cells.build_pair_rows(st.pos, st.image, sim.cell.kernel, st.radius, st.id,
                                        b.order_key, b.n_own, b.skin)
    return b.pairs


def shaped(sim, *particles, code=None):
    """Mask of the rows whose particles (local indices, one array per slot) include a
    non-sphere (code: a particle of that shape code); None when no particle of the
    simulation is one (nothing to split)."""
    if not sim.shapes:
        return None
    shape = sim.store.shape
    mask = np.zeros(len(particles[0]), bool)
    for p in particles:
        mask |= shape[p] != 0 if code is None else shape[p] == code
    return mask


def ellipsoidal(sim, *particles):
    """Mask of the rows with an ellipsoid or ellipse and no clump or polyhedron (their
    own kinds: clump_kinds.py, polyhedron_kinds.py)."""
    mask = shaped(sim, *particles)
    if mask is not None:
        for p in particles:
            mask &= sim.store.shape[p] <= SHAPES["ellipse"]   # no clump, polyhedron, polygon
    return mask


NO_ROWS = (np.zeros(0, np.int32), np.zeros(0, np.int8), np.zeros((0, NCOLS)))


class Interaction:
    name = None             # contacts()["kind"]
    in_pass = False         # compute() can add its rows to the force sums
    contact = True          # its rows are contacts (contacts(), n_contacts, NSCD); bonds are not
    nscd = True             # the NSCD scheme solves its rows (kind.gaps)
    starts_sums = False     # its kernel zeroes the force sums before adding: it runs even
                            # without rows (any other kind without rows is skipped)

    def __init__(self, sim):
        self.sim = sim
        self.batch = ContactBatch()

    @property
    def batch(self):
        """The kind's rows (pdem.contact.store.ContactBatch; its length is fixed)."""
        return self._batch

    @batch.setter
    def batch(self, rows):
        self._batch = rows
        self.sim.forget_working_kinds()

    def needs_build(self):
        """False when a rebuild would give this kind no rows and it has none (its build
        is then skipped)."""
        return True

    def attach(self, ids):
        """Owners of rows read from a checkpoint: the owned index of each particle the
        key names, among the owned ids `ids`."""
        self.set_owners(*(owned_index(p, ids) for p in self.key_particles(self.batch.key)))
        self._split = None

    _split = None

    def split(self, owners, n_own):
        """In-pass sums on sim.threads threads (pyx/contacts.pyx split_owners): the owners
        the kernel adds to (each particle by one thread) and those of the particles with
        rows on two threads (-1 elsewhere), added after the kernel; (owners, None) on one
        thread. Kept while the owner arrays are the same objects."""
        threads = self.sim.threads
        if threads == 1:
            return owners, None
        c = self._split
        if c is None or c[0] != threads or any(a is not b for a, b in zip(c[1], owners)):
            parts = ck.split_owners(owners[0], owners[1] if len(owners) > 1 else None, n_own,
                                    threads)
            self._split = c = (threads, owners, parts[:len(owners)], parts[len(owners):])
        return c[2], c[3]

    def __len__(self):
        return len(self.batch)

    def n_active(self):
        return int(np.count_nonzero(self.batch.active))

    def saved(self):
        return np.flatnonzero(self.batch.active)


class WallContacts(Interaction):
    """Contacts of an owned particle (body 2) with a wall (body 1): i1 is the owned
    particle, i2 the wall's element (plane or facet); key = particle id << 32 | i2."""

    def owners(self):
        return (self.batch.i1,)

    def needs_build(self):
        return self.n_elements() > 0 or len(self.batch) > 0

    @staticmethod
    def key_particles(key):
        return (keys.particle(key),)

    def set_owners(self, owner):
        self.batch.i1[:] = owner

    def add_forces(self, f, t, flags, threads):
        b, st = self.batch, self.sim.store
        ck.add_wall_forces(b.i1, b.active, b.state, st.radius, flags, f, t)

    def add_shared(self, shared, f, t):
        """After an in-pass kernel on several threads: the rows of split's shared
        particles, in row order."""
        if shared is not None:
            b = self.batch
            ck.add_wall_forces(shared[0], b.active, b.state, self.sim.store.radius,
                               self.sim.lever_flags, f, t)

    def wall_of(self, element):
        return element

    def loads(self):
        """Force ON each wall element, (n_elements, 3), summed over ranks (collective)."""
        f = np.zeros((self.n_elements(), 3))
        a = np.flatnonzero(self.batch.active)
        np.add.at(f, self.batch.i2[a], -self.batch.force[a])
        return self.sim.collective.sum(f)

    def public(self):
        b, st = self.batch, self.sim.store
        a = np.flatnonzero(b.active)
        p = b.i1[a]
        # the particle is body 2: c = x2 - (r2 + u_n / 2) n, the middle of the overlap
        return _public_rows(self, a, np.full(len(a), -1, np.int64), st.id[p],
                            self.wall_of(b.i2[a]), -1.0, p, p)


def _public_rows(kind, a, id1, id2, wall, sign, at, body2):
    """contacts() columns of the rows `a` of kind's batch: the point from particle `at`
    (c = x + sign (r + u_n / 2) n), force on body 2 and its torque."""
    b, sim = kind.batch, kind.sim
    st = sim.store
    s = b.at(a)                               # their state rows
    normal, un = b.T[s, :3], b.u[s, 0]
    out = {"kind": np.full(len(a), kind.name), "wall": np.asarray(wall, np.int64),
           "id1": id1.astype(np.int64), "id2": id2.astype(np.int64),
           "point": st.pos[at] + sign * normal * (st.radius[at] + 0.5 * un)[:, None],
           "normal": normal, "overlap": -un, "force": b.force[s],
           "torque": ck.contact_torques(b.state[s], st.radius[body2], 2, sim.lever_flags)}
    for k in ("u", "phi", "u0", "phi0"):
        out[k] = getattr(b, k)[s]
    return out


class TwoBodyRows(Interaction):
    """Rows of two particles, particle 1 the lower id, in grid order (sorted by the two
    particles' (lower, higher) order key, rebuild.grid_keys: each particle's rows in
    ascending partner key, the same on any rank count); a row between ranks is
    computed on both from identical copies."""

    def __init__(self, sim):
        super().__init__(sim)
        self.owner1 = self.owner2 = np.empty(0, np.int32)
        self.owner = None                    # per local particle (take)
        self._particle_owner = None          # PairContacts.particle_owner on threads
        self._gather = None                  # per-particle lists (threads > 1)
        self._shared_lists = None            # those of split's shared particles

    def take(self, rows, b):
        """Make `rows` (local indices set) the batch; owners from the Build `b` (per
        row, and per local particle: self.owner)."""
        self.batch = rows
        self.owner = b.owner
        self.owner1, self.owner2 = np.take(b.owner, rows.i1), np.take(b.owner, rows.i2)
        self._gather = self._particle_owner = None

    def owners(self):
        return (self.owner1, self.owner2)

    @staticmethod
    def key_particles(key):
        return (keys.particle(key), keys.partner(key))

    def set_owners(self, owner1, owner2):
        self.owner1, self.owner2 = owner1, owner2
        self.owner = self._particle_owner = None   # until the next build (take)

    def n_active(self):
        return int(np.count_nonzero(self.batch.active[self.owner1 >= 0])) if len(self) else 0

    def saved(self):
        # each row once: on the rank owning its first (lower-id) particle
        return np.flatnonzero((self.batch.active != 0) & (self.owner1 >= 0))

    def add_shared(self, shared, f, t):
        """After an in-pass kernel on several threads: the rows of split's shared
        particles, each particle's in pair order."""
        if shared is not None:
            if self._shared_lists is None or self._shared_lists[3] is not shared:
                self._shared_lists = ck.build_gather_lists(*shared, len(f)) + (
                    np.zeros(len(f) + 1, np.int64), shared)
            start, entry, no_walls, _ = self._shared_lists
            b = self.batch
            ck.gather(start, entry, b.active, b.state, no_walls, *NO_ROWS[1:],
                      self.sim.store.radius, self.sim.lever_flags, f, t, self.sim.threads,
                      True, b.slot)

    def add_forces(self, f, t, flags, threads, accumulate=False):
        """Add the rows to their owned particles (accumulate=False: the sums start
        here, the first kind's)."""
        b, st = self.batch, self.sim.store
        if threads == 1:
            ck.scatter(self.owner1, self.owner2, b.active, b.state, *NO_ROWS, st.radius, flags,
                       f, t, accumulate, b.slot)
            return
        if self._gather is None:
            self._gather = ck.build_gather_lists(self.owner1, self.owner2, len(f)) + (
                np.zeros(len(f) + 1, np.int64),)
        start, entry, no_walls = self._gather
        ck.gather(start, entry, b.active, b.state, no_walls, *NO_ROWS[1:], st.radius, flags,
                  f, t, threads, accumulate, b.slot)


@register
class PairContacts(TwoBodyRows):
    """Particle pairs of the Verlet list."""
    name = "pair"
    in_pass = True
    starts_sums = True
    image_from = 0          # the owned rows (below b.n_own) have zero images after a build

    def __init__(self, sim):
        super().__init__(sim)
        self.near = NearList()

    def build(self, b):
        self.near.forget()               # its memory not held through the build
        self.image_from = b.n_own
        i1, i2, key = pair_candidates(self.sim, b)
        mask = shaped(self.sim, i1, i2)
        if mask is not None:             # pairs with an ellipsoid: EllipsoidPairs
            i1, i2, key = i1[~mask], i2[~mask], key[~mask]
        # state rows only for the candidates in contact (pdem.contact.store, pooled)
        rows = ContactBatch(i1, i2, key, pooled=True)
        rows.carry_from(self.batch)
        self.take(rows, b)

    def compute(self, table, nmat, f, t):
        sim, b = self.sim, self.batch
        st = sim.store
        owner, shared = self.particle_owner(len(f)) if f is not None else (None, None)
        ratio, k = ck.sphere_sphere(b.i1, b.i2, st.pos, st.image, sim.cell.kernel, st.vel,
                                    st.angvel, st.radius, st.mass, st.material, table, nmat,
                                    sim.dt, sim.flags, b.active, b.state, sim.threads,
                                    owner, f, t, periodic=any(sim.domain.periodic),
                                    energy=sim.energy_tracker.kernel_rows(self),
                                    pool=b if b.slot is not None else None,
                                    image_from=self.image_from, near=self.near.pairs_of(self))
        self.add_shared(shared, f, t)
        if k >= 0 and not (ratio <= sim.max_overlap):
            i, j = st.id[b.i1[k]], st.id[b.i2[k]]
            return overlap_message(sim, ratio, "particles %d and %d" % (min(i, j), max(i, j)),
                                   min(st.radius[b.i1[k]], st.radius[b.i2[k]]))
        return None

    def particle_owner(self, n_own):
        """The in-pass kernel's owner per local particle (the build's, Build.owner) and
        split's shared owners: on several threads, the particles with rows on two
        threads are -1 (split_owners; their rows are added after the kernel)."""
        owners, shared = self.split((self.owner1, self.owner2), n_own)
        if shared is None:
            return self.owner, None
        c = self._particle_owner
        if c is None or c[0] is not shared:
            gone = np.zeros(n_own + 1, bool)      # (slot n_own: the -1 entries)
            gone[shared[0]] = gone[shared[1]] = True
            o = self.owner
            self._particle_owner = c = (shared, np.where(gone[o], -1, o).astype(np.int32))
        return c[1], shared

    def public(self):
        b, st = self.batch, self.sim.store
        a = np.flatnonzero(b.active)
        a = a[self.owner1[a] >= 0]
        p, q = b.i1[a], b.i2[a]
        return _public_rows(self, a, st.id[p], st.id[q], np.full(len(a), -1), 1.0, p, q)


@register
class PlaneContacts(WallContacts):
    """Owned particles within the skin of an infinite plane (pdem.contact.walls)."""
    name = "plane"
    in_pass = True

    def build(self, b):
        sim = self.sim
        st, pl = sim.store, sim.planes
        wp, ww = cells.build_plane_pairs(st.pos, st.radius, b.n_own, pl.point, pl.normal, b.skin)
        mask = shaped(sim, wp)
        if mask is not None:             # ellipsoids: EllipsoidPlaneContacts
            wp, ww = wp[~mask], ww[~mask]
        rows = ContactBatch(wp, ww, keys.make(st.id[wp], ww))
        rows.carry_from(self.batch)
        self.batch = rows

    def n_elements(self):
        return len(self.sim.planes)

    def gaps(self, alert):
        b, st, pl = self.batch, self.sim.store, self.sim.planes
        nrm = pl.normal[b.i2]
        gap = np.einsum("ij,ij->i", st.pos[b.i1] - pl.point[b.i2], nrm) - st.radius[b.i1]
        k = np.flatnonzero(gap < alert)
        w = b.i2[k]
        return k, nrm[k], gap[k], pl.vel[w], pl.material[w]

    def compute(self, table, nmat, f, t):
        sim, b = self.sim, self.batch
        st, pl = sim.store, sim.planes
        owners, shared = self.split((b.i1,), len(f)) if f is not None else ((None,), None)
        ratio, k = ck.sphere_plane(b.i1, b.i2, st.pos, st.vel, st.angvel, st.radius, st.mass,
                                   st.material, pl.point, pl.normal, pl.vel, pl.material, table,
                                   nmat, sim.dt, sim.flags, b.active, b.state, sim.threads,
                                   *owners, f, t, energy=sim.energy_tracker.kernel_rows(self))
        self.add_shared(shared, f, t)
        if k >= 0 and not (ratio <= sim.max_overlap):
            p, w = b.i1[k], b.i2[k]
            behind = -float((st.pos[p] - pl.point[w]) @ pl.normal[w])
            return overlap_message(sim, ratio, "particle %d and plane %d" % (st.id[p], w),
                                   st.radius[p], behind)
        return None


@register
class FacetContacts(WallContacts):
    """Ball-facet candidates of the mesh walls (seed 004, pyx/facets.pyx), sorted by
    (particle id, global facet), in groups of consecutive rows of one (particle, wall)."""
    name = "mesh"
    ellipsoids = False              # the rows of this kind: spheres (or ellipsoids)
    particle_shape = SHAPES["sphere"]

    def __init__(self, sim):
        super().__init__(sim)
        self.groups = np.zeros(1, np.int64)
        self.holder = np.zeros(0, np.int32)      # per row: its effective contact's row
        self.n_local_facets = 0

    def n_elements(self):
        return self.sim.mesh_walls.n_facets

    def build(self, b):
        """Only the facets whose box, enlarged by the skin, overlaps this rank's
        subdomain plus ghost region are searched. restore: keep the walls' build
        positions (see Simulation._rebuild)."""
        sim = self.sim
        st, mw = sim.store, sim.mesh_walls
        if len(mw) == 0:
            self.batch = ContactBatch()
            self.groups = np.zeros(1, np.int64)
            return
        local = mw.local_facets(sim.dec.lo - b.cutoff, sim.dec.hi + b.cutoff, b.skin)
        self.n_local_facets = len(local)
        p, f = fk.facet_candidates(st.pos, st.radius, b.n_own, mw.vertices, mw.facets, local,
                                   b.skin)
        if sim.shapes:                   # non-spheres: their own facet kinds
            keep = st.shape[p] == self.particle_shape
            p, f = p[keep], f[keep]
        key = keys.make(st.id[p], f)
        order = np.argsort(key, kind="stable")
        rows = ContactBatch(p[order], f[order], key[order])
        rows.carry_from(self.batch)
        self.batch = rows
        wall = mw.facet_wall[rows.i2]
        new = np.ones(len(rows), bool)
        new[1:] = (rows.i1[1:] != rows.i1[:-1]) | (wall[1:] != wall[:-1])
        self.groups = np.r_[np.flatnonzero(new), len(rows)].astype(np.int64)
        self.holder = np.full(len(rows), -1, np.int32)
        if not b.restore:
            mw.mark_built()

    def wall_of(self, element):
        return self.sim.mesh_walls.facet_wall[element]

    def gaps(self, alert):
        """Rows within alert of their facet, hidden rims left out (facet_contacts)."""
        sim, b = self.sim, self.batch
        st, mw = sim.store, sim.mesh_walls
        k, nrm, gap, q = facet_contacts(st.pos, st.radius, b.i1, b.i2, mw.vertices, mw.facets,
                                        mw.normals, mw.side_off, alert, sim.threads)
        f = b.i2[k]
        return k, nrm, gap, self._velocity(f, q), mw.wall_material[mw.facet_wall[f]]

    def _velocity(self, f, q):
        """Velocity of facet f at point q: rigid wall motion, or the barycentric
        interpolation of a deformable wall's vertex velocities."""
        mw = self.sim.mesh_walls
        wall = mw.facet_wall[f]
        v = mw.wall_v[wall] + np.cross(mw.wall_w[wall], q - mw.wall_ref[wall])
        soft = np.flatnonzero(~mw.wall_rigid[wall].astype(bool))
        if len(soft):
            vertices = mw.facets[f[soft]]
            bary = barycentric(q[soft], mw.vertices[vertices])
            v[soft] = np.einsum("nk,nkj->nj", bary, mw.vertex_vel[vertices])
        return v

    def compute(self, table, nmat, f, t):
        """Returns a message for an excessive overlap or an unresolvable group."""
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
            fr.state, self.holder, sim.threads, energy=sim.energy_tracker.kernel_rows(self),
            **self._shape_args())
        if crowded >= 0:
            end = self.groups[np.searchsorted(self.groups, crowded, "right")]
            return ("step %d: particle id %d is within the skin of %d facets of mesh wall %d "
                    "(at most %d): the mesh is too fine for this ball size or the skin too "
                    "large" % (sim.step_count, st.id[fr.i1[crowded]], end - crowded,
                               mw.facet_wall[fr.i2[crowded]], fk.MAX_FACETS_PER_BALL))
        if k >= 0 and not (ratio <= sim.max_overlap):
            return overlap_message(sim, ratio, "particle %d and mesh wall %d (facet %d)"
                                   % (st.id[fr.i1[k]], mw.facet_wall[fr.i2[k]], fr.i2[k]),
                                   None if self.ellipsoids else st.radius[fr.i1[k]])
        return None

    def _shape_args(self):
        """Extra arguments of the kernel (ellipsoids: pdem.contact.ellipsoid_facets)."""
        return {}

    def _torques(self, a):
        """Torques on the particles of the active rows a."""
        return ck.contact_torques(self.batch.state[a], self.sim.store.radius[self.batch.i1[a]],
                                  2, self.sim.lever_flags)

    def loads(self):
        """{"force", "moment"} ON each wall, (n_walls, 3) each, the moment about the
        wall's reference point W_r (seed 004). Collective: the rows of all ranks are
        summed in key order, the same bits on any number of ranks."""
        sim, fr = self.sim, self.batch
        st, mw = sim.store, sim.mesh_walls
        a = np.flatnonzero(fr.active)
        wall = mw.facet_wall[fr.i2[a]]
        f = fr.force[a]
        arm = st.pos[fr.i1[a]] - mw.reference_points()[wall]
        rows = sim.collective.allgather({
            "key": fr.key[a], "wall": wall, "force": -f,
            "moment": -(np.cross(arm, f) + self._torques(a))})
        order = np.argsort(rows["key"], kind="stable")
        out = {"force": np.zeros((len(mw), 3)), "moment": np.zeros((len(mw), 3))}
        for w in range(len(mw)):
            mine = order[rows["wall"][order] == w]
            for k in out:
                out[k][w] = np.sum(rows[k][mine], axis=0)
        return out


class TangentPlaneContacts(WallContacts):
    """Wall contacts resolved, row by row, as a fixed plane through a point q with a
    normal n towards the particle (body 1 a zero-radius sphere at q): the explicit
    scheme applies the plane law (pyx/contacts.pyx sphere_plane). Subclasses give
    planes() -> (q, n, gap) per row and element_materials(elements)."""
    in_pass = True
    label = None            # the wall's name in messages

    def gaps(self, alert):
        _, n, gap = self.planes()
        k = np.flatnonzero(gap < alert)
        return k, n[k], gap[k], np.zeros((len(k), 3)), self.element_materials(self.batch.i2[k])

    def compute(self, table, nmat, f, t):
        sim, b = self.sim, self.batch
        if len(b) == 0:
            return None
        st = sim.store
        q, n, _ = self.planes()
        rows = np.arange(len(b), dtype=np.int32)
        owners, shared = self.split((b.i1,), len(f)) if f is not None else ((None,), None)
        ratio, k = ck.sphere_plane(b.i1, rows, st.pos, st.vel, st.angvel, st.radius, st.mass,
                                   st.material, q, n, np.zeros((len(b), 3)),
                                   self.element_materials(b.i2), table, nmat, sim.dt,
                                   sim.flags, b.active, b.state, sim.threads, *owners, f, t,
                                   energy=sim.energy_tracker.kernel_rows(self))
        self.add_shared(shared, f, t)
        if k >= 0 and not (ratio <= sim.max_overlap):
            p = b.i1[k]
            return overlap_message(sim, ratio, "particle %d and %s %d"
                                   % (st.id[p], self.label or self.name, b.i2[k]),
                                   st.radius[p])
        return None


class FootContacts(TangentPlaneContacts):
    """Contacts with wall elements of zero thickness, segments or points (seed 003): the
    particle meets the zero-radius disk at its foot q on the element (pyx/segments.pyx),
    normal (x - q)/|x - q|, the plane through q with that normal."""

    def elements(self):
        """The kind's pdem.contact.walls.Segments (sim.segments or sim.points)."""
        raise NotImplementedError

    def n_elements(self):
        return len(self.elements())

    shape_code = None               # the rows of this kind: spheres (or that shape)

    def build(self, b):
        sim, el = self.sim, self.elements()
        st = sim.store
        p, w = sk.candidates(st.pos, st.radius, b.n_own, el.a, el.b, b.skin, sim.threads)
        mask = shaped(sim, p, code=self.shape_code)
        if mask is not None:             # ellipse_segments.py, polygon_segments.py
            keep = ~mask if self.shape_code is None else mask
            p, w = p[keep], w[keep]
        rows = ContactBatch(p, w, keys.make(st.id[p], w))
        rows.carry_from(self.batch)
        self.batch = rows

    def planes(self):
        """Foot q, normal n and gap of every row at the current positions (gap inf:
        the foot left the segment's span, or a point's particle is a segment's)."""
        b, sim, el = self.batch, self.sim, self.elements()
        m = len(b)
        q, n, gap = np.empty((m, 3)), np.empty((m, 3)), np.empty(m)
        ptr, ends = self.segment_ends()
        sk.feet(b.i1, b.i2, sim.store.pos, sim.store.radius, el.a, el.b, ptr, ends,
                sim.segments.a, sim.segments.b, q, n, gap, sim.threads)
        return q, n, gap

    def segment_ends(self):
        """CSR (ptr, segment indices) of the segments ending at each element: none."""
        return np.zeros(len(self.elements()) + 1, np.int64), np.zeros(0, np.int32)

    def element_materials(self, element):
        return self.elements().material[element]


@register
class SegmentContacts(FootContacts):
    """Owned particles within the skin of a boundary segment (Simulation.add_segments)."""
    name = "segment"

    def elements(self):
        return self.sim.segments


@register
class PointContacts(FootContacts):
    """Owned particles within the skin of a zero-radius boundary point (the ends of
    segments, Simulation.add_points)."""
    name = "point"

    def __init__(self, sim):
        super().__init__(sim)
        self._ends = (None, None)

    def elements(self):
        return self.sim.points

    def segment_ends(self):
        """CSR (ptr, segment indices) of the segments ending at each point (walls only
        grow: computed again when their numbers change)."""
        sg, pts = self.sim.segments, self.sim.points
        size = (len(sg), len(pts))
        if self._ends[0] != size:
            where = {tuple(p): k for k, p in enumerate(pts.a.tolist())}
            pairs = [(where[tuple(e)], s) for s, e in enumerate(sg.a.tolist()) if tuple(e) in where]
            pairs += [(where[tuple(e)], s) for s, e in enumerate(sg.b.tolist()) if tuple(e) in where]
            pairs = np.array(sorted(pairs), np.int64).reshape(-1, 2)
            ptr = np.zeros(len(pts) + 1, np.int64)
            np.add.at(ptr, pairs[:, 0] + 1, 1)
            self._ends = (size, (np.cumsum(ptr), pairs[:, 1].astype(np.int32)))
        return self._ends[1]


def failed_solve(sim, kind, k, id1, id2):
    """The message of a common-normal solve that failed (never silent, issue 16)."""
    b = kind.batch
    what = "did not converge in %d iterations" % kind.iters[k] \
        if kind.status[k] == ek_status("failed") else "had non-finite or non-positive input"
    return ("step %d (t=%.6g): the common-normal contact solve of particles %d and %d %s "
            "(active contact: %s; max_iter=%d)" % (sim.step_count, sim.time, min(id1, id2),
                                                   max(id1, id2), what, bool(b.active[k]),
                                                   kind.max_iter))


def ek_status(name):
    from .._kernels.ellipsoid import STATUS
    return STATUS[name]


class ShapeRows:
    """Per-row outputs of the ellipsoid kernels besides the contact row: the branch
    vectors b1 = c - x1, b2 = c - x2 of the last compute (the torque levers), sized at
    each build; iteration statistics (shape_stats)."""
    nscd = False                    # ellipsoids are refused with NSCD (add_ellipsoids)
    tol = 1e-10                     # common-normal convergence, relative to the size
    max_iter = 50
    warm = True                     # start from the last normal (False: benchmarks)

    def needs_build(self):
        return self.sim.shapes or len(self.batch) > 0       # rows of non-spheres only

    def _sized(self):
        m = len(self.batch)
        self.branch = np.zeros((m, 6))
        self.iters = np.zeros(m, np.int32)
        self.status = np.zeros(m, np.int8)

    def _public_shape(self, a, id1, id2, wall, point):
        b = self.batch
        out = {"kind": np.full(len(a), self.name), "wall": np.asarray(wall, np.int64),
               "id1": np.asarray(id1, np.int64), "id2": np.asarray(id2, np.int64),
               "point": point, "normal": b.T[a, :3], "overlap": -b.u[a, 0],
               "force": b.force[a],
               "torque": ek.row_torques(np.ascontiguousarray(b.state[a]),
                                        np.ascontiguousarray(self.branch[a]), 2)}
        for k in ("u", "phi", "u0", "phi0"):
            out[k] = getattr(b, k)[a]
        return out


class ShapeWallRows(ShapeRows):
    """Wall kinds of non-spheres: force sums and contacts() from the branch vectors."""

    def __init__(self, sim):
        super().__init__(sim)
        self._sized()

    def add_forces(self, f, t, flags, threads):
        b = self.batch
        if len(b):
            ek.add_forces(None, b.i1, b.active, b.state, self.branch, f, t)

    def public(self):
        b, st = self.batch, self.sim.store
        a = np.flatnonzero(b.active)
        p = b.i1[a]
        return self._public_shape(a, np.full(len(a), -1), st.id[p], self.wall_of(b.i2[a]),
                                  st.pos[p] + self.branch[a, 3:])


@register
class EllipsoidPairs(ShapeRows, TwoBodyRows):
    """Pairs of the Verlet list with at least one ellipsoid (the other an ellipsoid or a
    sphere): common-normal geometry (pyx/ellipsoid_contacts.pyx), then L6Geom and the
    pair's law as for spheres."""
    name = "ellpair"

    def __init__(self, sim):
        super().__init__(sim)
        self._sized()
        self.stats = np.zeros(3)        # contact solves, their iterations, the most

    def rows_mask(self, *particles):
        """The candidates (local indices, one array per slot) this kind takes; None:
        none (polyhedron_kinds overrides it)."""
        return ellipsoidal(self.sim, *particles)

    def build(self, b):
        sim = self.sim
        i1, i2, key = pair_candidates(sim, b) if sim.shapes else (None,) * 3
        mask = self.rows_mask(i1, i2) if sim.shapes else None
        if mask is None:
            self.take(ContactBatch(), b)
        else:
            rows = ContactBatch(i1[mask], i2[mask], key[mask])
            rows.carry_from(self.batch)
            self.take(rows, b)
        self._sized()

    def compute(self, table, nmat, f, t):
        sim, b = self.sim, self.batch
        st = sim.store
        if len(b) == 0:
            return None
        ratio, k, failed, n, it_sum, it_max = ek.ellipsoid_pairs(
            b.i1, b.i2, st.pos, st.image, sim.cell.kernel, st.vel, st.angvel, st.orient,
            st.shape, st.semi_axes, st.radius, st.mass, st.material, table, nmat, sim.dt,
            sim.flags, self.tol, self.max_iter, b.active, b.state, self.branch, self.iters,
            self.status, sim.threads, planar=sim.domain.dim == 2, warm=self.warm)
        self.stats += (n, it_sum, 0)
        self.stats[2] = max(self.stats[2], it_max)
        if failed >= 0:
            return failed_solve(sim, self, failed, st.id[b.i1[failed]], st.id[b.i2[failed]])
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
class EllipsoidPlaneContacts(ShapeWallRows, WallContacts):
    """Ellipsoids within the skin of an infinite plane: analytic support point (the
    plane's normal is the contact normal), then L6Geom and the law."""
    name = "ellplane"

    def __init__(self, sim):
        super().__init__(sim)
        self._sized()

    rows_mask = EllipsoidPairs.rows_mask

    def build(self, b):
        sim = self.sim
        st, pl = sim.store, sim.planes
        if sim.shapes:
            wp, ww = cells.build_plane_pairs(st.pos, st.radius, b.n_own, pl.point, pl.normal,
                                             b.skin)
            mask = self.rows_mask(wp)
        if not sim.shapes or mask is None:
            self.batch = ContactBatch()
        else:
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
        ratio, k = ek.ellipsoid_plane(b.i1, b.i2, st.pos, st.vel, st.angvel, st.orient,
                                      st.semi_axes, st.mass, st.material, pl.point, pl.normal,
                                      pl.vel, pl.material, table, nmat, sim.dt, sim.flags,
                                      b.active, b.state, self.branch, sim.threads,
                                      planar=sim.domain.dim == 2)
        if k >= 0 and not (ratio <= sim.max_overlap):
            p, w = b.i1[k], b.i2[k]
            return overlap_message(sim, ratio, "ellipsoid %d and plane %d" % (st.id[p], w))
        return None


from .polyhedron_kinds import PolyhedronPairs  # noqa: E402,F401  (after the ellipsoids)
from .bonds import BondContacts  # noqa: E402,F401  (registered last: its sums come last)
from .region_walls import RegionWallContacts  # noqa: E402,F401  (after bonds: no old sum moves)
from .clump_kinds import ClumpPairs, ClumpPlaneContacts  # noqa: E402,F401  (likewise)
from .ellipsoid_facets import EllipsoidFacetContacts  # noqa: E402,F401  (last: codes kept)
from .ellipse_segments import EllipsePointContacts, EllipseSegmentContacts  # noqa: E402,F401
from .polyhedron_mesh import PolyhedronFacetContacts  # noqa: E402,F401  (last: codes kept)
from .polygon_segments import PolygonPointContacts, PolygonSegmentContacts  # noqa: E402,F401
