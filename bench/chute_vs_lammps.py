#!/usr/bin/env python
"""pdem vs LAMMPS on a flowing chute (the analogue of LAMMPS's bench/in.chute), one core each.

Scene (both codes, LJ-like units: d = 1, g = 1, time sqrt(d/g)):
  about 33,000 spheres of diameter 1 and density 6/pi (mass 1), periodic in x and y,
  a plane floor at z = 0, gravity of magnitude 1 tilted 26 degrees from -z toward +x
  (LAMMPS `fix gravity 1.0 chute 26.0`). Contact law of in.chute:
  `pair_style gran/hooke/history 200000.0 NULL 50.0 NULL 0.5 0`, i.e. kn = 2e5,
  kt = 2/7 kn, gamma_n = 50, mu = 0.5 and dampflag 0 (no tangential damping; pdem:
  gamma_t = 0). --tangential-damping uses gamma_t = gamma_n / 2 (dampflag 1) instead.
  The floor: the same law (pdem: sim.add_plane; LAMMPS: fix wall/gran hooke/history
  ... zplane 0.0 NULL). dt = 1e-4, skin 0.1 d (rebuild when a particle moved more
  than skin/2, checked every step), as in in.chute. in.chute's rough base of frozen
  particles is replaced by the plane.

Initial state (the same doubles in both codes): columns of spheres touching vertically
(spacing 1 d, the lowest touching the floor) on a square lattice of spacing 40/39 d,
jittered horizontally by up to +-0.01 d (seeded), all moving down the slope with
--v0 (1.0) plus a seeded Gaussian velocity of standard deviation --sigma (0.05) per
component, no spin. It is written to a LAMMPS data file (%.17g) and read by pdem from
the same arrays. pdem runs with sphere_orientations=False: the spheres' orientations,
an output only, are not integrated, the work of LAMMPS's fix nve/sphere
(--sphere-orientations integrates them, as pdem does by default).

Procedure:
  1. Warm-up (not timed; --warmup steps, 2000): pdem (one rank) and LAMMPS (one
     process) from the initial state; pdem writes a checkpoint, LAMMPS a restart file
     (both keep the contact history).
  2. Timed runs, --repeats times, alternating: pdem continues from its checkpoint
     (pdem.restart), LAMMPS from its restart file; one untimed step (builds the
     neighbor list), then --steps steps timed: pdem by perf_counter around sim.run,
     LAMMPS by its own "Loop time". The fastest run of each code counts.
     With --ranks 2 the same is also run on 2 ranks (pdem: mpirun -n 2 python -m
     mpi4py; LAMMPS: mpirun -n 2 lmp with `processors * * 1`): 1 -> 2 rank speedups.
  3. Printed: particle-steps/s of both codes and their ratio, neighbor rebuilds, the
     phase breakdowns side by side (pdem sim.timer_stats(): neighbor, comm, contact,
     integrate, output; LAMMPS: Pair, Neigh, Comm, Output, Modify, Other) and the cost
     per rebuild; the state of the flow in both codes (mean velocity along x, kinetic
     energy, rotational energy, contacts per particle) at the start of the warm-up, at
     its end and at the start and end of the timed part, with the relative difference
     of the kinetic energies between the codes (the same physics: a small difference).
  4. With --forced-rebuilds STEPS: both codes again from the same start, STEPS steps
     with a rebuild on every step (LAMMPS `neigh_modify ... check no`; pdem marks its
     lists stale after every step), alternating, fastest of --repeats; from these and
     the normal runs, the whole cost of one rebuild in each code (wall time per step
     against rebuilds per step; with --ranks P on 1 and on P ranks), whichever phase
     clocks it: LAMMPS's Neigh leaves out
     the exchange and borders (Comm) and the contact history's carry-over (fix
     neigh/history, Modify), which pdem's `neighbor` phase holds.

Every pdem run and every LAMMPS run is a separate process started with
`mpirun -n P --bind-to none` (the driver does not initialize MPI).

Usage: bench/chute_vs_lammps.py [--particles N] [--steps N] [--repeats R] [--warmup N]
       [--ranks 2] [--forced-rebuilds 300] [--json FILE] [--quick]
"""
import argparse
import json
import math
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

