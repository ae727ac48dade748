"""Ghost particles built in six swaps (-x, +x, -y, +y, -z, +z), LAMMPS "borders" style.

For each axis, a rank sends to its lower (upper) neighbor copies of the particles
it holds -- owned and ghosts from earlier axes -- within `cutoff` of its lower
(upper) face, and receives the neighbor's; doing the axes in sequence makes edge
and corner copies come for free. A copy crossing a periodic face keeps the
owner's coordinates and gets image +-1 on that axis, so kernels form relative
vectors as (x_b - x_a) + (image_b - image_a) * L, the same numbers on every rank.
One rank along a periodic axis sends to itself: one code path for periodic images
and MPI ghosts. The swaps are recorded so that, between rebuilds, `refresh`
repeats them with positions and velocities only.
"""
import numpy as np
from mpi4py import MPI

from .._kernels.ghost_copy import copy_images, pack, unpack
from .exchange import record_dtype, sendrecv_records

REFRESHED = ("pos", "vel", "angvel")     # what changes between rebuilds


class PoolRows:
    """Rows `index` of a ghost build's pool: the owned fields (rows below n_owned), then
    the records received from other ranks (kept apart, so that a swap copies no owned
    field). The index is split once; `take` gathers a field."""

    def __init__(self, index, n_owned):
        far = index >= n_owned
        self.far = np.flatnonzero(far)
        self.far_rows = index[self.far] - n_owned
        self.index = np.where(far, 0, index) if len(self.far) else index

    def take(self, owned, received):
        """One field's rows: owned[i], or received[i - n_owned] (written over the owned
        row 0 that a far row takes first)."""
        if len(owned):
            out = np.take(owned, self.index, axis=0)
        else:                           # a rank that owns nothing: every row is far
            out = np.empty((len(self.index),) + owned.shape[1:], owned.dtype)
        if len(self.far):
            out[self.far] = np.take(received, self.far_rows, axis=0)
        return out


