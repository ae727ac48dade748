"""Parallel HDF5 output (pdem.io): what every rank writes reads back exactly, on any
rank count, ranks without particles included; the XDMF index points at datasets
that exist with the stated shapes; the time series holds the collective values.
Every test is collective-safe: all ranks make the same pdem calls."""
import os
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem.io import CONTACT_FIELDS, DEFAULT_CONTACT_FIELDS, PARTICLE_FIELDS, ResultFile
from pdem.io.frames import DDA_FIELDS
from scenes import corner_pile, sheared_box

NUMBER = {("Float", "8"): np.float64, ("Float", "4"): np.float32, ("Int", "8"): np.int64,
          ("Int", "4"): np.int32, ("UChar", "1"): np.uint8, ("Char", "1"): np.int8}


def root_value(value):
    """Rank 0's value (what rank 0 wrote), on every rank."""
    return MPI.COMM_WORLD.bcast(value, root=0)


def contact_order(c):
    """The order of Simulation.contacts: by kind (pairs, planes, mesh walls: the codes
    of the file's kind column), wall, id1, id2."""
    return np.lexsort((c["id2"], c["id1"], c["wall"], c["kind"]))


def assert_bitwise(got, expected, name):
    assert got.dtype == expected.dtype, (name, got.dtype, expected.dtype)
    assert got.shape == expected.shape, (name, got.shape, expected.shape)
    assert got.tobytes() == expected.tobytes(), "%s differs" % name


def frame_snapshot(sim, contacts=False):
    """What a frame written now must hold (collective)."""
    return {"step": sim.step_count, "time": sim.time, "particles": sim.particles(gather=True),
            "contacts": sim.contacts(gather=True) if contacts else None,
            "wall_force": root_value(sim.plane_forces())}


def check_frames(path, snapshots, fields, contact_fields=(), float32=False):
    with h5py.File(path, "r") as f:
        assert f.attrs["n_frames"] == len(snapshots)
        assert list(f["frames"]) == ["%06d" % i for i in range(len(snapshots))]
        for i, snap in enumerate(snapshots):
            g = f["frames/%06d" % i]
            p = snap["particles"]
            assert g.attrs["step"] == snap["step"] and g.attrs["time"] == snap["time"]
            assert g.attrs["n_particles"] == len(p["id"])
            assert sorted(g["particles"]) == sorted(set(fields) | {"id"})
            order = np.argsort(g["particles/id"][()])
            for k in g["particles"]:
                exp = p[k].astype(np.float32) if (k == "position" and float32) else p[k]
                assert_bitwise(g["particles"][k][()][order], exp, k)
            if contact_fields:
                c = snap["contacts"]
                assert g.attrs["n_contacts"] == len(c["id1"])
                got = {k: g["contacts"][k][()] for k in g["contacts"]}
                assert sorted(got) == sorted(contact_fields)
                order = contact_order(got)
                names = np.asarray(g["contacts/kind"].attrs["names"], dtype="U8")
                got["kind"] = names[got["kind"]]
                for k in contact_fields:
                    exp = c[k].astype(np.float32) if (k == "point" and float32) else c[k]
                    assert_bitwise(got[k][order], exp, "contact " + k)
            assert_bitwise(g["walls/force"][()], snap["wall_force"], "wall force")


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("collective", [True, False])
def test_frames_read_back_with_ranks_owning_nothing(shared_dir, collective):
    comm = MPI.COMM_WORLD
    sim = corner_pile(comm, balance=None)
    sim.run(steps=5)
    if comm.size > 1:                    # the point of this scene: empty subdomains
        assert min(comm.allgather(sim.n_local)) == 0
    path = os.path.join(shared_dir, "pile.h5")
    snapshots = []
    fields = [f for f in PARTICLE_FIELDS if f not in DDA_FIELDS]     # every field of this run
    with ResultFile(path, sim, fields=fields, contacts=True, collective=collective) as rf:
        for _ in range(3):
            rf.write_frame()
            snapshots.append(frame_snapshot(sim, contacts=True))
            sim.run(steps=60)            # the pile lands: pair and wall contacts
    assert {"pair", "plane"} <= set(snapshots[-1]["contacts"]["kind"])
    check_frames(path, snapshots, fields, DEFAULT_CONTACT_FIELDS)
    with h5py.File(path, "r") as f:
        planes = f["frames/000002/walls"]
        assert_bitwise(planes["normal"][()], sim.planes.normal, "wall normal")
        assert_bitwise(planes["point"][()], sim.planes.point, "wall point")


