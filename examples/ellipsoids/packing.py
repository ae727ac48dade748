"""Random packing fraction of poured spheroids against aspect ratio (issue 16, section 5).

    PYTHONPATH=$PWD python examples/ellipsoids/packing.py [--quick] [--out results/ellpack]

Spheroids of one volume (equivalent sphere radius r = 1 mm) with semi-axes (a, a, c),
aspect ratio alpha = c / a (prolate > 1, oblate < 1), frictionless (friction 0), settle
under gravity in a box periodic in x and y on a plane floor. They start as a random
sequential addition (exact non-overlap by the common-normal solve, random orientations,
solid fraction ~0.25) and fall about one bed height. The solid fraction is measured in
a slab away from the floor (6 r) and the free surface (4 r below the 95th percentile of
the centres), counting the exact part of every spheroid's volume inside the slab (the
sections of an ellipsoid by parallel planes are similar ellipses, so the volume between
two heights is that of a sphere of the same extent h_z: V (3t - t^3 + 2) / 4 at
t = (z - z0) / h_z).

Writes <out>/packing.txt and docs/ellipsoid_packing.png (--quick: <out>/...),
the curve against the published numbers (docs/ellipsoids.md, "Packing fraction").
"""
import argparse
import math
import os
import time

import numpy as np

import pdem
from pdem._kernels import ellipsoid

R_EQ = 1e-3           # equivalent sphere radius [m]
DENSITY = 1000.0
G = 9.81

# Published random packing fractions of frictionless spheroids, jammed (Donev et al.,
# Science 303:990 (2004); Donev et al. PRE 75:051304 (2007); Chaikin et al., Ind. Eng.
# Chem. Res. 45:6960 (2006): a cusp-like rise from 0.64 at alpha = 1 to a maximum of about
# 0.71 near alpha = 1.5 and 1/1.5, then a strong decrease; 0.68-0.71 for spheroids of
# about the M&M's aspect ratio, simulation and experiment). Landmark values from the
# papers' text, not a digitised curve.
PUBLISHED = {"alpha": [1.0, 1.0 / 1.5, 1.5], "phi": [0.64, 0.71, 0.71]}
MM_BAND = (0.68, 0.71)


def spheroid_axes(alpha, r=R_EQ):
    """Semi-axes (a, a, c) of the spheroid of aspect alpha = c / a and volume 4/3 pi r^3."""
    a = r * alpha ** (-1.0 / 3.0)
    return np.array([a, a, a * alpha])


def random_quaternions(rng, n):
    """Uniform random rotations (Shoemake's method), (w, x, y, z)."""
    u1, u2, u3 = rng.random((3, n))
    s1, s2 = np.sqrt(1 - u1), np.sqrt(u1)
    return np.column_stack([s2 * np.cos(2 * np.pi * u3), s1 * np.sin(2 * np.pi * u2),
                            s1 * np.cos(2 * np.pi * u2), s2 * np.sin(2 * np.pi * u3)])


def rotation_matrices(q):
    """Rotation matrices (n, 3, 3), body to world, of unit quaternions (w, x, y, z): the
    columns are the body axes in world coordinates."""
    w, x, y, z = np.asarray(q, dtype=float).T
    rows = ([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)])
    return np.stack([np.column_stack(r) for r in rows], axis=1)


def shape_matrices(q, axes):
    """A = R diag(a^2) R^T per ellipsoid: its support function is h(n) = sqrt(n^T A n)."""
    R = rotation_matrices(q)
    return np.einsum("nik,nk,njk->nij", R, np.broadcast_to(axes, (len(R), 3)) ** 2, R)


def extent_z(q, axes):
    """Half height of each ellipsoid along z: the support function h(e_z)."""
    return np.sqrt(shape_matrices(q, axes)[:, 2, 2])


def slab_volume(z, h, volume, lo, hi):
    """Exact volume of each ellipsoid between the heights lo and hi."""
    def below(t):
        t = np.clip(t, -1.0, 1.0)
        return (3 * t - t ** 3 + 2) / 4
    return volume * (below((hi - z) / h) - below((lo - z) / h))


