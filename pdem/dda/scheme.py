"""Particle DDA (seed 002, "颗粒DDA"): Discontinuous Deformation Analysis (Shi 1988;
Shi & Goodman 1985) of disks and spheres as the time-stepping scheme of
pdem.Simulation, selected with Simulation(..., scheme=pdem.DDA(penalty=...)).

Each step solves, for every particle's displacement d (translation and rotation;
2D: u, v, r0; deformable particles: and the strains), Shi's implicit equations of motion (Shi 1988, sec. 2.6, 5.3: constant
acceleration over the step)
    (2 M / dt^2 + K) d = F + 2 M v0 / dt,      v1 = 2 d / dt - v0,
with the sub-matrices of seed 002: inertia (2 M / dt^2), body loads (gravity), point
loads (Simulation.set_external_load), fixed displacements (blocked dofs: removed from
the system, their displacement is their prescribed velocity times dt) and the
contacts' normal and shear penalty springs with Mohr-Coulomb friction (pyx/dda.pyx).

Simulation.step drifts x += v0 dt before the scheme runs, so the scheme solves for the
correction delta = d - v0 dt:  (2 M / dt^2 + K) delta = F(contacts at x + v0 dt),
contacts linearised at the drifted configuration (for disks and spheres the gap is
exact there), then x += delta and v1 = v0 + 2 delta / dt (the same d as Shi's form).
The stored velocity is v1 times `dynamic` (Shi's dynamic factor: 1 dynamic, 0 static,
each step starting at rest), which the next drift uses.

Open-close iteration (Shi 1988, sec. 4.4): the contact states (open, stick, slide)
are those of the previous step (new contacts: stick if they overlap after the drift);
each iteration assembles the sub-matrices, solves, and checks every state
(pyx/dda.pyx contact_states), until no state changes (at most max_open_close
iterations: then a DDAWarning). The solve is matrix-free: each particle's row of
blocks (its diagonal block and one block per neighbour: seed 002's nK, nBall,
nFilter) feeds A x (pyx/dda.pyx matvec), preconditioned conjugate gradients with the
inverse diagonal blocks (block Jacobi). Its dot products are exact sums of the
per-particle terms (Shewchuk partials, gathered over ranks and summed by math.fsum),
and every row sums its contacts in (id_i, kind, id_j) order: the same bits on any
number of ranks and threads. Ghost rows of the search direction are refreshed before
every product.

Deformable particles (rigid=False): 12 unknowns per particle, the rigid ones and the
strain increments of Shi's first-order displacement function (u(a) = t + theta x a +
eps a), with the elastic (V C), initial-stress (-V sigma0) and strain-inertia
sub-matrices; contacts include the strain terms and the strained radius (docs/dda.md).

Large rotations: a disk or sphere is its centre and radius, so the step's rotation
moves no material point of the shape; the centre moves by the translation and the
orientation turns by the exact rotation of the angle (integrate.drift). The
first-order inflation of block DDA's vertices (corrected for disks by Ke & Bray 1995)
does not arise.

Contact state between steps lives in the contact rows (u0: the shear spring's
elongation e, phi0[0]: 1 stick, 2 slide; active: closed), so it follows particles
across ranks and into checkpoints; the velocities are the particles'.
"""
import math
import time
import warnings

import numpy as np

from .. import validate
from .._kernels import contacts as _ck
from .._kernels import dda as _k
from .._kernels import integrate
from ..contact.flags import NO_RATCH
from ..errors import InputError, SimulationError
from ..nscd.scheme import NSCD, PAIR, WALL_NAMES, write_rows
from ..particles import DEFORMABLE_FIELDS
from ..scheme.base import Scheme, register

OPEN, STICK, SLIDE = 0, 1, 2
PRECONDITIONERS = ("jacobi", "sgs")
FRICTION_TOL = 1e-2     # a slide's friction load converged: relative change below this
OPEN_CLOSE_TOL = 1e-3   # hysteresis: an open contact closes when its end gap is below -this
                        # x tol, a slide sticks when its slip reverses by more


