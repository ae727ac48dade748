"""Demo (issue 17, docs/polyhedra.md "Demo"): the angle of repose of random convex rocks
against spheres of the same volume and friction.

Seeded rocks (4 shapes of 16 vertices, semi-axes 1 x 0.75 x 0.55 cm) are poured in
layers from 15 cm over the middle half of a 16 cm tray (--tray: its half-width), a
finite strip (mesh wall: floor and 1 cm rims, polyhedron-facet contacts) in a slab
periodic along y; what does not stay on the heap flows over the rims, falls out of the
domain and is removed. The heap's free surface (the highest point of the
bodies in bins along x) is fitted by a line on each flank; the angle of repose is the
mean of the two. The same run with spheres of the rocks' volume-equivalent radii.

    python examples/rocks/repose.py --out results/repose [--rocks 3000] [--tray 0.12] [--quick]
    python examples/rocks/repose.py --plot results/repose     # pictures into docs/

Writes <out>/<shape>.npz (final bodies: centres, radii, mesh, profile) and
<out>/<shape>.json (angle, its two flanks, counts, cost per step). --quick: a few
dozen bodies and a few hundred steps (the unit test).
"""
import argparse
import json
import os
import time

import numpy as np

import pdem
from pdem import polyhedra

SIZE = 0.01                                   # rock semi-axes: SIZE x (1, 0.75, 0.55)
V0 = 2.0                                      # pouring speed (m/s)
G = 9.81


def rock_shapes(seed=1):
    return [polyhedra.rock(16, seed=(seed, k), axes=SIZE * np.array([1.0, 0.75, 0.55]))
            for k in range(4)]


def tray(half, depth, rim):
    """Floor z = 0, |x| <= half, y in [-depth, ...] (see build), with rims of height rim
    at x = +-half (normals towards the heap), as one mesh."""
    from pdem.contact import shapes
    return shapes.box((-half, -depth[0], 0.0), (half, depth[1], rim), 1)


def build(shape, n, seed=1, half_width=0.08, slab=0.1, drop=0.15, threads=1):
    """The scene: `shape` "rocks" or "spheres" (volume-equivalent radii), and pour(i),
    which adds the i-th layer of the pour (a lattice of nx x ny bodies over the middle
    half of the tray at height `drop`, moving down at V0; at most n bodies in all)."""
    rocks = rock_shapes(seed)
    r_eq = np.array([(3 * r.volume / (4 * np.pi)) ** (1 / 3) for r in rocks])
    bound = max(r.bound for r in rocks)
    spacing = 2.05 * bound
    nx = max(2, int(0.5 * half_width / spacing) * 2)
    ny = max(1, int(slab / spacing))
    sim = pdem.Simulation(pdem.Domain((-half_width - 0.1, 0, -0.06),
                                      (half_width + 0.1, slab, drop + spacing),
                                      periodic=(False, True, False)),
                          dt=2.5e-5, gravity=(0, 0, -G), skin=0.2 * SIZE, lost="remove",
                          threads=threads)
    mat = sim.material("rock", density=2600.0, kn=2e4, restitution=0.3, friction=0.5)
    sim.add_mesh_wall(tray(half_width, (2 * bound, slab + 2 * bound), SIZE), mat)
    rng = np.random.default_rng(seed)
    gx = (np.arange(nx) - (nx - 1) / 2) * spacing
    gy = (np.arange(ny) + 0.5) * (slab / ny)
    x, y = np.meshgrid(gx, gy, indexing="ij")
    per_layer = x.size

    def pour(i):
        m = min(per_layer, n - i * per_layer)
        if m <= 0:
            return 0
        pos = np.column_stack([x.ravel(), y.ravel(), np.full(x.size, drop)])[:m]
        pos[:, :2] += rng.uniform(-0.05, 0.05, (m, 2)) * bound
        vel = np.column_stack([rng.normal(0, 0.05, (m, 2)), np.full(m, -V0)])
        kind = rng.integers(0, len(rocks), m)
        if shape == "rocks":
            q = rng.normal(size=(m, 4))
            q /= np.linalg.norm(q, axis=1)[:, None]
            for k, r in enumerate(rocks):
                s = kind == k
                if s.any():
                    sim.add_polyhedra(pos[s], r, mat, orientations=q[s], velocities=vel[s])
        else:
            sim.add_spheres(pos, r_eq[kind], mat, velocities=vel)
        return m
    sim.pour_period = spacing * 1.2 / V0          # the next layer clears the last
    sim.pour_layers = int(np.ceil(n / per_layer))
    return sim, pour


