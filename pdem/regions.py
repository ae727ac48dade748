"""Level-set regions Omega: f(x) <= 0 (seed 002, static relaxation) and the relaxation rule.

A region evaluates f and its gradient for many points at once (`region.evaluate(x)`
-> (f (n,), grad (n, 3)); `region(x)` -> f). Kinds:

- analytic signed distances (exact: |grad f| = 1, f = the distance to the boundary,
  negative inside): `HalfSpace`, `Sphere`, `Box`, `Cylinder` (capped), `Cone` (capped,
  a frustum with radii r0 and r1: a hopper), `Torus`;
- set operations `a | b` (union, min), `a & b` (intersection, max), `a - b`
  (difference, max(fa, -fb)): bounds of the distance, not exact inside corners;
- affine transforms `translate`, `rotate`, `scale`, `transform(matrix, offset)`
  (a rotation times a uniform scale keeps a signed distance exact);
- `FunctionRegion(f, grad=None)`: a user's vectorized f(x) (x (n, 3) -> (n,)), with
  its gradient or a central finite-difference one;
- `MeshRegion(mesh)`: a closed triangle mesh (pdem.Mesh, or a path to STL/OBJ/Gmsh),
  its exact signed distance sampled on a grid and interpolated trilinearly (f and
  the gradient of the interpolant, pyx/levelset.pyx `grid_eval`), or exact distances
  to the facets at every call (`exact=True`); inside/outside from the generalised
  winding number, robust for real meshes (either orientation, small gaps).

Analytic regions are numpy expressions of element-wise IEEE operations (no BLAS, no
transcendental SIMD paths): a point's value does not depend on which other points
are evaluated with it, which the rank-invariant packing relies on.

`relax_step` is seed 002's rule, formula by formula, as kernels over all particles
(`pyx/levelset.pyx`); `relax` repeats it until no particle moves (one step for a true
signed distance, secant steps otherwise).
"""
import math

import numpy as np

from . import validate
from ._kernels import levelset as _k
from .errors import InputError
from .threads import thread_count

__all__ = ["Region", "HalfSpace", "Sphere", "Box", "Cylinder", "Cone", "Torus",
           "FunctionRegion", "MeshRegion", "relax_step", "relax"]


def _points(x):
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim == 1 and x.shape[0] == 3:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] != 3:
        raise InputError("points must have shape (n, 3), got %s" % (x.shape,))
    return x


