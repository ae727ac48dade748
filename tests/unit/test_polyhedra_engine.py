"""Convex polyhedra in the engine (issue 17, docs/polyhedra.md): add_polyhedra, the
phpair kind (GJK/EPA, Minkowski-overlap ECC law) and phplane kind. Expected values:
statics (weight, the Coulomb threshold on an incline, the sliding acceleration), the
conservation laws of an elastic frictionless impact, the separating-axis depth."""
import numpy as np
import pytest
import trimesh
from mpi4py import MPI

import pdem
from pdem import polyhedra as P

G = 9.81


def rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def world_L(p):
    return np.array([rot(q) @ (I * (rot(q).T @ w)) for q, I, w in
                     zip(p["orientation"], p["inertia"], p["angular_velocity"])])


def box(length=0.4, periodic=(True, True, False), dt=2e-4, gravity=(0, 0, -G), **kw):
    return pdem.Simulation(pdem.Domain((0, 0, 0), (length,) * 3, periodic=periodic), dt=dt,
                           gravity=gravity, comm=MPI.COMM_SELF, **kw)


def test_mass_properties_fields_and_mesh(tmp_path):
    sim = box()
    m = sim.material("m", density=2000.0, kn=1e4)
    b = P.box(0.02, 0.04, 0.06)
    q = np.array([0.9, 0.1, -0.3, 0.2])
    ids = sim.add_polyhedra([[0.1, 0.2, 0.2], [0.3, 0.2, 0.2]], b, m,
                            orientations=[[1, 0, 0, 0], q / np.linalg.norm(q)],
                            angular_velocities=[[1.0, 2.0, 3.0], [0, 0, 0]])
    assert ids.tolist() == [0, 1] and sim.add_polyhedra([[0.2, 0.1, 0.1]], 0, m).tolist() == [2]
    p = sim.particles()
    mass = 2000.0 * 0.02 * 0.04 * 0.06
    assert np.allclose(p["mass"], mass) and p["shape"].tolist() == [4, 4, 4]
    assert p["template"].tolist() == [0, 0, 0] and len(sim.templates) == 1
    # principal moments ascending: about the long (0.06) axis first
    I = mass / 12 * np.array([0.02 ** 2 + 0.04 ** 2, 0.02 ** 2 + 0.06 ** 2, 0.04 ** 2 + 0.06 ** 2])
    assert np.allclose(p["inertia"], I, rtol=1e-12)
    assert np.allclose(p["radius"], 0.5 * np.sqrt(0.02 ** 2 + 0.04 ** 2 + 0.06 ** 2))
    assert np.allclose(p["angular_velocity"][0], [1, 2, 3])
    heavy = sim.material("heavy", density=3000.0, kn=1e4)
    sim.set_material([2], heavy)                     # mass and moments from the template
    q = sim.particles()
    assert q["mass"][2] == pytest.approx(1.5 * mass) and np.allclose(q["inertia"][2], 1.5 * I)
    pts, tris, owner = P.world_mesh(sim)
    assert pts.shape == (24, 3) and tris.shape == (36, 3) and owner.tolist() == [0] * 12 + \
        [1] * 12 + [2] * 12
    assert np.allclose(np.sort(np.abs(pts[:8] - [0.1, 0.2, 0.2]).max(axis=0)),
                       [0.01, 0.02, 0.03])
    # the ParaView mesh: closed, outward, each body's volume and centroid (trimesh)
    P.write_vtk(str(tmp_path / "poly_0000.vtk"), sim)
    text = open(tmp_path / "poly_0000.vtk").read().split("\n")
    assert text[4] == "POINTS 24 double" and text[29] == "POLYGONS 36 144"
    read = np.array([list(map(float, line.split())) for line in text[5:29]])
    assert np.array_equal(read, pts)
    for i in range(3):
        body = trimesh.Trimesh(pts, tris[owner == i], process=False)
        assert body.volume == pytest.approx(0.02 * 0.04 * 0.06, rel=1e-12)
        assert np.allclose(body.center_mass, p["position"][i], atol=1e-15)
    # HDF5 frames: shape 4, the pose, and half the principal-frame box as semi-axes
    import h5py
    from pdem.io import ResultFile
    with ResultFile(str(tmp_path / "r.h5"), sim) as rf:
        rf.write_frame()
    with h5py.File(tmp_path / "r.h5", "r") as f:
        g = f["frames/000000/particles"]
        assert list(g["shape"][...]) == [4, 4, 4]
        assert np.allclose(np.sort(g["semi_axes"][0]), [0.01, 0.02, 0.03])
        assert np.array_equal(g["orientation"][...], p["orientation"])


