#!/usr/bin/env python
"""The cost of running NSCD inside pdem.Simulation (scheme=pdem.NSCD) against seed 003's
API GrainProblem (an adapter over the same Simulation that rebuilds its lists and
hands the state over at every step), on the same scene and solver.

Scene: N disks on a hexagonal lattice in a box of three walls (planes in both codes),
friction 0.4, at rest under gravity (bench/nscd_convergence.py's lattice). Both run
`--steps` steps after one warm-up step; the script prints ms per step, sweeps per
step and the ratio Simulation / GrainProblem.
    python bench/nscd_simulation.py --sizes 1000,10000
"""
import argparse
import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from nscd_convergence import R, lattice  # noqa: E402

DT, TOL, ALERT, MU = 5e-4, 1e-7, 0.1 * R, 0.4
WALLS = (((0.0, 0.0), (0.0, 1.0)), ((0.0, 0.0), (1.0, 0.0)))


def grain_problem(x, r, width, solver):
    from pdem.nscd import GrainProblem
    p = GrainProblem(dim=2, gravity=(0.0, -9.81), friction=MU)
    p.add_grains(x, r, density=2500.0)
    p.add_planes([w[0] for w in WALLS] + [(width, 0.0)],
                 [w[1] for w in WALLS] + [(-1.0, 0.0)])
    return lambda: p.step(DT, TOL, ALERT, solver=solver)


def simulation(x, r, width, height, solver):
    import pdem
    scheme = pdem.NSCD(solver, tol=TOL, alert=ALERT)
    sim = pdem.Simulation(pdem.Domain((-R, -R), (width + R, 2 * height), dim=2), DT,
                          gravity=(0.0, -9.81, 0.0), scheme=scheme, skin=ALERT)
    sim.material("g", 2500.0, friction=MU)
    sim.add_spheres(x, r, "g")
    for point, normal in list(WALLS) + [((width, 0.0), (-1.0, 0.0))]:
        sim.add_plane(point + (0.0,), normal + (0.0,), "g")
    return lambda: (sim.step(), scheme.sweeps)[1]


def timed(step, steps):
    step()
    sweeps, t0 = 0, time.perf_counter()
    for _ in range(steps):
        sweeps += step()
    return 1e3 * (time.perf_counter() - t0) / steps, sweeps / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--solver", default="nlgs", choices=("nlgs", "jacobi"))
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print("%8s %22s %22s %8s" % ("disks", "GrainProblem ms/step", "Simulation ms/step",
                                 "ratio"))
    for n in (int(s) for s in args.sizes.split(",")):
        x, r, width, height = lattice(n)
        t_gp, s_gp = timed(grain_problem(x, r, width, args.solver), args.steps)
        t_sim, s_sim = timed(simulation(x, r, width, height, args.solver), args.steps)
        print("%8d %13.2f (%4.0f sw) %13.2f (%4.0f sw) %8.2f"
              % (n, t_gp, s_gp, t_sim, s_sim, t_sim / t_gp))


if __name__ == "__main__":
    main()
