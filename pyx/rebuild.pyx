# cython: language_level=3
"""Rebuild helpers, linear in the particle and row counts: the spatial order of the
owned particles (a counting sort by cell), the pair list's order keys, and the
carry-over of contact state from the old rows to the new list."""
cimport cython
from libc.math cimport floor
from libc.stdlib cimport calloc, malloc, free as c_free
from libc.string cimport memcpy, memset
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


cdef struct Entry:
    long key                    # -1: empty (keys are >= 0)
    int row                     # the old row
    int slot                    # its pool row (pooled batches)

cdef struct KeyTable:           # open addressing, linear probing: old rows by key
    Entry* entry
    Py_ssize_t mask
    int shift                   # 64 - log2(size): Fibonacci hashing takes the top bits
    unsigned long* seen         # a bit per 2^-18 of the hash range, set where a key is:
                                # most absent keys are told from 32 kB


cdef inline unsigned long _hash(long k) noexcept nogil:
    return <unsigned long>k * 0x9E3779B97F4A7C15ULL


cdef inline Py_ssize_t _slot_of(const KeyTable* t, long k) noexcept nogil:
    """The table entry of key k, or the empty one where it goes."""
    cdef Py_ssize_t e = <Py_ssize_t>(_hash(k) >> t.shift)
    while t.entry[e].key != k and t.entry[e].key >= 0:
        e = (e + 1) & t.mask
    return e


cdef inline const Entry* _find(const KeyTable* t, long k) noexcept nogil:
    """The entry of key k, or NULL."""
    cdef unsigned long h = _hash(k)
    cdef Py_ssize_t e
    if not (t.seen[h >> 52] >> ((h >> 46) & 63)) & 1:
        return NULL
    e = _slot_of(t, k)
    return &t.entry[e] if t.entry[e].key >= 0 else NULL


cdef int _old_rows(KeyTable* t, const long[::1] old_key, const signed char[::1] old_active,
                   const int[::1] old_slot) noexcept nogil:
    """t: the active old rows (with a pool row, when pooled) by key, at most 2/3 full;
    where rows share a key, the last one. -1 when out of memory."""
    cdef Py_ssize_t no = old_key.shape[0], r, e, count = 0, size = 16
    cdef unsigned long h
    cdef bint oslot = old_slot is not None
    for r in range(no):
        count += old_active[r] != 0
    t.shift = 60
    while 2 * size < 3 * count:
        size *= 2
        t.shift -= 1
    t.mask = size - 1
    t.entry = <Entry*>malloc(size * sizeof(Entry))
    t.seen = <unsigned long*>calloc(4096, sizeof(unsigned long))
    if t.entry == NULL or t.seen == NULL:
        return -1
    memset(t.entry, 0xff, size * sizeof(Entry))         # keys -1
    for r in range(no):
        if old_active[r] == 0 or (oslot and old_slot[r] < 0):
            continue
        h = _hash(old_key[r])
        e = _slot_of(t, old_key[r])
        t.entry[e].key = old_key[r]
        t.entry[e].row = <int>r
        t.entry[e].slot = old_slot[r] if oslot else -1
        t.seen[h >> 52] |= 1UL << ((h >> 46) & 63)
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
def carry_rows(const long[::1] new_key, const long[::1] old_key,
               const signed char[::1] old_active, const double[:, ::1] old_state,
               signed char[::1] new_active, double[:, ::1] new_state,
               const int[::1] old_slot=None, int[::1] new_slot=None, int[::1] free=None):
    """Copy active and state of the active old rows whose key is among the new keys
    (ContactBatch.carry_from); either list in any order (a hash table of the old rows,
    one pass over the new). Where old rows share a key, the last one is copied.
    Returns the number of rows copied. Pooled batches (pdem.contact.store): an old
    row's state is old_state[old_slot[r]]; a new row gets new_slot = the next unused
    row of new_state, in new list order. With `free` (two pooled batches sharing one
    pool, new_state is old_state): a new row takes over its old row's pool row
    instead of a copy, and free (one entry per pool row) gets every other row,
    highest first (the lowest is taken first, as from a fresh pool); returns the
    number of pool rows in use."""
    cdef Py_ssize_t nn = new_key.shape[0], cap, j, r, dst, src
    cdef Py_ssize_t ncol = new_state.shape[1], copied = 0, used = 0, n_free = 0
    cdef bint oslot = old_slot is not None, nslot = new_slot is not None
    cdef bint share = free is not None
    cdef KeyTable t
    cdef const Entry* e
    cdef int err = 0
    if old_state.shape[1] != ncol:
        raise ValueError("state widths differ")
    if share and not (oslot and nslot):
        raise ValueError("carry_rows: a shared pool needs old_slot and new_slot")
    cap = free.shape[0] if share else 0
    taken_arr = np.zeros(cap, dtype=np.int8)
    cdef signed char[::1] taken = taken_arr
    with nogil:
        err = _old_rows(&t, old_key, old_active, old_slot)
        for j in range(nn if err == 0 else 0):
            e = _find(&t, new_key[j])
            if e == NULL:
                continue
            new_active[j] = old_active[e.row]
            if share:
                new_slot[j] = e.slot
                copied += 1 - taken[e.slot]
                taken[e.slot] = 1
                continue
            src = e.slot if oslot else e.row
            dst = j
            if nslot:
                if new_slot[j] < 0:
                    if used == new_state.shape[0]:
                        err = 1
                        break
                    new_slot[j] = <int>used
                    used += 1
                dst = new_slot[j]
            memcpy(&new_state[dst, 0], &old_state[src, 0], ncol * sizeof(double))
            copied += 1
        for r in range(cap - 1, -1, -1):
            if taken[r] == 0:
                free[n_free] = <int>r
                n_free += 1
        c_free(t.entry)
        c_free(t.seen)
    if err < 0:
        raise MemoryError()
    if err > 0:
        raise ValueError("carry_rows: more contacts than the %d rows of the new pool"
                         % new_state.shape[0])
    return copied


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


@cython.boundscheck(False)
@cython.wraparound(False)
def grid_keys(const double[:, ::1] pos, const long[::1] ids, const double[::1] lo,
              const double[::1] hi, double edge):
    """The pair list's order key of each particle, c << 31 | id: c the flat index
    (x-major, z fastest) of its cell in the grid of the box lo..hi with cells of `edge`
    (doubled until the grid has fewer than 2^32 cells; positions outside the box in the
    nearest cell). It depends on nothing but the particle, so that it is the same on
    any rank count (ids are below 2^31: pdem/contact/keys.py)."""
    cdef Py_ssize_t n = pos.shape[0], i
    cdef int d
    cdef long dims[3]
    cdef long c[3]
    cdef double q
    cdef double size[3]
    if not edge > 0.0:
        edge = max(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2])
    while True:
        for d in range(3):
            size[d] = floor((hi[d] - lo[d]) / edge) + 1.0
        if size[0] * size[1] * size[2] < 4294967296.0:
            break
        edge *= 2.0
    for d in range(3):
        dims[d] = <long>size[d]
    key_arr = np.empty(n, dtype=np.int64)
    cdef long[::1] key = key_arr
    with nogil:
        for i in range(n):
            for d in range(3):
                q = floor((pos[i, d] - lo[d]) / edge)
                if q >= <double>dims[d]:
                    c[d] = dims[d] - 1
                elif q >= 0.0:
                    c[d] = <long>q
                else:                               # below the box (or nan)
                    c[d] = 0
            key[i] = (((c[0] * dims[1] + c[1]) * dims[2] + c[2]) << 31) | ids[i]
    return key_arr
