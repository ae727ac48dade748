"""Freed arrays go back to the operating system (glibc's malloc; issue 14, memory).

glibc serves allocations above its mmap threshold (128 KiB at start) from memory maps
of their own, unmapped when freed, but raises the threshold to the size of every such
block freed, up to 32 MiB. A neighbor rebuild frees and allocates arrays of a few MiB,
so after the first one they come from the heap, whose freed blocks stay resident and
fragment as the contact pool grows: the chute of 130,438 spheres peaked at 175 MiB,
143 MiB with the threshold fixed at its initial value (mallopt, which also stops the
adjustment; bench/README.md, Memory, with the chute's speed). A user's
MALLOC_MMAP_THRESHOLD_ is left as it is; other C libraries are not touched.
"""
import ctypes
import ctypes.util
import os

M_MMAP_THRESHOLD = -3           # glibc malloc.h
THRESHOLD = 128 * 1024          # glibc's initial value (bytes)
_done = []


def release_freed_arrays():
    """Fix glibc's mmap threshold, once per process; False where it does not apply."""
    if _done:
        return _done[0]
    ok = False
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            ok = bool(libc.gnu_get_libc_version and libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD))
        except (OSError, AttributeError):
            ok = False
    _done.append(ok)
    return ok
