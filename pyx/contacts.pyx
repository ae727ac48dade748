# cython: language_level=3
"""Contact batch kernels: sphere-sphere and sphere-plane geometry (L6Geom, seed 000)
followed by the pair's contact law (laws.pxd), and the per-particle force gather.

Data layout. A batch is a set of candidate pairs from the Verlet list, id1 < id2, in
grid order (each particle's pairs in ascending partner order key: pyx/cells.pyx
build_pair_rows, rebuild.grid_keys); pair k refers to local particle indices i1[k], i2[k]
(owned or ghost). Per pair, the arrays hold the L6Geom state -- active flag, T
(rows, 9 doubles), u, phi, shifted origins u0, phi0 -- and the outputs: force and
law moment on particle 2 (global); the torques on both bodies follow from them
(contact_row.pxd row_torques). A pooled batch (pdem.contact.store) keeps these rows
only for the pairs with state: slot[k] is pair k's row or -1; the kernel takes a row for
each pair that forms and gives back the row of each pair that opens (see "state pool").

Determinism. Pair k is computed from particle 1's position and x2 - x1 +
H (image2 - image1) (H the cell matrix), the same numbers on every rank and thread count; the
gather sums each owned particle's contributions in the order of its CSR list
(ascending partner order key), never with atomics.

Speed. The sphere-sphere and sphere-plane kernels work in blocks of touching pairs whose
geometry (and plain Hooke + Coulomb law) one vectorized loop computes (see "vector
blocks" below), with the contact rows prefetched.
"""
cimport cython
from cython.parallel cimport prange, threadid
from libc.math cimport sqrt, cbrt, M_PI
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
from prefetch cimport prefetch
from vecmath cimport v3, m33, V, vld, vst, mld, mst, vadd, vsub, vscale, vneg, vdot, \
    vcross, mtdot, image_shift, image_velocity, cell_moving
from l6geom cimport l6_frame, l6_mid_rates, l6_advance, APPROX_MID_NORMAL, APPROX_MID_TRSF
from contact_row cimport *
from laws cimport jkr_radius, law_eval, law_plain, law_hooke, P_NCOLS, P_NORMAL, P_KN0, \
    P_KN1, P_KT_RATIO, P_GAMMA_N, P_ZETA, P_CT_RATIO, P_ESTAR, P_GSTAR, P_MU, P_ROLL_K, \
    P_ROLL_MU, P_TWIST_K, P_TWIST_MU, \
    P_LIMIT_DAMPING, P_COHESION, P_WORK, P_COH_K, P_REACH, E_NCOLS, E_NORMAL, \
    E_TANGENT, E_DAMP, E_FRIC, E_ROLL, E_WALL
from omp cimport pdem_omp_max_threads, pdem_omp_available
from worst_overlap cimport worst_init, pick_worst
from arrays cimport data, rows, F64, I32, I8
cimport numpy as cnp
import numpy as np

cnp.import_array()         # numpy's C API, for arrays.pxd


def state_columns():
    """Column offsets of the contact state row (used by pdem.contact.store)."""
    return dict(T=(S_T, 9), u=(S_U, 3), phi=(S_PHI, 3), u0=(S_U0, 3), phi0=(S_PHI0, 3),
                force=(S_FORCE, 3), moment=(S_MOMENT, 3),
                ncols=S_NCOLS)


def openmp_available():
    return bool(pdem_omp_available())


def openmp_max_threads():
    return pdem_omp_max_threads()


cdef inline void add_ft(double* f, double* t, v3 F, double sign, v3 tq) noexcept nogil:
    """f += sign * F (a contact force), t += tq: the additions of `scatter`, `gather`
    and the kernels' in-pass sums (the same operations, hence the same bits)."""
    f[0] = f[0] + sign * F.x
    f[1] = f[1] + sign * F.y
    f[2] = f[2] + sign * F.z
    t[0] = t[0] + tq.x
    t[1] = t[1] + tq.y
    t[2] = t[2] + tq.z


cdef inline void add_row(double* f, double* t, const double* row, int side, double r,
                         int flags) noexcept nogil:
    """add_ft for body `side` (1 or 2, radius r) of a contact row."""
    cdef v3 t1, t2
    row_torques(row, r, r, flags, &t1, &t2)
    if side == 1:
        add_ft(f, t, vld(row + S_FORCE), -1.0, t1)
    else:
        add_ft(f, t, vld(row + S_FORCE), 1.0, t2)


# Sphere-sphere pairs in vector blocks. A scalar pass screens the candidates and copies
# each touching pair's inputs into the columns of a block (structure of arrays); one loop
# then computes the L6Geom update of the whole block with the scalar path's own inline
# routines (l6geom.pxd), which are branch-free so that the C compiler vectorizes the loop
# across pairs (4 or 8 pairs per AVX instruction); last, a scalar pass in pair order
# applies the law, writes the rows and adds the in-pass sums. A block whose pairs share
# one pair-table row of the plain Hooke + Coulomb law (laws.pxd law_plain; no energy
# tracking) has the law evaluated in the vector loop too (law_hooke, the operations of
# law_eval). The loop takes the small-step forms alone (l6geom.pxd `small`: no square
# root or division for the unit mid-step normal, the frame's renormalization and the
# mid-step rotation); the rare pair where one does not apply (a turn of more than about
# 1e-4 rad in a step; chute and bed: under 0.5 % of the pairs, forming ones included)
# takes the scalar route. A pair's numbers do not depend on its block (no reassociation,
# no FMA contraction, IEEE sqrt and division in both): the same bits as one pair at a
# time (`blocks=False`) and as the scalar law.
cdef enum:
    NB = 16           # touching pairs per block (the block: 10.7 kB; 32 pairs: 21 kB of a
                      # 48 kB L1 shared with the rows and particles the pass reads;
                      # bench/README.md "Blocks of 16 pairs, 2026-11-29")
    B_X2 = 0          # block inputs: x2 - x1 (3)
    B_V1 = 3          # v1, v2, w1, w2 (3 each)
    B_V2 = 6
    B_W1 = 9
    B_W2 = 12
    B_T = 15          # T(t - dt) (9)
    B_DIST2 = 24
    B_R1 = 25
    B_R2 = 26
    B_M1 = 27         # masses
    B_M2 = 28
    B_N = 29          # plane contacts: the plane's normal (3) and u_n, given
    B_UN = 32
    B_U = 33          # law blocks: u (y, z at 34, 35; x unused) and u0 (3) at t - dt
    B_U0 = 36
    B_NIN = 39
    O_C = 0           # block outputs: contact point c (3), n (3), u_n, T(t) (9),
    O_N = 3           # udot (3), phidot (3), normal rate vn, ok = 0 when a small-step form
    O_UN = 6          # does not apply (l6geom.pxd `small`), m*, R*, overlap / smaller radius
    O_T = 7
    O_UDOT = 16
    O_PHIDOT = 19
    O_VN = 22
    O_OK = 23
    O_MEFF = 24
    O_REFF = 25
    O_RATIO = 26
    O_U = 27          # law blocks: u(t) (3), u0 after slip (3), the force on 2 (global),
    O_U0 = 30         # the torques on 1 and 2 (lever_torques)
    O_F = 33
    O_T1 = 36
    O_T2 = 39
    O_NOUT = 42


cdef enum:
    PLANE_AHEAD = 8       # sphere-plane rows: a particle's data is fetched this far ahead
    PREFETCH_AHEAD = 16   # candidates: a contact row is fetched from memory while the
                          # pairs before it are computed


cdef struct Bodies:
    # the particle arrays a pair kernel reads (raw pointers: memoryview indexing costs
    # ~30 instructions per pair more)
    const double* pos
    const int* image
    const double* cell         # H, then L H_prev (vecmath.pxd cell_moving; docs/cell.md)
    bint moving                # a deforming cell: image velocities
    const double* vel
    const double* angvel
    const double* radius
    const double* mass
    const int* material
    const double* pair_table
    Py_ssize_t n_rows     # of pair_table
    int n_materials
    unsigned char* plain  # per pair-table row: law_plain and no energy tracking
    bint periodic         # any periodic axis: positions need their images' shift
    int image_from        # rows below it have zero images (owned rows after a build)
    bint sticky           # some pair law keeps contacts beyond touching (JKR: P_REACH)
    double* energy        # NULL, or per pair the energy terms (laws.pxd E_*)


