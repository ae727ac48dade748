"""Particles outside a non-periodic box at a rebuild: an error on every rank, or with
lost='remove' their removal, with one warning per rank and rebuild."""
import warnings

import numpy as np

from ._kernels import rebuild as _r
from .errors import SimulationError


def handle_lost(sim, own):
    """Returns (kept particles, new index of each old one or None when none was
    removed, ids removed on this rank). Collective."""
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
        i = first
        msg = ("step %d (t=%.6g): particle id %d at %r left the domain %s..%s"
               % (sim.step_count, sim.time, own["id"][i], own["pos"][i].tolist(),
                  dom.lo.tolist(), dom.hi.tolist()))
    if sim.lost == "error":
        sim.collective.raise_if_any(msg and msg + " (use lost='remove' to delete such "
                                    "particles)", SimulationError)
        return own, None, own["id"][:0]
    if not n_out:
        return own, None, own["id"][:0]
    out = np.zeros(len(own["id"]), bool)
    for axis in range(3):
        if not dom.periodic[axis]:
            out |= (pos[:, axis] < dom.lo[axis]) | (pos[:, axis] >= dom.hi[axis])
    warnings.warn(msg + ": removed (%d particle(s) on rank %d this step)"
                  % (out.sum(), sim.rank), RuntimeWarning, stacklevel=4)
    new_index = np.cumsum(~out) - 1
    new_index[out] = -1
    return {k: v[~out] for k, v in own.items()}, new_index, own["id"][out]
