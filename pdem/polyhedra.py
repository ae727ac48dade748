"""Convex polyhedra (issue 17, docs/polyhedra.md): shapes from vertex lists (the convex
hull is taken), generators, exact mass properties, and the shape template they become.

A Polyhedron is stored in its principal frame: the origin at its centroid, the body axes
along its principal axes of inertia (moments ascending). `centroid` and `orientation`
say where that frame sits in the frame the vertices were given in: a given vertex p is
centroid + R(orientation) v_body, so the particle at position `centroid` with orientation
`orientation` has the vertices exactly where they were given.

Mass properties by the divergence theorem over the triangulated hull: each outward
triangle (a, b, c) and the origin form a tetrahedron of signed volume det[a, b, c] / 6,
whose second moment is V / 20 (sum of v v^T over its 4 vertices + s s^T, s = their sum)
(e.g. Tonon, J. Math. Stat. 1:8, 2004). scipy.spatial.ConvexHull is used at set-up only.
"""
import numpy as np

from .errors import InputError

SHAPE_CODE = 4                    # pdem.particles.SHAPES["polyhedron"]


def _quaternion(R):
    """Unit quaternion (w, x, y, z) of the proper rotation matrix R (columns = body axes
    in the given frame), w >= 0."""
    t = np.trace(R)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = np.zeros(4)
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    q = np.asarray(q, dtype=float)
    return q / np.linalg.norm(q) * (1.0 if q[0] >= 0 else -1.0)


def convex_hull(points, name, dim):
    """(points as floats, scipy's ConvexHull of them) in `dim` dimensions; one InputError
    line for bad points or points spanning no volume (3D) or area (2D)."""
    from scipy.spatial import ConvexHull, QhullError
    p = np.asarray(points, dtype=float)
    if p.ndim != 2 or p.shape[1] != dim or len(p) < dim + 1 or not np.all(np.isfinite(p)):
        raise InputError("%s must be (n >= %d, %d) finite points, got shape %s"
                         % (name, dim + 1, dim, p.shape))
    try:
        return p, ConvexHull(p)
    except QhullError:
        span = ("volume (coplanar or collinear); a convex polyhedron needs 4 points not in "
                "one plane" if dim == 3 else
                "area (collinear); a convex polygon needs 3 points not on one line")
        raise InputError("%s: the points span no %s" % (name, span)) from None


def hull(points, name="vertices"):
    """(vertices (m, 3), outward triangles (t, 3) int) of the convex hull of `points`."""
    p, h = convex_hull(points, name, 3)
    used = np.unique(h.simplices)
    remap = np.full(len(p), -1)
    remap[used] = np.arange(len(used))
    v = p[used]
    tri = remap[h.simplices]
    inside = v.mean(axis=0)
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    flip = np.einsum("ij,ij->i", np.cross(b - a, c - a), a - inside) < 0
    tri[flip] = tri[flip][:, [0, 2, 1]]
    return v, tri


def mass_properties(v, tri):
    """(volume, centroid (3,), second moment tensor about the centroid (3, 3)) of the
    solid bounded by the outward triangles `tri` of vertices `v` (unit density)."""
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    vol = np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0
    V = vol.sum()
    s = a + b + c                                  # the origin is the 4th vertex
    centroid = (vol[:, None] * s).sum(axis=0) / (4.0 * V)
    C = sum(np.einsum("n,ni,nj->ij", vol, x, x) for x in (a, b, c, s)) / 20.0
    return V, centroid, C - V * np.outer(centroid, centroid)