cdef struct Sums:
    # in-pass force and torque sums (NULL owner: none): the owned index that receives a
    # contribution, or -1 (sphere pairs: per local particle; wall rows: per row)
    const int* owner
    double* f
    double* t


cdef int _sums_args(Sums* S, object f_out, object t_out, object owner, str name,
                    Py_ssize_t n_owner, Py_ssize_t n_particles) except -1:
    """The optional in-pass sum arguments into S, all NULL when none is given; the
    owner array `name` must have n_owner entries."""
    S.owner = NULL
    S.f = S.t = NULL
    if f_out is None and t_out is None and owner is None:
        return 0
    if f_out is None or t_out is None or owner is None:
        raise ValueError("in-pass sums need all of f_out, t_out and %s" % name)
    S.owner = <const int*>data(owner, name, I32, 1, 0, False)
    if rows(owner) != n_owner:
        raise ValueError("%s: %d entries for %d" % (name, rows(owner), n_owner))
    S.f = <double*>data(f_out, "f_out", F64, 2, 3, True)
    S.t = <double*>data(t_out, "t_out", F64, 2, 3, True)
    if rows(f_out) != rows(t_out) or rows(f_out) > n_particles:
        raise ValueError("f_out and t_out must both be (n_own, 3)")
    if rows(f_out) == 0:
        S.f = S.t = NULL
    return 0


cdef struct Block:
    # columns of a block of pairs: one object, so that the compiler sees that inputs
    # and outputs do not overlap
    double inp[B_NIN][NB]
    double out[O_NOUT][NB]
    Py_ssize_t k[NB]          # the pairs' indices
    int a[NB]                 # and their particles (sphere pairs)
    int b[NB]
    int law[NB]               # their pair-table rows (offsets into the table)


cdef inline bint held(const double* P, double r1, double r2, double gap) noexcept nogil:
    """An active contact at the positive gap (distance - r1 - r2; r1 = 0 for a wall)
    still holds: the law's reach, P_REACH cbrt(R*) (JKR's pull-off distance), exceeds it."""
    cdef double reff = r2 if r1 == 0.0 else r1 * r2 / (r1 + r2)
    return P[P_REACH] > 0.0 and gap < P[P_REACH] * cbrt(reff)


cdef bint any_reach(const double* pair_table, Py_ssize_t n_rows) noexcept:
    cdef Py_ssize_t i
    for i in range(n_rows):
        if pair_table[i * P_NCOLS + P_REACH] > 0.0:
            return True
    return False


cdef inline v3 cld(double (*col)[NB], int i, int j) noexcept nogil:
    return V(col[i][j], col[i + 1][j], col[i + 2][j])


cdef inline void cst(double (*col)[NB], int i, int j, v3 a) noexcept nogil:
    col[i][j] = a.x
    col[i + 1][j] = a.y
    col[i + 2][j] = a.z


cdef inline m33 cmld(double (*col)[NB], int i, int j) noexcept nogil:
    cdef m33 m
    m.r0 = cld(col, i, j)
    m.r1 = cld(col, i + 3, j)
    m.r2 = cld(col, i + 6, j)
    return m


cdef inline void block_loop(int nb, Block* blk, double dt, int flags, bint plane, bint law,
                            const double* table) noexcept nogil:
    """L6Geom update (seed 000) of the nb pairs of a block, column in, column out: the
    loop the C compiler vectorizes when `flags`, `plane` and `law` are constants
    (block_geometry). Pairs that form this step are computed too (from stale frames) and
    ignored. plane: sphere-plane contacts (body 1 the plane: radius 0, no spin, infinite
    mass) whose normal and u_n are given (B_N, B_UN), as sphere_plane's scalar route
    takes them. law: the pairs share one row of `table` (blk.law), of law_plain's case,
    and the loop also advances u and evaluates the law (laws.pxd law_hooke, branch-free)
    and the lever torques: O_U, O_U0, O_F, O_T1, O_T2."""
    cdef int j
    cdef double P[P_NCOLS]     # the law's row, in a local that no store of the loop aliases
    cdef v3 x2, n, c, w1, w2, vr2, udot, phidot, u, u0, t1, t2
    cdef m33 Tp, Tc
    cdef double dist, un, vn, r1, r2, meff, reff
    cdef Load L
    cdef bint small
    cdef double (*bin)[NB]
    cdef double (*bout)[NB]
    bin = blk.inp
    bout = blk.out
    if law:
        memcpy(P, table + blk.law[0], P_NCOLS * sizeof(double))
    for j in range(nb):
        x2 = cld(bin, B_X2, j)
        r1 = bin[B_R1][j]
        r2 = bin[B_R2][j]
        if plane:
            n = cld(bin, B_N, j)
            un = bin[B_UN][j]
            c = vscale(n, 0.5 * un)
        else:
            dist = sqrt(bin[B_DIST2][j])
            n = vscale(x2, 1.0 / dist)
            un = dist - (r1 + r2)
            c = vscale(n, r1 + 0.5 * un)
        Tp = cmld(bin, B_T, j)
        w1 = cld(bin, B_W1, j)
        w2 = cld(bin, B_W2, j)
        small = True
        l6_frame(c, n, x2, cld(bin, B_V1, j), cld(bin, B_V2, j), w1, w2, r1, r2, dt, flags,
                 Tp, &Tc, &vr2, &vn, &small)
        l6_mid_rates(Tp, Tc, vr2, vsub(w2, w1), flags, &udot, &phidot, &small)
        bout[O_OK][j] = small
        cst(bout, O_C, j, c)
        cst(bout, O_N, j, n)
        bout[O_UN][j] = un
        cst(bout, O_T, j, Tc.r0)
        cst(bout, O_T + 3, j, Tc.r1)
        cst(bout, O_T + 6, j, Tc.r2)
        cst(bout, O_UDOT, j, udot)
        cst(bout, O_PHIDOT, j, phidot)
        bout[O_VN][j] = vn
        if plane:
            meff = bin[B_M2][j]
            reff = r2
            bout[O_RATIO][j] = -un / r2
        else:
            meff = bin[B_M1][j] * bin[B_M2][j] / (bin[B_M1][j] + bin[B_M2][j])
            reff = r1 * r2 / (r1 + r2)
            bout[O_RATIO][j] = -un / (r1 if r1 < r2 else r2)
        bout[O_MEFF][j] = meff
        bout[O_REFF][j] = reff
        if law:
            # l6_advance's u (its phi: block_finish), then the law and the torques
            u = V(un, bin[B_U + 1][j] + udot.y * dt, bin[B_U + 2][j] + udot.z * dt)
            u0 = cld(bin, B_U0, j)
            L.force = mtdot(Tc, law_hooke(P, meff, reff, u, &u0, V(vn, udot.y, udot.z)))
            L.moment = V(0.0, 0.0, 0.0)
            lever_torques(n, L, un, r1, r2, flags, &t1, &t2)
            cst(bout, O_U, j, u)
            cst(bout, O_U0, j, u0)
            cst(bout, O_F, j, L.force)
            cst(bout, O_T1, j, t1)
            cst(bout, O_T2, j, t2)


cdef inline void block_flags(int nb, Block* blk, double dt, int flags, bint plane, bint law,
                             const double* table) noexcept nogil:
    """block_loop with the vectorized flag sets as constants (see block_geometry)."""
    if flags == 0:
        block_loop(nb, blk, dt, 0, plane, law, table)
    elif flags == NO_RATCH:
        block_loop(nb, blk, dt, NO_RATCH, plane, law, table)
    elif flags == APPROX_MID_NORMAL | APPROX_MID_TRSF and not plane:
        block_loop(nb, blk, dt, APPROX_MID_NORMAL | APPROX_MID_TRSF, plane, law, table)
    else:
        block_loop(nb, blk, dt, flags, plane, law, table)


cdef void block_pairs(int nb, Block* blk, double dt, int flags, const double* table) noexcept nogil:
    block_flags(nb, blk, dt, flags, False, False, table)


cdef void block_pairs_law(int nb, Block* blk, double dt, int flags, const double* table) noexcept nogil:
    block_flags(nb, blk, dt, flags, False, True, table)


cdef void block_planes(int nb, Block* blk, double dt, int flags, const double* table) noexcept nogil:
    block_flags(nb, blk, dt, flags, True, False, table)


