"""GrainProblem: seed 003's course API ("An hourglass": grain_problem, detect_contacts,
solve_contacts_nlgs, solve_contacts_jacobi) over pdem.Simulation with the NSCD scheme,
in one process.

The grains' state is plain numpy arrays in the order of addition (x, v, r, m,
inertia, omega; writable, as a course script expects), and the boundaries are the
seed's segments and disks (radius 0), planes and mesh facets (3D). Every call hands
the state to a Simulation (pdem.nscd.scheme.NSCD) and takes the result back, so the
contacts, the solvers and the drift are the engine's own code:
  detect_contacts(alert)   Simulation.rebuild + NSCD.detect
  solve_contacts_*(...)    NSCD.solve
  step(dt, tol, alert)     NSCD.free_fall (v += g dt), detect, solve, then the drift
                           kernel (x += v dt, orientations): the seed's order.

Conventions: contact c joins grain i = contacts["i"][c] and body j = contacts["j"][c]
of kind contacts["kind"][c]: 0 grain, 1 boundary segment, 2 boundary disk, 3 plane,
4 mesh facet (j: the global facet index, see `mesh_facet_offset`); the normal n points
from j to i (from the wall into the grain): v_n = (v_i - v_j).n; gap d = surface
distance (negative in overlap); contacts are ordered by (i, kind, j), i < j for two
grains; impulses["impulse_n"] (P_n >= 0) and ["impulse_t"] (a dim-vector) act on i.
The formulas (seed 003, with friction, restitution and rotations) are in pyx/nscd.pyx;
with friction = restitution = 0 and normal_rule="seed" a sweep is seed 003's
dv_n = max(0, -v_n - max(0, d)/dt), v_i += dv_n / (W m_i) n, v_j -= dv_n / (W m_j) n.
Boundary disks act on a grain only where its foot lies outside the span of every
segment ending at them (seed 003: they are useful where s_t < 0 or s_t > 1), so the
joint of two segments is no bump. Rotations are free (I = m r^2 / 2 for disks, 2 m r^2 / 5 for spheres); set `inertia`
to inf for grains that must not turn.
"""
import copy
import math
import os

import numpy as np
from mpi4py import MPI

from .. import validate
from .._kernels import integrate
from ..contact.mesh import Mesh
from ..domain import Domain
from ..errors import InputError, SimulationError
from ..simulation import Simulation
from ..threads import thread_count
from .scheme import NORMAL_RULES, NSCD, SOLVERS
from .solve import ConvergenceWarning  # noqa: F401 (part of the API)

KINDS = ("grain", "segment", "disk", "plane", "facet")
MATERIAL = "grains"


