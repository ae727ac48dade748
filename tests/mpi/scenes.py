"""Scenes shared by the MPI tests: every rank builds the same scene (SPMD)."""

import numpy as np

import pdem
from pdem.contact import shapes


def sheared_box(comm, dim=3, threads=1, n_side=None, layers=None, seed=5, batches=1,
                flow=(0.0, 0.0, 0.0), **options):
    """A granular layer sheared between two frictional plane walls moving in opposite
    directions along x, periodic on the other axes, started on a jittered lattice
    with random velocities plus a linear shear profile, under gravity towards the lower wall: particles cross subdomain
    boundaries all the time and contacts slide; the walls also close in slowly. 3D: n_side^2 * layers spheres;
    2D: n_side * layers disks (defaults: 2028 spheres, 2000 disks). batches: number of
    add_spheres calls the particles are added in (consecutive slices, in the same order,
    so with the same ids). flow: a velocity along the walls given to every particle and
    both walls on top (the same scene seen from a moving frame)."""
    n_side = n_side or (13 if dim == 3 else 80)
    layers = layers or (12 if dim == 3 else 25)
    rng = np.random.default_rng(seed)
    spacing = 1.02
    width = n_side * spacing
    height = layers * spacing + 0.6
    if dim == 3:
        dom = pdem.Domain((0, 0, 0), (width, width, height), periodic=(True, True, False))
        g = (np.arange(n_side) + 0.5) * spacing
        x, y, z = np.meshgrid(g, g, 0.3 + (np.arange(layers) + 0.5) * spacing, indexing="ij")
        pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
        up = 2
    else:
        dom = pdem.Domain((0, 0), (width, height), periodic=(True, False), dim=2)
        g = (np.arange(n_side) + 0.5) * spacing
        x, y = np.meshgrid(g, 0.3 + (np.arange(layers) + 0.5) * spacing, indexing="ij")
        pos = np.column_stack([x.ravel(), y.ravel(), np.zeros(x.size)])
        up = 1
    n = len(pos)
    radius = rng.uniform(0.46, 0.51, n)
    pos[:, :dim] += rng.uniform(-0.005, 0.005, (n, dim))
    vel = np.zeros((n, 3))
    vel[:, :dim] = rng.normal(0.0, 0.2, (n, dim))
    vel[:, 0] += 2.0 * (pos[:, up] / height - 0.5)
    vel += flow
    gravity = [0.0, 0.0, 0.0]
    gravity[up] = -5.0                 # the layer settles onto the lower wall within ~2.5 s
    sim = pdem.Simulation(dom, dt=2e-3, gravity=gravity, comm=comm, threads=threads, **options)
    grain = sim.material("grain", density=1.0, kn=2000.0, gamma_n=60.0, friction=0.5,
                         rolling_friction=0.05, rolling_stiffness=0.25)
    lo, hi = [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]
    hi[up] = height
    normal = [0.0, 0.0, 0.0]
    normal[up] = 1.0
    squeeze = [0.0, 0.0, 0.0]
    squeeze[up] = 0.1                  # the walls also close in: a dense, sheared layer
    sim.add_plane(lo, normal, grain, velocity=np.add(flow, (-2.0 + squeeze[0], squeeze[1],
                                                             squeeze[2])))
    normal[up] = -1.0
    sim.add_plane(hi, normal, grain, velocity=np.add(flow, (2.0 - squeeze[0], -squeeze[1],
                                                            -squeeze[2])))
    for part in np.array_split(np.arange(n), batches):
        sim.add_spheres(pos[part, :dim], radius[part], grain, velocities=vel[part, :dim])
    return sim


def state(sim):
    """Full state gathered on every rank, sorted by id (collective)."""
    p = sim.particles(gather=True)
    c = sim.contacts(gather=True)
    return p, c


def assert_restart_on_one_rank(run, path, n):
    """run(comm, steps) -> Simulation: n steps on all ranks + a checkpoint at `path`,
    n more steps on rank 0 alone after pdem.restart: the same bits and scheme options
    as 2n steps in one run."""
    from mpi4py import MPI
    first = run(MPI.COMM_WORLD, n)
    first.checkpoint(path)
    if MPI.COMM_WORLD.rank == 0:
        whole = run(MPI.COMM_SELF, 2 * n)
        resumed = pdem.restart(path, comm=MPI.COMM_SELF)
        assert resumed.scheme.options() == first.scheme.options()
        resumed.run(steps=n)
        assert_same_state(state(resumed), state(whole))


