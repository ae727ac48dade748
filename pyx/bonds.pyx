# cython: language_level=3
"""Parallel bonds (Potyondy & Cundall 2004, "A bonded-particle model for rock", IJRMMS
41:1329; PFC's linearpbond), on L6Geom's local coordinates (seed 000).

A bond of particles 1 and 2 is a cement disk of radius R = lambda min(r1, r2) at the
contact point c (on the line of centres, as for a sphere contact), acting in parallel
with the contact law. 3D: A = pi R^2, I = pi R^4 / 4, J = pi R^4 / 2; 2D (disks of
unit thickness): A = 2 R, I = 2 R^3 / 3, no twist. Its loads are incremental in the
contact frame as it turns: L6Geom integrates u and phi incrementally in that frame, so
dF = -k A du summed over the steps is the force of the accumulated u:
  F_n = -kn A (u_n - u_n,ref)   F_s = -ks A u_s   M_twist = -ks J phi_x   M_bend = -kn I phi_yz
(on particle 2, local axes; u_n,ref: u_n when the bond formed, so a new bond is
unloaded). Breakage on these elastic loads (tension positive, sigma_n = -F_n / A):
  sigma = sigma_n + beta |M_bend| R / I >= tensile strength       (mode 1, tension)
  tau = |F_s| / A + beta |M_twist| R / J >= cohesion - sigma_n tan(friction angle)
                                                                  (mode 2, shear)
The tension test comes first. A broken bond carries nothing from that step on.
Optional damping (as LAMMPS BPM): dashpots 2 zeta sqrt(m* k) on the normal and shear
rates and 2 zeta sqrt(I* k_rot) on the twist and bending rates, outside the breakage
test.

A bond row is a contact row (contact_row.pxd) whose law-origin columns hold the bond's
own data: S_U0 (x) the reference u_n, S_PHI0 the bond material index, then the
tensile and shear strength factors of the bond (strength scatter). active: 2 formed
at the next force evaluation, 1 intact, 0 broken.
"""
cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport sqrt, fabs, M_PI
from vecmath cimport v3, m33, V, vld, vst, mld, mst, vadd, vsub, vscale, vdot, mtdot, image_shift, image_velocity, cell_moving
from l6geom cimport l6_update, l6_initial_axes
from contact_row cimport S_T, S_U, S_PHI, S_U0, S_PHI0, S_FORCE, S_MOMENT, S_NCOLS
import numpy as np

# bond material table columns (pdem.contact.bonds.BondMaterials.table)
cdef enum:
    BM_KN = 0             # normal stiffness per unit area (Pa/m)
    BM_KS = 1             # shear stiffness per unit area
    BM_TENSILE = 2        # tensile strength (Pa)
    BM_COHESION = 3       # shear strength at zero normal stress (Pa)
    BM_TAN_PHI = 4        # tan(friction angle)
    BM_LAMBDA = 5         # radius multiplier
    BM_BETA = 6           # moment contribution factor
    BM_DAMPING = 7        # damping ratio zeta
    BM_NCOLS = 8

cdef enum:
    B_MATERIAL = S_PHI0   # columns of a bond row (see the module docstring)
    B_TENSILE_FACTOR = S_PHI0 + 1
    B_SHEAR_FACTOR = S_PHI0 + 2
    FORMING = 2
    TENSION = 1
    SHEAR = 2


def table_columns():
    return dict(kn=BM_KN, ks=BM_KS, tensile=BM_TENSILE, cohesion=BM_COHESION,
                tan_phi=BM_TAN_PHI, radius_multiplier=BM_LAMBDA, moment_factor=BM_BETA,
                damping=BM_DAMPING, ncols=BM_NCOLS)


def row_columns():
    return dict(material=B_MATERIAL, tensile_factor=B_TENSILE_FACTOR,
                shear_factor=B_SHEAR_FACTOR, forming=FORMING)


cdef inline void section(double R, bint planar, double* A, double* I, double* J) noexcept nogil:
    """Area, bending and polar moments of the bond's cross-section."""
    if planar:
        A[0] = 2.0 * R
        I[0] = 2.0 * R * R * R / 3.0
        J[0] = 0.0
    else:
        A[0] = M_PI * R * R
        I[0] = 0.25 * M_PI * R * R * R * R
        J[0] = 2.0 * I[0]


