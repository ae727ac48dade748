"""The rock demo (examples/rock/rock.py, --quick size: ~500 bonded spheres) against
physical truths computed independently of pdem's output:

- the specimen's Young's modulus lies below the affine (Voigt) bound computed from the
  bond and contact springs (the minimum-energy principle: the real, non-affine
  displacement field stores less energy at a given platen displacement), and within
  0.6-1.0 of it (random packings with ~5 bonds per particle relax non-affinely by
  some 10-30 %);
- quasi-static loading: the two platen forces agree to 2 % at half the peak;
- doubling every stiffness (Ec = Ebar_c, P&C 2004) at the same platen speed doubles
  the small-strain modulus (linear elasticity; to 5 %, the residual inertia);
- the peak is followed by breakage: bonds broken, the stress falls below 0.8 x peak;
- the Brazilian disk: tensile strength well below the UCS, mostly tensile cracks.
"""
import math

import numpy as np
import pytest
from mpi4py import MPI

import pdem
from example_module import load_example

rock = load_example("rock/rock.py")

pytestmark = pytest.mark.slow


def slope(strain, stress, lo=2e-4, hi=8e-4):
    """Least-squares stiffness over the strain window [lo, hi] (elastic, no breaks)."""
    k = (strain >= lo) & (strain <= hi)
    assert k.sum() >= 5
    return np.polyfit(strain[k], stress[k], 1)[0]


@pytest.fixture(scope="module")
def quick():
    prism, _ = rock.sizes(True)
    x, r = rock.specimen(pdem.Box((0, 0, 0), (prism[0], prism[0], prism[1])), MPI.COMM_SELF)
    u = rock.ucs(x, r, MPI.COMM_SELF, prism, drop=0.8)
    return x, r, prism, u


def test_modulus_below_and_near_the_affine_bound(quick):
    u = quick[3]
    assert u["n_bonds"] > 4 * len(quick[1]) / 2         # > 4 bonds per particle
    assert 0.6 * u["E_affine"] < u["E_tangent"] < u["E_affine"]
    assert 0.6 * u["E_affine"] < u["E_secant"] < u["E_affine"]


def test_platen_forces_agree(quick):
    u = quick[3]
    assert u["mismatch_half"] < 0.02


def test_peak_then_breakage(quick):
    u = quick[3]
    k = int(np.argmax(u["stress"]))
    assert k < len(u["stress"]) - 1
    assert u["stress"][-1] < 0.8 * u["peak"]
    assert u["n_broken"] > 0 and u["n_broken"] == u["tension"] + u["shear"]
    broken = u["rec"]["broken"]
    assert broken[-1] > broken[k]                       # breakage goes on past the peak
    # no bond broke in the window used for the small-strain modulus
    assert broken[np.searchsorted(u["rec"]["strain"], 8e-4)] == 0


def test_modulus_scales_with_stiffness(quick):
    x, r, prism, u = quick
    e1 = slope(u["rec"]["strain"], u["stress"])
    u2 = rock.ucs(x, r, MPI.COMM_SELF, prism, stiffness=2.0, max_strain=9e-4,
                  speed=u["info"]["speed"], dt=u["info"]["dt"] / math.sqrt(2.0))
    e2 = slope(u2["rec"]["strain"], u2["stress"])
    assert e2 / e1 == pytest.approx(2.0, rel=0.05)
    assert u2["E_affine"] / u["E_affine"] == pytest.approx(2.0, rel=1e-9)


def test_brazilian_disk_splits_in_tension(quick):
    """The quick Brazilian disk: a brittle solid is weaker in tension than in
    compression (sigma_t well below the UCS) and fails in tension (most bonds broken
    by the peak load broke in tension)."""
    _, disk = rock.sizes(True)
    x, r = rock.specimen(rock.disk_region(*disk), MPI.COMM_SELF, seed=2, fraction=0.55)
    bz = rock.brazilian(x, r, MPI.COMM_SELF, disk)
    assert bz["mismatch_peak"] < 0.05
    assert bz["sigma_t"] < quick[3]["peak"] / 3
    assert bz["tension"] > 2 * bz["shear"]
    assert bz["force"][-1] < 0.6 * bz["f_peak"]
