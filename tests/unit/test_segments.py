"""Boundary segments and zero-radius boundary points (seed 003) in pdem.Simulation,
with both schemes: explicit force laws (a segment or point contact is the sphere-plane
law, the plane through the foot point q normal to x - q) and NSCD; add_spheres(masses=).
Expected values come from closed forms (static overlap, rolling and sliding down an
incline, a sphere on two rods, the seed's velocity correction), from a plain Python
transcription of seed 003's detection and sweeps, from another route that must give
the same numbers (a plane, a zero-radius disk of infinite mass,
a restart) and from the weight of a bed at rest."""
import math
import re
import warnings

import numpy as np
import pytest

import pdem
from pdem.nscd import ConvergenceWarning

G = 9.81
R, RHO, KN = 0.01, 1000.0, 1e5
MASS = math.pi * R ** 2 * RHO                    # disk, per unit thickness


def explicit(lo=(-1.0, -1.0), hi=(2.0, 1.0), dt=1e-4, gravity=(0.0, -G, 0.0), max_overlap=0.5,
             **law):
    """A 2D explicit simulation with one Hooke material "m" (kn = KN unless given)."""
    sim = pdem.Simulation(pdem.Domain(lo, hi, dim=2), dt, gravity=gravity, threads=1,
                          max_overlap=max_overlap)
    law.setdefault("kn", KN)
    sim.material("m", RHO, **law)
    return sim


def nscd(lo=(-1.0, -1.0), hi=(2.0, 1.0), dt=1e-3, solver="nlgs", tol=1e-12, alert=0.01,
         friction=0.0, **kw):
    sim = pdem.Simulation(pdem.Domain(lo, hi, dim=2), dt, gravity=(0.0, -G, 0.0), threads=1,
                          skin=alert, scheme=pdem.NSCD(solver, tol=tol, alert=alert), **kw)
    sim.material("m", RHO, friction=friction)
    return sim


def rows(sim, kind):
    c = sim.contacts()
    k = c["kind"] == kind
    return {f: v[k] for f, v in c.items()}


def assert_close(a, b, scale, rtol=1e-12):
    """|a - b| <= rtol (|b| + scale) elementwise: equal to rounding, where `scale` is
    the size of the quantity (components that should be 0 differ by rounding only)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    err = np.abs(a - b) - rtol * (np.abs(b) + scale)
    assert np.all(err <= 0.0), "max |a - b| = %g (scale %g)" % (np.max(np.abs(a - b)), scale)


# ---------------------------------------------------------------- explicit scheme
def test_disk_settles_on_segment_at_static_overlap():
    """Hooke law, damped (e = 0.1): a disk dropped on a horizontal segment comes to
    rest with overlap m g / k_n; the segment carries its weight, the end points
    nothing."""
    sim = explicit(restitution=0.1, friction=0.5)
    seg = sim.add_segments([(-0.5, 0.0)], [(0.5, 0.0)], "m")
    assert list(seg) == [0]
    sim.add_spheres([(0.013, R + 0.002)], R, "m")
    sim.run(steps=1000)                                    # 0.1 s, ~ 40 damping times
    delta = MASS * G / KN                                  # 3.08e-5 m, 0.3 % of R
    p = sim.particles()
    assert p["position"][0, 1] == pytest.approx(R - delta, abs=1e-6 * delta)
    assert p["position"][0, 0] == pytest.approx(0.013, abs=1e-12)
    assert np.all(np.abs(p["velocity"][0]) < 1e-8)
    c = sim.contacts()
    assert list(c["kind"]) == ["segment"]
    assert c["wall"][0] == 0 and c["id1"][0] == -1 and c["id2"][0] == 0
    assert c["overlap"][0] == pytest.approx(delta, rel=1e-6)
    assert_close(c["force"][0], (0.0, MASS * G, 0.0), MASS * G, rtol=1e-6)
    assert_close(c["normal"][0], (0.0, 1.0, 0.0), 1.0)
    assert_close(sim.segment_forces(), [(0.0, -MASS * G, 0.0)], MASS * G, rtol=1e-6)
    assert np.array_equal(sim.point_forces(), np.zeros((2, 3)))


def _thrown(wall, steps=2000):
    """A disk dropped 5 mm onto a floor at y = 0.1 with v_x = 0.8 m/s and backspin
    30 rad/s (friction 0.3, e = 0.5): it bounces, slides, then rolls (from x = 0 to
    0.11). wall: 'segment' (from x = -0.1 to 0.5) or 'plane'. History of (position,
    velocity, angular velocity, force, torque, contact force, wall force) every step."""
    sim = explicit(lo=(-1.0, -0.5), hi=(3.0, 1.0), restitution=0.5, friction=0.3)
    if wall == "segment":
        sim.add_segments([(-0.1, 0.1)], [(0.5, 0.1)], "m")
    else:
        sim.add_plane((0.0, 0.1, 0.0), (0.0, 1.0, 0.0), "m")
    sim.add_spheres([(0.0, 0.1 + R + 0.005)], R, "m", velocities=[(0.8, 0.0)],
                    angular_velocities=[30.0])
    out = []
    for _ in range(steps):
        sim.step()
        p = sim.particles()
        c = rows(sim, wall)
        load = sim.segment_forces() if wall == "segment" else sim.plane_forces()
        out.append([p["position"][0], p["velocity"][0], p["angular_velocity"][0],
                    p["force"][0], p["torque"][0],
                    c["force"][0] if len(c["force"]) else np.zeros(3), load[0]])
    if wall == "segment":
        assert np.array_equal(sim.point_forces(), np.zeros((2, 3)))
    return [np.array(a) for a in zip(*out)]


def test_disk_on_long_segment_moves_as_on_a_plane():
    """The segment contact is the sphere-plane law with the plane through the foot
    point: on a horizontal segment the disk's whole trajectory (bounce, sliding,
    rolling), its contact force and the wall load are the plane's to rounding."""
    seg, plane = _thrown("segment"), _thrown("plane")
    x, v, w, f, t, fc, load = plane
    # the run is what it claims: a bounce, sliding with friction, then rolling
    assert v[:, 1].max() > 0.1
    assert np.any(np.abs(fc[:, 0]) > 0.2 * MASS * G)
    assert abs(v[-1, 0] + w[-1, 2] * R) < 1e-2 * abs(v[-1, 0])      # slip was 1.1 m/s
    assert np.count_nonzero(fc[:, 1]) > 1000
    for a, b, scale in zip(seg, plane, (1.0, 1.0, 100.0, MASS * G, MASS * G * R, MASS * G,
                                        MASS * G)):
        assert_close(a, b, scale)


