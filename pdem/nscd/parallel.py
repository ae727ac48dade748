"""NSCD on many MPI ranks: the GrainProblem step over a Cartesian decomposition.

Every rank runs the same script (SPMD): scene calls (add_grains with the full arrays,
segments, disks, planes, meshes) are made on all ranks; every rank holds every boundary
(add_mesh: the whole mesh) and keeps the grains it owns,
whose global id is their position in the order of addition. A step is
    v += g dt (owned)
    ghosts: copies of the grains within 2 r_max + alert of each face (pdem.parallel
            GhostExchange, six swaps), ids and masses included
    detect: pairs with at least one owned grain, boundary contacts (mesh facets
            included) of owned grains, ordered by (id_i, kind, id_j) exactly as on one rank
    solve:  sweeps over this rank's contacts updating owned grains only; after every
            sweep the ghosts' velocities are refreshed (the recorded swaps) and one
            Allreduce(MAX) of the largest correction decides convergence for all ranks
    x += v dt (owned); grains that left the subdomain move to their new owner.
Jacobi: a contact between two ranks is computed on both from identical copies, and each
grain sums its increments in ascending contact order: the same bits on any number of
ranks (and threads) as on one. NLGS becomes block Gauss-Seidel: each contact is solved once,
by the owner of its grain i, Gauss-Seidel within the rank (local ghost copies
included); the increments given to ghosts are summed and sent back to their owners at
the end of the sweep (reverse of the ghost swaps), then the ghosts are refreshed:
Jacobi between ranks, one impulse per contact on both grains (momentum is kept). On
one rank it is the serial NLGS. Non-periodic boxes only.
"""
import numpy as np
from mpi4py import MPI

from .. import validate
from ..domain import Domain
from ..errors import InputError
from ..parallel.decomposition import Decomposition
from ..parallel.exchange import alltoallv_records, pack, record_dtype, unpack
from ..parallel.ghosts import GhostExchange
from .problem import GrainProblem
from .solve import exchange_ghost_velocities

PER_GRAIN = ("x", "v", "omega", "r", "m", "inertia")


