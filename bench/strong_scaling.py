#!/usr/bin/env python
"""Strong scaling of pdem from 1 to 2 MPI ranks on the benchmark bed, next to LAMMPS's.

The scene is the settled bed of bench/bed_vs_lammps.py (32,000 spheres by default,
cached in bench/out/; its functions are imported, not copied). One invocation runs:

  pdem    mpirun -n 1 python bench/strong_scaling.py --worker pdem ...   (threads=1)
  LAMMPS  mpirun -n 1 lmp -in bench/out/in_np1.bed
  pdem    mpirun -n 2 python bench/strong_scaling.py --worker pdem ...
  LAMMPS  mpirun -n 2 lmp -in bench/out/in_np2.bed

in that order, --repeat times; the fastest run of each of the four counts (other
jobs on a shared machine only ever slow a run down). pdem's time is the wall time
of sim.run(steps) after set-up and one warm-up step (which builds the neighbor
list), the maximum over ranks; LAMMPS's is its own "Loop time" of `run steps`
after `run 1`. pdem uses its default decomposition (MPI.Compute_dims, balance=1.2) and,
as bed_vs_lammps.py, sphere_orientations=False: the work of LAMMPS's fix nve/sphere
(--sphere-orientations: pdem's default, which also integrates each sphere's orientation).

Printed: both codes' particle-steps/s and 1 -> 2 rank speedups, pdem's parallel
efficiency relative to LAMMPS's (pdem speedup / LAMMPS speedup); per pdem rank:
owned and ghost particles, ghosts/owned, bytes sent per step (sim.comm_stats()),
neighbor rebuilds and particles migrated (sim.n_rebuilds, sim.n_migrated), active
contacts computed with a ghost (done on both ranks: extra work); pdem's phase times
min/mean/max over ranks (sim.timer_stats()); micro-benchmarks of the 2-rank run
(one ghost refresh and its packing alone, an Allreduce of one double, small and
refresh-sized messages) that calibrate the communication model of docs/scaling.md; and
whether the 1- and 2-rank end states agree (pdem: bit for bit expected).

Usage: bench/strong_scaling.py [--particles N] [--steps N] [--repeat R] [--quick]
       [--json FILE] [--skip-lammps] [--lmp BINARY] [--ranks 2] [--sphere-orientations]
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import driver_process  # noqa: E402, F401 (before numpy and mpi4py)

import numpy as np  # noqa: E402

from bed_vs_lammps import (RADIUS, SKIN, find_lammps, fmt_phases, load_average, save_json,  # noqa: E402
                           make_sim, pdem_fingerprint, run_lammps, settle, timed_run,
                           write_data)

PHASES = ("neighbor", "comm", "contact", "integrate", "output")
BYTES_PER_GHOST = 72          # pos, vel, angvel: 9 doubles per ghost and refresh


# ================================================================ worker (under mpirun)
def worker_settle(args):
    bed, path = settle(args.particles, args.seed, 1, args.settle_steps, args.outdir)
    with open(args.out, "w") as fh:
        json.dump({"bed": path}, fh)


def _micro(comm, sim, stats):
    """Communication micro-benchmarks on the live decomposition (all ranks)."""
    from mpi4py import MPI
    out = {}
    st = sim.store

    def per_call(fn, k):
        """Median over k calls of the slowest rank's time per call (robust to other
        jobs taking the core now and then)."""
        t = np.empty(k)
        comm.Barrier()
        for i in range(k):
            t0 = time.perf_counter()
            fn()
            t[i] = time.perf_counter() - t0
        t = np.array(comm.allgather(t)).max(axis=0)
        return float(np.median(t))

    out["refresh_s"] = per_call(lambda: sim.ghosts.refresh(st), 500)   # the per-step exchange
    out["refresh_messages"] = sum(1 for sel, dest, src, first, cnt in sim.ghosts.swaps
                                  if dest != sim.rank and (len(sel) or cnt))
    # the refresh's packing and unpacking alone (numpy fancy indexing, no messages)
    f = st.f

    def pack_unpack():
        for sel, dest, source, first, count in sim.ghosts.swaps:
            if dest == source == sim.rank:
                continue
            if len(sel):
                send = np.empty((len(sel), 9))
                for j, name in enumerate(("pos", "vel", "angvel")):
                    send[:, 3 * j:3 * j + 3] = f[name][sel]
            recv = np.empty((count, 9))
            for j, name in enumerate(("pos", "vel", "angvel")):
                f[name][first:first + count] = recv[:, 3 * j:3 * j + 3]
    saved = {k: f[k][st.n_own:].copy() for k in ("pos", "vel", "angvel")}
    out["pack_unpack_s"] = per_call(pack_unpack, 500)
    for k, v in saved.items():                   # put the ghosts' values back
        f[k][st.n_own:] = v
    out["rows_moved"] = int(sum(len(sel) + cnt for sel, dest, src, first, cnt in sim.ghosts.swaps
                                if not dest == src == sim.rank))
    # Allreduce of one double, as step() does twice per step (buffer; pickled for comparison)
    one = np.ones(1)
    out["allreduce_s"] = per_call(lambda: comm.Allreduce(MPI.IN_PLACE, one, op=MPI.MAX), 2000)
    out["allreduce_pickled_s"] = per_call(lambda: comm.allreduce(1.0, op=MPI.MAX), 2000)
    if comm.size >= 2:     # one small message each way between ranks 0 and 1, as refresh posts it
        a, b = np.zeros(1), np.zeros(1)
        other = 1 - comm.rank

        def exchange():
            if comm.rank < 2:
                MPI.Request.Waitall([comm.Irecv(b, source=other, tag=9),
                                     comm.Isend(a, dest=other, tag=9)])
        out["exchange_8B_s"] = per_call(exchange, 2000)
    if comm.size >= 2:                      # ping-pong rank 0 <-> 1, numpy buffers
        for label, nbytes in (("pingpong_8B_s", 8),
                              ("pingpong_refresh_s", max(8, stats[0]["bytes_per_step"])),
                              ("pingpong_8MB_s", 8 << 20)):
            buf = np.zeros(nbytes // 8)
            k = 500 if nbytes < (1 << 20) else 20
            best = float("inf")
            for _ in range(3):
                comm.Barrier()
                t = time.perf_counter()
                for _ in range(k):
                    if comm.rank == 0:
                        comm.Send(buf, dest=1, tag=7)
                        comm.Recv(buf, source=1, tag=8)
                    elif comm.rank == 1:
                        comm.Recv(buf, source=0, tag=7)
                        comm.Send(buf, dest=0, tag=8)
                best = min(best, (time.perf_counter() - t) / k / 2)   # one way
            out[label] = comm.bcast(best, root=0)
            out[label.replace("_s", "_bytes")] = nbytes
    return out


def worker_pdem(args):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    z = np.load(args.bed)
    bed = {k: z[k] for k in z.files}
    sim = make_sim(bed["pos"], bed["vel"], bed["angvel"], float(bed["L"]), float(bed["H"]), 1,
                   orientations=args.sphere_orientations)
    n = sim.n_particles
    sim.run(steps=1)                             # warm-up: first neighbor build (not timed)
    first = sim.comm_stats()
    wall, cpu, rebuilt, sent = timed_run(sim, args.steps)
    walls = comm.allgather(wall)
    cpus = comm.allgather(cpu)
    timers = sim.timer_stats()
    stats = sim.comm_stats()
    # active contacts whose two particles this rank holds; those with a ghost are
    # computed by both ranks (extra work of the decomposition)
    pairs = sim.interactions["pair"].batch
    act = pairs.active != 0
    with_ghost = act & ((pairs.i1 >= sim.store.n_own) | (pairs.i2 >= sim.store.n_own))
    rows = comm.allgather({"rebuilds": rebuilt, "migrated": sent,
                           "balances": sim.n_balances, "active_contacts": int(act.sum()),
                           "active_with_ghost": int(with_ghost.sum()),
                           "wall_contacts": sim.interactions["plane"].n_active(),
                           "subdomain_lo": sim.dec.lo.tolist(), "subdomain_hi": sim.dec.hi.tolist(),
                           "record_bytes": int(np.dtype([(k, v.dtype, v.shape[1:]) for k, v in
                                                         sim.store.owned().items()]).itemsize)})
    for r, s in enumerate(stats):
        s.update(rows[r], wall_s=walls[r], cpu_s=cpus[r], first_build=first[r])
    micro = _micro(comm, sim, stats) if comm.size > 1 else {}
    p = sim.particles(gather=True)
    if comm.rank == 0:
        out = {"ranks": comm.size, "dims": list(sim.dec.dims), "particles": n, "steps": args.steps,
               "wall_s": max(walls), "cpu_s_max": max(cpus),
               "particle_steps_per_s": n * args.steps / max(walls),
               "timers": {k: list(map(float, v)) for k, v in timers.items()},
               "per_rank": stats, "micro": micro}
        np.save(args.out + ".pos.npy", p["position"])
        with open(args.out, "w") as fh:
            json.dump(out, fh, default=float)


# ================================================================ driver
def mpirun(n, extra):
    return ["mpirun", "-n", str(n)] + shlex.split(extra)


def launch(n, args, worker, **opts):
    """Run this script as an MPI worker on n ranks; returns its JSON result."""
    fd, out = tempfile.mkstemp(prefix="strong_scaling_", suffix=".json", dir=args.outdir)
    os.close(fd)
    cmd = mpirun(n, args.mpirun_args) + [sys.executable, os.path.abspath(__file__), "--worker",
                                         worker, "--out", out, "--outdir", args.outdir,
                                         "--particles", str(args.particles), "--steps",
                                         str(args.steps), "--seed", str(args.seed),
                                         "--settle-steps", str(args.settle_steps)]
    if args.sphere_orientations:
        cmd.append("--sphere-orientations")
    for k, v in opts.items():
        cmd += ["--" + k, str(v)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    res = subprocess.run(cmd, env=env, stdout=None if worker == "settle" else subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if res.returncode != 0:
        sys.exit("worker failed (%s, exit %d):\n%s" % (" ".join(cmd), res.returncode,
                                                      "\n".join(((res.stdout or "") + res.stderr)
                                                                .splitlines()[-40:])))
    with open(out) as fh:
        r = json.load(fh)
    os.unlink(out)
    if os.path.exists(out + ".pos.npy"):
        r["final_pos"] = np.load(out + ".pos.npy")
        os.unlink(out + ".pos.npy")
    return r


def lammps_mpi_info(lmp):
    """(is MPI-enabled, the MPI line of lmp -h)."""
    try:
        txt = subprocess.run([lmp, "-h"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return False, str(e)
    m = re.search(r"^MPI v.*$", txt, re.M)
    line = m.group(0) if m else "no 'MPI v' line in lmp -h"
    return bool(m) and "STUBS" not in line.upper(), line


def lammps(lmp, n, data, bed, args):
    r = run_lammps(lmp, data, bed, args.steps, args.outdir, launcher=mpirun(n, args.mpirun_args),
                   tag="_np%d" % n)
    log = open(os.path.join(args.outdir, "log_np%d.lammps" % n)).read()
    g = re.search(r"(\d+) by (\d+) by (\d+) MPI processor grid", log)
    r["grid"] = [int(x) for x in g.groups()] if g else None
    r["particle_steps_per_s"] = r["particles"] * r["steps"] / r["wall_s"]
    return r


def bed_density(bed):
    """Number density of the bed's bulk (particles per d^3): particles in the middle
    half of the bed's height, away from the side walls, over that volume."""
    d = 2 * RADIUS
    pos, L = bed["pos"], float(bed["L"])
    top = np.percentile(pos[:, 2], 99)
    lo, hi = 0.25 * top, 0.75 * top
    m = 3 * d
    sel = ((pos[:, 2] >= lo) & (pos[:, 2] < hi) & np.all((pos[:, :2] >= m) & (pos[:, :2] < L - m), 1))
    return sel.sum() / ((hi - lo) * (L - 2 * m) ** 2) * d ** 3, top / d


