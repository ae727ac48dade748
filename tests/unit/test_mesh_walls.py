"""Faceted walls in the step (seed 004): the kernel's contact resolution against the
Python reference rules, state continuity across facets, one contact on shared edges
and vertices, a convex edge, proximity contacts at a concave edge, full mode on
slivers and wedges, a rotating wall, a static bed's weight on a mesh box."""
import numpy as np
import pytest

import pdem
from pdem._kernels.facets import closest_points
from pdem.contact import shapes
from pdem.contact.associative import resolve_full, resolve_reduced
from pdem.contact.mesh import Mesh
from test_associative import folded_sheet

KN = 1e4


def scene(mesh=None, plane=None, mode="reduced", cutoff_angle=20.0, friction=0.5, gamma_n=0.0,
          dt=2e-5, gravity=(0.0, 0.0, -9.81), comm=None, half=2.0, **wall):
    dom = pdem.Domain(lo=(-half, -half, -half), hi=(half, half, half))
    sim = pdem.Simulation(dom, dt=dt, gravity=gravity, skin=0.002, comm=comm)
    sim.material("m", density=2500.0, kn=KN, friction=friction, gamma_n=gamma_n)
    if mesh is not None:
        sim.add_mesh_wall(mesh, "m", mode=mode, cutoff_angle=cutoff_angle, **wall)
    if plane is not None:
        sim.add_plane(plane[0], plane[1], "m")
    return sim


def held_ball(sim, centre, radius=0.01, velocity=(0.0, 0.0, 0.0)):
    """A ball whose translation is prescribed (all six dofs blocked)."""
    ids = sim.add_spheres([centre], [radius], "m")
    sim.set_velocity(ids, velocity=velocity, angular_velocity=(0.0, 0.0, 0.0))
    sim.block(ids, ["x", "y", "z", "rx", "ry", "rz"])
    return ids


def mesh_contacts(sim):
    c = sim.contacts()
    return {k: v[c["kind"] == "mesh"] for k, v in c.items()}


# ------------------------------------------------------------ kernel vs reference rules
def kernel_resolution(mesh, centre, radius, mode):
    """Holder of each candidate row from one step of the ball-facet kernel (all facets
    candidates, fresh state, cutoff 0: no proximity contacts)."""
    sim = scene(mesh, mode=mode, cutoff_angle=0.0, gravity=(0, 0, 0))
    held_ball(sim, centre, radius)
    sim.skin = 10.0                     # every facet is a candidate
    sim.step()
    facets = sim.interactions["mesh"]
    assert len(facets) == mesh.n_facets
    return facets.batch.i2.copy(), facets.holder.copy()


CASES = [(shapes.rectangle((0, 0), (1, 1), 0.0, 4), (0.5, 0.5, 0.09), 0.1),
         (shapes.rectangle((0, 0), (1, 1), 0.0, 4), (0.25, 0.4, 0.09), 0.1),
         (shapes.rectangle((0, 0), (1, 1), 0.0, 8), (0.43, 0.61, 0.4), 0.5),
         (shapes.box((0, 0, 0), (1, 1, 1), 2), (0.09, 0.5, 0.09), 0.1),
         (shapes.box((0, 0, 0), (1, 1, 1), 2), (0.08, 0.07, 0.09), 0.1)]


@pytest.mark.parametrize("mode", ["reduced", "full"])
@pytest.mark.parametrize("case", range(len(CASES) + 3))
def test_kernel_matches_reference_rules(mode, case):
    if case < len(CASES):
        mesh, centre, radius = CASES[case]
    else:
        mesh, centre, radius = [(folded_sheet(2), (-0.3, 0.3, 0.5), 0.6),
                                (folded_sheet(3), (-0.3, 0.3, 0.5), 0.6),
                                (folded_sheet(3), (-0.3, -0.6, 0.4), 0.6)][case - len(CASES)]
    facet, holder = kernel_resolution(mesh, centre, radius, mode)
    q, d, region, _ = closest_points(np.repeat([centre], len(facet), axis=0), facet,
                                     mesh.vertices, mesh.facets)
    if mode == "reduced":
        active, leader = resolve_reduced(facet, radius - d, region, mesh)
    else:
        active, leader = resolve_full(facet, radius - d, region, q, centre, mesh)
    assert active.sum() >= 1
    assert holder.tolist() == leader.tolist()


