"""Particle store: one structure of arrays per rank, owned particles first, ghosts after.

Every per-particle field is listed in FIELDS; anything listed travels with a
particle when it migrates and is copied into its ghosts, so adding a field here
is all it takes to make it parallel-safe. Positions are stored wrapped into the
periodic box; a ghost that is a periodic image keeps its owner's coordinates and
records the shift in `image` (integer box lengths), so kernels form relative
vectors as (x_b - x_a) + (image_b - image_a) * L, identical on every rank.
"""
import numpy as np

from ._kernels import rebuild as _r

# name: (dtype, components); components 0 means a scalar per particle
FIELDS = {
    "id": (np.int64, 0),
    "pos": (np.float64, 3),
    "vel": (np.float64, 3),
    "angvel": (np.float64, 3),
    "orient": (np.float64, 4),
    "force": (np.float64, 3),
    "torque": (np.float64, 3),
    "radius": (np.float64, 0),
    "mass": (np.float64, 0),
    "inertia": (np.float64, 0),
    "material": (np.int32, 0),
    "blocked": (np.uint8, 0),
    "image": (np.int32, 3),
    # shapes (issue 16, docs/ellipsoids.md): SHAPES code (0 for spheres, which keep their
    # orientation too: it is integrated and output); semi-axes and principal moments in
    # the body frame, and the world angular momentum at t + dt/2 (rigid_body.pyx), of
    # non-spherical particles (spheres use radius, inertia and angvel)
    "shape": (np.int8, 0),
    "semi_axes": (np.float64, 3),
    "inertia_body": (np.float64, 3),
    "angmom": (np.float64, 3),
    # the shape template (pdem/shape_templates.py) of a clump or polyhedron
    "template": (np.int32, 0),
    # deformable DDA particles (docs/dda.md): strain (engineering shears), stress and
    # strain rate in Voigt order (xx, yy, zz, yz, zx, xy); zero for rigid particles
    "strain": (np.float64, 6),
    "stress": (np.float64, 6),
    "strain_rate": (np.float64, 6),
}
# Fields a store holds only when a run needs them (ParticleStore.enable), so that other
# runs pay no memory, migration or ghost traffic for them (issue 14): those of the
# non-spherical bodies, enabled when the first is added (their fields, zero for the
# spheres already there: a sphere-only run never holds them), and those of deformable
# DDA particles (the scheme's `particle_fields`).
BODY_FIELDS = ("semi_axes", "inertia_body", "angmom", "template")
DEFORMABLE_FIELDS = ("strain", "stress", "strain_rate")
OPTIONAL = BODY_FIELDS + DEFORMABLE_FIELDS

SHAPES = {"sphere": 0, "ellipsoid": 1, "ellipse": 2, "clump": 3, "polyhedron": 4, "polygon": 5}

# blocked-DOF bits (pyx/integrate.pyx)
DOF_BITS = {"x": 1, "y": 2, "z": 4, "rx": 8, "ry": 16, "rz": 32}


def mass_and_inertia(radius, density, dim, mass=None):
    """Mass (density x volume unless given) and moment of inertia of spheres (3D:
    0.4 m r^2) or disks of unit thickness (2D: 0.5 m r^2)."""
    volume = 4.0 / 3.0 * np.pi * radius ** 3 if dim == 3 else np.pi * radius ** 2
    m = volume * density if mass is None else mass
    return m, (0.4 if dim == 3 else 0.5) * m * radius * radius


def ellipsoid_mass(semi_axes, density):
    """Mass (density x 4/3 pi a1 a2 a3) and principal moments of solid ellipsoids,
    (n, 3): I_1 = m (a2^2 + a3^2) / 5 and cyclic (a = b = c: 0.4 m r^2)."""
    a2 = semi_axes * semi_axes
    m = 4.0 / 3.0 * np.pi * np.prod(semi_axes, axis=1) * density
    moments = 0.2 * m[:, None] * np.column_stack([a2[:, 1] + a2[:, 2], a2[:, 2] + a2[:, 0],
                                                  a2[:, 0] + a2[:, 1]])
    return m, moments


