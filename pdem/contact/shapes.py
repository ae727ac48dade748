"""Triangle meshes of common wall shapes, for scenes and tests: a flat rectangle, an
open or closed box, a conical frustum (hopper). Vertex coordinates come from one
per-axis table, so points shared by faces are bitwise equal and merge into one mesh
vertex; facets are ordered so that normals agree across shared edges (seed 004).
"""
import numpy as np

from .mesh import Mesh


def _face(coords, fixed_axis, fixed_value, flip):
    """Triangles of the grid of one box face; coords: three per-axis coordinate tables.
    Normal along +fixed_axis, or -fixed_axis when flip."""
    a, b = [ax for ax in range(3) if ax != fixed_axis]
    if (a, b, fixed_axis) in ((0, 2, 1),):         # right-handed (a, b, normal) order
        a, b = b, a
    if flip:
        a, b = b, a
    ca, cb = coords[a], coords[b]
    verts, tris = [], []
    for i in range(len(ca)):
        for j in range(len(cb)):
            p = [0.0, 0.0, 0.0]
            p[a], p[b], p[fixed_axis] = ca[i], cb[j], fixed_value
            verts.append(p)
    m = len(cb)
    for i in range(len(ca) - 1):
        for j in range(len(cb) - 1):
            v00, v10, v01, v11 = i * m + j, (i + 1) * m + j, i * m + j + 1, (i + 1) * m + j + 1
            tris += [(v00, v10, v11), (v00, v11, v01)]
    return np.array(verts), np.array(tris)


def _join(parts, name):
    verts, tris, off = [], [], 0
    for v, t in parts:
        verts.append(v)
        tris.append(t + off)
        off += len(v)
    return Mesh(np.concatenate(verts), np.concatenate(tris), name=name)


def rectangle(lo, hi, z=0.0, n=1, normal_up=True):
    """Flat rectangle [lo[0], hi[0]] x [lo[1], hi[1]] at height z, n x n squares of two
    triangles each; normal +z (or -z)."""
    coords = [np.linspace(lo[0], hi[0], n + 1), np.linspace(lo[1], hi[1], n + 1), None]
    return _join([_face(coords, 2, float(z), not normal_up)], "rectangle")


def box(lo, hi, n=1, open_top=True):
    """Box lo..hi with inward normals (particles inside), each face n x n squares of two
    triangles; the top face (z = hi[2]) left out when open_top."""
    coords = [np.linspace(lo[ax], hi[ax], n + 1) for ax in range(3)]
    parts = []
    for ax in range(3):
        parts.append(_face(coords, ax, float(coords[ax][0]), False))     # normal +ax at lo
        if not (open_top and ax == 2):
            parts.append(_face(coords, ax, float(coords[ax][-1]), True))  # normal -ax at hi
    return _join(parts, "box")


def frustum(z0, r0, z1, r1, n_around=32, n_along=1, inward=True):
    """Surface of revolution about the z axis between radius r0 at z0 and r1 at z1
    (a conical hopper for r0 < r1, a cylinder for r0 = r1), open at both ends; normals
    point to the axis when inward."""
    t = 2.0 * np.pi * np.arange(n_around) / n_around
    c, s = np.cos(t), np.sin(t)
    verts = []
    for k in range(n_along + 1):
        f = k / n_along
        r, z = r0 + (r1 - r0) * f, z0 + (z1 - z0) * f
        verts += [(r * c[i], r * s[i], z) for i in range(n_around)]
    tris = []
    for k in range(n_along):
        for i in range(n_around):
            a, b = k * n_around + i, k * n_around + (i + 1) % n_around
            ta, tb = a + n_around, b + n_around
            tri = [(a, b, tb), (a, tb, ta)]
            tris += [t[::-1] for t in tri] if inward else tri
    return Mesh(np.array(verts), np.array(tris), name="frustum")
