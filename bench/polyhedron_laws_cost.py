"""Cost per contact of the polyhedron contact models in the engine (issue 17,
docs/polyhedra.md): the contact phase's time (sim.timers["contact"]: candidates' kernels
and force sums) per active contact and step, for n isolated overlapping pairs at rest
(no gravity), one thread, fastest of R repeats (a shared machine). Pairs: two spheres
(the sphere kernel), two seeded rocks of 16 vertices (28 triangles) and two cubes (12
triangles) turned at random, each with contact_model 'minkowski' (GJK/EPA), 'volume'
(clipping) and 'common_plane' (GJK/EPA + the vertices beyond the plane).

    PYTHONPATH=. OMP_NUM_THREADS=1 python bench/polyhedron_laws_cost.py [pairs] [repeats]
"""
import sys

import numpy as np
from mpi4py import MPI

import pdem
from pdem import polyhedra as P

STEPS = 50


def scene(n, shape, model):
    side = int(np.ceil(n ** (1 / 3)))
    L = 0.3 * side
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (L, L, L), periodic=(True,) * 3), dt=1e-6,
                          gravity=(0, 0, 0), comm=MPI.COMM_SELF, threads=1,
                          max_overlap=0.95)
    law = {} if model is None else {"contact_model": model, "volume_stiffness": 1e6}
    m = sim.material("m", density=1000.0, kn=1e4, friction=0.5, restitution=0.5, **law)
    rng = np.random.default_rng(1)
    g = (np.arange(side) + 0.5) * 0.3
    c = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)[:n]
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    if shape == "sphere":
        sim.add_spheres(np.vstack([c, c + 0.095 * d]), [0.05] * (2 * n), m)
        return sim
    body = P.rock(16, seed=2, axes=(0.05, 0.04, 0.035)) if shape == "rock" else P.cube(0.06)
    q = rng.normal(size=(2 * n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    # B along d at 0.6 x the distance where the bounding spheres touch: most overlap
    sim.add_polyhedra(np.vstack([c, c + 1.2 * body.bound * d]), body, m, orientations=q)
    return sim


def cost(n, shape, model, repeats):
    best = np.inf
    for _ in range(repeats):
        sim = scene(n, shape, model)
        sim.run(2)
        t0 = sim.timers["contact"]
        sim.run(STEPS)
        contacts = sim.n_contacts
        best = min(best, (sim.timers["contact"] - t0) / STEPS / max(contacts, 1))
    return best * 1e9, contacts


def main(n=2000, repeats=3):
    print("%d pairs, one thread, ns per active contact and step (fastest of %d)"
          % (n, repeats))
    for shape, model in (("sphere", None), ("rock", "minkowski"), ("rock", "volume"),
                         ("rock", "common_plane"), ("cube", "minkowski"), ("cube", "volume"),
                         ("cube", "common_plane")):
        ns, contacts = cost(n, shape, model, repeats)
        print("%-6s %-12s %7.0f ns  (%d contacts)" % (shape, model or "-", ns, contacts),
              flush=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
