"""Incremental strongly connected components (SPAWC SCC Algorithm 2, Fig. 13).

The transitive closure T of the digraph is kept as a bit matrix of 64-bit
words (row u = the set of nodes u reaches, u itself included).  On insert
(u, v):

1. if T[u] already holds v, nothing changes (u already reached v, hence all
   v reaches): the edge is skipped;
2. ``T[u] |= T[v]``;
3. every k that reaches u gets ``T[k] |= T[u]``; if u also reaches k, the
   components of u and k are merged.

Step 3 touches only the rows that change: row k changes iff k reaches u but
not v.  Then every node on a path from k to u also misses v (else k would
reach v), so these rows are found by a breadth-first search from u over
in-edges that stops at rows already holding v -- instead of the paper's
scan of column u over all n rows.  And a row reached from q can only gain
bits q gained (q's set is part of its own), so it ORs only the words q
changed: a crawled page's first in-link costs one word per ancestor, not
n/64.  (The search needs in-edge lists; on dense graphs the kernel falls
back to the scan, ORing only the words u changed -- ``search=`` in
:class:`SCC`.)

Components live in a union-find (union by size, path halving) with a counter,
so the number of SCCs is O(1) to read.  Every new cycle runs through the new
edge, hence through u: after the update the component of u is exactly
{k : k reaches u and u reaches k}.  Those k either changed (and are merged
in step 3), or already reached v, and then are in v's old component, which
is merged with u's when v reaches u.
"""
cimport cython
from libc.stdint cimport int64_t, uint32_t, uint64_t

import numpy as np

from kernels._types cimport (KERNEL_NO_MEMORY, KERNEL_OK, LIST_BUDGET_FLOOR, WORD_BITS,
                             WORD_MASK, WORD_SHIFT, grown_capacity, node_t, word_t)
from kernels._rowstore cimport (RowStore, rowstore_add_rows, rowstore_free,
                                rowstore_init, rowstore_set_row_bytes)
