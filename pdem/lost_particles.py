"""Particles outside a non-periodic box at a rebuild: an error on every rank, or with
lost='remove' their removal, counted in sim.n_removed (all ranks; the CLI's thermo
lines show it), with one warning at the first removal of a run."""
import warnings

import numpy as np

from ._kernels import rebuild as _r
from .errors import SimulationError


def handle_lost(sim, own, drop=None):
    """Returns (kept particles, new index of each old one or None when none was
    removed, ids removed on this rank). drop: a mask of owned particles to remove as
    well (sim.remove). Collective."""
    dom = sim.domain
    pos = own["pos"]
    periodic = np.asarray(dom.periodic, np.uint8)
    bad, first, n_out = _r.outside(pos, np.asarray(dom.lo, float), np.asarray(dom.hi, float),
                                   periodic)                # one pass, no temporaries
    sim.collective.raise_if_any(None if bad < 0 else (
        "step %d (t=%.6g): particle id %d has a non-finite position %r"
        % (sim.step_count, sim.time, own["id"][bad], own["pos"][bad].tolist())),
        SimulationError)
    msg = None
    if n_out:
        msg = ("step %d (t=%.6g): particle id %d at %s left the domain %s..%s"
               % (sim.step_count, sim.time, own["id"][first], _fmt(pos[first]),
                  _fmt(dom.lo), _fmt(dom.hi)))
    out = np.zeros(len(own["id"]), bool) if drop is None else drop.copy()
    if sim.lost == "error":
        sim.collective.raise_if_any(msg and msg + " (use lost='remove' to delete such "
                                    "particles)", SimulationError)
        return _remove(own, out)
    if n_out:
        for axis in range(3):
            if not dom.periodic[axis]:
                out |= (pos[:, axis] < dom.lo[axis]) | (pos[:, axis] >= dom.hi[axis])
    lost = out if drop is None else out & ~drop
    counts = np.array([n_out, -own["id"][lost].min() if n_out else -np.inf], float)
    if sim.size > 1:
        counts = np.array([sim.collective.sum(counts[:1].copy())[0], sim.collective.max(counts[1])])
    removed = int(counts[0])
    if removed and not sim.n_removed:
        # one warning per run: a hopper can lose thousands of particles
        warnings.warn("step %d (t=%.6g): %d particle(s) left the domain %s..%s and were "
                      "removed (lost='remove'; lowest id %d); later removals are only "
                      "counted in Simulation.n_removed" % (
                          sim.step_count, sim.time, removed, _fmt(dom.lo), _fmt(dom.hi),
                          int(-counts[1])), RuntimeWarning, stacklevel=4)
    sim.n_removed += removed
    return _remove(own, out)


def _remove(own, out):
    if not out.any():
        return own, None, own["id"][:0]
    new_index = np.cumsum(~out) - 1
    new_index[out] = -1
    return {k: v[~out] for k, v in own.items()}, new_index, own["id"][out]


def _fmt(values):
    return "[%s]" % ", ".join("%.12g" % v for v in np.ravel(values))