cdef void block_planes_law(int nb, Block* blk, double dt, int flags, const double* table) noexcept nogil:
    block_flags(nb, blk, dt, flags, True, True, table)


cdef inline void block_geometry(int nb, Block* blk, double dt, int flags, bint plane, bint law,
                                const double* table) noexcept nogil:
    """block_loop with the flags, `plane` and `law` as compile-time constants for the
    default L6Geom, for NO_RATCH and for the approximate mid-step normal and
    transformation, so that the tests fold away and the loop vectorizes (a loop with
    branches does not); any other combination of flags runs the same loop unvectorized.
    One function per (plane, law): in one function, GCC's inlining limits would leave
    some of the 16 loops as calls, not vectorized."""
    if plane:
        if law:
            block_planes_law(nb, blk, dt, flags, table)
        else:
            block_planes(nb, blk, dt, flags, table)
    elif law:
        block_pairs_law(nb, blk, dt, flags, table)
    else:
        block_pairs(nb, blk, dt, flags, table)


cdef inline Load block_row(Block* blk, int j, double* row, double dt) noexcept nogil:
    """A law block's pair j (block_loop's `law`): its row written from the block's
    outputs (contact_law's row; phi advanced as l6_advance does, phi0 unchanged, the
    moment zero); returns the load."""
    cdef double (*bout)[NB]
    cdef Load L
    cdef int i
    bout = blk.out
    for i in range(9):
        row[S_T + i] = bout[O_T + i][j]
    vst(row + S_U, cld(bout, O_U, j))
    vst(row + S_PHI, vadd(vld(row + S_PHI), vscale(cld(bout, O_PHIDOT, j), dt)))
    vst(row + S_U0, cld(bout, O_U0, j))
    L.force = cld(bout, O_F, j)
    L.moment = V(0.0, 0.0, 0.0)
    vst(row + S_FORCE, L.force)
    vst(row + S_MOMENT, L.moment)
    return L


# State pool (pooled batches). A thread writes the pairs that form in its range to rows
# of its own (Fresh.rows, in pair order) and lists the rows of the pairs that open; after
# the parallel loop, `settle` returns the opened rows to the free list, then gives each
# formed pair a row from it and copies its state there, thread by thread, i.e. in pair
# order: the same rows for any number of threads.
cdef struct Fresh:
    double* rows              # the formed pairs' state rows (S_NCOLS doubles each)
    Py_ssize_t* k             # their pair indices
    Py_ssize_t n, cap
    int* freed                # rows of the pairs that opened
    Py_ssize_t n_freed, cap_freed
    bint failed               # out of memory
    double scratch[S_NCOLS]


cdef double zero_row[S_NCOLS]     # the frame of a forming pair in a block (ignored)


cdef double* fresh_row(Fresh* fr, Py_ssize_t k) noexcept nogil:
    """A state row for pair k, which forms this step."""
    cdef Py_ssize_t cap
    cdef void* rows
    cdef void* ks
    if fr.n == fr.cap:
        cap = 2 * fr.cap + 64
        rows = realloc(fr.rows, cap * S_NCOLS * sizeof(double))
        if rows != NULL:
            fr.rows = <double*>rows
        ks = realloc(fr.k, cap * sizeof(Py_ssize_t))
        if ks != NULL:
            fr.k = <Py_ssize_t*>ks
        if rows == NULL or ks == NULL:
            fr.failed = True
            return fr.scratch
        fr.cap = cap
    fr.k[fr.n] = k
    fr.n += 1
    return fr.rows + (fr.n - 1) * S_NCOLS


cdef void freed_row(Fresh* fr, int* slot, Py_ssize_t k) noexcept nogil:
    """Pair k opened: its state row goes back to the pool."""
    cdef void* p
    if fr.n_freed == fr.cap_freed:
        p = realloc(fr.freed, (2 * fr.cap_freed + 64) * sizeof(int))
        if p == NULL:
            fr.failed = True
            return
        fr.freed = <int*>p
        fr.cap_freed = 2 * fr.cap_freed + 64
    fr.freed[fr.n_freed] = slot[k]
    fr.n_freed += 1
    slot[k] = -1


cdef inline double* pair_row(double* state, int* slot, Py_ssize_t k, Fresh* fr) noexcept nogil:
    """Pair k's state row (a new one from fresh_row when it has none)."""
    if slot == NULL:
        return state + k * S_NCOLS
    if slot[k] >= 0:
        return state + slot[k] * S_NCOLS
    return fresh_row(fr, k)


cdef int settle(object pool, Fresh* fr, int nt) except -1:
    """The end of a pooled kernel call (see "State pool"): the Fresh records fr of its nt
    threads go into `pool` (pdem.contact.store.ContactBatch: state, slot, free, n_free;
    the pool grows when it has too few free rows), then are freed."""
    cdef int t
    cdef Py_ssize_t j, n_new = 0, n_freed = 0, n_free, cap, grow
    cdef bint failed = False
    cdef int[::1] free_rows, slot
    cdef double[:, ::1] state
    try:
        for t in range(nt):
            n_new += fr[t].n
            n_freed += fr[t].n_freed
            failed = failed or fr[t].failed
        if failed:
            raise MemoryError("contact state pool: out of memory")
        if n_new == 0 and n_freed == 0:
            return 0
        free_rows = pool.free
        n_free = pool.n_free
        for t in range(nt):
            for j in range(fr[t].n_freed):
                free_rows[n_free] = fr[t].freed[j]
                n_free += 1
        if n_free < n_new:
            cap = pool.state.shape[0]
            grow = n_new - n_free + cap // 4 + 64
            bigger = np.zeros((cap + grow, S_NCOLS))
            bigger[:cap] = pool.state
            rows = np.empty(cap + grow, np.int32)
            rows[:grow] = np.arange(cap + grow - 1, cap - 1, -1, dtype=np.int32)
            rows[grow:grow + n_free] = pool.free[:n_free]
            pool.state, pool.free = bigger, rows
            free_rows = rows
            n_free += grow
        state = pool.state
        slot = pool.slot
        for t in range(nt):
            for j in range(fr[t].n):
                n_free -= 1
                memcpy(&state[free_rows[n_free], 0], fr[t].rows + j * S_NCOLS,
                       S_NCOLS * sizeof(double))
                slot[fr[t].k[j]] = free_rows[n_free]
        pool.n_free = n_free
        return 0
    finally:
        for t in range(nt):
            free(fr[t].rows)
            free(fr[t].k)
            free(fr[t].freed)
        free(fr)


cdef void block_finish(int nb, Block* blk, bint law, const Bodies* B, double dt, int flags,
                       signed char* active, double* state, int* slot, Fresh* fr,
                       double* worst, const Sums* S) noexcept nogil:
    """The block's geometry (and law: `law`, see block_loop), then per pair in pair order:
    the L6Geom increments and the law (the scalar route for pairs that form and for turns
    too large for the small-step forms: block_loop's ok), the row, the worst overlap and
    the in-pass sums."""
    cdef int j, p
    cdef Py_ssize_t k
    cdef bint fast
    cdef double ra, rb, un, meff, reff, ratio
    cdef double* row
    cdef const double* P
    cdef v3 u, phi, udot, phidot, t1, t2
    cdef Load L
    cdef double (*bin)[NB]
    cdef double (*bout)[NB]
    # locals, not reloaded from *B, *S and worst after every store into a row
    cdef const double* pair_table = B.pair_table
    cdef const int* owner = S.owner
    cdef double* fsum = S.f
    cdef double* tsum = S.t
    cdef double* energy = B.energy
    cdef double* E = NULL
    cdef double worst_ratio = worst[0], worst_k = worst[1]
    bin = blk.inp
    bout = blk.out
    block_geometry(nb, blk, dt, flags, False, law, pair_table)
    for j in range(nb):
        k = blk.k[j]
        row = pair_row(state, slot, k, fr)
        ra = bin[B_R1][j]
        rb = bin[B_R2][j]
        un = bout[O_UN][j]
        meff = bout[O_MEFF][j]
        reff = bout[O_REFF][j]
        P = pair_table + blk.law[j]
        if energy != NULL:
            E = energy + k * E_NCOLS
        fast = law and active[k] != 0 and bout[O_OK][j] != 0.0
        if fast:
            L = block_row(blk, j, row, dt)
        elif active[k] == 0 or bout[O_OK][j] == 0.0:
            L = contact_update(cld(bout, O_C, j), cld(bout, O_N, j), un, cld(bin, B_X2, j),
                               cld(bin, B_V1, j), cld(bin, B_V2, j), cld(bin, B_W1, j),
                               cld(bin, B_W2, j), ra, rb, meff, reff, P, dt, flags, active + k,
                               row, E)
        else:
            u = vld(row + S_U)
            phi = vld(row + S_PHI)
            udot = cld(bout, O_UDOT, j)
            phidot = cld(bout, O_PHIDOT, j)
            l6_advance(un, bout[O_VN][j], dt, &u, &phi, &udot, &phidot)
            L = contact_law(P, meff, reff, cmld(bout, O_T, j), u, phi, vld(row + S_U0),
                            vld(row + S_PHI0), udot, phidot, row, E, dt)
        ratio = bout[O_RATIO][j]
        if not (ratio <= worst_ratio) and worst_ratio == worst_ratio:   # a NaN stays
            worst_ratio = ratio
            worst_k = k
        if owner != NULL:
            if fast:
                t1 = cld(bout, O_T1, j)
                t2 = cld(bout, O_T2, j)
            else:
                lever_torques(cld(bout, O_N, j), L, un, ra, rb, flags, &t1, &t2)
            p = owner[blk.a[j]]            # (per particle: near the pair's other data)
            if p >= 0:
                add_ft(fsum + 3 * p, tsum + 3 * p, L.force, -1.0, t1)
            p = owner[blk.b[j]]
            if p >= 0:
                add_ft(fsum + 3 * p, tsum + 3 * p, L.force, 1.0, t2)
    worst[0] = worst_ratio
    worst[1] = worst_k


