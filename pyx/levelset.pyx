# cython: language_level=3
"""Level-set kernels: the static relaxation rule of seed 002, the overlap removal of
the packing generator, and the signed distance of triangle meshes (exact and gridded).

Seed 002, "静力弛豫“接触模型”" (static relaxation): region Omega: f(x) <= 0, particle P of
centre x0 and radius r; n = grad f(x0) / |grad f(x0)|, d0 = f(x0),
d1 = f(x0 - sign(d0) r n); alpha = d0 / (d0 - d1) (the root of the secant through d0
and d1); dx = -(1 + |d0| / (d0 - d1)) r n; if d0 < 0 and d1 < 0 the particle is inside
and dx = 0. `relax_probes` gives the probe points x0 - sign(d0) r n (sign(0) = +1: a
centre on the boundary moves in by r), `relax_moves` the displacements. "d1 < 0" is
taken as d1 <= eps |d0| (eps = 1e-9): a particle put exactly at f = -r by a true
signed distance (d1 = 0 up to rounding) is inside; eps |d0| scales with f, so f and
3 f make the same moves.

Overlap removal (pdem.packing): a Jacobi sweep. Every selected particle i moves by
sum_j 0.5 w delta_ij (x_i - x_j) / |x_i - x_j| over the particles j it overlaps
(delta_ij = r_i + r_j - |x_i - x_j| > 0), computed from the old positions only. The
neighbours are found with a uniform cell grid whose origin, cell size and shape are
given by the caller (the same on every rank), visited cell by cell in a fixed order,
members in increasing index (= global id): each particle's sum is taken in an order
that depends on no partition, so any set of ranks, each with its owned particles and
their ghosts, gets the same bits.

Mesh distance: for each point, the closest point over all triangles (Ericson's
closest point on a triangle, triangles culled by their bounding sphere); inside or
outside from the generalised winding number (sum of solid angles, Van Oosterom and
Strackee 1983), robust for real meshes: w ~ +-1 inside a closed surface of either
orientation, ~0 outside, and it degrades gracefully across small holes.
Points are independent: prange over points, no shared writes.
"""
cimport cython
from cython.parallel cimport prange
from libc.math cimport sqrt, fabs, atan2, floor, INFINITY
from cellgrid cimport cell_index, cell_sort
import numpy as np


