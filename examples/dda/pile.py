"""A pile of disks settling under gravity with particle DDA (pdem.DDA, docs/dda.md):
a triangular stack of 20 rows of equal disks on a row of fixed disks, friction 0.5,
quasi-static (dynamic=0), penalties k_n = 1e7 N/m and k_s = 4e6 N/m, with a time
step 25 times the explicit scheme's critical step 2 sqrt(m*/k_n) for the same
stiffness. Writes examples/dda/pile.png (the force chains)
and prints the iterations per step and the floor's reaction against the weight.
--deformable E: deformable disks (rigid=False, Young's modulus E, Poisson 0.25);
prints the disks' stresses and checks that sum V sigma over the disks equals the
contact forces' sum of branch x force (the pile's total stress moment), and colours
the disks by pressure in examples/dda/pile_deformable.png. --preconditioner sgs:
the multicolour Gauss-Seidel preconditioner.

    python examples/dda/pile.py [--deformable 1e8] [--preconditioner sgs]
    mpirun -n 2 python -m mpi4py examples/dda/pile.py
"""
import argparse
import math
import sys
import time
import warnings

import numpy as np
from mpi4py import MPI

import pdem

RADIUS, DENSITY, KN, KS, MU, ROWS = 0.01, 2500.0, 1e7, 4e6, 0.5, 20
MASS = DENSITY * math.pi * RADIUS ** 2          # per unit thickness (2D)
CRITICAL = 2.0 * math.sqrt(0.5 * MASS / KN)     # explicit Hooke: 2 sqrt(m*/k_n)


def build(comm=None, scheme=None, dt=None, rows=ROWS, young=None):
    """The stack: `rows` rows of disks in a triangle above a fixed base row (ids of
    the base: the first rows + 1), just touching; returns (sim, base ids)."""
    base = rows + 1
    width = 2 * RADIUS * (base + 2)
    dom = pdem.Domain((-width / 2, -RADIUS), (width / 2, 2 * RADIUS * (rows + 2)), dim=2)
    sim = pdem.Simulation(dom, dt, gravity=(0, -9.81, 0), comm=comm, scheme=scheme,
                          skin=0.2 * RADIUS)
    pts = []
    for row in range(base):
        n = base - row
        x = (np.arange(n) - (n - 1) / 2) * 2 * RADIUS
        y = RADIUS + row * math.sqrt(3) * RADIUS
        pts += [(xi, y) for xi in x]
    ids = sim.add_spheres(np.array(pts), RADIUS, sim.material("disk", DENSITY, friction=MU,
                                                              young=young, poisson=0.25))
    fixed = ids[:base]
    sim.block(fixed, ["x", "y", "rz"])
    return sim, fixed


def settle(sim, v_tol=1e-7, max_steps=200000):
    """Steps until every particle moves less than v_tol * dt in a step (collective);
    returns (steps, CPU seconds, per-step DDA iterations or None)."""
    clock = time.process_time()
    iters = []
    steps = 0
    while steps < max_steps:
        before = sim.particles(gather=True)["position"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pdem.DDAWarning)
            sim.run(10, progress=False)
        steps += 10
        if isinstance(sim.scheme, pdem.DDA):
            iters.append((sim.scheme.cg_iterations, sim.scheme.open_close))
        moved = np.abs(sim.particles(gather=True)["position"] - before).max()
        if moved < 10 * v_tol * sim.dt:
            break
    return steps, time.process_time() - clock, iters


def forces(sim):
    """{(id1, id2): force on id2} of the pair contacts, and the total vertical force of
    the contacts on the fixed base row."""
    c = sim.contacts(gather=True)
    return {(int(a), int(b)): f for a, b, f in zip(c["id1"], c["id2"], c["force"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deformable", type=float, default=None, metavar="E")
    ap.add_argument("--preconditioner", default="jacobi")
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    dt = 25 * CRITICAL
    scheme = pdem.DDA(penalty=KN, shear_penalty=KS, dynamic=0.0,
                      rigid=a.deformable is None, preconditioner=a.preconditioner)
    sim, fixed = build(comm, scheme, dt, young=a.deformable)
    steps, cpu, iters = settle(sim)
    f = forces(sim)
    on_base = sum(v[1] for (a, b), v in f.items() if b in set(fixed.tolist()) and a not in
                  set(fixed.tolist())) - sum(v[1] for (a, b), v in f.items()
                                             if a in set(fixed.tolist()) and b not in
                                             set(fixed.tolist()))
    n_free = sim.n_particles - len(fixed)
    p = sim.particles(gather=True)          # collective: on every rank
    if sim.rank == 0:
        cg = np.array(iters)
        print("dt = %.3g s = %.0f x the explicit critical step %.3g s" % (dt, dt / CRITICAL,
                                                                          CRITICAL))
        print("settled in %d steps, %.2f s CPU; CG iterations per step %.1f (max %d), "
              "open-close %.2f (max %d)" % (steps, cpu, cg[:, 0].mean(), cg[:, 0].max(),
                                            cg[:, 1].mean(), cg[:, 1].max()))
        print("load on the base %.6g N/m, weight %.6g N/m" % (-on_base, n_free * MASS * 9.81))
        if a.deformable is None:
            picture(p, f, "examples/dda/pile.png")
        else:
            stresses(sim, p, f)


def stresses(sim, p, f):
    """Deformable disks: the pressure range, and sum V sigma_yy of the disks against
    the contact forces' sum of (branch x force)_yy: at equilibrium each disk's V sigma
    is the sum of sym(f x a) of its contacts (a: centre to contact point)."""
    volume = math.pi * RADIUS ** 2
    sigma = p["stress"]
    pressure = -(sigma[:, 0] + sigma[:, 1]) / 2
    pos = dict(zip(p["id"].tolist(), p["position"]))
    moment = 0.0
    for (a, b), v in f.items():         # force v on b at r n from b, -v on a at -r n from a
        n = pos[a] - pos[b]
        n /= np.linalg.norm(n)
        moment += 2 * RADIUS * n[1] * v[1]
    print("pressure in the disks: %.4g to %.4g Pa (mean %.4g); sum V sigma_yy %.10g N m, "
          "contact forces' moment %.10g N m" % (pressure.min(), pressure.max(), pressure.mean(),
                                                 volume * sigma[:, 1].sum(), moment))
    picture(p, f, "examples/dda/pile_deformable.png", colour=pressure)


def picture(p, f, path, colour=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pos = dict(zip(p["id"].tolist(), p["position"][:, :2]))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for k, x in enumerate(p["position"]):
        if colour is None:
            ax.add_patch(plt.Circle(x[:2], RADIUS, fill=False, lw=0.4, color="0.6"))
        else:
            ax.add_patch(plt.Circle(x[:2], RADIUS, lw=0.4, ec="0.6",
                                    fc=plt.cm.viridis(colour[k] / colour.max())))
    fmax = max(np.linalg.norm(v) for v in f.values())
    for (a, b), v in f.items():
        xa, xb = pos[a], pos[b]
        ax.plot([xa[0], xb[0]], [xa[1], xb[1]], "k-", lw=4 * np.linalg.norm(v) / fmax)
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.set_title("DDA: a stack of %d disks, contact forces (line width)%s"
                 % (len(p["id"]), "" if colour is None else ", pressure (colour)"))
    fig.savefig(path, dpi=120, bbox_inches="tight")


if __name__ == "__main__":
    sys.exit(main())
