"""Discharge of a 2D hourglass with non-smooth contact dynamics (seed 003, "An
hourglass"; the course's hourglassRun.py): frictionless, perfectly inelastic disks
fall through the neck under gravity; the walls are the boundary segments of a Gmsh
file (with boundary disks at their ends).

    python examples/hourglass/run.py -o results/hourglass/hourglass.h5 [--fill-height 0.15]
    mpirun -n 2 python -m mpi4py examples/hourglass/run.py -o ...   (any number of ranks)
    python examples/hourglass/run.py --msh my_hourglass.msh ...  (your own walls)

The run is a 2D pdem.Simulation with scheme=pdem.NSCD(...) over the walls' bounding
box (a little larger), cut over the MPI ranks; the walls are Simulation.add_segments
(zero-radius boundary points at their ends). Build the geometry (or read --msh), fill
the upper bulb with polydisperse disks (seeded lattice, no overlap), let them settle
on a gate segment that closes the neck (--settle seconds), open it (time 0: a second
Simulation without the gate takes the grains with their velocities) and discharge
until every grain has passed the neck or --duration has elapsed. The flow rate is
the slope of the mass below the neck against time, fitted over the middle 60 % of
the discharge (from 20 % to 80 % of the mass); it is printed at the end with the R^2
of the fit.

The HDF5 file (layout in docs/nscd.md): attributes (every parameter, the neck, the
flow rate), /walls, /series (time, mass below the neck, iterations and contacts per
step) and /frames/NNNNNN (id, position, velocity, radius) every --frame-interval s.
"""
import argparse
import math
import os
import sys
import time

import numpy as np
from mpi4py import MPI

import pdem
from pdem.errors import InputError
from pdem.nscd.hourglass_geometry import build_hourglass_msh, fill_above, neck_of_segments
from pdem.nscd.msh_segments import read_msh_segments

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from geometry import add_geometry_arguments, geometry_kwargs  # noqa: E402

FORMAT = ("pdem-hourglass", 1)
SERIES = {"time": "T", "mass_below": "M", "n_below": "1", "iterations": "1",
          "contacts": "1", "min_gap": "L"}


# ------------------------------------------------------------------ arguments
def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", default="results/hourglass/hourglass.h5",
                   help="HDF5 result file (default %(default)s); the .msh built from the "
                        "geometry options is written beside it")
    p.add_argument("--msh", default=None,
                   help="read the walls from this Gmsh file (4.1 or 2.2 ASCII) instead of "
                        "building them from the geometry options")
    add_geometry_arguments(p)
    g = p.add_argument_group("grains")
    fill = g.add_mutually_exclusive_group()
    fill.add_argument("--grains", type=int, default=None,
                      help="number of disks, lowest lattice cells first")
    fill.add_argument("--fill-height", type=float, default=None,
                      help="fill the upper bulb up to this height above the neck (m; "
                           "default 0.15 when --grains is not given)")
    g.add_argument("--radius", type=float, default=0.002,
                   help="mean radius (m, default %(default)s)")
    g.add_argument("--polydispersity", type=float, default=0.2,
                   help="radii uniform in radius * (1 +- this) (default %(default)s)")
    g.add_argument("--density", type=float, default=2500.0,
                   help="density (kg/m^3) of the grains, spheres of radius r in one layer "
                        "(as between the glass plates of a flat hourglass): mass = "
                        "density * 4/3 pi r^3 (default %(default)s, glass)")
    g.add_argument("--friction", type=float, default=0.0,
                   help="Coulomb friction coefficient, grains and walls (default 0: the "
                        "seed's frictionless grains)")
    g.add_argument("--seed", type=int, default=1, help="random seed of the fill")
    s = p.add_argument_group("solver")
    s.add_argument("--dt", type=float, default=5e-4, help="time step (s)")
    s.add_argument("--tol", type=float, default=None,
                   help="geometric tolerance: the deepest overlap allowed (m, default "
                        "radius / 100); the solver converges to half of it (with the "
                        "overlap correction, one step's residual errors then stay "
                        "below tol)")
    s.add_argument("--alert", type=float, default=None,
                   help="alert distance (m, default radius)")
    s.add_argument("--skin", type=float, default=None,
                   help="Verlet skin (m, default twice the largest radius): the lists are "
                        "rebuilt when a disk moved half of it; falling disks move ~0.5 mm "
                        "per step, so pdem's default (0.2 r_max) rebuilt at almost every "
                        "step")
    s.add_argument("--overlap-correction", type=float, default=1.0,
                   help="fraction of an existing overlap removed per step (default "
                        "%(default)s; 0 is the seed's rule, which never corrects an "
                        "overlap, so solver tolerance errors accumulate)")
    s.add_argument("--solver", choices=("nlgs", "jacobi"), default="nlgs")
    s.add_argument("--itmax", type=int, default=1000)
    s.add_argument("--threads", type=int, default=1, help="OpenMP threads per rank")
    r = p.add_argument_group("run")
    r.add_argument("--settle", type=float, default=0.25,
                   help="settling time on the closed gate before the discharge (s)")
    r.add_argument("--duration", type=float, default=5.0,
                   help="longest discharge time (s); stops earlier when every grain passed")
    r.add_argument("--frame-interval", type=float, default=0.02,
                   help="time between two frames of the HDF5 file (s)")
    r.add_argument("--quiet", action="store_true", help="print nothing but errors")
    return p


