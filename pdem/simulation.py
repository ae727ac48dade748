"""Simulation: owns the particles, interactions and walls of one rank and runs the step.

The step, written once, in `step`:
  drift (x, q to t)  ->  if any particle on any rank moved > skin/2 relative to the
  mean flow or towards a wall, or > skin (pdem/contact/frame.py), or a wall moved
  > skin/2: wrap, migrate
  particles with their contact rows, build ghosts (borders: six swaps), the candidate
  lists of every interaction kind (pdem.contact.kinds), carry contact state over;
  else refresh the ghosts (forward)  ->  scheme.advance: the explicit scheme computes
  contact forces and kicks v to t + dt/2, NSCD solves the contacts at the velocity
  level (pdem.scheme)  ->  collective checks (NaN, overlap, signals).

Every rank runs the same script (SPMD): scene set-up calls (materials, planes,
add_spheres with the full arrays) are made on all ranks; each rank keeps what it
owns. Errors found on one rank are raised on all ranks (no hang).
"""
import math
import numbers
import signal
import sys
import time

import numpy as np
from mpi4py import MPI

from . import (analysis, clumps, diagnostics, editing, heap, insertion, polyhedra, shapes,
               validate)
from . import energy as energy_balance
from ._kernels import integrate, rebuild as _r
from .cell import Cell, apply
from .collective import Collective
from .contact import keys
from .contact.frame import MovingFrame
from .contact.flags import APPROX, NO_RATCH
from .contact.kinds import KINDS, Build, owned_index
from .contact.mesh import Mesh
from .contact.mesh_walls import DEFAULT_CUTOFF_DEGREES, MeshWalls
from .contact.region_walls import RegionWalls
from .contact.wall_motion import RigidMotion
from .contact.walls import Planes, Segments
from .domain import Domain
from .errors import InputError, SimulationError
from .events import Events, Progress
from .motion import WallMotions
from .lost_particles import handle_lost
from .materials import MaterialTable
from .parallel.decomposition import Decomposition
from .parallel.ghosts import GhostExchange, wrap
from .parallel.migration import migrate
from .particles import (BODY_FIELDS, DOF_BITS, SHAPES, ParticleStore, empty_fields,
                        mass_and_inertia, spatial_permutation)
from .scheme import Explicit, Scheme
from .shape_templates import ShapeTemplates
from .signals import CheckpointExit, DeferredInterrupt, SignalCheckpoint  # noqa: F401 (API)
from .threads import thread_count

PHASES = diagnostics.PHASES


def fmt(values):
    """A vector for messages, with 12 significant digits: 0.018 rather than
    0.018000000000000002 (round-off of the input's arithmetic)."""
    return "[%s]" % ", ".join("%.12g" % v for v in np.ravel(values))


