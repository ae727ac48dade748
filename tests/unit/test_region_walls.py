"""Region walls (Simulation.add_region_wall): seed 002's relaxation as a contact that
keeps particles inside a level-set region (pdem/contact/region_walls.py)."""
import math

import h5py
import numpy as np
import pytest
from mpi4py import MPI

import pdem
from test_bad_input import input_error

G = 9.81


def scene(dt_fraction=0.02, kn=1e4, rho=1000.0, r=0.1, friction=0.3, zeta=0.5,
          gravity=(0, 0, -G)):
    dom = pdem.Domain((-1.5, -1.5, -1.5), (1.5, 1.5, 1.5))
    m = 4 / 3 * math.pi * r ** 3 * rho
    dt = dt_fraction * math.pi * math.sqrt(m / kn)
    sim = pdem.Simulation(dom, dt=dt, gravity=gravity, comm=MPI.COMM_SELF)
    mat = sim.material("a", density=rho, kn=kn, gamma_n=2 * zeta * math.sqrt(kn / m),
                       friction=friction)
    return sim, mat, m


def test_sphere_resting_in_a_spherical_container_load_is_its_weight():
    """Dropped near the bottom of Sphere(0, R): at rest the wall carries m g and the
    centre sits at z = -(R - r) - m g / k_n (the static overlap of a linear spring)."""
    R, r, kn = 1.0, 0.1, 1e4
    sim, mat, m = scene(kn=kn, r=r)
    sim.add_region_wall(pdem.Sphere((0, 0, 0), R), mat)
    sim.add_spheres([[0.0, 0.0, -(R - r) + 0.02]], [r], mat)
    sim.run(steps=30000)
    p = sim.particles()
    assert np.linalg.norm(p["velocity"]) < 1e-9
    load = sim.region_wall_forces()
    assert load.shape == (1, 3)
    assert load[0] == pytest.approx([0.0, 0.0, -m * G], rel=1e-9, abs=1e-9 * m * G)
    assert p["position"][0] == pytest.approx([0, 0, -(R - r) - m * G / kn], abs=1e-12)
    c = sim.contacts()
    assert list(c["kind"]) == ["region"] and c["wall"][0] == 0
    assert c["normal"][0] == pytest.approx([0, 0, 1], abs=1e-12)   # from the wall inward


@pytest.mark.parametrize("normal", [(0, 0, 1), (1, -2, 3)])
def test_half_space_region_wall_is_the_plane_wall(normal):
    """A frictional sphere thrown with spin onto the plane through p with normal n and
    onto the region wall HalfSpace(p, -n) (f = -(x - p) . n, inside on the normal side):
    the same trajectory to round-off (the seed's rule gives overlap r - (x - p) . n).
    Gravity along -n."""
    n = np.asarray(normal, float) / np.linalg.norm(normal)
    p0 = np.array([0.05, -0.03, -0.4])
    x0 = p0 + 0.3 * n + np.cross(n, [0.3, 0.1, 0.2])
    out = []
    for wall in ("plane", "region"):
        sim, mat, m = scene(friction=0.4, zeta=0.3, gravity=-G * n)
        if wall == "plane":
            sim.add_plane(p0, n, mat)
        else:
            sim.add_region_wall(pdem.HalfSpace(p0, -n), mat)
        sim.add_spheres([x0], [0.1], mat, velocities=[-2.0 * n + [0.4, 0.2, -0.1]],
                        angular_velocities=[[5.0, -3.0, 2.0]])
        traj = []
        for _ in range(60):
            sim.run(steps=50)
            q = sim.particles()
            traj.append(np.r_[q["position"][0], q["velocity"][0], q["angular_velocity"][0]])
        forces = sim.plane_forces() if wall == "plane" else sim.region_wall_forces()
        out.append((np.array(traj), forces, sim.n_contacts))
    (a, fa, na), (b, fb, nb) = out
    assert na == nb == 1                            # resting on the wall at the end
    assert np.abs(a - b).max() <= 1e-9 * np.abs(a).max()
    assert np.allclose(fa, fb, rtol=1e-9, atol=1e-12)
    # it hit (deeper than at rest), bounced and came to rest on the wall (static
    # overlap m g_n / k_n): a real contact history was compared
    gap = (a[:, :3] - p0) @ n
    rest = 0.1 - m * G / 1e4
    assert gap.min() < rest - 1e-3 and gap.max() > rest + 0.02
    assert abs(gap[-1] - rest) < 1e-4


