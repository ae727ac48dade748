"""Collective operations of one simulation's ranks (SPMD): reductions that give every
rank the same answer, errors raised on every rank, and gathers of row data.

Buffer-based (numpy arrays, no pickling) except for error messages, which travel
only when some rank has one.
"""
import math

import numpy as np
from mpi4py import MPI

from .parallel.exchange import pack, record_dtype, unpack


class Collective:
    def __init__(self, comm):
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()

    def max(self, value):
        """Maximum over ranks of a float or of a float array. NaN counts as +inf, so
        every rank gets the same answer."""
        buf = np.array(value, float, ndmin=1)
        buf[np.isnan(buf)] = math.inf          # infinities stay as they are
        if self.size > 1:
            self.comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.MAX)
        return buf if np.ndim(value) else float(buf[0])

    def sum(self, a):
        """Sum over ranks of the array `a` (in place)."""
        if self.size > 1:
            self.comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)
        return a

    def raise_if_any(self, message, error):
        """Raise error(message) on every rank when any rank has a message (the lowest
        rank's message wins): a failure on one rank stops all ranks, never hangs."""
        if self.size > 1:
            if not self.max(float(message is not None)):
                return
            message = next(m for m in self.comm.allgather(message) if m is not None)
        if message is not None:
            raise error(message)

    def allgather(self, fields):
        """Fields (dict of arrays with the same number of rows) of all ranks,
        concatenated in rank order."""
        if self.size == 1:
            return {k: v.copy() for k, v in fields.items()}
        rec = pack(fields, record_dtype(fields))
        counts = np.array(self.comm.allgather(rec.nbytes), np.int64)
        out = np.empty(int(counts.sum()) // rec.dtype.itemsize, rec.dtype)
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.comm.Allgatherv([rec.view(np.uint8), MPI.BYTE],
                             [out.view(np.uint8), (counts, offsets), MPI.BYTE])
        return unpack(out)

    def imbalance(self, n):
        """max / mean over ranks of the counts n."""
        counts = np.array(self.comm.allgather(n), float) if self.size > 1 else np.array([n], float)
        return float(counts.max() / counts.mean()) if counts.sum() else 1.0
