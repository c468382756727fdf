"""Incremental strongly connected components (SPAWC SCC Algorithm 2, Fig. 13).

The transitive closure T of the digraph is kept as a bit matrix of 64-bit
words (row u = the set of nodes u reaches, u itself included).  On insert
(u, v):

1. if T[u] already holds v, nothing changes (u already reached v, hence all
   v reaches): the edge is skipped in O(1);
2. ``T[u] |= T[v]``, noting which words of T[u] changed;
3. every k that reaches u gets ``T[k] |= T[u]``; if u also reaches k, the
   components of u and k are merged (the paper's loop over all rows, a scan
   of column u).

Step 3 does only the work that can change something: a row k that reaches
u already holds all of u's old bits, so it can gain bits only in the words
step 2 changed; and if k already reaches v it gains nothing at all.  The
scan reads two words per row, a few rows ahead of use (prefetch), so it
runs at memory speed.  (A search over in-edge lists, visiting only the rows
that change, was measured too: it was slower on every GraphBench graph,
e.g. 12.7 s against 4.4 s on the crawl-order graph with n = 20000.)

Components live in a union-find (union by size, path halving) with a
counter, so the number of SCCs is O(1) to read.  Every new cycle runs
through the new edge, hence through u: after the update the component of u
is exactly {k : k reaches u and u reaches k}.  Those k either changed (and
are merged in step 3), or already reached v, and then are in v's old
component, which is merged with u's when v reaches u.
"""
cimport cython
from libc.stdint cimport int64_t, uint64_t

import numpy as np

from kernels._types cimport (ABC_PREFETCH, PREFETCH_AHEAD, WORD_BITS, WORD_MASK,
                             WORD_SHIFT, node_t, word_t)
from kernels._rowstore cimport (RowStore, rowstore_add_rows, rowstore_free,
                                rowstore_init, rowstore_nbytes, rowstore_set_row_bytes)
from kernels._unionfind cimport uf_find as _find, uf_labels

from abc_crawler.kernels._validation import as_count, as_edge_arrays

__all__ = ["SCC"]


cdef struct SccTally:
    int64_t inserted    # edges that extended the closure
    int64_t redundant   # edges whose target was already reachable (duplicates among them)
    int64_t self_loops  # edges u -> u, ignored
    int64_t components  # current number of SCCs (singletons included)
    int64_t rows_changed  # rows that gained bits so far


cdef inline bint _union(node_t* parent, node_t* size, node_t a, node_t b) noexcept nogil:
    a = _find(parent, a)
    b = _find(parent, b)
    if a == b:
        return False
    if size[a] < size[b]:
        a, b = b, a
    parent[b] = a
    size[a] += size[b]
    return True


cdef inline bint _has(word_t* row, Py_ssize_t x) noexcept nogil:
    return (row[x >> WORD_SHIFT] >> (x & WORD_MASK)) & 1


cdef void _insert(word_t** rows, Py_ssize_t n, node_t u, node_t v, node_t* parent,
                  node_t* size, node_t* words, SccTally* t) noexcept nogil:
    """Insert edge u -> v (0 <= u, v < n).

    O(1) if v is already reachable from u; otherwise O(n + c * w), c = rows
    that change, w = words of T[u] that changed (<= n/64).
    """
    if u == v:
        t.self_loops += 1
        return
    cdef word_t* ru = rows[u]
    cdef word_t* rv = rows[v]
    cdef word_t* rk
    if _has(ru, v):
        t.redundant += 1
        return
    t.inserted += 1
    cdef Py_ssize_t nw = (n + WORD_BITS - 1) >> WORD_SHIFT, x, c, k, nc = 0
    cdef Py_ssize_t uw = u >> WORD_SHIFT, vw = v >> WORD_SHIFT
    cdef word_t ub = (<word_t> 1) << (u & WORD_MASK)
    cdef word_t vb = (<word_t> 1) << (v & WORD_MASK)
    cdef word_t old, new
    cdef int64_t changed = 1
    for x in range(nw):                     # Fig. 13, lines 11-12
        old = ru[x]
        new = old | rv[x]
        if new != old:
            ru[x] = new
            words[nc] = <node_t> x
            nc += 1
    if _has(rv, u) and _union(parent, size, u, v):          # line 15
        t.components -= 1
    for k in range(n):                      # lines 19-30
        if k + PREFETCH_AHEAD < n:
            rk = rows[k + PREFETCH_AHEAD]
            ABC_PREFETCH(rk + uw)
            ABC_PREFETCH(rk + vw)
        rk = rows[k]
        if k == u or not (rk[uw] & ub) or (rk[vw] & vb):
            continue                        # not an ancestor, or reached v already
        for c in range(nc):
            x = words[c]
            rk[x] |= ru[x]
        changed += 1
        if _has(ru, k) and _union(parent, size, u, <node_t> k):
            t.components -= 1
    t.rows_changed += changed


