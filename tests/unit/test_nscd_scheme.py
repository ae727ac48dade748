"""pdem.Simulation with scheme=pdem.NSCD: the same numbers as the standalone
GrainProblem, closed forms for friction on a moving belt (plane and mesh walls) and
for restitution, prescribed grains, output, bad input and failures."""
import math
import warnings

import h5py
import numpy as np
import pytest

import pdem
from pdem.contact import shapes
from pdem.io import ResultFile
from pdem.nscd import ConvergenceWarning, GrainProblem


def _pile_2d(seed=1):
    rng = np.random.default_rng(seed)
    gx, gy = np.meshgrid(np.linspace(0.1, 0.9, 10), np.linspace(0.05, 0.7, 6))
    x = np.column_stack([gx.ravel(), gy.ravel()]) + rng.uniform(-0.005, 0.005, (60, 2))
    return x, rng.uniform(0.02, 0.03, 60)


# the walls of the GrainProblem comparison: a box of planes, or a funnel of boundary
# segments with their end points (x0, x1) above a floor, between two side walls
PLANES = (((0, 0), (0, 1)), ((0, 0), (1, 0)), ((1, 0), (-1, 0)))
FUNNEL = ([(0.0, 0.45), (0.55, 0.2), (0.0, 0.0), (0.0, 0.0), (1.0, 0.0)],
          [(0.45, 0.2), (1.0, 0.45), (1.0, 0.0), (0.0, 2.5), (1.0, 2.5)])


@pytest.mark.parametrize("walls", ["planes", "funnel"])
@pytest.mark.parametrize("solver", ["nlgs", "jacobi"])
@pytest.mark.parametrize("friction", [0.0, 0.4])
def test_same_trajectories_as_grain_problem(solver, friction, walls):
    """60 disks falling into a box of three planes or into a funnel of segments (with
    end points; the disks start above it): Simulation's NSCD step (drift, then
    velocity update) after N steps holds GrainProblem's (seed 003's API, stepped in
    the seed's order) positions after N - 1 steps and velocities after N (both start
    at rest). Without friction the bits are the same; with friction the disks'
    inertia 0.5 m r^2 is rounded differently by the two, and the tolerance covers that."""
    x, r = _pile_2d()
    if walls == "funnel":
        x = x + [0.0, 0.5]
    dt, tol, alert, steps = 1e-3, 1e-7, 0.01, 300
    sim = pdem.Simulation(pdem.Domain((-0.1, -0.5), (1.1, 3), dim=2), dt,
                          gravity=(0, -9.81, 0), scheme=pdem.NSCD(solver, tol=tol, alert=alert),
                          skin=0.01)
    sim.material("g", 1000.0, friction=friction)
    sim.add_spheres(x, r, "g")
    gp = GrainProblem(dim=2, gravity=(0, -9.81), friction=friction, relaxation=None)
    gp.add_grains(x, r, density=1000.0)
    if walls == "planes":
        for point, normal in PLANES:
            sim.add_plane(point + (0,), normal + (0,), "g")
            gp.add_planes([point], [normal])
    else:
        sim.add_segments(*FUNNEL, "g")
        gp.add_segments(*FUNNEL)
        assert len(sim.points) == len(gp.disks) == 8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)     # Jacobi with friction
        sim.run(steps=steps)
        for _ in range(steps - 1):
            gp.step(dt, tol, alert, solver=solver)
        p = sim.particles()
        x_ref = gp.x.copy()
        gp.step(dt, tol, alert, solver=solver)
    assert sim.scheme.sweeps == gp.iterations > 1
    assert np.all(p["position"][:, 2] == 0.0) and np.all(p["velocity"][:, 2] == 0.0)
    if walls == "funnel":
        assert np.count_nonzero(p["position"][:, 1] < 0.2) > 0     # through the opening
        assert {"segment", "pair"} <= set(sim.contacts()["kind"])
    if friction == 0.0:
        assert np.array_equal(p["position"][:, :2], x_ref)
        assert np.array_equal(p["velocity"][:, :2], gp.v)
    else:
        assert np.allclose(p["position"][:, :2], x_ref, rtol=0, atol=1e-9)
        assert np.allclose(p["velocity"][:, :2], gp.v, rtol=0, atol=1e-6)
        assert np.allclose(p["angular_velocity"][:, 2], gp.omega, rtol=0, atol=1e-4)
        assert np.abs(gp.omega).max() > 0.1


