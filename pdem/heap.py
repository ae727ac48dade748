"""Freed arrays go back to the operating system (glibc's malloc; issue 14, memory).

glibc serves allocations above its mmap threshold (128 KiB at start) from their own
memory maps, returned to the system when freed, but it raises the threshold to the
size of each such block freed, up to 32 MiB. A rebuild frees and allocates arrays of
a few MiB every time, so after the first one they come from the heap, whose freed
blocks stay resident and fragment as the contact pool grows: the chute at 130,000
spheres peaked at 175 MiB against 143 with a fixed threshold. Fixing it at its initial
value (mallopt, which also stops the adjustment) keeps large arrays in their own maps;
the step allocates none per step, so it costs no time (bench/README.md, Memory). A
user's MALLOC_MMAP_THRESHOLD_ is left as it is; other C libraries are not touched.
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