# ------------------------------------------------------------ continuity across facets
def slide(n_facets_side, steps=3000, comm=None, half=2.0):
    """A ball pressed by gravity, driven sideways at a prescribed velocity across a flat
    square wall of 2 n^2 facets (n = 0: an infinite plane): force history."""
    kw = dict(gamma_n=50.0, comm=comm, half=half)
    if n_facets_side:
        sim = scene(shapes.rectangle((-0.1, -0.1), (0.1, 0.1), 0.0, n_facets_side), **kw)
    else:
        sim = scene(plane=((0, 0, 0), (0, 0, 1)), **kw)
    m = 2500.0 * 4.0 / 3.0 * np.pi * 0.01 ** 3
    ids = sim.add_spheres([[-0.031, -0.0237, 0.01 - m * 9.81 / KN]], [0.01], "m")
    sim.set_velocity(ids, velocity=(0.5, 0.2, 0.0), angular_velocity=(0.0, 0.0, 0.0))
    sim.block(ids, ["x", "y", "rx", "ry", "rz"])
    force, centre = [], []
    for _ in range(steps):
        sim.step()
        c = sim.contacts(gather=True)
        assert len(c["id1"]) == 1
        force.append(c["force"][0])
        centre.append(sim.particles(gather=True)["position"][0])
    return np.array(force), np.array(centre)


def test_sliding_across_many_facets_keeps_shear_force():
    f2, x = slide(1)
    fmany, _ = slide(32)
    fplane, _ = slide(0)
    scale = np.abs(f2).max()
    assert np.abs(fmany - f2).max() <= 1e-10 * scale
    assert np.abs(fplane - f2).max() <= 1e-10 * scale
    # the path crosses many facets of the fine wall (counted from the geometry) ...
    h = 0.2 / 32
    cell = np.floor((x[:, :2] + 0.1) / h).astype(int)
    upper = ((x[:, 0] + 0.1) / h - cell[:, 0]) > ((x[:, 1] + 0.1) / h - cell[:, 1])
    assert len(np.unique(np.c_[cell, upper], axis=0)) >= 10
    # ... while the friction force reaches and keeps the Coulomb limit 0.5 F_n
    ft = np.linalg.norm(f2[:, :2], axis=1)
    assert np.all(np.abs(ft[-500:] / f2[-500:, 2] - 0.5) < 1e-9)


@pytest.mark.parametrize("xy", [(0.05, 0.025), (0.05, 0.05), (0.0375, 0.0375), (0.025, 0.075)])
def test_ball_on_shared_edge_or_vertex_has_one_flat_contact(xy):
    """Edges (between two squares, on a diagonal) and vertices (of 6 or 3 facets)."""
    centre = (xy[0], xy[1], 0.0099)
    sim = scene(shapes.rectangle((0, 0), (0.1, 0.1), 0.0, 4), gravity=(0, 0, 0))
    held_ball(sim, centre)
    flat = scene(plane=((0, 0, 0), (0, 0, 1)), gravity=(0, 0, 0))
    held_ball(flat, centre)
    sim.step()
    flat.step()
    c, cf = mesh_contacts(sim), flat.contacts()
    assert len(c["id1"]) == 1
    assert np.allclose(c["force"], cf["force"], rtol=1e-12, atol=0)
    assert c["force"][0, 2] == pytest.approx(KN * 1e-4, rel=1e-9)


# ------------------------------------------------------------ convex and concave edges
def extruded(profile, width=0.1):
    """Profile (x, z) points extruded along y in [-width, width]; normals up (+z side)."""
    V = [(x, y, z) for x, z in profile for y in (-width, width)]
    F = []
    for k in range(len(profile) - 1):
        a, b, c, d = 2 * k, 2 * k + 1, 2 * k + 3, 2 * k + 2     # (k,-w) (k,w) (k+1,w) (k+1,-w)
        F += [(a, d, c), (a, c, b)]
    return Mesh(np.array(V, float), np.array(F))


