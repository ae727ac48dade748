"""The simulation box: bounds, periodic axes, and 2D/3D mode."""
import numpy as np

from .errors import InputError


class Domain:
    """Box [lo, hi) with periodic flags per axis. dim=2: disks moving in the xy plane
    (lo/hi may be given with 2 components; z is then a dummy slab)."""

    def __init__(self, lo, hi, periodic=(False, False, False), dim=3):
        if dim not in (2, 3):
            raise InputError("Domain: dim must be 2 or 3, got %r" % (dim,))
        lo = [float(x) for x in np.ravel(lo)]
        hi = [float(x) for x in np.ravel(hi)]
        periodic = [bool(p) for p in np.ravel(periodic)]
        if dim == 2:
            lo, hi = (lo + [-0.5])[:3], (hi + [0.5])[:3]
            periodic = (periodic + [False])[:3]
            periodic[2] = False
        if len(lo) != 3 or len(hi) != 3 or len(periodic) != 3:
            raise InputError("Domain: lo, hi and periodic need %d components, got lo=%r hi=%r "
                             "periodic=%r" % (dim, lo, hi, periodic))
        self.lo = np.array(lo)
        self.hi = np.array(hi)
        if not (np.all(np.isfinite(self.lo)) and np.all(np.isfinite(self.hi))
                and np.all(self.hi > self.lo)):
            raise InputError("Domain: need finite lo < hi on every axis, got lo=%r hi=%r" % (lo, hi))
        self.periodic = tuple(periodic)
        self.dim = dim

    @property
    def length(self):
        return self.hi - self.lo

    def __repr__(self):
        return "Domain(lo=%s, hi=%s, periodic=%s, dim=%d)" % (
            self.lo.tolist(), self.hi.tolist(), self.periodic, self.dim)
