"""Demo: pour random convex rocks (issue 17, docs/polyhedra.md) into a box of five planes
and let them settle.

    mpirun -n 2 python -m mpi4py examples/pour_rocks.py --out results/rocks [--rocks 216]

Runs on any number of ranks (the same bits on any number); rank 0 writes the outputs:
<out>/summary.txt (scene, cost per step, floor load against the rocks' weight),
<out>/rocks_NNNN.vtk (the rocks' polygon meshes for ParaView, a time series) and
<out>/final_state.png (the settled rocks, matplotlib).
"""
import argparse
import os
import time

import numpy as np

import pdem
from pdem import polyhedra


def build(n, seed=1):
    size = 0.01                                       # rock semi-axes up to 1 cm
    shapes = [polyhedra.rock(16, seed=(seed, k), axes=size * np.array([1.0, 0.75, 0.55]))
              for k in range(4)]
    width = 0.12
    per_row = 6
    layers = int(np.ceil(n / per_row ** 2))
    height = 0.03 + layers * 2.4 * size + 0.02
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (width, width, height)), dt=2e-5,
                          gravity=(0, 0, -9.81), skin=0.2 * size)
    rock = sim.material("rock", density=2600.0, kn=2e4, restitution=0.3, friction=0.5,
                        twisting_friction=0.1, twisting_stiffness=0.3)
    for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)),
                          ((width, 0, 0), (-1, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                          ((0, width, 0), (0, -1, 0))):
        sim.add_plane(point, normal, rock)
    rng = np.random.default_rng(seed)
    g = (np.arange(per_row) + 0.5) * (width / per_row)
    x, y, z = np.meshgrid(g, g, 0.03 + np.arange(layers) * 2.4 * size, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])[:n]
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    kind = rng.integers(0, len(shapes), n)
    for k, shape in enumerate(shapes):
        s = kind == k
        sim.add_polyhedra(pos[s], shape, rock, orientations=q[s],
                          velocities=rng.normal(0, 0.05, (int(s.sum()), 3)))
    return sim, width


def picture(sim, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection
    pts, tris, ids = polyhedra.world_mesh(sim, gather=True)
    if sim.rank != 0:
        return
    fig = plt.figure(figsize=(7, 6))
    ax = fig.add_subplot(projection="3d")
    z = pts[tris].mean(axis=1)[:, 2]
    colors = plt.cm.viridis((z - z.min()) / max(np.ptp(z), 1e-12))
    ax.add_collection3d(Poly3DCollection(pts[tris], facecolors=colors, edgecolors="k",
                                         linewidths=0.1))
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    ax.set_xlim(lo[0], hi[0]); ax.set_ylim(lo[1], hi[1]); ax.set_zlim(0, hi[2])
    ax.set_box_aspect((hi[0] - lo[0], hi[1] - lo[1], hi[2]))
    ax.set_title("%d convex rocks at t = %.2f s (colour: height)" % (len(np.unique(ids)),
                                                                     sim.time))
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results/rocks")
    ap.add_argument("--rocks", type=int, default=216)
    ap.add_argument("--time", type=float, default=0.4)
    a = ap.parse_args()
    sim, width = build(a.rocks)
    if sim.rank == 0:
        os.makedirs(a.out, exist_ok=True)
    steps = int(a.time / sim.dt)
    frames = 8
    t0 = time.perf_counter()
    for f in range(frames):
        sim.run(steps // frames)
        polyhedra.write_vtk(os.path.join(a.out, "rocks_%04d.vtk" % f), sim)
    wall = time.perf_counter() - t0
    p = sim.particles(gather=True)
    weight = p["mass"].sum() * 9.81
    floor = -sim.plane_forces()[0][2]
    v = np.linalg.norm(p["velocity"], axis=1).max()
    contacts = sim.n_contacts
    picture(sim, os.path.join(a.out, "final_state.png"))
    if sim.rank == 0:
        text = ("%d rocks (4 shapes of 16 vertices, semi-axes 1 x 0.75 x 0.55 cm), box %.2f m, "
                "%d ranks\n%d steps in %.1f s: %.2f ms per step, %d contacts at the end\n"
                "floor load / weight = %.4f (walls carry the rest), fastest rock %.3g m/s\n"
                % (a.rocks, width, sim.size, steps, wall, 1e3 * wall / steps, contacts,
                   floor / weight, v))
        open(os.path.join(a.out, "summary.txt"), "w").write(text)
        print(text)


if __name__ == "__main__":
    main()
