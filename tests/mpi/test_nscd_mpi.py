"""NSCD on 1-4 ranks (run with `mpirun -n N python -m pytest --with-mpi`): Jacobi gives
the same bits as one process, NLGS (block Gauss-Seidel across ranks) converges to the
same velocities within the tolerance; with planes or with a mesh box (add_mesh)."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

from pdem.nscd import GrainProblem
from pdem.nscd.parallel import ParallelGrainProblem

G = 9.81


def scene_2d(cls, n=160, seed=7, **kw):
    """Disks in a box of three segments, on a jittered lattice with random velocities;
    the box spans [0, 0.4] x [0, 0.4] (cut among the ranks)."""
    rng = np.random.default_rng(seed)
    args = ((0.0, 0.0), (0.4, 0.4)) if cls is ParallelGrainProblem else ()
    p = cls(*args, dim=2, gravity=(0.0, -G), threads=1, **kw)
    p.add_segments([[0.0, 0.4], [0.0, 0.0], [0.4, 0.0]], [[0.0, 0.0], [0.4, 0.0], [0.4, 0.4]])
    side = 16
    k = np.arange(n)
    x = np.column_stack([0.0125 + 0.0235 * (k % side), 0.0125 + 0.0235 * (k // side)])
    x += rng.uniform(-1e-3, 1e-3, x.shape)
    # a drift of 1 m/s along x: 25 steps carry grains over any cut (migration)
    p.add_grains(x, rng.uniform(0.009, 0.011, n), density=1000.0,
                 v=rng.normal(0.0, 0.3, (n, 2)) + [1.0, 0.0])
    return p


def _add_grains_3d(p, rng):
    """147 spheres on a jittered lattice in the 0.2 m box, moving diagonally."""
    g = 0.015 + 0.025 * np.arange(7)
    x = np.array([[a, b, c] for a in g for b in g for c in g[:3]])
    x += rng.uniform(-1e-3, 1e-3, x.shape)
    p.add_grains(x, rng.uniform(0.009, 0.011, len(x)), density=1000.0,
                 v=rng.normal(0.0, 0.3, x.shape) + [1.0, 1.0, 0.0])
    return p


def scene_3d(cls, seed=3, **kw):
    rng = np.random.default_rng(seed)
    args = ((0.0, 0.0, 0.0), (0.2, 0.2, 0.2)) if cls is ParallelGrainProblem else ()
    p = cls(*args, dim=3, threads=1, **kw)
    p.add_planes([[0, 0, 0], [0, 0, 0], [0.2, 0.2, 0], [0, 0, 0], [0.2, 0.2, 0]],
                 [[0, 0, 1], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]])
    return _add_grains_3d(p, rng)


def scene_3d_mesh(cls, seed=3, **kw):
    """scene_3d in an open box of triangles (pdem.contact.shapes.box, 4 x 4 squares per
    face, inward normals) instead of the five planes: facet contacts (kind 4)."""
    from pdem.contact.shapes import box
    rng = np.random.default_rng(seed)
    args = ((0.0, 0.0, 0.0), (0.2, 0.2, 0.2)) if cls is ParallelGrainProblem else ()
    p = cls(*args, dim=3, threads=1, **kw)
    p.add_mesh(box((0.0, 0.0, 0.0), (0.2, 0.2, 0.2), n=4, open_top=True))
    return _add_grains_3d(p, rng)


def run(p, steps, solver, dt=1e-3, tol=1e-7, alert=0.004):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [p.step(dt, tol, alert, solver=solver, itmax=3000) for _ in range(steps)]


def serial_state(p):
    return {"x": p.x, "v": p.v, "omega": p.omega, "orientation": p.orientation}


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("make, friction", [(scene_2d, 0.0), (scene_2d, 0.3), (scene_3d, 0.3),
                                            (scene_3d_mesh, 0.3)])
def test_jacobi_same_bits_as_one_process(make, friction):
    comm = MPI.COMM_WORLD
    steps = 25
    ref = make(GrainProblem, friction=friction)
    its_ref = run(ref, steps, "jacobi")
    par = make(ParallelGrainProblem, friction=friction, comm=comm)
    assert par.n_total == ref.n
    assert comm.allreduce(par.n) == ref.n
    its = run(par, steps, "jacobi")
    assert its == its_ref
    if make is scene_3d_mesh:                         # facet contacts were solved
        assert comm.allreduce(int(np.sum(par.contacts["kind"] == 4))) > 20
    got = par.gather()
    np.testing.assert_array_equal(got["id"], np.arange(ref.n))
    for k, v in serial_state(ref).items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)
    # the grains moved across subdomains and ranks exchanged ghosts
    if comm.size > 1:
        assert comm.allreduce(par.received) > 0
        assert comm.allreduce(len(par.ids)) == ref.n


def column_2d(cls, side=20, rows=10, **kw):
    """Disks on a hexagonal lattice, touching (gaps below 1 um), at rest in a box: the
    first step carries the column's weight through contacts across every rank border."""
    R = 5e-3
    n = side * rows
    k = np.arange(n)
    row, col = k // side, k % side
    x = np.column_stack([R + 2 * R * col + R * (row % 2), R + np.sqrt(3.0) * R * row])
    r = R * (1.0 - 1e-4 * np.random.default_rng(0).random(n))
    w, h = 2 * R * side + R, R + np.sqrt(3.0) * R * rows + 2 * R
    args = ((-R, -R), (w + R, h + R)) if cls is ParallelGrainProblem else ()
    p = cls(*args, dim=2, threads=1, **kw)
    p.add_segments([[0.0, h], [0.0, 0.0], [w, 0.0]], [[0.0, 0.0], [w, 0.0], [w, h]])
    p.add_grains(x, r, density=2500.0)
    return p


