#!/usr/bin/env python
"""Resident memory per particle, pdem vs LAMMPS, on the flowing chute (issue 14 part 7).

The scene of bench/chute_vs_lammps.py (in.chute's law and tilt, a plane floor) at two
sizes (default about 33,000 and 130,000 spheres), each code run from the same initial
state for --steps steps on one rank (the flow starts, the neighbor lists are rebuilt
many times, contacts form), under GNU time: its "maximum resident set size" is the
peak RSS of the rank process (pdem: the Python process with numpy, mpi4py and h5py
loaded; LAMMPS: the lmp process). Printed per size: the peak RSS of both codes, RSS per
particle, and the marginal memory per particle between the two sizes (the slope, which
leaves out what does not grow with the system: the interpreter and libraries for pdem,
the binary for LAMMPS), with the ratio pdem / LAMMPS. Memory does not depend on the
machine's load, unlike timings. The pdem run skips the flow-state report of the chute
worker before and after the run (sim.particles() and sim.contacts() copies: output,
which LAMMPS's run does not make; --no-state).

Usage: bench/memory_vs_lammps.py [--sizes 33000 130000] [--steps 1000] [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import driver_process  # noqa: E402, F401 (before numpy and mpi4py)

import numpy as np  # noqa: E402

import chute_vs_lammps as chute  # noqa: E402
from lammps_run import find_lammps, run_input, write_spheres_data  # noqa: E402

TIME = "/usr/bin/time"


def peak_rss_mib(path):
    """GNU time's %M (KiB) written to `path`."""
    with open(path) as fh:
        return int(fh.read().split()[-1]) / 1024.0


def measure(size, args, lmp):
    """Peak RSS (MiB) of pdem and LAMMPS on the chute of about `size` spheres."""
    pos, vel, L, H = chute.scene(size, args.layers, 1.0, 0.05, 1)
    n = len(pos)
    init = os.path.join(args.outdir, "memory_n%d.npz" % n)
    np.savez(init, pos=pos, vel=vel, L=np.float64(L), H=np.float64(H))
    data = os.path.join(args.outdir, "memory_n%d.data" % n)
    write_spheres_data(data, "pdem memory benchmark: %d spheres" % n, pos, vel,
                       np.zeros_like(vel), chute.DIAMETER, chute.DENSITY, (0, 0, 0), (L, L, H))
    rss = {}
    fd, out = tempfile.mkstemp(suffix=".json", dir=args.outdir)
    os.close(fd)
    timed = os.path.join(args.outdir, "memory_time.txt")
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "-n", "1", "--bind-to", "none", TIME, "-f", "%M", "-o", timed,
           sys.executable, "-m", "mpi4py", os.path.join(HERE, "chute_vs_lammps.py"),
           "--worker", "pdem", "--init", init, "--out", out, "--steps", str(args.steps),
           "--warmup", "0", "--no-state"]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode:
        sys.exit("pdem run failed:\n" + (res.stdout + res.stderr)[-3000:])
    with open(out) as fh:
        pdem_run = json.load(fh)
    os.unlink(out)
    rss["pdem"] = peak_rss_mib(timed)
    args.tangential_damping = False
    inp = os.path.join(args.outdir, "in.memory")
    chute.lammps_input(inp, args, chute.LMP_TIMED, chute.READ_DATA, 1, args.steps, data=data,
                       steps=args.steps)
    run_input(lmp, inp, os.path.join(args.outdir, "log.memory"),
              ["mpirun", "-n", "1", "--bind-to", "none", TIME, "-f", "%M", "-o", timed])
    rss["lammps"] = peak_rss_mib(timed)
    return n, rss, pdem_run["n_rebuilds"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs=2, default=(33000, 130000))
    ap.add_argument("--layers", type=int, default=22)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--outdir", default=os.path.join(HERE, "out"))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    lmp = find_lammps()
    if lmp is None or not os.path.exists(TIME):
        sys.exit("needs LAMMPS (apt-get install lammps) and GNU time (apt-get install time)")
    rows = [measure(s, args, lmp) for s in args.sizes]
    print("chute, %d steps from the initial state, one rank each; peak resident memory"
          % args.steps)
    print("%10s %10s %12s %12s %14s %14s" % ("particles", "rebuilds", "pdem MiB",
                                            "LAMMPS MiB", "pdem B/part", "LAMMPS B/part"))
    for n, rss, rebuilds in rows:
        print("%10d %10d %12.1f %12.1f %14.0f %14.0f" % (
            n, rebuilds, rss["pdem"], rss["lammps"], rss["pdem"] * 2 ** 20 / n,
            rss["lammps"] * 2 ** 20 / n))
    (n1, r1, _), (n2, r2, _) = rows
    slope = {c: (r2[c] - r1[c]) * 2 ** 20 / (n2 - n1) for c in r1}
    print("marginal bytes per particle (%d -> %d): pdem %.0f, LAMMPS %.0f, ratio %.2f" % (
        n1, n2, slope["pdem"], slope["lammps"], slope["pdem"] / slope["lammps"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"steps": args.steps, "rows": [{"particles": n, "rss_mib": r,
                                                      "rebuilds": b} for n, r, b in rows],
                       "marginal_bytes": slope}, fh, indent=1)


if __name__ == "__main__":
    main()
