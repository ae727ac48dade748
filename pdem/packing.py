"""Dense random packings of spheres in any level-set region (seed 002's relaxation).

`pack(region, radii, solid_fraction=... or count=..., seed=...)`:

1. radii: one radius, an array (one per particle) or a size distribution
   `radii(rng, n) -> n radii`; with `solid_fraction`, radii are drawn until their
   volume reaches solid_fraction x the region's volume (Monte Carlo estimate,
   `Region.volume`);
2. random insertion: centres uniform in the region's bounds, kept where f(x) <= -r
   (each sphere inside, overlaps allowed), from numpy's generator seeded by `seed`;
3. relaxation, alternating (each iteration, every particle at once):
   a. overlap removal, a Jacobi sweep: particle i moves by sum_j 0.5 w delta_ij e_ji
      over its overlaps (pyx/levelset.pyx `overlap_moves`, a cell grid);
   b. seed 002's boundary push (`relax_probes`, `relax_moves`) from the new positions,
      plus a Newton step -(f + r) grad f / |grad f|^2 for a particle the rule calls
      inside while f > -r (possible only where f is no signed distance);
   until every sphere is inside (f(x) <= -r + tol r_min) and the largest overlap
   delta_ij / min(r_i, r_j) is at most `overlap`, both checked on the positions
   before the moves (so the returned state is the checked one).

Ranks (comm): every rank holds all positions (they are returned to every rank, ready
for `Simulation.add_spheres`, which takes the full arrays on every rank). The
particles are split into slabs along the longest axis of the bounds (an equal count
per rank, by a stable sort of that coordinate, recomputed every iteration); each rank
moves the particles of its slab, with ghosts (the particles within 2 r_max of the
slab) as neighbours only, then the moved positions are all-gathered (Allgatherv,
buffers). The result does not depend on the number of ranks, bit for bit, by
construction: the candidates come from the same seeded generator on every rank; a
particle's move is a function of the old positions alone (Jacobi), its overlap sum is
taken in an order that depends on no partition (a global cell grid visited in a fixed
order, members by increasing id), the region is evaluated point by point (analytic
regions are element-wise IEEE operations) and the convergence test is a maximum
(exact in any order). Tested on 1, 2, 3 ranks (tests/mpi/test_packing_mpi.py).
Memory is O(N) per rank (fine for millions of spheres); the work per iteration is
O(N / ranks) plus an O(N) sort.
"""
import math
import time

import numpy as np
from mpi4py import MPI

from . import validate
from ._kernels import levelset as _k
from .errors import InputError
from .regions import Region
from .threads import thread_count


class Packing:
    """Result of pack: positions (n, 3), radii (n,), iterations, max_overlap (the
    largest delta / min(r_i, r_j)), max_outside (largest f(x) + r), solid_fraction
    (sphere volume / region volume, when estimated). `x, r = pdem.pack(...)` works."""

    def __init__(self, positions, radii, iterations, max_overlap, max_outside, solid_fraction):
        self.positions, self.radii = positions, radii
        self.iterations, self.max_overlap = iterations, max_overlap
        self.max_outside, self.solid_fraction = max_outside, solid_fraction

    def __iter__(self):
        return iter((self.positions, self.radii))

    def __repr__(self):
        return ("Packing(n=%d, iterations=%d, max_overlap=%.3g, max_outside=%.3g, "
                "solid_fraction=%s)" % (len(self.radii), self.iterations, self.max_overlap,
                                        self.max_outside, self.solid_fraction))


