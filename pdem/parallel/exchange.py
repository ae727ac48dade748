"""Buffer-based MPI messages of particle and contact records.

Fields of mixed dtypes travel as one numpy structured array per message, sent as
raw bytes (MPI.BYTE): one message per destination, counts exchanged first, no
pickling of bulk data.
"""
import numpy as np
from mpi4py import MPI


def record_dtype(fields):
    """Structured dtype with one member per field of the dict `fields` (n-row arrays)."""
    return np.dtype([(k, v.dtype, v.shape[1:]) for k, v in fields.items()])


def pack(fields, dtype, index=None):
    """Records of the rows `index` (all rows when None) of `fields`."""
    n = len(next(iter(fields.values()))) if index is None else len(index)
    rec = np.empty(n, dtype)
    for k in dtype.names:
        rec[k] = fields[k] if index is None else fields[k][index]
    return rec


def unpack(rec):
    return {k: np.ascontiguousarray(rec[k]) for k in rec.dtype.names}


def sendrecv_records(comm, rec, dest, source, dtype, tag=0):
    """Send `rec` to dest and receive the records source sends (either may be
    MPI.PROC_NULL); counts first, then the bytes."""
    count = np.array([len(rec)], np.int64)
    other = np.zeros(1, np.int64)
    comm.Sendrecv(count, dest=dest, sendtag=tag, recvbuf=other, source=source, recvtag=tag)
    out = np.empty(int(other[0]), dtype)
    comm.Sendrecv([np.ascontiguousarray(rec).view(np.uint8), MPI.BYTE], dest=dest,
                  sendtag=tag + 1, recvbuf=[out.view(np.uint8), MPI.BYTE], source=source,
                  recvtag=tag + 1)
    return out


def alltoallv_records(comm, rec, dest):
    """Deliver record k to rank dest[k]; returns the records received, ordered by
    source rank then by send order."""
    size = comm.Get_size()
    order = np.argsort(dest, kind="stable")
    rec = np.ascontiguousarray(rec[order])
    item = rec.dtype.itemsize
    send_counts = np.bincount(dest, minlength=size).astype(np.int64)
    recv_counts = np.empty(size, np.int64)
    comm.Alltoall(send_counts, recv_counts)
    out = np.empty(int(recv_counts.sum()), rec.dtype)
    sc, rc = send_counts * item, recv_counts * item
    comm.Alltoallv([rec.view(np.uint8), (sc, _offsets(sc)), MPI.BYTE],
                   [out.view(np.uint8), (rc, _offsets(rc)), MPI.BYTE])
    return out


def _offsets(counts):
    off = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=off[1:])
    return off