@cython.boundscheck(False)
@cython.wraparound(False)
def relax_probes(const double[:, ::1] x, const double[::1] r, const double[::1] d0,
                 const double[:, ::1] grad, double[:, ::1] probe, double[:, ::1] normal,
                 int n_threads):
    """normal = grad / |grad| (zero where grad = 0), probe = x - sign(d0) r normal."""
    cdef Py_ssize_t i, n = x.shape[0]
    cdef int d
    cdef double g, s
    for i in prange(n, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        g = sqrt(grad[i, 0] * grad[i, 0] + grad[i, 1] * grad[i, 1] + grad[i, 2] * grad[i, 2])
        s = 1.0 if d0[i] >= 0.0 else -1.0
        for d in range(3):
            normal[i, d] = grad[i, d] / g if g > 0.0 else 0.0
            probe[i, d] = x[i, d] - s * r[i] * normal[i, d]


@cython.boundscheck(False)
@cython.wraparound(False)
def relax_moves(const double[::1] r, const double[::1] d0, const double[::1] d1,
                const double[:, ::1] normal, double[:, ::1] dx, int n_threads):
    """Seed 002's displacement of each particle into dx; returns the number of
    particles that move (not inside, with a usable normal and d0 != d1)."""
    cdef Py_ssize_t i, n = r.shape[0]
    cdef long moved = 0
    cdef int d
    cdef double k, den
    for i in prange(n, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        den = d0[i] - d1[i]
        if (d0[i] < 0.0 and d1[i] <= 1e-9 * fabs(d0[i])) or den == 0.0 or (
                normal[i, 0] == 0.0 and normal[i, 1] == 0.0 and normal[i, 2] == 0.0):
            for d in range(3):
                dx[i, d] = 0.0
        else:
            k = -(1.0 + fabs(d0[i]) / den) * r[i]
            for d in range(3):
                dx[i, d] = k * normal[i, d]
            moved += 1
    return moved


@cython.boundscheck(False)
@cython.wraparound(False)
def wall_planes(const double[:, ::1] x, const double[::1] r, const double[::1] d0,
                const double[::1] d1, const double[:, ::1] normal, double[:, ::1] point,
                double[:, ::1] inward, double[::1] gap, int n_threads):
    """Seed 002's rule as a boundary contact (pdem.contact.region_walls): the depth
    delta = (1 + |d0| / (d0 - d1)) r, the length of the rule's move (negative where the
    rule calls the particle inside: then -delta is its secant estimate of the gap; for a
    signed distance delta = f(x0) + r exactly). Each row becomes a plane wall at the
    current step: unit normal inward = -n (into the particle's side), point
    x0 + (r - delta) n, so that the plane law sees the gap (x0 - point) . inward - r =
    -delta. Rows without a usable normal, or whose f does not grow outward along n
    between the centre and the probe (d0 - d1 of the wrong sign or 0: no secant),
    get no contact (gap = inf, the point r + 1e300 away)."""
    cdef Py_ssize_t i, n = x.shape[0]
    cdef int d
    cdef double den, delta
    for i in prange(n, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        den = d0[i] - d1[i]
        if (den <= 0.0 if d0[i] >= 0.0 else den >= 0.0) or (
                normal[i, 0] == 0.0 and normal[i, 1] == 0.0 and normal[i, 2] == 0.0):
            gap[i] = INFINITY
            delta = -1e300
        else:
            delta = (1.0 + fabs(d0[i]) / den) * r[i]
            gap[i] = -delta
        for d in range(3):
            inward[i, d] = -normal[i, d]
            point[i, d] = x[i, d] + (r[i] - delta) * normal[i, d]
        if gap[i] == INFINITY:
            inward[i, 0] = 0.0
            inward[i, 1] = 0.0
            inward[i, 2] = 1.0
            point[i, 0] = x[i, 0]
            point[i, 1] = x[i, 1]
            point[i, 2] = x[i, 2] - r[i] - 1e300


@cython.boundscheck(False)
@cython.wraparound(False)
def overlap_moves(const double[:, ::1] x, const double[::1] r, const unsigned char[::1] own,
                  const double[::1] origin, double cell, const long[::1] shape, double weight,
                  double[:, ::1] dx, int n_threads):
    """Jacobi overlap removal of the particles with own[i] = 1 (the others are ghosts:
    neighbours only). x, r: the local particles in increasing global id. Grid: origin,
    cell size (>= the largest r_i + r_j) and cells per axis, identical on every rank.
    Fills dx (zero for ghosts); returns the largest overlap delta_ij / min(r_i, r_j) of
    an owned particle (0 when none)."""
    cdef Py_ssize_t n = x.shape[0], i
    cdef double lo[3]
    cdef long nc[3]
    cdef int d
    for d in range(3):
        lo[d] = origin[d]
        nc[d] = shape[d]
    cdef long ncell = nc[0] * nc[1] * nc[2]
    cell_of_arr = np.empty(n, dtype=np.int64)
    cdef long[::1] cell_of = cell_of_arr
    cdef double inv = 1.0 / cell
    for i in range(n):
        cell_of[i] = cell_index(x[i, 0], x[i, 1], x[i, 2], lo, inv, nc)
    start_arr = np.zeros(ncell + 1, dtype=np.int64)
    members_arr = np.empty(n, dtype=np.int32)
    cdef long[::1] start = start_arr
    cdef int[::1] members = members_arr
    cell_sort(cell_of, start, members)
    worst_arr = np.zeros(n)
    cdef double[::1] worst = worst_arr
    for i in prange(n, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        if own[i]:
            worst[i] = _push(i, x, r, cell_of, start, members, nc[0], nc[1], nc[2], weight, dx)
        else:
            dx[i, 0] = 0.0
            dx[i, 1] = 0.0
            dx[i, 2] = 0.0
    return float(worst_arr.max()) if n else 0.0


@cython.boundscheck(False)
@cython.wraparound(False)
cdef double _push(Py_ssize_t a, const double[:, ::1] x, const double[::1] r,
                  const long[::1] cell_of, const long[::1] start, const int[::1] members,
                  long n0, long n1, long n2, double weight, double[:, ::1] dx) noexcept nogil:
    cdef long c = cell_of[a], cx, cy, cz, ix, iy, iz, e
    cdef int b
    cdef double ex, ey, ez, dist2, dist, delta, k, sx = 0.0, sy = 0.0, sz = 0.0, worst = 0.0
    cdef double rmin
    cz = c % n2
    cy = (c // n2) % n1
    cx = c // (n1 * n2)
    for ix in range(cx - 1 if cx > 0 else 0, cx + 2 if cx + 2 <= n0 else n0):
        for iy in range(cy - 1 if cy > 0 else 0, cy + 2 if cy + 2 <= n1 else n1):
            for iz in range(cz - 1 if cz > 0 else 0, cz + 2 if cz + 2 <= n2 else n2):
                c = (ix * n1 + iy) * n2 + iz
                for e in range(start[c], start[c + 1]):
                    b = members[e]
                    if b == a:
                        continue
                    ex = x[a, 0] - x[b, 0]
                    ey = x[a, 1] - x[b, 1]
                    ez = x[a, 2] - x[b, 2]
                    dist2 = ex * ex + ey * ey + ez * ez
                    delta = r[a] + r[b]
                    if dist2 >= delta * delta:
                        continue
                    dist = sqrt(dist2)
                    delta = delta - dist
                    rmin = r[a] if r[a] < r[b] else r[b]
                    if delta / rmin > worst:
                        worst = delta / rmin
                    if dist > 0.0:
                        k = 0.5 * weight * delta / dist
                        sx = sx + k * ex
                        sy = sy + k * ey
                        sz = sz + k * ez
                    else:                 # same centre: the lower index moves down in x
                        sx = sx + (0.5 * weight * delta if b < a else -0.5 * weight * delta)
    dx[a, 0] = sx
    dx[a, 1] = sy
    dx[a, 2] = sz
    return worst


# --------------------------------------------------------------------- triangle meshes
cdef inline double _dot(double ax, double ay, double az, double bx, double by,
                        double bz) noexcept nogil:
    return ax * bx + ay * by + az * bz


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _closest_on_triangle(const double[:, :, ::1] t, Py_ssize_t f, double px, double py,
                               double pz, double* q) noexcept nogil:
    """Closest point q of triangle f to p (Ericson, Real-Time Collision Detection 5.1.5)."""
    cdef double ax = t[f, 0, 0], ay = t[f, 0, 1], az = t[f, 0, 2]
    cdef double abx = t[f, 1, 0] - ax, aby = t[f, 1, 1] - ay, abz = t[f, 1, 2] - az
    cdef double acx = t[f, 2, 0] - ax, acy = t[f, 2, 1] - ay, acz = t[f, 2, 2] - az
    cdef double apx = px - ax, apy = py - ay, apz = pz - az
    cdef double d1 = _dot(abx, aby, abz, apx, apy, apz), d2 = _dot(acx, acy, acz, apx, apy, apz)
    cdef double d3, d4, d5, d6, va, vb, vc, v, w, den
    cdef double bpx, bpy, bpz, cpx, cpy, cpz
    if d1 <= 0.0 and d2 <= 0.0:
        q[0] = ax; q[1] = ay; q[2] = az
        return
    bpx = px - t[f, 1, 0]; bpy = py - t[f, 1, 1]; bpz = pz - t[f, 1, 2]
    d3 = _dot(abx, aby, abz, bpx, bpy, bpz)
    d4 = _dot(acx, acy, acz, bpx, bpy, bpz)
    if d3 >= 0.0 and d4 <= d3:
        q[0] = t[f, 1, 0]; q[1] = t[f, 1, 1]; q[2] = t[f, 1, 2]
        return
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        q[0] = ax + v * abx; q[1] = ay + v * aby; q[2] = az + v * abz
        return
    cpx = px - t[f, 2, 0]; cpy = py - t[f, 2, 1]; cpz = pz - t[f, 2, 2]
    d5 = _dot(abx, aby, abz, cpx, cpy, cpz)
    d6 = _dot(acx, acy, acz, cpx, cpy, cpz)
    if d6 >= 0.0 and d5 <= d6:
        q[0] = t[f, 2, 0]; q[1] = t[f, 2, 1]; q[2] = t[f, 2, 2]
        return
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        q[0] = ax + w * acx; q[1] = ay + w * acy; q[2] = az + w * acz
        return
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        q[0] = t[f, 1, 0] + w * (t[f, 2, 0] - t[f, 1, 0])
        q[1] = t[f, 1, 1] + w * (t[f, 2, 1] - t[f, 1, 1])
        q[2] = t[f, 1, 2] + w * (t[f, 2, 2] - t[f, 1, 2])
        return
    den = 1.0 / (va + vb + vc)
    v = vb * den
    w = vc * den
    q[0] = ax + abx * v + acx * w
    q[1] = ay + aby * v + acy * w
    q[2] = az + abz * v + acz * w


@cython.boundscheck(False)
@cython.wraparound(False)
def mesh_signed_distance(const double[:, ::1] p, const double[:, :, ::1] tri,
                         const double[:, ::1] centre, const double[::1] radius,
                         double[::1] dist, double[:, ::1] grad, int n_threads):
    """Signed distance of each point p to the closed surface of triangles tri (nf, 3, 3)
    (negative inside: |winding number| > 1/2) and its gradient (unit vector from the
    closest point, flipped inside). centre, radius: bounding spheres of the triangles."""
    cdef Py_ssize_t i, n = p.shape[0]
    for i in prange(n, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        _signed_distance_one(i, p, tri, centre, radius, dist, grad)


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void _signed_distance_one(Py_ssize_t i, const double[:, ::1] p, const double[:, :, ::1] tri,
                               const double[:, ::1] centre, const double[::1] radius,
                               double[::1] dist, double[:, ::1] grad) noexcept nogil:
    cdef Py_ssize_t f, nf = tri.shape[0]
    cdef double best = 1e300, d2, dc, wind = 0.0
    cdef double q[3]
    cdef double bq[3]
    cdef double ax, ay, az, bx, by, bz, cx, cy, cz, la, lb, lc, num, den, s, gx, gy, gz
    bq[0] = p[i, 0]
    bq[1] = p[i, 1]
    bq[2] = p[i, 2]
    for f in range(nf):
        # winding number: solid angle of triangle f seen from p
        ax = tri[f, 0, 0] - p[i, 0]; ay = tri[f, 0, 1] - p[i, 1]; az = tri[f, 0, 2] - p[i, 2]
        bx = tri[f, 1, 0] - p[i, 0]; by = tri[f, 1, 1] - p[i, 1]; bz = tri[f, 1, 2] - p[i, 2]
        cx = tri[f, 2, 0] - p[i, 0]; cy = tri[f, 2, 1] - p[i, 1]; cz = tri[f, 2, 2] - p[i, 2]
        la = sqrt(ax * ax + ay * ay + az * az)
        lb = sqrt(bx * bx + by * by + bz * bz)
        lc = sqrt(cx * cx + cy * cy + cz * cz)
        num = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
        den = la * lb * lc + _dot(ax, ay, az, bx, by, bz) * lc \
            + _dot(ax, ay, az, cx, cy, cz) * lb + _dot(bx, by, bz, cx, cy, cz) * la
        wind += 2.0 * atan2(num, den)
        # distance, triangles culled by their bounding sphere
        dc = sqrt((p[i, 0] - centre[f, 0]) ** 2 + (p[i, 1] - centre[f, 1]) ** 2
                  + (p[i, 2] - centre[f, 2]) ** 2) - radius[f]
        if dc > 0.0 and dc * dc >= best:
            continue
        _closest_on_triangle(tri, f, p[i, 0], p[i, 1], p[i, 2], q)
        d2 = (p[i, 0] - q[0]) ** 2 + (p[i, 1] - q[1]) ** 2 + (p[i, 2] - q[2]) ** 2
        if d2 < best:
            best = d2
            bq[0] = q[0]
            bq[1] = q[1]
            bq[2] = q[2]
    s = -1.0 if fabs(wind) > 2.0 * 3.141592653589793 else 1.0   # |w| = |wind| / 4 pi > 1/2
    d2 = sqrt(best)
    dist[i] = s * d2
    gx = 0.0
    gy = 0.0
    gz = 0.0
    if d2 > 0.0:
        gx = (p[i, 0] - bq[0]) / d2
        gy = (p[i, 1] - bq[1]) / d2
        gz = (p[i, 2] - bq[2]) / d2
    grad[i, 0] = s * gx
    grad[i, 1] = s * gy
    grad[i, 2] = s * gz


@cython.boundscheck(False)
@cython.wraparound(False)
def grid_eval(const double[:, ::1] p, const double[:, :, ::1] g, const double[::1] origin,
              double h, double[::1] f, double[:, ::1] grad, int n_threads):
    """Trilinear interpolation of the node values g (nx, ny, nz) (node (i, j, k) at
    origin + h (i, j, k)) at the points p, with the gradient of the interpolant. Outside
    the grid: the value at the closest grid point plus the distance to it (an upper bound
    of the distance for a signed distance that is positive on the grid's faces)."""
    cdef Py_ssize_t n = p.shape[0], m
    cdef long nx = g.shape[0], ny = g.shape[1], nz = g.shape[2]
    cdef long i, j, k
    cdef double ux, uy, uz, qx, qy, qz, ox, oy, oz, out, c00, c01, c10, c11, c0, c1
    cdef double v000, v001, v010, v011, v100, v101, v110, v111, hx, hy, hz
    for m in prange(n, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        qx = (p[m, 0] - origin[0]) / h
        qy = (p[m, 1] - origin[1]) / h
        qz = (p[m, 2] - origin[2]) / h
        ox = qx - (nx - 1) if qx > nx - 1 else (qx if qx < 0.0 else 0.0)
        oy = qy - (ny - 1) if qy > ny - 1 else (qy if qy < 0.0 else 0.0)
        oz = qz - (nz - 1) if qz > nz - 1 else (qz if qz < 0.0 else 0.0)
        qx = qx - ox
        qy = qy - oy
        qz = qz - oz
        i = <long>floor(qx)
        j = <long>floor(qy)
        k = <long>floor(qz)
        if i > nx - 2:
            i = nx - 2
        if j > ny - 2:
            j = ny - 2
        if k > nz - 2:
            k = nz - 2
        ux = qx - i
        uy = qy - j
        uz = qz - k
        v000 = g[i, j, k]; v001 = g[i, j, k + 1]; v010 = g[i, j + 1, k]; v011 = g[i, j + 1, k + 1]
        v100 = g[i + 1, j, k]; v101 = g[i + 1, j, k + 1]; v110 = g[i + 1, j + 1, k]
        v111 = g[i + 1, j + 1, k + 1]
        c00 = v000 + uz * (v001 - v000)
        c01 = v010 + uz * (v011 - v010)
        c10 = v100 + uz * (v101 - v100)
        c11 = v110 + uz * (v111 - v110)
        c0 = c00 + uy * (c01 - c00)
        c1 = c10 + uy * (c11 - c10)
        hx = (c1 - c0) / h
        hy = ((1.0 - ux) * (c01 - c00) + ux * (c11 - c10)) / h
        hz = ((1.0 - ux) * ((1.0 - uy) * (v001 - v000) + uy * (v011 - v010))
              + ux * ((1.0 - uy) * (v101 - v100) + uy * (v111 - v110))) / h
        out = sqrt(ox * ox + oy * oy + oz * oz)
        f[m] = c0 + ux * (c1 - c0) + out * h
        if out > 0.0:
            grad[m, 0] = ox / out
            grad[m, 1] = oy / out
            grad[m, 2] = oz / out
        else:
            grad[m, 0] = hx
            grad[m, 1] = hy
            grad[m, 2] = hz