@pytest.mark.parametrize("cutoff, carried", [(45.0, True), (10.0, False)])
def test_ball_over_convex_edge(cutoff, carried):
    """A ball driven around a 30 degree convex edge at constant overlap: one active
    contact, a normal that turns smoothly from +z to the slope's normal, and the shear
    force carried to the slope facet only when the cutoff angle allows it."""
    alpha, R, delta, v, dt = np.radians(30.0), 0.01, 1e-4, 0.2, 2e-5
    slope = [(s * np.cos(alpha), -s * np.sin(alpha)) for s in (0.02, 0.05, 0.1)]
    sim = scene(extruded([(-0.1, 0.0), (-0.05, 0.0), (-0.02, 0.0), (0.0, 0.0)] + slope),
                cutoff_angle=cutoff, gravity=(0, 0, 0), dt=dt)
    h = R - delta
    ids = held_ball(sim, (-0.01, 0.0, h), R, velocity=(v, 0, 0))
    n_prev, normals, shear = None, [], []
    for _ in range(4000):
        p = sim.particles()["position"][0]
        angle = np.arctan2(p[0], p[2]) if p[0] > 0 else 0.0
        angle = min(angle, alpha)               # on the flat, around the edge, on the slope
        sim.set_velocity(ids, velocity=v * np.array([np.cos(angle), 0.0, -np.sin(angle)]))
        sim.step()
        c = mesh_contacts(sim)
        assert len(c["id1"]) == 1
        n = c["normal"][0]
        if n_prev is not None:
            assert np.arccos(min(1.0, n @ n_prev)) <= 1.5 * v * dt / h
        n_prev = n
        normals.append(n)
        f = c["force"][0]
        shear.append(np.linalg.norm(f - (f @ n) * n))
    assert np.allclose(normals[0], (0, 0, 1), atol=1e-12)
    assert np.allclose(normals[-1], (np.sin(alpha), 0, np.cos(alpha)), atol=1e-9)
    shear = np.array(shear)
    drop = np.min(shear[1000:] / np.maximum.accumulate(shear)[1000:])
    if carried:        # sliding at the Coulomb limit throughout: no drop
        assert drop > 0.9
    else:              # the slope facet starts afresh: shear force falls to ~0 once
        assert drop < 0.05


def valley(beta_deg):
    b = np.radians(beta_deg)
    return extruded([(-0.1, 0.1 * np.tan(b)), (0.0, 0.0), (0.1, 0.1 * np.tan(b))])


def test_concave_edge_proximity_contact():
    beta, R = np.radians(10.0), 0.01
    n_left = np.array([np.sin(beta), 0.0, np.cos(beta)])     # facet normals of z = |x| tan b
    n_right = np.array([-np.sin(beta), 0.0, np.cos(beta)])
    centre = np.array([0.0005, 0.0, 0.0097])     # over the valley: on both faces
    sim = scene(valley(10.0), cutoff_angle=30.0, gravity=(0, 0, 0))
    ids = held_ball(sim, centre, R)
    sim.step()
    U = np.array([R - n_left @ centre, R - n_right @ centre])   # overlaps from the planes
    assert np.all(U > 0) and U[0] != U[1]
    n = U[0] * n_left + U[1] * n_right
    n /= np.linalg.norm(n)
    c = mesh_contacts(sim)
    assert len(c["id1"]) == 1                                   # one proximity contact
    assert np.allclose(c["normal"][0], n, rtol=0, atol=1e-12)
    assert c["overlap"][0] == pytest.approx(U.mean(), rel=1e-12)
    assert c["force"][0] @ n == pytest.approx(KN * U.mean(), rel=1e-9)
    # a smaller cutoff angle keeps two contacts, one per facet
    two = scene(valley(10.0), cutoff_angle=10.0, gravity=(0, 0, 0))
    held_ball(two, centre, R)
    two.step()
    c2 = mesh_contacts(two)
    assert len(c2["id1"]) == 2
    assert sorted(c2["overlap"]) == pytest.approx(sorted(U), rel=1e-12)
    # the ball moves right along the right facet: the left facet's closest point moves
    # to the shared edge, its contact links to the right one and the proximity contact
    # dissolves into the right facet's contact
    sim.set_velocity(ids, velocity=0.5 * np.array([np.cos(beta), 0.0, np.sin(beta)]))
    merged = []
    for _ in range(400):
        sim.step()
        c = mesh_contacts(sim)
        assert len(c["id1"]) == 1
        merged.append(not np.allclose(c["normal"][0], n_right, rtol=0, atol=1e-12))
    centre = sim.particles()["position"][0]
    assert merged[0] and not any(merged[-100:])
    assert c["overlap"][0] == pytest.approx(R - n_right @ centre, rel=1e-9)


