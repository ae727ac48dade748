# Union-find over row indices of one contact group (seed 004's linked sets; pyx/facets.pyx,
# pyx/polygon_segments.pyx): parent[k] = k for a root; the smaller index becomes the root,
# so the sets do not depend on the order of the joins.

cdef inline int uf_root(int* parent, int k) noexcept nogil:
    while parent[k] != k:
        parent[k] = parent[parent[k]]
        k = parent[k]
    return k


cdef inline void uf_join(int* parent, int a, int b) noexcept nogil:
    a = uf_root(parent, a)
    b = uf_root(parent, b)
    if a < b:
        parent[b] = a
    elif b < a:
        parent[a] = b
