"""The pdem command line (docs/cli.md):

    python -m pdem run CASE --steps N | --until T [--out DIR] [options]
    python -m pdem info FILE
    python -m pdem plot FILE [--out DIR]

Under MPI: `mpirun -n 4 python -m mpi4py -m pdem run ...`. Every rank parses the same
arguments and takes the same decisions; rank 0 alone prints (other ranks only
warnings). Bad input ends every rank with one line `pdem: error: ...` and exit code
2 before the run starts.
"""
import argparse
import importlib.util
import math
import os
import sys
import time

import numpy as np
from mpi4py import MPI

import pdem
from pdem.contact.kinds import KINDS
from pdem.diagnostics import PHASES

STATUS = "status"                   # <out>/status: running | interrupted | finished | failed
JOINED = "results-all.xdmf"         # <out>/results-all.xdmf: the frames of every segment


def _segments(out, start):
    """The result files of the earlier segments of a run continued at step `start`:
    results.h5 and results-from-step-S.h5 with S < start (rank 0; [] on the others)."""
    if start == 0 or _rank() != 0:
        return []
    found = []
    for name in os.listdir(out):
        if name == "results.h5":
            found.append((0, name))
        elif name.startswith("results-from-step-") and name.endswith(".h5"):
            try:
                step = int(name[len("results-from-step-"):-3])
            except ValueError:
                continue
            if step < start:
                found.append((step, name))
    return [os.path.join(out, name) for _, name in sorted(found)]


class Fail(Exception):
    """A message for the user and an exit code (2: bad input)."""

    def __init__(self, message, code=2):
        super().__init__(message)
        self.code = code


def _rank():
    return MPI.COMM_WORLD.rank


class Parser(argparse.ArgumentParser):
    def _print_message(self, message, file=None):       # usage, help, errors: rank 0 only
        if _rank() == 0:
            super()._print_message(message, file)


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % text)
    return value


def _time(text):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError("expected a positive finite time, got %r" % text)
    return value


def parser():
    p = Parser(prog="python -m pdem", description="pdem: MPI-parallel DEM (docs/cli.md)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    r = sub.add_parser("run", help="run a case file (or continue a checkpoint)")
    r.add_argument("case", nargs="?", metavar="CASE",
                   help="Python file defining build(comm) -> pdem.Simulation and optionally events(sim) "
                        "(with --restart: only its events(sim) is used)")
    end = r.add_mutually_exclusive_group(required=True)
    end.add_argument("--steps", type=_positive, help="run until step N (counted from the case's start)")
    end.add_argument("--until", type=_time, metavar="T", help="run until simulated time T")
    r.add_argument("--out", default="results/run", metavar="DIR", help="output folder (default results/run)")
    r.add_argument("--output-every", type=_positive, metavar="N", help="a frame every N steps (default: first and last)")
    r.add_argument("--fields", metavar="F1,F2", help="particle fields of the frames (default: all but mass)")
    r.add_argument("--contacts", action="store_true", help="write contacts in the frames")
    r.add_argument("--float32", action="store_true", help="positions and contact points as float32")
    r.add_argument("--checkpoint-every", type=_positive, metavar="N", help="a checkpoint every N steps (always one at the end)")
    r.add_argument("--restart", metavar="CHECKPOINT", help="continue from this checkpoint")
    r.add_argument("--threads", type=_positive, metavar="N", help="OpenMP threads per rank")
    r.add_argument("--thermo-every", type=_positive, metavar="N",
                   help="a log line and a series row every N steps (default: about 20 per run)")
    i = sub.add_parser("info", help="summarize a result file or a checkpoint")
    i.add_argument("file", metavar="FILE")
    g = sub.add_parser("plot", help="PNG plots of a result file's time series")
    g.add_argument("file", metavar="FILE")
    g.add_argument("--out", metavar="DIR", help="folder of the PNGs (default: beside FILE)")
    return p


def _agree(comm, problem):
    """The first rank's problem (None if none), on every rank (collective)."""
    return next((p for p in comm.allgather(problem) if p), None) if comm.size > 1 else problem


def _say(*args, **kw):
    if _rank() == 0:
        print(*args, **kw, flush=True)


# ------------------------------------------------------------------ run
def load_case(path):
    """The case file `path` as a module (run as 'pdem_case', not '__main__') with a
    function build(comm) and optionally events(sim)."""
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        raise Fail("case file %r does not exist or is not readable" % path)
    spec = importlib.util.spec_from_file_location("pdem_case", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))   # sibling imports
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise Fail("case file %r: line %s: %s" % (path, exc.lineno, exc.msg))
    build = getattr(module, "build", None)
    if not callable(build):
        raise Fail("case file %r defines no function build(comm) returning a pdem.Simulation" % path)
    return module