@pytest.mark.parametrize("kwargs, message", [
    ({"template": 7}, "template must be a pdem.polyhedra.Polyhedron or the index"),
    ({"orientations": [[1, 1, 0, 0]]}, r"orientations\[0\].*not a unit quaternion"),
    ({"positions": [[0.2, 0.2, 0.5]]}, r"positions\[0\].*outside the domain"),
])
def test_bad_input_is_one_clear_line(kwargs, message):
    sim = box()
    m = sim.material("m", density=1000.0, kn=1e4)
    args = {"positions": [[0.2, 0.2, 0.2]], "template": P.cube(0.02), "material": m}
    args.update(kwargs)
    with pytest.raises(pdem.InputError, match=message):
        sim.add_polyhedra(**args)
    sim2 = pdem.Simulation(pdem.Domain((0, 0), (1, 1), dim=2), dt=1e-4, comm=MPI.COMM_SELF)
    m2 = sim2.material("m", density=1000.0, kn=1e4)
    with pytest.raises(pdem.InputError, match="polyhedra need a 3D domain, got dim=2"):
        sim2.add_polyhedra([[0.5, 0.5, 0]], P.cube(0.1), m2)


def test_dropped_cube_rests_face_down_with_the_plane_carrying_its_weight():
    """Dropped turned, it lands on a corner, rocks and settles on a face: the four
    vertices on the plane carry the weight, W = 4 k_n delta, so the centre is at a/2 -
    W / (4 k_n); the contact point is the face's centre (below the centre of mass)."""
    sim = box()
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.5, restitution=0.05,
                     twisting_friction=0.3, twisting_stiffness=0.3)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    q = np.random.default_rng(1).normal(size=4)
    sim.add_polyhedra([[0.2, 0.2, 0.05]], P.cube(0.04), m, orientations=[q / np.linalg.norm(q)])
    sim.run(12000)
    p = sim.particles()
    W = p["mass"][0] * G
    assert p["position"][0, 2] == pytest.approx(0.02 - W / 4e4, abs=1e-10)
    R = rot(p["orientation"][0])
    assert np.abs(R[2]).max() > 1 - 1e-12                  # a body axis is vertical
    assert -sim.plane_forces()[0][2] / W == pytest.approx(1.0, abs=1e-9)
    assert np.linalg.norm(p["velocity"][0]) < 1e-10
    c = sim.contacts()
    assert list(c["kind"]) == ["phplane"]
    assert np.allclose(c["point"][0, :2], p["position"][0, :2], atol=1e-12)


def on_incline(theta, mu=0.5, steps=2000):
    """A cube resting face down on a plane, gravity tilted by theta (the incline)."""
    sim = box(gravity=(G * np.sin(theta), 0, -G * np.cos(theta)))
    m = sim.material("m", density=1000.0, kn=1e4, friction=mu, restitution=0.05)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    W = 0.04 ** 3 * 1000 * G * np.cos(theta)
    sim.add_polyhedra([[0.2, 0.2, 0.02 - W / 4e4]], P.cube(0.04), m)
    sim.run(500)
    v0 = sim.particles()["velocity"][0].copy()
    sim.run(steps)
    return sim.particles()["velocity"][0] - v0, steps * sim.dt