@pytest.mark.mpi(min_size=1)
def test_all_contact_fields_and_float32_positions(shared_dir):
    comm = MPI.COMM_WORLD
    sim = sheared_box(comm, n_side=8, layers=6)
    sim.run(steps=10)
    assert min(comm.allgather(sim.n_local)) > 0      # rows from every rank
    path = os.path.join(shared_dir, "shear.h5")
    snapshots = []
    with ResultFile(path, sim, fields=["position", "velocity"], contacts=list(CONTACT_FIELDS),
                    float32_positions=True) as rf:
        for _ in range(2):
            rf.write_frame()
            snapshots.append(frame_snapshot(sim, contacts=True))
            sim.run(steps=15)
    assert all(len(s["contacts"]["id1"]) > 0 for s in snapshots)
    check_frames(path, snapshots, ["id", "position", "velocity"], CONTACT_FIELDS, float32=True)


def check_xdmf(xdmf_path):
    """Every grid of an XDMF index is what ParaView draws: particles as Polyvertex
    cells (connectivity 0..N-1), contacts as Polyline cells of two nodes (the ends
    2k, 2k + 1: the particle centres of a pair), every HDF data item an existing
    dataset of the stated shape and type, node attributes with a row per node, cell
    attributes with a row per cell, and a grid without rows refers to no dataset
    (the legacy reader fails on empty datasets). Returns {collection: grids}."""
    folder = os.path.dirname(xdmf_path)
    tree = ET.parse(xdmf_path).getroot()
    counts = {}
    for collection in tree.find("Domain"):
        name = collection.get("Name")
        assert collection.get("CollectionType") == "Temporal"
        grids = collection.findall("Grid")
        counts[name] = len(grids)
        times = [float(g.find("Time").get("Value")) for g in grids]
        assert times == sorted(times), (name, times)
        for grid in grids:
            topo = grid.find("Topology")
            n = int(topo.get("NumberOfElements"))
            items = grid.findall(".//DataItem")
            if n == 0 and name in ("particles", "contacts"):
                assert all(i.get("Format") == "XML" for i in items), name
                assert grid.find("Attribute") is None
                continue
            data = {}
            for item in items:
                if item.get("Format") != "HDF":
                    continue
                h5name, dset = item.text.strip().split(":")
                shape = tuple(int(d) for d in item.get("Dimensions").split())
                with h5py.File(os.path.join(folder, h5name), "r") as f:
                    assert dset in f and f[dset].shape == shape, (dset, shape)
                    assert f[dset].dtype == NUMBER[(item.get("NumberType"),
                                                    item.get("Precision"))], dset
                    data[dset] = f[dset][()]
            geometry = data[grid.find("Geometry/DataItem").text.strip().split(":")[1]]
            conn = data.get(topo.find("DataItem").text.strip().split(":")[1]) \
                if topo.find("DataItem") is not None else None
            if name == "particles":
                assert topo.get("TopologyType") == "Polyvertex"
                assert conn.tolist() == list(range(n)) and len(geometry) == n
            elif name == "contacts":
                assert topo.get("TopologyType") == "Polyline"
                assert topo.get("NodesPerElement") == "2"
                assert conn.tolist() == np.arange(2 * n).reshape(n, 2).tolist()
                assert geometry.shape == (2 * n, 3)
            for att in grid.findall("Attribute"):
                rows = len(geometry) if att.get("Center") == "Node" else n
                dset = att.find("DataItem").text.strip().split(":")[1]
                assert len(data[dset]) == rows, (name, att.get("Name"))
            if name == "contacts":
                frame = grid.find("Geometry/DataItem").text.strip().split(":")[1].rsplit("/", 2)[0]
                force = data[frame + "/contacts/force"]
                assert np.allclose(data[frame + "/xdmf/force_magnitude"],
                                   np.linalg.norm(force, axis=1), rtol=0, atol=0)
    return counts


def check_chain_ends(path, frame):
    """A pair's line joins the two particle centres (to round-off of the contact
    geometry); a wall contact's line ends at its particle's centre."""
    with h5py.File(path, "r") as f:
        g = f["frames/" + frame]
        pos = dict(zip(g["particles/id"][()].tolist(), g["particles/position"][()]))
        ends = g["xdmf/contact_ends"][()].reshape(-1, 2, 3)
        for k, (i, j) in enumerate(zip(g["contacts/id1"][()], g["contacts/id2"][()])):
            np.testing.assert_allclose(ends[k, 1], pos[j], rtol=0, atol=1e-12)
            if i >= 0:
                np.testing.assert_allclose(ends[k, 0], pos[i], rtol=0, atol=1e-12)
            else:
                np.testing.assert_array_equal(ends[k, 0], g["contacts/point"][k])


