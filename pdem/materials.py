"""Materials, material-pair parameters and their mixing rules.

A material carries a density and the parameters of its contact law. The law of a
pair of materials (particle-particle or particle-plane) is resolved once into one
row of the pair table that the contact kernels read (columns: pyx/laws.pxd).

Mixing rules for two different materials (override any value with
Simulation.pair(m1, m2, ...)):
  E*, G*          Hertz: 1/E* = sum (1 - nu_i^2)/E_i,  1/G* = sum 2 (2 - nu_i)(1 + nu_i)/E_i
  friction, rolling_friction, twisting_friction      min of the two (the weaker surface)
  restitution     geometric mean sqrt(e1 e2)
  kn, kt          series springs in parallel pairs: 2 k1 k2 / (k1 + k2) (= k for equal)
  gamma_n, gamma_t, rolling_stiffness, twisting_stiffness      arithmetic mean
  law             must be the same (else set it with Simulation.pair)

Laws (per pair):
  'hooke'  linear spring-dashpot + Coulomb. Either by stiffness (kn, kt = 2/7 kn,
           gamma_n, gamma_t = gamma_n / 2: LAMMPS gran/hooke/history, F_n = kn d - m* gamma_n v_n)
           or by material: kn = 2 E* R*, kt/kn = 4 G*/E* (= 2(1-nu)/(2-nu), Mindlin's
           ratio), damping ratio zeta = -ln e / sqrt(pi^2 + ln^2 e) (exact restitution e
           for a contact ending at zero overlap; attractive damping force allowed unless
           limit_damping=True), tangential damping c_t = c_n / 2.
  'hertz'  Hertz-Mindlin (no-slip Mindlin stiffness 8 G* sqrt(R* d)) with damping
           2 zeta sqrt(m* S) on both directions (Tsuji 1992 form), zeta solved so that
           a normal impact rebounds with exactly the input restitution e.
Rolling and twisting resistance (both laws): elastic-plastic on phi, stiffness
rolling_stiffness * k_t * R*^2, limit rolling_friction * R* * F_n (same for twisting).
Contact models of polyhedra (docs/polyhedra.md; pairs of two polyhedra and polyhedron-plane
contacts): contact_model 'minkowski' (default: the Minkowski-overlap ECC law), 'volume'
(the contact-volume ECC law w = k_v V^p / p, F_n = k_v V^(p-1) S_n with k_v =
volume_stiffness and p = volume_power, default 1: the seed's linear w = k_v V, F_n = k_v
S_n, k_v in N/m^2) or 'common_plane' (Cundall 1988); two materials with different models
need Simulation.pair(..., contact_model=...); volume_stiffness mixes as kn, volume_power
as the mean.
Cohesion (per pair, pyx/laws.pxd, docs/laws.md): cohesion='dmt' or 'jkr' with
surface_energy W (the work of adhesion, J/m^2), or 'linear' with cohesion_density k_c
(J/m^3); W and k_c mix as geometric means (zero when one material has none).
"""
import math
from dataclasses import dataclass, field, fields, replace

import numpy as np

from ._kernels import contacts as _k
from .errors import InputError

COL = _k.law_columns()
LAWS = ("hooke", "hertz")
COHESIONS = (None, "dmt", "jkr", "linear")      # the codes of laws.pxd COH_*
CONTACT_MODELS = ("minkowski", "volume", "common_plane")   # polyhedron_contacts MODEL_*


