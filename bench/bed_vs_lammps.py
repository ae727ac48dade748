#!/usr/bin/env python
"""pdem vs LAMMPS on the same settled bed of monodisperse spheres, one core each.

Physics (both codes): linear spring-dashpot + Coulomb friction in the LAMMPS
gran/hooke/history convention, F_n = kn d - m* gamma_n v_n, kt = 2/7 kn,
gamma_t = gamma_n / 2, friction mu; gravity -z; plane walls at x = 0, x = L,
y = 0, y = L (side walls) and z = 0 (floor); box open at the top.

Procedure:
  1. A simple-cubic lattice (spacing 1.1 d, small random horizontal jitter) collapses
     under gravity in pdem (friction 0.1 for a dense bed; not timed) until at rest. The result
     is cached in bench/out/ so later runs skip this.
  2. The settled state (positions, velocities, spins) is written to a LAMMPS data file
     (%.17g: both codes start from the same doubles, without contact history).
  3. pdem: a fresh Simulation from that state, one warm-up step (neighbor list built),
     then `steps` steps timed with threads=1 (OMP_NUM_THREADS=1), with
     sphere_orientations=False (the spheres' orientations, an output only, are not
     integrated: the work of LAMMPS's fix nve/sphere; --sphere-orientations: pdem's
     default).
  4. LAMMPS: `lmp -in` on one process, OMP_NUM_THREADS=1; `run 1` (warm-up) then
     `run steps`; the time is LAMMPS's own "Loop time" (excludes set-up).
  5. Steps 3 and 4 alternate --repeat times (default 3); the fastest run of each code
     counts (other jobs on a shared machine only ever slow a run down). CPU times are
     printed too (pdem: process CPU time; LAMMPS: loop time x its "% CPU use").
  6. Both codes' end states are compared: contacts per particle, max overlap, kinetic
     and rotational energy, centre of mass, and the particle-by-particle position
     difference (relative to how far particles moved during the run).

Usage: bench/bed_vs_lammps.py [--particles N] [--steps N] [--threads N] [--repeat R]
       [--skip-lammps] [--quick] [--profile] [--json FILE]
"""
import argparse
import hashlib
import json
import math
import os
import re
import sys
import time

# single-threaded numpy / OpenMP unless told otherwise (before numpy is imported)
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import pdem  # noqa: E402
from lammps_run import (find_lammps, parse_run, parse_state, run_input,  # noqa: E402,F401
                        write_spheres_data)
from lammps_run import version as lammps_version  # noqa: E402

# ---------------------------------------------------------------- parameters (SI)
RADIUS = 0.5e-3          # m (d = 1 mm)
DENSITY = 2500.0         # kg/m^3 (glass)
KN = 200.0               # N/m: overlap under the bed's weight ~ 0.1-1 % of d
KT = 2.0 / 7.0 * KN
GAMMA_N = 7000.0         # 1/s: damping ratio ~ 0.2 (restitution ~ 0.5) for a pair
GAMMA_T = 0.5 * GAMMA_N
MU = 0.5
GRAVITY = 9.81
DT = 1.0e-5              # s: ~ 1/18 of the pair collision time pi sqrt(m*/kn)
SKIN = 0.1 * 2 * RADIUS  # Verlet skin, both codes (rebuild when a particle moved > skin/2)
LATTICE = 1.1            # initial lattice spacing / diameter
SETTLE_MU = 0.1          # friction while settling: denser bed (~5 contacts/particle)
SETTLE_KE = 5e-5         # settled when KE / (N m g d) is below this
PARAMS = dict(radius=RADIUS, density=DENSITY, kn=KN, kt=KT, gamma_n=GAMMA_N, gamma_t=GAMMA_T,
              mu=MU, gravity=GRAVITY, dt=DT, skin=SKIN, lattice=LATTICE, settle_mu=SETTLE_MU,
              settle_ke=SETTLE_KE)


