# Contact laws composed from sub-models (normal, damping, tangential, rolling,
# twisting) acting on the L6Geom generalized displacements (seed 000): u - u0 and
# phi - phi0 in local coordinates, u_x < 0 meaning overlap. Plastic slip (Coulomb,
# rolling and twisting limits) moves the shifted origins u0, phi0, exactly the use
# the seed gives them. The sub-model choice and the parameters of a material pair
# are one row of the pair table built by pdem.materials (column indices below);
# a batch kernel reads the row of each contact's material pair, so dispatch costs
# one predictable branch per contact, never a Python call.
#
# Conventions: forces and moments returned act on particle 2, in local coordinates.
# Hooke: F_n = k_n d - c_n v_n, F_t = -k_t (u_t - u0_t) - c_t v_t, |F_t| <= mu F_n
#   (LAMMPS gran/hooke/history; k_n = KN0 + KN1 R*, c_n = m* gamma_n + 2 zeta sqrt(k_n m*)).
# Hertz-Mindlin: F_n = 4/3 E* sqrt(R*) d^1.5, S_n = 2 E* sqrt(R* d), k_t = 8 G* sqrt(R* d),
#   c = 2 zeta_h sqrt(m* S) (Tsuji et al. 1992 form) with zeta_h solved so that the
#   restitution of a normal impact equals the input e (pdem.materials).
# Rolling / twisting: M = -k (phi - phi0), k = coef k_t R*^2, |M| <= mu_r R* F_n.
# Cohesion (docs/laws.md; W the work of adhesion, d the signed overlap):
#   DMT (Derjaguin, Muller & Toporov 1975): F_n - 2 pi W R* while d >= 0.
#   JKR (Johnson, Kendall & Roberts 1971; Johnson, Contact Mechanics 5.5): contact radius a
#     from d = a^2/R* - sqrt(2 pi W a / E*) on the stable branch, elastic force
#     4 E* a^3 / (3 R*) - sqrt(8 pi W E* a^3), stiffnesses S = 2 E* a, k_t = 8 G* a; the
#     contact lives on in tension down to d_c = -(3/4) (pi^2 W^2 R* / E*^2)^(1/3) (the
#     kernels keep an active pair to that separation: P_REACH). Coulomb limit
#     mu |F_e + 3 pi W R*| (LAMMPS pair granular: |F_ne + 2 F_pulloff|).
#   linear: - k_c A, A = 2 pi R* d (the overlap circle's area to first order in d;
#     LIGGGHTS cohesion sjkr). Coulomb limit mu (repulsive part + k_c A), as for DMT
#     mu (repulsive part + 2 pi W R*): cohesion presses the surfaces together.
from vecmath cimport v3, V
from libc.math cimport sqrt, cbrt, M_PI

cdef enum:
    P_NORMAL = 0        # 0 Hooke, 1 Hertz
    P_KN0 = 1
    P_KN1 = 2
    P_KT_RATIO = 3      # Hooke: k_t = ratio k_n
    P_GAMMA_N = 4       # Hooke: c_n += m* gamma_n
    P_ZETA = 5          # Hooke: c_n += 2 zeta sqrt(k_n m*); Hertz: zeta_h
    P_CT_RATIO = 6      # Hooke: c_t = ratio c_n
    P_ESTAR = 7
    P_GSTAR = 8
    P_MU = 9
    P_ROLL_K = 10
    P_ROLL_MU = 11
    P_TWIST_K = 12
    P_TWIST_MU = 13
    P_LIMIT_DAMPING = 14  # 1: the normal force never pulls (cut at zero)
    P_COHESION = 15     # COH_NONE, COH_DMT, COH_JKR, COH_LINEAR
    P_WORK = 16         # W, work of adhesion (DMT, JKR)
    P_COH_K = 17        # k_c, cohesion energy density (linear)
    P_REACH = 18        # JKR: |d_c| = P_REACH cbrt(R*), the separation that breaks a contact
    P_NCOLS = 19

