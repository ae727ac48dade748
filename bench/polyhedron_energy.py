"""Energy of elastic, frictionless, off-centre impacts of rotating bodies with each contact
model of issue 17 (docs/polyhedra.md, "Energy"): two cubes (side 0.1), a cube and a
tetrahedron (edge 0.15), and two spheroids of comparable size (semi-axes 0.06, 0.06,
0.04: the common-normal ellipsoid law of issue 12), against the time step.

Reported per run: the relative energy error after the impact, E_after / E_before - 1,
and the largest |H(t) / H(0) - 1| during the contact, with H = the time-centred kinetic
and rotational energy (pdem.diagnostics.energy) + the contact potential: k_v V^p / p for
the volume model (V of the world meshes by pdem._kernels.contact_volume), k_n delta^2 / 2
for the others (delta the row's overlap; for the common plane this is the potential of its
normal force, whose torque is not its gradient).

    PYTHONPATH=. OMP_NUM_THREADS=1 python bench/polyhedron_energy.py [model ...]
models: minkowski volume common_plane ellipsoid (default: all).

    PYTHONPATH=. OMP_NUM_THREADS=1 python bench/polyhedron_energy.py gas [model ...] [--T s]

The long-run question ("no drift"): a dilute gas of 8 seeded rocks (16 vertices, each a
different shape) in a periodic box, elastic and frictionless, for hundreds of impacts;
the energy E(t) / E(0) - 1 is read at the instants without any contact (pure kinetic and
rotational energy: no potential to evaluate), at dt and dt / 2. Reported: impacts, the
final and largest error, and the least-squares drift per impact of the error.
"""
import sys
import time

import numpy as np
from mpi4py import MPI

import pdem
from pdem import polyhedra as P
from pdem._kernels.contact_volume import contact_volume

KN, KV = 1e4, 2.5e7            # Hooke k_n; the volume law's k_v (p = 1): similar durations
DTS = (4e-5, 2e-5, 1e-5, 5e-6)
QA, QB = np.array([0.9, 0.2, 0.3, 0.1]), np.array([0.8, -0.3, 0.1, 0.4])


def scene(dt, model, second="cube"):
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (1.0,) * 3, periodic=(True,) * 3), dt=dt,
                          gravity=(0, 0, 0), comm=MPI.COMM_SELF)
    law = {} if model == "ellipsoid" else {"contact_model": model}
    if model == "volume":
        law["volume_stiffness"] = KV
    m = sim.material("m", density=1000.0, kn=KN, friction=0.0, restitution=1.0, **law)
    qa, qb = QA / np.linalg.norm(QA), QB / np.linalg.norm(QB)
    va, vb, wa, wb = [[0.5, 0, 0]], [[-0.5, 0, 0]], [[3, -2, 5]], [[-4, 1, 2]]
    if model == "ellipsoid":
        sim.add_ellipsoids([[0.33, 0.5, 0.5]], [[0.06, 0.06, 0.04]], m, orientations=[qa],
                           velocities=va, angular_velocities=wa)
        sim.add_ellipsoids([[0.52, 0.53, 0.48]], [[0.06, 0.06, 0.04]], m, orientations=[qb],
                           velocities=vb, angular_velocities=wb)
        return sim
    sim.add_polyhedra([[0.33, 0.5, 0.5]], P.cube(0.1), m, orientations=[qa], velocities=va,
                      angular_velocities=wa)
    B = P.cube(0.1) if second == "cube" else P.tetrahedron(0.15)
    sim.add_polyhedra([[0.52, 0.53, 0.48]], B, m, orientations=[qb], velocities=vb,
                      angular_velocities=wb)
    return sim


def potential(sim, model):
    if not sim.n_contacts:
        return 0.0
    if model == "volume":
        pts, tris, owner = P.world_mesh(sim)
        a, b = (tris[owner == i] for i in (0, 1))
        return KV * contact_volume(pts, a, pts, b)["V"]
    d = sim.contacts()["overlap"]
    return float(0.5 * KN * np.sum(d * d))