from bed_vs_lammps import (fmt_phases, load_average, pdem_fingerprint, save_json,  # noqa: E402
                           timed_run)
from lammps_run import (bench_line, find_lammps, parse_run, run_input,  # noqa: E402
                        version as lammps_version, write_spheres_data)
import pdem  # noqa: E402

# ---------------------------------------------------------------- parameters (in.chute)
DIAMETER = 1.0
DENSITY = 6.0 / math.pi       # mass 1 per particle
KN = 2.0e5
KT = 2.0 / 7.0 * KN           # in.chute: NULL = 2/7 kn
GAMMA_N = 50.0
MU = 0.5
GRAVITY = 1.0
ANGLE = 26.0                  # degrees from -z toward +x
DT = 1.0e-4
SKIN = 0.1 * DIAMETER
SPACING = 40.0 / 39.0         # horizontal lattice spacing (40 d box for 39 columns)
JITTER = 0.01                 # horizontal jitter, +- (d)
TOP_MARGIN = 12.0             # box height above the initial top layer (d)
PHASES = ("neighbor", "comm", "contact", "integrate", "output")
LMP_SECTIONS = ("pair", "neigh", "comm", "output", "modify", "other")


def gamma_t(args):
    """in.chute: dampflag 0, no tangential damping; --tangential-damping: gamma_n / 2."""
    return 0.5 * GAMMA_N if args.tangential_damping else 0.0


def scene(n_target, layers, v0, sigma, seed):
    """Initial state: positions, velocities, box side L and height H."""
    side = max(2, int(round(math.sqrt(n_target / layers))))
    L = side * SPACING
    iz, iy, ix = np.meshgrid(np.arange(layers), np.arange(side), np.arange(side), indexing="ij")
    pos = np.column_stack([(ix.ravel() + 0.5) * SPACING, (iy.ravel() + 0.5) * SPACING,
                           0.5 * DIAMETER + iz.ravel() * DIAMETER])
    rng = np.random.default_rng(seed)
    pos[:, :2] += rng.uniform(-JITTER, JITTER, (len(pos), 2)) * DIAMETER
    vel = rng.normal(0.0, sigma, pos.shape)
    vel[:, 0] += v0
    H = layers * DIAMETER + TOP_MARGIN
    return pos, vel, L, H


# ================================================================ pdem (workers, under mpirun)
def make_sim(init, args):
    th = math.radians(ANGLE)
    L, H = float(init["L"]), float(init["H"])
    dom = pdem.Domain((0.0, 0.0, 0.0), (L, L, H), periodic=(True, True, False))
    sim = pdem.Simulation(dom, DT, gravity=(GRAVITY * math.sin(th), 0.0, -GRAVITY * math.cos(th)),
                          skin=SKIN, threads=getattr(args, "threads", 1),
                          sphere_orientations=getattr(args, "sphere_orientations", True))
    m = sim.material("grain", density=DENSITY, law="hooke", kn=KN, kt=KT, gamma_n=GAMMA_N,
                     gamma_t=gamma_t(args), friction=MU)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)      # the floor
    sim.add_spheres(init["pos"], 0.5 * DIAMETER, m, velocities=init["vel"])
    return sim


def pdem_state(sim):
    """Flow state summed over ranks (collective): kinetic and rotational energy, mean
    velocity along x (number average), z of the centre of mass, contacts per particle."""
    p = sim.particles()
    e = sim.energy()
    c = sim.contacts()
    m, v = p["mass"], p["velocity"]
    n, vx, mz, mass, pairs = sim.global_sum([len(m), v[:, 0].sum(), (m * p["position"][:, 2]).sum(),
                                             m.sum(), np.count_nonzero(c["kind"] == "pair")])
    return {"ke": e["kinetic"], "erot": e["rotational"], "vx": vx / n, "zcom": mz / mass,
            "contacts": 2.0 * pairs / n}


