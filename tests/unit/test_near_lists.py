"""Near lists (pdem/contact/near.py): the pair kernel visits only the candidates that are
active or within a margin of touching, rebuilt when the particles may have travelled a
quarter of the margin: the same bits as visiting every candidate, in a flowing box with
fast projectiles, on 1 and 2 threads, and under shear in a deforming cell, whose images
move on their own; a list kept past its travel bound misses contacts (what the bound is
for)."""
import hashlib

import numpy as np
import pytest

import pdem
from pdem._kernels import contacts as ck
from pdem.errors import InputError


def flowing_box(near_margin, threads=1, projectiles=True):
    """400 spheres (r 0.45-0.5) in columns in an 8 x 8 periodic box on a floor, gravity
    tilted, and (projectiles) 8 of them shot at 5 d/s."""
    rng = np.random.default_rng(7)
    dom = pdem.Domain((0, 0, 0), (8, 8, 12), periodic=(True, True, False))
    sim = pdem.Simulation(dom, 5e-4, gravity=(8.0, 0.0, -20.0), threads=threads,
                          near_margin=near_margin)
    m = sim.material("m", density=1.0, kn=2e4, gamma_n=5.0, friction=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    sim.add_plane((0, 0, 12), (0, 0, -1), m)        # a lid for the projectiles
    g = np.arange(0.5, 8, 1.0)
    x, y, z = np.meshgrid(g, g, np.arange(0.5, 7, 1.0), indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])[:400]
    vel = rng.normal(0.0, 0.1, pos.shape)
    if projectiles:
        vel[::50] = rng.normal(0.0, 1.0, (8, 3)) * 5.0 / np.sqrt(3)
    sim.add_spheres(pos, rng.uniform(0.45, 0.5, len(pos)), m, velocities=vel)
    return sim


def fingerprint(sim):
    p, c = sim.particles(), sim.contacts()
    o = np.argsort(p["id"])
    oc = np.lexsort((c["id2"], c["id1"]))
    h = hashlib.md5()
    for a in (p["position"][o], p["velocity"][o], p["angular_velocity"][o],
              c["force"][oc], c["normal"][oc]):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest(), len(c["id1"])


@pytest.mark.parametrize("threads", [1, 2])
def test_near_lists_keep_every_bit(threads):
    ref = flowing_box(0.0, threads)
    ref.run(steps=2000)
    for margin in (0.05, 0.25, 1.0):        # the default, a wider one, a whole skin
        sim = flowing_box(margin, threads)
        sim.run(steps=2000)
        near = sim.interactions["pair"].near
        assert fingerprint(sim) == fingerprint(ref)
        assert near.builds > sim.n_rebuilds     # rebuilt between the Verlet rebuilds too
    assert ref.interactions["pair"].near.builds == 0
    assert ref.n_contacts > 200


def test_a_near_list_kept_past_its_bound_misses_contacts():
    """The same run with the travel since the build forgotten at every step (the list
    is then rebuilt only with the Verlet list): contacts are missed."""
    ref = flowing_box(0.0)
    ref.run(steps=2000)
    sim = flowing_box(0.1)

    def forget(s):
        s.travel = 0.0
    sim.events.every(1, forget, name="forget")
    sim.run(steps=2000)
    assert fingerprint(sim) != fingerprint(ref)


