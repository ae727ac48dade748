# cython: language_level=3
"""Non-smooth contact dynamics (seed 003): potential-contact detection and the
per-sweep kernels of the non-linear Gauss-Seidel (NLGS) and Jacobi solvers.

Data layout. Grains are rows of (n, dim) float64 C arrays (dim 2: disks in the xy
plane; dim 3: spheres); angular velocities are (n, nw) with nw = 1 in 2D (the z
component) and 3 in 3D. The kernels load every vector into a v3 with z = 0 (and
omega = (0, 0, w) in 2D), so 2D is 3D restricted to the plane: the zero components
add exact zeros and the 2D numbers are those of the 2D formulas.

A contact c joins grain i = ci[c] (always a grain) and body j = cj[c] of kind
kind[c]: 0 grain, 1 boundary segment, 2 boundary disk (radius 0), 3 plane, 4 mesh
facet (3D). The solver only tells kind 0 (two grains) from the others: every boundary
kind, facets included, is a body of infinite mass and inertia whose velocity at the
contact point is vb[c] (zero for fixed walls; pdem.Simulation's moving planes and mesh
walls). The normal n points from j to i (seed 003: v_n = (v_i - v_j).n, a positive
correction pushes i along +n); for a boundary it points from the wall into the grain.
The gap d is the surface-to-surface distance (negative in overlap). Mu[c] and e[c]
are the contact's friction and restitution coefficients. Contacts are listed by
(id_i, kind, id_j) with id_i < id_j for grain pairs (ids: global grain ids, the row
index on one rank).

Solver (one contact, increments of the impulse P = P_n n + P_t acting on i, -P on j):
  W   = (m_i + m_j) / (m_i m_j)   (seed W_nn; 1 / m_i for a boundary)
  w_t = W + r_i^2 / I_i + r_j^2 / I_j   (tangential Delassus diagonal of spheres)
  normal: dv = target - v_n, target = -max(0, d)/dt; an impact with e > 0 aims at
          -e u_n^- instead (Newton, Moreau-Jean: the gap is not closed in that step)
          (overlaps: -beta d/dt with overlap_correction beta > 0; seed: beta = 0)
          seed rule (projected=0): dv = max(0, dv)          -> seed 003 exactly
          projected rule:          P_n + dv / W >= 0 (release allowed)
          v_i += dv / (W m_i) n,  v_j -= dv / (W m_j) n,  P_n += dv / W
  tangential (mu[c] > 0): u_t = tangential part of the relative velocity at the
          contact point (rotations included), P_t' = proj_{|P| <= mu P_n}(P_t - u_t / w_t),
          dP_t = P_t' - P_t applied to velocities and (b x dP_t) / I to omegas.
  The sweep residual is the largest |velocity correction|: |dv| and |dP_t| w_t.
NLGS applies each contact at once, contacts in list order (on several ranks each
contact is solved once, by the owner of grain i, see sweep_nlgs). Jacobi computes every
contact from the sweep's start velocities (prange over contacts) and then adds the
increments per grain in ascending contact order (prange over grains): the same bits
for any thread count.

Contact lists come from pdem.Simulation's interaction kinds (pdem.nscd.scheme):
pair gaps from its Verlet list (verlet_pair_gaps), wall gaps from each wall kind.
"""
from cython.parallel cimport prange
from libc.math cimport sqrt, fabs, INFINITY
from vecmath cimport v3, V, vld, vst, vadd, vsub, vscale, vdot, vcross, vnorm, image_shift
from omp cimport pdem_omp_available
import numpy as np


# ---------------------------------------------------------------- loaders (2D = z 0)
# The kernels read and write rows through pointers, with the row widths (sv: 2 or 3
# velocity columns, nw: 1 or 3 spin columns) as constants of each call site
# (nlgs_rows): the compiler drops the width tests from the loop. On the hourglass NLGS
# takes 0.77 of the time per contact it took with memoryview rows, with the same bits.
cdef inline v3 row_v(const double* p, int sv) noexcept nogil:
    if sv == 3:
        return vld(p)
    return V(p[0], p[1], 0.0)


