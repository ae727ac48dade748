"""The leap-frog kernels (pyx/integrate.pyx) in blocks with vectorized divisions give
the bits of the formulas evaluated one particle at a time: the reference here is
numpy, operation by operation in the order of seed 000's formulas (IEEE arithmetic is
the same in numpy, so every bit must agree). Also: the next drift's rebuild test
computed by the kick (kick_and_predict), and the copy of periodic self-images."""
import numpy as np
import pytest

from pdem._kernels import ghost_copy, integrate


def quat_step(q, w, dt):
    """Reference drift of orientations: exp(w dt) q, renormalized (one Newton step);
    series for small half-angles h (h^2 < 1e-4), trigonometry above; no spin: as is."""
    rx, ry, rz = w[:, 0] * dt, w[:, 1] * dt, w[:, 2] * dt
    h2 = 0.25 * (rx * rx + ry * ry + rz * rz)
    cw = 1.0 - h2 * (0.5 - h2 * (1.0 / 24.0 - h2 * (1.0 / 720.0 - h2 / 40320.0)))
    s = 0.5 * (1.0 - h2 * (1.0 / 6.0 - h2 * (1.0 / 120.0 - h2 / 5040.0)))
    big = h2 >= 1e-4
    ang = np.sqrt(4.0 * h2[big])
    cw[big], s[big] = np.cos(0.5 * ang), np.sin(0.5 * ang) / ang
    a = (cw, rx * s, ry * s, rz * s)
    b = q.T
    r = np.array([a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                  a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                  a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                  a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]])
    f = 0.5 * (3.0 - (r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + r[3] * r[3]))
    spin = np.any(w != 0.0, axis=1)
    return np.where(spin[:, None], (r * f).T, q)


def scene(n, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w = rng.normal(size=(n, 3)) * 3.0
    w[::7] = 0.0                                    # no spin: orientation kept bit for bit
    w[n // 2] = (900.0, 5.0, 1.0)                   # a large angle at dt = 1e-3
    blocked = np.zeros(n, np.uint8)
    blocked[::11] = 0b000101
    blocked[::13] = 0b111000
    return dict(pos=rng.random((n, 3)), vel=rng.normal(size=(n, 3)), angvel=w, orient=q,
                build=rng.random((n, 3)), force=rng.normal(size=(n, 3)),
                torque=rng.normal(size=(n, 3)), mass=rng.uniform(0.5, 2.0, n),
                inertia=rng.uniform(0.01, 0.1, n), blocked=blocked,
                gravity=np.array([0.44, 0.0, -0.9]))


def same_bits(a, b):
    return np.array_equal(np.asarray(a).view(np.int64), np.asarray(b).view(np.int64))


@pytest.mark.parametrize("n, threads", [(1, 1), (127, 1), (1000, 2), (3001, 2)])
def test_drift_and_kick_bits(n, threads):
    """n around and above the block size, 1 and 2 threads: every bit as numpy's (and the
    drift's largest squared displacement and speed)."""
    s, dt = scene(n), 1e-3
    pos = s["pos"] + s["vel"] * dt
    d, v = pos - s["build"], s["vel"]
    orient = quat_step(s["orient"], s["angvel"], dt)
    moved2, speed2 = integrate.drift(s["pos"], s["vel"], s["angvel"], s["orient"], s["build"],
                                     dt, n, threads)
    assert same_bits(s["pos"], pos) and same_bits(s["orient"], orient)
    assert moved2 == np.max(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])
    assert speed2 == np.max(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2])
    vel, angvel = s["vel"].copy(), s["angvel"].copy()
    for k in range(3):
        free = (s["blocked"] & (1 << k)) == 0
        vel[free, k] = (vel[free, k] + s["force"][free, k] * (dt / s["mass"][free])
                        + s["gravity"][k] * dt)
        free = (s["blocked"] & (8 << k)) == 0
        angvel[free, k] = angvel[free, k] + s["torque"][free, k] * (dt / s["inertia"][free])
    bad = integrate.kick(s["vel"], s["angvel"], s["force"], s["torque"], s["mass"],
                         s["inertia"], s["blocked"], s["gravity"], dt, n, threads)
    assert bad == -1 and same_bits(s["vel"], vel) and same_bits(s["angvel"], angvel)


