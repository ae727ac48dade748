"""Bad input gives pdem.InputError with a one-line message naming the parameter and the
value; runs that go wrong stop with pdem.SimulationError naming the step and particle."""
import math
import re
import warnings

import numpy as np
import pytest

import pdem
from pdem.parallel.ghosts import wrap

RHO, R, KN = 1000.0, 0.01, 1e7
MASS = 4.0 / 3.0 * math.pi * R ** 3 * RHO
# Hooke contact of two equal spheres: m* = m / 2, stable leap-frog for dt < 2 / omega
DT_CRIT = 2.0 * math.sqrt(0.5 * MASS / KN)


def make_sim(dt=1e-6, domain=None, **kw):
    sim = pdem.Simulation(domain or pdem.Domain((0, 0, 0), (1, 1, 1)), dt=dt, threads=1, **kw)
    sim.material("m", RHO, kn=KN)
    return sim


def input_error(func, *must_contain):
    with pytest.raises(pdem.InputError) as info:
        func()
    msg = str(info.value)
    assert "\n" not in msg, msg
    for s in must_contain:
        assert s in msg, (s, msg)
    return msg


# ---------------------------------------------------------------- particles
@pytest.mark.parametrize("radius", [-0.1, 0.0, float("nan"), float("inf")])
def test_bad_radius(radius):
    sim = make_sim()
    msg = input_error(lambda: sim.add_spheres([[0.5, 0.5, 0.5]], radius, "m"), "radi")
    assert repr(radius) in msg or str(radius) in msg
    assert sim.n_particles == 0


def test_bad_radius_in_array_names_index_and_value():
    sim = make_sim()
    input_error(lambda: sim.add_spheres([[0.2, 0.5, 0.5], [0.6, 0.5, 0.5]], [0.1, -0.25], "m"),
                "radii[1]", "-0.25")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_position(bad):
    sim = make_sim()
    pos = [[0.5, 0.5, 0.5], [0.5, bad, 0.5]]
    input_error(lambda: sim.add_spheres(pos, 0.1, "m"), "positions[1]", str(bad))


def test_non_finite_velocity():
    sim = make_sim()
    input_error(lambda: sim.add_spheres([[0.5, 0.5, 0.5]], 0.1, "m",
                                        velocities=[[0.0, float("nan"), 0.0]]),
                "velocities", "nan")


def test_position_outside_domain():
    sim = make_sim()
    input_error(lambda: sim.add_spheres([[0.5, 0.5, 0.5], [0.5, 1.5, 0.5]], 0.1, "m"),
                "positions[1]", "1.5", "outside")
    # hi is exclusive: [lo, hi)
    input_error(lambda: sim.add_spheres([[1.0, 0.5, 0.5]], 0.1, "m"), "positions[0]", "outside")
    input_error(lambda: sim.add_spheres([[0.5, -1e-9, 0.5]], 0.1, "m"), "positions[0]", "outside")


@pytest.mark.parametrize("positions, what", [
    (np.full((2, 4), 0.5), "positions"),
    (np.full((2, 3, 1), 0.5), "positions"),
    (np.full(4, 0.5), "positions"),
])
def test_wrong_position_shapes(positions, what):
    sim = make_sim()
    msg = input_error(lambda: sim.add_spheres(positions, 0.1, "m"), what)
    assert "shape" in msg


def test_wrong_radii_and_velocity_shapes():
    sim = make_sim()
    pos = np.full((2, 3), 0.5)
    input_error(lambda: sim.add_spheres(pos, [0.1, 0.1, 0.1], "m"), "radii", "(3,)")
    input_error(lambda: sim.add_spheres(pos, 0.1, "m", velocities=np.zeros((3, 3))),
                "velocities", "(3, 3)")
    input_error(lambda: sim.add_spheres(pos, 0.1, "m", angular_velocities=np.zeros((2, 2))),
                "angular_velocities", "(2, 2)")


