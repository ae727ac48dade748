# cython: language_level=3
"""The intersection of two convex polyhedra by clipping, and the quantities of seed
002's contact-volume ECC model ("The ECC theory and the general contact model", issue
17, docs/polyhedra.md): V = vol(A n B), and for each body the part of its surface
inside the other, with S = int dS (vector area, the body's outward normals) and G =
int x x dS. With w = k V: dV/dx_B = S_B and dV/dtheta_B = G_B - x_B x S_B, so F_B = -k S_B, M_B = -k (G_B - x_B x
S_B); S_A = -S_B and G_A = -G_B (a closed surface), and the force acts on the line
x_c = (S_B x G_B) / |S_B|^2 + lambda S_B (the seed's x_c = n x G_n / S_n + lambda n).
The engine's volume law (polyhedron_contacts.pyx) uses the same nogil core (clip_volume.pxd).

Each outward triangle of one body is clipped by the face planes of the other
(clip_volume.pxd).
"""
from clip_volume cimport CVSums, cv_zero, cv_planes, cv_surface
from libc.stdlib cimport malloc, free
from libc.math cimport INFINITY
from vecmath cimport V
import numpy as np


def contact_volume(va, ta, vb, tb):
    """Contact-volume quantities of the convex polyhedra A, B given by world vertices
    (n, 3) and outward triangles (t, 3): a dict with V, S_a, G_a, S_b, G_b (S, G of the
    part of each body's surface inside the other), centroid (of A n B; None without
    overlap) and point (the seed's x_c with lambda = 0; None without overlap)."""
    cdef double[:, ::1] a = np.ascontiguousarray(va, dtype=float)
    cdef double[:, ::1] b = np.ascontiguousarray(vb, dtype=float)
    cdef double[:, ::1] fa = np.ascontiguousarray(ta, dtype=float)
    cdef double[:, ::1] fb = np.ascontiguousarray(tb, dtype=float)
    cdef int na = fa.shape[0], nb = fb.shape[0], ok = -1
    cdef CVSums sa, sb
    cdef double* planes = <double*>malloc(4 * (na + nb) * sizeof(double))
    if planes == NULL:
        raise MemoryError()
    cv_zero(&sa)
    cv_zero(&sb)
    with nogil:
        cv_planes(&a[0, 0], &fa[0, 0], na, planes)
        cv_planes(&b[0, 0], &fb[0, 0], nb, planes + 4 * na)
        ok = cv_surface(&a[0, 0], a.shape[0], &fa[0, 0], na, planes + 4 * na, nb,
                        V(0.0, 0.0, 0.0), INFINITY, &sa)
        if ok == 0:
            ok = cv_surface(&b[0, 0], b.shape[0], &fb[0, 0], nb, planes, na,
                            V(0.0, 0.0, 0.0), INFINITY, &sb)
    free(planes)
    if ok != 0:
        raise ValueError("contact_volume: a clipped polygon exceeded the capacity")
    vol = sa.vol + sb.vol
    r = {"V": vol, "S_a": np.array([sa.S.x, sa.S.y, sa.S.z]),
         "G_a": np.array([sa.G.x, sa.G.y, sa.G.z]),
         "S_b": np.array([sb.S.x, sb.S.y, sb.S.z]),
         "G_b": np.array([sb.G.x, sb.G.y, sb.G.z]), "point": None, "centroid": None}
    S, G = r["S_b"], r["G_b"]
    if S @ S > 0.0:
        r["point"] = np.cross(S, G) / (S @ S)
    if vol > 0.0:
        r["centroid"] = np.array([sa.Q.x + sb.Q.x, sa.Q.y + sb.Q.y, sa.Q.z + sb.Q.z]) / vol
    return r