class Simulation:
    """A DEM simulation on a box `domain` with time step `dt`.

    Parameters: gravity (3-vector); comm: mpi4py communicator (default COMM_WORLD);
    dims: ranks per axis (default MPI.Compute_dims); balance: max/mean of owned
    particles over ranks that moves the cuts (at rebuilds; None: never); check_ids:
    debug check, every step, that no id is lost or duplicated; skin: Verlet skin
    (default 0.1 x the largest diameter); threads: OpenMP threads per rank;
    approx: L6Geom approximation flags, any of 'mid_normal', 'no_renorm_mid_normal',
    'mid_trsf', 'no_renorm_trsf'; no_ratch: branch vectors r n (seed 000); lost:
    'error' or 'remove' for particles leaving a non-periodic box; check_timestep:
    refuse a dt above the critical one; max_overlap: stop when an overlap exceeds
    this fraction of the smaller radius; scheme: the time-stepping scheme, None or
    pdem.Explicit() (force laws, leap-frog) or pdem.NSCD(...) (non-smooth contact
    dynamics; the skin then adds to its alert distance in the Verlet lists);
    track_energy: the energy balance in sim.energy() (docs/energy.md); near_margin:
    the pair kernel visits only the candidates within this fraction of the skin of
    touching, a list kept while no other can touch (0: every candidate; the same
    results either way: pdem/contact/near.py); sphere_orientations: integrate the
    spheres' orientations (output only: a sphere's orientation never enters its
    motion); False leaves them as they are, as LAMMPS's fix nve/sphere does, and the
    drift costs a third (every other result the same, bit for bit; with non-spheres in
    the scene every particle's orientation is integrated).
    """

    def __init__(self, domain, dt, gravity=(0.0, 0.0, 0.0), comm=None, skin=None, threads=None,
                 approx=(), no_ratch=False, lost="error", check_timestep=True, max_overlap=0.5,
                 dims=None, balance=1.2, check_ids=False, scheme=None, track_energy=False,
                 near_margin=0.05, sphere_orientations=True):
        if not isinstance(domain, Domain):
            raise InputError("domain must be a pdem.Domain, got %r" % (domain,))
        g = validate.vector("gravity", gravity)
        if balance is not None and not (isinstance(balance, (int, float)) and balance > 1.0):
            raise InputError("balance must be a threshold > 1 (max/mean particles per rank) "
                             "or None, got %r" % (balance,))
        unknown = set(approx) - set(APPROX)
        if unknown:
            raise InputError("approx: unknown flag(s) %s (known: %s)" % (sorted(unknown), sorted(APPROX)))
        if not isinstance(sphere_orientations, bool):
            raise InputError("sphere_orientations must be True or False, got %r"
                             % (sphere_orientations,))
        if lost not in ("error", "remove"):
            raise InputError("lost must be 'error' or 'remove', got %r" % (lost,))
        validate.number("skin", skin, 0.0, none=True)
        if scheme is not None and not isinstance(scheme, Scheme):
            raise InputError("scheme must be None or a time-stepping scheme (pdem.Explicit(), "
                             "pdem.NSCD(...)), got %r" % (scheme,))
        self.scheme = Explicit() if scheme is None else scheme
        heap.tune_malloc()          # large freed arrays unmapped, the heap's top kept (heap.py)
        self.domain = domain
        self.dt = dt
        self.gravity = g if domain.dim == 3 else np.array([g[0], g[1], 0.0])
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.collective = Collective(self.comm)
        self.dec = Decomposition(self.comm, domain, dims)
        self.rank, self.size = self.dec.rank, self.dec.size
        self.ghosts = GhostExchange(self.dec)
        self.balance = balance
        self.check_ids = check_ids
        self.n_balances = 0
        self.n_migrated = 0                      # particles this rank sent to others
        self.external = editing.ExternalLoads()  # set_external_load
        self.motions = WallMotions()             # set_plane_motion, set_mesh_motion
        self.insertions = {}                     # add_insertion, by name
        self.insertion_states = {}               # from a checkpoint, until re-registered
        self.events = Events(self)               # sim.events.at / every / when
        self.stopped = False                     # set by stop(), reset by run()
        self.n_removed = 0                       # particles removed by lost='remove' (all ranks)
        self._ids = np.empty(0, np.int64)        # all live ids (kept for check_ids)
        self.skin = skin
        self.near_margin = validate.number("near_margin", near_margin, 0.0, low_open=False)
        self.sphere_orientations = sphere_orientations
        self.threads = thread_count(threads, self.comm)
        self.flags = sum(APPROX[a] for a in approx) | (NO_RATCH if no_ratch else 0)
        self.lever_flags = self.flags | self.scheme.lever_flags   # torques of contact rows
        self.lost = lost
        self.check_timestep = check_timestep
        self.max_overlap = float(max_overlap)
        self.materials = MaterialTable(stiffness=self.scheme.stiffness)
        self.materials.planar = domain.dim == 2
        self.planes = Planes()
        self.segments = Segments()               # 2D boundary segments (seed 003)
        self.points = Segments()                 # 2D zero-radius boundary points
        self.mesh_walls = MeshWalls()
        self.region_walls = RegionWalls()        # level-set containers (seed 002)
        self.store = ParticleStore()
        self.store.enable(self.scheme.particle_fields)
        self._working_kinds = None
        self.interactions = {cls.name: cls(self) for cls in KINDS}
        self.box_length = np.ascontiguousarray(domain.length)
        self.cell = Cell(self)                   # H, L, stress control (pdem/cell.py)
        self.signals = SignalCheckpoint()
        self.interrupt = DeferredInterrupt()       # Ctrl-C during run(): at a step's end
        self.time = 0.0
        self.step_count = 0
        # time = t0 + (step - step0) dt (no round-off accumulates; re-based when dt or
        # time are set from outside, e.g. by a restart)
        self._clock = (0.0, 0, self.dt, 0.0)          # t0, step0, dt, last time set
        self._scene_step = None       # the first step after the last change of the scene
        self.timers = dict.fromkeys(PHASES, 0.0)
        self.n_rebuilds = 0
        self.next_id = 0              # the id of the next particle added
        self._restoring = False       # restarted: first Verlet list still to build
        self._dirty = True            # particles/materials changed: rebuild before forces
        self._build_pos = None
        # the next step's rebuild test, carried by this step's reduction (several ranks):
        # run() allows it between two of its steps; the scheme's kick computes it
        self._predict = self._predicting = False
        self._ahead = (0.0, 0.0)        # this rank's values (the scheme's kick)
        self._next_drift = None         # every rank's largest (moved2, speed2): next step only
        self.travel = 0.0               # a bound of any particle's path since the build
        self.frame = MovingFrame()      # ... relative to the mean flow (contact/frame.py)
        self._checked_dt = False
        self.shapes = False           # any non-sphere (the same on every rank)
        self.polyhedra = False        # any polyhedron (the same on every rank)
        self.templates = ShapeTemplates()   # clump / polyhedron geometry (shape_templates.py)
        self.rotation = shapes.Rotation()
        self.energy_tracker = energy_balance.EnergyTracker()
        self.track_energy = track_energy

    # ---------------------------------------------------------------- scene set-up
    def material(self, name, density, **params):
        """Define a material (docs/laws.md: the laws, their parameters and defaults).
        Collective: call on every rank with the same arguments."""
        self.collective.same("material %r" % (name,), name=name, density=density, params=params)
        m = self.materials.add(name, density, **params)
        self._checked_dt = False
        return m

    def pair(self, material1, material2, **params):
        """Override mixed parameters of a material pair (friction=..., restitution=..., law=...).
        Collective."""
        self.collective.same("pair", material1=material1, material2=material2, params=params)
        self.materials.set_pair(material1, material2, **params)
        self._checked_dt = False

    def add_spheres(self, positions, radii, material, velocities=None, angular_velocities=None,
                    masses=None):
        """Add spheres (disks in 2D); returns their global ids (int64 array). masses:
        per particle, instead of density x volume (e.g. spheres in one layer of a 2D
        run); the inertia is then 0.4 m r^2 (3D) or 0.5 m r^2 (2D) of that mass.
        Collective: every rank passes the same full arrays (checked by a checksum)."""
        self.collective.same("add_spheres", positions=positions, radii=radii, material=material,
                             velocities=velocities, angular_velocities=angular_velocities,
                             masses=masses)
        dim = self.domain.dim
        pos = validate.vectors("positions", positions, 3, also=dim)
        n = len(pos)
        r = validate.scalars("radii", radii, n)
        self._check_size("radii", r)
        if masses is not None:
            masses = validate.scalars("masses", masses, n)
        new, mat = self._new_particles("add_spheres", pos, material, velocities,
                                       angular_velocities, body=False)
        new["orient"][:, 0] = 1.0
        new["radius"][:] = r
        new["mass"][:], new["inertia"][:] = mass_and_inertia(r, mat.density, dim, masses)
        if dim == 2:    # disks per unit thickness, moving in the xy plane
            new["blocked"][:] = DOF_BITS["z"] | DOF_BITS["rx"] | DOF_BITS["ry"]
            new["vel"][:, 2] = 0.0
            new["angvel"][:, :2] = 0.0
        return self._append(new)

    def add_ellipsoids(self, positions, semi_axes, material, orientations=None, velocities=None,
                       angular_velocities=None):
        """Add solid ellipsoids (3D, explicit scheme); returns their global ids.
        semi_axes (n, 3) along the body axes; orientations (n, 4) unit quaternions (w, x, y,
        z) taking body to world coordinates (default: body axes = x, y, z). Contacts with
        ellipsoids and spheres by the common normal, with planes analytically
        (docs/ellipsoids.md). Collective: every rank passes the same full arrays."""
        self.collective.same("add_ellipsoids", positions=positions, semi_axes=semi_axes,
                             material=material, orientations=orientations,
                             velocities=velocities, angular_velocities=angular_velocities)
        if self.domain.dim != 3:
            raise InputError("add_ellipsoids: ellipsoids need a 3D domain, got dim=%d (in 2D: "
                             "add_ellipses)" % self.domain.dim)
        shapes.check_adding(self, "add_ellipsoids", SHAPES["ellipsoid"])
        pos = validate.vectors("positions", positions, 3)
        n = len(pos)
        axes = shapes.semi_axes(semi_axes, n)
        self._check_size("semi_axes", axes.max(axis=1))
        q = shapes.orientations(orientations, n)
        new, mat = self._new_particles("add_ellipsoids", pos, material, velocities,
                                       angular_velocities)
        shapes.fill_ellipsoids(new, axes, q, mat.density, self.threads)
        self.shapes = True
        return self._append(new)

    def add_ellipses(self, positions, semi_axes, material, angles=None, velocities=None,
                     angular_velocities=None):
        """Add ellipses (2D, unit thickness, explicit scheme); returns their global ids.
        semi_axes (n, 2): a along the body x axis, b along y; angles (n,): the turn of
        the body x axis from the world x axis, radians (default 0); angular_velocities:
        the spin of each (a number or one per ellipse). Collective."""
        self.collective.same("add_ellipses", positions=positions, semi_axes=semi_axes,
                             material=material, angles=angles, velocities=velocities,
                             angular_velocities=angular_velocities)
        if self.domain.dim != 2:
            raise InputError("add_ellipses: ellipses need a 2D domain, got dim=%d (in 3D: "
                             "add_ellipsoids)" % self.domain.dim)
        shapes.check_adding(self, "add_ellipses", SHAPES["ellipse"])
        pos = validate.vectors("positions", positions, 3, also=2)
        n = len(pos)
        axes = shapes.semi_axes(semi_axes, n, width=2)
        self._check_size("semi_axes", axes.max(axis=1))
        theta = shapes.angles(angles, n, "ellipse")
        new, mat = self._new_particles("add_ellipses", pos, material, velocities,
                                       angular_velocities)
        new["blocked"][:] = DOF_BITS["z"] | DOF_BITS["rx"] | DOF_BITS["ry"]
        new["vel"][:, 2] = 0.0
        new["angvel"][:, :2] = 0.0
        shapes.fill_ellipses(new, axes, theta, mat.density, self.threads)
        self.shapes = True
        return self._append(new)

    def clump_template(self, centres, radii):
        """Register a clump of overlapping spheres (centres (n, 3), radii (n,) or one
        number, in any frame); returns its template index for add_clumps. Its mass
        properties are those of the union of the spheres (docs/clumps.md). Collective."""
        self.collective.same("clump_template", centres=centres, radii=radii)
        return clumps.add_template(self.templates, centres, radii)

    def add_clumps(self, positions, template, material, orientations=None, velocities=None,
                   angular_velocities=None):
        """Add rigid clumps of template `template` (3D, explicit scheme); returns their
        ids. positions: the centres of mass; orientations (n, 4) unit quaternions taking
        the frame the template's spheres were given in to the world (default: as given).
        Collective: every rank passes the same full arrays (docs/clumps.md)."""
        self.collective.same("add_clumps", positions=positions, template=template,
                             material=material, orientations=orientations,
                             velocities=velocities, angular_velocities=angular_velocities)
        return clumps.add(self, positions, template, material, orientations, velocities,
                          angular_velocities)

    def add_polyhedra(self, positions, template, material, orientations=None, velocities=None,
                      angular_velocities=None):
        """Add convex polyhedra (3D, explicit scheme); returns their global ids. template:
        a pdem.polyhedra.Polyhedron (its principal frame is the body frame; positions are
        centroids) or the index of a polyhedron template; orientations (n, 4) unit
        quaternions, body to world. Contacts with polyhedra, spheres and ellipsoids by
        GJK + EPA, with planes by the vertices below them, the Minkowski-overlap ECC law
        (docs/polyhedra.md). Collective: every rank passes the same arguments."""
        return polyhedra.add(self, positions, template, material, orientations, velocities,
                             angular_velocities)

    def add_polygons(self, positions, template, material, angles=None, velocities=None,
                     angular_velocities=None):
        """Add convex polygons (2D, unit thickness, explicit scheme); returns their ids.
        template: a pdem.polyhedra.Polygon (positions are centroids) or the index of a
        polygon template; angles: the turn about z (radians). Contacts as polyhedra
        (docs/polyhedra.md). Collective."""
        return polyhedra.add_2d(self, positions, template, material, angles, velocities,
                                angular_velocities)

    def _check_size(self, name, r):
        length = self.domain.length[:self.domain.dim]
        big = np.flatnonzero(2.0 * r > length.min())
        if len(big):
            i = int(big[0])
            raise InputError("%s[%d] = %r: the particle (diameter %.6g) is larger than the "
                             "domain (length %.6g along axis %d)"
                             % (name, i, float(r[i]), 2 * r[i], length.min(),
                                int(np.argmin(length))))

    def _new_particles(self, what, pos, material, velocities, angular_velocities, body=True):
        """Fields of n new particles at the checked positions `pos`, with ids, velocities
        and material set (the caller fills shape, size, mass), and their material. body:
        non-spheres, with BODY_FIELDS (enabled in the store when they are appended)."""
        dim = self.domain.dim
        n = len(pos)
        if self.next_id + n > keys.MAX_ID + 1:
            raise InputError("%s: %d particles would take ids up to %d; ids must be "
                             "below 2**31 (contact keys hold two ids)" % (what, n,
                                                                          self.next_id + n - 1))
        mat = self.materials.get(material)
        if dim == 2 and np.any(pos[:, 2] != 0.0):
            i = int(np.flatnonzero(pos[:, 2] != 0.0)[0])
            raise InputError("positions[%d]: z must be 0 in 2D, got %r" % (i, float(pos[i, 2])))
        lo, hi = self.domain.lo, self.domain.hi
        outside = np.any((pos < lo) | (pos >= hi), axis=1)
        if self.cell.deforming:        # a deformed cell wraps them on its periodic axes
            outside = np.any(((pos < lo) | (pos >= hi)) & ~np.array(self.domain.periodic), axis=1)
        outside = np.flatnonzero(outside)
        if len(outside):
            i = int(outside[0])
            raise InputError("positions[%d] = %s is outside the domain %s..%s"
                             % (i, fmt(pos[i]), fmt(lo), fmt(hi)))
        vel = angvel = None
        if velocities is not None:
            vel = validate.vectors("velocities", velocities, 3, n, also=dim)
        if angular_velocities is not None:
            w = np.asarray(angular_velocities, dtype=float)
            if dim == 2 and w.ndim <= 1 and w.size == n:
                w = np.column_stack([np.zeros(n), np.zeros(n), w.reshape(-1)])
            angvel = validate.vectors("angular_velocities", w, 3, n)
        _, first, count = np.unique(pos, axis=0, return_index=True, return_counts=True)
        if np.any(count > 1):
            i = int(first[np.flatnonzero(count > 1)[0]])
            j = int(np.flatnonzero(np.all(pos == pos[i], axis=1))[1])
            raise InputError("positions[%d] = positions[%d] = %s: two particles at the same "
                             "position (their contact normal is undefined)" % (i, j, fmt(pos[i])))
        for k in range(len(self.planes) if self._refuse_behind else 0):
            d = (pos - self.planes.point[k]) @ self.planes.normal[k]
            if np.any(d < 0.0):
                i = int(np.flatnonzero(d < 0.0)[0])
                raise InputError("positions[%d] = %s is behind plane %d (centre %.3g on its back "
                                 "side; particles live on the side the normal %s points to)"
                                 % (i, fmt(pos[i]), k, -d[i], fmt(self.planes.normal[k])))
        new = empty_fields(n)
        if body:
            new.update(empty_fields(n, BODY_FIELDS))
        new["id"][:] = np.arange(self.next_id, self.next_id + n, dtype=np.int64)
        new["pos"][:] = pos
        if vel is not None:
            new["vel"][:] = vel
        if angvel is not None:
            new["angvel"][:] = angvel
        if self.cell.deforming:
            self.cell.wrap(new["pos"], new["vel"])
        new["material"][:] = mat.index
        return new, mat

    def _append(self, new):
        """Add the new particles this rank owns; their ids."""
        self.next_id += len(new["id"])
        if self.check_ids:
            self._ids = np.concatenate([self._ids, new["id"]])
        ids = new["id"].copy()
        mine = np.flatnonzero(self.dec.owner(self.cell.reference(new["pos"])) == self.rank)
        if len(mine) < len(ids):            # (all of them: the arrays as they are)
            new = {k: v[mine] for k, v in new.items()}
        self.store.append_owned(new)
        self._scene_changed()
        self._checked_dt = False
        return ids

    @property
    def _refuse_behind(self):
        """A centre behind a plane is an overlap above the radius: refused at set-up
        when it would stop the explicit scheme at step 1 (NSCD grains may sit there)."""
        return bool(self.scheme.stiffness) and self.max_overlap < 1.0

    def _scene_changed(self):
        self._dirty = True
        self._scene_step = self.step_count + 1

    @property
    def fresh_scene(self):
        """True during the first step after particles or walls were added (an overlap
        found then was in the set-up, not made by the time step)."""
        return self.step_count == self._scene_step

    def add_plane(self, point, normal, material, velocity=None):
        """Add an infinite plane wall; particles live on the side `normal` points to.
        Returns the plane index. Collective."""
        self.collective.same("add_plane", point=point, normal=normal, material=material,
                             velocity=velocity)
        m = self.materials.get(material)
        idx = self.planes.add(point, normal, m.index, velocity)
        n, st = self.store.n_own, self.store
        d = (st.pos[:n] - self.planes.point[idx]) @ self.planes.normal[idx]
        behind = np.flatnonzero(d < 0.0)
        problem = None if len(behind) == 0 or not self._refuse_behind else (
            "add_plane: particle id %d at %s is behind the new plane %d (centre %.3g on its "
            "back side; particles live on the side the normal %s points to)"
            % (st.id[behind[0]], fmt(st.pos[behind[0]]), idx, -d[behind[0]],
               fmt(self.planes.normal[idx])))
        if self.collective.max(float(problem is not None)):
            self.planes.remove_last()
            self.collective.raise_if_any(problem, InputError)
        self._scene_changed()
        return idx

    def add_insertion(self, region, material, radii, rate=None, mass_rate=None, count=None,
                      velocity=(0.0, 0.0, 0.0), every=1000, seed=0, name="insertion"):
        """Pour particles into `region` during the run at `rate` particles per time unit
        (or `mass_rate`), up to `count`, every `every` steps, with radii a radius or a
        size distribution (pdem.sizes), rejecting overlaps (pdem/insertion.py). The same
        on any number of ranks; after a restart, call it again with the same name.
        Collective; returns the Insertion (its `state`: number and mass inserted)."""
        if self.cell.deforming:
            raise InputError("add_insertion %r: insertions are not available in a deforming "
                             "cell (their minimum image is the fixed box's)" % (name,))
        return insertion.add_insertion(self, region, material, radii, rate, mass_rate, count,
                                       velocity, every, seed, name)

    def set_plane_motion(self, plane, law):
        """Drive plane `plane` (its index) by a motion law (pdem.motion.Sine, Ramp, Table,
        Servo; None: stop it), from now on. Collective."""
        self.collective.same("set_plane_motion", plane=plane, law=self.motions.check(law))
        if not (isinstance(plane, (int, np.integer)) and 0 <= plane < len(self.planes)):
            raise InputError("set_plane_motion: plane must be a plane index in 0..%d, got %r"
                             % (len(self.planes) - 1, plane))
        self.motions.set(self, ("plane", int(plane)), law)
        if law is None:
            self.planes.set_velocity(plane, 0.0)

    def set_mesh_motion(self, wall, law):
        """Translate mesh wall `wall` (index or name) by a motion law (as
        set_plane_motion; a Servo needs axis=). Collective."""
        self.collective.same("set_mesh_motion", wall=wall, law=self.motions.check(law))
        i = self.mesh_walls.index(wall)
        w = self.mesh_walls[i]
        if w.motion is None:
            w.motion = RigidMotion(w.mesh, reference_point=w.mesh.vertices.mean(axis=0))
        elif not isinstance(w.motion, RigidMotion):
            raise InputError("set_mesh_motion: mesh wall %r deforms (vertex_velocities); a "
                             "motion law moves rigid walls only" % (w.name,))
        self.motions.set(self, ("mesh", i), law)
        if law is None:
            w.motion.set_velocity(velocity=(0.0, 0.0, 0.0))

    def add_segments(self, x0, x1, material, end_points=True):
        """Add fixed boundary segments from x0[k] to x1[k] (seed 003; in 3D, rods of
        zero thickness): a particle touches one where the foot of the perpendicular
        from its centre lies within it. end_points: add seed 003's zero-radius
        boundary disks at their ends (add_points), once per distinct point; a point
        acts only on particles outside the span of every segment ending at it (a
        joint of segments is no bump). Returns the segment indices. Collective."""
        self.collective.same("add_segments", x0=x0, x1=x1, material=material,
                             end_points=end_points)
        shapes.check_touches(self, "add_segments", "boundary segments")
        x0, m = self._wall_points("add_segments", "x0", x0, material)
        self._check_polygon_models("add_segments", m.index)
        x1, _ = self._wall_points("add_segments", "x1", x1, material, len(x0))
        zero = np.flatnonzero(np.all(x1 == x0, axis=1))
        if len(zero):
            k = int(zero[0])
            raise InputError("add_segments: segment %d has zero length: x0[%d] = x1[%d] = %r"
                             % (k, k, k, x0[k].tolist()))
        idx = self.segments.add(x0, x1, m.index)
        if end_points:                  # numbered as GrainProblem's: x0[0], x1[0], x0[1], ...
            self.add_points(np.stack([x0, x1], axis=1).reshape(-1, 3), m)
        self._scene_changed()
        return idx

    def add_points(self, points, material):
        """Add fixed zero-radius boundary points (seed 003's boundary disks); points
        already there are not repeated. Returns the indices of the points given.
        Collective."""
        self.collective.same("add_points", points=points, material=material)
        shapes.check_touches(self, "add_points", "boundary segments")
        pts, m = self._wall_points("add_points", "points", points, material)
        self._check_polygon_models("add_points", m.index)
        new = self.points.new_points(pts)
        self.points.add(new, new, m.index)
        self._scene_changed()
        where = {tuple(p): k for k, p in enumerate(self.points.a.tolist())}
        return np.array([where[tuple(p)] for p in pts.tolist()], np.int64)

    def _check_polygon_models(self, what, material_index):
        """Polygons against segments take the 'minkowski' model only (collective)."""
        if self.polyhedra:
            from .contact import polygon_segments
            polygon_segments.check_models(self, what, [material_index],
                                          polygon_segments.polygon_materials(self))

    def _wall_points(self, what, name, rows, material, n=None):
        """(rows as 3-vectors, material) checked: finite, z = 0 in 2D, a known material."""
        dim = self.domain.dim
        rows = validate.vectors("%s: %s" % (what, name), rows, 3, n, also=dim)
        if dim == 2 and np.any(rows[:, 2] != 0.0):
            k = int(np.flatnonzero(rows[:, 2] != 0.0)[0])
            raise InputError("%s: %s[%d] = %r has z != 0 in 2D" % (what, name, k,
                                                                  rows[k].tolist()))
        return rows, self.materials.get(material)

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
        sim.mesh_walls[i].motion.set_velocity(...). Collective: call on every rank. A
        fixed wall entirely outside the domain is refused."""
        self.collective.same("add_mesh_wall", mesh=mesh, material=material, mode=mode,
                             cutoff_angle=cutoff_angle, velocity=velocity,
                             angular_velocity=angular_velocity, reference_point=reference_point,
                             vertex_velocities=vertex_velocities, name=name)
        m = self.materials.get(material)
        if not isinstance(mesh, Mesh):
            mesh = Mesh.read(mesh)
        if velocity is None and angular_velocity is None and vertex_velocities is None:
            lo, hi = mesh.vertices.min(axis=0), mesh.vertices.max(axis=0)
            if np.any(hi < self.domain.lo) or np.any(lo > self.domain.hi):
                raise InputError("add_mesh_wall %r: the mesh (box %s..%s) lies entirely outside "
                                 "the domain %s..%s" % (name or mesh.name, fmt(lo), fmt(hi),
                                                        fmt(self.domain.lo), fmt(self.domain.hi)))
        shapes.check_touches(self, "add_mesh_wall", "mesh walls")
        idx = self.mesh_walls.add(mesh, m.index, mode, cutoff_angle, velocity, angular_velocity,
                                  reference_point, vertex_velocities, name)
        self._scene_changed()
        self._checked_dt = False
        return idx

    def add_region_wall(self, region, material):
        """Add a level-set wall: particles are kept inside `region` (a pdem region, f <= 0
        inside, whose |f| does not exceed the distance to its boundary) by seed 002's
        relaxation taken as a contact: overlap (1 + |d0| / (d0 - d1)) r (f + r for a
        signed distance), normal -grad f / |grad f|, the plane law of the material pair
        (pdem/contact/region_walls.py). Returns the wall index. Collective."""
        self.collective.same("add_region_wall", region=type(region).__name__, material=material)
        shapes.check_touches(self, "add_region_wall", "region walls")
        m = self.materials.get(material)
        idx = self.region_walls.add(region, m.index)
        self._scene_changed()
        self._checked_dt = False
        return idx

    def region_wall_forces(self):
        """Force ON each region wall, (n_walls, 3), summed over ranks (collective)."""
        return self.interactions["region"].loads()

    # ---------------------------------------------------------------- bonds
    def bond_material(self, name, kn, ks, tensile_strength, shear_strength=None, cohesion=None,
                      friction_angle=0.0, radius_multiplier=1.0, moment_factor=1.0,
                      damping=0.0, scatter=None):
        """Define a parallel bond material (Potyondy & Cundall 2004; pyx/bonds.pyx): kn,
        ks stiffness per unit area (Pa/m); tensile_strength; shear_strength, or cohesion
        and friction_angle (degrees; PFC 5: shear strength = cohesion - sigma
        tan(friction_angle), sigma tensile positive); radius_multiplier lambda (bond
        radius lambda min(r1, r2)); moment_factor beta in [0, 1]; damping: ratio of
        critical damping of the bond's dashpots; scatter: None or {"distribution":
        "normal", "cv": c, "seed": s} or {"distribution": "weibull", "modulus": m,
        "seed": s} (per-bond strength factors, the same on any rank count)."""
        self._bonds_supported()
        m = self.interactions["bond"].add_material(
            name, kn=kn, ks=ks, tensile_strength=tensile_strength,
            shear_strength=shear_strength, cohesion=cohesion, friction_angle=friction_angle,
            radius_multiplier=radius_multiplier, moment_factor=moment_factor, damping=damping,
            scatter=scatter)
        self._checked_dt = False
        return m

    def _bonds_supported(self):
        shapes.check_touches(self, "bonds", "bonds")
        if not isinstance(self.scheme, Explicit):
            raise InputError("bonds: the %s scheme does not support bonds (use the explicit "
                             "scheme)" % self.scheme.name)

    def add_bonds(self, id_pairs, bond_material):
        """Bond the particle pairs `id_pairs` ((m, 2) ids) with `bond_material` (a name
        or the value of bond_material()); the bonds form at their current positions.
        Collective (the same pairs on every rank); returns the number of bonds made."""
        self._bonds_supported()
        kind = self.interactions["bond"]
        m = kind.material(bond_material)
        try:
            pairs = np.array(id_pairs, dtype=np.int64).reshape(-1, 2)
        except (TypeError, ValueError):
            raise InputError("add_bonds: id_pairs must be (m, 2) particle ids, got %r"
                             % (id_pairs,)) from None
        same = np.flatnonzero(pairs[:, 0] == pairs[:, 1])
        if len(same):
            raise InputError("add_bonds: id_pairs[%d] bonds particle %d with itself"
                             % (same[0], pairs[same[0], 0]))
        id1, id2 = pairs.min(axis=1), pairs.max(axis=1)
        key = keys.make(id1, id2)
        order = np.argsort(key, kind="stable")
        again = np.flatnonzero(key[order][1:] == key[order][:-1])
        if len(again):
            k = int(order[again + 1].min())
            first = int(order[np.searchsorted(key[order], key[k])])
            raise InputError("add_bonds: id_pairs[%d] = (%d, %d) repeats id_pairs[%d]"
                             % (k, pairs[k, 0], pairs[k, 1], first))
        ids, pos = self._positions_of(np.unique(pairs), "add_bonds")
        exists = self.collective.max(kind.existing(key).astype(float)) if len(key) else []
        if np.any(exists):
            k = int(np.flatnonzero(exists)[0])
            raise InputError("add_bonds: particles %d and %d are already bonded"
                             % (id1[k], id2[k]))
        d = pos[np.searchsorted(ids, id2)] - pos[np.searchsorted(ids, id1)]
        periodic = np.array(self.domain.periodic)
        if self.cell.deforming:
            d = self.cell.minimum_image(d)
        else:
            d[:, periodic] -= np.round(d[:, periodic] / self.box_length[periodic]) * \
                self.box_length[periodic]
        return self._make_bonds(id1, id2, m, np.linalg.norm(d, axis=1))

    def bond_contacts(self, bond_material, gap=0.0, ids=None):
        """Bond every pair of particles (of `ids`, default all) whose surface gap is at
        most `gap` (touching or overlapping: gap=0), with `bond_material`. Collective;
        returns the number of bonds made (pairs already bonded are left as they are)."""
        self._bonds_supported()
        kind = self.interactions["bond"]
        m = kind.material(bond_material)
        gap = validate.number("bond_contacts: gap", gap, 0.0, low_open=False)
        self._rebuild(reach=1.01 * gap)           # the Verlet list holds every such pair
        pairs, st = self.interactions["pair"], self.store
        b = pairs.batch
        x = st.pos[b.i2] - st.pos[b.i1] + apply(self.cell.matrix, st.image[b.i2] - st.image[b.i1])
        near = np.linalg.norm(x, axis=1) - st.radius[b.i1] - st.radius[b.i2] <= gap
        near &= (pairs.owner1 >= 0) | (pairs.owner2 >= 0)
        if ids is not None:
            wanted = np.asarray(ids, np.int64)
            near &= np.isin(st.id[b.i1], wanted) & np.isin(st.id[b.i2], wanted)
        near &= ~kind.existing(b.key)
        k = np.flatnonzero(near)
        return self._make_bonds(st.id[b.i1[k]], st.id[b.i2[k]], m,
                                np.linalg.norm(x[k], axis=1))

    def _make_bonds(self, id1, id2, material, length):
        """Rows for the bonds (id1 < id2) of this rank, the ghost cutoff over their
        length, the lists rebuilt (collective). Returns the number of new bonds."""
        kind = self.interactions["bond"]
        before = kind.counts()[0]
        kind.longest = max(kind.longest, float(length.max()) if len(length) else 0.0)
        kind.add(id1, id2, material)
        self._checked_dt = False
        self._rebuild()
        kind.form()
        return kind.counts()[0] - before

    def _positions_of(self, ids, what):
        """(sorted ids, positions) of particles on all ranks (collective); an unknown id
        is an InputError naming it."""
        mine = owned_index(ids, self.store.id[:self.store.n_own])
        got = self.collective.allgather({"id": ids[mine >= 0],
                                         "pos": self.store.pos[mine[mine >= 0]]})
        missing = np.setdiff1d(ids, got["id"])
        if len(missing):
            raise InputError("%s: unknown particle id %d" % (what, missing[0]))
        order = np.argsort(got["id"])
        return got["id"][order], got["pos"][order]

    def _local_index(self, ids, with_found=False):
        """Local indices of the particles of `ids` this rank owns; an id owned by no
        rank is an InputError on every rank (collective). with_found: also the mask of
        the ids this rank owns."""
        try:
            ids = np.atleast_1d(np.asarray(ids, dtype=np.int64))
        except (TypeError, ValueError):
            raise InputError("ids must be particle ids (integers), got %r" % (ids,)) from None
        idx = owned_index(ids.reshape(-1), self.store.id[:self.store.n_own])
        found = idx >= 0
        count = self.collective.sum(found.astype(np.int32))
        if np.any(count == 0):
            raise InputError("unknown particle id %d" % ids[np.flatnonzero(count == 0)[0]])
        return (idx[found], found) if with_found else idx[found]

    @staticmethod
    def _per_id(name, value, n, width):
        """(n, 3) rows from one vector or one per id, `width` components (2 in 2D)."""
        v = validate.vectors("set_velocity: " + name, value, 3, None, also=width)
        if len(v) == 1:
            v = np.repeat(v, n, axis=0)
        if len(v) != n:
            raise InputError("set_velocity: %s must be one vector or one per id (%d), got %d"
                             % (name, n, len(v)))
        return v

    def block(self, ids, dofs="xyz"):
        """Block degrees of freedom: one name ('x', 'y', 'z', 'rx', 'ry', 'rz'), a string
        of translations like 'xyz', or a list of names. Their velocity is no longer
        changed by forces (prescribed velocity). Collective."""
        self.collective.same("block", ids=ids, dofs=dofs)
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
        """Set (and with block=True prescribe) velocities of particles: velocity and
        angular_velocity are one 3-vector for all or one per id (velocity: 2 components
        in 2D; angular_velocity of disks: a number, or one per id). Collective."""
        self.collective.same("set_velocity", ids=ids, velocity=velocity,
                             angular_velocity=angular_velocity, block=block)
        n_ids = np.atleast_1d(np.asarray(ids)).size
        dim = self.domain.dim
        if velocity is not None:
            velocity = self._per_id("velocity", velocity, n_ids, dim)
        if angular_velocity is not None:
            w = np.asarray(angular_velocity, dtype=object if isinstance(angular_velocity, str)
                           else None)
            if dim == 2 and w.dtype != object and w.ndim <= 1 and w.size in (1, n_ids) and \
                    w.size != 3:             # 2D: the spin of each disk (3 numbers: a vector)
                w = np.column_stack([np.zeros((w.size, 2)), w.reshape(-1, 1).astype(float)])
            angular_velocity = self._per_id("angular_velocity", w, n_ids, 3)
        idx, found = self._local_index(ids, with_found=True)
        self.energy_tracker.edited()           # energy put in by hand: a new reference
        if velocity is not None:
            self.store.vel[idx] = velocity[found]
            if block:
                self.store.blocked[idx] |= 7
        if angular_velocity is not None:
            self.store.angvel[idx] = angular_velocity[found]
            shapes.renew(self, idx)           # ellipsoids: L from the new omega
            if block:
                self.store.blocked[idx] |= 56

    # ---------------------------------------------------------------- editing
    def remove(self, ids=None, region=None):
        """Delete particles by id and/or with their centre in `region` (a pdem region), with
        their contacts, bonds and external loads, at once; returns how many. Collective."""
        return editing.remove(self, ids, region)

    def set_radius(self, ids, radius):
        """New radii (one, or one per id); mass and inertia follow at the same density.
        Collective."""
        editing.set_radius(self, ids, radius)

    def set_material(self, ids, material):
        """A new material; mass and inertia follow from its density. Collective."""
        editing.set_material(self, ids, material)

    def set_external_load(self, ids, force=None, torque=None):
        """A force and torque (one, or one per id) added to these particles every step,
        replacing any given before (zero removes it); explicit scheme. Collective."""
        self.external.set(self, ids, force, torque)

    @property
    def dt(self):
        return self._dt

    @dt.setter
    def dt(self, value):
        """A new time step (also after a restart): checked against the critical step at
        the next step; the clock goes on from the current time."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InputError("dt must be a positive finite number, got %r" % (value,))
        value = validate.positive("dt", value)  # numpy scalars too (np.float32 -> float)
        if hasattr(self, "collective"):
            self.collective.same("dt", dt=value)
        self._dt = value
        self._checked_dt = False

    # ---------------------------------------------------------------- running
    def run(self, steps=None, until=None, progress=None):
        """Advance by `steps` steps or until time `until` (the first step whose time
        reaches until - dt/2), or until an event calls `stop()`. progress: a line with
        the step, time and time left on rank 0, refreshed every second (None: when
        rank 0's standard output is a terminal)."""
        self.stopped = False
        n = validate.steps_to_run(steps, until, self.time, self.dt)
        show = Progress(self, n) if progress or (progress is None and self.rank == 0 and
                                                 sys.stdout.isatty()) else None
        try:
            with self.interrupt:                # Ctrl-C ends the run at a step's end
                for k in range(n):
                    self._predict = k + 1 < n   # the next step follows: nothing between
                    self.step()
                    if show:
                        show.update()
                    if self.stopped:
                        break
        finally:
            self._predict, self._next_drift = False, None
        if show:
            show.close()

    def stop(self):
        """End the current run after this step (from an event's callback, on every
        rank); `sim.stopped` tells loops around `run` (ResultFile.run, the command line)."""
        self.stopped = True

    def step(self):
        """One time step t -> t + dt (see the module docstring for the order)."""
        st = self.store
        if not self._checked_dt:
            self.scheme.check(self)
            self._checked_dt = True
        clock = time.perf_counter()
        predicted, self._next_drift = self._next_drift, None
        # the kick of the last step predicted this drift's rebuild test (several ranks)
        since_build = (st.pos if self._dirty else None if predicted is not None
                       else self._build_pos)
        if self.shapes:
            self.rotation.save(st)
        if self.cell.deforming:                 # homoDeform: a change of L (pdem/cell.py)
            self.cell.adjust_velocities(st)
        turned = st.orient if self.sphere_orientations or self.shapes else None
        moved2, speed2 = integrate.drift(st.pos, st.vel, st.angvel, turned, since_build,
                                         self.dt, st.n_own, self.threads,
                                         self.frame.advance(self.dt))
        if self.shapes:                 # non-spheres: the free rotor (pdem/shapes.py)
            self.rotation.drift(st, self.dt, self.threads)
        if self.motions:                        # motion laws: wall velocities of this step
            self.motions.apply(self)
        self.planes.move(self.dt)
        self.mesh_walls.move(self.dt)
        walls2 = max(self.planes.moved2(), self.mesh_walls.moved2())   # the same on every rank
        moved2 = max(self.frame.moved2(moved2), walls2)
        images = 0.0
        if self.cell.deforming:                 # H to t + dt; images moved with it
            extra = self.cell.advance(self.dt)
            moved2 = np.inf if self.cell.flipped else (np.sqrt(moved2) + extra) ** 2
            images = self.cell.step_travel
        self._tick_clock()
        t1 = time.perf_counter()
        self.timers["integrate"] += t1 - clock
        if not self._dirty and self.size > 1:   # every rank rebuilds on the same steps
            if predicted is not None:
                moved2 = max(self.frame.moved2(predicted[0]), walls2)
                speed2 = predicted[1]
            else:
                moved2, speed2 = self.collective.max_floats([moved2, speed2])
        # how far any particle may have moved since the last build (pdem.contact.near)
        self.travel += math.sqrt(speed2) * self.dt + images
        within = moved2 <= (0.5 * self.skin) ** 2 if self.skin is not None else False
        if self._dirty or self._restoring or not within:
            # after a restart, the first list keeps the original rebuild schedule
            self._rebuild(restore=self._restoring and not self._dirty and within)
            self.timers["neighbor"] += time.perf_counter() - t1
        else:
            self.ghosts.refresh(st, ("orient",) if self.shapes else ())
            self.timers["comm"] += time.perf_counter() - t1
        # the kick may compute the next drift's rebuild test (same bits) when nothing
        # can change positions or velocities before that drift (no events, rigid
        # rotations or deforming cell): then one reduction per step
        self._predicting = (self._predict and self.size > 1 and self.scheme.predicts_rebuild
                            and not self.events and not self.shapes and
                            not self.cell.deforming)
        problem, bad = self.scheme.advance(self)
        t4 = time.perf_counter()
        if bad >= 0:                            # the root cause of a NaN overlap too
            problem = ("step %d (t=%.6g): particle id %d has a non-finite velocity %r / angular "
                       "velocity %r (force %r)" % (
                           self.step_count, self.time, st.id[bad], st.vel[bad].tolist(),
                           st.angvel[bad].tolist(), st.force[bad].tolist()))
            twin = self._coincident(bad)
            if twin is not None:
                problem += ("; particles %d and %d are at the same position %s (coincident "
                            "centres: the contact normal is undefined)"
                            % (min(st.id[bad], twin), max(st.id[bad], twin), fmt(st.pos[bad])))
        # one Allreduce tells every rank alike whether any rank found a problem,
        # received a signal or Ctrl-C (and carries the next step's rebuild test)
        flags = [problem is not None, self.signals.received, self.interrupt.pending]
        if self._predicting:
            flags += self._ahead
        if self.size > 1:
            flags = self.collective.max_floats(flags)
        failed, signum, interrupted = flags[:3]
        if failed:
            self.collective.raise_if_any(problem, SimulationError)
        if self._predicting:
            self._next_drift = float(flags[3]), float(flags[4])
        if self.check_ids:
            diagnostics.verify_ids(self, self._ids)
        self.timers["comm"] += time.perf_counter() - t4
        self.cell.after_step(self)              # stress, work, servo (collective)
        if self.events:                         # before a checkpoint on a signal
            self.events.after_step()
        if signum:
            self.signals.checkpoint_and_exit(self, int(signum))
        if interrupted:
            raise KeyboardInterrupt("pdem: interrupted after step %d (t = %.9g), which is "
                                    "complete: sim.run() goes on from it"
                                    % (self.step_count, self.time))

    def _tick_clock(self):
        """step_count += 1 and time = t0 + (step - step0) dt: exact multiples of dt, no
        accumulated round-off; (t0, step0) re-based when dt or time were set from
        outside (a restart, a change of dt)."""
        t0, step0, dt, last = self._clock
        if self.dt != dt or self.time != last:
            t0, step0, dt = self.time, self.step_count, self.dt
        self.step_count += 1
        self.time = t0 + (self.step_count - step0) * dt
        self._clock = (t0, step0, dt, self.time)

    @property
    def clock_origin(self):
        """(t0, step0): time = t0 + (step - step0) dt (checkpoints keep it)."""
        t0, step0, dt, last = self._clock
        if self.dt != dt or self.time != last:
            return self.time, self.step_count
        return t0, step0

    def set_clock(self, time, step, origin=None):
        """Set the time and step (a restart); origin: the (t0, step0) of the run."""
        self.time, self.step_count = float(time), int(step)
        t0, step0 = origin if origin is not None else (self.time, self.step_count)
        self._clock = (float(t0), int(step0), self.dt, self.time)

    def sum_forces(self, skip_in_pass=False, kinds=None):
        """Force and torque of every owned particle: the sum of its contact rows, kind
        by kind in a fixed order (the same bits on any rank and thread count).
        skip_in_pass: the kinds with in-pass sums have added their rows already.
        kinds: this step's working_kinds() when the caller has them."""
        st = self.store
        f, t = st.owned_sums()
        for kind in self.working_kinds() if kinds is None else kinds:
            if not (skip_in_pass and kind.in_pass):
                kind.add_forces(f, t, self.lever_flags, self.threads)
        if self.external:
            self.external.add(self, f, t)

    def working_kinds(self):
        """The interaction kinds with rows, and the one that starts the force sums: a
        kind without rows adds nothing and reports nothing (a scene of spheres skips the
        other 16 kinds' calls every step). Kept until a kind gets new rows (its batch
        setter calls forget_working_kinds); the caller must not change the list."""
        if self._working_kinds is None:
            self._working_kinds = [kind for kind in self.interactions.values()
                                   if kind.starts_sums or len(kind.batch)]
        return self._working_kinds

    def forget_working_kinds(self):
        """A kind's rows changed: working_kinds lists the kinds anew at its next call."""
        self._working_kinds = None

    def _coincident(self, i):
        """Id of another particle (owned or ghost) whose centre coincides with local
        particle i's (within 1e-9 of its radius), or None."""
        st = self.store
        d = np.linalg.norm(st.pos[:st.n] - st.pos[i], axis=1)
        near = np.flatnonzero((d <= 1e-9 * st.radius[i]) & (st.id[:st.n] != st.id[i]))
        return int(st.id[near[0]]) if len(near) else None

    # ---------------------------------------------------------------- neighbors
    def _rebuild(self, restore=False, reach=0.0, drop=None):
        """Wrap, handle lost particles, balance, migrate, build ghosts and the lists of
        every interaction kind, carry contact state over (collective). reach: a list
        skin of at least this (bond_contacts' gap). restore: the
        first build after a restart between two scheduled rebuilds
        (pdem/io/checkpoint.py): positions stay as they are, the lists get twice the
        skin, and the build positions of the original run are kept, so that the next
        rebuild comes at the same step as without restart."""
        st, dom, dec = self.store, self.domain, self.dec
        # views of the owned rows: every field is gathered anew by the ghost build
        own = {k: v[:st.n_own] for k, v in st.f.items()}
        new_index = None
        if restore:
            own["build_pos"] = self._build_pos
        else:
            own["pos"] = own["pos"].copy()              # wrapped in place
            if self.cell.deforming:                     # in reduced coordinates
                own["vel"] = own["vel"].copy()
                self.cell.wrap(own["pos"], own["vel"])
            else:
                wrap(own["pos"], dom.lo, dom.hi, dom.periodic)
            own, new_index, removed = handle_lost(self, own, drop)
            bonds = self.interactions["bond"]
            if self.check_ids or bonds.any:
                removed = self.collective.allgather({"id": removed})["id"]
                if self.check_ids:
                    self._ids = np.setdiff1d(self._ids, removed)
                bonds.forget(removed)
        rmax, bond, *velocities = self.collective.max(np.concatenate([[
            float(own["radius"].max()) if len(own["radius"]) else 0.0,
            self.interactions["bond"].reach()], MovingFrame.velocity_box(own["vel"])]))
        if self.skin is None and rmax > 0:    # an empty start (insertion later) waits
            self.skin = 0.2 * rmax
        skin = self.skin or 0.0
        list_skin = max((2.0 * skin if restore else skin) +
                        self.scheme.reach(self, own["radius"]), reach)  # contacts within an alert distance
        # the ghosts cover the pairs and the longest bond (plus the last step's motion)
        cutoff = max(2.0 * rmax, bond + 0.5 * list_skin if bond else 0.0) + list_skin
        widths = self.cell.widths() if self.cell.deforming else dom.length
        for axis in range(3):
            if dom.periodic[axis] and widths[axis] < 2.0 * cutoff:
                raise InputError("domain length %g on periodic axis %d is below twice the pair "
                                 "range 2 * (2 r_max + skin [+ NSCD alert]) = %g"
                                 % (widths[axis], axis, 2 * cutoff))
        ghost_cutoff = self.cell.ghost_cutoff(cutoff)   # per axis in a deformed cell
        dec.check_thickness(ghost_cutoff)
        kinds = list(self.interactions.values())
        if self.size > 1:       # exchange: particles move to their owners with their rows
            if self.balance is not None and \
                    self.collective.imbalance(len(own["id"])) > self.balance:
                dec.balance(self.cell.reference(own["pos"]), ghost_cutoff)
                self.n_balances += 1
            owners = [k.owners() for k in kinds]
            if new_index is not None:              # removed particles leave their contacts
                owners = [tuple(np.where(o >= 0, new_index[o], -1) for o in group)
                          for group in owners]
            dest = dec.owner(self.cell.reference(own["pos"]))
            self.n_migrated += int(np.count_nonzero(dest != self.rank))
            own, received = migrate(self.comm, own, dest, [k.batch for k in kinds], owners)
            for kind, batch in zip(kinds, received):
                kind.batch = batch
        build_pos = own.pop("build_pos", None)
        # the pair list's order (pyx/cells.pyx build_pair_rows): cells of a grid of the
        # box at the build positions, the same on any rank count; ghosts get their
        # particle's key with the other fields
        own["order_key"] = _r.grid_keys(own["pos"] if build_pos is None else build_pos,
                                        own["id"], dom.lo, dom.hi, 2.0 * rmax)
        order = spatial_permutation(own)                # owned rows in cell order
        if build_pos is not None and order is not None:
            build_pos = build_pos[order]
        own["image"] = np.zeros_like(own["image"])
        n_own = len(own["id"])
        st.f = {}                       # the old local arrays go field by field as the
        local = self.ghosts.build(own, ghost_cutoff, order,    # new ones are gathered
                                  self.cell.reference if self.cell.deforming else None)
        order_key = local.pop("order_key")
        st.set_local(local, n_own=n_own)
        local = None
        self.cell.built(restore)
        owner = self._owners(order, n_own)
        build = Build(n_own, owner, list_skin, cutoff, restore, order_key)
        for kind in kinds:
            if kind.needs_build():
                kind.build(build)
        self.scheme.after_build(self)
        self._build_pos = build_pos if restore else st.pos[:n_own].copy()
        if not restore:
            self.planes.mark_built()
            self.frame.reset(self, np.array(velocities))
        self._dirty = self._restoring = False
        self.n_rebuilds += 0 if restore else 1
        self.travel = 0.0

    def _owners(self, order, n_own):
        """Owned index of every local particle after a ghost build: ghosts that are
        periodic images of an owned particle of this rank get its index (known from
        the ghost's source row), others -1. A ghost received from another rank is never
        owned here: each swap moves a copy one step along its own axis of the Cartesian
        grid (parallel/ghosts.py), so its rank differs from the owner's in that axis."""
        st, src = self.store, self.ghosts.source
        owner = np.empty(st.n, np.int32)
        owner[:n_own] = np.arange(n_own, dtype=np.int32)
        g = src[n_own:]
        mine = g < self.ghosts.n_pool_owned
        gh = owner[n_own:]
        if order is None:
            gh[mine] = g[mine]
        else:
            inverse = np.empty(n_own, np.int32)         # pool row -> owned index
            inverse[order] = owner[:n_own]
            gh[mine] = inverse[g[mine]]
        gh[~mine] = -1
        return owner

    # ---------------------------------------------------------------- checkpoints
    def checkpoint(self, path):
        """Write a checkpoint to `path` (collective; see pdem/io/checkpoint.py): the
        run continues bit for bit from it with pdem.restart(path), on any rank count."""
        from .io import checkpoint       # h5py is needed only for checkpoints and output
        clock = time.perf_counter()
        checkpoint.write(self, path)
        self.timers["output"] += time.perf_counter() - clock

    def checkpoint_on_signal(self, path, signals=(signal.SIGTERM, signal.SIGUSR1)):
        """On any of `signals` (what Slurm sends before the time limit with --signal),
        finish the current step on all ranks, write a checkpoint to `path` and raise
        pdem.CheckpointExit (a SystemExit with code 0)."""
        self.signals.install(path, signals)

    def build_positions(self):
        """Owned positions at the last neighbor build (the rebuild schedule; checkpoints)."""
        n = self.store.n_own
        return self.store.pos[:n] if self._dirty or self._build_pos is None else self._build_pos

    @property
    def needs_rebuild(self):
        """True when the next step rebuilds the neighbor lists whatever the particles
        moved (set-up changed, or request_rebuild)."""
        return self._dirty

    def rebuild(self):
        """Build the neighbor lists of every interaction kind now (collective), from the
        current positions (pdem.nscd.GrainProblem detects contacts this way)."""
        self._rebuild()

    def request_rebuild(self):
        """Rebuild the neighbor lists at the next step (results do not change)."""
        self._dirty = True

    def attach_restored(self, build_pos, dirty):
        """After pdem.io.checkpoint.read filled particles and contact rows: each row
        attached to its owned particles, to migrate with them at the first build."""
        ids = self.store.id[:self.store.n_own]
        for kind in self.interactions.values():
            kind.attach(ids)
        self._dirty = dirty
        self._restoring = not dirty
        self._build_pos = build_pos
        self.shapes = bool(self.collective.max(float(np.any(self.store.shape[:len(ids)] != 0))))
        self.polyhedra = bool(self.collective.max(float(np.any(
            self.store.shape[:len(ids)] >= polyhedra.SHAPE_CODE))))   # polyhedra, polygons

    # ---------------------------------------------------------------- results
    def particles(self, gather=False):
        """Particles owned by this rank (gather=True: all particles, on every rank;
        collective) as a dict of numpy arrays sorted by id. Positions, forces and
        torques are at t; velocities at t + dt/2 (leap-frog; with NSCD the velocities
        of the step just solved)."""
        st = self.store
        n = st.n_own
        out = {"id": st.id[:n], "position": st.pos[:n], "velocity": st.vel[:n],
               "angular_velocity": st.angvel[:n], "force": st.force[:n],
               "torque": st.torque[:n], "radius": st.radius[:n], "mass": st.mass[:n],
               "orientation": st.orient[:n], "material": st.material[:n],
               "shape": st.shape[:n], "template": st.column("template", n)}
        for k in ("strain", "stress"):           # deformable DDA particles only
            if k in st.f:
                out[k] = st.f[k][:n]
        # semi-axes and principal moments (spheres: r and their scalar moment, thrice)
        sphere = st.shape[:n] == 0
        out["semi_axes"] = np.where(sphere[:, None], st.radius[:n, None],
                                    st.column("semi_axes", n))
        out["inertia"] = np.where(sphere[:, None], st.inertia[:n, None],
                                  st.column("inertia_body", n))
        if gather:
            out = self.collective.allgather(out)
        order = np.argsort(out["id"], kind="stable")
        return {k: v[order] for k, v in out.items()}

    def contacts(self, gather=False):
        """Active contacts, each on one rank (the owner of id1, or of a wall contact's
        particle; gather=True: all, on every rank; collective), ordered by kind ("pair",
        "plane", "mesh", "segment", "point", "region": pdem.contact.kinds.KINDS), wall
        (the wall element's index, -1 for pairs), id1 (-1 for walls), id2. Force and torque
        act on id2; u, phi, u0, phi0: L6Geom displacements and shifted origins (local
        axes, u_x < 0 in overlap); normal: the local x axis, towards id2."""
        kinds = [k for k in self.interactions.values() if k.contact]
        # a kind lists its batch's active rows: the kinds without any add nothing, and
        # skipping them (the first one gives the columns) saves ~70 us per kind
        kinds = kinds[:1] + [k for k in kinds[1:] if k.batch.active.any()]
        parts = [k.public() for k in kinds]
        out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        out["kind"] = out["kind"].astype("U8")
        out["code"] = np.concatenate([np.full(len(p["id1"]), k.code, np.int8)
                                      for k, p in zip(kinds, parts)])
        if gather:
            out = self.collective.allgather(out)
        order = np.lexsort((out["id2"], out["id1"], out["wall"], out.pop("code")))
        return {k: v[order] for k, v in out.items()}

    def bonds(self, gather=False):
        """Bonds, intact and broken, sorted by (id1, id2): each on one rank (intact: the
        owner of id1; broken: the rank that saw it break; gather=True: all, on every rank;
        collective). Columns: id1 < id2, intact, mode (0 intact, 1 tension, 2 shear:
        pdem.contact.bonds.MODES), force and moment on id2 in the bond's local axes
        (x: the normal from id1 to id2; force x < 0 pulls id2 towards id1), point, normal,
        length (centre distance), ends (the centre of id1 and the bonded copy of id2's:
        the bond as a line, across a periodic boundary too; NaN once broken),
        broken_time (NaN while intact), material index."""
        out = self.interactions["bond"].public()
        if gather:
            out = self.collective.allgather(out)
        order = np.lexsort((out["id2"], out["id1"]))
        return {k: v[order] for k, v in out.items()}

    @property
    def n_bonds(self):
        """Number of intact bonds on all ranks (collective)."""
        return self.interactions["bond"].counts()[0]

    @property
    def n_broken(self):
        """Number of bonds broken so far, on all ranks (collective)."""
        return self.interactions["bond"].counts()[1]

    def plane_forces(self):
        """Force ON each plane, (n_planes, 3): minus the sum of its contact forces on
        the particles, summed over ranks (collective)."""
        return self._wall_loads("plane", "ellplane", "clplane", "phplane")

    def segment_forces(self):
        """Force ON each boundary segment, (n_segments, 3), summed over ranks (collective)."""
        return self._wall_loads("segment", "ellseg", "phseg")

    def point_forces(self):
        """Force ON each boundary point, (n_points, 3), summed over ranks (collective)."""
        return self._wall_loads("point", "ellpoint", "phpoint")

    def _wall_loads(self, kind, *shaped_kinds):
        """loads() of a wall kind and (with non-spheres, the same on every rank) its
        non-sphere kinds."""
        loads = self.interactions[kind].loads()
        if self.shapes:
            for shaped in shaped_kinds:
                loads = loads + self.interactions[shaped].loads()
        return loads

    def mesh_wall_forces(self):
        """Force and moment ON each mesh wall, {"force": (n_walls, 3), "moment":
        (n_walls, 3)}: minus the sums of its contacts' forces on the particles and of
        their moments about the wall's reference point W_r (seed 004). Collective; the
        contact rows of all ranks are summed in key order, so the result has the same
        bits on any number of ranks."""
        loads = self.interactions["mesh"].loads()
        if self.shapes:             # the same on every rank: both collective or neither
            for name in ("ellmesh", "phmesh"):
                more = self.interactions[name].loads()
                loads = {k: loads[k] + more[k] for k in loads}
        return loads

    def global_sum(self, value):
        """Sum over ranks of a number or array computed on each rank from what it owns
        (collective), e.g. sim.global_sum(p["mass"][p["position"][:, 2] < 0].sum())."""
        return self.collective.sum(np.array(value, dtype=float, ndmin=1)).reshape(
            np.shape(value))[()]

    def energy(self):
        """Kinetic, rotational and gravitational potential energy at t (collective;
        pdem.diagnostics.energy); with track_energy, the energy balance instead
        (pdem.energy, docs/energy.md)."""
        if self.energy_tracker:
            return self.energy_tracker.totals(self)
        return diagnostics.energy(self)

    @property
    def track_energy(self):
        """Energy tracking on or off (docs/energy.md): sim.energy() then gives the
        energy balance. Set on every rank alike."""
        return self.energy_tracker.on

    @track_energy.setter
    def track_energy(self, on):
        energy_balance.switch(self, on)

    def stress(self, region=None, volume=None, kinetic=True):
        """Love-Weber stress tensor (3, 3), tension positive, of the particles in
        `region` (None: all) over `volume` (default: the domain's, or the region's);
        kinetic: include -sum m v' v' / V. Collective (pdem.analysis.stress)."""
        return analysis.stress(self, region, volume, kinetic)

    def particle_stress(self, gather=False):
        """Per owned particle, sorted by id: {"id", "stress" (n, 3, 3): sum over its
        contacts of (x_c - x) (x) f / particle volume, "coordination": number of
        particle contacts}; gather=True: all particles on every rank (collective)."""
        return analysis.particle_stress(self, gather)

    def fabric(self):
        """{"tensor": sum n (x) n / N_c over particle contacts, "contacts": N_c,
        "coordination": 2 N_c / N_particles} (collective)."""
        return analysis.fabric(self)

    def timer_stats(self):
        """Seconds per phase over ranks: {phase: (min, mean, max)} (collective)."""
        return diagnostics.timer_stats(self)

    def shape_stats(self):
        """Common-normal solves of the ellipsoid pairs so far, over ranks (collective):
        {"contacts": contact-steps solved (pairs found in contact, summed over steps),
        "iterations_mean": Newton/LM iterations per contact per step, "iterations_max"}.
        A pair crossing ranks is counted on each rank that computes it."""
        s = self.interactions["ellpair"].stats
        n, total = self.collective.sum(s[:2].copy())
        most = self.collective.max(s[2:3].copy())[0]
        return {"contacts": int(n), "iterations_mean": float(total / n) if n else 0.0,
                "iterations_max": int(most)}

    def comm_stats(self):
        """Per rank (list indexed by rank; collective): owned particles, ghosts, and bytes
        this rank sends per step between rebuilds (ghost refresh), from the last build."""
        return diagnostics.comm_stats(self)

    @property
    def n_contacts(self):
        """Number of active contacts of every kind on all ranks (collective)."""
        local = sum(k.n_active() for k in self.interactions.values() if k.contact)
        return int(self.collective.sum(np.array([local], np.int64))[0])

    @property
    def n_particles(self):
        """Number of particles on all ranks (collective)."""
        return int(self.collective.sum(np.array([self.store.n_own], np.int64))[0])

    @property
    def n_local(self):
        """Number of particles this rank owns."""
        return self.store.n_own
