"""Stress and fabric of a granular assembly (Love-Weber), per particle and over a
volume. Sign convention of continuum mechanics: tension positive, so a compressed
packing has negative normal stresses (sigma_xx = -p).

Per owned particle p with volume V_p (3D 4/3 pi r^3, 2D pi r^2 x unit thickness):

    sigma_p = (1/V_p) sum_c (x_c - x_p) (x) f_c

over its contacts c (particles and walls; x_c the middle of the overlap, f_c the force
on p; pyx/analysis.pyx). Over a volume V holding the particles P (a region, or the
whole domain):

    sigma = (1/V) [ sum_{p in P} V_p sigma_p  -  sum_{p in P} m_p v'_p (x) v'_p ]

with v' = v - (mass-weighted mean velocity of P), the kinetic (Reynolds) part, from
the stored velocities without the mean field L (x - lo) of a deforming cell
(pdem/cell.py; the domain's volume is then the cell's, det H). For a pair contact inside P the two particle terms add up to
-l (x) f with l = x_2 - x_1 the branch vector: the classical Love-Weber sum. The
tensor is not symmetric while particles are out of equilibrium. Fabric: Satake's
tensor sum n (x) n / N_c over particle-particle contacts."""
import numpy as np

from ._kernels import analysis as _a
from .errors import InputError


def _moments(sim):
    """(moment sums (n_own, 3, 3), particle-contact counts (n_own,)) of the owned
    particles, from every contact kind (bonds are not contacts: not included)."""
    st, n = sim.store, sim.store.n_own
    moment = np.zeros((n, 9))
    count = np.zeros(n, np.int32)
    none, spheres = np.zeros(0, np.int32), np.zeros((0, 6))
    for kind in sim.interactions.values():
        if not kind.contact or len(kind) == 0:
            continue
        b = kind.batch
        owners = kind.owners()
        branch = getattr(kind, "branch", spheres)    # ellipsoid kinds: their levers
        if len(owners) == 2:
            active, state, i1, i2 = b.active, b.state, b.i1, b.i2
            if b.slot is not None:                  # pooled: the rows in contact, in order
                a = np.flatnonzero(active)
                active, state, i1, i2 = active[a], state[b.slot[a]], i1[a], i2[a]
                owners = [o[a] for o in owners]
            _a.contact_moments(active, state, owners[0], i1, owners[1], i2,
                               st.radius, moment, count, branch)
        else:                                       # a wall: body 2 is the owned particle
            _a.contact_moments(b.active, b.state, none, none, owners[0], b.i1,
                               st.radius, moment, count, branch)
    return moment.reshape(n, 3, 3), count


def particle_volumes(sim):
    """Spheres 4/3 pi r^3, ellipsoids 4/3 pi a b c, clumps their template's volume; 2D
    (unit thickness) pi r^2, pi a b."""
    st, n, planar = sim.store, sim.store.n_own, sim.domain.dim == 2
    r = st.radius[:n]
    v = np.pi * r ** 2 if planar else 4.0 / 3.0 * np.pi * r ** 3
    if sim.shapes:
        shaped = st.shape[:n] != 0
        a = st.semi_axes[:n][shaped]
        v[shaped] = np.pi * a[:, 0] * a[:, 1] if planar else 4.0 / 3.0 * np.pi * a.prod(axis=1)
        clump = np.flatnonzero(st.shape[:n] == 3)          # clumps: the union's volume
        v[clump] = sim.templates.props[st.template[clump], 0]
    return v


def particle_stress(sim, gather=False):
    """{"id", "stress" (n, 3, 3), "coordination" (particle contacts)} of the owned
    particles, sorted by id (gather=True: all, on every rank; collective)."""
    moment, count = _moments(sim)
    st = sim.store
    out = {"id": st.id[:st.n_own].copy(),
           "stress": (moment / particle_volumes(sim)[:, None, None]).reshape(-1, 9),
           "coordination": count}
    if gather:
        out = sim.collective.allgather(out)
    order = np.argsort(out["id"], kind="stable")
    out = {k: v[order] for k, v in out.items()}
    out["stress"] = out["stress"].reshape(-1, 3, 3)
    return out