def worker_warm(args):
    z = np.load(args.init)
    sim = make_sim(z, args)
    s0 = pdem_state(sim)
    t0 = time.perf_counter()
    sim.run(steps=args.warmup)
    wall = time.perf_counter() - t0
    s1 = pdem_state(sim)
    sim.checkpoint(args.ckpt)
    if sim.rank == 0:
        with open(args.out, "w") as fh:
            json.dump({"w0": s0, "w1": s1, "wall_s": wall, "rebuilds": sim.n_rebuilds}, fh)


def vm_hwm_kib():
    """Peak resident set of this process so far (Linux /proc; None elsewhere)."""
    try:
        with open("/proc/self/status") as fh:
            return int(next(l for l in fh if l.startswith("VmHWM:")).split()[1])
    except (OSError, StopIteration):
        return None


def worker_pdem(args):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    if args.warmup:
        sim = pdem.restart(args.ckpt, threads=args.threads)
    else:
        sim = make_sim(np.load(args.init), args)
    n = sim.n_particles
    sim.run(steps=1)                           # warm-up step: neighbor list (not timed)
    if args.forced:         # a rebuild on every step, as LAMMPS's `neigh_modify check no`
        sim.events.every(1, lambda s: s.request_rebuild(), name="rebuild")
    start = None if args.no_state else pdem_state(sim)
    wall, cpu, rebuilt, sent = timed_run(sim, args.steps)
    walls, cpus = comm.allgather(wall), comm.allgather(cpu)
    timers = sim.timer_stats()
    rebuilds = comm.allgather(rebuilt)
    migrated = sim.global_sum(sent)
    end = None if args.no_state else pdem_state(sim)
    if comm.rank == 0:
        out = {"ranks": comm.size, "dims": [int(x) for x in sim.dec.dims], "particles": n, "steps": args.steps, "wall_s": max(walls),
               "cpu_s": max(cpus), "cpu_s_ranks": cpus,
               "particle_steps_per_s": n * args.steps / max(walls),
               "timers_s": {k: float(v[2]) for k, v in timers.items()},       # max over ranks
               "timers_min_mean_max_s": {k: list(map(float, v)) for k, v in timers.items()},
               "n_rebuilds": int(max(rebuilds)), "migrated": int(migrated),
               "vm_hwm_kib": vm_hwm_kib(),
               "start": start, "end": end}
        with open(args.out, "w") as fh:
            json.dump(out, fh, default=float)


# ================================================================ LAMMPS
LMP_HEAD = """# generated by bench/chute_vs_lammps.py: LAMMPS's bench/in.chute with a plane floor
units           lj
atom_style      sphere
atom_modify     map array
boundary        p p f
newton          off
comm_modify     vel yes
{processors}
{read}
neighbor        {skin!r} bin
neigh_modify    delay 0 every 1 check {check}
timestep        {dt!r}
fix             integ all nve/sphere
fix             grav all gravity {g!r} chute {angle!r}
fix             floor all wall/gran hooke/history {kn!r} {kt!r} {gn!r} {gt!r} {mu!r} {damp} zplane 0.0 NULL
compute         erot all erotate/sphere
compute         vx all reduce ave vx
compute         com all com
compute         cnt all contact/atom
compute         csum all reduce sum c_cnt
thermo_style    custom step atoms ke c_erot c_vx c_csum c_com[3]
thermo_modify   norm no format float %.12g
thermo          {thermo}
"""
STATE = ("ke=$(ke:%.12g) erot=$(c_erot:%.12g) vx=$(c_vx:%.12g) zcom=$(c_com[3]:%.12g) "
         "contacts=$(c_csum:%.12g)")
READ_DATA = """read_data       {data}
pair_style      gran/hooke/history {kn!r} NULL {gn!r} NULL {mu!r} {damp}
pair_coeff      * *"""
LMP_WARM = """run             0
print           "BENCH_W0 {state}"
run             {warmup}
print           "BENCH_W1 {state}"
write_restart   {restart}
print           "BENCH_END"
"""
LMP_TIMED = """run             1
print           "BENCH_START {state}"
run             {steps}
print           "BENCH_END {state}"
"""