cdef inline void block_state(Block* blk, int j, const double* row) noexcept nogil:
    """The block's copy of pair j's state at t - dt: T, and u (y, z) and u0 for the law."""
    cdef double (*bin)[NB]
    cdef int i
    bin = blk.inp
    for i in range(9):
        bin[B_T + i][j] = row[S_T + i]
    bin[B_U + 1][j] = row[S_U + 1]
    bin[B_U + 2][j] = row[S_U + 2]
    cst(bin, B_U0, j, vld(row + S_U0))


cdef inline v3 pair_vector(const double* pos, const int* image, const double* H, v3 shift0,
                           bint periodic, int image_from, int a, int b) noexcept nogil:
    """x_b - x_a + H (image_b - image_a), the pair's centre vector: most pairs are in the
    same image (shift0 = H 0, computed once: the same bits), and a pair of two rows
    below image_from is known to be, without reading the images."""
    cdef v3 x2 = vsub(vld(pos + 3 * b), vld(pos + 3 * a))
    cdef int d0 = 0, d1 = 0, d2 = 0
    if not periodic:
        return x2
    if a >= image_from or b >= image_from:
        d0 = image[3 * b] - image[3 * a]
        d1 = image[3 * b + 1] - image[3 * a + 1]
        d2 = image[3 * b + 2] - image[3 * a + 2]
    return vadd(x2, image_shift(H, d0, d1, d2) if d0 | d1 | d2 else shift0)


cdef void pair_range(Py_ssize_t k0, Py_ssize_t k1, const int* near, const int* i1,
                     const int* i2, const Bodies* B, double dt, int flags,
                     signed char* active, double* state, int* slot, Fresh* fr, double* worst,
                     const Sums* S, bint blocks) noexcept nogil:
    """Candidate pairs k0 .. k1-1 (particle indices a < b in id order), or the pairs of
    rows k0 .. k1-1 of near, (k, i1[k], i2[k]) each (near_pairs; the other pairs neither
    touch nor are active): screening, then blocks of touching pairs (a block of one pair
    when `blocks` is False). Pairs that do not touch get active = 0 and their rows are
    not touched (slot: NULL, one row per pair; else a pooled batch, whose pairs that open
    give their rows back)."""
    cdef Block blk
    cdef double (*bin)[NB]
    cdef Py_ssize_t t, k, kp
    cdef int nb = 0, a, b, i, s, rule
    cdef int full = NB if blocks else 1
    cdef bint law = True           # the pairs of the block so far: one row, law_plain's case
    cdef double dist2, rs
    cdef v3 x2
    cdef const double* row
    cdef const int* material = B.material
    cdef const unsigned char* plain = B.plain
    cdef int n_materials = B.n_materials
    # the arrays in locals: the stores into the block would otherwise make the compiler
    # reload them from *B and *S for every pair
    cdef const double* pos = B.pos
    cdef const double* vel = B.vel
    cdef const double* angvel = B.angvel
    cdef const double* radius = B.radius
    cdef const double* mass = B.mass
    cdef const int* image = B.image
    cdef const double* H = B.cell
    cdef bint periodic = B.periodic
    cdef int image_from = B.image_from
    cdef bint sticky = B.sticky
    cdef v3 shift0 = image_shift(H, 0, 0, 0)
    bin = blk.inp
    for t in range(k0, k1):
        if near != NULL:
            k, a, b = near[3 * t], near[3 * t + 1], near[3 * t + 2]
        else:
            k, a, b = t, i1[t], i2[t]
        if t + PREFETCH_AHEAD < k1:
            # start the memory read of a candidate's contact row further on when the
            # pair was in contact last step (else this pair's row, already in cache:
            # an address select, not an unpredictable branch). Particle 2's data is
            # not prefetched: most candidates do not touch (chute: 4 in 5), partners
            # are near in memory, and the prefetches cost more than they save (its
            # position and images: 0.96x of the kernels' time without them). Not in a
            # function of its own: GCC drops a call that only prefetches as free of
            # side effects.
            kp = near[3 * (t + PREFETCH_AHEAD)] if near != NULL else t + PREFETCH_AHEAD
            if slot == NULL:
                row = state + (kp if active[kp] else k) * S_NCOLS
            else:
                s = slot[kp]
                row = state + s * S_NCOLS if s >= 0 else zero_row
            for i in range(0, S_NCOLS, 8):
                prefetch(row + i)
            prefetch(row + S_NCOLS - 1)
        x2 = pair_vector(pos, image, H, shift0, periodic, image_from, a, b)
        dist2 = vdot(x2, x2)
        rs = radius[a] + radius[b]
        if dist2 >= rs * rs and not (
                sticky and active[k] and held(B.pair_table + (B.material[a] * B.n_materials
                                                             + B.material[b]) * P_NCOLS,
                                              radius[a], radius[b], sqrt(dist2) - rs)):
            if B.energy != NULL and active[k]:
                opened(B.pair_table + (B.material[a] * B.n_materials + B.material[b]) * P_NCOLS,
                       radius[a] * radius[b] / (radius[a] + radius[b]),
                       pair_row(state, slot, k, fr), B.energy + k * E_NCOLS)
            active[k] = 0
            if slot != NULL and slot[k] >= 0:
                freed_row(fr, slot, k)
            continue
        blk.k[nb] = k
        blk.a[nb] = a
        blk.b[nb] = b
        cst(bin, B_X2, nb, x2)
        bin[B_DIST2][nb] = dist2
        bin[B_R1][nb] = radius[a]
        bin[B_R2][nb] = radius[b]
        bin[B_M1][nb] = mass[a]
        bin[B_M2][nb] = mass[b]
        cst(bin, B_V1, nb, vld(vel + 3 * a))
        if B.moving:           # seed 000's v~2 (docs/cell.md)
            cst(bin, B_V2, nb, image_velocity(B.cell, vld(vel + 3 * b), image[3 * b] - image[3 * a],
                                              image[3 * b + 1] - image[3 * a + 1],
                                              image[3 * b + 2] - image[3 * a + 2]))
        else:
            cst(bin, B_V2, nb, vld(vel + 3 * b))
        cst(bin, B_W1, nb, vld(angvel + 3 * a))
        cst(bin, B_W2, nb, vld(angvel + 3 * b))
        rule = material[a] * n_materials + material[b]
        blk.law[nb] = rule * P_NCOLS
        law = law & plain[rule] & (blk.law[nb] == blk.law[0])
        if slot == NULL:
            row = state + k * S_NCOLS
        else:
            row = state + slot[k] * S_NCOLS if slot[k] >= 0 else zero_row
        block_state(&blk, nb, row)
        nb += 1
        if nb == full:
            block_finish(nb, &blk, law, B, dt, flags, active, state, slot, fr, worst, S)
            nb = 0
            law = True
    if nb:
        block_finish(nb, &blk, law, B, dt, flags, active, state, slot, fr, worst, S)


