"""Demo: pour 10,000+ spheres into a box and let them settle.

    mpirun -n 2 python -m mpi4py examples/pour_box.py --out results/demo [--particles 10648] [--threads N]

Runs on any number of ranks (and gives the same bits on any number); rank 0 writes
the outputs.

Writes <out>/summary.txt (scene, performance, packing fraction, floor force
against the bed's weight) and <out>/final_state.png (side view and top view of
the settled bed, coloured by height).
"""
import argparse
import math
import os
import time

import numpy as np

import pdem


def build(n_target, seed=1):
    radius, density = 2e-3, 2500.0
    width = 0.1
    spacing = 2.3 * radius
    per_row = int(width / spacing)
    layers = int(math.ceil(n_target / per_row ** 2))
    dz = 2.6 * radius
    height = 0.02 + layers * dz + 0.02
    dom = pdem.Domain((0, 0, 0), (width, width, height))
    mass = 4 / 3 * math.pi * radius ** 3 * density
    kn = 5e3
    # gamma_n for restitution 0.3 between two grains (LAMMPS convention, m* = m/2)
    e = 0.3
    zeta = -math.log(e) / math.sqrt(math.pi ** 2 + math.log(e) ** 2)
    gamma_n = 2 * zeta * math.sqrt(kn / (0.5 * mass))
    t_contact = math.pi / math.sqrt(kn / (0.5 * mass))
    dt = t_contact / 20
    sim = pdem.Simulation(dom, dt=dt, gravity=(0, 0, -9.81), skin=0.4 * radius)
    grain = sim.material("glass beads", density=density, kn=kn, gamma_n=gamma_n, friction=0.4)
    wall = sim.material("steel", density=7800, kn=kn, gamma_n=gamma_n, friction=0.4)
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)),
                          ((width, 0, 0), (-1, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                          ((0, width, 0), (0, -1, 0))):
        sim.add_plane(point, normal, wall)
    rng = np.random.default_rng(seed)
    g = (np.arange(per_row) + 0.5) * (width / per_row)
    x, y, z = np.meshgrid(g, g, 0.02 + np.arange(layers) * dz, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])[:n_target]
    pos[:, :2] += rng.uniform(-0.1, 0.1, (len(pos), 2)) * radius
    vel = rng.normal(0.0, 0.05, (len(pos), 3))
    sim.add_spheres(pos, radius, grain, velocities=vel)
    return sim, radius, width


def picture(p, t, path, width):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Circle

    x, z, r = p["position"][:, 0], p["position"][:, 2], p["radius"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 5.5))
    front = p["position"][:, 1] < 0.5 * width        # front half, drawn back to front
    order = np.argsort(-p["position"][front, 1])
    for ax, (u, v, sel, title) in ((ax1, (x, z, front, "side view (front half)")),
                                   (ax2, (x, p["position"][:, 1], slice(None), "top view"))):
        uu, vv, rr = u[sel], v[sel], r[sel]
        hh = z[sel]
        if ax is ax1:
            uu, vv, rr, hh = uu[order], vv[order], rr[order], hh[order]
        else:
            o = np.argsort(hh)
            uu, vv, rr, hh = uu[o], vv[o], rr[o], hh[o]
        pc = PatchCollection([Circle((a, b), c) for a, b, c in zip(uu, vv, rr)],
                             cmap="viridis", edgecolor="k", linewidth=0.1)
        pc.set_array(hh)
        ax.add_collection(pc)
        ax.set_xlim(0, width)
        ax.set_ylim(0, max(width if ax is ax2 else z.max() + 0.01, 0.01))
        ax.set_aspect("equal")
        ax.set_title(title)
        ax.set_xlabel("x [m]")
        ax.set_ylabel("z [m]" if ax is ax1 else "y [m]")
    fig.colorbar(pc, ax=[ax1, ax2], label="height z [m]")
    fig.suptitle("pdem: %d spheres poured into a box, t = %.3f s" % (len(x), t))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/demo")
    ap.add_argument("--particles", type=int, default=10648)
    ap.add_argument("--time", type=float, default=0.45, help="simulated time [s]")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    sim, radius, width = build(args.particles)
    root = sim.rank == 0
    if root:
        os.makedirs(args.out, exist_ok=True)
    if args.threads:
        sim.threads = args.threads
    n = sim.n_particles
    steps = int(round(args.time / sim.dt))
    if root:
        print("pdem demo: %d spheres, dt = %.3g s, %d steps, %d rank(s) x %d thread(s)"
              % (n, sim.dt, steps, sim.size, sim.threads))
    t0 = time.perf_counter()
    chunk = max(1, steps // 10)
    done = 0
    while done < steps:
        k = min(chunk, steps - done)
        sim.run(steps=k)
        done += k
        e, nc = sim.energy(), sim.n_contacts
        if root:
            print("  step %6d  t = %.3f s  contacts %6d  kinetic energy %.3e J"
                  % (sim.step_count, sim.time, nc, e["kinetic"]), flush=True)
    wall = time.perf_counter() - t0
    p, c = sim.particles(gather=True), sim.contacts(gather=True)
    floor = -sim.plane_forces()[0, 2]      # load the bed puts on the floor
    kinetic = sim.energy()["kinetic"]
    phases = sim.timer_stats()
    if not root:
        return
    pair = c["kind"] == "pair"
    weight = float(np.sum(p["mass"])) * 9.81
    top = np.sort(p["position"][:, 2] + p["radius"])[-int(0.05 * n):].mean()
    vol = float(np.sum(4 / 3 * math.pi * p["radius"] ** 3))
    # packing fraction in a slab away from the floor and the free surface
    z = p["position"][:, 2]
    lo, hi = 4 * radius, top - 4 * radius
    slab = (z > lo) & (z < hi)
    phi = np.sum(4 / 3 * math.pi * p["radius"][slab] ** 3) / (width * width * (hi - lo))
    lines = [
        "pdem demo: spheres poured into a box",
        "particles             %d (radius %.1f mm, box %.0f x %.0f mm)" % (n, radius * 1e3, width * 1e3, width * 1e3),
        "simulated time        %.3f s in %d steps (dt = %.3g s)" % (sim.time, sim.step_count, sim.dt),
        "wall time             %.1f s (%d rank(s) x %d thread(s)), %.3g particle-steps/s"
        % (wall, sim.size, sim.threads, n * steps / wall),
        "neighbor rebuilds     %d" % sim.n_rebuilds,
        "phase seconds         " + ", ".join("%s %.1f" % (k, v[2]) for k, v in phases.items())
        + " (slowest rank)",
        "bed height            %.1f mm" % (top * 1e3),
        "packing fraction      %.3f (bulk slab; poured frictional beds: 0.58-0.62)" % phi,
        "contacts per particle %.2f (coordination number, particle-particle)" % (2 * pair.sum() / n),
        "max overlap           %.2f %% of radius" % (100 * c["overlap"].max() / radius),
        "kinetic energy        %.3e J" % kinetic,
        "floor force / weight  %.4f (a settled bed rests on the floor and walls: <= 1)" % (floor / weight),
        "solid volume          %.3e m^3" % vol,
    ]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "summary.txt"), "w") as fh:
        fh.write(text)
    picture(p, sim.time, os.path.join(args.out, "final_state.png"), width)
    print(text + "wrote %s/summary.txt and %s/final_state.png" % (args.out, args.out))


if __name__ == "__main__":
    main()