def place(n, axes, width, z0, rng, gap=0.05, batch=64, x_range=None, inside=None,
          fraction=0.25):
    """Random sequential addition of n spheroids of semi-axes axes (one shape, random
    orientations) in the column [0, width]^2 x [z0, ...) periodic in x and y (x_range =
    (x0, x1): x not periodic, within [x0, x1]; inside(points, bound): a mask of the
    candidates allowed), filled to a solid fraction ~fraction (the column grows when
    candidates stop fitting); exact overlap test by the common-normal solve (gap >= gap r)."""
    bound = axes.max()
    vol = 4 / 3 * math.pi * np.prod(axes)
    x0, x1 = (0.0, width) if x_range is None else x_range
    height = n * vol / (fraction * width * (x1 - x0))
    pos = np.empty((0, 3))
    q = np.empty((0, 4))
    periodic = np.array([x_range is None, True, False])
    while len(pos) < n:
        cand = np.column_stack([x0 + rng.random(batch) * (x1 - x0), rng.random(batch) * width,
                                z0 + bound + rng.random(batch) * height])
        cq = random_quaternions(rng, batch)
        if inside is not None:
            keep = inside(cand, bound)
            cand, cq = cand[keep], cq[keep]
        before = len(pos)
        for p, qq in zip(cand, cq):
            if len(pos) == n:
                break
            d = pos - p
            d[:, periodic] -= width * np.round(d[:, periodic] / width)
            near = np.flatnonzero(np.einsum("ij,ij->i", d, d) < (2 * bound + gap * R_EQ) ** 2)
            if len(near):
                res = ellipsoid.solve_pairs(p, qq, axes, p + d[near], q[near], axes,
                                            exit_gap=gap * R_EQ)
                if np.any(res["status"] != ellipsoid.STATUS["separated"]):
                    continue
            pos = np.vstack([pos, p])
            q = np.vstack([q, qq])
        if len(pos) - before < batch // 16:
            height *= 1.1     # saturating: make the column taller
    return pos, q


def settle(alpha, n=500, width_r=10.0, seed=1, friction=0.0, max_time=0.4, ke_stop=1e-3,
           threads=1):
    """Pour n spheroids of aspect alpha; returns a dict with the slab fraction and checks."""
    rng = np.random.default_rng(seed)
    axes = spheroid_axes(alpha)
    width = width_r * R_EQ
    pos, q = place(n, axes, width, 0.0, rng)
    top = pos[:, 2].max() + 4 * R_EQ
    mass = DENSITY * 4 / 3 * math.pi * R_EQ ** 3
    # stiffness: overlap ~1e-3 r under the bed's weight at the floor
    kn = 200.0
    t_c = math.pi * math.sqrt(0.5 * mass / kn)
    dt = t_c / 15
    dom = pdem.Domain((0, 0, 0), (width, width, top), (True, True, False))
    sim = pdem.Simulation(dom, dt=dt, gravity=(0, 0, -G), threads=threads, skin=0.3 * R_EQ)
    grain = sim.material("grain", DENSITY, kn=kn, friction=friction, restitution=0.3)
    sim.add_plane((0, 0, 0), (0, 0, 1), grain)
    vel = rng.normal(0, 0.01, (n, 3))
    if alpha == 1.0:
        sim.add_spheres(pos, R_EQ, grain, velocities=vel)
    else:
        sim.add_ellipsoids(pos, axes, grain, orientations=q, velocities=vel)
    t0 = time.perf_counter()
    chunk = int(round(0.02 / dt))
    while sim.time < max_time:
        sim.run(steps=chunk)
        if sim.time > 0.25 and sim.energy()["kinetic"] / n < ke_stop * mass * G * R_EQ:
            break
    # floor load over the last 400 steps: its time average is the weight plus the rate of
    # change of the bed's momentum (momentum balance along z, checked by the test)
    def momentum():
        p = sim.particles(gather=True)
        return float(np.sum(p["mass"] * p["velocity"][:, 2]))

    p0, loads = momentum(), []
    for _ in range(400):
        sim.step()
        loads.append(float(sim.plane_forces()[0, 2]))
    dpdt = (momentum() - p0) / (400 * sim.dt)
    wall = time.perf_counter() - t0
    p = sim.particles(gather=True)
    z = p["position"][:, 2]
    h = extent_z(p["orientation"], p["semi_axes"])
    vol = 4 / 3 * math.pi * np.prod(p["semi_axes"], axis=1)
    lo, hi = 6 * R_EQ, np.quantile(z, 0.95) - 4 * R_EQ
    phi = slab_volume(z, h, vol, lo, hi).sum() / (width * width * (hi - lo))
    weight = float(np.sum(p["mass"])) * G
    floor = -float(np.mean(loads))          # the force on the plane is downwards
    c = sim.contacts(gather=True)
    pair = np.isin(c["kind"], ("pair", "ellpair"))
    inside = (z > lo) & (z < hi)
    # contacts per particle in the slab (both ends counted, numpy)
    zc = (np.isin(c["id1"][pair], p["id"][inside]).sum()
          + np.isin(c["id2"][pair], p["id"][inside]).sum())
    overlap = float(np.mean(np.maximum(-c["u"][pair, 0], 0.0))) / R_EQ if pair.any() else 0.0
    stats = sim.shape_stats() if sim.shapes else {"iterations_mean": 0.0}
    # orientational order of the symmetry axes: <P2(cos theta)> against z
    cz = np.abs(rotation_matrices(p["orientation"])[:, 2, 2])   # symmetry axis . e_z
    return dict(alpha=alpha, n=n, phi=float(phi), slab=(lo, hi), load=abs(floor) / weight,
                balance=(floor - dpdt) / weight, overlap=overlap, friction=friction,
                z_contacts=zc / max(1, int(inside.sum())), time=sim.time, steps=sim.step_count,
                wall=wall, ke=sim.energy()["kinetic"] / (n * mass * G * R_EQ),
                p2=float(np.mean(1.5 * cz[inside] ** 2 - 0.5)) if sim.shapes else float("nan"),
                iterations=stats["iterations_mean"])


