"""Contact state of one batch (sphere-sphere pairs or sphere-plane contacts).

One row per candidate pair of the Verlet list, keyed by an int64 `key` (unique; pair
batches in grid order, pdem.contact.kinds.TwoBodyRows, wall batches by owning particle
for the force gather). `state` holds, per contact, one row of doubles laid out by
pyx/contacts.pyx (S_* offsets): the L6Geom state (T by rows, u, phi, shifted
origins u0, phi0 -- the laws keep their plastic history in u0/phi0) and the kernel
outputs (force and law moment on particle 2; the torques are derived from them by
contacts.contact_torques); `active` flags formed contacts.
One array per batch: carrying state over a rebuild, or migrating it with a
particle, is a single row copy. Nothing per contact is a Python object.

Pooled batches (pooled=True: the sphere pair kind, whose Verlet candidates mostly do not
touch) keep the state rows only for the candidates that carry state: `slot[k]` is
candidate k's row in `state` (the pool) or -1, `free[:n_free]` the unused rows (the next
one taken is free[n_free - 1]). The kernel gives slots to new contacts and takes them
back from contacts that open (pyx/contacts.pyx sphere_sphere); `at(k)` is the state rows
of candidates k in either layout.
"""
import numpy as np

from .._kernels import contacts as _k, rebuild as _r

COLUMNS = _k.state_columns()
NCOLS = COLUMNS.pop("ncols")


class ContactBatch:
    def __init__(self, i1=None, i2=None, key=None, pooled=False):
        """pooled: state rows only for the candidates that carry state (the module's
        docstring)."""
        n = 0 if key is None else len(key)
        self.i1 = np.zeros(n, np.int32) if i1 is None else np.ascontiguousarray(i1, np.int32)
        self.i2 = np.zeros(n, np.int32) if i2 is None else np.ascontiguousarray(i2, np.int32)
        self.key = np.zeros(n, np.int64) if key is None else np.ascontiguousarray(key, np.int64)
        self.active = np.zeros(n, np.int8)
        self.sub = np.zeros(n, np.int32)        # sub-key: clump member indices (clump_kinds)
        self.slot = None
        if pooled:                              # sphere pairs: no sub-key (all zero)
            self.sub = np.broadcast_to(np.zeros(1, np.int32), (n,))
            self.slot = np.full(n, -1, np.int32)
            self.pool(0, 0)
        else:
            self.state = np.zeros((n, NCOLS))

    def __getattr__(self, name):
        """Named views of the state columns: T, u, phi, u0, phi0, force, moment."""
        if name in COLUMNS:
            start, width = COLUMNS[name]
            return self.__dict__["state"][:, start:start + width]
        raise AttributeError(name)

    def __len__(self):
        return len(self.key)

    def pool(self, capacity, used):
        """A zeroed pool of `capacity` state rows whose first `used` rows are taken."""
        self.state = np.zeros((capacity, NCOLS))
        self.free = np.zeros(capacity, np.int32)
        self.pool_used(used)

    def at(self, index):
        """The state rows of the candidates `index` (pooled: their slots, which must be
        given)."""
        return index if self.slot is None else self.slot[index]

    def claim(self, index):
        """Make the candidates `index` the only ones with state rows (zeroed; pooled:
        slots in index order); returns their state rows (NSCD writes its solution)."""
        if self.slot is None:
            self.state[index] = 0.0
            return index
        self.slot[:] = -1
        self.pool(max(len(self.state), len(index)), len(index))
        self.slot[index] = np.arange(len(index), dtype=np.int32)
        return self.slot[index]

    @staticmethod
    def from_rows(key, active, state, sub=None):
        """A batch of contact rows without local particle indices (rows read from a
        checkpoint or received with migrating particles, waiting for carry_from)."""
        out = ContactBatch(key=key)
        out.active[:] = active
        out.state[:] = np.reshape(state, (-1, NCOLS))
        if sub is not None:
            out.sub[:] = sub
        return out

    def rows(self, index):
        """A batch of the rows `index` (key, active, state, sub; local indices dropped)."""
        return ContactBatch.from_rows(self.key[index], self.active[index],
                                      self.state[self.at(index)], self.sub[index])

    @staticmethod
    def concat(batches):
        return ContactBatch.from_rows(*(np.concatenate([getattr(b, k) for b in batches])
                                        for k in ("key", "active", "state", "sub")))

    def carry_from(self, old):
        """Copy the rows of contacts active in `old` whose key is also here (where old
        rows share a key, the last one): a hash table of the old rows, one pass over
        the new (pyx/rebuild.pyx), either list in any order. A pooled batch carried from
        a pooled batch takes over its pool (its rows moved within it into the new
        list's order once they are scattered: rebuild.pack_pool), unless the pool holds
        over twice its contacts (+1024 rows); otherwise it gets a pool of the copied
        rows plus a quarter for contacts to come."""
        if self.slot is not None:
            n_old = int(np.count_nonzero(old.active)) if len(self) else 0
            if old.slot is not None and len(old.state) <= 2 * n_old + 1024:
                # the old pool (not too large for its contacts): the slots move, and
                # the rows in place if scattered (no second pool, no fresh pages)
                free = np.empty_like(old.free)
                used = _r.carry_rows(self.key, old.key, old.active, old.state, self.active,
                                     old.state, old.slot, self.slot, free)
                _r.pack_pool(old.state, self.slot, free)         # rows in list order
                self.state, self.free, self.n_free = old.state, free, len(free) - used
                return
            self.pool(n_old + n_old // 4 + 64, 0)
        if len(old) == 0 or len(self) == 0:
            return
        _r.carry_rows(self.key, old.key, old.active, old.state, self.active, self.state,
                      old.slot, self.slot)
        if self.slot is not None:
            self.pool_used(int(np.count_nonzero(self.slot >= 0)))

    def pool_used(self, used):
        """The free list of a pool whose first `used` rows are taken."""
        cap = len(self.state)
        self.free[:cap - used] = np.arange(cap - 1, used - 1, -1, dtype=np.int32)
        self.n_free = cap - used