def _check_out(out, comm):
    """Create the output folder (rank 0); returns True when it did not exist before
    (it is then removed if the set-up fails: no empty results folder)."""
    problem, created = None, False
    if comm.rank == 0:
        try:
            created = not os.path.isdir(out)
            os.makedirs(out, exist_ok=True)
            probe = os.path.join(out, ".pdem-write-test")
            with open(probe, "w"):
                pass
            os.remove(probe)
        except OSError as exc:
            problem = "output folder %r is not writable: %s" % (out, exc.strerror or exc)
    problem = _agree(comm, problem)
    if problem:
        raise Fail(problem)
    return created


def _remove_if_empty(out):
    if _rank() == 0:
        try:
            os.rmdir(out)               # only an empty folder
        except OSError:
            pass


def _status(out, text):
    if _rank() == 0:
        with open(os.path.join(out, STATUS), "w") as fh:
            fh.write(text + "\n")


class Log:
    """Thermo lines (or a progress bar on a terminal) and the timing table, rank 0."""

    def __init__(self, sim, start, target):
        self.sim, self.start, self.target = sim, start, target
        self.root = sim.rank == 0
        self.tty = self.root and _progress_bar()
        self.clock = time.perf_counter()
        self.timers0 = dict(sim.timers)      # time spent before the run (set-up) is not counted
        self.header = False
        self.removed = sim.lost == "remove"  # a column of particles removed so far

    def thermo(self, n_particles, n_contacts, kinetic, loads=None):
        s = self.sim.step_count
        wall = time.perf_counter() - self.clock
        done, left = s - self.start, self.target - s
        rate = n_particles * done / wall if wall > 0 else 0.0
        eta = _hms(left * wall / done) if done else "?"
        if not self.root:
            return
        if self.tty:
            frac = done / max(1, self.target - self.start)
            bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
            sys.stdout.write("\r[%s] %3d%%  step %d/%d  t %.4g  contacts %d  Ek %.3e  %.3g p-steps/s  left %s "
                             % (bar, 100 * frac, s, self.target, self.sim.time, n_contacts, kinetic,
                                rate, eta))
            sys.stdout.flush()
            return
        stats = dict(self.sim.scheme.stats())              # e.g. NSCD's sweeps of the last step
        if self.removed:
            stats["removed"] = self.sim.n_removed
        stats.update(loads or {})                            # driven walls' loads
        if not self.header:
            print("%10s %13s %10s %9s %12s %11s %9s" % ("step", "time", "particles", "contacts",
                                                      "kinetic", "p-steps/s", "left")
                  + "".join((" %7s" if isinstance(v, (int, np.integer)) else " %11s")
                            % name.replace("solver_", "") for name, v in stats.items()))
            self.header = True
        print("%10d %13.6e %10d %9d %12.5e %11.4g %9s" % (s, self.sim.time, n_particles, n_contacts,
                                                        kinetic, rate, eta)
              + "".join(" %7d" % v if isinstance(v, (int, np.integer)) else " %11.4e" % v
                        for v in stats.values()), flush=True)

    def timing(self):
        """Seconds per phase of this run (min / avg / max over ranks) and their share
        of the wall time, with `other` (the rest: Python between phases, thermo
        reductions, waiting) so that the shares add up to 100 %."""
        sim = self.sim
        spent = np.array([sim.timers[p] - self.timers0.get(p, 0.0) for p in PHASES])
        wall = time.perf_counter() - self.clock
        per_rank = np.append(spent, max(0.0, wall - spent.sum()))
        rows = np.array(sim.comm.allgather(per_rank)) if sim.size > 1 else per_rank[None, :]
        if not self.root:
            return
        if self.tty:
            print()
        print("timing over %d rank(s), %d step(s) in %.2f s wall:" % (
            self.sim.size, self.sim.step_count - self.start, wall))
        print("  %-10s %10s %10s %10s %7s" % ("phase", "min [s]", "avg [s]", "max [s]", "% wall"))
        avg = rows.mean(axis=0)
        share = avg / avg.sum() if avg.sum() > 0 else avg      # each rank's row sums to its wall
        for k, phase in enumerate(PHASES + ("other",)):
            print("  %-10s %10.3f %10.3f %10.3f %7.1f" % (phase, rows[:, k].min(), avg[k],
                                                         rows[:, k].max(), 100 * share[k]))
        sys.stdout.flush()


