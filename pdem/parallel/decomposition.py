"""Spatial decomposition of the box over a Cartesian grid of MPI ranks.

Each axis d is cut into dims[d] slabs at positions cuts[d] (dims[d] + 1 values,
cuts[d][0] = box lo, cuts[d][-1] = box hi); rank (c0, c1, c2) of the grid owns the
particles whose position x satisfies cuts[d][c_d] <= x_d < cuts[d][c_d + 1]. The
cuts are global (every rank holds the same numbers), so the owner of any position
is known everywhere without messages. Load balancing moves the cuts ("shift"
balancing, as LAMMPS's `balance shift`): per axis, a global histogram of particle
coordinates places the cuts at equal-count quantiles, each slab staying at least
one ghost cutoff thick so that six ghost swaps reach every neighbor.
"""
import numpy as np
from mpi4py import MPI

from ..errors import InputError

HIST_BINS_PER_SLAB = 256


class Decomposition:
    """Cartesian grid of the ranks of `comm` over `domain`; dims=None lets
    MPI.Compute_dims choose (a 2D domain is never cut along z)."""

    def __init__(self, comm, domain, dims=None):
        size = comm.Get_size()
        if dims is None:
            fixed = [0, 0, 0] if domain.dim == 3 else [0, 0, 1]
            dims = MPI.Compute_dims(size, fixed)
        dims = [int(d) for d in dims]
        if len(dims) != 3 or min(dims) < 1 or int(np.prod(dims)) != size:
            raise InputError("dims must be 3 positive integers whose product is the number of "
                             "ranks %d, got %r" % (size, dims))
        if domain.dim == 2 and dims[2] != 1:
            raise InputError("dims[2] must be 1 for a 2D domain, got dims=%r" % (dims,))
        self.dims = dims
        self.domain = domain
        self.cart = comm.Create_cart(dims, periods=list(domain.periodic), reorder=False)
        self.rank = self.cart.Get_rank()
        self.size = size
        self.coords = self.cart.Get_coords(self.rank)
        # (lower, upper) neighbor rank per axis; MPI.PROC_NULL at a non-periodic face
        self.neighbors = [self.cart.Shift(d, 1) for d in range(3)]
        self.cuts = [np.linspace(domain.lo[d], domain.hi[d], dims[d] + 1) for d in range(3)]
        for d in range(3):
            self.cuts[d][-1] = domain.hi[d]

    @property
    def lo(self):
        return np.array([self.cuts[d][self.coords[d]] for d in range(3)])

    @property
    def hi(self):
        return np.array([self.cuts[d][self.coords[d] + 1] for d in range(3)])

    def owner(self, pos):
        """Rank owning each position (positions wrapped into the box): (c0 dims1 + c1)
        dims2 + c2 of its slab c_d along each axis (an axis of one slab adds nothing)."""
        rank = np.zeros(len(pos), np.int32)
        for d in range(3):
            rank *= self.dims[d]
            if self.dims[d] > 1:
                slab = np.searchsorted(self.cuts[d][1:-1], pos[:, d], side="right")
                rank += slab.clip(0, self.dims[d] - 1).astype(np.int32)
        return rank

    def check_thickness(self, cutoff):
        """Every slab must be at least one ghost cutoff thick (one swap per face)."""
        cutoff = np.broadcast_to(cutoff, 3)          # per axis (a deforming cell)
        for d in range(3):
            if self.dims[d] > 1 and np.min(np.diff(self.cuts[d])) < cutoff[d]:
                raise InputError(
                    "the box is too small for %d ranks along axis %d: slabs of %g are thinner "
                    "than the ghost cutoff 2 r_max + skin = %g; use fewer ranks on this axis "
                    "(dims=...) or a larger box" % (self.dims[d], d, np.min(np.diff(self.cuts[d])),
                                                     cutoff[d]))

    def balance(self, pos, cutoff):
        """Move the cuts so each slab of every axis holds about the same number of the
        particles `pos` (this rank's owned positions). Collective. Cuts sit on
        histogram bin edges, computed from an integer Allreduce: identical on all ranks."""
        cut = np.broadcast_to(cutoff, 3)
        for d in range(3):
            k = self.dims[d]
            if k == 1:
                continue
            lo, hi = self.domain.lo[d], self.domain.hi[d]
            nb = HIST_BINS_PER_SLAB * k
            edges = np.linspace(lo, hi, nb + 1)
            local = np.bincount(np.clip(((pos[:, d] - lo) * (nb / (hi - lo))).astype(np.int64),
                                        0, nb - 1), minlength=nb).astype(np.int64)
            hist = np.empty_like(local)
            self.cart.Allreduce(local, hist, op=MPI.SUM)
            cum = np.concatenate([[0], np.cumsum(hist)])
            total = cum[-1]
            cuts = self.cuts[d].copy()
            for i in range(1, k):
                cuts[i] = edges[min(nb, int(np.searchsorted(cum, total * i / k)))]
            # keep every slab at least `cutoff` thick, from both ends
            for i in range(1, k):
                cuts[i] = max(cuts[i], cuts[i - 1] + cut[d])
            for i in range(k - 1, 0, -1):
                cuts[i] = min(cuts[i], cuts[i + 1] - cut[d])
            self.cuts[d] = cuts