# ---------------------------------------------------------------- materials, planes
def test_unknown_material():
    sim = make_sim()
    input_error(lambda: sim.add_spheres([[0.5, 0.5, 0.5]], 0.1, "steel"), "steel", "material")
    input_error(lambda: sim.add_plane((0, 0, 0), (0, 0, 1), "granite"), "granite")
    input_error(lambda: sim.pair("m", "rubber", friction=0.1), "rubber")
    input_error(lambda: sim.add_spheres([[0.5, 0.5, 0.5]], 0.1, 7), "7")


def test_unknown_material_parameter():
    sim = make_sim()
    input_error(lambda: sim.material("x", RHO, kn=KN, stiffness=3.0), "stiffness", "'x'")
    input_error(lambda: sim.pair("m", "m", stiffness=3.0), "stiffness")


@pytest.mark.parametrize("params, name", [
    (dict(kn=-1.0), "kn"), (dict(kn=0.0), "kn"), (dict(kn=float("nan")), "kn"),
    (dict(kn=KN, friction=-0.1), "friction"), (dict(kn=KN, restitution=1.5), "restitution"),
    (dict(young=1e7, poisson=0.5), "poisson"), (dict(kn=KN, law="spring"), "law"),
    (dict(), "kn"), (dict(law="hertz"), "young")])
def test_bad_material_parameters(params, name):
    sim = make_sim()
    input_error(lambda: sim.material("x", RHO, **params), name, "'x'")


def test_bad_density():
    sim = make_sim()
    input_error(lambda: sim.material("x", -5.0, kn=KN), "density", "-5.0")


def test_duplicate_material_name():
    sim = make_sim()
    input_error(lambda: sim.material("m", RHO, kn=KN), "'m'")


@pytest.mark.parametrize("normal", [(0, 0, 0), (0.0, float("nan"), 1.0), (1, 0)])
def test_plane_bad_normal(normal):
    sim = make_sim()
    input_error(lambda: sim.add_plane((0, 0, 0), normal, "m"), "normal")
    assert len(sim.planes) == 0


def test_plane_zero_normal_names_value():
    sim = make_sim()
    input_error(lambda: sim.add_plane((0, 0, 0), (0, 0, 0), "m"), "normal", "[0.0, 0.0, 0.0]")


# ---------------------------------------------------------------- simulation parameters
@pytest.mark.parametrize("kw, name", [
    (dict(dt=0.0), "dt"), (dict(dt=-1e-3), "dt"), (dict(dt=float("inf")), "dt"),
    (dict(dt=1e-3, gravity=(0, 0)), "gravity"), (dict(dt=1e-3, lost="ignore"), "lost"),
    (dict(dt=1e-3, skin=-0.1), "skin")])
def test_bad_simulation_parameters(kw, name):
    input_error(lambda: pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), **kw), name)


def test_unknown_approximation_flag():
    msg = input_error(lambda: make_sim(approx=("mid_normal", "mid_step")), "approx", "mid_step")
    assert "'mid_normal'" not in msg.split("known")[0]


def test_run_needs_exactly_one_of_steps_and_until():
    sim = make_sim()
    input_error(lambda: sim.run(), "steps", "until", "None")
    input_error(lambda: sim.run(steps=3, until=1.0), "steps=3", "until=1.0")
    input_error(lambda: sim.run(steps=-1), "steps", "-1")
    input_error(lambda: sim.run(steps=1.5), "steps", "1.5")
    assert sim.step_count == 0


# ---------------------------------------------------------------- critical time step
def _pair(dt, **kw):
    sim = make_sim(dt=dt, **kw)
    sim.add_spheres([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5 + 1.9 * R]], R, "m")
    return sim


def test_dt_above_critical_is_refused_at_first_step():
    dt = 2.0 * DT_CRIT
    sim = _pair(dt)                       # accepted at construction ...
    msg = input_error(lambda: sim.run(steps=1), "dt", "%g" % dt, "critical", "%g" % DT_CRIT)
    assert sim.step_count == 0            # ... refused before any step is taken
    assert "check_timestep=False" in msg
    input_error(lambda: sim.step(), "dt")


