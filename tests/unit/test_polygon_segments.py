"""2D convex polygons against boundary segments and points (issue 17 with seed 004's
facet rules): a floor of collinear segments is the same line as a plane (bouncing,
rocking, sliding across the joints with friction: no force jump, one contact), a square
dropped into a segment box rests face down carrying its weight, and a polygon's corner
at the convex corner of a wall, or an isolated point in a polygon, has the depth of an
independent separating-axis computation."""
import numpy as np
import pytest
from mpi4py import MPI

import pdem
from pdem import polyhedra as P

G = 9.81
SQ = P.regular_polygon(4, 0.02 * np.sqrt(2), np.pi / 4)          # square of side 0.04
JOINTS = [0.05, 0.13, 0.17, 0.2, 0.26, 0.35]                      # a floor of 5 segments


def box2d(dt=1e-4, gravity=(0, -G, 0)):
    return pdem.Simulation(pdem.Domain((0, 0), (0.4, 0.4), periodic=(True, False), dim=2),
                           dt=dt, gravity=gravity, comm=MPI.COMM_SELF)


def on_floor(wall, shape, angle, pos, vel, spin, steps, every=1):
    """A polygon with friction dropped (or launched) on a plane or on the floor of
    collinear segments (every other one reversed: the joints join a->b, b->b, a->a);
    returns the simulation and the wall force on the particle every `every` steps."""
    sim = box2d()
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.3, restitution=0.3)
    if wall == "plane":
        sim.add_plane((0, 0, 0), (0, 1, 0), m)
    else:
        x0, x1 = np.array(JOINTS[:-1]), np.array(JOINTS[1:])
        flip = np.arange(len(x0)) % 2 == 1
        a = np.column_stack([np.where(flip, x1, x0), 0 * x0])
        b = np.column_stack([np.where(flip, x0, x1), 0 * x0])
        sim.add_segments(a, b, m)
    sim.add_polygons([pos], shape, m, angles=angle, velocities=[vel],
                     angular_velocities=spin)
    forces, kinds = [], set()
    for _ in range(steps // every):
        sim.run(every)
        if wall == "plane":
            forces.append(-sim.plane_forces()[0])
        else:
            forces.append(-(sim.segment_forces().sum(axis=0) + sim.point_forces().sum(axis=0)))
        c = sim.contacts()
        kinds |= set(c["kind"])
        assert len(c["kind"]) <= 1
    return sim, np.array(forces), kinds


@pytest.mark.slow
@pytest.mark.parametrize("shape,angle", [(SQ, 0.4), (P.random_polygon(7, seed=2,
                                                                        axes=(0.03, 0.02)), 1.0)])
def test_polygon_on_collinear_segments_follows_the_line(shape, angle):
    """Dropped spinning with a sideways velocity: lands on a corner, rocks, slides over
    the joints with friction and settles: positions, orientations, velocities and the
    wall force (every 5 steps) equal the plane's to round-off; one contact at a time (a
    floor split in segments counts once, its state carried across the joints)."""
    args = (shape, angle, [0.1, 0.035, 0.0], [0.6, 0.0, 0.0], 4.0, 2500, 5)
    line, f_line, _ = on_floor("plane", *args)
    sim, f_seg, kinds = on_floor("segments", *args)
    p, q = line.particles(), sim.particles()
    for k in ("position", "orientation", "velocity", "angular_velocity"):
        assert np.abs(p[k] - q[k]).max() < 1e-11, (k, np.abs(p[k] - q[k]).max())
    scale = np.abs(f_line).max()
    assert np.abs(f_seg - f_line).max() < 1e-9 * scale, np.abs(f_seg - f_line).max() / scale
    assert kinds == {"phseg"}
    assert p["position"][0, 0] > JOINTS[2]                    # it slid across joints


@pytest.mark.slow
def test_sliding_across_joints_has_no_force_jump():
    """A square face down, launched along the floor with friction: it slides across three
    joints (two of them with both corners on different segments for a while); the
    force history (every other step) equals the plane's to 1e-10 of the weight (no jump
    at a crossing)."""
    a = 0.02 - 1000.0 * 0.04 ** 2 * G / 2e4                       # resting height
    args = (SQ, 0.0, [0.07, a, 0.0], [1.2, 0.0, 0.0], 0.0, 1500, 2)
    line, f_line, _ = on_floor("plane", *args)
    sim, f_seg, kinds = on_floor("segments", *args)
    W = 1000.0 * 0.04 ** 2 * G
    assert np.abs(f_seg - f_line).max() < 1e-10 * W, np.abs(f_seg - f_line).max() / W
    assert sim.particles()["position"][0, 0] > JOINTS[3] and kinds == {"phseg"}
    assert f_seg[-1, 0] < -0.29 * W                             # still sliding (Coulomb)


@pytest.mark.slow
def test_square_dropped_in_a_segment_box_rests_face_down():
    """A turned, spinning square dropped into a box of segments (the floor two segments,
    its corners joints): face down at a/2 - W / (2 k_n) across the floor's joint (one
    corner on each segment), the segments carrying the weight, no point contacts."""
    sim = box2d(dt=2e-4)
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.5, restitution=0.1)
    box = [[0.1, 0.3], [0.1, 0.0], [0.22, 0.0], [0.3, 0.0], [0.3, 0.3]]
    sim.add_segments(box[:-1], box[1:], m)
    sim.add_polygons([[0.2, 0.12]], SQ, m, angles=0.7, velocities=[[0.3, 0.0]],
                     angular_velocities=6.0)
    sim.run(7000)
    p = sim.particles()
    assert abs(p["position"][0, 0] - 0.22) < 0.02                # over the floor's joint
    W = p["mass"][0] * G
    assert p["position"][0, 1] == pytest.approx(0.02 - W / 2e4, abs=1e-10)
    theta = 2 * np.arctan2(p["orientation"][0, 3], p["orientation"][0, 0])
    assert np.sin(2 * theta) == pytest.approx(0.0, abs=1e-9)
    f = sim.segment_forces()
    assert -f[:, 1].sum() / W == pytest.approx(1.0, abs=1e-9)
    assert not np.any(sim.point_forces())
    assert np.abs(p["velocity"]).max() < 1e-9


