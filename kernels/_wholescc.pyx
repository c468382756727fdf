"""Strongly connected components of the whole crawled graph, exact, live.

:class:`WholeSCC` keeps the SCCs of a growing digraph with no cap on its
size, in O(n + m) memory (not the O(n^2) of SPAWC's bit-matrix closure,
:class:`SCC`, which is kept for the first ``--stats-max-pages`` pages):

* a union-find of the components (every component is strongly connected)
  and a histogram of their sizes, so the number of SCCs, the largest one
  and the size distribution are read in O(1) (the distribution in O(n));
* for every component, the edges that leave it and the edges that enter
  it from other components, as lists of 64-byte chunks that are
  concatenated in O(1) when components merge.  An edge inside a component
  is never stored (it cannot take part in a merge); an edge that becomes
  internal by a merge is dropped the next time its list is read, so every
  list entry is dropped at most once (amortized O(m) in all).
* the edges in insertion order (8 bytes each), for :meth:`WholeSCC.csr`.

Per batch (a superstep's edges): an edge inside a component costs
O(alpha(n)); the others are stored, and any new cycle passes through one of
them, so the components that may merge are those both reachable from the
heads H of the batch's new inter-component edges and reaching their tails
T.  Two searches over the *condensation* (components as nodes, the lists
as edges) run at once, one list entry at a time each, always advancing the
one that has read less (the two-way search of Haeupler et al.'s
incremental cycle detection, run once per batch):

* F, forward from H over the out-lists; B, backward from T over the in-lists.

The first to finish holds every component it can reach and every edge
among them; every new cycle lies inside it, so Tarjan's algorithm on that
small recorded graph (iterative, no recursion) finds the components to
merge.  A batch thus costs about twice the smaller search, at most
O(C + E) for C components and E inter-component list entries: on a web
crawl, where one giant component swallows most pages and edges, the
condensation is small and a batch is cheap; without cycles it is at most a
recomputation (measured in ``docs/benchmarks/kernels.md``).  A search per
edge was measured too and is much slower on crawls: a page crawled early
that links to a page crawled now, which links into the giant component,
closes a cycle through the giant component, and both searches of that edge
had to read all of it.

``mode="recompute"`` instead recomputes the components of the whole node
graph after every batch (Tarjan, O(n + m)): the baseline it is measured
against.
"""
cimport cython
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc, PyMem_RawRealloc
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from libc.string cimport memset

import numpy as np

from kernels._types cimport KERNEL_NO_MEMORY, KERNEL_OK, node_t
from kernels._unionfind cimport uf_find as _find, uf_labels

from abc_crawler.kernels._validation import as_count, as_csr, as_edge_arrays

__all__ = ["WholeSCC", "scc_of_csr"]

cdef enum:
    CHUNK_ITEMS = 14        # a chunk is 64 bytes: next, count, 14 entries


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


# ---------------------------------------------------- chunked edge lists
cdef struct Chunk:
    int32_t next            # chunk index, -1 at the end
    int32_t count
    node_t items[CHUNK_ITEMS]


cdef struct Pool:           # chunks by index (the array may move when it grows)
    Chunk* c
    Py_ssize_t n            # chunks ever handed out
    Py_ssize_t cap
    int32_t free            # first free chunk, -1 if none
    Py_ssize_t in_use


cdef inline int32_t pool_take(Pool* p) noexcept nogil:
    cdef int32_t k
    cdef Py_ssize_t cap
    cdef Chunk* q
    if p.free >= 0:
        k = p.free
        p.free = p.c[k].next
    else:
        if p.n == p.cap:
            cap = 2 * p.cap if p.cap else 1024
            q = <Chunk*> PyMem_RawRealloc(p.c, <size_t> cap * sizeof(Chunk))
            if q == NULL:
                return -1
            p.c, p.cap = q, cap
        k = <int32_t> p.n
        p.n += 1
    p.c[k].next = -1
    p.c[k].count = 0
    p.in_use += 1
    return k