cdef inline int bond_law(const double* P, const double* row, double R, bint planar,
                         double meff, double ieff, v3 u, v3 phi, v3 udot, v3 phidot,
                         v3* F, v3* M) noexcept nogil:
    """Loads on particle 2 (local axes) of an intact bond; returns 0, or the mode
    (TENSION, SHEAR) when it breaks (loads then undefined)."""
    cdef double A, I, J, kn, ks, kb, kt, sigma_n, sigma, tau, zeta
    section(R, planar, &A, &I, &J)
    kn = P[BM_KN] * A
    ks = P[BM_KS] * A
    kb = P[BM_KN] * I
    kt = P[BM_KS] * J
    F[0] = V(-kn * (u.x - row[S_U0]), -ks * u.y, -ks * u.z)
    M[0] = V(-kt * phi.x, -kb * phi.y, -kb * phi.z)
    sigma_n = -F[0].x / A
    sigma = sigma_n + P[BM_BETA] * sqrt(M[0].y * M[0].y + M[0].z * M[0].z) * R / I
    if sigma >= P[BM_TENSILE] * row[B_TENSILE_FACTOR]:
        return TENSION
    tau = sqrt(F[0].y * F[0].y + F[0].z * F[0].z) / A
    if J > 0.0:
        tau = tau + P[BM_BETA] * fabs(M[0].x) * R / J
    if tau >= P[BM_COHESION] * row[B_SHEAR_FACTOR] - sigma_n * P[BM_TAN_PHI]:
        return SHEAR
    zeta = P[BM_DAMPING]
    if zeta > 0.0:
        F[0] = vsub(F[0], V(2.0 * zeta * sqrt(meff * kn) * udot.x,
                            2.0 * zeta * sqrt(meff * ks) * udot.y,
                            2.0 * zeta * sqrt(meff * ks) * udot.z))
        M[0] = vsub(M[0], V(2.0 * zeta * sqrt(ieff * kt) * phidot.x,
                            2.0 * zeta * sqrt(ieff * kb) * phidot.y,
                            2.0 * zeta * sqrt(ieff * kb) * phidot.z))
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
def bond_forces(const int[::1] i1, const int[::1] i2, const double[:, ::1] pos,
                const int[:, ::1] image, const double[:, ::1] cell, const double[:, ::1] vel,
                const double[:, ::1] angvel, const double[::1] radius, const double[::1] mass,
                const double[::1] inertia, const double[:, ::1] table, bint planar, double dt,
                int flags, signed char[::1] active, double[:, ::1] state,
                signed char[::1] broke, int n_threads, bint form_only=False):
    """Update every bond row: forming rows (active 2) get their frame and reference
    (no load yet), intact rows (1) the L6Geom update and the bond law (not with
    form_only: bonds just made); a row that breaks gets active 0, zero loads, and
    broke[k] = its mode (else 0). Rows are independent: any thread count gives the
    same bits. Returns (number broken this call, the longest centre distance of an
    intact bond)."""
    cdef Py_ssize_t m = i1.shape[0], k
    cdef int a, b, mode, nt = max(1, n_threads)
    cdef double dist, un, r1, r2, R, meff, ieff
    cdef double* row
    cdef v3 x2, n, c, u, phi, udot, phidot, F, M, v2
    cdef bint moving = cell_moving(&cell[0, 0])
    cdef m33 T
    if cell.shape[0] != 6 or cell.shape[1] != 3:
        raise ValueError("cell must be (6, 3): H, then L H (pdem.cell.fixed_cell for a box)")
    if state.shape[1] != S_NCOLS or table.shape[1] != BM_NCOLS or broke.shape[0] < m:
        raise ValueError("bond arrays: state width %d, table width %d, %d rows"
                         % (state.shape[1], table.shape[1], m))
    longest_arr = np.zeros(nt)
    cdef double[::1] longest = longest_arr
    for k in prange(m, nogil=True, schedule='static', num_threads=nt):
        broke[k] = 0
        if active[k] == 0 or (form_only and active[k] != FORMING):
            continue
        a = i1[k]
        b = i2[k]
        row = &state[k, 0]
        x2 = vsub(vld(&pos[b, 0]), vld(&pos[a, 0]))
        x2 = vadd(x2, image_shift(&cell[0, 0], image[b, 0] - image[a, 0],
                                  image[b, 1] - image[a, 1], image[b, 2] - image[a, 2]))
        dist = sqrt(vdot(x2, x2))
        if dist > longest[threadid()]:
            longest[threadid()] = dist
        r1 = radius[a]
        r2 = radius[b]
        n = vscale(x2, 1.0 / dist)
        un = dist - (r1 + r2)
        if active[k] == FORMING:
            mst(row + S_T, l6_initial_axes(n))
            vst(row + S_U, V(un, 0.0, 0.0))
            vst(row + S_PHI, V(0.0, 0.0, 0.0))
            row[S_U0] = un
            vst(row + S_FORCE, V(0.0, 0.0, 0.0))
            vst(row + S_MOMENT, V(0.0, 0.0, 0.0))
            active[k] = 1
            continue
        c = vscale(n, r1 + 0.5 * un)
        # assigned here, so that prange makes them thread-private (they are otherwise
        # written only through pointers)
        udot = V(0.0, 0.0, 0.0)
        phidot = udot
        F = udot
        M = udot
        T = mld(row + S_T)
        u = vld(row + S_U)
        phi = vld(row + S_PHI)
        v2 = vld(&vel[b, 0])
        if moving:                # seed 000's v~2 (docs/cell.md)
            v2 = image_velocity(&cell[0, 0], v2, image[b, 0] - image[a, 0],
                                image[b, 1] - image[a, 1], image[b, 2] - image[a, 2])
        l6_update(c, n, un, x2, vld(&vel[a, 0]), v2, vld(&angvel[a, 0]),
                  vld(&angvel[b, 0]), r1, r2, dt, flags, &T, &u, &phi, &udot, &phidot)
        mst(row + S_T, T)
        vst(row + S_U, u)
        vst(row + S_PHI, phi)
        R = table[<int>row[B_MATERIAL], BM_LAMBDA] * (r1 if r1 < r2 else r2)
        meff = mass[a] * mass[b] / (mass[a] + mass[b])
        ieff = inertia[a] * inertia[b] / (inertia[a] + inertia[b])
        mode = bond_law(&table[<int>row[B_MATERIAL], 0], row, R, planar, meff, ieff, u, phi,
                        udot, phidot, &F, &M)
        if mode:
            active[k] = 0
            broke[k] = mode
            vst(row + S_FORCE, V(0.0, 0.0, 0.0))
            vst(row + S_MOMENT, V(0.0, 0.0, 0.0))
        else:
            vst(row + S_FORCE, mtdot(T, F))
            vst(row + S_MOMENT, mtdot(T, M))
    return int(np.count_nonzero(np.asarray(broke[:m]))), float(longest_arr.max())