def test_dt_limit_is_the_closed_form():
    _pair(0.99 * DT_CRIT).run(steps=3)
    with pytest.raises(pdem.InputError):
        _pair(1.01 * DT_CRIT).run(steps=1)


def test_check_timestep_false_allows_large_dt():
    sim = _pair(2.0 * DT_CRIT, check_timestep=False)
    sim.run(steps=2)
    assert sim.step_count == 2


def test_adding_stiffer_material_rechecks_dt():
    sim = _pair(0.5 * DT_CRIT)
    sim.run(steps=1)
    sim.material("stiff", RHO, kn=100 * KN)
    sim.add_spheres([[0.2, 0.2, 0.2]], R, "stiff")
    input_error(lambda: sim.run(steps=1), "dt", "critical")


# ---------------------------------------------------------------- runs that go wrong
def _ids_in(msg):
    return [int(x) for x in re.findall(r"\d+", msg)]


def test_exploding_overlap_stops_with_step_and_ids():
    """Absurd dt (check_timestep=False): two approaching spheres jump deep into each
    other in one step; the overlap check names the step and both particle ids."""
    dt = 50 * DT_CRIT
    sim = make_sim(dt=dt, check_timestep=False)
    sim.add_spheres([[0.3, 0.5, 0.5]], R, "m")                    # id 0, a bystander
    gap = 0.1 * R
    v = (gap + 1.2 * R) / (2 * dt)                                 # overlap 1.2 R after 1 step
    sim.add_spheres([[0.5, 0.5, 0.5], [0.5 + 2 * R + gap, 0.5, 0.5]], R, "m",
                    velocities=[[v, 0, 0], [-v, 0, 0]])            # ids 1, 2
    with pytest.raises(pdem.SimulationError) as info:
        sim.run(steps=10)
    msg = str(info.value)
    assert "\n" not in msg
    assert "step 1" in msg and "particles 1 and 2" in msg, msg


def test_non_finite_state_stops_with_step_and_id():
    """A contact force that overflows the velocity update (absurd dt, no overlap limit):
    SimulationError naming the step and the particle id, not a silent NaN run."""
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e200, check_timestep=False,
                          max_overlap=float("inf"))
    sim.material("m", RHO, kn=1e150)
    sim.add_spheres([[0.1, 0.1, 0.1]], R, "m")                              # id 0, free
    sim.add_spheres([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5 + 1.5 * R]], R, "m")   # ids 1, 2
    with pytest.raises(pdem.SimulationError) as info:
        sim.run(steps=3)
    msg = str(info.value)
    assert "\n" not in msg
    assert "step 1" in msg and "non-finite" in msg, msg
    assert re.search(r"particle id (1|2)\b", msg), msg


def _leaver(lost):
    dt = 0.5 * DT_CRIT
    sim = make_sim(dt=dt, lost=lost)
    sim.add_spheres([[0.5, 0.5, 0.5], [0.2, 0.3, 0.4]], R, "m")            # ids 0, 1
    sim.add_spheres([[0.995, 0.5, 0.5]], R, "m", velocities=[[20.0, 0.0, 0.0]])  # id 2
    n_out = math.ceil(0.005 / (20.0 * dt))                                   # steps to leave
    return sim, n_out


def test_particle_leaving_box_raises_with_id():
    sim, n_out = _leaver("error")
    with pytest.raises(pdem.SimulationError) as info:
        sim.run(steps=n_out + 10)
    msg = str(info.value)
    assert "\n" not in msg
    assert "particle id 2" in msg and "step" in msg and "lost='remove'" in msg, msg
    assert sim.step_count >= n_out


def test_particle_leaving_box_removed_with_warning():
    sim, n_out = _leaver("remove")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim.run(steps=n_out + 10)
    msgs = [str(w.message) for w in caught if w.category is RuntimeWarning]
    assert len(msgs) == 1 and "id 2" in msgs[0] and "removed" in msgs[0], msgs
    assert sim.n_removed == 1
    assert sim.n_particles == 2
    np.testing.assert_array_equal(sim.particles()["id"], [0, 1])
    sim.run(steps=5)                                           # keeps running
    assert sim.n_particles == 2