class GrainProblem:
    """Grains (disks for dim=2, spheres for dim=3), fixed boundaries and their potential
    contacts; see the module docstring for the conventions.

    gravity: dim-vector (default (0, -9.81) in 2D, (0, 0, -9.81) in 3D); friction: Coulomb
    coefficient mu >= 0; restitution: Newton coefficient 0 <= e <= 1; threads: OpenMP
    threads of the kernels (default OMP_NUM_THREADS, else 1; results do not depend on
    it); normal_rule: "seed" (every normal correction >= 0) or "projected" (accumulated
    normal impulse >= 0); relaxation: Jacobi factor in (0, 1] (default 1 for the seed
    rule without friction, else 0.5); overlap_correction: 0 <= beta <= 1, the fraction
    of an existing overlap removed in a step (the seed's beta = 0 never corrects one)."""

    def __init__(self, dim=2, gravity=None, friction=0.0, restitution=0.0, threads=None,
                 normal_rule="seed", relaxation=None, overlap_correction=0.0):
        if dim not in (2, 3):
            raise InputError("dim must be 2 or 3, got %r" % (dim,))
        self.dim = dim
        if gravity is None:
            gravity = (0.0, -9.81) if dim == 2 else (0.0, 0.0, -9.81)
        self.gravity = validate.vectors("gravity", gravity, dim, 1)[0]
        self._sim = None             # the Simulation, made again at the next detection
        self._changed = True         # after a change of the scene or of the material
        self.friction, self.restitution = friction, restitution
        if threads is not None and (not isinstance(threads, (int, np.integer)) or threads < 1):
            raise InputError("threads must be a positive integer, got %r" % (threads,))
        self.threads = thread_count(threads)
        self._scheme = NSCD(normal_rule=normal_rule, relaxation=relaxation,
                            overlap_correction=overlap_correction)
        self.x = np.zeros((0, dim))
        self.v = np.zeros((0, dim))
        self.r = np.zeros(0)
        self.m = np.zeros(0)
        self.inertia = np.zeros(0)
        self.omega = np.zeros(0) if dim == 2 else np.zeros((0, 3))
        self._orient = np.zeros((0, 4))             # unit quaternions (w, x, y, z)
        self.segments = np.zeros((0, 2, dim))
        self.disks = np.zeros((0, dim))
        self.plane_points = np.zeros((0, dim))
        self.plane_normals = np.zeros((0, dim))
        # mesh walls (3D): the meshes, and their facets concatenated (global facet
        # index k = mesh_facet_offset[w] + local index in meshes[w])
        self.meshes = []
        self._mesh_copies = []                      # the geometry as added (Simulation walls)
        self.mesh_facet_offset = np.zeros(1, np.int64)
        self.mesh_vertices = np.zeros((0, 3))
        self.mesh_facets = np.zeros((0, 3), np.int64)
        self.mesh_normals = np.zeros((0, 3))
        self.time = 0.0
        self.iterations = 0          # sweeps of the last solve
        self.residual = 0.0          # largest velocity correction of its last sweep
        self._solve_list = None
        self._set_contacts(None)

    # solver options: the NSCD scheme's (a script may change them between solves)
    normal_rule = property(lambda self: self._scheme.normal_rule,
                           lambda self, v: setattr(self._scheme, "normal_rule", v))
    relaxation = property(lambda self: self._scheme.relaxation,
                          lambda self, v: setattr(self._scheme, "relaxation", v))
    overlap_correction = property(lambda self: self._scheme.overlap_correction,
                                  lambda self, v: setattr(self._scheme, "overlap_correction", v))

    # the grains' material: read at the next detection
    @property
    def friction(self):
        return self._friction

    @friction.setter
    def friction(self, mu):
        self._friction = validate.positive("friction", mu, allow_zero=True)
        self._changed = True

    @property
    def restitution(self):
        return self._restitution

    @restitution.setter
    def restitution(self, e):
        self._restitution = validate.number("restitution", e, 0.0, 1.0, low_open=False)
        self._changed = True

    def __deepcopy__(self, memo):
        """An independent copy (a script's reference copy): the arrays copied, a new
        Simulation, the contact list detected again with the impulses copied."""
        new = GrainProblem.__new__(GrainProblem)
        skip = ("_sim", "_solve_list", "contacts", "_scheme")
        new.__dict__.update({k: copy.deepcopy(v, memo) for k, v in self.__dict__.items()
                             if k not in skip})
        new._scheme = NSCD(**self._scheme.options())
        new._sim, new._changed = None, True
        new._set_contacts(None)
        if self._solve_list is not None:
            new._detect(new._simulation(self._scheme.alert))
            for k in ("impulse_n", "impulse_t"):
                new.contacts[k][...] = self.contacts[k]
        return new

    # ------------------------------------------------------------ scene
    @property
    def n(self):
        return len(self.r)

    @property
    def orientation(self):
        """Angle about z (2D, in (-pi, pi]) or unit quaternion (w, x, y, z) (3D) per grain."""
        q = self._orient
        return 2.0 * np.arctan2(q[:, 3], q[:, 0]) if self.dim == 2 else q

    def add_grains(self, x, r, density=None, mass=None, v=None):
        """Add grains at x (n, dim) with radii r (scalar or (n,)); give density (mass per
        unit thickness pi r^2 rho in 2D, 4/3 pi r^3 rho in 3D) or mass, not both
        (neither: density 1). Returns the indices of the new grains."""
        x = validate.vectors("x", x, self.dim)
        n = len(x)
        r = validate.scalars("r", r, n)
        if density is not None and mass is not None:
            raise InputError("give density or mass, not both (density=%r, mass=%r)"
                             % (density, mass))
        if mass is None:
            rho = validate.scalars("density", 1.0 if density is None else density, n)
            mass = (math.pi * r ** 2 if self.dim == 2 else 4.0 / 3.0 * math.pi * r ** 3) * rho
        m = validate.scalars("mass", mass, n)
        v = np.zeros((n, self.dim)) if v is None else validate.vectors("v", v, self.dim, n)
        first = self.n
        self.x = np.concatenate([self.x, x])
        self.v = np.concatenate([self.v, v])
        self.r = np.concatenate([self.r, r])
        self.m = np.concatenate([self.m, m])
        self.inertia = np.concatenate([self.inertia, (0.5 if self.dim == 2 else 0.4) * m * r ** 2])
        self.omega = np.concatenate([self.omega, np.zeros(n if self.dim == 2 else (n, 3))])
        self._orient = np.concatenate([self._orient, np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))])
        self._changed = True
        return np.arange(first, first + n)

    def add_segments(self, x0, x1, end_disks=True):
        """Boundary segments from x0[k] to x1[k] ((k, dim) each). end_disks: add the
        seed's zero-radius boundary disks at their ends, once per distinct point
        (points already in `disks` are not repeated)."""
        x0 = validate.vectors("x0", x0, self.dim)
        x1 = validate.vectors("x1", x1, self.dim, len(x0))
        bad = np.flatnonzero(np.linalg.norm(x1 - x0, axis=1) == 0.0)
        if len(bad):
            raise InputError("segment %d has zero length: x0[%d] = x1[%d] = %r"
                             % (bad[0], bad[0], bad[0], x0[bad[0]].tolist()))
        self.segments = np.concatenate([self.segments, np.stack([x0, x1], axis=1)])
        if end_disks:
            ends = np.stack([x0, x1], axis=1).reshape(-1, self.dim)
            _, first = np.unique(ends, axis=0, return_index=True)
            ends = ends[np.sort(first)]                       # first appearance order
            known = {tuple(p) for p in self.disks.tolist()}
            self.add_disks(ends[[tuple(p) not in known for p in ends.tolist()]])
        self._changed = True

    def add_disks(self, centres):
        """Boundary disks: radius 0, infinite mass, fixed."""
        c = validate.vectors("centres", centres, self.dim) if len(centres) else \
            np.zeros((0, self.dim))
        self.disks = np.concatenate([self.disks, c])
        self._changed = True

    def add_planes(self, points, normals):
        """Infinite planes (lines in 2D) through points with normals pointing to the
        grains' side (normalized here); one-sided."""
        p = validate.vectors("points", points, self.dim)
        nv = validate.vectors("normals", normals, self.dim, len(p))
        length = np.linalg.norm(nv, axis=1)
        bad = np.flatnonzero(length == 0.0)
        if len(bad):
            raise InputError("normals[%d] is zero" % bad[0])
        self.plane_points = np.concatenate([self.plane_points, p])
        self.plane_normals = np.concatenate([self.plane_normals, nv / length[:, None]])
        self._changed = True

    def add_mesh(self, mesh):
        """Faceted wall (3D only): `mesh` is a pdem.Mesh or the path of an STL, OBJ or
        Gmsh .msh file (pdem.Mesh.read); fixed, infinite mass. Its geometry is copied
        now (mesh_vertices, mesh_facets, mesh_normals: all meshes concatenated), its
        inactive sides (mesh.set_inactive) are read at every detection. Returns the global indices of the new
        facets (the j of their contacts)."""
        if self.dim != 3:
            raise InputError("add_mesh: mesh walls need a 3D problem (dim=3), got dim=%d"
                             % self.dim)
        if isinstance(mesh, (str, bytes, os.PathLike)):
            mesh = Mesh.read(os.fsdecode(mesh))
        if not isinstance(mesh, Mesh):
            raise InputError("add_mesh: mesh must be a pdem.Mesh or the path of an STL, OBJ "
                             "or Gmsh .msh file, got %s" % type(mesh).__name__)
        first = len(self.mesh_facets)
        self.mesh_facets = np.concatenate([self.mesh_facets,
                                           mesh.facets.astype(np.int64) + len(self.mesh_vertices)])
        self.mesh_vertices = np.concatenate([self.mesh_vertices, mesh.vertices])
        self.mesh_normals = np.concatenate([self.mesh_normals, mesh.normals])
        self.meshes.append(mesh)
        self._mesh_copies.append(copy.deepcopy(mesh))
        self.mesh_facet_offset = np.append(self.mesh_facet_offset, len(self.mesh_facets))
        self._changed = True
        return np.arange(first, len(self.mesh_facets))

    # ------------------------------------------------------------ the Simulation
    def _grains(self):
        """The grain arrays as float64 C arrays (converted in place if a script replaced
        one by another dtype or layout); checks their shapes."""
        n, dim = self.n, self.dim
        for name, shape in (("x", (n, dim)), ("v", (n, dim)), ("r", (n,)), ("m", (n,)),
                            ("inertia", (n,)), ("omega", (n,) if dim == 2 else (n, 3))):
            a = np.ascontiguousarray(getattr(self, name), dtype=float)
            if a.shape != shape:
                raise InputError("%s must have shape %s, got %s" % (name, shape, a.shape))
            setattr(self, name, a)
        bad = np.flatnonzero(~np.all(np.isfinite(self.x), axis=1))
        if len(bad):
            raise SimulationError("time %g: x[%d] is not finite: %r (a diverging solve? see "
                                  "the ConvergenceWarnings)" % (self.time, bad[0],
                                                                self.x[bad[0]].tolist()))

    def _simulation(self, alert):
        """The Simulation holding the scene, with this problem's state (collective on
        COMM_SELF). Made again after a scene change or when a grain left its box."""
        self._grains()
        reach = float(self.r.max()) + alert if self.n else alert
        lo, hi = self.x.min(axis=0) - reach, self.x.max(axis=0) + reach
        sim = self._sim
        if self._changed or np.any(lo < sim.domain.lo[:self.dim]) or \
                np.any(hi >= sim.domain.hi[:self.dim]):
            sim = self._sim = self._new_simulation(lo, hi)
            self._changed = False
        self._give(sim)
        st, g = sim.store, sim.store.id[:sim.store.n]
        st.pos[:, :self.dim], st.radius[:] = self.x[g], self.r[g]
        st.orient[:] = self._orient[g]
        sim.scheme.alert = alert
        for mesh, added in zip(self.meshes, self._mesh_copies):
            added.inactive_front[...], added.inactive_back[...] = \
                mesh.inactive_front, mesh.inactive_back
        sim.mesh_walls.update_sides()
        return sim

    def _give(self, sim):
        """Velocities, masses and inertias into the store's rows (in its order)."""
        st, g = sim.store, sim.store.id[:sim.store.n]
        st.vel[:, :self.dim], st.mass[:], st.inertia[:] = self.v[g], self.m[g], self.inertia[g]
        if self.dim == 2:
            st.angvel[:, 2] = self.omega[g]
        else:
            st.angvel[:] = self.omega[g]

    def _new_simulation(self, lo, hi):
        """A Simulation over the grains' and walls' box, three times as wide (COMM_SELF)."""
        walls = [self.segments.reshape(-1, self.dim), self.disks, self.plane_points] + \
            [m.vertices[:, :self.dim] for m in self.meshes]
        pts = np.concatenate([lo[None], hi[None]] + walls)
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        pad = np.maximum(hi - lo, 1e-3 * max(float(np.max(hi - lo)), 1.0))
        g = np.zeros(3)
        g[:self.dim] = self.gravity
        sim = Simulation(Domain(lo - pad, hi + pad, dim=self.dim), 1.0, gravity=g,
                         comm=MPI.COMM_SELF, skin=1e-300, threads=self.threads,
                         check_timestep=False, balance=None, scheme=self._scheme)
        sim.material(MATERIAL, 1.0, friction=self.friction, restitution=self.restitution)
        x = np.zeros((self.n, 3))
        x[:, :self.dim] = self.x
        sim.add_spheres(x, self.r, MATERIAL, masses=self.m)
        # the seed's lists as they are (indices kept; material 0 is MATERIAL)
        sim.segments.add(_pad3(self.segments[:, 0]), _pad3(self.segments[:, 1]), 0)
        sim.points.add(_pad3(self.disks), _pad3(self.disks), 0)
        for p, nv in zip(self.plane_points, self.plane_normals):
            sim.add_plane(_pad3(p), _pad3(nv), MATERIAL)
        for mesh in self._mesh_copies:
            sim.add_mesh_wall(mesh, MATERIAL)
        return sim

    def _take(self, sim, names):
        """Copy the store's rows back into the grain arrays `names`."""
        st, dim = sim.store, self.dim
        g = st.id[:st.n]
        if "x" in names:
            self.x[g] = st.pos[:st.n, :dim]
            self._orient[g] = st.orient[:st.n]
        if "v" in names:
            self.v[g] = st.vel[:st.n, :dim]
            self.omega[g] = st.angvel[:st.n, 2] if dim == 2 else st.angvel[:st.n]

    def _set_contacts(self, solve):
        """contacts: the seed's list, in grain indices (from the Simulation's rows)."""
        self._solve_list = solve
        d = self.dim
        if solve is None:
            self.contacts = {"kind": np.zeros(0, np.int8), "i": np.zeros(0, np.int32),
                             "j": np.zeros(0, np.int32), "normal": np.zeros((0, d)),
                             "gap": np.zeros(0), "impulse_n": np.zeros(0),
                             "impulse_t": np.zeros((0, d))}
            return
        ids, pair = self._sim.store.id, solve.kind == 0
        j = solve.cj.copy()
        j[pair] = ids[j[pair]]
        self.contacts = {"kind": solve.kind, "i": ids[solve.ci].astype(np.int32), "j": j,
                         "normal": solve.normal[:, :d], "gap": solve.gap,
                         "impulse_n": solve.pn, "impulse_t": solve.pt[:, :d]}

    # ------------------------------------------------------------ seed 003's API
    def detect_contacts(self, alert):
        """Clear the contact list, then list every potential contact: grain pairs,
        grain-segment (foot of the perpendicular within the segment), grain-disk,
        grain-plane and grain-facet (closest point of the triangle) whose
        surface-to-surface distance is below `alert`. Returns the number of contacts."""
        alert = validate.positive("alert", alert, allow_zero=True)
        sim = self._simulation(alert)
        return self._detect(sim)

    def _detect(self, sim):
        sim.rebuild()
        solve, _ = sim.scheme.detect(sim)
        self._set_contacts(solve)
        return len(solve)

    @staticmethod
    def _check_solve(tol, dt, itmax):
        return (validate.positive("tol", tol), validate.positive("dt", dt),
                validate.integer("itmax", itmax))

    def _solve(self, solver, tol, dt, itmax, sim=None):
        tol, dt, itmax = self._check_solve(tol, dt, itmax)
        if sim is None:             # after detect_contacts: the script may have set v
            if self._solve_list is None:
                return 0
            sim = self._sim
            self._grains()
            self._give(sim)
        sim.dt, sim.scheme.solver, sim.scheme.tol, sim.scheme.itmax = dt, solver, tol, itmax
        self.iterations = sim.scheme.solve(sim, self._solve_list)
        self.residual = sim.scheme.residual
        self._take(sim, ("v",))
        return self.iterations

    def solve_contacts_nlgs(self, tol, dt, itmax=1000):
        """Non-linear Gauss-Seidel: contacts in list order, velocities updated after each
        one; sweeps until every velocity correction of a sweep is below tol/dt (or
        itmax sweeps: ConvergenceWarning). Returns the number of sweeps (0 without
        contacts)."""
        return self._solve("nlgs", tol, dt, itmax)

    def solve_contacts_jacobi(self, tol, dt, itmax=1000):
        """Jacobi: every contact of a sweep sees the velocities of the sweep's start; the
        increments are added per grain at the end of the sweep (ascending contact
        order: the same bits for any thread count). Same criterion as NLGS."""
        return self._solve("jacobi", tol, dt, itmax)

    def step(self, dt, tol, alert, solver="nlgs", itmax=1000):
        """v += g dt; detect_contacts(alert); solve; x += v dt (and orientations).
        Returns the solver's number of sweeps."""
        if solver not in SOLVERS:
            raise InputError("solver must be one of %s, got %r" % (SOLVERS, solver))
        tol, dt, itmax = self._check_solve(tol, dt, itmax)
        alert = validate.positive("alert", alert, allow_zero=True)
        sim = self._simulation(alert)
        sim.dt = dt
        sim.scheme.free_fall(sim)
        self._detect(sim)
        it = self._solve(solver, tol, dt, itmax, sim)
        st = sim.store
        integrate.drift(st.pos, st.vel, st.angvel, st.orient, st.pos, dt, st.n, sim.threads)
        self._take(sim, ("x",))
        self.time += dt
        return it


def _pad3(a):
    """Rows of 2 or 3 components as 3-vectors (z = 0)."""
    a = np.atleast_2d(np.asarray(a, float))
    return np.ascontiguousarray(np.column_stack([a, np.zeros((len(a), 3 - a.shape[1]))]))
