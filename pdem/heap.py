"""Large freed arrays go back to the operating system (glibc's malloc; issue 14, memory).

glibc serves allocations above its mmap threshold from memory maps of their own,
unmapped when freed, but raises the threshold to the size of every such block freed,
up to 32 MiB. A neighbor rebuild frees and allocates arrays of a few MiB, and the
contact pool grows, so they soon all come from the heap, whose freed blocks stay
resident and fragment: the chute of 130,438 spheres peaked at 170-175 MiB. A fixed
threshold (mallopt, which also stops the adjustment) keeps the arrays above it in maps
of their own: 143 MiB at 128 KiB, but every rebuild then faults in fresh pages for
its arrays (rebuild 2.3x slower at 33,462 spheres); at 8 MiB only the largest arrays
(the contact pool, the particle fields from about 350,000 particles) are mapped, the
rebuild's smaller ones are reused from the heap: 162 MiB, the rebuild as fast within
the noise (bench/README.md, Memory). A user's MALLOC_MMAP_THRESHOLD_ is left as it
is; other C libraries are not touched.
"""
import ctypes
import ctypes.util
import os

M_MMAP_THRESHOLD = -3           # glibc malloc.h
THRESHOLD = 8 << 20             # bytes
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