@pytest.mark.parametrize("make", ["explicit", "nscd"])
def test_joint_of_collinear_segments_is_no_bump(make):
    """A frictionless disk slides at 0.5 m/s over the joint of two collinear segments
    whose shared end point was added by both: it moves exactly as over one long
    segment (the end disk acts only outside the segments' spans), without the doubled
    normal force of a segment and a point at the joint."""
    runs = []
    for walls in ([(-0.5, 0.0)], [(0.5, 0.0)]), ([(-0.5, 0.0), (0.0, 0.0)], [(0.0, 0.0),
                                                                           (0.5, 0.0)]):
        sim = explicit(restitution=0.5, friction=0.0) if make == "explicit" else nscd()
        sim.add_segments(*walls, "m")
        sim.add_spheres([(-0.02, R - MASS * G / KN)], R, "m", velocities=[(0.5, 0.0)])
        force = []
        for _ in range(800 if make == "explicit" else 80):       # 0.08 s: x from -0.02 to 0.02
            sim.step()
            force.append(sim.particles()["force"][0].copy())
        runs.append((sim.particles(), np.array(force), sim))
    (one, f1, _), (two, f2, sim) = runs
    assert two["position"][0, 0] > 0.015                        # crossed the joint
    assert len(sim.points) == 3 and np.array_equal(sim.point_forces(), np.zeros((3, 3)))
    assert_close(f2, f1, MASS * G)
    assert_close(two["position"], one["position"], 1.0)
    assert_close(two["velocity"], one["velocity"], 1.0)


def _resting_on_end_point(angle_deg, end_points=True):
    """A blocked disk (gravity on) pressing with overlap 1e-4 m on the end (1, 0) of
    the segment (0, 0)-(1, 0), its centre at `angle_deg` from the segment's direction
    (s_t > 1)."""
    sim = explicit(restitution=0.2, friction=0.5)
    sim.add_segments([(0.0, 0.0)], [(1.0, 0.0)], "m", end_points=end_points)
    a = math.radians(angle_deg)
    n = np.array([math.cos(a), math.sin(a), 0.0])
    overlap = 1e-4
    x = np.array([1.0, 0.0, 0.0]) + (R - overlap) * n
    ids = sim.add_spheres([x[:2]], R, "m")
    sim.set_velocity(ids, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), block=True)
    return sim, n, overlap


@pytest.mark.parametrize("angle", [30.0, 60.0])
def test_disk_past_the_end_pushes_on_the_end_point(angle):
    """Past x1 (s_t > 1) only the end point touches the disk: a contact of kind
    'point' whose force k_n overlap is along (x - p)/|x - p|, not along the segment's
    normal; the force on the point is its opposite."""
    sim, n, overlap = _resting_on_end_point(angle)
    sim.run(steps=20)
    c = sim.contacts()
    assert list(c["kind"]) == ["point"]
    assert c["id1"][0] == -1 and c["id2"][0] == 0
    expected = KN * overlap * n                              # elastic; no relative velocity
    assert_close(c["force"][0], expected, KN * overlap)
    assert_close(c["normal"][0], n, 1.0)
    loads = sim.point_forces()
    assert loads.shape == (2, 3)
    assert np.array_equal(np.flatnonzero(np.any(loads != 0.0, axis=1)), [c["wall"][0]])
    assert_close(loads[c["wall"][0]], -expected, KN * overlap)
    assert np.array_equal(sim.segment_forces(), np.zeros((1, 3)))