# Energy tracking (docs/energy.md): per contact, what law_eval writes into E[0:E_NCOLS]
# when given a non-NULL E (NULL: tracking off, no extra work). Elastic energies are of
# the state at t; dissipations are this step's increments (damping: power at the rates
# of t - dt/2 times dt; slip: the spring force times the move of the shifted origin).
cdef enum:
    E_NORMAL = 0        # elastic energy of the normal spring (with the cohesion potential)
    E_TANGENT = 1       # elastic energy of the tangential, rolling and twisting springs
    E_DAMP = 2          # dissipated by normal and tangential viscous damping this step
    E_FRIC = 3          # dissipated by Coulomb slip this step
    E_ROLL = 4          # dissipated by rolling and twisting slip this step
    E_WALL = 5          # work done by a moving wall on the particle this step (kernels)
    E_NCOLS = 6

cdef enum:
    COH_NONE = 0
    COH_DMT = 1
    COH_JKR = 2
    COH_LINEAR = 3


cdef inline double jkr_radius(double d, double r_eff, double estar, double w,
                              double reach) noexcept nogil:
    """JKR contact radius a of the signed overlap d (Johnson 1985, 5.5): with s = sqrt(a),
    g(s) = s^4 / R* - c s - d = 0, c = sqrt(2 pi W / E*), on the stable branch s >= s_m =
    (c R* / 4)^(1/3) (g' = 0 there: the separation d_c). g is convex and increasing above
    s_m, so Newton from s0 >= the root, s0 = max((2 c R*)^(1/3), (2 R* d)^(1/4)) (g(s0) >= 0),
    decreases monotonically to it; iterating until s stops decreasing gives the root to
    rounding. At or beyond d_c: a(d_c)."""
    cdef double c = sqrt(2.0 * M_PI * w / estar)
    cdef double sm = cbrt(0.25 * c * r_eff), s, sn, g, dg
    cdef int it
    if d <= -reach * cbrt(r_eff):
        return sm * sm
    s = cbrt(2.0 * c * r_eff)
    if d > 0.0:
        sn = sqrt(sqrt(2.0 * r_eff * d))
        if sn > s:
            s = sn
    if s <= 0.0:
        return 0.0
    for it in range(100):
        g = s * s * s * s / r_eff - c * s - d
        dg = 4.0 * s * s * s / r_eff - c
        if g <= 0.0 or dg <= 0.0:
            break
        sn = s - g / dg
        if sn < sm:
            sn = sm
        if not (sn < s):
            break
        s = sn
    return s * s


cdef inline void law_energy_n(const double* P, int coh, double d, double r_eff, double kn,
                              double sqrt_rd, double fn, double vn, double dt,
                              double* E) noexcept nogil:
    """E_NORMAL: the potential of the elastic normal force f_e at the overlap d >= 0
    (Hooke k_n d^2/2, Hertz 8/15 E* sqrt(R*) d^2.5 = 2/5 f_e d; DMT -2 pi W R* d; linear
    cohesion -k_c pi R* d^2); E_DAMP: the power of the rest of the normal force, the
    damping f_n - f_e, at the normal rate vn of t - dt/2, times dt. JKR: not tracked
    (pdem.energy refuses it)."""
    cdef double fe = 0.0, un = 0.0, a
    if coh == COH_JKR:
        E[E_NORMAL] = 0.0
        E[E_DAMP] = 0.0
        return
    if P[P_NORMAL] == 0.0:
        fe = kn * d
        un = 0.5 * fe * d
    else:
        fe = (4.0 / 3.0) * P[P_ESTAR] * sqrt_rd * d
        un = 0.4 * fe * d
    if coh == COH_DMT:
        a = 2.0 * M_PI * P[P_WORK] * r_eff
        fe = fe - a
        un = un - a * d
    elif coh == COH_LINEAR:
        a = P[P_COH_K] * 2.0 * M_PI * r_eff * d
        fe = fe - a
        un = un - 0.5 * a * d
    E[E_NORMAL] = un
    E[E_DAMP] = -(fn - fe) * vn * dt