@dataclass
class Material:
    name: str
    density: float
    law: str = "hooke"
    young: float = None
    poisson: float = 0.25
    restitution: float = None
    friction: float = 0.5
    kn: float = None
    kt: float = None
    gamma_n: float = None
    gamma_t: float = None
    rolling_friction: float = 0.0
    rolling_stiffness: float = 0.0
    twisting_friction: float = 0.0
    twisting_stiffness: float = 0.0
    limit_damping: bool = False
    cohesion: str = None
    surface_energy: float = 0.0
    cohesion_density: float = 0.0
    contact_model: str = "minkowski"
    volume_stiffness: float = None
    volume_power: float = 1.0
    index: int = field(default=-1, compare=False)

    def check(self, stiffness=True):
        """Check the parameters; stiffness=False (the NSCD scheme, rigid grains): the
        law's stiffness may be missing."""
        def positive(name, allow_none=True, allow_zero=False):
            v = getattr(self, name)
            if v is None and allow_none:
                return
            ok = v is not None and math.isfinite(v) and (v >= 0 if allow_zero else v > 0)
            if not ok:
                raise InputError("material %r: %s must be %s, got %r" % (
                    self.name, name, "non-negative" if allow_zero else "positive", v))
        positive("density", allow_none=False)
        if self.law not in LAWS:
            raise InputError("material %r: law must be one of %s, got %r" % (self.name, LAWS, self.law))
        for name in ("young", "kn", "kt", "volume_stiffness"):
            positive(name)
        check_model("material %r" % self.name, self.contact_model, self.volume_stiffness,
                    self.volume_power)
        for name in ("gamma_n", "gamma_t", "friction", "rolling_friction", "rolling_stiffness",
                     "twisting_friction", "twisting_stiffness"):
            positive(name, allow_zero=True)
        if not (-1.0 < self.poisson < 0.5):
            raise InputError("material %r: poisson must be in (-1, 0.5), got %r" % (self.name, self.poisson))
        if self.restitution is not None and not (0.0 <= self.restitution <= 1.0):
            raise InputError("material %r: restitution must be in [0, 1], got %r" % (self.name, self.restitution))
        check_cohesion("material %r" % self.name, self.cohesion, self.surface_energy,
                       self.cohesion_density, stiffness)
        if not stiffness:
            return
        if self.law == "hertz" and self.young is None:
            raise InputError("material %r: law 'hertz' needs young (Young's modulus)" % self.name)
        if self.law == "hooke" and self.young is None and self.kn is None:
            raise InputError("material %r: law 'hooke' needs kn or young" % self.name)


def check_cohesion(where, cohesion, surface_energy, cohesion_density, stiffness=True):
    """One clear line for a bad cohesion model or value (`where`: the material or pair)."""
    if cohesion not in COHESIONS:
        raise InputError("%s: cohesion must be one of %s, got %r" % (
            where, ", ".join(repr(c) for c in COHESIONS), cohesion))
    for name, v in (("surface_energy", surface_energy), ("cohesion_density", cohesion_density)):
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float, np.floating,
                                                                   np.integer)) \
                or not math.isfinite(v) or v < 0:
            raise InputError("%s: %s must be a finite number >= 0, got %r" % (where, name, v))
    if cohesion is not None and not stiffness:
        raise InputError("%s: cohesion=%r is not supported by the NSCD scheme (rigid grains); "
                         "use the explicit scheme" % (where, cohesion))
    if cohesion in ("dmt", "jkr") and cohesion_density:
        raise InputError("%s: cohesion_density=%r belongs to cohesion='linear', not %r" % (
            where, cohesion_density, cohesion))
    if cohesion == "linear" and surface_energy:
        raise InputError("%s: surface_energy=%r belongs to cohesion 'dmt' or 'jkr', not 'linear'"
                         % (where, surface_energy))
    if cohesion is None and (surface_energy or cohesion_density):
        raise InputError("%s: %s=%r given without a cohesion model (cohesion='jkr', 'dmt' or "
                         "'linear')" % (where, "surface_energy" if surface_energy else
                                        "cohesion_density", surface_energy or cohesion_density))


def check_model(where, model, volume_stiffness, volume_power):
    """One clear line for a bad polyhedron contact model (docs/polyhedra.md)."""
    if volume_stiffness is not None and not (0 < volume_stiffness < math.inf):
        raise InputError("%s: volume_stiffness must be positive, got %r" % (where,
                                                                           volume_stiffness))
    if not (1.0 <= volume_power < math.inf):
        raise InputError("%s: volume_power must be >= 1 (w = k_v V^p / p), got %r" % (
            where, volume_power))
    if model not in CONTACT_MODELS:
        raise InputError("%s: contact_model must be one of %s, got %r" % (
            where, ", ".join(repr(c) for c in CONTACT_MODELS), model))
    if model == "volume" and volume_stiffness is None:
        raise InputError("%s: contact_model 'volume' needs volume_stiffness (k_v in w = k_v "
                         "V^p / p, F_n = k_v V^(p-1) S_n; N/m^2 for p = 1)" % where)


def _harmonic(a, b):
    if a is None or b is None:
        return None
    return 2.0 / (1.0 / a + 1.0 / b)


def _mean(a, b):
    if a is None or b is None:
        return None
    return 0.5 * (a + b)


