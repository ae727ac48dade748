#!/usr/bin/env python
"""NSCD solvers: sweeps to converge and time per step, NLGS versus Jacobi, against grain
count, threads and MPI ranks.

The scene: N disks (radius R = 5 mm, up to 1e-4 R smaller: gaps below 1 um) on a
hexagonal lattice filling a square box of three segments, at rest under gravity. The
first steps must carry the weight of a column sqrt(N) grains high through the contact
network, which is what the iterative solvers find hard: NLGS needs a number of sweeps
that grows with the column height, Jacobi more. For each size, solver and thread count
the script times `--steps` steps (after one untimed warm-up step that builds
nothing but warms the caches) and records the sweeps of each step, the contacts,
the wall time per step and per contact-sweep (on several ranks the contacts are the
active contacts of pdem.Simulation.n_contacts, each once), and of a step's time the
seconds in the sweeps, in the exchanges after them (ghost velocities and the residual's
maximum over ranks) and, of those, waiting for the other ranks (NSCD.timers; the
slowest rank's). Sweeps are capped at
--itmax (a capped run is flagged, with its last residual).

Run on one process, or under MPI (pdem.Simulation with the NSCD scheme on every rank):
    python bench/nscd_convergence.py --sizes 1000,10000 --json bench/out/nscd_1.json
    mpirun -n 2 python -m mpi4py bench/nscd_convergence.py --sizes 1000,10000 \
        --json bench/out/nscd_2.json
    python bench/nscd_convergence.py --plot bench/out/nscd_1.json bench/out/nscd_2.json \
        --png bench/out/nscd_convergence.png
The machine has 2 shared cores: run each large size once (they take minutes).
"""
import argparse
import json
import math
import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

R = 5e-3


def lattice(n, seed=0):
    """Hexagonal rows of `side` disks filling a square: positions, radii, box width."""
    side = max(2, int(round(math.sqrt(n))))
    rows = int(math.ceil(n / side))
    k = np.arange(n)
    row, col = k // side, k % side
    x = np.column_stack([R + 2 * R * col + R * (row % 2), R + math.sqrt(3.0) * R * row])
    r = R * (1.0 - 1e-4 * np.random.default_rng(seed).random(n))
    width = 2 * R * side + R
    return x, r, width, R + math.sqrt(3.0) * R * rows + 2 * R


def make(n, threads, comm, friction, solver, args):
    """The lattice in pdem.Simulation with the NSCD scheme on the ranks of comm."""
    import pdem
    from mpi4py import MPI
    x, r, w, h = lattice(n)
    scheme = pdem.NSCD(solver, tol=args.tol, alert=args.alert * R, itmax=args.itmax)
    sim = pdem.Simulation(pdem.Domain((-R, -R), (w + R, h + R), dim=2), args.dt,
                          gravity=(0.0, -9.81, 0.0), comm=MPI.COMM_SELF if comm is None
                          else comm, skin=args.alert * R, threads=threads, scheme=scheme)
    sim.material("glass", 2500.0, friction=friction)
    sim.add_segments([[0.0, h], [0.0, 0.0], [w, 0.0]], [[0.0, 0.0], [w, 0.0], [w, h]], "glass")
    sim.add_spheres(x, r, "glass")
    return sim


def measure(n, solver, threads, comm, args):
    sim = make(n, threads, comm, args.friction, solver, args)
    rec = {"n": n, "solver": solver, "threads": threads,
           "ranks": 1 if comm is None else comm.size, "sweeps": [], "seconds": [],
           "contacts": [], "capped": 0, "residual": []}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        timers0 = dict(sim.scheme.timers)
        for k in range(args.steps + 1):
            if comm is not None:
                comm.Barrier()
            t0 = time.perf_counter()
            sim.step()
            dt = time.perf_counter() - t0
            if comm is not None:
                dt = comm.allreduce(dt, op=max_op())
            if k == 0 and args.steps > 1:
                timers0 = dict(sim.scheme.timers)
                continue                      # warm-up (first touch of the arrays)
            rec["sweeps"].append(int(sim.scheme.sweeps))
            rec["seconds"].append(dt)
            rec["contacts"].append(sim.n_contacts)
            rec["residual"].append(float(sim.scheme.residual))
    # seconds per step in the sweeps, in the exchanges after them and waiting there
    # (the slowest rank's)
    for key, value in sim.scheme.timers.items():
        t = (value - timers0[key]) / max(1, len(rec["seconds"]))
        rec["%s_seconds" % key] = t if comm is None else comm.allreduce(t, op=max_op())
    rec["capped"] = sum(1 for w in caught if w.category.__name__ == "ConvergenceWarning")
    sweeps = np.array(rec["sweeps"], float)
    rec["mean_sweeps"] = float(sweeps.mean())
    rec["mean_seconds"] = float(np.mean(rec["seconds"]))
    rec["ns_per_contact_sweep"] = float(1e9 * np.sum(rec["seconds"])
                                        / max(1.0, np.sum(sweeps * rec["contacts"])))
    return rec