cdef inline void law_energy_t(double kt, double ct, v3 u, v3 u0, v3 o0, v3 udot, double fs_y,
                              double fs_z, double dt, double* E) noexcept nogil:
    """E_TANGENT: k_t |s|^2 / 2 of the spring stretch s = u - u0 (local y, z) after slip.
    Sticking: E_DAMP += the dashpot's c_t |udot_t|^2 dt. Slipping (the origin moved from
    o0 to u0): E_FRIC = the mean of the spring forces of the last and this step, times the
    origin's move: k_t (s_old + s) / 2 . (u0 - o0), s_old = u - udot dt - o0 (the work of
    the trapezoidal force less the change of the spring energy: no predictor overshoot),
    plus the dashpot's c_t |udot_t|^2 dt (the law puts the dashpot's force into the
    returned spring, law_eval): in steady slip, -F_t . udot_t dt."""
    cdef double sy = u.y - u0.y, sz = u.z - u0.z
    cdef double damp = ct * (udot.y * udot.y + udot.z * udot.z) * dt
    if kt > 0.0:
        E[E_TANGENT] = 0.5 * kt * (sy * sy + sz * sz)
        if u0.y == o0.y and u0.z == o0.z:
            E[E_DAMP] += damp
            E[E_FRIC] = 0.0
        else:
            E[E_FRIC] = 0.5 * kt * ((u.y - udot.y * dt - o0.y + sy) * (u0.y - o0.y)
                                    + (u.z - udot.z * dt - o0.z + sz) * (u0.z - o0.z)) + damp
    else:           # no spring (Hertz at zero overlap): the force is the (capped) dashpot
        E[E_TANGENT] = 0.0
        E[E_DAMP] += -(fs_y * udot.y + fs_z * udot.z) * dt
        E[E_FRIC] = 0.0


cdef inline void spring_energy(double k, double s, double slip, double step,
                               double* E) noexcept nogil:
    """A rolling or twisting spring component: E_TANGENT += k s^2 / 2 at the stretch s
    after slip; E_ROLL += k (s_old + s) / 2 slip, the origin's move `slip` times the mean
    spring force, s_old = s + slip - step (step: this step's increment of phi)."""
    E[E_TANGENT] += 0.5 * k * s * s
    E[E_ROLL] += 0.5 * k * (s + slip - step + s) * slip


cdef inline double hooke_normal(const double* P, double m_eff, double r_eff, double d,
                                double vn, double* kn, double* kt, double* ct) noexcept nogil:
    """Hooke's normal force k_n d - c_n vn at the overlap d and normal rate vn, with k_n,
    k_t and c_t (see the conventions above). Branch-free (selects): loops vectorize."""
    cdef double cn = m_eff * P[P_GAMMA_N]
    cdef double cz
    kn[0] = P[P_KN0] + P[P_KN1] * r_eff
    kt[0] = P[P_KT_RATIO] * kn[0]
    cz = cn + 2.0 * P[P_ZETA] * sqrt(kn[0] * m_eff)
    cn = cz if P[P_ZETA] != 0.0 else cn
    ct[0] = P[P_CT_RATIO] * cn
    return kn[0] * d - cn * vn