def plot(results, path, rough=()):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    a = np.array([r["alpha"] for r in results])
    phi = np.array([r["phi"] for r in results])
    o = np.argsort(a)
    ax.plot(a[o], phi[o], "o-", color="C0", label="pdem: poured, frictionless, slab")
    if len(rough):
        ax.plot([r["alpha"] for r in rough], [r["phi"] for r in rough], "o--", color="C1",
                mfc="none", label="pdem: poured, friction 0.5")
    # Donev's curve: the landmarks, with a guide line through them
    ax.plot(PUBLISHED["alpha"], PUBLISHED["phi"], "s", color="C3", ms=8,
            label="Donev et al. 2004/2007: jammed spheroids (0.64; max ~0.71 at 1.5, 1/1.5)")
    ax.axhspan(*MM_BAND, color="C2", alpha=0.12, zorder=0,
               label="Donev 2004: 0.68-0.71, spheroids of M&M's aspect")
    ax.axhspan(0.60, 0.64, color="0.9", zorder=0, label="poured spheres 0.60-0.64")
    ax.set_xscale("log")
    ticks = [0.4, 0.5, 0.67, 0.8, 1, 1.25, 1.5, 2, 2.5]
    ax.set_xticks(ticks)
    ax.set_xticklabels(["%g" % t for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("aspect ratio c/a (oblate < 1 < prolate)")
    ax.set_ylabel("solid fraction")
    ax.set_title("Random packing of spheroids (%d per aspect ratio)" % results[0]["n"])
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=1)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


ASPECTS = (0.4, 0.5, 0.67, 0.8, 1.0, 1.25, 1.5, 2.0, 2.5)
QUICK = (1.0, 1.5)
FRICTION_ASPECTS = (1.0, 1.5)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 aspect ratios (1, 1.5)")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--out", default="results/ellpack")
    ap.add_argument("--plot", default=None, help="the plot (default: docs/ellipsoid_packing.png;"
                    " with --quick: <out>/ellipsoid_packing.png)")
    args = ap.parse_args(argv)
    if args.plot is None:
        args.plot = os.path.join(args.out if args.quick else os.path.join(
            os.path.dirname(__file__), "..", "..", "docs"), "ellipsoid_packing.png")
    n = args.n or 500        # thinner beds crystallise from the flat floor (300 spheres: 0.69)
    os.makedirs(args.out, exist_ok=True)
    res = []
    lines = ["alpha   phi    Z_slab  P2_z   load/W   KE/(n m g r)  t[s]  steps  iters  wall[s]"]
    for alpha in (QUICK if args.quick else ASPECTS):
        r = settle(alpha, n)
        res.append(r)
        lines.append("%5.2f  %.4f  %5.2f  %+.2f  %.5f  %.1e  %.2f  %6d  %.2f  %6.1f"
                     % (alpha, r["phi"], r["z_contacts"], r["p2"], r["load"], r["ke"], r["time"],
                        r["steps"], r["iterations"], r["wall"]))
        print(lines[-1], flush=True)
    rough = []
    if not args.quick:                  # friction lowers the poured fraction
        for alpha in FRICTION_ASPECTS:
            r = settle(alpha, n, friction=0.5)
            rough.append(r)
            lines.append("%5.2f  %.4f  %5.2f  %+.2f  %.5f  %.1e  %.2f  %6d  %.2f  %6.1f  mu 0.5"
                         % (alpha, r["phi"], r["z_contacts"], r["p2"], r["load"], r["ke"],
                            r["time"], r["steps"], r["iterations"], r["wall"]))
            print(lines[-1], flush=True)
    lines.append("mean overlap / r of the pair contacts: %s"
                 % ", ".join("%.1e" % r["overlap"] for r in res))
    with open(os.path.join(args.out, "packing.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    if args.plot:
        plot(res, args.plot, rough)
        print("wrote", os.path.normpath(args.plot))
    return res


if __name__ == "__main__":
    main()
