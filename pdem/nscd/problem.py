"""GrainProblem: non-smooth contact dynamics of disks (2D) or spheres (3D) in one process
(seed 003, "An hourglass").

A time step is (`GrainProblem.step`)
    v += g dt;  detect_contacts(alert);  solve (NLGS or Jacobi);  x += v dt, rotations too
Velocities are those at the end of the step (implicit Euler at the velocity level).

Conventions (documented in pyx/nscd.pyx, which holds the hot loops):
  * contact c joins grain i = contacts["i"][c] and body j = contacts["j"][c] of kind
    contacts["kind"][c]: 0 grain, 1 boundary segment, 2 boundary disk, 3 plane,
    4 mesh facet (3D, `add_mesh`; j is the global facet index, see `mesh_facet_offset`);
  * the normal n points from j to i (from the wall into the grain): v_n = (v_i - v_j).n
    and a positive correction pushes i along +n, exactly as in the seed;
  * gap d = surface-to-surface distance (negative when overlapping); a pair is a
    potential contact when d < alert;
  * contacts are ordered by (i, kind, j), with i < j for two grains; NLGS solves them
    in that order, Jacobi sums each grain's increments in that order;
  * impulses: contacts["impulse_n"] (P_n >= 0) and contacts["impulse_t"] (tangential,
    a vector of dim components), the impulse on i (on j it is the opposite).

With friction = 0 and restitution = 0 and the default normal rule ("seed") a sweep
applies seed 003's formulas bit for bit: dv_n = max(0, -v_n - max(0, d)/dt),
v_i += dv_n / (W_nn m_i) n, v_j -= dv_n / (W_nn m_j) n, W_nn = (m_i + m_j)/(m_i m_j)
(1/m_i against a boundary). normal_rule="projected" keeps the accumulated impulse
P_n >= 0 instead of each increment (the classical NSCD projection, which may release
an impulse given in an earlier sweep): both solvers then converge to the unique
frictionless solution. Friction: Coulomb, P_t projected on |P_t| <= mu P_n, with the
grains' rotations. Restitution (Newton): a contact approaching at the start of the
solve (u_n^- < 0) that would close within the step (d + u_n^- dt < 0) aims at
u_n^+ = -e u_n^- (Moreau-Jean; e = 0 keeps the seed's -max(0, d)/dt).

Rotations are free (I = m r^2 / 2 for disks, 2 m r^2 / 5 for spheres); set
`inertia` to inf for grains that must not turn.

Mesh walls (3D): `add_mesh` adds the facets of a triangle mesh (pdem.Mesh, or an STL,
OBJ or Gmsh file) as fixed boundaries. Grain i and facet f are a potential contact when
|x_i - q| - r_i < alert, q the closest point of the triangle to the centre; the normal
is (x_i - q)/|x_i - q| (from the facet into the grain), exactly the facet normal on the
grain's side when q is inside the face (or the centre lies on the facet), and the gap
|x_i - q| - r_i. A grain on a side of the facet flagged inactive (Mesh.inactive_front:
n_f.(x - V0) >= 0, inactive_back: < 0) does not see it. Each facet within reach is its
own contact, solved like a plane (infinite mass), except a contact at an edge or vertex
of its facet that a nearer facet of the same mesh holds (hidden rim; see
pdem.nscd.facet_contacts).
"""
import math
import os

import numpy as np

from .. import validate
from .._kernels import facets as _fk
from .._kernels import nscd as _k
from ..contact.mesh import Mesh
from ..errors import InputError, SimulationError
from ..threads import thread_count
from .facet_contacts import facet_contacts
from .solve import ContactSolve, ConvergenceWarning  # noqa: F401 (part of the API)

SOLVERS = ("nlgs", "jacobi")
NORMAL_RULES = ("seed", "projected")
KINDS = ("grain", "segment", "disk", "plane", "facet")


