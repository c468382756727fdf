# cython: language_level=3
"""In-neighbour lists of a growing digraph, for APSD's reverse search.

``AdjLists`` holds, for every node v, the nodes u of the edges u -> v
inserted so far (each edge once: APSD appends only edges that are new to
it).  Lists are ``PyMem_Raw*`` blocks that double when full, so an
append is amortized O(1) and may run without the GIL.  Memory: 16 bytes per
node plus 4-8 bytes per edge.
"""
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc, PyMem_RawRealloc
from libc.string cimport memset

from kernels._types cimport node_t


cdef struct AdjLists:
    node_t** nbrs       # nbrs[v][0 .. deg[v]-1]
    node_t* deg
    node_t* cap
    Py_ssize_t n        # nodes in use
    Py_ssize_t table_cap
    Py_ssize_t slots    # sum of cap[v]: list entries allocated


cdef inline void adj_init(AdjLists* a) noexcept nogil:
    a.nbrs = NULL
    a.deg = NULL
    a.cap = NULL
    a.n = 0
    a.table_cap = 0
    a.slots = 0


cdef inline void adj_free(AdjLists* a) noexcept nogil:
    cdef Py_ssize_t v
    if a.nbrs != NULL:
        for v in range(a.n):
            PyMem_RawFree(a.nbrs[v])
    PyMem_RawFree(a.nbrs)
    PyMem_RawFree(a.deg)
    PyMem_RawFree(a.cap)
    adj_init(a)


cdef inline Py_ssize_t adj_nbytes(AdjLists* a) noexcept nogil:
    """Bytes held by the lists and their headers."""
    return a.slots * <Py_ssize_t> sizeof(node_t) + a.table_cap * <Py_ssize_t> (sizeof(node_t*) + 2 * sizeof(node_t))


cdef inline int adj_add_nodes(AdjLists* a, Py_ssize_t k) noexcept nogil:
    """Append k nodes with empty lists.  Returns 0, or -1 when out of memory
    (then no node is added)."""
    cdef Py_ssize_t new_cap
    cdef void* p
    if a.n + k > a.table_cap:
        new_cap = 2 * a.table_cap
        if new_cap < a.n + k:
            new_cap = a.n + k
        # Each realloc keeps the old block on failure; table_cap is raised
        # only when all three succeeded, so a failure leaves a usable state.
        p = PyMem_RawRealloc(a.nbrs, <size_t> new_cap * sizeof(node_t*))
        if p == NULL:
            return -1
        a.nbrs = <node_t**> p
        p = PyMem_RawRealloc(a.deg, <size_t> new_cap * sizeof(node_t))
        if p == NULL:
            return -1
        a.deg = <node_t*> p
        p = PyMem_RawRealloc(a.cap, <size_t> new_cap * sizeof(node_t))
        if p == NULL:
            return -1
        a.cap = <node_t*> p
        a.table_cap = new_cap
    memset(a.nbrs + a.n, 0, <size_t> k * sizeof(node_t*))
    memset(a.deg + a.n, 0, <size_t> k * sizeof(node_t))
    memset(a.cap + a.n, 0, <size_t> k * sizeof(node_t))
    a.n += k
    return 0


cdef inline int adj_append(AdjLists* a, node_t v, node_t u) noexcept nogil:
    """Record the edge u -> v in v's list.  Returns 0, or -1 when out of memory
    (then nothing is recorded)."""
    cdef node_t c = a.cap[v]
    cdef node_t* p
    if a.deg[v] == c:
        c = 4 if c == 0 else 2 * c
        p = <node_t*> PyMem_RawRealloc(a.nbrs[v], <size_t> c * sizeof(node_t))
        if p == NULL:
            return -1
        a.nbrs[v] = p
        a.slots += c - a.cap[v]
        a.cap[v] = c
    a.nbrs[v][a.deg[v]] = u
    a.deg[v] += 1
    return 0
