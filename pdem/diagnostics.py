"""Diagnostics of a simulation (all collective): energies, phase timings,
communication volume and the debug check of particle ids."""
import numpy as np

from . import shapes
from .errors import SimulationError

PHASES = ("neighbor", "comm", "contact", "integrate", "output")


def energy(sim):
    """Kinetic, rotational and gravitational potential energy at time t, summed over
    ranks: the kinetic terms pair the stored velocities with the scheme's
    energy_velocities (the explicit scheme: m v(t-dt/2).v(t+dt/2)/2, leap-frog's
    time-centred form; NSCD: m v.v/2 of the stored velocity)."""
    st, n = sim.store, sim.store.n_own
    v_plus, w_plus = st.vel[:n], st.angvel[:n]
    v_minus, w_minus = sim.scheme.energy_velocities(sim)
    rot = st.inertia[:n] * np.einsum("ij,ij->i", w_minus, w_plus)
    if sim.shapes:      # non-spheres: their angular momentum (pdem.shapes)
        rot = np.where(st.shape[:n] == 0, rot, 0.0)
    e = np.array([0.5 * np.sum(st.mass[:n] * np.einsum("ij,ij->i", v_minus, v_plus)),
                  0.5 * np.sum(rot) + (shapes.rotational_energy(st, sim.dt) if sim.shapes
                                       else 0.0),
                  -np.sum(st.mass[:n] * (st.pos[:n] @ sim.gravity))])
    kin, rot, pot = sim.collective.sum(e)
    return {"kinetic": float(kin), "rotational": float(rot), "gravity": float(pot)}


def timer_stats(sim):
    """Seconds per phase over ranks: {phase: (min, mean, max)}."""
    t = np.array([sim.timers[p] for p in PHASES])
    all_t = np.array(sim.comm.allgather(t)) if sim.size > 1 else t[None, :]
    return {p: (all_t[:, i].min(), all_t[:, i].mean(), all_t[:, i].max())
            for i, p in enumerate(PHASES)}


def comm_stats(sim):
    """Per rank: owned particles, ghosts, and bytes sent per step between rebuilds."""
    mine = {"owned": sim.store.n_own, "ghosts": sim.store.n - sim.store.n_own,
            "bytes_per_step": sim.ghosts.bytes_per_refresh}
    return sim.comm.allgather(mine) if sim.size > 1 else [mine]


def verify_ids(sim, expected):
    """Debug check: the owned ids of all ranks are exactly `expected` (sorted)."""
    ids = sim.collective.allgather({"id": sim.store.id[:sim.store.n_own]})["id"]
    ids.sort()
    if len(ids) != len(expected) or np.any(ids != expected):
        lost = np.setdiff1d(expected, ids)
        dup = ids[1:][ids[1:] == ids[:-1]]
        raise SimulationError("step %d: particle ids not preserved: %d expected, %d found, "
                              "missing %s, duplicated %s" % (sim.step_count, len(expected),
                                                             len(ids), lost[:5].tolist(),
                                                             dup[:5].tolist()))
