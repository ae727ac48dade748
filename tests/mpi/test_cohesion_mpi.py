"""A cohesive (JKR) agglomerate dropped on a plane gives the same bits on any number of
ranks: contacts held in tension beyond touching (the pull-off distance added to the
Verlet skin and the ghost cutoff) cross rank boundaries like any other.

Run as `mpirun -n N python -m pytest --with-mpi tests/mpi/test_cohesion_mpi.py`."""
import numpy as np
import pytest
from mpi4py import MPI

import pdem
from scenes import assert_same_state, state

STEPS = 3000


def agglomerate(comm):
    """A 5 x 5 x 4 lattice of touching spheres (radius 1 mm, JKR, W = 0.5 J/m^2, soft)
    spread over the x axis of the domain so that it spans both ranks' halves, thrown
    down onto a plane and spun; a small skin so that lists are rebuilt often."""
    rng = np.random.default_rng(11)
    sim = pdem.Simulation(pdem.Domain((-0.006, -0.006, 0.0), (0.006, 0.006, 0.012)),
                          dt=2e-6, comm=comm, threads=1, skin=2e-5, gravity=(0, 0, -9.81),
                          dims=(comm.size, 1, 1))
    sim.material("m", 1000.0, law="hertz", young=5e6, poisson=0.3, restitution=0.3,
                 friction=0.4, cohesion="jkr", surface_energy=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    g = (np.arange(5) - 2.0) * 1.999e-3
    z = 1.2e-3 + np.arange(4) * 1.999e-3
    pos = np.stack(np.meshgrid(g, g, z, indexing="ij"), axis=-1).reshape(-1, 3)
    pos[:, :2] += rng.uniform(-2e-5, 2e-5, (len(pos), 2))
    vel = np.cross([0, 0, 20.0], pos) + [0.0, 0.0, -0.2]
    sim.add_spheres(pos, 1e-3, "m", velocities=vel)
    return sim


@pytest.mark.mpi(min_size=1)
def test_jkr_agglomerate_identical_on_any_rank_count():
    comm = MPI.COMM_WORLD
    sim = agglomerate(comm)
    tension = 0
    for _ in range(6):
        sim.run(steps=STEPS // 6)
        c = sim.contacts(gather=True)
        tension += int(np.count_nonzero(c["overlap"] < 0))       # held beyond touching
    got = state(sim)
    ref = None
    if comm.rank == 0:
        alone = agglomerate(MPI.COMM_SELF)
        alone.run(steps=STEPS)
        ref = state(alone)
    ref = comm.bcast(ref, root=0)
    assert_same_state(got, ref)
    # the scene is what it claims: contacts in tension, rebuilds, the clump cohesive
    assert tension > 0 and sim.n_rebuilds > 5
    assert len(got[1]["id1"]) > len(got[0]["id"]), (len(got[1]["id1"]), len(got[0]["id"]))