def project(rate, calib, cutoff_d, rho_d3, eps, n_total=None, per_rank=None,
            ranks=(64, 256, 1024, 4096), bw=10e9, lat=1.5e-6, rebuild_every=170.0,
            record_bytes=200):
    """Surface-to-volume model of docs/scaling.md: per-step compute and communication
    time per rank in a cubic decomposition of a bulk packing (interior rank: six
    neighbors). Lengths in particle diameters. Returns rows of dicts."""
    rows = []
    for p in ranks:
        n = per_rank if per_rank else n_total / p
        a = (n / rho_d3) ** (1.0 / 3.0)                         # subdomain edge
        g = rho_d3 * ((a + 2 * cutoff_d) ** 3 - a ** 3)         # ghosts
        nbytes = BYTES_PER_GHOST * g
        t_comp = n * (1.0 + eps * g / n) / rate
        hops = np.ceil(np.log2(p))
        # per step: 6 swaps (network latency + pdem/mpi4py software cost each) + bytes,
        # two scalar allreduces (rebuild check, error check)
        t_swap = 6 * (lat + calib["sw_per_message"]) + nbytes / bw + g * calib["sw_per_ghost"]
        t_red = 2 * (hops * lat + calib["sw_per_allreduce"])
        # at a rebuild (every `rebuild_every` steps): migration = 2 x (Alltoall of counts +
        # Alltoallv), each ~ (P - 1) latencies with pairwise algorithms (migrant bytes
        # ignored: few); six border swaps of full records (2 Sendrecv each); two global
        # reductions (r_max, imbalance)
        t_reb = (4 * (p - 1) * lat + 12 * (lat + calib["sw_per_message"]) + g * record_bytes / bw
                 + 2 * (hops * lat + calib["sw_per_allreduce"]))
        t_comm = t_swap + t_red + t_reb / rebuild_every
        rows.append({"P": p, "N": n * p, "n": n, "edge_d": a, "ghosts": g, "ghost_fraction": g / n,
                     "bytes_per_step": nbytes, "compute_s": t_comp, "swap_s": t_swap,
                     "allreduce_s": t_red, "rebuild_s_per_step": t_reb / rebuild_every,
                     "comm_s": t_comm, "comm_over_compute": t_comm / t_comp,
                     "efficiency": t_comp / (t_comp + t_comm) / (1.0 + eps * g / n)})
    return rows