def mix(m1, m2):
    """Pair parameters of two materials by the mixing rules of this module's docstring,
    as a dict of Material fields (E*, G* are computed later from young/poisson)."""
    if m1.law != m2.law:
        raise InputError("materials %r and %r use different laws (%s, %s): set the pair's law "
                         "with Simulation.pair(%r, %r, law=...)" % (m1.name, m2.name, m1.law,
                                                                    m2.law, m1.name, m2.name))
    e = None
    if m1.restitution is not None and m2.restitution is not None:
        e = math.sqrt(m1.restitution * m2.restitution)
    if m1.cohesion is not None and m2.cohesion is not None and m1.cohesion != m2.cohesion:
        raise InputError("materials %r and %r use different cohesion models (%s, %s): set the "
                         "pair's with Simulation.pair(%r, %r, cohesion=...)" % (
                             m1.name, m2.name, m1.cohesion, m2.cohesion, m1.name, m2.name))
    # one material without cohesion: W = sqrt(W1 W2) = 0, no cohesion
    both = m1.cohesion is not None and m2.cohesion is not None
    return dict(
        cohesion=m1.cohesion if both else None,
        surface_energy=math.sqrt(m1.surface_energy * m2.surface_energy) if both else 0.0,
        cohesion_density=math.sqrt(m1.cohesion_density * m2.cohesion_density) if both else 0.0,
        law=m1.law, friction=min(m1.friction, m2.friction), restitution=e,
        kn=_harmonic(m1.kn, m2.kn), kt=_harmonic(m1.kt, m2.kt),
        gamma_n=_mean(m1.gamma_n, m2.gamma_n), gamma_t=_mean(m1.gamma_t, m2.gamma_t),
        rolling_friction=min(m1.rolling_friction, m2.rolling_friction),
        twisting_friction=min(m1.twisting_friction, m2.twisting_friction),
        rolling_stiffness=_mean(m1.rolling_stiffness, m2.rolling_stiffness),
        twisting_stiffness=_mean(m1.twisting_stiffness, m2.twisting_stiffness),
        limit_damping=m1.limit_damping or m2.limit_damping,
        contact_model=m1.contact_model if m1.contact_model == m2.contact_model else None,
        volume_stiffness=_harmonic(m1.volume_stiffness, m2.volume_stiffness),
        volume_power=_mean(m1.volume_power, m2.volume_power))


def _mix_over(a, b, over):
    """mix() of a pair whose overrides `over` set the law or the cohesion model: the
    materials' other values mix as if both had that law and model (a cohesion model set
    for the pair takes W and k_c from the materials' values, zero where one has none)."""
    changed = {k: over[k] for k in ("law", "cohesion") if k in over}
    if changed:
        a, b = replace(a, **changed), replace(b, **changed)
    p = mix(a, b)
    if p["cohesion"] != "linear":            # each model keeps its own parameter only
        p["cohesion_density"] = 0.0
    if p["cohesion"] not in ("dmt", "jkr"):
        p["surface_energy"] = 0.0
    return p


def damping_ratio_linear(e):
    """zeta of a linear spring-dashpot giving restitution e (closed form)."""
    if e <= 0.0:
        return 1.0
    le = math.log(e)
    return -le / math.sqrt(math.pi ** 2 + le * le)


_hertz_cache = {}


def damping_ratio_hertz(e):
    """zeta_h such that the Hertz contact of laws.pxd rebounds with restitution e
    (bisection on the dimensionless impact, which does not depend on velocity)."""
    if e >= 1.0:
        return 0.0
    if e <= 0.0:
        # for zeta_h >= 0.95 the rebound speed is below 1e-9 of the impact speed
        # (hertz_restitution); 1.0 is taken for e = 0
        return 1.0
    key = round(e, 12)
    if key not in _hertz_cache:
        lo, hi = 0.0, 1.0
        while _k.hertz_restitution(hi, e) > e:
            hi *= 2.0
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            if _k.hertz_restitution(mid, e) > e:
                lo = mid
            else:
                hi = mid
        _hertz_cache[key] = 0.5 * (lo + hi)
    return _hertz_cache[key]


def _moduli(m1, m2):
    if m1.young is None or m2.young is None:
        return None, None
    estar = 1.0 / ((1 - m1.poisson ** 2) / m1.young + (1 - m2.poisson ** 2) / m2.young)
    gstar = 1.0 / (2 * (2 - m1.poisson) * (1 + m1.poisson) / m1.young
                   + 2 * (2 - m2.poisson) * (1 + m2.poisson) / m2.young)
    return estar, gstar