def _radii(radii, rng, count, solid_fraction, volume):
    if callable(radii):
        if count is not None:
            r = np.asarray(radii(rng, count), dtype=float)
        else:
            target, parts, total = solid_fraction * volume, [], 0.0
            while total < target:
                batch = np.asarray(radii(rng, 1000), dtype=float)
                v = np.cumsum(4.0 / 3.0 * math.pi * batch ** 3)
                take = int(np.searchsorted(v, target - total)) + 1
                parts.append(batch[:take])
                total += float(v[min(take, len(v)) - 1])
            r = np.concatenate(parts)
        return validate.scalars("radii (drawn)", r, len(r))
    r = np.asarray(radii, dtype=float)
    if r.ndim == 0:
        rr = validate.positive("radii", float(r))
        n = count if count is not None else int(round(
            solid_fraction * volume / (4.0 / 3.0 * math.pi * rr ** 3)))
        return np.full(max(n, 1), rr)
    if count is not None and count != len(r):
        raise InputError("pack: count=%r differs from the %d radii given" % (count, len(r)))
    return validate.scalars("radii", r, len(r))


def _insert(region, r, rng, max_tries=1000):
    """Centres uniform in the bounds with f(x) <= -r: every round draws one candidate
    for each sphere still without a place (deterministic for a given generator)."""
    lo, hi = region.bounds
    x = np.empty((len(r), 3))
    pending = np.arange(len(r))
    for _ in range(max_tries):
        cand = lo + (hi - lo) * rng.random((len(pending), 3))
        fits = region(cand) <= -r[pending]
        x[pending[fits]] = cand[fits]
        pending = pending[~fits]
        if len(pending) == 0:
            return x
    raise InputError("pack: could not insert %d spheres in the region after %d rounds; "
                     "are the radii larger than the region?" % (len(pending), max_tries))