class Polyhedron:
    """A convex polyhedron in its principal frame. Attributes: vertices (m, 3),
    triangles (t, 3) outward, volume, moments (3,) principal moments per unit density
    (ascending), bound (largest vertex distance from the centroid), centroid and
    orientation (quaternion w, x, y, z) of the principal frame in the input frame."""

    def __init__(self, vertices, name="vertices"):
        v, tri = hull(vertices, name)
        V, c, C = mass_properties(v, tri)
        I = np.trace(C) * np.eye(3) - C                # inertia tensor per unit density
        moments, axes = np.linalg.eigh(I)
        if moments[2] - moments[0] <= 1e-12 * moments[2]:   # isotropic: keep the given axes
            moments, axes = np.full(3, moments.mean()), np.eye(3)
        if np.linalg.det(axes) < 0:
            axes[:, 2] = -axes[:, 2]
        self.vertices = (v - c) @ axes                 # coordinates along the principal axes
        self.triangles = tri
        self.volume = float(V)
        self.moments = moments
        self.bound = float(np.sqrt((self.vertices ** 2).sum(axis=1).max()))
        self.centroid = c
        self.orientation = _quaternion(axes)

    def tables(self):
        """The shape-template tables (pdem.shape_templates): vertices and triangles (the
        vertex indices as floats, for output meshes)."""
        return {"vertices": self.vertices, "triangles": self.triangles.astype(float)}

    def register(self, templates):
        """Add to a ShapeTemplates registry; returns the template index."""
        return templates.add(SHAPE_CODE, self.tables(), self.volume, self.moments, self.bound)


# ---------------------------------------------------------------- generators
def from_file(path):
    """The convex hull of the vertices of a .stl, .obj or .msh file (a convex shape
    exported from CAD; a non-convex one becomes its hull)."""
    from .contact.mesh_files import read_mesh_file
    vertices, _ = read_mesh_file(path)
    return Polyhedron(vertices, name="vertices of %r" % (str(path),))


def box(a, b, c):
    """A box of edge lengths a, b, c."""
    s = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], float)
    return Polyhedron(0.5 * s * [a, b, c])


def cube(side):
    return box(side, side, side)


PHI = (1.0 + 5.0 ** 0.5) / 2.0


def _cyclic(points):
    """The cyclic permutations (x, y, z) -> (y, z, x) -> (z, x, y) of points, all signs."""
    out = []
    for p in points:
        for sx in (-1, 1) if p[0] else (1,):
            for sy in (-1, 1) if p[1] else (1,):
                for sz in (-1, 1) if p[2] else (1,):
                    q = (sx * p[0], sy * p[1], sz * p[2])
                    out += [q, (q[1], q[2], q[0]), (q[2], q[0], q[1])]
    return np.unique(np.array(out, float), axis=0)


def regular(name, circumradius=1.0):
    """The Platonic solid `name` (tetrahedron, cube, octahedron, dodecahedron,
    icosahedron) with the given circumradius."""
    if name == "tetrahedron":
        p = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], float)
    elif name == "cube":
        p = _cyclic([(1, 1, 1)])
    elif name == "octahedron":
        p = _cyclic([(1, 0, 0)])
    elif name == "dodecahedron":
        p = np.vstack([_cyclic([(1, 1, 1)]), _cyclic([(0, 1 / PHI, PHI)])])
    elif name == "icosahedron":
        p = _cyclic([(0, 1, PHI)])
    else:
        raise InputError("regular: name must be tetrahedron, cube, octahedron, dodecahedron "
                         "or icosahedron, got %r" % (name,))
    p = p * (circumradius / np.linalg.norm(p[0]))
    return Polyhedron(p)


def tetrahedron(edge):
    """A regular tetrahedron of the given edge length."""
    return regular("tetrahedron", edge * np.sqrt(3.0 / 8.0))


