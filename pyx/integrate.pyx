# cython: language_level=3
"""Leap-frog integration with the time indices of seed 000.

State between steps: positions, orientations and forces at t, velocities and
angular velocities at t + dt/2. A step to t + dt is
  drift:  x(t+dt) = x(t) + v(t+dt/2) dt,  q(t+dt) = exp(w(t+dt/2) dt) q(t)
  (forces at t+dt from x(t+dt) and v(t+dt/2), the mid-step velocity of the contact)
  kick:   v(t+3dt/2) = v(t+dt/2) + (F/m + g) dt,  w += T/I dt  (spheres: isotropic I)
Blocked degrees of freedom (bit 0..5 = x, y, z, rx, ry, rz) keep their velocity,
which is how a prescribed velocity is imposed. Only owned particles (first n_own)
are integrated; ghosts are copies refreshed from their owners.

The particles go in blocks of BLOCK: the divisions of a block (dt/m, dt/I and those
of the rotation's series) run in their own short loops over contiguous arrays, where
the compiler vectorizes them; every value is the one a particle-by-particle loop
gives (IEEE division is exact to the last bit in a vector lane too).
"""
from cython.parallel cimport prange
from libc.math cimport isfinite, sqrt, sin, cos
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from vecmath cimport in_series, half_cos_series, half_sinc_series
from arrays cimport data, rows, F64, U8
cimport numpy as cnp

cnp.import_array()         # numpy's C API, for arrays.pxd


cdef enum:
    BLOCK = 128


cdef extern from *:
    """
    typedef double pdem_q4 __attribute__((vector_size(32)));
    /* a where the mask m is all ones, else b (bit for bit: a select of integers, which
       vectorizes where a select of doubles does not) */
    static inline double pdem_pick(double a, double b, unsigned long long m) {
        unsigned long long x, y;
        __builtin_memcpy(&x, &a, sizeof x);
        __builtin_memcpy(&y, &b, sizeof y);
        x = (x & m) | (y & ~m);
        __builtin_memcpy(&a, &x, sizeof a);
        return a;
    }
    /* q_j <- qrenorm(qmul(a_j, q_j)) (vecmath.pxd, its operations in its order) for the
       m quaternions of q where spin_j is all ones (the others keep their bits), with
       a_j = (cw_j, rx_j s_j, ry_j s_j, rz_j s_j): a loop over particles that vectorizes */
    static void pdem_turn(double* restrict q, const double* restrict rx,
                          const double* restrict ry, const double* restrict rz,
                          const double* restrict cw, const double* restrict s,
                          const unsigned long long* restrict spin, long m) {
        for (long j = 0; j < m; j++) {
            double aw = cw[j], ax = rx[j] * s[j], ay = ry[j] * s[j], az = rz[j] * s[j];
            double bw = q[4 * j], bx = q[4 * j + 1], by = q[4 * j + 2], bz = q[4 * j + 3];
            double w = aw * bw - ax * bx - ay * by - az * bz;
            double x = aw * bx + ax * bw + ay * bz - az * by;
            double y = aw * by - ax * bz + ay * bw + az * bx;
            double z = aw * bz + ax * by - ay * bx + az * bw;
            double f = 0.5 * (3.0 - (w * w + x * x + y * y + z * z));
            q[4 * j] = pdem_pick(w * f, bw, spin[j]);
            q[4 * j + 1] = pdem_pick(x * f, bx, spin[j]);
            q[4 * j + 2] = pdem_pick(y * f, by, spin[j]);
            q[4 * j + 3] = pdem_pick(z * f, bz, spin[j]);
        }
    }
    /* The largest of a[0 .. m-1], values >= 0 or NaN (at least 0; NaN if any is NaN):
       the largest of their bit patterns as unsigned integers, which order such values
       and put every NaN last, in a loop the compiler vectorizes (a floating-point
       maximum would be a chain of dependent compares). */
    static inline double pdem_largest(const double* a, long m) {
        unsigned long long top = 0, bits;
        double r;
        for (long j = 0; j < m; j++) {
            __builtin_memcpy(&bits, a + j, sizeof bits);
            top = bits > top ? bits : top;
        }
        __builtin_memcpy(&r, &top, sizeof r);
        return r;
    }
    static inline pdem_q4 pdem_v3(const double* p) {        /* lanes 0-2; lane 3 zero */
        pdem_q4 x = {p[0], p[1], p[2], 0.0};
        return x;
    }
    /* the kick of one particle without blocked freedoms, v += f s + g and w += t u, each
       3-vector in lanes 0-2 of one vector (the same operations; g = pdem_v3(g dt), made
       once per block); returns the sum of the new values' lanes times 0: 0 when all are
       finite, else NaN */
    static inline double pdem_kick(double* v, double* w, const double* f, const double* t,
                                   double s, double u, pdem_q4 g) {
        pdem_q4 x = pdem_v3(v) + pdem_v3(f) * s + g, y = pdem_v3(w) + pdem_v3(t) * u;
        v[0] = x[0]; v[1] = x[1]; v[2] = x[2];
        w[0] = y[0]; w[1] = y[1]; w[2] = y[2];
        x = 0.0 * (x + y);
        return x[0] + x[1] + x[2];
    }
    """
    void turn "pdem_turn" (double* q, const double* rx, const double* ry, const double* rz,
                           const double* cw, const double* s, const unsigned long long* spin,
                           long m) noexcept nogil
    ctypedef struct q4 "pdem_q4":       # 4 doubles, opaque here
        pass
    q4 v3_of "pdem_v3" (const double* p) noexcept nogil
    double largest "pdem_largest" (const double* a, long m) noexcept nogil
    double kick_free "pdem_kick" (double* v, double* w, const double* f, const double* t,
                                  double s, double u, q4 g) noexcept nogil