class ParallelGrainProblem(GrainProblem):
    """GrainProblem on the ranks of `comm` (default MPI.COMM_WORLD) over the box
    [lo, hi) (dim components), cut into dims ranks per axis (default
    MPI.Compute_dims). Other arguments as GrainProblem. Between steps, x, v, omega, ...
    hold the owned grains (global ids in `ids`); `gather()` returns the whole state.
    `contacts` keeps the last step's list, whose i and j are rows of that step's owned +
    ghost arrays (ghost rows are dropped at the end of the step). detect_contacts and
    the solve_* methods are the stages of `step` (they need its ghosts): call step."""

    def __init__(self, lo, hi, dim=2, comm=None, dims=None, **kw):
        super().__init__(dim=dim, **kw)
        self.domain = Domain(lo, hi, dim=dim)
        self.dec = Decomposition(MPI.COMM_WORLD if comm is None else comm, self.domain, dims)
        self.comm = self.dec.cart
        self.rank = self.comm.Get_rank()
        self.ids = np.zeros(0, np.int64)
        self.n_total = 0
        self.r_max = 0.0
        self._own = None            # owned rows during a step (others are ghosts)
        self.received = 0           # grains received from other ranks, all steps
        self.ghosts = GhostExchange(self.dec)

    @property
    def n_owned(self):
        """Grains this rank owns (rows [0, n_owned) of x, v, ...)."""
        return self._n_owned()

    # ------------------------------------------------------------ hooks
    def _n_owned(self):
        return self.n if self._own is None else self._own

    def _global_ids(self):
        return self.ids

    def _any_contacts(self, m):
        return self.comm.allreduce(int(m), op=MPI.SUM) > 0

    def _end_sweep(self, res, ghost_dv, ghost_dw):
        exchange_ghost_velocities(self.ghosts, self.v, self.omega.reshape(self.n, self._nw),
                                  self._own, ghost_dv, ghost_dw)
        return self.comm.allreduce(float(res), op=MPI.MAX)

    # ------------------------------------------------------------ scene
    def _pos3(self, x):
        return x if self.dim == 3 else np.column_stack([x, np.zeros(len(x))])

    def add_grains(self, x, r, density=None, mass=None, v=None):
        """Same arguments on every rank (all grains); each rank keeps those it owns.
        Returns the global ids of the new grains."""
        first = self.n
        super().add_grains(x, r, density=density, mass=mass, v=v)
        new = self.x[first:]
        n_new = len(new)
        ids = self.n_total + np.arange(n_new, dtype=np.int64)
        self.r_max = max(self.r_max, float(np.max(self.r[first:])) if n_new else 0.0)
        keep = np.concatenate([np.ones(first, bool),
                               self.dec.owner(self._pos3(new)) == self.rank])
        self.ids = np.concatenate([self.ids, ids])[keep]
        for name in PER_GRAIN + ("orientation",):
            setattr(self, name, np.ascontiguousarray(getattr(self, name)[keep]))
        self.n_total += n_new
        return ids

    # ------------------------------------------------------------ step
    def step(self, dt, tol, alert, solver="nlgs", itmax=1000):
        """One NSCD step on all ranks (collective). Returns the number of sweeps (the
        same on every rank)."""
        self._check_solve(tol, dt, itmax)
        alert = validate.positive("alert", alert, allow_zero=True)
        if solver not in ("nlgs", "jacobi"):
            raise InputError("solver must be one of ('nlgs', 'jacobi'), got %r" % (solver,))
        self._grains()
        cutoff = 2.0 * self.r_max + alert
        self.dec.check_thickness(cutoff)
        self.v += self.gravity * dt
        self._build_ghosts(cutoff)
        try:
            self.detect_contacts(alert)
            if solver == "nlgs":
                it = self.solve_contacts_nlgs(tol, dt, itmax)
            else:
                it = self.solve_contacts_jacobi(tol, dt, itmax)
        finally:
            self._drop_ghosts()
        self.x += self.v * dt
        self._rotate(dt)
        self.time += dt
        self._migrate()
        return it

    def _fields(self):
        n = self.n
        return {"id": self.ids, "pos": self._pos3(self.x), "image": np.zeros((n, 3), np.int32),
                "x": self.x, "v": self.v, "omega": self.omega.reshape(n, self._nw),
                "r": self.r, "m": self.m, "inertia": self.inertia}

    def _build_ghosts(self, cutoff):
        own = self.n
        f = self.ghosts.build(self._fields(), cutoff)
        self._orientation_own = self.orientation
        self.ids = f["id"]
        for name in PER_GRAIN:
            a = np.ascontiguousarray(f[name])
            setattr(self, name, a.reshape(-1) if (name == "omega" and self.dim == 2) else a)
        self._own = own

    def _drop_ghosts(self):
        own, self._own = self._own, None
        self.ids = self.ids[:own].copy()
        for name in PER_GRAIN:
            setattr(self, name, getattr(self, name)[:own].copy())
        self.orientation = self._orientation_own

    def _migrate(self):
        """Owned grains outside this subdomain go to their owner (positions are kept
        as they are; grains outside the box belong to the edge ranks)."""
        dest = self.dec.owner(self._pos3(self.x))
        fields = {"id": self.ids, "x": self.x, "v": self.v,
                  "omega": self.omega.reshape(self.n, self._nw), "r": self.r, "m": self.m,
                  "inertia": self.inertia,
                  "orientation": self.orientation.reshape(self.n, 1 if self.dim == 2 else 4)}
        leaving = dest != self.rank
        got = unpack(alltoallv_records(self.comm, pack(fields, record_dtype(fields),
                                                       np.flatnonzero(leaving)),
                                       dest[leaving]))
        self.received += len(got["id"])
        stay = ~leaving
        merged = {k: np.concatenate([v[stay], got[k].astype(v.dtype)]) for k, v in fields.items()}
        order = np.argsort(merged["id"], kind="stable")
        self.ids = merged["id"][order]
        for name in PER_GRAIN + ("orientation",):
            a = np.ascontiguousarray(merged[name][order])
            if self.dim == 2 and name in ("omega", "orientation"):
                a = a.reshape(-1)
            setattr(self, name, a)

    # ------------------------------------------------------------ output
    def gather(self):
        """The state of every grain, ordered by id, on every rank (collective): dict of
        x, v, omega, r, m, orientation."""
        n = self.n
        counts = np.array(self.comm.allgather(n), np.int64)
        out = {"id": self._allgatherv(self.ids.astype(np.float64), counts).astype(np.int64)}
        for name in ("x", "v", "omega", "r", "m", "orientation"):
            a = getattr(self, name)
            full = self._allgatherv(a.reshape((n,) + a.shape[1:]), counts)
            out[name] = full
        order = np.argsort(out["id"], kind="stable")
        return {k: v[order] for k, v in out.items()}

    def _allgatherv(self, a, counts):
        a = np.ascontiguousarray(a, dtype=np.float64)
        width = int(np.prod(a.shape[1:])) if a.ndim > 1 else 1
        out = np.empty((int(counts.sum()),) + a.shape[1:])
        sizes = counts * width
        if width == 0:
            return out
        offsets = np.zeros_like(sizes)
        np.cumsum(sizes[:-1], out=offsets[1:])
        self.comm.Allgatherv(a, [out, (sizes, offsets), MPI.DOUBLE])
        return out
