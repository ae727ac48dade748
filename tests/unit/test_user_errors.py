"""Issue 21 part 7: errors a new user meets say what is wrong (one line naming the
parameter, the particles or the wall), and honest warnings (a time step that resolves
contacts too coarsely, particles removed by lost='remove')."""
import math
import warnings

import numpy as np
import pytest

import pdem
from pdem.io import ResultFile

RHO, R, KN = 1000.0, 0.01, 1e7
MASS = 4.0 / 3.0 * math.pi * R ** 3 * RHO
DT_CRIT = 2.0 * math.sqrt(0.5 * MASS / KN)        # Hooke, two equal spheres


def make_sim(dt=1e-6, **kw):
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=dt, threads=1, **kw)
    sim.material("m", RHO, kn=KN)
    return sim


def one_line(exc_type, func, *must_contain, absent=()):
    with pytest.raises(exc_type) as info:
        func()
    msg = str(info.value)
    assert "\n" not in msg, msg
    for s in must_contain:
        assert s in msg, (s, msg)
    for s in absent:
        assert s not in msg, (s, msg)
    return msg


# ---------------------------------------------------------------- overlaps
def test_initial_pair_overlap_named_at_step_1():
    sim = make_sim()
    # centres 0.008 apart: overlap 2R - 0.008 = 0.012, 1.2 of the radius (limit 0.5)
    sim.add_spheres([[0.2, 0.5, 0.5], [0.5, 0.5, 0.5], [0.5, 0.508, 0.5]], R, "m")
    one_line(pdem.SimulationError, lambda: sim.run(steps=1), "step 1", "particles 1 and 2",
             "1.2 of the smaller radius (0.012)", "set-up", absent=("time step too large",))


def test_overlap_made_by_the_time_step_blames_dt():
    sim = make_sim()
    v = 0.003 / sim.dt          # approach 0.006 per step; gap 0.002: step 2 overlaps 1.0 R
    sim.add_spheres([[0.5, 0.5, 0.5], [0.5 + 2 * R + 0.002, 0.5, 0.5]], R, "m",
                    velocities=[[v, 0, 0], [-v, 0, 0]])
    msg = one_line(pdem.SimulationError, lambda: sim.run(steps=3), "step 2",
                   "particles 0 and 1", "time step too large", absent=("set-up",))
    assert sim.step_count == 2, msg


def test_particle_behind_plane_refused_at_add_spheres():
    sim = make_sim()
    sim.add_plane((0, 0, 0.1), (0, 0, 1), "m")
    one_line(pdem.InputError,
             lambda: sim.add_spheres([[0.5, 0.5, 0.5], [0.5, 0.5, 0.07]], R, "m"),
             "positions[1]", "behind plane 0", "0.03")
    assert sim.n_particles == 0


def test_plane_behind_particles_refused_at_add_plane():
    sim = make_sim()
    sim.add_spheres([[0.5, 0.5, 0.5], [0.5, 0.5, 0.05]], R, "m")
    one_line(pdem.InputError, lambda: sim.add_plane((0, 0, 0.1), (0, 0, 1), "m"),
             "particle id 1", "behind the new plane 0", "0.05")
    assert len(sim.planes) == 0


def test_particle_overlapping_plane_at_start_says_set_up():
    sim = make_sim()
    sim.add_plane((0, 0, 0.1), (0, 0, 1), "m")
    sim.add_spheres([[0.5, 0.5, 0.5], [0.5, 0.5, 0.103]], R, "m")   # overlap 0.007 = 0.7 R
    one_line(pdem.SimulationError, lambda: sim.run(steps=1), "particle 1 and plane 0",
             "0.7 of the smaller radius (0.007)", "set-up")


def test_coincident_positions_refused_at_add_spheres():
    sim = make_sim()
    one_line(pdem.InputError, lambda: sim.add_spheres(
        [[0.2, 0.5, 0.5], [0.5, 0.5, 0.5], [0.7, 0.5, 0.5], [0.5, 0.5, 0.5]], R, "m"),
        "positions[1] = positions[3]", "same position")


def test_coincident_with_earlier_particle_names_the_pair():
    sim = make_sim()
    sim.add_spheres([[0.2, 0.5, 0.5], [0.5, 0.5, 0.5]], R, "m")
    sim.add_spheres([[0.5, 0.5, 0.5]], R, "m")          # id 2 on top of id 1
    one_line(pdem.SimulationError, lambda: sim.run(steps=1), "non-finite velocity",
             "particles 1 and 2 are at the same position [0.5, 0.5, 0.5]")