def impact(dt, model, second="cube", T=0.2):
    """(E_after / E_before - 1, max |H / H0 - 1| during the contact, steps in contact)."""
    sim = scene(dt, model, second)
    e0 = sum(sim.energy().values())
    worst, steps, inside, n = 0.0, 0, 0, int(round(T / dt))
    while steps < n:
        chunk = 1 if sim.n_contacts else min(10, n - steps)
        sim.run(chunk)
        steps += chunk
        if sim.n_contacts:
            inside += 1
            h = sum(sim.energy().values()) + potential(sim, model)
            worst = max(worst, abs(h / e0 - 1))
    assert sim.n_contacts == 0
    return sum(sim.energy().values()) / e0 - 1, worst, inside


def gas(model, dt, T, n=8, seed=7):
    """(impacts, times, errors E/E0 - 1 at contact-free instants) of the rock gas."""
    rng = np.random.default_rng(seed)
    sim = pdem.Simulation(pdem.Domain((0, 0, 0), (0.35,) * 3, periodic=(True,) * 3), dt=dt,
                          gravity=(0, 0, 0), comm=MPI.COMM_SELF)
    law = {"contact_model": model}
    if model == "volume":
        law["volume_stiffness"] = 10 * KV
    m = sim.material("m", density=1000.0, kn=10 * KN, friction=0.0, restitution=1.0, **law)
    grid = (np.indices((2, 2, 2)).reshape(3, -1).T + 0.5) * 0.175
    for i in range(n):
        q = rng.normal(size=4)
        sim.add_polyhedra([grid[i]], P.rock(16, seed=(seed, i), axes=(0.06, 0.045, 0.035)), m,
                          orientations=[q / np.linalg.norm(q)],
                          velocities=[rng.normal(0, 2.0, 3)],
                          angular_velocities=[rng.normal(0, 40.0, 3)])
    e0 = sum(sim.energy().values())
    ts, errs, impacts, touching = [0.0], [0.0], 0, False
    chunk = max(1, int(round(1e-4 / dt)))     # a contact lasts ~70 chunks
    for _ in range(int(round(T / dt)) // chunk):
        sim.run(chunk)
        if sim.n_contacts and not touching:
            impacts += 1
        touching = sim.n_contacts > 0
        if not touching:
            ts.append(sim.time)
            errs.append(sum(sim.energy().values()) / e0 - 1)
    return impacts, np.array(ts), np.array(errs)


def gas_table(models, T):
    for model in models:
        for dt in (1e-5, 5e-6):
            t0 = time.time()
            impacts, ts, errs = gas(model, dt, T)
            # impacts happen at a steady rate: drift per impact from the slope in time
            slope = np.polyfit(ts, errs, 1)[0] * ts[-1] / max(impacts, 1)
            print("gas %-10s dt %.0e  %4d impacts in %.1f s  final %+.2e  max |err| %.2e  "
                  "drift per impact %+.1e  (%.0f s)" % (model, dt, impacts, T, errs[-1],
                                                          np.abs(errs).max(), slope,
                                                          time.time() - t0), flush=True)


def main(models):
    for model in models:
        for second in (("spheroid",) if model == "ellipsoid" else ("cube", "tetrahedron")):
            for dt in DTS:
                t0 = time.time()
                after, during, inside = impact(dt, model, second)
                print("%-12s %-11s dt %.1e  after %+.2e  max during %.2e  (%d steps in "
                      "contact, %.0f s)" % (model, second, dt, after, during, inside,
                                            time.time() - t0), flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["gas"]:
        T = float(args[args.index("--T") + 1]) if "--T" in args else 3.0
        gas_table([a for a in args[1:] if a in ("minkowski", "volume", "common_plane")]
                  or ["minkowski", "volume"], T)
    else:
        main(args or ["minkowski", "volume", "common_plane", "ellipsoid"])
