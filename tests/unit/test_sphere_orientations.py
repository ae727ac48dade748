"""Simulation(sphere_orientations=False): spheres keep their orientations (LAMMPS's fix
nve/sphere tracks none). A sphere's orientation never enters its motion, so every other
field and every contact must keep its bits; non-spheres keep theirs integrated."""
import numpy as np
import pytest

import pdem


def pile(orientations, ellipsoid=False):
    """27 spheres dropped on a plane under a tilted gravity (they roll and spin), and
    with `ellipsoid` one ellipsoid among them."""
    sim = pdem.Simulation(pdem.Domain((-2, -2, 0), (2, 2, 4)), dt=1e-4,
                          gravity=(3.0, 1.0, -9.81), sphere_orientations=orientations)
    sim.material("m", density=1000.0, kn=1e5, friction=0.5, restitution=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    g = np.arange(3) * 0.45 - 0.45
    pos = np.stack(np.meshgrid(g, g, g + 0.7, indexing="ij"), -1).reshape(-1, 3)
    rng = np.random.default_rng(3)
    sim.add_spheres(pos + rng.uniform(-0.02, 0.02, pos.shape), 0.2, "m")
    if ellipsoid:
        sim.add_ellipsoids([(0.0, 0.0, 2.0)], (0.25, 0.15, 0.1), "m")
    return sim


def state(sim):
    p, c = sim.particles(), sim.contacts()
    order = np.lexsort((c["id2"], c["id1"], c["wall"]))
    return p, {k: np.asarray(v)[order] for k, v in c.items() if k != "kind"}


def same_bits(a, b):
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def test_orientations_off_change_nothing_else():
    on, off = pile(True), pile(False)
    on.run(steps=3000)
    off.run(steps=3000)
    (p_on, c_on), (p_off, c_off) = state(on), state(off)
    for k in p_on:
        if k != "orientation":
            assert same_bits(np.asarray(p_on[k]), np.asarray(p_off[k])), k
    for k in c_on:
        assert same_bits(c_on[k], c_off[k]), k
    assert len(c_on["id2"]) > 20                     # a pile in contact
    identity = np.tile([1.0, 0.0, 0.0, 0.0], (27, 1))
    assert same_bits(p_off["orientation"], identity)
    turned = np.abs(p_on["orientation"][:, 0]) < 0.99    # rolled by more than 16 degrees
    assert np.count_nonzero(turned) >= 5


def test_a_restart_keeps_the_option(tmp_path):
    sim = pile(False)
    sim.run(steps=500)
    sim.checkpoint(str(tmp_path / "c.h5"))
    again = pdem.restart(str(tmp_path / "c.h5"))
    assert again.sphere_orientations is False
    again.run(steps=500)
    assert np.all(again.particles()["orientation"] == [1.0, 0.0, 0.0, 0.0])


def test_non_spheres_keep_every_orientation_integrated():
    on, off = pile(True, ellipsoid=True), pile(False, ellipsoid=True)
    on.run(steps=3000)
    off.run(steps=3000)
    (p_on, _), (p_off, _) = state(on), state(off)
    for k in p_on:
        assert same_bits(np.asarray(p_on[k]), np.asarray(p_off[k])), k
    assert np.count_nonzero(np.abs(p_on["orientation"][:27, 0]) < 0.99) >= 5  # spheres


def test_bad_value_is_named():
    with pytest.raises(pdem.InputError, match="sphere_orientations must be True or False"):
        pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-4, sphere_orientations="no")