def test_particles_stay_inside_a_torus_and_checkpoint_restart_is_bitwise(tmp_path):
    """Grains packed in a torus by pdem.pack settle inside it under gravity (region wall
    of the same torus): none leaves it; a restart from a checkpoint continues bit for bit
    (the region is pickled in the file)."""
    torus = pdem.Torus((0, 0, 0), (0, 1, 1), 1.0, 0.4)
    x, r = pdem.pack(torus, lambda rng, n: rng.uniform(0.06, 0.09, n), count=150, seed=2)

    def make():
        sim, mat, m = scene(r=0.06, kn=2e5)
        sim.add_region_wall(torus, mat)
        sim.add_spheres(x, r, mat)
        return sim

    sim = make()
    sim.run(steps=600)
    path = str(tmp_path / "ls.h5")
    sim.checkpoint(path)
    sim.run(steps=600)
    again = pdem.restart(path, comm=MPI.COMM_SELF)
    assert len(again.region_walls) == 1
    again.run(steps=600)
    p, q = sim.particles(), again.particles()
    assert np.array_equal(p["position"], q["position"])
    assert np.array_equal(p["velocity"], q["velocity"])
    assert np.all(torus(p["position"]) <= -p["radius"] + 0.05 * p["radius"])
    assert sim.region_wall_forces()[0, 2] < 0        # the grains press on the wall


def test_a_version_5_checkpoint_without_region_walls_is_read(tmp_path):
    sim, mat, m = scene()
    sim.add_plane((0, 0, -1), (0, 0, 1), mat)
    sim.add_spheres([[0, 0, -0.85]], [0.1], mat)
    sim.run(steps=100)
    path = str(tmp_path / "v5.h5")
    sim.checkpoint(path)
    with h5py.File(path, "a") as f:
        f.attrs["version"] = 5
        del f["interactions/region"], f["region_walls"]
    again = pdem.restart(path, comm=MPI.COMM_SELF)
    sim.run(steps=100)
    again.run(steps=100)
    assert np.array_equal(sim.particles()["position"], again.particles()["position"])


def test_bad_region_walls_are_refused_with_one_line():
    sim, mat, m = scene()
    input_error(lambda: sim.add_region_wall("sphere", mat), "add_region_wall: region must be")
    user = pdem.FunctionRegion(lambda x: (x ** 2).sum(axis=1) - 1.0)
    input_error(lambda: sim.add_region_wall(user, mat), "is not a distance bound")
    stretched = pdem.Sphere((0, 0, 0), 1.0).transform(np.diag([1.0, 2.0, 1.0]))
    input_error(lambda: sim.add_region_wall(stretched, mat), "is not a distance bound")
    ok = pdem.Box((-1, -1, -1), (1, 1, 1)) - pdem.Sphere((0, 0, 0), 0.3)
    assert sim.add_region_wall(ok, mat) == 0
    input_error(lambda: sim.add_region_wall(ok, "nope"), "nope")


def test_nscd_sphere_in_a_spherical_container_carries_its_weight():
    """The NSCD scheme takes region walls through gaps(): a sphere dropped into the
    bottom of a spherical container rests on it with load m g, touching (gap 0)."""
    sim = pdem.Simulation(pdem.Domain((-1.5, -1.5, -1.5), (1.5, 1.5, 1.5)), dt=1e-3,
                          gravity=(0, 0, -G), comm=MPI.COMM_SELF, scheme=pdem.NSCD())
    m = sim.material("g", density=1000.0, friction=0.3, restitution=0.0)
    sim.add_region_wall(pdem.Sphere((0, 0, 0), 1.0), m)
    sim.add_spheres([[0.0, 0.0, -0.85]], [0.1], m)
    sim.run(steps=400)
    p = sim.particles()
    weight = p["mass"][0] * G
    assert sim.region_wall_forces()[0] == pytest.approx([0, 0, -weight], rel=1e-6, abs=1e-9)
    assert p["position"][0] == pytest.approx([0, 0, -0.9], abs=1e-6)
