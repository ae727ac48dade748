"""Collective.max_floats, the step's reduction of its flags: the answers of `max` (NaN
counts as +inf, so that every rank gets the same answer) as Python floats."""
import math

import numpy as np
from mpi4py import MPI

from pdem.collective import Collective


def test_max_floats_is_max_as_python_floats():
    c = Collective(MPI.COMM_SELF)
    values = [True, 0.0, math.nan, 2.5e-3, -math.inf]
    out = c.max_floats(values)
    assert out == c.max(np.array(values, float)).tolist() == [1.0, 0.0, math.inf, 2.5e-3,
                                                                 -math.inf]
    assert all(type(v) is float for v in out)
    assert c.max_floats([False, math.nan]) == [0.0, math.inf]     # another length, own buffer
    assert c.max_floats(values) == out                             # the kept buffer again
