# cython: language_level=3
"""Shared C types, sentinels, return codes and growth policy of the graph kernels.

The kernels ``cimport`` this file as ``kernels._types``: Cython resolves cimports
from the project root at build time, where this folder is named ``kernels``
(it is installed as ``abc_crawler.kernels``).  Nothing here exists at run time;
the file only holds declarations and inline functions.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint64_t

# Node ids, in the edge arrays and inside the kernels.  The wrappers convert
# every edge batch to this type (NumPy int32) before the GIL is released.
ctypedef int32_t node_t

# A distance-matrix cell.  uint8 is the production type (n^2 bytes); uint16
# exists for graphs with shortest paths of 255 hops or more (benchmarks such as
# Ausiello's sequence with n >= 762).  The largest value of the type means
# "unreachable"; finite distances are 0 .. max-1.
ctypedef fused dist_t:
    uint8_t
    uint16_t

cdef enum:
    UNREACHABLE_U8 = 255
    UNREACHABLE_U16 = 65535

# One block of the transitive-closure bit matrix (SPAWC Fig. 14: 64-bit
# blocks were the fastest).
ctypedef uint64_t word_t
cdef enum:
    WORD_BITS = 64
    WORD_SHIFT = 6
    WORD_MASK = 63

# Ask the CPU to start loading the cache line at p: the kernels read rows
# all over an O(n^2) matrix and issue this a few rows ahead of use, so that
# the misses overlap instead of queueing.
cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define ABC_PREFETCH(p) __builtin_prefetch((const void *)(p))
    #else
    #define ABC_PREFETCH(p) ((void)0)
    #endif
    """
    void ABC_PREFETCH(const void* p) noexcept nogil

cdef enum:
    PREFETCH_AHEAD = 8          # rows ahead
    PREFETCH_STREAM = 16        # candidates ahead in APSD's search (across in-lists)
    PREFETCH_MATRIX = 1 << 22   # ... for distance matrices of 4 MiB or more

# Return codes of the nogil kernels; the Python layer turns them into
# exceptions that name the edge being inserted.
cdef enum:
    KERNEL_OK = 0
    KERNEL_DIST_OVERFLOW = 1    # a reachable pair's distance does not fit dist_t
    KERNEL_NO_MEMORY = 2


cdef inline Py_ssize_t grown_capacity(Py_ssize_t cap, Py_ssize_t need,
                                      Py_ssize_t limit) noexcept nogil:
    """Column capacity (in nodes) of the O(n^2) matrices after growth.

    Grows by 1/16 (at least 64 columns) rather than doubling, so that the
    matrices never hold more than about 1.0625 n^2 cells (+64 n for small n);
    the total copying stays geometric (about 8.5 N^2 cell moves over a
    growth from 0 to N), i.e. amortized O(n) per added node.  ``limit`` < 0
    means no limit; otherwise the result is at most ``limit`` (and at least
    ``need``, which the caller has checked against ``limit``).
    """
    cdef Py_ssize_t step = cap >> 4
    if step < 64:
        step = 64
    cdef Py_ssize_t new_cap = cap + step
    if new_cap < need:
        new_cap = need
    if limit >= 0 and new_cap > limit:
        new_cap = limit
    return new_cap


# In-edge lists (``_adjacency.pxd``) speed up APSD's search but cost 4-8
# bytes per edge, which on dense graphs outgrows the matrix.  In the default
# "auto" mode APSD drops them, for good, once they would exceed 1/16 of its
# matrix plus this floor, and falls back to the paper's column scan.  (The
# floor keeps small graphs, whose matrices are tiny, on lists.)
cdef enum:
    LIST_BUDGET_FLOOR = 1 << 20

cdef enum:
    SEARCH_AUTO = 0
    SEARCH_LISTS = 1
    SEARCH_SCAN = 2
