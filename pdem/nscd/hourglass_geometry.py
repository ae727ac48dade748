r"""Hourglass geometry (seed 003, "An hourglass": the walls are boundary segments read
from "hourglass.msh"), built with Gmsh's Python API from a few parameters, and the
geometric helpers the hourglass run needs on any set of wall segments.

The outline (x across, y up, the bottom at y = 0, symmetric about x = 0):

        +--------- bulb_width ---------+   y = height          (closed top)
        |                              |
        |          upper bulb          |
        |                              |   straight walls
         \                            /    funnel, walls at funnel_angle
           \                        /      from the horizontal
              |--neck_width--|             neck (straight, neck_length long)
           /                        \
         /                            \
        |          lower bulb          |
        |                              |
        +------------------------------+   y = 0               (closed bottom)

build_hourglass_msh writes the outline's boundary lines, split by Gmsh into line
elements about `mesh_size` long, to an ASCII Gmsh 4.1 file; read_msh_segments
(pdem/nscd/msh_segments.py) turns them into segments. hourglass_outline gives the
same polygon without Gmsh.

neck_of_segments and inside_polygon work on segments of any closed 2D outline (a
user's own .msh), so the run script needs no parameter besides the file.
"""
import math
import os

import numpy as np

from .. import validate
from ..errors import InputError


def hourglass_outline(bulb_width, neck_width, height, funnel_angle=60.0, neck_length=None):
    """(m, 2) vertices of the hourglass outline, counter-clockwise from the bottom
    left corner. funnel_angle: degrees between a funnel wall and the horizontal
    (0 < angle < 90); neck_length: length of the straight neck (default
    neck_width / 4; 0 gives a sharp neck)."""
    W = validate.positive("hourglass: bulb_width", bulb_width)
    w = validate.positive("hourglass: neck_width", neck_width)
    H = validate.positive("hourglass: height", height)
    a = float(funnel_angle)
    if not 0.0 < a < 90.0:
        raise InputError("hourglass: funnel_angle must be in (0, 90) degrees, got %r"
                         % (funnel_angle,))
    L = 0.25 * w if neck_length is None else float(neck_length)
    if not (math.isfinite(L) and L >= 0.0):
        raise InputError("hourglass: neck_length must be >= 0, got %r" % (neck_length,))
    if not w < W:
        raise InputError("hourglass: neck_width (%g) must be smaller than bulb_width (%g)"
                         % (w, W))
    hf = 0.5 * (W - w) * math.tan(math.radians(a))
    straight = 0.5 * (H - L) - hf
    if straight <= 1e-9 * H:
        raise InputError("hourglass: height %g is too small for two funnels of height %g "
                         "(bulb_width %g, neck_width %g, funnel_angle %g deg) and a neck of "
                         "length %g: need height > %g" % (H, hf, W, w, a, L, 2 * hf + L))
    lo, hi = 0.5 * (H - L), 0.5 * (H + L)
    right = [(0.5 * W, 0.0), (0.5 * W, lo - hf), (0.5 * w, lo)]
    if L > 0.0:
        right.append((0.5 * w, hi))
    right += [(0.5 * W, hi + hf), (0.5 * W, H)]
    left = [(-x, y) for x, y in reversed(right)]
    return np.array(right + left, dtype=np.float64)