def lammps_input(path, args, body, read, ranks, thermo, check="yes", **kw):
    damp = 1 if args.tangential_damping else 0
    # the wall's kt and gamma_t as the pair's NULLs (2/7 kn, gamma_n / 2); LAMMPS sets
    # gamma_t = 0 with dampflag 0, for the pair and the wall
    p = dict(kn=KN, kt=KT, gn=GAMMA_N, gt=0.5 * GAMMA_N, mu=MU, damp=damp)
    text = LMP_HEAD.format(processors="processors      * * 1" if ranks > 1 else "",
                           read=read.format(**dict(p, **kw)), skin=SKIN, check=check, dt=DT, g=GRAVITY,
                           angle=ANGLE, thermo=thermo, **p)
    text += body.format(state=STATE, **kw)
    with open(path, "w") as fh:
        fh.write(text)


def lammps_warm(lmp, args, data):
    inp = os.path.join(args.outdir, "in.chute_warm")
    log = os.path.join(args.outdir, "log.chute_warm")
    restart = os.path.join(args.outdir, "chute_warm.restart")
    lammps_input(inp, args, LMP_WARM, READ_DATA, 1, max(args.warmup, 1), data=data,
                 warmup=args.warmup, restart=restart)
    text, total = run_input(lmp, inp, log, mpirun(1, args.mpirun_args))
    return {"w0": bench_line(text, "BENCH_W0"), "w1": bench_line(text, "BENCH_W1"),
            "wall_s": parse_run(text)["wall_s"], "rebuilds": parse_run(text)["n_rebuilds"],
            "restart": restart}


def lammps_timed(lmp, args, data, restart, ranks, forced=False):
    """A timed LAMMPS run; forced: --forced-rebuilds steps with a rebuild on every step."""
    tag = "np%d%s" % (ranks, "_forced" if forced else "")
    inp = os.path.join(args.outdir, "in.chute_" + tag)
    log = os.path.join(args.outdir, "log.chute_" + tag)
    read = ("read_restart    %s" % restart) if args.warmup else READ_DATA
    steps = args.forced_rebuilds if forced else args.steps
    lammps_input(inp, args, LMP_TIMED, read, ranks, steps, check="no" if forced else "yes",
                 data=data, steps=steps)
    text, total = run_input(lmp, inp, log, mpirun(ranks, args.mpirun_args))
    r = parse_run(text)
    g = re.search(r"(\d+) by (\d+) by (\d+) MPI processor grid", text)
    r.update(start=bench_line(text, "BENCH_START"), end=bench_line(text, "BENCH_END"),
             process_wall_s=total, version=lammps_version(text), binary=lmp,
             grid=[int(x) for x in g.groups()] if g else None,
             particle_steps_per_s=r["particles"] * r["steps"] / r["wall_s"])
    for s in (r["start"], r["end"]):
        s["contacts"] /= r["particles"]
    return r


# ================================================================ driver
def forced_rebuilds(args, lmp, data, restart, init, ckpt, best, ranks):
    """The whole cost of one rebuild in each code on each rank count, from the normal
    timed runs (few rebuilds, `best`) and runs with a rebuild on every step: with t the
    wall time per step and r the rebuilds per step, t = base + c r, so c = (t_forced -
    t_normal) / (r_forced - r_normal). It holds everything a rebuild costs, whichever
    phase clocks it (LAMMPS: Neigh, the exchange and borders in Comm, fix neigh/history
    in Modify)."""
    runs = {(c, r): [] for c in ("pdem", "lammps") for r in ranks}
    for rep in range(args.repeats):
        for r in ranks:
            runs["pdem", r].append(launch(r, args, "pdem", forced=True, init=init, ckpt=ckpt))
            runs["lammps", r].append(lammps_timed(lmp, args, data, restart, r, forced=True))
    sf = args.forced_rebuilds
    result = {}
    for r in ranks:
        print("\n== a rebuild on every step: %d steps, %d rank(s) each, fastest of %d =="
              % (sf, r, args.repeats))
        print("%-30s %14s %14s" % ("", "pdem", "LAMMPS"))
        out = {}
        for name, phases in (("pdem", PHASES), ("lammps", LMP_SECTIONS)):
            normal = best[name, r]
            f = min(runs[name, r], key=lambda x: x["wall_s"])
            sn, rn = normal["steps"], normal["n_rebuilds"]
            share = f["n_rebuilds"] / sf - rn / sn
            cost = {k: (f["timers_s"].get(k, 0.0) / sf - normal["timers_s"].get(k, 0.0) / sn)
                    / share for k in phases}
            out[name] = {"rebuilds": f["n_rebuilds"], "wall_s": f["wall_s"],
                         "ms_per_rebuild": 1e3 * (f["wall_s"] / sf - normal["wall_s"] / sn) / share,
                         "ms_per_rebuild_by_phase": {k: 1e3 * v for k, v in cost.items()}}
        p, q = out["pdem"], out["lammps"]
        print("%-30s %14d %14d" % ("rebuilds", p["rebuilds"], q["rebuilds"]))
        print("%-30s %14.3f %14.3f" % ("wall time [s]", p["wall_s"], q["wall_s"]))
        print("%-30s %14.2f %14.2f" % ("ms per rebuild, whole", p["ms_per_rebuild"],
                                       q["ms_per_rebuild"]))
        for name, label in (("pdem", "pdem"), ("lammps", "LAMMPS")):
            print("  %s, ms per rebuild by phase: %s" % (label, ", ".join(
                "%s %.2f" % kv for kv in out[name]["ms_per_rebuild_by_phase"].items()
                if abs(kv[1]) >= 0.005)))
        print("pdem / LAMMPS, whole cost of a rebuild on %d rank(s): %.3f"
              % (r, p["ms_per_rebuild"] / q["ms_per_rebuild"]))
        result["np%d" % r] = out
    return result


