#!/usr/bin/env python
"""Time the stages of one neighbor rebuild (Simulation._rebuild) on the flowing chute
of bench/chute_vs_lammps.py, one rank.

  PYTHONPATH=$PWD python bench/rebuild_stages.py [--ckpt FILE] [--repeats 15] [--steps 200]
                                               [--live STEPS] [--cpu] [--profile]

The scene: the chute's warm checkpoint (bench/out/chute_n33462_s1_warm.ckpt, written
by chute_vs_lammps.py; made here from scratch with --steps steps when absent), run
--steps steps so that contacts and history exist, then `_rebuild` called --repeats
times on the same state (each stage's fastest time counts; the first call also
carries the contact state of the flowing run). The stages are timed by wrapping the
functions `_rebuild` calls (module attributes of pdem.simulation and
pdem.contact.kinds) with perf_counter; what is not wrapped is reported as "rest".
"""
import argparse
import collections
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import pdem  # noqa: E402
from pdem import simulation as simmod  # noqa: E402
from pdem.contact import kinds as kindmod  # noqa: E402
from pdem.contact import store as storemod  # noqa: E402

TIMES = collections.defaultdict(float)
CLOCK = [time.perf_counter]     # --cpu: time.process_time (this process's CPU time)


def timed(name, fn):
    def wrapper(*a, **k):
        t = CLOCK[0]()
        try:
            return fn(*a, **k)
        finally:
            TIMES[name] += CLOCK[0]() - t
    return wrapper


class Proxy:
    """A module whose listed functions are timed."""

    def __init__(self, module, prefix, names):
        self._m = module
        for n in names:
            if hasattr(module, n):
                setattr(self, n, timed(prefix + n, getattr(module, n)))

    def __getattr__(self, name):
        return getattr(self._m, name)


def instrument(sim):
    for name in ("wrap", "handle_lost", "spatial_order", "spatial_permutation", "owned_index",
                 "migrate"):
        if hasattr(simmod, name):
            setattr(simmod, name, timed(name, getattr(simmod, name)))
    if hasattr(sim, "_owners"):
        sim._owners = timed("owners", sim._owners)
    sim.ghosts.build = timed("ghosts.build", sim.ghosts.build)
    sim.store.set_local = timed("set_local", sim.store.set_local)
    sim.scheme.after_build = timed("scheme.after_build", sim.scheme.after_build)
    for kind in sim.interactions.values():
        kind.build = timed("build " + kind.name, kind.build)
    kindmod.cells = Proxy(kindmod.cells, "  cells.", [n for n in dir(kindmod.cells)
                                                      if not n.startswith("_")])
    kindmod.keys = Proxy(kindmod.keys, "  keys.", ["make"])
    storemod.ContactBatch.carry_from = timed("  carry_from", storemod.ContactBatch.carry_from)
    init = storemod.ContactBatch.__init__
    storemod.ContactBatch.__init__ = timed("  ContactBatch()", init)
    kindmod.ContactBatch.__init__ = storemod.ContactBatch.__init__
    sim._rebuild = timed("TOTAL _rebuild", sim._rebuild)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--profile", action="store_true", help="cProfile one rebuild instead")
    ap.add_argument("--live", type=int, default=0,
                    help="instead: run this many more steps and report the mean stage times "
                         "of the rebuilds they trigger (caches cold, as in a run)")
    ap.add_argument("--cpu", action="store_true",
                    help="time with the process's CPU time (one thread) instead of the wall "
                         "clock: less sensitive to other jobs on a shared machine")
    args = ap.parse_args()
    if args.cpu:
        CLOCK[0] = time.process_time
    ckpt = args.ckpt
    if ckpt is None:
        for d in (os.path.join(HERE, "out"), "/work/main/bench/out"):
            c = os.path.join(d, "chute_n33462_s1_warm.ckpt")
            if os.path.exists(c):
                ckpt = c
                break
    if ckpt is not None:
        sim = pdem.restart(ckpt, threads=1)
    else:
        import chute_vs_lammps as cv
        pos, vel, L, H = cv.scene(33000, 22, 1.0, 0.05, 1)
        sim = cv.make_sim({"pos": pos, "vel": vel, "L": L, "H": H},
                          argparse.Namespace(tangential_damping=False))
    sim.run(steps=args.steps)
    print("%d particles, %d ghosts, %d pairs (%d active), %d rebuilds in %d steps"
          % (sim.store.n_own, sim.store.n - sim.store.n_own, len(sim.interactions["pair"]),
             sim.interactions["pair"].n_active(), sim.n_rebuilds, args.steps))
    if args.profile:
        import cProfile
        import pstats
        sim._rebuild()
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(5):
            sim._rebuild()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)
        return
    instrument(sim)
    if args.live:
        n0 = sim.n_rebuilds
        sim.run(steps=args.live)
        k = sim.n_rebuilds - n0
        total = TIMES.pop("TOTAL _rebuild")
        top = sum(v for name, v in TIMES.items() if not name.startswith("  "))
        print("mean stage times of the %d rebuilds in %d steps [ms]:" % (k, args.live))
        for name, v in TIMES.items():
            print("  %-28s %8.2f" % (name, 1e3 * v / k))
        print("  %-28s %8.2f" % ("rest", 1e3 * (total - top) / k))
        print("  %-28s %8.2f" % ("TOTAL", 1e3 * total / k))
        return
    best = {}
    for _ in range(args.repeats):
        TIMES.clear()
        sim._rebuild()
        for k, v in TIMES.items():
            best[k] = min(best.get(k, np.inf), v)
    total = best.pop("TOTAL _rebuild")
    top = sum(v for k, v in best.items() if not k.startswith("  "))
    print("stage times of one rebuild [ms], fastest of %d:" % args.repeats)
    for k, v in best.items():
        print("  %-28s %8.2f" % (k, 1e3 * v))
    print("  %-28s %8.2f" % ("rest", 1e3 * (total - top)))
    print("  %-28s %8.2f" % ("TOTAL", 1e3 * total))


if __name__ == "__main__":
    main()
