"""Build the hourglass outline as a Gmsh .msh (seed 003: the walls are the boundary
lines of "hourglass.msh"). All lengths in metres.

    python examples/hourglass/geometry.py -o results/hourglass.msh \
        --bulb-width 0.12 --neck-width 0.03 --height 0.7

The walls are the line elements of the file (physical group "walls"); run.py reads
them as boundary segments. Open the file in the Gmsh GUI to look at it.
"""
import argparse
import os
import sys

import numpy as np

from pdem.errors import InputError
from pdem.nscd.hourglass_geometry import build_hourglass_msh, neck_of_segments
from pdem.nscd.msh_segments import read_msh_segments

DEFAULTS = dict(bulb_width=0.12, neck_width=0.03, height=0.7, funnel_angle=45.0,
                neck_length=None, mesh_size=None)


def add_geometry_arguments(parser):
    """The geometry options (shared with run.py)."""
    g = parser.add_argument_group("hourglass geometry (metres, degrees)")
    g.add_argument("--bulb-width", type=float, default=DEFAULTS["bulb_width"],
                   help="inner width of each bulb (default %(default)s)")
    g.add_argument("--neck-width", type=float, default=DEFAULTS["neck_width"],
                   help="width of the neck (default %(default)s)")
    g.add_argument("--height", type=float, default=DEFAULTS["height"],
                   help="inner height, bottom to top (default %(default)s)")
    g.add_argument("--funnel-angle", type=float, default=DEFAULTS["funnel_angle"],
                   help="angle of the funnel walls with the horizontal (default "
                        "%(default)s)")
    g.add_argument("--neck-length", type=float, default=None,
                   help="length of the straight neck (default neck width / 4)")
    g.add_argument("--mesh-size", type=float, default=None,
                   help="largest wall segment (default neck width / 2)")
    return g


def geometry_kwargs(args):
    return dict(bulb_width=args.bulb_width, neck_width=args.neck_width, height=args.height,
                funnel_angle=args.funnel_angle, neck_length=args.neck_length,
                mesh_size=args.mesh_size)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", default="hourglass.msh",
                        help="the .msh file to write (default %(default)s)")
    add_geometry_arguments(parser)
    args = parser.parse_args(argv)
    try:
        build_hourglass_msh(args.output, **geometry_kwargs(args))
        x0, x1 = read_msh_segments(args.output)
    except InputError as err:
        parser.exit(2, "geometry.py: error: %s\n" % err)
    y, xl, xr = neck_of_segments(x0, x1)
    length = np.hypot(*(x1 - x0).T)
    print("wrote %s: %d wall segments (%.4g to %.4g m long), neck %.4g m wide at y = %.4g m"
          % (os.path.abspath(args.output), len(x0), length.min(), length.max(), xr - xl, y))
    return 0


if __name__ == "__main__":
    sys.exit(main())