cdef inline double speed2_in(const double* v, const double* c) noexcept nogil:
    """|v - c|^2: the squared speed in the frame moving at c, in one order (the same bits
    wherever it is taken; c = 0: |v|^2 bit for bit)."""
    cdef double x = v[0] - c[0], y = v[1] - c[1], z = v[2] - c[2]
    return x * x + y * y + z * z


cdef int frame_of(object frame, double* out) except -1:
    """out = the 6 numbers of `frame` (its shift since the build, then its velocity:
    MovingFrame.at), or zeros (the frame at rest) for None."""
    cdef int i
    if frame is None:
        memset(out, 0, 6 * sizeof(double))
        return 0
    if len(frame) != 6:
        raise ValueError("frame: %d numbers, expected 6 (shift, velocity)" % len(frame))
    for i in range(6):
        out[i] = frame[i]
    return 0


cdef inline void turn_block(double* q, const double* w, double dt, Py_ssize_t a,
                            Py_ssize_t m) noexcept nogil:
    """Turn the orientations of rows a..a+m (m <= BLOCK) by their spin over dt: q <-
    qrenorm(qmul(qaxisangle(w dt), q)), bit for bit (vecmath.pxd); a row without spin
    keeps its bits."""
    cdef double h2[BLOCK]
    cdef double cw[BLOCK]
    cdef double s[BLOCK]
    cdef double rot[3][BLOCK]
    cdef unsigned long long spin[BLOCK]
    cdef Py_ssize_t i, j
    cdef double rx, ry, rz, ang
    for j in range(m):
        i = a + j
        rx = rot[0][j] = w[3 * i] * dt
        ry = rot[1][j] = w[3 * i + 1] * dt
        rz = rot[2][j] = w[3 * i + 2] * dt
        h2[j] = 0.25 * (rx * rx + ry * ry + rz * rz)      # qaxisangle's, in its order
        spin[j] = 0ULL - <unsigned long long>((w[3 * i] != 0.0) | (w[3 * i + 1] != 0.0)
                                              | (w[3 * i + 2] != 0.0))
    for j in range(m):                                     # vectorized divisions
        cw[j] = half_cos_series(h2[j])
        s[j] = half_sinc_series(h2[j])
    for j in range(m):                                     # large angles: qaxisangle's
        if not in_series(h2[j]):
            ang = sqrt(4.0 * h2[j])
            cw[j] = cos(0.5 * ang)
            s[j] = sin(0.5 * ang) / ang
    turn(q + 4 * a, rot[0], rot[1], rot[2], cw, s, spin, m)


cdef inline double drift_block(double* pos, const double* vel, const double* w, double* q,
                               const double* base, const double* frame, double dt,
                               Py_ssize_t a, Py_ssize_t b, double* speed2) noexcept nogil:
    """Drift rows a..b (b - a <= BLOCK); return their largest squared displacement
    from `base` in the moving frame (frame: its shift, then its velocity; NaN if any
    is NaN); speed2[0]: their largest squared speed in that frame. pos may be base;
    base NULL: positions alone (0 and 0: the kick predicted them); q NULL: no
    orientations."""
    cdef double d2[BLOCK]
    cdef double v2[BLOCK]
    cdef Py_ssize_t i, j, m = b - a
    cdef double dx, dy, dz
    for j in range(3 * m):
        pos[3 * a + j] = pos[3 * a + j] + vel[3 * a + j] * dt
    d2[0] = speed2[0] = 0.0
    if base != NULL:
        for j in range(m):
            i = a + j
            dx = (pos[3 * i] - base[3 * i]) - frame[0]
            dy = (pos[3 * i + 1] - base[3 * i + 1]) - frame[1]
            dz = (pos[3 * i + 2] - base[3 * i + 2]) - frame[2]
            d2[j] = dx * dx + dy * dy + dz * dz
            v2[j] = speed2_in(vel + 3 * i, frame + 3)
        speed2[0] = largest(v2, m)
    if q != NULL:
        turn_block(q, w, dt, a, m)
    return largest(d2, m if base != NULL else 1)


