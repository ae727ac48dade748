"""ParaView draws ellipsoids as pdem means them: docs/ellipsoid_glyphs.py (Tensor Glyph of
the XDMF `shape_tensor`) run by pvpython on a result file puts every vertex of every
glyph on its ellipsoid's surface, sum_k (x_k / a_k)^2 = 1 in the body frame (R^T (p -
c)), and reaches its semi-axes. Skipped without pvpython (Debian's `paraview`)."""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem.io import ResultFile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CENTRES = np.array([[0.2, 0.2, 0.2], [0.5, 0.5, 0.5], [0.8, 0.8, 0.8]])
AXES = np.array([[0.1, 0.05, 0.02], [0.08, 0.04, 0.03], [0.06, 0.05, 0.01]])
QUATS = np.array([[1.0, 0, 0, 0], [np.cos(0.3), np.sin(0.3), 0, 0], [0.5, 0.5, 0.5, 0.5]])


def rotation(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


@pytest.mark.skipif(shutil.which("pvpython") is None, reason="needs pvpython (apt paraview)")
def test_paraview_glyphs_lie_on_the_ellipsoids(tmp_path):
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-4, comm=MPI.COMM_SELF)
    m = sim.material("m", density=1000.0, kn=1e3)
    sim.add_ellipsoids(CENTRES, AXES, m, orientations=QUATS)
    with ResultFile(str(tmp_path / "r.h5"), sim, every=1) as rf:
        rf.run(steps=1)
    out = tmp_path / "points.json"
    subprocess.run(["pvpython", os.path.join(ROOT, "docs", "ellipsoid_glyphs.py"),
                    str(tmp_path / "r.xdmf"), "--points", str(out)], check=True,
                   capture_output=True, timeout=300)
    points = np.array(json.loads(out.read_text()))
    owner = np.argmin(np.linalg.norm(points[:, None, :] - CENTRES[None], axis=2), axis=1)
    for i in range(3):
        body = (points[owner == i] - CENTRES[i]) @ rotation(QUATS[i])   # R^T (p - c)
        assert len(body) > 100
        level = ((body / AXES[i]) ** 2).sum(axis=1)
        assert np.allclose(level, 1.0, atol=2e-5)        # float32 vertices
        assert np.allclose(np.abs(body).max(axis=0), AXES[i], rtol=0.03)   # tessellation


MEMBERS = '''
import json, sys
from paraview.simple import XDMFReader
from paraview import servermanager
from vtk.util.numpy_support import vtk_to_numpy
data = servermanager.Fetch(XDMFReader(FileNames=[sys.argv[1]]))
for i in range(data.GetNumberOfBlocks()):
    if data.GetMetaData(i).Get(data.NAME()) == "members":
        block = data.GetBlock(i)
        json.dump({"points": vtk_to_numpy(block.GetPoints().GetData()).astype(float).tolist(),
                   "radius": vtk_to_numpy(block.GetPointData().GetArray("radius")).tolist()},
                  open(sys.argv[2], "w"))
'''


@pytest.mark.skipif(shutil.which("pvpython") is None, reason="needs pvpython (apt paraview)")
def test_paraview_reads_the_member_spheres_of_clumps(tmp_path):
    """The `members` block of a clump result (docs/clumps.md) as ParaView's XDMF reader
    gives it: each member sphere at its world centre (the given layout turned by the
    orientation about the centre of mass) with its radius."""
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-5, comm=MPI.COMM_SELF)
    m = sim.material("m", density=1000.0, kn=1e3)
    centres, radii = np.array([[0.0, 0, 0], [0.05, 0, 0], [0.0, 0.04, 0]]), [0.03, 0.02, 0.025]
    k = sim.clump_template(centres, radii)
    q = np.array([np.cos(0.4), 0.0, np.sin(0.4), 0.0])
    sim.add_clumps([[0.5, 0.5, 0.5]], k, m, orientations=[q])
    with ResultFile(str(tmp_path / "r.h5"), sim, every=1) as rf:
        rf.run(steps=1)
    script, out = tmp_path / "members.py", tmp_path / "members.json"
    script.write_text(MEMBERS)
    subprocess.run(["pvpython", str(script), str(tmp_path / "r.xdmf"), str(out)], check=True,
                   capture_output=True, timeout=300)
    got = json.loads(out.read_text())
    points = np.array(got["points"])
    assert np.allclose(got["radius"], radii)
    # the layout turned by q (exact), and near the given centre of mass (the spheres'
    # volume-weighted centre: the union's differs by the lens, < 2e-3 here)
    assert np.allclose(points - points[0], (centres - centres[0]) @ rotation(q).T, atol=1e-12)
    masses = np.array(radii) ** 3
    com = (centres * masses[:, None]).sum(0) / masses.sum()
    assert np.allclose(points, 0.5 + (centres - com) @ rotation(q).T, atol=2e-3)
