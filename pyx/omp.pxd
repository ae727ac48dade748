# OpenMP shim: compiles with or without -fopenmp. Kernels use cython.parallel.prange
# (serial without OpenMP) and these two queries; one Python function
# (pdem.threads.thread_count) decides how many threads every kernel uses.
cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int pdem_omp_max_threads(void) { return omp_get_max_threads(); }
    static int pdem_omp_available(void) { return 1; }
    #else
    static int pdem_omp_max_threads(void) { return 1; }
    static int pdem_omp_available(void) { return 0; }
    #endif
    """
    int pdem_omp_max_threads() noexcept nogil
    int pdem_omp_available() noexcept nogil