cdef inline void pool_give(Pool* p, int32_t k) noexcept nogil:
    p.c[k].next = p.free
    p.free = k
    p.in_use -= 1


cdef struct List:           # one component's out- or in-list
    int32_t head
    int32_t tail


cdef inline int list_append(Pool* p, List* l, node_t x) noexcept nogil:
    cdef int32_t k = l.tail
    if k < 0 or p.c[k].count == CHUNK_ITEMS:
        k = pool_take(p)
        if k < 0:
            return -1
        if l.tail < 0:
            l.head = k
        else:
            p.c[l.tail].next = k
        l.tail = k
    p.c[k].items[p.c[k].count] = x
    p.c[k].count += 1
    return 0


cdef inline void list_concat(Pool* p, List* a, List* b) noexcept nogil:
    """a = a followed by b; b becomes empty.  O(1)."""
    if b.head < 0:
        return
    if a.head < 0:
        a.head, a.tail = b.head, b.tail
    else:
        p.c[a.tail].next = b.head
        a.tail = b.tail
    b.head = b.tail = -1


# ------------------------------------------------------------- components
cdef struct Whole:
    node_t* parent          # union-find; a root is its component's representative
    node_t* size            # at roots
    int64_t* hist           # hist[s]: components of size s
    List* out               # at roots: edges leaving the component (their heads)
    List* inn               # at roots: edges entering it from others (their tails)
    uint32_t* fmark         # fmark[rep] == epoch: found by F
    uint32_t* bmark
    node_t* flidx           # position in F's queue (valid when marked)
    node_t* blidx
    Pool pool
    Buf src                 # every edge, in insertion order
    Buf dst
    Py_ssize_t n
    int64_t count
    int64_t largest
    uint32_t epoch
    int64_t work            # list entries read by the searches, in all
    int64_t dropped         # list entries dropped as internal
    int64_t searches        # batches that needed a search
    int64_t merges          # components merged away
    int64_t recomputes


cdef inline node_t _union(Whole* g, node_t a, node_t b) noexcept nogil:
    """Merge the components of a and b (and their lists); returns the new representative."""
    a = _find(g.parent, a)
    b = _find(g.parent, b)
    if a == b:
        return a
    if g.size[a] < g.size[b]:
        a, b = b, a
    g.hist[g.size[a]] -= 1
    g.hist[g.size[b]] -= 1
    g.parent[b] = a
    g.size[a] += g.size[b]
    g.hist[g.size[a]] += 1
    if g.size[a] > g.largest:
        g.largest = g.size[a]
    list_concat(&g.pool, &g.out[a], &g.out[b])
    list_concat(&g.pool, &g.inn[a], &g.inn[b])
    g.count -= 1
    g.merges += 1
    return a


# ------------------------------------------------------------ the searches
cdef struct Side:
    List* lists             # out-lists for F, in-lists for B
    uint32_t* mark
    node_t* lidx
    Buf queue               # components found, in order (local index = position)
    Buf pairs               # (local p, local q) per entry read: an edge between them
    Py_ssize_t head         # next queue entry to expand
    node_t comp             # component being read, -1 between components
    int32_t chunk           # chunk being read, and the one before it in the list
    int32_t prev
    int32_t pos


cdef inline int _side_add(Side* s, node_t c, uint32_t epoch) noexcept nogil:
    if s.mark[c] == epoch:
        return 0
    s.mark[c] = epoch
    s.lidx[c] = <node_t> s.queue.n
    return buf_push(&s.queue, c)


