#!/usr/bin/env python
"""Cost of the common-normal ellipsoid contact kernel per pair (warm vs cold start)
against the sphere pair kernel (contacts.sphere_sphere: geometry + L6Geom + Hooke law)
per active contact, one thread, and the iterations per contact per step.

Scene: `--pairs` independent pairs of ellipsoids of semi-axes r (1, ar^-1/2, ar^-1)
... (aspect ratio `--aspect`), random orientations, in contact with overlaps of about
`--overlap` of the mean radius; every "step" turns each body by `--turn` rad about a
random axis and moves body 2 by `--move` radii, like a DEM step. The warm start passes
the previous step's normal (what the contact row will store); the cold start passes none.
Both use exit_gap = 0 (contact detection: separated pairs exit early).
The sphere scene: the same number of touching sphere pairs (all active, Hooke law).

    python bench/ellipsoid_kernel.py [--pairs 20000] [--steps 20]

Wall times on a shared machine are noisy: the script repeats and takes the minimum.
"""
import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numpy as np  # noqa: E402

import pdem  # noqa: E402
from pdem._kernels import contacts as ck  # noqa: E402
from pdem._kernels import ellipsoid as E  # noqa: E402
from pdem.cell import fixed_cell  # noqa: E402


def qmul(a, b):
    w1, v1 = a[:, :1], a[:, 1:]
    w2, v2 = b[:, :1], b[:, 1:]
    return np.column_stack([w1 * w2 - np.sum(v1 * v2, 1, keepdims=True),
                            w1 * v2 + w2 * v1 + np.cross(v1, v2)])


def small_turn(rng, m, ang):
    ax = rng.normal(size=(m, 3))
    ax /= np.linalg.norm(ax, axis=1, keepdims=True)
    return np.column_stack([np.full(m, np.cos(ang / 2)), ax * np.sin(ang / 2)])


def ellipsoid_scene(rng, m, aspect, overlap):
    a = np.array([1.0, aspect ** -0.5, 1.0 / aspect]) * aspect ** (1.0 / 3.0)   # volume of r = 1
    q = rng.normal(size=(2 * m, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    pos = np.zeros((2 * m, 3))
    axes = np.tile(a, (2 * m, 1))
    u = rng.normal(size=(m, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    _, h1, _ = E.support(pos[:m], q[:m], axes[:m], u)
    _, h2, _ = E.support(pos[m:], q[m:], axes[m:], -u)
    pos[m:] = u * (h1 + h2)[:, None]
    # along the common normal the gap changes by exactly the displacement of body 2 and
    # the normal stays the same: one correction puts every pair at the wanted overlap
    r = E.solve_pairs(pos[:m], q[:m], axes[:m], pos[m:], q[m:], axes[m:])
    pos[m:] -= r["normal"] * (r["gap"] + overlap)[:, None]
    return pos, q, axes


def time_it(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--aspect", type=float, default=2.0)
    ap.add_argument("--overlap", type=float, default=0.01)
    ap.add_argument("--turn", type=float, default=1e-3)
    ap.add_argument("--move", type=float, default=1e-4)
    ap.add_argument("--tol", type=float, default=1e-12)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    m = args.pairs
    pos, q, axes = ellipsoid_scene(rng, m, args.aspect, args.overlap)
    i1 = np.arange(m, dtype=np.int32)
    i2 = i1 + m
    shift = np.zeros((m, 3))
    out = {k: np.zeros((m, 3)) for k in ("point", "point1", "point2")}
    gap, radius = np.zeros(m), np.zeros(m)
    iters, status = np.zeros(m, np.int32), np.zeros(m, np.int8)

    def solve(normal):
        return E.pair_contacts(i1, i2, shift, pos, q, axes, normal, gap, out["point"],
                               out["point1"], out["point2"], radius, iters, status, 0.0,
                               args.tol, 50, False, 1)

    normal = np.zeros((m, 3))
    solve(normal)                       # formation (cold)
    t_warm = t_cold = 0.0
    it_warm, it_cold, fails, active = [], [], 0, []
    for s in range(args.steps):
        q[:] = qmul(q, small_turn(rng, 2 * m, args.turn))
        pos[m:] += rng.normal(size=(m, 3)) * args.move
        saved = normal.copy()
        cold = np.zeros((m, 3))
        t_cold += time_it(lambda: solve(np.zeros((m, 3))), args.repeat)
        fails += solve(cold)
        it_cold.append(iters.copy())
        def warm():
            normal[:] = saved
            solve(normal)
        t_warm += time_it(warm, args.repeat)
        normal[:] = saved
        fails += solve(normal)
        it_warm.append(iters.copy())
        active.append(np.count_nonzero(status == 0))
    it_w, it_c = np.concatenate(it_warm), np.concatenate(it_cold)
    per_w = t_warm / (args.steps * m) * 1e9
    per_c = t_cold / (args.steps * m) * 1e9
    print("ellipsoids %d pairs, aspect %.2f, overlap %.3g, turn %.3g rad/step, tol %.0e: "
          "%.1f%% in contact, %d failed" % (m, args.aspect, args.overlap, args.turn, args.tol,
                                             100 * np.mean(active) / m, fails))
    print("  warm start: %.0f ns/pair, iterations mean %.2f max %d" % (per_w, it_w.mean(), it_w.max()))
    print("  cold start: %.0f ns/pair, iterations mean %.2f max %d" % (per_c, it_c.mean(), it_c.max()))

    # sphere pairs: the engine's sphere kernel, all pairs touching (Hooke law)
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (100.0, 100.0, 100.0)), dt=1e-3)
    sim.material("plain", density=1000.0, law="hooke", kn=1e4, kt=3e3, gamma_n=50.0,
                 gamma_t=25.0, friction=0.4)
    table = np.ascontiguousarray(sim.materials.table())
    n = 2 * m
    r = np.ones(n)
    spos = np.zeros((n, 3))
    spos[0::2] = rng.uniform(5, 95, (m, 3))
    u = rng.normal(size=(m, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    spos[1::2] = spos[0::2] + u * (2.0 - args.overlap)
    si1 = np.arange(0, n, 2, dtype=np.int32)
    si2 = si1 + 1
    vel, angvel = rng.normal(0, 0.01, (n, 3)), rng.normal(0, 0.01, (n, 3))
    act, state = np.zeros(m, np.int8), np.zeros((m, 27))
    mat, mass, image = np.zeros(n, np.int32), np.ones(n), np.zeros((n, 3), np.int32)

    def spheres():
        ck.sphere_sphere(si1, si2, spos, image, fixed_cell(np.full(3, 100.0)), vel, angvel, r, mass, mat,
                         table, 1, 1e-3, 0, act, state, 1, periodic=False)
    spheres()
    ts = time_it(spheres, 5 * args.repeat) / m * 1e9
    print("spheres %d pairs (%d active): %.0f ns/contact (geometry + L6Geom + law)"
          % (m, int(act.sum()), ts))
    print("  ratio ellipsoid solve / sphere contact: warm %.1f, cold %.1f" % (per_w / ts, per_c / ts))


if __name__ == "__main__":
    main()