cdef inline v3 row_w(const double* p, int nw) noexcept nogil:
    if nw == 3:
        return vld(p)
    return V(0.0, 0.0, p[0])


cdef inline void add_v(double* p, int sv, v3 d) noexcept nogil:
    p[0] = p[0] + d.x
    p[1] = p[1] + d.y
    if sv == 3:
        p[2] = p[2] + d.z


cdef inline void add_w(double* p, int nw, v3 d) noexcept nogil:
    if nw == 3:
        p[0] = p[0] + d.x
        p[1] = p[1] + d.y
        p[2] = p[2] + d.z
    else:
        p[0] = p[0] + d.z


# In the plane (spin rows of width 1) a sweep's vectors have z = 0 and its spins only
# a z component: the p-operations leave the zero terms out (planar is a constant of each
# call site). They give the values of the 3D operations on those zeros (a zero's sign
# aside): NLGS 0.83x the time per contact on the hourglass (31.3 against 37.7 ns).
cdef inline v3 padd(v3 a, v3 b, bint planar) noexcept nogil:
    return V(a.x + b.x, a.y + b.y, 0.0) if planar else vadd(a, b)


cdef inline v3 psub(v3 a, v3 b, bint planar) noexcept nogil:
    return V(a.x - b.x, a.y - b.y, 0.0) if planar else vsub(a, b)


cdef inline v3 pscale(v3 a, double s, bint planar) noexcept nogil:
    return V(a.x * s, a.y * s, 0.0) if planar else vscale(a, s)


cdef inline double pdot(v3 a, v3 b, bint planar) noexcept nogil:
    return a.x * b.x + a.y * b.y if planar else vdot(a, b)


cdef inline double pnorm(v3 a, bint planar) noexcept nogil:
    return sqrt(a.x * a.x + a.y * a.y) if planar else vnorm(a)


cdef inline v3 spin_cross(v3 w, v3 b, bint planar) noexcept nogil:
    """w x b for a spin w and a vector b (the velocity of a lever b)."""
    return V(-(w.z * b.y), w.z * b.x, 0.0) if planar else vcross(w, b)


cdef inline v3 lever_moment(v3 b, v3 d, double s, bint planar) noexcept nogil:
    """(b x d) s: the spin increment of the impulse d at the lever b."""
    return V(0.0, 0.0, (b.x * d.y - b.y * d.x) * s) if planar else vscale(vcross(b, d), s)


def openmp_available():
    return bool(pdem_omp_available())


# ---------------------------------------------------------------- pair geometry
def verlet_pair_gaps(const int[::1] i1, const int[::1] i2, const double[:, ::1] pos,
                     const int[:, ::1] image, const double[:, ::1] cell,
                     const double[::1] radius, double[:, ::1] normal, double[::1] gap,
                     int n_threads):
    """Normal (from particle i2 to i1, seed 003's j -> i) and surface gap of every pair
    of a pdem.Simulation Verlet list (periodic images as in contacts.sphere_sphere).
    Coincident centres get the x axis."""
    cdef Py_ssize_t m = i1.shape[0], k
    cdef int a, b
    cdef double dist
    cdef v3 d
    for k in prange(m, nogil=True, schedule='static', num_threads=max(1, n_threads)):
        a = i1[k]
        b = i2[k]
        d = vadd(vsub(vld(&pos[a, 0]), vld(&pos[b, 0])),
                 image_shift(&cell[0, 0], image[a, 0] - image[b, 0], image[a, 1] - image[b, 1],
                             image[a, 2] - image[b, 2]))
        dist = vnorm(d)
        if dist > 0.0:
            d = vscale(d, 1.0 / dist)
        else:
            d = V(1.0, 0.0, 0.0)
        normal[k, 0] = d.x; normal[k, 1] = d.y; normal[k, 2] = d.z
        gap[k] = dist - radius[a] - radius[b]


