"""Strongly connected components of the whole crawled graph, exact, live.

:class:`WholeSCC` keeps the SCCs of a growing digraph with no cap on its
size: adjacency lists both ways (about 11 bytes per edge), a union-find of
components with a member ring per component, and a histogram of component
sizes, so the number of SCCs, the largest one and the size distribution are
read in O(1) (the distribution in O(n) at most).  Memory is O(n + m), not
the O(n^2) of :class:`SCC` (SPAWC's bit-matrix closure), which is kept for
the first ``--stats-max-pages`` pages.

Insertion of u -> v (components cu != cv) -- a cycle appears iff cv reaches
cu, and then the new component is M = {C : cv ->* C ->* cu}.  The kernel
runs two searches over *components* at once, one edge at a time each,
always advancing the one that has done less work (the two-way search of
Haeupler et al.'s incremental cycle detection):

* F, forward from cv over out-edges, never expanding cu;
* B, backward from cu over in-edges, never expanding cv.

Neither needs to expand the skipped component: if C is in M and C != cv,
every path C ->* cu avoids cv (a path through cv would put C in cv's
component), and symmetrically for F.  The first search to finish has seen
every component it can reach and every edge between them; M is then read
off its recorded edges by one more search (F: backwards from cu; B:
forwards from cv), and the components of M are merged.  The work of one
insertion is about twice the smaller side's, which is what makes crawl
order cheap: a new page's in-links come first (F from the new page ends at
once: it has no out-links yet), and its out-links into the giant component
end B as soon as B reaches the giant component, which it never expands.

Each batch gets a work budget of ``budget * (n + m)`` edge visits; a batch
that exceeds it finishes with an O(n + m) recomputation (Tarjan's
algorithm, iterative, no recursion), so a batch never costs more than a
constant times a recomputation, whatever the insertion order.
``mode="recompute"`` recomputes after every batch (the baseline it is
measured against, ``docs/benchmarks/kernels.md``); ``mode="incremental"``
never falls back.
"""
cimport cython
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc, PyMem_RawRealloc
from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.string cimport memset

import numpy as np

from kernels._types cimport KERNEL_NO_MEMORY, KERNEL_OK, node_t
from kernels._adjacency cimport (AdjLists, adj_add_nodes, adj_append, adj_free, adj_init,
                                 adj_nbytes)

from abc_crawler.kernels._validation import as_count, as_edge_arrays

__all__ = ["WholeSCC", "scc_of_csr"]

cdef enum:
    OVER_BUDGET = 3     # return code: the batch's work budget ran out


# --------------------------------------------------------------- int buffers
cdef struct Buf:            # a growable node_t array usable without the GIL
    node_t* a
    Py_ssize_t n
    Py_ssize_t cap


cdef inline int buf_reserve(Buf* b, Py_ssize_t need) noexcept nogil:
    cdef Py_ssize_t cap
    cdef node_t* p
    if need <= b.cap:
        return 0
    cap = 2 * b.cap if b.cap else 64
    if cap < need:
        cap = need
    p = <node_t*> PyMem_RawRealloc(b.a, <size_t> cap * sizeof(node_t))
    if p == NULL:
        return -1
    b.a, b.cap = p, cap
    return 0


cdef inline int buf_push(Buf* b, node_t x) noexcept nogil:
    if b.n == b.cap and buf_reserve(b, b.n + 1) != 0:
        return -1
    b.a[b.n] = x
    b.n += 1
    return 0


cdef inline void buf_free(Buf* b) noexcept nogil:
    PyMem_RawFree(b.a)
    b.a, b.n, b.cap = NULL, 0, 0


# ------------------------------------------------------------- components
cdef struct Comps:
    node_t* parent      # union-find; a root is its component's representative
    node_t* size        # at roots
    node_t* ring        # ring[x]: next member of x's component (a circular list)
    int64_t* hist       # hist[s]: components of size s
    int64_t count
    int64_t largest


cdef inline node_t _find(node_t* parent, node_t x) noexcept nogil:
    while parent[x] != x:
        parent[x] = parent[parent[x]]       # path halving
        x = parent[x]
    return x


