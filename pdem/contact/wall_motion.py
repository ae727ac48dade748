"""Motion of faceted walls (seed 004, "Faceted Walls", wall motion).

Wall motion does not obey the equations of motion; it is either rigid or deformable,
never both (two classes):

- `RigidMotion`: translational velocity v and angular velocity w about a reference point
  W_r. Per step the vertices rotate about W_r, then W_r and the vertices translate by
  v dt. The wall velocity at a point p is v + w x (p - W_r).
- `DeformableMotion`: one translational velocity per (merged) mesh vertex. The wall
  velocity at a point of a facet is the barycentric interpolation of its vertices'
  velocities. The user's velocities must keep facets from intersecting (seed); this is
  not checked every step.

The rotation. The seed builds the rotation matrix "from a normalized version of the
quaternion q(1, w_x dt, w_y dt, w_z dt)". Taken literally, normalizing (1, w dt) gives
cos(a/2) = 1/sqrt(1 + |w|^2 dt^2), i.e. a rotation by a = 2 atan(|w| dt), about twice
the intended angle |w| dt for small steps (the factor 1/2 of the half-angle quaternion
is missing; q(1, w dt/2) normalized would turn by 2 atan(|w| dt/2), still not exactly
|w| dt). We rotate by exactly |w| dt about w/|w| per step: the unit quaternion
(cos(|w| dt/2), sin(|w| dt/2) w/|w|), which keeps the seed's point (a quaternion, no
Euler angles, no gimbal lock) with the intended angle.

No drift. Rather than moving vertices step by step (which accumulates round-off in the
shape), each motion keeps the reference vertices V0 and reference point W_r0 of its
start, the accumulated orientation quaternion q (renormalized) and the accumulated
translation, and recomputes vertices = W_r + R(q) (V0 - W_r0) every step; facet
normals and areas are recomputed from the moved vertices. While the rotation axis does
not change, the angle turned about it is summed (compensated summation) and q is
q_axis(angle) * q_base, so a wall spinning at constant w for N steps stays at the
analytic rotation R(|w| N dt) to round-off, not N round-offs. Translations are summed
with compensated summation too.

The mesh arrays (vertices, normals, areas) are updated in place, so holders of
references (kernels, bounding boxes) see the moved wall.
"""
import math

import numpy as np

from ..errors import InputError


# ------------------------------------------------------------------ quaternions
def quat_mul(a, b):
    """Hamilton product a * b of quaternions (w, x, y, z); R(a * b) = R(a) R(b)."""
    a0, a1, a2, a3 = (float(x) for x in a)
    b0, b1, b2, b3 = (float(x) for x in b)
    return np.array([a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3,
                     a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
                     a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1,
                     a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0])


def axis_angle_quaternion(axis, angle):
    """Unit quaternion of the rotation by `angle` (radians, right hand) about unit `axis`."""
    h = 0.5 * angle
    s = math.sin(h)
    x, y, z = (float(a) for a in axis)
    return (math.cos(h), s * x, s * y, s * z)


def quat_to_matrix(q):
    """Rotation matrix of quaternion q (normalized here)."""
    w, x, y, z = (float(a) for a in q)
    r = 1.0 / math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w * r, x * r, y * r, z * r
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _vec3(x, what):
    a = np.asarray(x, dtype=np.float64)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise InputError("%s must be 3 finite numbers, got %r" % (what, x))
    return a.copy()


def _check_dt(dt):
    if not (np.isfinite(dt) and dt >= 0.0):
        raise InputError("wall motion: time step must be finite and >= 0, got %r" % (dt,))


class _Kahan:
    """Compensated running sum of arrays."""

    def __init__(self, shape):
        self.sum = np.zeros(shape)
        self.c = np.zeros(shape)

    def add(self, x):
        y = x - self.c
        t = self.sum + y
        self.c = (t - self.sum) - y
        self.sum = t