class MaterialTable:
    """The materials of a simulation and the pair table the kernels read."""

    def __init__(self, stiffness=True):
        self.stiffness = stiffness        # False: rigid grains (NSCD), no law needed
        self.planar = False               # 2D disks: no cohesion (Simulation sets it)
        self.materials = []
        self.by_name = {}
        self.overrides = {}
        self._table = self._coefficients = self._models = None

    def add(self, name, density, **params):
        if name in self.by_name:
            raise InputError("material name %r is already defined" % name)
        unknown = set(params) - {f.name for f in fields(Material)} - {"index"}
        if unknown:
            raise InputError("unknown material parameter(s) %s for %r" % (sorted(unknown), name))
        m = Material(name=name, density=density, **params)
        m.check(self.stiffness)
        self._planar_check("material %r" % name, m.cohesion)
        m.index = len(self.materials)
        self.materials.append(m)
        self.by_name[name] = m
        self._table = self._coefficients = self._models = None
        return m

    def _planar_check(self, where, cohesion):
        if cohesion is not None and self.planar:
            raise InputError("%s: cohesion=%r is for spheres; 2D disks have no cohesion model "
                             "(the JKR, DMT and linear forms are 3D)" % (where, cohesion))

    def get(self, material):
        """Material from a Material, a name or an index; InputError if unknown."""
        if isinstance(material, Material):
            if 0 <= material.index < len(self.materials) \
                    and self.materials[material.index] is material:
                return material
            raise InputError("material %r is a Material of another simulation (defined here: "
                             "%s); pass its name" % (material.name,
                                                    [m.name for m in self.materials]))
        if isinstance(material, str) and material in self.by_name:
            return self.by_name[material]
        if isinstance(material, (int, np.integer)) and 0 <= material < len(self.materials):
            return self.materials[material]
        raise InputError("unknown material %r (defined: %s)" % (
            getattr(material, "name", material), [m.name for m in self.materials]))

    def set_pair(self, a, b, **params):
        a, b = self.get(a), self.get(b)
        allowed = set(mix(a, a))
        unknown = set(params) - allowed
        if unknown:
            raise InputError("unknown pair parameter(s) %s for (%r, %r)" % (sorted(unknown), a.name, b.name))
        if {"cohesion", "surface_energy", "cohesion_density"} & set(params):
            try:
                p = _mix_over(a, b, params)
            except InputError:               # different laws or models, not set here
                p = {"cohesion": None, "surface_energy": 0.0, "cohesion_density": 0.0}
            p.update(params)
            check_cohesion("pair (%r, %r)" % (a.name, b.name), p["cohesion"],
                           p["surface_energy"], p["cohesion_density"], self.stiffness)
            self._planar_check("pair (%r, %r)" % (a.name, b.name), p["cohesion"])
        if {"contact_model", "volume_stiffness", "volume_power"} & set(params):
            try:
                p = _mix_over(a, b, params)
            except InputError:               # different laws, not set here
                p = {"contact_model": None, "volume_stiffness": None, "volume_power": 1.0}
            p.update(params)
            check_model("pair (%r, %r)" % (a.name, b.name), p["contact_model"],
                        p["volume_stiffness"], p["volume_power"])
        self.overrides[(min(a.index, b.index), max(a.index, b.index))] = dict(params)
        self._table = self._coefficients = self._models = None

    def pair_params(self, a, b):
        """Resolved parameters of a pair (after mixing and overrides)."""
        key = (min(a.index, b.index), max(a.index, b.index))
        over = self.overrides.get(key, {})
        base = _mix_over(a, b, over)
        base.update(over)
        estar, gstar = _moduli(a, b)
        return base, estar, gstar

    def row(self, a, b):
        p, estar, gstar = self.pair_params(a, b)
        r = np.zeros(COL["ncols"])
        r[COL["mu"]] = p["friction"]
        r[COL["roll_k"]] = p["rolling_stiffness"] or 0.0
        r[COL["roll_mu"]] = p["rolling_friction"]
        r[COL["twist_k"]] = p["twisting_stiffness"] or 0.0
        r[COL["twist_mu"]] = p["twisting_friction"]
        r[COL["limit_damping"]] = 1.0 if p["limit_damping"] else 0.0
        e = p["restitution"]
        names = "(%r, %r)" % (a.name, b.name)
        coh = p["cohesion"]
        if coh is not None:
            if coh == "jkr" and p["law"] != "hertz":
                raise InputError("pair %s: cohesion 'jkr' needs law 'hertz' (E*, G* from young, "
                                 "poisson), got law %r" % (names, p["law"]))
            r[COL["cohesion"]] = COHESIONS.index(coh)
            r[COL["work"]] = p["surface_energy"] if coh != "linear" else 0.0
            r[COL["coh_k"]] = p["cohesion_density"] if coh == "linear" else 0.0
        if p["law"] == "hertz":
            if estar is None:
                raise InputError("pair %s: law 'hertz' needs young on both materials" % names)
            if coh == "jkr" and p["surface_energy"] > 0:
                # pull-off distance |d_c| = (3/4) (pi^2 W^2 R* / E*^2)^(1/3) = reach cbrt(R*)
                r[COL["reach"]] = 0.75 * (math.pi * p["surface_energy"] / estar) ** (2.0 / 3.0)
            r[COL["normal"]] = 1.0
            r[COL["estar"]], r[COL["gstar"]] = estar, gstar
            r[COL["zeta"]] = damping_ratio_hertz(1.0 if e is None else e)
            return r
        r[COL["normal"]] = 0.0
        if p["kn"] is not None:
            kn = p["kn"]
            r[COL["kn0"]] = kn
            r[COL["kt_ratio"]] = (p["kt"] if p["kt"] is not None else 2.0 / 7.0 * kn) / kn
        elif estar is not None:
            r[COL["kn1"]] = 2.0 * estar
            r[COL["kt_ratio"]] = 4.0 * gstar / estar
        else:
            raise InputError("pair %s: law 'hooke' needs kn or young on both materials" % names)
        if p["gamma_n"] is not None:
            r[COL["gamma_n"]] = p["gamma_n"]
            gt = p["gamma_t"] if p["gamma_t"] is not None else 0.5 * p["gamma_n"]
            r[COL["ct_ratio"]] = gt / p["gamma_n"] if p["gamma_n"] > 0 else 0.0
        else:
            r[COL["zeta"]] = damping_ratio_linear(1.0 if e is None else e)
            r[COL["ct_ratio"]] = 0.5
        return r

    def contact_models(self):
        """(model codes int8 (n_materials^2,), volume law (n_materials^2, 2): k_v, p) (row
        a*n + b) for the polyhedron kinds: the index in CONTACT_MODELS, -1 for a pair of
        materials with different models (refused when such a pair touches)."""
        if self._models is None:
            n = len(self.materials)
            code, kv = np.full(max(n * n, 1), -1, np.int8), np.zeros((max(n * n, 1), 2))
            for a in self.materials:
                for b in self.materials:
                    try:
                        p = self.pair_params(a, b)[0]
                    except InputError:          # different laws: the pair table refuses it
                        continue
                    if p["contact_model"] is not None:
                        code[a.index * n + b.index] = CONTACT_MODELS.index(p["contact_model"])
                        kv[a.index * n + b.index] = (p["volume_stiffness"] or 0.0,
                                                     p["volume_power"])
            self._models = (code, kv)
        return self._models

    def coefficients(self):
        """(friction, restitution) of every pair, two (n_materials^2,) arrays (index
        a*n + b), for the NSCD scheme (unset restitution: 0, a perfectly inelastic
        impact)."""
        if self._coefficients is None:
            n = len(self.materials)
            mu, e = np.zeros(max(n * n, 1)), np.zeros(max(n * n, 1))
            for a in self.materials:
                for b in self.materials:
                    p = self.pair_params(a, b)[0]
                    mu[a.index * n + b.index] = p["friction"]
                    e[a.index * n + b.index] = p["restitution"] or 0.0
            self._coefficients = (mu, e)
        return self._coefficients

    def table(self):
        """(n_materials^2, ncols) float64; row a*n + b holds the pair (a, b)."""
        if self._table is None:
            n = len(self.materials)
            t = np.zeros((max(n * n, 1), COL["ncols"]))
            for a in self.materials:
                for b in self.materials:
                    try:
                        t[a.index * n + b.index] = self.row(a, b)
                    except InputError:
                        if a.law == b.law and (a.cohesion == b.cohesion or a.cohesion is None
                                               or b.cohesion is None):
                            raise
                        t[a.index * n + b.index] = np.nan   # never in contact, checked at use
            self._table = t
        return self._table
