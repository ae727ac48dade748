"""Parallel bonds as an interaction kind whose rows persist beyond the Verlet list
(the model and its row layout: pyx/bonds.pyx).

A bond row lives on every rank that owns one of its two particles, keyed like a pair
(id1 < id2), and is computed on each from identical copies, so every rank sees the
same loads and the same breaks. Rows migrate with their particles; at a rebuild each
row finds its particles again by id (the owned copy and the nearest copy of the
partner: periodic images included), and the ghost cutoff covers the longest bond
(`longest`). Broken bonds leave the rows at the next rebuild; the rank owning particle
1 records each break (time, mode, ids, point, normal) in `broken`.

Strength scatter draws one factor per bond and strength from a hash of (seed, id1,
id2, which): the same on any number of ranks and after restarts.
"""
import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from .. import validate
from .._kernels import bonds as bk
from ..errors import InputError
from . import keys
from .kinds import TwoBodyRows, owned_index, register
from .store import ContactBatch

TABLE = bk.table_columns()
ROW = bk.row_columns()
MODES = ("intact", "tension", "shear")        # bonds()["mode"] indexes these
BROKEN_FIELDS = {"id1": np.int64, "id2": np.int64, "time": np.float64, "mode": np.int8,
                 "point": (np.float64, 3), "normal": (np.float64, 3)}


@dataclass
class BondMaterial:
    """Parameters of a parallel bond (Simulation.bond_material documents them)."""
    name: str
    kn: float
    ks: float
    tensile_strength: float
    cohesion: float
    friction_angle: float = 0.0
    radius_multiplier: float = 1.0
    moment_factor: float = 1.0
    damping: float = 0.0
    scatter: dict = None
    index: int = field(default=-1, compare=False)

    def row(self):
        out = np.zeros(TABLE["ncols"])
        out[TABLE["kn"]], out[TABLE["ks"]] = self.kn, self.ks
        out[TABLE["tensile"]], out[TABLE["cohesion"]] = self.tensile_strength, self.cohesion
        out[TABLE["tan_phi"]] = math.tan(math.radians(self.friction_angle))
        out[TABLE["radius_multiplier"]] = self.radius_multiplier
        out[TABLE["moment_factor"]] = self.moment_factor
        out[TABLE["damping"]] = self.damping
        return out

    def section(self, r, dim):
        """Area, bending and polar moments of the bond of two particles of radius >= r."""
        R = self.radius_multiplier * r
        if dim == 2:
            return 2.0 * R, 2.0 * R ** 3 / 3.0, 0.0
        return math.pi * R ** 2, math.pi * R ** 4 / 4.0, math.pi * R ** 4 / 2.0


def make_material(name, kn, ks, tensile_strength, shear_strength=None, cohesion=None,
                  friction_angle=0.0, radius_multiplier=1.0, moment_factor=1.0, damping=0.0,
                  scatter=None):
    """A checked BondMaterial (one InputError line naming the parameter and value)."""
    what = "bond material %r: " % (name,)
    p = {k: validate.positive(what + k, v) for k, v in
         (("kn", kn), ("ks", ks), ("tensile_strength", tensile_strength),
          ("radius_multiplier", radius_multiplier))}
    if (shear_strength is None) == (cohesion is None):
        raise InputError(what + "give shear_strength or cohesion (with friction_angle), got "
                         "shear_strength=%r, cohesion=%r" % (shear_strength, cohesion))
    if shear_strength is not None and friction_angle:
        raise InputError(what + "friction_angle=%r goes with cohesion, not shear_strength"
                         % (friction_angle,))
    c = validate.positive(what + ("shear_strength" if cohesion is None else "cohesion"),
                          shear_strength if cohesion is None else cohesion)
    phi = validate.number(what + "friction_angle", friction_angle, 0.0, 90.0, low_open=False)
    if phi == 90.0:
        raise InputError(what + "friction_angle must be below 90 degrees, got %r"
                         % (friction_angle,))
    beta = validate.number(what + "moment_factor", moment_factor, 0.0, 1.0, low_open=False)
    zeta = validate.number(what + "damping", damping, 0.0, low_open=False)
    return BondMaterial(name, p["kn"], p["ks"], p["tensile_strength"], c, phi,
                        p["radius_multiplier"], beta, zeta, check_scatter(what, scatter))