from kernels._adjacency cimport (AdjLists, adj_add_nodes, adj_append, adj_free, adj_init,
                                 adj_nbytes)

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define ABC_PREFETCH(p) __builtin_prefetch((const void *)(p))
    #else
    #define ABC_PREFETCH(p) ((void)0)
    #endif
    """
    void ABC_PREFETCH(const void* p) noexcept nogil

from abc_crawler.kernels._validation import as_count, as_edge_arrays

__all__ = ["SCC"]

cdef enum:
    PREFETCH_AHEAD = 8


cdef struct SccTally:
    int64_t inserted    # edges that extended the closure
    int64_t redundant   # edges whose target was already reachable (duplicates among them)
    int64_t self_loops  # edges u -> u, ignored
    int64_t components  # current number of SCCs (singletons included)
    int64_t rows_changed  # rows ORed in step 3 so far
    uint32_t epoch      # search stamp: node k is visited iff stamp[k] == epoch


cdef struct SccWork:
    node_t* parent      # union-find
    node_t* size
    node_t* queue       # [n]: the breadth-first search of step 3
    Py_ssize_t* q_off   # [n]: queue[h]'s changed words are words[q_off[h] : q_off[h] + q_len[h]]
    node_t* q_len       # [n]
    node_t* words       # [nwords]: indices of the words each row in the search changed
    Py_ssize_t nwords
    uint32_t* stamp     # [n]
    AdjLists* inn       # in-neighbours of every node (when use_lists)
    int use_lists       # 1: search over in-edges; 0: scan column u (the paper's loop)
    int may_drop        # "auto": drop the lists once they exceed list_budget bytes
    Py_ssize_t list_budget


cdef inline node_t _find(node_t* parent, node_t x) noexcept nogil:
    while parent[x] != x:
        parent[x] = parent[parent[x]]       # path halving
        x = parent[x]
    return x


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


cdef int _insert(word_t** rows, Py_ssize_t n, node_t u, node_t v,
                 SccWork* w, SccTally* t) noexcept nogil:
    """Insert edge u -> v (0 <= u, v < n).  Returns a KERNEL_* code.

    O(1) if v is already reachable from u; otherwise O(n/64 + sum over the
    rows k that change of (indeg(k) + words changed in the row k was
    reached from)); O(n^2/64 + m) in the worst case.
    """
    if u == v:
        t.self_loops += 1
        return KERNEL_OK
    cdef word_t* ru = rows[u]
    cdef word_t* rv = rows[v]
    cdef word_t* rk
    if _has(ru, v):
        t.redundant += 1
        return KERNEL_OK
    if w.use_lists and w.may_drop and adj_nbytes(w.inn) > w.list_budget:
        adj_free(w.inn)                     # dense graph: back to the column scan
        w.use_lists = 0
    if w.use_lists and adj_append(w.inn, v, u) != 0:
        return KERNEL_NO_MEMORY
    t.inserted += 1
    cdef Py_ssize_t nw = (n + WORD_BITS - 1) >> WORD_SHIFT, x, c, e, deg, head, tail
    cdef Py_ssize_t used = 0, start, off, plen
    cdef Py_ssize_t vw = v >> WORD_SHIFT
    cdef word_t vb = (<word_t> 1) << (v & WORD_MASK)
    cdef word_t old, new
    cdef node_t q, k
    cdef node_t* preds
    cdef node_t* plist
    cdef node_t* words = w.words
    cdef node_t* queue = w.queue
    cdef uint32_t* stamp = w.stamp
    cdef uint32_t epoch
    cdef int64_t changed = 1
    for x in range(nw):                     # Fig. 13, lines 11-12
        old = ru[x]
        new = old | rv[x]
        if new != old:
            ru[x] = new
            words[used] = <node_t> x        # nw <= nwords: always room
            used += 1
    if _has(rv, u) and _union(w.parent, w.size, u, v):      # line 15
        t.components -= 1
    cdef Py_ssize_t uw = u >> WORD_SHIFT
    cdef word_t ub = (<word_t> 1) << (u & WORD_MASK)
    if not w.use_lists:
        # Lines 19-30 as in the paper, a scan of column u.  Any row k that
        # reaches u already holds T[u]'s old bits, so it can only gain bits
        # in the words u changed.
        for k in range(n):
            if k + PREFETCH_AHEAD < n:
                rk = rows[k + PREFETCH_AHEAD]
                ABC_PREFETCH(rk + uw)
                ABC_PREFETCH(rk + vw)
            rk = rows[k]
            if k == u or not (rk[uw] & ub) or (rk[vw] & vb):
                continue                    # not an ancestor, or reached v already
            for c in range(used):
                x = words[c]
                rk[x] |= ru[x]
            changed += 1
            if _has(ru, k) and _union(w.parent, w.size, u, k):
                t.components -= 1
        t.rows_changed += changed
        return KERNEL_OK
    # Lines 19-30, on the rows that change only (see the module docstring).
    # A row k reached from q gains only bits that q gained (T[q] is a subset
    # of T[k]), so it ORs only the words q changed, and records its own.
    t.epoch += 1
    if t.epoch == 0:                        # wrapped: forget every old stamp
        for x in range(n):
            stamp[x] = 0
        t.epoch = 1
    epoch = t.epoch
    stamp[u] = epoch
    queue[0] = u
    w.q_off[0] = 0
    w.q_len[0] = <node_t> used
    head, tail = 0, 1
    while head < tail:
        q = queue[head]
        off = w.q_off[head]
        plen = w.q_len[head]
        head += 1
        plist = words + off
        preds = w.inn.nbrs[q]
        deg = w.inn.deg[q]
        for e in range(deg):
            if e + PREFETCH_AHEAD < deg:
                ABC_PREFETCH(rows[preds[e + PREFETCH_AHEAD]] + vw)
            k = preds[e]
            if stamp[k] == epoch:
                continue
            stamp[k] = epoch
            rk = rows[k]
            if rk[vw] & vb:
                continue                    # k reached v already: unchanged
            start = used
            for c in range(plen):
                x = plist[c]
                old = rk[x]
                new = old | ru[x]
                if new != old:
                    rk[x] = new
                    if used < w.nwords:
                        words[used] = <node_t> x
                    used += 1
            changed += 1
            if _has(ru, k) and _union(w.parent, w.size, u, k):
                t.components -= 1
            queue[tail] = k
            if used <= w.nwords:
                w.q_off[tail] = start
                w.q_len[tail] = <node_t> (used - start)
            else:
                used = start                # no room: reuse q's list (a superset)
                w.q_off[tail] = off
                w.q_len[tail] = <node_t> plen
            tail += 1
    t.rows_changed += changed
    return KERNEL_OK


cdef Py_ssize_t _insert_batch(word_t** rows, Py_ssize_t n,
                              const node_t[::1] src, const node_t[::1] dst,
                              SccWork* w, SccTally* t, int* code) noexcept nogil:
    """Insert every edge of the batch; return -1, or the index of the edge
    whose insertion failed (its code in ``code[0]``)."""
    cdef Py_ssize_t e
    for e in range(src.shape[0]):
        code[0] = _insert(rows, n, src[e], dst[e], w, t)
        if code[0] != KERNEL_OK:
            return e
    return -1


cdef class SCC:
    """Strongly connected components of a growing digraph, updated per edge.

    Parameters
    ----------
    n : int, optional
        Nodes to start with (ids ``0 .. n-1``), each its own component.
    max_nodes : int or None, optional
        Refuse to grow past this many nodes.  Default None: no limit.
    search : {"auto", "lists", "scan"}, optional
        How step 3 finds the rows that reach u: a search over in-edge lists
        ("lists"), the paper's scan of column u ("scan"), or lists until they
        exceed 1/16 of the bit matrix plus 1 MiB, then the scan for good
        ("auto", the default).  The answers are the same.

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
        Bytes allocated for the closure bit matrix.

    Notes
    -----
    Memory: ``n`` rows of ``ceil(cap / 64)`` 64-bit words, cap <= 1.0625 n + 64
    (same growth policy as :class:`APSD`), i.e. about 1.0625 n^2 / 8 bytes;
    plus about 40 bytes per node (union-find, search buffers) and, with
    lists, 16 bytes per node and 4-8 bytes per closure-extending edge
    (capped by "auto" at 1/16 of the matrix + 1 MiB).

    Time: an insertion that extends the closure is, with lists,
    O(n/64 + sum over the rows k that change of (indeg(k) + w_k)), w_k <=
    n/64 the words changed in the row k was reached from; with the scan,
    O(n + rows changed * words u changed).  O(n^2/64 + m) in the worst case
    (the paper's bound is O(n^2)).  A redundant edge is O(1).  ``count`` is
    O(1); ``labels()`` is O(n alpha(n)).

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
    cdef node_t[::1] _queue
    cdef Py_ssize_t[::1] _q_off
    cdef node_t[::1] _q_len
    cdef node_t[::1] _words
    cdef uint32_t[::1] _stamp
    cdef AdjLists _inn
    cdef int _use_lists
    cdef int _may_drop
    cdef object _search

    def __cinit__(self):
        rowstore_init(&self._store)
        adj_init(&self._inn)

    def __init__(self, n=0, *, max_nodes=None, search="auto"):
        if search not in ("auto", "lists", "scan"):
            raise ValueError(f"search must be 'auto', 'lists' or 'scan', got {search!r}")
        self._search = search
        self._use_lists = search != "scan"
        self._may_drop = search == "auto"
        self._limit = -1 if max_nodes is None else as_count(max_nodes, "max_nodes")
        self._cap = 0
        self._t = SccTally(0, 0, 0, 0, 0, 0)
        self._parent = np.zeros(0, dtype=np.int32)
        self._size = np.zeros(0, dtype=np.int32)
        self._queue = np.zeros(0, dtype=np.int32)
        self._q_off = np.zeros(0, dtype=np.intp)
        self._q_len = np.zeros(0, dtype=np.int32)
        self._words = np.zeros(0, dtype=np.int32)
        self._stamp = np.zeros(0, dtype=np.uint32)
        self.add_nodes(n)

    def __dealloc__(self):
        rowstore_free(&self._store)
        adj_free(&self._inn)

    def add_nodes(self, k):
        """Add ``k`` nodes with the next ids, each a component of its own.

        Raises
        ------
        ValueError
            ``k`` negative, or the instance would exceed ``max_nodes``.
        MemoryError
            Allocation failed (the instance is unchanged).

        Notes
        -----
        Amortized O(k * n / 64) (new rows; rows lengthen when n grows by 1/16).
        """
        k = as_count(k)
        cdef Py_ssize_t n = self._store.n_rows
        cdef Py_ssize_t need = n + k, new_cap, r
        cdef word_t* row
        if k == 0:
            return
        if self._limit >= 0 and need > self._limit:
            raise ValueError(f"cannot add {k} nodes to {n}: max_nodes is {self._limit}")
        if need > self._cap:
            new_cap = grown_capacity(self._cap, need, self._limit)
            new_cap = (new_cap + WORD_BITS - 1) & ~(<Py_ssize_t> WORD_MASK)
            if rowstore_set_row_bytes(&self._store, (new_cap >> WORD_SHIFT) * sizeof(word_t), 0) != 0:
                raise MemoryError(f"SCC: cannot grow rows to {new_cap} columns")
            self._cap = new_cap
            # room for the changed-word lists of the search: 4 rows' worth
            # (more is handled by reusing a parent's list)
            self._words = np.zeros(4 * (new_cap >> WORD_SHIFT) + 64, dtype=np.int32)
        if self._parent.shape[0] < need:
            size = max(need, 2 * self._parent.shape[0])
            parent = np.arange(size, dtype=np.int32)
            parent[:n] = self._parent[:n]
            sizes = np.ones(size, dtype=np.int32)
            sizes[:n] = self._size[:n]
            stamp = np.zeros(size, dtype=np.uint32)
            stamp[:n] = self._stamp[:n]
            self._parent, self._size, self._stamp = parent, sizes, stamp
            self._queue = np.zeros(size, dtype=np.int32)
            self._q_off = np.zeros(size, dtype=np.intp)
            self._q_len = np.zeros(size, dtype=np.int32)
        if self._use_lists and adj_add_nodes(&self._inn, k) != 0:
            raise MemoryError(f"SCC: cannot allocate in-edge lists for {need} nodes")
        if rowstore_add_rows(&self._store, k, 0) != 0:
            if self._use_lists:
                self._inn.n = n   # keep the two in step (the extra lists are empty)
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
        """
        s, d = as_edge_arrays(src, dst, self._store.n_rows)
        cdef const node_t[::1] sv = s
        cdef const node_t[::1] dv = d
        cdef Py_ssize_t before = self._t.inserted, bad
        cdef Py_ssize_t n = self._store.n_rows
        cdef int code = KERNEL_OK
        cdef SccWork work
        if sv.shape[0] == 0:
            return 0
        work.parent = &self._parent[0]
        work.size = &self._size[0]
        work.queue = &self._queue[0]
        work.q_off = &self._q_off[0]
        work.q_len = &self._q_len[0]
        work.words = &self._words[0]
        work.nwords = self._words.shape[0]
        work.stamp = &self._stamp[0]
        work.inn = &self._inn
        work.use_lists = self._use_lists
        work.may_drop = self._may_drop
        work.list_budget = self.nbytes // 16 + LIST_BUDGET_FLOOR
        with nogil:
            bad = _insert_batch(<word_t**> self._store.rows, n, sv, dv, &work, &self._t, &code)
        self._use_lists = work.use_lists
        if bad >= 0:
            raise MemoryError(f"SCC: out of memory at edge {bad}: ({sv[bad]}, {dv[bad]}); "
                              f"the edges before it are inserted")
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
    def search(self):
        """How step 3 finds the rows to update now: "lists" or "scan"."""
        return "lists" if self._use_lists else "scan"

    @property
    def list_bytes(self):
        """Bytes held by the in-edge lists (0 once dropped, or with search="scan")."""
        return adj_nbytes(&self._inn) if self._use_lists else 0

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
        return self._store.n_rows * self._store.row_bytes

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
        cdef Py_ssize_t n = self._store.n_rows, x
        out = np.empty(n, dtype=np.int32)
        cdef node_t[::1] o = out
        cdef node_t[::1] first = np.full(max(n, 1), -1, dtype=np.int32)
        cdef node_t nxt = 0, r
        cdef node_t* p = &self._parent[0] if self._parent.shape[0] else NULL
        for x in range(n):
            r = _find(p, <node_t> x)
            if first[r] < 0:
                first[r] = nxt
                nxt += 1
            o[x] = first[r]
        return out

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
        bits = np.unpackbits(words.astype("<u8", copy=False).view(np.uint8).reshape(n, nw * 8), axis=1, bitorder="little")
        return bits[:, :n].astype(bool)

    def __repr__(self):
        return f"SCC(n={self.n}, count={self.count}, search={self.search!r}, inserted={self.inserted})"