def surface(sim, half_width, bins):
    """(bin centres, the highest body point per bin) over the tray (gathered)."""
    p = sim.particles(gather=True)
    if sim.polyhedra:
        pts, tris, ids = polyhedra.world_mesh(sim, gather=True)
        x, z = pts[:, 0], pts[:, 2]
    else:
        x, z = p["position"][:, 0], p["position"][:, 2] + p["radius"]
    edges = np.linspace(-half_width, half_width, bins + 1)
    top = np.full(bins, np.nan)
    k = np.digitize(x, edges) - 1
    on = (k >= 0) & (k < bins) & (z > 0)
    np.fmax.at(top, k[on], z[on])
    return 0.5 * (edges[1:] + edges[:-1]), top


def repose_angle(xc, top, half_width):
    """Line fits of the free surface on each flank, between 20 % and 85 % of the
    half-width from the centre (the crest and the foot left out): (mean angle in
    degrees, the two angles, the fits (slope, intercept) left and right)."""
    out = []
    for side in (-1, 1):
        s = (side * xc > 0.2 * half_width) & (side * xc < 0.85 * half_width) & np.isfinite(top)
        slope, icpt = np.polyfit(xc[s], top[s], 1)
        out.append((float(np.degrees(np.arctan(abs(slope)))), float(slope), float(icpt)))
    return 0.5 * (out[0][0] + out[1][0]), [o[0] for o in out], [o[1:] for o in out]