def pdem_fingerprint():
    """Which pdem build is measured (the kernels change while they are optimized):
    short hash of the compiled kernels and of the Python sources, newest mtime."""
    import glob
    root = os.path.dirname(os.path.abspath(pdem.__file__))
    out = []
    for label, pattern in (("kernels", "_kernels/*.so"), ("python", "**/*.py")):
        files = sorted(glob.glob(os.path.join(root, pattern), recursive=True))
        h = hashlib.sha1()
        for f in files:
            with open(f, "rb") as fh:
                h.update(fh.read())
        newest = max((os.path.getmtime(f) for f in files), default=0)
        out.append("%s %s (%s)" % (label, h.hexdigest()[:10],
                                   time.strftime("%Y-%m-%d %H:%M", time.localtime(newest))))
    return "pdem %s: %s" % (getattr(pdem, "__version__", "?"), ", ".join(out))


def timed_run(sim, steps):
    """sim.run(steps) timed on its own (phase timers zeroed first, all ranks start
    together): wall and CPU seconds of this rank, neighbor rebuilds and particles this
    rank sent to others during the run."""
    for k in sim.timers:
        sim.timers[k] = 0.0
    reb0, mig0 = sim.n_rebuilds, sim.n_migrated
    sim.comm.Barrier()
    c0, t0 = time.process_time(), time.perf_counter()
    sim.run(steps=steps)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return wall, cpu, sim.n_rebuilds - reb0, sim.n_migrated - mig0


def box_for(n):
    """Footprint side L (whole diameters) so that the settled bed is ~0.45 L deep,
    and the box height (lattice height + margin)."""
    d = 2 * RADIUS
    side = int(math.ceil((n / 0.516) ** (1.0 / 3.0)))
    L = side * d
    nx = int(L / (LATTICE * d))
    nz = int(math.ceil(n / nx ** 2))
    H = (nz + 3) * LATTICE * d
    return L, H, nx, nz


def lattice(n, seed):
    d = 2 * RADIUS
    L, H, nx, nz = box_for(n)
    a = LATTICE * d
    off = 0.5 * (L - (nx - 1) * a)
    iz, iy, ix = np.meshgrid(np.arange(nz), np.arange(nx), np.arange(nx), indexing="ij")
    pos = np.column_stack([ix.ravel() * a + off, iy.ravel() * a + off, iz.ravel() * a + 0.55 * d])
    pos = pos[:n].copy()                  # bottom layers first: spatially ordered ids
    rng = np.random.default_rng(seed)
    pos[:, :2] += rng.uniform(-0.04, 0.04, (n, 2)) * d
    return pos, L, H


APPROX_FLAGS = ("mid_normal", "mid_trsf")   # --approx: the cheaper L6Geom of seed 000


def make_sim(pos, vel, angvel, L, H, threads, mu=MU, approx=(), orientations=True):
    dom = pdem.Domain((0.0, 0.0, 0.0), (L, L, H), periodic=(False, False, False))
    sim = pdem.Simulation(dom, DT, gravity=(0.0, 0.0, -GRAVITY), skin=SKIN, threads=threads,
                          approx=approx, sphere_orientations=orientations)
    m = sim.material("grain", density=DENSITY, law="hooke", kn=KN, kt=KT, gamma_n=GAMMA_N,
                     gamma_t=GAMMA_T, friction=mu)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)      # floor
    sim.add_plane((0, 0, 0), (1, 0, 0), m)      # side walls
    sim.add_plane((L, 0, 0), (-1, 0, 0), m)
    sim.add_plane((0, 0, 0), (0, 1, 0), m)
    sim.add_plane((0, L, 0), (0, -1, 0), m)
    sim.add_spheres(pos, RADIUS, m, velocities=vel, angular_velocities=angvel)
    return sim


def pdem_state(sim):
    """Diagnostics of a pdem simulation's current state."""
    p = sim.particles()
    c = sim.contacts()
    pair = c["kind"] == "pair"
    e = sim.energy()
    n = len(p["id"])
    return {
        "contacts_per_particle": 2.0 * int(pair.sum()) / n,
        "wall_contacts": int((~pair).sum()),
        "max_overlap_over_d": float(c["overlap"][pair].max() / (2 * RADIUS)) if pair.any() else 0.0,
        "ke_trans": e["kinetic"],
        "ke_rot": e["rotational"],
        "z_com": float(np.average(p["position"][:, 2], weights=p["mass"])),
    }


