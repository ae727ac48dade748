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