class DDAWarning(UserWarning):
    """An open-close iteration or a conjugate-gradient solve reached its cap."""


@register
class DDA(Scheme):
    """Particle DDA (see the module docstring).

    penalty: normal contact spring k_n (force / length; Shi suggests 10-100 E h);
    shear_penalty: shear spring k_s (default: penalty); max_open_close: open-close
    iterations per step at most; tol: largest overlap allowed at the end of a step, a
    length (default 1e-2 x the smallest radius; more stops the run); rigid: True (rigid
    disks and spheres) or False (deformable: a uniform strain per particle, the
    materials' young and poisson); dynamic: Shi's dynamic factor in [0, 1], the fraction of the end
    velocity carried into the next step; cg_tol: relative residual of the conjugate
    gradients; cg_maxiter: their iteration cap (default 1000); alert: the surface
    distance below which a pair is a potential contact (default: the skin);
    preconditioner: "jacobi" (the inverse diagonal blocks) or "sgs" (multicolour
    symmetric Gauss-Seidel over the particle graph, colours by Jones-Plassmann on
    hashed ids: the same bits on any number of ranks).
    After each step: `cg_iterations` and `open_close` of the step, and totals."""
    name = "dda"
    stiffness = False               # penalties are the scheme's; materials give friction
    lever_flags = NO_RATCH          # torques of the rows from the branch vectors -+r n

    def __init__(self, penalty=None, shear_penalty=None, max_open_close=20, tol=None,
                 rigid=True, dynamic=1.0, cg_tol=1e-12, cg_maxiter=1000, alert=None,
                 preconditioner="jacobi"):
        self.penalty = validate.number("DDA: penalty", penalty, 0.0)
        self.shear_penalty = validate.number("DDA: shear_penalty", shear_penalty, 0.0,
                                             none=True)
        if self.shear_penalty is None:
            self.shear_penalty = self.penalty
        self.max_open_close = validate.integer("DDA: max_open_close", max_open_close)
        self.tol = validate.number("DDA: tol", tol, 0.0, none=True)
        if not isinstance(rigid, (bool, np.bool_)):
            raise InputError("DDA: rigid must be True or False, got %r" % (rigid,))
        self.rigid = bool(rigid)
        self.nd = 6 if self.rigid else 12      # unknowns per particle row
        self.particle_fields = () if self.rigid else DEFORMABLE_FIELDS
        self.dynamic = validate.number("DDA: dynamic", dynamic, 0.0, 1.0, low_open=False)
        self.cg_tol = validate.number("DDA: cg_tol", cg_tol, 0.0, 1.0)
        self.cg_maxiter = validate.integer("DDA: cg_maxiter", cg_maxiter)
        self.alert = validate.number("DDA: alert", alert, 0.0, low_open=False, none=True)
        if preconditioner not in PRECONDITIONERS:
            raise InputError("DDA: preconditioner must be one of %s, got %r"
                             % (", ".join(map(repr, PRECONDITIONERS)), preconditioner))
        self.preconditioner = preconditioner
        self.cg_iterations = self.open_close = 0
        self.total_cg = self.total_open_close = 0
        self.operator = None            # the last step's matrix-free operator (tests)

    def options(self):
        """The constructor's arguments (tol and alert as resolved): DDA(**options)."""
        return {k: getattr(self, k) for k in (
            "penalty", "shear_penalty", "max_open_close", "tol", "rigid", "dynamic",
            "cg_tol", "cg_maxiter", "alert", "preconditioner")}

    def reach(self, sim, radius):
        """The alert distance, added to the Verlet skin; resolves the defaults at the
        first build (collective)."""
        if self.tol is None:
            rmin = -sim.collective.max(-(float(radius.min()) if len(radius) else math.inf))
            if math.isfinite(rmin):
                self.tol = 1e-2 * rmin
        if self.alert is None:
            if sim.skin is None:
                return 0.0
            self.alert = sim.skin
        return self.alert

    def check(self, sim):
        """Deformable particles need Young's modulus of their materials (one line, on
        every rank; collective)."""
        if self.rigid:
            return
        mats = sim.materials.materials
        bad = [mats[k].name for k in np.unique(sim.store.material[:sim.store.n_own])
               if mats[k].young is None]
        sim.collective.raise_if_any(
            "DDA(rigid=False): material %r needs young (Young's modulus) for the elastic "
            "sub-matrix, got None" % bad[0] if bad else None, InputError)

    def eps(self):
        """The open-close hysteresis, OPEN_CLOSE_TOL x tol (0 before tol is resolved:
        no particle yet)."""
        return OPEN_CLOSE_TOL * (self.tol or 0.0)

    def stats(self):
        return {"dda_cg_iterations": self.cg_iterations, "dda_open_close": self.open_close}

    # ------------------------------------------------------------------ the step
    def advance(self, sim):
        """One DDA step on the drifted configuration (collective): open-close
        iterations of the matrix-free solve, then x += delta, the velocities, the
        contact rows and forces. Returns (problem message or None, bad row or -1)."""
        clock = time.perf_counter()
        st = sim.store
        op = Operator(sim, self)
        self.operator = op
        c = op.contacts
        x = np.zeros((st.n, self.nd))
        self.cg_iterations = 0
        where = "step %d (t=%.6g): " % (sim.step_count, sim.time)
        for it in range(1, self.max_open_close + 1):
            op.assemble()
            self.cg_iterations += op.solve(x, where)
            changed = _k.contact_states(c.kind, c.ci, c.cj, c.normal, c.gap, st.radius, x,
                                        op.e, op.slip, c.mu, self.penalty, self.shear_penalty,
                                        FRICTION_TOL, self.eps(), op.flips, op.code, op.ff,
                                        op.sdir, op.gap_end,
                                        sim.threads)
            if sim.size > 1:
                changed = sim.collective.max(float(changed))
            if not changed:
                break
        else:
            warnings.warn(DDAWarning(
                "%sDDA: open-close iteration not converged in max_open_close=%d iterations "
                "(contact states still changing); the step goes on with the last states"
                % (where, self.max_open_close)), stacklevel=3)
        self.open_close = it
        self.total_open_close += it
        self.total_cg += self.cg_iterations
        op.write_rows(x)
        problem = op.overlap_message(where)
        if not self.rigid:
            op.update_strains(x)
        self._move(sim, x)
        sim.sum_forces()
        n = st.n_own
        ok = np.all(np.isfinite(st.vel[:n]), axis=1) & np.all(np.isfinite(st.angvel[:n]), axis=1)
        sim.timers["contact"] += time.perf_counter() - clock
        return problem, (int(np.argmin(ok)) if not ok.all() else -1)

    def _move(self, sim, x):
        """x += delta, orientations turned by the rotations, v1 = dynamic (v0 + 2 delta
        / dt) on the free dofs (fixed dofs keep their prescribed velocities)."""
        st, n = sim.store, sim.store.n_own
        dx = np.ascontiguousarray(x[:n, :3])
        dr = np.ascontiguousarray(x[:n, 3:6])
        integrate.drift(st.pos, dx, dr, st.orient, st.pos, 1.0, n, sim.threads)
        free = dof_mask(sim, 6)[:n]
        scale = np.where(free > 0, self.dynamic, 1.0)
        st.vel[:n] = scale[:, :3] * (st.vel[:n] + (2.0 / sim.dt) * dx)
        st.angvel[:n] = scale[:, 3:] * (st.angvel[:n] + (2.0 / sim.dt) * dr)


