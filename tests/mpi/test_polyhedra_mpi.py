"""Convex polyhedra on several ranks (issue 17): rocks, cubes, ellipsoids and spheres
thrown about over a plane give the same bits on any rank and thread count, and a restart
(on another rank count) continues bit for bit; likewise rocks and cubes with the
contact-volume and common-plane models. Run with
`mpirun -n N python -m pytest --with-mpi tests/mpi/test_polyhedra_mpi.py`, N = 1..4."""
import os

import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem import polyhedra as P
from pdem.contact import shapes
from scenes import assert_same_state, state

STEPS = 250


def tumbler(comm, threads=1, mesh=False):
    """Polyhedron-polyhedron, -sphere, -ellipsoid and -plane contacts with friction,
    migrating across ranks and through the periodic boundaries (ghosts carry the
    template index and orientation). mesh: a bumpy mesh floor (random vertex heights:
    faces, edges and corners of the mesh) moving sideways instead of the plane."""
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1.2, 0.9, 0.8), periodic=(True, True, False)),
                          dt=4e-4, gravity=(0, 0, -9.81), comm=comm, threads=threads,
                          check_ids=True)
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.4, restitution=0.4)
    if mesh:
        floor = shapes.rectangle((-0.2, -0.2), (1.4, 1.1), 0.0, 12)
        bumps = np.random.default_rng(3).uniform(-0.03, 0.0, len(floor.vertices))
        sim.add_mesh_wall(pdem.Mesh(floor.vertices + np.c_[0 * bumps, 0 * bumps, bumps],
                                    floor.facets), m, velocity=(0.05, 0.02, 0.0))
    else:
        sim.add_plane((0, 0, 0), (0, 0, 1), m)
    rng = np.random.default_rng(7)
    g = np.arange(0.075, 1.2, 0.15)
    x, y, z = np.meshgrid(g, g[g < 0.9], [0.1, 0.25, 0.4], indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()]) + rng.uniform(-0.01, 0.01,
                                                                          (x.size, 3))
    vel = rng.normal(0, 0.6, pos.shape)
    kind = rng.integers(0, 4, len(pos))              # rock, cube, ellipsoid, sphere
    q = rng.normal(size=(len(pos), 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    w = rng.normal(0, 5, pos.shape)
    rock = P.rock(16, seed=3, axes=(0.06, 0.045, 0.035))
    for k, shape in ((0, rock), (1, P.cube(0.07))):
        s = kind == k
        sim.add_polyhedra(pos[s], shape, m, orientations=q[s], velocities=vel[s],
                          angular_velocities=w[s])
    s = kind == 2
    sim.add_ellipsoids(pos[s], [0.055, 0.04, 0.03], m, orientations=q[s], velocities=vel[s])
    s = kind == 3
    sim.add_spheres(pos[s], rng.uniform(0.03, 0.05, int(s.sum())), m, velocities=vel[s])
    return sim


def models(comm, threads=1):
    """Rocks and cubes, half with the contact-volume law, half with the common plane (and
    the common plane between the two), over a plane of the volume material."""
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (0.6, 0.45, 0.5), periodic=(True, True, False)),
                          dt=2e-4, gravity=(0, 0, -9.81), comm=comm, threads=threads,
                          check_ids=True)
    mv = sim.material("vol", density=1000.0, kn=1e4, friction=0.4, restitution=0.4,
                      contact_model="volume", volume_stiffness=3e6)
    mc = sim.material("cp", density=1000.0, kn=1e4, friction=0.4, restitution=0.4,
                      contact_model="common_plane")
    sim.pair(mv, mc, contact_model="common_plane")
    sim.add_plane((0, 0, 0), (0, 0, 1), mv)
    rng = np.random.default_rng(9)
    g = np.arange(0.05, 0.6, 0.1)
    x, y, z = np.meshgrid(g, g[g < 0.45], [0.05, 0.13], indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()]) + rng.uniform(-0.01, 0.01,
                                                                          (x.size, 3))
    q = rng.normal(size=(len(pos), 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    shape = [P.rock(12, seed=5, axes=(0.06, 0.045, 0.035)), P.cube(0.07)]
    for i in range(len(pos)):
        sim.add_polyhedra(pos[i:i + 1], shape[i % 2], (mv, mc)[(i // 2) % 2],
                          orientations=q[i:i + 1], velocities=rng.normal(0, 1.0, (1, 3)),
                          angular_velocities=rng.normal(0, 5, (1, 3)))
    return sim


def tumbler2d(comm, threads=1, segments=False):
    """2D: random polygons, squares, ellipses and disks over a line, periodic along x;
    segments: in a box of boundary segments instead (walls and a bumpy floor: convex and
    concave joints, collinear ones, a free end point inside the box)."""
    sim = pdem.Simulation(pdem.Domain((0, 0), (1.2, 0.9), periodic=(not segments, False),
                                      dim=2),
                          dt=4e-4, gravity=(0, -9.81, 0), comm=comm, threads=threads,
                          check_ids=True)
    m = sim.material("m", density=1000.0, kn=1e6, friction=0.4, restitution=0.4)
    if segments:
        x = np.array([0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 1.05, 1.2])
        y = np.array([0.0, 0.006, 0.0, 0.0, 0.0, 0.008, 0.002, 0.0, 0.0]) + 0.001
        pts = np.vstack([[[0.001, 0.9]], np.column_stack([x, y]), [[1.199, 0.9]]])
        pts[1, 0], pts[-2, 0] = 0.001, 1.199
        sim.add_segments(pts[:-1], pts[1:], m)
        sim.add_segments([[0.55, 0.25]], [[0.65, 0.2]], m)        # a shelf, free ends
    else:
        sim.add_plane((0, 0, 0), (0, 1, 0), m)
    rng = np.random.default_rng(8)
    x, y = np.meshgrid(np.arange(0.075, 1.2, 0.15), np.arange(0.07, 0.85, 0.15), indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel()]) + rng.uniform(-0.01, 0.01, (x.size, 2))
    vel = rng.normal(0, 0.6, pos.shape)
    kind = rng.integers(0, 4, len(pos))
    for k, shape in ((0, P.random_polygon(7, seed=2, axes=(0.06, 0.04))),
                     (1, P.regular_polygon(4, 0.05))):
        s = kind == k
        sim.add_polygons(pos[s], shape, m, angles=rng.uniform(0, 6, int(s.sum())),
                         velocities=vel[s], angular_velocities=rng.normal(0, 5, int(s.sum())))
    s = kind == 2
    sim.add_ellipses(pos[s], [0.055, 0.03], m, velocities=vel[s])
    s = kind == 3
    sim.add_spheres(pos[s], rng.uniform(0.03, 0.05, int(s.sum())), m, velocities=vel[s])
    return sim


def reference(comm, steps, scene=tumbler, **kw):
    ref = None
    if comm.rank == 0:
        sim = scene(MPI.COMM_SELF, **kw)
        sim.run(steps=steps)
        ref = state(sim)
    return comm.bcast(ref, root=0)


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("scene", [tumbler, models])
@pytest.mark.parametrize("threads", [1, 2])
def test_polyhedra_same_bits_on_any_rank_and_thread_count(threads, scene):
    comm = MPI.COMM_WORLD
    sim = scene(comm, threads)
    sim.run(steps=STEPS)
    got = state(sim)
    kinds = set(got[1]["kind"])
    assert {"phpair", "phplane"} <= kinds, kinds
    if scene is tumbler:
        shape, c = got[0]["shape"], got[1]
        ph = c["kind"] == "phpair"
        other = np.where(shape[c["id1"][ph]] == 4, shape[c["id2"][ph]], shape[c["id1"][ph]])
        assert {0, 1, 4} <= set(other.tolist())      # with spheres, ellipsoids, polyhedra
    migrated = int(sim.collective.sum(np.array([sim.n_migrated], np.int64))[0])
    assert comm.size == 1 or migrated > 0
    if comm.size > 1 or threads > 1:
        assert_same_state(got, reference(comm, STEPS, scene))


@pytest.mark.mpi(min_size=1)
def test_polygons_2d_same_bits_on_any_rank_and_thread_count():
    comm = MPI.COMM_WORLD
    sim = tumbler2d(comm, 2)
    sim.run(steps=2 * STEPS)
    got = state(sim)
    assert {"phpair", "phplane"} <= set(got[1]["kind"])
    assert np.all(sim.store.angmom[:sim.store.n_own, :2] == 0.0)
    assert_same_state(got, reference(comm, 2 * STEPS, tumbler2d))


def segments2d(comm, threads=1):
    return tumbler2d(comm, threads, segments=True)


@pytest.mark.mpi(min_size=1)
def test_polygons_in_a_segment_box_same_bits_and_restart(shared_dir):
    """Polygons, ellipses and disks in a box of boundary segments: 2 threads on any rank
    count equal one thread on one rank, and a restart (format 11: the kinds phseg,
    phpoint) on rank 0 continues bit for bit."""
    comm = MPI.COMM_WORLD
    n = 2 * STEPS
    sim = segments2d(comm, 2)
    sim.run(steps=n // 2 + 3)
    path = os.path.join(shared_dir, "poly2d.h5")
    sim.checkpoint(path)
    sim.run(steps=n - (n // 2 + 3))
    got = state(sim)
    assert "phseg" in set(got[1]["kind"])
    ref = reference(comm, n, segments2d)
    assert_same_state(got, ref)
    if comm.rank == 0:
        resumed = pdem.restart(path, comm=MPI.COMM_SELF)
        resumed.run(steps=n - (n // 2 + 3))
        assert_same_state(state(resumed), ref)
    comm.Barrier()


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("scene", [tumbler, models])
def test_polyhedra_restart_bitwise(shared_dir, scene):
    """STEPS/2 on all ranks, a checkpoint, STEPS/2 more after a restart on rank 0 alone,
    equal to the straight run (the materials' contact models travel)."""
    comm = MPI.COMM_WORLD
    first = scene(comm)
    first.run(steps=STEPS // 2 + 7)
    path = os.path.join(shared_dir, "poly.h5")
    first.checkpoint(path)
    ref = reference(comm, STEPS, scene)
    if comm.rank == 0:
        resumed = pdem.restart(path, comm=MPI.COMM_SELF)
        assert len(resumed.templates) == 2 and resumed.polyhedra
        resumed.run(steps=STEPS - (STEPS // 2 + 7))
        assert_same_state(state(resumed), ref)
    comm.Barrier()


@pytest.mark.mpi(min_size=1)
def test_polyhedra_on_a_moving_bumpy_mesh_same_bits_and_restart(shared_dir):
    """Rocks, cubes, ellipsoids and spheres on a bumpy mesh floor moving sideways (phmesh
    rows: vertex sums and GJK/EPA, links, continuity), 2 threads: the same bits as one
    rank and thread; a checkpoint half way, restarted on rank 0 alone, continues bit for
    bit."""
    comm = MPI.COMM_WORLD
    sim = tumbler(comm, 2, mesh=True)
    sim.run(steps=STEPS // 2 + 7)
    path = os.path.join(shared_dir, "poly_mesh.h5")
    sim.checkpoint(path)
    sim.run(steps=STEPS - (STEPS // 2 + 7))
    got = state(sim)
    assert {"phpair", "phmesh", "ellmesh"} <= set(got[1]["kind"])
    ref = reference(comm, STEPS, mesh=True)
    assert_same_state(got, ref)
    if comm.rank == 0:
        resumed = pdem.restart(path, comm=MPI.COMM_SELF)
        resumed.run(steps=STEPS - (STEPS // 2 + 7))
        assert_same_state(state(resumed), ref)
    comm.Barrier()