def run(shape, n, out, quick=False, threads=1, half=0.08):
    half = 0.06 if quick else half
    sim, pour = build(shape, n, half_width=half, slab=0.05 if quick else 0.1,
                      drop=0.1 if quick else 0.15, threads=threads)
    # the pour, the fall of its last layer, then the heap settles
    T = 0.08 if quick else sim.pour_layers * sim.pour_period + 0.6
    steps = int(T / sim.dt)
    period = int(sim.pour_period / sim.dt)
    t0, cpu0 = time.perf_counter(), time.process_time()
    done = layer = 0
    while done < steps:
        poured = pour(layer)
        layer += 1
        k = min(period if poured else 20 * period, steps - done)
        sim.run(k)
        done += k
        if sim.rank == 0 and not quick and (not poured or layer % 10 == 0):
            print("%s t=%.3f of %.3f s  %d bodies  %d contacts  %.1f s wall, %.1f s CPU" % (
                shape, sim.time, T, sim.n_particles, sim.n_contacts, time.perf_counter() - t0,
                time.process_time() - cpu0), flush=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    xc, top = surface(sim, half, 16 if quick else 32)
    p = sim.particles(gather=True)
    if sim.rank != 0:
        return None
    try:
        angle, flanks, fits = repose_angle(xc, top, half)
    except (TypeError, ValueError, np.linalg.LinAlgError):
        angle, flanks, fits = float("nan"), [float("nan")] * 2, []
    res = {"shape": shape, "bodies_start": n, "bodies_end": int(len(p["id"])),
           "steps": steps, "dt": sim.dt, "wall_s": wall, "cpu_s": cpu,
           "ms_per_step": 1e3 * wall / steps, "us_per_body_step": 1e6 * cpu / steps / n,
           "angle_deg": angle, "flanks_deg": flanks, "fits": fits,
           "v_max": float(np.linalg.norm(p["velocity"], axis=1).max()),
           "half_width": half}
    os.makedirs(out, exist_ok=True)
    arrays = {"x": xc, "top": top, "position": p["position"], "radius": p["radius"]}
    if shape == "rocks":
        pts, tris, ids = polyhedra.world_mesh(sim, gather=True)
        arrays.update(points=pts, triangles=tris, owner=ids)
    np.savez_compressed(os.path.join(out, shape + ".npz"), **arrays)
    with open(os.path.join(out, shape + ".json"), "w") as f:
        json.dump(res, f, indent=1)
    return res


def plot(out, docs):
    """docs/rocks_repose.png (the heap profiles and fits), docs/rocks_heap.png (the
    rocks seen along y, their triangles projected) and docs/rocks_heap3d.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for shape, colour in (("rocks", "C3"), ("spheres", "C0")):
        res = json.load(open(os.path.join(out, shape + ".json")))
        d = np.load(os.path.join(out, shape + ".npz"))
        ax.plot(100 * d["x"], 100 * d["top"], "o", ms=3, color=colour)
        for (slope, icpt), side in zip(res["fits"], (-1, 1)):
            h = res["half_width"]
            xs = side * np.array([0.2, 0.85]) * h
            ax.plot(100 * xs, 100 * (slope * xs + icpt), "-", color=colour)
        ax.plot([], [], "o-", color=colour, label="%s: %.1f deg (%.1f / %.1f), %d left"
                % (shape, res["angle_deg"], *res["flanks_deg"], res["bodies_end"]))
    ax.set_xlabel("x (cm)")
    ax.set_ylabel("free surface z (cm)")
    ax.set_aspect("equal")
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title("Heaps on a %.0f cm tray, friction 0.5: convex rocks vs volume-equivalent "
                 "spheres" % (200 * res["half_width"]),
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "rocks_repose.png"), dpi=110)
    d = np.load(os.path.join(out, "rocks.npz"))
    pts, tris, owner = d["points"], d["triangles"], d["owner"]
    # painter's order along y (far first), each triangle in the xz plane
    depth = pts[tris][:, :, 1].mean(axis=1)
    order = np.argsort(-depth)
    rng = np.random.default_rng(0)
    shade = rng.uniform(0.35, 0.85, owner.max() + 1)
    fig, ax = plt.subplots(figsize=(9, 3.4))
    ax.add_collection(PolyCollection(100 * pts[tris[order]][:, :, [0, 2]],
                                     facecolors=plt.cm.copper(shade[owner[order]]),
                                     edgecolors="k", linewidths=0.05))
    ax.autoscale()
    ax.set_aspect("equal")
    ax.set_xlabel("x (cm)")
    ax.set_ylabel("z (cm)")
    ax.set_title("%d rocks left after pouring (seen along y; some still falling off the "
                 "rims)" % len(np.unique(owner)),
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "rocks_heap.png"), dpi=120)
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection
    fig = plt.figure(figsize=(8, 5))
    ax = fig.add_subplot(projection="3d")
    ax.add_collection3d(Poly3DCollection(100 * pts[tris], facecolors=plt.cm.copper(shade[owner]),
                                         edgecolors="k", linewidths=0.05))
    lo, hi = 100 * pts.min(axis=0), 100 * pts.max(axis=0)
    ax.set_xlim(lo[0], hi[0]); ax.set_ylim(lo[1], hi[1]); ax.set_zlim(0, hi[2])
    ax.set_box_aspect((hi[0] - lo[0], hi[1] - lo[1], hi[2]))
    ax.view_init(elev=25, azim=-60)
    ax.set_xlabel("x (cm)"); ax.set_ylabel("y (cm, periodic)"); ax.set_zlabel("z (cm)")
    fig.tight_layout()
    fig.savefig(os.path.join(docs, "rocks_heap3d.png"), dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results/repose")
    ap.add_argument("--rocks", type=int, default=3000)
    ap.add_argument("--shape", choices=("rocks", "spheres", "both"), default="both")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tray", type=float, default=0.12, help="the tray's half-width (m)")
    ap.add_argument("--plot", metavar="OUT", help="only draw the pictures of a finished run")
    a = ap.parse_args()
    if a.plot:
        plot(a.plot, os.path.join(os.path.dirname(__file__), "..", "..", "docs"))
        return
    n = 24 if a.quick else a.rocks
    for shape in (("rocks", "spheres") if a.shape == "both" else (a.shape,)):
        res = run(shape, n, a.out, a.quick, a.threads, a.tray)
        if res is not None:
            print(json.dumps(res))


if __name__ == "__main__":
    main()