def test_periodic_axis_does_not_lose_particles():
    dt = 0.5 * DT_CRIT
    sim = make_sim(dt=dt, domain=pdem.Domain((0, 0, 0), (1, 1, 1), periodic=(True, False, False)))
    sim.add_spheres([[0.995, 0.5, 0.5]], R, "m", velocities=[[20.0, 0.0, 0.0]])
    n = math.ceil(0.02 / (20.0 * dt))
    sim.run(steps=n)
    x = sim.particles()["position"][0, 0]
    assert 0.0 <= x < 1.0
    assert abs(x - ((0.995 + 20.0 * dt * n) % 1.0)) < 1e-12


class _CountingArray(np.ndarray):
    """ndarray that fails after too many element assignments (loop detector)."""
    limit = 1000
    count = [0]

    def __setitem__(self, key, value):
        self.count[0] += 1
        if self.count[0] > self.limit:
            raise RuntimeError("wrap: more than %d assignment passes" % self.limit)
        super().__setitem__(key, value)


def test_wrap_of_far_position_terminates():
    """A particle kicked far outside a periodic box (exploding run) must be wrapped in
    a bounded number of passes, or rejected -- never loop forever. (Regression: wrap
    used to shift by one box length per pass in a while loop, so a periodic Domain
    with a particle of velocity 1e20 hung in run(steps=1).)"""
    pos = np.array([[0.5, 0.5, 0.5], [1e20, 0.5, 0.5], [-3.0e4 + 0.25, 0.5, 0.5]])
    arr = pos.view(_CountingArray)
    _CountingArray.count[0] = 0
    try:
        wrap(arr, np.zeros(3), np.ones(3), (True, False, False))
    except pdem.SimulationError:
        return                                         # rejecting is acceptable too
    x = np.asarray(arr)[:, 0]
    assert np.all((x >= 0.0) & (x < 1.0))
    assert x[0] == 0.5 and abs(x[2] - 0.25) < 1e-10


# ---------------------------------------------------------------- mesh walls
def test_mesh_wall_bad_arguments(tmp_path):
    from pdem.contact import shapes
    sim = make_sim()
    square = shapes.rectangle((0, 0), (1, 1), 0.0, 1)
    input_error(lambda: sim.add_mesh_wall(square, "m", mode="fast"), "mode", "'fast'")
    input_error(lambda: sim.add_mesh_wall(square, "m", cutoff_angle=-5.0), "cutoff_angle", "-5.0")
    input_error(lambda: sim.add_mesh_wall(square, "m", velocity=(1, 0, 0),
                                          vertex_velocities=np.zeros((4, 3))), "not both")
    input_error(lambda: sim.add_mesh_wall(square, "m", vertex_velocities=np.zeros((3, 3))),
                "vertex_velocities", "(3, 3)")
    input_error(lambda: sim.add_mesh_wall(square, "m", angular_velocity=(0, float("nan"), 0)),
                "angular_velocity")
    input_error(lambda: sim.add_mesh_wall(square, "stone"), "stone")
    input_error(lambda: sim.add_mesh_wall(str(tmp_path / "none.stl"), "m"), "none.stl",
                "no such file")
    assert len(sim.mesh_walls) == 0


def test_ball_touching_too_many_facets_stops_with_id():
    from pdem.contact import shapes
    sim = make_sim(skin=0.01, check_timestep=False)
    sim.add_mesh_wall(shapes.rectangle((0.2, 0.2), (0.8, 0.8), 0.1, 40), "m")
    sim.add_spheres([[0.5, 0.5, 0.13]], 0.1, "m")
    with pytest.raises(pdem.SimulationError, match=r"particle id 0 .* facets of mesh wall 0"):
        sim.step()