def max_op():
    from mpi4py import MPI
    return MPI.MAX


def plot(paths, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    recs = []
    for path in paths:
        with open(path) as fh:
            recs += json.load(fh)["runs"]
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    keys = sorted({(r["solver"], r["threads"], r["ranks"]) for r in recs})
    for key in keys:
        rs = sorted((r for r in recs if (r["solver"], r["threads"], r["ranks"]) == key),
                    key=lambda r: r["n"])
        n = [r["n"] for r in rs]
        label = "%s, %d thread%s, %d rank%s" % (key[0], key[1], "s" * (key[1] > 1), key[2],
                                                 "s" * (key[2] > 1))
        style = "-o" if key[0] == "nlgs" else "--s"
        ax[0].loglog(n, [r["mean_sweeps"] for r in rs], style, label=label)
        ax[1].loglog(n, [r["mean_seconds"] for r in rs], style, label=label)
        for r in rs:
            if r["capped"]:
                ax[0].annotate("cap", (r["n"], r["mean_sweeps"]), fontsize=7)
    ax[0].set_xlabel("grains")
    ax[0].set_ylabel("sweeps per step (to tol/dt)")
    ax[1].set_xlabel("grains")
    ax[1].set_ylabel("wall time per step [s]")
    ax[0].legend(fontsize=7)
    ax[0].set_title("NSCD convergence, a column at rest")
    ax[1].set_title("cost per step")
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print("plot written to %s" % png)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,3000,10000,30000,100000")
    ap.add_argument("--solvers", default="nlgs,jacobi")
    ap.add_argument("--threads", default="1", help="comma list, e.g. 1,2")
    ap.add_argument("--steps", type=int, default=2, help="timed steps per run (+1 warm-up)")
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--tol", type=float, default=1e-6, help="tolerance [m] (tol/dt = g dt / 10)")
    ap.add_argument("--alert", type=float, default=0.5, help="alert distance / R")
    ap.add_argument("--itmax", type=int, default=3000)
    ap.add_argument("--friction", type=float, default=0.0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--png", default=None)
    ap.add_argument("--plot", nargs="*", default=None, help="only plot these JSON files")
    args = ap.parse_args(argv)
    if args.plot:
        plot(args.plot, args.png or "nscd_convergence.png")
        return
    comm = None
    if "OMPI_COMM_WORLD_SIZE" in os.environ or "PMI_SIZE" in os.environ:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    rank = 0 if comm is None else comm.rank
    runs = []
    for n in [int(s) for s in args.sizes.split(",")]:
        for solver in args.solvers.split(","):
            for threads in [int(t) for t in args.threads.split(",")]:
                rec = measure(n, solver, threads, comm, args)
                runs.append(rec)
                if rank == 0:
                    print("N=%7d %-6s threads=%d ranks=%d: sweeps/step %s%s, contacts %d, "
                          "%.4f s/step (sweeps %.4f, exchange %.4f, waiting %.4f), "
                          "%.1f ns per contact-sweep"
                          % (n, solver, threads, rec["ranks"], rec["sweeps"],
                             " (capped at itmax=%d)" % args.itmax if rec["capped"] else "",
                             rec["contacts"][-1], rec["mean_seconds"], rec["sweeps_seconds"],
                             rec["exchange_seconds"], rec["wait_seconds"],
                             rec["ns_per_contact_sweep"]), flush=True)
    if rank == 0:
        result = {"args": vars(args), "runs": runs}
        if args.json:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as fh:
                json.dump(result, fh, indent=2)
            print("results written to %s" % args.json)
        if args.png and args.json:
            plot([args.json], args.png)


if __name__ == "__main__":
    main()
