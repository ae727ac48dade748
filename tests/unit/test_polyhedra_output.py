"""Result files of polyhedra (issue 17, docs/polyhedra.md "Output"): each frame holds the
polyhedra as a triangle mesh in their current pose, with an XDMF Triangle grid per frame.
Expected values: the vertices recomputed from the frame's own positions and orientations
and the templates' body-frame vertices (numpy quaternion rotation, written here), each
body a closed outward mesh of the template's volume (trimesh)."""
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest
import trimesh
from mpi4py import MPI

import pdem
from pdem import polyhedra as P
from pdem.io import ResultFile


def rotation(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z]])


def test_frames_hold_the_polyhedra_in_their_pose(tmp_path):
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (0.3, 0.3, 0.3)), dt=1e-4, gravity=(0, 0, -9.81),
                          comm=MPI.COMM_SELF)
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.3)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    shapes = [P.rock(14, seed=2, axes=(0.02, 0.015, 0.01)), P.cube(0.02)]
    rng = np.random.default_rng(4)
    q = rng.normal(size=(6, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    pos = np.column_stack([np.linspace(0.05, 0.25, 6), np.full(6, 0.15), np.full(6, 0.03)])
    for k, shape in enumerate(shapes):
        sim.add_polyhedra(pos[k::2], shape, m, orientations=q[k::2],
                          angular_velocities=rng.normal(0, 20, (3, 3)))
    sim.add_spheres([[0.15, 0.05, 0.05]], [0.01], m)
    path = str(tmp_path / "r.h5")
    with ResultFile(path, sim) as rf:
        rf.write_frame()
        sim.run(300)
        rf.write_frame()
    with h5py.File(path, "r") as f:
        for name in ("000000", "000001"):
            g = f["frames/" + name]
            ids, x, o, t = (g["particles/" + k][...] for k in ("id", "position", "orientation",
                                                               "template"))
            v, tri, owner = (g["polyhedra/" + k][...] for k in ("vertices", "facets", "id"))
            assert len(tri) == 3 * 12 + 3 * len(shapes[0].triangles)
            for i, xi, qi, ti in zip(ids, x, o, t):
                mine = owner == i
                if i == 6:                                    # the sphere
                    assert not mine.any()
                    continue
                shape = shapes[ti]
                used = np.unique(tri[mine])
                want = xi + shape.vertices @ rotation(qi).T
                assert np.abs(v[used] - want).max() < 1e-14
                body = trimesh.Trimesh(v, tri[mine], process=False)
                assert body.is_watertight and body.volume == pytest.approx(shape.volume, rel=1e-12)
    moved = h5py.File(path, "r")
    assert np.abs(moved["frames/000001/polyhedra/vertices"][...] -
                  moved["frames/000000/polyhedra/vertices"][...]).max() > 1e-3
    moved.close()
    # the XDMF: one Triangle grid per frame, geometry and topology in the frame's group
    root = ET.parse(path[:-3] + ".xdmf").getroot()
    coll = [g for g in root.iter("Grid") if g.get("Name") == "polyhedra"]
    assert len(coll) == 1
    grids = coll[0].findall("Grid")
    assert [g.get("Name") for g in grids] == ["polyhedra_000000", "polyhedra_000001"]
    topo = grids[1].find("Topology")
    assert topo.get("TopologyType") == "Triangle" and int(topo.get("NumberOfElements")) == len(tri)
    assert topo.find("DataItem").text.strip().endswith(":/frames/000001/polyhedra/facets")
    assert grids[1].find("Geometry/DataItem").text.strip().endswith(
        ":/frames/000001/polyhedra/vertices")
    assert grids[1].find("Attribute").get("Name") == "id"