def settle(n, seed, threads, max_steps, outdir, quiet=False):
    """Settled bed (cached): returns dict with pos, vel, angvel, L, H."""
    key = hashlib.sha1(json.dumps([n, seed, PARAMS], sort_keys=True).encode()).hexdigest()[:10]
    path = os.path.join(outdir, "bed_n%d_s%d_%s.npz" % (n, seed, key))
    if os.path.exists(path):
        z = np.load(path)
        if not quiet:
            print("settled bed: cached %s" % os.path.relpath(path))
        return {k: z[k] for k in z.files}, path
    pos, L, H = lattice(n, seed)
    sim = make_sim(pos, None, None, L, H, threads, mu=SETTLE_MU)
    mass = sim.particles()["mass"][0]
    scale = n * mass * GRAVITY * 2 * RADIUS      # KE scale: every grain moving by ~sqrt(g d)
    t0 = time.perf_counter()
    chunk, done = 1000, 0
    print("settling %d particles in pdem (friction %g, %d thread(s), at most %d steps) ..."
          % (n, SETTLE_MU, threads, max_steps))
    while done < max_steps:
        sim.run(steps=chunk)
        done += chunk
        e = sim.energy()
        ke = (e["kinetic"] + e["rotational"]) / scale
        st = pdem_state(sim)
        print("  step %6d  KE/(N m g d) = %.2e  contacts/particle = %.2f  max overlap/d = %.2e"
              "  (%.0f s)" % (done, ke, st["contacts_per_particle"], st["max_overlap_over_d"],
                              time.perf_counter() - t0), flush=True)
        if done >= 5000 and ke < SETTLE_KE:
            break
    p = sim.particles()
    out = {"pos": p["position"].copy(), "vel": p["velocity"].copy(),
           "angvel": p["angular_velocity"].copy(), "L": np.float64(L), "H": np.float64(H),
           "settle_steps": np.int64(done)}
    os.makedirs(outdir, exist_ok=True)
    np.savez(path, **out)
    return out, path


def write_data(path, bed, margin=0.0):
    """LAMMPS/LIGGGHTS data file of the bed; margin: the box reaches margin beyond the
    walls on every side (LIGGGHTS wants mesh walls strictly inside its box)."""
    L, H = float(bed["L"]), float(bed["H"])
    lo, hx, hz = -margin, L + margin, H + margin
    write_spheres_data(path, "pdem benchmark bed: %d spheres, radius %g m" % (len(bed["pos"]), RADIUS),
                       bed["pos"], bed["vel"], bed["angvel"], 2 * RADIUS, DENSITY,
                       (lo, lo, lo), (hx, hx, hz))


KERNELS = {"contacts": ("sphere_sphere", "sphere_plane", "gather", "scatter",
                        "build_gather_lists", "add_wall_forces"),
           "cells": ("build_pairs", "build_plane_pairs"), "integrate": ("drift", "kick")}


class KernelProfile:
    """Times every call of pdem's Cython kernels by wrapping them in their modules
    (pdem.simulation looks them up at call time); the rest is Python overhead.
    clock: time.process_time (1 thread: not inflated by other jobs) or perf_counter."""

    def __init__(self, clock=time.perf_counter):
        self.clock = clock

    def __enter__(self):
        import importlib
        self.saved, self.time, self.calls = [], {}, {}
        for modname, names in KERNELS.items():
            mod = importlib.import_module("pdem._kernels." + modname)
            for name in names:
                fn = getattr(mod, name)
                self.saved.append((mod, name, fn))
                setattr(mod, name, self._wrap(fn, "%s.%s" % (modname, name)))
        return self

    def _wrap(self, fn, label):
        self.time[label], self.calls[label] = 0.0, 0

        clock = self.clock

        def timed(*a, **k):
            t = clock()
            try:
                return fn(*a, **k)
            finally:
                self.time[label] += clock() - t
                self.calls[label] += 1
        return timed

    def __exit__(self, *exc):
        for mod, name, fn in self.saved:
            setattr(mod, name, fn)