# ------------------------------------------------------------------ simulation
def domain_of(x0, x1):
    """The run's 2D non-periodic box: the walls' bounding box with a margin of 1 % of
    its largest side."""
    lo = np.minimum(x0, x1).min(axis=0)
    hi = np.maximum(x0, x1).max(axis=0)
    pad = 0.01 * float((hi - lo).max())
    return pdem.Domain(lo - pad, hi + pad, dim=2)


def make_simulation(args, comm, x0, x1, tol, alert, skin):
    """A pdem.Simulation with the NSCD scheme over domain_of(walls), on the ranks of
    `comm`, with the glass material and the boundary segments x0 -> x1 (zero-radius
    boundary points at their ends). The solver converges to tol / 2 (--tol), potential
    contacts lie within `alert`, the Verlet lists reach `skin` further."""
    scheme = pdem.NSCD(args.solver, tol=0.5 * tol, itmax=args.itmax, alert=alert,
                       overlap_correction=args.overlap_correction)
    sim = pdem.Simulation(domain_of(x0, x1), args.dt, gravity=(0.0, -9.81, 0.0), comm=comm,
                          threads=args.threads, scheme=scheme, skin=skin)
    sim.material("glass", args.density, friction=args.friction)     # restitution 0
    sim.add_segments(x0, x1, "glass", end_points=True)
    return sim


def contact_stats(sim):
    """(number of active contacts, smallest gap among them) on all ranks (collective).
    Active: touching or carrying an impulse, so every overlap (gap < 0) is among them;
    the gaps are those of the current positions. NaN without contacts."""
    overlap = sim.contacts()["overlap"]
    count = int(sim.global_sum(float(len(overlap))))
    deepest = sim.collective.max(float(overlap.max()) if len(overlap) else -math.inf)
    return count, (-deepest if math.isfinite(deepest) else float("nan"))


# ------------------------------------------------------------------ flow rate
def flow_rate_fit(t, mass, total, lo=0.2, hi=0.8):
    """(rate, intercept, r2, t_lo, t_hi): least-squares line of mass(t) over the
    samples between the times the mass first reaches lo * total and hi * total."""
    t, mass = np.asarray(t, float), np.asarray(mass, float)
    reach_lo = np.nonzero(mass >= lo * total)[0]
    reach_hi = np.nonzero(mass >= hi * total)[0]
    if not len(reach_lo) or not len(reach_hi):
        return (float("nan"),) * 5
    sel = slice(reach_lo[0], reach_hi[0] + 1)
    tt, mm = t[sel], mass[sel]
    if len(tt) < 3:
        return (float("nan"),) * 5
    slope, icpt = np.polyfit(tt, mm, 1)
    res = mm - (slope * tt + icpt)
    r2 = 1.0 - float(res @ res) / float(((mm - mm.mean()) ** 2).sum())
    return float(slope), float(icpt), r2, float(tt[0]), float(tt[-1])