def mpirun(n, extra):
    return ["mpirun", "-n", str(n)] + shlex.split(extra)


def launch(n, args, worker, forced=False, **paths):
    """Run this script as an MPI worker on n ranks (python -m mpi4py); returns its JSON.
    forced: --forced-rebuilds steps with a rebuild on every step."""
    fd, out = tempfile.mkstemp(prefix="chute_", suffix=".json", dir=args.outdir)
    os.close(fd)
    cmd = mpirun(n, args.mpirun_args) + [
        sys.executable, "-m", "mpi4py", os.path.abspath(__file__), "--worker", worker,
        "--out", out, "--steps", str(args.forced_rebuilds if forced else args.steps),
        "--warmup", str(args.warmup), "--threads", str(args.threads)]
    if forced:
        cmd.append("--forced")
    if args.tangential_damping:
        cmd.append("--tangential-damping")
    if args.sphere_orientations:
        cmd.append("--sphere-orientations")
    for k, v in paths.items():
        cmd += ["--" + k, str(v)]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit("worker failed (%s, exit %d):\n%s" % (" ".join(cmd), res.returncode,
                                                      "\n".join((res.stdout + res.stderr)
                                                                .splitlines()[-40:])))
    with open(out) as fh:
        r = json.load(fh)
    os.unlink(out)
    return r


def fmt_state(s):
    return ("mean vx %.5f, KE %.6e, KE rot %.4e, contacts/particle %.3f, z_com %.4f"
            % (s["vx"], s["ke"], s["erot"], s["contacts"], s["zcom"]))