# ---------------------------------------------------------------- solver
def prepare(const signed char[::1] kind, const int[::1] ci, const int[::1] cj,
            const double[:, ::1] normal, const double[::1] gap, const double[:, ::1] vb,
            const double[:, ::1] v, const double[::1] r, const double[::1] m,
            const double[::1] inv_inertia, double dt, const double[::1] e, double beta,
            double[::1] W, double[::1] wt, double[::1] target, double[::1] pn,
            double[:, ::1] pt, int n_threads):
    """Per-contact constants of a solve: seed W_nn, tangential Delassus w_t and the
    normal velocity target from the start velocities: -max(0, d)/dt (seed 003); with
    restitution e[c] > 0 an impacting contact (u_n^- < 0 and d + u_n^- dt < 0) aims at
    -e u_n^- (Newton's law as in Moreau-Jean: the grain leaves with e times its
    approach velocity; aiming at -e u_n^- - d/dt instead would take d/dt off every
    bounce for good). beta > 0 adds -beta d/dt for an overlap (d < 0): a separating
    velocity that removes beta of it in the step.
    A grain of infinite mass (m = inf: prescribed velocity) counts as a boundary:
    W = 1/m of the other body. vb[c]: velocity of a boundary body j at the contact
    (moving walls; zero for fixed ones). Impulses start at zero."""
    cdef Py_ssize_t nc = kind.shape[0], c
    cdef int i, j, dim = v.shape[1], nt = max(1, n_threads)
    cdef double mi, mj, un, dpos
    cdef v3 n, vj
    for c in prange(nc, nogil=True, schedule='static', num_threads=nt):
        i = ci[c]
        j = cj[c]
        mi = m[i]
        n = vld(&normal[c, 0])
        if kind[c] == 0:
            mj = m[j]
            if mi == INFINITY:
                W[c] = 1.0 / mj
            elif mj == INFINITY:
                W[c] = 1.0 / mi
            else:
                W[c] = (mi + mj) / (mi * mj)
            wt[c] = W[c] + r[i] * r[i] * inv_inertia[i] + r[j] * r[j] * inv_inertia[j]
            vj = row_v(&v[j, 0], dim)
        else:
            W[c] = 1.0 / mi
            wt[c] = W[c] + r[i] * r[i] * inv_inertia[i]
            vj = vld(&vb[c, 0])
        un = vdot(vsub(row_v(&v[i, 0], dim), vj), n)
        dpos = gap[c] if gap[c] > 0.0 else (beta * gap[c] if beta > 0.0 else 0.0)
        if e[c] > 0.0 and un < 0.0 and gap[c] + un * dt < 0.0:
            target[c] = -e[c] * un - (dpos / dt if dpos < 0.0 else 0.0)
        else:
            target[c] = -dpos / dt
        pn[c] = 0.0
        pt[c, 0] = 0.0; pt[c, 1] = 0.0; pt[c, 2] = 0.0