def _pivot(body, steps=1000, eps=1e-9):
    """A disk released at 10 degrees from the top of a fixed zero-radius body at the
    origin (friction 0.8): it rolls over it and leaves at about 56 degrees. body:
    'point' (add_points) or 'disk' (a blocked disk of radius eps and mass 1e12, the
    pair law). History of position, velocity, spin, contact force and count."""
    sim = explicit(dt=1e-4, restitution=0.5, friction=0.8, max_overlap=1e9)
    a = math.radians(10.0)
    x = (R - MASS * G / KN) * np.array([math.sin(a), math.cos(a)])
    if body == "point":
        sim.add_points([(0.0, 0.0)], "m")
        sim.add_spheres([x], R, "m")
    else:
        fixed = sim.add_spheres([(0.0, 0.0), x * (1 + eps / np.linalg.norm(x))], [eps, R], "m",
                                masses=[1e12, MASS])[0]
        sim.set_velocity(fixed, (0, 0, 0), (0, 0, 0), block=True)
    out = []
    for _ in range(steps):
        sim.step()
        p = sim.particles()
        c = sim.contacts()
        f = c["force"][0, :2] if len(c["force"]) else np.zeros(2)
        out.append(np.r_[p["position"][-1, :2], p["velocity"][-1, :2],
                         p["angular_velocity"][-1, 2], f, len(c["force"])])
    return np.array(out)


def test_point_is_a_fixed_disk_of_zero_radius():
    """Seed 003's boundary disks have radius 0 and infinite mass: a disk rolling over
    a point (the contact normal turning by 46 degrees, with friction and tangential
    history) moves as over a blocked disk of radius 1e-9 and mass 1e12 with the pair
    law, to ~ 1e-9 / r."""
    point, disk = _pivot("point"), _pivot("disk")
    assert np.array_equal(point[:, -1], disk[:, -1])         # the same contact steps
    touching = point[:, -1] > 0
    assert 900 < np.count_nonzero(touching) < 1000            # it leaves the point
    x_leave = point[touching][-1, :2]
    assert math.degrees(math.atan2(x_leave[0], x_leave[1])) > 45.0
    scale = np.abs(disk).max(axis=0)
    assert np.all(np.abs(point - disk) <= 1e-5 * scale)


@pytest.mark.parametrize("offset,kind", [(-0.3, "segment"), (0.1, "point"), (0.1, None)])
def test_disk_falling_just_past_the_end(offset, kind):
    """A disk dropped (1 mm) at x = 1 + offset R onto the segment (0, 0)-(1, 0): inside
    the span (s_t < 1) the segment stops it, just past the end (s_t = 1 + 1e-3) the
    end point does, and without end points (kind None) nothing: it falls freely
    through the level of the segment, v = -g t."""
    sim = explicit(dt=1e-4, restitution=0.1, friction=0.5)
    sim.add_segments([(0.0, 0.0)], [(1.0, 0.0)], "m", end_points=kind is not None)
    sim.add_spheres([(1.0 + offset * R, R + 0.001)], R, "m")
    seen = set()
    for _ in range(300 if kind else 1000):      # landing after 14 ms; free fall: 49 mm
        sim.step()
        seen |= set(sim.contacts()["kind"])
    p = sim.particles()
    if kind is None:
        assert seen == set()
        assert p["velocity"][0, 1] == pytest.approx(-G * sim.time, rel=1e-12)
        assert p["position"][0, 1] < -3 * R
    else:
        assert seen == {kind}
        assert p["position"][0, 1] > 0.9 * R
        assert abs(p["velocity"][0, 1]) < 0.05


def _incline(mu, steps=3000, dt=1e-4, theta=20.0):
    """A disk released on a segment inclined by theta degrees (friction mu): its
    velocity along the slope and its spin every step."""
    th = math.radians(theta)
    down = np.array([math.cos(th), -math.sin(th), 0.0])
    up = np.array([math.sin(th), math.cos(th), 0.0])
    sim = explicit(lo=(-0.1, -0.5), hi=(0.6, 0.2), dt=dt, restitution=0.3, friction=mu)
    sim.add_segments([(0.0, 0.0)], [tuple(0.5 * down[:2])], "m")
    x = 0.02 * down + (R - MASS * G * math.cos(th) / KN) * up
    sim.add_spheres([x[:2]], R, "m")
    out = []
    for k in range(steps):
        sim.step()
        p = sim.particles()
        out.append((sim.time, p["velocity"][0] @ down, p["angular_velocity"][0, 2]))
        if k % 10 == 0:
            assert set(sim.contacts()["kind"]) == {"segment"}       # never leaves it
    return np.array(out), th


def test_disk_rolls_down_an_inclined_segment_at_two_thirds_g_sin():
    """No slip (mu = 0.8 > tan(theta)/3): a = g sin(theta) / (1 + I / m r^2) =
    2/3 g sin(theta) for a disk (I = m r^2 / 2), and v = -omega r."""
    out, th = _incline(0.8)
    t, v, w = out.T
    a = (v[-1] - v[500]) / (t[-1] - t[500])                   # after 50 ms of transient
    assert a == pytest.approx(2.0 / 3.0 * G * math.sin(th), rel=5e-3)
    assert -w[-1] * R == pytest.approx(v[-1], rel=5e-3)