cdef inline node_t _union(Comps* c, node_t a, node_t b) noexcept nogil:
    """Merge the components of a and b; returns the new representative."""
    cdef node_t t
    a = _find(c.parent, a)
    b = _find(c.parent, b)
    if a == b:
        return a
    if c.size[a] < c.size[b]:
        a, b = b, a
    c.hist[c.size[a]] -= 1
    c.hist[c.size[b]] -= 1
    c.parent[b] = a
    c.size[a] += c.size[b]
    c.hist[c.size[a]] += 1
    if c.size[a] > c.largest:
        c.largest = c.size[a]
    t = c.ring[a]                           # splice the two rings
    c.ring[a] = c.ring[b]
    c.ring[b] = t
    c.count -= 1
    return a


# ------------------------------------------------------------ the searches
cdef struct Side:
    AdjLists* adj       # out-lists for F, in-lists for B
    uint32_t* mark      # mark[rep] == epoch: component found by this side
    node_t* lidx        # lidx[rep]: its position in queue (valid when marked)
    Buf queue           # components found, in order (local index = position)
    Buf pairs           # recorded (p, q) pairs: M is read by walking q -> p
    Py_ssize_t head     # next queue entry to expand
    node_t comp         # component being expanded, -1 between components
    node_t member       # member of comp whose list is being read
    node_t ei           # position in that list
    node_t skip         # the component this side never expands


cdef inline int _side_start(Side* s, node_t start, node_t skip, uint32_t epoch) noexcept nogil:
    s.queue.n = 0
    s.pairs.n = 0
    s.head = 0
    s.comp = -1
    s.skip = skip
    s.mark[start] = epoch
    s.lidx[start] = 0
    return buf_push(&s.queue, start)


cdef inline int _side_step(Side* s, node_t* parent, node_t* ring, uint32_t epoch) noexcept nogil:
    """One unit of work: read one list entry, or move to the next member.

    Returns 0 (work done), 1 (the side is complete: nothing left to
    expand) or -1 (out of memory).
    """
    cdef node_t c, x, y, cy
    while True:
        if s.comp < 0:
            if s.head == s.queue.n:
                return 1
            c = s.queue.a[s.head]
            s.head += 1
            if c == s.skip:
                continue
            s.comp, s.member, s.ei = c, c, 0
        x = s.member
        if s.ei < s.adj.deg[x]:
            y = s.adj.nbrs[x][s.ei]
            s.ei += 1
            cy = _find(parent, y)
            if cy == s.comp:
                return 0
            if s.mark[cy] != epoch:
                s.mark[cy] = epoch
                s.lidx[cy] = <node_t> s.queue.n
                if buf_push(&s.queue, cy) != 0:
                    return -1
            if buf_push(&s.pairs, s.lidx[s.comp]) != 0 or buf_push(&s.pairs, s.lidx[cy]) != 0:
                return -1
            return 0
        s.member = ring[x]
        s.ei = 0
        if s.member == s.comp:
            s.comp = -1
        return 0


cdef struct Scratch:        # buffers of _collect, reused between insertions
    Buf head
    Buf order
    Buf seen
    Buf todo


