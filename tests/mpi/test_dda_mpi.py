"""pdem.DDA under MPI: the distributed matrix-free conjugate gradients (ghost rows of
the search direction refreshed before each product, dot products summed exactly)
give the same particles, contacts and iteration counts, bit for bit, on any number
of ranks, and after a restart on another rank count."""
import os
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import pdem

from scenes import assert_restart_on_one_rank, assert_same_state, state

STEPS = 40


def dda_pile(comm, dim=3, seed=11, young=None, **options):
    """Spheres (disks) on a lattice just apart, layers staggered, in a box periodic in
    x, on a plane floor (3D: between side walls), settling under gravity with DDA."""
    rng = np.random.default_rng(seed)
    h = 0.085
    if dim == 3:
        dom = pdem.Domain((0, 0, 0), (12 * h, 5 * h, 0.6), periodic=(True, False, False))
        g = np.stack(np.meshgrid(np.arange(12), np.arange(5), np.arange(4), indexing="ij"),
                     -1).reshape(-1, 3) * h + h / 2
        gravity = (0, 0, -9.81)
        walls = (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (0, 1, 0)), ((0, 5 * h, 0), (0, -1, 0)))
    else:
        dom = pdem.Domain((0, 0), (24 * h, 0.8), dim=2, periodic=(True, False))
        g = np.stack(np.meshgrid(np.arange(24), np.arange(6), indexing="ij"),
                     -1).reshape(-1, 2) * h + h / 2
        gravity = (0, -9.81, 0)
        walls = (((0, 0, 0), (0, 1, 0)),)
    sim = pdem.Simulation(dom, 2e-3, gravity=gravity, comm=comm,
                          scheme=pdem.DDA(penalty=1e8, tol=1e-3, **options))
    sim.material("m", 2500.0, friction=0.5, young=young)
    for point, normal in walls:
        sim.add_plane(point, normal, "m")
    layer = np.rint(g[:, dim - 1] / h - 0.5)
    g[:, dim - 1] = 0.9 * h * layer + h / 2     # layers staggered by h / 2 in x: hollows
    g[:, 0] += (layer % 2) * h / 2
    pos = g + rng.uniform(-0.001, 0.001, g.shape)
    pos[:, 0] %= dom.length[0]
    sim.add_spheres(pos, rng.uniform(0.036, 0.041, len(g)), "m",
                    velocities=rng.uniform(-0.05, 0.05, g.shape))
    return sim


def _run(comm, steps, dim=3, **options):
    sim = dda_pile(comm, dim, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pdem.DDAWarning)
        sim.run(steps)
    return sim


@pytest.mark.slow
@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("dim", [2, 3])
def test_dda_identical_on_any_rank_count(dim):
    comm = MPI.COMM_WORLD
    sim = _run(comm, STEPS, dim)
    got = state(sim)
    totals = (sim.scheme.total_cg, sim.scheme.total_open_close)
    ref = None
    if comm.rank == 0:
        alone = _run(MPI.COMM_SELF, STEPS, dim)
        ref = (state(alone), (alone.scheme.total_cg, alone.scheme.total_open_close))
    ref = comm.bcast(ref, root=0)
    assert_same_state(got, ref[0])
    assert totals == ref[1]
    p, c = got
    assert len(c["id1"]) > len(p["id"]) // 4            # a pile with contacts
    # pairs through the periodic x boundary (3D: the 2D pile has none so early)
    pair = c["kind"] == "pair"
    x1 = p["position"][np.searchsorted(p["id"], c["id1"][pair])]
    x2 = p["position"][np.searchsorted(p["id"], c["id2"][pair])]
    assert np.any(np.abs(x1[:, 0] - x2[:, 0]) > 0.5) or dim == 2


@pytest.mark.slow
@pytest.mark.mpi(min_size=1)
def test_dda_restart_on_one_rank_is_bitwise_identical(shared_dir):
    """N steps on all ranks + checkpoint, N more on rank 0 alone: the same bits as 2N
    steps in one run (velocities and contact states travel in the checkpoint)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pdem.DDAWarning)
        assert_restart_on_one_rank(_run, os.path.join(shared_dir, "dda.h5"), 20)


def _deformable(comm, steps, dim=2, **options):
    """The pile of deformable particles (soft enough to strain 1e-4)."""
    return _run(comm, steps, dim, rigid=False, young=1e7, **options)


@pytest.mark.slow
@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("dim, options", [(2, {}), (3, {}), (2, {"preconditioner": "sgs"}),
                                          (3, {"preconditioner": "sgs"})])
def test_deformable_dda_identical_on_any_rank_count(dim, options):
    """rigid=False: the 12 x 12 rows, the strain drift and update, the deformed gaps of
    ghosts: the same bits (stresses and strains too) on any number of ranks; and with
    the multicolour Gauss-Seidel preconditioner (colours from hashed ids, ghost rows
    refreshed after each colour)."""
    comm = MPI.COMM_WORLD
    steps = 20
    sim = _deformable(comm, steps, dim, **options)
    got = state(sim)
    ref = None
    if comm.rank == 0:
        alone = _deformable(MPI.COMM_SELF, steps, dim, **options)
        ref = (state(alone), alone.scheme.total_cg)
    ref = comm.bcast(ref, root=0)
    assert_same_state(got, ref[0])
    assert sim.scheme.total_cg == ref[1]
    assert np.max(np.abs(got[0]["strain"])) > 1e-6


@pytest.mark.slow
@pytest.mark.mpi(min_size=1)
def test_deformable_dda_restart_on_one_rank_is_bitwise_identical(shared_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pdem.DDAWarning)
        assert_restart_on_one_rank(_deformable, os.path.join(shared_dir, "dda_def.h5"), 10)