def test_disk_slides_down_an_inclined_segment_with_coulomb_friction():
    """Sliding (mu = 0.05 < tan(theta)/3 = 0.12): a = g (sin - mu cos), and the disk
    spins up at d omega/dt = -mu m g cos(theta) l / I, l = r - delta/2 the lever of
    the friction force (the contact point in the middle of the overlap delta =
    m g cos(theta) / k_n): -2 mu g cos(theta) (r - delta/2) / r^2."""
    mu = 0.05
    out, th = _incline(mu)
    t, v, w = out.T
    a = (v[-1] - v[500]) / (t[-1] - t[500])
    assert a == pytest.approx(G * (math.sin(th) - mu * math.cos(th)), rel=1e-9)
    alpha = (w[-1] - w[500]) / (t[-1] - t[500])
    delta = MASS * G * math.cos(th) / KN
    assert alpha == pytest.approx(-2.0 * mu * G * math.cos(th) * (R - delta / 2) / R ** 2,
                                  rel=1e-9)
    assert v[-1] + w[-1] * R > 0.1 * v[-1]                    # still slipping


def test_sphere_rests_on_two_rods_in_3d():
    """3D segments are rods of zero thickness: a sphere (r = 10 mm) at rest across two
    parallel rods 2a = 12 mm apart sits at the height z where the two contact forces
    k_n delta along (x - q)/|x - q| (delta = r - sqrt(a^2 + z^2)) carry its weight:
    2 k_n delta z / (r - delta) = m g (solved here by bisection). Frictionless: with
    friction, tangential springs loaded while it settles would carry part of it."""
    kn, a = 1e3, 0.006
    sim = pdem.Simulation(pdem.Domain((-1, -1, -1), (1, 1, 1)), 1e-4, gravity=(0, 0, -G),
                          threads=1)
    sim.material("m", RHO, kn=kn, restitution=0.1, friction=0.0)
    sim.add_segments([(-0.5, -a, 0.0), (-0.5, a, 0.0)], [(0.5, -a, 0.0), (0.5, a, 0.0)], "m")
    mass = 4.0 / 3.0 * math.pi * R ** 3 * RHO
    lo, hi = 0.0, math.sqrt(R * R - a * a)                # contact force 0 at z = hi
    for _ in range(200):
        z = 0.5 * (lo + hi)
        delta = R - math.sqrt(a * a + z * z)
        lo, hi = (z, hi) if 2 * kn * delta * z / (R - delta) > mass * G else (lo, z)
    sim.add_spheres([(0.02, 0.0, z + 1e-4)], R, "m")
    sim.run(steps=600)
    p = sim.particles()
    assert p["position"][0, 2] == pytest.approx(z, abs=1e-6 * delta)
    assert p["position"][0, 0] == pytest.approx(0.02, abs=1e-12)
    assert p["position"][0, 1] == pytest.approx(0.0, abs=1e-12)
    c = sim.contacts()
    assert list(c["kind"]) == ["segment", "segment"] and list(c["wall"]) == [0, 1]
    for k, side in enumerate((-1.0, 1.0)):
        n = np.array([0.0, -side * a, z]) / (R - delta)
        assert_close(c["force"][k], kn * delta * n, kn * delta, rtol=1e-4)
    assert_close(sim.segment_forces().sum(axis=0), (0.0, 0.0, -mass * G), mass * G, rtol=1e-6)
    assert np.array_equal(sim.point_forces(), np.zeros((4, 3)))


# ---------------------------------------------------------------- NSCD
def _nscd_fall(x0, v0, segment, end_points=True, steps=60, dt=1e-3):
    """A frictionless grain falling from x0 at v0 onto `segment` ((x0, x1)): the state
    (position after the drift, velocity after the solve) and the contacts, every step."""
    sim = nscd(dt=dt)
    sim.add_segments([segment[0]], [segment[1]], "m", end_points=end_points)
    sim.add_spheres([x0], R, "m", velocities=[v0])
    out = []
    for _ in range(steps):
        sim.step()
        p = sim.particles()
        out.append((p["position"][0].copy(), p["velocity"][0].copy(), sim.contacts()))
    return out


def test_nscd_grain_stops_on_segment_at_the_seed_correction():
    """Seed 003: dv_n = max(0, -v_n - max(0, d)/dt). The grain (v_y = -1 m/s,
    v_x = 0.3, no friction) is a potential contact for several steps before it
    arrives (alert 10 mm), untouched; in the step in which it would cross, its normal
    velocity becomes -d/dt (d: the gap after the drift), so that the next drift lands
    it exactly on the segment, where it stays; v_x never changes."""
    dt = 1e-3
    out = _nscd_fall((0.0, R + 0.0105), (0.3, -1.0), ((-0.5, 0.0), (0.5, 0.0)), dt=dt)
    vy_free = -1.0
    hit = None
    for k, (x, v, c) in enumerate(out):
        vy_free -= G * dt
        assert v[0] == pytest.approx(0.3, abs=1e-15)
        gap = x[1] - R
        if hit is None and vy_free * dt < -gap:             # crosses within this step
            hit = k
            assert gap > 0.0
            assert v[1] == pytest.approx(-gap / dt, rel=1e-12)
            assert list(c["kind"]) == ["segment"] and c["wall"][0] == 0
        elif hit is None:                                   # free fall, contact or not
            assert v[1] == pytest.approx(vy_free, rel=1e-12)
        else:
            assert x[1] == pytest.approx(R, abs=1e-15)
            assert v[1] == pytest.approx(0.0, abs=1e-12)
    assert hit is not None and 5 < hit < 20         # within the alert for 5 steps before