@pytest.mark.parametrize("n_sheets, centre", [(2, (-0.3, 0.3, 0.5)), (3, (-0.3, 0.3, 0.5))])
def test_sliver_and_wedge_full_mode_one_contact(n_sheets, centre):
    counts = {}
    for mode in ("reduced", "full"):
        sim = scene(folded_sheet(n_sheets), mode=mode, cutoff_angle=0.0, gravity=(0, 0, 0))
        held_ball(sim, centre, 0.6)
        sim.step()
        counts[mode] = len(mesh_contacts(sim)["id1"])
    assert counts == {"reduced": n_sheets, "full": 1}


# ------------------------------------------------------------ motion and loads
def test_rotating_wall_stays_on_the_analytic_rotation():
    mesh = shapes.box((-0.1, -0.1, -0.1), (0.1, 0.1, 0.1), 2)
    v0 = mesh.vertices.copy()
    ref, w, dt, steps = np.array([0.05, -0.02, 0.01]), np.array([3.0, -4.0, 12.0]), 1e-4, 20000
    sim = scene(mesh, gravity=(0, 0, 0), dt=dt, angular_velocity=w, reference_point=ref)
    sim.run(steps)
    angle = np.linalg.norm(w) * dt * steps
    k = w / np.linalg.norm(w)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    Rm = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K     # Rodrigues
    expect = ref + (v0 - ref) @ Rm.T
    assert np.abs(sim.mesh_walls.vertices - expect).max() <= 1e-13
    e = lambda v: np.linalg.norm(v[mesh.edges[:, 0]] - v[mesh.edges[:, 1]], axis=1)
    assert np.abs(e(sim.mesh_walls.vertices) - e(v0)).max() <= 1e-15 * 8


def test_static_bed_weight_on_mesh_box():
    """A settled bed in an open mesh box: the box carries the weight (floor load plus
    side-wall friction) within 0.1 %."""
    dom = pdem.Domain(lo=(-0.05, -0.05, -0.01), hi=(0.05, 0.05, 0.2))
    sim = pdem.Simulation(dom, dt=5e-5, gravity=(0, 0, -9.81))
    sim.material("m", density=2500.0, kn=2e3, friction=0.3, restitution=0.2)
    sim.add_mesh_wall(shapes.box((-0.04, -0.04, 0.0), (0.04, 0.04, 0.1), 3), "m")
    rng = np.random.default_rng(1)
    g = np.linspace(-0.03, 0.03, 5)
    x, y, z = np.meshgrid(g, g, 0.01 + 0.016 * np.arange(5), indexing="ij")
    pos = np.c_[x.ravel(), y.ravel(), z.ravel()] + rng.uniform(-1e-3, 1e-3, (x.size, 3))
    sim.add_spheres(pos, rng.uniform(0.005, 0.006, len(pos)), "m")
    sim.run(until=1.5)
    p = sim.particles()
    weight = p["mass"].sum() * 9.81
    load = sim.mesh_wall_forces()["force"][0]
    assert np.abs(p["velocity"]).max() < 1e-3
    assert -load[2] == pytest.approx(weight, rel=1e-3)
    assert np.abs(load[:2]).max() < 1e-3 * weight