def stress(sim, region=None, volume=None, kinetic=True):
    """Love-Weber stress tensor (3, 3) of the particles whose centres lie in `region`
    (a pdem.regions.Region; None: all) over `volume` (default: the domain's volume
    without a region, else region.volume(): exact for a Box, a Monte Carlo estimate
    otherwise). Collective."""
    st, n = sim.store, sim.store.n_own
    if volume is None:
        volume = sim.cell.volume if region is None else region.volume()
    if not (np.isfinite(volume) and volume > 0):
        raise InputError("stress: volume must be a positive number, got %r" % (volume,))
    moment, _ = _moments(sim)
    inside = np.arange(n) if region is None else np.flatnonzero(region(st.pos[:n]) <= 0.0)
    cell = sim.cell
    # one exact sum over particles and ranks (the same bits on any partition: a
    # deforming cell's servo feeds on it) of the rows: the moments, momentum, mass,
    # second moment of the velocity without the mean field (pyx/analysis.pyx)
    rows, big = _a.stress_rows(moment.reshape(n, 9), inside.astype(np.int64), st.mass, st.pos,
                               st.vel, np.ascontiguousarray(cell.applied_gradient, float),
                               np.asarray(cell.origin, float), cell.deforming)
    sums = exact_sum(sim.collective, rows, big)
    total = sums[:9].reshape(3, 3)
    if kinetic and sums[12] > 0:
        mean = sums[9:12] / sums[12]
        # sum m v' v' = sum m v v - M vbar vbar
        total = total - (sums[13:].reshape(3, 3) - sums[12] * np.outer(mean, mean))
    return total / volume


def exact_sum(collective, rows, big=None):
    """Column sums of `rows` (n, k) over every rank's rows, the same bits however the rows
    are split over ranks: each value is cut at a column scale 2^e (e from the column's
    largest |value| over ranks) into two integers of 40 bits, x 2^(40 - e) = hi + lo
    2^-40 + (below 2^-80 of the largest value: dropped), which sum exactly in int64 (up
    to 2^23 rows). big: this rank's largest |value| per column, if known. Two
    reductions."""
    rows = np.asarray(rows, float).reshape(len(rows), -1)
    k = rows.shape[1]
    if big is None:
        big = np.abs(rows).max(axis=0) if len(rows) else np.zeros(k)
    big = collective.max(big)
    e = np.frexp(big)[1].astype(np.int64)
    ints = collective.sum(_a.exact_limbs(np.ascontiguousarray(rows), e))
    return np.ldexp(ints[:k].astype(float) + np.ldexp(ints[k:].astype(float), -40), e - 40)


def fabric(sim):
    """{"tensor": Satake's fabric sum n (x) n / N_c over particle-particle contacts,
    "contacts": N_c, "coordination": 2 N_c / N_particles}. Collective."""
    normals = []
    for name in ("pair", "ellpair", "clump"):        # clumps: one per member contact
        kind = sim.interactions[name]
        b = kind.batch
        a = np.flatnonzero(b.active)
        normals.append(b.T[b.at(a[kind.owner1[a] >= 0]), :3])   # each pair once: owner of id1
    normal = np.concatenate(normals)
    sums = sim.collective.sum(np.concatenate([np.einsum("ci,cj->ij", normal, normal).ravel(),
                                              [len(normal), sim.store.n_own]]))
    n_c, n_p = sums[9], sums[10]
    return {"tensor": sums[:9].reshape(3, 3) / max(n_c, 1.0), "contacts": int(n_c),
            "coordination": 2.0 * n_c / n_p if n_p else 0.0}