cdef void _insert_batch(word_t** rows, Py_ssize_t n,
                        const node_t[::1] src, const node_t[::1] dst,
                        node_t* parent, node_t* size, node_t* words, SccTally* t) noexcept nogil:
    cdef Py_ssize_t e
    for e in range(src.shape[0]):
        _insert(rows, n, src[e], dst[e], parent, size, words, t)


cdef class SCC:
    """Strongly connected components of a growing digraph, updated per edge.

    Parameters
    ----------
    n : int, optional
        Nodes to start with (ids ``0 .. n-1``), each its own component.
    max_nodes : int or None, optional
        Refuse to grow past this many nodes.  Default None: no limit.

    Attributes
    ----------
    n : int
        Nodes.
    count : int
        Number of strongly connected components, singletons included.  O(1).
    inserted : int
        Edges that extended the transitive closure.
    redundant : int
        Edges u -> v with v already reachable from u (duplicate edges are
        among them); they cannot change the closure or the components and
        are skipped in O(1).
    self_loops : int
        Edges u -> u, ignored.
    rows_changed : int
        Closure rows that gained bits so far.
    nbytes : int
        Bytes allocated for the closure bit matrix (n rows of ``capacity``
        bits, plus the unused tail of the last slab, < 64 KiB).

    Notes
    -----
    Memory: ``n`` rows of ``cap / 64`` 64-bit words, ``cap = 64 * ceil(n / 64)``
    (the columns grow one word at a time, exactly as needed), i.e. at most
    n^2 / 8 + 8 n bytes, in slabs of <= 64 KiB (``_rowstore.pxd``; no
    huge pages, see below); plus 8-16 bytes per node (union-find) and 4
    bytes per 64 columns (changed-word buffer).  Growing the columns copies
    the rows slab by slab into longer ones, so the peak while growing is the
    new matrix plus two slabs (128 KiB), never a second matrix: SCC stays
    within issue 4's n^2/8 bytes up to O(n) + 128 KiB at every n, not only
    at the ``max_nodes`` cap.  The price is a copy of the matrix (n^2/8
    bytes) whenever n passes a multiple of 64, at most once per
    :meth:`add_nodes` call: about n^3/1536 bytes copied over a growth from
    0 to n (5 GB, a second or two, for n = 20000), and the scan of step 3
    runs on 4 KiB pages (measured 4.8 s with 2 MiB pages and 6.5 s without
    for the crawl-order graph of n = 20000; ``docs/benchmarks/kernels.md``).

    Time: an insertion that extends the closure is O(n + c * w), c = rows
    that gain bits, w <= n/64 = words of T[u] that changed; O(n^2/64) in the
    worst case (the paper's bound is O(n^2)).  A redundant edge is O(1).
    ``count`` is O(1); ``labels()`` is O(n alpha(n)).

    Not thread-safe: use one instance from one thread at a time.

    Examples
    --------
    >>> import numpy as np
    >>> c = SCC(4)
    >>> c.add_edges(np.array([0, 1, 2], np.int32), np.array([1, 0, 3], np.int32))
    3
    >>> c.count, c.labels().tolist()
    (3, [0, 0, 1, 2])
    """

    cdef RowStore _store
    cdef Py_ssize_t _cap            # bit columns allocated per row (multiple of 64)
    cdef Py_ssize_t _limit
    cdef SccTally _t
    cdef node_t[::1] _parent
    cdef node_t[::1] _size
    cdef node_t[::1] _words

    def __cinit__(self):
        rowstore_init(&self._store)

    def __init__(self, n=0, *, max_nodes=None):
        self._limit = -1 if max_nodes is None else as_count(max_nodes, "max_nodes")
        self._cap = 0
        self._t = SccTally(0, 0, 0, 0, 0)
        self._parent = np.zeros(0, dtype=np.int32)
        self._size = np.zeros(0, dtype=np.int32)
        self._words = np.zeros(1, dtype=np.int32)
        self.add_nodes(n)

    def __dealloc__(self):
        rowstore_free(&self._store)

    cdef _check_usable(self):
        if self._store.broken:
            raise MemoryError("SCC ran out of memory while growing and is unusable")

    def add_nodes(self, k):
        """Add ``k`` nodes with the next ids, each a component of its own.

        Raises
        ------
        ValueError
            ``k`` negative, or the instance would exceed ``max_nodes``.
        MemoryError
            Allocation failed.  The instance is unchanged, unless the failure
            came while lengthening the rows; then it is unusable.

        Notes
        -----
        O(k * n / 64) for the new rows; when n passes a multiple of 64, also
        O(n^2 / 64) to lengthen the rows by the words needed.
        """
        k = as_count(k)
        cdef Py_ssize_t n = self._store.n_rows
        cdef Py_ssize_t need = n + k, new_cap, r
        cdef word_t* row
        if k == 0:
            return
        self._check_usable()
        if self._limit >= 0 and need > self._limit:
            raise ValueError(f"cannot add {k} nodes to {n}: max_nodes is {self._limit}")
        if need > self._cap:
            # Exactly the words the rows need (issue 4's bound: n^2/8 bytes),
            # in small slabs, so that the copy holds at most two 64 KiB slabs
            # besides the matrix (class notes).
            new_cap = (need + WORD_BITS - 1) & ~(<Py_ssize_t> WORD_MASK)
            if rowstore_set_row_bytes(&self._store, (new_cap >> WORD_SHIFT) * sizeof(word_t), 0,
                                      0) != 0:
                raise MemoryError(f"SCC: cannot grow rows to {new_cap} columns"
                                  + ("; the instance is unusable" if self._store.broken else ""))
            self._words = np.zeros(new_cap >> WORD_SHIFT, dtype=np.int32)
            self._cap = new_cap
        if self._parent.shape[0] < need:
            size = max(need, 2 * self._parent.shape[0])
            parent = np.arange(size, dtype=np.int32)
            parent[:n] = self._parent[:n]
            sizes = np.ones(size, dtype=np.int32)
            sizes[:n] = self._size[:n]
            self._parent, self._size = parent, sizes
        if rowstore_add_rows(&self._store, k, 0) != 0:
            raise MemoryError(f"SCC: cannot allocate {k} rows of {self._cap} columns")
        for r in range(n, need):
            row = <word_t*> self._store.rows[r]
            row[r >> WORD_SHIFT] |= (<word_t> 1) << (r & WORD_MASK)
        self._t.components += k

    def add_edges(self, src, dst):
        """Insert a batch of edges ``src[e] -> dst[e]`` in order.

        The batch is validated first (nothing changes if it is rejected); the
        insertions then run without the GIL.

        Returns
        -------
        int
            Edges that extended the transitive closure.

        Raises
        ------
        ValueError
            Bad shapes, dtypes or ids; the message names the offending edge.

        Notes
        -----
        O(1) per redundant edge, O(n + c * w) per other edge (class notes).
        """
        self._check_usable()
        s, d = as_edge_arrays(src, dst, self._store.n_rows)
        cdef const node_t[::1] sv = s
        cdef const node_t[::1] dv = d
        cdef Py_ssize_t before = self._t.inserted
        cdef Py_ssize_t n = self._store.n_rows
        if sv.shape[0] == 0:
            return 0
        cdef node_t* parent = &self._parent[0]
        cdef node_t* size = &self._size[0]
        cdef node_t* words = &self._words[0]
        with nogil:
            _insert_batch(<word_t**> self._store.rows, n, sv, dv, parent, size, words, &self._t)
        return self._t.inserted - before

    def add_edge(self, u, v):
        """Insert one edge ``u -> v``; return True if it extended the closure."""
        return self.add_edges(np.array([u], dtype=np.int64), np.array([v], dtype=np.int64)) == 1

    @property
    def n(self):
        return self._store.n_rows

    @property
    def capacity(self):
        return self._cap

    @property
    def max_nodes(self):
        return None if self._limit < 0 else self._limit

    @property
    def count(self):
        return self._t.components

    @property
    def inserted(self):
        return self._t.inserted

    @property
    def redundant(self):
        return self._t.redundant

    @property
    def self_loops(self):
        return self._t.self_loops

    @property
    def rows_changed(self):
        """Closure rows that gained bits so far (the work of step 3)."""
        return self._t.rows_changed

    @property
    def nbytes(self):
        return rowstore_nbytes(&self._store)

    def reaches(self, u, v):
        """True if there is a path u -> v (u reaches itself).  O(1)."""
        cdef Py_ssize_t a = u, b = v, n = self._store.n_rows
        if not (0 <= a < n and 0 <= b < n):
            raise ValueError(f"({u}, {v}): node id out of range [0, {n})")
        return bool(_has(<word_t*> self._store.rows[a], b))

    def labels(self):
        """Component label of every node, numbered 0, 1, ... in order of
        each component's smallest node id.

        Returns
        -------
        ndarray of int32, shape (n,)

        Notes
        -----
        O(n alpha(n)).
        """
        cdef Py_ssize_t n = self._store.n_rows
        out = np.empty(max(n, 1), dtype=np.int32)
        cdef node_t[::1] o = out
        cdef node_t[::1] first = np.full(max(n, 1), -1, dtype=np.int32)
        if n:
            uf_labels(&self._parent[0], n, &first[0], &o[0])
        return out[:n]

    def closure(self):
        """A copy of the transitive closure as an n x n bool matrix (T[u, u] is
        True).  O(n^2): for tests and inspection."""
        cdef Py_ssize_t n = self._store.n_rows, r
        nw = (n + WORD_BITS - 1) // WORD_BITS
        words = np.empty((n, nw), dtype=np.uint64)
        cdef uint64_t[:, ::1] wv = words
        cdef Py_ssize_t w
        for r in range(n):
            for w in range(nw):
                wv[r, w] = (<word_t*> self._store.rows[r])[w]
        bits = np.unpackbits(words.astype("<u8", copy=False).view(np.uint8).reshape(n, nw * 8),
                             axis=1, bitorder="little")
        return bits[:, :n].astype(bool)

    def __repr__(self):
        return f"SCC(n={self.n}, count={self.count}, inserted={self.inserted})"
