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
from vecmath cimport v3, V, vld, vadd, vsub, vscale, vdot, vcross, vnorm, image_shift
from omp cimport pdem_omp_available
import numpy as np


# ---------------------------------------------------------------- loaders (2D = z 0)
cdef inline v3 ld(const double[:, ::1] a, Py_ssize_t i, int dim) noexcept nogil:
    if dim == 3:
        return V(a[i, 0], a[i, 1], a[i, 2])
    return V(a[i, 0], a[i, 1], 0.0)


cdef inline v3 ldw(const double[:, ::1] w, Py_ssize_t i) noexcept nogil:
    if w.shape[1] == 3:
        return V(w[i, 0], w[i, 1], w[i, 2])
    return V(0.0, 0.0, w[i, 0])


cdef inline void addv(double[:, ::1] a, Py_ssize_t i, int dim, v3 d) noexcept nogil:
    a[i, 0] = a[i, 0] + d.x
    a[i, 1] = a[i, 1] + d.y
    if dim == 3:
        a[i, 2] = a[i, 2] + d.z


cdef inline void addw(double[:, ::1] w, Py_ssize_t i, v3 d) noexcept nogil:
    if w.shape[1] == 3:
        w[i, 0] = w[i, 0] + d.x
        w[i, 1] = w[i, 1] + d.y
        w[i, 2] = w[i, 2] + d.z
    else:
        w[i, 0] = w[i, 0] + d.z


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
        n = ld(normal, c, 3)
        if kind[c] == 0:
            mj = m[j]
            if mi == INFINITY:
                W[c] = 1.0 / mj
            elif mj == INFINITY:
                W[c] = 1.0 / mi
            else:
                W[c] = (mi + mj) / (mi * mj)
            wt[c] = W[c] + r[i] * r[i] * inv_inertia[i] + r[j] * r[j] * inv_inertia[j]
            vj = ld(v, j, dim)
        else:
            W[c] = 1.0 / mi
            wt[c] = W[c] + r[i] * r[i] * inv_inertia[i]
            vj = ld(vb, c, 3)
        un = vdot(vsub(ld(v, i, dim), vj), n)
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
                             v3* dwj) noexcept nogil:
    """One contact from the given velocities: updates the impulses pn, pt[0:3] and
    returns the increments to add to v_i, v_j, w_i, w_j and the residual."""
    cdef double dv, res, un, ptn, lim
    cdef v3 bi, bj, u, ut, trial, dpt, z = V(0.0, 0.0, 0.0)
    # normal: seed 003
    dv = target - vdot(vsub(vi, vj), n)
    if relax != 1.0:
        dv = dv * relax
    if projected:
        if pn[0] + dv / W < 0.0:
            dv = -pn[0] * W
    elif dv < 0.0:
        dv = 0.0
    pn[0] = pn[0] + dv / W
    res = fabs(dv) if relax == 1.0 else fabs(dv) / relax    # the unrelaxed correction
    dvi[0] = vscale(n, dv / (W * mi))
    dvj[0] = vscale(n, -(dv / (W * mj)))
    dwi[0] = z
    dwj[0] = z
    if mu <= 0.0:
        return res
    # tangential: Coulomb disk, rotations included
    vi = vadd(vi, dvi[0])
    vj = vadd(vj, dvj[0])
    bi = vscale(n, -ri)
    bj = vscale(n, rj)
    u = vsub(vadd(vi, vcross(wi, bi)), vadd(vj, vcross(wj, bj)))
    ut = vsub(u, vscale(n, vdot(u, n)))
    if relax != 1.0:
        ut = vscale(ut, relax)
    trial = vsub(V(pt[0], pt[1], pt[2]), vscale(ut, 1.0 / wt))
    lim = mu * pn[0]
    ptn = vnorm(trial)
    if ptn > lim:
        trial = vscale(trial, lim / ptn) if ptn > 0.0 else z
    dpt = vsub(trial, V(pt[0], pt[1], pt[2]))
    pt[0] = trial.x; pt[1] = trial.y; pt[2] = trial.z
    lim = vnorm(dpt) * wt if relax == 1.0 else vnorm(dpt) * wt / relax
    if lim > res:
        res = lim
    dvi[0] = vadd(dvi[0], vscale(dpt, 1.0 / mi))
    dvj[0] = vsub(dvj[0], vscale(dpt, 1.0 / mj))
    dwi[0] = vscale(vcross(bi, dpt), iIi)
    dwj[0] = vscale(vcross(bj, dpt), -iIj)
    return res


