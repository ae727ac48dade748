#!/usr/bin/env python
"""Faceted (mesh) walls against LIGGGHTS, one core each: the settled bed of
bed_vs_lammps.py (same spheres, law, dt, skin, cached bed) in its box, with the box
either as five planes or as an STL triangle mesh (floor and four sides, n x n squares
of two triangles per side; the same file for both codes). LIGGGHTS 3.8 (Debian
`liggghts`): `pair_style gran model hooke/stiffness tangential history` (F_n = kn d -
m* gamma_n v_n, the LAMMPS gran/hooke/history convention), walls by `fix wall/gran`
with `primitive` planes or a `mesh/surface`. pdem: planes or `add_mesh_wall` (reduced
mode). Each configuration runs `--steps` steps after a 1-step warm-up, alternating
codes, `--repeat` times; the fastest counts. Printed: particle-steps/s/core, the
pdem/LIGGGHTS ratio with planes and with the mesh, and what the mesh costs each code
over its planes.

    apt-get install -y liggghts
    .venv/bin/python bench/mesh_walls_vs_liggghts.py [--particles 32000] [--steps 1000]
"""
import argparse
import os
import re
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from bed_vs_lammps import (DENSITY, DT, GAMMA_N, GAMMA_T, GRAVITY, HERE, KN, KT, MU, RADIUS,  # noqa: E402
                           SKIN, settle, write_data)
import pdem  # noqa: E402
from pdem.contact import shapes  # noqa: E402
from pdem.contact.mesh_files import write_stl  # noqa: E402

LIGGGHTS_INPUT = """atom_style granular
atom_modify map array
boundary f f f
newton off
communicate single vel yes
units si
read_data {data}
neighbor {skin} bin
neigh_modify delay 0 every 1 check yes
fix m1 all property/global kn peratomtypepair 1 {kn}
fix m2 all property/global kt peratomtypepair 1 {kt}
fix m3 all property/global gamman peratomtypepair 1 {gn}
fix m4 all property/global gammat peratomtypepair 1 {gt}
fix m5 all property/global coefficientFriction peratomtypepair 1 {mu}
pair_style gran model hooke/stiffness tangential history tangential_damping on
pair_coeff * *
timestep {dt}
fix gravi all gravity {g} vector 0.0 0.0 -1.0
{walls}
fix integr all nve/sphere
run 1
run {steps}
"""
PLANES = "\n".join(
    "fix w{k} all wall/gran model hooke/stiffness tangential history "
    "primitive type 1 {axis}plane {at} tangential_damping on".format(k=k, axis=axis, at=at)
    for k, (axis, at) in enumerate([("z", "0.0"), ("x", "0.0"), ("x", "{L}"), ("y", "0.0"),
                                    ("y", "{L}")]))
MESH = ("fix cad all mesh/surface file {stl} type 1\n"
        "fix walls all wall/gran model hooke/stiffness tangential history "
        "mesh n_meshes 1 meshes cad tangential_damping on")


def run_pdem(bed, steps, mesh):
    L, H = float(bed["L"]), float(bed["H"])
    dom = pdem.Domain((-0.01 * L, -0.01 * L, -0.01 * L), (1.01 * L, 1.01 * L, H))
    sim = pdem.Simulation(dom, DT, gravity=(0, 0, -GRAVITY), skin=SKIN, threads=1)
    m = sim.material("grain", density=DENSITY, law="hooke", kn=KN, kt=KT, gamma_n=GAMMA_N,
                     gamma_t=GAMMA_T, friction=MU)
    if mesh is None:
        for point, normal in (((0, 0, 0), (0, 0, 1)), ((0, 0, 0), (1, 0, 0)), ((L, 0, 0), (-1, 0, 0)),
                              ((0, 0, 0), (0, 1, 0)), ((0, L, 0), (0, -1, 0))):
            sim.add_plane(point, normal, m)
    else:
        sim.add_mesh_wall(mesh, m)
    sim.add_spheres(bed["pos"], RADIUS, m, velocities=bed["vel"], angular_velocities=bed["angvel"])
    sim.step()
    t0, c0 = time.perf_counter(), time.process_time()
    sim.run(steps=steps)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    c = sim.contacts()
    n = len(bed["pos"])
    return {"wall_s": wall, "cpu_s": cpu, "rate": n * steps / wall,
            "wall_contacts": int(np.count_nonzero(c["kind"] != "pair"))}