def test_near_lists_under_shear_keep_every_bit():
    """A dense sheared periodic cell (L_xy = 5, through a flip): images approach each
    other through the cell's motion as well as the particles' (Cell.step_travel)."""
    def sheared(margin):
        rng = np.random.default_rng(3)
        dom = pdem.Domain((0, 0, 0), (6, 6, 6), periodic=(True, True, True))
        sim = pdem.Simulation(dom, 2e-4, near_margin=margin)
        m = sim.material("m", density=1.0, kn=2e4, gamma_n=5.0, friction=0.5)
        g = np.arange(0.5, 6, 1.0)
        x, y, z = np.meshgrid(g, g, g, indexing="ij")
        pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
        sim.add_spheres(pos + rng.uniform(-0.02, 0.02, pos.shape), 0.5, m,
                        velocities=rng.normal(0.0, 0.1, pos.shape))
        sim.cell.velocity_gradient = [[0, 5.0, 0], [0, 0, 0], [0, 0, 0]]
        sim.run(steps=600)
        return sim
    ref, sim = sheared(0.0), sheared(0.05)
    assert sim.cell.n_flips == ref.cell.n_flips >= 1
    assert fingerprint(sim) == fingerprint(ref)
    assert sim.interactions["pair"].near.builds > sim.n_rebuilds


def test_near_lists_follow_the_images_of_a_deforming_cell():
    """Two rows of spheres held at rest (blocked) across the y boundary of a cell under
    shear L_xy = 2: only the images move, and pairs touch and part as the cell tilts.
    Without the cell's own travel in the bound (Cell.step_travel) this list misses
    contacts at some steps (checked)."""
    def counts(margin):
        dom = pdem.Domain((0, 0, 0), (6, 6, 6), periodic=(True, True, True))
        sim = pdem.Simulation(dom, 2e-4, near_margin=margin)
        m = sim.material("m", density=1.0, kn=2e4, friction=0.5)
        xs = np.arange(0.5, 6, 1.0)
        pos = [(x, 0.4, 3.0) for x in xs] + [(x - 0.5, 5.6, 3.0) for x in xs]
        sim.block(sim.add_spheres(pos, 0.45, m))
        sim.cell.velocity_gradient = [[0, 2.0, 0], [0, 0, 0], [0, 0, 0]]
        n = []
        sim.events.every(1, lambda s: n.append(s.n_contacts), name="count")
        sim.run(steps=1200)
        return n, sim
    ref, _ = counts(0.0)
    near, sim = counts(0.25)
    assert near == ref and sum(ref) > 5000
    assert sim.interactions["pair"].near.builds > sim.n_rebuilds


def test_near_pairs_are_the_active_and_the_close():
    """pyx/contacts.pyx near_pairs against numpy: periodic images, owned and ghost rows."""
    rng = np.random.default_rng(11)
    n, m, box = 300, 2000, 5.0
    pos = rng.uniform(0, box, (n, 3))
    image = rng.integers(-1, 2, (n, 3)).astype(np.int32)
    image[:100] = 0                                  # the owned rows below image_from
    radius = rng.uniform(0.1, 0.3, n)
    i1 = rng.integers(0, n, m).astype(np.int32)
    i2 = rng.integers(0, n, m).astype(np.int32)
    active = (rng.random(m) < 0.1).astype(np.int8)
    cell = np.vstack([np.diag([box] * 3), np.zeros((3, 3))])
    d = pos[i2] - pos[i1] + (image[i2] - image[i1]) * box
    gap = np.sqrt((d * d).sum(axis=1)) - radius[i1] - radius[i2]
    for margin in (0.0, 0.5, 2.0):
        near = ck.near_pairs(i1, i2, pos, image, cell, radius, active, margin, True, 100)
        expected = np.flatnonzero((active != 0) | (gap < margin))
        assert near.dtype == np.int32 and np.array_equal(near[:, 0], expected)
        assert np.array_equal(near[:, 1], i1[expected]) and np.array_equal(near[:, 2], i2[expected])


def test_near_margin_must_be_a_number_of_at_least_zero():
    dom = pdem.Domain((0, 0, 0), (1, 1, 1))
    with pytest.raises(InputError, match="near_margin"):
        pdem.Simulation(dom, 1e-4, near_margin=-0.1)


def test_a_restart_keeps_the_near_margin(tmp_path):
    sim = flowing_box(0.02, projectiles=False)
    sim.run(steps=10)
    sim.checkpoint(str(tmp_path / "c.h5"))
    assert pdem.restart(str(tmp_path / "c.h5")).near_margin == 0.02
