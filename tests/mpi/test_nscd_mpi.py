"""NSCD scenes of seed 003 on 1-4 ranks (run with `mpirun -n N python -m pytest
--with-mpi`): pdem.Simulation with the NSCD scheme on COMM_WORLD against the same
Simulation on one process (COMM_SELF, computed on every rank). Jacobi gives the same
bits; NLGS (block Gauss-Seidel across ranks) converges to the same velocities within
the tolerance. Scenes: disks in a box of boundary segments with their end disks, spheres
in a box of planes or of mesh facets."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import pdem

G = 9.81


def simulation(comm, lo, hi, solver, friction, dt=1e-3, tol=1e-7, alert=0.004, **kw):
    dim = len(lo)
    sim = pdem.Simulation(pdem.Domain(lo, hi, dim=dim), dt, gravity=(0.0, -G, 0.0) if dim == 2
                          else (0.0, 0.0, -G), comm=comm, skin=0.002, threads=1,
                          scheme=pdem.NSCD(solver, tol=tol, alert=alert, itmax=3000, **kw))
    sim.material("grains", 1000.0, friction=friction)
    return sim


def scene_2d(comm, solver, friction, n=160, seed=7):
    """Disks in a box of three segments, on a jittered lattice with random velocities
    and a drift of 1 m/s along x: 25 steps carry grains over any cut (migration)."""
    rng = np.random.default_rng(seed)
    sim = simulation(comm, (-0.05, -0.05), (0.45, 0.6), solver, friction)
    sim.add_segments([[0.0, 0.4], [0.0, 0.0], [0.4, 0.0]], [[0.0, 0.0], [0.4, 0.0], [0.4, 0.4]],
                     "grains")
    k = np.arange(n)
    x = np.column_stack([0.0125 + 0.0235 * (k % 16), 0.0125 + 0.0235 * (k // 16)])
    x += rng.uniform(-1e-3, 1e-3, x.shape)
    sim.add_spheres(x, rng.uniform(0.009, 0.011, n), "grains",
                    velocities=rng.normal(0.0, 0.3, (n, 2)) + [1.0, 0.0])
    return sim


def _spheres_3d(sim, rng):
    """147 spheres on a jittered lattice in the 0.2 m box, moving diagonally."""
    g = 0.015 + 0.025 * np.arange(7)
    x = np.array([[a, b, c] for a in g for b in g for c in g[:3]])
    x += rng.uniform(-1e-3, 1e-3, x.shape)
    sim.add_spheres(x, rng.uniform(0.009, 0.011, len(x)), "grains",
                    velocities=rng.normal(0.0, 0.3, x.shape) + [1.0, 1.0, 0.0])
    return sim


def scene_3d(comm, solver, friction, seed=3):
    sim = simulation(comm, (-0.02,) * 3, (0.22, 0.22, 0.3), solver, friction)
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)),
                          ((0.2, 0.2, 0), (-1, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                          ((0.2, 0.2, 0), (0, -1, 0))):
        sim.add_plane(point, normal, "grains")
    return _spheres_3d(sim, np.random.default_rng(seed))


def scene_3d_mesh(comm, solver, friction, seed=3):
    """scene_3d in an open box of triangles (4 x 4 squares per face): facet contacts."""
    from pdem.contact.shapes import box
    sim = simulation(comm, (-0.02,) * 3, (0.22, 0.22, 0.3), solver, friction)
    sim.add_mesh_wall(box((0.0, 0.0, 0.0), (0.2, 0.2, 0.2), n=4, open_top=True), "grains")
    return _spheres_3d(sim, np.random.default_rng(seed))


def run(sim, steps):
    sweeps = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(steps):
            sim.step()
            sweeps.append(sim.scheme.sweeps)
    return sweeps


def state(sim):
    p = sim.particles(gather=True)
    return {k: p[k] for k in ("id", "position", "velocity", "angular_velocity", "orientation")}


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("make, friction", [(scene_2d, 0.0), (scene_2d, 0.3), (scene_3d, 0.3),
                                            (scene_3d_mesh, 0.3)])
def test_jacobi_same_bits_as_one_process(make, friction):
    comm = MPI.COMM_WORLD
    ref = make(MPI.COMM_SELF, "jacobi", friction)
    par = make(comm, "jacobi", friction)
    assert run(par, 25) == run(ref, 25)
    got, want = state(par), state(ref)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    kinds = {"segment", "point"} if make is scene_2d else \
        {"plane"} if make is scene_3d else {"mesh"}
    assert kinds & set(par.contacts(gather=True)["kind"])        # wall contacts were solved
    if comm.size > 1:                     # grains crossed subdomains
        assert comm.allreduce(par.n_migrated) > 0


def column_2d(comm, side=20, rows=10):
    """Disks on a hexagonal lattice, touching (gaps below 1 um), at rest in a box of
    segments: the first step carries the column's weight across every rank border."""
    R = 5e-3
    n = side * rows
    k = np.arange(n)
    row, col = k // side, k % side
    x = np.column_stack([R + 2 * R * col + R * (row % 2), R + np.sqrt(3.0) * R * row])
    r = R * (1.0 - 1e-4 * np.random.default_rng(0).random(n))
    w, h = 2 * R * side + R, R + np.sqrt(3.0) * R * rows + 2 * R
    sim = pdem.Simulation(pdem.Domain((-R, -R), (w + R, h + R), dim=2), 1e-3,
                          gravity=(0.0, -G, 0.0), comm=comm, skin=1e-3, threads=1,
                          scheme=pdem.NSCD("nlgs", tol=1e-10, alert=2.5e-3, itmax=100000,
                                           normal_rule="projected"))
    sim.material("glass", 2500.0, friction=0.0)
    sim.add_segments([[0.0, h], [0.0, 0.0], [w, 0.0]], [[0.0, 0.0], [w, 0.0], [w, h]], "glass")
    sim.add_spheres(x, r, "glass")
    return sim


