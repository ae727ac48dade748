"""Elastic frictionless gas in a fully periodic box: energy and momentum conservation.

Hooke law with fixed kn, gamma_n = 0, friction 0, no gravity. The conserved energy is
  E = sum m v(t-dt/2).v(t+dt/2)/2 (sim.energy()['kinetic']) + rotational
      + sum over active contacts kn delta^2 / 2,
the potential computed here from the overlaps of sim.contacts() (and, at the end,
cross-checked against the overlaps computed here from the positions). For a linear
force the leap-frog conserves this time-centred energy exactly; the only errors come
from the steps on which a contact starts or ends (the force has a kink at delta = 0):
of order k (v dt)^2 per event, random in sign, so E random-walks with an amplitude
~ sqrt(collisions) (omega dt)^2 / N. With dt = t_c / 1000 (t_c = pi sqrt(m*/kn) for
the lightest pair) it stays below 1e-6 relative over thousands of collisions (about
2e-7 measured). E(0) and P(0) are computed here from the input velocities.

Rotational energy must stay zero (frictionless central forces) and the total linear
momentum is conserved to round-off (pair forces are equal and opposite).
"""
import math

import numpy as np
import pytest

import pdem

pytestmark = pytest.mark.slow     # validation: not in the fast loop (-m "not slow")

RHO = 1000.0
R_MEAN = 0.01
NSUB = 1000          # steps per contact time
SAMPLES_PER_TC = 4   # sample (energy, contacts) every t_c / 4: no contact is missed


def make_gas(dim, n, phi, seed):
    rng = np.random.default_rng(seed)
    r = rng.uniform(0.9 * R_MEAN, 1.1 * R_MEAN, n)
    if dim == 3:
        m = 4.0 / 3.0 * math.pi * r ** 3 * RHO
        L = (np.sum(4.0 / 3.0 * math.pi * r ** 3) / phi) ** (1.0 / 3.0)
    else:
        m = math.pi * r ** 2 * RHO              # disks, per unit thickness
        L = (np.sum(math.pi * r ** 2) / phi) ** 0.5
    k = int(math.ceil(n ** (1.0 / dim)))
    g = (np.arange(k) + 0.5) / k * L
    grid = np.stack(np.meshgrid(*([g] * dim), indexing="ij"), -1).reshape(-1, dim)
    pos = grid[rng.permutation(len(grid))[:n]]
    spacing = L / k
    assert spacing / 2 > 1.02 * 1.1 * R_MEAN
    pos = pos + rng.uniform(-1, 1, pos.shape) * (spacing / 2 - 1.02 * 1.1 * R_MEAN)
    vel = rng.normal(0.0, 1.0, (n, dim)) + 0.3      # non-zero total momentum
    return r, m, L, pos, vel


def overlaps_from_positions(pos, r, L, dim):
    d = pos[:, None, :dim] - pos[None, :, :dim]
    d -= L * np.round(d / L)
    dist = np.sqrt(np.einsum("ijk,ijk->ij", d, d))
    ov = r[:, None] + r[None, :] - dist
    i, j = np.triu_indices(len(r), 1)
    ov = ov[i, j]
    return ov[ov > 0]


@pytest.mark.validation
@pytest.mark.parametrize("dim,n,phi,n_tc,min_collisions", [(3, 1000, 0.3, 25, 2000),
                                                         (2, 1000, 0.5, 30, 2000)])
def test_elastic_gas_energy_momentum(dim, n, phi, n_tc, min_collisions):
    r, m, L, pos, vel = make_gas(dim, n, phi, seed=1234 + dim)
    # kn gives the lightest pair a contact time t_c such that the largest overlaps
    # stay a few % of R (omega = 3750 rad/s, like a 3D sphere pair with kn = 3e4)
    m_star = 0.5 * m.min()
    omega = 3750.0
    kn = omega ** 2 * m_star
    tc = math.pi / omega
    dt = tc / NSUB
    if dim == 3:
        dom = pdem.Domain(lo=(0, 0, 0), hi=(L, L, L), periodic=(True, True, True))
    else:
        dom = pdem.Domain(lo=(0, 0), hi=(L, L), periodic=(True, True), dim=2)
    sim = pdem.Simulation(dom, dt=dt, threads=1)
    mat = sim.material("gas", density=RHO, law="hooke", kn=kn, gamma_n=0.0, friction=0.0)
    sim.add_spheres(pos, r, mat, velocities=vel)

    e0 = 0.5 * float(np.sum(m * np.einsum("ij,ij->i", vel, vel)))
    p0 = (m[:, None] * vel).sum(axis=0)
    p_scale = float(np.sum(m * np.linalg.norm(vel, axis=1)))

    def total_energy():
        e = sim.energy()
        c = sim.contacts()
        return e["kinetic"] + e["rotational"] + 0.5 * kn * float(np.sum(c["overlap"] ** 2)), \
            e["rotational"], c

    prev, formed, worst, max_rot = set(), 0, 0.0, 0.0
    every = NSUB // SAMPLES_PER_TC
    for _ in range(n_tc * SAMPLES_PER_TC):
        sim.run(steps=every)
        e, rot, c = total_energy()
        cur = set(zip(c["id1"].tolist(), c["id2"].tolist()))
        formed += len(cur - prev)
        prev = cur
        worst = max(worst, abs(e - e0) / e0)
        max_rot = max(max_rot, abs(rot))
    p = sim.particles()
    print("dim=%d n=%d dt=%.3g steps=%d contacts formed>=%d max|dE|/E=%.3g rot=%.3g"
          % (dim, n, dt, sim.step_count, formed, worst, max_rot))
    dp = np.abs((p["mass"][:, None] * p["velocity"]).sum(axis=0) - np.append(p0, [0] * (3 - dim)))
    print("  |P - P0| / sum m|v| = %.3g" % (dp.max() / p_scale))
    assert formed >= min_collisions
    assert p["mass"] == pytest.approx(m, rel=1e-14)
    assert worst <= 1e-6
    assert max_rot <= 1e-15 * e0
    assert np.all(dp <= 1e-13 * p_scale), dp / p_scale
    # the contacts pdem reports are exactly the overlapping pairs, with the same overlaps
    ov = np.sort(overlaps_from_positions(p["position"], p["radius"], L, dim))
    c = sim.contacts()
    assert len(ov) == len(c["overlap"])
    np.testing.assert_allclose(np.sort(c["overlap"]), ov, rtol=1e-6, atol=1e-12 * R_MEAN)
