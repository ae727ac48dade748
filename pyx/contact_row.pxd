# Header-only: the contact state row (S_* column offsets) and the update of one
# contact of any shape pair -- L6Geom (seed 000) then the pair's law (laws.pxd) --
# shared by the sphere-sphere/sphere-plane kernels (contacts.pyx) and the ball-facet
# kernel (facets.pyx).
from vecmath cimport v3, m33, V, vld, vst, mld, mst, vadd, vsub, vneg, vscale, vcross, mtdot
from l6geom cimport l6_form, l6_update, NO_RATCH
from laws cimport law_eval, P_ROLL_K, P_TWIST_K

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
                             v3 u0, v3 phi0, v3 udot, v3 phidot, double* row) noexcept nogil:
    """The pair's law on the updated L6Geom state, then the row written: force and moment
    on 2 in global coordinates (also returned), T, u, phi and the (possibly shifted)
    origins."""
    cdef v3 f_loc, m_loc
    cdef Load L
    law_eval(P, meff, reff, u, phi, &u0, &phi0, udot, phidot, &f_loc, &m_loc)
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
                                double* row) noexcept nogil:
    """One contact of any shape pair, given its directly computed c, n, u_n (seed 000):
    L6Geom formation or update, the pair's law, then the force and moment on 2 in global
    coordinates (returned too). State is read and written through row pointers."""
    cdef m33 T
    cdef v3 u, phi, u0, phi0, udot, phidot
    u = vld(row + S_U); phi = vld(row + S_PHI); u0 = vld(row + S_U0); phi0 = vld(row + S_PHI0)
    if active[0] == 0:
        active[0] = 1
        l6_form(n, un, &T, &u, &phi, &u0, &phi0, &udot, &phidot)
    else:
        T = mld(row + S_T)
        l6_update(c, n, un, x2, v1, v2, w1, w2, r1, r2, dt, flags, &T, &u, &phi, &udot, &phidot)
    return contact_law(P, meff, reff, T, u, phi, u0, phi0, udot, phidot, row)


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