@pytest.mark.mpi(min_size=1)
def test_xdmf_references_existing_datasets(shared_dir):
    comm = MPI.COMM_WORLD
    sim = corner_pile(comm, balance=None)
    path = os.path.join(shared_dir, "view.h5")
    with ResultFile(path, sim, contacts=True, every=25) as rf:
        rf.run(steps=100)
        with_frames = comm.allgather(os.path.exists(os.path.join(shared_dir, "view.xdmf")))
    assert all(with_frames)              # valid before close, after every frame
    tree = ET.parse(os.path.join(shared_dir, "view.xdmf")).getroot()
    assert tree.tag == "Xdmf"
    collections = {g.get("Name"): g for g in tree.find("Domain")}
    assert set(collections) == {"particles", "contacts"}
    n_grids = check_xdmf(os.path.join(shared_dir, "view.xdmf"))
    assert n_grids == {"particles": 4, "contacts": 4}
    assert sim.step_count == 100
    with h5py.File(path, "r") as f:
        assert f["frames/000003"].attrs["n_contacts"] > 0
    check_chain_ends(path, "000003")


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("buffer", [1, 2, 64])
def test_time_series_holds_the_collective_values(shared_dir, buffer):
    comm = MPI.COMM_WORLD
    sim = corner_pile(comm, balance=None)
    path = os.path.join(shared_dir, "series.h5")
    rows = []
    before = sim.timers["output"]
    with ResultFile(path, sim, every=40, series_every=20, series_buffer=buffer) as rf:
        for _ in range(3):
            rf.write_series()
            e = sim.energy()
            rows.append(root_value({"step": sim.step_count, "time": sim.time,
                                    "kinetic_energy": e["kinetic"],
                                    "rotational_energy": e["rotational"],
                                    "gravity_energy": e["gravity"],
                                    "n_particles": sim.n_particles,
                                    "n_contacts": sim.n_contacts,
                                    "wall_force": sim.plane_forces()}))
            sim.run(steps=30)
        rf.run(steps=80)                 # rows at steps 100, 120, 140, 160; frames at 120, 160
    assert sim.timers["output"] > before
    with h5py.File(path, "r") as f:
        s = f["series"]
        assert f.attrs["n_series"] == 7
        assert all(s[k].shape[0] == 7 for k in s)
        assert s["wall_force"].shape == (7, 3, 3)
        for i, row in enumerate(rows):
            for k, v in row.items():
                assert_bitwise(s[k][i], np.asarray(v, s[k].dtype), k)
        assert s["step"][3:].tolist() == [100, 120, 140, 160]
        assert [f["frames"][g].attrs["step"] for g in f["frames"]] == [120, 160]
        assert np.all(s["n_particles"][()] == 41)
        assert s["n_contacts"][-1] > 0


@pytest.mark.mpi(min_size=1)
def test_no_particles_at_all(shared_dir):
    comm = MPI.COMM_WORLD
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (4.0, 4.0, 4.0)), dt=1e-3, comm=comm)
    sim.material("m", density=1.0, kn=100.0)
    path = os.path.join(shared_dir, "empty.h5")
    with ResultFile(path, sim, contacts=True) as rf:
        rf.write_frame()
        rf.write_series()
    with h5py.File(path, "r") as f:
        assert f["frames/000000/particles/position"].shape == (0, 3)
        assert f["frames/000000/contacts/id1"].shape == (0,)
        assert f["series/wall_force"].shape == (1, 0, 3)
    assert check_xdmf(os.path.join(shared_dir, "empty.xdmf")) == {"particles": 1,
                                                                    "contacts": 1}


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("options, message", [
    ({"fields": ["position", "velocty"]}, r"fields: unknown field 'velocty' \(allowed: id, position"),
    ({"contacts": ["id1", "forse"]}, r"contacts: unknown field 'forse' \(allowed: kind, wall, id1, id2"),
    ({"every": 0}, r"every must be a positive integer"),
])
def test_bad_options_raise_on_every_rank_before_writing(shared_dir, options, message):
    comm = MPI.COMM_WORLD
    sim = corner_pile(comm, balance=None)
    path = os.path.join(shared_dir, "bad.h5")
    with pytest.raises(pdem.InputError, match=message):
        ResultFile(path, sim, **options)
    comm.Barrier()
    assert not os.path.exists(path)


