"""2D boundary segments and points under MPI: 300 disks poured into a V-shaped funnel of
segments (with their end points) flow through its opening onto a deflector and a floor,
with the explicit Hooke law and with NSCD Jacobi. Every particle and contact field is
bitwise equal on any number of ranks to the run on rank 0 alone (as in
test_equivalence.py; on one rank the reference is made by another route: particles
added in 3 batches and a checkpoint + pdem.restart in the middle), and the wall loads
are equal to the rounding of their sum over ranks."""
import os
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem.nscd import ConvergenceWarning

from scenes import assert_same_state, state

STEPS = {"explicit": 1500, "nscd": 250}
SPLIT = {"explicit": 611, "nscd": 97}      # restarted_reference's checkpoint
G = 10.0
WIDTH = 24.0


def _wall_height(x):
    """Height of the funnel's walls above x: from (0, 14) down to (10, 5), and from
    (14, 5) up to (24, 14)."""
    return np.where(x < 0.5 * WIDTH, 14.0 - 0.9 * x, 14.0 - 0.9 * (WIDTH - x))


def funnel_grains(n=300, seed=11):
    """n disks (r = 0.45-0.5) on a jittered lattice (spacing 1.05) filling the funnel
    from its walls up, lowest rows first, with random velocities (0.5 m/s rms per
    axis): positions, radii, velocities."""
    rng = np.random.default_rng(seed)
    gx, gy = np.meshgrid(0.8 + 1.05 * np.arange(22), np.arange(5.5, 28.0, 1.05))
    p = np.column_stack([gx.ravel(), gy.ravel()])
    p = p[(p[:, 1] > _wall_height(p[:, 0]) + 1.0) & (p[:, 0] < WIDTH - 0.8)]
    p = p[np.lexsort((p[:, 0], p[:, 1]))][:n]
    assert len(p) == n
    return (p + rng.uniform(-0.02, 0.02, p.shape), rng.uniform(0.45, 0.5, n),
            rng.normal(0.0, 0.5, p.shape))


def funnel(comm, scheme, batches=1, threads=1, **options):
    """The scene on the ranks of `comm`: side walls, floor and funnel of 8 segments
    (their 10 distinct end points added), the opening (4 wide) between (10, 5) and
    (14, 5), a deflector (11.5, 2.5)-(12.5, 2.5) under it; gravity -10 along y.
    explicit: Hooke k_n = 2e4, e = 0.3, mu = 0.4, dt = 2e-3; nscd: Jacobi, mu = 0.4,
    dt = 5e-3, tol = 3e-4, alert 0.1."""
    x, r, v = funnel_grains()
    dom = pdem.Domain((-0.5, -0.5), (WIDTH + 0.5, 30.0), dim=2)
    if scheme == "explicit":
        sim = pdem.Simulation(dom, 2e-3, gravity=(0, -G, 0), comm=comm, threads=threads,
                              **options)
        m = sim.material("grain", 1.0, kn=2e4, restitution=0.3, friction=0.4)
    else:
        sim = pdem.Simulation(dom, 5e-3, gravity=(0, -G, 0), comm=comm, threads=threads,
                              skin=0.1, scheme=pdem.NSCD("jacobi", tol=3e-4, alert=0.1),
                              **options)
        m = sim.material("grain", 1.0, friction=0.4)
    x0 = [(0, 14), (14, 5), (0, 0), (0, 0), (0, 14), (WIDTH, 0), (WIDTH, 14), (11.5, 2.5)]
    x1 = [(10, 5), (WIDTH, 14), (WIDTH, 0), (0, 14), (0, 29), (WIDTH, 14), (WIDTH, 29),
          (12.5, 2.5)]
    sim.add_segments(x0, x1, m)
    for part in np.array_split(np.arange(len(x)), batches):
        sim.add_spheres(x[part], r[part], m, velocities=v[part])
    return sim


def run(sim, steps, kinds=None):
    """steps steps; kinds: a set collecting the kinds of this rank's contacts after
    each step."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in range(steps):
            sim.step()
            if kinds is not None:
                kinds |= set(sim.contacts()["kind"].tolist())


def result(sim):
    """Gathered state and wall loads (collective)."""
    return state(sim) + (sim.segment_forces(), sim.point_forces())


def serial_reference(comm, scheme):
    ref = None
    if comm.rank == 0:
        alone = funnel(MPI.COMM_SELF, scheme)
        run(alone, STEPS[scheme])
        ref = result(alone)
    return comm.bcast(ref, root=0)


def restarted_reference(scheme, folder):
    """The run on one rank by another route: particles added in 3 add_spheres calls,
    no id checks, a checkpoint at step SPLIT continued by pdem.restart in a new
    Simulation."""
    first = funnel(MPI.COMM_SELF, scheme, batches=3)
    run(first, SPLIT[scheme])
    path = os.path.join(folder, "funnel-%s.h5" % scheme)
    first.checkpoint(path)
    del first
    resumed = pdem.restart(path, comm=MPI.COMM_SELF, threads=1)
    assert resumed.step_count == SPLIT[scheme]
    run(resumed, STEPS[scheme] - SPLIT[scheme])
    return result(resumed)


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("scheme", ["explicit", "nscd"])
def test_funnel_identical_on_any_rank_count(scheme, shared_dir):
    comm = MPI.COMM_WORLD
    sim = funnel(comm, scheme, check_ids=True)
    kinds = set()
    run(sim, STEPS[scheme], kinds)
    got = result(sim)
    migrated = comm.allreduce(sim.n_migrated)
    kinds = set().union(*comm.allgather(kinds))
    if comm.size == 1:
        ref = restarted_reference(scheme, shared_dir)
    else:
        ref = serial_reference(comm, scheme)
    assert_same_state(got[:2], ref[:2])
    p, c = got[:2]
    weight = G * p["mass"].sum()
    for a, b in zip(got[2:], ref[2:]):                 # segments, points: Allreduce order
        assert a.shape == b.shape
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12 * weight)
    assert got[2].shape == (8, 3) and got[3].shape == (10, 3)
    # the scene is what it claims: contacts with segments and points, grains through
    # the opening, and (on several ranks) particles changing rank
    assert kinds == {"pair", "segment", "point"}, kinds
    assert np.count_nonzero(p["position"][:, 1] < 5.0) >= 10
    assert np.count_nonzero(c["kind"] == "segment") >= 20
    if comm.size > 1:
        assert migrated > 0, migrated          # 6 (NSCD, 2 ranks) to 280 (explicit, 4)