def print_projection(title, rows):
    print(title)
    print("%6s %12s %9s %9s %8s %12s %11s %11s %11s %8s" % (
        "P", "N", "n/rank", "ghosts", "g/n", "bytes/step", "compute ms", "comm ms",
        "comm/comp", "eff."))
    for r in rows:
        print("%6d %12.3g %9.0f %9.0f %8.3f %12.3g %11.3f %11.3f %11.3f %8.2f" % (
            r["P"], r["N"], r["n"], r["ghosts"], r["ghost_fraction"], r["bytes_per_step"],
            1e3 * r["compute_s"], 1e3 * r["comm_s"], r["comm_over_compute"], r["efficiency"]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--particles", type=int, default=32000)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per code and rank count, alternating; the fastest counts (3)")
    ap.add_argument("--ranks", type=int, default=2, help="parallel run's rank count (2)")
    ap.add_argument("--quick", action="store_true", help="smoke test: 2000 particles, 200 steps, 1 repeat")
    ap.add_argument("--skip-lammps", action="store_true")
    ap.add_argument("--sphere-orientations", action="store_true",
                    help="pdem integrates the spheres' orientations (pdem's default); without "
                         "it sphere_orientations=False, the work of LAMMPS's fix nve/sphere")
    ap.add_argument("--lmp", default=None, help="LAMMPS binary (default: lmp on PATH)")
    ap.add_argument("--mpirun-args", default="--bind-to none",
                    help="mpirun options for every run of both codes (default '--bind-to none': "
                         "Open MPI would pin every 1-rank job, other users' included, to core 0)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--settle-steps", type=int, default=40000)
    ap.add_argument("--outdir", default=os.path.join(HERE, "out"))
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    ap.add_argument("--worker", choices=("pdem", "settle"), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--bed", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.particles, args.steps, args.repeat = 2000, 200, 1
        args.settle_steps = min(args.settle_steps, 15000)
    if args.worker == "settle":
        return worker_settle(args)
    if args.worker == "pdem":
        return worker_pdem(args)
    os.makedirs(args.outdir, exist_ok=True)
    P = args.ranks

    lmp = None
    if not args.skip_lammps:
        lmp = args.lmp or find_lammps()
        if lmp is None:
            sys.exit("LAMMPS not found (apt-get install -y lammps), or pass --skip-lammps")
        ok, line = lammps_mpi_info(lmp)
        if not ok:
            sys.exit("%s is not MPI-enabled (%s): its 1 -> %d rank speedup would be meaningless"
                     % (lmp, line, P))
        print("LAMMPS: %s, %s" % (lmp, line))

    bed_path = launch(1, args, "settle")["bed"]
    z = np.load(bed_path)
    bed = {k: z[k] for k in z.files}
    n = len(bed["pos"])
    L = float(bed["L"])
    data = os.path.join(args.outdir, "bed_n%d.data" % n)
    write_data(data, bed)
    rho, height = bed_density(bed)
    print("bed: %d spheres (%s), d = %g m, box %g x %g m (walls), bed ~%.1f d deep, bulk density "
          "%.3f / d^3; %d steps, fastest of %d" % (n, os.path.relpath(bed_path), 2 * RADIUS, L, L,
                                                   height, rho, args.steps, args.repeat))
    print(pdem_fingerprint())
    print("load average before timing: %.2f on %d cores" % (load_average(), os.cpu_count() or 1))

    runs = {("pdem", 1): [], ("pdem", P): [], ("lammps", 1): [], ("lammps", P): []}
    for rep in range(args.repeat):
        line = []
        for ranks in (1, P):
            r = launch(ranks, args, "pdem", bed=bed_path)
            runs[("pdem", ranks)].append(r)
            line.append("pdem np%d %.3f s" % (ranks, r["wall_s"]))
            if lmp:
                q = lammps(lmp, ranks, data, bed, args)
                runs[("lammps", ranks)].append(q)
                line.append("LAMMPS np%d %.3f s" % (ranks, q["wall_s"]))
        print("repeat %d: %s (load %.2f)" % (rep + 1, ", ".join(line), load_average()), flush=True)
    best = {k: min(v, key=lambda r: r["wall_s"]) for k, v in runs.items() if v}
    p1, pp = best[("pdem", 1)], best[("pdem", P)]
    s_pdem = p1["wall_s"] / pp["wall_s"]

    print("\n== speed, %d particles, %d steps, fastest of %d ==" % (n, args.steps, args.repeat))
    print("%-8s %6s %-9s %10s %14s %9s %11s" % ("code", "ranks", "grid", "wall [s]", "p-steps/s",
                                               "speedup", "efficiency"))
    rows = [("pdem", 1, p1, [1, 1, 1]), ("pdem", P, pp, pp["dims"])]
    if lmp:
        l1, lp = best[("lammps", 1)], best[("lammps", P)]
        s_lmp = l1["wall_s"] / lp["wall_s"]
        rows += [("LAMMPS", 1, l1, l1["grid"]), ("LAMMPS", P, lp, lp["grid"])]
    for name, ranks, r, grid in rows:
        base = p1 if name == "pdem" else l1
        s = base["wall_s"] / r["wall_s"]
        print("%-8s %6d %-9s %10.3f %14.4g %9.3f %11.3f" % (
            name, ranks, "x".join(map(str, grid or ["?"])), r["wall_s"], r["particle_steps_per_s"],
            s, s / ranks))
    result = {"pdem_build": pdem_fingerprint(), "particles": n, "steps": args.steps,
              "repeat": args.repeat, "ranks": P, "bed": os.path.relpath(bed_path),
              "bulk_density_per_d3": rho, "speedup_pdem": s_pdem}
    if lmp:
        print("pdem speedup 1 -> %d ranks: %.3f; LAMMPS: %.3f; pdem's parallel efficiency relative "
              "to LAMMPS's: %.3f" % (P, s_pdem, s_lmp, s_pdem / s_lmp))
        print("pdem / LAMMPS particle-steps/s: %.3f on 1 rank, %.3f on %d ranks" % (
            p1["particle_steps_per_s"] / l1["particle_steps_per_s"],
            pp["particle_steps_per_s"] / lp["particle_steps_per_s"], P))
        result.update(speedup_lammps=s_lmp, relative_efficiency=s_pdem / s_lmp)
    else:
        print("pdem speedup 1 -> %d ranks: %.3f" % (P, s_pdem))

    print("\n== pdem per rank, %d ranks (grid %s), fastest run; ghosts and bytes from the last "
          "neighbor build ==" % (P, "x".join(map(str, pp["dims"]))))
    print("%4s %8s %8s %8s %12s %9s %9s %8s %12s %8s %8s" % (
        "rank", "owned", "ghosts", "g/owned", "bytes/step", "rebuilds", "migrated", "contacts",
        "w/ ghost", "wall s", "CPU s"))
    for r, s in enumerate(pp["per_rank"]):
        print("%4d %8d %8d %8.4f %12d %9d %9d %8d %12d %8.3f %8.3f" % (
            r, s["owned"], s["ghosts"], s["ghosts"] / max(1, s["owned"]), s["bytes_per_step"],
            s["rebuilds"], s["migrated"], s["active_contacts"], s["active_with_ghost"],
            s["wall_s"], s["cpu_s"]))
    print("(first build: %s)" % ", ".join("rank %d %d owned / %d ghosts / %d B" % (
        r, s["first_build"]["owned"], s["first_build"]["ghosts"], s["first_build"]["bytes_per_step"])
        for r, s in enumerate(pp["per_rank"])))

    print("\n== pdem phases [s] over ranks: min / mean / max ==")
    for label, r in (("1 rank", p1), ("%d ranks" % P, pp)):
        print("%-8s " % label + ", ".join("%s %.3f/%.3f/%.3f" % ((k,) + tuple(v))
                                          for k, v in r["timers"].items() if v[2] > 0))
    if lmp:
        print("LAMMPS np1: " + fmt_phases(l1["timers_s"]))
        print("LAMMPS np%d: " % P + fmt_phases(lp["timers_s"]))
        print("LAMMPS neighbor builds %s / %s (dangerous %s / %s)" % (
            l1["n_rebuilds"], lp["n_rebuilds"], l1["dangerous_builds"], lp["dangerous_builds"]))

    # end states: pdem claims bitwise-identical results on any rank count
    dpos = np.abs(p1["final_pos"] - pp["final_pos"]).max()
    print("\nend positions pdem 1 vs %d ranks: max |diff| %.3e m (%s)" % (
        P, dpos, "bitwise identical" if dpos == 0 else "NOT identical"))
    result["pdem_np1_vs_npP_max_diff_m"] = float(dpos)
    if lmp:
        dl = np.abs(l1["final_pos"] - lp["final_pos"]).max()
        print("end positions LAMMPS 1 vs %d ranks: max |diff| %.3e m" % (P, dl))
        result["lammps_np1_vs_npP_max_diff_m"] = float(dl)

    # calibration of the communication model (docs/scaling.md)
    m = pp["micro"]
    nmsg = max(1, m["refresh_messages"])
    comm_per_step = pp["timers"]["comm"][1] / args.steps
    calib = {"sw_per_message": m.get("exchange_8B_s", m["refresh_s"] / nmsg),
             "sw_per_ghost": m["pack_unpack_s"] / max(1, m["rows_moved"]) * 2,
             "sw_per_allreduce": m["allreduce_s"]}
    print("\n== communication costs measured on this machine (%d ranks, shared memory) ==" % P)
    print("one ghost refresh (%d messages sent per rank, %d B): %.1f us, of which packing + "
          "unpacking %d rows %.1f us per rank; Allreduce of one double %.1f us (pickled "
          "allreduce %.1f us)"
          % (m["refresh_messages"], pp["per_rank"][0]["bytes_per_step"], 1e6 * m["refresh_s"],
             m["rows_moved"], 1e6 * m["pack_unpack_s"], 1e6 * m["allreduce_s"],
             1e6 * m["allreduce_pickled_s"]))
    if "exchange_8B_s" in m:
        print("Irecv + Isend + Waitall of 8 B each way (mpi4py): %.1f us" % (1e6 * m["exchange_8B_s"]))
    if "pingpong_8B_s" in m:
        print("ping-pong one way (mpi4py Send/Recv): 8 B %.1f us, %d B %.1f us, 8 MB %.0f us "
              "(%.2f GB/s)" % (1e6 * m["pingpong_8B_s"], m["pingpong_refresh_bytes"],
                               1e6 * m["pingpong_refresh_s"], 1e6 * m["pingpong_8MB_s"],
                               (8 << 20) / m["pingpong_8MB_s"] / 1e9))
    print("pdem 'comm' phase per step (mean over ranks; includes waiting for the slower rank "
          "at the step's two allreduces): %.1f us" % (1e6 * comm_per_step))
    result["calibration"] = calib

    # model projections (docs/scaling.md)
    rate = p1["particle_steps_per_s"]
    per = pp["per_rank"]
    g_over_n = np.mean([s["ghosts"] / s["owned"] for s in per])
    extra = np.mean([s["active_with_ghost"] / max(1, s["active_contacts"] - s["active_with_ghost"])
                     for s in per])
    eps = extra / g_over_n          # extra contact work per ghost, relative to per owned particle
    reb = np.mean([s["rebuilds"] for s in per])
    cutoff_d = (2 * RADIUS + SKIN) / (2 * RADIUS)
    record = per[0]["record_bytes"]
    kw = dict(rate=rate, calib=calib, cutoff_d=cutoff_d, rho_d3=rho, eps=eps,
              rebuild_every=args.steps / max(reb, 1.0), record_bytes=record)
    print("\n== model (docs/scaling.md): cubic subdomains, interior ranks; network 10 GB/s, "
          "1.5 us; pdem software cost %.1f us per message, %.0f ns per ghost, %.1f us per "
          "allreduce (measured above); compute %.3g particle-steps/s per rank x (1 + %.2f "
          "ghosts/n) ==" % (1e6 * calib["sw_per_message"], 1e9 * calib["sw_per_ghost"],
                            1e6 * calib["sw_per_allreduce"], rate, eps))
    strong = project(n_total=1e7, **kw)
    weak = project(per_rank=n, **kw)
    print_projection("strong scaling, N = 1e7:", strong)
    print_projection("weak scaling, %d per rank:" % n, weak)
    result["model"] = {"inputs": {k: v for k, v in kw.items()}, "strong_1e7": strong,
                       "weak": weak, "extra_work_fraction_measured": extra,
                       "ghost_fraction_measured": g_over_n}

    for v in runs.values():
        for r in v:
            r.pop("final_pos", None)
    result["runs"] = {"%s_np%d" % k: v for k, v in runs.items()}
    save_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
