"""Clumps (issue 21 part 8, docs/clumps.md): mass properties of the union of spheres
against closed forms and numpy Monte Carlo, and clumps in the engine against the sphere
path, statics, and conservation laws."""
import math

import numpy as np
import pytest

import pdem
from pdem import clumps
from test_rigid_body import rot

G = 9.81


def box(length=1.0, periodic=(True, True, True), dt=1e-5, gravity=(0, 0, 0)):
    return pdem.Simulation(pdem.Domain((0, 0, 0), (length,) * 3, periodic=periodic), dt=dt,
                           gravity=gravity)


def world_L(p):
    return np.array([rot(q) @ (I * (rot(q).T @ w)) for q, I, w in
                     zip(p["orientation"], p["inertia"], p["angular_velocity"])])


def monte_carlo(centres, radii, n=2_000_000, seed=3):
    """Volume, centroid and inertia tensor (unit density) of the union by sampling its
    bounding box (numpy only), with the standard error of the volume."""
    c, r = np.asarray(centres, float), np.asarray(radii, float)
    lo, hi = (c - r[:, None]).min(axis=0), (c + r[:, None]).max(axis=0)
    x = np.random.default_rng(seed).uniform(lo, hi, size=(n, 3))
    inside = np.any(np.sum((x[:, None, :] - c[None]) ** 2, axis=2) < r ** 2, axis=1)
    box_v = np.prod(hi - lo)
    p = inside.mean()
    v = box_v * p
    y = x[inside]
    com = y.mean(axis=0)
    d = y - com
    second = box_v / n * d.T @ d
    return v, com, np.trace(second) * np.eye(3) - second, box_v * math.sqrt(p * (1 - p) / n)


# ------------------------------------------------------------------- mass properties
def test_lens_volume_of_two_equal_spheres_is_exact():
    """V = 2 (4/3 pi r^3) - pi (4 r + d)(2 r - d)^2 / 12 (two spheres minus their lens)."""
    for r, d in [(1.0, 1.2), (0.3, 0.05), (2.0, 3.9)]:
        v, com, inertia, method = clumps.mass_properties([[0, 0, 0], [d, 0, 0]], r)
        exact = 2 * 4 / 3 * math.pi * r ** 3 - math.pi * (4 * r + d) * (2 * r - d) ** 2 / 12
        assert method == "exact"
        assert v == pytest.approx(exact, rel=1e-13)
        assert np.allclose(com, [d / 2, 0, 0], rtol=1e-13, atol=1e-15 * r)


def test_single_sphere_clump_is_the_sphere():
    v, com, inertia, method = clumps.mass_properties([[0.1, -0.2, 0.3]], [0.05])
    vs = 4 / 3 * math.pi * 0.05 ** 3
    assert v == pytest.approx(vs, rel=1e-15) and np.allclose(com, [0.1, -0.2, 0.3], rtol=1e-15)
    assert np.allclose(inertia, 0.4 * vs * 0.05 ** 2 * np.eye(3), rtol=1e-14, atol=1e-30)


@pytest.mark.parametrize("centres,radii", [
    ([[0, 0, 0], [0.13, 0.04, -0.02]], [0.1, 0.07]),                   # exact (a lens)
    ([[0, 0, 0], [0.12, 0, 0], [0.05, 0.1, 0.03]], [0.08, 0.08, 0.06]),   # quadrature
])
def test_dumbbell_and_triangle_against_monte_carlo(centres, radii):
    """Volume, centroid and inertia tensor within 4 standard errors of a 2e6-point Monte
    Carlo (about 5e-4 relative)."""
    v, com, inertia, method = clumps.mass_properties(centres, radii)
    vm, cm, im, err = monte_carlo(centres, radii)
    assert method == ("exact" if len(radii) == 2 else "quadrature")
    assert abs(v - vm) < 4 * err, (v, vm, err)
    size = max(radii)
    assert np.max(np.abs(com - cm)) < 4 * err / v * size
    assert np.max(np.abs(inertia - im)) < 8 * err / v * np.abs(im).max()