class GhostExchange:
    def __init__(self, decomposition):
        self.dec = decomposition
        self.swaps = []            # (send indices, dest, source, first received slot, count)
        self.bytes_per_refresh = 0
        self._planned = self._steps = None      # the refresh plan of these swaps (_plan)
        self._buffers = {}                      # message buffers of the refresh (_buffer)

    def build(self, owned, cutoff, order=None, ref=None):
        """Return owned + ghost fields (ghosts appended in swap order); with `order`,
        the owned rows come in that order. Every row is an index into a pool of
        rows (the owned fields, then the records received from other ranks) with its
        own image: a periodic image of this rank is an index, and each field is
        gathered once at the end. self.source: the pool row of every local row
        (below len(owned["id"]): an owned row of `owned`). A deforming cell
        (pdem/cell.py) passes `ref`, the map to its reference coordinates, in which the
        faces and images are those of the fixed box, and the cutoff per axis in them.
        `owned` is emptied: each of its arrays is dropped once its local field is
        gathered, so that a caller passing the only references holds at most one field
        twice (not the old and the new local arrays at once)."""
        dec, dom = self.dec, self.dec.domain
        box = dom.length
        pool = dict(owned)
        owned.clear()
        coord = pool["pos"] if ref is None else ref(pool["pos"])
        cut = np.broadcast_to(cutoff, 3)
        n_pool_owned = len(pool["id"])
        received = None                 # the records of other ranks, in order (PoolRows)
        src = np.arange(n_pool_owned) if order is None else np.asarray(order, np.int64)
        image = np.take(pool["image"], src, axis=0)
        dtype = None
        self.swaps = []
        sub_lo, sub_hi = dec.lo, dec.hi
        for d in range(3):
            lower, upper = dec.neighbors[d]
            at_lo, at_hi = dec.coords[d] == 0, dec.coords[d] == dec.dims[d] - 1
            shifted = np.take(coord[:, d], src) + image[:, d] * box[d]
            rows, images = [src], [image]
            n_before = len(shifted)
            first = n_before
            for near, dest, source, shift, tag in (
                    (shifted < sub_lo[d] + cut[d], lower, upper, 1 if at_lo else 0, 10 * d),
                    (shifted >= sub_hi[d] - cut[d], upper, lower, -1 if at_hi else 0, 10 * d + 5)):
                sel = np.flatnonzero(near) if dest >= 0 else np.empty(0, np.int64)
                if dest == source == dec.rank:          # periodic image of this rank
                    img = np.take(image, sel, axis=0)
                    img[:, d] += shift
                    rows.append(np.take(src, sel))
                    images.append(img)
                    count = len(sel)
                elif dest < 0 and source < 0:           # walls on both faces of this axis
                    count = 0
                else:
                    if dtype is None:
                        dtype = record_dtype(pool)
                    rec = np.empty(len(sel), dtype)
                    rows_sent = PoolRows(src[sel], n_pool_owned)
                    for k in dtype.names:
                        rec[k] = image[sel] if k == "image" else rows_sent.take(
                            pool[k], None if received is None else received[k])
                    rec["image"][:, d] += shift
                    got = sendrecv_records(dec.cart, rec, dest, source, dtype, tag)
                    count = len(got)
                    if count:
                        start = len(coord)
                        received = got if received is None else np.concatenate([received, got])
                        coord = np.concatenate([coord, got["pos"] if ref is None
                                                else ref(got["pos"])])
                        rows.append(np.arange(start, start + count))
                        images.append(got["image"])
                self.swaps.append((sel, dest, source, first, count))
                first += count
            if len(rows) > 1:
                src, image = np.concatenate(rows), np.concatenate(images)
        # bytes sent to other ranks per refresh (periodic self-images are local copies)
        self.bytes_per_refresh = sum(len(sel) for sel, dest, *_ in self.swaps
                                     if dest != dec.rank) * 8 * 3 * len(REFRESHED)
        self.source, self.n_pool_owned = src, n_pool_owned
        coord = None
        rows_local = PoolRows(src, n_pool_owned)
        local = {}
        for k in list(pool):
            rows = pool.pop(k)
            local[k] = image if k == "image" else rows_local.take(
                rows, None if received is None else received[k])
            del rows
        return local

    def refresh(self, store, extra=()):
        """Copy the current positions and velocities of the sources into the ghosts (and
        the fields `extra`: the orientations when non-spherical particles exist)."""
        self.refresh_arrays([store.f[name] for name in REFRESHED + tuple(extra)])

    def refresh_arrays(self, arrays, tag=100):
        """Copy the source rows of each array (rows = local particles, ghosts after the
        owned ones) into its ghost rows, in the order of the build (later swaps forward
        ghosts of earlier ones; kernels in pyx/ghost_copy.pyx: all arrays of a row in one
        pass, messages in buffers kept from step to step)."""
        for step in self._plan():
            if step[0] == "local":                       # periodic images of this rank
                copy_images(arrays, step[1], step[2])
                continue
            cart, width = self.dec.cart, sum(a.shape[1] for a in arrays)
            reqs, received = [], []
            for k, sel, dest, source, first, count in step[1]:
                if count:
                    recv = self._buffer("recv", k, count, width)
                    reqs.append(cart.Irecv(recv, source=source, tag=tag + k))
                    received.append((recv, first))
                if len(sel):
                    send = self._buffer("send", k, len(sel), width)
                    pack(send, arrays, sel)
                    reqs.append(cart.Isend(send, dest=dest, tag=tag + k))
            if reqs:
                MPI.Request.Waitall(reqs)
            for recv, first in received:
                unpack(arrays, first, recv)

    def _buffer(self, way, k, n, width):
        """The buffer of (n, width) doubles that swap k sends or receives (`way`), kept
        from one refresh to the next while n holds (one per width: the step refreshes
        positions and velocities, an NSCD sweep velocities alone)."""
        buf = self._buffers.get((way, k, width))
        if buf is None or len(buf) != n:
            buf = self._buffers[way, k, width] = np.empty((n, width))
        return buf

    def _plan(self):
        """The refresh of the current swaps, made once per build: ("local", sources,
        ghost rows) for consecutive axes whose swaps are periodic images of this rank
        (merged in order: one copy per array), ("remote", swaps) for an axis whose two
        swaps go to other ranks (both in flight at once: each sends only rows from
        before the axis). Swaps with nothing either way (known to both sides from the
        build) are left out."""
        if self._planned is self.swaps:
            return self._steps
        rank, steps = self.dec.rank, []
        for axis in range(0, len(self.swaps), 2):
            pair = [(k,) + tuple(self.swaps[k]) for k in (axis, axis + 1)
                    if self.swaps[k][4] or len(self.swaps[k][0])]
            if not pair:
                continue
            if all(dest == source == rank for _, _, dest, source, _, _ in pair):
                src = [sel for _, sel, *_ in pair]
                dst = [np.arange(first, first + count) for *_, first, count in pair]
                if steps and steps[-1][0] == "local":
                    src, dst = [steps[-1][1]] + src, [steps[-1][2]] + dst
                    steps.pop()
                steps.append(("local", np.concatenate(src).astype(np.int64),
                              np.concatenate(dst).astype(np.int64)))
            else:
                steps.append(("remote", pair))
        self._planned, self._steps = self.swaps, steps
        return steps

    def reverse_add(self, arrays, tag=500):
        """Send the ghost rows of each array back along the recorded swaps, in reverse
        order, and add them to their source rows (LAMMPS "reverse communication"): a
        ghost of a ghost reaches its owner through the rank that forwarded it, and a
        periodic image of an owned particle adds to it on this rank."""
        cart = self.dec.cart
        width = sum(a.shape[1] for a in arrays)
        for k in range(len(self.swaps) - 1, -1, -1):
            sel, dest, source, first, count = self.swaps[k]
            if count == 0 and len(sel) == 0:
                continue
            if dest == source == self.dec.rank:
                for a in arrays:
                    np.add.at(a, sel, a[first:first + count])
                continue
            reqs = []
            recv = np.empty((len(sel), width))
            if len(sel):
                reqs.append(cart.Irecv(recv, source=dest, tag=tag + k))
            if count:
                send = np.ascontiguousarray(np.hstack([a[first:first + count] for a in arrays]))
                reqs.append(cart.Isend(send, dest=source, tag=tag + k))
            if reqs:
                MPI.Request.Waitall(reqs)
            c = 0
            for a in arrays:
                np.add.at(a, sel, recv[:, c:c + a.shape[1]])
                c += a.shape[1]


def wrap(pos, box_lo, box_hi, periodic):
    """Wrap positions into the box on periodic axes, touching only those outside
    (so particles inside keep their exact bits)."""
    for axis in range(3):
        if periodic[axis]:
            length = box_hi[axis] - box_lo[axis]
            col = pos[:, axis]
            out = np.flatnonzero((col < box_lo[axis]) | (col >= box_hi[axis]))
            if len(out):
                col[out] -= np.floor((col[out] - box_lo[axis]) / length) * length
                # round-off can leave a value exactly on the upper face or just below lo
                col[out] = np.where(col[out] >= box_hi[axis], box_lo[axis], col[out])
                col[out] = np.where(col[out] < box_lo[axis], box_lo[axis], col[out])
