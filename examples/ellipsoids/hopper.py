"""Discharge of prolate spheroids against spheres through the slot of a wedge hopper
(issue 16, section 5), both frictional (mu = 0.5), of one volume (r = 1 mm).

    PYTHONPATH=$PWD python examples/ellipsoids/hopper.py [--quick] [--out results/ellhopper]

The hopper is quasi-2D: periodic in y (10 r deep), two planes at 60 degrees from the
horizontal meeting the outlet plane z = 0 at x = -+w/2 (w = 12 r). Infinite planes
cannot end at the slot, so the domain ends there instead: a particle whose centre
crosses z = 0 leaves the domain and is removed (lost="remove"), which is a wedge whose
walls stop at the outlet. The grains start as a random sequential addition in the
wedge (random orientations), settle on a floor plane at z = 0, then the floor drops
away (a Ramp motion) and the hopper empties. Measured: the discharged mass against
time, the mass flow rate over the steady part (between 15 % and 55 % discharged),
against Beverloo's law for a slot (Q = C rho_b sqrt(g) L (w - k d)^(3/2)); pictures of
the wedge (projections of the ellipsoids on the xz plane) settled and mid-discharge.
"""
import argparse
import math
import os
import sys
import time
import warnings

import numpy as np

import pdem
from pdem.motion import Ramp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from packing import DENSITY, G, R_EQ, place, shape_matrices, spheroid_axes  # noqa: E402

SLOT = 12 * R_EQ           # outlet width w
DEPTH = 10 * R_EQ          # periodic y extent L
ANGLE = math.radians(60)   # walls from the horizontal


def wall_normals():
    """Inward normals of the left and right walls (through (-+w/2, 0))."""
    s, c = math.sin(ANGLE), math.cos(ANGLE)
    return np.array([[s, 0, c], [-s, 0, c]])


def inside_wedge(points, margin):
    """Candidates whose bounding sphere lies inside the wedge above the outlet."""
    n = wall_normals()
    left = (points - [-SLOT / 2, 0, 0]) @ n[0]
    right = (points - [SLOT / 2, 0, 0]) @ n[1]
    return (left > margin) & (right > margin) & (points[:, 2] > margin)


def build(alpha, n, seed=2, threads=1, friction=0.5):
    """The filled, closed hopper: alpha = 1: spheres, else spheroids of aspect alpha."""
    rng = np.random.default_rng(seed)
    axes = spheroid_axes(alpha)
    height = 140 * R_EQ
    half = SLOT / 2 + height / math.tan(ANGLE)
    pos, q = place(n, axes, DEPTH, 0.0, rng, x_range=(-half, half), inside=inside_wedge,
                   fraction=0.3)
    height = max(height, pos[:, 2].max() + 4 * R_EQ)
    half = SLOT / 2 + height / math.tan(ANGLE)
    mass = DENSITY * 4 / 3 * math.pi * R_EQ ** 3
    kn = 200.0
    dt = math.pi * math.sqrt(0.5 * mass / kn) / 15
    dom = pdem.Domain((-half, 0, 0), (half, DEPTH, height), (False, True, False))
    sim = pdem.Simulation(dom, dt=dt, gravity=(0, 0, -G), threads=threads, lost="remove",
                          skin=0.3 * R_EQ)
    grain = sim.material("grain", DENSITY, kn=kn, friction=friction, restitution=0.3)
    for normal, x in zip(wall_normals(), (-SLOT / 2, SLOT / 2)):
        sim.add_plane((x, 0, 0), normal, grain)
    floor = sim.add_plane((0, 0, 0), (0, 0, 1), grain)
    if alpha == 1.0:
        sim.add_spheres(pos, R_EQ, grain)
    else:
        sim.add_ellipsoids(pos, axes, grain, orientations=q)
    return sim, floor


def open_outlet(sim, floor):
    """The floor drops away at 2 m/s (faster than the grains above the slot fall)."""
    sim.set_plane_motion(floor, Ramp((0, 0, -2.0), 0.05))


def flowing(alpha, n, settle_time=0.2, after=0.05, threads=1):
    """The hopper settled, opened and discharging for `after` seconds (benchmarks)."""
    sim, floor = build(alpha, n, threads=threads)
    warnings.filterwarnings("ignore", message=".*left the domain.*")
    sim.run(until=settle_time)
    open_outlet(sim, floor)
    sim.run(until=settle_time + after)
    return sim


def fill_and_discharge(alpha, n, settle_time=0.25, discharge_time=0.35, threads=1,
                       snapshot_at=0.35):
    """Settle, open, discharge. Returns (times, discharged mass, snapshots, info)."""
    sim, floor = build(alpha, n, threads=threads)
    warnings.filterwarnings("ignore", message=".*left the domain.*")   # the outlet
    mass0 = float(np.sum(sim.particles(gather=True)["mass"]))
    t0 = time.perf_counter()
    sim.run(until=settle_time)
    p = sim.particles(gather=True)
    shots = {"settled": p}
    load = abs(float(sim.plane_forces()[:, 2].sum())) / (mass0 * G)   # walls + floor
    open_outlet(sim, floor)
    start = sim.time
    times, out = [0.0], [0.0]
    every = max(1, int(round(0.005 / sim.dt)))
    while sim.time < start + discharge_time and sim.n_particles > 0:
        sim.run(steps=every)
        left = float(np.sum(sim.particles(gather=True)["mass"]))
        times.append(sim.time - start)
        out.append(mass0 - left)
        if "flowing" not in shots and sim.time - start >= snapshot_at * discharge_time:
            shots["flowing"] = sim.particles(gather=True)
    wall = time.perf_counter() - t0
    info = dict(alpha=alpha, n=n, mass=mass0, wall=wall, steps=sim.step_count, dt=sim.dt,
                load=load, iterations=sim.shape_stats()["iterations_mean"] if sim.shapes else 0.0)
    return np.array(times), np.array(out), shots, info


