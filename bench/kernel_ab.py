#!/usr/bin/env python
"""The contact kernels of two builds of pdem._kernels.contacts, side by side in one
process, on the flowing chute's warm checkpoint (made by chute_vs_lammps.py): the
calls alternate on the same state, the fastest of `--rounds` counts (a shared machine's
noise mostly adds time). Also checks that both builds leave the same rows and sums.

  PYTHONPATH=$PWD .venv/bin/python bench/kernel_ab.py MAIN.so BRANCH.so \
      [--ckpt bench/out/chute_n33462_s1_warm.ckpt] [--steps 20] [--rounds 150] \
      [--segments 100 --segment-steps 20]

(MAIN.so: e.g. a copy of another tree's pdem/_kernels/contacts*.so.) The run restarts
from the checkpoint, makes `--steps` steps, then times with the in-pass sums on:
`sphere_sphere` on all candidates (pooled rows, as in a step), on the touching pairs
alone (rows per pair) and on the candidates that do not touch alone (pooled, without
rows, as in a step), and `sphere_plane` on the floor rows. With `--segments N`, then
the real step: the simulation runs on, the two builds' kernels swapped in
(pdem.contact.kinds) for alternate segments of `--segment-steps` steps (both give the
same bits, so the trajectory is one), and the contact phase (sim.timers) and the
process CPU time of a segment are compared, and each kind's `compute` (pair, plane,
...): fastest segment, medians and the median of the paired ratios."""
import argparse
import importlib.util
import os
import time

import numpy as np

import pdem

KINDS = ("all", "touch", "far", "plane")


def load(path, tag):
    spec = importlib.util.spec_from_file_location(tag + ".contacts", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Pool:
    """The pooled batch's arrays that sphere_sphere reads and writes (a copy); with
    `pairs`, those pairs without rows (the candidates that do not touch, as in a step)."""

    def __init__(self, b, pairs=None):
        if pairs is None:
            self.state, self.slot = b.state.copy(), b.slot.copy()
            self.free, self.n_free, self.active = b.free.copy(), b.n_free, b.active.copy()
        else:
            self.state, self.slot = np.zeros((1, b.state.shape[1])), np.full(len(pairs), -1, np.int32)
            self.free, self.n_free, self.active = np.zeros(1, np.int32), 0, b.active[pairs].copy()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("builds", nargs=2, help="two contacts*.so files (A, B)")
    ap.add_argument("--ckpt", default=os.path.join(here, "out", "chute_n33462_s1_warm.ckpt"))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=150)
    ap.add_argument("--segments", type=int, default=0)
    ap.add_argument("--segment-steps", type=int, default=20)
    args = ap.parse_args()
    mods = [load(p, "build%d" % i) for i, p in enumerate(args.builds)]
    sim = pdem.restart(args.ckpt, threads=1)
    sim.run(steps=args.steps)
    st, table = sim.store, sim.materials.table()
    nmat = max(1, len(sim.materials.materials))
    pk, pl = sim.interactions["pair"], sim.interactions["plane"]
    b, wb = pk.batch, pl.batch
    touch, far = np.flatnonzero(b.active), np.flatnonzero(b.active == 0)
    # each subset's pair arrays, made once (not inside the timed calls)
    subset = {name: (b.i1[k], b.i2[k])
              for name, k in (("touch", touch), ("far", far))}
    print("candidates %d, touching %d, floor rows %d of which %d touch; load %.1f" % (
        len(b.i1), len(touch), len(wb.i1), int(wb.active.sum()), os.getloadavg()[0]))

    def arrays():
        return dict(all=Pool(b), touch=(b.active[touch].copy(), b.state[b.slot[touch]].copy()),
                    far=Pool(b, far),
                    plane=(wb.active.copy(), wb.state.copy()),
                    f=np.zeros((st.n_own, 3)), t=np.zeros((st.n_own, 3)))
    data = [arrays(), arrays()]

    def call(mod, d, kind):
        common = (st.pos, st.image, sim.cell.kernel, st.vel, st.angvel, st.radius, st.mass,
                  st.material, table, nmat, sim.dt, sim.flags)
        if kind == "all":
            p = d["all"]
            return mod.sphere_sphere(b.i1, b.i2, *common, p.active, p.state, 1, pk.owner,
                                     d["f"], d["t"], periodic=True, pool=p,
                                     image_from=pk.image_from)
        if kind == "far":
            p = d["far"]
            i1, i2 = subset["far"]
            return mod.sphere_sphere(i1, i2, *common, p.active, p.state, 1, pk.owner, d["f"], d["t"],
                                     periodic=True, pool=p, image_from=pk.image_from)
        if kind == "touch":
            i1, i2 = subset["touch"]
            return mod.sphere_sphere(i1, i2, *common, *d[kind], 1, pk.owner, d["f"], d["t"],
                                     periodic=True, image_from=pk.image_from)
        return mod.sphere_plane(wb.i1, wb.i2, st.pos, st.vel, st.angvel, st.radius, st.mass,
                                st.material, sim.planes.point, sim.planes.normal,
                                sim.planes.vel, sim.planes.material, table, nmat, sim.dt,
                                sim.flags, *d["plane"], 1, wb.i1, d["f"], d["t"])

    best = {(i, k): np.inf for i in range(2) for k in KINDS}
    for r in range(args.rounds):
        for kind in KINDS:
            for i in ((0, 1) if r % 2 == 0 else (1, 0)):
                t0 = time.perf_counter()
                call(mods[i], data[i], kind)
                best[i, kind] = min(best[i, kind], time.perf_counter() - t0)
    a, c = data
    same = (a["all"].state[a["all"].slot[touch]].tobytes() == c["all"].state[c["all"].slot[touch]].tobytes()
            and all(a[k][1].tobytes() == c[k][1].tobytes() for k in ("touch", "plane"))
            and a["f"].tobytes() == c["f"].tobytes() and a["t"].tobytes() == c["t"].tobytes())
    print("both builds leave the same rows and sums:", same)
    units = dict(all=len(b.i1), touch=len(touch), far=len(far), plane=int(wb.active.sum()))
    for kind in KINDS:
        ta, tb = best[0, kind], best[1, kind]
        print("%-5s A %.3f ms (%.1f ns each)  B %.3f ms (%.1f ns each)  B/A %.3f" % (
            kind, ta * 1e3, ta / units[kind] * 1e9, tb * 1e3, tb / units[kind] * 1e9, tb / ta))
    pa, pb = best[0, "all"] + best[0, "plane"], best[1, "all"] + best[1, "plane"]
    print("kernels per step: A %.3f ms, B %.3f ms, B/A %.3f; load %.1f" % (
        pa * 1e3, pb * 1e3, pb / pa, os.getloadavg()[0]))
    if args.segments:
        real_step(sim, mods, args.segments, args.segment_steps)


