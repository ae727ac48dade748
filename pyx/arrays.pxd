# The arrays of the kernels called every step, checked without typed memoryviews: a
# memoryview argument costs ~140 ns per call (a buffer request and a memoryview object),
# ~20 of them are 3 us per call of the pair or plane kernel, as much as the kernel's
# work on a few hundred contacts; these checks cost ~10 ns each. A module that cimports
# this must call `cnp.import_array()` once at module level (numpy's C API table).
cimport numpy as cnp

cdef enum:
    F64 = cnp.NPY_DOUBLE
    I32 = cnp.NPY_INT32
    I64 = cnp.NPY_INT64
    I8 = cnp.NPY_INT8
    U8 = cnp.NPY_UINT8


cdef inline void* data(object a, str name, int typenum, int ndim, Py_ssize_t cols,
                       bint writable) except? NULL:
    """The data of ndarray `a`: of numpy type `typenum`, `ndim` dimensions, the second of
    length `cols` when ndim is 2 (any length: cols -1), C-contiguous, aligned, in native
    byte order, writable when asked (what a typed memoryview `T[::1]` / `T[:, ::1]`
    accepts); otherwise a ValueError naming the argument."""
    cdef cnp.ndarray arr
    if cnp.PyArray_Check(a):
        arr = <cnp.ndarray>a
        if (cnp.PyArray_TYPE(arr) == typenum and cnp.PyArray_NDIM(arr) == ndim
                and (ndim == 1 or cols < 0 or cnp.PyArray_DIM(arr, 1) == cols)
                and (cnp.PyArray_ISCARRAY(arr) if writable else cnp.PyArray_ISCARRAY_RO(arr))):
            return cnp.PyArray_DATA(arr)
    raise ValueError("%s: expected a C-contiguous%s %s array of shape %s, got %s" % (
        name, " writable" if writable else "", cnp.PyArray_DescrFromType(typenum),
        "(n,)" if ndim == 1 else "(n, %s)" % (cols if cols >= 0 else "m"), describe(a)))


cdef inline object describe(object a):
    if not cnp.PyArray_Check(a):
        return type(a).__name__
    return "%s %s%s%s" % (a.dtype, a.shape, "" if a.flags.c_contiguous else ", not contiguous",
                          "" if a.flags.writeable else ", read-only")


cdef inline Py_ssize_t rows(object a) noexcept:
    """The first dimension of an ndarray that `data` accepted."""
    return cnp.PyArray_DIM(<cnp.ndarray>a, 0)


cdef inline Py_ssize_t width(object a) noexcept:
    """The second dimension of a 2-dimensional ndarray that `data` accepted."""
    return cnp.PyArray_DIM(<cnp.ndarray>a, 1)
