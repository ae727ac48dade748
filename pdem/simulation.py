"""Simulation: owns the particles, contacts and walls of one rank and runs the step.

The step (ARCHITECTURE.md section 2), written once, in `step`:
  drift (x, q to t)  ->  if any particle on any rank moved > skin/2: wrap, migrate
  particles with their contact rows, build ghosts (six swaps), Verlet lists, carry
  contact state over; else refresh ghosts  ->  contacts (L6Geom + law) for pairs
  planes and faceted walls  ->  gather forces per particle in a fixed order  ->  kick (v to
  t + dt/2)  ->  collective checks (NaN, overlap). With scheme=pdem.NSCD(...) the contacts
  and kick are replaced by a velocity-level contact solve (pdem/nscd/scheme.py).

Every rank runs the same script (SPMD): scene set-up calls (materials, planes,
add_spheres with the full arrays) are made on all ranks; each rank keeps what it
owns. Errors found on one rank are raised on all ranks (no hang).
"""
import math
import signal
import sys
import time
import warnings

import numpy as np
from mpi4py import MPI

from ._kernels import cells, contacts as ck, facets as fk, integrate
from .contact.store import ContactBatch
from .contact.mesh_walls import DEFAULT_CUTOFF_DEGREES, MeshWalls
from .contact.walls import Planes
from .domain import Domain
from .errors import InputError, SimulationError
from .materials import COL, MaterialTable
from .nscd.scheme import NSCD
from .parallel.decomposition import Decomposition
from .parallel.exchange import pack, record_dtype, unpack
from .parallel.ghosts import GhostExchange, wrap
from .parallel.migration import migrate
from .particles import DOF_BITS, ParticleStore, empty_fields
from .threads import thread_count

APPROX = {"mid_normal": 1, "no_renorm_mid_normal": 2, "mid_trsf": 4, "no_renorm_trsf": 8}
NO_RATCH = 16
PLANE_BITS = 16                 # wall contact key = particle id << 16 | plane index
FACET_BITS = 32                 # facet contact key = particle id << 32 | global facet
MESH_ID1 = -1 - (1 << PLANE_BITS)   # contacts(): id1 of mesh wall w is MESH_ID1 - w
PHASES = ("neighbor", "comm", "contact", "integrate", "output")


def _vectors(name, value, n, ncomp, dim):
    """(n, 3) float array from user input with ncomp or dim components; checks finiteness."""
    a = np.asarray(value, dtype=float)
    if a.ndim == 1 and n == 1 and a.shape[0] in (ncomp, dim):
        a = a[None, :]
    if a.ndim != 2 or a.shape[0] != n or a.shape[1] not in (ncomp, dim):
        raise InputError("%s must have shape (%d, %d), got %s" % (name, n, ncomp, a.shape))
    if a.shape[1] == 2:
        a = np.column_stack([a, np.zeros(n)])
    bad = np.flatnonzero(~np.all(np.isfinite(a), axis=1))
    if len(bad):
        raise InputError("%s[%d] is not finite: %r" % (name, bad[0], a[bad[0]].tolist()))
    return np.ascontiguousarray(a)


class CheckpointExit(SystemExit):
    """Raised on every rank after a signal-triggered checkpoint (exit code 0)."""

    def __init__(self, message):
        super().__init__(0)
        self.message = message

    def __str__(self):
        return self.message


