"""Write the hopper of the demo as a binary STL: a conical hopper (outlet radius r0 at
z = 0, half-angle from the vertical `angle`) topped by a cylinder, normals pointing
inside (the side the grains are on). Any STL, OBJ or Gmsh file can replace it.

    python examples/hopper/make_hopper.py results/hopper/hopper.stl
"""
import argparse
import math
import os

import numpy as np

from pdem.contact import shapes
from pdem.contact.mesh import Mesh
from pdem.contact.mesh_files import write_stl


def hopper_mesh(outlet_radius=0.025, radius=0.06, angle_deg=35.0, height=0.15, n_around=48):
    """Cone from the outlet up to `radius`, then a cylinder up to `height` (metres)."""
    z_top_cone = (radius - outlet_radius) / math.tan(math.radians(angle_deg))
    if not z_top_cone < height:
        raise ValueError("the cone (%.3f m high) does not fit in height %.3f m"
                         % (z_top_cone, height))
    cone = shapes.frustum(0.0, outlet_radius, z_top_cone, radius, n_around, 3)
    tube = shapes.frustum(z_top_cone, radius, height, radius, n_around, 2)
    off = cone.n_vertices
    # the cylinder's first ring is the cone's last ring (same angles, same radius):
    # join them so the wall is one closed-sided mesh
    v = np.concatenate([cone.vertices, tube.vertices[n_around:]])
    f_tube = tube.facets + off - n_around      # ring 0 of the tube -> last ring of the cone
    return Mesh(v, np.concatenate([cone.facets, f_tube]), name="hopper")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="STL file to write")
    ap.add_argument("--outlet-radius", type=float, default=0.025)
    ap.add_argument("--radius", type=float, default=0.06)
    ap.add_argument("--angle", type=float, default=35.0, help="cone half-angle from vertical (deg)")
    ap.add_argument("--height", type=float, default=0.15)
    a = ap.parse_args()
    m = hopper_mesh(a.outlet_radius, a.radius, a.angle, a.height)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    write_stl(a.out, m.vertices, m.facets)
    print("wrote %s: %d facets, %d vertices" % (a.out, m.n_facets, m.n_vertices))


if __name__ == "__main__":
    main()
