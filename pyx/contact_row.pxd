# Header-only: the contact state row (S_* column offsets) and the update of one
# contact of any shape pair -- L6Geom (seed 000) then the pair's law (laws.pxd) --
# shared by the sphere-sphere/sphere-plane kernels (contacts.pyx) and the ball-facet
# kernel (facets.pyx).
from vecmath cimport v3, m33, V, vld, vst, mld, mst, vadd, vsub, vneg, vscale, vcross, vdot, mtdot
from l6geom cimport l6_form, l6_update, NO_RATCH
from laws cimport law_eval, P_ROLL_K, P_TWIST_K, E_WALL, E_FRIC, P_NORMAL, P_KN0, P_KN1, \
    P_KT_RATIO, P_GSTAR
from libc.math cimport sqrt

# One row of 27 doubles per contact: L6Geom state then kernel outputs. The torques on
# the two bodies are not stored: row_torques derives them from the normal, u_n, force and
# moment (the kernels are limited by memory traffic; 3 fewer doubles per row).
cdef enum:
    S_T = 0           # local axes by rows (9)
    S_U = 9           # u (3), u_x < 0 in overlap
    S_PHI = 12        # phi (3)
    S_U0 = 15         # shifted origin of u (3): plastic slip
    S_PHI0 = 18       # shifted origin of phi (3)
    S_FORCE = 21      # force on particle 2, global (3)
    S_MOMENT = 24     # moment of the law on particle 2, global (3): rolling / twisting
    S_NCOLS = 27


ctypedef struct Load:
    v3 force          # on body 2, global
    v3 moment         # of the law on body 2, global


cdef inline Load contact_law(const double* P, double meff, double reff, m33 T, v3 u, v3 phi,
                             v3 u0, v3 phi0, v3 udot, v3 phidot, double* row, double* E,
                             double dt) noexcept nogil:
    """The pair's law on the updated L6Geom state, then the row written: force and moment
    on 2 in global coordinates (also returned), T, u, phi and the (possibly shifted)
    origins. E: NULL or the contact's energy terms (laws.pxd E_*) for the step dt."""
    cdef v3 f_loc, m_loc
    cdef Load L
    law_eval(P, meff, reff, u, phi, &u0, &phi0, udot, phidot, &f_loc, &m_loc, E, dt)
    L.force = mtdot(T, f_loc)
    if P[P_ROLL_K] > 0.0 or P[P_TWIST_K] > 0.0:
        L.moment = mtdot(T, m_loc)
    else:       # no rolling or twisting law: law_eval's moment is zero
        L.moment = V(0.0, 0.0, 0.0)
    vst(row + S_FORCE, L.force)
    vst(row + S_MOMENT, L.moment)
    mst(row + S_T, T)
    vst(row + S_U, u); vst(row + S_PHI, phi); vst(row + S_U0, u0); vst(row + S_PHI0, phi0)
    return L


cdef inline Load contact_update(v3 c, v3 n, double un, v3 x2, v3 v1, v3 v2, v3 w1, v3 w2,
                                double r1, double r2, double meff, double reff, const double* P,
                                double dt, int flags, signed char* active,
                                double* row, double* E) noexcept nogil:
    """One contact of any shape pair, given its directly computed c, n, u_n (seed 000):
    L6Geom formation or update, the pair's law, then the force and moment on 2 in global
    coordinates (returned too). State is read and written through row pointers. E: NULL
    or the contact's energy terms (laws.pxd E_*)."""
    cdef m33 T
    cdef v3 u, phi, u0, phi0, udot, phidot
    u = vld(row + S_U); phi = vld(row + S_PHI); u0 = vld(row + S_U0); phi0 = vld(row + S_PHI0)
    if active[0] == 0:
        active[0] = 1
        l6_form(n, un, &T, &u, &phi, &u0, &phi0, &udot, &phidot)
    else:
        T = mld(row + S_T)
        l6_update(c, n, un, x2, v1, v2, w1, w2, r1, r2, dt, flags, &T, &u, &phi, &udot, &phidot)
    return contact_law(P, meff, reff, T, u, phi, u0, phi0, udot, phidot, row, E, dt)


cdef inline void lever_torques(v3 n, Load L, double un, double r1, double r2, int flags,
                               v3* t1, v3* t2) noexcept nogil:
    """Torques on bodies 1 and 2 (radii r1, r2; 0 for a wall) of a contact with normal n,
    u_n and load L: b1 x (-F) - M and b2 x F + M. The contact point c lies on the line of
    centres, so the branch vectors (seed 000, l6geom.l6_branches) are b1 = (r1 + u_n/2) n
    and b2 = -(r2 + u_n/2) n, or +-r n with NO_RATCH: both torques are -arm (n x F) -+ M.
    Every sum of contact torques (in-pass, scatter, gather, outputs) goes through here:
    the same bits."""
    cdef v3 w = vcross(n, L.force)
    cdef double h = 0.0 if flags & NO_RATCH else 0.5 * un
    t1[0] = vsub(vscale(w, -(r1 + h)), L.moment)
    t2[0] = vadd(vscale(w, -(r2 + h)), L.moment)


cdef inline Load row_load(const double* row) noexcept nogil:
    cdef Load L
    L.force = vld(row + S_FORCE)
    L.moment = vld(row + S_MOMENT)
    return L


cdef inline void row_torques(const double* row, double r1, double r2, int flags, v3* t1,
                             v3* t2) noexcept nogil:
    """lever_torques of a contact row (n = row 0 of T, u_n = u_x)."""
    lever_torques(vld(row + S_T), row_load(row), row[S_U], r1, r2, flags, t1, t2)


cdef inline void wall_work(double* E, Load L, v3 c, v3 v1, v3 w1, double dt) noexcept nogil:
    """E_WALL: the work a wall (body 1: velocity v1 at its reference point, spin w1) does
    on the particle over the step, (F . (v1 + w1 x c) + M . w1) dt with the force and law
    moment on the particle and c the contact point relative to that point (docs/energy.md)."""
    if E != NULL:
        E[E_WALL] = (vdot(L.force, vadd(v1, vcross(w1, c))) + vdot(L.moment, w1)) * dt


cdef inline void opened(const double* P, double reff, const double* row, double* E) noexcept nogil:
    """E_FRIC of a contact that opens this step: the energy its tangential, rolling and
    twisting springs held at its last step (k_t from that step's overlap), lost with the
    contact (docs/energy.md). No-op when E is NULL."""
    cdef double d, kt, sy, sz, k
    if E == NULL:
        return
    d = -(row[S_U] - row[S_U0])
    if d < 0.0:
        d = 0.0
    if P[P_NORMAL] == 0.0:
        kt = P[P_KT_RATIO] * (P[P_KN0] + P[P_KN1] * reff)
    else:
        kt = 8.0 * P[P_GSTAR] * sqrt(reff * d)
    sy = row[S_U + 1] - row[S_U0 + 1]
    sz = row[S_U + 2] - row[S_U0 + 2]
    E[E_FRIC] = 0.5 * kt * (sy * sy + sz * sz)
    k = P[P_ROLL_K] * kt * reff * reff
    sy = row[S_PHI + 1] - row[S_PHI0 + 1]
    sz = row[S_PHI + 2] - row[S_PHI0 + 2]
    E[E_FRIC] += 0.5 * k * (sy * sy + sz * sz)
    k = P[P_TWIST_K] * kt * reff * reff
    sy = row[S_PHI] - row[S_PHI0]
    E[E_FRIC] += 0.5 * k * sy * sy
