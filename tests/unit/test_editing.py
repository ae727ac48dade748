"""Editing a running scene: remove by id or region, new radius or material, external
loads, a new dt (pdem/editing.py, Simulation.dt), walls added."""

import numpy as np
import pytest

import pdem
from pdem.contact import shapes
from pdem.regions import Box


def box_of_balls(n=4, comm=None):
    dom = pdem.Domain((0, 0, 0), (10, 10, 10))
    sim = pdem.Simulation(dom, dt=1e-3, gravity=(0, 0, -10.0), comm=comm)
    sim.material("m", density=1000.0, kn=1e6, restitution=0.5)
    sim.material("heavy", density=3000.0, kn=1e6, restitution=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    g = np.arange(n) * 1.0 + 0.5
    x = np.stack(np.meshgrid(g + 3, g + 3, g), -1).reshape(-1, 3)
    sim.add_spheres(x, 0.5, "m")             # touching columns on the floor
    return sim


def test_remove_by_id_and_region_takes_contacts_along():
    sim = box_of_balls()
    sim.run(steps=200)
    before = sim.contacts()
    assert sim.remove(ids=[0, 5]) == 2
    assert sim.n_particles == 62
    assert not np.isin(sim.particles()["id"], [0, 5]).any()
    c = sim.contacts()
    assert not (np.isin(c["id1"], [0, 5]) | np.isin(c["id2"], [0, 5])).any()
    assert len(c["id1"]) < len(before["id1"])
    # the bottom layer (centres near z = 0.5) by region
    low = int(np.count_nonzero(sim.particles()["position"][:, 2] < 1.0))
    assert sim.remove(region=Box((0, 0, 0), (10, 10, 1.0))) == low > 0
    p = sim.particles()
    assert np.all(p["position"][:, 2] > 1.0) and sim.n_particles == len(p["id"])
    sim.run(steps=200)                        # the rest falls: no error, no stale rows


def test_remove_counts_exactly():
    sim = box_of_balls()
    z0 = sim.particles()["position"][:, 2]
    expect = int(np.count_nonzero(z0 < 1.0))
    assert sim.remove(region=Box((0, 0, 0), (10, 10, 1.0))) == expect == 16
    assert sim.n_particles == 48


def test_removed_bonded_particle_drops_its_bonds():
    sim = box_of_balls(n=2)
    sim.bond_material("b", kn=1e8, ks=1e8, tensile_strength=1e9, cohesion=1e9)
    sim.bond_contacts("b", gap=0.01)
    n = sim.n_bonds
    assert n == 12                            # the 2 x 2 x 2 cube: 12 edges
    sim.remove(ids=[0])
    assert sim.n_bonds == 9                   # particle 0 had three
    sim.run(steps=100)


def test_set_radius_and_material_change_mass():
    sim = box_of_balls(n=2)
    sim.set_radius([1], 0.25)
    sim.set_material([2], "heavy")
    p = sim.particles()
    r = p["radius"]
    assert r[1] == 0.25
    assert p["mass"][1] == pytest.approx(1000.0 * 4 / 3 * np.pi * 0.25 ** 3, rel=1e-14)
    assert p["mass"][2] == pytest.approx(3000.0 * 4 / 3 * np.pi * 0.5 ** 3, rel=1e-14)
    assert p["material"][2] == 1
    sim.run(steps=10)


def test_external_force_balances_gravity_and_spins():
    """A force m g upward keeps a ball hovering; a torque T spins it at T t / I."""
    dom = pdem.Domain((0, 0, 0), (10, 10, 10))
    sim = pdem.Simulation(dom, dt=1e-3, gravity=(0, 0, -10.0))
    sim.material("m", density=1000.0, kn=1e6)
    ids = sim.add_spheres([(5, 5, 5), (2, 2, 5)], 0.5, "m")
    m = 1000.0 * 4 / 3 * np.pi * 0.125
    inertia = 0.4 * m * 0.25
    sim.set_external_load([ids[0]], force=(0, 0, m * 10.0), torque=(0, 0, 2.0))
    sim.run(steps=500)
    p = sim.particles()
    assert p["position"][0, 2] == pytest.approx(5.0, abs=1e-12)
    assert p["angular_velocity"][0, 2] == pytest.approx(2.0 * 0.5 / inertia, rel=1e-12)
    assert p["position"][1, 2] < 4.0           # the other falls
    sim.set_external_load([ids[0]], force=(0, 0, 0))      # zero removes it
    assert len(sim.external.ids) == 0
    sim.run(steps=100)
    assert sim.particles()["position"][0, 2] < 5.0


def test_external_load_survives_restart(tmp_path):
    dom = pdem.Domain((0, 0, 0), (10, 10, 10))
    sim = pdem.Simulation(dom, dt=1e-3, gravity=(0, 0, -10.0))
    sim.material("m", density=1000.0, kn=1e6)
    sim.add_spheres([(5, 5, 5)], 0.5, "m")
    m = 1000.0 * 4 / 3 * np.pi * 0.125
    sim.set_external_load([0], force=(0, 0, 2 * m * 10.0))
    sim.run(steps=100)
    sim.checkpoint(str(tmp_path / "c.h5"))
    sim.run(steps=100)
    again = pdem.restart(str(tmp_path / "c.h5"))
    again.run(steps=100)
    assert np.array_equal(again.particles()["position"], sim.particles()["position"])


def test_change_dt_checks_critical_step_and_keeps_clock():
    sim = box_of_balls(n=2)
    sim.run(steps=10)
    sim.dt = 5e-4
    sim.run(steps=10)
    assert sim.time == pytest.approx(10 * 1e-3 + 10 * 5e-4, rel=1e-15)
    sim.dt = 1.0                              # far above the critical step
    with pytest.raises(pdem.InputError, match="dt"):
        sim.run(steps=1)
    with pytest.raises(pdem.InputError, match="dt must be a positive finite number"):
        sim.dt = "1e-3"


def test_bad_editing_input():
    sim = box_of_balls(n=2)
    with pytest.raises(pdem.InputError, match="unknown particle id 99"):
        sim.remove(ids=[99])
    with pytest.raises(pdem.InputError, match="region must be a pdem region"):
        sim.remove(region="box")
    with pytest.raises(pdem.InputError, match="radius"):
        sim.set_radius([0], -1.0)
    with pytest.raises(pdem.InputError, match="heavier"):
        sim.set_material([0], "heavier")
    with pytest.raises(pdem.InputError, match="ids must be integers"):
        sim.set_external_load([0.5], force=(1, 0, 0))


def add_floor(sim, wall, m):
    """A floor at z = 0 made of one wall of the given kind."""
    if wall == "plane":
        sim.add_plane((0, 0, 0), (0, 0, 1), m)
    elif wall == "region":
        sim.add_region_wall(pdem.HalfSpace((0, 0, 0), (0, 0, -1)), m)
    elif wall == "segment":                      # a rod along x under the sphere
        sim.add_segments([[-0.9, 0, 0]], [[0.9, 0, 0]], m)
    else:
        sim.add_mesh_wall(shapes.rectangle((-0.9, -0.9), (0.9, 0.9), 0.0), m)


@pytest.mark.parametrize("wall", ["plane", "region", "segment", "mesh"])
def test_wall_added_to_a_running_scene_acts_as_if_there_from_the_start(wall):
    """A spinning sphere thrown down onto a floor bounces off it. The floor is there from
    the start, or added after 300 steps of the sphere alone (rebuilds of a scene without
    a wall of that kind, whose build is then skipped: Interaction.needs_build): the same
    trajectory, bit for bit, and the sphere ends above the floor, moving up."""
    runs = []
    for later in (False, True):
        sim = pdem.Simulation(pdem.Domain((-1, -1, -1), (1, 1, 1), periodic=(True, True, False)),
                              dt=1e-4, gravity=(0, 0, -9.81))
        m = sim.material("m", density=1000.0, kn=1e4, restitution=0.5, friction=0.3)
        sim.add_spheres([[0.01, 0.0, 0.4]], 0.1, m, velocities=[[0.2, 0.0, -1.0]],
                        angular_velocities=[[0.0, 3.0, 0.0]])
        if later:
            sim.run(300)
            assert sim.n_rebuilds >= 2
        add_floor(sim, wall, m)
        sim.run(3300 - 300 * later)
        runs.append(sim.particles())
    p, q = runs
    assert 0.1 < p["position"][0, 2] and p["velocity"][0, 2] > 0.0
    for k in ("position", "velocity", "angular_velocity"):
        assert np.array_equal(p[k], q[k]), k
