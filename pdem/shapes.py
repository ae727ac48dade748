"""Non-spherical particles (issue 16, docs/ellipsoids.md): input checks of
add_ellipsoids and the rigid-body rotation of the non-spheres in the leap-frog step.

A non-sphere's state: orientation q at t (the store's `orient`), world angular momentum
L at t + dt/2 (`angmom`), principal moments (`inertia_body`), semi-axes; its `radius` is
the bounding radius (the largest semi-axis: cell and Verlet lists, ghost cutoff), its
scalar `inertia` the smallest principal moment (time-step checks). Spheres keep
integrate.drift / kick; the non-spheres, listed once per store layout, are rotated by
pyx/rigid_body.pyx (the free-rotor splitting of Dullweber, Leimkuhler and McLachlan
1997): nothing here runs in a sphere-only simulation.
"""
import numpy as np

from ._kernels import rigid_body
from . import clumps
from .contact.flags import NO_RATCH
from .errors import InputError
from .particles import SHAPES, ellipsoid_mass

UNIT_TOLERANCE = 1e-6           # |q| - 1 accepted in orientations (then normalized)


def semi_axes(value, n, width=3):
    """(n, width) finite positive semi-axes (3: ellipsoids, 2: ellipses); one clear line
    naming the first bad value."""
    a = np.asarray(value, dtype=float)
    if a.ndim == 1 and a.shape == (width,):
        a = np.tile(a, (n, 1))
    if a.shape != (n, width):
        raise InputError("semi_axes must have shape (%d, %d) (%s semi-axes per %s), got %s"
                         % (n, width, "three" if width == 3 else "two",
                            "ellipsoid" if width == 3 else "ellipse", a.shape))
    bad = np.flatnonzero(~np.all(np.isfinite(a) & (a > 0.0), axis=1))
    if len(bad):
        i = int(bad[0])
        raise InputError("semi_axes[%d] = %s: semi-axes must be finite and > 0"
                         % (i, a[i].tolist()))
    return np.ascontiguousarray(a)


def orientations(value, n):
    """(n, 4) unit quaternions (w, x, y, z), body to world; None: the identity."""
    if value is None:
        q = np.zeros((n, 4))
        q[:, 0] = 1.0
        return q
    q = np.asarray(value, dtype=float)
    if q.ndim == 1 and q.shape == (4,):
        q = np.tile(q, (n, 1))
    if q.shape != (n, 4):
        raise InputError("orientations must have shape (%d, 4) (unit quaternions w, x, y, "
                         "z), got %s" % (n, q.shape))
    norm = np.linalg.norm(q, axis=1)
    bad = np.flatnonzero(~(np.abs(norm - 1.0) <= UNIT_TOLERANCE))
    if len(bad):
        i = int(bad[0])
        raise InputError("orientations[%d] = %s is not a unit quaternion (norm %.9g, tolerance "
                         "%g)" % (i, q[i].tolist(), float(norm[i]), UNIT_TOLERANCE))
    return np.ascontiguousarray(q / norm[:, None])


def angles(value, n, what):
    """(n,) finite turns about z (2D bodies); None: zeros; one number: for all."""
    theta = np.zeros(n) if value is None else np.asarray(value, dtype=float).reshape(-1)
    if theta.size == 1:
        theta = np.full(n, float(theta[0]))
    if theta.shape != (n,) or not np.all(np.isfinite(theta)):
        raise InputError("angles must be one finite number or %d (one per %s), got %r"
                         % (n, what, value))
    return theta


def fill_ellipsoids(new, axes, q, density, threads):
    """The shape fields of new ellipsoids (fields dict of pdem.particles), angular
    velocities given in new["angvel"]: L = R I R^T omega."""
    m, moments = ellipsoid_mass(axes, density)
    new["shape"][:] = 1
    new["semi_axes"][:] = axes
    new["inertia_body"][:] = moments
    new["orient"][:] = q
    new["radius"][:] = axes.max(axis=1)
    new["mass"][:] = m
    new["inertia"][:] = moments.min(axis=1)
    rigid_body.angmom_from_angvel(q, np.ascontiguousarray(new["angvel"]), moments,
                                  new["angmom"], threads)