cdef inline double solve_one(v3 n, double W, double wt, double target, double ri, double rj,
                             double mi, double mj, double iIi, double iIj,
                             v3 vi, v3 vj, v3 wi, v3 wj, double mu, int projected,
                             double relax, double* pn, double* pt, v3* dvi, v3* dvj, v3* dwi,
                             v3* dwj, bint planar) noexcept nogil:
    """One contact from the given velocities: updates the impulses pn, pt[0:3] and
    returns the increments to add to v_i, v_j, w_i, w_j and the residual (planar: in
    the xy plane, spins about z)."""
    cdef double dv, res, un, ptn, lim
    cdef v3 bi, bj, u, ut, trial, dpt, z = V(0.0, 0.0, 0.0)
    # normal: seed 003
    dv = target - pdot(psub(vi, vj, planar), n, planar)
    if relax != 1.0:
        dv = dv * relax
    if projected:
        if pn[0] + dv / W < 0.0:
            dv = -pn[0] * W
    elif dv < 0.0:
        dv = 0.0
    pn[0] = pn[0] + dv / W
    res = fabs(dv) if relax == 1.0 else fabs(dv) / relax    # the unrelaxed correction
    dvi[0] = pscale(n, dv / (W * mi), planar)
    dvj[0] = pscale(n, -(dv / (W * mj)), planar)
    dwi[0] = z
    dwj[0] = z
    if mu <= 0.0:
        return res
    # tangential: Coulomb disk, rotations included
    vi = padd(vi, dvi[0], planar)
    vj = padd(vj, dvj[0], planar)
    bi = pscale(n, -ri, planar)
    bj = pscale(n, rj, planar)
    u = psub(padd(vi, spin_cross(wi, bi, planar), planar),
             padd(vj, spin_cross(wj, bj, planar), planar), planar)
    ut = psub(u, pscale(n, pdot(u, n, planar), planar), planar)
    if relax != 1.0:
        ut = pscale(ut, relax, planar)
    trial = psub(V(pt[0], pt[1], pt[2]), pscale(ut, 1.0 / wt, planar), planar)
    lim = mu * pn[0]
    ptn = pnorm(trial, planar)
    if ptn > lim:
        trial = pscale(trial, lim / ptn, planar) if ptn > 0.0 else z
    dpt = psub(trial, V(pt[0], pt[1], pt[2]), planar)
    pt[0] = trial.x; pt[1] = trial.y; pt[2] = trial.z
    lim = pnorm(dpt, planar) * wt if relax == 1.0 else pnorm(dpt, planar) * wt / relax
    if lim > res:
        res = lim
    dvi[0] = padd(dvi[0], pscale(dpt, 1.0 / mi, planar), planar)
    dvj[0] = psub(dvj[0], pscale(dpt, 1.0 / mj, planar), planar)
    dwi[0] = lever_moment(bi, dpt, iIi, planar)
    dwj[0] = lever_moment(bj, dpt, -iIj, planar)
    return res


cdef struct Solve:               # the arrays of one solve's sweeps, as pointers
    const signed char* kind
    const int* ci
    const int* cj
    const double* normal          # (nc, 3)
    const double* vb              # (nc, 3)
    const double* W
    const double* wt
    const double* target
    const double* mu
    double* pn
    double* pt                    # (nc, 3)
    double* v                     # (n, sv)
    double* w                     # (n, nw)
    const double* r
    const double* m
    const double* inv_inertia
    Py_ssize_t nc
    int sv, nw, projected
    double relax


cdef Solve solve_arrays(const signed char[::1] kind, const int[::1] ci, const int[::1] cj,
                        const double[:, ::1] normal, const double[:, ::1] vb,
                        const double[::1] W, const double[::1] wt, const double[::1] target,
                        double[:, ::1] v, double[:, ::1] w, const double[::1] r,
                        const double[::1] m, const double[::1] inv_inertia,
                        const double[::1] mu, int projected, double relax, double[::1] pn,
                        double[:, ::1] pt) except *:
    """A Solve of the sweeps' arguments (every per-contact array of nc rows)."""
    cdef Solve S
    cdef Py_ssize_t nc = kind.shape[0]
    if v.shape[1] not in (2, 3) or w.shape[1] not in (1, 3):
        raise ValueError("v (n, 2|3) and w (n, 1|3) expected, got %d and %d columns"
                         % (v.shape[1], w.shape[1]))
    if not (ci.shape[0] == cj.shape[0] == normal.shape[0] == vb.shape[0] == W.shape[0]
            == wt.shape[0] == target.shape[0] == mu.shape[0] == pn.shape[0] == pt.shape[0]
            == nc):
        raise ValueError("every per-contact array needs %d rows (one per contact)" % nc)
    if normal.shape[1] != 3 or vb.shape[1] != 3 or pt.shape[1] != 3:
        raise ValueError("normal, vb and pt: 3 columns expected")
    S.nc = nc
    S.sv, S.nw, S.projected, S.relax = v.shape[1], w.shape[1], projected, relax
    if nc == 0:
        return S
    S.kind, S.ci, S.cj = &kind[0], &ci[0], &cj[0]
    S.normal, S.vb, S.W, S.wt, S.target = &normal[0, 0], &vb[0, 0], &W[0], &wt[0], &target[0]
    S.mu, S.pn, S.pt = &mu[0], &pn[0], &pt[0, 0]
    S.v, S.w, S.r, S.m, S.inv_inertia = &v[0, 0], &w[0, 0], &r[0], &m[0], &inv_inertia[0]
    return S