def check_scatter(what, scatter):
    """None, {"distribution": "normal", "cv": c, "seed": s} (strengths times max(0, 1 +
    c z), z standard normal) or {"distribution": "weibull", "modulus": m, "seed": s}
    (Weibull factors of mean 1)."""
    if scatter is None:
        return None
    if not isinstance(scatter, dict) or scatter.get("distribution") not in ("normal", "weibull"):
        raise InputError(what + "scatter must be None or a dict with distribution 'normal' "
                         "(cv=...) or 'weibull' (modulus=...), got %r" % (scatter,))
    out = {"distribution": scatter["distribution"],
           "seed": validate.integer(what + "scatter seed", scatter.get("seed", 0), 0)}
    param = "cv" if out["distribution"] == "normal" else "modulus"
    extra = set(scatter) - {"distribution", "seed", param}
    if extra:
        raise InputError(what + "scatter: unknown key %r for the %s distribution"
                         % (sorted(extra)[0], out["distribution"]))
    if param not in scatter:
        raise InputError(what + "scatter: the %s distribution needs %s=..."
                         % (out["distribution"], param))
    out[param] = validate.positive(what + "scatter " + param, scatter[param])
    return out


def _mix(h):
    """splitmix64's finalizer on uint64 arrays (wrapping arithmetic)."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def uniform(seed, id1, id2, stream):
    """Uniform numbers in (0, 1), one per (id1, id2), from a hash: the same on any rank."""
    with np.errstate(over="ignore"):
        h = _mix(np.full(len(id1), seed, np.uint64) + np.uint64(0x9E3779B97F4A7C15))
        for v in (id1, id2, np.full(len(id1), stream)):
            h = _mix(h ^ np.asarray(v).astype(np.uint64))
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53


def strength_factors(scatter, id1, id2):
    """(tensile, shear) strength factors of the bonds (id1, id2): ones without scatter."""
    if scatter is None:
        return np.ones(len(id1)), np.ones(len(id1))
    out = []
    for which in (0, 1):
        u1 = uniform(scatter["seed"], id1, id2, 2 * which)
        if scatter["distribution"] == "normal":
            u2 = uniform(scatter["seed"], id1, id2, 2 * which + 1)
            z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2)      # Box-Muller
            out.append(np.maximum(0.0, 1.0 + scatter["cv"] * z))
        else:
            m = scatter["modulus"]
            out.append((-np.log(u1)) ** (1.0 / m) / math.gamma(1.0 + 1.0 / m))
    return out[0], out[1]


@register
class BondContacts(TwoBodyRows):
    """Parallel bonds (pyx/bonds.pyx); its force sums come after every contact kind's."""
    name = "bond"
    contact = False

    def __init__(self, sim):
        super().__init__(sim)
        self.materials = []              # BondMaterial, by index
        self.any = False                 # bonds were made (the same on every rank)
        self.longest = 0.0               # longest intact bond at the last evaluation
        self.broken = {k: np.zeros((0,) + ((3,) if isinstance(t, tuple) else ()),
                                   t[0] if isinstance(t, tuple) else t)
                       for k, t in BROKEN_FIELDS.items()}
        self._broke = np.zeros(0, np.int8)
        self._table = None               # the materials' rows (the kernel's table)

    # ------------------------------------------------------------ materials
    def add_material(self, name, **params):
        if any(m.name == name for m in self.materials):
            raise InputError("bond material %r is already defined" % (name,))
        m = make_material(name, **params)
        m.index = len(self.materials)
        self.materials.append(m)
        self._table = None
        return m

    def material(self, m):
        """The BondMaterial named or given (InputError otherwise)."""
        for known in self.materials:
            if known is m or known.name == m:
                return known
        raise InputError("unknown bond material %r (defined: %s)"
                         % (getattr(m, "name", m), [k.name for k in self.materials]))

    def table(self):
        if self._table is None:
            self._table = np.ascontiguousarray([m.row() for m in self.materials] or
                                               np.zeros((1, TABLE["ncols"])))
        return self._table

    # ------------------------------------------------------------ rows
    def add(self, id1, id2, material):
        """New rows (formed at the next force evaluation) for the bonds (id1 < id2) with
        a particle this rank owns; collective bookkeeping by the caller."""
        mine = owned_index(id1, self.sim.store.id[:self.sim.store.n_own]) >= 0
        mine |= owned_index(id2, self.sim.store.id[:self.sim.store.n_own]) >= 0
        id1, id2 = id1[mine], id2[mine]
        new = ContactBatch.from_rows(keys.make(id1, id2), np.full(len(id1), ROW["forming"],
                                                                  np.int8),
                                     np.zeros((len(id1), self.batch.state.shape[1])))
        tf, sf = strength_factors(material.scatter, id1, id2)
        new.state[:, ROW["material"]] = material.index
        new.state[:, ROW["tensile_factor"]] = tf
        new.state[:, ROW["shear_factor"]] = sf
        self.batch = ContactBatch.concat([self.batch.rows(np.flatnonzero(self.batch.active)),
                                          new])
        self.attach(self.sim.store.id[:self.sim.store.n_own])
        self.any = True

    def forget(self, ids):
        """Drop the bonds of removed particles (ids: on every rank alike)."""
        if not self.any or len(ids) == 0:
            return
        b = self.batch
        gone = np.isin(keys.particle(b.key), ids) | np.isin(keys.partner(b.key), ids)
        b.active[gone] = 0

    def existing(self, key):
        """Whether each key is an intact or forming bond of this rank."""
        return np.isin(key, self.batch.key[self.batch.active != 0])

    def build(self, b):
        """Re-index the kept rows (intact or forming) by id; rows of particles this rank
        no longer owns leave. A partner beyond the ghost cutoff is an error on every rank
        (the cutoff covers the longest bond: it cannot happen unless a bond stretched by
        more than the skin between two rebuilds)."""
        if not self.any:
            self._gather = None
            return
        sim, st, old = self.sim, self.sim.store, self.batch
        keep = np.flatnonzero(old.active)
        key, first = np.unique(old.key[keep], return_index=True)   # migrated rows: twice
        keep = keep[first]
        order = np.argsort(st.id, kind="stable")
        i1, i2, missing = bk.bond_locals(keys.particle(key), keys.partner(key), st.id, order,
                                         st.pos, st.image, sim.cell.kernel, b.n_own)
        problem = None
        if missing.any():
            k = int(np.flatnonzero(missing)[0])
            problem = ("step %d: bond of particles %d and %d: the partner of the owned "
                       "particle is not within the ghost cutoff %g; it moved more than the "
                       "skin since the last rebuild" % (sim.step_count, keys.particle(key[k]),
                                                        keys.partner(key[k]), b.cutoff))
        sim.collective.raise_if_any(problem, InputError)
        here = np.flatnonzero(i1 >= 0)
        rows = ContactBatch(i1[here], i2[here], key[here])
        rows.active[:] = old.active[keep[here]]
        rows.state[:] = old.state[keep[here]]
        self.take(rows, b)

    def form(self):
        """Form the new bonds at the current positions (after the rebuild that indexed them)."""
        self._evaluate(form_only=True)

    def compute(self, table, nmat, f, t):
        self._evaluate()
        return None

    def _evaluate(self, form_only=False):
        """The bond law on every row; breaks recorded by the owner of particle 1."""
        sim, b = self.sim, self.batch
        if len(b) == 0:
            self.longest = 0.0
            return
        st = sim.store
        if len(self._broke) < len(b):
            self._broke = np.zeros(len(b), np.int8)
        n_broke, longest = bk.bond_forces(
            b.i1, b.i2, st.pos, st.image, sim.cell.kernel, st.vel, st.angvel, st.radius,
            st.mass, st.inertia, self.table(), sim.domain.dim == 2, sim.dt, sim.flags,
            b.active, b.state, self._broke, sim.threads, form_only)
        self.longest = max(longest, self.longest) if form_only else longest
        if n_broke:
            k = np.flatnonzero(self._broke[:len(b)] != 0)
            k = k[self.owner1[k] >= 0]
            n = b.T[k, :3]
            p = b.i1[k]
            log = {"id1": st.id[p], "id2": st.id[b.i2[k]], "time": np.full(len(k), sim.time),
                   "mode": self._broke[k].copy(),
                   "point": st.pos[p] + n * (st.radius[p] + 0.5 * b.u[k, 0])[:, None],
                   "normal": n}
            self.broken = {c: np.concatenate([self.broken[c], log[c]]) for c in log}

    def add_forces(self, f, t, flags, threads):
        if len(self.batch):
            super().add_forces(f, t, flags, threads, accumulate=True)

    def reach(self):
        """Longest intact bond on this rank (the ghost cutoff must cover it)."""
        return self.longest if self.any else 0.0

    # ------------------------------------------------------------ results
    def public(self):
        """Intact bonds of this rank (each once: the owner of particle 1), then the
        breaks it recorded, as the columns of Simulation.bonds."""
        b, st = self.batch, self.sim.store
        a = np.flatnonzero((b.active == 1) & (self.owner1 >= 0))
        p, q = b.i1[a], b.i2[a]
        n = b.T[a, :3]
        T = b.T[a].reshape(-1, 3, 3)
        nb = len(self.broken["id1"])
        return {
            "id1": np.r_[st.id[p], self.broken["id1"]].astype(np.int64),
            "id2": np.r_[st.id[q], self.broken["id2"]].astype(np.int64),
            "intact": np.r_[np.ones(len(a), bool), np.zeros(nb, bool)],
            "mode": np.r_[np.zeros(len(a), np.int8), self.broken["mode"]],
            "force": np.r_[np.einsum("kij,kj->ki", T, b.force[a]), np.zeros((nb, 3))],
            "moment": np.r_[np.einsum("kij,kj->ki", T, b.moment[a]), np.zeros((nb, 3))],
            "point": np.r_[st.pos[p] + n * (st.radius[p] + 0.5 * b.u[a, 0])[:, None],
                           self.broken["point"]],
            "normal": np.r_[n, self.broken["normal"]],
            "length": np.r_[st.radius[p] + st.radius[q] + b.u[a, 0], np.full(nb, np.nan)],
            "ends": np.r_[np.stack([st.pos[p], st.pos[p] + n * (st.radius[p] + st.radius[q] +
                                                              b.u[a, 0])[:, None]], axis=1),
                          np.full((nb, 2, 3), np.nan)],
            "broken_time": np.r_[np.full(len(a), np.nan), self.broken["time"]],
            "material": np.r_[b.state[a, ROW["material"]].astype(np.int64),
                              np.full(nb, -1, np.int64)]}

    def counts(self):
        """(intact, broken) over all ranks (collective)."""
        b = self.batch
        local = [np.count_nonzero((b.active != 0) & (self.owner1 >= 0)) if len(b) else 0,
                 len(self.broken["id1"])]
        return tuple(int(v) for v in self.sim.collective.sum(np.array(local, np.int64)))

    # ------------------------------------------------------------ checkpoints
    def describe(self):
        """JSON of the bond materials and the kind's state (checkpoint attribute)."""
        return json.dumps({"materials": [{k: v for k, v in asdict(m).items() if k != "index"}
                                         for m in self.materials],
                           "any": self.any, "longest": self.sim.collective.max(self.reach())})

    def restore(self, text, broken):
        """Materials and state from describe(); `broken`: the break log (given to one rank)."""
        d = json.loads(text)
        for m in d["materials"]:
            self.materials.append(BondMaterial(**m, index=len(self.materials)))
        self._table = None
        self.any, self.longest = d["any"], d["longest"]
        self.broken = broken