def _progress_bar():
    """A progress bar instead of log lines: PDEM_PROGRESS=bar|lines, else when stdout
    is a terminal and no MPI launcher started us (mpirun gives ranks a pseudo-terminal
    even when its own output goes to a file)."""
    choice = os.environ.get("PDEM_PROGRESS", "auto")
    if choice in ("bar", "lines"):
        return choice == "bar"
    launched = any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMIX_RANK",
                                             "SLURM_STEP_ID"))
    return sys.stdout.isatty() and not launched


def _hms(seconds):
    seconds = int(round(seconds))
    return "%d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60)


def _setup(args, comm):
    """(sim, result file) after every input check, or Fail (the same on every rank)."""
    from pdem.io import ResultFile

    if args.restart is None and args.case is None:
        raise Fail("run: give a CASE file, or --restart CHECKPOINT")
    created = _check_out(args.out, comm)
    try:
        return _setup_in(args, comm, created)
    except Fail:
        if created:
            _remove_if_empty(args.out)
        raise


def _setup_in(args, comm, created):
    from pdem.io import ResultFile

    try:
        case = None
        if args.case is not None:
            try:
                case = load_case(args.case)
            except Fail as exc:
                problem = str(exc)
            else:
                problem = None
            problem = _agree(comm, problem)
            if problem:
                raise Fail(problem)
        if args.restart is not None:
            sim = pdem.restart(args.restart, comm=comm, threads=args.threads)
        else:
            sim = case.build(comm)
            if not isinstance(sim, pdem.Simulation):
                raise Fail("case file %r: build(comm) returned %r, not a pdem.Simulation"
                           % (args.case, type(sim).__name__))
            if args.threads:
                sim.threads = args.threads
        if callable(getattr(case, "events", None)):
            case.events(sim)                 # also after --restart (with CASE given)
        fields = args.fields.split(",") if args.fields else None
        name = "results.h5" if sim.step_count == 0 else "results-from-step-%d.h5" % sim.step_count
        rf = ResultFile(os.path.join(args.out, name), sim, fields=fields, contacts=args.contacts,
                        float32_positions=args.float32,
                        series_extra=pdem.energy.series_extra() if sim.track_energy else None,
                        joined=(os.path.join(args.out, JOINED), _segments(args.out, sim.step_count)))
    except pdem.InputError as exc:
        raise Fail(str(exc))
    return sim, rf