def test_quadrature_converges_to_the_exact_lens():
    """The column quadrature on a two-sphere union (which has the exact answer): errors
    below 2e-5 at the default grid and falling with n."""
    c, r = np.array([[0, 0, 0], [0.12, 0.03, 0.02]]), np.array([0.1, 0.07])
    v, com, inertia, _ = clumps.mass_properties(c, r)
    errors = []
    for n in (100, 200, 400):
        vq, s, q = clumps._union_quadrature(c, r, n)
        cq = s / vq
        second = q - vq * np.outer(cq, cq)
        iq = np.trace(second) * np.eye(3) - second
        errors.append(max(abs(vq / v - 1), np.abs(iq - inertia).max() / np.abs(inertia).max()))
    assert errors[2] < 2e-5 and errors[0] > 4 * errors[1] > 16 * errors[2], errors


def test_template_is_put_in_its_principal_frame():
    sim = box()
    k = sim.clump_template([[0, 0, 0], [0.06, 0.02, 0.01], [0.02, 0.05, 0.0]],
                           [0.04, 0.03, 0.035])
    spheres = sim.templates.rows("spheres", k)
    v, i1, i2, i3, bound = sim.templates.props[k]
    body = spheres[:, :3]
    v2, com, inertia, _ = clumps.mass_properties(body, spheres[:, 3])
    # (the quadrature again, on a grid in the principal frame: its error, ~1e-5)
    assert v2 == pytest.approx(v, rel=5e-5) and np.abs(com).max() < 5e-5 * bound
    assert np.allclose(inertia, np.diag([i1, i2, i3]), atol=5e-5 * i3)
    assert i1 <= i2 <= i3
    assert bound == pytest.approx(np.max(np.linalg.norm(body, axis=1) + spheres[:, 3]))


@pytest.mark.parametrize("call,message", [
    (lambda s: s.clump_template([[0, 0, 0], [0.01, 0, 0]], [0.05, 0.02]),
     r"clump spheres 0 and 1: one lies inside the other"),
    (lambda s: s.clump_template([[0, 0, 0]], [-0.1]), r"clump radii must be one or 1 finite"),
    (lambda s: s.add_clumps([[0.5, 0.5, 0.5]], 7, "m"), r"template = 7 is not a clump template"),
])
def test_bad_input_is_one_clear_line(call, message):
    sim = box()
    sim.material("m", density=1000.0, kn=1e3)
    with pytest.raises(pdem.InputError, match=message):
        call(sim)


def test_unsupported_combinations_are_refused():
    sim = box()
    m = sim.material("m", density=1000.0, kn=1e3)
    k = sim.clump_template([[0, 0, 0], [0.05, 0, 0]], 0.04)
    sim.add_clumps([[0.5, 0.5, 0.5]], k, m)
    with pytest.raises(pdem.InputError, match="add_ellipsoids: ellipsoid and clump particles "
                                              "in one simulation"):
        sim.add_ellipsoids([[0.2, 0.2, 0.2]], [0.03, 0.02, 0.01], m)
    nscd = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-4, scheme=pdem.NSCD())
    nscd.material("m", density=1000.0)
    k = nscd.clump_template([[0, 0, 0]], 0.04)
    with pytest.raises(pdem.InputError, match="add_clumps: scheme 'nscd'"):
        nscd.add_clumps([[0.5, 0.5, 0.5]], k, "m")


# ------------------------------------------------------------------- in the engine
def test_hertz_time_step_of_a_clump_is_that_of_its_smallest_member():
    """Its members' contacts are Hertz contacts of the member radii: the Rayleigh time
    pi r sqrt(rho / G) / (0.1631 nu + 0.8766) of the smallest member bounds dt."""
    def rayleigh(r, young=5e6, nu=0.3, rho=1000.0):
        return np.pi * r * np.sqrt(rho * 2 * (1 + nu) / young) / (0.1631 * nu + 0.8766)
    for dt, ok in ((0.9 * rayleigh(0.01), True), (1.1 * rayleigh(0.01), False)):
        sim = box(dt=dt)
        m = sim.material("m", density=1000.0, law="hertz", young=5e6, poisson=0.3)
        sim.add_clumps([[0.5, 0.5, 0.5]], sim.clump_template([[0, 0, 0], [0.05, 0, 0]],
                                                             [0.04, 0.01]), m)
        if ok:
            sim.run(steps=1)
        else:
            with pytest.raises(pdem.InputError, match="above the critical time step"):
                sim.run(steps=1)


