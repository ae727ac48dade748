"""Migration: particles that left their subdomain move to their new owner rank,
together with the contact rows (L6Geom state and law history) attached to them.

A contact row travels with each of its particles that changes rank; the receiver
adds the rows to its previous contacts before the new Verlet list takes over the
state by key (ContactBatch.carry_from). Every contact of a particle's new owner is
thus known: the owner either owned the particle before (and computed the contact)
or receives the row with the particle. Ranks that own nothing take part as usual.
"""
import numpy as np

from ..contact.store import NCOLS, ContactBatch
from .exchange import alltoallv_records, pack, record_dtype, unpack

CONTACT_RECORD = np.dtype([("key", np.int64), ("kind", np.int8), ("active", np.int8),
                           ("sub", np.int32), ("state", np.float64, (NCOLS,))])
NO_RECORDS, NO_DESTS = np.empty(0, CONTACT_RECORD), np.empty(0, np.int32)


def _contact_records(batch, owners, dest, rank, kind):
    """Rows of `batch` whose owned particle(s) `owners` (-1: not owned) move, and where."""
    rows, to = [], []
    active = batch.active != 0
    for owner in owners:
        k = np.flatnonzero(active & (owner >= 0))
        d = dest[owner[k]]
        moving = d != rank
        rows.append(k[moving])
        to.append(d[moving])
    rows, to = np.concatenate(rows), np.concatenate(to)
    # a pair whose two particles go to the same rank is sent once
    uniq = np.unique(rows.astype(np.int64) * (1 << 20) + to)
    rows, to = (uniq >> 20).astype(np.int64), (uniq & ((1 << 20) - 1)).astype(np.int32)
    rec = np.empty(len(rows), CONTACT_RECORD)
    rec["key"], rec["kind"] = batch.key[rows], kind
    rec["active"], rec["state"] = batch.active[rows], batch.state[batch.at(rows)]
    rec["sub"] = batch.sub[rows]
    return rec, to


def migrate(comm, own, dest, batches, owners):
    """Send owned particles (fields dict `own`) to ranks `dest` with their contact
    rows. batches: the contact batches (pairs, plane contacts, facet contacts...);
    owners[b]: a tuple with, for each particle slot of batch b's contacts, the index
    in `own` of the particle or -1 (pairs: (owner1, owner2); wall contacts:
    (owner,)). Returns (own, batches) with the received particles appended and the
    received contact rows added to the batches."""
    rank = comm.Get_rank()
    leaving = dest != rank
    any_leaving = bool(leaving.any())
    prec = pack(own, record_dtype(own), np.flatnonzero(leaving))
    got = unpack(alltoallv_records(comm, prec, dest[leaving]))
    # rows move only with a particle that leaves (none: most rebuilds), from kinds with rows
    crec = [_contact_records(b, o, dest, rank, kind)
            for kind, (b, o) in enumerate(zip(batches, owners)) if len(b)] if any_leaving else []
    rows = alltoallv_records(comm, np.concatenate([r for r, _ in crec] + [NO_RECORDS]),
                             np.concatenate([t for _, t in crec] + [NO_DESTS]))
    if any_leaving or len(got["id"]):
        stay = np.flatnonzero(~leaving)
        own = {k: np.concatenate([np.take(v, stay, axis=0), got[k].astype(v.dtype)])
               for k, v in own.items()}
    out = []
    for kind, old in enumerate(batches):
        r = rows[rows["kind"] == kind]
        if len(r) == 0:     # the old rows as they are: carry_from reads only the active
            out.append(old)  # ones, in the same order
            continue
        keep = np.flatnonzero(old.active)
        m = len(keep)
        b = ContactBatch(key=np.concatenate([np.take(old.key, keep), r["key"]]))
        b.active[:m] = np.take(old.active, keep)
        b.active[m:] = r["active"]
        b.sub[:m] = np.take(old.sub, keep)
        b.sub[m:] = r["sub"]
        np.take(old.state, old.at(keep), axis=0, out=b.state[:m], mode="clip")   # valid rows
        b.state[m:] = r["state"]
        out.append(b)
    return own, out