# ---------------------------------------------------------------- time step
def test_dt_near_critical_warns_with_steps_per_contact():
    sim = make_sim(dt=0.99 * DT_CRIT)
    sim.add_spheres([[0.5, 0.5, 0.5]], R, "m")
    with pytest.warns(pdem.TimeStepWarning) as rec:
        sim.run(steps=2)
    msgs = [str(w.message) for w in rec if w.category is pdem.TimeStepWarning]
    assert len(msgs) == 1, msgs                        # once, not every step
    # contact duration pi sqrt(m*/kn) = pi/2 dt_crit: 1.587 steps at 0.99 dt_crit
    assert "1.59 steps per contact duration" in msgs[0], msgs[0]
    assert "('m', 'm')" in msgs[0]


def test_small_dt_does_not_warn():
    sim = make_sim(dt=0.05 * DT_CRIT)                 # 31 steps per contact
    sim.add_spheres([[0.5, 0.5, 0.5]], R, "m")
    with warnings.catch_warnings():
        warnings.simplefilter("error", pdem.TimeStepWarning)
        sim.run(steps=2)


# ---------------------------------------------------------------- one-line input errors
def test_radius_with_unit_string():
    sim = make_sim()
    one_line(pdem.InputError, lambda: sim.add_spheres([[0.5, 0.5, 0.5]], "1mm", "m"),
             "radii", "'1mm'")


def test_set_velocity_with_two_components_in_3d():
    sim = make_sim()
    sim.add_spheres([[0.5, 0.5, 0.5]], R, "m")
    one_line(pdem.InputError, lambda: sim.set_velocity([0], (1, 2)), "set_velocity", "velocity",
             "(2,)")
    sim.set_velocity([0], (1, 2, 3))
    np.testing.assert_array_equal(sim.particles()["velocity"], [[1, 2, 3]])


def test_set_velocity_one_per_id():
    sim = make_sim()
    sim.add_spheres([[0.2, 0.5, 0.5], [0.5, 0.5, 0.5]], R, "m")
    sim.set_velocity([1, 0], [[1, 0, 0], [2, 0, 0]])
    np.testing.assert_array_equal(sim.particles()["velocity"][:, 0], [2, 1])


def test_material_of_another_simulation():
    other = make_sim()
    foreign = other.material("steel", 7800.0, kn=1e7)
    sim = make_sim()
    one_line(pdem.InputError, lambda: sim.add_spheres([[0.5, 0.5, 0.5]], R, foreign),
             "'steel'", "another simulation")


def test_dt_as_numpy_float32_is_accepted():
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=np.float32(1e-5))
    assert sim.dt == float(np.float32(1e-5)) and type(sim.dt) is float
    one_line(pdem.InputError, lambda: pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)),
                                                      dt=np.float32(-1.0)), "dt", "-1")


def test_radius_larger_than_the_box():
    sim = make_sim()
    one_line(pdem.InputError, lambda: sim.add_spheres([[0.5, 0.5, 0.5]], 0.6, "m"),
             "radii[0] = 0.6", "larger than the domain")


def test_mesh_wall_outside_the_domain():
    sim = make_sim()
    tri = pdem.Mesh([[2, 2, 2], [3, 2, 2], [2, 3, 2]], [[0, 1, 2]], name="far")
    one_line(pdem.InputError, lambda: sim.add_mesh_wall(tri, "m"), "'far'",
             "entirely outside the domain")
    assert len(sim.mesh_walls) == 0
    sim.add_mesh_wall(tri, "m", velocity=(-1, -1, -1))     # moving in: allowed


def test_result_file_into_missing_folder(tmp_path):
    sim = make_sim()
    path = tmp_path / "no" / "such" / "run.h5"
    one_line(pdem.InputError, lambda: ResultFile(path, sim), "ResultFile", "folder",
             str(tmp_path / "no" / "such"))


# ---------------------------------------------------------------- time
def test_time_is_step_times_dt():
    sim = make_sim(dt=1e-3, check_timestep=False)
    sim.add_spheres([[0.5, 0.5, 0.5]], R, "m")
    for k in range(1, 61):
        sim.step()
        assert sim.time == k * 1e-3
    assert sim.time == 0.06                 # summing dt 60 times gives 0.060000000000000046
    sim.dt = 2e-3                           # a new dt: times continue from t = 0.06
    sim.run(steps=5)
    assert sim.time == 0.06 + 5 * 2e-3


# ---------------------------------------------------------------- threads
def test_more_threads_than_cores_warns(monkeypatch):
    """`mpirun -n 1` binds its rank to one core: two OpenMP threads would take turns on
    it. The warning says so and how to give the rank more cores."""
    import os
    from pdem.threads import openmp_available
    if not openmp_available():
        pytest.skip("kernels built without OpenMP: always one thread")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    with pytest.warns(pdem.ThreadsWarning, match="2 OpenMP threads per rank, but this "
                      "process may run on 1 core.*--bind-to none"):
        pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-6, threads=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_sim()                                      # one thread: no warning