def run(args):
    comm = MPI.COMM_WORLD
    sim, rf = _setup(args, comm)
    start = sim.step_count
    if args.steps is not None:
        target = args.steps
    else:
        target = start + max(0, int(np.floor((args.until - sim.time) / sim.dt + 0.5)))
    target = max(target, start)
    thermo = args.thermo_every or max(1, int(round((target - start) / 20)))
    checkpoint = os.path.join(args.out, "checkpoint.h5")
    sim.checkpoint_on_signal(checkpoint)
    comm.Barrier()                   # every rank handles SIGTERM/SIGUSR1 from here on
    _status(args.out, "running step %d of %d" % (start, target))
    _say("pdem run: %s: %d particles, dt %.6g, steps %d -> %d, %d rank(s) x %d thread(s), output in %s"
         % ("restart from %s" % args.restart if args.restart else args.case, sim.n_particles,
            sim.dt, start, target, sim.size, sim.threads, rf.path))
    log = Log(sim, start, target)
    last_frame = None
    try:
        if start == 0:                       # a fresh run: the initial state too
            rf.write_frame()
            rf.write_series()
            last_frame = start
        periods = [e for e in (args.output_every, thermo, args.checkpoint_every) if e]
        while sim.step_count < target:
            now = sim.step_count
            sim.run(steps=min([target] + [now + e - now % e for e in periods]) - now,
                    progress=False)      # the thermo lines (or the bar) say it
            s = sim.step_count
            if args.output_every and s % args.output_every == 0:
                rf.write_frame()
                last_frame = s
            if s % thermo == 0 or s == target:
                rf.write_series()
                e, n, c = sim.energy(), sim.n_particles, sim.n_contacts
                extra = sim.motions.loads(sim)
                if sim.track_energy:             # the balance's relative error (docs/energy.md)
                    extra["energy_error"] = e["error"]
                log.thermo(n, c, e["kinetic"], extra)
                _status(args.out, "running step %d of %d" % (s, target))
            if args.checkpoint_every and s % args.checkpoint_every == 0 and s < target:
                sim.checkpoint(checkpoint)
            if sim.stopped:                  # an event's sim.stop()
                _say("pdem run: stopped by an event at step %d" % s)
                break
        if last_frame != sim.step_count:
            rf.write_frame()
        sim.checkpoint(checkpoint)
    except pdem.CheckpointExit:
        rf.close()
        log.timing()
        _status(args.out, "interrupted step %d of %d" % (sim.step_count, target))
        _say("pdem run: stopped at step %d of %d; continue with the same command plus "
             "--restart %s" % (sim.step_count, target, checkpoint))
        return 0
    except (pdem.SimulationError, pdem.InputError) as exc:   # raised on every rank alike
        rf.close()
        _status(args.out, "failed step %d of %d" % (sim.step_count, target))
        raise Fail(str(exc), code=1)
    rf.close()
    log.timing()
    _status(args.out, "finished step %d" % sim.step_count)
    _say("pdem run: finished at step %d (t = %.9g); wrote %s, %s" % (sim.step_count, sim.time,
                                                                     rf.path, checkpoint))
    return 0


# ------------------------------------------------------------------ info and plot
def _open_h5(path):
    import h5py
    try:
        f = h5py.File(path, "r")
    except (OSError, ValueError) as exc:
        raise Fail("cannot read %r: %s" % (path, exc))
    kind = f.attrs.get("format")
    if kind not in ("pdem-frames", "pdem checkpoint"):
        f.close()
        raise Fail("%r is neither a pdem result file nor a pdem checkpoint" % path)
    return f, kind


def _span(a):
    return "%s .. %s" % (a[0], a[-1]) if len(a) else "none"


