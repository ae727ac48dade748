# Header-only: the contact state row (S_* column offsets) and the update of one
# contact of any shape pair -- L6Geom (seed 000) then the pair's law (laws.pxd) --
# shared by the sphere-sphere/sphere-plane kernels (contacts.pyx) and the ball-facet
# kernel (facets.pyx).
from vecmath cimport v3, m33, vld, vst, mld, mst, vadd, vsub, vneg, vcross, mtdot
from l6geom cimport l6_form, l6_update, l6_branches
from laws cimport law_eval, P_ROLL_K, P_TWIST_K

# One row of 30 doubles per contact: L6Geom state then kernel outputs.
cdef enum:
    S_T = 0           # local axes by rows (9)
    S_U = 9           # u (3), u_x < 0 in overlap
    S_PHI = 12        # phi (3)
    S_U0 = 15         # shifted origin of u (3): plastic slip
    S_PHI0 = 18       # shifted origin of phi (3)
    S_FORCE = 21      # force on particle 2, global (3)
    S_TORQUE1 = 24    # torque on particle 1 (3)
    S_TORQUE2 = 27    # torque on particle 2 (3)
    S_NCOLS = 30


cdef inline void contact_update(v3 c, v3 n, double un, v3 x2, v3 v1, v3 v2, v3 w1, v3 w2,
                                double r1, double r2, double meff, double reff, const double* P,
                                double dt, int flags, signed char* active,
                                double* row) noexcept nogil:
    """One contact of any shape pair, given its directly computed c, n, u_n (seed 000):
    L6Geom formation or update, the pair's law, then force on 2 and torques on 1 and 2
    in global coordinates. State is read and written through row pointers."""
    cdef m33 T
    cdef v3 u, phi, u0, phi0, udot, phidot, f_loc, m_loc, b1, b2, F, M
    u = vld(row + S_U); phi = vld(row + S_PHI); u0 = vld(row + S_U0); phi0 = vld(row + S_PHI0)
    if active[0] == 0:
        active[0] = 1
        l6_form(n, un, &T, &u, &phi, &u0, &phi0, &udot, &phidot)
    else:
        T = mld(row + S_T)
        l6_update(c, n, un, x2, v1, v2, w1, w2, r1, r2, dt, flags, &T, &u, &phi, &udot, &phidot)
    law_eval(P, meff, reff, u, phi, &u0, &phi0, udot, phidot, &f_loc, &m_loc)
    l6_branches(c, n, x2, r1, r2, flags, &b1, &b2)
    F = mtdot(T, f_loc)
    vst(row + S_FORCE, F)
    if P[P_ROLL_K] > 0.0 or P[P_TWIST_K] > 0.0:
        M = mtdot(T, m_loc)
        vst(row + S_TORQUE2, vadd(vcross(b2, F), M))
        vst(row + S_TORQUE1, vsub(vcross(b1, vneg(F)), M))
    else:       # no rolling or twisting law: law_eval's moment is zero, skip it
        vst(row + S_TORQUE2, vcross(b2, F))
        vst(row + S_TORQUE1, vcross(b1, vneg(F)))
    mst(row + S_T, T)
    vst(row + S_U, u); vst(row + S_PHI, phi); vst(row + S_U0, u0); vst(row + S_PHI0, phi0)