def run_pdem(bed, steps, threads, profile=False, approx=(), orientations=True):
    sim = make_sim(bed["pos"], bed["vel"], bed["angvel"], float(bed["L"]), float(bed["H"]), threads,
                   approx=approx, orientations=orientations)
    n = sim.n_particles
    sim.run(steps=1)                      # warm-up: builds the neighbor list
    start = pdem_state(sim)
    t_before = dict(sim.timers)
    rebuilds_before = sim.n_rebuilds
    prof = KernelProfile(time.process_time if threads == 1 else time.perf_counter) if profile else None
    if prof:
        prof.__enter__()
    try:
        c0 = time.process_time()
        t0 = time.perf_counter()
        sim.run(steps=steps)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
    finally:
        if prof:
            prof.__exit__()
    timers = {k: sim.timers[k] - t_before[k] for k in sim.timers}
    end = pdem_state(sim)
    p = sim.particles()
    out = {
        "particles": n, "steps": steps, "threads": threads, "wall_s": wall, "cpu_s": cpu,
        "particle_steps_per_s_per_core": n * steps / wall / threads,
        "timers_s": timers, "n_rebuilds": sim.n_rebuilds - rebuilds_before,
        "pair_candidates": len(sim.interactions["pair"]),
        "wall_candidates": len(sim.interactions["plane"]),
        "start": start, "end": end,
        "final_pos": p["position"].copy(), "initial_pos": bed["pos"],
    }
    if prof:
        out["kernels_s"] = dict(prof.time)
        out["kernel_calls"] = dict(prof.calls)
    return out


LMP_INPUT = """# generated by bench/bed_vs_lammps.py
units           si
atom_style      sphere
atom_modify     map array
boundary        f f f
newton          off
comm_modify     vel yes
read_data       {data}
pair_style      gran/hooke/history {kn!r} {kt!r} {gn!r} {gt!r} {mu!r} 1
pair_coeff      * *
neighbor        {skin!r} bin
neigh_modify    delay 0 every 1 check yes
timestep        {dt!r}
fix             integ all nve/sphere
fix             grav all gravity {g!r} vector 0 0 -1
fix             floor all wall/gran hooke/history {kn!r} {kt!r} {gn!r} {gt!r} {mu!r} 1 zplane 0.0 NULL
fix             wallx all wall/gran hooke/history {kn!r} {kt!r} {gn!r} {gt!r} {mu!r} 1 xplane 0.0 {L!r}
fix             wally all wall/gran hooke/history {kn!r} {kt!r} {gn!r} {gt!r} {mu!r} 1 yplane 0.0 {L!r}
compute         erot all erotate/sphere
compute         com all com
compute         cnt all contact/atom
compute         csum all reduce sum c_cnt
compute         pl all pair/local dist
compute         mind all reduce min c_pl
thermo_style    custom step atoms ke c_erot c_com[3] c_csum c_mind
thermo_modify   norm no format float %.12g
thermo          {steps}
run             1
print           "BENCH_START ke=$(ke:%.12g) erot=$(c_erot:%.12g) zcom=$(c_com[3]:%.12g) contacts=$(c_csum:%.12g) mindist=$(c_mind:%.12g)"
run             {steps}
print           "BENCH_END ke=$(ke:%.12g) erot=$(c_erot:%.12g) zcom=$(c_com[3]:%.12g) contacts=$(c_csum:%.12g) mindist=$(c_mind:%.12g)"
write_dump      all custom {dump} id x y z modify sort id format float %.17g
"""


