"""Collective operations of one simulation's ranks (SPMD): reductions that give every
rank the same answer, errors raised on every rank, and gathers of row data.

Buffer-based (numpy arrays, no pickling) except for error messages, which travel
only when some rank has one.
"""
import math
import os
import zlib

import numpy as np
from mpi4py import MPI

from .errors import InputError
from .parallel.exchange import pack, record_dtype, unpack


def digest(value):
    """A 32-bit checksum of a set-up argument (array, number, name, mesh, material...),
    the same on every rank for the same value."""
    if value is None:
        return -1.0
    if isinstance(value, (str, bytes, os.PathLike)):
        data = os.fsencode(value) if not isinstance(value, bytes) else value
    elif hasattr(value, "vertices") and hasattr(value, "facets"):        # a Mesh
        return float(zlib.crc32(np.ascontiguousarray(value.facets).tobytes(),
                                zlib.crc32(np.ascontiguousarray(value.vertices).tobytes())))
    elif hasattr(value, "name") and hasattr(value, "density"):           # a Material
        data = str(value.name).encode()
    elif isinstance(value, dict):
        return float(zlib.crc32(repr(sorted((k, digest(v)) for k, v in value.items())).encode()))
    else:
        try:
            a = np.asarray(value)
            data = (str(a.dtype) + str(a.shape)).encode() + np.ascontiguousarray(a).tobytes() \
                if a.dtype != object else repr(value).encode()
        except Exception:                   # anything numpy cannot take: its repr
            data = repr(value).encode()
    return float(zlib.crc32(data))


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

    def same(self, what, **arguments):
        """Check that every rank passed the same arguments to the set-up call `what`
        (SPMD: every rank builds the same scene): one Allreduce of the min and max of
        a checksum per argument; when they differ, an InputError on every rank names
        the call and the first argument that differs (e.g. positions from an unseeded
        random generator). Collective."""
        if self.size == 1:
            return
        names = list(arguments)
        h = np.array([digest(v) for v in arguments.values()], float)
        both = self.max(np.concatenate([h, -h]))
        differ = np.flatnonzero(both[:len(h)] != -both[len(h):])
        if len(differ):
            raise InputError(
                "%s: %s differs between ranks: every rank must make the same set-up calls "
                "with the same arguments (SPMD; e.g. seed a random generator alike on every "
                "rank, np.random.default_rng(seed))" % (what, names[differ[0]]))

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
