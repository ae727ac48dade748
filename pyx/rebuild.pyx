# cython: language_level=3
"""Rebuild helpers, linear in the particle and row counts: the spatial order of the
owned particles (a counting sort by cell) and the carry-over of contact state from
the old rows to the new list (a merge of two key-sorted lists)."""
cimport cython
from libc.math cimport floor
from libc.string cimport memcpy
import numpy as np


@cython.boundscheck(False)
@cython.wraparound(False)
def cell_order(const double[:, ::1] pos, double cell, long max_cells):
    """The permutation that sorts the rows of pos stably by the flat index
    (c0 dims1 + c1) dims2 + c2 of the cells c = floor((pos - pos.min(axis=0)) / cell)
    (dims = c.max(axis=0) + 1): numpy's stable argsort of that index, computed by a
    counting sort. None when there would be more than max_cells cells (the caller
    sorts instead)."""
    cdef Py_ssize_t n = pos.shape[0], i
    cdef int d
    cdef double mn[3]
    cdef long dims[3]
    cdef long c, ncell
    for d in range(3):
        mn[d] = pos[0, d] if n else 0.0
    for i in range(n):
        for d in range(3):
            if pos[i, d] < mn[d]:
                mn[d] = pos[i, d]
    for d in range(3):
        dims[d] = 0
    cells_arr = np.empty((n, 3), dtype=np.int64)
    cdef long[:, ::1] cc = cells_arr
    for i in range(n):
        for d in range(3):
            c = <long>floor((pos[i, d] - mn[d]) / cell)
            cc[i, d] = c
            if c + 1 > dims[d]:
                dims[d] = c + 1
    if n == 0 or <double>dims[0] * <double>dims[1] * <double>dims[2] > <double>max_cells:
        return None
    ncell = dims[0] * dims[1] * dims[2]
    start_arr = np.zeros(ncell + 1, dtype=np.int64)
    cdef long[::1] start = start_arr
    flat_arr = np.empty(n, dtype=np.int64)
    cdef long[::1] flat = flat_arr
    order_arr = np.empty(n, dtype=np.int64)
    cdef long[::1] order = order_arr
    with nogil:
        for i in range(n):
            c = (cc[i, 0] * dims[1] + cc[i, 1]) * dims[2] + cc[i, 2]
            flat[i] = c
            start[c + 1] += 1
        for c in range(ncell):
            start[c + 1] += start[c]
        for i in range(n):
            order[start[flat[i]]] = i
            start[flat[i]] += 1
    return order_arr


@cython.boundscheck(False)
@cython.wraparound(False)
def is_sorted(const long[::1] key, const signed char[::1] active=None):
    """True when key (its rows with active != 0, if given) does not decrease."""
    cdef Py_ssize_t n = key.shape[0], i
    cdef long last = -9223372036854775807 - 1
    cdef bint use = active is not None, ok = True
    with nogil:
        for i in range(n):
            if use and active[i] == 0:
                continue
            if key[i] < last:
                ok = False
                break
            last = key[i]
    return ok


@cython.boundscheck(False)
@cython.wraparound(False)
def carry_rows(const long[::1] new_key, const long[::1] new_order, const long[::1] old_key,
               const signed char[::1] old_active, const double[:, ::1] old_state,
               const long[::1] old_order, signed char[::1] new_active,
               double[:, ::1] new_state, const int[::1] old_slot=None, int[::1] new_slot=None):
    """Copy active and state of the active old rows whose key is among the new keys
    (ContactBatch.carry_from). The new keys in the order new_order (empty: as stored)
    and the old rows in the order old_order (empty: as stored; inactive rows are
    skipped) must not decrease: one merge. Where old rows share a key, the last one
    in old order is copied last. Returns the number of rows copied.
    Pooled batches (pdem.contact.store): an old row's state is old_state[old_slot[r]];
    a new row gets new_slot = the next unused row of new_state, in merge order."""
    cdef Py_ssize_t nn = new_key.shape[0], no, i, j = 0, r, dst, src
    cdef Py_ssize_t ncol = new_state.shape[1], copied = 0, used = 0
    cdef bint nid = new_order.shape[0] == 0, oid = old_order.shape[0] == 0
    cdef bint oslot = old_slot is not None, nslot = new_slot is not None
    cdef long k
    if old_state.shape[1] != ncol:
        raise ValueError("state widths differ")
    no = old_key.shape[0] if oid else old_order.shape[0]
    if nn == 0 or no == 0:
        return 0
    with nogil:
        if nid and oid and not (oslot or nslot):    # both in key order, one row each
            for r in range(no):
                if old_active[r] == 0:
                    continue
                k = old_key[r]
                while j < nn and new_key[j] < k:
                    j += 1
                if j == nn:
                    break
                if new_key[j] == k:
                    new_active[j] = old_active[r]
                    memcpy(&new_state[j, 0], &old_state[r, 0], ncol * sizeof(double))
                    copied += 1
        else:
            for i in range(no):
                r = i if oid else old_order[i]
                if old_active[r] == 0:
                    continue
                k = old_key[r]
                while j < nn and new_key[j if nid else new_order[j]] < k:
                    j += 1
                if j == nn:
                    break
                dst = j if nid else new_order[j]
                if new_key[dst] != k:
                    continue
                new_active[dst] = old_active[r]
                src = old_slot[r] if oslot else r
                if nslot:
                    if new_slot[dst] < 0:
                        if used == new_state.shape[0]:
                            copied = -1
                            break
                        new_slot[dst] = <int>used
                        used += 1
                    dst = new_slot[dst]
                memcpy(&new_state[dst, 0], &old_state[src, 0], ncol * sizeof(double))
                copied += 1
    if copied < 0:
        raise ValueError("carry_rows: more contacts than the %d rows of the new pool"
                         % new_state.shape[0])
    return copied


