"""pdem.pack gives the same packing, bit for bit, on any number of ranks (each rank
moves its slab of particles with ghosts; tests/unit/test_packing.py checks the physics)."""
import numpy as np
import pytest
from mpi4py import MPI

import pdem


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("region, radii, n", [
    (pdem.Torus((0, 0, 0), (0, 1, 1), 3.0, 1.3), lambda rng, n: rng.uniform(0.15, 0.3, n), None),
    (pdem.Box((0, 0, 0), (4, 4, 6)) - pdem.Sphere((2, 2, 3), 1.5), 0.3, 250),
])
def test_same_packing_on_any_number_of_ranks(region, radii, n):
    comm = MPI.COMM_WORLD
    kw = dict(count=n) if n else dict(solid_fraction=0.5)
    got = pdem.pack(region, radii, seed=7, comm=comm, **kw)
    ref = None
    if comm.rank == 0:
        ref = pdem.pack(region, radii, seed=7, comm=MPI.COMM_SELF, **kw)
        ref = (ref.positions, ref.radii, ref.iterations)
    ref = comm.bcast(ref, root=0)
    assert got.iterations == ref[2] and got.iterations > 10
    assert np.array_equal(got.radii, ref[1])
    assert np.array_equal(got.positions, ref[0])     # bitwise
    assert np.all(region(got.positions) <= -got.radii + 1e-3 * got.radii.min())


def _settle_in_region(comm, x, r, region, steps):
    dom = pdem.Domain((-1.5, -1.5, -1.5), (1.5, 1.5, 1.5))
    sim = pdem.Simulation(dom, dt=2e-4, gravity=(0, -3.0, -9.81), comm=comm)
    m = sim.material("g", density=1000.0, kn=2e5, gamma_n=60.0, friction=0.4)
    sim.add_region_wall(region, m)
    sim.add_spheres(x, r, m)
    sim.run(steps=steps)
    return sim.particles(gather=True), sim.region_wall_forces(), sim.n_contacts


@pytest.mark.mpi(min_size=1)
def test_region_wall_settling_is_the_same_on_any_number_of_ranks():
    """Grains settling in a torus held by a region wall (seed 002's rule as a contact):
    the same bits on 1 rank and on all ranks, as for plane walls."""
    comm = MPI.COMM_WORLD
    torus = pdem.Torus((0, 0, 0), (0, 1, 1), 1.0, 0.4)
    x, r = pdem.pack(torus, lambda rng, n: rng.uniform(0.06, 0.09, n), count=900, seed=2,
                     comm=MPI.COMM_SELF, progress=False)
    got = _settle_in_region(comm, x, r, torus, 1000)
    ref = None
    if comm.rank == 0:
        ref = _settle_in_region(MPI.COMM_SELF, x, r, torus, 1000)
    ref = comm.bcast(ref, root=0)
    assert got[2] == ref[2] and got[2] > 900       # a settled bed, on the wall too
    for k in ("id", "position", "velocity", "angular_velocity"):
        assert np.array_equal(got[0][k], ref[0][k]), k
    # the wall load is a sum over ranks (like plane_forces): equal up to its order
    assert np.allclose(got[1], ref[1], rtol=1e-12, atol=0)