def rel(a, b):
    return (a - b) / b if b else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--particles", type=int, default=33000,
                    help="about this many (whole columns of --layers spheres; default 33000 -> 33,462)")
    ap.add_argument("--layers", type=int, default=22, help="spheres per column (22)")
    ap.add_argument("--steps", type=int, default=2000, help="timed steps (2000)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="timed runs per code, alternating; the fastest counts (3)")
    ap.add_argument("--warmup", type=int, default=2000,
                    help="untimed steps before the timed part, in both codes (2000; 0: time "
                         "from the initial state)")
    ap.add_argument("--ranks", type=int, default=1,
                    help="also time both codes on this many ranks (e.g. 2: the 1 -> 2 rank "
                         "speedups); default 1: one core each only")
    ap.add_argument("--threads", type=int, default=1,
                    help="pdem's OpenMP threads per rank (1; LAMMPS stays at 1)")
    ap.add_argument("--v0", type=float, default=1.0, help="initial velocity down the slope (1.0)")
    ap.add_argument("--sigma", type=float, default=0.05,
                    help="standard deviation of the initial random velocity per component (0.05)")
    ap.add_argument("--sphere-orientations", action="store_true",
                    help="pdem integrates the spheres' orientations (pdem's default); without "
                         "it sphere_orientations=False, the work of LAMMPS's fix nve/sphere")
    ap.add_argument("--tangential-damping", action="store_true",
                    help="gamma_t = gamma_n / 2 (dampflag 1) instead of in.chute's dampflag 0")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--forced-rebuilds", type=int, default=0, metavar="STEPS",
                    help="also time both codes for STEPS steps with a rebuild on every step "
                         "(LAMMPS: neigh_modify check no), alternating, and print the whole "
                         "cost of a rebuild in each (0: not run)")
    ap.add_argument("--lmp", default=None, help="LAMMPS binary (default: lmp on PATH)")
    ap.add_argument("--mpirun-args", default="--bind-to none",
                    help="mpirun options of every run (default '--bind-to none')")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: 3,000 particles, 500 warm-up + 500 timed steps, 1 repeat")
    ap.add_argument("--outdir", default=os.path.join(HERE, "out"))
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    ap.add_argument("--worker", choices=("warm", "pdem"), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--no-state", action="store_true", help=argparse.SUPPRESS)  # memory runs
    ap.add_argument("--forced", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--init", help=argparse.SUPPRESS)
    ap.add_argument("--ckpt", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker == "warm":
        return worker_warm(args)
    if args.worker == "pdem":
        return worker_pdem(args)
    if args.quick:
        args.particles, args.steps, args.warmup, args.repeats = 3000, 500, 500, 1
    os.makedirs(args.outdir, exist_ok=True)
    lmp = args.lmp or find_lammps()
    if lmp is None:
        sys.exit("LAMMPS not found (apt-get install -y lammps)")
    t_start = time.perf_counter()

    # ---- the initial state, written for both codes
    pos, vel, L, H = scene(args.particles, args.layers, args.v0, args.sigma, args.seed)
    n = len(pos)
    tag = "n%d_s%d" % (n, args.seed)
    init = os.path.join(args.outdir, "chute_%s.npz" % tag)
    np.savez(init, pos=pos, vel=vel, L=np.float64(L), H=np.float64(H))
    data = os.path.join(args.outdir, "chute_%s.data" % tag)
    write_spheres_data(data, "pdem chute benchmark: %d spheres, d = %g" % (n, DIAMETER), pos, vel,
                       np.zeros_like(vel), DIAMETER, DENSITY, (0.0, 0.0, 0.0), (L, L, H))
    ckpt = os.path.join(args.outdir, "chute_%s_warm.ckpt" % tag)
    print("chute: %d spheres (%d columns x %d), d = %g, mass 1 (density 6/pi), box %.4g x %.4g "
          "(periodic) x %.4g, plane floor z = 0; gravity %g tilted %g deg toward +x; data %s"
          % (n, n // args.layers, args.layers, DIAMETER, L, L, H, GRAVITY, ANGLE,
             os.path.relpath(data)))
    print("law: hooke kn=%g kt=%g gamma_n=%g gamma_t=%g (dampflag %d) mu=%g, floor the same; "
          "dt=%g, skin=%g; initial vx %g + N(0, %g); warm-up %d steps, then %d steps timed x %d "
          "repeat(s)" % (KN, KT, GAMMA_N, gamma_t(args), int(args.tangential_damping), MU, DT,
                         SKIN, args.v0, args.sigma, args.warmup, args.steps, args.repeats))
    print(pdem_fingerprint())
    print("pdem sphere_orientations=%s (LAMMPS's fix nve/sphere integrates none)"
          % args.sphere_orientations)
    print("LAMMPS: %s" % lmp)

    # ---- warm-up, both codes, once
    if args.warmup:
        pw = launch(1, args, "warm", init=init, ckpt=ckpt)
        lw = lammps_warm(lmp, args, data)
        for s in (lw["w0"], lw["w1"]):
            s["contacts"] /= n
        print("\n== warm-up, %d steps (not timed): pdem %.1f s, %d rebuilds; LAMMPS %.1f s, %d "
              "rebuilds ==" % (args.warmup, pw["wall_s"], pw["rebuilds"], lw["wall_s"], lw["rebuilds"]))
        for label, key in (("step 0", "w0"), ("step %d" % args.warmup, "w1")):
            print("%-10s pdem:   %s" % (label, fmt_state(pw[key])))
            print("%-10s LAMMPS: %s" % ("", fmt_state(lw[key])))
            print("%-10s KE pdem/LAMMPS - 1 = %+.2e, mean vx %+.2e" % (
                "", rel(pw[key]["ke"], lw[key]["ke"]), rel(pw[key]["vx"], lw[key]["vx"])))
        restart = lw["restart"]
    else:
        pw = lw = None
        restart = None

    # ---- timed runs
    print("\nload average before timing: %.2f on %d cores" % (load_average(), os.cpu_count() or 1))
    ranks = [1] + ([args.ranks] if args.ranks > 1 else [])
    runs = {(c, r): [] for c in ("pdem", "lammps") for r in ranks}
    for rep in range(args.repeats):
        line = []
        for r in ranks:
            p = launch(r, args, "pdem", init=init, ckpt=ckpt)
            runs[("pdem", r)].append(p)
            q = lammps_timed(lmp, args, data, restart, r)
            runs[("lammps", r)].append(q)
            line.append("np%d pdem %.3f s, LAMMPS %.3f s (ratio %.3f)" % (
                r, p["wall_s"], q["wall_s"], p["particle_steps_per_s"] / q["particle_steps_per_s"]))
        print("repeat %d: %s (load %.2f)" % (rep + 1, "; ".join(line), load_average()), flush=True)
    best = {k: min(v, key=lambda x: x["wall_s"]) for k, v in runs.items()}
    pd, lm = best[("pdem", 1)], best[("lammps", 1)]
    ratio = pd["particle_steps_per_s"] / lm["particle_steps_per_s"]

    print("\n== flow state in the timed part (fastest runs; step 0 = end of the warm-up) ==")
    for label, key in (("start", "start"), ("end", "end")):
        print("%-6s pdem:   %s" % (label, fmt_state(pd[key])))
        print("%-6s LAMMPS: %s" % ("", fmt_state(lm[key])))
        print("%-6s KE pdem/LAMMPS - 1 = %+.2e, mean vx %+.2e" % (
            "", rel(pd[key]["ke"], lm[key]["ke"]), rel(pd[key]["vx"], lm[key]["vx"])))

    print("\n== summary: %d particles, %d steps timed, dt %g, 1 core each, fastest of %d ==" % (
        n, args.steps, DT, args.repeats))
    print("%-30s %14s %14s" % ("", "pdem", "LAMMPS"))
    print("%-30s %14.3f %14.3f" % ("wall time [s]", pd["wall_s"], lm["wall_s"]))
    print("%-30s %14.3f %14.3f" % ("CPU time [s]", pd["cpu_s"], lm["cpu_s"] or float("nan")))
    print("%-30s %14.4g %14.4g" % ("particle-steps / s", pd["particle_steps_per_s"],
                                   lm["particle_steps_per_s"]))
    print("%-30s %14.3f %14s" % ("ratio pdem / LAMMPS", ratio, "1"))
    print("%-30s %14d %14d" % ("neighbor rebuilds", pd["n_rebuilds"], lm["n_rebuilds"]))
    rows = [("neighbor", "neigh"), ("comm", "comm"), ("contact", "pair"), ("integrate", "modify"),
            ("output", "output"), (None, "other")]
    for a, b in rows:
        left = "%.3f" % pd["timers_s"][a] if a else "-"
        print("%-30s %14s %14s" % ("phase [s] %s / %s" % (a or "-", b.capitalize()), left,
                                   "%.3f" % lm["timers_s"].get(b, float("nan"))))
    rest = pd["wall_s"] - sum(pd["timers_s"].values())
    print("%-30s %14.3f %14s" % ("pdem: wall - sum of phases", rest, ""))
    per_p = 1e3 * pd["timers_s"]["neighbor"] / max(1, pd["n_rebuilds"])
    per_l = 1e3 * lm["timers_s"]["neigh"] / max(1, lm["n_rebuilds"])
    print("%-30s %14.2f %14.2f" % ("ms per rebuild (neighbor/Neigh)", per_p, per_l))
    print("%-30s %14s %14d" % ("dangerous builds", "-", lm["dangerous_builds"] or 0))
    print("%-30s %14.5f %14.5f" % ("mean vx start -> end", pd["start"]["vx"], lm["start"]["vx"]))
    print("%-30s %14.5f %14.5f" % ("", pd["end"]["vx"], lm["end"]["vx"]))
    print("%-30s %14.6e %14.6e" % ("KE start", pd["start"]["ke"], lm["start"]["ke"]))
    print("%-30s %14.6e %14.6e" % ("KE end", pd["end"]["ke"], lm["end"]["ke"]))
    print("KE at the end, pdem / LAMMPS - 1: %+.2e (start %+.2e)" % (
        rel(pd["end"]["ke"], lm["end"]["ke"]), rel(pd["start"]["ke"], lm["start"]["ke"])))
    print("pdem phases (sim.timer_stats, max over ranks): " + fmt_phases(pd["timers_s"]))
    print("LAMMPS phases (its timing table): " + fmt_phases(lm["timers_s"]))
    print("LAMMPS %s (%s); Modify = nve/sphere + gravity + wall/gran" % (lm["binary"], lm["version"]))

    result = {"pdem_build": pdem_fingerprint(), "particles": n, "steps": args.steps,
              "warmup": args.warmup, "repeats": args.repeats, "dt": DT,
              "params": dict(diameter=DIAMETER, density=DENSITY, kn=KN, kt=KT, gamma_n=GAMMA_N,
                             gamma_t=gamma_t(args), mu=MU, gravity=GRAVITY, angle=ANGLE, skin=SKIN,
                             v0=args.v0, sigma=args.sigma, seed=args.seed, layers=args.layers),
              "warm": {"pdem": pw, "lammps": lw}, "pdem": pd, "lammps": lm,
              "ratio_pdem_over_lammps": ratio,
              "runs": {"%s_np%d" % k: v for k, v in runs.items()}}
    if args.ranks > 1:
        P = args.ranks
        pp, lp = best[("pdem", P)], best[("lammps", P)]
        sp, sl = pd["wall_s"] / pp["wall_s"], lm["wall_s"] / lp["wall_s"]
        print("\n== 1 -> %d ranks, fastest of %d ==" % (P, args.repeats))
        print("%-8s %6s %10s %14s %9s" % ("code", "ranks", "wall [s]", "p-steps/s", "speedup"))
        for name, r1, rp in (("pdem", pd, pp), ("LAMMPS", lm, lp)):
            print("%-8s %6d %10.3f %14.4g %9s" % (name, 1, r1["wall_s"], r1["particle_steps_per_s"], "1"))
            print("%-8s %6d %10.3f %14.4g %9.3f" % (name, P, rp["wall_s"], rp["particle_steps_per_s"],
                                                    r1["wall_s"] / rp["wall_s"]))
        print("pdem speedup %.3f, LAMMPS %.3f, pdem's relative to LAMMPS's %.3f; pdem %d ranks: "
              "grid %s, %d rebuilds, %d particles migrated; LAMMPS grid %s, %d rebuilds"
              % (sp, sl, sp / sl, P, "x".join(map(str, pp["dims"])), pp["n_rebuilds"], pp["migrated"],
                 "x".join(map(str, lp["grid"] or ["?"])), lp["n_rebuilds"]))
        print("pdem %d-rank phases [s] min/mean/max: " % P + ", ".join(
            "%s %.3f/%.3f/%.3f" % ((k,) + tuple(v)) for k, v in pp["timers_min_mean_max_s"].items()
            if v[2] > 0))
        print("LAMMPS %d-rank phases: " % P + fmt_phases(lp["timers_s"]))
        result.update(speedup_pdem=sp, speedup_lammps=sl)
    if args.forced_rebuilds:
        result["forced_rebuilds"] = forced_rebuilds(args, lmp, data, restart, init, ckpt, best,
                                                    ranks)
    print("\ntotal time of this invocation: %.0f s" % (time.perf_counter() - t_start))
    save_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