def test_cube_on_an_incline_sticks_below_the_friction_angle_and_slides_above():
    mu = 0.5
    dv, _ = on_incline(np.radians(20.0), mu)              # tan 20 = 0.36 < 0.5
    assert np.abs(dv).max() < 1e-7                        # (the tangential spring settles)
    theta = np.radians(35.0)                              # tan 35 = 0.70 > 0.5
    dv, T = on_incline(theta, mu)
    a = G * (np.sin(theta) - mu * np.cos(theta))          # Coulomb sliding
    # within 0.5 %: the friction at the base shifts the load to the front edge (the
    # cube tilts by ~1e-4 rad on its vertices' springs)
    assert dv[0] / T == pytest.approx(a, rel=5e-3) and dv[1] == 0.0


def impact(dt, steps_per_ms=None, second="cube", T=0.2):
    """Two turned, spinning polyhedra (cube side 0.1, and a cube or a tetrahedron of
    edge 0.15), elastic and frictionless, meeting off centre."""
    sim = box(1.0, periodic=(True,) * 3, dt=dt, gravity=(0, 0, 0))
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.0, restitution=1.0)
    qa, qb = np.array([0.9, 0.2, 0.3, 0.1]), np.array([0.8, -0.3, 0.1, 0.4])
    sim.add_polyhedra([[0.33, 0.5, 0.5]], P.cube(0.1), m, orientations=[qa / np.linalg.norm(qa)],
                      velocities=[[0.5, 0, 0]], angular_velocities=[[3, -2, 5]])
    B = P.cube(0.1) if second == "cube" else P.tetrahedron(0.15)
    sim.add_polyhedra([[0.52, 0.53, 0.48]], B, m, orientations=[qb / np.linalg.norm(qb)],
                      velocities=[[-0.5, 0, 0]], angular_velocities=[[-4, 1, 2]])

    def invariants():
        p = sim.particles()
        mom = (p["mass"][:, None] * p["velocity"]).sum(axis=0)
        ang = (np.cross(p["position"], p["mass"][:, None] * p["velocity"]) + world_L(p)).sum(0)
        return mom, ang, sum(sim.energy().values())

    m0, a0, e0 = invariants()
    touched = 0
    for _ in range(int(round(T / dt)) // 100):
        sim.run(100)
        touched = max(touched, sim.n_contacts)
    m1, a1, e1 = invariants()
    return e1 / e0 - 1, np.abs(m1 - m0).max(), np.abs(a1 - a0).max(), touched, sim


def test_elastic_frictionless_impact_of_rotating_cubes():
    """Momentum and angular momentum (orbital + spin) to round-off; the energy after the
    impact within 2e-6 at 2e-5 s (40 steps per 0.0013 s of contact; docs/polyhedra.md
    tabulates it against dt)."""
    de, dm, da, touched, sim = impact(2e-5)
    assert touched == 1 and sim.n_contacts == 0
    assert dm < 1e-15 and da < 1e-12
    assert abs(de) < 2e-6
    stats = sim.interactions["phpair"].stats
    assert stats[0] > 50 and stats[1] / stats[0] < 20


def test_sphere_on_a_cube_face_and_failures_are_reported():
    """A sphere resting on a fixed heavy cube's face: the pair's normal force is
    k_n (overlap) along z through the sphere's centre (GJK core distance, margins)."""
    sim = box(gravity=(0, 0, 0))
    m = sim.material("m", density=1000.0, kn=1e4)
    sim.add_polyhedra([[0.2, 0.2, 0.1]], P.cube(0.1), m)
    sim.add_spheres([[0.23, 0.19, 0.1 + 0.05 + 0.02 - 1e-4]], [0.02], m)
    sim.run(1)
    c = sim.contacts()
    assert list(c["kind"]) == ["phpair"]
    assert c["overlap"][0] == pytest.approx(1e-4, rel=1e-9)
    assert np.allclose(c["normal"][0], [0, 0, 1], atol=1e-14)
    assert np.allclose(c["force"][0], [0, 0, 1e4 * 1e-4], rtol=1e-6)
    assert np.allclose(c["point"][0, :2], [0.23, 0.19], atol=1e-14)
    sim.interactions["phpair"].max_iter = 0            # GJK cannot finish: reported
    q = np.array([0.9, 0.2, 0.3, 0.1])
    sim2 = box(gravity=(0, 0, 0))
    m2 = sim2.material("m", density=1000.0, kn=1e4)
    sim2.add_polyhedra([[0.2, 0.2, 0.1], [0.2, 0.2, 0.19]], P.cube(0.1), m2,
                       orientations=[[1, 0, 0, 0], q / np.linalg.norm(q)])
    sim2.interactions["phpair"].max_iter = 0
    with pytest.raises(pdem.SimulationError, match="GJK/EPA contact query of particles 0 and "
                                                  "1 exhausted"):
        sim2.run(1)


def box2d(gravity=(0, -G, 0)):
    return pdem.Simulation(pdem.Domain((0, 0), (0.4, 0.4), periodic=(True, False), dim=2),
                           dt=2e-4, gravity=gravity, comm=MPI.COMM_SELF)


def test_2d_polygons_rest_on_a_side_and_stay_in_the_plane():
    """Two squares (side 0.04) and a disk dropped spinning on a line: each square rests on
    a side, its two corners carrying its weight (centre at a/2 - W / (2 k_n)), the line
    carries all the weight, and L and the orientation stay about z exactly."""
    sim = box2d()
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.5, restitution=0.05)
    sim.add_plane((0, 0, 0), (0, 1, 0), m)
    sq = P.regular_polygon(4, 0.02 * np.sqrt(2), np.pi / 4)
    with pytest.raises(pdem.InputError, match="must be a pdem.polyhedra.Polygon here"):
        sim.add_polygons([[0.2, 0.06]], P.cube(0.04), m)
    with pytest.raises(pdem.InputError, match="polyhedra need a 3D domain"):
        sim.add_polyhedra([[0.2, 0.06, 0]], P.cube(0.04), m)
    sim.add_polygons([[0.1, 0.06], [0.3, 0.06]], sq, m, angles=[0.5, 0.2],
                     angular_velocities=[3.0, -2.0])
    sim.add_spheres([[0.2, 0.05]], [0.015], m)
    sim.run(6000)
    p = sim.particles()
    W = p["mass"][:2] * G
    assert np.allclose(p["position"][:2, 1], 0.02 - W / 2e4, atol=1e-10)
    theta = 2 * np.arctan2(p["orientation"][:2, 3], p["orientation"][:2, 0])
    assert np.allclose(np.sin(2 * theta), 0.0, atol=1e-9)     # a side down
    assert -sim.plane_forces()[0][1] / (p["mass"].sum() * G) == pytest.approx(1.0, abs=1e-9)
    assert np.all(sim.store.angmom[:, :2] == 0.0) and np.all(p["orientation"][:, 1:3] == 0.0)
    assert np.all(p["position"][:, 2] == 0.0)


def test_2d_polygon_pair_depth():
    """A square on a square (overlap 1e-3, shifted sideways) and a square's corner
    pressed 2e-3 into a disk: overlaps and normals exact."""
    sim = box2d(gravity=(0, 0, 0))
    m = sim.material("m", density=1000.0, kn=1e4)
    sq = P.regular_polygon(4, 0.02 * np.sqrt(2), np.pi / 4)
    sim.add_polygons([[0.2, 0.1], [0.215, 0.1 + 0.04 - 1e-3]], sq, m)
    sim.add_spheres([[0.3, 0.1]], [0.02], m)
    sim.add_polygons([[0.3 + 0.02 + 0.02 * np.sqrt(2) - 2e-3, 0.1]], sq, m, angles=np.pi / 4)
    sim.run(1)
    c = sim.contacts()
    order = np.argsort(c["id1"])
    assert list(c["kind"][order]) == ["phpair", "phpair"]
    assert np.allclose(c["overlap"][order], [1e-3, 2e-3], rtol=1e-9)     # (corner on disk)
    assert np.allclose(c["normal"][order], [[0, 1, 0], [1, 0, 0]], atol=1e-14)