def oblique(kind, law):
    """Two spheres r = 0.05 (or one-sphere clumps) colliding obliquely on a plane, with
    friction and damping, spinning."""
    sim = box(1.0, periodic=(True, True, False), gravity=(0, 0, -G))
    stiffness = dict(kn=2e3) if law == "hooke" else dict(law="hertz", young=5e6, poisson=0.3)
    m = sim.material("m", density=1000.0, friction=0.4, restitution=0.5, **stiffness)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    pos = [[0.40, 0.50, 0.0502], [0.52, 0.53, 0.0503]]
    vel = [[0.5, 0.1, 0.0], [0.0, 0.0, 0.0]]
    w = [[0, 0, 3.0], [1.0, 0, 0]]
    if kind == "sphere":
        sim.add_spheres(pos, 0.05, m, velocities=vel, angular_velocities=w)
    else:
        sim.add_clumps(pos, sim.clump_template([[1, 2, 3]], 0.05), m, velocities=vel,
                       angular_velocities=w)
    return sim


@pytest.mark.parametrize("law", ["hooke", "hertz"])
def test_single_sphere_clump_follows_the_sphere(law):
    """The same trajectory as two spheres to round-off (the torque from the branch
    vector c - x instead of -(r + u_n/2) n, the rotation through L): measured 1e-14
    (Hooke) and 5e-12 (Hertz) relative."""
    runs = []
    for kind in ("sphere", "clump"):
        sim = oblique(kind, law)
        sim.run(6000)
        runs.append((sim.particles(), sim.contacts()))
    (p, c), (q, d) = runs
    assert list(c["kind"]) == ["pair", "plane", "plane"]
    assert list(d["kind"]) == ["clump", "clplane", "clplane"]
    assert np.array_equal(p["mass"], q["mass"]) and np.array_equal(p["radius"], q["radius"])
    tol = 1e-12 if law == "hooke" else 1e-10     # Hertz: round-off grows with the stiffness
    for k in ("position", "velocity", "angular_velocity"):
        assert np.max(np.abs(p[k] - q[k])) < tol * np.abs(p[k]).max(), k
    assert np.max(np.abs(c["force"] - d["force"])) < 100 * tol * np.abs(c["force"]).max()


def rod_dropped():
    """Three equal overlapping spheres in a flat triangle (the quadrature path) dropped
    tilted on a plane, with damping, friction, rolling and twisting resistance."""
    sim = box(0.4, periodic=(True, True, False), dt=2e-4, gravity=(0, 0, -G))
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.5, restitution=0.05,
                     twisting_friction=0.3, twisting_stiffness=0.3, rolling_friction=0.02,
                     rolling_stiffness=0.3)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    r = 0.01
    k = sim.clump_template([[0, 0, 0], [0.015, 0, 0], [0.0075, 0.013, 0]], r)
    q = np.random.default_rng(2).normal(size=4)
    sim.add_clumps([[0.2, 0.2, 0.04]], k, m, orientations=[q / np.linalg.norm(q)],
                   angular_velocities=[[3.0, -2.0, 1.0]])
    sim.run(15000)
    return sim, r


def test_dropped_clump_rests_flat_with_the_plane_carrying_its_weight():
    """At rest all three members touch the plane (the side with the lowest centre of
    mass): the triangle's normal vertical, the centre at r less the static overlap
    (W / 3 k_n per member, 1e-5 r for the rolling tilt), and the plane load = the weight."""
    sim, r = rod_dropped()
    p = sim.particles()
    W = p["mass"][0] * G
    normal = rot(p["orientation"][0])[:, 2]     # the largest moment: the triangle's normal
    assert abs(normal[2]) > math.cos(0.01), normal
    assert abs(p["position"][0, 2] - (r - W / 3e4)) < 2e-3 * W / 1e4 + 1e-7, p["position"]
    load = sim.plane_forces()[0]
    assert abs(-load[2] / W - 1) < 1e-6, load / W
    assert np.linalg.norm(p["velocity"][0]) < 1e-4
    assert sim.n_contacts == 3
    # Love-Weber: sigma_zz V = sum (z_c - z) f_z = -W z (contact points at z = -overlap/2)
    stress = pdem.analysis.particle_stress(sim)["stress"][0]
    v = clumps.mass_properties(sim.templates.rows("spheres", 0)[:, :3], r)[0]
    assert stress[2, 2] * v == pytest.approx(-W * p["position"][0, 2], rel=1e-3)


