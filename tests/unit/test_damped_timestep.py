"""The critical time step of a damped linear contact (pdem/scheme/explicit.py
hooke_limit): leap-frog with the dashpot on the half-step velocity is stable for
omega^2 dt^2 + 2 (c/m*) dt <= 4. Found settling a metre-scale packing with kn = 1e6
and gamma_n = 0.5 sqrt(kn m) (N s/m, where pdem takes a rate in 1/s): c/m* = 5e4 1/s,
the old undamped check let dt = 230 x the limit through and grains left the box at
1000 m/s in four steps."""
import math

import numpy as np
import pytest
from mpi4py import MPI

import pdem

R, RHO, KN = 0.01, 1000.0, 1e4
M = 4 / 3 * math.pi * R ** 3 * RHO


def limit(mstar, rate):
    """The root of omega^2 dt^2 + 2 rate dt = 4 (independent of pdem's form)."""
    w2 = KN / mstar
    return (-rate + math.sqrt(rate * rate + 4 * w2)) / w2


def resting(dt, gamma_n, check=True):
    """A sphere on a plane under gravity, starting at its static overlap."""
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=dt, gravity=(0, 0, -9.81),
                          threads=1, check_timestep=check, comm=MPI.COMM_SELF,
                          max_overlap=50.0)
    sim.material("m", RHO, kn=KN, gamma_n=gamma_n)
    sim.add_plane((0, 0, 0.5), (0, 0, 1), "m")
    sim.add_spheres([[0.5, 0.5, 0.5 + R - 1.001 * M * 9.81 / KN]], R, "m")
    return sim


@pytest.mark.parametrize("zeta", [2.0, 20.0])
def test_damped_limit_is_the_stability_boundary(zeta):
    """Overdamped contacts: 0.98 of the limit stays at rest, 1.02 diverges (run with
    the check off); the check refuses 1.01 x its limit, which is the pair's (m* = m/2)."""
    rate = 2 * zeta * math.sqrt(KN / M)                 # gamma_n (1/s), wall contact m* = m
    speeds = {}
    for f in (0.98, 1.02):
        sim = resting(f * limit(M, rate), rate, check=False)
        speeds[f] = []
        for _ in range(20):
            sim.run(steps=100)
            speeds[f].append(np.abs(sim.particles()["velocity"]).max())
    assert max(speeds[0.98][1:]) < 1e-6          # stays at rest
    assert max(speeds[1.02]) > 1e-2              # thrown off the plane by the instability
    pair = limit(0.5 * M, rate)
    resting(0.99 * pair, rate).run(steps=2)
    with pytest.raises(pdem.InputError, match=r"critical time step .*damping ratio z = .*"
                                              r"gamma_n is a rate in 1/s"):
        resting(1.01 * pair, rate).run(steps=1)


def test_gamma_n_in_newton_seconds_per_metre_is_refused_at_metre_scale():
    """The metre-scale settle that blew up: r = 1 m, kn = 1e6, gamma_n = 0.5 sqrt(kn m)."""
    r, kn, rho = 1.0, 1e6, 2500.0
    m = 4 / 3 * math.pi * r ** 3 * rho
    dt = math.pi * math.sqrt(0.5 * m / kn) / 25          # 25 steps per undamped contact
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (20, 20, 30)), dt=dt, gravity=(0, 0, -9.81),
                          comm=MPI.COMM_SELF)
    sim.material("glass", rho, kn=kn, gamma_n=0.5 * math.sqrt(kn * m))
    sim.add_spheres([[5, 5, 5], [5, 5, 6.999]], r, "glass")
    with pytest.raises(pdem.InputError, match=r"above the critical time step 3\.9\d*e-05"):
        sim.run(steps=1)