def assert_same_state(a, b):
    """Bitwise equality of two gathered states."""
    for part in range(2):
        assert a[part].keys() == b[part].keys()
        for k in a[part]:
            x, y = a[part][k], b[part][k]
            assert x.shape == y.shape, (k, x.shape, y.shape)
            same = (x == y) | (np.isnan(x) & np.isnan(y)) if x.dtype.kind == "f" else x == y
            assert np.all(same), "%s differs: %d of %d values, max |diff| %g" % (
                k, np.sum(~same), same.size,
                float(np.max(np.abs(x.astype(float) - y.astype(float)))))


def corner_gas(comm, n_side=10, box=24.0, seed=3, **options):
    """n_side^3 spheres released from a lattice in one corner of a periodic box with
    random velocities: the load starts on few ranks and spreads out."""
    rng = np.random.default_rng(seed)
    dom = pdem.Domain((0, 0, 0), (box, box, box), periodic=(True, True, True))
    g = 0.6 + np.arange(n_side) * 1.1
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)
    sim = pdem.Simulation(dom, dt=2e-3, comm=comm, **options)
    gas = sim.material("gas", density=1.0, kn=2000.0, gamma_n=2.0, friction=0.3)
    sim.add_spheres(pos, rng.uniform(0.45, 0.5, len(pos)), gas,
                    velocities=rng.normal(0.0, 2.0, (len(pos), 3)))
    return sim


def corner_pile(comm, box=10.0, seed=4, **options):
    """41 spheres (d = 1) falling onto the floor in one corner of a closed box, a 5 x 5
    layer and a 4 x 4 layer in its hollows; on several ranks the other subdomains
    stay empty."""
    rng = np.random.default_rng(seed)
    dom = pdem.Domain((0, 0, 0), (box, box, box))
    sim = pdem.Simulation(dom, dt=2e-3, gravity=(0, 0, -10.0), comm=comm, **options)
    m = sim.material("grain", density=1.0, kn=5000.0, gamma_n=150.0, friction=0.4,
                     rolling_friction=0.1, rolling_stiffness=0.5)
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)), ((0, 0, 0), (0, 1, 0))):
        sim.add_plane(point, normal, m)
    layers = []
    for k, z in ((5, 0.55), (4, 1.45)):
        g = 0.55 + (5 - k) * 0.525 + np.arange(k) * 1.05
        x, y = np.meshgrid(g, g, indexing="ij")
        layers.append(np.column_stack([x.ravel(), y.ravel(), np.full(k * k, z)]))
    pos = np.concatenate(layers)
    pos[:, :2] += rng.uniform(-0.01, 0.01, (len(pos), 2))
    sim.add_spheres(pos, 0.5, m)
    return sim


def _stirrer(sim, material, half_width, height, centre, omega, n):
    """A vertical mesh plate (x from -half_width to half_width, z from height[0] to
    height[1], n x n squares) spinning at omega about the vertical axis through centre."""
    plate = shapes.rectangle((-half_width, height[0]), (half_width, height[1]), 0.0, n)
    v = plate.vertices[:, [0, 2, 1]] + (centre[0], centre[1], 0.0)
    sim.add_mesh_wall(pdem.Mesh(v, plate.facets), material, angular_velocity=(0.0, 0.0, omega),
                      reference_point=(centre[0], centre[1], 0.0))