def flow_rate(times, out, mass, lo=0.15, hi=0.55):
    """Least-squares slope of the discharged mass between lo and hi of the total."""
    k = (out >= lo * mass) & (out <= hi * mass)
    if k.sum() < 3:
        return float("nan")
    return float(np.polyfit(times[k], out[k], 1)[0])


def beverloo(phi_b, d, C=1.03, k=1.5):
    """Beverloo's slot law (mass per time), rho_b = phi_b rho (e.g. Nedderman 1992)."""
    return C * phi_b * DENSITY * math.sqrt(G) * DEPTH * max(SLOT - k * d, 0.0) ** 1.5


def ellipses_xz(p):
    """Projections on the xz plane: centres, full widths, heights and angles (degrees)
    of the ellipses whose support function is that of the ellipsoid restricted to xz."""
    A = shape_matrices(p["orientation"], p["semi_axes"])[:, [0, 2]][:, :, [0, 2]]
    val, vec = np.linalg.eigh(A)
    ang = np.degrees(np.arctan2(vec[:, 1, 1], vec[:, 0, 1]))
    return p["position"][:, [0, 2]], 2 * np.sqrt(val[:, 1]), 2 * np.sqrt(val[:, 0]), ang


def pictures(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import EllipseCollection

    zmax = 1.1 * max(v[2]["settled"]["position"][:, 2].max() for v in runs.values())
    half = SLOT / 2 + zmax / math.tan(ANGLE)
    fig, axs = plt.subplots(2, len(runs), figsize=(4.6 * len(runs),
                                                   2 * 4.0 * (zmax + 8 * R_EQ) / (2 * half) + 0.8))
    axs = axs.T.ravel()
    k = 0
    for label, (times, out, shots, info) in runs.items():
        for key in ("settled", "flowing"):
            ax = axs[k]
            k += 1
            p = shots.get(key)
            if p is None:
                continue
            front = np.argsort(-p["position"][:, 1])        # back to front
            pp = {key2: v[front] for key2, v in p.items() if hasattr(v, "__len__")}
            xy, wd, ht, ang = ellipses_xz(pp)
            speed = np.linalg.norm(pp["velocity"], axis=1)
            ec = EllipseCollection(wd, ht, ang, units="xy", offsets=xy,
                                   transOffset=ax.transData, cmap="viridis", edgecolor="k",
                                   linewidth=0.15)
            ec.set_array(speed)
            ec.set_clim(0, 0.4)
            ax.add_collection(ec)
            for s in (-1, 1):
                ax.plot([s * SLOT / 2, s * half], [0, zmax], "k-", lw=1.5)
            ax.set_xlim(-half, half)
            ax.set_ylim(-8 * R_EQ, zmax)
            ax.set_aspect("equal")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title("%s, %s\n%d grains" % (label, key if key == "settled" else
                                                "t = %.2f s after opening" % info.get(
                                                    "t_flowing", 0.0), len(xy)), fontsize=9)
    fig.colorbar(ec, ax=list(axs), label="speed [m/s]", shrink=0.8)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def discharge_plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.6, 4.0))
    for label, (times, out, shots, info) in runs.items():
        ax.plot(times, out / info["mass"], label="%s: %.3g g/s" % (label, info["rate"] * 1e3))
    ax.set_xlabel("time after opening [s]")
    ax.set_ylabel("discharged mass fraction")
    ax.set_title("Wedge hopper, slot 6 d, mu = 0.5")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="600 grains, shorter discharge")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--alpha", type=float, default=2.0, help="aspect ratio of the spheroids")
    ap.add_argument("--out", default="results/ellhopper")
    ap.add_argument("--docs", default=None, help="where the pictures go (default: docs/; "
                    "with --quick: --out)")
    args = ap.parse_args(argv)
    if args.docs is None:
        args.docs = args.out if args.quick else os.path.join(os.path.dirname(__file__), "..",
                                                             "..", "docs")
    n = args.n or (600 if args.quick else 2000)
    tdis = 0.2 if args.quick else 0.35
    os.makedirs(args.out, exist_ok=True)
    runs = {}
    lines = []
    for label, alpha in (("spheres", 1.0), ("spheroids %g:1" % args.alpha, args.alpha)):
        times, out, shots, info = fill_and_discharge(alpha, n, discharge_time=tdis)
        info["rate"] = flow_rate(times, out, info["mass"])
        info["t_flowing"] = 0.35 * tdis
        runs[label] = (times, out, shots, info)
        lines.append("%-16s n %d  rate %.4g kg/s  discharged %.2f in %.2f s  settled load/W %.4f"
                     "  steps %d  wall %.1f s  iterations %.2f"
                     % (label, n, info["rate"], out[-1] / info["mass"], times[-1], info["load"],
                        info["steps"], info["wall"], info["iterations"]))
        print(lines[-1], flush=True)
    r = [v[3]["rate"] for v in runs.values()]
    lines.append("spheroid / sphere discharge rate: %.3f" % (r[1] / r[0]))
    lines.append("Beverloo slot (C 1.03, k 1.5, phi_b 0.6): %.4g kg/s" % beverloo(0.6, 2 * R_EQ))
    print("\n".join(lines[-2:]))
    with open(os.path.join(args.out, "hopper.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    pictures(runs, os.path.join(args.docs, "ellipsoid_hopper.png"))
    discharge_plot(runs, os.path.join(args.docs, "ellipsoid_discharge.png"))
    return runs


if __name__ == "__main__":
    main()
