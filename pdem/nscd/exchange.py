"""The exchange after every NSCD sweep on several ranks, in one message per neighbour.

After a sweep (pdem.nscd.solve), the increments NLGS gave to ghost rows go to their
owners and every ghost row gets its owner's new velocity. Done along the recorded
ghost swaps (pdem.nscd.solve.exchange_ghost_velocities: reverse swaps, then forward
swaps, then an Allreduce of the residual) that is two dependent rounds of messages
per swap axis plus a reduction, each a synchronization of the ranks.

When every ghost row is a direct copy of an owned row of another rank and every owned
row has at most one ghost copy (no periodic image on the same rank, no ghost of a ghost,
as on ranks cut along one axis), one round suffices: rank A sends each neighbour B, in
one message, the velocities of A's owned rows B holds as ghosts and the increments A
gave to B's rows that A holds as ghosts. Then the owner adds the increments (v_A + dv_B)
and the ghost computes the same sum from the owner's velocity and its own increments
(v_A + dv_B): the same operands, the same bits as the two rounds. The message carries
the sender's residual too; when every rank's neighbours are all the other ranks (two
ranks) the maximum over the received residuals is the global one and the Allreduce is
left out, otherwise an Iallreduce runs during the round. The plan (index lists,
buffers, persistent requests) is made once per ghost build and reused by every sweep.
The round is completed by wait_all, which sleeps between tests once a spin (1 ms with a
core per rank, 20 us with more ranks on the node than cores) has not seen the messages:
on a machine with more processes than cores, a rank spinning in MPI_Waitall holds the
core its neighbour needs (measured on 2 shared cores: 4 to 30 times
faster on 2 ranks, docs/nscd.md).

Jacobi sends velocities only (no increments: each rank computes the contacts it
shares from identical copies), in the same single round.
"""
import math
import time

import numpy as np
from mpi4py import MPI

from .._kernels import nscd as _k
from ..threads import node_threads

TAG = 700
# wait_all: seconds of busy polling (a core per rank: load imbalance of a sweep; more
# ranks than cores: a neighbour on its own core answers within microseconds), then of
# each sleep
SPIN, SPIN_SHARED, NAP = 1e-3, 2e-5, 1e-5


def oversubscribed(comm):
    """True when this node runs more ranks than the cores its ranks may use together
    (bound to a core each, as mpirun and srun bind by default, two ranks on two cores
    are not oversubscribed, though each may use one core). A collective call over
    `comm`; the same answer on the node's ranks."""
    node = node_threads(comm, 1)
    return node["ranks"] > node["cores"]


def wait_all(requests, spin):
    """Complete the requests: test them for up to `spin` seconds, then after each sleep
    of NAP seconds, which leaves the core to the other processes when there are more of
    them than cores (a rank spinning in MPI_Waitall takes the time slices its neighbour
    needs to answer)."""
    if MPI.Request.Testall(requests):
        return
    end = time.perf_counter() + spin
    while time.perf_counter() < end:
        if MPI.Request.Testall(requests):
            return
    while not MPI.Request.Testall(requests):
        time.sleep(NAP)


class SweepExchange:
    """One round per sweep between the ranks of `ghosts` (a built
    pdem.parallel.ghosts.GhostExchange) for velocity arrays of widths (nv, nw);
    `increments`: NLGS (owners receive ghost increments) or Jacobi. Collective:
    every rank learns whether the single round applies (`usable`)."""

    def __init__(self, ghosts, n_own, n, nv, nw, increments, timers):
        dec = ghosts.dec
        self.swaps, self.timers = ghosts.swaps, timers
        self.cart, self.increments = dec.cart, increments
        self.n_own, self.nv, self.nw = n_own, nv, nw
        send, recv = {}, {}         # peer -> [owned rows sent], [(first, count) received]
        ok = True
        seen = np.zeros(n_own, np.int8)
        for sel, dest, source, first, count in ghosts.swaps:
            if len(sel) == 0 and count == 0:
                continue
            if dest == source == dec.rank or (len(sel) and sel.max() >= n_own):
                ok = False          # a periodic image here, or a ghost forwarded
                break
            if len(sel):
                if seen[sel].any():
                    ok = False      # an owned row with two ghost copies
                    break
                seen[sel] = 1
                send.setdefault(dest, []).append(np.asarray(sel, np.int64))
            if count:
                recv.setdefault(source, []).append((first, count))
        ok = ok and n_own + sum(c for _, c in sum(recv.values(), [])) == n
        size = dec.size
        peers = sorted(set(send) | set(recv)) if ok else []
        flags = np.array([0.0 if ok else 1.0, 0.0 if len(peers) == size - 1 else 1.0])
        dec.cart.Allreduce(MPI.IN_PLACE, flags, op=MPI.MAX)
        self.usable = flags[0] == 0.0
        self.local_max = flags[1] == 0.0      # the neighbours are all the other ranks
        if not hasattr(dec, "oversubscribed"):
            dec.oversubscribed = oversubscribed(dec.cart)
        self.spin = SPIN_SHARED if dec.oversubscribed else SPIN
        if not self.usable:
            return
        width = nv + nw
        self.peers = []
        for p in peers:
            sel = np.concatenate(send[p]) if p in send else np.empty(0, np.int64)
            ghost = (np.concatenate([np.arange(f, f + c) for f, c in recv[p]])
                     if p in recv else np.empty(0, np.int64))
            n_s, n_g = len(sel), len(ghost)
            # out (pack_border): sel's velocities, [our ghosts' increments], the residual;
            # inc: the same from p, whose sel rows are our ghost rows and the other way
            out = np.empty(n_s * width + (n_g * width if increments else 0) + 1)
            inc = np.empty(n_g * width + (n_s * width if increments else 0) + 1)
            self.peers.append((p, sel, ghost, out, inc))
        self.requests = []
        for p, sel, ghost, out, inc in self.peers:
            self.requests.append(self.cart.Recv_init(inc, source=p, tag=TAG))
            self.requests.append(self.cart.Send_init(out, dest=p, tag=TAG))

    def free(self):
        for r in getattr(self, "requests", []):
            r.Free()
        self.requests = []

    def end_sweep(self, res, v, w, ghost_dv, ghost_dw):
        """After a sweep: owners get the increments given to their ghost rows (NLGS:
        ghost_dv, ghost_dw, zeroed here), ghosts their owners' velocities; returns the
        residual over all ranks (NaN counts as +inf, as Collective.max)."""
        if res != res:
            res = math.inf
        if ghost_dv is None:
            ghost_dv, ghost_dw = v, w          # not read (Jacobi)
        inc = int(self.increments)
        for p, sel, ghost, out, recv in self.peers:
            _k.pack_border(v, w, ghost_dv, ghost_dw, sel, ghost, inc, res, out)
        MPI.Prequest.Startall(self.requests)
        reduce_req = None
        if not self.local_max:
            total = np.array([res])
            reduce_req = self.cart.Iallreduce(MPI.IN_PLACE, total, op=MPI.MAX)
        clock = time.perf_counter()
        wait_all(self.requests if reduce_req is None else self.requests + [reduce_req],
                 self.spin)
        if reduce_req is not None:
            res = float(total[0])
        self.timers["wait"] += time.perf_counter() - clock
        for p, sel, ghost, out, recv in self.peers:
            r = _k.unpack_border(v, w, ghost_dv, ghost_dw, sel, ghost, inc, recv)
            if self.local_max and r > res:
                res = r
        return res