# ------------------------------------------------------------------ output
class Output:
    """The HDF5 result file: h5py's mpio driver under MPI (collective dataset
    creation, each rank writing its own rows of a frame at its Exscan offset),
    a plain file on one rank."""

    def __init__(self, path, comm, attrs, x0, x1):
        import h5py
        self.comm = comm
        self.size = comm.size
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        if self.size > 1:
            from pdem.io.frames import collective_transfer
            self.h5 = h5py.File(path, "w", driver="mpio", comm=comm)
            self.dxpl = collective_transfer(True)
        else:
            self.h5, self.dxpl = h5py.File(path, "w"), None
        a = self.h5.attrs
        a["format"], a["format_version"] = FORMAT
        for k, v in attrs.items():
            a[k] = "" if v is None else v
        self._root_rows(self.h5.create_group("walls"), {"x0": x0, "x1": x1}, "L")
        self.h5.create_group("frames")
        self.n_frames = 0

    def _root_rows(self, group, data, unit):
        """Datasets every rank creates, rank 0 fills (small global arrays)."""
        for name, rows in data.items():
            rows = np.ascontiguousarray(rows)
            d = group.create_dataset(name, rows.shape, dtype=rows.dtype)
            d.attrs["unit"] = unit if isinstance(unit, str) else unit[name]
            if self.size == 1 or self.comm.rank == 0:
                if rows.size:
                    d[...] = rows

    def frame(self, p, t, step):
        """Frame of the particles `p` this rank owns (Simulation.particles())."""
        ids = p["id"]
        g = self.h5.create_group("frames/%06d" % self.n_frames)
        g.attrs["time"], g.attrs["step"] = t, step
        rows = {"id": (ids, "1"), "position": (p["position"][:, :2], "L"),
                "velocity": (p["velocity"][:, :2], "L/T"), "radius": (p["radius"], "L")}
        if self.size == 1:
            for name, (a, unit) in rows.items():
                g.create_dataset(name, data=np.ascontiguousarray(a)).attrs["unit"] = unit
        else:
            from pdem.io.frames import row_offsets, write_slab
            (start,), (total,) = row_offsets(self.comm, [len(ids)])
            for name, (a, unit) in rows.items():
                a = np.ascontiguousarray(a)
                d = g.create_dataset(name, (total,) + a.shape[1:], dtype=a.dtype)
                d.attrs["unit"] = unit
                if total:
                    write_slab(d, start, a, self.dxpl)
        self.n_frames += 1

    def close(self, series, results):
        grp = self.h5.create_group("series")
        self._root_rows(grp, {k: np.asarray(series[k]) for k in SERIES}, SERIES)
        for k, v in results.items():
            self.h5.attrs[k] = v
        self.h5.attrs["n_frames"] = self.n_frames
        self.h5.close()


# ------------------------------------------------------------------ the run
def setup(args, comm):
    """Walls, neck and the initial fill: (x0, x1, neck, positions, radii, msh path)
    (collective: rank 0 builds the .msh)."""
    if args.msh:
        msh = args.msh
    else:
        msh = os.path.splitext(args.output)[0] + ".msh"
        error = None
        if comm.rank == 0:
            try:
                os.makedirs(os.path.dirname(os.path.abspath(msh)), exist_ok=True)
                build_hourglass_msh(msh, **geometry_kwargs(args))
            except InputError as err:
                error = str(err)
        error = comm.bcast(error)          # a bad geometry stops every rank
        if error is not None:
            raise InputError(error)
    x0, x1 = read_msh_segments(msh)
    neck = neck_of_segments(x0, x1)
    fill = args.fill_height if args.grains is not None or args.fill_height is not None \
        else 0.15
    pos, rad = fill_above(x0, x1, neck[0], args.radius, args.polydispersity,
                          count=args.grains, fill_height=fill, seed=args.seed)
    return x0, x1, neck, pos, rad, msh


def gate(neck, margin):
    """A segment across the neck (the closed hourglass), a bit wider than the neck."""
    y, xl, xr = neck
    return np.array([[xl - margin, y]]), np.array([[xr + margin, y]])