def build_hourglass_msh(path, bulb_width, neck_width, height, funnel_angle=60.0,
                        neck_length=None, mesh_size=None, verbose=False):
    """Write the hourglass outline (see hourglass_outline) as a Gmsh 4.1 ASCII .msh at
    `path`, meshed in 1D: every wall is split into line elements at most about
    `mesh_size` long (default neck_width / 2: a straight wall is a few segments, the
    neck and the funnels are resolved). The lines form the physical group "walls",
    the enclosed surface the group "inside". Returns the outline vertices."""
    try:
        import gmsh
    except ImportError as err:
        raise InputError("hourglass: the gmsh Python package is needed to build the "
                         "geometry (pip install gmsh; on Debian it also needs libglu1-mesa "
                         "libgl1 libxcursor1 libxinerama1 libxft2): %s" % (err,))
    outline = hourglass_outline(bulb_width, neck_width, height, funnel_angle, neck_length)
    lc = 0.5 * float(neck_width) if mesh_size is None else validate.positive("hourglass: mesh_size", mesh_size)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError("hourglass: folder %r of the output file does not exist" % (folder,))
    own = not gmsh.isInitialized()
    if own:
        gmsh.initialize(readConfigFiles=False, interruptible=False)
    try:
        gmsh.option.setNumber("General.Terminal", 1 if verbose else 0)
        gmsh.model.add("hourglass")
        pts = [gmsh.model.geo.addPoint(x, y, 0.0, lc) for x, y in outline]
        lines = [gmsh.model.geo.addLine(pts[k], pts[(k + 1) % len(pts)])
                 for k in range(len(pts))]
        loop = gmsh.model.geo.addCurveLoop(lines)
        surface = gmsh.model.geo.addPlaneSurface([loop])
        gmsh.model.geo.synchronize()
        gmsh.model.setPhysicalName(1, gmsh.model.addPhysicalGroup(1, lines), "walls")
        gmsh.model.setPhysicalName(2, gmsh.model.addPhysicalGroup(2, [surface]), "inside")
        gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", 0)
        gmsh.option.setNumber("Mesh.MeshSizeExtendFromBoundary", 1)
        gmsh.model.mesh.generate(1)
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.option.setNumber("Mesh.Binary", 0)
        gmsh.write(path)
        gmsh.model.remove()
    finally:
        if own:
            gmsh.finalize()
    return outline


# ------------------------------------------------------------- geometry of segments
def _crossings(x0, x1, y):
    """x of the points where the horizontal line at height y crosses the segments
    (half-open rule on the end points, so a vertex shared by two segments counts once
    when the outline passes through it, twice when it turns back)."""
    ya, yb = x0[:, 1], x1[:, 1]
    hit = (ya <= y) != (yb <= y)
    t = (y - ya[hit]) / (yb[hit] - ya[hit])
    return np.sort(x0[hit, 0] + t * (x1[hit, 0] - x0[hit, 0]))


def inside_polygon(points, x0, x1):
    """Boolean mask: which points are inside the closed outline made of the segments
    (even-odd rule, segments in any order and orientation)."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    px, py = points[:, :1], points[:, 1:]
    ya, yb = x0[:, 1][None, :], x1[:, 1][None, :]
    hit = (ya <= py) != (yb <= py)
    with np.errstate(divide="ignore", invalid="ignore"):
        xc = x0[:, 0][None, :] + (py - ya) / (yb - ya) * (x1[:, 0] - x0[:, 0])[None, :]
    return (np.sum(hit & (xc > px), axis=1) % 2) == 1


def distance_to_segments(points, x0, x1):
    """(n,) distance of each point to the nearest of the segments (x0[k], x1[k])."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    t = x1 - x0
    tt = np.einsum("ij,ij->i", t, t)
    best = np.full(len(points), np.inf)
    for start in range(0, len(points), 256):        # blocks keep memory small
        p = points[start:start + 256, None, :]
        s = np.clip(np.einsum("pkj,kj->pk", p - x0[None], t) / tt[None], 0.0, 1.0)
        d = p - (x0[None] + s[..., None] * t[None])
        best[start:start + 256] = np.sqrt(np.min(np.einsum("pkj,pkj->pk", d, d), axis=1))
    return best


