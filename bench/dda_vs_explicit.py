"""Particle DDA against the explicit scheme to the same equilibrium (issue 19, seed 002
"颗粒DDA"; docs/dda.md): CPU time, steps, CG and open-close iterations per step.

The scene has a unique equilibrium known by statics: a square grid of COLS x COLS
columns of LEVELS equal spheres (radius 1 cm, density 2500, not touching each other),
standing on a plane floor under gravity, released at rest just touching. Contact k of
a column (k = 0: the floor) carries the weight of the spheres above it, (LEVELS - k)
m g, whatever the contact stiffness. Both schemes use the same linear normal spring
k_n (explicit: the Hooke law, kn = KN, kt = 2/7 kn, dashpot gamma_n critical for a
pair, dt = the contact duration pi sqrt(m*/k_n) / 10.5 (pdem warns below 10 steps per
contact); DDA: penalty KN, quasi-static `dynamic=0`, dt = 10 x the explicit critical
step 2 sqrt(m*/k_n)). Each run stops at the first step after which every
contact force is within TOL (relative) of its statics, CHECKS checks in a row
(explicit: a check every EVERY steps; DDA: every step), and reports the CPU time of
the run (process time of rank 0, and the wall time), the steps and, for DDA, the CG
and open-close iterations per step.

    python bench/dda_vs_explicit.py [--cols 10] [--levels 20] [--repeats 2] [--preconditioner sgs]
    mpirun -n 2 python -m mpi4py bench/dda_vs_explicit.py     (scaling 1 -> 2 ranks)
"""
import argparse
import math
import time
import warnings

import numpy as np
from mpi4py import MPI

import pdem

R, RHO, KN, G = 0.01, 2500.0, 1e5, 9.81
MASS = RHO * 4.0 / 3.0 * math.pi * R ** 3
CRITICAL = 2.0 * math.sqrt(0.5 * MASS / KN)       # explicit Hooke, a pair of equal spheres
GAMMA_N = 2.0 * math.sqrt(KN / (0.5 * MASS))      # critical damping of a pair: m* gamma_n = 2 sqrt(k m*)
EXPLICIT_DT = math.pi * math.sqrt(0.5 * MASS / KN) / 10.5   # 10.5 steps per contact duration
DDA_DT = 10 * CRITICAL
TOL, EVERY, CHECKS = 1e-3, 20, 3


def build(comm, scheme, dt, cols, levels):
    """The columns (ids: column c, level k -> c levels + k); returns the sim."""
    pitch = 3 * R
    width = cols * pitch
    dom = pdem.Domain((0, 0, -R), (width, width, 2 * R * (levels + 2)))
    sim = pdem.Simulation(dom, dt, gravity=(0, 0, -G), comm=comm, scheme=scheme,
                          skin=0.2 * R)
    if isinstance(scheme, pdem.DDA):
        sim.material("m", RHO, friction=0.5)
    else:
        sim.material("m", RHO, kn=KN, gamma_n=GAMMA_N, friction=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), "m")
    xy = (np.stack(np.meshgrid(np.arange(cols), np.arange(cols), indexing="ij"), -1)
          .reshape(-1, 2) + 0.5) * pitch
    pts = np.array([(x, y, R + 2 * R * k) for x, y in xy for k in range(levels)])
    sim.add_spheres(pts, R, "m")
    return sim


def worst_error(sim, levels):
    """max over contacts of |F - F_statics| / F_statics (all ranks; collective)."""
    c = sim.contacts()
    k = c["id2"] % levels                        # the upper body's level
    expected = MASS * G * (levels - k)
    err = np.abs(np.linalg.norm(c["force"], axis=1) - expected) / expected
    n_contacts = sim.collective.sum(np.array([float(len(err))]))[0]
    return sim.collective.max(float(err.max()) if len(err) else 0.0), int(n_contacts)


def settle(comm, kind, cols, levels, preconditioner="jacobi", max_steps=200000):
    if kind == "dda":
        scheme = pdem.DDA(penalty=KN, dynamic=0.0, preconditioner=preconditioner)
        dt, every = DDA_DT, 1
    else:
        scheme, dt, every = None, EXPLICIT_DT, EVERY
    sim = build(comm, scheme, dt, cols, levels)
    n_expected = cols * cols * levels
    comm.Barrier()
    cpu, wall = time.process_time(), time.perf_counter()
    good = 0
    while sim.step_count < max_steps:
        sim.run(every)
        err, n = worst_error(sim, levels)
        good = good + 1 if (err <= TOL and n == n_expected) else 0
        if good == CHECKS:
            break
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    cpu = comm.allreduce(cpu, op=MPI.MAX)
    out = {"steps": sim.step_count, "dt": dt, "cpu": cpu, "wall": wall, "error": err,
           "contacts": n}
    if kind == "dda":
        out["cg"] = sim.scheme.total_cg / sim.step_count
        out["oc"] = sim.scheme.total_open_close / sim.step_count
        out["cg_solve"] = sim.scheme.total_cg / sim.scheme.total_open_close
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cols", type=int, default=10)
    ap.add_argument("--levels", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--preconditioner", default="jacobi", help="of the DDA solve: jacobi, sgs")
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    best = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pdem.DDAWarning)
        for _ in range(a.repeats):
            for kind in ("dda", "explicit"):
                r = settle(comm, kind, a.cols, a.levels, a.preconditioner)
                if kind not in best or r["cpu"] < best[kind]["cpu"]:
                    best[kind] = r
    if comm.rank == 0:
        print("%d columns of %d spheres (%d), k_n = %g N/m, tolerance %g on every contact "
              "force, %d ranks; fastest of %d" % (a.cols ** 2, a.levels, a.cols ** 2 * a.levels,
                                                   KN, TOL, comm.size, a.repeats))
        for kind, r in best.items():
            extra = ("  CG/step %.1f  open-close/step %.2f  CG/solve %.1f"
                     % (r["cg"], r["oc"], r["cg_solve"]) if kind == "dda" else "")
            print("%-8s dt %.3g s  steps %6d  CPU %.2f s (max over ranks)  wall %.2f s  "
                  "worst force error %.1e (%d contacts)%s"
                  % (kind, r["dt"], r["steps"], r["cpu"], r["wall"], r["error"], r["contacts"],
                     extra))
        print("CPU ratio explicit / DDA: %.1f" % (best["explicit"]["cpu"] / best["dda"]["cpu"]))


if __name__ == "__main__":
    main()