def _belt(floor, mu=0.2, belt=1.0, steps=400, dt=1e-3):
    """A ball (r = 0.5) at rest on a floor moving at `belt` along x; returns the
    velocity, angular velocity and floor force history."""
    sim = pdem.Simulation(pdem.Domain((-5, -5, -1), (5, 5, 5)), dt, gravity=(0, 0, -10),
                          scheme=pdem.NSCD("nlgs", tol=1e-10, alert=0.01), skin=0.01)
    sim.material("m", 1.0, friction=mu)
    if floor == "plane":
        sim.add_plane((0, 0, 0), (0, 0, 1), "m", velocity=(belt, 0, 0))
    else:
        mesh = shapes.rectangle((-4.0, -4.0), (4.0, 4.0), 0.0, 8)
        motion = ({"velocity": (belt, 0, 0)} if floor == "rigid mesh" else
                  {"vertex_velocities": np.tile((belt, 0.0, 0.0), (len(mesh.vertices), 1))})
        sim.add_mesh_wall(mesh, "m", **motion)
    sim.add_spheres([(0.0, 0.0, 0.5)], 0.5, "m")
    out = []
    for _ in range(steps):
        sim.step()
        p = sim.particles()
        f = sim.plane_forces()[0] if floor == "plane" else sim.mesh_wall_forces()["force"][0]
        out.append((p["velocity"][0].copy(), p["angular_velocity"][0].copy(), f))
    return [np.array(a) for a in zip(*out)], p["mass"][0]


@pytest.mark.parametrize("floor", ["plane", "rigid mesh", "deformable mesh"])
def test_ball_on_a_belt_rolls_at_two_sevenths(floor):
    """Closed form: a sphere put on a belt moving at V slides with acceleration mu g
    (friction force mu m g on it, -mu m g on the belt) until it rolls without slip at
    v = 2 V / 7 (contact point at the belt's speed: omega_y = (v - V) / r), at
    t = 2 V / (7 mu g)."""
    mu, V, g, dt = 0.2, 1.0, 10.0, 1e-3
    (v, w, f), m = _belt(floor, mu, V, dt=dt)
    t_roll = 2 * V / (7 * mu * g)                       # 0.1429 s = step 142.9
    sliding = slice(0, int(t_roll / dt) - 1)
    assert np.allclose(v[sliding, 0], mu * g * dt * np.arange(1, sliding.stop + 1), atol=1e-12)
    assert np.allclose(f[sliding], (-mu * m * g, 0, -m * g), rtol=1e-12, atol=1e-12)
    assert np.allclose(v[-1], (2 * V / 7, 0, 0), atol=1e-10)
    assert np.allclose(w[-1], (0, -5 * V / 7 / 0.5, 0), atol=1e-9)
    assert np.allclose(f[-1], (0, 0, -m * g), atol=1e-9)


def test_restitution_of_a_drop():
    """A ball dropped on a plane with restitution e leaves it with -e times its
    approach velocity (Newton's law in the step of the impact)."""
    e = 0.5
    sim = pdem.Simulation(pdem.Domain((-1, -1, -1), (1, 1, 3)), 1e-3, gravity=(0, 0, -10),
                          scheme=pdem.NSCD(tol=1e-12, alert=0.05), skin=0.05)
    sim.material("m", 1.0, restitution=e, friction=0.0)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    sim.add_spheres([(0, 0, 1.0)], 0.1, "m")
    vz = []
    for _ in range(600):
        sim.step()
        vz.append(sim.particles()["velocity"][0, 2])
    k = int(np.argmax(np.diff(vz) > 0)) + 1             # the step of the impact
    approach = vz[k - 1] - 10 * 1e-3                     # free-fall velocity in that step
    assert vz[k] == pytest.approx(-e * approach, rel=1e-12)
    assert approach == pytest.approx(-math.sqrt(2 * 10 * 0.9), abs=0.02)


def test_prescribed_grain_supports_a_stack():
    """A grain with all translations and rotations blocked is immovable (infinite
    mass): a grain resting on it stays put and pushes with its weight; partial
    blocking is refused with the particle id."""
    sim = pdem.Simulation(pdem.Domain((-1, -1, -1), (1, 1, 3)), 1e-3, gravity=(0, 0, -10),
                          scheme=pdem.NSCD(tol=1e-12, alert=0.01), skin=0.01)
    sim.material("m", 1.0, friction=0.3)
    ids = sim.add_spheres([(0, 0, 0.0), (0.0, 0, 0.2)], 0.1, "m")
    sim.block(ids[0], ["x", "y", "z", "rx", "ry", "rz"])
    sim.run(steps=50)
    p = sim.particles()
    assert np.array_equal(p["position"][0], (0, 0, 0)) and np.all(p["velocity"][0] == 0)
    assert np.allclose(p["position"][1], (0, 0, 0.2), atol=1e-12)
    c = sim.contacts()
    assert np.allclose(c["force"][0], (0, 0, p["mass"][1] * -10 * -1), rtol=1e-10)
    sim.block(ids[1], "x")
    with pytest.raises(pdem.InputError, match="particle id 1 has only some of its translations"):
        sim.step()


