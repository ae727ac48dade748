#!/usr/bin/env python
"""Where one rank's step goes: the time inside the step's kernels and MPI waits, and the
Python between them, per step and rank, on a warm checkpoint (chute_vs_lammps.py makes
the chute's). Each gap between two timed calls is labelled by them ("drift -> pack": the
Python after the drift and before the ghost refresh packs its message); a rebuild's
work falls into the gap it interrupts, averaged over the steps.

  mpirun -n 2 .venv/bin/python -m mpi4py bench/step_timeline.py \
      [--ckpt bench/out/chute_n33462_s1_warm.ckpt] [--steps 400] [--also sim.planes.move ...]

--also times further methods, written as Python expressions from `sim` (e.g.
`sim.frame.moved2`, `sim.interactions["pair"].near.pairs_of`), so that a gap can be
split further. The wrappers cost ~1 us per call."""
import argparse
import os
import time
import types

from mpi4py import MPI

import pdem
from pdem import simulation
from pdem.contact import kinds
from pdem.parallel import ghosts
from pdem.scheme import explicit

HERE = os.path.dirname(os.path.abspath(__file__))
clock = time.perf_counter


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", default=os.path.join(HERE, "out", "chute_n33462_s1_warm.ckpt"))
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--also", nargs="*", default=[], help="methods to time, from `sim`")
    args = ap.parse_args()
    sim = pdem.restart(args.ckpt, threads=1)
    sim.run(steps=2)
    events = []

    def timed(f, name):
        def call(*a, **k):
            t = clock()
            r = f(*a, **k)
            events.append((name, t, clock()))
            return r
        return call

    def shim(module, attr, names):
        """module.attr (a kernel module) replaced by a namespace whose `names` are timed."""
        real = getattr(module, attr)
        ns = types.SimpleNamespace(**{n: getattr(real, n) for n in dir(real)
                                      if not n.startswith("__")})
        for n in names:
            setattr(ns, n, timed(getattr(real, n), n))
        setattr(module, attr, ns)

    shim(simulation, "integrate", ["drift"])
    shim(explicit, "integrate", ["kick", "kick_and_predict"])
    shim(kinds, "ck", ["sphere_sphere", "sphere_plane"])
    for n in ("copy_images", "pack", "unpack"):
        setattr(ghosts, n, timed(getattr(ghosts, n), n))
    ghosts.MPI = types.SimpleNamespace(Request=types.SimpleNamespace(
        Waitall=timed(MPI.Request.Waitall, "Waitall")))
    sim.collective.max_floats = timed(sim.collective.max_floats, "Allreduce")
    for spec in args.also:
        owner, method = spec.rsplit(".", 1)
        obj = eval(owner, {"sim": sim})
        setattr(obj, method, timed(getattr(obj, method), spec))
    step = sim.step
    sim.step = lambda: (events.append(("step", clock(), clock())), step())
    MPI.COMM_WORLD.Barrier()
    t0 = clock()
    sim.run(steps=args.steps)
    total = clock() - t0
    events.append(("step", clock(), clock()))
    inside, gaps = {}, {}
    for (a, s0, e0), (b, s1, _) in zip(events, events[1:]):
        inside[a] = inside.get(a, 0.0) + e0 - s0
        gaps[a, b] = gaps.get((a, b), 0.0) + s1 - e0
    us = 1e6 / args.steps
    lines = ["rank %d: %.1f us per step; in the calls %.1f, Python between them %.1f"
             % (sim.rank, total * us, sum(inside.values()) * us, sum(gaps.values()) * us)]
    lines += ["  call %-40s %8.1f" % (k, v * us)
              for k, v in sorted(inside.items(), key=lambda x: -x[1]) if k != "step"]
    lines += ["  gap  %-40s %8.1f" % ("%s -> %s" % k, v * us)
              for k, v in sorted(gaps.items(), key=lambda x: -x[1]) if v * us >= 1.0]
    report = MPI.COMM_WORLD.gather("\n".join(lines))
    if sim.rank == 0:
        print("%d steps of %s, us per step\n%s" % (args.steps, args.ckpt, "\n".join(report)))


if __name__ == "__main__":
    main()