def test_nscd_end_point_catches_a_grain_past_the_end():
    """A grain falling at s_t > 1 (x = 1 + R/2) is caught by the end point (1, 0):
    normal n = (x - p)/|x - p|, the seed's correction along n, tangential velocity
    kept: v+ = v- + max(0, -v-.n - d/dt) n with v- = previous v + g dt."""
    dt = 1e-3
    out = _nscd_fall((1.0 + 0.5 * R, 0.9 * R + 0.004), (0.0, -1.0), ((0.0, 0.0), (1.0, 0.0)),
                     dt=dt, steps=20)
    p = np.array([1.0, 0.0, 0.0])
    caught = 0
    for k in range(1, len(out)):
        x, v, c = out[k]
        v_free = out[k - 1][1] + np.array([0.0, -G * dt, 0.0])
        d = np.linalg.norm(x - p) - R
        n = (x - p) / np.linalg.norm(x - p)
        expected = v_free + max(0.0, -(v_free @ n) - max(0.0, d) / dt) * n
        assert_close(v, expected, 1.0)
        assert "segment" not in set(c["kind"])
        if not np.array_equal(v, v_free):
            caught += 1
            assert list(c["kind"]) == ["point"]
            assert_close(c["normal"][0], n, 1.0)
    assert caught >= 2
    # the grain slides off the point sideways (frictionless): away from the segment
    assert out[-1][1][0] > 0.0 and out[-1][0][1] > 0.0


def _funnel_segments():
    """A V funnel with a 0.1 wide opening above a floor, between two side walls."""
    x0 = [(0.0, 0.45), (0.55, 0.2), (0.0, 0.0), (0.0, 0.0), (1.0, 0.0)]
    x1 = [(0.45, 0.2), (1.0, 0.45), (1.0, 0.0), (0.0, 2.5), (1.0, 2.5)]
    return x0, x1


def _funnel_grains(seed=1):
    rng = np.random.default_rng(seed)
    gx, gy = np.meshgrid(np.linspace(0.1, 0.9, 10), np.linspace(0.55, 1.05, 6))
    x = np.column_stack([gx.ravel(), gy.ravel()]) + rng.uniform(-0.005, 0.005, (60, 2))
    return x, rng.uniform(0.02, 0.03, 60)


def _seed_contacts(x, r, segments, points, alert):
    """Seed 003's potential contacts, by brute force, in the solve order (i, kind, j):
    (kind, i, j, normal, gap) with kind 0 pair (i < j), 1 segment, 2 point. Normals
    are scaled by 1/|n| (pdem's rounding; n / |n| differs in the last bit)."""
    out = []
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            s = x[i] - x[j]
            dist = math.sqrt(s[0] * s[0] + s[1] * s[1])
            if dist - r[i] - r[j] < alert:
                out.append((0, i, j, s * (1.0 / dist), dist - r[i] - r[j]))
        for k, (a, b) in enumerate(segments):
            t, s = b - a, x[i] - a
            st = (s[0] * t[0] + s[1] * t[1]) / (t[0] * t[0] + t[1] * t[1])
            if 0.0 <= st <= 1.0:
                n = s - st * t                            # the seed's n = s - s_t t
                dist = math.sqrt(n[0] * n[0] + n[1] * n[1])
                if dist - r[i] < alert:
                    out.append((1, i, k, n * (1.0 / dist), dist - r[i]))
        for k, c in enumerate(points):
            if _covered(x[i], c, segments):
                continue
            s = x[i] - c
            dist = math.sqrt(s[0] * s[0] + s[1] * s[1])
            if dist - r[i] < alert:
                out.append((2, i, k, s * (1.0 / dist), dist - r[i]))
    return out


def _covered(xi, c, segments):
    """pdem's rule for the end disks (the seed's 'useful where s_t < 0 or s_t > 1'): a
    point acts only on a grain whose foot lies outside the span of every segment
    ending at it (so the joint of two segments is no bump)."""
    for a, b in segments:
        if (a == c).all() or (b == c).all():
            t, s = b - a, xi - a
            st = (s[0] * t[0] + s[1] * t[1]) / (t[0] * t[0] + t[1] * t[1])
            if 0.0 <= st <= 1.0:
                return True
    return False


def _seed_sweep(contacts, v, m, dt, jacobi):
    """One sweep of seed 003 (NLGS: each correction applied at once; Jacobi: from the
    start velocities, summed per grain in contact order, applied at the end); returns
    the largest correction."""
    target = np.zeros_like(v) if jacobi else v
    v_from = v.copy() if jacobi else v
    worst = 0.0
    for kind, i, j, n, d in contacts:
        if kind == 0:
            vn = (v_from[i, 0] - v_from[j, 0]) * n[0] + (v_from[i, 1] - v_from[j, 1]) * n[1]
            W = (m[i] + m[j]) / (m[i] * m[j])
        else:
            vn = v_from[i, 0] * n[0] + v_from[i, 1] * n[1]
            W = 1.0 / m[i]
        dvn = max(0.0, -vn - max(0.0, d) / dt)
        worst = max(worst, dvn)
        target[i] += dvn / (W * m[i]) * n
        if kind == 0:
            target[j] -= dvn / (W * m[j]) * n
    if jacobi:
        v += target
    return worst


