#!/usr/bin/env python
"""The seed's question, "which method suits Python better?", measured: one sweep of
seed 003's frictionless update written in plain Python (a loop over contacts: NLGS
must be one, its velocity updates are sequential) and in numpy (Jacobi: every
contact from the sweep's start velocities at once, increments summed per grain with
np.bincount), against pdem's Cython sweeps, on the column of bench/nscd_convergence.py
(all contacts listed by pdem's detection).

    python bench/nscd_python.py --sizes 1000,10000
"""
import argparse
import time

import numpy as np

from nscd_convergence import make

DT = 1e-3


def python_nlgs(p, v, dt):
    c, m = p.contacts, p.m
    worst = 0.0
    for k in range(len(c["kind"])):
        i, j, n, d = c["i"][k], c["j"][k], c["normal"][k], c["gap"][k]
        grain = c["kind"][k] == 0
        vn = ((v[i, 0] - v[j, 0]) * n[0] + (v[i, 1] - v[j, 1]) * n[1]) if grain else \
            v[i, 0] * n[0] + v[i, 1] * n[1]
        W = (m[i] + m[j]) / (m[i] * m[j]) if grain else 1.0 / m[i]
        dvn = max(0.0, -vn - max(0.0, d) / dt)
        worst = max(worst, dvn)
        v[i] += dvn / (W * m[i]) * n
        if grain:
            v[j] -= dvn / (W * m[j]) * n
    return worst


def numpy_jacobi(p, v, dt):
    c, m = p.contacts, p.m
    i, j, n, d = c["i"], c["j"], c["normal"], c["gap"]
    grain = c["kind"] == 0
    jj = np.where(grain, j, 0)
    vrel = v[i] - np.where(grain[:, None], v[jj], 0.0)
    vn = np.einsum("kd,kd->k", vrel, n)
    inv_w = np.where(grain, m[i] * m[jj] / (m[i] + m[jj]), m[i])       # 1 / W_nn
    dvn = np.maximum(0.0, -vn - np.maximum(0.0, d) / dt)
    imp = (dvn * inv_w)[:, None] * n
    for dim in range(2):
        v[:, dim] += (np.bincount(i, imp[:, dim], len(v))
                      - np.bincount(j[grain], imp[grain, dim], len(v))) / m
    return dvn.max()


def timed(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    for n in (int(s) for s in a.sizes.split(",")):
        p = make(n, 1, None, 0.0)
        p.v += np.array([0.0, -9.81 * DT])
        p.detect_contacts(0.5 * 5e-3)
        v0 = p.v.copy()
        m = len(p.contacts["kind"])
        runs = {"python NLGS": lambda: python_nlgs(p, v0.copy(), DT),
                "numpy Jacobi": lambda: numpy_jacobi(p, v0.copy(), DT),
                "Cython NLGS": lambda: p.solve_contacts_nlgs(1e300, DT, itmax=1),
                "Cython Jacobi": lambda: p.solve_contacts_jacobi(1e300, DT, itmax=1)}
        # the numpy and Python sweeps are the same algorithms as pdem's
        for fn, solve in ((numpy_jacobi, p.solve_contacts_jacobi),
                          (python_nlgs, p.solve_contacts_nlgs)):
            v = v0.copy()
            fn(p, v, DT)
            p.v[:] = v0
            solve(1e300, DT, itmax=1)
            assert np.allclose(v, p.v, rtol=1e-12, atol=1e-15), fn.__name__
        line = []
        for name, fn in runs.items():
            p.v[:] = v0
            line.append("%s %.3g us" % (name, 1e6 * timed(fn, a.repeat) / m))
        print("N=%6d, %d contacts, one sweep per contact: %s" % (n, m, "; ".join(line)))


if __name__ == "__main__":
    main()