def real_step(sim, mods, segments, steps):
    """The two builds in alternate segments of the simulation's own steps: the contact
    phase, the process's CPU time and each kind's `compute` (the kinds with rows)."""
    from pdem.contact import kinds
    working = sim.working_kinds()
    spent = {kind.name: 0.0 for kind in working}

    def timed(kind, compute):
        def wrapper(*args):
            t = time.perf_counter()
            out = compute(*args)
            spent[kind.name] += time.perf_counter() - t
            return out
        return wrapper

    for kind in working:
        kind.compute = timed(kind, kind.compute)
    keep, times = kinds.ck, [[], []]
    for r in range(segments):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            kinds.ck = mods[i]
            sim.timers["contact"] = 0.0
            spent.update(dict.fromkeys(spent, 0.0))
            t0 = time.process_time()
            sim.run(steps=steps)
            times[i].append([sim.timers["contact"], time.process_time() - t0]
                            + list(spent.values()))
    kinds.ck = keep
    for kind in working:
        del kind.compute                 # the class's method again
    a, b = np.array(times[0]) / steps * 1e3, np.array(times[1]) / steps * 1e3
    print("real step, %d segments of %d steps each (load %.1f), per step:" % (
        segments, steps, os.getloadavg()[0]))
    names = ["contact phase (wall)", "whole step (CPU)"] + [
        "kind %s, compute (wall)" % name for name in spent]
    for c, name in enumerate(names):
        print("  %s: A fastest %.3f median %.3f ms, B fastest %.3f median %.3f ms; B/A "
              "fastest %.3f, medians %.3f, paired %.3f" % (
                  name, a[:, c].min(), np.median(a[:, c]), b[:, c].min(), np.median(b[:, c]),
                  b[:, c].min() / a[:, c].min(), np.median(b[:, c]) / np.median(a[:, c]),
                  np.median(b[:, c] / a[:, c])))


if __name__ == "__main__":
    main()
