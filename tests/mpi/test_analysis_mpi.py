"""Stress and fabric on any number of ranks: a settling pile gives the same per-particle
stress (bitwise: the same contact rows summed in the same order) and the same
Love-Weber and fabric tensors (up to the order of the sum over ranks) as on one rank."""
import numpy as np
from mpi4py import MPI

import pdem


def pile(comm):
    dom = pdem.Domain((0, 0, 0), (6, 6, 12), periodic=(True, True, False))
    sim = pdem.Simulation(dom, 2e-4, gravity=(0, 0, -9.81), comm=comm)
    sim.material("m", 1000.0, kn=1e6, restitution=0.3, friction=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    rng = np.random.default_rng(7)
    g = np.arange(6) + 0.5
    x = np.stack(np.meshgrid(g, g, np.arange(8) * 1.2 + 0.6), -1).reshape(-1, 3)
    sim.add_spheres(x + rng.uniform(-0.05, 0.05, x.shape), rng.uniform(0.4, 0.5, len(x)), "m")
    sim.run(steps=5000)
    return sim


def test_stress_equal_on_any_rank_count():
    comm = MPI.COMM_WORLD
    here = pile(comm)
    mine = here.particle_stress(gather=True)
    s, f = here.stress(), here.fabric()
    if comm.rank == 0:
        one = pile(MPI.COMM_SELF)
        ref = one.particle_stress()
        assert np.array_equal(mine["id"], ref["id"])
        assert np.array_equal(mine["stress"], ref["stress"])
        assert np.array_equal(mine["coordination"], ref["coordination"])
        assert f["contacts"] == one.fabric()["contacts"] > 100
        scale = np.abs(one.stress()).max()
        assert scale > 0 and np.allclose(s, one.stress(), rtol=0, atol=1e-12 * scale)
        assert np.allclose(f["tensor"], one.fabric()["tensor"], rtol=0, atol=1e-14)
    comm.Barrier()