def run_lammps(lmp, data, bed, steps, outdir, launcher=(), tag=""):
    """launcher: command prefix (e.g. mpirun -n 2); tag: suffix of the work files' names."""
    dump = os.path.join(outdir, "lammps_final%s.dump" % tag)
    inp = os.path.join(outdir, "in%s.bed" % tag)
    log = os.path.join(outdir, "log%s.lammps" % tag)
    with open(inp, "w") as fh:
        fh.write(LMP_INPUT.format(data=data, kn=KN, kt=KT, gn=GAMMA_N, gt=GAMMA_T, mu=MU, skin=SKIN,
                                  dt=DT, g=GRAVITY, L=float(bed["L"]), steps=steps, dump=dump))
    text, total = run_input(lmp, inp, log, launcher)
    run = parse_run(text)          # the timed run (the last one)
    natoms = run["particles"]
    start = parse_state(re.search(r"^BENCH_START (.*)$", text, re.M).group(1))
    end = parse_state(re.search(r"^BENCH_END (.*)$", text, re.M).group(1))
    d = 2 * RADIUS

    def conv(s):
        return {"contacts_per_particle": s["contacts"] / natoms,
                "max_overlap_over_d": (d - s["mindist"]) / d if s["mindist"] < d else 0.0,
                "ke_trans": s["ke"], "ke_rot": s["erot"], "z_com": s["zcom"]}
    dump_txt = open(dump).read().splitlines()
    final = np.array([[float(x) for x in ln.split()[1:4]] for ln in dump_txt[9:]])
    return {
        "particles": natoms, "steps": run["steps"], "procs": run["procs"], "wall_s": run["wall_s"],
        "cpu_s": run["cpu_s"], "process_wall_s": total,
        "particle_steps_per_s_per_core": natoms * run["steps"] / run["wall_s"] / run["procs"],
        "timers_s": run["timers_s"], "n_rebuilds": run["n_rebuilds"],
        "dangerous_builds": run["dangerous_builds"],
        "start": conv(start), "end": conv(end), "final_pos": final, "binary": lmp,
        "version": lammps_version(text),
    }


def fmt_state(s):
    return ("contacts/particle %.3f, max overlap/d %.3e, KE trans %.4e J, KE rot %.4e J, "
            "z_com %.6e m" % (s["contacts_per_particle"], s["max_overlap_over_d"], s["ke_trans"],
                              s["ke_rot"], s["z_com"]))


def fmt_phases(timers):
    tot = sum(timers.values())
    return ", ".join("%s %.3f s (%.0f%%)" % (k, v, 100 * v / tot if tot else 0) for k, v in timers.items())