cdef inline void coulomb(double kt, double ct, double cap, v3 u, v3* u0, v3 udot,
                         v3* f) noexcept nogil:
    """The tangential spring-dashpot f.y, f.z = -k_t (u - u0) - c_t udot, capped at |f_t| <=
    cap (the Coulomb limit); on slip the origin u0 moves so that the spring alone gives
    the capped force. Branch-free: both outcomes are computed, then selected (the capped
    values are those of the scalar formulas when they apply), so that loops vectorize."""
    cdef double fs_y = -kt * (u.y - u0[0].y) - ct * udot.y
    cdef double fs_z = -kt * (u.z - u0[0].z) - ct * udot.z
    cdef double fs2 = fs_y * fs_y + fs_z * fs_z
    cdef bint slip = fs2 > cap * cap
    cdef bint move = slip & (kt > 0.0)
    cdef double ratio = cap / sqrt(fs2)
    cdef double sy, sz, oy, oz
    ratio = ratio if fs2 > 0.0 else 0.0
    sy = fs_y * ratio
    sz = fs_z * ratio
    oy = u.y + (sy + ct * udot.y) / kt
    oz = u.z + (sz + ct * udot.z) / kt
    f[0].y = sy if slip else fs_y
    f[0].z = sz if slip else fs_z
    u0[0].y = oy if move else u0[0].y
    u0[0].z = oz if move else u0[0].z


cdef inline bint law_plain(const double* P) noexcept nogil:
    """The pair-table row P is law_hooke's case: Hooke normal law, Coulomb friction, no
    cohesion, no rolling or twisting resistance."""
    return (P[P_NORMAL] == 0.0 and P[P_COHESION] == COH_NONE and not (P[P_ROLL_K] > 0.0)
            and not (P[P_TWIST_K] > 0.0))


cdef inline v3 law_hooke(const double* P, double m_eff, double r_eff, v3 u, v3* u0,
                         v3 udot) noexcept nogil:
    """law_eval's force (local, on particle 2) for a row P of law_plain's case without
    energy tracking (its moment is zero): the same operations in the same order, hence
    the same bits, without branches, so that the pair kernel's vector blocks
    (contacts.pyx block_loop) evaluate it across pairs."""
    cdef double d = -(u.x - u0[0].x)
    cdef double kn, kt, ct, fn
    cdef v3 f
    d = 0.0 if d < 0.0 else d
    fn = hooke_normal(P, m_eff, r_eff, d, udot.x, &kn, &kt, &ct)
    fn = 0.0 if (P[P_LIMIT_DAMPING] != 0.0) & (fn < 0.0) else fn
    f = V(fn, 0.0, 0.0)
    coulomb(kt, ct, P[P_MU] * (fn if fn > 0.0 else 0.0), u, u0, udot, &f)
    return f