def update_facet_geometry(mesh):
    """Recompute mesh.normals and mesh.areas (in place) from mesh.vertices, as Mesh
    does: n = E1 x E2 / |E1 x E2|, E1 = V2 - V1, E2 = V3 - V2."""
    v, f = mesh.vertices, mesh.facets
    v0, v1, v2 = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    a, b = v1 - v0, v2 - v1
    c = np.empty_like(a)                       # np.cross, without its overhead
    c[:, 0] = a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1]
    c[:, 1] = a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2]
    c[:, 2] = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    area2 = np.sqrt(np.einsum("ij,ij->i", c, c))
    np.divide(c, area2[:, None], out=mesh.normals)
    np.multiply(area2, 0.5, out=mesh.areas)


# ------------------------------------------------------------------ rigid motion
class RigidMotion:
    """Rigid motion of a faceted wall (mesh: pdem.contact.mesh.Mesh, moved in place).

    velocity v, angular_velocity w (rad/time, world frame), reference_point W_r (the
    centre of rotation, moving with the wall). `step(dt)` advances by one step; the
    velocities can be changed between steps with `set_velocity`.
    """

    def __init__(self, mesh, velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0),
                 reference_point=(0.0, 0.0, 0.0)):
        self.mesh = mesh
        self.velocity = _vec3(velocity, "rigid wall motion: velocity")
        self.angular_velocity = _vec3(angular_velocity, "rigid wall motion: angular_velocity")
        self.reference_point0 = _vec3(reference_point, "rigid wall motion: reference_point")
        self.vertices0 = mesh.vertices.copy()
        self._arm0 = self.vertices0 - self.reference_point0
        self._shift = _Kahan(3)
        self._q_base = np.array([1.0, 0.0, 0.0, 0.0])   # orientation before this axis
        self._axis = None                                # current rotation axis (tuple)
        self._angle, self._angle_c = 0.0, 0.0            # angle turned about it (Kahan)
        self.orientation = self._q_base.copy()
        self.reference_point = self.reference_point0.copy()

    def set_velocity(self, velocity=None, angular_velocity=None):
        if velocity is not None:
            self.velocity = _vec3(velocity, "rigid wall motion: velocity")
        if angular_velocity is not None:
            self.angular_velocity = _vec3(angular_velocity,
                                          "rigid wall motion: angular_velocity")

    def rotation_matrix(self):
        return quat_to_matrix(self.orientation)

    def step(self, dt):
        """Rotate the vertices about W_r by |w| dt about w/|w|, then translate W_r and
        the vertices by v dt; recompute normals and areas."""
        _check_dt(dt)
        wx, wy, wz = self.angular_velocity.tolist()
        speed = math.sqrt(wx * wx + wy * wy + wz * wz)
        if speed > 0.0 and dt > 0.0:
            axis = (wx / speed, wy / speed, wz / speed)
            if axis != self._axis:
                self._fold()                 # start a new constant-axis segment
                self._axis = axis
            y = speed * dt - self._angle_c   # compensated sum of the angle
            t = self._angle + y
            self._angle_c = (t - self._angle) - y
            self._angle = t
            q = quat_mul(axis_angle_quaternion(axis, self._angle), self._q_base)
            self.orientation = q / math.sqrt(q @ q)
        self._shift.add(self.velocity * dt)
        self.reference_point = self.reference_point0 + self._shift.sum
        np.add(self._arm0 @ self.rotation_matrix().T, self.reference_point,
               out=self.mesh.vertices)
        update_facet_geometry(self.mesh)

    def _fold(self):
        self._q_base = self.orientation.copy()
        self._axis = None
        self._angle, self._angle_c = 0.0, 0.0

    def velocity_at(self, points, facet=None, bary=None):
        """Wall velocity at points (n, 3): v + w x (p - W_r) (facet, bary unused)."""
        p = np.asarray(points, dtype=np.float64)
        return self.velocity + np.cross(self.angular_velocity, p - self.reference_point)