def sat_overlap(corners, a, b):
    """Minkowski overlap of a convex polygon (corners, ccw) and the segment [a, b] (a
    point when equal) by separating axes: min over the polygon's edge normals and the
    segment's normal of the overlap of the projections; returns (depth, unit normal
    from the wall to the polygon)."""
    edges = list(np.roll(corners, -1, axis=0) - corners)
    if np.any(a != b):
        edges.append(b - a)
    axes = [s * np.array([e[1], -e[0]]) / np.linalg.norm(e) for e in edges for s in (1, -1)]
    best, normal = np.inf, None
    for n in axes:                  # push the polygon along n: its min past the wall's max
        depth = max(np.dot(a, n), np.dot(b, n)) - (corners @ n).min()
        if depth < best:
            best, normal = depth, n
    return best, normal


@pytest.mark.parametrize("corner", [(0.202, 0.097), (0.2005, 0.0992), (0.1985, 0.0996)])
def test_polygon_corner_at_a_wall_corner_against_separating_axes(corner):
    """A diamond's lowest corner pressed into the convex corner of a step (top segment
    to the left, side going down: their shared end point E): one contact, whose depth
    and normal are those of the segment of largest separating-axis overlap."""
    sim = box2d(dt=1e-6, gravity=(0, 0, 0))
    m = sim.material("m", density=1000.0, kn=1e4)
    E = np.array([0.2, 0.1])
    sim.add_segments([[0.1, 0.1], E], [E, [0.2, 0.0]], m)
    turn = 0.3
    shape = P.regular_polygon(4, 0.02, turn)
    lowest = shape.vertices2d[np.argmin(shape.vertices2d[:, 1])]
    centre = np.array(corner) - lowest
    sim.add_polygons([centre], shape, m)
    sim.step()
    c = sim.contacts()
    corners = centre + shape.vertices2d
    expect = [sat_overlap(corners, np.array(a), np.array(b))
              for a, b in (([0.1, 0.1], E), (E, [0.2, 0.0]))]
    depth, normal = max(expect, key=lambda e: e[0])
    assert list(c["kind"]) == ["phseg"]
    assert c["overlap"][0] == pytest.approx(depth, rel=1e-9)
    assert np.abs(c["normal"][0, :2] - normal).max() < 1e-9
    assert c["normal"][0, 2] == 0.0 and c["point"][0, 2] == 0.0
    assert -sim.segment_forces().sum(axis=0)[:2] == pytest.approx(1e4 * depth * normal,
                                                                   rel=1e-9)


