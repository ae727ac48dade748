"""Energy tracker (issue 21 part 6; docs/energy.md): the energy balance of an explicit
run, like Yade's O.trackEnergy, with the same bits on any rank and thread count.

Per contact, the law kernels write the elastic energy of the contact's springs at t and
this step's dissipation by damping, Coulomb slip and rolling/twisting slip, and the wall
kernels the work of the wall's velocity (pyx/laws.pxd E_*); per particle, this module
adds the work of gravity, of external loads and of prescribed (blocked) velocities over
the drift that led to t. Every increment goes into an exact sum (pyx/energy.pyx), so the
totals do not depend on how contacts and particles are split over ranks and threads or
on restarts. Off by default: then no kernel computes any of it.

Balance (leap-frog, docs/energy.md):
  kinetic + rotational + elastic + damping + friction + rolling
      - gravity_work - walls - external - prescribed  =  constant,
with the kinetic energy at t the time-centred m v(t-dt/2).v(t+dt/2)/2 and the works
accumulated (gravity as a work: periodic wrapping does not disturb it; `gravity` is
the potential -m g.x of the current, wrapped, positions, as without tracking).
"""
import numpy as np

from ._kernels import contacts as ck, energy as xk
from .errors import InputError
from .materials import COL as LAW

E = ck.energy_columns()
RUNNING = ("damping", "friction", "rolling", "walls", "gravity_work", "external", "prescribed")
STATE = ("elastic_normal", "elastic_tangential")
SUMS = RUNNING + STATE
ROW = {name: i for i, name in enumerate(SUMS)}
# the kernels' columns and the sums they go to
KERNEL = [(E["damping"], "damping"), (E["friction"], "friction"), (E["rolling"], "rolling"),
          (E["walls"], "walls"), (E["normal"], "elastic_normal"),
          (E["tangent"], "elastic_tangential")]
KINDS = ("pair", "plane", "mesh", "segment", "point", "region")   # kinds with energy rows
WORK_IN = ("gravity_work", "walls", "external", "prescribed")
DISSIPATED = ("damping", "friction", "rolling")
SERIES = ("elastic", "damping", "friction", "rolling", "gravity_work", "walls", "external",
          "prescribed", "balance", "error")


