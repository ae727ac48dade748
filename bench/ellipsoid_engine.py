"""Cost of an ellipsoid contact against a sphere contact in the engine (issue 16):
the contact phase (geometry, L6Geom, law, force sums) per active contact and step, one
thread, in a periodic lattice compressed so that every particle touches its 6
neighbours, with small random velocities, tilts and spins (the solves must iterate).

  PYTHONPATH=$PWD python bench/ellipsoid_engine.py [n_side] [steps]
  PYTHONPATH=$PWD python bench/ellipsoid_engine.py --flow [grains] [steps]

--flow: the flowing scene of the demo (examples/ellipsoids/hopper.py: the wedge hopper
discharging, mu = 0.5), spheres and 2:1 spheroids of the same volume, both from 0.05 s
after the opening, measured in alternating windows of `steps` steps (spheres warm,
spheroids warm, spheroids cold, 3 times; the fastest of each kept): ns per active
contact and step (contact phase: pairs and planes), pair candidates per contact, and
iterations per contact per step with the warm start and with cold starts.

Scenes: spheres (r); ellipsoids (a, b, c) = (2, 1.4, 1) r on a matching lattice; the
same lattice with every other particle a sphere of radius c (mixed: ellipsoid-sphere
pairs, touching along z only, so that more of the candidates are separated pairs the
solve exits early on). Prints ns per contact, mean / max iterations per contact per step."""
import sys
import time

import numpy as np

import pdem


def lattice(kind, n_side, seed=1):
    r = 0.01
    axes = np.array([2.0, 1.4, 1.0]) * r if kind != "sphere" else np.array([r, r, r])
    spacing = 2 * axes * 0.995
    L = spacing * n_side
    rng = np.random.default_rng(seed)
    idx = np.stack(np.meshgrid(*[np.arange(n_side)] * 3, indexing="ij"), -1).reshape(-1, 3)
    pos = (idx + 0.5) * spacing
    n = len(pos)
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), tuple(L), (True,) * 3), dt=2e-6, threads=1)
    m = sim.material("m", 1000.0, kn=1e4, friction=0.3, restitution=0.5)
    vel = rng.normal(0, 1e-3, (n, 3))
    w = rng.normal(0, 0.1, (n, 3))
    if kind == "sphere":
        sim.add_spheres(pos, r, m, velocities=vel, angular_velocities=w)
        return sim
    tilt = rng.normal(0, 0.02, (n, 3))
    q = np.column_stack([np.ones(n), tilt / 2])
    q /= np.linalg.norm(q, axis=1)[:, None]
    ell = np.ones(n, bool) if kind == "ellipsoid" else (idx.sum(axis=1) % 2 == 0)
    sim.add_ellipsoids(pos[ell], np.tile(axes, (int(ell.sum()), 1)), m, orientations=q[ell],
                       velocities=vel[ell], angular_velocities=w[ell])
    if not ell.all():     # spheres filling the ellipsoids' cells along the smallest axis
        sim.add_spheres(pos[~ell], axes[2] * 0.999, m, velocities=vel[~ell],
                        angular_velocities=w[~ell])
    return sim


def measure(kind, n_side, steps, warm=True):
    sim = lattice(kind, n_side)
    sim.interactions["ellpair"].warm = warm
    sim.run(20)
    sim.interactions["ellpair"].stats[:] = 0.0
    sim.timers["contact"] = 0.0
    counts = []
    t = time.perf_counter()
    for _ in range(steps):
        sim.step()
        counts.append(sim.n_contacts)
    wall = time.perf_counter() - t
    per = sim.timers["contact"] / sum(counts) * 1e9
    return per, np.mean(counts), wall, sim.shape_stats()


def flowing(n, steps, repeats=3):
    """The hopper of the demo mid-discharge, spheres and spheroids built side by side and
    measured in alternating windows (the machine's load hits both alike); returns
    {label: {"warm"/"cold": (ns, contacts, iterations mean, max, candidates per contact)}}."""
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "examples", "ellipsoids"))
    import hopper

    def window(sim, warm):
        sim.interactions["ellpair"].warm = warm
        sim.interactions["ellpair"].stats[:] = 0.0
        sim.timers["contact"] = 0.0
        count = cands = 0
        for _ in range(steps):
            sim.step()
            count += sim.n_contacts
            cands += sum(len(sim.interactions[k].batch) for k in ("pair", "ellpair"))
        st = sim.shape_stats()
        return (sim.timers["contact"] / count * 1e9, count / steps, st["iterations_mean"],
                st["iterations_max"], cands / count)

    sims = {"spheres": hopper.flowing(1.0, n), "spheroids 2:1": hopper.flowing(2.0, n)}
    plan = [("spheres", "warm"), ("spheroids 2:1", "warm"), ("spheroids 2:1", "cold")]
    out = {label: {"warm": None, "cold": None} for label in sims}
    for _ in range(repeats):        # alternating windows, the fastest of each kept
        for label, mode in plan:
            r = window(sims[label], mode == "warm")
            if out[label][mode] is None or r[0] < out[label][mode][0]:
                out[label][mode] = r
    return out


if __name__ == "__main__" and "--flow" in sys.argv:
    args = [a for a in sys.argv[1:] if a != "--flow"]
    n = int(args[0]) if args else 1000
    steps = int(args[1]) if len(args) > 1 else 200
    res = flowing(n, steps)
    for label, r in res.items():
        for mode in ("warm", "cold"):
            if r[mode] is None:
                continue
            per, nc, it, itmax, cand = r[mode]
            print("flowing hopper, %-13s %s: %6.0f ns per contact and step (contact phase), "
                  "%5.0f contacts (pairs and planes), %.2f pair candidates per contact; "
                  "iterations mean %.2f max %d" % (label, mode, per, nc, cand, it, itmax))
    print("spheroid / sphere contact in the flowing hopper: %.1f"
          % (res["spheroids 2:1"]["warm"][0] / res["spheres"]["warm"][0]))
elif __name__ == "__main__":
    n_side = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    res = {}
    for kind in ("sphere", "ellipsoid", "mixed"):
        per, nc, wall, stats = measure(kind, n_side, steps)
        res[kind] = per
        print("%-9s %6.0f contacts: %6.0f ns per contact and step (contact phase), step %.2f ms;"
              " iterations mean %.2f max %d" % (kind, nc, per, wall / steps * 1e3,
                                                 stats["iterations_mean"],
                                                 stats["iterations_max"]))
    print("ellipsoid / sphere contact: %.1f; mixed / sphere: %.1f"
          % (res["ellipsoid"] / res["sphere"], res["mixed"] / res["sphere"]))
    per, nc, wall, stats = measure("ellipsoid", n_side, steps, warm=False)
    print("ellipsoid, cold starts: %6.0f ns per contact and step; iterations mean %.2f max %d"
          % (per, stats["iterations_mean"], stats["iterations_max"]))
