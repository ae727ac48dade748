#!/usr/bin/env python
"""pdem's phase times on the flowing chute's warm checkpoint (made by
chute_vs_lammps.py) in wall time and in process CPU time, alternating source trees
(e.g. main and a branch) in one invocation, each run its own process, one rank.

  PYTHONPATH=$PWD .venv/bin/python bench/phase_clocks.py --trees /work/main $PWD \
      [--ckpt bench/out/chute_n33462_s1_warm.ckpt] [--steps 1000] [--repeats 3]

A run restarts from the checkpoint, makes one untimed step, then `--steps` steps twice:
once with the phase timers on perf_counter (wall), once on process_time (CPU of the
process: what the phase costs without the waits of a shared machine). Printed per tree:
the fastest of the repeats for each phase and clock, and every repeat's values."""
import argparse
import json
import os
import subprocess
import sys
import time

PHASES = ("neighbor", "comm", "contact", "integrate", "output")


def worker(ckpt, steps):
    import pdem
    from pdem import simulation
    from pdem.scheme import explicit
    sim = pdem.restart(ckpt, threads=1)
    sim.run(steps=1)
    out = {}
    for clock in ("wall", "cpu"):
        fn = time.perf_counter if clock == "wall" else time.process_time
        shim = type("clock", (), {"perf_counter": staticmethod(fn)})
        simulation.time, explicit.time = shim, shim       # the phase timers' clock
        for k in sim.timers:
            sim.timers[k] = 0.0
        t0 = fn()
        sim.run(steps=steps)
        out[clock] = dict(sim.timers, total=fn() - t0)
        simulation.time = explicit.time = time
    print("PHASES " + json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--trees", nargs="+", required=True, help="source trees (PYTHONPATH)")
    ap.add_argument("--ckpt", default=os.path.join(here, "out", "chute_n33462_s1_warm.ckpt"))
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.ckpt, args.steps)
    runs = {t: [] for t in args.trees}
    for r in range(args.repeats):
        for tree in args.trees:
            env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1")
            res = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker",
                                  "--trees", tree, "--ckpt", args.ckpt, "--steps",
                                  str(args.steps)], env=env, capture_output=True, text=True)
            line = [l for l in res.stdout.splitlines() if l.startswith("PHASES ")]
            if not line:
                sys.exit(res.stdout + res.stderr)
            runs[tree].append(json.loads(line[0][7:]))
            print("repeat %d %s (load %.1f): %s" % (r + 1, tree, os.getloadavg()[0], "; ".join(
                "%s %s" % (c, " ".join("%s %.3f" % (k, runs[tree][-1][c][k])
                                       for k in PHASES + ("total",)))
                for c in ("wall", "cpu"))), flush=True)
    print("\nfastest of %d, %d steps [s]:" % (args.repeats, args.steps))
    for tree in args.trees:
        for c in ("wall", "cpu"):
            print("  %-28s %-4s %s" % (tree[-28:], c, " ".join(
                "%s %.3f" % (k, min(x[c][k] for x in runs[tree])) for k in PHASES + ("total",))))


if __name__ == "__main__":
    main()
