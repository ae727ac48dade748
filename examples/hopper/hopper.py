"""Hopper discharge (pdem demo for faceted walls): a conical hopper read from an STL
is filled with glass beads that settle on a gate; the gate (a mesh plate) slides
away and the hopper empties. The result file holds frames (particles, contacts and
the walls, for ParaView through the .xdmf) and a time series with the discharged
mass and the force and moment on the hopper. A plot of both and a summary are
written at the end.

    mpirun -n 2 python -m mpi4py examples/hopper/hopper.py --out results/hopper
"""
import argparse
import json
import math
import os
import time
import warnings

import numpy as np
from mpi4py import MPI

import pdem
from pdem.contact import shapes
from pdem.io import ResultFile

HERE = os.path.dirname(os.path.abspath(__file__))


def build(comm, stl, n_side, radius, seed=1):
    hopper = pdem.Mesh.read(stl)
    lo, hi = hopper.vertices.min(axis=0), hopper.vertices.max(axis=0)
    r_top = max(hi[0], hi[1])
    dom = pdem.Domain(lo=(lo[0] - 0.01, lo[1] - 0.01, -0.1), hi=(hi[0] + 0.01, hi[1] + 0.01,
                                                                   hi[2] + 0.1))
    sim = pdem.Simulation(dom, dt=5e-5, gravity=(0, 0, -9.81), comm=comm, lost="remove")
    glass = sim.material("glass", density=2500.0, kn=3000.0, restitution=0.3, friction=0.4,
                         rolling_friction=0.05, rolling_stiffness=0.25)
    steel = sim.material("steel", density=7800.0, kn=3000.0, restitution=0.3, friction=0.3)
    sim.pair(glass, steel, friction=0.3)
    sim.add_mesh_wall(hopper, steel, cutoff_angle=20.0, name="hopper")
    gate = shapes.rectangle((-r_top, -r_top), (r_top, r_top), -1e-3, 2)
    sim.add_mesh_wall(gate, steel, velocity=(0.0, 0.0, 0.0), name="gate")
    # beads on a jittered lattice inside the hopper (its radius at each height
    # interpolated between the mesh's vertex rings), up to 1 cm below its rim
    zs, ring = np.unique(hopper.vertices[:, 2], return_inverse=True)
    rs = np.bincount(ring, np.hypot(hopper.vertices[:, 0], hopper.vertices[:, 1])) / \
        np.bincount(ring)
    rng = np.random.default_rng(seed)
    spacing = 2.3 * radius
    g = (np.arange(n_side) - (n_side - 1) / 2) * spacing
    x, y, z = np.meshgrid(g, g, np.arange(zs[0] + 3 * radius, zs[-1] - 0.01, spacing),
                          indexing="ij")
    pos = np.c_[x.ravel(), y.ravel(), z.ravel()]
    inside = np.hypot(pos[:, 0], pos[:, 1]) + 2.5 * radius < np.interp(pos[:, 2], zs, rs)
    pos = pos[inside] + rng.uniform(-0.1, 0.1, (inside.sum(), 3)) * radius
    sim.add_spheres(pos, rng.uniform(0.9, 1.1, len(pos)) * radius, glass)
    return sim


