"""The ellipsoid demo (issue 16, section 5): the packing fraction of poured spheroids
against aspect ratio (packing.py) and the wedge-hopper discharge of spheroids against
spheres (hopper.py). Writes docs/ellipsoid_packing.png, docs/ellipsoid_hopper.png and
docs/ellipsoid_discharge.png (--quick: into --out), and text summaries in --out.

    PYTHONPATH=$PWD python examples/ellipsoids/demo.py [--quick] [--out results/ellipsoids]

Full: 9 aspect ratios x 500 spheroids and 2 x 2000 grains in the hopper, a few minutes
on one core; --quick: 2 aspect ratios (1, 1.5) x 500 and 2 x 600 grains (about a minute).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hopper  # noqa: E402
import packing  # noqa: E402

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="results/ellipsoids")
    args = ap.parse_args()
    quick = ["--quick"] if args.quick else []
    packing.main(quick + ["--out", args.out])
    hopper.main(quick + ["--out", args.out])
