"""The rebuild test in the frame of the mean flow (pdem/contact/frame.py): pair lists
last longer in a flowing scene than a test of the particles' own displacements allows
(bounded by a whole skin, so that positions stay near the box), while walls still see
every particle's own displacement: spheres flying together at a plane or a mesh wall
bounce off it (e = restitution, closed form), however little they move relative to
each other."""
import numpy as np
import pytest

import pdem
from pdem.contact.frame import MovingFrame


def gas(flow, steps=3000):
    """216 elastic, frictionless spheres (r = 0.5) in a periodic box of 12^3 with
    random velocities (unit standard deviation), all moving at `flow` on top."""
    rng = np.random.default_rng(11)
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (12, 12, 12), periodic=(True,) * 3),
                          dt=2e-4, gravity=(0, 0, 0))
    sim.material("m", density=1.0, kn=1e4, gamma_n=0.0, friction=0.0)
    g = np.arange(6) * 2.0 + 1.0
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    vel = rng.normal(0.0, 1.0, pos.shape)
    vel -= vel.mean(axis=0)
    sim.add_spheres(pos, 0.5, "m", velocities=vel + np.asarray(flow))
    energy = []
    for _ in range(steps // 100):
        sim.run(steps=100)
        p, c = sim.particles(), sim.contacts()
        v = p["velocity"] - np.asarray(flow)          # kinetic + the springs' energy
        energy.append(0.5 * np.sum(p["mass"] * np.sum(v * v, axis=1))
                      + 0.5 * 1e4 * np.sum(c["u"][:, 0] ** 2))
    return sim, np.array(energy)


def test_a_gas_in_flight_keeps_its_schedule_and_its_energy():
    """The same gas at rest and flying at 25 d/s: in both the energy relative to the
    flow is conserved (elastic collisions, so a contact missed by a stale list would
    show as an overlap found deep, i.e. energy created). The flight carries the gas 300
    half-skins: a test of the particles' own displacements would rebuild 300 times or
    more; in the frame of the flow, about once per skin of the flow's travel, 150."""
    still, e_still = gas((0.0, 0.0, 0.0))
    flying, e_flying = gas((20.0, -12.0, 9.0))
    assert flying.frame.velocity == pytest.approx([20.0, -12.0, 9.0], abs=3.0)
    travelled = 25.0 * 3000 * 2e-4 / (0.5 * still.skin)     # half-skins the flow moved
    assert travelled == pytest.approx(300.0)
    assert 10 <= still.n_rebuilds < flying.n_rebuilds < 0.6 * travelled
    for e in (e_still, e_flying):
        assert np.max(np.abs(e / e[0] - 1.0)) < 2e-3
    assert np.max(np.abs(e_flying / e_still - 1.0)) < 3e-3


def flight(wall, speed=2.0, e=0.6):
    """A 3 x 3 layer of spheres (r = 0.25, 1 d apart) flying together at `speed`
    towards a wall 1 d below them (wall: 'plane' or 'mesh', a square of two facets):
    relative to their common frame they do not move at all."""
    sim = pdem.Simulation(pdem.Domain((-3, -3, -1), (3, 3, 4)), dt=1e-4, gravity=(0, 0, 0))
    sim.material("m", density=1000.0, kn=1e5, friction=0.3, restitution=e)
    if wall == "plane":
        sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    else:
        square = pdem.Mesh(np.array([[-2.5, -2.5, 0], [2.5, -2.5, 0], [2.5, 2.5, 0],
                                     [-2.5, 2.5, 0]], float), np.array([[0, 1, 2], [0, 2, 3]]))
        sim.add_mesh_wall(square, "m")
    g = np.array([-1.0, 0.0, 1.0])
    pos = np.stack(np.meshgrid(g, g, [1.25], indexing="ij"), -1).reshape(-1, 3)
    sim.add_spheres(pos, 0.25, "m", velocities=np.tile([0.1, 0.0, -speed], (9, 1)))
    return sim


@pytest.mark.parametrize("wall", ["plane", "mesh"])
def test_spheres_flying_together_bounce_off_a_wall(wall):
    """The frame's velocity is their common one; a plane adds the frame's shift along
    its normal to the test, a mesh wall keeps the frame at rest: each sphere comes
    back at e times its speed."""
    e, speed = 0.6, 2.0
    sim = flight(wall, speed, e)
    sim.run(steps=1)
    assert sim.frame.velocity == pytest.approx([0.0] * 3 if wall == "mesh" else [0.1, 0, -speed])
    sim.run(steps=12000)
    v = sim.particles()["velocity"]
    assert np.allclose(v[:, 2], e * speed, rtol=3e-3)


def test_a_restart_keeps_the_frame(tmp_path):
    """A checkpoint between two rebuilds keeps the frame's velocity and time: the run
    goes on with the same rebuilds and every bit."""
    whole, _ = gas((20.0, -12.0, 9.0), steps=1200)
    path = str(tmp_path / "gas.h5")
    whole.checkpoint(path)
    whole.run(steps=800)
    again = pdem.restart(path)
    again.run(steps=800)
    assert again.n_rebuilds == whole.n_rebuilds
    for field in ("position", "velocity"):
        assert np.array_equal(again.particles()[field], whole.particles()[field])


def test_velocity_box_is_the_largest_component_and_its_negation():
    """MovingFrame.velocity_box against Python's max per component, and NaN kept."""
    vel = np.random.default_rng(5).normal(size=(1001, 3))
    expected = [max(vel[:, d]) for d in range(3)] + [max(-vel[:, d]) for d in range(3)]
    assert MovingFrame.velocity_box(vel).tolist() == expected
    vel[17, 1] = np.nan
    assert np.isnan(MovingFrame.velocity_box(vel)[[1, 4]]).all()
    assert MovingFrame.velocity_box(np.zeros((0, 3))).tolist() == [-np.inf] * 6
