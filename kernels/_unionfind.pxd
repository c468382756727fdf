# cython: language_level=3
"""Union-find helpers shared by the SCC kernels (``_scc.pyx``, ``_wholescc.pyx``).

Nothing here exists at run time; the kernels ``cimport`` these inline
functions.
"""
from kernels._types cimport node_t


cdef inline node_t uf_find(node_t* parent, node_t x) noexcept nogil:
    """The root of x, halving the path on the way (amortized O(alpha(n)))."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


cdef inline void uf_labels(node_t* parent, Py_ssize_t n, node_t* first, node_t* out) noexcept nogil:
    """out[x] = label of x's set, numbered 0, 1, ... in order of each set's smallest
    member; ``first`` is n entries of scratch, all -1 on entry."""
    cdef Py_ssize_t x
    cdef node_t nxt = 0, r
    for x in range(n):
        r = uf_find(parent, <node_t> x)
        if first[r] < 0:
            first[r] = nxt
            nxt += 1
        out[x] = first[r]