def test_series_report_sweeps_and_contact_forces(tmp_path):
    """ResultFile with NSCD: solver_sweeps in the series; particle forces (impulses /
    dt) balance the weight of a bed at rest on a plane."""
    x, r = _pile_2d()
    sim = pdem.Simulation(pdem.Domain((0, -0.5), (1, 3), dim=2), 1e-3, gravity=(0, -9.81, 0),
                          scheme=pdem.NSCD(tol=1e-7, alert=0.01), skin=0.01)
    sim.material("g", 1000.0, friction=0.5)
    sim.add_spheres(x, r, "g")
    for point, normal in (((0, 0, 0), (0, 1, 0)), ((0, 0, 0), (1, 0, 0)), ((1, 0, 0), (-1, 0, 0))):
        sim.add_plane(point, normal, "g")
    path = str(tmp_path / "nscd.h5")
    with ResultFile(path, sim, contacts=True, every=500, series_every=100) as rf:
        rf.run(steps=1500)
    with h5py.File(path, "r") as f:
        sweeps = f["series/solver_sweeps"][...]
        last = f["frames"][sorted(f["frames"])[-1]]
        force = last["particles/force"][...]
        mass = np.pi * last["particles/radius"][...] ** 2 * 1000.0
    assert np.all(sweeps[1:] > 1) and sweeps[-1] == sim.scheme.sweeps
    weight = 9.81 * mass.sum()
    assert force[:, 1].sum() / weight == pytest.approx(1.0, abs=2e-3)
    assert -sim.plane_forces()[:, 1].sum() / weight == pytest.approx(1.0, abs=2e-3)


def test_bad_input_names_the_parameter():
    with pytest.raises(pdem.InputError, match="solver must be one of .* got 'sor'"):
        pdem.NSCD("sor")
    with pytest.raises(pdem.InputError, match="tol must be .* got -1"):
        pdem.NSCD(tol=-1)
    with pytest.raises(pdem.InputError, match="itmax must be an integer >= 1, got 0"):
        pdem.NSCD(itmax=0)
    with pytest.raises(pdem.InputError, match="overlap_correction must be .* got 2"):
        pdem.NSCD(overlap_correction=2)
    with pytest.raises(pdem.InputError, match="scheme must be None .* got 'nscd'"):
        pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), 1e-3, scheme="nscd")


def test_deep_overlap_stops_with_the_ids():
    sim = pdem.Simulation(pdem.Domain((-1, -1, -1), (1, 1, 1)), 1e-3,
                          scheme=pdem.NSCD(tol=1e-9), max_overlap=0.5)
    sim.material("m", 1.0)
    sim.add_spheres([(0, 0, 0), (0.08, 0, 0)], 0.1, "m")
    with pytest.raises(pdem.SimulationError, match="overlap of particles 0 and 1 is 1.2"):
        sim.step()


def test_sweep_cap_warns_with_the_step():
    x, r = _pile_2d()
    sim = pdem.Simulation(pdem.Domain((0, -0.5), (1, 3), dim=2), 1e-3, gravity=(0, -9.81, 0),
                          scheme=pdem.NSCD("jacobi", tol=1e-9, itmax=2, alert=0.01), skin=0.01)
    sim.material("g", 1000.0)
    sim.add_spheres(x, r, "g")
    sim.add_plane((0, 0, 0), (0, 1, 0), "g")
    with pytest.warns(ConvergenceWarning, match=r"step \d+ \(t=.*\): jacobi: no convergence "
                                                r"in itmax=2 sweeps") as rec:
        sim.run(steps=100)
    assert rec[0].message.iterations == 2 and rec[0].message.residual >= 1e-9 / 1e-3


@pytest.mark.skipif(not pdem.openmp_available(), reason="kernels built without OpenMP")
def test_jacobi_same_bits_on_one_and_two_threads():
    x, r = _pile_2d(seed=3)
    runs = []
    for threads in (1, 2):
        sim = pdem.Simulation(pdem.Domain((0, -0.5), (1, 3), dim=2), 1e-3,
                              gravity=(0, -9.81, 0), threads=threads, skin=0.01,
                              scheme=pdem.NSCD("jacobi", tol=1e-6, alert=0.01))
        sim.material("g", 1000.0, friction=0.3)
        sim.add_spheres(x, r, "g")
        sim.add_plane((0, 0, 0), (0, 1, 0), "g")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            sim.run(steps=200)
        runs.append((sim.particles(), sim.contacts()))
    for part in range(2):
        for k, a in runs[0][part].items():
            assert np.array_equal(a, runs[1][part][k]), k
    assert len(runs[0][1]["id1"]) > 20