def test_isolated_point_in_a_polygon():
    """An isolated boundary point (add_points) inside a turned square near its side: the
    point kind's depth is its distance to the nearest side, along that side's normal."""
    sim = box2d(dt=1e-6, gravity=(0, 0, 0))
    m = sim.material("m", density=1000.0, kn=1e4)
    sim.add_points([[0.2, 0.1]], m)
    shape = P.regular_polygon(5, 0.03, 0.2)
    centre = np.array([0.2, 0.1]) + [0.004, 0.0215]
    sim.add_polygons([centre], shape, m)
    sim.step()
    c = sim.contacts()
    pt = np.array([0.2, 0.1])
    depth, normal = sat_overlap(centre + shape.vertices2d, pt, pt)
    assert list(c["kind"]) == ["phpoint"]
    assert c["overlap"][0] == pytest.approx(depth, rel=1e-9)
    assert np.abs(c["normal"][0, :2] - normal).max() < 1e-9
    assert np.abs(sim.point_forces()[0, :2] + 1e4 * depth * normal).max() < 1e-9 * 1e4 * depth


def test_bad_contact_model_is_refused():
    """Polygons against segments take the vertex-sum (Minkowski) law only."""
    sim = box2d()
    m = sim.material("m", density=1000.0, kn=1e4)
    v = sim.material("v", density=1000.0, kn=1e4, contact_model="volume",
                     volume_stiffness=1e6)
    sim.add_polygons([[0.2, 0.2]], SQ, m)
    with pytest.raises(pdem.InputError, match="materials 'v' \\(segments\\) and 'm' "
                       "\\(polygons\\) use contact_model 'volume'/'minkowski'"):
        sim.add_segments([[0.1, 0.0]], [[0.3, 0.0]], v)
    sim2 = box2d()
    m2 = sim2.material("m", density=1000.0, kn=1e4, contact_model="common_plane")
    sim2.add_segments([[0.1, 0.0]], [[0.3, 0.0]], sim2.material("s", density=1.0, kn=1e4))
    with pytest.raises(pdem.InputError, match="take 'minkowski' only"):
        sim2.add_polygons([[0.2, 0.2]], SQ, m2)


def test_format_10_checkpoint_still_loads(tmp_path):
    """A checkpoint of format 10 (no polygon kinds) of disks on segments restarts and
    continues as the straight run, bit for bit."""
    import h5py

    def scene():
        sim = box2d(dt=2e-4)
        m = sim.material("m", density=1000.0, kn=1e4, friction=0.3, restitution=0.3)
        sim.add_segments([[0.05, 0.0], [0.2, 0.0]], [[0.2, 0.0], [0.35, 0.0]], m)
        sim.add_spheres([[0.15, 0.03], [0.25, 0.05]], [0.02, 0.015], m,
                        velocities=[[0.3, 0.0], [-0.2, 0.0]])
        sim.run(300)
        return sim
    straight = scene()
    straight.run(200)
    path = str(tmp_path / "v10.h5")
    scene().checkpoint(path)
    with h5py.File(path, "a") as f:
        for k in ("phseg", "phpoint"):
            del f["interactions/" + k]
        f.attrs["version"] = 10
    resumed = pdem.restart(path, comm=MPI.COMM_SELF)
    resumed.run(200)
    p, q = straight.particles(), resumed.particles()
    for k in p:
        assert np.array_equal(p[k], q[k]), k


@pytest.mark.slow
def test_square_overhanging_a_free_end_rests_on_it():
    """A square face down with its centroid 5 mm inside the free end of a lone segment
    (half of it overhanging): statics says it rests, supported by its inner corner and
    the segment's end (the end inside the polygon joins the vertex sums); the load equals
    the weight, acting under the centroid (zero moment about it). Without the end's
    term the inner corner alone would hold it and it would tip off."""
    sim = box2d(dt=1e-4)
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.5, restitution=0.1)
    sim.add_segments([[0.05, 0.1]], [[0.2, 0.1]], m, end_points=False)
    sim.add_polygons([[0.195, 0.1 + 0.0199]], SQ, m)
    sim.run(6000)                   # (a slow rocking mode decays: loose tolerances)
    p, c = sim.particles(), sim.contacts()
    W = p["mass"][0] * G
    assert np.abs(p["velocity"][0]).max() < 1e-4 and abs(p["angular_velocity"][0, 2]) < 2e-3
    theta = 2 * np.arctan2(p["orientation"][0, 3], p["orientation"][0, 0])
    assert -0.1 < theta < 0.0                                 # dips to the end, no tipping
    assert abs(p["position"][0, 0] - 0.195) < 2e-3
    assert -sim.segment_forces()[0, 1] == pytest.approx(W, rel=1e-3)
    assert list(c["kind"]) == ["phseg"]
    assert c["point"][0, 0] == pytest.approx(p["position"][0, 0], abs=2e-5)