class Simulation:
    """A DEM simulation on a box `domain` with time step `dt`.

    Parameters: gravity (3-vector); comm: mpi4py communicator (default
    MPI.COMM_WORLD); dims: ranks per axis (default MPI.Compute_dims); balance:
    imbalance max/mean of owned particles that triggers moving the subdomain cuts
    (checked at neighbor rebuilds; None: never); check_ids: debug check, every step,
    that the set of global ids is preserved (one Allgatherv per step); skin: Verlet
    skin / alert distance (default 0.1 x the largest diameter, fixed at
    the first step); threads: OpenMP threads per rank (default OMP_NUM_THREADS);
    approx: L6Geom approximation flags, any of 'mid_normal', 'no_renorm_mid_normal',
    'mid_trsf', 'no_renorm_trsf'; no_ratch: branch vectors r n (seed 000); lost:
    'error' or 'remove' for particles leaving a non-periodic box; check_timestep:
    refuse a dt above the critical one; max_overlap: stop when an overlap exceeds
    this fraction of the smaller radius; scheme: None (explicit force laws, leap-frog)
    or a pdem.NSCD (non-smooth contact dynamics; the skin then adds to its alert
    distance in the Verlet lists).
    """

    def __init__(self, domain, dt, gravity=(0.0, 0.0, 0.0), comm=None, skin=None, threads=None,
                 approx=(), no_ratch=False, lost="error", check_timestep=True, max_overlap=0.5,
                 dims=None, balance=1.2, check_ids=False, scheme=None):
        if not isinstance(domain, Domain):
            raise InputError("domain must be a pdem.Domain, got %r" % (domain,))
        if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
            raise InputError("dt must be a positive finite number, got %r" % (dt,))
        g = np.asarray(gravity, dtype=float).reshape(-1)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise InputError("gravity must be 3 finite numbers, got %r" % (gravity,))
        if balance is not None and not (isinstance(balance, (int, float)) and balance > 1.0):
            raise InputError("balance must be a threshold > 1 (max/mean particles per rank) "
                             "or None, got %r" % (balance,))
        unknown = set(approx) - set(APPROX)
        if unknown:
            raise InputError("approx: unknown flag(s) %s (known: %s)" % (sorted(unknown), sorted(APPROX)))
        if lost not in ("error", "remove"):
            raise InputError("lost must be 'error' or 'remove', got %r" % (lost,))
        if skin is not None and not (math.isfinite(skin) and skin > 0):
            raise InputError("skin must be a positive number, got %r" % (skin,))
        if scheme is not None and not isinstance(scheme, NSCD):
            raise InputError("scheme must be None (explicit) or a pdem.NSCD, got %r" % (scheme,))
        self.scheme = scheme
        self.domain = domain
        self.dt = float(dt)
        self.gravity = g if domain.dim == 3 else np.array([g[0], g[1], 0.0])
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.dec = Decomposition(self.comm, domain, dims)
        self.rank, self.size = self.dec.rank, self.dec.size
        self.ghosts = GhostExchange(self.dec)
        self.balance = balance
        self.check_ids = check_ids
        self.n_balances = 0
        self.n_migrated = 0                      # particles this rank sent to others
        self._ids = np.empty(0, np.int64)        # all live ids (kept for check_ids)
        self.skin = skin
        self.threads = thread_count(threads)
        self.flags = sum(APPROX[a] for a in approx) | (NO_RATCH if no_ratch else 0)
        self.lost = lost
        self.check_timestep = check_timestep
        self.max_overlap = float(max_overlap)
        self.materials = MaterialTable(stiffness=scheme is None)
        self.planes = Planes()
        self.store = ParticleStore()
        self.pairs = ContactBatch()
        self.walls = ContactBatch()
        self.mesh_walls = MeshWalls()
        self.facet_rows = ContactBatch()      # ball-facet candidates (pyx/facets.pyx)
        self._facet_groups = np.zeros(1, np.int64)
        self._facet_holder = np.zeros(0, np.int32)   # per row: its effective contact's row
        self._owner1 = self._owner2 = np.empty(0, np.int32)
        self._restoring = False      # restarted: first Verlet list still to build
        self._signal = 0             # signal number received (checkpoint_on_signal)
        self._signal_path = None
        self.time = 0.0
        self.step_count = 0
        self.timers = dict.fromkeys(PHASES, 0.0)
        self.n_rebuilds = 0
        self._next_id = 0
        self._dirty = True            # particles/materials changed: rebuild before forces
        self._build_pos = None
        self._checked_dt = False

    # ---------------------------------------------------------------- scene set-up
    def material(self, name, density, **params):
        """Define a material (see pdem.materials for the laws and their parameters)."""
        m = self.materials.add(name, density, **params)
        self._checked_dt = False
        return m

    def pair(self, material1, material2, **params):
        """Override mixed parameters of a material pair (friction=..., restitution=..., law=...)."""
        self.materials.set_pair(material1, material2, **params)
        self._checked_dt = False

    def add_spheres(self, positions, radii, material, velocities=None, angular_velocities=None):
        """Add spheres (disks in 2D); returns their global ids (int64 array)."""
        dim = self.domain.dim
        pos = _vectors("positions", positions, len(np.atleast_2d(positions)), 3, dim)
        n = len(pos)
        r = np.broadcast_to(np.asarray(radii, dtype=float), (n,)).copy() if np.ndim(radii) == 0 \
            else np.asarray(radii, dtype=float).reshape(-1)
        if r.shape != (n,):
            raise InputError("radii must be a number or have %d values, got shape %s" % (n, r.shape))
        bad = np.flatnonzero(~(np.isfinite(r) & (r > 0)))
        if len(bad):
            raise InputError("radii[%d] must be positive and finite, got %r" % (bad[0], float(r[bad[0]])))
        mat = self.materials.get(material)
        if dim == 2 and np.any(pos[:, 2] != 0.0):
            i = int(np.flatnonzero(pos[:, 2] != 0.0)[0])
            raise InputError("positions[%d]: z must be 0 in 2D, got %r" % (i, float(pos[i, 2])))
        lo, hi = self.domain.lo, self.domain.hi
        outside = np.flatnonzero(np.any((pos < lo) | (pos >= hi), axis=1))
        if len(outside):
            i = int(outside[0])
            raise InputError("positions[%d] = %r is outside the domain %s..%s"
                             % (i, pos[i].tolist(), lo.tolist(), hi.tolist()))
        new = empty_fields(n)
        new["id"][:] = np.arange(self._next_id, self._next_id + n, dtype=np.int64)
        new["pos"][:] = pos
        if velocities is not None:
            new["vel"][:] = _vectors("velocities", velocities, n, 3, dim)
        if angular_velocities is not None:
            w = np.asarray(angular_velocities, dtype=float)
            if dim == 2 and w.ndim <= 1 and w.size == n:
                w = np.column_stack([np.zeros(n), np.zeros(n), w.reshape(-1)])
            new["angvel"][:] = _vectors("angular_velocities", w, n, 3, 3)
        new["orient"][:, 0] = 1.0
        new["radius"][:] = r
        if dim == 3:
            new["mass"][:] = 4.0 / 3.0 * math.pi * r ** 3 * mat.density
            new["inertia"][:] = 0.4 * new["mass"] * r * r
        else:   # disks per unit thickness, moving in the xy plane
            new["mass"][:] = math.pi * r ** 2 * mat.density
            new["inertia"][:] = 0.5 * new["mass"] * r * r
            new["blocked"][:] = DOF_BITS["z"] | DOF_BITS["rx"] | DOF_BITS["ry"]
            new["vel"][:, 2] = 0.0
            new["angvel"][:, :2] = 0.0
        new["material"][:] = mat.index
        self._next_id += n
        if self.check_ids:
            self._ids = np.concatenate([self._ids, new["id"]])
        mine = np.flatnonzero(self.dec.owner(pos) == self.rank)
        self.store.append_owned({k: v[mine] for k, v in new.items()})
        self._dirty = True
        self._checked_dt = False
        return new["id"].copy()

    def add_plane(self, point, normal, material, velocity=None):
        """Add an infinite plane wall; particles live on the side `normal` points to.
        Returns the plane index."""
        m = self.materials.get(material)
        if len(self.planes) >= 1 << PLANE_BITS:
            raise InputError("add_plane: at most %d planes" % (1 << PLANE_BITS))
        idx = self.planes.add(point, normal, m.index, velocity)
        self._dirty = True
        return idx

    def add_mesh_wall(self, mesh, material, mode="reduced", cutoff_angle=DEFAULT_CUTOFF_DEGREES,
                      velocity=None, angular_velocity=None, reference_point=None,
                      vertex_velocities=None, name=None):
        """Add a faceted wall (seed 004); returns the wall index.

        mesh: a pdem.Mesh or a file (STL ascii/binary, OBJ, Gmsh .msh); material: name.
        mode: "reduced" (associative logic) or "full" (plus the sliver/wedge check);
        cutoff_angle: Theta in degrees, for contact-state continuity across facets and
        proximity contacts at concave edges. Motion: rigid (velocity, angular_velocity
        about reference_point, default the vertex centroid) or deformable
        (vertex_velocities, one per mesh vertex); change it later through
        sim.mesh_walls[i].motion.set_velocity(...). Collective: call on every rank."""
        m = self.materials.get(material)
        idx = self.mesh_walls.add(mesh, m.index, mode, cutoff_angle, velocity, angular_velocity,
                                  reference_point, vertex_velocities, name)
        self._dirty = True
        self._checked_dt = False
        return idx

    def _local_index(self, ids):
        """Local indices of the particles of `ids` this rank owns; an id owned by no
        rank is an InputError on every rank (collective)."""
        ids = np.atleast_1d(np.asarray(ids, dtype=np.int64))
        idx = self._owned_index(ids, self.store.id[:self.store.n_own])
        found = idx >= 0
        count = found.astype(np.int32)
        if self.size > 1:
            self.comm.Allreduce(MPI.IN_PLACE, count, op=MPI.SUM)
        if np.any(count == 0):
            raise InputError("unknown particle id %d" % ids[np.flatnonzero(count == 0)[0]])
        return idx[found]

    def block(self, ids, dofs="xyz"):
        """Block degrees of freedom: one name ('x', 'y', 'z', 'rx', 'ry', 'rz'), a string
        of translations like 'xyz', or a list of names. Their velocity is no longer
        changed by forces (prescribed velocity)."""
        if isinstance(dofs, str):
            names = [dofs] if dofs in DOF_BITS else list(dofs)
        else:
            names = list(dofs)
        bad = [d for d in names if d not in DOF_BITS]
        if bad:
            raise InputError("block: unknown dof %r (known: %s)" % (bad[0], list(DOF_BITS)))
        mask = np.uint8(sum(DOF_BITS[d] for d in set(names)))
        idx = self._local_index(ids)
        self.store.blocked[idx] |= mask

    def set_velocity(self, ids, velocity=None, angular_velocity=None, block=False):
        """Set (and with block=True prescribe) velocities of particles."""
        idx = self._local_index(ids)
        if velocity is not None:
            v = np.broadcast_to(np.asarray(velocity, dtype=float), (len(idx), 3))
            if not np.all(np.isfinite(v)):
                raise InputError("set_velocity: velocity must be finite, got %r" % (velocity,))
            self.store.vel[idx] = v
            if block:
                self.store.blocked[idx] |= 7
        if angular_velocity is not None:
            w = np.broadcast_to(np.asarray(angular_velocity, dtype=float), (len(idx), 3))
            if not np.all(np.isfinite(w)):
                raise InputError("set_velocity: angular_velocity must be finite, got %r"
                                 % (angular_velocity,))
            self.store.angvel[idx] = w
            if block:
                self.store.blocked[idx] |= 56

    # ---------------------------------------------------------------- running
    def run(self, steps=None, until=None):
        """Advance by `steps` steps or until time `until` (the first step whose time
        reaches until - dt/2)."""
        if (steps is None) == (until is None):
            raise InputError("run: give exactly one of steps or until, got steps=%r until=%r"
                             % (steps, until))
        if steps is not None:
            if int(steps) != steps or steps < 0:
                raise InputError("run: steps must be a non-negative integer, got %r" % (steps,))
            n = int(steps)
        else:
            if not math.isfinite(until):
                raise InputError("run: until must be finite, got %r" % (until,))
            n = max(0, int(math.floor((until - self.time) / self.dt + 0.5)))
        for _ in range(n):
            self.step()

    def step(self):
        """One time step t -> t + dt (see the module docstring for the order)."""
        st = self.store
        if not self._checked_dt and self.check_timestep and self.scheme is None:
            self._check_timestep()
        clock = time.perf_counter()
        since_build = st.pos if self._dirty else self._build_pos
        moved2 = integrate.drift(st.pos, st.vel, st.angvel, st.orient, since_build, self.dt,
                                 st.n_own, self.threads)
        self.planes.move(self.dt)
        self.mesh_walls.move(self.dt)
        moved2 = max(moved2, self.mesh_walls.moved2())    # the same on every rank
        self.time += self.dt
        self.step_count += 1
        t1 = time.perf_counter()
        self.timers["integrate"] += t1 - clock
        if not self._dirty and self.size > 1:   # every rank rebuilds on the same steps
            moved2 = self._max(moved2)
        if self._dirty or self._restoring or not (moved2 <= (0.5 * self.skin) ** 2):
            # after a restart, the first list keeps the original rebuild schedule
            self._rebuild(restore=self._restoring and moved2 <= (0.5 * self.skin) ** 2)
            t2 = time.perf_counter()
            self.timers["neighbor"] += t2 - t1
        else:
            self.ghosts.refresh(st)
            t2 = time.perf_counter()
            self.timers["comm"] += t2 - t1
        if self.scheme is None:
            problem = self._compute_forces()
            t3 = time.perf_counter()
            self.timers["contact"] += t3 - t2
            bad = integrate.kick(st.vel, st.angvel, st.force, st.torque, st.mass, st.inertia,
                                 st.blocked, self.gravity, self.dt, st.n_own, self.threads)
        else:
            problem, bad = self.scheme.update_velocities(self)
            t3 = time.perf_counter()
            self.timers["contact"] += t3 - t2
        t4 = time.perf_counter()
        self.timers["integrate"] += t4 - t3
        if bad >= 0:                            # the root cause of a NaN overlap too
            problem = ("step %d (t=%.6g): particle id %d has a non-finite velocity %r / angular "
                       "velocity %r (force %r)" % (
                           self.step_count, self.time, st.id[bad], st.vel[bad].tolist(),
                           st.angvel[bad].tolist(), st.force[bad].tolist()))
        # one Allreduce tells every rank alike whether any rank found a problem or
        # received a signal
        failed, signum = self._max(np.array([problem is not None, self._signal], float))
        if failed:
            self._raise_if_any(problem, SimulationError)
        if self.check_ids:
            self._verify_ids()
        self.timers["comm"] += time.perf_counter() - t4
        if signum:
            self._checkpoint_and_exit(int(signum))

    def _raise_if_any(self, message, error):
        """Raise error(message) on every rank when any rank has a message (the lowest
        rank's message wins): a failure on one rank stops all ranks, never hangs."""
        if self.size > 1:
            if not self._max(float(message is not None)):
                return
            message = next(m for m in self.comm.allgather(message) if m is not None)
        if message is not None:
            raise error(message)

    def _max(self, value):
        """Maximum over ranks of a float or of a float array (buffer Allreduce: no
        pickling in the step). NaN counts as +inf, so every rank gets the same answer."""
        buf = np.array(value, float, ndmin=1)
        buf[np.isnan(buf)] = math.inf          # infinities stay as they are
        if self.size > 1:
            self.comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.MAX)
        return buf if np.ndim(value) else float(buf[0])

    def _verify_ids(self):
        """Debug check: the owned ids of all ranks are exactly the live ids."""
        ids = self._allgather({"id": self.store.id[:self.store.n_own]})["id"]
        ids.sort()                  # self._ids is sorted: ids are appended ascending
        if len(ids) != len(self._ids) or np.any(ids != self._ids):
            lost = np.setdiff1d(self._ids, ids)
            dup = ids[1:][ids[1:] == ids[:-1]]
            raise SimulationError("step %d: particle ids not preserved: %d expected, %d found, "
                                  "missing %s, duplicated %s" % (self.step_count, len(self._ids),
                                                                 len(ids), lost[:5].tolist(),
                                                                 dup[:5].tolist()))

    def _allgather(self, fields):
        """Fields (dict of arrays, rows = particles) of all ranks, concatenated."""
        if self.size == 1:
            return {k: v.copy() for k, v in fields.items()}
        rec = pack(fields, record_dtype(fields))
        counts = np.array(self.comm.allgather(rec.nbytes), np.int64)
        out = np.empty(int(counts.sum()) // rec.dtype.itemsize, rec.dtype)
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.comm.Allgatherv([rec.view(np.uint8), MPI.BYTE],
                             [out.view(np.uint8), (counts, offsets), MPI.BYTE])
        return unpack(out)

    def _compute_forces(self):
        """Contact forces and their per-particle sums; returns a message when an overlap
        exceeds max_overlap (raised collectively by step). With one thread the pair and
        plane kernels add each contact to its particles as they go (in-pass sums: the
        additions of `scatter`, in its order, while the row is in cache)."""
        st, nmat = self.store, max(1, len(self.materials.materials))
        table = self.materials.table()
        inpass = self.threads == 1
        f, t = st.force[:st.n_own], st.torque[:st.n_own]
        worst = ck.sphere_sphere(self.pairs.i1, self.pairs.i2, st.pos, st.image, self._box_len,
                                 st.vel, st.angvel, st.radius, st.mass, st.material, table, nmat,
                                 self.dt, self.flags, self.pairs.active, self.pairs.state,
                                 self.threads, *((self._owner1, self._owner2, f, t) if inpass
                                                 else (None, None, None, None)),
                                 periodic=any(self.domain.periodic))
        problem = self._overlap_message(worst, self.pairs, particle_pair=True)
        pl = self.planes
        worst = ck.sphere_plane(self.walls.i1, self.walls.i2, st.pos, st.vel, st.angvel, st.radius,
                                st.mass, st.material, pl.point, pl.normal, pl.vel, pl.material,
                                table, nmat, self.dt, self.flags, self.walls.active,
                                self.walls.state, self.threads,
                                *((self.walls.i1, f, t) if inpass else ()))
        problem = problem or self._overlap_message(worst, self.walls, particle_pair=False)
        problem = problem or self._facet_contacts(table, nmat)
        self._sum_contact_forces(pairs_and_planes=not inpass)
        return problem

    def _sum_contact_forces(self, pairs_and_planes=True):
        """Force and torque of every owned particle: the sum of its contact rows, in
        a fixed order (the same bits on any rank and thread count). pairs_and_planes=False:
        those are summed already (in-pass), add the facet contacts only."""
        st, flags = self.store, self._lever_flags()
        if pairs_and_planes and self.threads == 1:
            ck.scatter(self._owner1, self._owner2, self.pairs.active, self.pairs.state,
                       self.walls.i1, self.walls.active, self.walls.state, st.radius, flags,
                       st.force[:st.n_own], st.torque[:st.n_own])
        elif pairs_and_planes:
            if self._pair_start is None:
                self._pair_start, self._pair_entry = ck.build_gather_lists(
                    self._owner1, self._owner2, st.n_own)
            ck.gather(self._pair_start, self._pair_entry, self.pairs.active, self.pairs.state,
                      self._wall_start, self.walls.active, self.walls.state, st.radius, flags,
                      st.force[:st.n_own], st.torque[:st.n_own], self.threads)
        fr = self.facet_rows
        ck.add_wall_forces(fr.i1, fr.active, fr.state, st.radius, flags, st.force[:st.n_own],
                           st.torque[:st.n_own])

    def _lever_flags(self):
        """L6Geom flags for the torques of the contact rows (contacts.contact_torques): the
        NSCD scheme's rows use the branch vectors -+r n (NO_RATCH)."""
        return self.flags | (NO_RATCH if self.scheme is not None else 0)

    def _facet_contacts(self, table, nmat):
        """Ball-facet contacts of the step (pyx/facets.pyx ball_facet); returns a
        message for an excessive overlap or an unresolvable group."""
        fr, mw, st = self.facet_rows, self.mesh_walls, self.store
        if len(fr) == 0:
            return None
        ratio, k, crowded = fk.ball_facet(
            self._facet_groups, fr.i1, fr.i2, st.pos, st.vel, st.angvel, st.radius, st.mass,
            st.material, mw.vertices, mw.facets, mw.normals, mw.facet_wall, mw.facet_edges,
            mw.edge_facets, mw.vertex_facet_ptr, mw.vertex_facet_idx, mw.side_off,
            mw.wall_material, mw.wall_cos_theta, mw.wall_full, mw.wall_rigid, mw.wall_v,
            mw.wall_w, mw.wall_ref, mw.vertex_vel, table, nmat, self.dt, self.flags, fr.active,
            fr.state, self._facet_holder, self.threads)
        if crowded >= 0:
            end = self._facet_groups[np.searchsorted(self._facet_groups, crowded, "right")]
            return ("step %d: particle id %d is within the skin of %d facets of mesh wall %d "
                    "(at most %d): the mesh is too fine for this ball size or the skin too "
                    "large" % (self.step_count, st.id[fr.i1[crowded]], end - crowded,
                               mw.facet_wall[fr.i2[crowded]], fk.MAX_FACETS_PER_BALL))
        if k >= 0 and not (ratio <= self.max_overlap):
            return ("step %d (t=%.6g): overlap of particle %d and mesh wall %d (facet %d) is "
                    "%.3g of its radius (limit max_overlap=%g): time step too large or "
                    "stiffness too low" % (self.step_count, self.time, st.id[fr.i1[k]],
                                           mw.facet_wall[fr.i2[k]], fr.i2[k], ratio,
                                           self.max_overlap))
        return None

    def _overlap_message(self, worst, batch, particle_pair):
        ratio, k = worst
        if k >= 0 and not (ratio <= self.max_overlap):
            ids = self.store.id
            if particle_pair:
                who = "particles %d and %d" % (ids[batch.i1[k]], ids[batch.i2[k]])
            else:
                who = "particle %d and plane %d" % (ids[batch.i1[k]], batch.i2[k])
            return ("step %d (t=%.6g): overlap of %s is %.3g of the smaller radius (limit "
                    "max_overlap=%g): time step too large or stiffness too low"
                    % (self.step_count, self.time, who, ratio, self.max_overlap))
        return None

    # ---------------------------------------------------------------- neighbors
    def _rebuild(self, restore=False):
        """Wrap, handle lost particles, balance, migrate, build ghosts and Verlet lists,
        carry contact state over (collective). restore: the first build after a restart
        between two scheduled rebuilds (pdem/io/checkpoint.py): positions stay as they
        are, the lists get twice the skin, and the build positions of the original run
        are kept, so that the next rebuild comes at the same step as without restart."""
        st, dom, dec = self.store, self.domain, self.dec
        own = st.owned()
        new_index = None
        if restore:
            own["build_pos"] = self._build_pos
        else:
            wrap(own["pos"], dom.lo, dom.hi, dom.periodic)
            own, new_index = self._handle_lost(own)
        rmax = float(own["radius"].max()) if len(own["radius"]) else 0.0
        if self.size > 1:
            rmax = self._max(rmax)
        if self.skin is None:
            self.skin = 0.2 * rmax if rmax > 0 else 1.0
        list_skin = 2.0 * self.skin if restore else self.skin
        if self.scheme is not None:          # potential contacts within the alert distance
            list_skin += self.scheme.reach(self, own["radius"])
        cutoff = 2.0 * rmax + list_skin
        self._box_len = np.ascontiguousarray(dom.length)
        for axis in range(3):
            if dom.periodic[axis] and dom.length[axis] < 2.0 * cutoff:
                raise InputError("domain length %g on periodic axis %d is below twice the pair "
                                 "range 2 * (2 r_max + skin [+ NSCD alert]) = %g" % (dom.length[axis], axis, 2 * cutoff))
        dec.check_thickness(cutoff)
        old_pairs, old_walls, old_facets = self.pairs, self.walls, self.facet_rows
        if self.size > 1:
            if self.balance is not None and self._imbalance(len(own["id"])) > self.balance:
                dec.balance(own["pos"], cutoff)
                self.n_balances += 1
            owners = ((self._owner1, self._owner2), (self.walls.i1,), (self.facet_rows.i1,))
            if new_index is not None:              # removed particles leave their contacts
                owners = tuple(tuple(np.where(o >= 0, new_index[o], -1) for o in group)
                               for group in owners)
            dest = dec.owner(own["pos"])
            self.n_migrated += int(np.count_nonzero(dest != self.rank))
            own, (old_pairs, old_walls, old_facets) = migrate(
                self.comm, own, dest, (self.pairs, self.walls, self.facet_rows), owners)
        own = self._spatial_order(own)
        build_pos = own.pop("build_pos", None)
        own["image"][:] = 0
        local = self.ghosts.build(own, cutoff)
        n_own = len(own["id"])
        st.set_local(own, {k: v[n_own:] for k, v in local.items()})
        # owned index of every local particle (ghosts that are periodic images of an
        # owned particle of this rank get its index, others -1)
        owner = np.concatenate([np.arange(n_own, dtype=np.int32),
                                self._owned_index(st.id[n_own:], st.id[:n_own])])
        # candidate pairs, sorted by (id1, id2); periodic images make duplicates to drop
        order = np.argsort(st.id, kind="stable")
        i1, i2 = cells.build_pairs(st.pos, st.image, self._box_len, st.radius, st.id, n_own,
                                   list_skin, order, self.threads)
        key = st.id[i1] * (self._next_id + 1) + st.id[i2]
        if st.n > n_own:
            srt = np.argsort(key, kind="stable")
            key, i1, i2 = key[srt], i1[srt], i2[srt]
            first = np.ones(len(key), bool)
            first[1:] = key[1:] != key[:-1]
            key, i1, i2 = key[first], i1[first], i2[first]
        if self.scheme is None:
            self._check_pair_laws(i1, i2)
        pairs = ContactBatch(i1, i2, key)
        pairs.carry_from(old_pairs)
        self.pairs = pairs
        self._owner1, self._owner2 = owner[i1], owner[i2]
        self._pair_start = self._pair_entry = None       # gather lists: built when threads > 1
        # plane contacts of owned particles, sorted by (particle, plane)
        wp, ww = cells.build_plane_pairs(st.pos, st.radius, n_own, self.planes.point,
                                         self.planes.normal, list_skin)
        walls = ContactBatch(wp, ww, (st.id[wp] << PLANE_BITS) | ww)
        walls.carry_from(old_walls)
        self.walls = walls
        self._wall_start = np.zeros(n_own + 1, np.int64)
        np.cumsum(np.bincount(walls.i1, minlength=n_own), out=self._wall_start[1:])
        self._build_facet_rows(n_own, old_facets, list_skin, cutoff, restore)
        self._build_pos = build_pos if restore else st.pos[:n_own].copy()
        self._dirty = self._restoring = False
        self.n_rebuilds += 0 if restore else 1

    def _build_facet_rows(self, n_own, old, list_skin, cutoff, restore):
        """Ball-facet candidates of owned particles, sorted by (particle id, facet), and
        the (particle, wall) groups of consecutive rows. Only the facets whose box,
        enlarged by the skin, overlaps this rank's subdomain plus ghost region are
        searched. restore: keep the walls' build positions (see _rebuild)."""
        st, mw = self.store, self.mesh_walls
        if len(mw) == 0:
            self.facet_rows = ContactBatch()
            self._facet_groups = np.zeros(1, np.int64)
            return
        local = mw.local_facets(self.dec.lo - cutoff, self.dec.hi + cutoff, list_skin)
        self.n_local_facets = len(local)
        p, f = fk.facet_candidates(st.pos, st.radius, n_own, mw.vertices, mw.facets, local,
                                   list_skin)
        key = (st.id[p].astype(np.int64) << FACET_BITS) | f
        order = np.argsort(key, kind="stable")
        rows = ContactBatch(p[order], f[order], key[order])
        rows.carry_from(old)
        self.facet_rows = rows
        wall = mw.facet_wall[rows.i2]
        new = np.ones(len(rows), bool)
        new[1:] = (rows.i1[1:] != rows.i1[:-1]) | (wall[1:] != wall[:-1])
        self._facet_groups = np.r_[np.flatnonzero(new), len(rows)].astype(np.int64)
        self._facet_holder = np.full(len(rows), -1, np.int32)
        if not restore:
            mw.mark_built()

    # ---------------------------------------------------------------- checkpoints
    def checkpoint(self, path):
        """Write a checkpoint to `path` (collective; see pdem/io/checkpoint.py): the
        run continues bit for bit from it with pdem.restart(path), on any rank count."""
        from .io import checkpoint
        clock = time.perf_counter()
        checkpoint.write(self, path)
        self.timers["output"] += time.perf_counter() - clock

    def checkpoint_on_signal(self, path, signals=(signal.SIGTERM, signal.SIGUSR1)):
        """On any of `signals` (what Slurm sends before the time limit with --signal),
        finish the current step on all ranks, write a checkpoint to `path` and raise
        pdem.CheckpointExit (a SystemExit with code 0)."""
        self._signal_path = path
        for sig in signals:
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, frame):
        self._signal = signum

    def _checkpoint_and_exit(self, signum):
        self.checkpoint(self._signal_path)
        name = signal.Signals(signum).name
        message = ("pdem: %s received: checkpoint of step %d (t = %.9g) written to %s; "
                   "continue with pdem.restart(%r)" % (name, self.step_count, self.time,
                                                       self._signal_path, self._signal_path))
        if self.rank == 0:
            print(message, file=sys.stderr, flush=True)
        raise CheckpointExit(message)

    def _restore(self, build_pos, dirty):
        """State after pdem.io.checkpoint.read filled particles and contact rows: attach
        each row to its owned particles, so that rows migrate with them at the first
        build (particles may cross a cut in the step that follows the restart)."""
        ids = self.store.id[:self.store.n_own]
        width = self._next_id + 1
        self._owner1, self._owner2 = (self._owned_index(self.pairs.key // width, ids),
                                      self._owned_index(self.pairs.key % width, ids))
        self.walls.i1[:] = self._owned_index(self.walls.key >> PLANE_BITS, ids)
        self.facet_rows.i1[:] = self._owned_index(self.facet_rows.key >> FACET_BITS, ids)
        self._dirty = dirty
        self._restoring = not dirty
        self._build_pos = build_pos

    @staticmethod
    def _owned_index(wanted, ids):
        """Index in `ids` of each of `wanted`, -1 where absent."""
        if len(ids) == 0:
            return np.full(len(wanted), -1, np.int32)
        order = np.argsort(ids)
        at = order[np.minimum(np.searchsorted(ids, wanted, sorter=order), len(ids) - 1)]
        return np.where(ids[at] == wanted, at, -1).astype(np.int32)

    def _imbalance(self, n_own):
        """max / mean of the owned particle counts over ranks (collective)."""
        counts = np.array(self.comm.allgather(n_own), float)
        return float(counts.max() / counts.mean()) if counts.sum() else 1.0

    def _spatial_order(self, own):
        """Store owned particles in cell order (cells of a few radii) so that neighbors
        are near in memory. Results do not depend on memory order: pairs, sums and
        output are ordered by id."""
        if len(own["id"]) < 2:
            return own
        pos = own["pos"]
        cell = 4.0 * float(own["radius"].max())
        c = np.floor((pos - pos.min(axis=0)) / cell).astype(np.int64)
        dims = c.max(axis=0) + 1
        order = np.argsort((c[:, 0] * dims[1] + c[:, 1]) * dims[2] + c[:, 2], kind="stable")
        return {k: v[order] for k, v in own.items()}

    def _check_pair_laws(self, i1, i2):
        n = len(self.materials.materials)
        if n == 0:
            return
        table = self.materials.table()
        if np.all(np.isfinite(table[:, 0])):
            return                         # every pair of materials has a defined law
        st = self.store
        combos = np.unique(st.material[i1].astype(np.int64) * n + st.material[i2])
        for c in combos:
            if not np.isfinite(table[c, 0]):
                a, b = self.materials.materials[c // n], self.materials.materials[c % n]
                self.materials.row(a, b)   # raises the InputError that explains the pair

    def _handle_lost(self, own):
        """Particles outside a non-periodic box: error on every rank, or (lost='remove')
        a warning naming them and their removal. Returns the kept particles and, when
        some were removed, the new index of each old one (-1: removed)."""
        dom = self.domain
        bad = np.flatnonzero(~np.all(np.isfinite(own["pos"]), axis=1))
        self._raise_if_any(None if len(bad) == 0 else (
            "step %d (t=%.6g): particle id %d has a non-finite position %r"
            % (self.step_count, self.time, own["id"][bad[0]], own["pos"][bad[0]].tolist())),
            SimulationError)
        out = np.zeros(len(own["id"]), bool)
        for axis in range(3):
            if not dom.periodic[axis]:
                out |= (own["pos"][:, axis] < dom.lo[axis]) | (own["pos"][:, axis] >= dom.hi[axis])
        msg = None
        if out.any():
            i = int(np.flatnonzero(out)[0])
            msg = ("step %d (t=%.6g): particle id %d at %r left the domain %s..%s"
                   % (self.step_count, self.time, own["id"][i], own["pos"][i].tolist(),
                      dom.lo.tolist(), dom.hi.tolist()))
        if self.lost == "error":
            self._raise_if_any(msg and msg + " (use lost='remove' to delete such particles)",
                               SimulationError)
            return own, None
        if msg:
            warnings.warn(msg + ": removed (%d particle(s) on rank %d this step)"
                          % (out.sum(), self.rank), RuntimeWarning, stacklevel=3)
        if self.check_ids:
            gone = self._allgather({"id": own["id"][out]})["id"]
            self._ids = np.setdiff1d(self._ids, gone)
        if not out.any():
            return own, None
        new_index = np.cumsum(~out) - 1
        new_index[out] = -1
        return {k: v[~out] for k, v in own.items()}, new_index

    def _check_timestep(self):
        """Refuse dt above the stability limit of the stiffest contact on the lightest
        particle: 2 / omega with omega = sqrt(k_n / m*) (Hooke), or the Rayleigh time
        pi R sqrt(rho / G) / (0.1631 nu + 0.8766) (Hertz)."""
        st, n = self.store, self.store.n_own
        nmat = len(self.materials.materials)
        if nmat == 0:
            return
        # per material over all ranks: smallest mass, smallest and largest radius
        stats = np.full((3, nmat), np.inf)
        for mi in np.unique(st.material[:n]):
            sel = st.material[:n] == mi
            stats[:, mi] = (st.mass[:n][sel].min(), st.radius[:n][sel].min(),
                            -st.radius[:n][sel].max())
        if self.size > 1:
            self.comm.Allreduce(MPI.IN_PLACE, stats, op=MPI.MIN)
        own_mat = np.flatnonzero(np.isfinite(stats[0]))
        limits = []
        for mi in own_mat:
            m_min, r_min, r_max = stats[0, mi], stats[1, mi], -stats[2, mi]
            a = self.materials.materials[mi]
            partners = [self.materials.materials[j] for j in own_mat] + \
                [self.materials.materials[j] for j in
                 np.unique(np.r_[self.planes.material, self.mesh_walls.wall_material])]
            for b in partners:
                p, estar, gstar = self.materials.pair_params(a, b)
                if p["law"] == "hertz":
                    g = a.young / (2 * (1 + a.poisson))
                    rho = a.density
                    limits.append((math.pi * r_min * math.sqrt(rho / g) / (0.1631 * a.poisson + 0.8766),
                                   "Rayleigh time of material %r" % a.name))
                else:
                    row = self.materials.row(a, b)
                    kn = row[COL["kn0"]] + row[COL["kn1"]] * r_max
                    limits.append((2.0 * math.sqrt(0.5 * m_min / kn),
                                   "2 sqrt(m*/k_n) of pair (%r, %r)" % (a.name, b.name)))
        if not limits:
            return
        crit, what = min(limits)
        if self.dt > crit:
            raise InputError("dt = %g is above the critical time step %g (%s); reduce dt or "
                             "pass check_timestep=False" % (self.dt, crit, what))
        self._checked_dt = True

    # ---------------------------------------------------------------- results
    def particles(self, gather=False):
        """Particles owned by this rank (gather=True: all particles, on every rank;
        collective) as a dict of numpy arrays sorted by id. Velocities are at
        t + dt/2 (leap-frog), positions, forces and torques at t."""
        st = self.store
        n = st.n_own
        out = {"id": st.id[:n], "position": st.pos[:n], "velocity": st.vel[:n],
               "angular_velocity": st.angvel[:n], "force": st.force[:n],
               "torque": st.torque[:n], "radius": st.radius[:n], "mass": st.mass[:n],
               "orientation": st.orient[:n], "material": st.material[:n]}
        return self._sorted(out, "id", gather)

    def _sorted(self, fields, key, gather):
        if gather:
            fields = self._allgather(fields)
        order = np.argsort(fields[key], kind="stable")
        return {k: v[order] for k, v in fields.items()}

    def contacts(self, gather=False):
        """Active contacts whose particle 1 this rank owns (each contact on exactly one
        rank; gather=True: all, on every rank; collective): particle pairs sorted by
        (id1, id2), then wall contacts sorted by (id1, id2) with id1 = -1 - plane index
        for planes and MESH_ID1 - wall index = -65537 - wall index for mesh walls (one
        per linked set or proximity contact of seed 004). force and torque act on
        particle id2; u, phi, u0, phi0 are the L6Geom generalized displacements and
        shifted origins (local coordinates, u_x < 0 in overlap); normal is the local x
        axis; point is global."""
        st = self.store
        out = {k: [] for k in ("id1", "id2", "point", "normal", "overlap", "force", "torque",
                               "u", "phi", "u0", "phi0")}
        mw = self.mesh_walls
        for batch, kind in ((self.pairs, "pair"), (self.walls, "plane"),
                            (self.facet_rows, "mesh")):
            a = np.flatnonzero(batch.active)
            if kind == "pair":
                a = a[self._owner1[a] >= 0]
            normal, un = batch.T[a, :3], batch.u[a, 0]
            p = batch.i1[a]
            # c = x1 + (r1 + u_n / 2) n, the middle of the overlap (pyx/contacts.pyx);
            # for walls the particle is body 2: c = x2 - (r2 + u_n / 2) n
            sign = 1.0 if kind == "pair" else -1.0
            out["point"].append(st.pos[p] + sign * normal * (st.radius[p] + 0.5 * un)[:, None])
            if kind == "pair":
                id1, id2 = st.id[p], st.id[batch.i2[a]]
            elif kind == "plane":
                id1, id2 = -1 - batch.i2[a].astype(np.int64), st.id[p]
            else:
                id1, id2 = MESH_ID1 - mw.facet_wall[batch.i2[a]].astype(np.int64), st.id[p]
            out["id1"].append(id1); out["id2"].append(id2)
            out["normal"].append(normal); out["overlap"].append(-un)
            body2 = batch.i2[a] if kind == "pair" else p
            out["force"].append(batch.force[a])
            out["torque"].append(ck.contact_torques(batch.state[a], st.radius[body2], 2,
                                                self._lever_flags()))
            for k in ("u", "phi", "u0", "phi0"):
                out[k].append(getattr(batch, k)[a])
        out = {k: np.concatenate(v) for k, v in out.items()}
        if gather:
            out = self._allgather(out)
        # pairs (id1 >= 0) first, then wall contacts; each by (id1, id2)
        order = np.lexsort((out["id2"], out["id1"], out["id1"] < 0))
        return {k: v[order] for k, v in out.items()}

    def plane_forces(self):
        """Force ON each plane, (n_planes, 3): minus the sum of its contact forces on
        the particles, summed over ranks (collective)."""
        f = np.zeros((len(self.planes), 3))
        a = np.flatnonzero(self.walls.active)
        np.add.at(f, self.walls.i2[a], -self.walls.force[a])
        return self._sum(f)

    def mesh_wall_forces(self):
        """Force and moment ON each mesh wall, {"force": (n_walls, 3), "moment":
        (n_walls, 3)}: minus the sums of its contacts' forces on the particles and of
        their moments about the wall's reference point W_r (seed 004). Collective; the
        contact rows of all ranks are summed in key order, so the result has the same
        bits on any number of ranks."""
        fr, st, mw = self.facet_rows, self.store, self.mesh_walls
        a = np.flatnonzero(fr.active)
        wall = mw.facet_wall[fr.i2[a]]
        f = fr.force[a]
        arm = st.pos[fr.i1[a]] - mw.reference_points()[wall]
        rows = self._allgather({"key": fr.key[a], "wall": wall, "force": -f,
                                "moment": -(np.cross(arm, f) + ck.contact_torques(
                                    fr.state[a], st.radius[fr.i1[a]], 2, self._lever_flags()))})
        order = np.argsort(rows["key"], kind="stable")
        out = {"force": np.zeros((len(mw), 3)), "moment": np.zeros((len(mw), 3))}
        for w in range(len(mw)):
            mine = order[rows["wall"][order] == w]
            for k in out:
                out[k][w] = np.sum(rows[k][mine], axis=0)
        return out

    def global_sum(self, value):
        """Sum over ranks of a number or array computed on each rank from what it owns
        (collective), e.g. sim.global_sum(p["mass"][p["position"][:, 2] < 0].sum())."""
        return self._sum(np.array(value, dtype=float, ndmin=1)).reshape(np.shape(value))[()]

    def _sum(self, a):
        if self.size > 1:
            self.comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)
        return a

    def energy(self):
        """Kinetic, rotational and gravitational potential energy at time t, summed over
        ranks (collective): the kinetic terms use m v(t-dt/2).v(t+dt/2)/2, the
        leap-frog's time-centred form (NSCD: m v.v/2 of the stored velocity)."""
        st, n = self.store, self.store.n_own
        v_plus, w_plus = st.vel[:n], st.angvel[:n]
        v_minus, w_minus = v_plus, w_plus          # NSCD: m v.v/2 of the step's velocity
        if self.scheme is None:
            acc = st.force[:n] / st.mass[:n, None] + self.gravity
            alpha = st.torque[:n] / st.inertia[:n, None]
            for d in range(3):
                acc[(st.blocked[:n] & (1 << d)) != 0, d] = 0.0
                alpha[(st.blocked[:n] & (8 << d)) != 0, d] = 0.0
            v_minus = v_plus - acc * self.dt
            w_minus = w_plus - alpha * self.dt
        e = np.array([0.5 * np.sum(st.mass[:n] * np.einsum("ij,ij->i", v_minus, v_plus)),
                      0.5 * np.sum(st.inertia[:n] * np.einsum("ij,ij->i", w_minus, w_plus)),
                      -np.sum(st.mass[:n] * (st.pos[:n] @ self.gravity))])
        kin, rot, pot = self._sum(e)
        return {"kinetic": float(kin), "rotational": float(rot), "gravity": float(pot)}

    def timer_stats(self):
        """Seconds per phase over ranks: {phase: (min, mean, max)} (collective)."""
        t = np.array([self.timers[p] for p in PHASES])
        all_t = np.array(self.comm.allgather(t)) if self.size > 1 else t[None, :]
        return {p: (all_t[:, i].min(), all_t[:, i].mean(), all_t[:, i].max())
                for i, p in enumerate(PHASES)}

    def comm_stats(self):
        """Per rank (list indexed by rank; collective): owned particles, ghosts, and bytes
        this rank sends per step between rebuilds (ghost refresh), from the last build."""
        mine = {"owned": self.store.n_own, "ghosts": self.store.n - self.store.n_own,
                "bytes_per_step": self.ghosts.bytes_per_refresh}
        return self.comm.allgather(mine) if self.size > 1 else [mine]

    @property
    def n_contacts(self):
        """Number of active contacts (particle pairs, plane and mesh wall contacts) on all ranks
        (collective)."""
        pairs = np.count_nonzero(self.pairs.active[self._owner1 >= 0]) if len(self.pairs) else 0
        local = np.array([pairs + np.count_nonzero(self.walls.active)
                          + np.count_nonzero(self.facet_rows.active)], np.int64)
        return int(self._sum(local)[0])

    @property
    def n_particles(self):
        """Number of particles on all ranks (collective)."""
        return int(self._sum(np.array([self.store.n_own], np.int64))[0])

    @property
    def n_local(self):
        """Number of particles this rank owns."""
        return self.store.n_own
