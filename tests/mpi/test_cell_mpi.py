"""A deforming cell (pdem/cell.py) gives the same bits on any rank and thread count and
after a restart on another rank count: a frictional gas under simple shear with a
pressure servo on yy, through two flips (decomposition, ghosts and migration in the
cell's reference coordinates)."""
import os

import numpy as np
import pytest
from mpi4py import MPI

import pdem
from scenes import assert_same_state, state

STEPS, SPLIT = 1500, 640


def sheared_cell(comm, threads=1, n_side=6):
    L = n_side * 1.1
    dom = pdem.Domain((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim = pdem.Simulation(dom, dt=2e-4, comm=comm, threads=threads)
    m = sim.material("m", density=1.0, kn=1e4, friction=0.5, restitution=0.5)
    rng = np.random.default_rng(4)
    g = (np.arange(n_side) + 0.5) * 1.1
    x, y, z = np.meshgrid(g, g, g, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()]) + rng.uniform(-0.02, 0.02,
                                                                          (n_side ** 3, 3))
    sim.add_spheres(pos, rng.uniform(0.5, 0.56, len(pos)), m,
                    velocities=rng.normal(0, 0.3, (len(pos), 3)))
    sim.cell.control(stress={"yy": -2.0}, strain_rate={"xy": 7.0}, max_rate=1.0)
    return sim


def serial(steps):
    ref = None
    if MPI.COMM_WORLD.rank == 0:
        sim = sheared_cell(MPI.COMM_SELF)
        sim.run(steps=steps)
        assert sim.cell.n_flips == 2
        ref = state(sim), sim.cell.matrix.copy(), sim.cell.work
    return MPI.COMM_WORLD.bcast(ref, root=0)


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("threads", [1, 2])
def test_sheared_cell_identical_on_any_rank_count(threads):
    sim = sheared_cell(MPI.COMM_WORLD, threads=threads)
    sim.run(steps=STEPS)
    got = state(sim)
    ref, H, work = serial(STEPS)
    assert len(got[1]["id1"]) > 30
    assert_same_state(got, ref)
    assert np.array_equal(sim.cell.matrix, H) and sim.cell.work == work


@pytest.mark.mpi(min_size=1)
def test_sheared_cell_restart_on_another_rank_count(shared_dir):
    comm = MPI.COMM_WORLD
    sim = sheared_cell(comm)
    sim.run(steps=SPLIT)
    path = os.path.join(shared_dir, "cell.h5")
    sim.checkpoint(path)
    ref, H, work = serial(STEPS)
    if comm.rank == 0:                       # continued on one rank
        again = pdem.restart(path, comm=MPI.COMM_SELF, threads=1)
        again.run(steps=STEPS - SPLIT)
        assert_same_state(state(again), ref)
        assert np.array_equal(again.cell.matrix, H) and again.cell.work == work
    comm.Barrier()
