"""Faceted walls under MPI: a mesh box with a spinning mesh stirrer gives the same
particles, contacts and wall loads, bit for bit, on any number of ranks; each rank
searches only the facets near its subdomain."""
import os
import sys
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem.io import ResultFile

from scenes import assert_same_state, state, stirred_mesh_box

STEPS = 1500


@pytest.mark.mpi(min_size=1)
def test_stirred_mesh_box_identical_on_any_rank_count():
    comm = MPI.COMM_WORLD
    sim = stirred_mesh_box(comm, check_ids=True)
    sim.run(steps=STEPS)
    got, loads = state(sim), sim.mesh_wall_forces()
    local = comm.allgather(sim.interactions["mesh"].n_local_facets)
    ref = None
    if comm.rank == 0:
        alone = stirred_mesh_box(MPI.COMM_SELF)
        alone.run(steps=STEPS)
        ref = (state(alone), alone.mesh_wall_forces(), alone.mesh_walls.n_facets)
    ref_state, ref_loads, n_facets = comm.bcast(ref, root=0)
    assert_same_state(got, ref_state)
    for k in ("force", "moment"):
        assert np.array_equal(loads[k], ref_loads[k]), k
    c = got[1]
    on_mesh = c["kind"] == "mesh"
    # the scene is what it claims: the box carries the bed, the stirrer touches it
    assert np.count_nonzero(c["wall"][on_mesh] == 0) > 50
    assert np.count_nonzero(c["wall"][on_mesh] == 1) > 5
    assert np.linalg.norm(loads["moment"][1]) > 0
    if comm.size > 1:
        assert min(local) < n_facets, local


@pytest.mark.mpi(min_size=1)
def test_restart_with_moving_mesh_walls_is_bitwise_identical(shared_dir):
    """N steps on all ranks + checkpoint, N more on rank 0 alone: the same as 2N steps
    (the spinning stirrer's motion state and the facet contact rows are restored)."""
    comm = MPI.COMM_WORLD
    n = 600
    path = os.path.join(shared_dir, "mesh.h5")
    first = stirred_mesh_box(comm)
    first.run(steps=n)
    first.checkpoint(path)
    if comm.rank == 0:
        whole = stirred_mesh_box(MPI.COMM_SELF)
        whole.run(steps=2 * n)
        resumed = pdem.restart(path, comm=MPI.COMM_SELF)
        resumed.run(steps=n)
        assert_same_state(state(resumed), state(whole))
        assert np.array_equal(resumed.mesh_walls.vertices, whole.mesh_walls.vertices)
        for k in ("force", "moment"):
            assert np.array_equal(resumed.mesh_wall_forces()[k], whole.mesh_wall_forces()[k])
    comm.Barrier()


@pytest.mark.mpi(min_size=1)
def test_result_file_holds_mesh_walls_and_their_loads(shared_dir):
    comm = MPI.COMM_WORLD
    sim = stirred_mesh_box(comm)
    path = os.path.join(shared_dir, "mesh.h5")

    def low_mass(s):                     # a user quantity of the series (collective)
        p = s.particles()
        return s.global_sum(p["mass"][p["position"][:, 2] < 4.0].sum())

    expect = []
    with ResultFile(path, sim, every=100, series_every=50,
                    series_extra={"low_mass": low_mass}) as rf:
        for _ in range(4):
            rf.run(steps=50)
            loads = sim.mesh_wall_forces()
            p = sim.particles(gather=True)
            expect.append((loads, p["mass"][p["position"][:, 2] < 4.0].sum(),
                           sim.mesh_walls.vertices.copy()))
    with h5py.File(path, "r") as f:
        s = f["series"]
        assert s["mesh_wall_force"].shape == (4, 2, 3) == s["mesh_wall_moment"].shape
        for i, (loads, low, _) in enumerate(expect):
            assert np.array_equal(s["mesh_wall_force"][i], loads["force"])
            assert np.array_equal(s["mesh_wall_moment"][i], loads["moment"])
            assert s["low_mass"][i] == pytest.approx(low, rel=1e-12)
        assert s["low_mass"][-1] > 0
        for k, frame in enumerate(("000000", "000001")):
            mg = f["frames/%s/mesh_walls" % frame]
            assert np.array_equal(mg["vertices"][...], expect[2 * k + 1][2])
            assert np.array_equal(mg["force"][...], expect[2 * k + 1][0]["force"])
            assert mg["facets"].shape == (sim.mesh_walls.n_facets, 3)
    grids = ET.parse(os.path.join(shared_dir, "mesh.xdmf")).getroot().findall(
        "Domain/Grid[@Name='mesh_walls']/Grid")
    assert len(grids) == 2
    with h5py.File(path, "r") as f:
        for grid in grids:
            assert grid.find("Topology").get("TopologyType") == "Triangle"
            for item in grid.findall(".//DataItem"):
                dset = item.text.strip().split(":")[1]
                shape = tuple(int(d) for d in item.get("Dimensions").split())
                assert f[dset].shape == shape, dset


@pytest.mark.mpi(min_size=1)
def test_sliding_ball_across_rank_boundaries_is_identical():
    """The unit test's ball sliding across 2,048 facets, in a domain cut between ranks
    along its path: its contact row migrates with it; the force history has the same
    bits as on one rank."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit"))
    from test_mesh_walls import slide
    comm = MPI.COMM_WORLD
    force, centre = slide(32, steps=3500, comm=comm, half=0.05)
    ref = comm.bcast(slide(32, steps=3500, comm=MPI.COMM_SELF, half=0.05)[0]
                     if comm.rank == 0 else None, root=0)
    assert np.array_equal(force, ref)
    if comm.size > 1:        # the path crosses a cut between ranks
        cuts = np.linspace(-0.05, 0.05, comm.size + 1)[1:-1] if comm.size < 4 else [0.0]
        assert any(centre[0, 0] < c < centre[-1, 0] for c in cuts), (centre[[0, -1], 0], cuts)
