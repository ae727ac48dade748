"""Cost of a polyhedron contact against a sphere contact in the engine (issue 17): the
contact phase (candidates' GJK/EPA or sphere geometry, L6Geom, law, force sums:
sim.timers["contact"]) per active contact and step, one thread, in a settling bed of
random convex rocks and in the same bed of spheres of the rocks' volume-equivalent
radii, with the GJK warm start (the row's last normal) and with cold starts; and what
the phpair candidates cost in queries: the share with the bounding spheres apart (no
query), with a GJK early exit (a separating axis: "exit at the first support" when the
warm start's direction separates at once), converged to a distance, and in contact.

    PYTHONPATH=$PWD python bench/polyhedron_engine.py [rocks] [steps] [--law minkowski]

Scene: `rocks` seeded rocks (4 shapes of 20 vertices, semi-axes 1 x 0.75 x 0.55 cm),
mu = 0.5, dropped in a lattice into a box periodic along x and y over a floor plane and
left to fall and settle for 0.4 s (a bed coming to rest); then alternating windows of `steps`
steps (rocks warm, rocks cold, spheres), 3 times, the fastest window of each kept (the
machine is shared).

--law: the pair law of the rocks: "minkowski" (the Minkowski-overlap ECC law, GJK/EPA) or
"volume" (seed 002's contact-volume ECC law, `select_law`)."""
import sys
import time

import numpy as np

import pdem
from pdem import polyhedra as P

LAWS = ("minkowski", "volume")


def select_law(sim, law):
    """Put the rock pairs and rock-floor contacts of `sim` on `law` (LAWS). "volume": the
    contact-volume ECC law with p = 2 (w = k_v V^2 / 2: faces rest, docs/polyhedra.md),
    k_v such that a face of the equivalent sphere's cross-section pi r_eq^2 has the
    stiffness kn of the Minkowski law (k_v A^2 = kn)."""
    if law == "volume":
        m = sim.materials.by_name["rock"]
        r_eq = 0.01 * (0.75 * 0.55) ** (1 / 3)
        sim.pair(m, m, contact_model="volume", volume_stiffness=m.kn / (np.pi * r_eq ** 2) ** 2,
                 volume_power=2.0)


def bed(kind, n, seed=1):
    """n rocks (or volume-equivalent spheres) dropped in a periodic box over a plane."""
    shapes = [P.rock(20, seed=(seed, k), axes=0.01 * np.array([1.0, 0.75, 0.55]))
              for k in range(4)]
    bound = max(s.bound for s in shapes)
    spacing = 2.1 * bound
    side = int(np.ceil(np.sqrt(n / 8.0)))          # about 8 layers
    L = side * spacing
    layers = int(np.ceil(n / side ** 2))
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (L, L, (layers + 2) * spacing),
                                      periodic=(True, True, False)),
                          dt=1.5e-5, gravity=(0, 0, -9.81), skin=0.2 * 0.01, threads=1)
    m = sim.material("rock", density=2600.0, kn=5e4, restitution=0.3, friction=0.5)
    sim.add_plane((0, 0, 0), (0, 0, 1), m)
    rng = np.random.default_rng(seed)
    g = (np.arange(side) + 0.5) * spacing
    x, y, z = np.meshgrid(g, g, (np.arange(layers) + 0.6) * spacing, indexing="ij")
    pos = np.column_stack([x.ravel(), y.ravel(), z.ravel()])[:n]
    vel = rng.normal(0, 0.1, (n, 3))
    k = rng.integers(0, 4, n)
    if kind == "spheres":
        r = np.array([(3 * s.volume / (4 * np.pi)) ** (1 / 3) for s in shapes])
        sim.add_spheres(pos, r[k], m, velocities=vel)
        return sim
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    for i, s in enumerate(shapes):
        sel = k == i
        sim.add_polyhedra(pos[sel], s, m, orientations=q[sel], velocities=vel[sel])
    return sim


def query_shares(sim):
    """Shares of this step's phpair candidates: (bounding spheres apart, GJK early exit,
    of which at the first support, converged distance, overlap)."""
    kind = sim.interactions["phpair"]
    b, st = kind.batch, sim.store
    m = len(b)
    if m == 0:
        return np.zeros(5)
    d = st.pos[b.i2] - st.pos[b.i1]
    d -= np.round(d / sim.domain.length) * sim.domain.length * np.asarray(sim.domain.periodic)
    apart = (d ** 2).sum(axis=1) >= (st.radius[b.i1] + st.radius[b.i2]) ** 2
    status, iters = kind.status[:m], kind.iters[:m]
    early = (status == 0) & ~apart
    return np.array([apart.sum(), early.sum(), (early & (iters == 0)).sum(),
                     (status == 1).sum(), (status == 2).sum()]) / m


def window(sim, steps, warm=True):
    """(ns per active contact and step in the contact phase, contacts per step,
    GJK+EPA iterations per phpair contact, query shares, candidates per contact)."""
    if sim.polyhedra:
        sim.interactions["phpair"].warm = warm
        sim.interactions["phpair"].stats[:] = 0.0
    sim.timers["contact"] = 0.0
    count, shares, cands = 0, np.zeros(5), 0
    for _ in range(steps):
        sim.step()
        count += sim.n_contacts
        cands += sum(len(sim.interactions[k].batch) for k in ("pair", "plane", "phpair",
                                                                "phplane"))
        if sim.polyhedra:
            shares += query_shares(sim)
    it = 0.0
    if sim.polyhedra:
        s = sim.interactions["phpair"].stats
        it = s[1] / max(s[0], 1)
    return sim.timers["contact"] / count * 1e9, count / steps, it, shares / steps, cands / count


def main(n=500, steps=100, law="minkowski"):
    sims = {}
    for kind in ("rocks", "spheres"):
        sims[kind] = bed(kind, n)
        if kind == "rocks":
            select_law(sims[kind], law)
        sims[kind].run(int(0.4 / sims[kind].dt))
    plan = [("rocks", True), ("rocks", False), ("spheres", True)]
    best = {}
    for _ in range(3):
        for kind, warm in plan:
            r = window(sims[kind], steps, warm)
            if (kind, warm) not in best or r[0] < best[kind, warm][0]:
                best[kind, warm] = r
    print("%d bodies, %d-step windows, fastest of 3, law %s" % (n, steps, law))
    for (kind, warm), (ns, nc, it, sh, cand) in best.items():
        text = ("%-7s %s: %7.0f ns per active contact and step (contact phase), %6.0f contacts, "
                "%.1f candidates per contact" % (kind, "warm" if warm else "cold", ns, nc, cand))
        if kind == "rocks":
            text += (", GJK+EPA %.2f iterations per contact; phpair candidates: %.0f %% bounding "
                     "spheres apart, %.0f %% GJK early exit (%.0f %% at the first support), "
                     "%.0f %% distance, %.0f %% in contact" % (it, *(100 * sh)))
        print(text)
    print("rock / sphere contact (warm): %.1f; cold / warm: %.2f"
          % (best["rocks", True][0] / best["spheres", True][0],
             best["rocks", False][0] / best["rocks", True][0]))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--law")]
    law = "minkowski"
    for i, a in enumerate(sys.argv):
        if a.startswith("--law"):
            law = a.split("=", 1)[1] if "=" in a else sys.argv[i + 1]
            if not a.count("="):
                args.remove(law)
    if law not in LAWS:
        raise SystemExit("--law must be one of %s, got %r" % (LAWS, law))
    main(int(args[0]) if args else 500, int(args[1]) if len(args) > 1 else 100, law)
