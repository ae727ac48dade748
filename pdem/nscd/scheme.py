"""NSCD: non-smooth contact dynamics as the time-stepping scheme of pdem.Simulation,
selected with Simulation(..., scheme=pdem.NSCD(...)) instead of the explicit force
laws (Moreau-Jean, theta = 1: seed 003 with Coulomb friction, restitution and
rotations; pyx/nscd.pyx).

Simulation.step keeps its order, drift -> neighbours -> velocity update; with NSCD the
velocity update is, instead of contact forces and kick:
  v += g dt (free degrees of freedom, ghosts included: the same arithmetic as on their
  owners) -> potential contacts from the Verlet lists (pairs, and every wall kind's
  rows with gap < alert: boundary segments and points, planes, mesh facets) -> NLGS or
  Jacobi sweeps, ghost velocities and the residual exchanged after every sweep
  (pdem.nscd.exchange: one round of messages when the ghosts allow it) -> each contact
  row gets force = impulse / dt, and every particle the sum of its contact forces (for
  output and wall loads).
Between steps the positions are at t and the velocities are those the next drift
uses (Moreau-Jean's end-of-step velocity), as the explicit scheme keeps v(t + dt/2).

Contacts are solved in the order (id_i, kind, j) (i: the lower particle id of a pair
or the particle of a wall contact; kind: seed 003's numbering, CODES; j: the other id
or the wall element's index). Jacobi updates each particle from its contacts in that
order, so its results have the same bits on any number of ranks and threads. NLGS
becomes block Gauss-Seidel across ranks: each contact is solved once, by the owner of
its particle i, Gauss-Seidel within the rank (ghost copies included); the increments
given to ghosts are sent back to their owners at the end of the sweep and the ghosts
refreshed (pdem.nscd.solve): Jacobi between ranks, momentum kept.

pdem.nscd.GrainProblem runs the stages free_fall, detect and solve one by one (seed
003's course API) on a one-process Simulation.

Materials: the friction of a pair of materials (mixed or set by Simulation.pair) is
the Coulomb coefficient, its restitution the Newton coefficient (unset: 0, the seed's
perfectly inelastic impact). Stiffness and damping parameters are not used. A particle
whose translations (rotations) are all blocked has infinite mass (inertia): its
velocity is prescribed; blocking only some of them is refused.
"""
import math
import time

import numpy as np

from .. import validate
from .._kernels import integrate
from .._kernels import nscd as _k
from ..contact.flags import NO_RATCH
from ..errors import InputError
from ..scheme.base import Scheme, register
from .exchange import SweepExchange
from .solve import ContactSolve, exchange_ghost_velocities

SOLVERS = ("nlgs", "jacobi")
NORMAL_RULES = ("seed", "projected")
# contact codes of the solver: seed 003's numbering (pyx/nscd.pyx), by interaction kind
CODES = {"pair": 0, "segment": 1, "point": 2, "plane": 3, "mesh": 4, "region": 5}
PAIR = CODES["pair"]
WALL_NAMES = {1: "segment", 2: "point", 3: "plane", 4: "mesh facet", 5: "region wall"}


