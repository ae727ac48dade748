"""Ellipsoids (and 2D ellipses) on several ranks (issue 16): the same bits on any rank and thread count,
and a restart (on another rank count) continues bit for bit. Run with
`mpirun -n N python -m pytest --with-mpi tests/mpi/test_ellipsoids_mpi.py`, N = 1..4."""
import os

import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem.contact import shapes
from pdem.contact.mesh import Mesh
from scenes import assert_same_state, state

STEPS = 400


def tumbler(comm, threads=1, mesh=False):
    """Ellipsoids and spheres thrown about in a box periodic along x and y over a plane:
    ellipsoid-ellipsoid, ellipsoid-sphere, ellipsoid-plane, sphere-sphere and
    sphere-plane contacts, with friction and rolling resistance, migrating across
    ranks and through the periodic boundaries. mesh: a bumpy mesh floor (random vertex
    heights: faces, edges, vertices) moving sideways instead of the plane."""
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1.2, 0.9, 0.8), periodic=(True, True, False)),
                          dt=4e-4, gravity=(0, 0, -9.81), comm=comm, threads=threads,
                          check_ids=True)
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.4, restitution=0.4,
                     rolling_friction=0.05, rolling_stiffness=0.3)
    if mesh:
        floor = shapes.rectangle((-0.2, -0.2), (1.4, 1.1), 0.0, 12)
        bumps = np.random.default_rng(3).uniform(-0.02, 0.0, len(floor.vertices))
        sim.add_mesh_wall(Mesh(floor.vertices + np.c_[0 * bumps, 0 * bumps, bumps],
                               floor.facets), m, velocity=(0.05, 0.02, 0.0))
    else:
        sim.add_plane((0, 0, 0), (0, 0, 1), m)
    rng = np.random.default_rng(7)
    g = np.arange(0.075, 1.2, 0.15)
    x, y, z = np.meshgrid(g, g[g < 0.9], [0.1, 0.25, 0.4], indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    pos += rng.uniform(-0.01, 0.01, pos.shape)
    vel = rng.normal(0, 0.6, pos.shape)
    ell = rng.random(len(pos)) < 0.7
    q = rng.normal(size=(len(pos), 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    axes = np.column_stack([rng.uniform(0.04, 0.065, len(pos)), rng.uniform(0.03, 0.05, len(pos)),
                            rng.uniform(0.02, 0.035, len(pos))])
    sim.add_ellipsoids(pos[ell], axes[ell], m, orientations=q[ell], velocities=vel[ell],
                       angular_velocities=rng.normal(0, 5, (int(ell.sum()), 3)))
    sim.add_spheres(pos[~ell], rng.uniform(0.03, 0.05, int((~ell).sum())), m,
                    velocities=vel[~ell])
    return sim


def tumbler2d(comm, threads=1, segments=False):
    """The 2D counterpart: ellipses and disks over a line, periodic along x (segments:
    over a zigzag of boundary segments and their end points instead)."""
    sim = pdem.Simulation(pdem.Domain((0, 0), (1.2, 0.9), periodic=(True, False), dim=2),
                          dt=4e-4, gravity=(0, -9.81, 0), comm=comm, threads=threads,
                          check_ids=True)
    m = sim.material("m", density=1000.0, kn=1e6, friction=0.4, restitution=0.4,
                     rolling_friction=0.05, rolling_stiffness=0.3)
    if segments:
        x = np.linspace(-0.1, 1.3, 15)
        y = np.where(np.arange(15) % 2, 0.0, 0.03)
        sim.add_segments(np.c_[x[:-1], y[:-1]], np.c_[x[1:], y[1:]], m)
    else:
        sim.add_plane((0, 0, 0), (0, 1, 0), m)
    rng = np.random.default_rng(8)
    x, y = np.meshgrid(np.arange(0.075, 1.2, 0.15), np.arange(0.1, 0.85, 0.15), indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel()]) + rng.uniform(-0.01, 0.01, (x.size, 2))
    vel = rng.normal(0, 0.6, pos.shape)
    ell = rng.random(len(pos)) < 0.7
    n = int(ell.sum())
    sim.add_ellipses(pos[ell], np.column_stack([rng.uniform(0.04, 0.065, n),
                                                rng.uniform(0.02, 0.04, n)]), m,
                     angles=rng.uniform(0, 6, n), velocities=vel[ell],
                     angular_velocities=rng.normal(0, 5, n))
    sim.add_spheres(pos[~ell], rng.uniform(0.03, 0.05, len(pos) - n), m, velocities=vel[~ell])
    return sim


SCENES = {3: tumbler, 2: tumbler2d, "mesh": lambda comm, threads=1: tumbler(comm, threads, True),
          "seg2d": lambda comm, threads=1: tumbler2d(comm, threads, True)}


def reference(comm, steps, dim=3):
    ref = None
    if comm.rank == 0:
        sim = SCENES[dim](MPI.COMM_SELF)
        sim.run(steps=steps)
        ref = state(sim)
    return comm.bcast(ref, root=0)


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("dim,threads", [(3, 1), (3, 2), (2, 2), ("mesh", 2), ("seg2d", 1)])
def test_ellipsoids_same_bits_on_any_rank_and_thread_count(dim, threads):
    comm = MPI.COMM_WORLD
    sim = SCENES[dim](comm, threads)
    sim.run(steps=STEPS)
    got = state(sim)
    kinds = set(got[1]["kind"])
    wall = {"mesh": "ellmesh", "seg2d": "ellseg"}.get(dim, "ellplane")
    assert {"ellpair", wall} | ({"pair"} if dim != "seg2d" else set()) <= kinds, kinds
    shape, c = got[0]["shape"], got[1]
    ell = c["kind"] == "ellpair"
    if dim != "seg2d":
        assert np.any((shape[c["id1"][ell]] == 0) | (shape[c["id2"][ell]] == 0))  # mixed pairs
    migrated = int(sim.collective.sum(np.array([sim.n_migrated], np.int64))[0])
    assert comm.size == 1 or migrated > 0
    if comm.size > 1 or threads > 1:
        assert_same_state(got, reference(comm, STEPS, dim))


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("scene", [3, "mesh", "seg2d"])
def test_ellipsoids_restart_bitwise(shared_dir, scene):
    """STEPS/2 on all ranks, a checkpoint, STEPS/2 more after a restart on rank 0 alone,
    equal to the straight run."""
    comm = MPI.COMM_WORLD
    first = SCENES[scene](comm)
    first.run(steps=STEPS // 2 + 7)
    path = os.path.join(shared_dir, "ell.h5")
    first.checkpoint(path)
    ref = reference(comm, STEPS, scene)
    if comm.rank == 0:
        resumed = pdem.restart(path, comm=MPI.COMM_SELF)
        resumed.run(steps=STEPS - (STEPS // 2 + 7))
        assert_same_state(state(resumed), ref)
    comm.Barrier()