@pytest.mark.mpi(min_size=1)
def test_block_nlgs_converges_to_the_same_velocities():
    """Projected rule: the frictionless velocities of a step are unique. Block NLGS on N
    ranks (each contact solved once, increments to ghosts returned to their owners)
    and NLGS on one process, each solved to tol/100 = 1e-10 m, agree within tol/dt;
    the sweep counts stay close (Jacobi between ranks only on the borders)."""
    comm = MPI.COMM_WORLD
    tol, dt = 1e-8, 1e-3
    ref, par = column_2d(MPI.COMM_SELF), column_2d(comm)
    (it_ref,), (it,) = run(ref, 1), run(par, 1)
    got, want = state(par), state(ref)
    assert np.abs(want["velocity"]).max() > 1e-3            # the column moved and stopped
    assert np.abs(got["velocity"] - want["velocity"]).max() < tol / dt
    assert it_ref > 1000 and abs(it - it_ref) < 0.2 * it_ref
    if comm.size == 1:
        np.testing.assert_array_equal(got["velocity"], want["velocity"])
        assert it == it_ref


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("make", [scene_3d, scene_3d_mesh])
def test_block_nlgs_3d_with_friction_runs_close_to_one_process(make):
    comm = MPI.COMM_WORLD
    tol, dt = 1e-7, 1e-3
    ref, par = make(MPI.COMM_SELF, "nlgs", 0.3), make(comm, "nlgs", 0.3)
    ref.scheme.tol = par.scheme.tol = tol / 100
    run(ref, 5)
    its = run(par, 5)
    got, want = state(par), state(ref)
    assert np.abs(got["velocity"] - want["velocity"]).max() < tol / dt
    assert max(its) > 1
    if comm.size == 1:
        np.testing.assert_array_equal(got["velocity"], want["velocity"])


@pytest.mark.mpi(min_size=1)
def test_empty_ranks_take_part():
    """All grains in one corner: ranks that own nothing still sweep and reduce."""
    def corner(comm):
        sim = pdem.Simulation(pdem.Domain((0.0, 0.0), (4.0, 4.0), dim=2), 1e-3,
                              gravity=(0.0, -G, 0.0), comm=comm, threads=1,
                              scheme=pdem.NSCD("jacobi", tol=1e-9, alert=0.05))
        sim.material("m", 1.0 / np.pi, friction=0.0)
        sim.add_segments([[0.0, 0.05]], [[4.0, 0.05]], "m")
        sim.add_spheres([[0.1, 0.15], [0.3, 0.15], [0.2, 0.33]], 0.1, "m")
        return sim

    ref, par = corner(MPI.COMM_SELF), corner(MPI.COMM_WORLD)
    assert run(par, 10) == run(ref, 10)
    assert max(run(ref, 1)) > 0
    run(par, 1)
    np.testing.assert_array_equal(state(par)["position"], state(ref)["position"])


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("solver", ["nlgs", "jacobi"])
def test_one_round_exchange_same_bits_as_ghost_swaps(solver):
    """The exchange after each sweep in one message per neighbour (pdem.nscd.exchange:
    the owner's v + dv formed on both sides) gives the same bits as the reverse and
    forward ghost swaps plus an Allreduce, with friction and grains crossing the cut."""
    comm = MPI.COMM_WORLD
    one, swaps = scene_2d(comm, solver, 0.3), scene_2d(comm, solver, 0.3)
    swaps.scheme.one_round = False
    assert run(one, 25) == run(swaps, 25)
    got, want = state(one), state(swaps)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    if comm.size == 2:                    # one cut along x: the single round applies
        assert one.scheme._exchange.usable and comm.allreduce(one.n_migrated) > 0


@pytest.mark.mpi(min_size=1)
def test_ranks_bound_to_cores_of_their_own_are_not_oversubscribed(monkeypatch):
    """The exchange after a sweep naps between its tests only when the node's ranks
    share cores: mpirun's default binding (a core per rank, so each rank may use one
    core) is not that; every rank on one core is."""
    import os
    from pdem.nscd import exchange
    comm = MPI.COMM_WORLD
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {comm.rank})
    assert not exchange.oversubscribed(comm)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert exchange.oversubscribed(comm) == (comm.size > 1)
