#!/usr/bin/env python
"""Instructions per contact of pdem's step, counted with valgrind's callgrind (a stable
metric on a shared, noisy machine; wall times are not).

Runs the settled bed of bed_vs_lammps.py (its cache in bench/out/), `--warm` steps
(neighbor list, contact formation), then `--steps` measured steps. Callgrind dumps
its counters right before and right after the measured steps (two marker calls),
so the second dump holds exactly those steps; the script prints the inclusive
instruction count (Ir) of each kernel per active pair contact and per step.

Valgrind cannot run an AVX-512 build: build the kernels for it with

    PDEM_MARCH=x86-64-v3 python setup.py build_ext --inplace --force

then

    python bench/kernel_cost.py [--particles 32000] [--warm 3] [--steps 3]

(the script re-runs itself under `valgrind --tool=callgrind`; about 2 minutes at 32k).
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

os.environ.setdefault("OMP_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

MARK = "openmp_max_threads"       # callgrind --dump-before: called before and after the steps
KERNELS = {
    "contacts": ("sphere_sphere", "sphere_plane", "scatter", "gather", "build_gather_lists"),
    "integrate": ("drift", "kick"),
    "cells": ("build_pairs", "build_plane_pairs"),
}


def child(args):
    import numpy as np
    import bed_vs_lammps as B
    from pdem._kernels import contacts
    bed, _ = B.settle(args.particles, args.seed, 1, 0, os.path.join(HERE, "out"), quiet=True)
    sim = B.make_sim(bed["pos"], bed["vel"], bed["angvel"], float(bed["L"]), float(bed["H"]), 1,
                     approx=B.APPROX_FLAGS if args.approx else ())
    sim.run(steps=args.warm)
    rebuilds = sim.n_rebuilds
    contacts.openmp_max_threads()
    sim.run(steps=args.steps)
    contacts.openmp_max_threads()
    n_act = int(np.count_nonzero(sim.interactions["pair"].batch.active))
    print("CHILD particles=%d candidates=%d active=%d walls_active=%d rebuilds=%d" % (
        sim.n_particles, len(sim.interactions["pair"]), n_act, sim.interactions["plane"].n_active(),
        sim.n_rebuilds - rebuilds))


def inclusive(dump):
    """(event names, {function name: inclusive counts}) from callgrind_annotate."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100",
                          "--show-percs=no", dump],
                         capture_output=True, text=True, check=True).stdout
    events, cost = None, {}
    for line in out.splitlines():
        if line.startswith("Events shown:"):
            events = line.split(":", 1)[1].split()
            continue
        m = re.match(r"\s*((?:[\d,.]+\s+)+)\S*:(\S+)", line)
        if m and events:
            vals = [int(v.replace(",", "")) if v != "." else 0 for v in m.group(1).split()]
            if len(vals) == len(events):
                name = m.group(2)
                if name not in cost or vals[0] > cost[name][0]:
                    cost[name] = vals
    return events, cost


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--particles", type=int, default=32000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--approx", action="store_true")
    ap.add_argument("--cache", action="store_true",
                    help="also simulate the caches (--cache-sim=yes): L1 and last-level misses")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--keep", default=None, help="keep the callgrind output in this directory")
    args = ap.parse_args()
    if args.child:
        return child(args)
    tmp = args.keep or tempfile.mkdtemp(prefix="pdem_cg_")
    os.makedirs(tmp, exist_ok=True)
    for f in glob.glob(os.path.join(tmp, "callgrind.out*")):
        os.remove(f)
    cmd = ["valgrind", "--tool=callgrind"] + (["--cache-sim=yes"] if args.cache else []) + [
           "--callgrind-out-file=%s/callgrind.out" % tmp,
           "--dump-before=*contacts_*%s" % MARK,
           sys.executable, os.path.abspath(__file__), "--child",
           "--particles", str(args.particles), "--seed", str(args.seed),
           "--warm", str(args.warm), "--steps", str(args.steps)] + (["--approx"] if args.approx else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    info = [l for l in r.stdout.splitlines() if l.startswith("CHILD")]
    if r.returncode or not info:
        sys.exit("valgrind run failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])
    kv = dict(s.split("=") for s in info[0].split()[1:])
    active = int(kv["active"])
    dumps = sorted(glob.glob(os.path.join(tmp, "callgrind.out.*")), key=lambda p: int(p.rsplit(".", 1)[1]))
    # dump order: .1 = before the marker (setup + warm-up), .2 = measured steps, then the rest
    events, cost = inclusive(dumps[1])
    print("callgrind: %s particles, %s candidate pairs, %d active pair contacts, %s active wall "
          "contacts, %d measured steps (%s rebuilds)" % (kv["particles"], kv["candidates"], active,
                                                         kv["walls_active"], args.steps, kv["rebuilds"]))
    show = [e for e in ("Ir", "D1mr", "D1mw", "DLmr", "DLmw") if e in events]
    print("  %-20s" % "per active contact and step:" + "".join("%10s" % e for e in show))
    rows = []
    for mod, names in KERNELS.items():
        for name in names:
            for k, v in cost.items():
                if k.startswith("__pyx_pw_") and re.search(r"_kernels_\d+%s_\d+%s$" % (mod, name), k):
                    rows.append((name, v))
    rows.append(("(whole run)", max(cost.values(), key=lambda v: v[0])))
    for name, v in rows:
        print("  %-20s" % name + "".join("%10.1f" % (v[events.index(e)] / active / args.steps)
                                          for e in show))
    print("callgrind files in %s" % tmp)


if __name__ == "__main__":
    main()