def info(args):
    if _rank() != 0:
        return 0
    f, kind = _open_h5(args.file)
    a, out = f.attrs, []
    try:
        domain = "%s .. %s, periodic %s, dim %d" % (
            _vec(a["domain_lo"] if kind == "pdem-frames" else _json(a["domain"])["lo"]),
            _vec(a["domain_hi"] if kind == "pdem-frames" else _json(a["domain"])["hi"]),
            [bool(p) for p in (a["periodic"] if kind == "pdem-frames" else _json(a["domain"])["periodic"])],
            a["dim"] if kind == "pdem-frames" else _json(a["domain"])["dim"])
        if kind == "pdem checkpoint":
            kinds = [k for k in KINDS if k.contact and k.name in f["interactions"]]
            out += [("kind", "checkpoint (version %d)" % a["version"]),
                    ("step", int(a["step"])), ("time", "%.9g" % a["time"]), ("dt", "%.6g" % a["dt"]),
                    ("particles", len(f["particles/id"])),
                    ("contacts", "%d (%s)" % (
                        sum(len(f["interactions"][k.name]["key"]) for k in kinds),
                        ", ".join("%d %s" % (len(f["interactions"][k.name]["key"]), k.name)
                                  for k in kinds))),
                    ("bonds", "%d intact, %d broken" % (len(f["interactions/bond/key"]),
                                                        len(f["bonds_broken/id1"]))),
                    ("planes", len(f["planes/point"])),
                    ("segments, points", "%d, %d" % (len(f["segments/a"]), len(f["points/a"]))),
                    ("region walls", len(f["region_walls/material"]) if "region_walls" in f else 0),
                    ("mesh walls", ", ".join("%s (%d facets)" % (w["name"], len(
                        f["mesh_walls/%d/facets" % i])) for i, w in enumerate(
                        _json(f["mesh_walls"].attrs["walls"]))) or "none"),
                    ("materials", ", ".join(m["name"] for m in _json(a["materials"]))),
                    ("domain", domain)]
        else:
            frames = [f["frames"][k] for k in sorted(f["frames"])]
            steps = [int(g.attrs["step"]) for g in frames]
            times = ["%.6g" % g.attrs["time"] for g in frames]
            series = f["series"] if "series" in f else None
            out += [("kind", "result file (%s %d), written by %d rank(s)" % (
                        kind, a["format_version"], a["n_ranks"])),
                    ("frames", len(frames)), ("steps", _span(steps)), ("time", _span(times)),
                    ("dt", "%.6g" % a["dt"])]
            if frames:
                last = frames[-1]
                out.append(("particles", int(last.attrs["n_particles"])))
                if "n_contacts" in last.attrs:
                    out.append(("contacts", int(last.attrs["n_contacts"])))
                out.append(("fields", ", ".join(last["particles"])))
                if "contacts" in last:
                    out.append(("contact fields", ", ".join(last["contacts"])))
                out.append(("planes", len(last["walls/point"])))
                if "mesh_walls" in last:
                    out.append(("mesh walls", "%d walls, %d facets" % (
                        len(last["mesh_walls/force"]), len(last["mesh_walls/facets"]))))
            if series is not None:
                n = len(series["step"])
                out.append(("series", "%d rows, steps %s: %s" % (
                    n, _span(series["step"][...].tolist()),
                    ", ".join(k for k in series if k not in ("step", "time")))))
                if n:
                    out.append(("last row", "contacts %d, kinetic energy %.6g" % (
                        series["n_contacts"][-1], series["kinetic_energy"][-1])))
            else:
                out.append(("series", "0 rows"))
            out.append(("domain", domain))
    except KeyError as exc:
        raise Fail("%r is truncated or corrupted: %s" % (args.file, exc))
    finally:
        f.close()
    print("%s:" % args.file)
    for key, value in out:
        print("  %-15s %s" % (key + ":", value))
    return 0


def _vec(values):
    """[0, 0, 0.018] rather than [0.0, 0.0, 0.018000000000000002] (input round-off)."""
    return "[%s]" % ", ".join("%.12g" % v for v in np.ravel(values))


def _json(text):
    import json
    return json.loads(text)