cdef inline double solve_at(Py_ssize_t c, const signed char[::1] kind, const int[::1] ci,
                            const int[::1] cj, const double[:, ::1] normal,
                            const double[:, ::1] vb, const double[::1] W, const double[::1] wt,
                            const double[::1] target, const double[:, ::1] v,
                            const double[:, ::1] w, const double[::1] r, const double[::1] m,
                            const double[::1] inv_inertia, const double[::1] mu,
                            int projected, double relax, double[::1] pn, double[:, ::1] pt, v3* dvi,
                            v3* dvj, v3* dwi, v3* dwj) noexcept nogil:
    cdef int i = ci[c], j = cj[c], dim = v.shape[1]
    cdef v3 z = V(0.0, 0.0, 0.0)
    if kind[c] == 0:
        return solve_one(ld(normal, c, 3), W[c], wt[c], target[c], r[i], r[j], m[i], m[j],
                         inv_inertia[i], inv_inertia[j], ld(v, i, dim), ld(v, j, dim),
                         ldw(w, i), ldw(w, j), mu[c], projected, relax, &pn[c], &pt[c, 0],
                         dvi, dvj, dwi, dwj)
    return solve_one(ld(normal, c, 3), W[c], wt[c], target[c], r[i], 0.0, m[i], INFINITY,
                     inv_inertia[i], 0.0, ld(v, i, dim), ld(vb, c, 3), ldw(w, i), z, mu[c], projected,
                     relax, &pn[c], &pt[c, 0], dvi, dvj, dwi, dwj)


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
    cdef Py_ssize_t nc = kind.shape[0], c
    cdef int i, j, dim = v.shape[1]
    cdef double res = 0.0, rc
    cdef v3 dvi, dvj, dwi, dwj
    with nogil:
        for c in range(nc):
            i = ci[c]
            if not owned[i]:
                continue
            rc = solve_at(c, kind, ci, cj, normal, vb, W, wt, target, v, w, r, m,
                          inv_inertia, mu, projected, 1.0, pn, pt, &dvi, &dvj, &dwi, &dwj)
            if rc > res:
                res = rc
            addv(v, i, dim, dvi)
            if mu[c] > 0.0:
                addw(w, i, dwi)
            if kind[c] == 0:
                j = cj[c]
                addv(v, j, dim, dvj)
                if mu[c] > 0.0:
                    addw(w, j, dwj)
                if not owned[j]:
                    addv(ghost_dv, j, dim, dvj)
                    if mu[c] > 0.0:
                        addw(ghost_dw, j, dwj)
    return res


cdef void _jacobi_contact(Py_ssize_t c, const signed char[::1] kind, const int[::1] ci,
                          const int[::1] cj, const double[:, ::1] normal,
                          const double[:, ::1] vb, const double[::1] W, const double[::1] wt,
                          const double[::1] target, const double[:, ::1] v,
                          const double[:, ::1] w, const double[::1] r, const double[::1] m,
                          const double[::1] inv_inertia, const double[::1] mu,
                          int projected, double relax, double[::1] pn, double[:, ::1] pt,
                          double[:, ::1] inc, double[::1] res) noexcept nogil:
    """Contact c of a Jacobi sweep (its own stack: safe in prange)."""
    cdef v3 dvi, dvj, dwi, dwj
    res[c] = solve_at(c, kind, ci, cj, normal, vb, W, wt, target, v, w, r, m, inv_inertia,
                      mu, projected, relax, pn, pt, &dvi, &dvj, &dwi, &dwj)
    inc[c, 0] = dvi.x; inc[c, 1] = dvi.y; inc[c, 2] = dvi.z
    inc[c, 3] = dvj.x; inc[c, 4] = dvj.y; inc[c, 5] = dvj.z
    inc[c, 6] = dwi.x; inc[c, 7] = dwi.y; inc[c, 8] = dwi.z
    inc[c, 9] = dwj.x; inc[c, 10] = dwj.y; inc[c, 11] = dwj.z


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
    cdef Py_ssize_t nc = kind.shape[0], c, g, e
    cdef int dim = v.shape[1], nt = max(1, n_threads), side
    cdef double rmax = 0.0
    cdef v3 sv, sw
    for c in prange(nc, nogil=True, schedule='static', num_threads=nt):
        _jacobi_contact(c, kind, ci, cj, normal, vb, W, wt, target, v, w, r, m, inv_inertia,
                        mu, projected, relax, pn, pt, inc, res)
    for g in prange(n_update, nogil=True, schedule='static', num_threads=nt):
        if start[g] == start[g + 1]:
            continue
        sv = V(0.0, 0.0, 0.0)
        sw = V(0.0, 0.0, 0.0)
        for e in range(start[g], start[g + 1]):
            c = entry[e] >> 1
            side = <int>(entry[e] & 1)
            sv = vadd(sv, V(inc[c, 3 * side], inc[c, 3 * side + 1], inc[c, 3 * side + 2]))
            sw = vadd(sw, V(inc[c, 6 + 3 * side], inc[c, 7 + 3 * side],
                            inc[c, 8 + 3 * side]))
        addv(v, g, dim, sv)
        addw(w, g, sw)
    for c in range(nc):
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
