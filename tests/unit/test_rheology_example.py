"""The rheology demo's machinery (examples/rheology/simple_shear.py --quick: 216 spheres,
mu_p = 0.5, sheared at I = 0.05 then 0.3 at constant pressure) against physical truths
not taken from pdem's output:

- the pressure servo holds the time-averaged sigma_yy at the target -P (to 5 %);
- torque balance: in a steady shear the particles' spins do not grow, so the mean
  contact stress is symmetric, sigma_xy = sigma_yx (to 0.02 P, against mu P ~ 0.4 P);
- mu = |tau| / P lies in 0.2 .. 0.7, the band of every published mu(I) for frictional
  spheres at these I (e.g. mu_s ~ 0.38 .. mu_2 ~ 0.64 for glass beads, Jop et al. 2006);
- Reynolds dilatancy: the faster flow is looser, phi(0.3) < phi(0.05) - 0.02 (GDR MiDi
  2004: phi falls roughly linearly with I, by ~0.1-0.2 per unit I).
"""

import pytest
from example_module import load_example

simple_shear = load_example("rheology/simple_shear.py")


@pytest.mark.slow
def test_quick_shear_study(tmp_path):
    rows, _ = simple_shear.main(["--quick", "--out", str(tmp_path / "q")])
    by_i = {r["I"]: r for r in rows}
    assert sorted(by_i) == [0.05, 0.3]
    for r in rows:
        assert abs(r["p"] - 1.0) < 0.05, r["p"]
        assert abs(r["skew"]) < 0.02, r["skew"]
        assert 0.2 < r["mu"] < 0.7, r["mu"]
        assert r["window"] > 0.2
    assert by_i[0.3]["phi"] < by_i[0.05]["phi"] - 0.02
    assert (tmp_path / "q.npz").exists()