# What each non-sphere shape touches besides planes and spheres (the rest is refused
# with one line; docs/ellipsoids.md, clumps.md, polyhedra.md), and the other non-sphere
# shapes it shares a simulation with (their pair contacts exist).
TOUCHES = {SHAPES["ellipsoid"]: ("mesh walls",), SHAPES["ellipse"]: ("boundary segments",),
           SHAPES["clump"]: (), SHAPES["polyhedron"]: ("mesh walls",),
           SHAPES["polygon"]: ("boundary segments",)}
MIXES = {SHAPES["ellipsoid"]: {SHAPES["polyhedron"]}, SHAPES["ellipse"]: {SHAPES["polygon"]},
         SHAPES["clump"]: set(), SHAPES["polyhedron"]: {SHAPES["ellipsoid"]},
         SHAPES["polygon"]: {SHAPES["ellipse"]}}
NAMES = {code: name for name, code in SHAPES.items()}


def present(sim):
    """The non-sphere shape codes of the simulation (collective when sim.shapes)."""
    if not sim.shapes:
        return set()
    st = sim.store
    have = np.zeros(len(SHAPES))
    have[np.unique(st.shape[:st.n_own])] = 1.0
    return set(np.flatnonzero(sim.collective.max(have)).tolist()) - {SHAPES["sphere"]}


def check_touches(sim, what, walls, codes=None):
    """One InputError line when a non-sphere shape of `codes` (default: those present)
    cannot touch `walls` ("mesh walls", "boundary segments", "region walls", "bonds")."""
    for code in sorted(present(sim) if codes is None else codes):
        if walls not in TOUCHES[code]:
            raise InputError("%s: contacts of %s particles with %s are not available yet"
                             % (what, NAMES[code], walls))


def check_adding(sim, what, code):
    """Refuse adding particles of shape `code` where their contacts are not wired: the
    scheme, no_ratch, the walls and bonds of the scene, other non-sphere shapes."""
    if sim.scheme.name != "explicit":
        raise InputError("%s: scheme %r does not support %s particles (use the explicit "
                         "scheme)" % (what, sim.scheme.name, NAMES[code]))
    if sim.flags & NO_RATCH:
        raise InputError("%s: no_ratch=True does not apply to %s particles (its branch "
                         "vectors r n assume the contact point on the line of centres); use "
                         "no_ratch=False" % (what, NAMES[code]))
    for walls, count in (("mesh walls", len(sim.mesh_walls)),
                         ("boundary segments", len(sim.segments) + len(sim.points)),
                         ("region walls", len(sim.region_walls)),
                         ("bonds", int(sim.interactions["bond"].any))):
        if count:
            check_touches(sim, what, walls, {code})
    for other in sorted(present(sim) - {code} - MIXES[code]):
        raise InputError("%s: %s and %s particles in one simulation are not available yet "
                         "(no contact between them)" % (what, NAMES[code], NAMES[other]))


def refuse(sim, idx, what):
    """InputError on every rank when any of the local particles idx is a non-sphere
    (collective when the simulation has non-spheres: the same on every rank)."""
    if not sim.shapes:
        return
    st = sim.store
    bad = np.flatnonzero(st.shape[idx] != 0)
    message = None if not len(bad) else (
        "%s: particle id %d is %s (%s)" % (what[0], st.id[idx][bad[0]], "a clump" if
                                           st.shape[idx][bad[0]] == SHAPES["clump"] else
                                           "an ellipsoid", what[1]))
    sim.collective.raise_if_any(message, InputError)


def renew(sim, idx, density=None):
    """After editing local particles idx: the non-spheres among them get their mass and
    principal moments from `density` (None: unchanged) and L = R I R^T omega from their
    angular velocity."""
    if not sim.shapes:
        return
    st = sim.store
    idx = np.asarray(idx)[st.shape[idx] != 0]
    if not len(idx):
        return
    if density is not None:
        m, moments = ellipsoid_mass(st.semi_axes[idx], density)
        poly = st.shape[idx] >= SHAPES["polyhedron"]      # polyhedra, polygons: template
        props = sim.templates.props[st.template[idx[poly]]] if poly.any() else None
        if props is not None:
            m[poly], moments[poly] = density * props[:, 0], density * props[:, 1:4]
        st.mass[idx], st.inertia_body[idx], st.inertia[idx] = m, moments, moments.min(axis=1)
        clump = idx[st.shape[idx] == SHAPES["clump"]]
        if len(clump):
            clumps.renew_mass(st, clump, sim.templates, density)
    L = np.zeros((len(idx), 3))
    rigid_body.angmom_from_angvel(np.ascontiguousarray(st.orient[idx]),
                                  np.ascontiguousarray(st.angvel[idx]),
                                  np.ascontiguousarray(st.inertia_body[idx]), L, 1)
    st.angmom[idx] = L