cdef int _collect(Side* s, node_t start, Scratch* w) noexcept nogil:
    """Local indices reachable from ``start`` walking the recorded pairs
    q -> p, into ``w.todo`` (start included).  O(found + pairs)."""
    cdef Py_ssize_t L = s.queue.n, E = s.pairs.n // 2, e, k, h
    cdef node_t q, p, x
    if (buf_reserve(&w.head, L + 1) != 0 or buf_reserve(&w.order, E) != 0
            or buf_reserve(&w.seen, L) != 0 or buf_reserve(&w.todo, L) != 0):
        return -1
    memset(w.head.a, 0, <size_t> (L + 1) * sizeof(node_t))
    memset(w.seen.a, 0, <size_t> L * sizeof(node_t))
    for e in range(E):                      # counting sort of the pairs by q
        w.head.a[s.pairs.a[2 * e + 1] + 1] += 1
    for k in range(L):
        w.head.a[k + 1] += w.head.a[k]
    for e in range(E):
        q = s.pairs.a[2 * e + 1]
        w.order.a[w.head.a[q]] = s.pairs.a[2 * e]
        w.head.a[q] += 1
    # head[q] is now the end of q's run; its start is head[q - 1] (0 for q = 0)
    w.todo.n = 0
    w.todo.a[w.todo.n] = start
    w.todo.n += 1
    w.seen.a[start] = 1
    h = 0
    while h < w.todo.n:
        x = w.todo.a[h]
        h += 1
        k = w.head.a[x - 1] if x > 0 else 0
        while k < w.head.a[x]:
            p = w.order.a[k]
            k += 1
            if not w.seen.a[p]:
                w.seen.a[p] = 1
                w.todo.a[w.todo.n] = p
                w.todo.n += 1
    return 0


cdef struct Whole:
    AdjLists out
    AdjLists inn
    Comps c
    Side f
    Side b
    Scratch w
    uint32_t epoch
    Py_ssize_t n
    int64_t m           # edges stored (self-loops excluded, repeats included)
    int64_t searches    # insertions that needed a search (cu != cv)
    int64_t merges      # insertions that merged components
    int64_t work        # list entries read by the searches, in all
    int64_t recomputes


cdef int _insert(Whole* g, node_t u, node_t v, int64_t* budget_left) noexcept nogil:
    """Insert u -> v (u != v, both < n) and update the components.

    Returns KERNEL_OK, KERNEL_NO_MEMORY (the edge is then not stored; the
    components are as before it) or OVER_BUDGET (the edge is stored but the
    components may miss its cycle: the caller recomputes them).
    """
    cdef node_t cu, cv, start
    cdef int rf = 0, rb = 0
    cdef int64_t fw = 0, bw = 0, spent
    cdef Side* won
    cdef Py_ssize_t k
    if adj_append(&g.out, u, v) != 0:
        return KERNEL_NO_MEMORY
    if adj_append(&g.inn, v, u) != 0:
        g.out.deg[u] -= 1
        return KERNEL_NO_MEMORY
    g.m += 1
    cu = _find(g.c.parent, u)
    cv = _find(g.c.parent, v)
    if cu == cv:
        return KERNEL_OK
    g.searches += 1
    g.epoch += 1
    if g.epoch == 0:                        # wrapped: clear the marks once in 2^32 searches
        memset(g.f.mark, 0, <size_t> g.n * sizeof(uint32_t))
        memset(g.b.mark, 0, <size_t> g.n * sizeof(uint32_t))
        g.epoch = 1
    if _side_start(&g.f, cv, cu, g.epoch) != 0 or _side_start(&g.b, cu, cv, g.epoch) != 0:
        return OVER_BUDGET                  # (out of memory: let the recomputation decide)
    while True:
        if fw <= bw:
            rf = _side_step(&g.f, g.c.parent, g.c.ring, g.epoch)
            if rf != 0:
                break
            fw += 1
        else:
            rb = _side_step(&g.b, g.c.parent, g.c.ring, g.epoch)
            if rb != 0:
                break
            bw += 1
        if fw + bw > budget_left[0]:
            g.work += fw + bw
            budget_left[0] = 0
            return OVER_BUDGET
    spent = fw + bw
    g.work += spent
    budget_left[0] -= spent
    if fw <= bw:                            # F finished (or failed)
        if rf < 0:
            return OVER_BUDGET
        won, start = &g.f, cu
    else:
        if rb < 0:
            return OVER_BUDGET
        won, start = &g.b, cv
    if won.mark[start] != g.epoch:
        return KERNEL_OK                    # no path back: no new cycle
    if _collect(won, won.lidx[start], &g.w) != 0:
        return OVER_BUDGET
    budget_left[0] -= won.pairs.n // 2
    g.merges += 1
    for k in range(g.w.todo.n):
        _union(&g.c, cu, won.queue.a[g.w.todo.a[k]])
    return KERNEL_OK


