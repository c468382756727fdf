"""In/out degree counters and histograms of a growing digraph.

Every node has an in- and an out-degree counter; ``hist[d]`` counts the nodes
of degree d and is adjusted on every change, so the histograms and the
number of dangling nodes (out-degree 0) are always current.  Distinct edges
are told from repeated ones by an open-addressing hash set of the 64-bit keys
``u << 32 | v`` (linear probing, load <= 1/2), which is what lets the facade
pass only new edges on to the O(n^2) kernels.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

import numpy as np

from kernels._types cimport node_t

from abc_crawler.kernels._validation import as_count, as_edge_arrays

__all__ = ["Degrees"]

cdef uint64_t EMPTY = 0xFFFFFFFFFFFFFFFF     # no key: node ids are < 2^31
cdef uint64_t GOLDEN = 0x9E3779B97F4A7C15     # Fibonacci hashing multiplier


cdef struct DegreeTally:
    int64_t edges       # distinct edges u -> v, u != v
    int64_t duplicates  # repeated edges, ignored
    int64_t self_loops  # edges u -> u, ignored


cdef inline bint _set_add(uint64_t* table, int shift, uint64_t mask, uint64_t key) noexcept nogil:
    """Add key; return True if it was not in the set."""
    cdef uint64_t h = (key * GOLDEN) >> shift
    while table[h] != EMPTY:
        if table[h] == key:
            return False
        h = (h + 1) & mask
    table[h] = key
    return True


cdef void _rehash(const uint64_t[::1] old, uint64_t[::1] new, int shift) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint64_t mask = <uint64_t> new.shape[0] - 1
    for i in range(old.shape[0]):
        if old[i] != EMPTY:
            _set_add(&new[0], shift, mask, old[i])


cdef void _add_batch(const node_t[::1] src, const node_t[::1] dst,
                     node_t[::1] outd, node_t[::1] ind,
                     int64_t[::1] hout, int64_t[::1] hin,
                     uint64_t[::1] table, int shift, uint8_t* new,
                     DegreeTally* t) noexcept nogil:
    """Count the batch's edges; ``new[e]`` (if not NULL) = 1 for a new edge.

    The caller guarantees room in the table (load stays <= 1/2) and degree
    arrays/histograms of length > the largest possible degree.
    """
    cdef Py_ssize_t e
    cdef node_t u, v
    cdef uint64_t mask = <uint64_t> table.shape[0] - 1
    cdef uint64_t* tab = &table[0]
    cdef bint fresh
    for e in range(src.shape[0]):
        u = src[e]
        v = dst[e]
        fresh = False
        if u == v:
            t.self_loops += 1
        elif not _set_add(tab, shift, mask, ((<uint64_t> <uint32_t> u) << 32) | <uint32_t> v):
            t.duplicates += 1
        else:
            fresh = True
            t.edges += 1
            hout[outd[u]] -= 1
            outd[u] += 1
            hout[outd[u]] += 1
            hin[ind[v]] -= 1
            ind[v] += 1
            hin[ind[v]] += 1
        if new != NULL:
            new[e] = fresh


cdef class Degrees:
    """In/out degrees, their histograms and the dangling count of a growing digraph.

    Parameters
    ----------
    n : int, optional
        Nodes to start with (ids ``0 .. n-1``), all of degree 0.

    Attributes
    ----------
    n : int
        Nodes.
    edges : int
        Distinct edges u -> v with u != v.
    duplicates, self_loops : int
        Repeated edges and edges u -> u; both ignored (not in any degree).
    dangling : int
        Nodes with out-degree 0.  O(1).

    Notes
    -----
    Memory: 2 x 4 bytes per node for the degrees, 2 x 8 bytes per node for
    the histograms (capacity doubles as nodes arrive), and 16-32 bytes per
    distinct edge for the edge set.

    Time: O(1) expected per edge; the edge set is resized (O(edges)) before
    a batch that could push its load above 1/2, so the batch itself never
    allocates.

    Not thread-safe: use one instance from one thread at a time.

    Examples
    --------
    >>> import numpy as np
    >>> g = Degrees(3)
    >>> g.add_edges(np.array([0, 0, 0, 1], np.int32), np.array([1, 2, 1, 1], np.int32))
    2
    >>> g.out_hist().tolist(), g.in_hist().tolist(), g.dangling
    ([2, 0, 1], [1, 2], 2)
    >>> g.duplicates, g.self_loops
    (1, 1)
    """

    cdef Py_ssize_t _n
    cdef DegreeTally _t
    cdef node_t[::1] _out
    cdef node_t[::1] _in
    cdef int64_t[::1] _hout
    cdef int64_t[::1] _hin
    cdef uint64_t[::1] _table
    cdef int _shift

    def __init__(self, n=0):
        self._n = 0
        self._t = DegreeTally(0, 0, 0)
        self._out = np.zeros(0, dtype=np.int32)
        self._in = np.zeros(0, dtype=np.int32)
        self._hout = np.zeros(1, dtype=np.int64)
        self._hin = np.zeros(1, dtype=np.int64)
        self._table = np.full(16, EMPTY, dtype=np.uint64)
        self._shift = 64 - 4
        self.add_nodes(n)

    def add_nodes(self, k):
        """Add ``k`` nodes with the next ids, of in- and out-degree 0.

        Notes
        -----
        Amortized O(k): the per-node arrays double when full.
        """
        k = as_count(k)
        cdef Py_ssize_t need = self._n + k
        if need > self._out.shape[0]:
            cap = max(need, 2 * self._out.shape[0], 16)
            self._out = _grown(self._out, cap, np.int32)
            self._in = _grown(self._in, cap, np.int32)
            # a degree is at most n - 1 (distinct edges, no self-loops)
            self._hout = _grown(self._hout, cap + 1, np.int64)
            self._hin = _grown(self._hin, cap + 1, np.int64)
        self._hout[0] += k
        self._hin[0] += k
        self._n = need

    def _reserve(self, Py_ssize_t more):
        cdef Py_ssize_t size = self._table.shape[0]
        cdef int shift = self._shift
        while 2 * (self._t.edges + more) > size:
            size *= 2
            shift -= 1
        if size != self._table.shape[0]:
            table = np.full(size, EMPTY, dtype=np.uint64)
            _rehash(self._table, table, shift)
            self._table, self._shift = table, shift

    def add_edges(self, src, dst, *, new=None):
        """Count a batch of edges ``src[e] -> dst[e]``.

        The batch is validated first (nothing changes if it is rejected); the
        counting then runs without the GIL.

        Parameters
        ----------
        src, dst : array_like of int
            Node ids in ``[0, n)``.
        new : ndarray of uint8 or bool, shape (len(src),), optional
            Filled with 1 where the edge is new (not a duplicate, not a
            self-loop) and 0 elsewhere.

        Returns
        -------
        int
            New distinct edges.

        Raises
        ------
        ValueError
            Bad shapes, dtypes or ids (the message names the offending edge),
            or a bad ``new`` buffer.
        """
        s, d = as_edge_arrays(src, dst, self._n)
        cdef const node_t[::1] sv = s
        cdef const node_t[::1] dv = d
        cdef uint8_t[::1] nv
        cdef uint8_t* newp = NULL
        cdef Py_ssize_t before = self._t.edges
        if new is not None:
            if (not isinstance(new, np.ndarray) or new.dtype not in (np.uint8, np.bool_)
                    or new.shape != (sv.shape[0],) or not new.flags.c_contiguous):
                raise ValueError(f"new: expected a contiguous uint8/bool array of shape ({sv.shape[0]},)")
            nv = new.view(np.uint8)
            if sv.shape[0]:
                newp = &nv[0]
        if sv.shape[0] == 0:
            return 0
        self._reserve(sv.shape[0])
        with nogil:
            _add_batch(sv, dv, self._out, self._in, self._hout, self._hin,
                       self._table, self._shift, newp, &self._t)
        return self._t.edges - before

    @property
    def n(self):
        return self._n

    @property
    def edges(self):
        return self._t.edges

    @property
    def duplicates(self):
        return self._t.duplicates

    @property
    def self_loops(self):
        return self._t.self_loops

    @property
    def dangling(self):
        return int(self._hout[0]) if self._n else 0

    def out_degree(self):
        """Out-degree of every node (a copy, int32, shape (n,))."""
        return np.asarray(self._out[:self._n]).copy()

    def in_degree(self):
        """In-degree of every node (a copy, int32, shape (n,))."""
        return np.asarray(self._in[:self._n]).copy()

    def out_hist(self):
        """``h[d]`` = nodes of out-degree d, for d = 0 .. max out-degree (empty if n = 0)."""
        return _trimmed(self._hout, self._n)

    def in_hist(self):
        """``h[d]`` = nodes of in-degree d, for d = 0 .. max in-degree (empty if n = 0)."""
        return _trimmed(self._hin, self._n)

    @property
    def nbytes(self):
        return (self._out.nbytes + self._in.nbytes + self._hout.nbytes
                + self._hin.nbytes + self._table.nbytes)

    def __repr__(self):
        return f"Degrees(n={self.n}, edges={self.edges}, dangling={self.dangling})"


def _grown(a, Py_ssize_t size, dtype):
    out = np.zeros(size, dtype=dtype)
    out[:a.shape[0]] = a
    return out


def _trimmed(int64_t[::1] h, Py_ssize_t n):
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    nz = np.flatnonzero(np.asarray(h[:n + 1]))
    return np.asarray(h[:int(nz.max()) + 1]).copy()
