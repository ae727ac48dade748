"""Checkpoint files: a bad or damaged file is refused with its name, and a failed
write never destroys the previous checkpoint."""

import json

import h5py
import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem.io import checkpoint


def small_run(steps=50):
    dom = pdem.Domain((0, 0, 0), (6.0, 6.0, 6.0), periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=1e-3, comm=MPI.COMM_SELF)
    m = sim.material("m", density=1.0, kn=1000.0, friction=0.4)
    rng = np.random.default_rng(1)
    g = 0.6 + np.arange(5) * 1.1
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    sim.add_spheres(pos, 0.5, m, velocities=rng.normal(0, 1.0, (len(pos), 3)))
    sim.run(steps=steps)
    return sim


def test_not_a_checkpoint_is_refused_with_its_name(tmp_path):
    bad = tmp_path / "notes.h5"
    bad.write_bytes(b"this is not HDF5")
    with pytest.raises(pdem.InputError, match="cannot read checkpoint .*notes.h5"):
        pdem.restart(str(bad), comm=MPI.COMM_SELF)
    with pytest.raises(pdem.InputError, match="cannot read checkpoint .*missing.h5"):
        pdem.restart(str(tmp_path / "missing.h5"), comm=MPI.COMM_SELF)


def test_truncated_or_damaged_checkpoint_is_refused(tmp_path):
    path = str(tmp_path / "run.h5")
    small_run().checkpoint(path)
    data = open(path, "rb").read()
    cut = tmp_path / "cut.h5"
    cut.write_bytes(data[:len(data) // 2])
    with pytest.raises(pdem.InputError, match="cut.h5"):
        pdem.restart(str(cut), comm=MPI.COMM_SELF)
    with h5py.File(path, "a") as f:
        del f["interactions/pair/state"]
    with pytest.raises(pdem.InputError, match="run.h5.* truncated or corrupted: missing "
                                              "interactions/pair/state"):
        pdem.restart(path, comm=MPI.COMM_SELF)
    assert open(path, "rb").read(8) == data[:8]        # refused, not overwritten


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_checkpoint_of_another_format_version_is_refused(tmp_path, version):
    """Version 1 stored contact rows of 30 doubles, version 2 keys whose layout depended
    on the particle count: reading either would give contacts the wrong state, so the
    version is checked first."""
    path = str(tmp_path / "old.h5")
    small_run(5).checkpoint(path)
    with h5py.File(path, "a") as f:
        f.attrs["version"] = version
    with pytest.raises(pdem.InputError, match="old.h5' is a pdem checkpoint of format "
                                              r"version %d; this pdem reads versions \(5, 6, 7, 8\)"
                                              % version):
        pdem.restart(path, comm=MPI.COMM_SELF)


def test_contact_rows_of_another_layout_are_refused(tmp_path):
    path = str(tmp_path / "rows.h5")
    small_run(5).checkpoint(path)
    with h5py.File(path, "a") as f:
        layout = json.loads(f["interactions/pair"].attrs["layout"])
        layout["ncols"] += 3
        f["interactions/pair"].attrs["layout"] = json.dumps(layout)
    with pytest.raises(pdem.InputError, match="rows.h5' has contact rows of another layout"):
        pdem.restart(path, comm=MPI.COMM_SELF)


def test_failed_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = str(tmp_path / "run.h5")
    sim = small_run(50)
    sim.checkpoint(path)
    sim.run(steps=20)

    def disk_full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checkpoint, "_write_rows", disk_full)
    with pytest.raises(OSError, match="No space left"):
        sim.checkpoint(path)
    monkeypatch.undo()
    assert pdem.restart(path, comm=MPI.COMM_SELF).step_count == 50


def test_unwritable_checkpoint_folder_is_refused(tmp_path):
    with pytest.raises(pdem.InputError, match="checkpoint folder .*nowhere.* is not writable"):
        small_run(1).checkpoint(str(tmp_path / "nowhere" / "run.h5"))


def test_restart_continues_bit_for_bit(tmp_path):
    path = str(tmp_path / "run.h5")
    whole = small_run(300)
    half = small_run(150)
    half.checkpoint(path)
    resumed = pdem.restart(path, comm=MPI.COMM_SELF)
    resumed.run(steps=150)
    a, b = whole.particles(), resumed.particles()
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    assert resumed.n_rebuilds == whole.n_rebuilds       # the same rebuild schedule