def asymmetric(sim, m, pos, **kw):
    k = sim.clump_template([[0, 0, 0], [0.05, 0.01, 0], [0.01, 0.045, 0.02]],
                           [0.04, 0.03, 0.025])
    return sim.add_clumps(pos, k, m, **kw)


def test_torque_free_clump_keeps_its_angular_momentum():
    sim = box(dt=1e-4)
    m = sim.material("m", density=1000.0, kn=1e3)
    asymmetric(sim, m, [[0.5, 0.5, 0.5]], angular_velocities=[[2.0, 30.0, 0.5]])
    p = sim.particles()
    L0, stored = world_L(p)[0], sim.store.angmom[0].copy()
    e0 = sum(sim.energy().values())
    sim.run(3000)
    p = sim.particles()
    assert np.array_equal(sim.store.angmom[0], stored)
    assert np.max(np.abs(world_L(p)[0] - L0)) < 1e-12 * np.linalg.norm(L0)
    assert abs(sum(sim.energy().values()) / e0 - 1) < 1e-5


def test_elastic_frictionless_collision_conserves_momenta_and_energy():
    """Two turned asymmetric clumps collide off-centre: momentum to round-off, angular
    momentum (orbital + spin) to 1e-12, energy to the leap-frog's O(dt^2)."""
    sim = box(dt=2e-5)
    m = sim.material("m", density=1000.0, kn=1e3, friction=0.0, restitution=1.0)
    q = np.array([0.9, 0.1, 0.3, 0.2])
    asymmetric(sim, m, [[0.4, 0.5, 0.5], [0.56, 0.52, 0.49]],
               orientations=[[1, 0, 0, 0], q / np.linalg.norm(q)],
               velocities=[[0.5, 0, 0], [-0.3, 0, 0]])

    def invariants():
        p = sim.particles()
        mom = (p["mass"][:, None] * p["velocity"]).sum(axis=0)
        ang = (np.cross(p["position"], p["mass"][:, None] * p["velocity"]) + world_L(p)).sum(axis=0)
        return mom, ang, sum(sim.energy().values())

    mom0, ang0, e0 = invariants()
    touched = 0
    for _ in range(40):
        sim.run(200)
        touched += sim.n_contacts
    mom, ang, e = invariants()
    p = sim.particles()
    assert touched > 0 and sim.n_contacts == 0 and np.abs(p["angular_velocity"]).max() > 0.1
    assert np.max(np.abs(mom - mom0)) < 1e-13 * np.abs(mom0).max()
    assert np.max(np.abs(ang - ang0)) < 1e-12 * np.abs(mom0).max()
    assert abs(e / e0 - 1) < 1e-5


def test_editing_clumps():
    """set_material: the mass and moments from the template; set_velocity: L = R I R^T w."""
    sim = box()
    m = sim.material("m", density=1000.0, kn=1e3)
    heavy = sim.material("heavy", density=3000.0, kn=1e3)
    asymmetric(sim, m, [[0.5, 0.5, 0.5]])
    mass = sim.particles()["mass"][0]
    sim.set_material([0], heavy)
    sim.set_velocity([0], angular_velocity=[1.0, 2.0, 3.0])
    p = sim.particles()
    assert p["mass"][0] == pytest.approx(3 * mass, rel=1e-14)
    assert np.allclose(sim.store.angmom[0], world_L(p)[0], rtol=1e-13, atol=0)
    with pytest.raises(pdem.InputError, match="set_radius: particle id 0 is a clump"):
        sim.set_radius([0], 0.1)