cdef inline int _side_step(Side* s, Whole* g) noexcept nogil:
    """Read one list entry (dropping it if it became internal).

    Returns 0 (work done), 1 (the side is complete) or -1 (out of memory).
    """
    cdef node_t c, y, cy
    cdef Chunk* k
    cdef List* l
    cdef int32_t nxt
    while True:
        if s.comp < 0:
            if s.head == s.queue.n:
                return 1
            c = s.queue.a[s.head]
            s.head += 1
            s.comp, s.chunk, s.prev, s.pos = c, s.lists[c].head, -1, 0
        if s.chunk < 0:
            s.comp = -1
            continue
        k = &g.pool.c[s.chunk]
        if s.pos < k.count:
            y = k.items[s.pos]
            cy = _find(g.parent, y)
            if cy == s.comp:                # internal now: drop it for good
                k.count -= 1
                k.items[s.pos] = k.items[k.count]
                g.dropped += 1
                return 0
            s.pos += 1
            if _side_add(s, cy, g.epoch) != 0:
                return -1
            if buf_push(&s.pairs, s.lidx[s.comp]) != 0 or buf_push(&s.pairs, s.lidx[cy]) != 0:
                return -1
            return 0
        # end of the chunk: unlink it if it is empty, then go on
        l = &s.lists[s.comp]
        nxt = k.next
        if k.count == 0:
            if s.prev < 0:
                l.head = nxt
            else:
                g.pool.c[s.prev].next = nxt
            if l.tail == s.chunk:
                l.tail = s.prev
            pool_give(&g.pool, s.chunk)
        else:
            s.prev = s.chunk
        s.chunk, s.pos = nxt, 0


cdef int _tarjan(node_t** nbrs, node_t* deg, Py_ssize_t n, node_t* comp_of,
                 int64_t* n_comps) noexcept nogil:
    """Tarjan's SCC algorithm with an explicit stack (no recursion).

    ``comp_of[x]`` receives the root of x's component (its member the
    algorithm met first).  O(n + m) time; 21 bytes per node of scratch.
    Returns KERNEL_OK or KERNEL_NO_MEMORY.
    """
    cdef size_t cells = <size_t> (n if n else 1)
    cdef node_t* index = <node_t*> PyMem_RawMalloc(cells * sizeof(node_t))
    cdef node_t* low = <node_t*> PyMem_RawMalloc(cells * sizeof(node_t))
    cdef node_t* it = <node_t*> PyMem_RawMalloc(cells * sizeof(node_t))
    cdef node_t* stack = <node_t*> PyMem_RawMalloc(cells * sizeof(node_t))
    cdef node_t* calls = <node_t*> PyMem_RawMalloc(cells * sizeof(node_t))
    cdef uint8_t* on = <uint8_t*> PyMem_RawMalloc(cells)
    cdef Py_ssize_t s, sp = 0, cs = 0
    cdef node_t counter = 0, v, w, x, p
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
                    while True:
                        sp -= 1
                        x = stack[sp]
                        on[x] = 0
                        comp_of[x] = v
                        if x == v:
                            break
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


cdef int _tarjan_edges(const node_t* src, const node_t* dst, Py_ssize_t stride, Py_ssize_t m,
                       Py_ssize_t n, node_t* comp_of, int64_t* n_comps) noexcept nogil:
    """Tarjan on the graph of m edges src[e*stride] -> dst[e*stride] over n nodes
    (built as CSR by a counting sort first)."""
    cdef node_t* head = <node_t*> PyMem_RawMalloc(<size_t> (n + 1) * sizeof(node_t))
    cdef node_t* order = <node_t*> PyMem_RawMalloc(<size_t> (m if m else 1) * sizeof(node_t))
    cdef node_t** nbrs = <node_t**> PyMem_RawMalloc(<size_t> (n if n else 1) * sizeof(node_t*))
    cdef node_t* deg = <node_t*> PyMem_RawMalloc(<size_t> (n if n else 1) * sizeof(node_t))
    cdef Py_ssize_t e, k
    cdef int code = KERNEL_NO_MEMORY
    if head != NULL and order != NULL and nbrs != NULL and deg != NULL:
        memset(head, 0, <size_t> (n + 1) * sizeof(node_t))
        for e in range(m):
            head[src[e * stride] + 1] += 1
        for k in range(n):
            head[k + 1] += head[k]
        for k in range(n):
            deg[k] = head[k + 1] - head[k]
            nbrs[k] = order + head[k]
        for e in range(m):
            order[head[src[e * stride]]] = dst[e * stride]
            head[src[e * stride]] += 1
        code = _tarjan(nbrs, deg, n, comp_of, n_comps)
    PyMem_RawFree(head)
    PyMem_RawFree(order)
    PyMem_RawFree(nbrs)
    PyMem_RawFree(deg)
    return code


