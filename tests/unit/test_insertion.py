"""Particles added during a run: contact state is keyed by ids only (pdem.contact.keys),
so an insertion never resets or moves the history of existing contacts, also across
checkpoints and restarts."""
import numpy as np
import pytest
from mpi4py import MPI

import pdem

R = 0.01


def sliding_pair():
    """Sphere 2 pressed on the fixed sphere 1 and driven sideways: a sliding contact
    (friction 0.5) whose tangential history is not zero."""
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-5, threads=1,
                          comm=MPI.COMM_SELF)
    sim.material("m", 2500.0, kn=1e4, friction=0.5)
    # id 0 far away, so that the pair's first id is not 0 (a key id1 * width + id2
    # with a width that changes on insertion moves only when id1 > 0)
    sim.add_spheres([[0.9, 0.9, 0.9], [0.5, 0.5, 0.5], [0.5, 0.5, 0.5 + 2 * R - 2e-4]], R, "m")
    sim.set_velocity([0, 1], (0, 0, 0), (0, 0, 0), block=True)
    sim.set_velocity([2], (0.05, 0, 0), (0, 0, 0), block=True)
    return sim


def pair_row(sim):
    c = sim.contacts()
    k = np.flatnonzero((c["kind"] == "pair") & (c["id1"] == 1) & (c["id2"] == 2))
    assert len(k) == 1
    return {f: c[f][k[0]] for f in ("force", "u", "phi", "u0", "phi0")}


def assert_rows_equal(a, b):
    for f in a:
        assert a[f].tobytes() == b[f].tobytes(), (f, a[f], b[f])


def test_sliding_contact_keeps_its_history_across_an_insertion():
    plain, added = sliding_pair(), sliding_pair()
    plain.run(steps=200)
    added.run(steps=200)
    before = pair_row(added)
    assert np.linalg.norm(before["u"][1:]) > 1e-6         # a real tangential history
    added.add_spheres([[0.1, 0.1, 0.1]], R, "m")           # far away
    for _ in range(5):
        plain.step()
        added.step()
        assert_rows_equal(pair_row(added), pair_row(plain))
    # the friction force still opposes the sliding (+x): it did not restart from zero
    assert pair_row(added)["force"][0] == pytest.approx(pair_row(plain)["force"][0])
    assert pair_row(added)["force"][0] < -0.1 * abs(pair_row(added)["force"][2])


def test_checkpoint_between_insertion_and_step_keeps_the_history(tmp_path):
    plain, added = sliding_pair(), sliding_pair()
    plain.run(steps=200)
    added.run(steps=200)
    for sim in (plain, added):
        sim.add_spheres([[0.1, 0.1, 0.1]], R, "m")
    path = str(tmp_path / "after_add.h5")
    added.checkpoint(path)
    resumed = pdem.restart(path, comm=MPI.COMM_SELF)
    plain.run(steps=50)
    resumed.run(steps=50)
    assert_rows_equal(pair_row(resumed), pair_row(plain))
    assert np.linalg.norm(pair_row(resumed)["u"][1:]) > 1e-6


def pile(batches=0, far=False):
    """30 spheres falling on a floor in a box (at x < 0.1), optionally with 10
    spheres far from them (0.27 < x < 0.38) from the start."""
    rng = np.random.default_rng(2)
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (0.4, 0.1, 0.2)), dt=1e-4,
                          gravity=(0, 0, -9.81), threads=1, comm=MPI.COMM_SELF)
    sim.material("m", 2500.0, kn=2e3, gamma_n=20.0, friction=0.4)
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                          ((0.4, 0.1, 0), (-1, 0, 0)), ((0.4, 0.1, 0), (0, -1, 0))):
        sim.add_plane(point, normal, "m")
    g = 0.012 + 0.0215 * np.arange(4)
    x, y, z = np.meshgrid(g, g[:3], 0.012 + 0.021 * np.arange(3), indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])[:30]
    pos[:, :2] += rng.uniform(-1e-3, 1e-3, (30, 2))
    sim.add_spheres(pos, R, "m")
    if far:
        add_far(sim)
    return sim


def add_far(sim):
    g = 0.28 + 0.021 * np.arange(5)
    x, z = np.meshgrid(g[:5], 0.012 + 0.021 * np.arange(2), indexing="ij")
    pos = np.column_stack([x.ravel(), np.full(10, 0.05), z.ravel()])
    return sim.add_spheres(pos, R, "m")


def test_far_insertion_leaves_the_others_bitwise_as_if_present_from_the_start():
    late, early = pile(), pile(far=True)
    late.run(steps=1500)
    ids = add_far(late)
    early.run(steps=1500)
    late.run(steps=500)
    early.run(steps=500)
    a, b = late.particles(), early.particles()
    assert np.array_equal(a["id"], b["id"])
    old = a["id"] < ids[0]
    for f in ("position", "velocity", "angular_velocity", "force", "torque", "orientation"):
        assert a[f][old].tobytes() == b[f][old].tobytes(), f
    ca, cb = late.contacts(), early.contacts()
    assert np.count_nonzero(ca["kind"] == "pair") >= 10    # the pile is in contact
    for f in ("force", "u", "phi"):
        sel_a, sel_b = ca["id2"] < ids[0], cb["id2"] < ids[0]
        assert ca[f][sel_a].tobytes() == cb[f][sel_b].tobytes(), f


def test_insertion_right_after_a_restart_continues_like_the_uninterrupted_run(tmp_path):
    whole = pile()
    whole.run(steps=1000)
    path = str(tmp_path / "pile.h5")
    whole.checkpoint(path)
    resumed = pdem.restart(path, comm=MPI.COMM_SELF)
    for sim in (whole, resumed):
        add_far(sim)
        sim.run(steps=1000)
    a, b = whole.particles(), resumed.particles()
    for f in a:
        assert a[f].tobytes() == b[f].tobytes(), f
    assert resumed.n_rebuilds == whole.n_rebuilds


def test_ids_beyond_31_bits_are_refused():
    sim = sliding_pair()
    sim.next_id = (1 << 31) - 1
    with pytest.raises(pdem.InputError, match="ids must be below 2\\*\\*31"):
        sim.add_spheres([[0.2, 0.2, 0.2], [0.3, 0.3, 0.3]], R, "m")
