"""Cost of the energy tracker (docs/energy.md) on the chute scene of chute_vs_lammps.py:
the same scene with track_energy off and on, timed in alternating blocks of steps on one
rank and one thread; prints the fastest block of each and their ratio, and the balance
error of the tracked run.

    python bench/energy_cost.py [--particles 8000] [--steps 200] [--repeats 3]
"""
import argparse
import os
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi4py import MPI  # noqa: E402,F401 (initialized here: chute_vs_lammps is a driver)
import chute_vs_lammps as chute  # noqa: E402


def build(args, track):
    pos, vel, L, H = chute.scene(args.particles, 22, 1.0, 0.1, 1)
    sim = chute.make_sim({"pos": pos, "vel": vel, "L": L, "H": H},
                         types.SimpleNamespace(tangential_damping=False))
    sim.track_energy = track
    return sim


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--particles", type=int, default=8000)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    sims = {False: build(args, False), True: build(args, True)}
    best = {False: float("inf"), True: float("inf")}
    for s in sims.values():
        s.run(args.steps)                      # warm-up: lists, caches
    for _ in range(args.repeats):
        for track, s in sims.items():
            t = time.perf_counter()
            s.run(args.steps)
            best[track] = min(best[track], (time.perf_counter() - t) / args.steps)
    e = sims[True].energy()
    print("particles %d, contacts %d: %.3f ms/step off, %.3f ms/step on, ratio %.3f; "
          "balance error %.2e after %d steps" % (
              sims[True].n_particles, sims[True].n_contacts, 1e3 * best[False],
              1e3 * best[True], best[True] / best[False], e["error"],
              sims[True].step_count))


if __name__ == "__main__":
    main()