cdef int bodies_init(Bodies* B, object pos, object vel, object angvel, object radius,
                     object mass, object material, object pair_table, int n_materials,
                     object energy, Py_ssize_t m) except -1:
    """The particle arrays and laws of a kernel call of m rows into B (B.plain NULL:
    law_rows makes it)."""
    B.pos = <const double*>data(pos, "pos", F64, 2, 3, False)
    B.vel = <const double*>data(vel, "vel", F64, 2, 3, False)
    B.angvel = <const double*>data(angvel, "angvel", F64, 2, 3, False)
    B.radius = <const double*>data(radius, "radius", F64, 1, 0, False)
    B.mass = <const double*>data(mass, "mass", F64, 1, 0, False)
    B.material = <const int*>data(material, "material", I32, 1, 0, False)
    B.pair_table = <const double*>data(pair_table, "pair_table", F64, 2, P_NCOLS, False)
    B.n_rows = rows(pair_table)
    B.n_materials = n_materials
    B.sticky = any_reach(B.pair_table, B.n_rows)
    B.energy = _energy_rows(energy, m)
    B.image_from = 0
    B.plain = NULL
    return 0


cdef int law_rows(Bodies* B) except -1:
    """B.plain, malloc'ed (the caller frees it): per pair-table row, 1 when its pairs can
    take the vector blocks' law (laws.pxd law_plain, and no energy tracking)."""
    cdef Py_ssize_t i
    B.plain = <unsigned char*>malloc(max(1, B.n_rows))
    if B.plain == NULL:
        raise MemoryError()
    for i in range(B.n_rows):
        B.plain[i] = law_plain(B.pair_table + i * P_NCOLS) if B.energy == NULL else 0
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
def sphere_sphere(i1, i2, pos, image, cell, vel, angvel, radius, mass, material, pair_table,
                  int n_materials, double dt, int flags, active, state, int n_threads,
                  owner=None, f_out=None, t_out=None, bint periodic=True,
                  bint blocks=True, energy=None, pool=None, int image_from=0, near=None):
    """Update every candidate pair of the batch; returns (max overlap / smaller radius, pair).

    In-pass sums: with owner (per local particle: the owned index its side of a pair is
    added to, or -1; the owner1, owner2 of `scatter` are owner[i1], owner[i2]), f_out and
    t_out, f_out and t_out are zeroed and each active pair is added to its owned
    particles right after it is computed, while its row is in cache (a separate pass
    re-reads every row from memory). These are the additions of `scatter` in the same
    order (same bits); `sphere_plane` with its wall_owner, f_out, t_out then adds the
    wall contacts. On several threads owner must be -1 for split_owners' shared
    particles (no other particle has rows on two threads), whose rows are added after
    the call by `gather`.
    periodic=False: no periodic axis (the images are all zero and are not read).
    image_from: the rows below it have zero images (the owned rows after a build), so
    that a pair of two of them reads no image.
    blocks=False computes one pair at a time (the same bits; for tests).
    energy: None, or (m, E_NCOLS): each touching pair's energy terms (pyx/laws.pxd E_*;
    energy tracking, docs/energy.md); the rows of the other pairs are not written.
    pool: a pooled batch (pdem.contact.store) whose pool `state` is: the pairs' rows are
    state[pool.slot]; the pairs that form get rows of the pool, which grows if needed.
    near: None, or near_pairs' rows (k, i1[k], i2[k]) of the only pairs that can touch
    (the others are inactive and stay so), k ascending: the same results as every pair.
    The arrays are ndarrays of the types and shapes of pdem.particles.ParticleStore and
    pdem.contact.store (arrays.pxd `data`: no typed memoryviews, whose set-up would cost
    more than the kernel's work on a few hundred contacts)."""
    cdef const int* pi1 = <const int*>data(i1, "i1", I32, 1, 0, False)
    cdef const int* pi2 = <const int*>data(i2, "i2", I32, 1, 0, False)
    cdef signed char* pactive = <signed char*>data(active, "active", I8, 1, 0, True)
    cdef double* pstate = <double*>data(state, "state", F64, 2, S_NCOLS, True)
    cdef Py_ssize_t m = rows(i1), n_state = rows(state)
    cdef int t, nt = max(1, n_threads)
    cdef Bodies B
    cdef Sums S
    cdef double[:, ::1] worst = worst_init(nt)
    cdef int* pslot = NULL
    cdef Fresh* fresh = NULL
    cdef const int* pnear = NULL
    cdef Py_ssize_t n_near = 0
    cdef Py_ssize_t* bounds = NULL
    bodies_init(&B, pos, vel, angvel, radius, mass, material, pair_table, n_materials,
                energy, m)
    _sums_args(&S, f_out, t_out, owner, "owner", rows(pos), rows(pos))
    B.image = <const int*>data(image, "image", I32, 2, 3, False)
    B.cell = <const double*>data(cell, "cell", F64, 2, 3, False)
    if rows(cell) != 6:
        raise ValueError("cell must be (6, 3): H, then L H (pdem.cell.fixed_cell for a box)")
    if S.f != NULL:
        memset(S.f, 0, rows(f_out) * 3 * sizeof(double))
        memset(S.t, 0, rows(t_out) * 3 * sizeof(double))
    if m == 0:
        return pick_worst(worst)
    if pool is not None:
        pslot = <int*>data(pool.slot, "pool.slot", I32, 1, 0, True)
        if len(pool.state) != n_state or rows(pool.slot) < m:
            raise ValueError("pooled pairs: state must be the pool's, a slot per pair")
    if rows(i2) < m or rows(active) < m or (n_state < m and pool is None):
        raise ValueError("pair arrays: %d pairs, i2 %d, active %d, state %d rows"
                         % (m, rows(i2), rows(active), n_state))
    if near is not None:
        pnear = <const int*>data(near, "near", I32, 2, 3, False)
        n_near = rows(near)
        if n_near and (pnear[0] < 0 or pnear[3 * (n_near - 1)] >= m):
            raise ValueError("near: pair indices from %d to %d for %d pairs"
                             % (pnear[0], pnear[3 * (n_near - 1)], m))
    try:
        law_rows(&B)
        # each thread's pairs: those of k in [m t / nt, m (t + 1) / nt), as split_owners
        # assumes; with near, the entries of near in that range
        bounds = <Py_ssize_t*>malloc((nt + 1) * sizeof(Py_ssize_t))
        if bounds == NULL:
            raise MemoryError()
        for t in range(nt + 1):
            bounds[t] = (m * t // nt if pnear == NULL
                         else first_at_least(pnear, n_near, m * t // nt))
        B.moving = cell_moving(B.cell)
        B.periodic = periodic
        B.image_from = max(0, image_from)
        if pool is not None:
            fresh = <Fresh*>malloc(nt * sizeof(Fresh))
            if fresh == NULL:
                raise MemoryError()
            memset(fresh, 0, nt * sizeof(Fresh))
        for t in prange(nt, nogil=True, schedule='static', num_threads=nt):
            pair_range(bounds[t], bounds[t + 1], pnear, pi1, pi2, &B, dt, flags, pactive,
                       pstate if n_state else zero_row, pslot,
                       fresh + t if fresh != NULL else NULL, &worst[t, 0], &S, blocks)
        if fresh != NULL:
            settle(pool, fresh, nt)
    finally:
        free(B.plain)
        free(bounds)
    return pick_worst(worst)


cdef Py_ssize_t first_at_least(const int* a, Py_ssize_t n, Py_ssize_t k) noexcept:
    """The first row of the (n, 3) a, ascending in column 0, whose a[row, 0] >= k (n if
    none)."""
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if a[3 * mid] < k:
            lo = mid + 1
        else:
            hi = mid
    return lo


def near_pairs(i1, i2, pos, image, cell, radius, active, double margin, bint periodic=True,
               int image_from=0):
    """The pairs (i1, i2) that are active or whose gap (distance - r1 - r2, pair_vector)
    is below `margin`, in order: rows (k, i1[k], i2[k]) of an int32 (n, 3) array, the
    kernel's `near` (pdem.contact.near)."""
    cdef const int* pi1 = <const int*>data(i1, "i1", I32, 1, 0, False)
    cdef const int* pi2 = <const int*>data(i2, "i2", I32, 1, 0, False)
    cdef const double* x = <const double*>data(pos, "pos", F64, 2, 3, False)
    cdef const int* img = <const int*>data(image, "image", I32, 2, 3, False)
    cdef const double* H = <const double*>data(cell, "cell", F64, 2, 3, False)
    cdef const double* r = <const double*>data(radius, "radius", F64, 1, 0, False)
    cdef const signed char* act = <const signed char*>data(active, "active", I8, 1, 0, False)
    cdef Py_ssize_t k, n = 0, m = rows(i1)
    cdef double reach
    cdef bint keep
    cdef v3 x2, shift0 = image_shift(H, 0, 0, 0)
    if rows(i2) < m or rows(active) < m:
        raise ValueError("pair arrays: %d pairs, i2 %d, active %d" % (m, rows(i2), rows(active)))
    out = np.empty((m, 3), np.int32)
    cdef int* o = <int*>data(out, "out", I32, 2, 3, True)
    with nogil:
        for k in range(m):
            x2 = pair_vector(x, img, H, shift0, periodic, image_from, pi1[k], pi2[k])
            reach = r[pi1[k]] + r[pi2[k]] + margin
            keep = (act[k] != 0) | (vdot(x2, x2) < reach * reach)
            o[3 * n], o[3 * n + 1], o[3 * n + 2] = k, pi1[k], pi2[k]    # kept or not:
            n += keep                                   # no branch to mispredict
    out.resize((n, 3), refcheck=False)      # in place: the memory beyond n returned
    return out


cdef struct Planes:
    # the sphere-plane rows (particle, plane) and the planes' arrays
    const int* particle
    const int* plane
    const double* point
    const double* normal
    const double* vel
    const int* material


cdef void plane_finish(int nb, Block* blk, bint law, const Bodies* B, const Planes* W,
                       double dt, int flags, signed char* active, double* state,
                       double* worst, const Sums* S) noexcept nogil:
    """block_finish for sphere-plane rows (plane = body 1): the block's geometry (and law),
    then per row in row order the increments and the law (the scalar route for rows that
    form and for turns too large for the small-step forms), the wall's work, the worst
    overlap and the in-pass sums
    (the particle's owner in S.owner, per row)."""
    cdef int j, q
    cdef Py_ssize_t k
    cdef bint fast
    cdef double r, un
    cdef double* row
    cdef const double* P
    cdef double* E = NULL
    cdef v3 u, phi, udot, phidot, c
    cdef Load L
    cdef double (*bin)[NB]
    cdef double (*bout)[NB]
    cdef double worst_ratio = worst[0], worst_k = worst[1], ratio
    bin = blk.inp
    bout = blk.out
    block_geometry(nb, blk, dt, flags, True, law, B.pair_table)
    for j in range(nb):
        k = blk.k[j]
        row = state + k * S_NCOLS
        r = bin[B_R2][j]
        un = bout[O_UN][j]
        c = cld(bout, O_C, j)
        P = B.pair_table + blk.law[j]
        if B.energy != NULL:
            E = B.energy + k * E_NCOLS
        fast = law and active[k] != 0 and bout[O_OK][j] != 0.0
        if fast:
            L = block_row(blk, j, row, dt)
        elif active[k] == 0 or bout[O_OK][j] == 0.0:
            L = contact_update(c, cld(bout, O_N, j), un, cld(bin, B_X2, j), cld(bin, B_V1, j),
                               cld(bin, B_V2, j), V(0.0, 0.0, 0.0), cld(bin, B_W2, j), 0.0, r,
                               bout[O_MEFF][j], r, P, dt, flags, active + k, row, E)
        else:
            u = vld(row + S_U)
            phi = vld(row + S_PHI)
            udot = cld(bout, O_UDOT, j)
            phidot = cld(bout, O_PHIDOT, j)
            l6_advance(un, bout[O_VN][j], dt, &u, &phi, &udot, &phidot)
            L = contact_law(P, bout[O_MEFF][j], r, cmld(bout, O_T, j), u, phi, vld(row + S_U0),
                            vld(row + S_PHI0), udot, phidot, row, E, dt)
        wall_work(E, L, c, cld(bin, B_V1, j), V(0.0, 0.0, 0.0), dt)
        ratio = bout[O_RATIO][j]
        if not (ratio <= worst_ratio) and worst_ratio == worst_ratio:   # a NaN stays
            worst_ratio = ratio
            worst_k = k
        q = S.owner[k] if S.owner != NULL else -1
        if q >= 0:                 # (-1: split_owners' shared particle, added later)
            if fast:           # add_row's operations on the block's torque
                add_ft(S.f + 3 * q, S.t + 3 * q, L.force, 1.0, cld(bout, O_T2, j))
            else:
                add_row(S.f + 3 * q, S.t + 3 * q, row, 2, r, flags)
    worst[0] = worst_ratio
    worst[1] = worst_k


cdef void plane_range(Py_ssize_t k0, Py_ssize_t k1, const Bodies* B, const Planes* W,
                      double dt, int flags, signed char* active, double* state,
                      double* worst, const Sums* S, bint blocks) noexcept nogil:
    """Sphere-plane rows k0 .. k1-1: screening, then blocks of touching rows (blocks of
    one row when `blocks` is False). Rows that do not touch get active = 0."""
    cdef Block blk
    cdef double (*bin)[NB]
    cdef Py_ssize_t k
    cdef int nb = 0, p, w, rule
    cdef int full = NB if blocks else 1
    cdef bint law = True           # the rows of the block so far: one row, law_plain's case
    cdef double d, r
    cdef v3 n
    cdef const double* P
    bin = blk.inp
    for k in range(k0, k1):
        if k + PLANE_AHEAD < k1:
            # a wall row's particle is anywhere in memory: its data is fetched while the
            # rows before it are computed
            p = W.particle[k + PLANE_AHEAD]
            prefetch(B.pos + 3 * p)
            prefetch(B.radius + p)
            prefetch(B.material + p)
            prefetch(B.mass + p)
            prefetch(B.vel + 3 * p)
            prefetch(B.angvel + 3 * p)
            if S.f != NULL:
                prefetch(S.f + 3 * p)
                prefetch(S.t + 3 * p)
        p = W.particle[k]
        w = W.plane[k]
        r = B.radius[p]
        n = vld(W.normal + 3 * w)
        d = vdot(vsub(vld(B.pos + 3 * p), vld(W.point + 3 * w)), n)
        P = B.pair_table + (W.material[w] * B.n_materials + B.material[p]) * P_NCOLS
        if d >= r and not (B.sticky and active[k] and held(P, 0.0, r, d - r)):
            if B.energy != NULL and active[k]:
                opened(P, r, state + k * S_NCOLS, B.energy + k * E_NCOLS)
            active[k] = 0
            continue
        blk.k[nb] = k
        cst(bin, B_X2, nb, vscale(n, d))      # sphere centre relative to the foot point
        cst(bin, B_N, nb, n)
        bin[B_UN][nb] = d - r
        bin[B_R1][nb] = 0.0
        bin[B_R2][nb] = r
        bin[B_M2][nb] = B.mass[p]
        cst(bin, B_V1, nb, vld(W.vel + 3 * w))
        cst(bin, B_V2, nb, vld(B.vel + 3 * p))
        cst(bin, B_W1, nb, V(0.0, 0.0, 0.0))
        cst(bin, B_W2, nb, vld(B.angvel + 3 * p))
        rule = W.material[w] * B.n_materials + B.material[p]
        blk.law[nb] = rule * P_NCOLS
        law = law & B.plain[rule] & (blk.law[nb] == blk.law[0])
        block_state(&blk, nb, state + k * S_NCOLS)
        nb += 1
        if nb == full:
            plane_finish(nb, &blk, law, B, W, dt, flags, active, state, worst, S)
            nb = 0
            law = True
    if nb:
        plane_finish(nb, &blk, law, B, W, dt, flags, active, state, worst, S)


@cython.boundscheck(False)
@cython.wraparound(False)
def sphere_plane(particle, plane, pos, vel, angvel, radius, mass, material, plane_point,
                 plane_normal, plane_vel, plane_material, pair_table, int n_materials,
                 double dt, int flags, active, state, int n_threads, wall_owner=None,
                 f_out=None, t_out=None, energy=None, bint blocks=True):
    """Plane = body 1 (equivalent sphere of radius 0 at the foot of the perpendicular,
    infinite mass, no rotation), sphere = body 2; the plane pushes along its normal.
    The touching rows go in vector blocks as sphere pairs do (blocks=False: one row at
    a time, the same bits; for tests).

    In-pass sums (after the in-pass `sphere_sphere`): with wall_owner, f_out, t_out as for
    `scatter`, each active contact is added to its particle (f_out, t_out are not zeroed)
    in contact order, as `scatter` does; on several threads wall_owner must be
    split_owners' (the shared particles' rows added after the call by
    `add_wall_forces`). The arrays: as for `sphere_sphere`."""
    cdef const int* pparticle = <const int*>data(particle, "particle", I32, 1, 0, False)
    cdef Py_ssize_t m = rows(particle)
    cdef int t, nt = max(1, n_threads)
    cdef double[:, ::1] worst = worst_init(nt)
    cdef Bodies B
    cdef Planes W
    cdef Sums S
    cdef signed char* pactive
    cdef double* pstate
    bodies_init(&B, pos, vel, angvel, radius, mass, material, pair_table, n_materials,
                energy, m)
    _sums_args(&S, f_out, t_out, wall_owner, "wall_owner", m, rows(pos))
    if m == 0:
        return pick_worst(worst)
    W.particle = pparticle
    W.plane = <const int*>data(plane, "plane", I32, 1, 0, False)
    W.point = <const double*>data(plane_point, "plane_point", F64, 2, 3, False)
    W.normal = <const double*>data(plane_normal, "plane_normal", F64, 2, 3, False)
    W.vel = <const double*>data(plane_vel, "plane_vel", F64, 2, 3, False)
    W.material = <const int*>data(plane_material, "plane_material", I32, 1, 0, False)
    pactive = <signed char*>data(active, "active", I8, 1, 0, True)
    pstate = <double*>data(state, "state", F64, 2, S_NCOLS, True)
    if rows(plane) < m or rows(active) < m or rows(state) < m:
        raise ValueError("plane rows: %d rows, plane %d, active %d, state %d rows"
                         % (m, rows(plane), rows(active), rows(state)))
    try:
        law_rows(&B)
        for t in prange(nt, nogil=True, schedule='static', num_threads=nt):
            plane_range(m * t // nt, m * (t + 1) // nt, &B, &W, dt, flags, pactive, pstate,
                        &worst[t, 0], &S, blocks)
    finally:
        free(B.plain)
    return pick_worst(worst)


cdef double* _energy_rows(object energy, Py_ssize_t m) except? NULL:
    """The energy rows of a kernel (NULL: tracking off)."""
    cdef double* p
    if energy is None or m == 0:
        return NULL
    p = <double*>data(energy, "energy", F64, 2, E_NCOLS, True)
    if rows(energy) < m:
        raise ValueError("energy rows: %d for %d contacts" % (rows(energy), m))
    return p


def energy_columns():
    """Columns of the per-contact energy terms (pyx/laws.pxd E_*)."""
    return dict(normal=E_NORMAL, tangent=E_TANGENT, damping=E_DAMP, friction=E_FRIC,
                rolling=E_ROLL, walls=E_WALL, ncols=E_NCOLS)


@cython.boundscheck(False)
@cython.wraparound(False)
def gather(const long[::1] pair_start, const int[::1] pair_entry,
           const signed char[::1] active, const double[:, ::1] state,
           const long[::1] wall_start, const signed char[::1] wall_active,
           const double[:, ::1] wall_state, const double[::1] radius, int flags,
           double[:, ::1] f_out, double[:, ::1] t_out, int n_threads, bint accumulate=False,
           const int[::1] slot=None):
    """Sum contact forces and torques per owned particle in a fixed order (accumulate:
    add to f_out and t_out instead of starting from zero).

    pair_entry[pair_start[p]:pair_start[p+1]] lists 2*k + side for the pairs of owned
    particle p in pair order (side 1: p is particle 2); wall contacts of p
    follow in plane order. Same order on any rank or thread count -> same bits.
    radius: of the local particles (owned first); flags: the L6Geom flags (branch vectors).
    slot: a pooled batch's rows of the pairs (pdem.contact.store; None: row k).
    """
    cdef Py_ssize_t n = f_out.shape[0], p, e, k
    cdef int side
    cdef double r
    cdef bint pooled = slot is not None
    if n and not accumulate:
        f_out[:, :] = 0.0
        t_out[:, :] = 0.0
    for p in prange(n, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        r = radius[p]
        for e in range(pair_start[p], pair_start[p + 1]):
            k = pair_entry[e] >> 1
            if active[k] == 0:
                continue
            side = 2 if pair_entry[e] & 1 else 1
            add_row(&f_out[p, 0], &t_out[p, 0], &state[slot[k] if pooled else k, 0], side, r,
                    flags)
        for k in range(wall_start[p], wall_start[p + 1]):
            if wall_active[k] != 0:
                add_row(&f_out[p, 0], &t_out[p, 0], &wall_state[k, 0], 2, r, flags)


@cython.boundscheck(False)
@cython.wraparound(False)
def scatter(const int[::1] owner1, const int[::1] owner2, const signed char[::1] active,
            const double[:, ::1] state, const int[::1] wall_owner,
            const signed char[::1] wall_active, const double[:, ::1] wall_state,
            const double[::1] radius, int flags, double[:, ::1] f_out, double[:, ::1] t_out,
            bint accumulate=False, const int[::1] slot=None):
    """Single-thread equivalent of `gather`: streams through the contacts in order and
    adds each to its owned particles. Pairs are in grid order, so every particle
    receives its contributions in ascending partner order key, then its wall contacts
    in plane order: the same additions in the same order as `gather`, hence the same bits, with
    sequential instead of random reads of the contact rows. slot: as for `gather`."""
    cdef Py_ssize_t m = active.shape[0], k
    cdef int p
    cdef const double* row
    cdef bint pooled = slot is not None
    if not accumulate:
        f_out[:, :] = 0.0
        t_out[:, :] = 0.0
    with nogil:
        for k in range(m):
            if active[k] == 0:
                continue
            row = &state[slot[k] if pooled else k, 0]
            p = owner1[k]
            if p >= 0:
                add_row(&f_out[p, 0], &t_out[p, 0], row, 1, radius[p], flags)
            p = owner2[k]
            if p >= 0:
                add_row(&f_out[p, 0], &t_out[p, 0], row, 2, radius[p], flags)
        _add_wall_rows(wall_owner, wall_active, wall_state, radius, flags, f_out, t_out)


cdef void _add_wall_rows(const int[::1] owner, const signed char[::1] active,
                         const double[:, ::1] state, const double[::1] radius, int flags,
                         double[:, ::1] f_out, double[:, ::1] t_out) noexcept nogil:
    """Add the active wall contact rows (particle = body 2) to their particles (owner -1:
    none), in row order (rows are sorted by particle, then wall: a fixed order on any rank
    count)."""
    cdef Py_ssize_t k
    cdef int p
    for k in range(active.shape[0]):
        p = owner[k]
        if active[k] == 0 or p < 0:
            continue
        add_row(&f_out[p, 0], &t_out[p, 0], &state[k, 0], 2, radius[p], flags)


@cython.boundscheck(False)
@cython.wraparound(False)
def add_wall_forces(const int[::1] owner, const signed char[::1] active,
                    const double[:, ::1] state, const double[::1] radius, int flags,
                    double[:, ::1] f_out, double[:, ::1] t_out):
    """Add a further batch of wall contacts (faceted walls) after scatter/gather."""
    with nogil:
        _add_wall_rows(owner, active, state, radius, flags, f_out, t_out)


@cython.boundscheck(False)
@cython.wraparound(False)
def contact_torques(const double[:, ::1] state, const double[::1] radius, int side, int flags):
    """Torques on body `side` (1 or 2) of contact rows, given that body's radii (0 for a
    wall), as the force sums compute them (pyx/contact_row.pxd row_torques)."""
    cdef Py_ssize_t k
    out_arr = np.empty((state.shape[0], 3))
    cdef double[:, ::1] out = out_arr
    cdef v3 t1, t2
    for k in range(state.shape[0]):
        row_torques(&state[k, 0], radius[k], radius[k], flags, &t1, &t2)
        vst(&out[k, 0], t1 if side == 1 else t2)
    return out_arr


@cython.boundscheck(False)
@cython.wraparound(False)
def split_owners(const int[::1] owner1, owner2_arg, int n_own, int n_threads):
    """In-pass sums on n_threads threads. sphere_sphere and sphere_plane give thread t the
    rows [m t / T, m (t + 1) / T); a particle all of whose rows lie in one thread's range
    is added to by that thread alone, in row order (the additions of one thread). Returns
    the owners for the kernel (-1 for the other, shared, particles; per row: sphere_plane's
    wall_owner, whereas sphere_sphere takes an owner per particle derived from the shared
    ones, PairContacts.particle_owner) and the owners of the
    shared particles alone (-1 elsewhere), whose rows are added after the kernel in row
    order (`gather`, `add_wall_forces`): the same additions in the same order, hence the
    same bits, as on one thread. owner2_arg: None for wall rows (one particle per row)."""
    cdef Py_ssize_t m = owner1.shape[0], k, s
    cdef int t, p, nt = max(1, n_threads)
    cdef int[::1] owner2 = owner1 if owner2_arg is None else owner2_arg
    home_arr = np.full(n_own, -2, dtype=np.int32)       # -2: no row yet, -1: shared
    cdef int[::1] home = home_arr
    out_arr = np.full((4, m), -1, dtype=np.int32)      # kernel owners 1, 2; shared 1, 2
    cdef int[:, ::1] out = out_arr
    with nogil:
        for t in range(nt):
            for k in range(m * t // nt, m * (t + 1) // nt):
                for s in range(2):
                    p = owner1[k] if s == 0 else owner2[k]
                    if p < 0:
                        continue
                    if home[p] == -2:
                        home[p] = t
                    elif home[p] != t:
                        home[p] = -1
        for k in range(m):
            for s in range(2):
                p = owner1[k] if s == 0 else owner2[k]
                if p >= 0:
                    out[s if home[p] >= 0 else s + 2, k] = p
    if owner2_arg is None:
        return out_arr[0], out_arr[2]
    return tuple(out_arr)


@cython.boundscheck(False)
@cython.wraparound(False)
def build_gather_lists(const int[::1] owner1, const int[::1] owner2, int n_own):
    """CSR of pair entries per owned particle. owner1/2[k] = owned index of the pair's
    particles on this rank or -1. A stable counting sort lists each particle's
    partners in pair order (ascending partner order key)."""
    cdef Py_ssize_t m = owner1.shape[0], k, p
    start_arr = np.zeros(n_own + 1, dtype=np.int64)
    cdef long[::1] start = start_arr
    for k in range(m):
        if owner1[k] >= 0:
            start[owner1[k] + 1] += 1
        if owner2[k] >= 0:
            start[owner2[k] + 1] += 1
    for p in range(n_own):
        start[p + 1] += start[p]
    entry_arr = np.empty(start[n_own], dtype=np.int32)
    cdef int[::1] entry = entry_arr
    cdef long[::1] fill = start_arr[:-1].copy()
    for k in range(m):
        if owner1[k] >= 0:
            entry[fill[owner1[k]]] = <int>(2 * k)
            fill[owner1[k]] += 1
        if owner2[k] >= 0:
            entry[fill[owner2[k]]] = <int>(2 * k + 1)
            fill[owner2[k]] += 1
    return start_arr, entry_arr


def geometry_step(double[:, ::1] x2, const double[:, ::1] v1, const double[:, ::1] v2,
                  const double[:, ::1] w1, const double[:, ::1] w2,
                  double r1, double r2, double dt, int flags,
                  signed char[::1] active, double[:, ::1] T, double[:, ::1] u,
                  double[:, ::1] phi, double[:, ::1] udot, double[:, ::1] phidot):
    """L6Geom alone for sphere pairs given relative positions x2 (particle 1 at the
    origin): the same inline routine the batch kernel uses, exposed for unit tests."""
    cdef Py_ssize_t k
    cdef v3 n, c, uu, pp, uu0, pp0, ud, pd, xx
    cdef m33 TT
    cdef double dist, un
    for k in range(x2.shape[0]):
        xx = vld(&x2[k, 0])
        dist = sqrt(vdot(xx, xx))
        n = vscale(xx, 1.0 / dist)
        un = dist - (r1 + r2)
        c = vscale(n, r1 + 0.5 * un)
        uu = vld(&u[k, 0]); pp = vld(&phi[k, 0])
        if active[k] == 0:
            active[k] = 1
            l6_form(n, un, &TT, &uu, &pp, &uu0, &pp0, &ud, &pd)
        else:
            TT = mld(&T[k, 0])
            l6_update(c, n, un, xx, vld(&v1[k, 0]), vld(&v2[k, 0]), vld(&w1[k, 0]), vld(&w2[k, 0]),
                      r1, r2, dt, flags, &TT, &uu, &pp, &ud, &pd)
        mst(&T[k, 0], TT)
        vst(&u[k, 0], uu); vst(&phi[k, 0], pp); vst(&udot[k, 0], ud); vst(&phidot[k, 0], pd)


def law_columns():
    """Column indices of the pair table (single source of truth: laws.pxd)."""
    return dict(normal=P_NORMAL, kn0=P_KN0, kn1=P_KN1, kt_ratio=P_KT_RATIO,
                gamma_n=P_GAMMA_N, zeta=P_ZETA, ct_ratio=P_CT_RATIO, estar=P_ESTAR,
                gstar=P_GSTAR, mu=P_MU, roll_k=P_ROLL_K, roll_mu=P_ROLL_MU,
                twist_k=P_TWIST_K, twist_mu=P_TWIST_MU, limit_damping=P_LIMIT_DAMPING,
                cohesion=P_COHESION, work=P_WORK, coh_k=P_COH_K, reach=P_REACH,
                ncols=P_NCOLS)


def jkr_force(double d, double r_eff, double estar, double w):
    """(a, F_e) of the law's JKR branch at the signed overlap d (laws.pxd jkr_radius),
    for tests of the kernel's solve alone."""
    cdef double reach = 0.75 * cbrt((M_PI * w / estar) ** 2) if w > 0 else 0.0
    cdef double a = jkr_radius(d, r_eff, estar, w, reach)
    return a, 4.0 * estar * a ** 3 / (3.0 * r_eff) - sqrt(8.0 * M_PI * w * estar * a ** 3)


def hertz_restitution(double zeta, double floor=1e-9, double h=2e-5):
    """Coefficient of restitution of a Hertz contact with damping c = 2 zeta sqrt(m* S_n)
    (laws.pxd), from the dimensionless impact y'' = -y^1.5 - 2 sqrt(1.5) zeta y^0.25 y',
    y(0) = 0, y'(0) = 1, integrated with RK4 until y returns to 0 (e = -y' there).
    Independent of the impact velocity (Tsuji et al. 1992), so one solve per material
    pair gives the exact input e. Results below `floor` are not resolved: the
    integration stops, returning a value below floor, as soon as the energy bound
    sqrt(y'^2 + 4/5 y^2.5) (damping only removes energy) drops below it."""
    cdef double y = 0.0, v = 1.0, c = 2.0 * sqrt(1.5) * zeta, t = 0.0
    cdef double k1y, k1v, k2y, k2v, k3y, k3v, k4y, k4v, yn, vn
    while True:
        k1y = v; k1v = _hz_acc(y, v, c)
        k2y = v + 0.5 * h * k1v; k2v = _hz_acc(y + 0.5 * h * k1y, k2y, c)
        k3y = v + 0.5 * h * k2v; k3v = _hz_acc(y + 0.5 * h * k2y, k3y, c)
        k4y = v + h * k3v; k4v = _hz_acc(y + h * k3y, k4y, c)
        yn = y + h / 6.0 * (k1y + 2 * k2y + 2 * k3y + k4y)
        vn = v + h / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v)
        t += h
        if yn <= 0.0 and t > h:
            # linear interpolation of the velocity at the crossing
            return -(v + (vn - v) * y / (y - yn))
        if (vn >= 0.0 and v < 0.0) or t > 1e3:
            return 0.0                       # turned back (or crept) inside the contact
        if yn > 0.0 and vn * vn + 0.8 * yn * yn * sqrt(yn) < floor * floor:
            return 0.5 * floor
        y = yn
        v = vn


cdef inline double _hz_acc(double y, double v, double c) noexcept:
    if y <= 0.0:
        return 0.0
    return -y * sqrt(y) - c * sqrt(sqrt(y)) * v