def main():
    ap = argparse.ArgumentParser(description="hopper discharge demo")
    ap.add_argument("--out", default="results/hopper")
    ap.add_argument("--stl", default=None, help="hopper STL (default: written by make_hopper.py)")
    ap.add_argument("--radius", type=float, default=0.0025)
    ap.add_argument("--n-side", type=int, default=24)
    ap.add_argument("--settle", type=float, default=0.35, help="seconds before the gate opens")
    ap.add_argument("--discharge", type=float, default=1.0, help="seconds after it opens")
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    # beads leaving through the bottom of the domain are removed (lost="remove"); they
    # count as discharged, so their one warning each is not needed here
    warnings.filterwarnings("ignore", message=".*left the domain.*")
    out = os.path.abspath(a.out)
    stl = a.stl or os.path.join(out, "hopper.stl")
    if comm.rank == 0:
        os.makedirs(out, exist_ok=True)
        if a.stl is None:
            from make_hopper import hopper_mesh
            from pdem.contact.mesh_files import write_stl
            m = hopper_mesh()
            write_stl(stl, m.vertices, m.facets)
    comm.Barrier()
    sim = build(comm, stl, a.n_side, a.radius)
    mass0 = sim.global_sum(sim.particles()["mass"].sum())
    n0 = sim.n_particles

    def discharged(s):                   # mass below the outlet or already removed
        p = s.particles()
        return mass0 - s.global_sum(p["mass"][p["position"][:, 2] > 0.0].sum())

    clock = time.perf_counter()
    every = int(round(0.05 / sim.dt))
    with ResultFile(os.path.join(out, "hopper.h5"), sim, contacts=True, every=every,
                    series_every=every // 10,
                    series_extra={"discharged_mass": discharged}) as rf:
        rf.run(until=a.settle)
        t_open = sim.time
        gate = sim.mesh_walls[1].motion
        gate.set_velocity(velocity=(1.0, 0.0, 0.0))   # slides 0.15 m aside in 0.15 s
        rf.run(until=t_open + 0.15)
        gate.set_velocity(velocity=(0.0, 0.0, 0.0))
        rf.run(until=t_open + a.discharge)
    wall = time.perf_counter() - clock
    if comm.rank == 0:
        summary = report(os.path.join(out, "hopper.h5"), out, t_open, mass0, n0, wall,
                         comm.size)
        print(json.dumps(summary, indent=1))


def report(h5path, out, t_open, mass0, n0, wall, ranks):
    """Flow rate (fit over the steady part of the discharge), hopper load before the
    gate opens vs the weight, and the plot."""
    import h5py
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with h5py.File(h5path, "r") as f:
        s = f["series"]
        t, m = s["time"][...], s["discharged_mass"][...]
        hopper_fz = -s["mesh_wall_force"][:, 0, 2]      # force ON the hopper is downwards
        gate_fz = -s["mesh_wall_force"][:, 1, 2]
    weight = mass0 * 9.81
    before = t < t_open
    steady = (m > 0.2 * mass0) & (m < 0.8 * mass0)
    rate = float(np.polyfit(t[steady], m[steady], 1)[0]) if steady.sum() > 3 else float("nan")
    # Beverloo (C = 0.58, k = 1.5, bulk density 0.6 * 2500) for comparison
    d, D = 2 * 0.0025, 0.05
    beverloo = 0.58 * 0.6 * 2500 * math.sqrt(9.81) * (D - 1.5 * d) ** 2.5
    fig, ax = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    ax[0].plot(t, m, label="discharged mass")
    ax[0].axvline(t_open, color="k", lw=0.5, ls=":")
    ax[0].set_ylabel("mass [kg]")
    ax[0].legend()
    ax[1].plot(t, hopper_fz, label="hopper wall, vertical load (pushed down)")
    ax[1].plot(t, gate_fz, label="gate, vertical load")
    ax[1].axhline(weight, color="k", lw=0.5, ls="--", label="weight of the beads")
    ax[1].set_xlabel("time [s]")
    ax[1].set_ylabel("force [N]")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "hopper.png"), dpi=120)
    settled = before & (t > t_open - 0.05)
    summary = {"particles": int(n0), "ranks": ranks, "wall_seconds": round(wall, 1),
               "mass_kg": mass0,
               "walls_load_over_weight_before_opening": float(
                   np.mean((hopper_fz + gate_fz)[settled]) / weight),
               "gate_share_before_opening": float(np.mean(gate_fz[settled]) / weight),
               "discharged_fraction_at_end": float(m[-1] / mass0),
               "flow_rate_kg_per_s": rate, "beverloo_kg_per_s": beverloo,
               "plot": os.path.join(out, "hopper.png"),
               "result_file": h5path}
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    return summary


if __name__ == "__main__":
    main()