cdef int _tarjan(node_t** nbrs, node_t* deg, Py_ssize_t n, node_t* comp_of, node_t* ring,
                 int64_t* n_comps) noexcept nogil:
    """Tarjan's SCC algorithm with an explicit stack (no recursion).

    ``comp_of[x]`` receives the root of x's component (the member the
    algorithm meets first), ``ring`` a circular list of each component's
    members.  O(n + m) time; 17 bytes per node of scratch.  Returns
    KERNEL_OK or KERNEL_NO_MEMORY.
    """
    cdef node_t* index = <node_t*> PyMem_RawMalloc(<size_t> (n if n else 1) * sizeof(node_t))
    cdef node_t* low = <node_t*> PyMem_RawMalloc(<size_t> (n if n else 1) * sizeof(node_t))
    cdef node_t* it = <node_t*> PyMem_RawMalloc(<size_t> (n if n else 1) * sizeof(node_t))
    cdef node_t* stack = <node_t*> PyMem_RawMalloc(<size_t> (n if n else 1) * sizeof(node_t))
    cdef node_t* calls = <node_t*> PyMem_RawMalloc(<size_t> (n if n else 1) * sizeof(node_t))
    cdef uint8_t* on = <uint8_t*> PyMem_RawMalloc(<size_t> (n if n else 1))
    cdef Py_ssize_t s, sp = 0, cs = 0
    cdef node_t counter = 0, v, w, x, first, prev, p
    cdef int code = KERNEL_OK
    if index == NULL or low == NULL or it == NULL or stack == NULL or calls == NULL or on == NULL:
        code = KERNEL_NO_MEMORY
    else:
        n_comps[0] = 0
        for s in range(n):
            index[s] = -1
            on[s] = 0
        for s in range(n):
            if index[s] >= 0:
                continue
            index[s] = low[s] = counter
            counter += 1
            it[s] = 0
            stack[sp] = <node_t> s
            sp += 1
            on[s] = 1
            calls[0] = <node_t> s
            cs = 1
            while cs:
                v = calls[cs - 1]
                if it[v] < deg[v]:
                    w = nbrs[v][it[v]]
                    it[v] += 1
                    if index[w] < 0:
                        index[w] = low[w] = counter
                        counter += 1
                        it[w] = 0
                        stack[sp] = w
                        sp += 1
                        on[w] = 1
                        calls[cs] = w
                        cs += 1
                    elif on[w] and index[w] < low[v]:
                        low[v] = index[w]
                    continue
                cs -= 1
                if low[v] == index[v]:      # v is the root of a component: pop it
                    first = -1
                    prev = -1
                    while True:
                        sp -= 1
                        x = stack[sp]
                        on[x] = 0
                        comp_of[x] = v
                        if first < 0:
                            first = x
                        else:
                            ring[prev] = x
                        prev = x
                        if x == v:
                            break
                    ring[prev] = first
                    n_comps[0] += 1
                if cs:
                    p = calls[cs - 1]
                    if low[v] < low[p]:
                        low[p] = low[v]
    PyMem_RawFree(index)
    PyMem_RawFree(low)
    PyMem_RawFree(it)
    PyMem_RawFree(stack)
    PyMem_RawFree(calls)
    PyMem_RawFree(on)
    return code


cdef int _recompute(Whole* g) noexcept nogil:
    """Components from scratch over the out-lists; the union-find is rebuilt."""
    cdef Py_ssize_t x
    cdef node_t r
    cdef int64_t k
    if _tarjan(g.out.nbrs, g.out.deg, g.n, g.c.parent, g.c.ring, &k) != KERNEL_OK:
        return KERNEL_NO_MEMORY
    g.recomputes += 1
    g.c.count = k
    for x in range(g.n):
        g.c.size[x] = 0
    for x in range(g.n):
        g.c.size[g.c.parent[x]] += 1
    memset(g.c.hist, 0, <size_t> (g.n + 1) * sizeof(int64_t))
    g.c.largest = 0
    for x in range(g.n):
        if g.c.parent[x] == x:
            g.c.hist[g.c.size[x]] += 1
            if g.c.size[x] > g.c.largest:
                g.c.largest = g.c.size[x]
    return KERNEL_OK


