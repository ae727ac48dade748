"""Collective operations of one simulation's ranks (SPMD): reductions that give every
rank the same answer, errors raised on every rank, and gathers of row data.

Buffer-based (numpy arrays, no pickling) except for error messages, which travel
only when some rank has one.
"""
import math
import os
import sys
import threading
import time
import traceback
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


def _user_line(frame):
    """The innermost line of the waiting thread's stack outside pdem (the user's call)."""
    here = os.path.dirname(os.path.abspath(__file__))
    stack = traceback.extract_stack(frame)
    for entry in reversed(stack):
        if not os.path.abspath(entry.filename).startswith(here + os.sep):
            return "%s:%d: %s" % (entry.filename, entry.lineno, (entry.line or "").strip())
    return "%s:%d" % (stack[-1].filename, stack[-1].lineno) if stack else "?"


class Watchdog:
    """Says so on stderr (once per wait) when this rank has waited more than
    `timeout` seconds in one of pdem's reductions (sim.n_particles, sim.energy(), a
    step...): a collective that some rank does not call (e.g. inside `if sim.rank ==
    0:`) never returns. A daemon thread; MPI calls release the GIL, so it runs while
    the main thread waits. PDEM_COLLECTIVE_TIMEOUT (seconds, default 120; 0: off)."""

    def __init__(self, rank, timeout):
        self.rank, self.timeout = rank, timeout
        self.entered = None              # (what, monotonic time, thread id) while waiting
        self.messages = []               # what it said (tests)
        self._thread = None

    def start(self):
        if self._thread is None and self.timeout > 0:
            self._thread = threading.Thread(target=self._watch, name="pdem-watchdog",
                                            daemon=True)
            self._thread.start()

    def _watch(self):
        said = None
        while True:
            time.sleep(min(5.0, self.timeout / 4))
            entered = self.entered
            if entered is None or entered is said:
                continue
            what, since, thread = entered
            waited = time.monotonic() - since
            if waited < self.timeout:
                continue
            frame = sys._current_frames().get(thread)
            where = _user_line(frame) if frame is not None else "?"
            text = ("pdem: rank %d has waited %.0f s in a collective call (%s, from %s): "
                    "every rank must make the same collective calls in the same order; "
                    "sim.n_particles, sim.n_contacts, energy(), particles(gather=True), "
                    "set-up calls, run/step are collective: call them on every rank, "
                    "not inside `if sim.rank == 0:`" % (self.rank, waited, what, where))
            self.messages.append(text)
            print(text, file=sys.stderr, flush=True)
            said = entered


_WATCHDOG = []


def _shared_watchdog(rank):
    if not _WATCHDOG:
        try:
            timeout = float(os.environ.get("PDEM_COLLECTIVE_TIMEOUT", "120") or 0)
        except ValueError:
            timeout = 120.0
        _WATCHDOG.append(Watchdog(rank, timeout))
        _WATCHDOG[0].start()
    return _WATCHDOG[0]


class Collective:
    def __init__(self, comm, timeout=None):
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self._buffers = {}               # max_floats'
        if timeout is not None:
            self.watchdog = Watchdog(self.rank, timeout)
            self.watchdog.start()
        else:                            # one thread per process, for every simulation
            self.watchdog = _shared_watchdog(self.rank) if self.size > 1 else Watchdog(0, 0)

    def _allreduce(self, buf, op, what):
        self.watchdog.entered = (what, time.monotonic(), threading.get_ident())
        try:
            self.comm.Allreduce(MPI.IN_PLACE, buf, op=op)
        finally:
            self.watchdog.entered = None

    def max(self, value):
        """Maximum over ranks of a float or of a float array. NaN counts as +inf, so
        every rank gets the same answer."""
        buf = np.array(value, float, ndmin=1)
        buf[np.isnan(buf)] = math.inf          # infinities stay as they are
        if self.size > 1:
            self._allreduce(buf, MPI.MAX, "a maximum over ranks")
        return buf if np.ndim(value) else float(buf[0])

    def max_floats(self, values):
        """`max` of a few numbers (the step's flags) as a list of Python floats, with a
        buffer kept per length: two numpy calls per step instead of six."""
        buf = self._buffers.get(len(values))
        if buf is None:
            buf = self._buffers[len(values)] = np.empty(len(values))
        buf[:] = [math.inf if v != v else v for v in values]   # NaN: +inf, as `max`
        if self.size > 1:
            self._allreduce(buf, MPI.MAX, "a maximum over ranks")
        return buf.tolist()

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
            self._allreduce(a, MPI.SUM, "a sum over ranks")
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
