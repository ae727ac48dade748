#!/usr/bin/env python
"""Cost of pdem's neighbor search and time step versus particle count (should be linear).

For each N (default 5k, 10k, 20k, 40k, 80k) a dense random packing of N spheres is
built, pdem is warmed up (one step), then on one thread (default):
  build_pairs   the cell-list + Verlet-list kernel alone, pdem._kernels.cells.build_pairs
  rebuild       the whole neighbor rebuild of a step (Simulation._rebuild: wrap, ghosts,
                build_pairs, dedup, contact-history carry-over, gather lists, plane pairs)
  step          one time step without a rebuild (drift, contacts, gather, kick)
  step+rebuild  one time step with a forced rebuild
are timed (the fastest of --repeat runs, which filters out other jobs on the machine),
and printed per particle (constant = linear cost) with the least-squares exponent b of
time ~ N^b over all N (b = 1: linear).

Packing (--packing bed, default): the settled bed of bench/bed_vs_lammps.py (32,000
spheres, d = 1 mm, ~5 contacts per particle; settled once and cached in bench/out/),
mirrored across its side walls into 2 x 2 copies (mirror images never overlap) and
cropped to the N particles nearest the corner (a square column of the bed, whole
depth). --packing fcc: a jittered FCC lattice instead (no settling needed).
--shuffle: random particle order in memory (pdem does not sort particles spatially;
this shows what losing spatial order costs).

Usage: bench/neighbor_scaling.py [--sizes 5000,10000,...] [--repeat R] [--threads T]
       [--packing bed|fcc] [--shuffle] [--json FILE]
"""
import argparse
import json
import math
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import pdem  # noqa: E402
from pdem._kernels import cells  # noqa: E402
import bed_vs_lammps as bed  # noqa: E402   (parameters and the settled bed)

R = bed.RADIUS
D = 2 * R


def bed_packing(n_max, seed, outdir):
    """Mirror-tiled settled bed, enough copies for n_max particles."""
    b, _ = bed.settle(32000, seed, 1, 40000, outdir, quiet=True)
    pos, L = b["pos"], float(b["L"])
    k = 1
    while len(pos) * k * k < n_max:
        k += 1
    tiles = []
    for i in range(k):
        for j in range(k):
            t = pos.copy()
            if i % 2:
                t[:, 0] = L - t[:, 0]
            if j % 2:
                t[:, 1] = L - t[:, 1]
            t[:, 0] += i * L
            t[:, 1] += j * L
            tiles.append(t)
    return np.concatenate(tiles)


def crop(big, n):
    """The n particles of the tiled bed nearest the corner (a square column), in their
    original (spatially coherent) order."""
    key = np.maximum(big[:, 0], big[:, 1])
    sel = np.sort(np.argsort(key, kind="stable")[:n])
    return big[sel]


def fcc_packing(n, seed):
    """Jittered FCC, nearest-neighbour distance d, jitter +-0.01 d per coordinate."""
    a = D * math.sqrt(2.0)                       # cubic cell edge
    m = int(math.ceil((n / 4.0) ** (1.0 / 3.0)))
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    iz, iy, ix = np.meshgrid(np.arange(m), np.arange(m), np.arange(m), indexing="ij")
    cellpos = np.column_stack([ix.ravel(), iy.ravel(), iz.ravel()])
    pos = ((cellpos[:, None, :] + basis[None, :, :]).reshape(-1, 3) * a)[:n] + R
    rng = np.random.default_rng(seed)
    return pos + rng.uniform(-0.01, 0.01, pos.shape) * D


def make_sim(pos, threads):
    lo = pos.min(axis=0) - 2 * D
    hi = pos.max(axis=0) + 2 * D
    lo[2] = 0.0
    dom = pdem.Domain(lo, hi, periodic=(False, False, False))
    sim = pdem.Simulation(dom, bed.DT, gravity=(0.0, 0.0, -bed.GRAVITY), skin=bed.SKIN, threads=threads)
    m = sim.material("grain", density=bed.DENSITY, law="hooke", kn=bed.KN, kt=bed.KT,
                     gamma_n=bed.GAMMA_N, gamma_t=bed.GAMMA_T, friction=bed.MU)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)        # floor
    sim.add_spheres(pos, R, m)
    return sim


CLOCK = time.perf_counter


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = CLOCK()
        fn()
        times.append(CLOCK() - t)
    return min(times)


