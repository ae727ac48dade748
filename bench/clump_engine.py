"""Cost of a clump member contact against a sphere contact in the engine (issue 21
part 8): the contact phase (geometry, L6Geom, law, force sums) per active contact row
and step, one thread, in a periodic lattice compressed so that every particle touches
its 6 neighbours, with small random velocities and spins.

  PYTHONPATH=$PWD python bench/clump_engine.py [n_side] [steps]

Scenes: spheres (r); one-sphere clumps (r) on the same lattice (the member machinery
alone: one row per pair); dumbbells of two spheres r at distance r along x on a lattice
stretched along x (member rows: 4 per candidate pair, of which the touching ones are
active). Prints ns per active row and step and the rows per active row."""
import sys
import time

import numpy as np

import pdem


def lattice(kind, n_side, seed=1):
    r = 0.01
    length = np.array([3.0 if kind == "dumbbell" else 2.0, 2.0, 2.0]) * r
    spacing = length * 0.995
    rng = np.random.default_rng(seed)
    idx = np.stack(np.meshgrid(*[np.arange(n_side)] * 3, indexing="ij"), -1).reshape(-1, 3)
    pos = (idx + 0.5) * spacing
    n = len(pos)
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), tuple(spacing * n_side), (True,) * 3),
                          dt=2e-6, threads=1)
    m = sim.material("m", 1000.0, kn=1e4, friction=0.3, restitution=0.5)
    vel = rng.normal(0, 1e-3, (n, 3))
    w = rng.normal(0, 0.1, (n, 3))
    if kind == "sphere":
        sim.add_spheres(pos, r, m, velocities=vel, angular_velocities=w)
    elif kind == "clump1":
        sim.add_clumps(pos, sim.clump_template([[0, 0, 0]], r), m, velocities=vel,
                       angular_velocities=w)
    else:
        k = sim.clump_template([[-0.5 * r, 0, 0], [0.5 * r, 0, 0]], r)
        sim.add_clumps(pos, k, m, velocities=vel, angular_velocities=w * 0.1)
    return sim


def measure(kind, n_side, steps):
    sim = lattice(kind, n_side)
    sim.run(20)
    sim.timers["contact"] = 0.0
    counts = []
    t = time.perf_counter()
    for _ in range(steps):
        sim.step()
        counts.append(sim.n_contacts)
    wall = time.perf_counter() - t
    rows = sum(len(k) for k in sim.interactions.values())
    return sim.timers["contact"] / sum(counts) * 1e9, np.mean(counts), wall, rows


if __name__ == "__main__":
    n_side = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    res = {}
    for kind in ("sphere", "clump1", "dumbbell"):
        per, nc, wall, rows = measure(kind, n_side, steps)
        res[kind] = per
        print("%-9s %6.0f active rows (%.2f rows each): %6.0f ns per active row and step "
              "(contact phase), step %.2f ms" % (kind, nc, rows / nc, per, wall / steps * 1e3))
    print("one-sphere clump / sphere: %.1f; dumbbell member contact / sphere: %.1f"
          % (res["clump1"] / res["sphere"], res["dumbbell"] / res["sphere"]))