cdef inline double solve_at(Solve S, Py_ssize_t c, int sv, int nw, double relax, v3* dvi,
                            v3* dvj, v3* dwi, v3* dwj) noexcept nogil:
    """Contact c from the current velocities (solve_one); sv, nw: S's row widths, relax:
    S's (NLGS: the constant 1, which drops solve_one's relaxation branches)."""
    cdef int i = S.ci[c], j = S.cj[c]
    cdef v3 z = V(0.0, 0.0, 0.0)
    if S.kind[c] == 0:
        return solve_one(vld(S.normal + 3 * c), S.W[c], S.wt[c], S.target[c], S.r[i], S.r[j],
                         S.m[i], S.m[j], S.inv_inertia[i], S.inv_inertia[j],
                         row_v(S.v + sv * i, sv), row_v(S.v + sv * j, sv), row_w(S.w + nw * i, nw),
                         row_w(S.w + nw * j, nw), S.mu[c], S.projected, relax, S.pn + c,
                         S.pt + 3 * c, dvi, dvj, dwi, dwj, nw == 1)
    return solve_one(vld(S.normal + 3 * c), S.W[c], S.wt[c], S.target[c], S.r[i], 0.0, S.m[i],
                     INFINITY, S.inv_inertia[i], 0.0, row_v(S.v + sv * i, sv), vld(S.vb + 3 * c),
                     row_w(S.w + nw * i, nw), z, S.mu[c], S.projected, relax, S.pn + c,
                     S.pt + 3 * c, dvi, dvj, dwi, dwj, nw == 1)


cdef inline double nlgs_rows(Solve S, const signed char* owned, double* ghost_dv,
                             double* ghost_dw, int sv, int nw) noexcept nogil:
    """sweep_nlgs with the row widths sv, nw as constants."""
    cdef Py_ssize_t c
    cdef int i, j
    cdef double res = 0.0, rc
    cdef v3 dvi, dvj, dwi, dwj
    for c in range(S.nc):
        i = S.ci[c]
        if not owned[i]:
            continue
        rc = solve_at(S, c, sv, nw, 1.0, &dvi, &dvj, &dwi, &dwj)
        if rc > res:
            res = rc
        add_v(S.v + sv * i, sv, dvi)
        if S.mu[c] > 0.0:
            add_w(S.w + nw * i, nw, dwi)
        if S.kind[c] == 0:
            j = S.cj[c]
            add_v(S.v + sv * j, sv, dvj)
            if S.mu[c] > 0.0:
                add_w(S.w + nw * j, nw, dwj)
            if not owned[j]:
                add_v(ghost_dv + sv * j, sv, dvj)
                if S.mu[c] > 0.0:
                    add_w(ghost_dw + nw * j, nw, dwj)
    return res


