"""The explicit scheme: contact forces from the force laws (L6Geom + law sub-models,
seed 000) and the leap-frog kick v(t - dt/2) -> v(t + dt/2) (the default scheme)."""
import math
import time
import warnings

import numpy as np

from .._kernels import integrate
from ..errors import InputError, TimeStepWarning
from ..materials import COL
from ..particles import SHAPES
from ..shapes import timestep_radii
from .base import Scheme, register

# fewer steps than this per contact duration (Hooke: pi sqrt(m*/k_n)) warn: the
# contact is then resolved too coarsely (e.g. restitution 0.96 for an input of 0.5 at
# 0.99 of the critical step); Hertz: dt above this fraction of the Rayleigh time
# warns (as LIGGGHTS does)
MIN_STEPS_PER_CONTACT = 10
MAX_RAYLEIGH_FRACTION = 0.2


@register
class Explicit(Scheme):
    """Explicit DEM: forces at t from every interaction kind, then the kick."""
    name = "explicit"
    predicts_rebuild = True
    near_lists = True

    def reach(self, sim, radius):
        """Distance added to the Verlet skin: a JKR contact holds in tension down to the
        pull-off distance |d_c| = reach cbrt(R*) (pyx/laws.pxd), so the lists and ghosts
        must see pairs that far apart (R* <= r_max; collective, only when a pair law has
        a reach: every rank has the same table)."""
        if not sim.materials.materials:
            return 0.0
        reach = sim.materials.table()[:, COL["reach"]]
        if not np.any(reach > 0.0):
            return 0.0
        rmax = sim.collective.max(float(radius.max()) if len(radius) else 0.0)
        return float(np.nanmax(reach)) * rmax ** (1.0 / 3.0)

    def check(self, sim):
        check_mesh_cohesion(sim)
        if sim.energy_tracker:          # what the energy tracker does not cover, before any work
            sim.energy_tracker.check(sim)
        if sim.shapes:
            check_template_cohesion(sim)
        if sim.check_timestep:
            check_timestep(sim)

    def after_build(self, sim):
        for name in ("pair", "ellpair", "clump"):
            pairs = sim.interactions[name].batch
            check_pair_laws(sim, pairs.i1, pairs.i2)

    def advance(self, sim):
        """Contact forces and their per-particle sums, then the kick. The kinds that can
        add each contact to its particles as they go do so (in-pass sums: the additions
        of add_forces, in its order, while the row is in cache; on several threads each
        particle by one thread, pyx/contacts.pyx split_owners)."""
        clock = time.perf_counter()
        st, nmat = sim.store, max(1, len(sim.materials.materials))
        table = sim.materials.table()
        f, t = st.owned_sums()
        kinds = sim.working_kinds()
        messages = [kind.compute(table, nmat, *((f, t) if kind.in_pass else (None, None)))
                    for kind in kinds]
        problem = next((m for m in messages if m), None)
        sim.sum_forces(skip_in_pass=True, kinds=kinds)
        if sim.energy_tracker:          # energy terms of this step (pdem/energy.py)
            sim.energy_tracker.before_kick(sim)
        t1 = time.perf_counter()
        sim.timers["contact"] += t1 - clock
        if sim.shapes:                  # non-spheres: integrate.kick's rotation undone
            omega = st.angvel[sim.rotation.index(st)]
        if sim._predicting:            # and the next drift's rebuild test (pdem/simulation.py)
            bad, *sim._ahead = integrate.kick_and_predict(
                st.vel, st.angvel, st.force, st.torque, st.mass, st.inertia, st.blocked,
                sim.gravity, sim.dt, st.n_own, sim.threads, st.pos, sim._build_pos,
                sim.frame.ahead(sim.dt))
        else:
            bad = integrate.kick(st.vel, st.angvel, st.force, st.torque, st.mass, st.inertia,
                                 st.blocked, sim.gravity, sim.dt, st.n_own, sim.threads)
        if sim.shapes:                  # ... and L kicked instead (pdem/shapes.py)
            bad_l = sim.rotation.kick(st, sim.dt, sim.threads, omega)
            bad = bad if bad >= 0 else bad_l
        if sim.energy_tracker:          # every rank (a new reference is collective)
            sim.energy_tracker.after_kick(sim)
        sim.timers["integrate"] += time.perf_counter() - t1
        return problem, bad

    def energy_velocities(self, sim):
        """v(t - dt/2) from v(t + dt/2) and the accelerations at t."""
        st, n = sim.store, sim.store.n_own
        acc = st.force[:n] / st.mass[:n, None] + sim.gravity
        alpha = st.torque[:n] / st.inertia[:n, None]
        for d in range(3):
            acc[(st.blocked[:n] & (1 << d)) != 0, d] = 0.0
            alpha[(st.blocked[:n] & (8 << d)) != 0, d] = 0.0
        return st.vel[:n] - acc * sim.dt, st.angvel[:n] - alpha * sim.dt


