"""Drained triaxial test in a deforming periodic cell (docs/cell.md): the packing of
simple_shear.py compressed isotropically to P, then axial compression along x at a
constant strain rate while servos hold sigma_yy = sigma_zz = -P. Records the deviator
q = sigma_yy - sigma_xx (compression negative), q / P, the axial strain
eps_a = -ln(H_xx / H_xx0) and the volumetric strain eps_v = -ln(V / V0) (contraction
positive). Writes triaxial.npz, and with matplotlib triaxial.png.

    python examples/rheology/triaxial.py [--rate 0.01] [--strain 0.15] [--side 8]
"""
import argparse
import os
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simple_shear import P, packing  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=0.01)
    ap.add_argument("--strain", type=float, default=0.15)
    ap.add_argument("--side", type=int, default=8)
    ap.add_argument("--out", default="triaxial")
    args = ap.parse_args()
    sim = packing(args.side, 1, MPI.COMM_WORLD, dt=5e-4)
    sim.cell.control(stress={"yy": -P, "zz": -P}, strain_rate={"xx": -args.rate},
                     max_rate=10 * args.rate)
    h0, v0 = sim.cell.matrix[0, 0], sim.cell.volume
    every = 200
    rows = []
    while -np.log(sim.cell.matrix[0, 0] / h0) < args.strain:
        sim.run(steps=every)
        s = sim.cell.last_stress
        rows.append((-np.log(sim.cell.matrix[0, 0] / h0), -np.log(sim.cell.volume / v0),
                     (s[1, 1] - s[0, 0]) / P, -s[1, 1] / P, -s[2, 2] / P))
    rows = np.array(rows)
    if sim.rank != 0:
        return
    np.savez(args.out + ".npz", eps_a=rows[:, 0], eps_v=rows[:, 1], q=rows[:, 2],
             lateral_yy=rows[:, 3], lateral_zz=rows[:, 4])
    peak = int(np.argmax(rows[:, 2]))
    print("peak q/P = %.3f at eps_a = %.3f; at the end q/P = %.3f, eps_v = %.4f; lateral "
          "stress %.3f, %.3f P" % (rows[peak, 2], rows[peak, 0], rows[-1, 2], rows[-1, 1],
                                   rows[-1, 3], rows[-1, 4]))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.6))
    a1.plot(rows[:, 0], rows[:, 2])
    a1.set_xlabel("axial strain")
    a1.set_ylabel("q / P")
    a2.plot(rows[:, 0], rows[:, 1])
    a2.set_xlabel("axial strain")
    a2.set_ylabel("volumetric strain (contraction > 0)")
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=120)


if __name__ == "__main__":
    main()