cdef inline double law_eval(const double* P, double m_eff, double r_eff,
                            v3 u, v3 phi, v3* u0, v3* phi0, v3 udot, v3 phidot,
                            v3* f, v3* mom, double* E, double dt) noexcept nogil:
    """Force f and moment mom on particle 2 (local coordinates); updates u0, phi0 on slip.
    Returns the normal force (>= 0 when repulsive), used by the caller for diagnostics.
    E: NULL, or the contact's energy terms (E_* above) written for the time step dt."""
    cdef double d = -(u.x - u0[0].x)          # overlap
    cdef double kt, cn, ct, fn, fs_y, fs_z, fs2, cap, ratio, k, my, mz, mx
    cdef double fc, a, fe, d_signed = d, kn = 0.0, sqrt_rd = 0.0
    cdef v3 o0 = u0[0], p0 = phi0[0]          # the origins before slip (energy terms)
    cdef int coh = <int>P[P_COHESION]
    if d < 0.0:
        d = 0.0
    if coh == COH_JKR:
        # JKR (needs the Hertz law's E*, G*): the stiffnesses of Hertz at the JKR radius
        a = jkr_radius(d_signed, r_eff, P[P_ESTAR], P[P_WORK], P[P_REACH])
        kt = 8.0 * P[P_GSTAR] * a
        cn = 2.0 * P[P_ZETA] * sqrt(m_eff * 2.0 * P[P_ESTAR] * a)
        ct = 2.0 * P[P_ZETA] * sqrt(m_eff * kt)
        fe = 4.0 * P[P_ESTAR] * a * a * a / (3.0 * r_eff) \
            - sqrt(8.0 * M_PI * P[P_WORK] * P[P_ESTAR] * a * a * a)
        fn = fe - cn * udot.x
        if P[P_LIMIT_DAMPING] != 0.0 and fn < fe and fn < 0.0:
            fn = fe if fe < 0.0 else 0.0          # the damping never adds tension
        fc = fe + 3.0 * M_PI * P[P_WORK] * r_eff  # F_e + 2 F_pulloff (LAMMPS)
        if fc < 0.0:
            fc = -fc
    elif P[P_NORMAL] == 0.0:
        fn = hooke_normal(P, m_eff, r_eff, d, udot.x, &kn, &kt, &ct)
    else:
        sqrt_rd = sqrt(r_eff * d)
        kt = 8.0 * P[P_GSTAR] * sqrt_rd
        cn = 2.0 * P[P_ZETA] * sqrt(m_eff * 2.0 * P[P_ESTAR] * sqrt_rd)
        ct = 2.0 * P[P_ZETA] * sqrt(m_eff * kt)
        fn = (4.0 / 3.0) * P[P_ESTAR] * sqrt_rd * d - cn * udot.x
    if coh != COH_JKR:
        if P[P_LIMIT_DAMPING] != 0.0 and fn < 0.0:
            fn = 0.0
        fc = fn if fn > 0.0 else 0.0              # the force the Coulomb limit sees
        if coh == COH_DMT:
            # Coulomb limit |F_ne + 2 F_pulloff| (LAMMPS) = the repulsive part + 2 pi W R*
            fc = fc + 2.0 * M_PI * P[P_WORK] * r_eff
            fn = fn - 2.0 * M_PI * P[P_WORK] * r_eff
        elif coh == COH_LINEAR:
            # as LIGGGHTS' default (tangential_reduce off): the limit sees the pull too
            a = P[P_COH_K] * 2.0 * M_PI * r_eff * d
            fc = fc + a
            fn = fn - a
    f[0] = V(fn, 0.0, 0.0)
    coulomb(kt, ct, P[P_MU] * fc, u, u0, udot, f)
    fs_y = f[0].y
    fs_z = f[0].z
    if E != NULL:
        law_energy_n(P, coh, d, r_eff, kn, sqrt_rd, fn, udot.x, dt, E)
        law_energy_t(kt, ct, u, u0[0], o0, udot, fs_y, fs_z, dt, E)
        E[E_ROLL] = 0.0
    # rolling (bending, local y z) and twisting (local x) resistance on phi
    mx = 0.0; my = 0.0; mz = 0.0
    if P[P_ROLL_K] > 0.0:
        k = P[P_ROLL_K] * kt * r_eff * r_eff
        my = -k * (phi.y - phi0[0].y)
        mz = -k * (phi.z - phi0[0].z)
        cap = P[P_ROLL_MU] * r_eff * fc
        fs2 = my * my + mz * mz
        if fs2 > cap * cap:
            ratio = cap / sqrt(fs2) if fs2 > 0.0 else 0.0
            my *= ratio
            mz *= ratio
            if k > 0.0:
                phi0[0].y = phi.y + my / k
                phi0[0].z = phi.z + mz / k
        if E != NULL:
            spring_energy(k, phi.y - phi0[0].y, phi0[0].y - p0.y, phidot.y * dt, E)
            spring_energy(k, phi.z - phi0[0].z, phi0[0].z - p0.z, phidot.z * dt, E)
    if P[P_TWIST_K] > 0.0:
        k = P[P_TWIST_K] * kt * r_eff * r_eff
        mx = -k * (phi.x - phi0[0].x)
        cap = P[P_TWIST_MU] * r_eff * fc
        if mx * mx > cap * cap:
            mx = cap if mx > 0.0 else -cap
            if k > 0.0:
                phi0[0].x = phi.x + mx / k
        if E != NULL:
            spring_energy(k, phi.x - phi0[0].x, phi0[0].x - p0.x, phidot.x * dt, E)
    mom[0] = V(mx, my, mz)
    return fn
