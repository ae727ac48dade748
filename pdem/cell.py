"""The periodic cell: its matrix H, a velocity gradient L that deforms it, the mean-field
velocity (seed 000's homoDeform, v~2), its stress, strain and work, a stress/strain
servo per component, and flips of a sheared cell (docs/cell.md).

H is upper triangular (LAMMPS's triclinic box): columns a = (lx, 0, 0), b = (xy, ly, 0),
c = (xz, yz, lz), origin at the domain's lo. A fixed box is H = diag(lengths): kernels
shift a periodic image i by H i (vecmath.pxd image_shift), the same bits as i * L.
Positions stay wrapped into the cell in reduced coordinates s = H^-1 (x - lo) in [0, 1).
The decomposition, ghosts and migration work in reference coordinates
X = lo + length0 s (length0: the box the domain was made with), so that a rank's
neighbours do not change as the cell deforms (LAMMPS's lamda coordinates).

Mean field (Yade's Cell.homoDeform): every particle's velocity holds the affine part
L (x - lo); a change of L adds (L_new - L_old)(x - lo) to the velocities before the
drift; positions advance with the full velocity (Newton in the lab frame). The cell
moves with the same explicit map as the particles, H <- (I + L dt) H (exact for a
simple shear, L^2 = 0). A ghost that is a periodic image i moves with its owner's
velocity plus L H_prev i (the image's velocity, H_prev the cell at the start of the
step; added by the kernels from the pair's image difference, as the position shift),
so every relative velocity of a pair across the boundary is that of the same pair
inside the cell: seed 000's v~2 (the shift velocity of the image removed from
v2 - v1). Wrapping a particle by -H n changes its velocity by -L H n (LAMMPS's remap v).
"""
import numpy as np

from .errors import InputError

COMPONENTS = {"xx": (0, 0), "yy": (1, 1), "zz": (2, 2), "xy": (0, 1), "xz": (0, 2),
              "yz": (1, 2)}
CORNERS = np.array([(i, j, k) for i in (-1, 0, 1) for j in (-1, 0, 1) for k in (-1, 0, 1)],
                   float)


def half_reach(dH):
    """Half the largest displacement dH c of an image c (CORNERS) for a change dH of the
    cell matrix: a distance that bounds a pair's relative motion as twice one particle's."""
    moved = dH @ CORNERS.T
    return 0.5 * float(np.sqrt((moved * moved).sum(axis=0).max()))


def fixed_cell(lengths):
    """The kernels' cell array (6, 3) of a fixed box: diag(lengths), then zeros."""
    return np.ascontiguousarray(np.vstack([np.diag(np.asarray(lengths, float)),
                                           np.zeros((3, 3))]))


def apply(M, X):
    """X @ M.T row by row in a fixed order of operations (BLAS may reorder by size: the
    bits would depend on how many particles a rank holds)."""
    X = np.asarray(X, float).reshape(-1, 3)
    return np.column_stack([(X[:, 0] * M[i, 0] + X[:, 1] * M[i, 1]) + X[:, 2] * M[i, 2]
                            for i in range(3)])


def reduced(H, D):
    """s = H^-1 D for upper triangular H, by back substitution (rows of D)."""
    D = np.asarray(D, float).reshape(-1, 3)
    s2 = D[:, 2] / H[2, 2]
    s1 = (D[:, 1] - H[1, 2] * s2) / H[1, 1]
    s0 = ((D[:, 0] - H[0, 1] * s1) - H[0, 2] * s2) / H[0, 0]
    return np.column_stack([s0, s1, s2])