def run_liggghts(exe, data, bed, steps, walls, stl, outdir, tag):
    L = float(bed["L"])
    inp, log = os.path.join(outdir, "in_%s.liggghts" % tag), os.path.join(outdir, "log_%s.liggghts" % tag)
    with open(inp, "w") as fh:
        fh.write(LIGGGHTS_INPUT.format(data=data, skin=SKIN, kn=KN, kt=KT, gn=GAMMA_N, gt=GAMMA_T,
                                       mu=MU, dt=DT, g=GRAVITY, steps=steps,
                                       walls=walls.format(L=repr(L), stl=stl)))
    screen = os.path.join(outdir, "screen_%s.liggghts" % tag)   # "-screen none" crashes 3.8 with meshes
    res = subprocess.run([exe, "-in", inp, "-log", log, "-screen", screen], capture_output=True,
                         text=True, errors="replace", env=dict(os.environ, OMP_NUM_THREADS="1"))
    text = open(log, errors="replace").read() if os.path.exists(log) else res.stdout + res.stderr
    loops = re.findall(r"Loop time of (\S+) on (\d+) procs for (\d+) steps with (\d+) atoms", text)
    if res.returncode != 0 or len(loops) < 2:
        sys.exit("LIGGGHTS failed (exit %d):\n%s" % (res.returncode, "\n".join(text.splitlines()[-25:])))
    loop, _procs, nsteps, natoms = loops[-1]
    return {"wall_s": float(loop), "rate": int(natoms) * int(nsteps) / float(loop),
            "particles": int(natoms)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--particles", type=int, default=32000)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--squares", type=int, default=16, help="squares per box side (default 16)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--liggghts", default="liggghts")
    ap.add_argument("--outdir", default=os.path.join(HERE, "out"))
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    bed, _ = settle(a.particles, 1, 1, 40000, a.outdir)
    n, L, H = len(bed["pos"]), float(bed["L"]), float(bed["H"])
    data = os.path.join(a.outdir, "bed_n%d_margin.data" % n)
    write_data(data, bed, margin=0.01 * L)
    mesh = shapes.box((0.0, 0.0, 0.0), (L, L, H), a.squares)
    stl = os.path.join(a.outdir, "box_%d.stl" % a.squares)
    write_stl(stl, mesh.vertices, mesh.facets, binary=False)
    print("bed: %d spheres in a %.4g x %.4g m box; mesh: %d facets (%d x %d squares per side); "
          "%d steps, fastest of %d" % (n, L, L, mesh.n_facets, a.squares, a.squares, a.steps,
                                        a.repeat))
    best = {}
    for rep in range(a.repeat):
        for name, pd_mesh, walls in (("planes", None, PLANES), ("mesh", mesh, MESH)):
            r = run_pdem(bed, a.steps, pd_mesh)
            q = run_liggghts(a.liggghts, data, bed, a.steps, walls, stl, a.outdir, name)
            print("repeat %d, %-6s: pdem %.4g p-steps/s (%d wall contacts), LIGGGHTS %.4g p-steps/s,"
                  " ratio %.3f" % (rep + 1, name, r["rate"], r["wall_contacts"], q["rate"],
                                   r["rate"] / q["rate"]), flush=True)
            for code, res in (("pdem", r), ("liggghts", q)):
                key = (code, name)
                best[key] = max(best.get(key, 0.0), res["rate"])
    print("\n                particle-steps/s/core: pdem   LIGGGHTS   pdem/LIGGGHTS")
    for name in ("planes", "mesh"):
        print("  %-6s                        %.4g  %.4g   %.3f" % (
            name, best[("pdem", name)], best[("liggghts", name)],
            best[("pdem", name)] / best[("liggghts", name)]))
    for code in ("pdem", "liggghts"):
        print("  %s: the mesh box costs %.1f %% more time per step than the planes"
              % (code, 100 * (best[(code, "planes")] / best[(code, "mesh")] - 1)))


if __name__ == "__main__":
    main()
