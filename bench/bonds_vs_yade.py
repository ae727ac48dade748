"""Cost of parallel bonds: (a) per bond against an unbonded contact in the same scene,
(b) pdem against Yade's JCFpm on the same bonded specimen, one core each, in one
invocation.

    python bench/bonds_vs_yade.py [--quick] [--steps 1000] [--repeat 3] [--skip-yade]

The specimen is the rock demo's (examples/rock/rock.py: ~2,900 spheres packed in an
18 x 18 x 36 mm prism, bonded where the gap is below 0.05 r_min, ~5.5 bonds per
particle), without platens or gravity, every sphere given a random velocity of
0.05 m/s (seeded) so that bonds stretch without breaking. pdem scenes, same
positions, velocities and dt:

  unbonded   the packing as it is (contacts: the touching pairs),
  bonded     the same + the bonds,
  touching   unbonded, radii grown by half the bond gap, so that every bonded pair is a
             contact (soft contacts: the cost does not depend on the stiffness).

Marginal cost per interaction-step: (t_bonded - t_unbonded) / n_bonds and
(t_touching - t_unbonded) / (n_contacts_touching - n_contacts_unbonded). Yade 2023.02
(Debian `yade`) runs the bonded specimen with JCFpm (`yade -j1 -n -x
bench/yade_bonds.py`): the same positions, velocities, dt and steps. Wall times on a
shared machine are noisy: best of --repeat runs; CPU time (process_time) is the
main measure, wall time printed too.
"""
import argparse
import importlib.util
import json
import math
import os
import shutil
import subprocess
import time

import numpy as np
from mpi4py import MPI

import pdem

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out")
spec = importlib.util.spec_from_file_location(
    "rock_example", os.path.join(HERE, "..", "examples", "rock", "rock.py"))
rock = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rock)


def scene(x, r, v, dt, bonded, grow=0.0, soft=False):
    lo, hi = (x - r[:, None]).min(axis=0), (x + r[:, None]).max(axis=0)
    pad = 0.5 * (hi - lo)
    sim = pdem.Simulation(pdem.Domain(lo - pad, hi + pad), dt=dt, comm=MPI.COMM_SELF,
                          threads=1, gravity=(0, 0, 0))
    kn = 4.0 * r.mean() * rock.E_C * (1e-6 if soft else 1.0)
    sim.material("rock", rock.RHO, kn=kn, kt=kn / rock.K_RATIO, friction=rock.MU)
    sim.add_spheres(x, r * (1.0 + grow), "rock", velocities=v)
    nb = 0
    if bonded:
        kb = rock.E_C / (2.0 * r.mean())
        sim.bond_material("cement", kn=kb, ks=kb / rock.K_RATIO,
                          tensile_strength=rock.SIGMA_C, cohesion=rock.SIGMA_C)
        nb = sim.bond_contacts("cement", gap=rock.BOND_GAP)
    return sim, nb


def time_pdem(x, r, v, dt, steps, repeat, **kw):
    sim, nb = scene(x, r, v, dt, **kw)
    sim.run(steps=10)                                      # warm-up: lists, bonds formed
    nc = sim.n_contacts
    best = best_cpu = math.inf
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        sim.run(steps=steps)
        best = min(best, time.perf_counter() - w)
        best_cpu = min(best_cpu, time.process_time() - c)
    return dict(wall=best, cpu=best_cpu, bonds=nb, contacts=nc, broken=sim.n_broken,
                particles=len(r), steps=steps)


def time_yade(path, steps, dt, detection, repeat):
    yade = shutil.which("yade")
    if yade is None:
        print("yade not found (apt-get install -y yade): skipped")
        return None
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([yade, "-j1", "-n", "-x", os.path.join(HERE, "yade_bonds.py"), path,
                          str(steps), repr(float(dt)), repr(float(detection)), str(repeat)],
                         capture_output=True, text=True, env=env, timeout=3600)
    for line in out.stdout.splitlines():
        if line.startswith("YADE_RESULT "):
            return json.loads(line[len("YADE_RESULT "):])
    raise RuntimeError("yade failed:\n" + out.stdout[-2000:] + out.stderr[-2000:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the demo's quick specimen, 200 steps")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-yade", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    steps = 200 if args.quick else args.steps
    prism, _ = rock.sizes(args.quick)
    x, r = rock.specimen(pdem.Box((0, 0, 0), (prism[0], prism[0], prism[1])), MPI.COMM_SELF)
    rng = np.random.default_rng(3)
    v = rng.normal(size=x.shape)
    v *= 0.05 / np.linalg.norm(v, axis=1)[:, None]
    _, info = rock.build(x, r, MPI.COMM_SELF)
    dt = info["dt"]
    print("specimen: %d spheres, dt %.3g s, %d steps, best of %d" % (len(r), dt, steps,
                                                                     args.repeat))
    res = {}
    for name, kw in (("unbonded", dict(bonded=False)), ("bonded", dict(bonded=True)),
                     ("touching", dict(bonded=False, grow=rock.BOND_GAP / (2 * rock.RMIN),
                                       soft=True))):
        res[name] = t = time_pdem(x, r, v, dt, steps, args.repeat, **kw)
        t["us_step"] = 1e6 * t["wall"] / steps
        print("pdem %-9s %5d contacts %5d bonds (%d broken): %7.1f us/step (wall %7.1f), "
              "%.3g particle-steps/s (cpu)" % (name, t["contacts"], t["bonds"], t["broken"],
                                               1e6 * t["cpu"] / steps, t["us_step"],
                                               len(r) * steps / t["cpu"]))
    u, b, c = res["unbonded"], res["bonded"], res["touching"]
    for clock in ("cpu", "wall"):
        per_bond = 1e9 * (b[clock] - u[clock]) / steps / b["bonds"]
        per_contact = 1e9 * (c[clock] - u[clock]) / steps / (c["contacts"] - u["contacts"])
        print("marginal %s time per interaction-step: bond %.0f ns, contact %.0f ns: ratio "
              "%.2f" % (clock, per_bond, per_contact, per_bond / per_contact))
        res["per_bond_ns_" + clock], res["per_contact_ns_" + clock] = per_bond, per_contact
    if not args.skip_yade:
        os.makedirs(OUT, exist_ok=True)
        path = os.path.join(OUT, "rock_specimen.txt")
        np.savetxt(path, np.column_stack([x, r, v]), fmt="%.17g")
        detection = 1.0 + rock.BOND_GAP / (2.0 * r.mean())     # ~ the same bonds
        y = time_yade(path, steps, dt, detection, args.repeat)
        if y is not None:
            res["yade"] = y
            ps_y = len(r) * steps / y["cpu"]
            print("yade JCFpm %5d interactions %5d bonds (%d broken): %7.1f us/step (wall "
                  "%7.1f), %.3g particle-steps/s (cpu)" % (y["interactions"], y["bonds"],
                                                          y["broken"], 1e6 * y["cpu"] / steps,
                                                          1e6 * y["wall"] / steps, ps_y))
            for clock in ("cpu", "wall"):
                print("pdem bonded / yade (%s time): %.2f x the particle-steps per second; "
                      "whole step per bond pdem %.0f ns, yade %.0f ns"
                      % (clock, y[clock] / b[clock], 1e9 * b[clock] / steps / b["bonds"],
                         1e9 * y[clock] / steps / y["bonds"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