class Cell:
    """sim.cell: the periodic cell of a Simulation (docs/cell.md)."""

    def __init__(self, sim):
        dom = sim.domain
        self.sim = sim
        self.origin = dom.lo.copy()
        self.length0 = dom.length.copy()
        self.matrix = np.ascontiguousarray(np.diag(dom.length))     # H
        self.deforming = False          # set by velocity_gradient / control, then kept
        self._L = np.zeros((3, 3))       # the velocity gradient of the next steps
        self._applied = np.zeros((3, 3))   # the one the particle velocities carry
        self.image_velocity = np.zeros((3, 3))   # L H_prev: velocity of each cell vector
        self.deformation = np.eye(3)     # F: H = F H0 up to flips
        self.work = 0.0                  # work done on the cell (J; 2D: J per unit thickness)
        self.n_flips = 0
        self.flips = True                # flip tilts beyond half a cell (False: for tests)
        self.last_stress = None          # (3, 3), at the end of the last step
        self.controller = None           # {"stress": {...}, "strain_rate": {...}, ...}
        self._build_matrix = self.matrix.copy()
        self.flipped = False
        self._kernel_of = None           # the H of the cached kernel array (`kernel`)

    # ------------------------------------------------------------------ state
    @property
    def velocity_gradient(self):
        return self._L.copy()

    @velocity_gradient.setter
    def velocity_gradient(self, value):
        self.sim.collective.same("velocity_gradient", value=value)
        self._L = self._check_gradient(value)
        self._activate()

    def _check_gradient(self, value):
        dom = self.sim.domain
        try:
            L = np.array(value, dtype=float)
        except (TypeError, ValueError):
            raise InputError("velocity_gradient must be a 3x3 matrix (2D: 2x2), got %r"
                             % (value,)) from None
        if dom.dim == 2 and L.shape == (2, 2):
            L = np.pad(L, ((0, 1), (0, 1)))
        if L.shape != (3, 3) or not np.all(np.isfinite(L)):
            raise InputError("velocity_gradient must be a finite 3x3 matrix (2D: 2x2), got %r"
                             % (value,))
        for i in range(3):
            for j in range(3):
                if L[i, j] == 0.0:
                    continue
                if i > j:
                    raise InputError(
                        "velocity_gradient[%d][%d] = %r: only the diagonal and the upper "
                        "triangle (xy, xz, yz) deform the cell (H stays upper triangular, "
                        "as LAMMPS's triclinic box); shear with velocity_gradient[%d][%d]"
                        % (i, j, L[i, j], j, i))
                if not (dom.periodic[i] and dom.periodic[j]):
                    raise InputError(
                        "velocity_gradient[%d][%d] = %r: axes %d and %d must both be "
                        "periodic to deform the cell along them (periodic=%r)"
                        % (i, j, L[i, j], i, j, dom.periodic))
        return L

    def _activate(self):
        sim = self.sim
        if self.deforming:
            return
        if sim.scheme.name != "explicit":
            raise InputError("a deforming cell needs the explicit scheme, got scheme %r"
                             % sim.scheme.name)
        if len(sim.insertions):
            raise InputError("a deforming cell does not support insertions (%s): their "
                             "minimum image is that of a fixed box" % sorted(sim.insertions))
        self.deforming = True
        self.image_velocity = self._L @ self.matrix
        sim.request_rebuild()

    @property
    def matrix(self):
        """H (3, 3): columns are the cell vectors."""
        return self._H

    @matrix.setter
    def matrix(self, value):
        """A new cell, e.g. a tilted one to start from (`sim.cell.matrix = H`); particle
        positions stay where they are (wrapped into the new cell at the next rebuild).
        Collective."""
        if not hasattr(self, "_H"):                  # __init__
            self._H = np.ascontiguousarray(value, dtype=float)
            return
        self.sim.collective.same("cell.matrix", value=value)
        dom = self.sim.domain
        try:
            H = np.array(value, dtype=float)
        except (TypeError, ValueError):
            raise InputError("cell.matrix must be a 3x3 matrix, got %r" % (value,)) from None
        if dom.dim == 2 and H.shape == (2, 2):
            H = np.pad(H, ((0, 1), (0, 1)))
            H[2, 2] = self._H[2, 2]
        if H.shape != (3, 3) or not np.all(np.isfinite(H)):
            raise InputError("cell.matrix must be a finite 3x3 matrix, got %r" % (value,))
        for i in range(3):
            if not H[i, i] > 0.0:
                raise InputError("cell.matrix[%d][%d] = %r must be positive" % (i, i, H[i, i]))
            for j in range(3):
                if i != j and H[i, j] != 0.0:
                    if i > j:
                        raise InputError("cell.matrix[%d][%d] = %r: the cell is upper "
                                         "triangular (LAMMPS's triclinic box)" % (i, j, H[i, j]))
                    if not (dom.periodic[i] and dom.periodic[j]):
                        raise InputError("cell.matrix[%d][%d] = %r: a tilt needs periodic axes "
                                         "%d and %d" % (i, j, H[i, j], i, j))
            if not dom.periodic[i] and H[i, i] != self._H[i, i]:
                raise InputError("cell.matrix[%d][%d] = %r: axis %d is not periodic (its walls "
                                 "bound it at %r)" % (i, i, H[i, i], i, self._H[i, i]))
        self._H = np.ascontiguousarray(H)
        self._activate()
        self.image_velocity = self._L @ self._H

    @property
    def volume(self):
        """det H (the product of the diagonal; 2D: the area x unit thickness)."""
        return float(np.prod(np.diag(self.matrix)))

    @property
    def strain(self):
        """Green-Lagrange strain E = (F^T F - I) / 2 of the cell (F = H H0^-1 without
        flips); for a simple shear gamma, E_xy = gamma / 2."""
        F = self.deformation
        return 0.5 * (F.T @ F - np.eye(3))

    def reference(self, pos):
        """Reference coordinates lo + length0 H^-1 (x - lo) (the decomposition's); the
        positions themselves for a cell that never deformed."""
        if not self.deforming:
            return pos
        return self.origin + reduced(self.matrix, pos - self.origin) * self.length0

    def ghost_cutoff(self, cutoff):
        """The ghost cutoff in reference coordinates per axis: cutoff / (the cell's width
        perpendicular to the faces of axis d) x length0_d; the cutoff itself for a fixed
        cell."""
        if not self.deforming:
            return cutoff
        return cutoff * np.linalg.norm(np.linalg.inv(self.matrix), axis=1) * self.length0

    def widths(self):
        """The cell's widths between opposite faces, per axis."""
        return 1.0 / np.linalg.norm(np.linalg.inv(self.matrix), axis=1)

    def minimum_image(self, d):
        """Separation vectors d (n, 3) moved by whole cell vectors to the nearest image
        in reduced coordinates (on periodic axes)."""
        s = reduced(self.matrix, d)
        n = np.where(np.array(self.sim.domain.periodic), np.round(s), 0.0)
        return d - apply(self.matrix, n)

    def surface(self):
        """(vertices (8, 3), triangles (12, 3)) of the cell's faces (output: XDMF)."""
        corners = np.array([(i, j, k) for i in (0, 1) for j in (0, 1) for k in (0, 1)], float)
        vertices = self.origin + apply(self.matrix, corners)
        quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4),
                 (1, 5, 7, 3)]
        tri = [(a, b, c) for a, b, c, d in quads] + [(a, c, d) for a, b, c, d in quads]
        return vertices, np.array(tri, np.int64)

    # ------------------------------------------------------------------ the step
    def adjust_velocities(self, st):
        """homoDeform: a change of L since the last step adds (dL)(x - lo) to the owned
        velocities (blocked degrees of freedom keep theirs). Before the drift."""
        dL = self._L - self._applied
        if not np.any(dL):
            return
        n = st.n_own
        dv = apply(dL, st.pos[:n] - self.origin)
        for d in range(3):
            dv[(st.blocked[:n] & (1 << d)) != 0, d] = 0.0
        st.vel[:n] += dv
        self._applied = self._L.copy()

    def advance(self, dt):
        """H <- (I + L dt) H after the drift (the particles' own map), F likewise; flips a
        tilt beyond half a cell length. Returns the rebuild distance the cell adds (half
        the largest displacement of an image since the last build); step_travel: half the
        largest displacement of an image in this step (pdem.contact.near)."""
        L = self._L
        self.image_velocity = L @ self.matrix
        H0 = self._H
        self._H = np.ascontiguousarray(self._H + dt * self.image_velocity)   # no setter
        self.deformation = self.deformation + dt * (L @ self.deformation)
        self.flipped = self._flip()
        self.step_travel = half_reach(self.matrix - H0)
        return half_reach(self.matrix - self._build_matrix)

    def _flip(self):
        """LAMMPS's flip: a tilt beyond half the length of the vector it tilts along is
        replaced by the equivalent one (b - a, ...); the lattice of images is the same,
        so every contact and its history are kept (positions re-wrapped at the rebuild
        this forces)."""
        H = self.matrix
        flipped = False
        if not self.flips:
            return False
        for j, i in ((2, 1), (2, 0), (1, 0)):      # yz first: it changes xz
            if not self.sim.domain.periodic[i]:
                continue
            k = np.round(H[i, j] / H[i, i])
            if abs(H[i, j]) > 0.5 * H[i, i] and k != 0.0:
                H[:, j] -= k * H[:, i]
                self.image_velocity[:, j] -= k * self.image_velocity[:, i]
                flipped = True
        if flipped:
            self.n_flips += 1
        return flipped

    def built(self, restore=False):
        if not restore:          # a restart keeps the original run's reference
            self._build_matrix = self.matrix.copy()
        self.flipped = False

    @property
    def kernel(self):
        """The kernels' cell array (6, 3): H, then L H_prev (the velocity of each cell
        vector): a pair's image difference i shifts particle 2 by H i and its velocity by
        L H_prev i (vecmath.pxd image_shift, image_velocity). A fixed cell's is made once
        per H (the `matrix` setter replaces H); a deforming cell's at every call."""
        if self.deforming or self._kernel_of is not self._H:
            self._kernel = np.concatenate((self._H, self.image_velocity))
            self._kernel_of = self._H
        return self._kernel

    def wrap(self, pos, vel):
        """Wrap positions into the cell in reduced coordinates on periodic axes (only the
        rows outside move); their velocities change by -L H n (the affine field)."""
        dom = self.sim.domain
        s = reduced(self.matrix, pos - self.origin)
        per = np.array(dom.periodic)
        shift = np.where(per, np.floor(s), 0.0)
        out = np.flatnonzero(np.any(shift != 0.0, axis=1))
        if len(out):
            n = shift[out]
            pos[out] -= apply(self.matrix, n)
            vel[out] -= apply(self._applied @ self.matrix, n)
        # round-off can leave a reduced coordinate just outside [0, 1): that particle is
        # owned by the nearest slab (Decomposition.owner clips), which is what a fixed
        # box does too

    # ------------------------------------------------------------------ stress, control
    @property
    def applied_gradient(self):
        """The L the particle velocities carry (their mean field L (x - lo))."""
        return self._applied

    def control(self, stress=None, strain_rate=None, max_rate=None, gain=None, relax=0.02):
        """A servo on L per component (Yade's PeriTriaxController): each component of
        `stress` (e.g. {"xx": -p, "yy": -p}) moves L_ij every step by the fraction
        `relax` towards gain (sigma_target - sigma_ij) clipped to |.| <= max_rate (1/s):
        the lag keeps the loop stable when damped contacts answer a change of L at once
        (a viscous stress); each of `strain_rate` (e.g.
        {"xy": 10.0}) a fixed L_ij; the others 0. sigma: the cell's stress (tension
        positive; the symmetric part for shear). gain (1/(Pa s)), default
        max_rate / max |sigma_target|: an error as large as the target gives the largest
        rate. Collective. control() with no arguments ends control (L stays)."""
        self.sim.collective.same("cell.control", stress=stress, strain_rate=strain_rate,
                                 max_rate=max_rate, gain=gain, relax=relax)
        if not (isinstance(relax, (int, float)) and 0.0 < relax <= 1.0):
            raise InputError("cell.control: relax must be in (0, 1], got %r" % (relax,))
        if stress is None and strain_rate is None:
            self.controller = None
            return
        stress = dict(stress or {})
        rates = dict(strain_rate or {})
        for name, group in (("stress", stress), ("strain_rate", rates)):
            for c, v in group.items():
                if c not in COMPONENTS:
                    raise InputError("cell.control: %s component %r unknown (one of %s)"
                                     % (name, c, ", ".join(COMPONENTS)))
                if not (isinstance(v, (int, float, np.floating)) and np.isfinite(v)):
                    raise InputError("cell.control: %s[%r] must be a finite number, got %r"
                                     % (name, c, v))
        both = set(stress) & set(rates)
        if both:
            raise InputError("cell.control: component %r has both a stress and a strain rate"
                             % sorted(both)[0])
        L = np.zeros((3, 3))
        for c, v in rates.items():
            L[COMPONENTS[c]] = v
        for c in stress:
            L[COMPONENTS[c]] = 1.0          # checked like a gradient (periodic axes)
        self._check_gradient(L)
        if stress:
            if max_rate is None or not (isinstance(max_rate, (int, float)) and max_rate > 0):
                raise InputError("cell.control: max_rate (the largest |L_ij| of a stress-"
                                 "controlled component, 1/s) must be a positive number, got %r"
                                 % (max_rate,))
            scale = max(abs(float(v)) for v in stress.values())
            if gain is None:
                if scale == 0.0:
                    raise InputError("cell.control: gain must be given when every stress "
                                     "target is 0")
                gain = max_rate / scale
            if not (isinstance(gain, (int, float)) and gain > 0):
                raise InputError("cell.control: gain must be a positive number, got %r"
                                 % (gain,))
        for c in stress:
            L[COMPONENTS[c]] = self._L[COMPONENTS[c]]      # continue from the current rate
        self.controller = {"stress": {c: float(v) for c, v in stress.items()},
                           "strain_rate": {c: float(v) for c, v in rates.items()},
                           "max_rate": None if max_rate is None else float(max_rate),
                           "gain": None if gain is None else float(gain),
                           "relax": float(relax)}
        self._L = L
        self._activate()

    def after_step(self, sim):
        """After the kick: the stress (collective), the work of this step
        V sigma : L dt (trapezoid over the step), and the controller's new L."""
        if not self.deforming:
            return
        from .analysis import stress as cell_stress
        sigma = cell_stress(sim)
        # power V sigma_ji L_ij: pdem's sigma_ij sums branch_i force_j (analysis.py), the
        # transpose of Cauchy's f_i l_j; the two differ while particles spin up. Trapezoid
        # over the step with the step's L at both ends.
        vs = self.volume * sigma.T
        mean = vs if self.last_stress is None else 0.5 * (vs + self._last_vs)
        self.work += float(np.sum(mean * self._applied)) * sim.dt
        self.last_stress = sigma
        self._last_vs = vs
        ctl = self.controller
        if ctl and ctl["stress"]:
            L = self._L.copy()
            for c, target in ctl["stress"].items():
                i, j = COMPONENTS[c]
                s = 0.5 * (sigma[i, j] + sigma[j, i])
                aim = np.clip(ctl["gain"] * (target - s), -ctl["max_rate"], ctl["max_rate"])
                L[i, j] = L[i, j] + ctl["relax"] * (aim - L[i, j])
            self._L = L

    # ------------------------------------------------------------------ checkpoints
    STATE = ("matrix", "_L", "_applied", "image_velocity", "deformation", "_build_matrix")

    def state(self):
        """The cell's state for a checkpoint: arrays and a JSON-able dict."""
        arrays = {k.strip("_"): getattr(self, k) for k in self.STATE}
        if self.last_stress is not None:
            arrays["last_stress"] = self.last_stress
            arrays["last_vs"] = self._last_vs
        info = {"deforming": self.deforming, "flips": self.flips, "work": self.work, "n_flips": self.n_flips,
                "controller": self.controller,
                "origin": self.origin.tolist(), "length0": self.length0.tolist()}
        return arrays, info

    def restore(self, arrays, info):
        for k in self.STATE:
            setattr(self, "_H" if k == "matrix" else k, np.ascontiguousarray(arrays[k.strip("_")]))
        self.last_stress = arrays.get("last_stress")
        self.deforming = bool(info["deforming"])
        self.flips = bool(info["flips"])
        self.work = float(info["work"])
        self.n_flips = int(info["n_flips"])
        if "last_vs" in arrays:
            self._last_vs = arrays["last_vs"]
        self.controller = info["controller"]
        self.origin = np.array(info["origin"])
        self.length0 = np.array(info["length0"])