def _rain(sim, material, rng, n_side, layers, first, spacing, z0):
    """n_side^2 * layers spheres (radius 0.38-0.42) on a jittered lattice from
    (first, first, z0), with random velocities."""
    g = first + np.arange(n_side) * spacing
    x, y, z = np.meshgrid(g, g, z0 + spacing * np.arange(layers), indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    pos += rng.uniform(-0.02, 0.02, pos.shape)
    sim.add_spheres(pos, rng.uniform(0.38, 0.42, len(pos)), material,
                    velocities=rng.normal(0.0, 0.5, pos.shape))


def stirred_mesh_box(comm, n_side=10, layers=6, seed=6, **options):
    """n_side^2 * layers spheres falling into an open box made of a triangle mesh,
    stirred by a vertical mesh plate spinning about the box's vertical axis: ball-facet
    contacts on both walls, moving facets, particles crossing subdomains."""
    rng = np.random.default_rng(seed)
    dom = pdem.Domain((-0.5, -0.5, -0.5), (10.5, 10.5, 12.0))
    sim = pdem.Simulation(dom, dt=2e-3, gravity=(0.0, 0.0, -10.0), comm=comm, **options)
    m = sim.material("m", density=1.0, kn=2000.0, gamma_n=2.0, friction=0.4)
    sim.add_mesh_wall(shapes.box((0, 0, 0), (10, 10, 11), 4), m, cutoff_angle=20.0)
    _stirrer(sim, m, 3.0, (0.2, 4.0), (5.0, 5.0), 1.0, 3)
    _rain(sim, m, rng, n_side, layers, 0.7, 0.95, 4.5)
    return sim


def nscd_conveyor(comm, solver="jacobi", tol=1e-4, n_side=6, layers=4, seed=7, **options):
    """Non-smooth contact dynamics (pdem.NSCD) of n_side^2 * layers spheres in a box
    periodic in x and y: they fall on a floor plane moving along x (a conveyor belt)
    and are stirred by a spinning mesh plate. Friction, restitution, periodic images,
    a moving plane and a moving mesh wall. tol: NSCD tolerance (1e-4: a coarse solve,
    a few sweeps per step)."""
    rng = np.random.default_rng(seed)
    dom = pdem.Domain((0.0, 0.0, -0.5), (6.0, 6.0, 8.0), periodic=(True, True, False))
    scheme = pdem.NSCD(solver, tol=tol, alert=0.05, itmax=1000)
    sim = pdem.Simulation(dom, dt=2e-3, gravity=(0.0, 0.0, -10.0), comm=comm, skin=0.05,
                          scheme=scheme, **options)
    m = sim.material("m", density=1.0, friction=0.4, restitution=0.3)
    sim.add_plane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), m, velocity=(0.5, 0.0, 0.0))
    _stirrer(sim, m, 1.5, (0.1, 2.0), (3.0, 3.0), 2.0, 2)
    _rain(sim, m, rng, n_side, layers, 0.5, 0.98, 0.6)
    return sim


def poured_box(comm, batches=10, every=150, seed=9, **options):
    """A closed box filled by `batches` layers of 16 spheres (d = 1) added above the
    bed every `every` steps (run_pour), as a pouring script would."""
    dom = pdem.Domain((0, 0, 0), (5.0, 5.0, 14.0))
    sim = pdem.Simulation(dom, dt=2e-3, gravity=(0, 0, -10.0), comm=comm, **options)
    m = sim.material("grain", density=1.0, kn=5000.0, gamma_n=100.0, friction=0.4)
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                          ((5, 5, 0), (-1, 0, 0)), ((5, 5, 0), (0, -1, 0))):
        sim.add_plane(point, normal, m)
    sim.pour = (np.random.default_rng(seed), m, batches, every)
    return sim


def run_pour(sim):
    rng, m, batches, every = sim.pour
    g = 0.8 + 1.1 * np.arange(4)
    x, y = np.meshgrid(g, g, indexing="ij")
    for _ in range(batches):
        pos = np.column_stack([x.ravel(), y.ravel(), np.full(16, 12.5)])
        pos[:, :2] += rng.uniform(-0.05, 0.05, (16, 2))
        sim.add_spheres(pos, rng.uniform(0.45, 0.5, 16), m,
                        velocities=np.column_stack([rng.normal(0, 0.3, (16, 2)),
                                                    np.full(16, -2.0)]))
        sim.run(steps=every)


def random_pile(comm, steps):
    """288 spheres (radii 0.4-0.5) dropped from a jittered lattice onto a plane in a box
    periodic in x and y, run `steps` steps of 2e-4."""
    dom = pdem.Domain((0, 0, 0), (6, 6, 12), periodic=(True, True, False))
    sim = pdem.Simulation(dom, 2e-4, gravity=(0, 0, -9.81), comm=comm)
    sim.material("m", 1000.0, kn=1e6, restitution=0.3, friction=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    rng = np.random.default_rng(7)
    g = np.arange(6) + 0.5
    x = np.stack(np.meshgrid(g, g, np.arange(8) * 1.2 + 0.6), -1).reshape(-1, 3)
    sim.add_spheres(x + rng.uniform(-0.05, 0.05, x.shape), rng.uniform(0.4, 0.5, len(x)), "m")
    sim.run(steps=steps)
    return sim