@pytest.mark.mpi(min_size=1)
def test_block_nlgs_converges_to_the_same_velocities():
    """Projected rule: the frictionless velocities of a step are unique. Block NLGS on N
    ranks (each contact solved once, increments to ghosts returned to their owners)
    and NLGS on one process, each solved to tol/100, agree within tol/dt; the sweep
    counts stay close (Jacobi between ranks only on the borders)."""
    comm = MPI.COMM_WORLD
    dt, tol, alert = 1e-3, 1e-8, 2.5e-3
    ref = column_2d(GrainProblem, normal_rule="projected")
    par = column_2d(ParallelGrainProblem, normal_rule="projected", comm=comm)
    it_ref = ref.step(dt, tol / 100, alert, itmax=100000)
    it = par.step(dt, tol / 100, alert, itmax=100000)
    got = par.gather()
    assert np.abs(ref.v).max() > 1e-3                     # the column moved and stopped
    assert np.abs(got["v"] - ref.v).max() < tol / dt
    assert it_ref > 1000 and abs(it - it_ref) < 0.2 * it_ref
    if comm.size == 1:
        np.testing.assert_array_equal(got["v"], ref.v)     # one rank: the serial NLGS
        assert it == it_ref


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("make", [scene_3d, scene_3d_mesh])
def test_block_nlgs_3d_with_friction_runs_close_to_serial(make):
    comm = MPI.COMM_WORLD
    dt, tol = 1e-3, 1e-7
    ref = make(GrainProblem, friction=0.3)
    par = make(ParallelGrainProblem, friction=0.3, comm=comm)
    run(ref, 5, "nlgs", tol=tol / 100)
    its = run(par, 5, "nlgs", tol=tol / 100)
    got = par.gather()
    assert np.abs(got["v"] - ref.v).max() < tol / dt
    assert max(its) > 1
    if comm.size == 1:
        np.testing.assert_array_equal(got["v"], ref.v)


@pytest.mark.mpi(min_size=1)
def test_empty_ranks_take_part():
    """All grains in one corner: ranks that own nothing still sweep and reduce."""
    comm = MPI.COMM_WORLD
    p = ParallelGrainProblem((0.0, 0.0), (4.0, 4.0), dim=2, comm=comm, threads=1)
    p.add_segments([[0.0, 0.0]], [[4.0, 0.0]])
    p.add_grains([[0.1, 0.1], [0.3, 0.1], [0.2, 0.28]], 0.1)
    q = GrainProblem(dim=2, threads=1)
    q.add_segments([[0.0, 0.0]], [[4.0, 0.0]])
    q.add_grains([[0.1, 0.1], [0.3, 0.1], [0.2, 0.28]], 0.1)
    for _ in range(10):
        assert p.step(1e-3, 1e-9, 0.05, solver="jacobi") == q.step(1e-3, 1e-9, 0.05,
                                                                   solver="jacobi")
    np.testing.assert_array_equal(p.gather()["x"], q.x)


@pytest.mark.mpi(min_size=2)
def test_slabs_thinner_than_the_ghost_cutoff_are_refused_on_every_rank():
    from pdem.errors import InputError
    comm = MPI.COMM_WORLD
    p = ParallelGrainProblem((0.0, 0.0), (0.03 * comm.size, 1.0), dim=2, comm=comm,
                             dims=(comm.size, 1, 1), threads=1)
    p.add_grains([[0.015, 0.5]], 0.01)
    with pytest.raises(InputError, match="too small"):
        p.step(1e-3, 1e-6, 0.02)                  # cutoff 2 r + alert = 0.04 > 0.03
    assert p.time == 0.0 and np.all(p.v == 0.0)   # refused before anything moved
    assert p.step(1e-3, 1e-6, 0.005) == 0         # cutoff 0.025: fine