@pytest.mark.parametrize("solver", ["nlgs", "jacobi"])
def test_nscd_steps_are_seed_formulas(solver):
    """Frictionless NSCD steps of Simulation (drift, v += g dt, potential contacts,
    sweeps until every correction < tol/dt) against a plain Python transcription of
    seed 003 (brute-force detection with n = s - s_t t, 0 <= s_t <= 1, the boundary
    disks outside the spans of their segments, and the formula dv_n = max(0, -v_n - max(0, d)/dt)): the same bits, step
    by step, for 20 disks falling into the funnel."""
    x, r = _funnel_grains(seed=3)
    x, r = x[:20].copy(), r[:20].copy()           # the two lowest rows
    x0, x1 = _funnel_segments()
    segments = np.array([x0, x1], float).transpose(1, 0, 2)
    points = np.unique(segments.reshape(-1, 2), axis=0)[::-1].copy()
    dt, tol, alert = 1e-3, 1e-9, 0.01
    sim = pdem.Simulation(pdem.Domain((-0.1, -0.1), (1.1, 2.6), dim=2), dt,
                          gravity=(0, -G, 0), scheme=pdem.NSCD(solver, tol=tol, alert=alert),
                          skin=0.01, threads=1)
    sim.material("g", 1000.0, friction=0.0)
    sim.add_spheres(x, r, "g")
    sim.add_segments(x0, x1, "g", end_points=False)
    assert list(sim.add_points(points, "g")) == list(range(len(points)))
    m = np.pi * r ** 2 * 1000.0
    v = np.zeros_like(x)
    kinds, sweeps = set(), 0
    for step in range(300):
        sim.step()
        x += v * dt
        v[:, 1] += -G * dt
        contacts = _seed_contacts(x, r, segments, points, alert)
        kinds |= {c[0] for c in contacts}
        if contacts:
            for it in range(1, 1001):
                if _seed_sweep(contacts, v, m, dt, solver == "jacobi") < tol / dt:
                    break
            assert sim.scheme.sweeps == it, step
            sweeps += it
        p = sim.particles()
        assert np.array_equal(p["position"][:, :2], x), step
        assert np.array_equal(p["velocity"][:, :2], v), step
    assert kinds == {0, 1, 2} and sweeps > 500


# ---------------------------------------------------------------- wall loads
def _slotted_box(sim, material, width=1.0, slot=0.02):
    """A box of segments (with end points), `width` wide and 1 high, whose floor has
    a slot `slot` wide in its middle: a disk over the slot rests on the slot's two end
    points."""
    c = 0.5 * width
    x0 = [(0.0, 0.0), (c + 0.5 * slot, 0.0), (0.0, 0.0), (width, 0.0)]
    x1 = [(c - 0.5 * slot, 0.0), (width, 0.0), (0.0, 1.0), (width, 1.0)]
    return sim.add_segments(x0, x1, material)


def _bed(width, seed=2):
    """43 disks (r = 0.021-0.03): one (r = 0.025) right above the middle of the floor,
    42 on a jittered 7 x 6 lattice above it."""
    rng = np.random.default_rng(seed)
    gx, gy = np.meshgrid(np.linspace(0.03, width - 0.03, 7), 0.1 + 0.062 * np.arange(6))
    x = np.column_stack([gx.ravel(), gy.ravel()]) + rng.uniform(-0.004, 0.004, (42, 2))
    x = np.concatenate([[(0.5 * width, 0.03)], x])
    return x, np.concatenate([[0.025], rng.uniform(0.021, 0.03, 42)])


@pytest.mark.parametrize("scheme", ["explicit", "nscd"])
def test_walls_carry_the_weight_of_a_bed_at_rest(scheme):
    """A bed of 43 disks at rest in a box of segments 0.4 wide whose floor has a slot
    (0.036 wide) bridged by one disk: the forces on the segments plus those on the
    points (the slot's ends carry the bridging disk and what presses on it) sum to the
    total weight, with no net horizontal component."""
    width = 0.4
    x, r = _bed(width)
    dom = pdem.Domain((-0.05, -0.05), (width + 0.05, 1.05), dim=2)
    if scheme == "explicit":
        sim = pdem.Simulation(dom, 1e-3, gravity=(0, -G, 0), threads=1)
        sim.material("g", RHO, kn=1e5, restitution=0.1, friction=0.5)
        steps = 3000
    else:
        sim = pdem.Simulation(dom, 2e-3, gravity=(0, -G, 0), threads=1, skin=0.005,
                              scheme=pdem.NSCD("nlgs", tol=1e-8, alert=0.005))
        sim.material("g", RHO, friction=0.5)
        steps = 500
    _slotted_box(sim, "g", width, slot=0.036)
    sim.add_spheres(x, r, "g")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sim.run(steps=steps)
    p = sim.particles()
    weight = G * p["mass"].sum()
    seg, pts = sim.segment_forces(), sim.point_forces()
    total = seg.sum(axis=0) + pts.sum(axis=0)
    assert np.max(np.abs(p["velocity"])) < 1e-3                   # at rest
    assert total[1] / -weight == pytest.approx(1.0, abs=1e-4)
    assert abs(total[0]) < 1e-4 * weight
    # the slot's two end points carry at least the bridging disk's weight
    ends = sim.points.a
    slot_ends = pts[np.flatnonzero((np.abs(ends[:, 0] - 0.5 * width) < 0.02) & (ends[:, 1] == 0))]
    assert len(slot_ends) == 2
    assert np.all(slot_ends[:, 1] < -0.25 * G * p["mass"][0])
    assert -slot_ends[:, 1].sum() > G * p["mass"][0]
    assert np.count_nonzero(pts) == 4
    assert set(sim.contacts()["kind"]) == {"pair", "segment", "point"}