def measure(sim, repeat, threads):
    sim.run(steps=1)                               # warm-up, builds the lists
    st = sim.store
    order = np.argsort(st.id, kind="stable")
    t_kernel = best(lambda: cells.build_pairs(st.pos, st.image, sim.cell.kernel, st.radius, st.id,
                                              st.n_own, sim.skin, order, threads), repeat)
    t_rebuild = best(sim._rebuild, repeat)
    # steps without a rebuild: time each, keep those where no rebuild happened
    plain = []
    for _ in range(repeat + 2):
        nb = sim.n_rebuilds
        t = CLOCK()
        sim.step()
        dt = CLOCK() - t
        if sim.n_rebuilds == nb:
            plain.append(dt)
    forced = []
    for _ in range(repeat):
        sim.request_rebuild()                      # a rebuild in this step
        t = CLOCK()
        sim.step()
        forced.append(CLOCK() - t)
    c = sim.contacts()
    n = sim.n_particles
    return {"particles": n, "build_pairs_s": t_kernel, "rebuild_s": t_rebuild,
            "step_s": min(plain) if plain else float("nan"), "step_rebuild_s": min(forced),
            "candidates_per_particle": 2.0 * len(sim.interactions["pair"]) / n,
            "contacts_per_particle": 2.0 * int((c["kind"] == "pair").sum()) / n}


def exponent(ns, ts):
    ns, ts = np.log(np.asarray(ns, float)), np.log(np.asarray(ts, float))
    b, a = np.polyfit(ns, ts, 1)
    return float(b)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="5000,10000,20000,40000,80000")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--packing", choices=("bed", "fcc"), default="bed")
    ap.add_argument("--shuffle", action="store_true", help="random particle order in memory")
    ap.add_argument("--clock", choices=("cpu", "wall"), default=None,
                    help="cpu: process CPU time (default with 1 thread: immune to other jobs "
                         "time-slicing the core); wall: elapsed time (default with more threads)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--outdir", default=os.path.join(HERE, "out"))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    global CLOCK
    clock = args.clock or ("cpu" if args.threads == 1 else "wall")
    CLOCK = time.process_time if clock == "cpu" else time.perf_counter
    rng = np.random.default_rng(args.seed)
    big = bed_packing(max(sizes), args.seed, args.outdir) if args.packing == "bed" else None
    print("pdem neighbor/step scaling: packing %s%s, %d thread(s), %s time, fastest of %d, "
          "load average %.2f" % (args.packing, " (shuffled order)" if args.shuffle else "",
                                 args.threads, clock, args.repeat, os.getloadavg()[0]))
    print(bed.pdem_fingerprint())
    hdr = ("%8s %7s %7s | %10s %8s | %10s %8s | %10s %8s | %10s %8s"
           % ("N", "cand/p", "cont/p", "build [ms]", "ns/p", "rebuild", "ns/p", "step [ms]", "ns/p",
              "step+reb", "ns/p"))
    print(hdr)
    rows = []
    for n in sizes:
        pos = crop(big, n) if big is not None else fcc_packing(n, args.seed)
        if args.shuffle:
            pos = pos[rng.permutation(len(pos))]
        sim = make_sim(pos, args.threads)
        r = measure(sim, args.repeat, args.threads)
        rows.append(r)
        print("%8d %7.2f %7.2f | %10.3f %8.1f | %10.3f %8.1f | %10.3f %8.1f | %10.3f %8.1f" % (
            r["particles"], r["candidates_per_particle"], r["contacts_per_particle"],
            1e3 * r["build_pairs_s"], 1e9 * r["build_pairs_s"] / n,
            1e3 * r["rebuild_s"], 1e9 * r["rebuild_s"] / n,
            1e3 * r["step_s"], 1e9 * r["step_s"] / n,
            1e3 * r["step_rebuild_s"], 1e9 * r["step_rebuild_s"] / n), flush=True)
        del sim
    ns = [r["particles"] for r in rows]
    fits = {k: exponent(ns, [r[k] for r in rows])
            for k in ("build_pairs_s", "rebuild_s", "step_s", "step_rebuild_s")}
    print("least-squares exponent b of time ~ N^b (1 = linear): " +
          ", ".join("%s %.3f" % (k[:-2], v) for k, v in fits.items()))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"packing": args.packing, "shuffle": args.shuffle, "threads": args.threads,
                       "clock": clock, "pdem_build": bed.pdem_fingerprint(),
                       "repeat": args.repeat, "rows": rows, "exponents": fits}, fh, indent=2)
        print("results written to %s" % args.json)


if __name__ == "__main__":
    main()
