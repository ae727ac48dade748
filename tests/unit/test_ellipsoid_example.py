"""The spheroid packing demo (examples/ellipsoids/packing.py, small beds) against numbers
independent of pdem:

- frictionless spheres poured under gravity pack at random close packing: 0.64 +- 0.01
  (Scott and Kilgour 1969: 0.637; Berryman 1983: 0.64; poured frictionless beds
  0.60-0.64), measured in a slab away from the floor and the surface;
- spheroids of aspect 1.5 pack denser than spheres (Donev et al., Science 303:990
  (2004): the cusp-like rise from 0.64 to ~0.71 near aspect 1.5): by more than 0.03;
- statics: the floor carries the bed's weight (time-averaged floor force = sum of m g to
  2 %, the bed still creeping; with the momentum change over the window, to 1e-6);
- the slab volume of an ellipsoid (closed form used by the demo) against Monte Carlo.
"""
import math

import numpy as np
import pytest
from test_rigid_body import rot
from example_module import load_example

packing = load_example("ellipsoids/packing.py")


def test_slab_volume_against_monte_carlo():
    rng = np.random.default_rng(5)
    axes = np.array([1.0, 0.6, 0.3])
    q = packing.random_quaternions(rng, 1)
    h = packing.extent_z(q, axes)[0]
    # sample the ellipsoid in the body frame, rotate to the world (numpy, independent)
    u = rng.uniform(-1, 1, (400000, 3))
    u = u[np.einsum("ij,ij->i", u, u) <= 1] * axes
    zz = u @ rot(q[0])[2]
    assert 0.99 * h < zz.max() <= h
    vol = 4 / 3 * math.pi * np.prod(axes)
    for lo, hi in ((-0.2, 0.1), (0.05, 2.0), (-2.0, -0.3)):
        frac = np.mean((zz > lo) & (zz < hi))
        got = packing.slab_volume(np.array([0.0]), np.array([h]), vol, lo, hi)[0] / vol
        assert got == pytest.approx(frac, abs=4e-3)


@pytest.fixture(scope="module")
def beds():
    return {a: packing.settle(a, n=500, max_time=0.3) for a in (1.0, 1.5)}


@pytest.mark.slow
def test_poured_frictionless_spheres_random_close_packing(beds):
    assert 0.62 < beds[1.0]["phi"] < 0.65


@pytest.mark.slow
def test_spheroids_pack_denser_than_spheres(beds):
    assert beds[1.5]["phi"] > beds[1.0]["phi"] + 0.03
    assert beds[1.5]["phi"] < 0.74              # below the densest ellipsoid crystals 0.77
    # more contacts per grain than spheres (Donev 2004: Z rises from 6 towards 10)
    assert beds[1.5]["z_contacts"] > beds[1.0]["z_contacts"] + 1.5


@pytest.mark.slow
def test_floor_carries_the_weight(beds):
    for bed in beds.values():
        assert bed["load"] == pytest.approx(1.0, abs=0.02)      # still creeping: KE ~1e-3 m g r
        # momentum balance over the averaging window: <F_floor> - dP_z/dt = sum m g
        assert bed["balance"] == pytest.approx(1.0, abs=1e-6)