def test_frames_carry_pose_and_member_spheres(tmp_path):
    """A result file of clumps: shape, orientation and template per particle, and the
    member spheres as points (centre = x + R b, radius, clump id, member index) with
    their own XDMF grid."""
    import h5py
    from pdem.io import ResultFile
    sim = box()
    m = sim.material("m", density=1000.0, kn=1e3)
    q = np.array([0.9, 0.1, 0.3, 0.2])
    q /= np.linalg.norm(q)
    centres = np.array([[0, 0, 0], [0.05, 0.01, 0], [0.01, 0.045, 0.02]])
    radii = np.array([0.04, 0.03, 0.025])
    k = sim.clump_template(centres, radii)
    sim.add_clumps([[0.5, 0.5, 0.5]], k, m, orientations=[q])
    sim.add_spheres([[0.2, 0.2, 0.2]], 0.05, m)
    with ResultFile(str(tmp_path / "r.h5"), sim) as rf:
        rf.write_frame()
    v, com, _, _ = clumps.mass_properties(centres, radii)
    with h5py.File(tmp_path / "r.h5", "r") as f:
        g = f["frames/000000"]
        assert list(g["particles/shape"][...]) == [3, 0]
        assert list(g["particles/template"][...]) == [k, 0]
        assert np.array_equal(g["particles/orientation"][0], sim.particles()["orientation"][0])
        got = g["members/position"][...]
        assert list(g["members/id"][...]) == [0, 0, 0]
        assert list(g["members/member"][...]) == [0, 1, 2]
        assert np.array_equal(g["members/radius"][...], radii)
    # the given layout turned by q about the centre of mass
    expected = [0.5, 0.5, 0.5] + (centres - com) @ rot(q).T
    assert np.allclose(got, expected, atol=1e-12)
    assert 'Grid Name="members_000000"' in (tmp_path / "r.xdmf").read_text()


def test_format_8_checkpoint_without_clump_kinds_restarts(tmp_path):
    """A checkpoint of format 8 (before the clump kinds and sub-keys) is read and
    continues bit for bit."""
    import h5py
    from mpi4py import MPI

    def scene():
        sim = oblique("sphere", "hooke")
        sim.run(300)
        return sim

    straight = scene()
    straight.run(200)
    path = str(tmp_path / "v8.h5")
    scene().checkpoint(path)
    with h5py.File(path, "a") as f:
        for k in ("clump", "clplane"):
            del f["interactions/" + k]
        f.attrs["version"] = 8
    resumed = pdem.restart(path, comm=MPI.COMM_SELF)
    resumed.run(200)
    p, q = straight.particles(), resumed.particles()
    for k in p:
        assert np.array_equal(p[k], q[k]), k


def test_history_is_carried_by_key_and_member_pair():
    """carry_by_subkey: a new row takes the state of the old active row with the same
    (key, sub), whatever the order of the old rows; rows without one start fresh."""
    from pdem.contact.clump_kinds import carry_by_subkey
    from pdem.contact.store import ContactBatch
    rng = np.random.default_rng(5)
    key = np.array([7, 7, 7, 9, 9, 12], np.int64)
    sub = np.array([0, 1, 65536, 1, 2, 0], np.int32)
    order = rng.permutation(len(key))
    old = ContactBatch(key=key[order])
    old.sub[:] = sub[order]
    old.state[:] = rng.normal(size=old.state.shape)
    old.active[:] = 1
    old.active[list(order).index(4)] = 0             # (9, 2) not in contact
    new = ContactBatch(key=np.array([7, 7, 9, 9, 11, 12], np.int64))
    new.sub[:] = [1, 65536, 1, 2, 0, 0]
    carry_by_subkey(new, old)
    for j, (k, s) in enumerate(zip(new.key, new.sub)):
        match = np.flatnonzero((old.key == k) & (old.sub == s) & (old.active == 1))
        if len(match):
            assert new.active[j] == 1 and np.array_equal(new.state[j], old.state[match[0]])
        else:
            assert new.active[j] == 0 and not new.state[j].any()
    assert list(new.active) == [1, 1, 1, 0, 0, 1]
