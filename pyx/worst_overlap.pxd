# The largest overlap ratio of a batch of contact rows and its row (the max_overlap
# check of Simulation), for kernels that loop over rows in a prange: each thread keeps
# its own maximum (a NaN sticks: it is the worst), then the largest over the threads.
# Also the statistics of an iterative contact solve (ellipsoids, polyhedra), in row order.
from cython.parallel cimport threadid
from cython.view cimport array as cvarray


cdef inline double[:, ::1] worst_init(int nt):
    """Per thread (largest overlap ratio, its row): (0, -1) before any row."""
    cdef double[:, ::1] w = cvarray(shape=(max(1, nt), 2), itemsize=sizeof(double),
                                    format="d")
    cdef Py_ssize_t t
    for t in range(w.shape[0]):
        w[t, 0] = 0.0
        w[t, 1] = -1.0
    return w


cdef inline void keep_worst(double[:, ::1] worst, double ratio, Py_ssize_t k) noexcept nogil:
    """This thread's largest overlap ratio so far and its row (inside prange)."""
    cdef int t = threadid()
    if not (ratio <= worst[t, 0]) and worst[t, 0] == worst[t, 0]:
        worst[t, 0] = ratio
        worst[t, 1] = k


cdef inline int insert_deepest(int* order, int npos, const double* U, int k) noexcept nogil:
    """Row k into order[0 .. npos), kept by decreasing overlap U; after the rows of equal
    U (rows come in row order: a stable order). Returns npos + 1."""
    cdef int t = npos
    while t > 0 and U[order[t - 1]] < U[k]:
        order[t] = order[t - 1]
        t -= 1
    order[t] = k
    return npos + 1


cdef inline tuple pick_worst(double[:, ::1] worst):
    """(the largest ratio over the threads, its row or -1); a NaN wins and stays, as in
    keep_worst."""
    cdef int t = 0, k
    for k in range(1, worst.shape[0]):
        if not (worst[k, 0] <= worst[t, 0]) and worst[t, 0] == worst[t, 0]:
            t = k
    return worst[t, 0], int(worst[t, 1])


cdef inline tuple solve_stats(const signed char[::1] status, const int[::1] iters,
                              Py_ssize_t m, signed char failed, signed char bad,
                              signed char solved):
    """(first row whose solve failed or had bad input, or -1; rows solved; their total
    and largest iteration counts)."""
    cdef long first = -1, n = 0, total = 0, most = 0
    cdef Py_ssize_t k
    for k in range(m):
        if status[k] == failed or status[k] == bad:
            if first < 0:
                first = k
        elif status[k] == solved:
            n += 1
            total += iters[k]
            if iters[k] > most:
                most = iters[k]
    return first, n, total, most
