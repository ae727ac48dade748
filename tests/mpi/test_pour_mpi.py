"""Insertion during a run is the same on any number of ranks: a stream poured into a
periodic bin lands the same particles, bitwise, as on one rank."""
import numpy as np
from mpi4py import MPI

import pdem
from pdem.regions import Box


def poured(comm):
    dom = pdem.Domain((0, 0, 0), (0.2, 0.2, 0.6), periodic=(True, True, False))
    sim = pdem.Simulation(dom, dt=2e-5, gravity=(0, 0, -9.81), comm=comm)
    sim.material("glass", 2500.0, kn=2e3, restitution=0.3, friction=0.4)
    sim.add_plane((0, 0, 0), (0, 0, 1), "glass")
    sim.add_insertion(Box((0, 0, 0.3), (0.2, 0.2, 0.58)), "glass",
                      pdem.sizes.lognormal(0.005, 0.15, rmin=0.004, rmax=0.007),
                      rate=8000.0, every=300, seed=5, velocity=(0.1, 0.0, -1.0))
    sim.run(steps=6000)
    return sim


def test_pour_equal_on_any_rank_count():
    comm = MPI.COMM_WORLD
    mine = poured(comm).particles(gather=True)
    if comm.rank == 0:
        ref = poured(MPI.COMM_SELF).particles()
        assert len(ref["id"]) == 960
        for k in ("id", "position", "velocity", "radius"):
            assert np.array_equal(mine[k], ref[k]), k
    comm.Barrier()
