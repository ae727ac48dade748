# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Particle DDA (seed 002, "颗粒DDA"): the kernels of the matrix-free implicit step
(pdem.dda.scheme).

Unknowns: nd per particle row, the step's correction delta = (du, dv, dw, rx, ry, rz)
of the rigid displacement (translation and rotation; 2D: z, rx, ry are fixed dofs),
nd = 6; deformable particles (nd = 12) add the strain increments (exx, eyy, ezz, gyz,
gzx, gxy) (engineering shears; 2D: ezz, gyz, gzx are fixed dofs): Shi's first-order
displacement function u(a) = t + theta x a + eps a at a = x - x_centre.
A contact c joins particle i = ci[c] and body j = cj[c] (a particle when kind[c] == 0,
else a fixed or moving wall); its normal n points from j to i, its contact point is
x_i - r_i n on i and x_j + r_j n on j, so the relative displacement of the contact
points is Delta = G_i delta_i - G_j delta_j with G = [I, -[a]x, E(a)] (theta x a = -a x
theta; E(a) eps = eps a, the strain columns of deformable particles),
a_i = -r_i n, a_j = r_j n. Contact energy: Delta^T S Delta / 2 + h . Delta with
  open:  S = 0, h = 0
  stick: S = k_n n n^T + k_s (I - n n^T), h = k_n g n + k_s e      (Shi 1988, ch. 4:
         normal and shear penalty springs; e: the shear spring's elongation so far)
  slide: S = k_n n n^T,                  h = k_n g n + f_f s      (friction f_f along
         the sliding direction s applied as a load, Shi 1988 sec. 4.3)
whose blocks K_ii = G_i^T S G_i, K_jj = G_j^T S G_j, K_ij = -G_i^T S G_j, K_ji = K_ij^T
and loads -G_i^T h, +G_j^T h are the contact sub-matrices (contact_blocks).

The per-particle rows (seed 002: sum(nK .* x(nBall) .* nFilter, 2) = b): row p holds
its diagonal block diag[p] (inertia 2 M / dt^2 plus its contacts' K_pp) and one block
nK[e] per neighbour nBall[e] (gather_rows); nFilter is the dof mask (fixed dofs: an
identity row and column). Each row sums its contacts in contact-list order, which is
(id_i, kind, id_j): the same bits on any number of ranks and threads.
"""
from cython.parallel cimport prange

cdef enum:
    FREEZE = 3          # state changes of a contact in a step before it may only open or stop sliding
from libc.math cimport sqrt, fabs, cos, sin
import numpy as np


cdef inline void g_matrix(double ax, double ay, double az, int nd, double* G) noexcept nogil:
    """G = [I, -[a]x, E(a)] (3 x nd, rows): u(contact point) = G (translation, rotation,
    strains): E(a) eps = (exx ax + gxy ay / 2 + gzx az / 2, gxy ax / 2 + eyy ay + gyz az
    / 2, gzx ax / 2 + gyz ay / 2 + ezz az) when nd = 12."""
    cdef int k
    for k in range(3 * nd):
        G[k] = 0.0
    G[0] = 1.0; G[nd + 1] = 1.0; G[2 * nd + 2] = 1.0
    # -[a]x = [[0, az, -ay], [-az, 0, ax], [ay, -ax, 0]]
    G[4] = az; G[5] = -ay
    G[nd + 3] = -az; G[nd + 5] = ax
    G[2 * nd + 3] = ay; G[2 * nd + 4] = -ax
    if nd == 12:
        G[6] = ax; G[10] = 0.5 * az; G[11] = 0.5 * ay
        G[19] = ay; G[21] = 0.5 * az; G[23] = 0.5 * ax
        G[32] = az; G[33] = 0.5 * ay; G[34] = 0.5 * ax


cdef inline void gtsg(const double* Ga, const double* S, const double* Gb, double sign,
                      int nd, double* out) noexcept nogil:
    """out (nd x nd) = sign Ga^T S Gb."""
    cdef double SG[36]
    cdef int r, c, k
    for r in range(3):
        for c in range(nd):
            SG[r * nd + c] = S[r * 3] * Gb[c] + S[r * 3 + 1] * Gb[nd + c] + S[r * 3 + 2] * Gb[2 * nd + c]
    for r in range(nd):
        for c in range(nd):
            out[r * nd + c] = sign * (Ga[r] * SG[c] + Ga[nd + r] * SG[nd + c] + Ga[2 * nd + r] * SG[2 * nd + c])


cdef void one_contact(signed char kind, double nx, double ny, double nz, double g,
                     double ri, double rj, signed char code, double ex, double ey,
                     double ez, double ff, double sx, double sy, double sz, double kn,
                     double ks, int nd, double* kii, double* kjj, double* kij, double* bi,
                     double* bj) noexcept nogil:
    cdef double S[9]
    cdef double h[3]
    cdef double Gi[36]
    cdef double Gj[36]
    cdef int r, k
    for k in range(9):
        S[k] = 0.0
    h[0] = 0.0; h[1] = 0.0; h[2] = 0.0
    if code != 0:
        S[0] = kn * nx * nx; S[1] = kn * nx * ny; S[2] = kn * nx * nz
        S[3] = kn * ny * nx; S[4] = kn * ny * ny; S[5] = kn * ny * nz
        S[6] = kn * nz * nx; S[7] = kn * nz * ny; S[8] = kn * nz * nz
        h[0] = kn * g * nx; h[1] = kn * g * ny; h[2] = kn * g * nz
        if code == 1:
            S[0] += ks * (1.0 - nx * nx); S[1] -= ks * nx * ny; S[2] -= ks * nx * nz
            S[3] -= ks * ny * nx; S[4] += ks * (1.0 - ny * ny); S[5] -= ks * ny * nz
            S[6] -= ks * nz * nx; S[7] -= ks * nz * ny; S[8] += ks * (1.0 - nz * nz)
            h[0] += ks * ex; h[1] += ks * ey; h[2] += ks * ez
        else:
            h[0] += ff * sx; h[1] += ff * sy; h[2] += ff * sz
    g_matrix(-ri * nx, -ri * ny, -ri * nz, nd, Gi)
    g_matrix(rj * nx, rj * ny, rj * nz, nd, Gj)
    gtsg(Gi, S, Gi, 1.0, nd, kii)
    gtsg(Gj, S, Gj, 1.0, nd, kjj)
    gtsg(Gi, S, Gj, -1.0, nd, kij)
    for r in range(nd):
        bi[r] = -(Gi[r] * h[0] + Gi[nd + r] * h[1] + Gi[2 * nd + r] * h[2])
        bj[r] = Gj[r] * h[0] + Gj[nd + r] * h[1] + Gj[2 * nd + r] * h[2]


def contact_blocks(const signed char[::1] kind, const int[::1] ci, const int[::1] cj,
                   const double[:, ::1] normal, const double[::1] gap,
                   const double[::1] radius, const signed char[::1] code,
                   const double[:, ::1] e, const double[::1] ff, const double[:, ::1] sdir,
                   double kn, double ks, double[:, ::1] kii, double[:, ::1] kjj,
                   double[:, ::1] kij, double[:, ::1] bi, double[:, ::1] bj, int n_threads):
    """The sub-matrices and loads of every contact (see the module docstring); nd (6 or
    12) from the width of bi."""
    cdef Py_ssize_t m = kind.shape[0], c
    cdef int nd = bi.shape[1]
    cdef double rj
    for c in prange(m, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        rj = radius[cj[c]] if kind[c] == 0 else 0.0
        one_contact(kind[c], normal[c, 0], normal[c, 1], normal[c, 2], gap[c], radius[ci[c]],
                    rj, code[c], e[c, 0], e[c, 1], e[c, 2], ff[c], sdir[c, 0], sdir[c, 1],
                    sdir[c, 2], kn, ks, nd, &kii[c, 0], &kjj[c, 0], &kij[c, 0], &bi[c, 0],
                    &bj[c, 0])


def gather_rows(const long[::1] start, const int[::1] entry, const int[::1] ci,
                const int[::1] cj, const signed char[::1] kind, const double[:, ::1] kii,
                const double[:, ::1] kjj, const double[:, ::1] kij, const double[:, ::1] bi,
                const double[:, ::1] bj, const double[:, ::1] own_diag,
                const double[:, ::1] load, const double[:, ::1] mask, double[:, ::1] diag,
                double[:, ::1] nK, int[::1] nBall, double[:, ::1] b, Py_ssize_t n_rows,
                int n_threads):
    """Rows p < n_rows: diag[p] (nd x nd: own_diag[p], the particle's inertia and
    elastic blocks, plus its contacts' K_pp), b[p] (nd) and one neighbour block nK[e]
    with its column row nBall[e] per entry e of the CSR (start, entry: 2 c + side, from
    contacts.build_gather_lists; walls get nBall = -1), in entry order, masked by mask
    (nFilter: a fixed dof has an identity row and column and a zero load)."""
    cdef Py_ssize_t p, q, t
    cdef int c, side, r, k, other
    cdef int nd = b.shape[1], nn = nd * nd
    for p in prange(n_rows, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        for k in range(nn):
            diag[p, k] = own_diag[p, k]
        for r in range(nd):
            b[p, r] = load[p, r]
        for t in range(start[p], start[p + 1]):
            c = entry[t] >> 1
            side = entry[t] & 1
            if side == 0:
                for k in range(nn):
                    diag[p, k] = diag[p, k] + kii[c, k]
                for r in range(nd):
                    b[p, r] = b[p, r] + bi[c, r]
                other = cj[c] if kind[c] == 0 else -1
                if other >= 0:
                    for k in range(nn):
                        nK[t, k] = kij[c, k] * mask[p, k // nd] * mask[other, k % nd]
            else:
                for k in range(nn):
                    diag[p, k] = diag[p, k] + kjj[c, k]
                for r in range(nd):
                    b[p, r] = b[p, r] + bj[c, r]
                other = ci[c]
                for k in range(nn):          # K_ji = K_ij^T
                    nK[t, k] = kij[c, (k % nd) * nd + k // nd] * mask[p, k // nd] * mask[other, k % nd]
            nBall[t] = other
        for r in range(nd):
            b[p, r] = b[p, r] * mask[p, r]
            for k in range(nd):
                if mask[p, r] == 0.0 or mask[p, k] == 0.0:
                    diag[p, r * nd + k] = 1.0 if r == k else 0.0


cdef int invert(const double* d, double* inv, int nd) noexcept nogil:
    """inv = d^-1 (nd x nd, nd <= 12, rows; Gauss-Jordan with the diagonal pivots of a
    symmetric positive definite matrix). Returns 0, or 1 when a pivot is not positive."""
    cdef double a[288]
    cdef double piv, f
    cdef int r, c, k, w = 2 * nd
    for r in range(nd):
        for c in range(nd):
            a[r * w + c] = d[r * nd + c]
            a[r * w + nd + c] = 1.0 if r == c else 0.0
    for k in range(nd):
        piv = a[k * w + k]
        if not piv > 0.0:
            return 1
        for c in range(w):
            a[k * w + c] = a[k * w + c] / piv
        for r in range(nd):
            if r != k:
                f = a[r * w + k]
                for c in range(w):
                    a[r * w + c] = a[r * w + c] - f * a[k * w + c]
    for r in range(nd):
        for c in range(nd):
            inv[r * nd + c] = a[r * w + nd + c]
    return 0


def invert_blocks(const double[:, ::1] diag, double[:, ::1] inv, signed char[::1] bad,
                  Py_ssize_t n_rows, int n_threads):
    """inv[p] = diag[p]^-1, the block-Jacobi preconditioner; bad[p] = 1 where the
    block is not positive definite."""
    cdef Py_ssize_t p
    cdef int nd = <int>(sqrt(<double>diag.shape[1]) + 0.5)
    for p in prange(n_rows, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        bad[p] = invert(&diag[p, 0], &inv[p, 0], nd)


cdef inline void block_mul(const double* B, const double* x, double* y, bint add,
                           int nd) noexcept nogil:
    """y (+)= B x for an nd x nd block B (rows)."""
    cdef int r, k
    cdef double s
    for r in range(nd):
        s = 0.0
        for k in range(nd):
            s = s + B[r * nd + k] * x[k]
        y[r] = y[r] + s if add else s


cdef inline void block_mul_nd(const double* B, const double* x, double* y, bint add,
                              int nd) noexcept nogil:
    """block_mul with the size a literal in each branch, so that the compiler unrolls
    the 6 x 6 (rigid) and 12 x 12 (deformable) products alike."""
    if nd == 6:
        block_mul(B, x, y, add, 6)
    else:
        block_mul(B, x, y, add, 12)


cdef inline double row_dot(const double* a, const double* b, int nd) noexcept nogil:
    cdef int r
    cdef double s = 0.0
    for r in range(nd):
        s = s + a[r] * b[r]
    return s


def matvec(const long[::1] start, const int[::1] nBall, const double[:, ::1] nK,
           const double[:, ::1] diag, const double[:, ::1] x, double[:, ::1] y,
           Py_ssize_t n_rows, int n_threads):
    """y[p] = diag[p] x[p] + sum_e nK[e] x[nBall[e]] for rows p < n_rows (entries in
    list order; x holds the ghost rows too)."""
    cdef Py_ssize_t p, t
    cdef int nd = x.shape[1]
    for p in prange(n_rows, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        block_mul_nd(&diag[p, 0], &x[p, 0], &y[p, 0], False, nd)
        for t in range(start[p], start[p + 1]):
            if nBall[t] >= 0:
                block_mul_nd(&nK[t, 0], &x[nBall[t], 0], &y[p, 0], True, nd)


def block_apply(const double[:, ::1] blocks, const double[:, ::1] x, double[:, ::1] y,
                Py_ssize_t n_rows, int n_threads):
    """y[p] = blocks[p] x[p] (the preconditioner)."""
    cdef Py_ssize_t p
    cdef int nd = x.shape[1]
    for p in prange(n_rows, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        block_mul_nd(&blocks[p, 0], &x[p, 0], &y[p, 0], False, nd)


def row_dots(const double[:, ::1] a, const double[:, ::1] b, double[::1] out,
             Py_ssize_t n_rows, int n_threads):
    """out[p] = a[p] . b[p] (the per-particle terms of a dot product)."""
    cdef Py_ssize_t p
    cdef int nd = a.shape[1]
    for p in prange(n_rows, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        if nd == 6:
            out[p] = row_dot(&a[p, 0], &b[p, 0], 6)
        else:
            out[p] = row_dot(&a[p, 0], &b[p, 0], 12)


def axpy2(double alpha, const double[:, ::1] p_, const double[:, ::1] q,
          double[:, ::1] x, double[:, ::1] r, Py_ssize_t n_rows, int n_threads):
    """x += alpha p, r -= alpha q (rows < n_rows; the arrays as flat vectors)."""
    cdef Py_ssize_t k, m = n_rows * x.shape[1]
    cdef double* xs
    cdef double* rs
    cdef const double* ps
    cdef const double* qs
    if m == 0:
        return
    xs = &x[0, 0]; rs = &r[0, 0]; ps = &p_[0, 0]; qs = &q[0, 0]
    for k in prange(m, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        xs[k] = xs[k] + alpha * ps[k]
        rs[k] = rs[k] - alpha * qs[k]


def xpby(const double[:, ::1] z, double beta, double[:, ::1] p_, Py_ssize_t n_rows,
         int n_threads):
    """p = z + beta p (rows < n_rows; the arrays as flat vectors)."""
    cdef Py_ssize_t k, m = n_rows * z.shape[1]
    cdef double* ps
    cdef const double* zs
    if m == 0:
        return
    ps = &p_[0, 0]; zs = &z[0, 0]
    for k in prange(m, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        ps[k] = zs[k] + beta * ps[k]


def partials(const double[::1] values):
    """The exact sum of `values` as non-overlapping partials (Shewchuk 1997, the
    algorithm of Python's math.fsum): math.fsum of the partials of several sets gives
    the correctly rounded sum of their union, whatever the split and order."""
    cdef Py_ssize_t n = values.shape[0], k, i, j
    cdef double p[80]
    cdef double x, y, hi, lo, t
    cdef int np_ = 0
    with nogil:
        for k in range(n):
            x = values[k]
            i = 0
            for j in range(np_):
                y = p[j]
                if fabs(x) < fabs(y):
                    t = x; x = y; y = t
                hi = x + y
                lo = y - (hi - x)
                if lo != 0.0:
                    p[i] = lo
                    i += 1
                x = hi
            p[i] = x
            np_ = i + 1
    out = np.zeros(80)
    for k in range(np_):
        out[k] = p[k]
    return out


cdef inline void strain_disp(const double* e, double ax, double ay, double az, double* D,
                             double sign) noexcept nogil:
    """D += sign eps a: the displacement at a of the strains e = (exx, eyy, ezz, gyz,
    gzx, gxy) (engineering shears)."""
    D[0] = D[0] + sign * (e[0] * ax + 0.5 * e[5] * ay + 0.5 * e[4] * az)
    D[1] = D[1] + sign * (0.5 * e[5] * ax + e[1] * ay + 0.5 * e[3] * az)
    D[2] = D[2] + sign * (0.5 * e[4] * ax + 0.5 * e[3] * ay + e[2] * az)


def contact_states(const signed char[::1] kind, const int[::1] ci, const int[::1] cj,
                   const double[:, ::1] normal, const double[::1] gap,
                   const double[::1] radius, const double[:, ::1] x,
                   const double[:, ::1] e, const double[:, ::1] slip,
                   const double[::1] mu, double kn, double ks,
                   double ftol, double eps, signed char[::1] flips, signed char[::1] code, double[::1] ff, double[:, ::1] sdir,
                   double[::1] gap_end, int n_threads):
    """After a solve: the end gap and the open-close check of every contact (Shi 1988
    sec. 4.4): open -> closed (stick) when the end gap is below -eps (a hysteresis
    against open-close cycles), closed -> open when it is positive (tension), stick -> slide when k_s |e + T Delta| > mu F_n, slide
    -> stick when the step's slip (slip + T Delta) turns against the sliding direction
    by more than eps (else the slide's friction load is updated to mu F_n along e + T Delta). Returns the number of contacts whose state changed (a slide whose
    friction load moved by more than ftol relative counts). A contact that changed
    state FREEZE times in the step (flips) may then only open or stop sliding: the
    iteration cannot cycle, and it settles on a side that feeds no energy in (neither
    a spring in tension nor a friction load whose slip reversed); an overlap it leaves
    is checked against the tolerance at the end of the step."""
    cdef Py_ssize_t m = kind.shape[0], c
    cdef int k, changed = 0
    cdef signed char new
    cdef double D[3]
    cdef double nx, ny, nz, ri, rj, dn, g, tx, ty, tz, tn, fn, lim, f_old
    cdef double ax, ay, az, bx, by, bz
    cdef int i, j, nd = x.shape[1]
    for c in range(m):
        nx = normal[c, 0]; ny = normal[c, 1]; nz = normal[c, 2]
        i = ci[c]
        ri = radius[i]
        # Delta = G_i x_i - G_j x_j; theta x a with a_i = -r_i n, a_j = r_j n
        ax = -ri * nx; ay = -ri * ny; az = -ri * nz
        D[0] = x[i, 0] + x[i, 4] * az - x[i, 5] * ay
        D[1] = x[i, 1] + x[i, 5] * ax - x[i, 3] * az
        D[2] = x[i, 2] + x[i, 3] * ay - x[i, 4] * ax
        if nd == 12:
            strain_disp(&x[i, 6], ax, ay, az, D, 1.0)
        if kind[c] == 0:
            j = cj[c]
            rj = radius[j]
            bx = rj * nx; by = rj * ny; bz = rj * nz
            D[0] = D[0] - (x[j, 0] + x[j, 4] * bz - x[j, 5] * by)
            D[1] = D[1] - (x[j, 1] + x[j, 5] * bx - x[j, 3] * bz)
            D[2] = D[2] - (x[j, 2] + x[j, 3] * by - x[j, 4] * bx)
            if nd == 12:
                strain_disp(&x[j, 6], bx, by, bz, D, -1.0)
        dn = D[0] * nx + D[1] * ny + D[2] * nz
        g = gap[c] + dn
        gap_end[c] = g
        new = code[c]
        if code[c] == 0:
            if g < -eps:
                new = 1
        elif g > 0.0:
            new = 0
        else:
            tx = e[c, 0] + D[0] - dn * nx
            ty = e[c, 1] + D[1] - dn * ny
            tz = e[c, 2] + D[2] - dn * nz
            tn = sqrt(tx * tx + ty * ty + tz * tz)
            fn = -kn * g if g < 0.0 else 0.0     # no friction in the tolerated tension
            lim = mu[c] * fn
            if code[c] == 2 and ((slip[c, 0] + D[0] - dn * nx) * sdir[c, 0] +
                                 (slip[c, 1] + D[1] - dn * ny) * sdir[c, 1] +
                                 (slip[c, 2] + D[2] - dn * nz) * sdir[c, 2]) < -eps:
                new = 1             # the slip of the step reversed: the contact sticks
            elif ks * tn <= lim or tn == 0.0:
                new = 1
            else:
                new = 2
                f_old = ff[c]
                # (loads below mu k_n eps, the closing hysteresis, are converged)
                if code[c] == 2 and lim > mu[c] * kn * eps and (
                                    fabs(lim - f_old) > ftol * fabs(lim) or
                                     fabs(tx / tn - sdir[c, 0]) > ftol or
                                     fabs(ty / tn - sdir[c, 1]) > ftol or
                                     fabs(tz / tn - sdir[c, 2]) > ftol):
                    changed += 1
                ff[c] = lim
                sdir[c, 0] = tx / tn; sdir[c, 1] = ty / tn; sdir[c, 2] = tz / tn
        if new != code[c] and flips[c] >= FREEZE and (new == 2 or (new == 1 and code[c] == 0)):
            new = code[c]           # a cycling contact may only open or stop sliding
        if new != code[c]:
            changed += 1
            code[c] = new
            if flips[c] < FREEZE:
                flips[c] += 1
    return changed


# ---------------------------------------------------------------- deformable particles
# Voigt order (xx, yy, zz, yz, zx, xy): strains with engineering shears (gyz = 2 eps_yz),
# stresses with tensor shears; sigma . eps is then the work per volume.

cdef inline void voigt_mul(const double* C, const double* e, double* out, double scale) noexcept nogil:
    """out += scale C e (C: 6 x 6, rows)."""
    cdef int r, k
    cdef double s
    for r in range(6):
        s = 0.0
        for k in range(6):
            s = s + C[r * 6 + k] * e[k]
        out[r] = out[r] + scale * s


cdef void one_predict(const double* strain, const double* stress, const double* rate,
                     const double* C, double dt, double* pred, double* pred_stress) noexcept nogil:
    cdef double de[6]
    cdef int k
    for k in range(6):
        de[k] = dt * rate[k]
        pred[k] = strain[k] + de[k]
        pred[6 + k] = rate[k]
        pred_stress[k] = stress[k]
    voigt_mul(C, de, pred_stress, 1.0)


def strain_predict(const double[:, ::1] strain, const double[:, ::1] stress,
                   const double[:, ::1] rate, const double[:, ::1] elastic, double dt,
                   double[:, ::1] pred, double[:, ::1] pred_stress, Py_ssize_t n_rows,
                   int n_threads):
    """The drift of the strain dofs (rows < n_rows): pred[:, :6] = strain + dt rate,
    pred[:, 6:] = rate, pred_stress = stress + C (dt rate) (C: elastic[p], 6 x 6)."""
    cdef Py_ssize_t p
    for p in prange(n_rows, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        one_predict(&strain[p, 0], &stress[p, 0], &rate[p, 0], &elastic[p, 0], dt,
                    &pred[p, 0], &pred_stress[p, 0])


cdef inline void rotate_voigt(const double* R, double* v, double shear) noexcept nogil:
    """v <- R v R^T for the symmetric tensor in Voigt form v (off-diagonals: v / shear)."""
    cdef double T[9]
    cdef double RT[9]
    cdef int a, b, k
    cdef double s
    T[0] = v[0]; T[4] = v[1]; T[8] = v[2]
    T[5] = v[3] / shear; T[7] = T[5]
    T[2] = v[4] / shear; T[6] = T[2]
    T[1] = v[5] / shear; T[3] = T[1]
    for a in range(3):
        for b in range(3):
            s = 0.0
            for k in range(3):
                s = s + T[a * 3 + k] * R[b * 3 + k]
            RT[a * 3 + b] = s           # T R^T
    for a in range(3):
        for b in range(3):
            s = 0.0
            for k in range(3):
                s = s + R[a * 3 + k] * RT[k * 3 + b]
            T[a * 3 + b] = s
    v[0] = T[0]; v[1] = T[4]; v[2] = T[8]
    v[3] = shear * 0.5 * (T[5] + T[7])
    v[4] = shear * 0.5 * (T[2] + T[6])
    v[5] = shear * 0.5 * (T[1] + T[3])


cdef void one_update(const double* pred, const double* pred_stress, const double* x,
                    const double* theta, const double* C, const double* mask, double dt,
                    double dynamic, double* strain, double* stress, double* rate) noexcept nogil:
    cdef int k
    cdef double R[9]
    cdef double ang, kx, ky, kz, c, s, t
    for k in range(6):
        strain[k] = pred[k] + x[6 + k]
        stress[k] = pred_stress[k]
        rate[k] = dynamic * (pred[6 + k] + (2.0 / dt) * x[6 + k]) * mask[6 + k]
    voigt_mul(C, &x[6], stress, 1.0)
    ang = sqrt(theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2])
    if ang > 0.0:
        kx = theta[0] / ang; ky = theta[1] / ang; kz = theta[2] / ang
        c = cos(ang); s = sin(ang); t = 1.0 - c
        R[0] = c + t * kx * kx; R[1] = t * kx * ky - s * kz; R[2] = t * kx * kz + s * ky
        R[3] = t * ky * kx + s * kz; R[4] = c + t * ky * ky; R[5] = t * ky * kz - s * kx
        R[6] = t * kz * kx - s * ky; R[7] = t * kz * ky + s * kx; R[8] = c + t * kz * kz
        rotate_voigt(R, strain, 2.0)
        rotate_voigt(R, stress, 1.0)


def strain_update(const double[:, ::1] pred, const double[:, ::1] pred_stress,
                  const double[:, ::1] x, const double[:, ::1] theta,
                  const double[:, ::1] elastic, const double[:, ::1] mask, double dt,
                  double dynamic, double[:, ::1] strain, double[:, ::1] stress,
                  double[:, ::1] rate, Py_ssize_t n_rows, int n_threads):
    """The end of the step for the strain dofs (rows < n_rows): strain = pred + de,
    stress = pred_stress + C de (de = x[:, 6:12], the solved correction), both turned
    with the particle by the step's rotation theta (R sigma R^T, R the exact rotation
    by |theta| about theta: the large-rotation correction, Ke & Bray 1995's idea of
    replacing the first-order rotation by the finite one, keeps the state in the
    particle's frame), rate = dynamic (rate + 2 de / dt) on the free strain dofs."""
    cdef Py_ssize_t p
    for p in prange(n_rows, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        one_update(&pred[p, 0], &pred_stress[p, 0], &x[p, 0], &theta[p, 0],
                   &elastic[p, 0], &mask[p, 0], dt, dynamic, &strain[p, 0], &stress[p, 0],
                   &rate[p, 0])


# ---------------------------------------------------------------- the SGS preconditioner
# Multicolour symmetric Gauss-Seidel over the particle graph: the colours come from
# Jones & Plassmann (1993): a particle takes a colour when its weight (a hash of its
# id) beats every uncoloured neighbour's, the smallest colour no neighbour has. The
# colours depend only on the graph and the ids, so the sweeps (colour by colour, the
# rows of one colour independent) give the same bits on any number of ranks and threads.

def colour_round(const long[::1] start, const int[::1] nBall, const unsigned long long[::1] weight,
                 const double[:, ::1] colour, double[:, ::1] new, Py_ssize_t n_rows,
                 int n_threads):
    """One Jones-Plassmann round on the rows p < n_rows: new[p] = the smallest colour
    not among p's coloured neighbours, when p is uncoloured (-1) and its (weight, row
    value) beats every uncoloured neighbour's. Reads `colour` only (the round's start
    state, ghost rows current); returns the rows still uncoloured after the round."""
    cdef Py_ssize_t p
    cdef long left = 0
    for p in prange(n_rows, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        new[p, 0] = colour[p, 0]
        if colour[p, 0] < 0.0:
            new[p, 0] = pick_colour(start, nBall, weight, colour, p)
            if new[p, 0] < 0.0:
                left += 1
    return left


cdef double pick_colour(const long[::1] start, const int[::1] nBall,
                        const unsigned long long[::1] weight, const double[:, ::1] colour,
                        Py_ssize_t p) noexcept nogil:
    """The colour p takes this round, or -1 (an uncoloured neighbour outweighs it)."""
    cdef Py_ssize_t t, q
    cdef int c
    cdef bint used
    for t in range(start[p], start[p + 1]):
        q = nBall[t]
        if q < 0 or q == p or colour[q, 0] >= 0.0:
            continue
        if weight[q] > weight[p]:
            return -1.0
    c = 0
    while True:                 # the smallest colour unused by the neighbours
        used = False
        for t in range(start[p], start[p + 1]):
            q = nBall[t]
            if q >= 0 and q != p and colour[q, 0] == c:
                used = True
                break
        if not used:
            return c
        c = c + 1


cdef void sgs_row(const long[::1] start, const int[::1] nBall, const double[:, ::1] nK,
                  const double[:, ::1] inv, const double[:, ::1] colour,
                  const double[:, ::1] rhs, double[:, ::1] out, Py_ssize_t p, int k,
                  bint forward, int nd) noexcept nogil:
    """Forward: out[p] = inv[p] (rhs[p] - sum of nK out[q] over the neighbours of
    colours below k); backward: out[p] = rhs[p] - inv[p] (sum over colours above k).
    (SSOR's over-relaxation did not help: 93 and 117 CG iterations per solve in the
    pile example at omega = 1.3, 1.6, against 88 at 1.)"""
    cdef double s[12]
    cdef double z[12]
    cdef Py_ssize_t t, q
    cdef int r
    for r in range(nd):
        s[r] = 0.0
    for t in range(start[p], start[p + 1]):
        q = nBall[t]
        if q < 0:
            continue
        if (forward and colour[q, 0] < k) or (not forward and colour[q, 0] > k):
            block_mul_nd(&nK[t, 0], &out[q, 0], s, True, nd)
    if forward:
        for r in range(nd):
            s[r] = rhs[p, r] - s[r]
        block_mul_nd(&inv[p, 0], s, &out[p, 0], False, nd)
    else:
        block_mul_nd(&inv[p, 0], s, z, False, nd)
        for r in range(nd):
            out[p, r] = rhs[p, r] - z[r]


def sgs_sweep(const long[::1] start, const int[::1] nBall, const double[:, ::1] nK,
              const double[:, ::1] inv, const double[:, ::1] colour, const int[::1] rows,
              const double[:, ::1] rhs, double[:, ::1] out, int k, bint forward,
              int n_threads):
    """One colour k of a forward (y from r) or backward (z from y) Gauss-Seidel sweep
    over `rows` (the owned rows of colour k); out holds current ghost rows."""
    cdef Py_ssize_t i, m = rows.shape[0]
    cdef int nd = rhs.shape[1]
    for i in prange(m, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        sgs_row(start, nBall, nK, inv, colour, rhs, out, rows[i], k, forward, nd)
