"""Infinite plane walls: a point, a unit normal pointing into the particles' side, a
material and a prescribed velocity. Planes are known to every rank."""
import numpy as np

from ..errors import InputError


class Planes:
    def __init__(self):
        self.point = np.zeros((0, 3))
        self.normal = np.zeros((0, 3))
        self.vel = np.zeros((0, 3))             # (sets `driven`)
        self.material = np.zeros(0, np.int32)
        self.build_point = np.zeros((0, 3))   # the points at the last neighbour-list build
        self.moved = False                      # ... from which a plane has moved since

    def __len__(self):
        return len(self.material)

    @property
    def vel(self):
        """The planes' velocities (n, 3); change a row with `set_velocity`."""
        return self._vel

    @vel.setter
    def vel(self, vel):
        self._vel = vel
        self.driven = bool(np.any(vel))     # a Python bool: the step asks at every step

    def set_velocity(self, plane, velocity):
        self._vel[plane] = velocity
        self.vel = self._vel                # (driven again)

    def add(self, point, normal, material_index, velocity=None):
        point = np.asarray(point, dtype=float).reshape(-1)
        normal = np.asarray(normal, dtype=float).reshape(-1)
        if point.shape != (3,) or not np.all(np.isfinite(point)):
            raise InputError("add_plane: point must be 3 finite numbers, got %r" % (point.tolist(),))
        norm = np.linalg.norm(normal) if normal.shape == (3,) else 0.0
        if not (np.isfinite(norm) and norm > 0):
            raise InputError("add_plane: normal must be a non-zero finite 3-vector, got %r"
                             % (normal.tolist(),))
        vel = np.zeros(3) if velocity is None else np.asarray(velocity, dtype=float).reshape(3)
        if not np.all(np.isfinite(vel)):
            raise InputError("add_plane: velocity must be finite, got %r" % (vel.tolist(),))
        self.point = np.vstack([self.point, point])
        self.build_point = np.vstack([self.build_point, point])
        self.normal = np.vstack([self.normal, normal / norm])
        self.vel = np.vstack([self.vel, vel])
        self.material = np.append(self.material, np.int32(material_index))
        return len(self) - 1

    def remove_last(self):
        """Undo the last add (a refused plane)."""
        self.point, self.normal, self.vel = self.point[:-1], self.normal[:-1], self.vel[:-1]
        self.build_point = self.build_point[:-1]
        self.material = self.material[:-1]

    def move(self, dt):
        """Rigid translation of every plane over one step (t -> t + dt)."""
        if self.driven:
            self.point += self._vel * dt
            self.moved = True

    def moved2(self):
        """Largest squared displacement of a plane along its normal since the last
        neighbour-list build (a plane sliding in its own plane changes no gap)."""
        if not self.moved:
            return 0.0
        d = ((self.point - self.build_point) * self.normal).sum(axis=1)
        return float(np.max(d * d))

    def mark_built(self):
        self.built_at(self.point.copy())

    def built_at(self, points):
        """The planes' points at the last build are `points` (a checkpoint's too)."""
        self.build_point = points
        self.moved = not np.array_equal(points, self.point)


class Segments:
    """Fixed walls of zero thickness (seed 003): segments [a, b], or points (the
    zero-radius boundary disks, stored with a == b), each with a material. Known to
    every rank."""

    def __init__(self):
        self.a = np.zeros((0, 3))
        self.b = np.zeros((0, 3))
        self.material = np.zeros(0, np.int32)

    def __len__(self):
        return len(self.material)

    def add(self, a, b, material_index):
        self.a = np.ascontiguousarray(np.vstack([self.a, a]))
        self.b = np.ascontiguousarray(np.vstack([self.b, b]))
        self.material = np.append(self.material, np.full(len(a), material_index, np.int32))
        return np.arange(len(self) - len(a), len(self))

    def new_points(self, points):
        """The distinct rows of `points` (first appearance order) that are not yet here."""
        _, first = np.unique(points, axis=0, return_index=True)
        points = points[np.sort(first)]
        known = {tuple(p) for p in self.a.tolist()}
        return points[[tuple(p) not in known for p in points.tolist()]].reshape(-1, 3)