def test_kick_predicts_the_next_drift():
    """kick_and_predict returns the kick's index and exactly what the next drift will
    return (displacement and speed); a non-finite velocity is found by index, and the
    displacement is infinite (NaN once a displacement is NaN)."""
    n, dt = 700, 1e-3
    a, b = scene(n, 3), scene(n, 3)
    args = lambda s: (s["vel"], s["angvel"], s["force"], s["torque"], s["mass"],  # noqa: E731
                      s["inertia"], s["blocked"], s["gravity"], dt, n, 1)
    bad, *ahead = integrate.kick_and_predict(*args(a), a["pos"], a["build"])
    assert bad == integrate.kick(*args(b)) == -1
    assert same_bits(a["vel"], b["vel"]) and same_bits(a["angvel"], b["angvel"])
    assert tuple(ahead) == integrate.drift(a["pos"], a["vel"], a["angvel"], a["orient"],
                                           a["build"], dt, n, 1)
    c = scene(n, 4)
    c["force"][517, 1] = np.inf
    bad, *ahead = integrate.kick_and_predict(*args(c), c["pos"], c["build"])
    assert bad == 517 and ahead == [np.inf, np.inf]
    assert (np.inf, np.inf) == integrate.drift(c["pos"], c["vel"], c["angvel"], c["orient"],
                                               c["build"], dt, n, 1)
    c["vel"][9, 2] = np.nan                         # NaN wins over the infinity (rebuild)
    assert np.isnan(integrate.drift(c["pos"], c["vel"], c["angvel"], c["orient"], c["build"],
                                    dt, n, 1)).all()


def test_drift_and_its_prediction_in_a_moving_frame():
    """With a frame (its shift since the build, its velocity: pdem/contact/frame.py) the
    drift returns the largest squared displacement and speed relative to it, as numpy
    computes them; kick_and_predict, given the frame of the next drift, predicts them
    bit for bit; positions and orientations are the frame-less drift's."""
    n, dt = 1000, 1e-3
    shift, velocity = np.array([0.3, -0.2, 0.05]), np.array([1.5, -0.7, 0.2])
    frame = tuple(shift) + tuple(velocity)          # MovingFrame.at's 6 numbers
    a, b = scene(n, 5), scene(n, 5)
    pos = a["pos"] + a["vel"] * dt
    d, v = (pos - a["build"]) - shift, a["vel"] - velocity
    moved2, speed2 = integrate.drift(a["pos"], a["vel"], a["angvel"], a["orient"], a["build"],
                                     dt, n, 2, frame)
    integrate.drift(b["pos"], b["vel"], b["angvel"], b["orient"], b["build"], dt, n, 2)
    assert same_bits(a["pos"], b["pos"]) and same_bits(a["orient"], b["orient"])
    c = scene(n, 5)                 # no build positions: the motion alone (a prediction's step)
    assert integrate.drift(c["pos"], c["vel"], c["angvel"], c["orient"], None, dt, n, 2,
                           frame) == (0.0, 0.0)
    assert same_bits(c["pos"], b["pos"]) and same_bits(c["orient"], b["orient"])
    assert moved2 == np.max(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])
    assert speed2 == np.max(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2])
    _, *ahead = integrate.kick_and_predict(a["vel"], a["angvel"], a["force"], a["torque"],
                                           a["mass"], a["inertia"], a["blocked"],
                                           a["gravity"], dt, n, 1, a["pos"], a["build"], frame)
    assert tuple(ahead) == integrate.drift(a["pos"], a["vel"], a["angvel"], a["orient"],
                                           a["build"], dt, n, 1, frame)
    with pytest.raises(ValueError, match="frame"):
        integrate.drift(a["pos"], a["vel"], a["angvel"], a["orient"], a["build"], dt, n, 1,
                        frame[:5])


def test_drift_in_place_of_the_build_positions():
    """pos given as its own build positions (NSCD, DDA): displacement 0."""
    s = scene(300)
    assert integrate.drift(s["pos"], s["vel"], s["angvel"], s["orient"], s["pos"], 1e-3,
                           300, 1)[0] == 0.0


def test_ghost_copies_forward_images_in_order():
    """a[dst[k]] = a[src[k]] in order for every field: a later row may copy an earlier
    copy (a corner image of an edge image), as numpy's fancy indexing swap by swap; a
    message packs the fields of a row side by side and unpacks them alike."""
    rng = np.random.default_rng(5)
    a, b = np.zeros((40, 4)), np.zeros((40, 3))
    a[:20], b[:20] = rng.normal(size=(20, 4)), rng.normal(size=(20, 3))
    ref_a, ref_b = a.copy(), b.copy()
    src, dst = [], []
    for sel, first in ((np.array([3, 0, 19, 7]), 20), (np.array([21, 5, 23]), 24)):
        ref_a[first:first + len(sel)] = ref_a[sel]
        ref_b[first:first + len(sel)] = ref_b[sel]
        src.append(sel)
        dst.append(np.arange(first, first + len(sel)))
    ghost_copy.copy_images([a, b], np.concatenate(src), np.concatenate(dst))
    assert same_bits(a, ref_a) and same_bits(b, ref_b)
    ghost_copy.copy_images([a, b], np.empty(0, np.int64), np.empty(0, np.int64))  # none
    msg = np.zeros((2, 7))                          # a message: rows 24 and 2
    ghost_copy.pack(msg, [a, b], np.array([24, 2]))
    assert same_bits(msg[:, :4], a[[24, 2]]) and same_bits(msg[:, 4:], b[[24, 2]])
    assert same_bits(a, ref_a) and same_bits(b, ref_b)
    ghost_copy.unpack([a, b], 30, msg)
    assert same_bits(a[30:32], a[[24, 2]]) and same_bits(b[30:32], b[[24, 2]])
