"""pdem.Simulation with the NSCD scheme under MPI: Jacobi gives the same particles,
contacts and wall loads, bit for bit, on any number of ranks (periodic images, a
moving plane and a spinning mesh wall included) and after a restart on another rank
count; block NLGS conserves momentum on any number of ranks."""
import os
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import pdem

from scenes import assert_restart_on_one_rank, assert_same_state, nscd_conveyor, state

STEPS = 400


def _run(comm, steps, **kw):
    sim = nscd_conveyor(comm, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pdem.nscd.ConvergenceWarning)
        sim.run(steps=steps)
    return sim


@pytest.mark.mpi(min_size=1)
def test_jacobi_identical_on_any_rank_count():
    comm = MPI.COMM_WORLD
    sim = _run(comm, STEPS, check_ids=True)
    got = (state(sim), sim.plane_forces(), sim.mesh_wall_forces()["force"])
    ref = None
    if comm.rank == 0:
        alone = _run(MPI.COMM_SELF, STEPS)
        ref = (state(alone), alone.plane_forces(), alone.mesh_wall_forces()["force"],
               alone.scheme.total_sweeps)
    ref = comm.bcast(ref, root=0)
    assert_same_state(got[0], ref[0])
    assert np.array_equal(got[2], ref[2])            # mesh wall loads: summed in key order
    assert np.allclose(got[1], ref[1], rtol=1e-12, atol=0.0)   # planes: Allreduce order
    assert sim.scheme.total_sweeps == ref[3]
    p, c = got[0]
    # the scene is what it claims: contacts through the periodic x and y boundaries,
    # on the belt and on the stirrer
    pair = c["kind"] == "pair"
    x1 = p["position"][np.searchsorted(p["id"], c["id1"][pair])]
    x2 = p["position"][np.searchsorted(p["id"], c["id2"][pair])]
    assert np.any(np.abs(x1[:, :2] - x2[:, :2]) > 3.0)
    plane = (c["kind"] == "plane") & (c["wall"] == 0)
    assert np.count_nonzero(plane) > 10
    assert np.count_nonzero((c["kind"] == "mesh") & (c["wall"] == 0)) > 0
    # friction on the belt
    assert np.any(np.abs(c["force"][plane, 0]) > 0.0)


@pytest.mark.mpi(min_size=1)
def test_restart_on_one_rank_is_bitwise_identical(shared_dir):
    """N Jacobi steps on all ranks + checkpoint, N more on rank 0 alone: the same bits
    as 2N steps in one run."""
    assert_restart_on_one_rank(_run, os.path.join(shared_dir, "nscd.h5"), 150)


@pytest.mark.mpi(min_size=1)
def test_block_nlgs_conserves_momentum_on_any_rank_count():
    """Block Gauss-Seidel across ranks (increments given to ghosts are sent back to
    their owners): at every step the bed's momentum changes by exactly the impulses of
    gravity and of the walls, on the stirred conveyor."""
    comm = MPI.COMM_WORLD
    sim = nscd_conveyor(comm, solver="nlgs", tol=1e-5)
    sim.run(steps=100)
    total = sim.global_sum(sim.particles()["mass"].sum())
    g = np.array([0.0, 0.0, -10.0])

    def momentum():
        p = sim.particles()
        return sim.global_sum((p["mass"][:, None] * p["velocity"]).sum(axis=0))

    worst, sweeps = 0.0, 0
    for _ in range(200):
        before = momentum()
        sim.step()
        walls = -(sim.plane_forces().sum(axis=0) + sim.mesh_wall_forces()["force"].sum(axis=0))
        expected = (walls + total * g) * sim.dt
        worst = max(worst, np.max(np.abs(momentum() - before - expected)) / (total * 10.0 * sim.dt))
        sweeps += sim.scheme.sweeps
    print("largest momentum error / (M g dt): %.3g" % worst)
    assert worst < 1e-9, worst
    assert sweeps > 200           # the solve did work: several sweeps per step