cdef inline double kick_block(double* vel, double* w, const double* force,
                              const double* torque, const double* mass, const double* inertia,
                              const unsigned char* blocked, const double* gdt, double dt,
                              Py_ssize_t a, Py_ssize_t b, const double* pos,
                              const double* base, const double* frame, double* moved2,
                              double* speed2) noexcept nogil:
    """Kick rows a..b (b - a <= BLOCK); return 0 if every new velocity is finite (else
    NaN). With pos: moved2[0], speed2[0] = the largest squared displacement from base
    and the largest squared speed that the next drift will give in its frame (its sums,
    in its order)."""
    cdef double im[BLOCK]
    cdef double ii[BLOCK]
    cdef Py_ssize_t i, j, m = b - a
    cdef int d
    cdef unsigned char blk
    cdef double check = 0.0, dx, dy, dz
    cdef q4 g4 = v3_of(gdt)
    for j in range(m):                                     # vectorized divisions
        im[j] = dt / mass[a + j]
        ii[j] = dt / inertia[a + j]
    for j in range(m):
        i = a + j
        blk = blocked[i]
        if blk == 0:
            check += kick_free(vel + 3 * i, w + 3 * i, force + 3 * i, torque + 3 * i, im[j],
                               ii[j], g4)
            continue
        for d in range(3):
            if not (blk & (1 << d)):
                vel[3 * i + d] = vel[3 * i + d] + force[3 * i + d] * im[j] + gdt[d]
            if not (blk & (8 << d)):
                w[3 * i + d] = w[3 * i + d] + torque[3 * i + d] * ii[j]
        # 0 * x is 0 for finite x and NaN otherwise: one sum flags any non-finite value
        check += 0.0 * (vel[3 * i] + vel[3 * i + 1] + vel[3 * i + 2] + w[3 * i]
                        + w[3 * i + 1] + w[3 * i + 2])
    if pos != NULL:                                        # the block is in cache
        for j in range(m):                                 # (im, ii: scratch now)
            i = a + j
            dx = ((pos[3 * i] + vel[3 * i] * dt) - base[3 * i]) - frame[0]
            dy = ((pos[3 * i + 1] + vel[3 * i + 1] * dt) - base[3 * i + 1]) - frame[1]
            dz = ((pos[3 * i + 2] + vel[3 * i + 2] * dt) - base[3 * i + 2]) - frame[2]
            im[j] = dx * dx + dy * dy + dz * dz
            ii[j] = speed2_in(vel + 3 * i, frame + 3)
        moved2[0] = largest(im, m)
        speed2[0] = largest(ii, m)
    return check


cdef void* rows_of(object a, str name, Py_ssize_t n, Py_ssize_t cols, bint writable,
                   int typenum=F64) except? NULL:
    """The data of array `a` of n or more rows (of `cols` columns; 0: one dimension) of
    numpy type `typenum` (arrays.pxd data)."""
    cdef void* p = data(a, name, typenum, 2 if cols else 1, cols, writable)
    if rows(a) < n:
        raise ValueError("%s: %d rows for %d particles" % (name, rows(a), n))
    return p


def drift(pos, vel, angvel, orient, pos_at_build, double dt, int n_own, int n_threads,
          frame=None):
    """Advance positions and orientations; return (the largest squared displacement
    since the last neighbor-list build: the rebuild criterion, the largest squared
    speed of the drift: pdem.contact.near), each NaN if any of its values is NaN, both
    relative to a frame in uniform motion (frame: None, at rest, or 6 numbers: its
    shift since the build, then its velocity; pdem/contact/frame.py). pos_at_build
    None: the positions and orientations alone, (0.0, 0.0) returned (the kick
    predicted them). orient None: positions alone (spheres whose orientations are not
    tracked: Simulation's sphere_orientations).
    The arrays: the store's (n, 3) and (n, 4) float64 fields (arrays.pxd data)."""
    cdef Py_ssize_t k, nb = (n_own + BLOCK - 1) // BLOCK
    cdef int nt = max(1, n_threads)
    cdef double worst, fastest
    cdef double* per_block
    if n_own <= 0:
        return 0.0, 0.0
    cdef double* x = <double*>rows_of(pos, "pos", n_own, 3, True)
    cdef const double* v = <const double*>rows_of(vel, "vel", n_own, 3, False)
    cdef const double* w = <const double*>rows_of(angvel, "angvel", n_own, 3, False)
    cdef double* q = NULL
    if orient is not None:
        q = <double*>rows_of(orient, "orient", n_own, 4, True)
    cdef const double* base = NULL
    if pos_at_build is not None:
        base = <const double*>rows_of(pos_at_build, "pos_at_build", n_own, 3, False)
    cdef double moving[6]
    frame_of(frame, moving)
    per_block = <double*>malloc(2 * nb * sizeof(double))
    if per_block == NULL:
        raise MemoryError()
    for k in prange(nb, nogil=True, schedule='static', num_threads=nt):
        per_block[k] = drift_block(x, v, w, q, base, moving, dt, k * BLOCK,
                                   min(n_own, (k + 1) * BLOCK), &per_block[nb + k])
    worst, fastest = largest(per_block, nb), largest(per_block + nb, nb)
    free(per_block)
    return worst, fastest


