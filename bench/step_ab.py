#!/usr/bin/env python
"""Whole steps of two pdem trees, alternated: each round runs tree A, then tree B, as
separate processes on the same warm checkpoint (made by chute_vs_lammps.py), 1 or more
ranks; a run restarts, makes 5 untimed steps, then times `--steps` steps of sim.run.
For changes outside the kernels (the step's Python, MPI calls), whose few percent the
machine's minute-to-minute noise hides in a comparison against LAMMPS: printed are
each tree's fastest and median run and in how many rounds B was the faster.

  .venv/bin/python bench/step_ab.py /path/to/treeA /path/to/treeB \
      [--ckpt bench/out/chute_n33462_s1_warm.ckpt] [--steps 400] [--rounds 8] [--ranks 1 2]

Each tree must have its kernels built; its `pdem` is imported from it (PYTHONPATH)."""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

WORKER = """
import sys, time, pdem
from mpi4py import MPI
if not pdem.__file__.startswith(sys.argv[3]):
    sys.exit("pdem imported from %s, not from the tree %s" % (pdem.__file__, sys.argv[3]))
sim = pdem.restart(sys.argv[1], threads=1)
sim.run(steps=5)
MPI.COMM_WORLD.Barrier()
t0 = time.perf_counter()
sim.run(steps=int(sys.argv[2]))
t = MPI.COMM_WORLD.allreduce(time.perf_counter() - t0, op=MPI.MAX)
if sim.rank == 0:
    print("STEP_AB %.6f" % t)
"""


def run(tree, ranks, args):
    # run in the tree: `python -c` puts the working directory first on sys.path, so a
    # run started in another checkout would import that checkout's pdem
    tree = os.path.abspath(tree)
    env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "-n", str(ranks), "--bind-to", "none", sys.executable, "-c", WORKER,
           os.path.abspath(args.ckpt), str(args.steps), os.path.join(tree, "")]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree)
    lines = [l for l in out.stdout.splitlines() if l.startswith("STEP_AB ")]
    if out.returncode != 0 or not lines:
        sys.exit("run failed (%s, %d ranks, exit %d):\n%s" % (tree, ranks, out.returncode,
                                                             out.stderr[-2000:]))
    return float(lines[-1].split()[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", nargs=2, help="two checkouts (A, B)")
    ap.add_argument("--ckpt", default=os.path.join(HERE, "out", "chute_n33462_s1_warm.ckpt"))
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    if not os.path.exists(args.ckpt):
        sys.exit("no checkpoint %s: run bench/chute_vs_lammps.py first" % args.ckpt)
    times = {(t, n): [] for t in (0, 1) for n in args.ranks}
    for r in range(args.rounds):
        for n in args.ranks:
            for t in (0, 1):
                times[t, n].append(run(args.trees[t], n, args))
        print("round %d: %s" % (r + 1, ", ".join(
            "%d rank(s) A %.3f B %.3f s" % (n, times[0, n][-1], times[1, n][-1])
            for n in args.ranks)), flush=True)
    print("\n%d steps of %s, %d rounds" % (args.steps, args.ckpt, args.rounds))
    for n in args.ranks:
        a, b = times[0, n], times[1, n]
        wins = sum(y < x for x, y in zip(a, b))
        print("%d rank(s): A fastest %.3f median %.3f s; B fastest %.3f median %.3f s; "
              "B/A fastest %.3f, median %.3f; B faster in %d of %d rounds"
              % (n, min(a), statistics.median(a), min(b), statistics.median(b),
                 min(b) / min(a), statistics.median(b) / statistics.median(a), wins, len(a)))


if __name__ == "__main__":
    main()