@register
class NSCD(Scheme):
    """Non-smooth contact dynamics for pdem.Simulation (see the module docstring).

    solver: "nlgs" (non-linear Gauss-Seidel) or "jacobi"; tol: a sweep converges when
    every velocity correction is below tol/dt (a length: the seed's tolerance; default
    1e-2 |g| dt^2, corrections below 1 % of gravity's velocity change per step, or
    without gravity 1e-4 x the smallest particle diameter); itmax: sweeps per step at most (a
    pdem.nscd.ConvergenceWarning reports the residual when reached); alert: surface
    distance below which a pair is a potential contact (default: the Simulation's
    skin); normal_rule: "seed" or "projected"; relaxation: Jacobi factor in (0, 1]
    (default 1 for the seed rule without friction, else 0.5); overlap_correction:
    fraction beta in [0, 1] of an overlap removed per step (seed: 0).
    After each step: `sweeps` and `residual` of its solve; `total_sweeps` so far;
    `timers`: seconds spent in the sweeps, the exchanges after them and waiting there."""
    name = "nscd"
    stiffness = False               # materials need friction and restitution only
    lever_flags = NO_RATCH          # torques of the rows from the branch vectors -+r n
    one_round = True                # the single-round exchange when the ghosts allow it

    def __init__(self, solver="nlgs", tol=None, itmax=1000, alert=None, normal_rule="seed",
                 relaxation=None, overlap_correction=0.0):
        if solver not in SOLVERS:
            raise InputError("NSCD: solver must be one of %s, got %r" % (SOLVERS, solver))
        if normal_rule not in NORMAL_RULES:
            raise InputError("NSCD: normal_rule must be one of %s, got %r"
                             % (NORMAL_RULES, normal_rule))
        self.solver, self.normal_rule = solver, normal_rule
        self.itmax = validate.integer("NSCD: itmax", itmax)
        self.tol = validate.number("NSCD: tol", tol, 0.0, none=True)
        self.alert = validate.number("NSCD: alert", alert, 0.0, low_open=False, none=True)
        self.relaxation = validate.number("NSCD: relaxation", relaxation, 0.0, 1.0, none=True)
        self.overlap_correction = validate.number("NSCD: overlap_correction",
                                                  overlap_correction, 0.0, 1.0, low_open=False)
        self.sweeps, self.residual, self.total_sweeps = 0, 0.0, 0
        # seconds in the sweep kernels, in the exchanges after them (ghost velocities and
        # residual) and, of those, waiting for the other ranks (single-round exchange)
        self.timers = {"sweeps": 0.0, "exchange": 0.0, "wait": 0.0}
        self._exchange = None

    def options(self):
        """The constructor's arguments (with tol and alert as resolved): NSCD(**options)."""
        return {k: getattr(self, k) for k in ("solver", "tol", "itmax", "alert", "normal_rule",
                                              "relaxation", "overlap_correction")}

    def reach(self, sim, radius):
        """The alert distance, added to the Verlet skin by Simulation._rebuild; resolves
        the defaults at the first build (collective)."""
        if self.tol is None:
            g = float(np.linalg.norm(sim.gravity))
            rmin = -sim.collective.max(-(float(radius.min()) if len(radius) else math.inf))
            self.tol = 1e-2 * g * sim.dt ** 2 if g > 0 else (
                2e-4 * rmin if math.isfinite(rmin) else 1e-9)
        if self.alert is None:
            if sim.skin is None:                # no particles yet: decided later
                return 0.0
            self.alert = sim.skin
        return self.alert

    def stats(self):
        return {"solver_sweeps": self.sweeps}

    # ------------------------------------------------------------ the velocity update
    def advance(self, sim):
        """Free fall, contacts, solve and contact forces of one step (collective).
        Returns (problem message or None, index of a particle whose velocity is not
        finite or -1)."""
        clock = time.perf_counter()
        st = sim.store
        self.free_fall(sim)
        contacts, rows = self.detect(sim)
        self.solve(sim, contacts, "step %d (t=%.6g): " % (sim.step_count, sim.time))
        self._write_rows(sim, contacts, rows)
        problem = self._overlap_message(sim, contacts)
        sim.sum_forces()
        n_own = st.n_own
        ok = np.all(np.isfinite(st.vel[:n_own]), axis=1) & \
            np.all(np.isfinite(st.angvel[:n_own]), axis=1)
        bad = int(np.argmin(ok)) if not ok.all() else -1
        sim.timers["contact"] += time.perf_counter() - clock
        return problem, bad

    # the stages of advance (pdem.nscd.GrainProblem calls them one by one: seed 003's API)
    @staticmethod
    def free_fall(sim):
        """v += g dt for every free degree of freedom, ghosts included."""
        st, zero = sim.store, np.zeros((sim.store.n, 3))
        integrate.kick(st.vel, st.angvel, zero, zero, st.mass, st.inertia, st.blocked,
                       sim.gravity, sim.dt, st.n, sim.threads)

    def detect(self, sim):
        """The potential contacts (gap < alert) from the current candidate lists: a
        ContactSolve in solve order and, per contact, (kind index, row in its batch)."""
        self._mass, self._inv_inertia = self._masses(sim)
        mu_table, e_table = sim.materials.coefficients()
        self._relax = self.relaxation
        if self._relax is None:
            self._relax = 1.0 if (self.normal_rule == "seed" and not np.any(mu_table > 0)) \
                else 0.5
        return self._contacts(sim, self._mass, mu_table, e_table)

    def solve(self, sim, contacts, where=""):
        """NLGS or Jacobi sweeps on the velocities of sim.store (collective); sets
        sweeps and residual and returns the sweeps."""
        st = sim.store
        w = np.ascontiguousarray(st.angvel if sim.domain.dim == 3 else st.angvel[:, 2:])
        any_contacts = sim.collective.max(float(len(contacts))) > 0
        self.sweeps, self.residual = contacts.solve(
            self.solver, st.vel, w, st.radius, self._mass, self._inv_inertia, sim.dt, self.tol,
            self.itmax, st.n_own, beta=self.overlap_correction,
            projected=self.normal_rule == "projected", relax=self._relax, threads=sim.threads,
            any_contacts=any_contacts,
            end_sweep=lambda res, dv, dw: self._end_sweep(sim, w, res, dv, dw), where=where,
            timers=self.timers)
        if sim.domain.dim == 2:
            st.angvel[:, 2] = w[:, 0]
        self.total_sweeps += self.sweeps
        return self.sweeps

    def _end_sweep(self, sim, w, res, ghost_dv, ghost_dw):
        """Ghost velocities current after a sweep; returns the residual over all ranks:
        in one round of messages when the ghosts allow it (pdem.nscd.exchange), else
        along the ghost swaps and an Allreduce."""
        st = sim.store
        if sim.size == 1 and st.n == st.n_own:
            return res
        plan = self._exchange
        if plan is None or plan.swaps is not sim.ghosts.swaps:     # made once per ghost build
            if plan is not None:
                plan.free()
            plan = self._exchange = SweepExchange(sim.ghosts, st.n_own, st.n, st.vel.shape[1],
                                                  w.shape[1], self.solver == "nlgs",
                                                  self.timers)
        if plan.usable and self.one_round:
            return plan.end_sweep(res, st.vel, w, ghost_dv, ghost_dw)
        exchange_ghost_velocities(sim.ghosts, st.vel, w, st.n_own, ghost_dv, ghost_dw)
        return sim.collective.max(res)

    def _masses(self, sim):
        """Masses and inverse inertias of the local particles for the solver: inf and
        0 for blocked translations and rotations (checked: all or none)."""
        st = sim.store
        if sim.domain.dim == 3:
            trans, rot = 7, 56
        else:
            trans, rot = 3, 32
        t = st.blocked & trans
        r = st.blocked & rot
        bad = np.flatnonzero(((t != 0) & (t != trans)) | ((r != 0) & (r != rot)))
        sim.collective.raise_if_any(None if not len(bad) else (
            "NSCD: particle id %d has only some of its %s blocked (blocked bits %d); block "
            "all translations and/or all rotations" % (
                st.id[bad[0]], "translations" if t[bad[0]] not in (0, trans) else "rotations",
                int(st.blocked[bad[0]]))), InputError)
        mass = np.where(t == trans, math.inf, st.mass)
        inv_inertia = np.where(r == rot, 0.0, 1.0 / st.inertia)
        return mass, inv_inertia

    def _contacts(self, sim, mass, mu_table, e_table):
        """The step's potential contacts in solve order, and for each its row in its
        batch: (index of its interaction kind in sim.interactions, row). A contact
        between two bodies of infinite mass is left out (nothing to solve). mu_table,
        e_table: friction and restitution per material pair (MaterialTable.coefficients)."""
        st, alert = sim.store, self.alert
        nmat = max(1, len(sim.materials.materials))
        free = mass < math.inf
        parts = []      # (code, kind index, rows, i, j, id_i, id_j, normal, gap, vb, pair index)
        for b, kind in enumerate(sim.interactions.values()):
            rec = kind.batch
            if not kind.contact or not kind.nscd or (not len(rec) and kind.name != "pair"):
                continue                # (the pair kind's part, empty or not, gives dtypes)
            if kind.name == "pair":
                normal, gap = np.empty((len(rec), 3)), np.empty(len(rec))
                _k.verlet_pair_gaps(rec.i1, rec.i2, st.pos, st.image, sim.cell.kernel,
                                    st.radius, normal, gap, sim.threads)
                k = np.flatnonzero((gap < alert) & (free[rec.i1] | free[rec.i2]))
                p1, p2 = rec.i1[k], rec.i2[k]
                # i = particle 1 (the lower id); periodic images of owned particles are
                # solved on the owned rows
                o1, o2 = kind.owner1[k], kind.owner2[k]
                parts.append((PAIR, b, k, np.where(o1 >= 0, o1, p1), np.where(o2 >= 0, o2, p2),
                              st.id[p1], st.id[p2], normal[k], gap[k], np.zeros((len(k), 3)),
                              st.material[p1] * nmat + st.material[p2]))
                continue
            # walls: the particle (owned) is i, the wall element j
            k, normal, gap, vb, wall_material = kind.gaps(alert)
            keep = free[rec.i1[k]]
            k = k[keep]
            p, w = rec.i1[k], rec.i2[k]
            parts.append((CODES[kind.name], b, k, p, w, st.id[p], w, normal[keep], gap[keep],
                          vb[keep], wall_material[keep] * nmat + st.material[p]))
        code, batch = (np.concatenate([np.full(len(part[2]), part[c], np.int8) for part in parts])
                       for c in (0, 1))
        row, ci, cj, id_i, id_j, normal, gap, vb, mat = (
            np.concatenate([part[c] for part in parts]) for c in range(2, 11))
        order = np.lexsort((id_j, code, id_i))
        solve = ContactSolve(code[order], ci[order], cj[order], normal[order], gap[order],
                             mu_table[mat[order]], e_table[mat[order]], vb[order])
        return solve, (batch[order], row[order])

    def _write_rows(self, sim, contacts, rows):
        """Contact rows for output and loads, in the explicit scheme's convention:
        force on body 2 (particle 2 of a pair, the particle of a wall contact) =
        impulse / dt, normal (local x axis: from particle 1 to 2, from the wall into the
        particle), u_x = gap, no moment (the torques b x F follow with the branch vectors
        b = -+r n: lever_flags); active: touching or carrying an impulse."""
        force_i = (contacts.pn[:, None] * contacts.normal + contacts.pt) / sim.dt
        live = (contacts.pn > 0.0) | (contacts.gap < 0.0)
        write_rows(sim, rows, contacts.normal, contacts.gap, force_i, live)

    def _overlap_message(self, sim, contacts):
        """A message when an overlap exceeds max_overlap of the smaller radius."""
        if not len(contacts):
            return None
        r, ci, cj = sim.store.radius, contacts.ci, contacts.cj
        pair = contacts.kind == PAIR
        ratio = -contacts.gap / np.minimum(r[ci], r[np.where(pair, cj, ci)])
        c = int(np.argmax(ratio))
        if ratio[c] <= sim.max_overlap:
            return None
        ids = sim.store.id
        who = ("particles %d and %d" % (ids[ci[c]], ids[cj[c]]) if pair[c] else
               "particle %d and %s %d" % (ids[ci[c]], WALL_NAMES[contacts.kind[c]], cj[c]))
        return ("step %d (t=%.6g): overlap of %s is %.3g of the smaller radius (limit "
                "max_overlap=%g): NSCD tolerance too large, itmax too small or alert "
                "distance below the approach per step" % (sim.step_count, sim.time, who,
                                                            ratio[c], sim.max_overlap))


def write_rows(sim, rows, normal, gap, force_i, live):
    """Write a solved contact list into the rows of the interaction kinds it came from
    (rows: (kind index, row) per contact; normal from j to i, gap, force on particle i,
    live: active) in the explicit scheme's convention: force on body 2 (particle 2 of
    a pair, the particle of a wall contact), local x axis from particle 1 to 2 (from
    the wall into the particle), u_x = gap; other rows inactive. Returns, per kind,
    (the kind's batch, the contacts' state rows, the contacts' indices) for more columns."""
    batch, row = rows
    out = []
    for b, kind in enumerate(sim.interactions.values()):
        rec = kind.batch
        if not kind.contact or not kind.nscd or not len(rec):
            continue
        rec.active[:] = 0
        sel = np.flatnonzero(batch == b)
        k = rec.claim(row[sel])            # their state rows, zeroed
        rec.u[k, 0] = gap[sel]
        if kind.name == "pair":         # i is particle 1
            rec.T[k, :3] = -normal[sel]
            rec.force[k] = -force_i[sel]
        else:
            rec.T[k, :3] = normal[sel]
            rec.force[k] = force_i[sel]
        rec.active[row[sel]] = live[sel]
        out.append((rec, k, sel))
    return out