def sweep_nlgs(const signed char[::1] kind, const int[::1] ci, const int[::1] cj,
               const double[:, ::1] normal, const double[:, ::1] vb, const double[::1] W,
               const double[::1] wt, const double[::1] target, double[:, ::1] v,
               double[:, ::1] w, const double[::1] r, const double[::1] m,
               const double[::1] inv_inertia, const double[::1] mu, int projected,
               double[::1] pn, double[:, ::1] pt,
               const signed char[::1] owned, double[:, ::1] ghost_dv,
               double[:, ::1] ghost_dw):
    """One Gauss-Seidel sweep in list order, velocities updated after each contact.
    On several ranks (owned[g] == 0 for ghost rows) a contact is solved by the owner of
    its grain i: contacts whose i is a ghost are skipped (the other rank solves them),
    and the increments given to a ghost j are applied to the local copy (Gauss-Seidel
    within the rank) and summed into ghost_dv, ghost_dw for its owner.
    Returns the largest |velocity correction|."""
    cdef Solve S = solve_arrays(kind, ci, cj, normal, vb, W, wt, target, v, w, r, m,
                                inv_inertia, mu, projected, 1.0, pn, pt)
    cdef double res = 0.0
    if S.nc == 0:
        return res
    if ghost_dv.shape[1] != S.sv or ghost_dw.shape[1] != S.nw:
        raise ValueError("ghost_dv, ghost_dw: the columns of v and w expected")
    cdef double* gdv = &ghost_dv[0, 0]
    cdef double* gdw = &ghost_dw[0, 0]
    with nogil:
        if S.sv == 3 and S.nw == 3:
            res = nlgs_rows(S, &owned[0], gdv, gdw, 3, 3)
        elif S.sv == 3:
            res = nlgs_rows(S, &owned[0], gdv, gdw, 3, 1)
        else:
            res = nlgs_rows(S, &owned[0], gdv, gdw, 2, 1)
    return res


cdef inline void jacobi_contact(Solve S, Py_ssize_t c, int sv, int nw, double* inc,
                                double* res) noexcept nogil:
    """Contact c of a Jacobi sweep: its residual and its increments dv_i, dv_j, dw_i, dw_j
    in inc[12 c:12 c + 12] (its own locals: safe in prange)."""
    cdef v3 dvi, dvj, dwi, dwj
    res[c] = solve_at(S, c, sv, nw, S.relax, &dvi, &dvj, &dwi, &dwj)
    vst(inc + 12 * c, dvi)
    vst(inc + 12 * c + 3, dvj)
    vst(inc + 12 * c + 6, dwi)
    vst(inc + 12 * c + 9, dwj)


cdef void jacobi_rows(Solve S, const long* start, const int* entry, double* inc, double* res,
                      long n_update, int nt) noexcept nogil:
    """sweep_jacobi's parallel loops: the contacts (planar or not), then the sums per
    grain."""
    cdef Py_ssize_t c, g, e
    cdef int side, sv = S.sv, nw = S.nw
    cdef v3 sv3, sw3
    if nw == 1:                 # two loops: OpenMP's outlined bodies see the constant
        for c in prange(S.nc, schedule='static', num_threads=nt):
            jacobi_contact(S, c, sv, 1, inc, res)
    else:
        for c in prange(S.nc, schedule='static', num_threads=nt):
            jacobi_contact(S, c, sv, 3, inc, res)
    for g in prange(n_update, schedule='static', num_threads=nt):
        if start[g] == start[g + 1]:
            continue
        sv3 = V(0.0, 0.0, 0.0)
        sw3 = V(0.0, 0.0, 0.0)
        for e in range(start[g], start[g + 1]):
            c = entry[e] >> 1
            side = <int>(entry[e] & 1)
            sv3 = vadd(sv3, vld(inc + 12 * c + 3 * side))
            sw3 = vadd(sw3, vld(inc + 12 * c + 6 + 3 * side))
        add_v(S.v + sv * g, sv, sv3)
        add_w(S.w + nw * g, nw, sw3)


