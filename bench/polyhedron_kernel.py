"""Cost of a GJK + EPA contact query (pyx/gjk.pxd, issue 17) per pair, cold and warm
started, and its share of early exits, against the sphere pair kernel's cost per
contact. One thread; the machine is shared, so each figure is the fastest of R runs.

    python bench/polyhedron_kernel.py [pairs] [repeats]
"""
import sys
import time

import numpy as np

from pdem import polyhedra as P
from pdem._kernels import gjk


def scene(n, verts, depth, rng):
    """n pairs of one rock shape, turned at random, B placed along a random direction
    at the distance where the support functions give a gap of -depth (overlap) or
    +depth (separated, depth < 0 asked)."""
    def quats(k):
        q = rng.normal(size=(k, 4))
        return q / np.linalg.norm(q, axis=1)[:, None]
    q1, q2 = quats(n), quats(n)
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    pos1 = np.zeros((n, 3))
    pos2 = 2.5 * d
    normal = np.zeros((n, 3))
    gap, it, st = np.zeros(n), np.zeros(n, np.int32), np.zeros(n, np.int8)
    gjk.poly_pairs(pos1, q1, pos2, q2, verts, verts, normal, gap, it, st)
    pos2 = pos2 - (gap + depth)[:, None] * normal          # along the separating normal
    return pos1, q1, np.ascontiguousarray(pos2), q2


def timed(args, normal0, repeats, exit_gap):
    best = np.inf
    n = len(args[0])
    for _ in range(repeats):
        normal = normal0.copy()
        gap, it, st = np.zeros(n), np.zeros(n, np.int32), np.zeros(n, np.int8)
        t = time.perf_counter()
        gjk.poly_pairs(*args, normal, gap, it, st, exit_gap=exit_gap)
        best = min(best, time.perf_counter() - t)
    return best / n * 1e9, it, st, normal


def main(n=20000, repeats=5):
    rng = np.random.default_rng(1)
    rock = P.rock(20, seed=2, axes=(1.0, 0.8, 0.6))
    v = np.ascontiguousarray(rock.vertices)
    print("rock of %d vertices, %d pairs, fastest of %d" % (len(v), n, repeats))
    for label, depth, exit_gap in (("overlap 1 % of the size", 0.01, 0.0),
                                   ("separated by 1 %, contact detection (exit at gap > 0)",
                                    -0.01, 0.0),
                                   ("separated by 1 %, converged distance", -0.01, np.inf)):
        pos1, q1, pos2, q2 = scene(n, v, depth, rng)
        args = (pos1, q1, pos2, q2, v, v)
        cold, it_c, st, normal = timed(args, np.zeros((n, 3)), repeats, exit_gap)
        # warm: the pair turned by ~1e-3 rad since the normal was found
        q2b = q2 + 5e-4 * rng.normal(size=q2.shape)
        q2b /= np.linalg.norm(q2b, axis=1)[:, None]
        args = (pos1, q1, pos2, q2b, v, v)
        warm, it_w, st_w, _ = timed(args, normal, repeats, exit_gap)
        counts = np.bincount(st_w, minlength=5)
        print("%-55s cold %6.0f ns (iterations %.2f), warm %6.0f ns (%.2f); warm "
              "statuses: separated %d, distance %d, overlap %d, failed %d"
              % (label, cold, it_c.mean(), warm, it_w.mean(), *counts[:4]))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