def simulate(args, comm=None, on_step=None, log=print, write=True):
    """Run the hourglass described by `args` (parser() namespace) on the ranks of
    `comm` (None: this process alone). Returns a dict with the series (numpy arrays)
    and the results (flow rate, R^2, timings). on_step(sim, t, phase) is called after
    every step, phase "settle" (t <= 0, the gate closed) or "discharge" (t > 0), with
    the pdem.Simulation: tests check overlaps there."""
    comm = MPI.COMM_SELF if comm is None else comm
    say = log if comm.rank == 0 else (lambda *a, **k: None)
    clock = time.perf_counter()
    x0, x1, neck, pos, rad, msh = setup(args, comm)
    mass = args.density * 4.0 / 3.0 * math.pi * rad ** 3
    total = float(mass.sum())
    tol = args.tol if args.tol is not None else args.radius / 100.0
    alert = args.alert if args.alert is not None else args.radius
    skin = args.skin if args.skin is not None else 2.0 * args.radius * (1.0 + args.polydispersity)
    say("hourglass: %d walls from %s, neck %.4g m wide at y = %.4g m; %d disks, radii "
        "%.4g-%.4g m, total mass %.4g kg" % (len(x0), msh, neck[2] - neck[1], neck[0],
                                             len(rad), rad.min(), rad.max(), total))

    # 1. settle on the closed gate
    g0, g1 = gate(neck, 2.0 * args.radius)
    sim = make_simulation(args, comm, np.r_[x0, g0], np.r_[x1, g1], tol, alert, skin)
    sim.add_spheres(pos, rad, "glass", masses=mass)
    nsettle = int(round(args.settle / args.dt))
    for k in range(nsettle):
        sim.step()
        if on_step is not None:
            on_step(sim, (k + 1 - nsettle) * args.dt, "settle")
    p = sim.particles(gather=True)
    say("settled %d steps (%.3g s), max speed %.3g m/s" % (
        nsettle, nsettle * args.dt, float(np.sqrt((p["velocity"] ** 2).sum(axis=1)).max())))

    # 2. open the gate: a new simulation without it, the same grains (ids in order)
    #    with their velocities and spins
    sim = make_simulation(args, comm, x0, x1, tol, alert, skin)
    sim.add_spheres(p["position"], p["radius"], "glass", velocities=p["velocity"],
                    angular_velocities=p["angular_velocity"], masses=p["mass"])
    attrs = {k: v for k, v in vars(args).items() if not callable(v)}
    attrs.update(msh_path=os.path.abspath(msh), tol_used=tol, alert_used=alert, skin_used=skin,
                 neck_y=neck[0], neck_x=np.array(neck[1:]), n_grains=len(rad),
                 total_mass=total, n_ranks=comm.size)
    out = Output(args.output, comm, attrs, x0, x1) if write else None
    series = {k: [] for k in SERIES}
    frame_steps = max(1, int(round(args.frame_interval / args.dt)))
    nmax = int(math.ceil(args.duration / args.dt))
    step_clock = time.perf_counter()
    t, step, done_at = 0.0, 0, None
    while True:
        p = sim.particles()             # positions at t (time since the opening)
        below = p["position"][:, 1] < neck[0]
        mb, nb = sim.global_sum([float(p["mass"][below].sum()), float(below.sum())])
        nb = int(nb)
        if out is not None and (step % frame_steps == 0 or step == nmax):
            out.frame(p, t, step)
        series["time"].append(t)
        series["mass_below"].append(mb)
        series["n_below"].append(nb)
        if step == 0:
            series["iterations"].append(0)
            series["contacts"].append(0)
            series["min_gap"].append(float("nan"))
        if nb == len(rad) and done_at is None:
            done_at = step
        if step >= nmax or (done_at is not None and step >= done_at + frame_steps):
            break
        sim.step()
        step += 1
        t = step * args.dt
        contacts, gap = contact_stats(sim)
        series["iterations"].append(sim.scheme.sweeps)
        series["contacts"].append(contacts)
        series["min_gap"].append(gap)
        if on_step is not None:
            on_step(sim, t, "discharge")
    wall = time.perf_counter() - step_clock
    series = {k: np.asarray(v) for k, v in series.items()}
    rate, icpt, r2, t_lo, t_hi = flow_rate_fit(series["time"], series["mass_below"], total)
    its = series["iterations"][1:]
    gaps = series["min_gap"][1:]
    deepest = max(0.0, -float(np.nanmin(gaps))) if np.any(np.isfinite(gaps)) else 0.0
    results = dict(max_overlap=deepest, flow_rate=rate, flow_rate_r2=r2, fit_t0=t_lo, fit_t1=t_hi,
                   fit_intercept=icpt, discharge_time=(done_at * args.dt if done_at else
                                                       float("nan")),
                   steps=step, mean_iterations=float(its.mean()) if len(its) else 0.0,
                   max_iterations=int(its.max()) if len(its) else 0,
                   wall_seconds=wall, setup_seconds=step_clock - clock)
    if out is not None:
        out.close(series, results)
    say("discharge: %d steps in %.1f s (%.2f ms/step), %s" % (
        step, wall, 1e3 * wall / max(step, 1),
        "all grains through the neck at t = %.3f s" % results["discharge_time"]
        if done_at is not None else "stopped at t = %.3f s with %d of %d grains through"
        % (t, series["n_below"][-1], len(rad))))
    say("iterations per step: mean %.1f, max %d (%s, tol %.3g m); active contacts per "
        "step: mean %.0f" % (results["mean_iterations"], results["max_iterations"],
                             args.solver, tol, series["contacts"][1:].mean() if step else 0))
    say("deepest overlap after a step: %.3g m (%.3g tol)" % (deepest, deepest / tol))
    say("flow rate %.5g kg/s (%.1f grains/s), R^2 = %.5f over t = %.3f-%.3f s (20-80 %% "
        "of the mass)" % (rate, rate / (total / len(rad)), r2, t_lo, t_hi))
    if out is not None:
        say("wrote %s" % os.path.abspath(args.output))
    return dict(series=series, total_mass=total, neck=neck, n=len(rad), walls=(x0, x1),
                **results)


def main(argv=None):
    args = parser().parse_args(argv)
    comm = MPI.COMM_WORLD
    try:
        simulate(args, comm, log=(lambda *a, **k: None) if args.quiet else print)
    except InputError as err:
        if comm.rank == 0:
            sys.stderr.write("run.py: error: %s\n" % err)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