def sweep_jacobi(const signed char[::1] kind, const int[::1] ci, const int[::1] cj,
                 const double[:, ::1] normal, const double[:, ::1] vb, const double[::1] W,
                 const double[::1] wt, const double[::1] target, double[:, ::1] v,
                 double[:, ::1] w, const double[::1] r, const double[::1] m,
                 const double[::1] inv_inertia, const double[::1] mu, int projected,
                 double relax, double[::1] pn, double[:, ::1] pt,
                 const long[::1] start, const int[::1] entry, double[:, ::1] inc,
                 double[::1] res, long n_update, int n_threads):
    """One Jacobi sweep: every contact from the sweep's start velocities (increments in
    inc (nc, 12): dv_i, dv_j, dw_i, dw_j; each correction scaled by relax), then grains
    g < n_update add their increments in ascending contact order. Returns the largest
    |velocity correction|."""
    cdef Solve S = solve_arrays(kind, ci, cj, normal, vb, W, wt, target, v, w, r, m,
                                inv_inertia, mu, projected, relax, pn, pt)
    cdef Py_ssize_t c
    cdef int nt = max(1, n_threads)
    cdef double rmax = 0.0
    if S.nc == 0:
        return rmax
    if inc.shape[0] < S.nc or inc.shape[1] != 12 or res.shape[0] < S.nc:
        raise ValueError("inc (nc, 12) and res (nc,) expected")
    if start.shape[0] < n_update + 1:
        raise ValueError("start: %d entries for %d grains" % (start.shape[0], n_update))
    with nogil:
        jacobi_rows(S, &start[0], &entry[0], &inc[0, 0], &res[0], n_update, nt)
        for c in range(S.nc):
            if res[c] > rmax:
                rmax = res[c]
    return rmax


# ---------------------------------------------------------------- exchange after a sweep
cdef Py_ssize_t _put_rows(const double[:, ::1] a, const double[:, ::1] b,
                          const long[::1] rows, double[::1] out, Py_ssize_t o) noexcept nogil:
    """Rows `rows` of a and of b, side by side, into out from offset o; the next offset."""
    cdef Py_ssize_t k, x, na = a.shape[1], nb = b.shape[1]
    for k in range(rows.shape[0]):
        for x in range(na):
            out[o + x] = a[rows[k], x]
        for x in range(nb):
            out[o + na + x] = b[rows[k], x]
        o += na + nb
    return o


def pack_border(const double[:, ::1] v, const double[:, ::1] w, const double[:, ::1] ghost_dv,
                const double[:, ::1] ghost_dw, const long[::1] sel, const long[::1] ghost,
                int increments, double res, double[::1] out):
    """The message to one neighbour after a sweep (pdem.nscd.exchange): the velocity rows
    v, w of the owned rows sel, then (NLGS: increments) the ghost_dv, ghost_dw rows of
    the ghost rows `ghost` this neighbour owns, then the residual res."""
    cdef Py_ssize_t o
    with nogil:
        o = _put_rows(v, w, sel, out, 0)
        if increments:
            o = _put_rows(ghost_dv, ghost_dw, ghost, out, o)
        out[o] = res


def unpack_border(double[:, ::1] v, double[:, ::1] w, double[:, ::1] ghost_dv,
                  double[:, ::1] ghost_dw, const long[::1] sel, const long[::1] ghost,
                  int increments, const double[::1] inc):
    """Apply a neighbour's pack_border message (its sel rows are our `ghost` rows, its
    ghost rows our `sel` rows): each ghost row gets the owner's velocity plus the
    increments this rank gave it (ghost_dv, ghost_dw, zeroed), each owned row adds the
    increments the neighbour gave it; both sides form the same sum v_owner + dv.
    Returns the neighbour's residual."""
    cdef Py_ssize_t k, a, o = 0, nv = v.shape[1], nw = w.shape[1]
    cdef long g
    with nogil:
        for k in range(ghost.shape[0]):
            g = ghost[k]
            if increments:
                for a in range(nv):
                    v[g, a] = inc[o + a] + ghost_dv[g, a]
                    ghost_dv[g, a] = 0.0
                for a in range(nw):
                    w[g, a] = inc[o + nv + a] + ghost_dw[g, a]
                    ghost_dw[g, a] = 0.0
            else:
                for a in range(nv):
                    v[g, a] = inc[o + a]
                for a in range(nw):
                    w[g, a] = inc[o + nv + a]
            o += nv + nw
        if increments:
            for k in range(sel.shape[0]):
                g = sel[k]
                for a in range(nv):
                    v[g, a] = v[g, a] + inc[o + a]
                for a in range(nw):
                    w[g, a] = w[g, a] + inc[o + nv + a]
                o += nv + nw
    return inc[o]
