#!/usr/bin/env python
"""The pair kernel in the pair list's order (in-pass sums: what a step does; grid order
since session 17, id order before) against the same candidates in the particles'
memory order (by the lower local index, then the higher; rows packed in that order)
with the sums made afterwards by `gather` in the pair list's order: the same force and
torque sums bit for bit (checked); and the memory order with in-pass sums (each
particle's contributions then in memory order: other bits).

  PYTHONPATH=$PWD .venv/bin/python bench/pair_order.py \
      [--ckpt bench/out/chute_n33462_s1_warm.ckpt] [--steps 20] [--rounds 30]

Between calls a 32 MB array is summed, so that each call starts with the caches a step
leaves (the drift, the ghost refresh and the other kernels run in between). Prints the
fastest of `--rounds` for each order: the kernel, the gather, their sum, and how often
consecutive candidates share their lower local index or move to the next one."""
import argparse
import os

import numpy as np
import time

import pdem
from pdem._kernels import contacts as ck
from pdem.contact.kinds import NO_ROWS


class Pooled:
    """A copy of the pair kind's batch with its candidates in `order`, the pool rows of
    the touching ones packed in that order."""

    def __init__(self, kind, order):
        b = kind.batch
        self.i1, self.i2 = b.i1[order], b.i2[order]
        self.active0 = b.active[order]
        slot = b.slot[order]
        has = slot >= 0
        n = int(has.sum())
        self.state0 = np.zeros_like(b.state)
        self.state0[:n] = b.state[slot[has]]
        self.slot0 = np.full(len(order), -1, np.int32)
        self.slot0[has] = np.arange(n, dtype=np.int32)
        self.free0 = np.arange(len(b.state) - 1, n - 1, -1, dtype=np.int32)

    def fresh(self):
        """The state before the step (each timed call starts from it)."""
        self.state, self.slot, self.free = self.state0.copy(), self.slot0.copy(), self.free0.copy()
        self.n_free, self.active = len(self.free), self.active0.copy()
        return self


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--ckpt", default=os.path.join(here, "out", "chute_n33462_s1_warm.ckpt"))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    sim = pdem.restart(args.ckpt, threads=1)
    sim.run(steps=args.steps)
    st, table = sim.store, sim.materials.table()
    nmat = max(1, len(sim.materials.materials))
    kind = sim.interactions["pair"]
    b = kind.batch
    lo, hi = np.minimum(b.i1, b.i2), np.maximum(b.i1, b.i2)
    memory_order = np.lexsort((hi, lo))
    ids, mem = Pooled(kind, np.arange(len(b.i1))), Pooled(kind, memory_order)
    # gather lists: each owned particle's rows in ascending partner id (the pair list's
    # order), their pair indices mapped to the memory-ordered copy
    start, entry = ck.build_gather_lists(kind.owner1, kind.owner2, st.n_own)[:2]
    where = np.empty_like(memory_order)
    where[memory_order] = np.arange(len(memory_order))
    entry = (2 * where[entry // 2] + entry % 2).astype(entry.dtype)
    no_walls = np.zeros(st.n_own + 1, np.int64)
    sums = {name: (np.zeros((st.n_own, 3)), np.zeros((st.n_own, 3)))
            for name in ("ids", "mem", "mem_inpass")}
    common = (st.pos, st.image, sim.cell.kernel, st.vel, st.angvel, st.radius, st.mass,
              st.material, table, nmat, sim.dt, sim.flags)
    evict = np.ones(4_000_000)
    best = {}
    for r in range(args.rounds):
        for name, p in (("ids", ids), ("mem", mem), ("mem_inpass", mem)):
            p.fresh()
            f, t = sums[name]
            evict.sum()
            t0 = time.perf_counter()
            if name != "mem":
                ck.sphere_sphere(p.i1, p.i2, *common, p.active, p.state, 1, kind.owner, f, t,
                                 pool=p, image_from=kind.image_from)
                t1 = t2 = time.perf_counter()
            else:
                ck.sphere_sphere(p.i1, p.i2, *common, p.active, p.state, 1, pool=p,
                                 image_from=kind.image_from)
                t1 = time.perf_counter()
                ck.gather(start, entry, p.active, p.state, no_walls, *NO_ROWS[1:], st.radius,
                          sim.lever_flags, f, t, 1, False, p.slot)
                t2 = time.perf_counter()
            for key, v in (("kernel", t1 - t0), ("gather", t2 - t1), ("total", t2 - t0)):
                best[name, key] = min(best.get((name, key), np.inf), v)
    same = all(sums["ids"][i].tobytes() == sums["mem"][i].tobytes() for i in (0, 1))
    print("candidates %d, touching %d; the same sums bit for bit: %s" % (
        len(b.i1), int(b.active.sum()), same))
    for name, label, p in (("ids", "pair-list order, in-pass sums", ids),
                           ("mem", "memory order, then gather", mem),
                           ("mem_inpass", "memory order, in-pass sums", mem)):
        d = np.diff(np.minimum(p.i1, p.i2))
        print("%-31s kernel %.3f ms, gather %.3f ms, total %.3f ms (lower index: same %.2f, "
              "next %.2f)" % (label, best[name, "kernel"] * 1e3, best[name, "gather"] * 1e3,
                              best[name, "total"] * 1e3, np.mean(d == 0), np.mean(d == 1)))
    print("memory order / pair-list order: %.3f with the gather (same bits), %.3f with in-pass "
          "sums (other bits)" % (best["mem", "total"] / best["ids", "total"],
                                 best["mem_inpass", "total"] / best["ids", "total"]))


if __name__ == "__main__":
    main()