def check_pair_laws(sim, i1, i2):
    """Every pair of materials in contact has a law (an InputError explains the pair)."""
    mats = sim.materials
    n = len(mats.materials)
    if n == 0:
        return
    table = mats.table()
    if np.all(np.isfinite(table[:, 0])):
        return                         # every pair of materials has a defined law
    st = sim.store
    for c in np.unique(st.material[i1].astype(np.int64) * n + st.material[i2]):
        if not np.isfinite(table[c, 0]):
            mats.row(mats.materials[c // n], mats.materials[c % n])   # raises


def check_template_cohesion(sim):
    """Refuse JKR cohesion for contacts of clumps and polyhedra: their kernels keep a
    contact only while the bodies overlap, which would cut JKR's tensile branch down to
    the pull-off distance (ellipsoids keep it: docs/ellipsoids.md). Collective."""
    mats = sim.materials
    n = len(mats.materials)
    if n == 0:
        return
    table = mats.table()
    st = sim.store
    own = slice(0, st.n_own)
    present = np.zeros((2, n))
    present[0, np.unique(st.material[own][st.shape[own] >= SHAPES["clump"]])] = 1.0
    present[1, np.unique(st.material[own])] = 1.0
    present = sim.collective.max(present)
    present[1, np.unique(sim.planes.material).astype(int)] = 1.0
    for i in np.flatnonzero(present[0]):
        for j in np.flatnonzero(present[1]):
            if table[i * n + j, COL["cohesion"]] == 2:
                raise InputError("pair (%r, %r): cohesion 'jkr' is not available for clumps "
                                 "or polyhedra (their contacts end at zero overlap); use "
                                 "cohesion 'dmt' or 'linear' for this pair"
                                 % (mats.materials[i].name, mats.materials[j].name))


def check_mesh_cohesion(sim):
    """Refuse JKR cohesion between particles and a mesh wall: facet contacts (with their
    associative proximity sets) end at zero overlap, so JKR's tensile branch down to the
    pull-off distance would be cut off. Collective when such a pair exists."""
    walls = np.unique(sim.mesh_walls.wall_material)
    mats = sim.materials
    n = len(mats.materials)
    if not len(walls) or n == 0:
        return
    table = mats.table()
    jkr = [(i, int(w)) for w in walls for i in range(n)
           if table[w * n + i, COL["cohesion"]] == 2]
    if not jkr:
        return
    st = sim.store
    present = np.zeros(n)
    present[np.unique(st.material[:st.n_own])] = 1.0
    present = sim.collective.max(present)
    for i, w in jkr:
        if present[i]:
            raise InputError("pair (%r, %r): cohesion 'jkr' is not available against mesh walls "
                             "(facet contacts end at zero overlap); use cohesion 'dmt' or "
                             "'linear' for this pair" % (mats.materials[i].name,
                                                          mats.materials[w].name))


def check_timestep(sim):
    """Refuse dt above the stability limit of the stiffest contact on the lightest
    particle: 2 / omega with omega = sqrt(k_n / m*) (Hooke), or the Rayleigh time
    pi R sqrt(rho / G) / (0.1631 nu + 0.8766) (Hertz), with the smallest radius (a
    non-sphere: its smallest semi-axis, pdem.shapes.timestep_radii). Collective."""
    st, n = sim.store, sim.store.n_own
    mats = sim.materials
    nmat = len(mats.materials)
    if nmat == 0:
        return
    # per material over all ranks: smallest mass, smallest and largest radius
    stats = np.full((3, nmat), np.inf)
    small, large = (timestep_radii(st, n, sim.templates) if sim.shapes else (st.radius[:n], st.radius[:n]))
    for mi in np.unique(st.material[:n]):
        sel = st.material[:n] == mi
        stats[:, mi] = (st.mass[:n][sel].min(), small[sel].min(), -large[sel].max())
    stats = -sim.collective.max(-stats)
    own_mat = np.flatnonzero(np.isfinite(stats[0]))
    walls = np.unique(np.r_[sim.planes.material, sim.mesh_walls.wall_material,
                           sim.region_walls.material])
    limits, coarse = [], []
    for mi in own_mat:
        m_min, r_min, r_max = stats[0, mi], stats[1, mi], -stats[2, mi]
        a = mats.materials[mi]
        for b in [mats.materials[j] for j in own_mat] + [mats.materials[j] for j in walls]:
            p, estar, gstar = mats.pair_params(a, b)
            if p["law"] == "hertz":
                g = a.young / (2 * (1 + a.poisson))
                t_r = math.pi * r_min * math.sqrt(a.density / g) / (0.1631 * a.poisson + 0.8766)
                limits.append((t_r, "Rayleigh time of material %r" % a.name))
                if sim.dt > MAX_RAYLEIGH_FRACTION * t_r:
                    coarse.append((t_r / sim.dt, "%.3g steps per Rayleigh time %.3g of material "
                                   "%r (dt above %g of it)" % (t_r / sim.dt, t_r, a.name,
                                                              MAX_RAYLEIGH_FRACTION)))
            else:
                row = mats.row(a, b)
                kn = row[COL["kn0"]] + row[COL["kn1"]] * r_max
                limits.append(hooke_limit(kn, 0.5 * m_min, row[COL["gamma_n"]],
                                          row[COL["zeta"]], (a.name, b.name)))
                t_c = math.pi * math.sqrt(0.5 * m_min / kn)
                if t_c < MIN_STEPS_PER_CONTACT * sim.dt:
                    coarse.append((t_c / sim.dt, "%.3g steps per contact duration pi sqrt(m*/k_n) "
                                   "= %.3g of pair (%r, %r) (fewer than %d)"
                                   % (t_c / sim.dt, t_c, a.name, b.name,
                                      MIN_STEPS_PER_CONTACT)))
    limits += bond_limits(sim)
    if limits:
        crit, what = min(limits)
        if sim.dt > crit:
            raise InputError("dt = %g is above the critical time step %g (%s); reduce dt or "
                             "pass check_timestep=False" % (sim.dt, crit, what))
    if coarse:
        text = ("dt = %g gives only %s: contacts are resolved too coarsely (restitution and "
                "forces inaccurate); reduce dt" % (sim.dt, min(coarse)[1]))
        warned = sim.scheme.__dict__.setdefault("_warned", set())
        if text not in warned:              # once per run and message, on every rank
            warned.add(text)
            warnings.warn(text, TimeStepWarning, stacklevel=4)


def hooke_limit(kn, mstar, gamma_n, zeta, names):
    """(critical step, what) of a damped linear contact, F = -k_n d - c v with c/m* =
    gamma_n + 2 zeta omega, omega = sqrt(k_n / m*). Leap-frog damps with the velocity of
    the half step before, which is stable (a linear analysis: det = 1 - c dt / m*, and
    the trace condition) for omega^2 dt^2 + 2 (c/m*) dt <= 4, i.e.
    dt <= 2 / omega (sqrt(1 + z^2) - z), z = c / (2 m* omega): 2 sqrt(m*/k_n) without
    damping, about 2 m* / c when overdamped (e.g. gamma_n given in N s/m where pdem
    takes 1/s: a rate 1e4 times too large at metre scale, docs/packing.md)."""
    omega = math.sqrt(kn / mstar)
    rate = gamma_n + 2.0 * zeta * omega
    z = rate / (2.0 * omega)
    crit = 2.0 / omega * (math.sqrt(1.0 + z * z) - z)
    if z == 0.0:
        return crit, "2 sqrt(m*/k_n) of pair (%r, %r)" % names
    return crit, ("2/omega (sqrt(1 + z^2) - z) of pair (%r, %r), omega = sqrt(k_n/m*) = %.4g "
                  "1/s, damping ratio z = %.4g (c/m* = gamma_n + 2 zeta omega = %.4g 1/s; "
                  "gamma_n is a rate in 1/s)" % (names + (omega, z, rate)))


def bond_limits(sim):
    """2 / omega of each bond material's stiffest mode of two bonded particles: axial
    (2 k_n A / m), shear with rotation (2 k_s A r^2 / I), bending (2 k_n I_b / I) and
    twist (2 k_s J / I), for the lightest particle, the smallest inertia and the
    largest radius (collective). Several bonds per particle stiffen it further: keep
    dt a fraction of this (Potyondy & Cundall use a safety factor)."""
    kind = sim.interactions["bond"]
    if not kind.any:
        return []
    st, n = sim.store, sim.store.n_own
    m_min, i_min, neg_r = -sim.collective.max(-np.array([
        st.mass[:n].min() if n else np.inf, st.inertia[:n].min() if n else np.inf,
        -st.radius[:n].max() if n else np.inf]))
    r = -neg_r
    out = []
    for b in kind.materials:
        A, I, J = b.section(r, sim.domain.dim)
        omega2 = max(2 * b.kn * A / m_min, 2 * b.ks * A * r * r / i_min,
                     2 * b.kn * I / i_min, 2 * b.ks * J / i_min)
        out.append((2.0 / math.sqrt(omega2), "the stiffest mode of bond material %r" % b.name))
    return out