@cython.boundscheck(False)
@cython.wraparound(False)
def bond_locals(const long[::1] id1, const long[::1] id2, const long[::1] ids,
                const long[::1] order, const double[:, ::1] pos, const int[:, ::1] image,
                const double[:, ::1] cell, int n_own):
    """Local particle indices (i1, i2) of bonds given by ids, from the local particles
    `ids` (owned first, then ghosts; `order` sorts them). One particle is the owned
    copy (particle 1's if this rank owns it), the other the copy of its partner
    nearest to it (a periodic image where the bond crosses the box), so that every
    rank sees the same relative vector. i1 = i2 = -1: this rank owns neither (the
    row leaves); missing[k] = 1: an owned particle's partner has no copy here (beyond
    the ghost cutoff)."""
    cdef Py_ssize_t m = id1.shape[0], k
    out1_arr = np.full(m, -1, np.int32)
    out2_arr = np.full(m, -1, np.int32)
    missing_arr = np.zeros(m, np.int8)
    cdef int[::1] out1 = out1_arr, out2 = out2_arr
    cdef signed char[::1] missing = missing_arr
    cdef long lo1, hi1, lo2, hi2
    cdef int at, near
    cdef bint first
    with nogil:
        for k in range(m):
            _range(ids, order, id1[k], &lo1, &hi1)
            _range(ids, order, id2[k], &lo2, &hi2)
            at = _owned(order, lo1, hi1, n_own)          # particle 1's owned copy, or 2's
            first = at >= 0
            if not first:
                at = _owned(order, lo2, hi2, n_own)
                if at < 0:
                    continue
            near = _nearest(order, lo2 if first else lo1, hi2 if first else hi1, at, pos,
                            image, cell)
            if near < 0:
                missing[k] = 1
            else:
                out1[k] = at if first else near
                out2[k] = near if first else at
    return out1_arr, out2_arr, missing_arr


cdef inline void _range(const long[::1] ids, const long[::1] order, long wanted, long* lo,
                        long* hi) noexcept nogil:
    """[lo, hi) of `order` positions whose particle has id `wanted` (binary search)."""
    cdef long a = 0, b = order.shape[0], mid
    while a < b:
        mid = (a + b) // 2
        if ids[order[mid]] < wanted:
            a = mid + 1
        else:
            b = mid
    lo[0] = a
    while a < order.shape[0] and ids[order[a]] == wanted:
        a += 1
    hi[0] = a


cdef inline int _owned(const long[::1] order, long lo, long hi, int n_own) noexcept nogil:
    cdef long e
    for e in range(lo, hi):
        if order[e] < n_own:
            return <int>order[e]
    return -1


cdef inline int _nearest(const long[::1] order, long lo, long hi, int at,
                         const double[:, ::1] pos, const int[:, ::1] image,
                         const double[:, ::1] cell) noexcept nogil:
    """The copy among order[lo:hi] nearest to local particle `at` (-1: none)."""
    cdef long e
    cdef int j, d, best = -1
    cdef double dd, best_d = 0.0
    cdef v3 x
    for e in range(lo, hi):
        j = <int>order[e]
        x = vadd(vsub(vld(&pos[j, 0]), vld(&pos[at, 0])),
                 image_shift(&cell[0, 0], image[j, 0] - image[at, 0],
                             image[j, 1] - image[at, 1], image[j, 2] - image[at, 2]))
        dd = vdot(x, x)
        if best < 0 or dd < best_d:
            best, best_d = j, dd
    return best
