"""Yade side of bench/bonds_vs_yade.py (run as `yade -j1 -n -x bench/yade_bonds.py
SPECIMEN STEPS DT DETECTION REPEAT`): the same bonded specimen with JCFpm (Yade's
cohesive-frictional particle model: bonds made at the first step between spheres
within DETECTION x (r1 + r2), as in Yade's JCFpm examples), the same initial
velocities and time step, no damping; prints one JSON line."""
import json
import math
import sys
import time

import numpy as np
from yade import O
from yade.utils import sphere

path, steps, dt, detection, repeat = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), \
    float(sys.argv[4]), int(sys.argv[5])
data = np.loadtxt(path)                        # x y z r vx vy vz
mat = O.materials.append(JCFpmMat(type=1, young=60e9, poisson=0.4, density=2630.0,
                                  frictionAngle=math.atan(0.5), tensileStrength=175e6,
                                  cohesion=175e6))
for x, y, z, r, vx, vy, vz in data:
    b = sphere((x, y, z), r, material=mat)
    b.state.vel = (vx, vy, vz)
    O.bodies.append(b)
aabb = Bo1_Sphere_Aabb(aabbEnlargeFactor=detection)
geom = Ig2_Sphere_Sphere_ScGeom(interactionDetectionFactor=detection)
O.engines = [ForceResetter(), InsertionSortCollider([aabb]),
             InteractionLoop([geom], [Ip2_JCFpmMat_JCFpmMat_JCFpmPhys(cohesiveTresholdIteration=1)],
                             [Law2_ScGeom_JCFpmPhys_JointedCohesiveFrictionalPM()]),
             NewtonIntegrator(damping=0.0)]
O.dt = dt
O.step()                                       # bonds form here
aabb.aabbEnlargeFactor = geom.interactionDetectionFactor = -1.0   # back to contact
O.run(10, True)                                # warm-up
bonds = sum(1 for i in O.interactions if i.isReal and i.phys.isCohesive)
real = sum(1 for i in O.interactions if i.isReal)
best = best_cpu = math.inf
for _ in range(repeat):
    w, c = time.perf_counter(), time.process_time()
    O.run(steps, True)
    best = min(best, time.perf_counter() - w)
    best_cpu = min(best_cpu, time.process_time() - c)
broken = bonds - sum(1 for i in O.interactions if i.isReal and i.phys.isCohesive)
print("YADE_RESULT " + json.dumps({"wall": best, "cpu": best_cpu, "bonds": bonds,
                                   "interactions": real, "broken": broken,
                                   "particles": len(data), "steps": steps}), flush=True)
