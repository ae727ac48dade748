"""Clumps: rigid bodies made of overlapping spheres (PFC clumps, LIGGGHTS multisphere;
issue 21 part 8, docs/clumps.md).

A clump is one particle (shape code 3): its position is the centre of mass, its
orientation takes the template's principal frame to the world, its `radius` is the
bounding radius about the centre of mass (cell and Verlet lists, ghost cutoff) and it
rotates by the rigid-body layer of the ellipsoids (pdem/shapes.py, pyx/rigid_body.pyx).
Its member spheres live in the template (pdem/shape_templates.py, table "spheres": rows
x, y, z, r in the principal frame; table "frame": the quaternion of the principal frame
in the frame the spheres were given in, and the centre of mass there).

Mass properties of the union of the spheres (per unit density):
* exact when no three members overlap pairwise (no triangle in the overlap graph: every
  inclusion-exclusion term beyond the pair lenses is empty): spheres minus lenses, a
  lens being two spherical caps cut by the radical plane, each integrated in closed form;
* otherwise a quadrature: on an n x n grid of columns along z, the union of the
  spheres' chords is exact per column (a merge of intervals), the columns summed by the
  midpoint rule (error measured in docs/clumps.md, ~n^-1.5).
"""
import numpy as np

from ._kernels import rigid_body
from .errors import InputError

SHAPE = 3                       # pdem.particles.SHAPES["clump"]
MAX_MEMBERS = 1 << 15           # member indices share one int32 (contact sub-keys)
QUADRATURE_N = 400              # grid columns per axis of the quadrature


def _sphere(a, r):
    """(volume, first moment, second moment matrix) of a solid sphere."""
    v = 4.0 / 3.0 * np.pi * r ** 3
    return v, v * a, v * (0.2 * r * r * np.eye(3) + np.outer(a, a))


def _cap(a, r, e, h):
    """The same of the cap {x in sphere (a, r): (x - a) . e >= h}, -r < h < r: slices
    z in [h, r] along e are disks of radius^2 r^2 - z^2."""
    def span(f):
        return f(r) - f(h)
    r2 = r * r
    v = np.pi * span(lambda z: r2 * z - z ** 3 / 3)
    sz = np.pi * span(lambda z: r2 * z * z / 2 - z ** 4 / 4)
    qzz = np.pi * span(lambda z: r2 * z ** 3 / 3 - z ** 5 / 5)
    qxx = np.pi / 4 * span(lambda z: r2 * r2 * z - 2 * r2 * z ** 3 / 3 + z ** 5 / 5)
    s = sz * e
    ee = np.outer(e, e)
    q = qxx * (np.eye(3) - ee) + qzz * ee
    return v, v * a + s, v * np.outer(a, a) + np.outer(a, s) + np.outer(s, a) + q


def _lens(a, ra, b, rb):
    """The intersection of two overlapping spheres (neither inside the other): the cap of
    a beyond the radical plane plus the cap of b on a's side."""
    d = float(np.linalg.norm(b - a))
    e = (b - a) / d
    h = (d * d + ra * ra - rb * rb) / (2 * d)
    va, sa, qa = _cap(a, ra, e, h)
    vb, sb, qb = _cap(b, rb, -e, d - h)
    return va + vb, sa + sb, qa + qb


def _union_exact(c, r, overlaps):
    v, s, q = 0.0, np.zeros(3), np.zeros((3, 3))
    for i in range(len(r)):
        dv, ds, dq = _sphere(c[i], r[i])
        v, s, q = v + dv, s + ds, q + dq
    for i, j in overlaps:
        dv, ds, dq = _lens(c[i], r[i], c[j], r[j])
        v, s, q = v - dv, s - ds, q - dq
    return v, s, q