def neck_of_segments(x0, x1, samples=2001):
    """(y_neck, x_left, x_right) of the narrowest horizontal passage of a closed
    outline that is crossed twice by horizontal lines (an hourglass). The width is
    sampled at `samples` heights; where the narrowest width holds over an interval
    (a straight neck) its middle is taken."""
    x0 = np.asarray(x0, np.float64)
    x1 = np.asarray(x1, np.float64)
    ylo = min(x0[:, 1].min(), x1[:, 1].min())
    yhi = max(x0[:, 1].max(), x1[:, 1].max())
    ys = np.linspace(ylo, yhi, samples)[1:-1]
    widths = np.full(len(ys), np.inf)
    for k, y in enumerate(ys):
        xs = _crossings(x0, x1, y)
        if len(xs) == 2:
            widths[k] = xs[1] - xs[0]
    if not np.any(np.isfinite(widths)):
        raise InputError("hourglass: the wall segments do not enclose a passage crossed "
                         "twice by horizontal lines (is the outline a closed hourglass?)")
    wmin = widths.min()
    at = np.nonzero(widths <= wmin * (1.0 + 1e-9) + 1e-12 * (yhi - ylo))[0]
    y = 0.5 * (ys[at[0]] + ys[at[-1]])
    xs = _crossings(x0, x1, y)
    if len(xs) != 2:
        y = ys[at[0]]
        xs = _crossings(x0, x1, y)
    return float(y), float(xs[0]), float(xs[1])


def fill_above(x0, x1, y_floor, radius, polydispersity=0.2, count=None, fill_height=None,
               gap=0.05, seed=0):
    """Disks filling the inside of the outline (x0, x1) above the height y_floor,
    lowest first: (positions (n, 2), radii (n,)), deterministic for a given seed.

    Radii are uniform in radius * [1 - polydispersity, 1 + polydispersity]. Each disk
    sits in its own cell of a triangular lattice of spacing 2 r_max (1 + gap), shifted
    at random inside the cell by no more than the slack, so no two disks overlap and
    none touches a wall. count: take the `count` lowest cells; fill_height: take the
    cells whose centre is less than fill_height above y_floor (one of the two is
    given). InputError when the outline has fewer cells than asked."""
    r = validate.positive("hourglass: radius", radius)
    pd = float(polydispersity)
    if not 0.0 <= pd < 1.0:
        raise InputError("fill: polydispersity must be in [0, 1), got %r" % (polydispersity,))
    if (count is None) == (fill_height is None):
        raise InputError("fill: give either count or fill_height")
    x0 = np.asarray(x0, np.float64)
    x1 = np.asarray(x1, np.float64)
    rmax = r * (1.0 + pd)
    s = 2.0 * rmax * (1.0 + gap)
    lo = np.minimum(x0, x1).min(axis=0)
    hi = np.maximum(x0, x1).max(axis=0)
    dy = s * math.sqrt(3.0) / 2.0
    rows = np.arange(float(y_floor) + 0.5 * s, hi[1], dy)
    if fill_height is not None:
        rows = rows[rows <= float(y_floor) + validate.positive("hourglass: fill_height", fill_height)]
    cols = np.arange(lo[0], hi[0] + s, s)
    sites = [np.c_[cols + (0.5 * s if k % 2 else 0.0), np.full(len(cols), y)]
             for k, y in enumerate(rows)]
    sites = np.concatenate(sites) if sites else np.empty((0, 2))
    ok = inside_polygon(sites, x0, x1)
    sites = sites[ok]
    sites = sites[distance_to_segments(sites, x0, x1) >= 0.5 * s]
    order = np.lexsort((sites[:, 0], sites[:, 1]))
    sites = sites[order]
    if count is not None:
        count = int(count)
        if count < 1:
            raise InputError("fill: count must be a positive integer, got %r" % (count,))
        if count > len(sites):
            raise InputError("fill: only %d disks of radius up to %g fit above y = %g, %d "
                             "asked" % (len(sites), rmax, y_floor, count))
        sites = sites[:count]
    elif not len(sites):
        raise InputError("fill: no disk of radius %g fits below fill height %g"
                         % (rmax, fill_height))
    rng = np.random.default_rng(seed)
    radii = r * (1.0 + pd * rng.uniform(-1.0, 1.0, len(sites)))
    slack = 0.5 * s - radii
    angle = rng.uniform(0.0, 2.0 * math.pi, len(sites))
    dist = slack * np.sqrt(rng.uniform(0.0, 1.0, len(sites))) * 0.999
    pos = sites + dist[:, None] * np.c_[np.cos(angle), np.sin(angle)]
    return pos, radii