cdef int _search_and_merge(Whole* g, Side* f, Side* b) noexcept nogil:
    """The batch's two-way search from F's and B's queues, then the merges."""
    cdef int64_t fw = 0, bw = 0
    cdef int r = 0
    cdef Side* won
    cdef Py_ssize_t L, x
    cdef node_t* comp_of
    cdef int code
    cdef int64_t nc
    while True:
        if fw <= bw:
            r = _side_step(f, g)
            if r != 0:
                won = f
                break
            fw += 1
        else:
            r = _side_step(b, g)
            if r != 0:
                won = b
                break
            bw += 1
    g.work += fw + bw
    if r < 0:
        return KERNEL_NO_MEMORY
    L = won.queue.n
    comp_of = <node_t*> PyMem_RawMalloc(<size_t> (L if L else 1) * sizeof(node_t))
    if comp_of == NULL:
        return KERNEL_NO_MEMORY
    code = _tarjan_edges(won.pairs.a, won.pairs.a + 1, 2, won.pairs.n // 2, L, comp_of, &nc)
    if code == KERNEL_OK:
        for x in range(L):
            if comp_of[x] != x:             # merge x's component into its local root's
                _union(g, won.queue.a[x], won.queue.a[comp_of[x]])
    PyMem_RawFree(comp_of)
    return code


cdef int _recompute(Whole* g) noexcept nogil:
    """Components of the whole node graph from scratch (Tarjan over a CSR of every edge)."""
    cdef Py_ssize_t n = g.n, x
    cdef int64_t k = 0
    cdef int code = _tarjan_edges(g.src.a, g.dst.a, 1, g.src.n, n, g.parent, &k)
    if code != KERNEL_OK:
        return code
    g.recomputes += 1
    g.count = k
    memset(g.size, 0, <size_t> n * sizeof(node_t))
    for x in range(n):
        g.size[g.parent[x]] += 1
    memset(g.hist, 0, <size_t> (n + 1) * sizeof(int64_t))
    g.largest = 0
    for x in range(n):
        if g.parent[x] == x:
            g.hist[g.size[x]] += 1
            if g.size[x] > g.largest:
                g.largest = g.size[x]
    return KERNEL_OK


cdef int _insert_batch(Whole* g, Side* f, Side* b, const node_t[::1] src, const node_t[::1] dst,
                       bint recompute, int64_t* stored) noexcept nogil:
    """Store a batch and bring the components up to date."""
    cdef Py_ssize_t e
    cdef node_t u, v, cu, cv
    g.epoch += 1
    if g.epoch == 0:                        # wrapped: clear the marks once in 2^32 batches
        memset(g.fmark, 0, <size_t> g.n * sizeof(uint32_t))
        memset(g.bmark, 0, <size_t> g.n * sizeof(uint32_t))
        g.epoch = 1
    f.queue.n = f.pairs.n = b.queue.n = b.pairs.n = 0
    f.head = b.head = 0
    f.comp = b.comp = -1
    for e in range(src.shape[0]):
        u, v = src[e], dst[e]
        if u == v:
            continue
        if buf_push(&g.src, u) != 0:
            return KERNEL_NO_MEMORY
        if buf_push(&g.dst, v) != 0:
            g.src.n -= 1
            return KERNEL_NO_MEMORY
        stored[0] += 1
        if recompute:
            continue
        cu = _find(g.parent, u)
        cv = _find(g.parent, v)
        if cu == cv:
            continue                        # inside a component: never needed again
        if list_append(&g.pool, &g.out[cu], v) != 0 or list_append(&g.pool, &g.inn[cv], u) != 0:
            return KERNEL_NO_MEMORY
        if _side_add(f, cv, g.epoch) != 0 or _side_add(b, cu, g.epoch) != 0:
            return KERNEL_NO_MEMORY
    if recompute:
        return _recompute(g)
    if f.queue.n == 0:
        return KERNEL_OK
    g.searches += 1
    return _search_and_merge(g, f, b)


cdef class WholeSCC:
    """Strongly connected components of a growing digraph of any size, exact after every batch.

    Parameters
    ----------
    n : int, optional
        Nodes to start with (ids ``0 .. n-1``), each its own component.
    mode : {"search", "recompute"}, optional
        ``"search"`` (default): one two-way search per batch over the
        condensation (module notes); ``"recompute"``: Tarjan on the whole
        graph after every batch, O(n + m) each (a baseline).  Both give the
        same components.

    Attributes
    ----------
    n, m : int
        Nodes; edges stored (self-loops are dropped; a repeated edge is
        stored again, harmlessly: :class:`GraphStats` passes only new ones).
    count : int
        Number of strongly connected components (singletons included).  O(1).
    largest : int
        Nodes in the largest component (0 when n = 0).  O(1).
    searches, work, dropped, merges, recomputes : int
        Batches that needed a search; list entries read by the searches;
        entries dropped as internal; components merged away; recomputations.

    Notes
    -----
    Memory: 8 bytes per edge (the edges in order), about 5-10 bytes per
    edge between two components in each of the two lists (64-byte chunks
    of 14 entries), and 48 bytes per node; a batch's search records 8
    bytes per entry it reads, and Tarjan takes 25 bytes per component it
    looks at while it runs.  ``mode="recompute"`` allocates 21 bytes per
    node and 4 per edge while it recomputes.

    Time per batch: O(alpha(n)) per edge inside a component; otherwise
    about twice the smaller of the two searches, at most O(C + E) for C
    components and E list entries (module notes); O(n + m) with
    ``mode="recompute"``.

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
    cdef Side _f
    cdef Side _b
    cdef bint _recompute_mode
    cdef bint _broken
    cdef Py_ssize_t _cap
    cdef object _arrays             # the NumPy arrays behind the per-node pointers

    def __cinit__(self):
        memset(&self._g, 0, sizeof(Whole))
        memset(&self._f, 0, sizeof(Side))
        memset(&self._b, 0, sizeof(Side))
        self._g.pool.free = -1

    def __init__(self, n=0, *, mode="search"):
        if mode not in ("search", "recompute"):
            raise ValueError(f"mode must be 'search' or 'recompute', got {mode!r}")
        self._recompute_mode = mode == "recompute"
        self._broken = False
        self._cap = 0
        self._arrays = None
        self._resize(1)
        self.add_nodes(n)

    def __dealloc__(self):
        PyMem_RawFree(self._g.pool.c)
        buf_free(&self._g.src)
        buf_free(&self._g.dst)
        buf_free(&self._f.queue)
        buf_free(&self._f.pairs)
        buf_free(&self._b.queue)
        buf_free(&self._b.pairs)

    cdef _resize(self, Py_ssize_t need):
        """Per-node arrays of at least ``need`` entries (GIL held)."""
        cdef Py_ssize_t n = self._g.n
        if need <= self._cap:
            return
        cap = max(need, 2 * self._cap, 16)
        old = self._arrays
        new = {
            "parent": np.zeros(cap, np.int32), "size": np.zeros(cap, np.int32),
            "hist": np.zeros(cap + 1, np.int64),
            "out": np.full(2 * cap, -1, np.int32), "inn": np.full(2 * cap, -1, np.int32),   # List structs
            "fmark": np.zeros(cap, np.uint32), "bmark": np.zeros(cap, np.uint32),
            "flidx": np.zeros(cap, np.int32), "blidx": np.zeros(cap, np.int32)}
        if old is not None:
            for k, a in new.items():
                keep = {"hist": n + 1, "out": 2 * n, "inn": 2 * n}.get(k, n)
                a[:keep] = old[k][:keep]
        self._arrays = new
        self._cap = cap
        cdef node_t[::1] parent = new["parent"]
        cdef node_t[::1] size = new["size"]
        cdef int64_t[::1] hist = new["hist"]
        cdef int32_t[::1] outl = new["out"]
        cdef int32_t[::1] innl = new["inn"]
        cdef uint32_t[::1] fmark = new["fmark"]
        cdef uint32_t[::1] bmark = new["bmark"]
        cdef node_t[::1] flidx = new["flidx"]
        cdef node_t[::1] blidx = new["blidx"]
        self._g.parent, self._g.size, self._g.hist = &parent[0], &size[0], &hist[0]
        self._g.out = <List*> &outl[0]
        self._g.inn = <List*> &innl[0]
        self._g.fmark, self._g.bmark = &fmark[0], &bmark[0]
        self._g.flidx, self._g.blidx = &flidx[0], &blidx[0]
        self._f.lists, self._f.mark, self._f.lidx = self._g.out, self._g.fmark, self._g.flidx
        self._b.lists, self._b.mark, self._b.lidx = self._g.inn, self._g.bmark, self._g.blidx

    def add_nodes(self, k):
        """Add ``k`` nodes with the next ids, each a component of its own.

        Raises
        ------
        ValueError
            ``k`` negative.

        Notes
        -----
        Amortized O(k).
        """
        k = as_count(k)
        cdef Py_ssize_t n = self._g.n, x
        if k == 0:
            return
        self._resize(n + k)
        for x in range(n, n + k):
            self._g.parent[x] = <node_t> x
            self._g.size[x] = 1
        self._g.hist[1] += k
        self._g.count += k
        if self._g.largest < 1:
            self._g.largest = 1
        self._g.n = n + k

    def add_edges(self, src, dst):
        """Insert a batch of edges ``src[e] -> dst[e]`` and update the components.

        The batch is validated first (nothing changes if it is rejected);
        the work runs without the GIL.

        Returns
        -------
        int
            Edges stored (the batch without its self-loops).

        Raises
        ------
        ValueError
            Bad shapes, dtypes or ids; the message names the offending edge.
        MemoryError
            A list could not grow; the instance is then unusable (further
            batches raise too).
        """
        s, d = as_edge_arrays(src, dst, self._g.n)
        cdef const node_t[::1] sv = s
        cdef const node_t[::1] dv = d
        cdef int64_t stored = 0
        cdef int code
        if sv.shape[0] == 0:
            return 0
        if self._broken:
            raise MemoryError("WholeSCC ran out of memory before and is unusable")
        with nogil:
            code = _insert_batch(&self._g, &self._f, &self._b, sv, dv, self._recompute_mode, &stored)
        if code == KERNEL_NO_MEMORY:
            self._broken = True
            raise MemoryError(f"WholeSCC: out of memory after {stored} edges of the batch "
                              f"(n = {self._g.n}, m = {self._g.src.n}); the instance is unusable")
        return stored

    @property
    def n(self):
        return self._g.n

    @property
    def m(self):
        return self._g.src.n

    @property
    def count(self):
        return self._g.count

    @property
    def largest(self):
        return self._g.largest

    @property
    def searches(self):
        return self._g.searches

    @property
    def work(self):
        return self._g.work

    @property
    def dropped(self):
        return self._g.dropped

    @property
    def merges(self):
        return self._g.merges

    @property
    def recomputes(self):
        return self._g.recomputes

    @property
    def mode(self):
        return "recompute" if self._recompute_mode else "search"

    @property
    def nbytes(self):
        """Bytes held: edges, list chunks, per-node arrays and search buffers."""
        cdef Py_ssize_t bufs = (self._g.src.cap + self._g.dst.cap + self._f.queue.cap + self._f.pairs.cap
                                + self._b.queue.cap + self._b.pairs.cap) * sizeof(node_t)
        return bufs + self._g.pool.cap * sizeof(Chunk) + sum(a.nbytes for a in self._arrays.values())

    def size_counts(self):
        """The component-size distribution: rows ``(size, components of that size)``.

        Returns
        -------
        ndarray of int64, shape (k, 2)
            Sizes in increasing order; O(n) to read.
        """
        h = self._arrays["hist"][:self._g.n + 1]
        sizes = np.flatnonzero(h)
        return np.stack([sizes.astype(np.int64), h[sizes]], axis=1) if sizes.size else np.zeros((0, 2), np.int64)

    def labels(self):
        """Component label of every node, numbered 0, 1, ... in order of each
        component's smallest node id (as :meth:`SCC.labels`).  O(n alpha(n))."""
        cdef Py_ssize_t n = self._g.n
        out = np.empty(max(n, 1), dtype=np.int32)
        cdef node_t[::1] o = out
        cdef node_t[::1] first = np.full(max(n, 1), -1, dtype=np.int32)
        if n:
            uf_labels(self._g.parent, n, &first[0], &o[0])
        return out[:n]

    def csr(self):
        """The graph's out-lists as CSR arrays ``(indptr int64 [n+1], indices int32 [m])``.

        Within a node, targets are in insertion order.  O(n + m).
        """
        cdef Py_ssize_t n = self._g.n, m = self._g.src.n, e
        indptr = np.zeros(n + 1, dtype=np.int64)
        indices = np.empty(m, dtype=np.int32)
        cdef int64_t[::1] ip = indptr
        cdef node_t[::1] ix = indices
        with nogil:
            for e in range(m):
                ip[self._g.src.a[e] + 1] += 1
            for e in range(n):
                ip[e + 1] += ip[e]
            for e in range(m):
                ix[ip[self._g.src.a[e]]] = self._g.dst.a[e]
                ip[self._g.src.a[e]] += 1
            for e in range(n, 0, -1):
                ip[e] = ip[e - 1]
            ip[0] = 0
        return indptr, indices

    def __repr__(self):
        return f"WholeSCC(n={self.n}, m={self.m}, count={self.count}, largest={self.largest}, mode={self.mode!r})"


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
    ip64, ix32, n = as_csr(indptr, indices)
    step = np.diff(ip64)
    cdef int64_t[::1] p = ip64
    cdef node_t[::1] t = ix32
    cdef Py_ssize_t x, nn = n
    cdef int64_t k = 0
    cdef int code
    nbrs_arr = np.zeros(max(nn, 1), dtype=np.uintp)
    deg_arr = np.ascontiguousarray(step, dtype=np.int32) if nn else np.zeros(1, np.int32)
    comp = np.empty(max(nn, 1), dtype=np.int32)
    cdef size_t[::1] nb = nbrs_arr
    cdef node_t[::1] dg = deg_arr
    cdef node_t[::1] cv = comp
    for x in range(nn):
        nb[x] = <size_t> (&t[0] + p[x])
    with nogil:
        code = _tarjan(<node_t**> &nb[0], &dg[0], nn, &cv[0], &k)
    if code != KERNEL_OK:
        raise MemoryError("scc_of_csr: no memory for the scratch arrays")
    _, first, inverse = np.unique(comp[:nn], return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int32)
    rank[np.argsort(first)] = np.arange(first.size, dtype=np.int32)   # by smallest member
    return int(k), rank[inverse].astype(np.int32)