def _union_quadrature(c, r, n):
    """Columns along z on the midpoint grid of the bounding box in x, y: each column's
    union of chords integrated exactly (length, z, z^2), the columns by the midpoint rule."""
    lo, hi = (c - r[:, None]).min(axis=0), (c + r[:, None]).max(axis=0)
    hx, hy = (hi[0] - lo[0]) / n, (hi[1] - lo[1]) / n
    x = lo[0] + hx * (np.arange(n) + 0.5)
    y = lo[1] + hy * (np.arange(n) + 0.5)
    X, Y = (a.ravel() for a in np.meshgrid(x, y, indexing="ij"))
    m = np.zeros((3, len(X)))                   # per column: int dz, int z dz, int z^2 dz
    for part in np.array_split(np.arange(len(X)), max(1, len(X) * len(r) // 2000000)):
        m[:, part] = _chords(X[part], Y[part], c, r)
    m0, m1, m2 = m
    w = hx * hy
    v = w * m0.sum()
    s = w * np.array([(X * m0).sum(), (Y * m0).sum(), m1.sum()])
    q = w * np.array([[(X * X * m0).sum(), (X * Y * m0).sum(), (X * m1).sum()],
                      [0.0, (Y * Y * m0).sum(), (Y * m1).sum()],
                      [0.0, 0.0, m2.sum()]])
    return v, s, np.triu(q) + np.triu(q, 1).T


def _chords(X, Y, c, r):
    """(3, columns): the integrals of 1, z, z^2 over the union of the spheres' chords of
    the columns (X, Y): the chords sorted by start, merged in one sweep."""
    half = np.sqrt(np.maximum(r[None, :] ** 2 - (X[:, None] - c[:, 0]) ** 2
                              - (Y[:, None] - c[:, 1]) ** 2, 0.0))
    start, end = c[:, 2] - half, c[:, 2] + half            # no chord: start = end
    order = np.argsort(start, axis=1)
    start = np.take_along_axis(start, order, 1)
    end = np.take_along_axis(end, order, 1)
    m = np.zeros((3, len(X)))

    def flush(mask, a, b):          # add the merged chords [a, b] of the columns `mask`
        b = np.where(mask, b, a)
        m[0] += b - a
        m[1] += (b * b - a * a) / 2
        m[2] += (b ** 3 - a ** 3) / 3
    lo_z, hi_z = start[:, 0], end[:, 0]
    for k in range(1, len(r)):
        gap = start[:, k] > hi_z
        flush(gap, lo_z, hi_z)
        lo_z = np.where(gap, start[:, k], lo_z)
        hi_z = np.where(gap, end[:, k], np.maximum(hi_z, end[:, k]))
    flush(np.ones(len(X), bool), lo_z, hi_z)
    return m


def mass_properties(centres, radii, n=QUADRATURE_N):
    """Volume, centre of mass (3,), inertia tensor about it (3, 3) per unit density of the
    union of spheres, and the method ("exact" or "quadrature"); checks the input."""
    c = np.asarray(centres, dtype=float)
    r = np.asarray(radii, dtype=float).reshape(-1)
    if c.ndim == 1 and c.shape == (3,):
        c = c[None, :]
    if c.ndim != 2 or c.shape[1] != 3 or not len(c) or not np.all(np.isfinite(c)):
        raise InputError("clump centres must be finite with shape (n, 3), n >= 1, got %s"
                         % (c.shape,))
    if r.size == 1:
        r = np.full(len(c), float(r[0]))
    if r.shape != (len(c),) or not np.all(np.isfinite(r) & (r > 0)):
        raise InputError("clump radii must be one or %d finite numbers > 0, got %r"
                         % (len(c), np.asarray(radii).tolist()))
    if len(c) > MAX_MEMBERS:
        raise InputError("clump: %d spheres, at most %d" % (len(c), MAX_MEMBERS))
    d = np.linalg.norm(c[:, None, :] - c[None, :, :], axis=2)
    iu = np.triu_indices(len(c), 1)
    inside = np.flatnonzero(d[iu] <= np.abs(r[iu[0]] - r[iu[1]]))
    if len(inside):
        i, j = iu[0][inside[0]], iu[1][inside[0]]
        raise InputError("clump spheres %d and %d: one lies inside the other (centre distance "
                         "%.6g, radii %.6g and %.6g); leave it out" % (i, j, d[i, j], r[i], r[j]))
    over = d < r[:, None] + r[None, :]
    np.fill_diagonal(over, False)
    pairs = [(int(i), int(j)) for i, j in zip(*iu) if over[i, j]]
    a = over.astype(np.int64)
    triangles = np.trace(a @ a @ a) > 0
    if triangles:
        v, s, q = _union_quadrature(c, r, n)
        method = "quadrature"
    else:
        v, s, q = _union_exact(c, r, pairs)
        method = "exact"
    com = s / v
    second = q - v * np.outer(com, com)             # int (x - com)(x - com)^T
    inertia = np.trace(second) * np.eye(3) - second
    return v, com, inertia, method


def principal_frame(inertia):
    """Principal moments (ascending) and the right-handed rotation E whose columns are
    the principal axes (x_given = E x_body); E = identity when the moments are equal."""
    moments, E = np.linalg.eigh(inertia)
    if np.allclose(inertia, inertia[0, 0] * np.eye(3), rtol=1e-14, atol=0.0):
        return np.full(3, inertia[0, 0]), np.eye(3)
    if np.linalg.det(E) < 0:
        E[:, 2] = -E[:, 2]
    return moments, E


def rotation_quaternion(E):
    """The unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method)."""
    t = np.trace(E)
    q = np.empty(4)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        q[:] = (0.25 * s, (E[2, 1] - E[1, 2]) / s, (E[0, 2] - E[2, 0]) / s,
                (E[1, 0] - E[0, 1]) / s)
    else:
        i = int(np.argmax(np.diag(E)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + E[i, i] - E[j, j] - E[k, k])
        q[0] = (E[k, j] - E[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (E[j, i] + E[i, j]) / s
        q[1 + k] = (E[k, i] + E[i, k]) / s
    return q / np.linalg.norm(q) * (1.0 if q[0] >= 0 else -1.0)


def qmul(a, b):
    """Hamilton products of quaternions (w, x, y, z), row-wise."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, float), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, float), -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def add_template(templates, centres, radii):
    """Register a clump template: mass properties, spheres in the principal frame.
    Returns its index."""
    v, com, inertia, method = mass_properties(centres, radii)
    c = np.asarray(centres, dtype=float).reshape(-1, 3)
    r = np.broadcast_to(np.asarray(radii, dtype=float).reshape(-1), (len(c),))
    moments, E = principal_frame(inertia)
    body = (c - com) @ E                        # x_body = E^T (x - com)
    spheres = np.column_stack([body, r])
    frame = np.concatenate([rotation_quaternion(E), com, [method == "exact"]])
    bound = float(np.max(np.linalg.norm(body, axis=1) + r))
    return templates.add(SHAPE, {"spheres": spheres, "frame": frame[None, :]}, v, moments,
                         bound)


def template_index(templates, template, what="template"):
    k = np.asarray(template)
    if k.ndim != 0 or not np.issubdtype(k.dtype, np.integer) or not (
            0 <= int(k) < len(templates)) or templates.shapes[int(k)] != SHAPE:
        raise InputError("%s = %r is not a clump template (sim.clump_template returns one)"
                         % (what, template))
    return int(k)


def fill_clumps(new, templates, k, q_given, density):
    """The shape fields of new clumps of template k; q_given: orientations of the frame
    the spheres were given in; angular velocities in new["angvel"] (world)."""
    props = templates.props[k]
    frame = templates.rows("frame", k)[0]
    moments = props[1:4] * density
    new["shape"][:] = SHAPE
    new["template"][:] = k
    new["orient"][:] = qmul(q_given, frame[:4])
    new["radius"][:] = props[4]
    new["mass"][:] = props[0] * density
    new["inertia_body"][:] = moments
    new["inertia"][:] = moments.min()
    rigid_body.angmom_from_angvel(new["orient"], np.ascontiguousarray(new["angvel"]),
                                  new["inertia_body"], new["angmom"], 1)


def rotation_matrices(q):
    """(n, 3, 3) rotation matrices R (body to world) of unit quaternions (w, x, y, z)."""
    w, x, y, z = np.asarray(q, float).T
    return np.stack([
        np.column_stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)]),
        np.column_stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)]),
        np.column_stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)])],
        axis=1)


def renew_mass(store, idx, templates, density):
    """Mass and principal moments of local clumps idx with a new density (set_material)."""
    props = templates.props[store.template[idx]]
    store.mass[idx] = props[:, 0] * density
    store.inertia_body[idx] = props[:, 1:4] * density
    store.inertia[idx] = store.inertia_body[idx].min(axis=1)


def members(store, n, templates):
    """World centres (m, 3), radii (m,), particle ids and member indices of the members
    of the first n local clumps (output, tests)."""
    idx = np.flatnonzero(store.shape[:n] == SHAPE)
    if not len(idx) or not len(templates):
        return np.zeros((0, 3)), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int32)
    offsets, data = templates.table("spheres")
    t = store.template[idx]
    count = offsets[t + 1] - offsets[t]
    owner = np.repeat(idx, count)
    first = np.repeat(offsets[t], count)
    member = np.arange(len(owner)) - np.repeat(np.cumsum(count) - count, count)
    rows = data[first + member]
    R = rotation_matrices(store.orient[owner])
    centres = store.pos[owner] + np.einsum("nij,nj->ni", R, rows[:, :3])
    return centres, rows[:, 3].copy(), store.id[owner].copy(), member.astype(np.int32)


def add(sim, positions, template, material, orientations, velocities, angular_velocities):
    """Simulation.add_clumps (checked input; collective)."""
    from . import shapes, validate
    if sim.domain.dim != 3:
        raise InputError("add_clumps: clumps need a 3D domain, got dim=%d" % sim.domain.dim)
    shapes.check_adding(sim, "add_clumps", SHAPE)
    k = template_index(sim.templates, template)
    pos = validate.vectors("positions", positions, 3)
    q = shapes.orientations(orientations, len(pos))
    sim._check_size("template bounding radius", np.full(len(pos), sim.templates.props[k, 4]))
    new, mat = sim._new_particles("add_clumps", pos, material, velocities, angular_velocities)
    fill_clumps(new, sim.templates, k, q, mat.density)
    sim.shapes = True
    return sim._append(new)


def present(sim, codes):
    """Whether any particle of the simulation has one of the shape codes (collective)."""
    st = sim.store
    return bool(sim.collective.max(float(np.any(np.isin(st.shape[:st.n_own], codes)))))
