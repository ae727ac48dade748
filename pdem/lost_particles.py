"""Particles outside a non-periodic box at a rebuild: an error on every rank, or with
lost='remove' their removal, with one warning per rank and rebuild."""
import warnings

import numpy as np

from .errors import SimulationError


def handle_lost(sim, own):
    """Returns (kept particles, new index of each old one or None when none was
    removed, ids removed on this rank). Collective."""
    dom = sim.domain
    bad = np.flatnonzero(~np.all(np.isfinite(own["pos"]), axis=1))
    sim.collective.raise_if_any(None if len(bad) == 0 else (
        "step %d (t=%.6g): particle id %d has a non-finite position %r"
        % (sim.step_count, sim.time, own["id"][bad[0]], own["pos"][bad[0]].tolist())),
        SimulationError)
    out = np.zeros(len(own["id"]), bool)
    for axis in range(3):
        if not dom.periodic[axis]:
            out |= (own["pos"][:, axis] < dom.lo[axis]) | (own["pos"][:, axis] >= dom.hi[axis])
    msg = None
    if out.any():
        i = int(np.flatnonzero(out)[0])
        msg = ("step %d (t=%.6g): particle id %d at %r left the domain %s..%s"
               % (sim.step_count, sim.time, own["id"][i], own["pos"][i].tolist(),
                  dom.lo.tolist(), dom.hi.tolist()))
    if sim.lost == "error":
        sim.collective.raise_if_any(msg and msg + " (use lost='remove' to delete such "
                                    "particles)", SimulationError)
        return own, None, own["id"][:0]
    if msg:
        warnings.warn(msg + ": removed (%d particle(s) on rank %d this step)"
                      % (out.sum(), sim.rank), RuntimeWarning, stacklevel=4)
    if not out.any():
        return own, None, own["id"][:0]
    new_index = np.cumsum(~out) - 1
    new_index[out] = -1
    return {k: v[~out] for k, v in own.items()}, new_index, own["id"][out]