cdef int _insert_batch(Whole* g, const node_t[::1] src, const node_t[::1] dst, int mode,
                       int64_t budget, int64_t* stored) noexcept nogil:
    """Insert a batch; mode 0 = auto (budget, then recompute), 1 = incremental
    only, 2 = recompute once at the end."""
    cdef Py_ssize_t e, k = src.shape[0]
    cdef int code
    cdef bint fallback = mode == 2
    cdef int64_t left = budget if mode == 0 else (<int64_t> 1) << 62
    for e in range(k):
        if src[e] == dst[e]:
            continue
        if fallback:
            if adj_append(&g.out, src[e], dst[e]) != 0:
                return KERNEL_NO_MEMORY
            if adj_append(&g.inn, dst[e], src[e]) != 0:
                g.out.deg[src[e]] -= 1
                return KERNEL_NO_MEMORY
            g.m += 1
            stored[0] += 1
            continue
        code = _insert(g, src[e], dst[e], &left)
        if code == KERNEL_NO_MEMORY:
            return code
        stored[0] += 1
        if code == OVER_BUDGET:
            fallback = True
    if fallback:
        return _recompute(g)
    return KERNEL_OK


cdef class WholeSCC:
    """Strongly connected components of a growing digraph of any size, exact.

    Parameters
    ----------
    n : int, optional
        Nodes to start with (ids ``0 .. n-1``), each its own component.
    mode : {"auto", "incremental", "recompute"}, optional
        How a batch updates the components: ``"auto"`` (default) searches
        per edge (module notes) within a work budget of ``budget * (n + m)``
        per batch and recomputes (Tarjan, O(n + m)) if the budget runs out;
        ``"incremental"`` never recomputes; ``"recompute"`` appends the
        batch and recomputes once.  The components are the same in every
        mode.
    budget : float, optional
        Work budget of a batch in ``"auto"`` mode, as a multiple of n + m
        (default 1.0).

    Attributes
    ----------
    n, m : int
        Nodes; edges stored (self-loops are dropped; repeated edges are
        stored again, harmlessly: :class:`GraphStats` passes only new ones).
    count : int
        Number of strongly connected components (singletons included).  O(1).
    largest : int
        Nodes in the largest component (0 when n = 0).  O(1).
    searches, merges, work, recomputes : int
        Insertions that needed a search (ends in different components);
        those that merged components; list entries read by the searches;
        recomputations.

    Notes
    -----
    Memory: 4 bytes per edge in each direction (lists double when full:
    about 11 bytes per edge in all) and about 68 bytes per node; a
    recomputation allocates 21 bytes per node for the time it runs.

    Time per batch: at most about ``budget * (n + m)`` list entries read,
    plus O(n + m) for a recomputation.  Per insertion: O(alpha(n)) when
    both ends are already in one component, else about twice the work of
    the smaller of the two searches.

    Not thread-safe: use one instance from one thread at a time.

    Examples
    --------
    >>> import numpy as np
    >>> w = WholeSCC(5)
    >>> w.add_edges(np.array([0, 1, 2, 3], np.int32), np.array([1, 2, 0, 4], np.int32))
    4
    >>> w.count, w.largest, w.labels().tolist()
    (3, 3, [0, 0, 0, 1, 2])
    >>> [tuple(x) for x in w.size_counts().tolist()]
    [(1, 2), (3, 1)]
    """

    cdef Whole _g
    cdef int _mode
    cdef double _budget
    cdef node_t[::1] _parent
    cdef node_t[::1] _size
    cdef node_t[::1] _ring
    cdef int64_t[::1] _hist
    cdef uint32_t[::1] _fmark
    cdef uint32_t[::1] _bmark
    cdef node_t[::1] _flidx
    cdef node_t[::1] _blidx
    cdef Py_ssize_t _cap

    def __cinit__(self):
        memset(&self._g, 0, sizeof(Whole))
        adj_init(&self._g.out)
        adj_init(&self._g.inn)

    def __init__(self, n=0, *, mode="auto", budget=1.0):
        modes = {"auto": 0, "incremental": 1, "recompute": 2}
        if mode not in modes:
            raise ValueError(f"mode must be one of {', '.join(modes)}, got {mode!r}")
        budget = float(budget)
        if not budget > 0:
            raise ValueError(f"budget must be > 0, got {budget!r}")
        self._mode, self._budget = modes[mode], budget
        self._g.f.adj = &self._g.out
        self._g.b.adj = &self._g.inn
        self._cap = 0
        self._resize(1)
        self.add_nodes(n)

    def __dealloc__(self):
        adj_free(&self._g.out)
        adj_free(&self._g.inn)
        buf_free(&self._g.f.queue)
        buf_free(&self._g.f.pairs)
        buf_free(&self._g.b.queue)
        buf_free(&self._g.b.pairs)
        buf_free(&self._g.w.head)
        buf_free(&self._g.w.order)
        buf_free(&self._g.w.seen)
        buf_free(&self._g.w.todo)

    cdef _resize(self, Py_ssize_t need):
        """Per-node arrays of at least ``need`` entries (GIL held)."""
        cdef Py_ssize_t n = self._g.n
        if need <= self._cap:
            return
        cap = max(need, 2 * self._cap, 16)
        self._parent = _grown(self._parent if self._cap else None, n, cap, np.int32)
        self._size = _grown(self._size if self._cap else None, n, cap, np.int32)
        self._ring = _grown(self._ring if self._cap else None, n, cap, np.int32)
        self._hist = _grown(self._hist if self._cap else None, n + 1, cap + 1, np.int64)
        self._fmark = _grown(self._fmark if self._cap else None, n, cap, np.uint32)
        self._bmark = _grown(self._bmark if self._cap else None, n, cap, np.uint32)
        self._flidx = _grown(self._flidx if self._cap else None, n, cap, np.int32)
        self._blidx = _grown(self._blidx if self._cap else None, n, cap, np.int32)
        self._cap = cap
        self._g.c.parent = &self._parent[0]
        self._g.c.size = &self._size[0]
        self._g.c.ring = &self._ring[0]
        self._g.c.hist = &self._hist[0]
        self._g.f.mark = &self._fmark[0]
        self._g.b.mark = &self._bmark[0]
        self._g.f.lidx = &self._flidx[0]
        self._g.b.lidx = &self._blidx[0]

    def add_nodes(self, k):
        """Add ``k`` nodes with the next ids, each a component of its own.

        Raises
        ------
        ValueError
            ``k`` negative.
        MemoryError
            Allocation failed (the instance is unchanged).

        Notes
        -----
        Amortized O(k).
        """
        k = as_count(k)
        cdef Py_ssize_t n = self._g.n, x
        if k == 0:
            return
        self._resize(n + k)
        if adj_add_nodes(&self._g.out, k) != 0:
            raise MemoryError(f"WholeSCC: cannot add {k} nodes")
        if adj_add_nodes(&self._g.inn, k) != 0:
            self._g.out.n -= k
            raise MemoryError(f"WholeSCC: cannot add {k} nodes")
        for x in range(n, n + k):
            self._parent[x] = <node_t> x
            self._size[x] = 1
            self._ring[x] = <node_t> x
        self._hist[1] += k
        self._g.c.count += k
        if self._g.c.largest < 1:
            self._g.c.largest = 1
        self._g.n = n + k

    def add_edges(self, src, dst):
        """Insert a batch of edges ``src[e] -> dst[e]`` and update the components.

        The batch is validated first (nothing changes if it is rejected);
        the insertions run without the GIL.

        Returns
        -------
        int
            Edges stored (the batch without its self-loops).

        Raises
        ------
        ValueError
            Bad shapes, dtypes or ids; the message names the offending edge.
        MemoryError
            A list could not grow.  The edges before the failing one are in
            the graph; the components are recomputed so that they are exact
            for those edges.
        """
        s, d = as_edge_arrays(src, dst, self._g.n)
        cdef const node_t[::1] sv = s
        cdef const node_t[::1] dv = d
        cdef int64_t stored = 0
        cdef int64_t budget = <int64_t> (self._budget * (self._g.n + self._g.m + sv.shape[0]))
        cdef int code
        if sv.shape[0] == 0:
            return 0
        with nogil:
            code = _insert_batch(&self._g, sv, dv, self._mode, budget, &stored)
            if code == KERNEL_NO_MEMORY:
                _recompute(&self._g)
        if code == KERNEL_NO_MEMORY:
            raise MemoryError(f"WholeSCC: out of memory after {stored} edges of the batch "
                              f"(n = {self._g.n}, m = {self._g.m})")
        return stored

    def recompute(self):
        """Recompute the components from scratch (Tarjan, O(n + m))."""
        cdef int code
        with nogil:
            code = _recompute(&self._g)
        if code != KERNEL_OK:
            raise MemoryError("WholeSCC: no memory for the recomputation's scratch")

    @property
    def n(self):
        return self._g.n

    @property
    def m(self):
        return self._g.m

    @property
    def count(self):
        return self._g.c.count

    @property
    def largest(self):
        return self._g.c.largest

    @property
    def searches(self):
        return self._g.searches

    @property
    def merges(self):
        return self._g.merges

    @property
    def work(self):
        return self._g.work

    @property
    def recomputes(self):
        return self._g.recomputes

    @property
    def mode(self):
        return ("auto", "incremental", "recompute")[self._mode]

    @property
    def nbytes(self):
        """Bytes held: adjacency lists, per-node arrays and search buffers."""
        cdef Py_ssize_t bufs = (self._g.f.queue.cap + self._g.f.pairs.cap + self._g.b.queue.cap
                                + self._g.b.pairs.cap + self._g.w.head.cap + self._g.w.order.cap
                                + self._g.w.seen.cap + self._g.w.todo.cap) * sizeof(node_t)
        # parent, size, ring, two marks, two local indices: 4 bytes each; hist: 8
        return adj_nbytes(&self._g.out) + adj_nbytes(&self._g.inn) + bufs + self._cap * 36 + 8

    def size_counts(self):
        """The component-size distribution: rows ``(size, components of that size)``.

        Returns
        -------
        ndarray of int64, shape (k, 2)
            Sizes in increasing order; O(n) to read.
        """
        h = np.asarray(self._hist[:self._g.n + 1])
        sizes = np.flatnonzero(h)
        return np.stack([sizes.astype(np.int64), h[sizes]], axis=1) if sizes.size else np.zeros((0, 2), np.int64)

    def labels(self):
        """Component label of every node, numbered 0, 1, ... in order of each
        component's smallest node id (as :meth:`SCC.labels`).  O(n alpha(n))."""
        cdef Py_ssize_t n = self._g.n, x
        out = np.empty(n, dtype=np.int32)
        cdef node_t[::1] o = out
        cdef node_t[::1] first = np.full(max(n, 1), -1, dtype=np.int32)
        cdef node_t nxt = 0, r
        for x in range(n):
            r = _find(self._g.c.parent, <node_t> x)
            if first[r] < 0:
                first[r] = nxt
                nxt += 1
            o[x] = first[r]
        return out

    def csr(self):
        """The graph's out-lists as CSR arrays ``(indptr int64 [n+1], indices int32 [m])``.

        Within a node, targets are in insertion order.  O(n + m).
        """
        cdef Py_ssize_t n = self._g.n, x, j, e = 0
        indptr = np.zeros(n + 1, dtype=np.int64)
        indices = np.empty(self._g.m, dtype=np.int32)
        cdef int64_t[::1] ip = indptr
        cdef node_t[::1] ix = indices
        with nogil:
            for x in range(n):
                for j in range(self._g.out.deg[x]):
                    ix[e] = self._g.out.nbrs[x][j]
                    e += 1
                ip[x + 1] = e
        return indptr, indices

    def __repr__(self):
        return f"WholeSCC(n={self.n}, m={self.m}, count={self.count}, largest={self.largest}, mode={self.mode!r})"