# ------------------------------------------------------------------ deformable motion
class DeformableMotion:
    """Deformable motion: vertex_velocities (nv, 3), one per merged mesh vertex
    (mesh.vertices order). vertices = V0 + compensated sum of velocity * dt."""

    def __init__(self, mesh, vertex_velocities=None):
        self.mesh = mesh
        self.vertices0 = mesh.vertices.copy()
        self._disp = _Kahan(mesh.vertices.shape)
        self.vertex_velocities = np.zeros_like(self.vertices0)
        if vertex_velocities is not None:
            self.set_velocity(vertex_velocities)

    def set_velocity(self, vertex_velocities):
        u = np.asarray(vertex_velocities, dtype=np.float64)
        if u.shape != self.vertices0.shape or not np.all(np.isfinite(u)):
            raise InputError("deformable wall motion %r: vertex_velocities must be finite "
                             "of shape %r (one per mesh vertex), got %r"
                             % (self.mesh.name, self.vertices0.shape, u.shape))
        self.vertex_velocities = u.copy()

    def step(self, dt):
        _check_dt(dt)
        self._disp.add(self.vertex_velocities * dt)
        self.mesh.vertices[...] = self.vertices0 + self._disp.sum
        update_facet_geometry(self.mesh)

    def velocity_at(self, points, facet, bary=None):
        """Wall velocity at points (n, 3) lying on facets (n,): the barycentric
        interpolation of the facet's vertex velocities. bary (n, 3) weights of the
        facet's local vertices 0, 1, 2 (as closest_points returns them); computed from
        the points (projected on the facet plane) when not given."""
        facet = np.asarray(facet, dtype=np.int64).reshape(-1)
        fv = self.mesh.facets[facet]
        if bary is None:
            bary = barycentric(np.asarray(points, dtype=np.float64).reshape(-1, 3),
                               self.mesh.vertices[fv])
        bary = np.asarray(bary, dtype=np.float64).reshape(-1, 3)
        return np.einsum("nk,nkj->nj", bary, self.vertex_velocities[fv])


def barycentric(p, tri):
    """Barycentric weights (n, 3) of points p (n, 3) projected on triangles tri (n, 3, 3)."""
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    n = np.cross(b - a, c - a)
    nn = np.einsum("ij,ij->i", n, n)
    w0 = np.einsum("ij,ij->i", np.cross(c - b, p - b), n) / nn
    w1 = np.einsum("ij,ij->i", np.cross(a - c, p - c), n) / nn
    return np.c_[w0, w1, 1.0 - w0 - w1]


# ------------------------------------------------------------------ checkpoints
def motion_state(motion):
    """Every attribute of a motion except its mesh, as named float arrays (checkpoints):
    `_Kahan` sums become name.sum / name.c, None becomes an empty array."""
    out = {}
    for name, value in vars(motion).items():
        if name == "mesh":
            continue
        if isinstance(value, _Kahan):
            out[name + ".sum"], out[name + ".c"] = value.sum, value.c
        else:
            out[name] = np.zeros(0) if value is None else np.asarray(value, dtype=np.float64)
    return out


def restore_motion(cls, mesh, state):
    """A motion of class cls (RigidMotion or DeformableMotion) on `mesh` with the
    attributes of motion_state(...) restored bit for bit."""
    motion = cls.__new__(cls)
    motion.mesh = mesh
    for name, value in state.items():
        value = np.array(value, dtype=np.float64)
        if name.endswith(".sum") or name.endswith(".c"):
            base, part = name.rsplit(".", 1)
            k = getattr(motion, base, None) or _Kahan(value.shape)
            setattr(k, part, value)
            setattr(motion, base, k)
        elif name == "_axis":
            motion._axis = tuple(float(x) for x in value) if len(value) else None
        elif value.ndim == 0:
            setattr(motion, name, float(value))
        else:
            setattr(motion, name, value)
    return motion