def fill_ellipses(new, axes, angles, density, threads):
    """The shape fields of new 2D ellipses (per unit thickness, in the xy plane):
    semi-axes (a, b, 0), orientation the rotation by `angles` about z, mass density x
    pi a b, moments (m b^2/4, m a^2/4, m (a^2 + b^2)/4) (only the last one acts)."""
    a, b = axes[:, 0], axes[:, 1]
    m = density * np.pi * a * b
    new["shape"][:] = SHAPES["ellipse"]
    new["semi_axes"][:, :2] = axes
    new["inertia_body"][:] = np.column_stack([m * b * b / 4, m * a * a / 4,
                                              m * (a * a + b * b) / 4])
    new["orient"][:] = np.column_stack([np.cos(angles / 2), np.zeros((len(a), 2)),
                                        np.sin(angles / 2)])
    new["radius"][:] = np.maximum(a, b)
    new["mass"][:] = m
    new["inertia"][:] = new["inertia_body"][:, 2]
    rigid_body.angmom_from_angvel(new["orient"], np.ascontiguousarray(new["angvel"]),
                                  new["inertia_body"], new["angmom"], threads)


class Rotation:
    """The rigid-body rotation of the owned non-spheres in the explicit step."""

    def __init__(self):
        self._shape = None          # the store's shape array the list was made from
        self._n_own = -1
        self._index = None
        self._saved = None

    def index(self, store):
        """Owned non-spheres (local indices), listed again when the store's arrays were
        replaced (every layout change: ParticleStore.set_local). The old array is held,
        so a new one cannot reuse its identity."""
        if store.f["shape"] is not self._shape or store.n_own != self._n_own:
            self._index = np.flatnonzero(store.shape[:store.n_own] != 0).astype(np.int32)
            self._shape, self._n_own = store.f["shape"], store.n_own
        return self._index

    def save(self, store):
        """Before integrate.drift (which rotates every particle as a sphere): q(t)."""
        self._saved = store.orient[self.index(store)]

    def drift(self, store, dt, threads):
        """q(t) -> q(t+dt) by the free rotor with L(t+dt/2); angvel = omega(t+dt/2).
        Bodies with a blocked rotation keep integrate.drift's q <- exp(omega dt) q with
        their constrained omega(t+dt/2) (hold_rotations)."""
        idx, saved = self.index(store), self._saved
        held = held_rotations(store, idx)
        if held is not None:
            idx, saved = np.ascontiguousarray(idx[~held]), np.ascontiguousarray(saved[~held])
        rigid_body.drift_bodies(idx, saved, store.orient, store.angmom, store.angvel,
                                store.inertia_body, dt, threads)

    def kick(self, store, dt, threads, omega_before):
        """After integrate.kick: L += torque dt; angvel from L and q(t) (integrate.kick's
        isotropic update of their angvel, `omega_before`, is discarded). Returns the
        local index of a non-finite L, or -1."""
        idx = self.index(store)
        store.angvel[idx] = omega_before
        bad = rigid_body.kick_bodies(idx, store.orient, store.angmom, store.angvel,
                                     store.torque, store.inertia_body, dt, threads)
        held = held_rotations(store, idx)
        if held is not None:
            hold_rotations(store, idx[held], omega_before[held])
        return bad


def held_rotations(store, idx):
    """Mask of the bodies idx with a blocked rotation (ellipses: rz; their rx, ry are
    always blocked, the plane's), or None when there is none."""
    b = store.blocked[idx]
    mask = (b & np.where(store.shape[idx] == SHAPES["ellipse"], 32, 56)) != 0
    return mask if mask.any() else None


