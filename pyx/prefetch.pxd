# GCC's prefetch: start reading the cache line at `address` (never faults). Called inline
# where the address is known early; GCC drops a function whose only work is a prefetch
# as free of side effects, so the kernels call this directly.
cdef extern from *:
    void prefetch "__builtin_prefetch" (const void* address) noexcept nogil