def test_inactive_side_is_not_seen():
    """A ball below a floor whose back side is inactive passes through it; with both
    sides active it is pushed down (the back face repels it like the front)."""
    forces = {}
    for inactive in (True, False):
        mesh = shapes.rectangle((-0.1, -0.1), (0.1, 0.1), 0.0, 2)
        if inactive:
            mesh.set_inactive(np.arange(mesh.n_facets), side="back")
        sim = scene(mesh, gravity=(0, 0, 0))
        held_ball(sim, (0.01, 0.02, -0.0099))
        sim.step()
        c = mesh_contacts(sim)
        forces[inactive] = c["force"]
    assert len(forces[True]) == 0
    assert len(forces[False]) == 1 and forces[False][0, 2] == pytest.approx(-KN * 1e-4, rel=1e-9)


def test_deformable_wall_moving_as_a_whole_equals_the_rigid_one():
    """A ball resting with friction on a floor that slides sideways is dragged along
    by the wall's velocity at the contact point: the same force history whether the
    motion is rigid (velocity) or deformable (the same velocity at every vertex)."""
    u = np.array([0.3, -0.1, 0.0])
    out = []
    for motion in ({"velocity": u}, {"vertex_velocities": np.tile(u, (16, 1))}):
        sim = scene(shapes.rectangle((-0.1, -0.1), (0.1, 0.1), 0.0, 3), gamma_n=50.0, **motion)
        m = 2500.0 * 4.0 / 3.0 * np.pi * 0.01 ** 3
        sim.add_spheres([[0.0, 0.0, 0.01 - m * 9.81 / KN]], [0.01], "m")
        f = []
        for _ in range(1500):
            sim.step()
            f.append(mesh_contacts(sim)["force"][0])
        out.append(np.array(f))
    rigid, deformable = out
    assert np.abs(rigid - deformable).max() <= 1e-10 * np.abs(rigid).max()
    ft = rigid[-1, :2]
    assert ft @ u[:2] > 0.9 * np.linalg.norm(ft) * np.linalg.norm(u[:2])   # along u


def test_threads_give_the_same_bits():
    """Ball-facet groups run in OpenMP threads; 1 and 2 threads give the same state,
    and a crowded ball is reported whichever thread meets it."""
    def run(threads):
        dom = pdem.Domain((-0.06, -0.06, -0.01), (0.06, 0.06, 0.15))
        sim = pdem.Simulation(dom, dt=5e-5, gravity=(0, 0, -9.81), threads=threads)
        sim.material("m", density=2500.0, kn=2e3, friction=0.3, restitution=0.2)
        sim.add_mesh_wall(shapes.box((-0.05, -0.05, 0.0), (0.05, 0.05, 0.12), 4), "m")
        sim.add_mesh_wall(shapes.rectangle((-0.03, -0.03), (0.03, 0.03), 0.02, 2), "m",
                          angular_velocity=(0.0, 0.0, 4.0), reference_point=(0, 0, 0.02))
        g = np.linspace(-0.04, 0.04, 6)
        x, y, z = np.meshgrid(g, g, 0.03 + 0.012 * np.arange(3), indexing="ij")
        sim.add_spheres(np.c_[x.ravel(), y.ravel(), z.ravel()], 0.005, "m")
        sim.run(steps=2000)
        return sim.particles(), sim.mesh_wall_forces()
    (p1, f1), (p2, f2) = run(1), run(2)
    for k in ("position", "velocity", "angular_velocity", "force"):
        assert np.array_equal(p1[k], p2[k]), k
    assert np.array_equal(f1["force"], f2["force"]) and np.abs(f1["force"]).max() > 0
    sim = scene(shapes.rectangle((0.2, 0.2), (0.8, 0.8), 0.1, 40), gravity=(0, 0, 0))
    sim.threads = 2
    sim.add_spheres([[0.3, 0.3, 0.2], [0.5, 0.5, 0.13], [0.7, 0.7, 0.2]], [0.01, 0.1, 0.01], "m")
    with pytest.raises(pdem.SimulationError, match=r"particle id 1 .* facets of mesh wall 0"):
        sim.step()