def rock(n_vertices=20, seed=0, axes=(1.0, 1.0, 1.0), roughness=0.2):
    """A random rock-like convex polyhedron: the hull of n_vertices points on the
    ellipsoid of semi-axes `axes`, each pushed radially by a factor in [1 - roughness,
    1] (numpy Generator `seed`: the same shape on every rank and run)."""
    if not (int(n_vertices) == n_vertices and n_vertices >= 4):
        raise InputError("rock: n_vertices must be an integer >= 4, got %r" % (n_vertices,))
    if not (0.0 <= roughness < 1.0):
        raise InputError("rock: roughness must be in [0, 1), got %r" % (roughness,))
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(int(n_vertices), 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    d *= 1.0 - roughness * rng.random(len(d))[:, None]
    return Polyhedron(d * np.asarray(axes, float))


# ---------------------------------------------------------------- 2D polygons
POLYGON_CODE = 5                  # pdem.particles.SHAPES["polygon"]


class Polygon:
    """A convex polygon of the xy plane (2D runs, unit thickness), centred on its
    centroid (its axes as given: only the turn about z acts). Attributes: vertices2d
    (m, 2) counter-clockwise, area, moments (Ixx, Iyy, Izz) per unit density and
    thickness, bound (largest vertex distance), centroid. For the contact geometry it is
    the prism of its vertices at z = +-2 bound (tables "vertices", "triangles"): taller
    than any in-plane overlap of two bodies within their bounding circles (at most r1 +
    r2 < 2 (r1 + r2), the depth along z), so GJK/EPA of gjk.pxd always finds the
    in-plane penetration, and disks (points with a margin) and ellipses (flat
    ellipsoids) pair with it unchanged."""

    def __init__(self, vertices, name="vertices"):
        p, h = convex_hull(vertices, name, 2)
        v = p[h.vertices]                                  # counter-clockwise
        x, y = v[:, 0], v[:, 1]
        xn, yn = np.roll(x, -1), np.roll(y, -1)
        cross = x * yn - xn * y                            # shoelace
        area = cross.sum() / 2.0
        c = np.array([((x + xn) * cross).sum(), ((y + yn) * cross).sum()]) / (6.0 * area)
        v = v - c
        x, y = v[:, 0], v[:, 1]
        xn, yn = np.roll(x, -1), np.roll(y, -1)
        cross = x * yn - xn * y
        ixx = ((y * y + y * yn + yn * yn) * cross).sum() / 12.0     # int y^2 dA
        iyy = ((x * x + x * xn + xn * xn) * cross).sum() / 12.0     # int x^2 dA
        self.vertices2d = v
        self.area = float(area)
        self.moments = np.array([ixx, iyy, ixx + iyy])
        self.bound = float(np.sqrt((v ** 2).sum(axis=1).max()))
        self.centroid = c
        H = 2.0 * self.bound
        prism = np.vstack([np.column_stack([v, np.full(len(v), -H)]),
                           np.column_stack([v, np.full(len(v), H)])])
        self.vertices, self.triangles = hull(prism)

    def register(self, templates):
        return templates.add(POLYGON_CODE, {"vertices": self.vertices,
                                            "triangles": self.triangles.astype(float)},
                             self.area, self.moments, self.bound)


def regular_polygon(n, circumradius=1.0, angle=0.0):
    """The regular n-gon with the given circumradius, a vertex at `angle`."""
    t = angle + 2 * np.pi * np.arange(n) / n
    return Polygon(circumradius * np.column_stack([np.cos(t), np.sin(t)]))


def random_polygon(n_vertices=8, seed=0, axes=(1.0, 1.0), roughness=0.2):
    """A random convex polygon: the hull of points on the ellipse of semi-axes `axes`
    pushed inwards by a factor in [1 - roughness, 1] (seeded)."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 2 * np.pi, int(n_vertices)))
    r = 1.0 - roughness * rng.random(len(t))
    return Polygon(np.column_stack([np.cos(t), np.sin(t)]) * r[:, None] * np.asarray(axes))


# ---------------------------------------------------------------- in a simulation
def template_index(sim, template, code=SHAPE_CODE):
    """The template index of `template` (a Polyhedron or Polygon, registered in
    sim.templates on first use, or the index of a template of shape `code`)."""
    what = "Polyhedron" if code == SHAPE_CODE else "Polygon"
    if isinstance(template, (Polyhedron, Polygon)) and \
            isinstance(template, Polygon) != (code == POLYGON_CODE):
        raise InputError("template must be a pdem.polyhedra.%s here, got a %s"
                         % (what, type(template).__name__))
    if isinstance(template, (Polyhedron, Polygon)):
        known = sim.__dict__.setdefault("_polyhedron_templates", {})
        if id(template) not in known:
            known[id(template)] = (template, template.register(sim.templates))
        return known[id(template)][1]
    k = int(template) if np.isscalar(template) and float(template) == int(template) else -1
    if not (0 <= k < len(sim.templates) and sim.templates.shapes[k] == code):
        raise InputError("template must be a pdem.polyhedra.%s or the index of a %s "
                         "template (0..%d), got %r" % (what, what.lower(),
                                                       len(sim.templates) - 1, template))
    return k


def add(sim, positions, template, material, orientations, velocities, angular_velocities):
    """Simulation.add_polyhedra (docs/polyhedra.md)."""
    from . import shapes, validate
    from ._kernels import rigid_body
    if isinstance(template, (Polyhedron, Polygon)):
        sim.collective.same("add_polyhedra", vertices=template.vertices)
    sim.collective.same("add_polyhedra", positions=positions, material=material,
                        orientations=orientations, velocities=velocities,
                        angular_velocities=angular_velocities)
    if sim.domain.dim != 3:
        raise InputError("add_polyhedra: polyhedra need a 3D domain, got dim=%d"
                         % sim.domain.dim)
    shapes.check_adding(sim, "add_polyhedra", SHAPE_CODE)
    pos = validate.vectors("positions", positions, 3)
    n = len(pos)
    q = shapes.orientations(orientations, n)
    k = template_index(sim, template)
    volume, *moments, bound = sim.templates.props[k]
    sim._check_size("bounding radius", np.full(n, bound))
    new, mat = sim._new_particles("add_polyhedra", pos, material, velocities,
                                  angular_velocities)
    verts = sim.templates.rows("vertices", k)
    new["shape"][:] = SHAPE_CODE
    new["template"][:] = k
    new["semi_axes"][:] = 0.5 * (verts.max(axis=0) - verts.min(axis=0))  # box glyphs
    new["inertia_body"][:] = mat.density * np.asarray(moments)
    new["orient"][:] = q
    new["radius"][:] = bound
    new["mass"][:] = mat.density * volume
    new["inertia"][:] = mat.density * min(moments)
    # one thread: on main this prange kernel's last bits depend on the thread count (its
    # vectorised and scalar paths differ; set-up only, so not worth the threads)
    rigid_body.angmom_from_angvel(q, np.ascontiguousarray(new["angvel"]), new["inertia_body"],
                                  new["angmom"], 1)
    sim.shapes = sim.polyhedra = True
    return sim._append(new)


def add_2d(sim, positions, template, material, angles, velocities, angular_velocities):
    """Simulation.add_polygons (docs/polyhedra.md): as add_ellipses, with a template."""
    from . import shapes, validate
    from ._kernels import rigid_body
    from .particles import DOF_BITS
    if isinstance(template, (Polyhedron, Polygon)):
        sim.collective.same("add_polygons", vertices=template.vertices)
    sim.collective.same("add_polygons", positions=positions, material=material, angles=angles,
                        velocities=velocities, angular_velocities=angular_velocities)
    if sim.domain.dim != 2:
        raise InputError("add_polygons: polygons need a 2D domain, got dim=%d (in 3D: "
                         "add_polyhedra)" % sim.domain.dim)
    shapes.check_adding(sim, "add_polygons", POLYGON_CODE)
    pos = validate.vectors("positions", positions, 3, also=2)
    n = len(pos)
    theta = shapes.angles(angles, n, "polygon")
    k = template_index(sim, template, POLYGON_CODE)
    area, *moments, bound = sim.templates.props[k]
    sim._check_size("bounding radius", np.full(n, bound))
    new, mat = sim._new_particles("add_polygons", pos, material, velocities,
                                  angular_velocities)
    if len(sim.segments) + len(sim.points):
        from .contact import polygon_segments
        polygon_segments.check_models(sim, "add_polygons", np.concatenate(
            [sim.segments.material, sim.points.material]), [mat.index])
    new["blocked"][:] = DOF_BITS["z"] | DOF_BITS["rx"] | DOF_BITS["ry"]
    new["vel"][:, 2] = 0.0
    new["angvel"][:, :2] = 0.0
    verts = sim.templates.rows("vertices", k)
    new["shape"][:] = POLYGON_CODE
    new["template"][:] = k
    new["semi_axes"][:, :2] = 0.5 * (verts.max(axis=0) - verts.min(axis=0))[:2]
    new["inertia_body"][:] = mat.density * np.asarray(moments)
    new["orient"][:] = np.column_stack([np.cos(theta / 2), np.zeros((n, 2)), np.sin(theta / 2)])
    new["radius"][:] = bound
    new["mass"][:] = mat.density * area
    new["inertia"][:] = mat.density * moments[2]
    rigid_body.angmom_from_angvel(new["orient"], np.ascontiguousarray(new["angvel"]),
                                  new["inertia_body"], new["angmom"], 1)
    sim.shapes = sim.polyhedra = True
    return sim._append(new)


def world_mesh(sim, gather=False):
    """(points (n, 3), triangles (t, 3), particle id per triangle) of the owned
    polyhedra (and 2D polygons: their contact prisms) in their current pose, in id order (gather=True: all of them, on every
    rank; collective): for output meshes (write_vtk, docs/polyhedra.md)."""
    p = sim.particles(gather=gather)
    sel = np.flatnonzero((p["shape"] == SHAPE_CODE) | (p["shape"] == POLYGON_CODE))
    w, x, y, z = p["orientation"][sel].T
    R = np.stack([np.column_stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)]),
                  np.column_stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)]),
                  np.column_stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)])],
                 axis=1)                                        # (n, 3, 3) body to world
    voff, vdata = sim.templates.table("vertices")
    toff, tdata = sim.templates.table("triangles")
    k = p["template"][sel]
    nv, nt = voff[k + 1] - voff[k], toff[k + 1] - toff[k]
    owner_v = np.repeat(np.arange(len(sel)), nv)                # per point: its particle
    vrow = np.repeat(voff[k] - np.cumsum(nv) + nv, nv) + np.arange(nv.sum())
    pts = p["position"][sel][owner_v] + np.einsum("nij,nj->ni", R[owner_v], vdata[vrow])
    owner_t = np.repeat(np.arange(len(sel)), nt)
    trow = np.repeat(toff[k] - np.cumsum(nt) + nt, nt) + np.arange(nt.sum())
    first = np.cumsum(nv) - nv                                  # each particle's first point
    tris = tdata[trow].astype(np.int64) + first[owner_t][:, None]
    return pts.reshape(-1, 3), tris.reshape(-1, 3), p["id"][sel][owner_t]


def write_vtk(path, sim):
    """The polyhedra in their current pose as a legacy-VTK polygon mesh (ParaView opens
    a numbered series of these as one time series), with the particle id per triangle.
    Collective (gathers to rank 0, which writes)."""
    pts, tris, ids = world_mesh(sim, gather=True)
    if sim.rank != 0:
        return
    with open(path, "w") as f:
        f.write("# vtk DataFile Version 3.0\npdem polyhedra t=%r\nASCII\nDATASET POLYDATA\n"
                % sim.time)
        f.write("POINTS %d double\n" % len(pts))
        np.savetxt(f, pts, fmt="%.17g")
        f.write("POLYGONS %d %d\n" % (len(tris), 4 * len(tris)))
        np.savetxt(f, np.column_stack([np.full(len(tris), 3), tris]), fmt="%d")
        f.write("CELL_DATA %d\nSCALARS id long 1\nLOOKUP_TABLE default\n" % len(tris))
        np.savetxt(f, ids, fmt="%d")