def load_average():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--particles", type=int, default=32000)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1, help="pdem threads in the timed run (default 1)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="timed runs per code, alternating pdem / LAMMPS; the fastest counts (default 3)")
    ap.add_argument("--settle-threads", type=int, default=1,
                    help="pdem threads while settling (not timed; default 1: OpenMP barriers "
                         "suffer on a shared machine)")
    ap.add_argument("--settle-steps", type=int, default=40000, help="cap on settling steps")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-lammps", action="store_true")
    ap.add_argument("--sphere-orientations", action="store_true",
                    help="pdem integrates the spheres' orientations (pdem's default); without "
                         "it sphere_orientations=False, the work of LAMMPS's fix nve/sphere")
    ap.add_argument("--approx", action="store_true",
                    help="time pdem with the L6Geom approximation flags mid_normal + mid_trsf")
    ap.add_argument("--lmp", default=None, help="LAMMPS binary (default: lmp / lmp_serial on PATH)")
    ap.add_argument("--profile", action="store_true",
                    help="one more (untimed) pdem run with each Cython kernel timed")
    ap.add_argument("--quick", action="store_true", help="smoke test: 2000 particles, 200 steps, 1 repeat")
    ap.add_argument("--outdir", default=os.path.join(HERE, "out"))
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    args = ap.parse_args(argv)
    if args.quick:
        args.particles, args.steps, args.repeat = 2000, 200, 1
        args.settle_steps = min(args.settle_steps, 15000)
    os.makedirs(args.outdir, exist_ok=True)

    lmp = None
    if not args.skip_lammps:
        lmp = args.lmp or find_lammps()
        if lmp is None:
            sys.exit("LAMMPS not found (apt-get install -y lammps), or pass --skip-lammps")

    bed, cache = settle(args.particles, args.seed, args.settle_threads, args.settle_steps, args.outdir)
    n = len(bed["pos"])
    data = os.path.join(args.outdir, "bed_n%d.data" % n)
    write_data(data, bed)
    L = float(bed["L"])
    print("bed: %d spheres, d = %g m, box %g x %g m (walls) x %g m, settled %d steps; data %s"
          % (n, 2 * RADIUS, L, L, float(bed["H"]), int(bed["settle_steps"]), os.path.relpath(data)))
    print("law: hooke kn=%g N/m kt=%g gamma_n=%g 1/s gamma_t=%g mu=%g; dt=%g s, skin=%g m; "
          "%d steps x %d repeat(s) per code" % (KN, KT, GAMMA_N, GAMMA_T, MU, DT, SKIN, args.steps,
                                                 args.repeat))
    print(pdem_fingerprint())
    print("pdem sphere_orientations=%s (LAMMPS's fix nve/sphere integrates none)"
          % args.sphere_orientations)
    print("load average before timing: %.2f on %d cores (other jobs make wall times noisy: "
          "the fastest repeat counts, CPU times shown too)" % (load_average(), os.cpu_count() or 1))

    pd_runs, lm_runs = [], []
    for rep in range(args.repeat):
        r = run_pdem(bed, args.steps, args.threads, approx=APPROX_FLAGS if args.approx else (),
                     orientations=args.sphere_orientations)
        pd_runs.append(r)
        line = "repeat %d: pdem %.3f s wall (%.3f s CPU, %.4g p-steps/s/core)" % (
            rep + 1, r["wall_s"], r["cpu_s"], r["particle_steps_per_s_per_core"])
        if lmp:
            q = run_lammps(lmp, data, bed, args.steps, args.outdir)
            lm_runs.append(q)
            line += "; LAMMPS %.3f s loop (%.3f s CPU, %.4g p-steps/s/core); ratio %.3f" % (
                q["wall_s"], q["cpu_s"] or float("nan"), q["particle_steps_per_s_per_core"],
                r["particle_steps_per_s_per_core"] / q["particle_steps_per_s_per_core"])
        print(line, flush=True)
    pd = min(pd_runs, key=lambda r: r["wall_s"])
    moved = np.sqrt(np.mean(np.sum((pd["final_pos"] - pd["initial_pos"]) ** 2, axis=1)))

    print("\n== pdem (%d thread%s), %d steps, fastest of %d ==" % (
        args.threads, "s" * (args.threads > 1), args.steps, args.repeat))
    print("wall %.3f s (CPU %.3f s), %.4g particle-steps/s/core"
          % (pd["wall_s"], pd["cpu_s"], pd["particle_steps_per_s_per_core"]))
    print("phases (sim.timers): " + fmt_phases(pd["timers_s"]))
    print("sim.n_rebuilds during the run %d; candidate pairs %d, wall candidates %d"
          % (pd["n_rebuilds"], pd["pair_candidates"], pd["wall_candidates"]))
    print("start: " + fmt_state(pd["start"]))
    print("end:   " + fmt_state(pd["end"]))

    result = {"pdem_build": pdem_fingerprint(), "particles": n, "steps": args.steps, "repeat": args.repeat, "dt": DT, "params": PARAMS,
              "pdem": pd, "pdem_walls_s": [r["wall_s"] for r in pd_runs]}
    if lmp:
        lm = min(lm_runs, key=lambda r: r["wall_s"])
        print("\n== LAMMPS (1 process, OMP_NUM_THREADS=1), %d steps, fastest of %d ==" % (args.steps, args.repeat))
        print("%s (%s)" % (lm["binary"], lm["version"]))
        print("loop time %.3f s (CPU %.3f s), %.4g particle-steps/s/core"
              % (lm["wall_s"], lm["cpu_s"] or float("nan"), lm["particle_steps_per_s_per_core"]))
        print("phases (LAMMPS timer): " + fmt_phases(lm["timers_s"]))
        print("neighbor list builds %s (dangerous %s)" % (lm["n_rebuilds"], lm["dangerous_builds"]))
        print("start: " + fmt_state(lm["start"]))
        print("end:   " + fmt_state(lm["end"]))
        diff = np.sqrt(np.sum((pd["final_pos"] - lm["final_pos"]) ** 2, axis=1))
        lm_moved = np.sqrt(np.mean(np.sum((lm["final_pos"] - bed["pos"]) ** 2, axis=1)))
        ratio = pd["particle_steps_per_s_per_core"] / lm["particle_steps_per_s_per_core"]
        cpu_ratio = lm["cpu_s"] / pd["cpu_s"] if lm["cpu_s"] else float("nan")
        result["lammps"] = lm
        result["lammps_walls_s"] = [r["wall_s"] for r in lm_runs]
        result["ratio_pdem_over_lammps"] = ratio
        result["ratio_pdem_over_lammps_cpu"] = cpu_ratio
        result["position_difference"] = {"rms_m": float(np.sqrt(np.mean(diff ** 2))),
                                         "max_m": float(diff.max()),
                                         "rms_moved_pdem_m": float(moved),
                                         "rms_moved_lammps_m": float(lm_moved)}
        print("\n== summary: %d particles, %d steps, dt %g s, 1 core each ==" % (n, args.steps, DT))
        print("%-8s %10s %10s %16s %12s %12s %12s" % ("code", "wall [s]", "CPU [s]", "p-steps/s/core",
                                                      "contacts/p", "max ovl/d", "KE [J]"))
        for name, r in (("pdem", pd), ("LAMMPS", lm)):
            print("%-8s %10.3f %10.3f %16.4g %12.3f %12.3e %12.4e" % (
                name, r["wall_s"], r["cpu_s"] or float("nan"), r["particle_steps_per_s_per_core"],
                r["end"]["contacts_per_particle"], r["end"]["max_overlap_over_d"], r["end"]["ke_trans"]))
        print("ratio pdem/LAMMPS (particle-steps/s/core): %.3f by wall time, %.3f by CPU time "
              "(LAMMPS %.2fx faster)" % (ratio, cpu_ratio, 1 / ratio))
        print("end positions pdem vs LAMMPS: rms diff %.3e m, max diff %.3e m (%.2e d); rms "
              "displacement during the run: pdem %.3e m, LAMMPS %.3e m"
              % (result["position_difference"]["rms_m"], diff.max(), diff.max() / (2 * RADIUS),
                 moved, lm_moved))
    if args.profile:
        r = run_pdem(bed, args.steps, args.threads, profile=True,
                     approx=APPROX_FLAGS if args.approx else (),
                     orientations=args.sphere_orientations)
        clock = "CPU" if args.threads == 1 else "wall"
        tot = r["cpu_s"] if args.threads == 1 else r["wall_s"]
        print("\n== pdem kernel profile (separate run, %d steps, %.3f s %s time) ==" % (args.steps, tot, clock))
        per = {"contacts.sphere_sphere": r["pair_candidates"], "contacts.sphere_plane": r["wall_candidates"],
               "contacts.gather": n, "integrate.drift": n, "integrate.kick": n}
        for k, v in sorted(r["kernels_s"].items(), key=lambda kv: -kv[1]):
            if r["kernel_calls"][k]:
                extra = ""
                if k in per and per[k]:
                    extra = ", %.1f ns per %s per call" % (
                        1e9 * v / r["kernel_calls"][k] / per[k],
                        "particle" if per[k] == n else "candidate")
                print("  %-28s %8.3f s (%4.1f%%) %6d calls%s" % (k, v, 100 * v / tot, r["kernel_calls"][k], extra))
        rest = tot - sum(r["kernels_s"].values())
        print("  %-28s %8.3f s (%4.1f%%)" % ("python (rest of the step)", rest, 100 * rest / tot))
        result["pdem_kernel_profile"] = {"clock": clock, "total_s": tot, "kernels_s": r["kernels_s"],
                                         "calls": r["kernel_calls"]}
    for r in pd_runs + lm_runs:
        r.pop("final_pos", None)
        r.pop("initial_pos", None)
    result["pdem_all"] = pd_runs
    result["lammps_all"] = lm_runs
    save_json(args.json, result)
    return result


def save_json(path, result):
    """Write the result dict to `path` (when given)."""
    if path:
        with open(path, "w") as fh:
            json.dump(result, fh, indent=2, default=float)
        print("results written to %s" % path)


if __name__ == "__main__":
    main()