def dof_mask(sim, nd):
    """(n, nd) 1 for a free dof, 0 for a fixed one (blocked, or out of the plane in 2D:
    w, rx, ry and the strains ezz, gyz, gzx)."""
    st = sim.store
    bits = st.blocked[:st.n].astype(np.int64)
    mask = np.ones((st.n, nd), bool)
    mask[:, :6] = ((bits[:, None] >> np.arange(6)) & 1) == 0
    if sim.domain.dim == 2:
        mask[:, [k for k in (2, 3, 4, 8, 9, 10) if k < nd]] = False
    return mask.astype(float)


def elasticity(young, poisson, dim):
    """The 6 x 6 isotropic elasticity matrix in Voigt order (xx, yy, zz, yz, zx, xy),
    engineering shear strains: 3D, lambda = E nu / ((1 + nu) (1 - 2 nu)), G = E / (2
    (1 + nu)); 2D plane stress on (xx, yy, xy): E / (1 - nu^2) [[1, nu], [nu, 1]], G
    (the other rows zero: fixed dofs)."""
    C = np.zeros((6, 6))
    g = young / (2.0 * (1.0 + poisson))
    if dim == 3:
        lam = young * poisson / ((1.0 + poisson) * (1.0 - 2.0 * poisson))
        C[:3, :3] = lam
        C[[0, 1, 2], [0, 1, 2]] = lam + 2.0 * g
        C[[3, 4, 5], [3, 4, 5]] = g
    else:
        f = young / (1.0 - poisson * poisson)
        C[[0, 1], [0, 1]] = f
        C[0, 1] = C[1, 0] = f * poisson
        C[5, 5] = g
    return C