def empty_fields(n=0, names=None):
    """Zero arrays of n rows of the given fields (default: every field but OPTIONAL)."""
    names = [k for k in FIELDS if k not in OPTIONAL] if names is None else names
    return {name: np.zeros((n, FIELDS[name][1]) if FIELDS[name][1] else n,
                           dtype=FIELDS[name][0]) for name in names}


class ParticleStore:
    """Arrays of the local particles: [0, n_own) owned, [n_own, n) ghosts."""

    def __init__(self):
        self.f = empty_fields()
        self.n_own = 0

    @property
    def f(self):
        """The fields by name; each is also an attribute (`st.pos`): a plain attribute
        read, which the step's orchestration makes about 40 times per step."""
        return self._fields

    @f.setter
    def f(self, fields):
        for name in self.__dict__.pop("_fields", ()):
            del self.__dict__[name]
        self.__dict__.update(fields)
        self._fields = fields

    @property
    def n(self):
        return len(self.f["id"])

    def owned_sums(self):
        """The owned rows of force and torque (views, kept while the arrays and n_own
        stay: the step asks twice per step)."""
        c = self.__dict__.get("_sums")
        if c is None or c[0] is not self.force or c[1] is not self.torque or c[2] != self.n_own:
            c = self._sums = (self.force, self.torque, self.n_own, self.force[:self.n_own],
                              self.torque[:self.n_own])
        return c[3], c[4]

    def column(self, name, n):
        """The first n rows of field `name`, or zeros if the store does not hold it (an
        OPTIONAL field: zero for every particle)."""
        return self.f[name][:n] if name in self.f else empty_fields(n, [name])[name]

    def owned(self):
        """Copies of the owned part of every field."""
        return {k: v[:self.n_own].copy() for k, v in self.f.items()}

    def set_local(self, owned, ghosts=None, n_own=None):
        """Replace the local arrays by owned (+ ghost) fields (C-contiguous). n_own: the
        fields `owned` hold the ghosts too, after the first n_own rows (no copy)."""
        if ghosts is None:
            self.f = {k: np.ascontiguousarray(v) for k, v in owned.items()}
        else:
            self.f = {k: np.ascontiguousarray(np.concatenate([owned[k], ghosts[k]]))
                      for k in owned}
        self.n_own = len(owned["id"]) if n_own is None else n_own

    def enable(self, names):
        """Hold the OPTIONAL fields `names` from now on (zero for the particles already
        here); every rank must enable the same fields."""
        missing = [name for name in names if name not in self.f]
        if missing:                     # through the `f` setter: the attributes follow
            self.f = {**self.f, **empty_fields(self.n, missing)}

    def append_owned(self, new):
        """Add owned particles (ghosts are dropped; the next rebuild recreates them);
        optional fields that `new` holds are enabled, those it lacks are zero."""
        self.enable([k for k in OPTIONAL if k in new])
        n, m = self.n_own, len(new["id"])
        fields, self.f = self.f, {}         # each old field goes once its new one is made
        out = {}
        for k in list(fields):
            own = fields.pop(k)[:n]
            add = new[k].astype(own.dtype, copy=False) if k in new else empty_fields(m, [k])[k]
            out[k] = add if n == 0 else np.concatenate([own, add])   # an empty store: as given
            del own
        self.set_local(out)


def spatial_order(own):
    """Owned particle fields in cell order (cells of a few radii), so that neighbors
    are near in memory. Results do not depend on memory order: pairs, sums and
    output are ordered by id."""
    order = spatial_permutation(own)
    return own if order is None else {k: v[order] for k, v in own.items()}


def spatial_permutation(own):
    """The order of spatial_order (None: keep the order): a stable sort by cell
    (a counting sort, pyx/rebuild.pyx, or an argsort for a sparse cloud)."""
    if len(own["id"]) < 2:
        return None
    pos = own["pos"]
    cell = 4.0 * float(own["radius"].max())
    order = _r.cell_order(np.ascontiguousarray(pos), cell, 4 * len(pos) + 4096)
    if order is None:
        c = np.floor((pos - pos.min(axis=0)) / cell).astype(np.int64)
        dims = c.max(axis=0) + 1
        order = np.argsort((c[:, 0] * dims[1] + c[:, 1]) * dims[2] + c[:, 2], kind="stable")
    return order