def pack(region, radii, solid_fraction=None, count=None, seed=0, overlap=1e-3, tol=1e-3,
         weight=1.5, max_iterations=20000, comm=None, threads=None, progress=None):
    """A dense random packing of spheres inside `region` (see the module docstring).

    region: a pdem region with bounds; radii: a radius, an array of radii or a
    callable (rng, n) -> n radii; give solid_fraction (of the region's volume) or
    count (or an array of radii); seed: the random generator's seed; overlap: the
    largest accepted overlap delta / min(r_i, r_j); tol: the accepted f(x) + r, in
    units of the smallest radius; weight: the Jacobi step (1: each overlap shared
    half and half; above 1 over-relaxes, which converges faster); comm: MPI communicator (default COMM_WORLD), the same result on
    any number of ranks; progress: None (prints every 5 s on rank 0 when the run
    lasts more than 5 s), False, or a callable(iteration, max_overlap, max_outside).
    Returns a Packing (iterable as positions, radii). Raises InputError when the
    iterations run out (a solid fraction above what the method reaches, ~0.64 for
    monodisperse spheres)."""
    if not isinstance(region, Region):
        raise InputError("pack: region must be a pdem region, got %r" % (region,))
    if region.bounds is None:
        raise InputError("pack: the region is unbounded (intersect it with a Box)")
    if (solid_fraction is None) == (count is None) and np.ndim(radii) == 0:
        raise InputError("pack: give exactly one of solid_fraction or count, got "
                         "solid_fraction=%r count=%r" % (solid_fraction, count))
    if solid_fraction is not None:
        solid_fraction = validate.number("solid_fraction", solid_fraction, 0.0, 0.74048)
    if count is not None:
        count = validate.integer("count", count, 1)
    overlap = validate.positive("overlap", overlap)
    tol = validate.positive("tol", tol)
    weight = validate.number("weight", weight, 0.0, 2.0)
    max_iterations = validate.integer("max_iterations", max_iterations, 1)
    comm = MPI.COMM_WORLD if comm is None else comm
    rank, size = comm.Get_rank(), comm.Get_size()
    nt = thread_count(threads)
    rng = np.random.default_rng(seed)
    volume = region.volume() if (solid_fraction is not None or np.ndim(radii) == 0
                                 and count is None) else None
    r = _radii(radii, rng, count, solid_fraction, volume)
    n = len(r)
    x = _insert(region, r, rng)
    rmin, rmax = float(r.min()), float(r.max())
    lo, hi = region.bounds
    axis = int(np.argmax(hi - lo))
    cell = 2.0 * rmax
    origin = np.ascontiguousarray(lo - 2.0 * cell)
    shape = np.ascontiguousarray(np.ceil((hi - lo) / cell).astype(np.int64) + 5)
    bounds = np.linspace(0, n, size + 1).astype(np.int64)
    counts3 = 3 * np.diff(bounds)
    displs3 = 3 * bounds[:-1]
    t0 = last = time.perf_counter()
    report = progress if callable(progress) else None
    worst = outside = math.inf
    for it in range(max_iterations + 1):
        order = np.argsort(x[:, axis], kind="stable")
        mine = np.sort(order[bounds[rank]:bounds[rank + 1]])
        if len(mine):
            a, b = x[mine, axis].min() - cell, x[mine, axis].max() + cell
            local = np.flatnonzero((x[:, axis] >= a) & (x[:, axis] <= b))
        else:
            local = mine
        own = np.zeros(len(local), dtype=np.uint8)
        own[np.searchsorted(local, mine)] = 1
        xl = np.ascontiguousarray(x[local])
        dx = np.empty_like(xl)
        w = _k.overlap_moves(xl, np.ascontiguousarray(r[local]), own, origin, cell, shape,
                             weight, dx, nt)
        xo, ro = x[mine], r[mine]
        f0 = region(xo) if len(mine) else np.empty(0)
        out = float(np.max(f0 + ro)) if len(mine) else -math.inf
        glob = np.array([w, out])
        if size > 1:
            comm.Allreduce(MPI.IN_PLACE, glob, op=MPI.MAX)
        worst, outside = float(glob[0]), float(glob[1])
        now = time.perf_counter()
        if report is not None:
            report(it, worst, outside)
        elif progress is None and rank == 0 and now - last > 5.0:
            print("pack: iteration %d, %d spheres, max overlap %.3g (target %.3g), max f + r "
                  "%.3g (target %.3g), %.0f s" % (it, n, worst, overlap, outside, tol * rmin,
                                                  now - t0), flush=True)
            last = now
        if worst <= overlap and outside <= tol * rmin:
            break
        if it == max_iterations:
            raise InputError("pack: not converged after max_iterations=%d: max overlap %.3g "
                             "(asked %.3g), max f + r %.3g; lower solid_fraction or count"
                             % (max_iterations, worst, overlap, outside))
        y = xo + dx[own == 1]
        if len(mine):
            y = _boundary(region, y, ro, tol * rmin, nt)
        if size > 1:
            ordered = np.empty((n, 3))
            # rank k sends its particles in the order they hold in `order`
            sendbuf = np.ascontiguousarray(
                y[np.searchsorted(mine, order[bounds[rank]:bounds[rank + 1]])])
            comm.Allgatherv(sendbuf, [ordered, (counts3, displs3), MPI.DOUBLE])
            x[order] = ordered
        else:
            x[mine] = y
    frac = None if volume is None else float(np.sum(4.0 / 3.0 * math.pi * r ** 3) / volume)
    return Packing(x, r, it, worst, outside, frac)


def _boundary(region, y, r, tol, nt):
    """Seed 002's push from y, then a Newton step for the rule's 'inside' spheres
    with f > -r + tol (non-distance f only)."""
    d0, g = region.evaluate(y)
    probe, normal = np.empty_like(y), np.empty_like(y)
    _k.relax_probes(y, r, d0, g, probe, normal, nt)
    d1 = region(probe)
    dx = np.empty_like(y)
    _k.relax_moves(r, d0, d1, normal, dx, nt)
    stuck = (dx[:, 0] == 0.0) & (dx[:, 1] == 0.0) & (dx[:, 2] == 0.0) & (d0 + r > tol)
    if np.any(stuck):
        gg = np.einsum("ij,ij->i", g[stuck], g[stuck])
        ok = gg > 0.0
        k = np.where(ok, -(d0[stuck] + r[stuck]) / np.where(ok, gg, 1.0), 0.0)
        dx[stuck] = k[:, None] * g[stuck]
    return y + dx
