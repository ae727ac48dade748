"""Particle size distributions: callables radii(rng, n) -> n radii, for `pdem.pack`
and `sim.add_insertion` (LIGGGHTS `fix particledistribution/discrete`, Yade's psd).

- `uniform(rmin, rmax)`: radii uniform in [rmin, rmax].
- `lognormal(median, sigma)`: ln r normal with mean ln(median), deviation sigma,
  optionally clipped to [rmin, rmax] (redrawn, not piled at the bounds).
- `table(radii, fractions, by="mass")`: discrete radii with their fractions by mass
  (a sieve curve) or by number. By mass, the number fraction of radius r_i is
  proportional to w_i / r_i^3."""
import numpy as np

from . import validate
from .errors import InputError


class SizeDistribution:
    def __call__(self, rng, n):
        return self.draw(rng, int(n))


class uniform(SizeDistribution):
    def __init__(self, rmin, rmax):
        self.rmin, self.rmax = validate.positive("rmin", rmin), validate.positive("rmax", rmax)
        if self.rmax < self.rmin:
            raise InputError("uniform: rmax=%r is below rmin=%r" % (rmax, rmin))

    def draw(self, rng, n):
        return self.rmin + (self.rmax - self.rmin) * rng.random(n)


class lognormal(SizeDistribution):
    def __init__(self, median, sigma, rmin=None, rmax=None):
        self.median = validate.positive("median", median)
        self.sigma = validate.positive("sigma", sigma, allow_zero=True)
        self.rmin = 0.0 if rmin is None else validate.positive("rmin", rmin)
        self.rmax = np.inf if rmax is None else validate.positive("rmax", rmax)
        if not self.rmin < self.median < self.rmax:
            raise InputError("lognormal: need rmin < median < rmax, got %r, %r, %r"
                             % (rmin, median, rmax))

    def draw(self, rng, n):
        out = np.empty(0)
        while len(out) < n:            # redraw outside [rmin, rmax]
            r = self.median * np.exp(self.sigma * rng.standard_normal(max(n, 16)))
            out = np.concatenate([out, r[(r >= self.rmin) & (r <= self.rmax)]])
        return out[:n]


class table(SizeDistribution):
    def __init__(self, radii, fractions, by="mass"):
        n = np.size(radii)
        self.radii = validate.scalars("radii", radii, n)
        w = validate.scalars("fractions", fractions, len(self.radii), allow_zero=True)
        if by not in ("mass", "number"):
            raise InputError("table: by must be 'mass' or 'number', got %r" % (by,))
        if not w.sum() > 0:
            raise InputError("table: fractions must not all be zero, got %r" % (w.tolist(),))
        p = w / self.radii ** 3 if by == "mass" else w
        self.p = p / p.sum()            # number fractions

    def draw(self, rng, n):
        return self.radii[rng.choice(len(self.radii), size=n, p=self.p)]