def hold_rotations(store, j, omega_held):
    """Blocked rotations of non-spheres j after the kick (sim.block, set_velocity with
    block=True): a blocked world axis k keeps its angular velocity omega_k (the constraint
    torque acts along the blocked axes only), the free components of L keep the kick:
    with I_w = R I R^T at q(t+dt), B the blocked axes and F = 1 - B,
        F I_w omega = F L,  B omega = B omega_held,  then L = I_w omega.
    All three blocked: omega = omega_held and L = I_w omega_held (zero: q untouched)."""
    b = store.blocked[j]
    B = np.column_stack([(b & 8) != 0, (b & 16) != 0, (b & 32) != 0]).astype(float)
    B[store.shape[j] == SHAPES["ellipse"], :2] = 1.0
    Rt = body_rows(store.orient[j])
    Iw = np.einsum("nki,nk,nkj->nij", Rt, store.inertia_body[j], Rt)
    A = (1.0 - B)[:, :, None] * Iw + B[:, :, None] * np.eye(3)
    w = np.linalg.solve(A, ((1.0 - B) * store.angmom[j] + B * omega_held)[..., None])[..., 0]
    store.angvel[j] = w
    store.angmom[j] = np.einsum("nij,nj->ni", Iw, w)


def body_rows(q):
    """(n, 3, 3): the rows of R^T (body axes in world coordinates; R = rotation matrix
    of the unit quaternions q (w, x, y, z), body to world): world -> body."""
    w, x, y, z = q.T
    return np.stack([
        np.column_stack([1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)]),
        np.column_stack([2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x)]),
        np.column_stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)])],
        axis=1)


def rotational_energy(store, dt):
    """Rotational kinetic energy of the owned non-spheres, time-centred as the explicit
    scheme's energy: 1/2 Lb(t-dt/2) . I^-1 Lb(t+dt/2) in the body frame at q(t)."""
    n = store.n_own
    idx = np.flatnonzero(store.shape[:n] != 0)
    if not len(idx):
        return 0.0
    R = body_rows(store.orient[idx])
    L_plus = store.angmom[idx]
    L_minus = L_plus - store.torque[idx] * dt
    bp = np.einsum("nij,nj->ni", R, L_plus)
    bm = np.einsum("nij,nj->ni", R, L_minus)
    return 0.5 * float(np.sum(bm * bp / store.inertia_body[idx]))


def timestep_radii(store, n, templates):
    """Radii of the owned particles 0..n-1 for the time-step check: (small, large). A
    sphere: r, r. A non-sphere: small = its smallest semi-axis, for the Rayleigh time
    (Hertz): pressed on its flattest side (R_e = a1 a2 / a3 with a1 >= a2 >= a3, m =
    rho 4/3 pi a1 a2 a3) its Hertz contact frequency sqrt(k/m) is that of a sphere of
    radius a3 times (a3^2 / (a1 a2))^(1/4) <= 1, other sides giving less, so the Rayleigh
    time of a3 does not overestimate the step (the bounding radius a1 would, by (a1 /
    a3)^(5/4) (a3^2 / (a1 a2))^(1/4) in frequency). large = the largest equivalent
    radius of its contacts (R_e against a plane, the largest), a1 a2 / a3 (an ellipse:
    its largest radius of curvature a1^2 / a2), for a radius-dependent k_n. A clump:
    its smallest member sphere (its contacts are those of its members); a polyhedron:
    its bounding radius (what its law takes)."""
    small = store.radius[:n].copy()
    large = small.copy()
    clump = np.flatnonzero(store.shape[:n] == SHAPES["clump"])
    if len(clump):
        offsets, spheres = templates.table("spheres")
        member_min = np.full(len(templates), np.inf)
        np.minimum.at(member_min, np.repeat(np.arange(len(templates)), np.diff(offsets)),
                      spheres[:, 3])
        small[clump] = member_min[store.template[clump]]
    ell = np.flatnonzero((store.shape[:n] == SHAPES["ellipsoid"]) |
                         (store.shape[:n] == SHAPES["ellipse"]))
    if len(ell):
        a = -np.sort(-store.semi_axes[ell], axis=1)     # descending
        flat = store.shape[ell] == SHAPES["ellipse"]
        small[ell] = np.where(flat, a[:, 1], a[:, 2])
        large[ell] = np.where(flat, a[:, 0] ** 2 / a[:, 1],
                              a[:, 0] * a[:, 1] / np.where(flat, 1.0, a[:, 2]))
    return small, large