def _grown(a, Py_ssize_t keep, Py_ssize_t size, dtype):
    out = np.zeros(size, dtype=dtype)
    if a is not None and keep:
        out[:keep] = np.asarray(a)[:keep]
    return out


def scc_of_csr(indptr, indices):
    """Strongly connected components of a CSR digraph (Tarjan, iterative, nogil).

    Parameters
    ----------
    indptr : array_like of int, shape (n + 1,)
        Row pointers, non-decreasing, from 0 to ``len(indices)``.
    indices : array_like of int, shape (m,)
        Targets, in ``[0, n)``.

    Returns
    -------
    count : int
    labels : ndarray of int32, shape (n,)
        Numbered 0, 1, ... in order of each component's smallest node id.

    Raises
    ------
    ValueError
        Malformed arrays; the message says which and where.

    Examples
    --------
    >>> count, labels = scc_of_csr([0, 1, 2, 2], [1, 0])
    >>> count, labels.tolist()
    (2, [0, 0, 1])
    """
    ip = np.asarray(indptr)
    ix = np.asarray(indices)
    if ip.ndim != 1 or ip.shape[0] < 1 or (ip.size and ip.dtype.kind not in "iu"):
        raise ValueError(f"indptr: expected a 1-D integer array of n + 1 >= 1 entries, got shape {ip.shape}, dtype {ip.dtype}")
    if ix.ndim != 1 or (ix.size and ix.dtype.kind not in "iu"):
        raise ValueError(f"indices: expected a 1-D integer array, got shape {ix.shape}, dtype {ix.dtype}")
    n = ip.shape[0] - 1
    if int(ip[0]) != 0 or int(ip[ip.shape[0] - 1]) != ix.shape[0]:
        raise ValueError(f"indptr must run from 0 to len(indices) = {ix.shape[0]}, got {int(ip[0])} .. {int(ip[ip.shape[0] - 1])}")
    step = np.diff(ip)
    if (step < 0).any():
        raise ValueError(f"indptr decreases at row {int(np.argmax(step < 0))}")
    if n >= 2 ** 31 - 1:
        raise ValueError(f"too many nodes for int32 ids: {n}")
    src_like = np.zeros(ix.shape[0], dtype=np.int32)
    as_edge_arrays(src_like, ix, max(n, 0))         # the range check of the targets
    ip64 = np.ascontiguousarray(ip, dtype=np.int64)
    ix32 = np.ascontiguousarray(ix, dtype=np.int32)
    cdef int64_t[::1] p = ip64
    cdef node_t[::1] t = ix32
    cdef Py_ssize_t x, nn = n
    cdef int64_t k = 0
    cdef int code
    nbrs_arr = np.zeros(max(n, 1), dtype=np.uintp)
    deg_arr = np.ascontiguousarray(step, dtype=np.int32) if n else np.zeros(1, np.int32)
    if n and ix32.shape[0] and int(step.max()) >= 2 ** 31:
        raise ValueError("a node has 2^31 or more out-edges")
    comp = np.empty(max(n, 1), dtype=np.int32)
    ring = np.empty(max(n, 1), dtype=np.int32)
    cdef size_t[::1] nb = nbrs_arr
    cdef node_t[::1] dg = deg_arr
    cdef node_t[::1] cv = comp
    cdef node_t[::1] rv = ring
    cdef node_t* base = &t[0] if t.shape[0] else NULL
    for x in range(n):
        nb[x] = <size_t> (base + p[x]) if base != NULL else 0
    with nogil:
        code = _tarjan(<node_t**> &nb[0], &dg[0], nn, &cv[0], &rv[0], &k)
    if code != KERNEL_OK:
        raise MemoryError("scc_of_csr: no memory for the scratch arrays")
    _, first, inverse = np.unique(comp[:n], return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int32)
    rank[np.argsort(first)] = np.arange(first.size, dtype=np.int32)   # by smallest member
    return int(k), rank[inverse].astype(np.int32)
