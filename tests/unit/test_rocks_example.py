"""The angle-of-repose demo (examples/rocks/repose.py): its measurement against closed
forms (a heap profile of known slopes), and a --quick run end to end (bodies conserved
or removed only by falling out of the domain, the free surface's highest point the
highest body point over the tray)."""
import json

import numpy as np
import pytest
from example_module import load_example

repose = load_example("rocks/repose.py")


def test_repose_angle_of_a_known_heap():
    """A heap of slopes 30 and 40 degrees (a crest at x = 0.01), with bumps of zero mean
    along each flank: the fits return the two slopes and their mean."""
    h = 0.16
    x = np.linspace(-h, h, 64)
    left, right = np.tan(np.radians(30)), np.tan(np.radians(40))
    top = 0.2 - np.where(x < 0.01, left * (0.01 - x), right * (x - 0.01))
    bump = 1e-4 * np.where(np.arange(64) % 2, 1.0, -1.0)
    angle, flanks, fits = repose.repose_angle(x, top + bump, h)
    assert flanks == pytest.approx([30.0, 40.0], abs=0.05)
    assert angle == pytest.approx(35.0, abs=0.05)
    assert fits[0][0] == pytest.approx(left, rel=3e-3)
    assert fits[1][0] == pytest.approx(-right, rel=3e-3)


@pytest.mark.slow
def test_quick_pour_runs_and_writes_its_results(tmp_path):
    for shape in ("rocks", "spheres"):
        res = repose.run(shape, 24, str(tmp_path), quick=True)
        saved = json.load(open(tmp_path / (shape + ".json")))
        assert saved["angle_deg"] == res["angle_deg"] and saved["steps"] == res["steps"]
        d = np.load(tmp_path / (shape + ".npz"))
        assert res["bodies_end"] == len(d["position"]) <= 24
        # a body leaves only below the domain (lost='remove'): those left are inside it
        assert d["position"][:, 2].min() > -0.06
        top = d["top"][np.isfinite(d["top"])]
        x, z = ((d["points"][:, 0], d["points"][:, 2]) if shape == "rocks" else
                (d["position"][:, 0], d["position"][:, 2] + d["radius"]))
        over = (np.abs(x) < res["half_width"]) & (z > 0)          # above the tray
        assert len(top) and top.max() == z[over].max()
