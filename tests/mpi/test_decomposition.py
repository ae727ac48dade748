"""Load balancing, empty ranks and contact state through migration (run under
`mpirun -n N python -m pytest --with-mpi`, N = 1..4); each result is compared bit
for bit with the same scene run on rank 0 alone."""
import numpy as np
import pytest
from mpi4py import MPI

import pdem
from scenes import assert_same_state, corner_gas, corner_pile, state
from test_equivalence import serial_reference


def imbalance(sim):
    counts = np.array(sim.comm.allgather(sim.n_local), float)
    return counts.max() / counts.mean()


@pytest.mark.mpi(min_size=1)
def test_load_balance_moves_cuts_and_keeps_every_particle():
    comm = MPI.COMM_WORLD
    sim = corner_gas(comm, balance=1.1, check_ids=True)      # ids checked every step
    start = imbalance(sim)
    sim.run(steps=1000)
    got = state(sim)
    assert_same_state(got, serial_reference(comm, corner_gas, 1000))
    cutoff = 2 * 0.5 + sim.skin
    assert all(np.diff(c).min() >= cutoff for c in sim.dec.cuts)
    if comm.size > 1:
        # everything starts in one corner subdomain; balancing spreads the load
        assert start >= 2.0
        assert sim.n_balances >= 1
        assert imbalance(sim) < 0.6 * start


@pytest.mark.mpi(min_size=1)
def test_ranks_that_own_no_particles():
    comm = MPI.COMM_WORLD
    sim = corner_pile(comm, balance=None, check_ids=True,
                      dims=[comm.size, 1, 1] if comm.size < 4 else None)
    most = 0
    for _ in range(800):
        sim.step()
        most = max(most, sim.n_local)
    empty_throughout = comm.allgather(most == 0)
    if comm.size > 1:
        assert any(empty_throughout)
    got = state(sim)
    assert_same_state(got, serial_reference(comm, lambda c: corner_pile(c, balance=None), 800))
    # the pile is at rest on the floor: energy and forces are summed over all ranks
    assert sim.energy()["kinetic"] < 1e-3 * sim.n_particles
    weight = 41 * (4 / 3 * np.pi * 0.5 ** 3) * 10.0
    assert sim.plane_forces()[0, 2] == pytest.approx(-weight, rel=0.02)


def sliders(comm, cut):
    """A sphere (id 1) pressed by gravity onto a sphere (id 0) that is driven along x
    at 1 m/s while the upper one is held at 0.5 m/s: a contact sliding at 0.5 m/s.
    Sphere 2 slides on the floor and stops by friction. All three cross x = cut."""
    dom = pdem.Domain((0, 0, 0), (4.0, 4.0, 4.0))
    sim = pdem.Simulation(dom, dt=1e-4, gravity=(0, 0, -10.0), comm=comm, skin=0.05,
                          dims=[comm.size, 1, 1], balance=None)
    m = sim.material("steel", density=7800.0, kn=2e5, gamma_n=50.0, friction=0.3)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    x0 = cut - 0.12
    sim.add_spheres([[x0, 1.0, 0.6], [x0, 1.0, 1.0 - 1e-3], [cut - 0.04, 2.5, 0.1]],
                    [0.2, 0.2, 0.1], m, velocities=[[1, 0, 0], [0.5, 0, 0], [0.6, 0, 0]])
    sim.set_velocity([0], velocity=(1.0, 0, 0), block=True)
    sim.block([0, 1], ["x", "y", "rx", "ry", "rz"])       # no rolling: sliding only
    return sim


@pytest.mark.mpi(min_size=1)
def test_sliding_contact_state_survives_migration():
    comm = MPI.COMM_WORLD
    def history(sim, steps):
        out = []
        for _ in range(steps):
            sim.step()
            c = sim.contacts(gather=True)
            out.append(np.concatenate([c["id1"], c["id2"]]).astype(float).tolist()
                       + c["force"].ravel().tolist() + c["u"].ravel().tolist())
        return out

    first_cut = 4.0 / comm.size if comm.size > 1 else 2.0
    sim = sliders(comm, first_cut)
    owner_before = comm.allgather(1 in sim.particles()["id"])
    got = history(sim, 3000)
    owner_after = comm.allgather(1 in sim.particles()["id"])
    ref = None
    if comm.rank == 0:
        ref = history(sliders(MPI.COMM_SELF, first_cut), 3000)
    ref = comm.bcast(ref, root=0)
    assert got == ref                # the same floats, step by step
    c = sim.contacts(gather=True)
    pair = np.flatnonzero(c["id1"] == 0)[0]
    f, n = c["force"][pair], c["normal"][pair]
    fn = abs(f @ n)
    ft = np.linalg.norm(f - (f @ n) * n)
    assert ft == pytest.approx(0.3 * fn, rel=1e-6)       # sliding: Coulomb limit reached
    assert abs(c["u"][pair, 1]) + abs(c["u"][pair, 2]) > 0.1   # 0.3 s at 0.5 m/s of slip
    if comm.size > 1:
        assert owner_before != owner_after                 # the pair changed rank


@pytest.mark.mpi(min_size=1)
def test_owner_of_a_position_is_the_rank_whose_box_holds_it():
    """Decomposition.owner against every rank's [lo, hi) box (gathered), for positions
    anywhere in the box and on the cuts, after a balance moved the cuts."""
    comm = MPI.COMM_WORLD
    sim = corner_gas(comm, balance=1.1)
    sim.run(steps=200)                  # the corner gas makes the balance move the cuts
    dec = sim.dec
    boxes = comm.allgather((dec.lo, dec.hi))
    rng = np.random.default_rng(4)
    lo, hi = sim.domain.lo, sim.domain.hi
    pos = rng.uniform(lo, hi, (3000, 3))
    for d in range(3):                  # exactly on every inner cut, and on the box's lo
        pos[d::7, d] = rng.choice(dec.cuts[d][:-1], len(pos[d::7]))
    expected = np.full(len(pos), -1)
    for rank, (blo, bhi) in enumerate(boxes):
        inside = np.all((pos >= blo) & (pos < bhi), axis=1)
        assert not np.any(inside & (expected >= 0))         # the boxes do not overlap
        expected[inside] = rank
    np.testing.assert_array_equal(dec.owner(pos), expected)
