"""Ellipses (2D) against boundary segments and their end points (issue 16 with seed
003's boundary elements): a segment line = an infinite line, two segments joined = one
(no bump at the joint), the end point's depth against a brute-force distance."""
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import pdem

G = 9.81


def box2d(dt=2e-4, gravity=(0, -G, 0)):
    return pdem.Simulation(pdem.Domain((0, 0), (0.4, 0.4), periodic=(True, False), dim=2),
                           dt=dt, gravity=gravity)


def dropped(wall, steps=6000, friction=0.5):
    """test_ellipsoids' dropped ellipse (spinning, tilted) on a line, or on segments
    (friction=0: elastic and frictionless)."""
    sim = box2d()
    m = sim.material("m", density=1000.0, kn=1e6, friction=friction,
                     restitution=0.05 if friction else 1.0,
                     rolling_friction=0.02 if friction else 0.0, rolling_stiffness=0.3)
    if wall == "plane":
        sim.add_plane((0, 0, 0), (0, 1, 0), m)
    elif wall == "segment":
        sim.add_segments([[0.05, 0.0]], [[0.35, 0.0]], m)
    else:                                   # two segments joined under the ellipse
        sim.add_segments([[0.05, 0.0], [0.2, 0.0]], [[0.2, 0.0], [0.35, 0.0]], m)
    sim.add_ellipses([[0.21, 0.05]], [[0.03, 0.01]], m, angles=1.0, angular_velocities=3.0)
    feet = []
    for _ in range(steps // 100):
        sim.run(100)
        c = sim.contacts()
        feet += list(c["point"][:, 0])
    return sim, np.array(feet)


@pytest.mark.parametrize("wall,friction", [("segment", 0.5), ("joined", 0.0)])
def test_ellipse_on_segments_follows_the_line(wall, friction):
    """Bounces, spins and comes to rest: the same motion as on an infinite line to
    round-off, the segment loads = the line's load. Two joined segments
    under it: no bump at the joint (the end point acts only outside both spans), the
    contact passing from one segment to the other (elastic and frictionless here: a
    contact's history, tangential, rolling and the damping's rate at formation, stays
    with its segment's row, as for spheres)."""
    (line, _), (sim, feet) = dropped("plane", friction=friction), dropped(wall, friction=friction)
    p, q = line.particles(), sim.particles()
    for k in ("position", "orientation", "velocity", "angular_velocity"):
        assert np.abs(p[k] - q[k]).max() < 1e-12, k
    assert np.abs(sim.segment_forces().sum(axis=0) - line.plane_forces()[0]).max() < 1e-12
    assert not np.any(sim.point_forces())
    assert set(sim.contacts()["kind"]) <= {"ellseg"}
    if wall == "joined":
        assert feet.min() < 0.2 < feet.max(), (feet.min(), feet.max())


def test_ellipse_at_a_segment_end_against_brute_force():
    """An ellipse pressed on the end point of a segment, beyond its span: the contact is
    the point's, its overlap the depth of the point in the ellipse (the distance to
    the boundary, minimised over the boundary by scipy), its normal along the
    boundary normal there."""
    sim = box2d(dt=1e-6, gravity=(0, 0, 0))
    m = sim.material("m", density=1000.0, kn=1e6)
    sim.add_segments([[0.05, 0.1]], [[0.2, 0.1]], m)
    a, b, th = 0.03, 0.012, 0.5
    centre = np.array([0.222, 0.107])   # the contact point c2 beyond the span
    sim.add_ellipses([centre], [[a, b]], m, angles=th)
    sim.step()
    c = sim.contacts()
    assert list(c["kind"]) == ["ellpoint"]
    R = np.array([[math.cos(th), -math.sin(th)], [math.sin(th), math.cos(th)]])
    end = np.array([0.2, 0.1])

    def dist(phi):
        return np.linalg.norm(centre + R @ [a * math.cos(phi), b * math.sin(phi)] - end)

    grid = np.linspace(0, 2 * math.pi, 20001)
    k = np.argmin([dist(t) for t in grid])
    res = minimize_scalar(dist, bounds=(grid[max(k - 1, 0)], grid[min(k + 1, 20000)]),
                          method="bounded", options={"xatol": 1e-14})
    inside = np.sum((R.T @ (end - centre)) ** 2 / [a * a, b * b]) < 1
    assert inside
    assert c["overlap"][0] == pytest.approx(res.fun, rel=1e-9, abs=1e-15)
    e = centre + R @ [a * math.cos(res.x), b * math.sin(res.x)]
    # n pushes the ellipse off the point: along end - e (e: the nearest boundary point)
    assert np.allclose(c["normal"][0, :2], (end - e) / np.linalg.norm(e - end), atol=1e-6)
    assert np.abs(sim.point_forces()).sum() > 0 and not np.any(sim.segment_forces())


def test_segments_with_ellipsoids_in_3d_are_refused():
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1, 1, 1)), dt=1e-4)
    sim.material("m", density=1000.0, kn=1e3)
    sim.add_ellipsoids([[0.5, 0.5, 0.5]], [[0.1, 0.05, 0.02]], "m")
    with pytest.raises(pdem.InputError, match="add_segments: contacts of ellipsoid particles "
                       "with boundary segments are not available"):
        sim.add_segments([[0.1, 0.1, 0.1]], [[0.2, 0.1, 0.1]], "m")