def plot(args):
    if _rank() != 0:
        return 0
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f, kind = _open_h5(args.file)
    with f:
        if kind != "pdem-frames" or "series" not in f or len(f["series/step"]) == 0:
            raise Fail("%r has no time series to plot (a result file written with "
                       "write_series or python -m pdem run)" % args.file)
        s = {k: f["series"][k][...] for k in f["series"]}
        normals = None
        frames = sorted(f["frames"])
        if frames:
            normals = f["frames"][frames[-1]]["walls/normal"][...]
    out = args.out or os.path.dirname(os.path.abspath(args.file))
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise Fail("output folder %r is not writable: %s" % (out, exc.strerror or exc))
    stem = os.path.join(out, os.path.splitext(os.path.basename(args.file))[0])
    t, written = s["time"], []

    def save(fig, name):
        path = "%s-%s.png" % (stem, name)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)

    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
    ax1.plot(t, s["kinetic_energy"], label="kinetic")
    ax1.plot(t, s["rotational_energy"], label="rotational")
    if np.all(s["kinetic_energy"] > 0):
        ax1.set_yscale("log")
    ax1.set_ylabel("energy")
    ax1.legend()
    ax2.plot(t, s["gravity_energy"] - s["gravity_energy"][0], label="gravity (change)")
    ax2.plot(t, s["kinetic_energy"] + s["rotational_energy"] + s["gravity_energy"]
             - s["gravity_energy"][0], label="kinetic + rotational + gravity change")
    ax2.set_xlabel("time")
    ax2.set_ylabel("energy")
    ax2.legend()
    fig.suptitle("energies: %s" % os.path.basename(args.file))
    save(fig, "energy")

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(t, s["n_contacts"])
    ax.set_xlabel("time")
    ax.set_ylabel("active contacts")
    save(fig, "contacts")

    w = s["wall_force"]
    if w.ndim == 3 and w.shape[1]:
        fig, ax = plt.subplots(figsize=(7, 4))
        for k in range(w.shape[1]):
            if normals is not None and k < len(normals):
                ax.plot(t, w[:, k] @ normals[k], label="plane %d, normal %s" % (k, normals[k].round(3).tolist()))
            else:
                ax.plot(t, np.linalg.norm(w[:, k], axis=1), label="plane %d, |force|" % k)
        ax.set_xlabel("time")
        ax.set_ylabel("force on the wall (along its normal)")
        ax.legend(fontsize="small")
        save(fig, "wall_forces")
    if "mesh_wall_force" in s and s["mesh_wall_force"].shape[1]:
        w = s["mesh_wall_force"]
        fig, ax = plt.subplots(figsize=(7, 4))
        for k in range(w.shape[1]):
            for d, name in enumerate("xyz"):
                ax.plot(t, w[:, k, d], label="mesh wall %d, F%s" % (k, name))
        ax.set_xlabel("time")
        ax.set_ylabel("force on the mesh wall")
        ax.legend(fontsize="small", ncol=2)
        save(fig, "mesh_wall_forces")
    from pdem.io.frames import CELL_SERIES, SERIES, WALL_SERIES
    extra = [k for k in s if k not in SERIES and k not in WALL_SERIES and k not in CELL_SERIES]
    if extra:                            # ResultFile(series_extra=...) columns
        fig, axes = plt.subplots(len(extra), 1, sharex=True, figsize=(7, 2.5 + 2 * len(extra)),
                                 squeeze=False)
        for ax, name in zip(axes[:, 0], extra):
            ax.plot(t, s[name])
            ax.set_ylabel(name)
        axes[-1, 0].set_xlabel("time")
        fig.suptitle("series_extra: %s" % os.path.basename(args.file))
        save(fig, "extra")
    for path in written:
        print("wrote %s" % path)
    return 0


# ------------------------------------------------------------------ entry point
def main(argv=None):
    args = parser().parse_args(argv)          # argparse: message and exit code 2
    try:
        return {"run": run, "info": info, "plot": plot}[args.command](args)
    except Fail as exc:
        if _rank() == 0:
            print("pdem: error: %s" % exc, file=sys.stderr, flush=True)
        return exc.code