@cython.boundscheck(False)
@cython.wraparound(False)
def carry_slots(const long[::1] new_key, const long[::1] old_key,
                const signed char[::1] old_active, const int[::1] old_slot,
                signed char[::1] new_active, int[::1] new_slot, int[::1] free):
    """carry_rows for two pooled batches sharing one pool: the active old rows whose
    key is among the new keys pass on their pool row (new_slot, -1 on entry) instead
    of a copy of it. free (one entry per pool row) gets every other row, highest first
    (the lowest is taken first, as from a fresh pool). Returns the number of rows in
    use, or -1 when a list is not in key order (new_active and new_slot are then
    to be reset by the caller)."""
    cdef Py_ssize_t nn = new_key.shape[0], no = old_key.shape[0], cap = free.shape[0]
    cdef Py_ssize_t r, j = 0, used = 0, n_free = 0
    cdef long k, last = -9223372036854775807 - 1
    cdef int s
    cdef bint unsorted = False
    taken_arr = np.zeros(cap, dtype=np.int8)
    cdef signed char[::1] taken = taken_arr
    with nogil:
        for r in range(1, nn):
            if new_key[r] < new_key[r - 1]:
                unsorted = True
                break
        for r in range(no):
            if unsorted:
                break
            k = old_key[r]
            if k < last:
                unsorted = True
                break
            last = k
            s = old_slot[r]
            if old_active[r] == 0 or s < 0:
                continue
            while j < nn and new_key[j] < k:
                j += 1
            if j == nn:
                continue                            # (the old keys' order still checked)
            if new_key[j] == k:
                if new_slot[j] >= 0:                # equal old keys: the last one
                    taken[new_slot[j]] = 0
                    used -= 1
                new_active[j] = old_active[r]
                new_slot[j] = s
                used += 1 - taken[s]
                taken[s] = 1
        if not unsorted:
            for r in range(cap - 1, -1, -1):
                if taken[r] == 0:
                    free[n_free] = <int>r
                    n_free += 1
    return -1 if unsorted else used


@cython.boundscheck(False)
@cython.wraparound(False)
def pack_pool(double[:, ::1] state, int[::1] slot, int[::1] free, double scattered=0.05):
    """Move a pool's rows in place so that the candidates' rows follow their order
    (the i-th candidate with a row gets row i) and rewrite slot and free (every other
    row, highest first), when more than a fraction `scattered` of the rows do not
    follow the row before them; else change nothing. The pair kernel then reads its
    rows in sequence: carried from rebuild to rebuild, the rows of a flow end up
    scattered over the pool (the chute's after 2000 steps: 94 %; a dense bed's
    kernel 1.2x slower so). A cycle-following permutation in place: two rows of
    scratch, each row copied twice. Returns True when it moved the rows."""
    cdef Py_ssize_t m = slot.shape[0], cap = state.shape[0], nc = state.shape[1]
    cdef Py_ssize_t j, s, d, nd, used = 0, breaks = 0, last = -2
    for j in range(m):
        if slot[j] >= 0:
            breaks += slot[j] != last + 1
            last = slot[j]
            used += 1
    if breaks <= scattered * used:
        return False
    if free.shape[0] < cap:
        raise ValueError("pack_pool: free has %d entries for %d rows" % (free.shape[0], cap))
    cdef double[:, ::1] scratch = np.empty((2, nc))
    cdef double* moving            # the row on its way to row d
    cdef double* held              # the row taken out of row d
    # dest[s]: row s's new row; -1: a free or vacated row
    cdef int[::1] dest = np.full(cap, -1, np.int32)
    used = 0
    with nogil:
        for j in range(m):
            if slot[j] >= 0:
                dest[slot[j]] = <int>used
                slot[j] = <int>used
                used += 1
        for s in range(cap):
            d = dest[s]
            if d < 0 or d == s:
                continue
            moving, held = &scratch[0, 0], &scratch[1, 0]
            memcpy(moving, &state[s, 0], nc * sizeof(double))
            dest[s] = -1
            while dest[d] >= 0:                   # d holds a row still to move
                nd = dest[d]
                memcpy(held, &state[d, 0], nc * sizeof(double))
                memcpy(&state[d, 0], moving, nc * sizeof(double))
                moving, held = held, moving
                dest[d] = -1
                d = nd
            memcpy(&state[d, 0], moving, nc * sizeof(double))
        for s in range(cap - used):
            free[s] = <int>(cap - 1 - s)
    return True


@cython.boundscheck(False)
@cython.wraparound(False)
def outside(const double[:, ::1] pos, const double[::1] lo, const double[::1] hi,
            const unsigned char[::1] periodic):
    """(first row with a non-finite coordinate or -1, first row outside lo..hi (lo
    included, hi excluded) on a non-periodic axis or -1, number of such rows)."""
    cdef Py_ssize_t n = pos.shape[0], i, bad = -1, first = -1, count = 0
    cdef int d
    cdef double x
    cdef bint out, finite
    with nogil:
        for i in range(n):
            out = False
            finite = True
            for d in range(3):
                x = pos[i, d]
                if not (x - x == 0.0):          # inf or nan
                    finite = False
                if not periodic[d] and (x < lo[d] or x >= hi[d]):
                    out = True
            if not finite and bad < 0:
                bad = i
            if out:
                count += 1
                if first < 0:
                    first = i
    return bad, first, count