@pytest.mark.mpi(min_size=1)
def test_segments_in_frames_and_xdmf(shared_dir):
    """A 2D V of boundary segments: each frame holds the segments (line cells)
    and their loads as computed by the run, and the XDMF index shows them as Polyline
    cells whose datasets exist."""
    comm = MPI.COMM_WORLD
    sim = pdem.Simulation(pdem.Domain((-1.0, -0.5), (1.0, 1.5), dim=2), 1e-4,
                          gravity=(0.0, -9.81, 0.0), comm=comm)
    sim.material("m", 1000.0, kn=1e6, gamma_n=50.0)
    sim.add_segments([[-0.8, 1.0], [0.0, 0.0]], [[0.0, 0.0], [0.8, 1.0]], "m")
    gx, gy = np.meshgrid(np.linspace(-0.3, 0.3, 7), np.linspace(0.8, 1.3, 5))
    sim.add_spheres(np.column_stack([gx.ravel(), gy.ravel()]), 0.04, "m")
    path = os.path.join(shared_dir, "funnel.h5")
    loads = []
    with ResultFile(path, sim, every=2000) as rf:
        for _ in range(3):
            rf.run(steps=2000)
            loads.append(root_value(sim.segment_forces()))
    assert np.all(np.abs(loads[-1][:, 1]) > 0)                 # both walls carry grains
    with h5py.File(path, "r") as f:
        for i, load in enumerate(loads):                 # frames at steps 2000, 4000, 6000
            g = f["frames/%06d/segments" % i]
            np.testing.assert_array_equal(g["vertices"][()].reshape(-1, 2, 3)[:, 0],
                                          sim.segments.a)
            np.testing.assert_array_equal(g["lines"][()], [[0, 1], [2, 3]])
            assert_bitwise(g["force"][()], load, "segment force")
            assert len(g["points"]) == 3                      # the shared end once
    tree = ET.parse(os.path.join(shared_dir, "funnel.xdmf")).getroot()
    grids = {g.get("Name"): g for g in tree.find("Domain")}["segments"].findall("Grid")
    assert len(grids) == 3
    topo = grids[-1].find("Topology")
    assert topo.get("TopologyType") == "Polyline" and topo.get("NodesPerElement") == "2"
    with h5py.File(path, "r") as f:
        for item in grids[-1].findall(".//DataItem"):
            dset = item.text.strip().split(":")[1]
            assert f[dset].shape == tuple(int(d) for d in item.get("Dimensions").split())


@pytest.mark.mpi(min_size=1)
def test_bonds_and_cracks_in_frames_and_xdmf(shared_dir):
    """The bonded block of test_bonds_mpi: each frame holds every intact bond as a line
    from the centre of id1 to id2 (its length the bond's), with the force sim.bonds()
    gives, and every break as a crack point; the XDMF index shows bonds as Polyline
    cells and cracks as points, with datasets that exist."""
    from test_bonds_mpi import falling_block
    comm = MPI.COMM_WORLD
    sim = falling_block(comm)
    path = os.path.join(shared_dir, "block.h5")
    seen = []
    with ResultFile(path, sim, every=500) as rf:
        for _ in range(3):
            rf.run(steps=500)
            seen.append(sim.bonds(gather=True))
    assert np.count_nonzero(~seen[-1]["intact"]) > 10
    with h5py.File(path, "r") as f:
        for i, b in enumerate(seen):
            g, c = f["frames/%06d/bonds" % i], f["frames/%06d/cracks" % i]
            order = np.lexsort((g["id2"][()], g["id1"][()]))
            intact = b["intact"]
            np.testing.assert_array_equal(g["id1"][()][order], b["id1"][intact])
            assert_bitwise(g["force"][()][order], b["force"][intact], "bond force")
            ends = g["vertices"][()].reshape(-1, 2, 3)[order]
            np.testing.assert_allclose(np.linalg.norm(ends[:, 1] - ends[:, 0], axis=1),
                                       b["length"][intact], rtol=1e-12)
            lines = g["lines"][()]
            np.testing.assert_array_equal(lines, np.arange(2 * len(lines)).reshape(-1, 2))
            assert len(c["point"]) == np.count_nonzero(~intact)
            assert np.all(np.isin(c["mode"][()], [1, 2]))
    tree = ET.parse(os.path.join(shared_dir, "block.xdmf")).getroot()
    collections = {g.get("Name"): g for g in tree.find("Domain")}
    assert len(collections["bonds"].findall("Grid")) == 3
    assert collections["bonds"].find("Grid/Topology").get("TopologyType") == "Polyline"
    with h5py.File(path, "r") as f:
        for name in ("bonds", "cracks"):
            for item in collections[name].findall("Grid")[-1].findall(".//DataItem"):
                dset = item.text.strip().split(":")[1]
                assert f[dset].shape == tuple(int(d) for d in item.get("Dimensions").split())
