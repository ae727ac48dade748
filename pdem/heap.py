"""glibc's malloc: large freed arrays go back to the operating system, the heap's top stays
(issue 14, memory and rebuild).

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
the noise (bench/README.md, Memory).

The heap's own top is kept, though: glibc gives back the free memory at the top of the
heap beyond its trim threshold (128 KiB), so each rebuild faulted its arrays in afresh
(zeroed pages) after the last one had freed them: 10-11 against 8.2-8.8 ms per rebuild
of the 33,462-sphere chute with a trim threshold of 1 GiB. The price is a higher peak
where a large mapped array (the contact pool) is made while the kept top is free: 158.7
against 149.0 MiB at 130,438 spheres, 795 against 729 marginal bytes per particle
(bench/README.md, "Whole cost of a rebuild"); MALLOC_TRIM_THRESHOLD_=131072 trades it
back. A user's MALLOC_MMAP_THRESHOLD_ or MALLOC_TRIM_THRESHOLD_ is left as it is;
other C libraries are not touched.
"""
import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD = -1           # glibc malloc.h
M_MMAP_THRESHOLD = -3
SETTINGS = ((M_MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_", 8 << 20),      # bytes
            (M_TRIM_THRESHOLD, "MALLOC_TRIM_THRESHOLD_", 1 << 30))
_done = []


def tune_malloc():
    """Fix glibc's mmap and trim thresholds, once per process (each unless the user's
    environment sets it); False where this does not apply (another C library)."""
    if _done:
        return _done[0]
    ok = True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version               # glibc only: AttributeError elsewhere
        for param, env, value in SETTINGS:
            if env not in os.environ:
                ok = bool(libc.mallopt(param, value)) and ok
    except (OSError, AttributeError):
        ok = False
    _done.append(ok)
    return ok
