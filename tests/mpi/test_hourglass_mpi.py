"""The hourglass run (examples/hourglass/run.py: pdem.Simulation with the NSCD scheme,
Jacobi sweeps) on N ranks writes the same grains, positions and velocities, bit for
bit, as on one process, with the same sweeps, contacts and smallest gaps per step, and
every frame of its HDF5 file holds every grain once."""
import importlib.util
import os

import h5py
import numpy as np
import pytest
from mpi4py import MPI

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_run():
    spec = importlib.util.spec_from_file_location(
        "hourglass_run", os.path.join(ROOT, "examples", "hourglass", "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def frames(path):
    with h5py.File(path, "r") as f:
        out = []
        for name in sorted(f["frames"]):
            g = f["frames"][name]
            order = np.argsort(g["id"][...])
            out.append({k: g[k][...][order] for k in ("id", "position", "velocity")})
        return out, {k: f["series"][k][...] for k in ("n_below", "iterations", "contacts",
                                                      "min_gap")}


@pytest.mark.mpi(min_size=1)
def test_hourglass_jacobi_identical_on_any_rank_count(shared_dir):
    pytest.importorskip("gmsh")
    comm = MPI.COMM_WORLD
    run = load_run()
    base = ["--grains", "150", "--settle", "0.05", "--duration", "0.25", "--solver", "jacobi",
            "--friction", "0.5", "--frame-interval", "0.05", "--quiet"]
    many = os.path.join(shared_dir, "hg_many.h5")     # its geometry: hg_many.msh (Gmsh)
    run.simulate(run.parser().parse_args(base + ["-o", many]), comm, log=lambda *a: None)
    comm.Barrier()
    if comm.rank == 0:
        one = os.path.join(shared_dir, "hg_one.h5")
        run.simulate(run.parser().parse_args(base + ["-o", one, "--msh",
                                                     os.path.join(shared_dir, "hg_many.msh")]),
                     None, log=lambda *a: None)
        got, s_got = frames(many)
        ref, s_ref = frames(one)
        assert len(got) == len(ref) >= 4
        for a, b in zip(got, ref):
            assert np.array_equal(a["id"], np.arange(150))          # every grain, once
            for k in ("position", "velocity"):
                assert np.array_equal(a[k], b[k]), k
        for k in s_ref:
            assert np.array_equal(s_got[k], s_ref[k], equal_nan=True), k
        assert s_got["n_below"][-1] > 0                            # grains went through
        assert np.nanmin(s_got["min_gap"]) < 0.0 and s_got["contacts"].max() > 0
    comm.Barrier()