# ---------------------------------------------------------------- checkpoints
def _sliding(scheme="explicit"):
    """Disks sliding down a slope of segments onto a slotted floor, with spin, one
    resting on the slot's ends: segment and point contacts with tangential history."""
    dom = pdem.Domain((-0.05, -0.05), (1.05, 1.05), dim=2)
    if scheme == "explicit":
        sim = pdem.Simulation(dom, 1e-3, gravity=(0, -G, 0), threads=1)
        sim.material("g", RHO, kn=1e5, restitution=0.3, friction=0.2)
    else:
        sim = pdem.Simulation(dom, 1e-3, gravity=(0, -G, 0), threads=1, skin=0.005,
                              scheme=pdem.NSCD("jacobi", tol=1e-6, alert=0.005))
        sim.material("g", RHO, friction=0.2)
    _slotted_box(sim, "g")
    sim.add_segments([(0.0, 0.5)], [(0.45, 0.05)], "g")          # a 45 degree slope
    s = np.linspace(0.1, 0.35, 6)
    x = np.column_stack([s, 0.5 - s]) + 0.0105 * np.sqrt(0.5)
    x = np.concatenate([[(0.5, 0.0112)], x, [(0.7, 0.0102), (0.8, 0.0102)]])
    v = np.zeros_like(x)
    v[1:7] = (0.5, -0.5)
    v[7:] = (-0.3, 0.0)
    sim.add_spheres(x, np.r_[0.015, np.full(8, R)], "g", velocities=v,
                    angular_velocities=np.r_[0.0, np.linspace(-60, 60, 6), 40.0, -40.0])
    return sim


def _state(sim):
    return sim.particles(), sim.contacts(), sim.segment_forces(), sim.point_forces()


@pytest.mark.parametrize("scheme", ["explicit", "nscd"])
def test_restart_continues_bit_for_bit(scheme, tmp_path):
    """200 steps = 100 steps + checkpoint + pdem.restart + 100 steps: every particle
    field, contact row (segment and point contacts with their tangential history) and
    wall load bitwise equal."""
    whole = _sliding(scheme)
    first = _sliding(scheme)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        whole.run(steps=200)
        first.run(steps=100)
        c = first.contacts()
        assert {"segment", "point"} <= set(c["kind"])
        if scheme == "explicit":                    # a tangential history to carry
            seg = c["kind"] == "segment"
            assert np.max(np.abs(c["u"][seg, 1:] - c["u0"][seg, 1:])) > 0.0
        path = str(tmp_path / "segments.h5")
        first.checkpoint(path)
        resumed = pdem.restart(path, threads=1)
        del first
        assert len(resumed.segment_forces()) == 5 and len(resumed.point_forces()) == 8
        resumed.run(steps=100)
    a, b = _state(resumed), _state(whole)
    assert resumed.step_count == whole.step_count == 200
    for part in range(2):
        assert a[part].keys() == b[part].keys()
        for k in a[part]:
            assert a[part][k].shape == b[part][k].shape, k
            assert a[part][k].tobytes() == b[part][k].tobytes(), k
    assert a[2].tobytes() == b[2].tobytes() and a[3].tobytes() == b[3].tobytes()
    assert {"segment", "point"} <= set(b[1]["kind"])


# ---------------------------------------------------------------- bad input
def _input_error(func, *must_contain):
    with pytest.raises(pdem.InputError) as info:
        func()
    msg = str(info.value)
    assert "\n" not in msg, msg
    for s in must_contain:
        assert re.search(s, msg), (s, msg)
    return msg


def test_bad_segments_name_the_parameter_and_value():
    sim = explicit()
    _input_error(lambda: sim.add_segments([(0, 0), (0.25, 0.5)], [(1, 0), (0.25, 0.5)], "m"),
                 r"zero", r"(segment |x0\[|x1\[)1", r"0\.25, 0\.5")
    _input_error(lambda: sim.add_segments([(0, 0)], [(1, float("nan"))], "m"),
                 r"x1\[0\]", "nan")
    _input_error(lambda: sim.add_segments([(0, float("inf"))], [(1, 0)], "m"),
                 r"x0\[0\]", "inf")
    _input_error(lambda: sim.add_segments([(0, 0), (1, 1)], [(1, 0)], "m"), "x1", r"\(1, 2\)")
    _input_error(lambda: sim.add_segments([(0, 0, 0.5)], [(1, 0, 0)], "m"), r"x0\[0\]", "0.5")
    _input_error(lambda: sim.add_segments([(0, 0)], [(1, 0)], "nope"), "material", "'nope'")
    _input_error(lambda: sim.add_points([(0, float("nan"))], "m"), r"points\[0\]", "nan")
    _input_error(lambda: sim.add_points([(0, 0)], "nope"), "material", "'nope'")
    # nothing was added by the failed calls
    assert sim.segment_forces().shape == (0, 3) and sim.point_forces().shape == (0, 3)