cdef kick_rows(vel, angvel, force, torque, mass, inertia, blocked, gravity, double dt,
               int n_own, int n_threads, const double* pos, const double* base,
               const double* frame):
    """(first particle with a non-finite new velocity or -1, and when pos is given the
    next drift's values: its largest squared displacement from base and squared speed,
    in the frame)."""
    cdef Py_ssize_t k, i, nb = (n_own + BLOCK - 1) // BLOCK
    cdef int nt = max(1, n_threads), d
    cdef double check = 0.0, worst, fastest
    cdef double gdt[3]
    cdef double* per_block
    cdef const double* g = <const double*>data(gravity, "gravity", F64, 1, 0, False)
    if rows(gravity) != 3:
        raise ValueError("gravity: %d components, expected 3" % rows(gravity))
    for d in range(3):
        gdt[d] = g[d] * dt
    if n_own <= 0:
        return -1, 0.0, 0.0
    cdef double* v = <double*>rows_of(vel, "vel", n_own, 3, True)
    cdef double* w = <double*>rows_of(angvel, "angvel", n_own, 3, True)
    cdef const double* f = <const double*>rows_of(force, "force", n_own, 3, False)
    cdef const double* t = <const double*>rows_of(torque, "torque", n_own, 3, False)
    cdef const double* m = <const double*>rows_of(mass, "mass", n_own, 0, False)
    cdef const double* inert = <const double*>rows_of(inertia, "inertia", n_own, 0, False)
    cdef const unsigned char* blk = <const unsigned char*>rows_of(blocked, "blocked", n_own, 0,
                                                                 False, U8)
    per_block = <double*>malloc(2 * nb * sizeof(double))
    if per_block == NULL:
        raise MemoryError()
    for k in prange(nb, nogil=True, schedule='static', num_threads=nt):
        per_block[k] = per_block[nb + k] = 0.0
        check += kick_block(v, w, f, t, m, inert, blk, gdt, dt, k * BLOCK,
                            min(n_own, (k + 1) * BLOCK), pos, base, frame, &per_block[k],
                            &per_block[nb + k])
    worst, fastest = largest(per_block, nb), largest(per_block + nb, nb)
    free(per_block)
    if check == 0.0:
        return -1, worst, fastest
    for i in range(n_own):
        if not (isfinite(v[3 * i]) and isfinite(v[3 * i + 1]) and isfinite(v[3 * i + 2])
                and isfinite(w[3 * i]) and isfinite(w[3 * i + 1]) and isfinite(w[3 * i + 2])):
            return i, worst, fastest
    return -1, worst, fastest


def kick(vel, angvel, force, torque, mass, inertia, blocked, gravity, double dt, int n_own,
         int n_threads):
    """Advance velocities; return the index of the first particle whose new velocity
    or angular velocity is not finite, or -1. The arrays: the store's float64 fields,
    blocked uint8, gravity (3,) (arrays.pxd data)."""
    return kick_rows(vel, angvel, force, torque, mass, inertia, blocked, gravity, dt, n_own,
                     n_threads, NULL, NULL, NULL)[0]


def kick_and_predict(vel, angvel, force, torque, mass, inertia, blocked, gravity, double dt,
                     int n_own, int n_threads, pos, pos_at_build, frame=None):
    """kick, and in the same pass the values the next drift will return in `frame` (the
    frame it will be given: MovingFrame.ahead): the largest squared displacement of
    x + v dt from pos_at_build, bit for bit, and the largest squared speed. The
    rebuild decision of the next step rides on this step's reduction. Returns (kick's
    index, those two values)."""
    if n_own <= 0:
        return -1, 0.0, 0.0
    cdef double moving[6]
    frame_of(frame, moving)
    return kick_rows(vel, angvel, force, torque, mass, inertia, blocked, gravity, dt, n_own,
                     n_threads, <const double*>rows_of(pos, "pos", n_own, 3, False),
                     <const double*>rows_of(pos_at_build, "pos_at_build", n_own, 3, False),
                     moving)