class GrainProblem:
    """Grains (disks for dim=2, spheres for dim=3), fixed boundaries and their potential
    contacts; see the module docstring for the conventions.

    gravity: dim-vector (default (0, -9.81) in 2D, (0, 0, -9.81) in 3D); friction: Coulomb
    coefficient mu >= 0; restitution: Newton coefficient 0 <= e <= 1; threads: OpenMP
    threads of the kernels (default OMP_NUM_THREADS, else 1; results do not depend on
    it); normal_rule: "seed" (seed 003: every normal correction >= 0) or "projected"
    (accumulated normal impulse >= 0); relaxation: factor 0 < omega <= 1 on every Jacobi
    correction, default (None) 1 for the seed rule without friction (the seed's Jacobi,
    which is monotone) and 0.5 otherwise: the projected rule and friction make the
    unrelaxed Jacobi iteration diverge on packings where a grain has several contacts;
    overlap_correction: 0 <= beta <= 1, the fraction of an existing overlap removed in a
    step (target -beta d/dt for d < 0). The seed's beta = 0 never corrects overlaps, so
    the errors left by the tolerance (up to about tol per contact and step) add up."""

    def __init__(self, dim=2, gravity=None, friction=0.0, restitution=0.0, threads=None,
                 normal_rule="seed", relaxation=None, overlap_correction=0.0):
        if dim not in (2, 3):
            raise InputError("dim must be 2 or 3, got %r" % (dim,))
        self.dim = dim
        if gravity is None:
            gravity = (0.0, -9.81) if dim == 2 else (0.0, 0.0, -9.81)
        self.gravity = validate.vectors("gravity", gravity, dim, 1)[0]
        self.friction = validate.positive("friction", friction, allow_zero=True)
        self.restitution = validate.positive("restitution", restitution, allow_zero=True)
        if self.restitution > 1.0:
            raise InputError("restitution must be in [0, 1], got %r" % (restitution,))
        if normal_rule not in NORMAL_RULES:
            raise InputError("normal_rule must be one of %s, got %r" % (NORMAL_RULES, normal_rule))
        self.normal_rule = normal_rule
        if relaxation is not None:
            relaxation = validate.positive("relaxation", relaxation)
            if relaxation > 1.0:
                raise InputError("relaxation must be in (0, 1], got %r" % (relaxation,))
        self.relaxation = relaxation
        self.overlap_correction = validate.positive("overlap_correction", overlap_correction,
                                            allow_zero=True)
        if self.overlap_correction > 1.0:
            raise InputError("overlap_correction must be in [0, 1], got %r"
                             % (overlap_correction,))
        if threads is not None and (not isinstance(threads, (int, np.integer)) or threads < 1):
            raise InputError("threads must be a positive integer, got %r" % (threads,))
        self.threads = thread_count(threads)
        nw = 1 if dim == 2 else 3
        self.x = np.zeros((0, dim))
        self.v = np.zeros((0, dim))
        self.r = np.zeros(0)
        self.m = np.zeros(0)
        self.inertia = np.zeros(0)
        self.omega = np.zeros(0) if dim == 2 else np.zeros((0, 3))
        # orientation: angle (2D) or unit quaternion (w, x, y, z) (3D)
        self.orientation = np.zeros(0) if dim == 2 else np.zeros((0, 4))
        self.segments = np.zeros((0, 2, dim))
        self.disks = np.zeros((0, dim))
        self.plane_points = np.zeros((0, dim))
        self.plane_normals = np.zeros((0, dim))
        # mesh walls (3D): the meshes, and their facets concatenated (global facet
        # index k = mesh_facet_offset[w] + local index in meshes[w])
        self.meshes = []
        self.mesh_facet_offset = np.zeros(1, np.int64)
        self.mesh_vertices = np.zeros((0, 3))
        self.mesh_facets = np.zeros((0, 3), np.int64)
        self.mesh_normals = np.zeros((0, 3))
        self.time = 0.0
        self.iterations = 0          # sweeps of the last solve
        self.residual = 0.0          # largest velocity correction of its last sweep
        self._nw = nw
        self._set_contacts(np.zeros(0, np.int8), np.zeros(0, np.int32), np.zeros(0, np.int32),
                           np.zeros((0, 3)), np.zeros(0))

    # ------------------------------------------------------------ scene
    @property
    def n(self):
        return len(self.r)

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
        k = 0.5 if self.dim == 2 else 0.4
        self.x = np.concatenate([self.x, x])
        self.v = np.concatenate([self.v, v])
        self.r = np.concatenate([self.r, r])
        self.m = np.concatenate([self.m, m])
        self.inertia = np.concatenate([self.inertia, k * m * r ** 2])
        if self.dim == 2:
            self.omega = np.concatenate([self.omega, np.zeros(n)])
            self.orientation = np.concatenate([self.orientation, np.zeros(n)])
        else:
            self.omega = np.concatenate([self.omega, np.zeros((n, 3))])
            q = np.zeros((n, 4))
            q[:, 0] = 1.0
            self.orientation = np.concatenate([self.orientation, q])
        return np.arange(first, first + n)

    def add_segments(self, x0, x1, end_disks=True):
        """Boundary segments from x0[k] to x1[k] ((k, dim) each). end_disks: add the
        seed's zero-radius boundary disks at their ends, once per distinct point
        (points already in `disks` are not repeated)."""
        x0 = validate.vectors("x0", x0, self.dim)
        x1 = validate.vectors("x1", x1, self.dim, len(x0))
        length = np.linalg.norm(x1 - x0, axis=1)
        bad = np.flatnonzero(length == 0.0)
        if len(bad):
            raise InputError("segment %d has zero length: x0[%d] = x1[%d] = %r"
                             % (bad[0], bad[0], bad[0], x0[bad[0]].tolist()))
        self.segments = np.concatenate([self.segments, np.stack([x0, x1], axis=1)])
        if end_disks:
            ends = np.stack([x0, x1], axis=1).reshape(-1, self.dim)
            self._add_points(ends)

    def _add_points(self, pts):
        _, first = np.unique(pts, axis=0, return_index=True)
        pts = pts[np.sort(first)]                       # first appearance order
        if len(self.disks):
            known = {tuple(p) for p in self.disks.tolist()}
            pts = pts[[tuple(p) not in known for p in pts.tolist()]]
        self.disks = np.concatenate([self.disks, pts.reshape(-1, self.dim)])

    def add_disks(self, centres):
        """Boundary disks: radius 0, infinite mass, fixed."""
        c = validate.vectors("centres", centres, self.dim)
        self.disks = np.concatenate([self.disks, c])

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

    def add_mesh(self, mesh):
        """Faceted wall (3D only): `mesh` is a pdem.Mesh or the path of an STL, OBJ or
        Gmsh .msh file (pdem.Mesh.read). Its facets are fixed boundaries with infinite
        mass; the geometry is copied now (later changes of mesh.vertices are not seen),
        the inactive sides (mesh.set_inactive) are read at every detection. Several
        meshes may be added. Returns the global indices of the new facets (the j of
        their contacts)."""
        if self.dim != 3:
            raise InputError("add_mesh: mesh walls need a 3D problem (dim=3), got dim=%d"
                             % self.dim)
        if isinstance(mesh, (str, bytes, os.PathLike)):
            mesh = Mesh.read(os.fsdecode(mesh))
        if not isinstance(mesh, Mesh):
            raise InputError("add_mesh: mesh must be a pdem.Mesh or the path of an STL, OBJ "
                             "or Gmsh .msh file, got %s" % type(mesh).__name__)
        first = len(self.mesh_facets)
        self.mesh_facets = np.ascontiguousarray(np.concatenate(
            [self.mesh_facets, mesh.facets.astype(np.int64) + len(self.mesh_vertices)]))
        self.mesh_vertices = np.ascontiguousarray(np.concatenate(
            [self.mesh_vertices, np.asarray(mesh.vertices, dtype=float)]))
        self.mesh_normals = np.ascontiguousarray(np.concatenate(
            [self.mesh_normals, np.asarray(mesh.normals, dtype=float)]))
        self.meshes.append(mesh)
        self.mesh_facet_offset = np.append(self.mesh_facet_offset, len(self.mesh_facets))
        return np.arange(first, len(self.mesh_facets))

    # ------------------------------------------------------------ state checks
    def _grains(self):
        """The grain arrays as the kernels need them (converted in place if a script
        replaced one by another dtype or layout); checks shapes."""
        n, dim = self.n, self.dim
        for name, shape in (("x", (n, dim)), ("v", (n, dim)), ("m", (n,)),
                            ("inertia", (n,)),
                            ("omega", (n,) if dim == 2 else (n, 3))):
            a = getattr(self, name)
            if not (isinstance(a, np.ndarray) and a.dtype == np.float64
                    and a.flags.c_contiguous):
                a = np.ascontiguousarray(a, dtype=float)
                setattr(self, name, a)
            if a.shape != shape:
                raise InputError("%s must have shape %s, got %s" % (name, shape, a.shape))
        self.r = np.ascontiguousarray(self.r, dtype=float)
        if self.r.shape != (n,):
            raise InputError("r must have shape (%d,), got %s" % (n, self.r.shape))
        return self.omega.reshape(n, self._nw)

    def _set_contacts(self, kind, ci, cj, normal, gap):
        m = len(kind)
        self._contacts = ContactSolve(kind, ci, cj, normal, gap, np.full(m, self.friction),
                                      np.full(m, self.restitution))
        c, d = self._contacts, self.dim
        self.contacts = {"kind": c.kind, "i": c.ci, "j": c.cj, "normal": c.normal[:, :d],
                         "gap": c.gap, "impulse_n": c.pn, "impulse_t": c.pt[:, :d]}

    # ------------------------------------------------------------ detection
    def detect_contacts(self, alert):
        """Clear the contact list, then list every potential contact: grain pairs,
        grain-segment (foot of the perpendicular within the segment), grain-disk,
        grain-plane and grain-facet (closest point of the triangle) whose
        surface-to-surface distance is below `alert`. Returns the number of contacts."""
        alert = validate.positive("alert", alert, allow_zero=True)
        self._grains()
        ids = self._global_ids()
        bad = np.flatnonzero(~np.all(np.isfinite(self.x), axis=1))
        if len(bad):
            raise SimulationError("time %g: x[%d] is not finite: %r (a diverging solve? see "
                                  "the ConvergenceWarnings)" % (self.time, bad[0],
                                                                self.x[bad[0]].tolist()))
        order = np.argsort(ids, kind="stable")
        seg = np.ascontiguousarray(self.segments.reshape(len(self.segments), 2 * self.dim))
        out = _k.detect(self.x, self.r, ids, order, self._n_owned(), alert, seg,
                        np.ascontiguousarray(self.disks), np.ascontiguousarray(self.plane_points),
                        np.ascontiguousarray(self.plane_normals), self.threads)
        if len(self.mesh_facets) and self.n:
            out = self._merge(out, self._facet_contacts(alert, ids), ids)
        self._set_contacts(*out)
        return len(out[0])

    def _facet_contacts(self, alert, ids):
        """Potential contacts (kind 4) of the owned grains with the mesh facets, ordered
        by (id_i, facet): (kind, i, j, normal, gap) as _k.detect returns them."""
        n_own = self._n_owned()
        if n_own == 0:
            gi = gf = np.zeros(0, np.int32)
        else:
            # candidates with a slightly larger reach, then the exact test
            skin = alert + 1e-9 * (alert + float(self.r[:n_own].max()))
            gi, gf = _fk.facet_candidates(self.x, self.r, n_own, self.mesh_vertices,
                                          self.mesh_facets,
                                          np.arange(len(self.mesh_facets), dtype=np.int32),
                                          skin)
        side_off = np.concatenate([m.inactive_front.astype(np.int8)
                                   | (m.inactive_back.astype(np.int8) << 1)
                                   for m in self.meshes])
        k, normal, gap, _ = facet_contacts(self.x, self.r, gi, gf, self.mesh_vertices,
                                           self.mesh_facets, self.mesh_normals, side_off,
                                           alert, self.threads)
        gi, gf = gi[k], gf[k]
        order = np.lexsort((gf, ids[gi]))
        return (np.full(len(k), 4, np.int8), np.ascontiguousarray(gi[order]),
                np.ascontiguousarray(gf[order]), np.ascontiguousarray(normal[order]),
                np.ascontiguousarray(gap[order]))

    @staticmethod
    def _merge(a, b, ids):
        """The contact lists a and b, each ordered by (id_i, kind, j), merged in that
        order (b's kind is larger than a's: after a's contacts of the same grain)."""
        if len(b[0]) == 0:
            return a
        cat = [np.concatenate([u, w]) for u, w in zip(a, b)]
        order = np.lexsort((cat[0], ids[cat[1]]))           # stable: keeps each list's order
        return tuple(np.ascontiguousarray(c[order]) for c in cat)

    # ------------------------------------------------------------ hooks
    # pdem.nscd.parallel overrides these: rows [0, n_owned) are owned grains, the
    # others ghost copies; one process owns every grain and ids are row numbers.
    def _n_owned(self):
        return self.n

    def _global_ids(self):
        return np.arange(self.n, dtype=np.int64)

    def _any_contacts(self, m):
        return m > 0

    def _end_sweep(self, res, ghost_dv, ghost_dw):
        """After each sweep: hand the increments NLGS gave to ghosts (ghost_dv, ghost_dw;
        None for Jacobi) to their owners, make ghost velocities current, return the
        global residual."""
        return res

    # ------------------------------------------------------------ solvers
    def _check_solve(self, tol, dt, itmax):
        tol = validate.positive("tol", tol)
        dt = validate.positive("dt", dt)
        if isinstance(itmax, bool) or not isinstance(itmax, (int, np.integer)) or itmax < 1:
            raise InputError("itmax must be an integer >= 1, got %r" % (itmax,))
        return tol, dt, int(itmax)

    def _solve(self, solver, tol, dt, itmax):
        tol, dt, itmax = self._check_solve(tol, dt, itmax)
        w = self._grains()
        with np.errstate(divide="ignore"):
            inv_inertia = np.ascontiguousarray(1.0 / self.inertia)
        projected = self.normal_rule == "projected"
        relax = self.relaxation
        if relax is None:
            relax = 1.0 if (not projected and self.friction == 0.0) else 0.5
        self.iterations, self.residual = self._contacts.solve(
            solver, self.v, w, self.r, self.m, inv_inertia, dt, tol, itmax, self._n_owned(),
            beta=self.overlap_correction, projected=projected, relax=relax,
            threads=self.threads, any_contacts=self._any_contacts(len(self._contacts)),
            end_sweep=self._end_sweep)
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

    # ------------------------------------------------------------ time step
    def step(self, dt, tol, alert, solver="nlgs", itmax=1000):
        """v += g dt; detect_contacts(alert); solve; x += v dt (and orientations).
        Returns the solver's number of sweeps."""
        if solver not in SOLVERS:
            raise InputError("solver must be one of %s, got %r" % (SOLVERS, solver))
        tol, dt, itmax = self._check_solve(tol, dt, itmax)
        validate.positive("alert", alert, allow_zero=True)
        self._grains()
        self.v += self.gravity * dt
        self.detect_contacts(alert)
        if solver == "nlgs":
            it = self.solve_contacts_nlgs(tol, dt, itmax)
        else:
            it = self.solve_contacts_jacobi(tol, dt, itmax)
        self.x += self.v * dt
        self._rotate(dt)
        self.time += dt
        return it

    def _rotate(self, dt):
        if self.dim == 2:
            self.orientation += self.omega * dt
            return
        moving = np.flatnonzero(np.any(self.omega != 0.0, axis=1))
        if not len(moving):
            return
        rot = self.omega[moving] * dt
        ang = np.linalg.norm(rot, axis=1)
        half = 0.5 * ang
        s = np.where(ang > 0.0, np.sin(half) / np.where(ang > 0.0, ang, 1.0), 0.5)
        a = np.column_stack([np.cos(half), rot * s[:, None]])      # (w, x, y, z)
        q = self.orientation[moving]
        out = np.empty_like(q)
        out[:, 0] = a[:, 0] * q[:, 0] - np.einsum("ij,ij->i", a[:, 1:], q[:, 1:])
        out[:, 1:] = (a[:, :1] * q[:, 1:] + q[:, :1] * a[:, 1:]
                      + np.cross(a[:, 1:], q[:, 1:]))
        out /= np.linalg.norm(out, axis=1)[:, None]
        self.orientation[moving] = out