def test_shared_end_points_are_added_once():
    """A closed triangle of 3 segments has 3 distinct end points; a point equal to an
    existing one is not repeated, a new one is."""
    sim = explicit()
    sim.add_segments([(0, 0), (0.5, 0), (0.5, 0.5)], [(0.5, 0), (0.5, 0.5), (0, 0)], "m")
    assert sim.point_forces().shape == (3, 3)
    assert list(sim.add_segments([(0, 0)], [(-0.5, 0)], "m")) == [3]
    assert sim.point_forces().shape == (4, 3)
    assert list(sim.add_points([(0.25, 0.75)], "m")) == [4]
    assert sim.segment_forces().shape == (4, 3)


# ---------------------------------------------------------------- given masses
@pytest.mark.parametrize("dim", [2, 3])
def test_given_masses_set_mass_and_inertia(dim):
    """add_spheres(masses=...): a disk on a segment (a sphere on a plane) of 5 x its
    density mass m: at rest with the overlap delta = m g / k_n of that mass; then
    spinning in place, it slips, and friction mu m g, with lever l = r - delta/2 (the
    middle of the overlap), gives dv/dt = mu g and d omega/dt = -mu m g l / I =
    -mu g l / (c r^2), c = 1/2 for a disk, 2/5 for a sphere: I = c m r^2 of the
    given mass (an inertia from the density would make it 5 x faster)."""
    mu, w0 = 0.3, 50.0
    up, ang, c = (1, 2, 0.5) if dim == 2 else (2, 1, 0.4)
    mass = 5.0 * (MASS if dim == 2 else 4.0 / 3.0 * math.pi * R ** 3 * RHO)
    delta = mass * G / KN
    gravity = np.zeros(3)
    gravity[up] = -G
    sim = pdem.Simulation(pdem.Domain((-1,) * dim, (1,) * dim, dim=dim), 5e-5,
                          gravity=gravity, threads=1)
    sim.material("m", RHO, kn=KN, restitution=0.1, friction=mu)
    if dim == 2:
        sim.add_segments([(-0.5, 0.0)], [(0.5, 0.0)], "m")
    else:
        sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    pos = np.zeros(dim)
    pos[up] = R - delta
    ids = sim.add_spheres([pos], R, "m", masses=[mass])
    assert sim.particles()["mass"][0] == mass
    sim.run(steps=400)
    p = sim.particles()
    assert p["position"][0, up] == pytest.approx(R - delta, abs=1e-3 * delta)
    spin = np.zeros(3)
    spin[ang] = w0
    sim.set_velocity(ids, (0.0, 0.0, 0.0), spin)
    sim.run(steps=100)                      # slipping until t = r w0 / ((1 + 1/c) mu g)
    t0, p0 = sim.time, sim.particles()
    sim.run(steps=400)
    t1, p1 = sim.time, sim.particles()
    alpha = (p1["angular_velocity"][0, ang] - p0["angular_velocity"][0, ang]) / (t1 - t0)
    acc = (p1["velocity"][0] - p0["velocity"][0]) / (t1 - t0)
    assert alpha == pytest.approx(-mu * G * (R - delta / 2) / (c * R ** 2), rel=1e-9)
    assert np.linalg.norm(acc) == pytest.approx(mu * G, rel=1e-9)


def test_given_masses_carry_their_weight_in_nscd():
    """Masses given per particle are kept as given, in order; in NSCD a stack of a
    2 kg and a 0.25 kg disk at rest on a segment loads it with (2 + 0.25) g and the
    pair contact with 0.25 g (density x volume would give 0.31 kg each)."""
    sim = nscd(tol=1e-12)
    sim.add_segments([(-0.5, 0.0)], [(0.5, 0.0)], "m")
    masses = [2.0, 0.25]
    sim.add_spheres([(0.0, R), (0.0, 3 * R)], R, "m", masses=masses)
    assert np.array_equal(sim.particles()["mass"], masses)
    sim.run(steps=50)
    assert sim.segment_forces()[0, 1] == pytest.approx(-G * sum(masses), rel=1e-6)
    c = rows(sim, "pair")
    assert c["force"][0, 1] == pytest.approx(G * masses[1], rel=1e-6)


@pytest.mark.parametrize("masses,what", [([0.0], "0.0"), ([-1.0], "-1.0"),
                                         ([float("nan")], "nan"), ([1.0, 2.0], r"\(2,\)|2"),
                                         ([float("inf")], "inf")])
def test_bad_masses_name_the_parameter(masses, what):
    sim = explicit()
    _input_error(lambda: sim.add_spheres([(0.0, 0.0)], R, "m", masses=masses), "masses", what)
    assert sim.n_particles == 0
