"""Checks of user input shared by every module: each failure is one InputError line
naming the parameter and the value."""
import math

import numpy as np

from .errors import InputError


def _array(name, value, what):
    try:
        return np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError("%s must be %s, got %r" % (name, what, value)) from None


def vectors(name, value, width, n=None, also=None):
    """(n, width) C-contiguous finite float array. A single vector is taken as one row
    when n is None or 1; `also`: a narrower accepted width (e.g. 2 components in a 3D
    array, padded with zeros)."""
    widths = (width,) if also is None else (width, also)
    a = _array(name, value, "an array of %d-vectors" % width)
    if a.ndim == 1 and a.shape[0] in widths and n in (None, 1):
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] not in widths or (n is not None and a.shape[0] != n):
        raise InputError("%s must have shape (%s, %d), got %s"
                         % (name, "n" if n is None else n, width, a.shape))
    if a.shape[1] != width:
        a = np.column_stack([a, np.zeros((len(a), width - a.shape[1]))])
    bad = np.flatnonzero(~np.all(np.isfinite(a), axis=1))
    if len(bad):
        raise InputError("%s[%d] is not finite: %r" % (name, bad[0], a[bad[0]].tolist()))
    return np.ascontiguousarray(a)


def vector(name, value, width=3):
    """One vector of `width` finite numbers."""
    a = _array(name, value, "%d finite numbers" % width).reshape(-1)
    if a.shape != (width,) or not np.all(np.isfinite(a)):
        raise InputError("%s must be %d finite numbers, got %r" % (name, width, value))
    return a


def number(name, value, low=-math.inf, high=math.inf, low_open=True, none=False):
    """A finite float in (low, high] (low_open) or [low, high]; None passes with none."""
    if value is None and none:
        return None
    if isinstance(value, bool):
        raise InputError("%s must be a number, got %r" % (name, value))
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError("%s must be a number, got %r" % (name, value)) from None
    if not (math.isfinite(v) and (v > low if low_open else v >= low) and v <= high):
        if low == 0 and high == math.inf:
            what = "a positive finite number" if low_open else "a finite number >= 0"
        else:
            what = "a finite number in %s%g, %g]" % ("(" if low_open else "[", low, high)
        raise InputError("%s must be %s, got %r" % (name, what, value))
    return v


def positive(name, value, allow_zero=False):
    """A finite number > 0 (>= 0 with allow_zero)."""
    return number(name, value, 0.0, low_open=not allow_zero)


def integer(name, value, low=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise InputError("%s must be an integer >= %d, got %r" % (name, low, value))
    return int(value)


def steps_to_run(steps, until, now, dt):
    """The number of steps of run(steps=...) or run(until=...): exactly one is given;
    until: the first step whose time reaches until - dt/2."""
    if (steps is None) == (until is None):
        raise InputError("run: give exactly one of steps or until, got steps=%r until=%r"
                         % (steps, until))
    if steps is not None:
        if isinstance(steps, bool) or int(steps) != steps or steps < 0:
            raise InputError("run: steps must be a non-negative integer, got %r" % (steps,))
        return int(steps)
    if not math.isfinite(until):
        raise InputError("run: until must be finite, got %r" % (until,))
    return max(0, int(math.floor((until - now) / dt + 0.5)))


def scalars(name, value, n, allow_zero=False):
    """(n,) float array from a number or n numbers, each finite and > 0 (>= 0)."""
    a = _array(name, value, "a number or an array of %d numbers (one per particle)" % n)
    if a.ndim == 0:
        a = np.full(n, float(a))
    elif a.ndim > 1:
        a = a.reshape(-1)
    if a.shape != (n,):
        raise InputError("%s must be a number or have %d values, got shape %s"
                         % (name, n, a.shape))
    ok = np.isfinite(a) & ((a >= 0.0) if allow_zero else (a > 0.0))
    bad = np.flatnonzero(~ok)
    if len(bad):
        raise InputError("%s[%d] must be a finite number %s 0, got %r"
                         % (name, bad[0], ">=" if allow_zero else ">", float(a[bad[0]])))
    return np.ascontiguousarray(a)