class Region:
    """Omega: f(x) <= 0. Subclasses give `_evaluate(x)` -> (f, grad), `bounds` (lo, hi)
    or None (unbounded) and `exact` (True when f is a signed distance).
    `distance_bound`: |f(x)| never exceeds the distance from x to the boundary (f is
    1-Lipschitz): signed distances, their set operations and similarity transforms,
    mesh regions (up to the grid's interpolation error). A region wall's Verlet list
    relies on it (pdem.contact.region_walls)."""
    exact = False
    bounds = None

    @property
    def distance_bound(self):
        return self.exact

    def evaluate(self, x):
        """(f (n,), grad f (n, 3)) at the points x (n, 3)."""
        f, g = self._evaluate(_points(x))
        return np.ascontiguousarray(f, dtype=np.float64), np.ascontiguousarray(g, dtype=np.float64)

    def __call__(self, x):
        return self.evaluate(x)[0]

    def contains(self, x, radius=0.0):
        """True where the sphere of `radius` centred at x is inside: f(x) <= -radius."""
        return self(x) <= -np.asarray(radius, dtype=float)

    def volume(self, samples=400_000, seed=12345):
        """Monte Carlo estimate of the volume (fixed seed: the same on every rank)."""
        if self.bounds is None:
            raise InputError("volume: the region is unbounded")
        lo, hi = self.bounds
        rng = np.random.default_rng(seed)
        inside = 0
        for _ in range(max(1, samples // 100_000)):
            x = lo + (hi - lo) * rng.random((min(samples, 100_000), 3))
            inside += int(np.count_nonzero(self(x) <= 0.0))
        n = max(1, samples // 100_000) * min(samples, 100_000)
        return float(np.prod(hi - lo)) * inside / n

    # set operations and transforms
    def __or__(self, other):
        return Union(self, other)

    def __and__(self, other):
        return Intersection(self, other)

    def __sub__(self, other):
        return Difference(self, other)

    def transform(self, matrix, offset=(0.0, 0.0, 0.0)):
        """The image of the region under x -> matrix x + offset."""
        return Transformed(self, matrix, offset)

    def translate(self, offset):
        return Transformed(self, np.eye(3), offset)

    def rotate(self, axis, angle, about=(0.0, 0.0, 0.0)):
        """Rotated by `angle` (radians) about the line through `about` along `axis`."""
        a = _unit("axis", axis)
        c, s = math.cos(angle), math.sin(angle)
        K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
        R = np.eye(3) + s * K + (1 - c) * K @ K
        p = validate.vector("about", about)
        return Transformed(self, R, p - R @ p)

    def scale(self, factor, about=(0.0, 0.0, 0.0)):
        s = validate.positive("factor", factor)
        p = validate.vector("about", about)
        return Transformed(self, s * np.eye(3), p - s * p)


def _unit(name, v):
    v = validate.vector(name, v)
    n = float(np.sqrt(v @ v))
    if n == 0.0:
        raise InputError("%s must be a non-zero vector, got %r" % (name, v.tolist()))
    return v / n


def _norm(v):
    return np.sqrt(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2])


def _dot3(a, b):
    return a[:, 0] * b[0] + a[:, 1] * b[1] + a[:, 2] * b[2]


class HalfSpace(Region):
    """(x - point) . normal <= 0: `normal` points out of the region."""
    exact = True

    def __init__(self, point, normal):
        self.point = validate.vector("point", point)
        self.normal = _unit("normal", normal)

    def _evaluate(self, x):
        f = _dot3(x - self.point, self.normal)
        return f, np.broadcast_to(self.normal, x.shape)


class Sphere(Region):
    """|x - centre| <= radius."""
    exact = True

    def __init__(self, centre, radius):
        self.centre = validate.vector("centre", centre)
        self.radius = validate.positive("radius", radius)
        self.bounds = (self.centre - self.radius, self.centre + self.radius)

    def volume(self, samples=None, seed=None):
        """4/3 pi R^3 (exact)."""
        return 4.0 / 3.0 * np.pi * self.radius ** 3

    def _evaluate(self, x):
        d = x - self.centre
        n = _norm(d)
        safe = np.where(n > 0.0, n, 1.0)
        g = d / safe[:, None]
        g[n == 0.0] = (0.0, 0.0, 1.0)
        return n - self.radius, g


class Box(Region):
    """lo <= x <= hi (axis-aligned; rotate it for another orientation)."""
    exact = True

    def __init__(self, lo, hi):
        self.lo, self.hi = validate.vector("lo", lo), validate.vector("hi", hi)
        if np.any(self.hi <= self.lo):
            raise InputError("Box: hi must exceed lo on every axis, got lo=%r hi=%r"
                             % (self.lo.tolist(), self.hi.tolist()))
        self.bounds = (self.lo.copy(), self.hi.copy())

    def volume(self, samples=None, seed=None):
        """The product of the edge lengths (exact)."""
        return float(np.prod(self.hi - self.lo))

    def _evaluate(self, x):
        c, h = 0.5 * (self.lo + self.hi), 0.5 * (self.hi - self.lo)
        d = x - c
        s = np.where(d < 0.0, -1.0, 1.0)
        q = np.abs(d) - h
        qp = np.maximum(q, 0.0)
        out = _norm(qp)
        k = np.argmax(q, axis=1)
        qmax = q[np.arange(len(x)), k]
        f = out + np.minimum(qmax, 0.0)
        g = np.zeros_like(x)
        g[np.arange(len(x)), k] = s[np.arange(len(x)), k]
        o = out > 0.0
        g[o] = s[o] * qp[o] / out[o][:, None]
        return f, g


def _frame(axis):
    """Two unit vectors perpendicular to the unit vector axis (fixed choice)."""
    t = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(axis, t)
    e1 /= np.sqrt(e1 @ e1)
    return e1, np.cross(axis, e1)


def _cylindrical(d, axis, e1):
    """Coordinates of the vectors d about a unit axis: (t along it, rho from it, the
    unit radial direction er; e1 on the axis itself)."""
    t = _dot3(d, axis)
    radial = d - t[:, None] * axis
    rho = _norm(radial)
    er = np.where((rho > 0.0)[:, None], radial / np.where(rho > 0.0, rho, 1.0)[:, None], e1)
    return t, rho, er


class _Revolved(Region):
    """A solid of revolution about the axis through `base` along `axis`, given by a
    convex polygon in the (rho, t) half-plane mirrored to rho < 0 (so the polygon is
    convex and symmetric): the exact signed distance is the 2D one of the polygon."""
    exact = True

    def _setup(self, base, axis, poly):
        self.base = validate.vector("base", base)
        self.axis = _unit("axis", axis)
        self.e1, self.e2 = _frame(self.axis)
        self.poly = np.asarray(poly, dtype=float)        # (m, 2) counter-clockwise
        rmax = float(np.max(np.abs(self.poly[:, 0])))
        tlo, thi = self.poly[:, 1].min(), self.poly[:, 1].max()
        ends = np.array([self.base + tlo * self.axis, self.base + thi * self.axis])
        ext = rmax * np.sqrt(np.maximum(1.0 - self.axis ** 2, 0.0))
        self.bounds = (ends.min(axis=0) - ext, ends.max(axis=0) + ext)

    def _evaluate(self, x):
        t, rho, er = _cylindrical(x - self.base, self.axis, self.e1)
        P, Q = self.poly, np.roll(self.poly, -1, axis=0)
        best = np.full(len(x), np.inf)
        bx, by = np.zeros(len(x)), np.zeros(len(x))
        inside = np.ones(len(x), dtype=bool)
        for k in range(len(P)):
            ex, ey = Q[k, 0] - P[k, 0], Q[k, 1] - P[k, 1]
            wx, wy = rho - P[k, 0], t - P[k, 1]
            u = np.clip((wx * ex + wy * ey) / (ex * ex + ey * ey), 0.0, 1.0)
            dx, dy = wx - u * ex, wy - u * ey
            d2 = dx * dx + dy * dy
            closer = d2 < best
            best = np.where(closer, d2, best)
            bx, by = np.where(closer, dx, bx), np.where(closer, dy, by)
            inside &= ex * wy - ey * wx > 0.0           # left of every edge (ccw)
        dist = np.sqrt(best)
        s = np.where(inside, -1.0, 1.0)
        safe = np.where(dist > 0.0, dist, 1.0)
        gx, gy = s * bx / safe, s * by / safe
        g = gx[:, None] * er + gy[:, None] * self.axis
        return s * dist, g


class Cylinder(_Revolved):
    """Capped cylinder of `radius` from `base` to base + height * axis."""

    def __init__(self, base, axis, radius, height):
        R = validate.positive("radius", radius)
        H = validate.positive("height", height)
        self._setup(base, axis, [(-R, 0.0), (R, 0.0), (R, H), (-R, H)])


class Cone(_Revolved):
    """Capped cone (frustum) along `axis` from `base` (radius r0) to base + height axis
    (radius r1); one of r0, r1 may be 0 (a pointed cone)."""

    def __init__(self, base, axis, r0, r1, height):
        r0 = validate.positive("r0", r0, allow_zero=True)
        r1 = validate.positive("r1", r1, allow_zero=True)
        H = validate.positive("height", height)
        if r0 == 0.0 and r1 == 0.0:
            raise InputError("Cone: r0 and r1 cannot both be 0")
        poly = [(-r0, 0.0), (r0, 0.0), (r1, H), (-r1, H)]
        if r0 == 0.0:
            poly = [(0.0, 0.0), (r1, H), (-r1, H)]
        elif r1 == 0.0:
            poly = [(-r0, 0.0), (r0, 0.0), (0.0, H)]
        self._setup(base, axis, poly)


class Torus(Region):
    """Torus about `axis` through `centre`: major radius R, minor radius a < R."""
    exact = True

    def __init__(self, centre, axis, R, a):
        self.centre = validate.vector("centre", centre)
        self.axis = _unit("axis", axis)
        self.R = validate.positive("R", R)
        self.a = validate.positive("a", a)
        if self.a >= self.R:
            raise InputError("Torus: the minor radius a must be below R, got a=%r R=%r" % (a, R))
        self.e1, _ = _frame(self.axis)
        ext = self.R * np.sqrt(np.maximum(1.0 - self.axis ** 2, 0.0)) + self.a
        self.bounds = (self.centre - ext, self.centre + ext)

    def _evaluate(self, x):
        t, rho, er = _cylindrical(x - self.centre, self.axis, self.e1)
        u = rho - self.R
        q = np.sqrt(u * u + t * t)
        safe = np.where(q > 0.0, q, 1.0)
        g = (u / safe)[:, None] * er + (t / safe)[:, None] * self.axis
        return q - self.a, g


# ------------------------------------------------------------------ set operations
def _check_region(name, r):
    if not isinstance(r, Region):
        raise InputError("%s must be a pdem region, got %r" % (name, r))
    return r


class Union(Region):
    distance_bound = property(lambda self: self.a.distance_bound and self.b.distance_bound)

    def __init__(self, a, b):
        self.a, self.b = _check_region("a", a), _check_region("b", b)
        if a.bounds is not None and b.bounds is not None:
            self.bounds = (np.minimum(a.bounds[0], b.bounds[0]), np.maximum(a.bounds[1], b.bounds[1]))

    def _evaluate(self, x):
        fa, ga = self.a.evaluate(x)
        fb, gb = self.b.evaluate(x)
        pick = fb < fa
        return np.where(pick, fb, fa), np.where(pick[:, None], gb, ga)


class Intersection(Region):
    distance_bound = property(lambda self: self.a.distance_bound and self.b.distance_bound)

    def __init__(self, a, b):
        self.a, self.b = _check_region("a", a), _check_region("b", b)
        bs = [r.bounds for r in (a, b) if r.bounds is not None]
        if len(bs) == 2:
            self.bounds = (np.maximum(bs[0][0], bs[1][0]), np.minimum(bs[0][1], bs[1][1]))
        elif bs:
            self.bounds = bs[0]

    def _evaluate(self, x):
        fa, ga = self.a.evaluate(x)
        fb, gb = self.b.evaluate(x)
        pick = fb > fa
        return np.where(pick, fb, fa), np.where(pick[:, None], gb, ga)


class Difference(Region):
    distance_bound = property(lambda self: self.a.distance_bound and self.b.distance_bound)

    def __init__(self, a, b):
        self.a, self.b = _check_region("a", a), _check_region("b", b)
        self.bounds = a.bounds

    def _evaluate(self, x):
        fa, ga = self.a.evaluate(x)
        fb, gb = self.b.evaluate(x)
        pick = -fb > fa
        return np.where(pick, -fb, fa), np.where(pick[:, None], -gb, ga)


class Transformed(Region):
    """{A y + o : y in region}: f'(x) = s f(A^-1 (x - o)) with s the uniform scale of A
    when A is a rotation times s (then exact stays exact), else s = 1."""

    def __init__(self, region, matrix, offset):
        self.region = _check_region("region", region)
        A = np.array(matrix, dtype=float)
        if A.shape != (3, 3) or not np.all(np.isfinite(A)) or abs(np.linalg.det(A)) < 1e-300:
            raise InputError("transform: matrix must be an invertible 3x3 matrix, got %r"
                             % (matrix,))
        self.offset = validate.vector("offset", offset)
        self.inv = np.linalg.inv(A)
        s = abs(np.linalg.det(A)) ** (1.0 / 3.0)
        similar = np.allclose(A.T @ A, s * s * np.eye(3), rtol=1e-12, atol=1e-14 * s * s)
        self.s = s if similar else 1.0
        self.exact = region.exact and similar
        self.similar = similar
        self.gmat = self.inv.T * self.s           # grad f' = s A^-T grad f
        if region.bounds is not None:
            lo, hi = region.bounds
            corners = np.array([[(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[k][2]]
                                for i in (0, 1) for j in (0, 1) for k in (0, 1)])
            img = corners @ A.T + self.offset
            self.bounds = (img.min(axis=0), img.max(axis=0))

    @staticmethod
    def _apply(M, v):
        # element-wise matrix product (each row independent of the others: no BLAS)
        return np.stack([v[:, 0] * M[i, 0] + v[:, 1] * M[i, 1] + v[:, 2] * M[i, 2]
                         for i in range(3)], axis=1)

    @property
    def distance_bound(self):
        return self.similar and self.region.distance_bound

    def _evaluate(self, x):
        f, g = self.region.evaluate(self._apply(self.inv, x - self.offset))
        return self.s * f, self._apply(self.gmat, g)


class FunctionRegion(Region):
    """A user's vectorized f(x) (x (n, 3) -> (n,)), with grad(x) -> (n, 3) or a central
    finite difference of step h (times the size of the bounds, when given). bounds:
    (lo, hi) for packing; exact: True if f is a signed distance."""

    def __init__(self, f, grad=None, bounds=None, exact=False, h=1e-6):
        if not callable(f) or (grad is not None and not callable(grad)):
            raise InputError("FunctionRegion: f (and grad) must be callables of x (n, 3), "
                             "got %r, %r" % (f, grad))
        self.f, self.grad, self.exact = f, grad, bool(exact)
        if bounds is not None:
            lo, hi = validate.vector("bounds[0]", bounds[0]), validate.vector("bounds[1]", bounds[1])
            self.bounds = (lo, hi)
        size = 1.0 if bounds is None else float(np.max(self.bounds[1] - self.bounds[0]))
        self.h = validate.positive("h", h) * size

    def _call(self, x):
        f = np.asarray(self.f(x), dtype=float).reshape(-1)
        if f.shape != (len(x),):
            raise InputError("FunctionRegion: f(x) must return %d values, got shape %s"
                             % (len(x), np.shape(f)))
        return f

    def _evaluate(self, x):
        f = self._call(x)
        if self.grad is not None:
            g = np.asarray(self.grad(x), dtype=float).reshape(len(x), 3)
        else:
            g = np.empty_like(x)
            for d in range(3):
                e = np.zeros(3)
                e[d] = self.h
                g[:, d] = (self._call(x + e) - self._call(x - e)) / (2.0 * self.h)
        return f, g


class MeshRegion(Region):
    """The inside of a closed triangle mesh (pdem.Mesh, or a path read by Mesh.read).

    Default: the exact signed distance sampled on a grid of `cells` cells along the
    longest side (cubic cells, `padding` cells beyond the mesh on every side), f and
    its gradient trilinearly interpolated (`exact` is then False: the grid spacing
    bounds the error). exact=True: distances to the facets at every evaluation
    (O(facets) per point). Inside: |winding number| > 1/2, for either orientation."""
    distance_bound = True                   # the grid interpolates exact distances

    def __init__(self, mesh, cells=64, exact=False, padding=3, threads=None):
        from .contact.mesh import Mesh
        if not isinstance(mesh, Mesh):
            mesh = Mesh.read(mesh)
        self.mesh = mesh
        tri = np.ascontiguousarray(mesh.vertices[mesh.facets])
        self.tri = tri
        self.centre = np.ascontiguousarray(tri.mean(axis=1))
        self.radius = np.ascontiguousarray(
            np.sqrt(np.max(np.sum((tri - self.centre[:, None]) ** 2, axis=2), axis=1)))
        self.threads = thread_count(threads)
        lo, hi = mesh.vertices.min(axis=0), mesh.vertices.max(axis=0)
        self.bounds = (lo.copy(), hi.copy())
        self.exact = bool(exact)
        if not exact:
            cells = validate.integer("cells", cells, 2)
            h = float(np.max(hi - lo)) / cells
            self.h = h
            self.origin = lo - padding * h
            shape = np.ceil((hi - lo) / h).astype(int) + 2 * padding + 1
            axes = [self.origin[d] + h * np.arange(shape[d]) for d in range(3)]
            nodes = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
            f, _ = self._exact(nodes)
            self.grid = np.ascontiguousarray(f.reshape(tuple(shape)))

    def _exact(self, x):
        f = np.empty(len(x))
        g = np.empty((len(x), 3))
        _k.mesh_signed_distance(np.ascontiguousarray(x), self.tri, self.centre, self.radius,
                                f, g, self.threads)
        return f, g

    def _evaluate(self, x):
        if self.exact:
            return self._exact(x)
        f = np.empty(len(x))
        g = np.empty((len(x), 3))
        _k.grid_eval(x, self.grid, self.origin, self.h, f, g, self.threads)
        return f, g


# ------------------------------------------------------------------ seed 002's rule
def relax_step(region, positions, radii, threads=None):
    """One step of seed 002's static relaxation for every particle: returns (new
    positions, the number of particles moved). Inside particles (d0 < 0, d1 < 0) stay."""
    _check_region("region", region)
    x = _points(positions)
    r = validate.scalars("radii", radii, len(x))
    nt = thread_count(threads)
    d0, g = region.evaluate(x)
    probe, normal = np.empty_like(x), np.empty_like(x)
    _k.relax_probes(x, r, d0, g, probe, normal, nt)
    d1 = region(probe)
    dx = np.empty_like(x)
    moved = _k.relax_moves(r, d0, d1, normal, dx, nt)
    return x + dx, int(moved)


def relax(region, positions, radii, max_steps=100, threads=None):
    """Seed 002's rule repeated until no particle moves (one step for a true signed
    distance). Returns (positions, steps taken); raises after max_steps."""
    x = _points(positions)
    for step in range(validate.integer("max_steps", max_steps, 1) + 1):
        x, moved = relax_step(region, x, radii, threads)
        if moved == 0:
            return x, step
    raise InputError("relax: particles still move after max_steps=%d steps" % max_steps)