class EnergyTracker:
    """The running sums of one simulation (pdem.Simulation.track_energy)."""

    def __init__(self):
        self.on = False
        self.parts = np.zeros((len(SUMS), xk.width()), np.int64)
        self.rows = {}                    # kind name -> (m, E_NCOLS) energy rows of this step
        self.initial = None               # the balance at the reference step
        self.reference = None             # (step, stored energy) at the reference
        self.edits = 0                    # scene edits that moved the reference
        self._last = None                 # (particles removed, dt) at the last step
        self._edited = False              # set_velocity since the last step
        self._rebase = True
        self._cache = None

    def __bool__(self):
        return self.on

    def check(self, sim):
        """Refuse what the tracker does not cover (at the start of a step after set-up
        changes; collective inputs)."""
        refuse(sim)

    def edited(self):
        """A change of the scene the step counters do not show (set_velocity)."""
        self._cache = None
        self._edited = True

    # ------------------------------------------------------------ step hooks
    def kernel_rows(self, kind):
        """Zeroed energy rows for `kind`'s kernel this step, or None (tracking off)."""
        if not self.on:
            return None
        m = len(kind.batch)
        rows = self.rows.get(kind.name)
        if rows is None or rows.shape[0] != m:
            rows = np.zeros((m, E["ncols"]))
        else:
            rows.fill(0.0)
        self.rows[kind.name] = rows
        return rows

    def before_kick(self, sim):
        """After the forces at t, before the kick: add this step's contact terms and the
        work of gravity, external loads and prescribed velocities over the drift from
        t - dt to t (velocities v(t - dt/2) still stored)."""
        state = (sim.n_removed, sim.dt)
        if self._last is not None and (sim.fresh_scene or state != self._last or self._edited):
            self._rebase = True                         # an edit since the last step
        if self._last is None or self._rebase:
            refuse(sim)
        self._last, self._edited = state, False
        self._cache = None
        p = self.parts
        p[[ROW[s] for s in STATE]] = 0                    # elastic: the state at t
        dest = np.array([ROW[name] for _, name in KERNEL], np.int32)
        cols = np.array([c for c, _ in KERNEL], np.int32)
        for name in KINDS:
            kind = sim.interactions[name]
            rows = self.rows.get(name)
            if rows is None or not len(kind.batch):
                continue
            # active rows, and rows of contacts that opened this step (their springs'
            # energy is lost with them: E_FRIC)
            use = (kind.batch.active != 0) | (rows[:, E["friction"]] != 0.0)
            if hasattr(kind, "owner1"):                   # a pair between ranks: counted once
                use &= kind.owner1 >= 0
            xk.add_rows(p, dest, rows, cols, use.view(np.int8))
        st, n, dt = sim.store, sim.store.n_own, sim.dt
        v, m, g = st.vel[:n], st.mass[:n], sim.gravity
        xk.add_values(p, ROW["gravity_work"], m * (v[:, 0] * g[0] + v[:, 1] * g[1] + v[:, 2] * g[2])
                      * dt)
        if sim.external:
            f, t = np.zeros((n, 3)), np.zeros((n, 3))
            sim.external.add(sim, f, t)
            xk.add_values(p, ROW["external"], _power(f, v, t, st.angvel[:n]) * dt)
        blocked = np.flatnonzero(st.blocked[:n])
        if len(blocked):
            # a prescribed velocity does the work that the forces' resultant would have
            # turned into kinetic energy: -(F + m g) . v on each blocked dof
            b = st.blocked[blocked]
            lin = np.stack([(b >> d) & 1 for d in range(3)], axis=1).astype(float)
            rot = np.stack([(b >> (d + 3)) & 1 for d in range(3)], axis=1).astype(float)
            f = -(st.force[blocked] + st.mass[blocked, None] * g) * lin
            xk.add_values(p, ROW["prescribed"], _power(f, st.vel[blocked],
                                                       -st.torque[blocked] * rot,
                                                       st.angvel[blocked]) * dt)

    def after_kick(self, sim):
        """After the kick: a new reference after a scene edit (collective, on the first
        step after it)."""
        if self._rebase:
            self._rebase = False
            if self.initial is not None:
                self.edits += 1
            self.initial = None
            self.initial = self.totals(sim)["balance"]
            self._cache = None

    # ------------------------------------------------------------ results
    def totals(self, sim):
        """The balance at t (collective; cached per step)."""
        key = (sim.step_count, sim.next_id, sim.n_removed, sim.dt)
        if self._cache is not None and self._cache[0] == key:
            return dict(self._cache[1])
        st, n = sim.store, sim.store.n_own
        vm, wm = sim.scheme.energy_velocities(sim)
        v, w = st.vel[:n], st.angvel[:n]
        g = np.broadcast_to(sim.gravity, (n, 3))
        local = np.zeros((3, xk.width()), np.int64)
        xk.add_values(local, 0, 0.5 * st.mass[:n] * _dot(vm, v))
        xk.add_values(local, 1, 0.5 * st.inertia[:n] * _dot(wm, w))
        xk.add_values(local, 2, -st.mass[:n] * _dot(st.pos[:n], g))
        every = sim.collective.allgather({"parts": np.concatenate([self.parts, local])})["parts"]
        rows = len(SUMS) + 3
        total = {name: xk.value(every[i::rows]) for i, name in
                 enumerate(SUMS + ("kinetic", "rotational", "gravity"))}
        out = {"kinetic": total["kinetic"], "rotational": total["rotational"],
               "gravity": total["gravity"],
               "elastic": total["elastic_normal"] + total["elastic_tangential"]}
        out.update({k: total[k] for k in SUMS})
        stored = out["kinetic"] + out["rotational"] + out["elastic"]
        out["balance"] = (stored + sum(out[k] for k in DISSIPATED)
                          - sum(out[k] for k in WORK_IN))
        out["initial"] = self.initial if self.initial is not None else out["balance"]
        scale = stored + sum(abs(out[k]) for k in DISSIPATED + WORK_IN) + abs(out["initial"])
        out["error"] = (out["balance"] - out["initial"]) / scale if scale > 0 else 0.0
        out["edits"] = self.edits
        self._cache = (key, out)
        return dict(out)

    # ------------------------------------------------------------ checkpoints
    def describe(self, sim):
        """The state a checkpoint keeps (collective): each running sum exactly (an
        integer in units of 2^-BIAS, pyx/energy.pyx, as text), the reference and the edits."""
        every = sim.collective.allgather({"parts": self.parts})["parts"]
        exact = [xk.exact(every[i::len(SUMS)]) for i in range(len(SUMS))]
        return {"sums": [None if x is None else str(x) for x in exact],
                "initial": self.initial, "edits": self.edits, "rebase": self._rebase}

    def restore(self, state, rank):
        """A checkpoint's sums, on rank 0 (exact: the same value on any rank count)."""
        self.parts[:] = 0
        if rank == 0:
            for i, x in enumerate(state["sums"]):
                self.parts[i] = xk.from_exact(None if x is None else int(x))
        self.initial, self.edits = state["initial"], state["edits"]
        self._rebase = state["rebase"]
        self._last = None


def switch(sim, on):
    """sim.track_energy = on (collective: the same on every rank)."""
    if not isinstance(on, (bool, np.bool_)):
        raise InputError("track_energy must be True or False, got %r" % (on,))
    if hasattr(sim, "collective"):
        sim.collective.same("track_energy", on=bool(on))
    if on:
        refuse(sim, switching=True)
    tracker = sim.energy_tracker
    if bool(on) != tracker.on:
        sim.energy_tracker = EnergyTracker()
        sim.energy_tracker.on = bool(on)


def _dot(a, b):
    """Row-wise a . b in a fixed order of operations (the same bits on every rank)."""
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def _power(f, v, t, w):
    return _dot(f, v) + _dot(t, w)


def refuse(sim, switching=False):
    """One InputError line for what the tracker does not cover (collective inputs)."""
    if not sim.energy_tracker.on and not switching:
        return
    what = None
    if sim.scheme.name != "explicit":
        what = "the %s scheme (explicit scheme only)" % sim.scheme.name
    elif sim.shapes:
        what = "ellipsoids and ellipses (spheres and disks only)"
    elif sim.interactions["bond"].any:
        what = "bonds (their elastic energy and breakage are not tracked yet)"
    elif sim.materials.materials and np.any(sim.materials.table()[:, LAW["cohesion"]] == 2):
        what = "JKR cohesion (its hysteretic contact energy is not tracked; dmt and linear are)"
    if what is not None:
        raise InputError("track_energy=True: not available with %s" % what)


def series(sim_energy_key):
    """A series_extra function reading one entry of sim.energy()."""
    return lambda sim: sim.energy()[sim_energy_key]


def series_extra():
    """{name: function} for ResultFile(series_extra=...): the tracker's terms as columns
    `energy_<term>` of the HDF5 time series (pdem plot draws them)."""
    return {"energy_" + k: series(k) for k in SERIES}