def strain_disp(e, a):
    """eps a for strains e (m, 6) (engineering shears) at branch vectors a (m, 3)."""
    return np.column_stack([
        e[:, 0] * a[:, 0] + 0.5 * e[:, 5] * a[:, 1] + 0.5 * e[:, 4] * a[:, 2],
        0.5 * e[:, 5] * a[:, 0] + e[:, 1] * a[:, 1] + 0.5 * e[:, 3] * a[:, 2],
        0.5 * e[:, 4] * a[:, 0] + 0.5 * e[:, 3] * a[:, 1] + e[:, 2] * a[:, 2]])


class Operator:
    """One step's contacts, sub-matrices and matrix-free system (rows: the owned
    particles; x and the search directions have ghost rows, refreshed before each
    product)."""

    def __init__(self, sim, scheme):
        st, dt = sim.store, sim.dt
        self.sim, self.scheme = sim, scheme
        n, n_own = st.n, st.n_own
        nd = self.nd = scheme.nd
        self.mask = dof_mask(sim, nd)
        free_any = self.mask.any(axis=1)
        mass = np.where(free_any, st.mass[:n], math.inf)
        mu_table, e_table = sim.materials.coefficients()
        # contacts in (id_i, kind, id_j) order with their rows: NSCD's detection
        self.contacts, self.rows = NSCD._contacts(scheme, sim, mass, mu_table, e_table)
        c = self.contacts
        m = len(c)
        self.start, self.entry = _ck.build_gather_lists(
            c.ci, np.where(c.kind == PAIR, c.cj, -1).astype(np.int32), n)
        if nd == 12:
            self._predict_strains()
        # inertia 2 M / dt^2 and loads (gravity, point loads) of the owned rows
        inert = np.empty((n_own, nd))
        inert[:, :3] = (2.0 / dt ** 2) * st.mass[:n_own, None]
        inert[:, 3:6] = (2.0 / dt ** 2) * st.inertia[:n_own, None]
        self.own_diag = np.zeros((n_own, nd * nd))
        load = np.zeros((n_own, nd))
        if nd == 12:
            self._strain_blocks(inert, load)
        self.own_diag[:, ::nd + 1] += inert
        load[:, :3] = st.mass[:n_own, None] * sim.gravity
        if sim.external:
            f, t = np.zeros((n_own, 3)), np.zeros((n_own, 3))
            sim.external.add(sim, f, t)
            load[:, :3] += f
            load[:, 3:] += t
        self.load = load
        self._initial_states(sim)
        self.kii, self.kjj, self.kij = (np.empty((m, nd * nd)) for _ in range(3))
        self.bi, self.bj = np.empty((m, nd)), np.empty((m, nd))
        self.diag = np.empty((n_own, nd * nd))
        self.inv = np.empty((n_own, nd * nd))
        self.nK = np.zeros((len(self.entry), nd * nd))
        self.nBall = np.empty(len(self.entry), np.int32)
        self.b = np.empty((n_own, nd))
        self.gap_end = c.gap.copy()
        self.flips = np.zeros(m, np.int8)   # state changes of each contact in this step
        self.colour = None                  # the SGS colours (at the first use)

    def _predict_strains(self):
        """Deformable particles: the drift of the strain dofs (strain + dt rate, stress
        + C dt rate: self.pred, with the rates in its last 6 columns and current ghost
        rows, and self.pred_stress) and the gaps of the deformed particles: a sphere
        strained by eps reaches r (1 + n . eps n) along n (first order)."""
        sim, c = self.sim, self.contacts
        st, n_own = sim.store, sim.store.n_own
        self.scheme.check(sim)          # materials added since the first step
        table = np.array([elasticity(m.young or 0.0, m.poisson, sim.domain.dim).ravel()
                          for m in sim.materials.materials]).reshape(-1, 36)   # walls: no E
        self.elastic = np.ascontiguousarray(table[st.material[:n_own]])
        self.pred = np.zeros((st.n, 12))
        self.pred_stress = np.empty((n_own, 6))
        _k.strain_predict(st.strain, st.stress, st.strain_rate, self.elastic, sim.dt,
                          self.pred, self.pred_stress, n_own, sim.threads)
        self.refresh(self.pred)
        n = c.normal
        stretch_i = np.einsum("ij,ij->i", strain_disp(self.pred[c.ci], n), n)
        pair = c.kind == PAIR
        cj = np.where(pair, c.cj, 0)
        stretch_j = np.where(pair, np.einsum("ij,ij->i", strain_disp(self.pred[cj], n), n),
                             0.0)
        c.gap -= st.radius[c.ci] * stretch_i + np.where(pair, st.radius[cj], 0.0) * stretch_j

    def _strain_blocks(self, inert, load):
        """Deformable particles (Shi 1988 ch. 2): the inertia of the strain dofs, the
        elastic sub-matrix V C and the initial-stress load -V sigma0 (sigma0: the
        drifted stress). Mass matrix about the centre: int rho T^T T dV is diagonal for a
        sphere or disk, with J = int rho a_x^2 dV = m r^2 / 5 (sphere) or m r^2 / 4
        (disk) on exx, eyy, ezz and J / 2 on the engineering shears."""
        sim = self.sim
        st, n_own, dt, dim = sim.store, sim.store.n_own, sim.dt, sim.domain.dim
        r = st.radius[:n_own]
        volume = (4.0 / 3.0 * math.pi * r ** 3) if dim == 3 else math.pi * r * r
        jm = st.mass[:n_own] * r * r / (5.0 if dim == 3 else 4.0)
        inert[:, 6:] = (2.0 / dt ** 2) * jm[:, None] * np.array([1, 1, 1, 0.5, 0.5, 0.5])
        blocks = self.own_diag.reshape(n_own, 12, 12)
        blocks[:, 6:, 6:] = volume[:, None, None] * self.elastic.reshape(n_own, 6, 6)
        load[:, 6:] = -volume[:, None] * self.pred_stress

    def update_strains(self, x):
        """The strain and stress fields at the end of the step (pyx strain_update): the
        step's rotation is Shi's d, the drift's w0 dt plus the correction."""
        sim = self.sim
        st, n_own = sim.store, sim.store.n_own
        theta = np.ascontiguousarray(st.angvel[:n_own] * sim.dt + x[:n_own, 3:6])
        _k.strain_update(self.pred, self.pred_stress, x, theta, self.elastic, self.mask,
                         sim.dt, self.scheme.dynamic, st.strain, st.stress, st.strain_rate,
                         n_own, sim.threads)

    def _initial_states(self, sim):
        """Contact states from the rows (closed rows carry their state and shear
        elongation), new overlapping contacts stick; the predicted elongation e: the old
        one turned into the new tangent plane (length kept) plus the tangential
        displacement of the drift."""
        st, c, dt = sim.store, self.contacts, sim.dt
        m = len(c)
        kinds = list(sim.interactions.values())
        eps = self.scheme.eps()
        code = np.where(c.gap < eps, STICK, OPEN).astype(np.int8)      # touching: closed
        closed = np.zeros(m, bool)      # closed at the end of the last step
        e_old = np.zeros((m, 3))
        batch, row = self.rows
        for b in np.unique(batch):
            rec = kinds[b].batch
            sel = np.flatnonzero(batch == b)
            k = row[sel]
            was = rec.active[k] != 0
            s = rec.at(k[was])                  # their state rows
            code[sel[was]] = np.where(rec.phi0[s, 0] == SLIDE, SLIDE, STICK)
            e_old[sel[was]] = rec.u0[s]
            closed[sel[was]] = True
        n = c.normal
        mag = np.linalg.norm(e_old, axis=1)
        e_rot = e_old - np.einsum("ij,ij->i", e_old, n)[:, None] * n
        mag_rot = np.linalg.norm(e_rot, axis=1)
        e_rot *= np.where(mag_rot > 0, mag / np.where(mag_rot > 0, mag_rot, 1.0), 0.0)[:, None]
        # the drift's relative displacement of the contact points (i minus j)
        r_i = st.radius[c.ci]
        w = st.angvel
        disp = (st.vel[c.ci] + np.cross(w[c.ci], -r_i[:, None] * n)) * dt
        pair = c.kind == PAIR
        cj = np.where(pair, c.cj, 0)
        disp_j = np.where(pair[:, None], (st.vel[cj] + np.cross(
            w[cj], st.radius[cj][:, None] * n)) * dt, c.vb * dt)
        if self.nd == 12:       # the strain rates' part of the drift
            disp = disp + strain_disp(self.pred[c.ci, 6:], -r_i[:, None] * n) * dt
            disp_j = disp_j + np.where(pair[:, None], strain_disp(
                self.pred[cj, 6:], st.radius[cj][:, None] * n) * dt, 0.0)
        d = disp - disp_j
        d -= np.einsum("ij,ij->i", d, n)[:, None] * n
        self.slip = np.ascontiguousarray(d)
        self.e = np.ascontiguousarray(e_rot + d)
        kn = self.scheme.penalty
        self.ff = c.mu * kn * np.maximum(-c.gap, 0.0)
        emag = np.linalg.norm(self.e, axis=1)
        self.sdir = np.ascontiguousarray(self.e / np.where(emag > 0, emag, 1.0)[:, None])
        code[(code == SLIDE) & ((emag == 0) | (self.ff == 0))] = STICK
        self.code = code

    def assemble(self):
        """The contact sub-matrices and each owned particle's row (once per open-close
        iteration) and the block-Jacobi preconditioner."""
        sim, c, s = self.sim, self.contacts, self.scheme
        st, n_own = sim.store, sim.store.n_own
        _k.contact_blocks(c.kind, c.ci, c.cj, c.normal, c.gap, st.radius, self.code, self.e,
                          self.ff, self.sdir, s.penalty, s.shear_penalty, self.kii, self.kjj,
                          self.kij, self.bi, self.bj, sim.threads)
        _k.gather_rows(self.start, self.entry, c.ci, c.cj, c.kind, self.kii, self.kjj,
                       self.kij, self.bi, self.bj, self.own_diag, self.load, self.mask,
                       self.diag, self.nK, self.nBall, self.b, n_own, sim.threads)
        bad = np.zeros(n_own, np.int8)
        _k.invert_blocks(self.diag, self.inv, bad, n_own, sim.threads)
        k = np.flatnonzero(bad)
        if len(k):
            raise SimulationError("DDA: the diagonal block of particle %d is not positive "
                                  "definite (zero mass or inertia?)" % st.id[k[0]])

    def precondition(self, r, z):
        """z = M^-1 r on the owned rows: block Jacobi, or the multicolour symmetric
        Gauss-Seidel sweeps (M = (D + L) D^-1 (D + U) in colour order; ghost rows of
        the sweep refreshed after each colour)."""
        sim = self.sim
        if self.scheme.preconditioner == "jacobi":
            _k.block_apply(self.inv, r, z, sim.store.n_own, sim.threads)
            return
        if self.colour is None:
            self._colour()
        y = self.sweep
        for k, rows in enumerate(self.colour_rows):
            _k.sgs_sweep(self.start, self.nBall, self.nK, self.inv, self.colour, rows, r, y,
                         k, True, sim.threads)
            self.refresh(y)
        for k in range(len(self.colour_rows) - 1, -1, -1):
            _k.sgs_sweep(self.start, self.nBall, self.nK, self.inv, self.colour,
                         self.colour_rows[k], y, z, k, False, sim.threads)
            self.refresh(z)

    def _colour(self):
        """Jones-Plassmann colours of the particle graph (the step's potential contacts;
        collective): weights a bijective hash (splitmix64) of the ids, rounds until
        every row has a colour, ghost colours refreshed between rounds."""
        sim = self.sim
        st, n_own = sim.store, sim.store.n_own
        z = st.id[:st.n].astype(np.uint64)
        with np.errstate(over="ignore"):
            z = z + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            weight = np.ascontiguousarray(z ^ (z >> np.uint64(31)))
        colour = np.full((st.n, 1), -1.0)
        new = np.empty_like(colour)
        while True:
            left = _k.colour_round(self.start, self.nBall, weight, colour, new, n_own,
                                   sim.threads)
            colour[:n_own] = new[:n_own]
            self.refresh(colour)
            if sim.size > 1:
                left = sim.collective.max(float(left))
            if not left:
                break
        count = int(sim.collective.max(float(colour[:n_own].max()) if n_own else -1.0)) + 1
        own = colour[:n_own, 0].astype(np.int64)
        self.colour = colour
        self.colour_rows = [np.flatnonzero(own == k).astype(np.int32) for k in range(count)]
        self.sweep = np.zeros((st.n, self.nd))

    def matvec(self, x, y):
        """y = A x on the owned rows; x needs current ghost rows."""
        st = self.sim.store
        _k.matvec(self.start, self.nBall, self.nK, self.diag, x, y, st.n_own, self.sim.threads)

    def refresh(self, a):
        """Ghost rows of a (n, nd) from their owners."""
        sim = self.sim
        if sim.size > 1 or sim.store.n > sim.store.n_own:
            sim.ghosts.refresh_arrays([a], tag=400)

    def dots(self, *pairs):
        """The dot products a . b of the owned rows, exactly rounded sums of the
        per-particle terms over all ranks (the same bits on any rank count)."""
        sim = self.sim
        n = sim.store.n_own
        terms = np.empty(n)
        parts = np.empty((len(pairs), 80))
        for k, (a, b) in enumerate(pairs):
            _k.row_dots(a, b, terms, n, sim.threads)
            parts[k] = _k.partials(terms)
        if sim.size > 1:
            everything = np.empty((sim.size,) + parts.shape)
            sim.comm.Allgather(parts, everything)
            parts = everything.transpose(1, 0, 2).reshape(len(pairs), -1)
        return [math.fsum(p) for p in parts]

    def solve(self, x, where=""):
        """Preconditioned conjugate gradients for A x = b from the given x (ghost rows
        of x refreshed at the end); returns the iterations."""
        sim, s = self.sim, self.scheme
        n_own, threads = sim.store.n_own, sim.threads
        nrow = sim.store.n
        r, z, p, q = (np.zeros((nrow, self.nd)) for _ in range(4))
        self.refresh(x)
        self.matvec(x, q)
        r[:n_own] = self.b - q[:n_own]
        self.precondition(r, z)
        p[:n_own] = z[:n_own]
        rz, rr, bb = self.dots((r, z), (r, r), (self.b, self.b))
        goal = (s.cg_tol ** 2) * bb
        it = 0
        while rr > goal and it < s.cg_maxiter:
            self.refresh(p)
            self.matvec(p, q)
            pq, = self.dots((p, q))
            alpha = rz / pq
            _k.axpy2(alpha, p, q, x, r, n_own, threads)
            self.precondition(r, z)
            rz_new, rr = self.dots((r, z), (r, r))
            _k.xpby(z, rz_new / rz, p, n_own, threads)
            rz = rz_new
            it += 1
        if rr > goal:
            warnings.warn(DDAWarning(
                "%sDDA: conjugate gradients not converged in cg_maxiter=%d iterations "
                "(relative residual %.3g > cg_tol=%g)" % (where, s.cg_maxiter,
                                                           math.sqrt(rr / bb), s.cg_tol)),
                stacklevel=4)
        self.refresh(x)
        return it

    def write_rows(self, x):
        """Contact rows for output, loads and the next step: the explicit scheme's
        convention (force on body 2: particle 2 of a pair, the particle of a wall
        contact; normal from 1 to 2, from the wall into the particle; u_x = the end
        gap), and the DDA state (u0 = shear elongation, phi0[0] = stick/slide,
        active = closed)."""
        sim, c, s = self.sim, self.contacts, self.scheme
        n = c.normal
        g = self.gap_end
        delta = self.relative(x)
        dn = np.einsum("ij,ij->i", delta, n)
        e_new = self.e + delta - dn[:, None] * n
        closed = self.code != OPEN
        slide = self.code == SLIDE
        e_new[slide] = (self.ff[slide] / s.shear_penalty)[:, None] * self.sdir[slide]
        e_new[~closed] = 0.0
        force_i = -(s.penalty * g[:, None] * n + s.shear_penalty * e_new) * closed[:, None]
        self.force_i = force_i
        for rec, k, sel in write_rows(sim, self.rows, n, g, force_i, closed):
            rec.u0[k] = e_new[sel]
            rec.phi0[k, 0] = self.code[sel]

    def relative(self, x):
        """Delta = G_i x_i - G_j x_j of every contact (numpy)."""
        c, st = self.contacts, self.sim.store
        n = c.normal
        a_i = -st.radius[c.ci][:, None] * n
        d = x[c.ci, :3] + np.cross(x[c.ci, 3:6], a_i)
        pair = c.kind == PAIR
        cj = np.where(pair, c.cj, 0)
        a_j = st.radius[cj][:, None] * n
        dj = x[cj, :3] + np.cross(x[cj, 3:6], a_j)
        if self.nd == 12:
            d = d + strain_disp(x[c.ci, 6:], a_i)
            dj = dj + strain_disp(x[cj, 6:], a_j)
        return d - np.where(pair[:, None], dj, 0.0)

    def overlap_message(self, where):
        """A message when a closed contact overlaps more than tol at the end of the step."""
        tol = self.scheme.tol
        if tol is None or not len(self.gap_end):
            return None
        depth = np.where(self.code != OPEN, -self.gap_end, -np.inf)
        k = int(np.argmax(depth))
        if depth[k] <= tol:
            return None
        c, ids = self.contacts, self.sim.store.id
        who = ("particles %d and %d" % (ids[c.ci[k]], ids[c.cj[k]]) if c.kind[k] == PAIR else
               "particle %d and %s %d" % (ids[c.ci[k]], WALL_NAMES[c.kind[k]], c.cj[k]))
        return ("%sDDA: overlap of %s is %.3g at the end of the step, above tol=%.3g: raise "
                "the penalty or reduce dt" % (where, who, depth[k], tol))
