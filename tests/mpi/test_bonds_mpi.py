"""Bonds under MPI: a bonded block of 5 x 5 x 4 spheres (Weibull strength scatter)
dropped on a plane, in a box cut into subdomains, breaks the same bonds at the same
times on any number of ranks: every particle field and every bond (intact and broken)
is bitwise equal to the run on rank 0 alone; a checkpoint written on these ranks
continues bit for bit on one rank."""
import numpy as np
import pytest
from mpi4py import MPI

import pdem

STEPS, SPLIT = 1500, 700


def falling_block(comm, threads=1):
    dom = pdem.Domain((-1, -1, -1), (11, 11, 30))
    sim = pdem.Simulation(dom, 2e-4, gravity=(0, 0, -9.81), comm=comm, threads=threads,
                          check_ids=True)
    sim.material("m", 1000.0, kn=5e7, restitution=0.5, friction=0.4)
    g = np.arange(5) * 2.0
    x = np.stack(np.meshgrid(g + 0.5, g, np.arange(4) * 2.0 + 1.5), -1).reshape(-1, 3)
    sim.add_spheres(x, 1.0, "m", velocities=np.tile([3.0, 0.0, -6.0], (len(x), 1)))
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    sim.bond_material("b", kn=3e6, ks=1e6, tensile_strength=2e4, cohesion=2e4,
                      friction_angle=20, scatter={"distribution": "weibull", "modulus": 3,
                                                  "seed": 4})
    sim.bond_contacts("b")
    return sim


def result(sim):
    return sim.particles(gather=True), sim.bonds(gather=True)


def assert_same(a, b):
    for got, ref in zip(a, b):
        assert set(got) == set(ref)
        for k in ref:
            assert np.array_equal(got[k], ref[k], equal_nan=True), k


@pytest.mark.mpi(min_size=1)
def test_bonded_block_breaks_identically_on_any_rank_count(shared_dir):
    comm = MPI.COMM_WORLD
    sim = falling_block(comm)
    n_bonds = sim.n_bonds
    sim.run(SPLIT)
    path = shared_dir + "/bonds-%d.h5" % comm.size
    sim.checkpoint(path)
    sim.run(STEPS - SPLIT)
    got = result(sim)
    migrated = comm.allreduce(sim.n_migrated)
    ref = resumed = None
    if comm.rank == 0:
        alone = falling_block(MPI.COMM_SELF, threads=2)
        alone.run(STEPS)
        ref = result(alone)
        again = pdem.restart(path, comm=MPI.COMM_SELF)
        again.run(STEPS - SPLIT)
        resumed = result(again)
    ref, resumed = comm.bcast((ref, resumed), root=0)
    assert_same(got, ref)
    assert_same(resumed, ref)
    bonds = got[1]
    assert n_bonds == 3 * 5 * 5 * 4 - 5 * 5 - 2 * 5 * 4    # bonds of a 5 x 5 x 4 lattice
    assert 10 < np.count_nonzero(~bonds["intact"]) < len(bonds["id1"]) - 10
    assert set(bonds["mode"][~bonds["intact"]].tolist()) <= {1, 2}
    if comm.size > 1:
        assert migrated > 0
