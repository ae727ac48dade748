"""Elastic frictionless gas of ellipsoids in a periodic box: the energy of the
common-normal contact model (issue 16; seed 002's claim that such models conserve
energy).

Hooke law with fixed kn, restitution 1, friction 0, no gravity; 64 ellipsoids with
semi-axes up to 0.02 x 0.012 x 0.01 in random orientations, spinning. The conserved
energy is sum m v(t-dt/2).v(t+dt/2)/2 + the rotational energy 1/2 Lb(t-dt/2).I^-1
Lb(t+dt/2) (sim.energy()) + sum kn u_n^2 / 2 over the contacts. Why it is conserved:
with g(x, q) = max over n of the gap along n, the force -k g n applied at the midpoint
c of c1, c2 is minus the gradient of k g^2 / 2 (envelope theorem: dg/dx2 = n, and the
rotation derivative is the torque of n at c2 about x2; moving the point of application
to c changes it by (c - c2) x n = -g/2 n x n = 0). The leap-frog/free-rotor then
conserves it up to the kinks at contact start and end and O(dt^2) oscillations.

Measured (400 contact times, ~500 collisions, 2e4 to 1e5 contact-steps): max |E/E0 - 1|
1.6e-4, 1.5e-4, 3.9e-5, 5.5e-6 at 25, 50, 100, 200 steps per contact time (order ~2);
no systematic drift (the end values 3e-5, 1.2e-4, 3e-5, 1.7e-6 change sign over runs).
"""
import math

import numpy as np
import pytest

import pdem

pytestmark = [pytest.mark.slow, pytest.mark.validation]

KN = 1e4


def gas(nsub, n=64, seed=3):
    rng = np.random.default_rng(seed)
    a = np.column_stack([rng.uniform(0.012, 0.02, n), rng.uniform(0.008, 0.012, n),
                         rng.uniform(0.006, 0.01, n)])
    L = 0.2
    g = (np.arange(4) + 0.5) / 4 * L
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    m_min = 1000 * 4 / 3 * math.pi * np.prod(a, axis=1).min()
    t_c = math.pi * math.sqrt(0.5 * m_min / KN)
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (L, L, L), (True,) * 3), dt=t_c / nsub)
    m = sim.material("m", 1000.0, kn=KN, friction=0.0, restitution=1.0)
    sim.add_ellipsoids(pos, a, m, orientations=q, velocities=rng.normal(0, 1.0, (n, 3)),
                       angular_velocities=rng.normal(0, 30, (n, 3)))
    return sim


def energy(sim):
    c = sim.contacts()
    return sum(sim.energy().values()) + 0.5 * KN * np.sum(c["overlap"] ** 2)


def error(nsub, contact_times=400):
    sim = gas(nsub)
    e0 = energy(sim)
    dev = []
    for _ in range(contact_times * 4):
        sim.run(nsub // 4)
        dev.append(energy(sim) / e0 - 1)
    return np.abs(dev).max(), sim.shape_stats()


def test_ellipsoid_gas_energy_error_falls_as_dt_squared():
    coarse, stats = error(50)
    fine, _ = error(200)
    print("max |E/E0 - 1|: %.3g (50 steps per contact), %.3g (200): order %.2f; %s"
          % (coarse, fine, math.log(coarse / fine, 4), stats))
    assert fine < 2e-5
    assert coarse / fine > 4 ** 1.5            # at least order 1.5 (measured ~2.4)
    assert stats["iterations_mean"] < 2.5 and stats["iterations_max"] <= 10
