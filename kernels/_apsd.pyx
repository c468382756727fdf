"""Incremental all-pairs shortest distances (SPAWC Algorithm 1, Fig. 8).

The distance matrix of an unweighted digraph is kept up to date under edge
insertions.  On insert (i, j):

1. row i is updated from row j: ``d[i][x] = min(d[i][x], 1 + d[j][x])``;
2. every row k that reaches i is updated from the new row i:
   ``d[k][x] = min(d[k][x], d[k][i] + d'[i][x])``.

The kernel computes exactly these updates but skips the work that provably
changes nothing:

* Columns: step 2 only needs the columns x whose entry in row i dropped in
  step 1.  For any other x, ``d[k][x] <= d[k][i] + d[i][x]`` held before the
  insertion (triangle inequality), so the min cannot change.
* Rows: row k can change only if its distance to j drops,
  ``d[k][i] + 1 < d[k][j]``; otherwise ``d[k][x] <= d[k][j] + d[j][x] <=
  d[k][i] + d'[i][x]`` for every x.  Call these rows *improved*.  If k is
  improved and s is the next node on a shortest path from k to i (an edge
  k -> s with ``d[s][i] = d[k][i] - 1``), then s is improved too (or is i):
  ``d[s][j] >= d[k][j] - 1 > d[k][i] = d[s][i] + 1``.  So the
  improved rows are found by a breadth-first search from i over in-edges,
  following an edge k -> s only when ``d[k][i] = d[s][i] + 1``, and stopping
  at rows that are not improved; the paper's loop over all n rows (a scan
  of column i) is not needed.  The search needs in-edge lists (4-8 bytes
  per edge); on dense graphs, where those would outgrow the matrix, the
  kernel falls back to the scan, still skipping rows that are not improved
  in O(1) each (``search=`` in :class:`APSD`).  Measured
  (``docs/benchmarks/kernels.md``): on a crawl-order graph with n = 20000
  the search takes 140 s and the scan 160 s; up to n = 10000, and on
  Ausiello's sequence, the prefetched scan is as fast or faster.

A histogram of the finite distances over ordered pairs u != v, the number of
such pairs and the sum of their distances are adjusted on every cell change,
so the diameter (largest non-empty bin) and the average distance are O(1) to
read.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memcpy

import numpy as np

from kernels._types cimport (ABC_PREFETCH, KERNEL_DIST_OVERFLOW, KERNEL_NO_MEMORY,
                             KERNEL_OK, LIST_BUDGET_FLOOR, PREFETCH_AHEAD,
                             UNREACHABLE_U16, UNREACHABLE_U8, dist_t, grown_capacity,
                             node_t)
from kernels._rowstore cimport (HUGE_MATRIX, RowStore, rowstore_add_rows, rowstore_free,
                                rowstore_init, rowstore_nbytes, rowstore_set_row_bytes)
from kernels._adjacency cimport (AdjLists, adj_add_nodes, adj_append, adj_free, adj_init,
                                 adj_nbytes)

from abc_crawler.kernels._validation import (DistanceOverflowError, as_count,
                                             as_edge_arrays)

__all__ = ["APSD"]


cdef struct ApsdTally:
    int64_t pairs       # ordered pairs u != v with a finite distance
    int64_t dist_sum    # sum of those distances
    int64_t updates     # matrix cells lowered (the work the paper counts)
    int64_t rows_visited  # rows examined in step 2 (improved or not)
    int64_t inserted    # edges that entered the graph
    int64_t duplicates  # edges already present (d == 1), ignored
    int64_t self_loops  # edges u -> u, ignored
    Py_ssize_t hi       # no histogram bin above hi is non-empty
    uint32_t epoch      # search stamp: node k is visited iff stamp[k] == epoch


cdef struct ApsdWork:
    int64_t* hist       # [unreachable + 1]
    node_t* cols        # [ncols]: changed-column lists of the rows in the search
    Py_ssize_t ncols    #   (row i's list first; >= capacity)
    node_t* queue       # [capacity]: the breadth-first search of step 2
    Py_ssize_t* q_off   # [capacity]: queue[h]'s list is cols[q_off[h] : q_off[h] + q_len[h]]
    node_t* q_len       # [capacity]
    uint32_t* stamp     # [capacity]
    AdjLists* inn       # in-neighbours of every node (when use_lists)
    int use_lists       # 1: search over in-edges; 0: scan column i (the paper's loop)
    int may_drop        # "auto": drop the lists once they exceed list_budget bytes
    Py_ssize_t list_budget


cdef struct Acc:        # running totals of one insertion, kept out of the tally
    int64_t pairs
    int64_t dsum
    int64_t upd
    Py_ssize_t hi


@cython.cdivision(True)
cdef inline int _lower_row(dist_t* rk, int dki, dist_t* ri, node_t* plist, Py_ssize_t plen,
                           int64_t* hist, Acc* acc, node_t* rec, Py_ssize_t* used,
                           Py_ssize_t rec_cap) noexcept nogil:
    """``rk[x] = min(rk[x], dki + ri[x])`` for the columns x in plist.

    Keeps the histogram and totals current; appends each lowered column to
    ``rec`` (if not NULL) while ``*used < rec_cap``, counting on past it.
    Returns KERNEL_DIST_OVERFLOW if a pair becomes reachable at a distance
    the type cannot hold.
    """
    cdef int inf
    if dist_t is uint8_t:
        inf = UNREACHABLE_U8
    else:
        inf = UNREACHABLE_U16
    cdef int64_t pairs = acc.pairs, dsum = acc.dsum, upd = acc.upd
    cdef Py_ssize_t hi = acc.hi, c, x, u = used[0]
    cdef int cand, dk, code = KERNEL_OK
    for c in range(plen):
        x = plist[c]
        cand = dki + ri[x]
        dk = rk[x]
        if cand < dk:
            if dk == inf:
                pairs += 1
            else:
                hist[dk] -= 1
                dsum -= dk
            hist[cand] += 1
            dsum += cand
            if cand > hi:
                hi = cand
            rk[x] = <dist_t> cand
            upd += 1
            if rec != NULL:
                if u < rec_cap:
                    rec[u] = <node_t> x
                u += 1
        elif dk == inf:
            code = KERNEL_DIST_OVERFLOW
            break
    acc.pairs, acc.dsum, acc.upd, acc.hi = pairs, dsum, upd, hi
    used[0] = u
    return code


@cython.cdivision(True)
cdef int _insert(dist_t** rows, Py_ssize_t n, node_t i, node_t j,
                 ApsdWork* w, ApsdTally* t) noexcept nogil:
    """Insert edge i -> j (0 <= i, j < n).  Returns a KERNEL_* code.

    With in-edge lists: O(n + sum over improved rows k of (indeg(k) +
    |list of k's parent|)).  With the column scan: O(n + improved * c),
    c = columns lowered in row i.  Worst case O(n^2 + m) either way.
    """
    cdef int inf
    if dist_t is uint8_t:
        inf = UNREACHABLE_U8
    else:
        inf = UNREACHABLE_U16
    if i == j:
        t.self_loops += 1
        return KERNEL_OK
    cdef dist_t* ri = rows[i]
    cdef dist_t* rj = rows[j]
    cdef dist_t* rk
    if ri[j] == 1:
        t.duplicates += 1
        return KERNEL_OK
    if w.use_lists and w.may_drop and adj_nbytes(w.inn) > w.list_budget:
        adj_free(w.inn)                     # dense graph: back to the column scan
        w.use_lists = 0
    if w.use_lists and adj_append(w.inn, j, i) != 0:
        return KERNEL_NO_MEMORY
    t.inserted += 1

    cdef Acc acc
    acc.pairs, acc.dsum, acc.upd, acc.hi = t.pairs, t.dist_sum, 0, t.hi
    cdef int64_t* hist = w.hist
    cdef node_t* cols = w.cols
    cdef node_t* queue = w.queue
    cdef uint32_t* stamp = w.stamp
    cdef int64_t visited = 0
    cdef Py_ssize_t x, k, nc = 0, head, tail, e, deg, off, plen, start, used
    cdef node_t q
    cdef node_t* preds
    cdef int dj, di, dk, dki, dqi, cand
    cdef uint32_t epoch
    cdef int code = KERNEL_OK

    # Step 1: row i from row j (Fig. 8, lines 10-11); its lowered columns
    # go to cols[0 .. nc-1].
    for x in range(n):
        dj = rj[x]
        if dj == inf:
            continue
        cand = dj + 1
        di = ri[x]
        if cand < di:
            if di == inf:
                acc.pairs += 1
            else:
                hist[di] -= 1
                acc.dsum -= di
            hist[cand] += 1
            acc.dsum += cand
            if cand > acc.hi:
                acc.hi = cand
            ri[x] = <dist_t> cand
            cols[nc] = <node_t> x
            nc += 1
        elif di == inf:
            # i now reaches x, but only at distance >= inf: not representable.
            code = KERNEL_DIST_OVERFLOW
            break
    acc.upd = nc

    if code != KERNEL_OK or nc == 0:
        pass
    elif not w.use_lists:
        # Step 2 (lines 14-22) as in the paper, a scan of column i, minus
        # the rows that cannot improve (see the module docstring).
        used = 0
        for k in range(n):
            if k + PREFETCH_AHEAD < n:
                rk = rows[k + PREFETCH_AHEAD]
                ABC_PREFETCH(rk + i)
                ABC_PREFETCH(rk + j)
            if k == i or k == j:
                continue
            rk = rows[k]
            dki = rk[i]
            if dki == inf:
                continue
            dk = rk[j]
            if dk != inf and dk <= dki + 1:
                continue
            visited += 1
            code = _lower_row(rk, dki, ri, cols, nc, hist, &acc, NULL, &used, 0)
            if code != KERNEL_OK:
                break
    else:
        # Step 2 (lines 14-22) on the improved rows only, found by a search
        # from i over in-edges along shortest paths to i (module docstring).
        # A row k reached from q can only lower columns that q lowered, so
        # each row checks its parent's list and records its own for its
        # children; when cols is full a row hands on its parent's list
        # instead (a superset).
        t.epoch += 1
        if t.epoch == 0:                    # wrapped: forget every old stamp
            for x in range(n):
                stamp[x] = 0
            t.epoch = 1
        epoch = t.epoch
        stamp[i] = epoch
        queue[0] = i
        w.q_off[0] = 0
        w.q_len[0] = <node_t> nc
        used = nc
        head, tail = 0, 1
        while head < tail and code == KERNEL_OK:
            q = queue[head]
            off = w.q_off[head]
            plen = w.q_len[head]
            head += 1
            dqi = rows[q][i]
            preds = w.inn.nbrs[q]
            deg = w.inn.deg[q]
            for e in range(deg):
                # The cells d[k][i] and d[k][j] of in-neighbours lie in rows
                # far apart: ask for them a few neighbours ahead, so that
                # the cache misses overlap instead of queueing.
                if e + PREFETCH_AHEAD < deg:
                    rk = rows[preds[e + PREFETCH_AHEAD]]
                    ABC_PREFETCH(rk + i)
                    ABC_PREFETCH(rk + j)
                k = preds[e]
                if stamp[k] == epoch:
                    continue
                # First touch of k decides: if q is not on a shortest way
                # from k to i, k is not improved (else all its successors on
                # those ways would be improved, sit in an earlier layer of
                # the FIFO search, and one of them would have touched k
                # first).  So every row is read at most once per insertion.
                stamp[k] = epoch
                visited += 1
                rk = rows[k]
                dki = rk[i]
                if dki != dqi + 1:
                    continue
                dk = rk[j]
                if dk != inf and dk <= dki + 1:
                    continue                # not improved: nothing to do here or above
                start = used
                code = _lower_row(rk, dki, ri, cols + off, plen, hist, &acc, cols, &used, w.ncols)
                if code != KERNEL_OK:
                    break
                queue[tail] = <node_t> k
                if used <= w.ncols:
                    w.q_off[tail] = start
                    w.q_len[tail] = <node_t> (used - start)
                else:
                    used = start            # no room: reuse the parent's list
                    w.q_off[tail] = off
                    w.q_len[tail] = <node_t> plen
                tail += 1

    t.updates += acc.upd
    t.rows_visited += visited
    t.pairs = acc.pairs
    t.dist_sum = acc.dsum
    t.hi = acc.hi
    return code


cdef Py_ssize_t _insert_batch(dist_t** rows, Py_ssize_t n,
                              const node_t[::1] src, const node_t[::1] dst,
                              ApsdWork* w, ApsdTally* t, int* code) noexcept nogil:
    """Insert every edge of the batch; return -1, or the index of the edge
    whose insertion failed (its code in ``code[0]``)."""
    cdef Py_ssize_t e
    for e in range(src.shape[0]):
        code[0] = _insert(rows, n, src[e], dst[e], w, t)
        if code[0] != KERNEL_OK:
            return e
    return -1


cdef class APSD:
    """All-pairs shortest distances of a growing digraph, updated per edge.

    Parameters
    ----------
    n : int, optional
        Nodes to start with (ids ``0 .. n-1``).  Default 0.
    max_nodes : int or None, optional
        Refuse to grow past this many nodes (and never allocate columns past
        it).  Default None: no limit.
    dtype : {numpy.uint8, numpy.uint16}, optional
        Cell type of the distance matrix.  uint8 (the default) stores
        distances 0..254 with 255 = unreachable, one byte per pair; uint16
        stores 0..65534 with 65535 = unreachable, for graphs with paths of 255
        hops or more.
    search : {"auto", "lists", "scan"}, optional
        How step 2 finds the rows that reach i.  "lists": a search over
        in-edge lists that visits only rows that change (and their
        in-neighbours); "scan": the paper's scan of column i over all n rows,
        which needs no lists.  "auto" (default) starts with lists and drops
        them for good once they exceed 1/16 of the matrix plus 1 MiB (dense
        graphs), which keeps the memory bound.  The answers are the same.

    Attributes
    ----------
    n : int
        Nodes.
    unreachable : int
        The sentinel cell value (255 or 65535).
    diameter : int
        Largest finite d(u, v) over u != v; 0 if no pair is connected.
    avg_distance : float
        Mean of the finite d(u, v) over ordered pairs u != v; 0.0 if none.
    reachable_pairs : int
        Ordered pairs u != v with a finite distance.
    inserted, duplicates, self_loops : int
        Edges that entered the graph; edges already present and edges
        u -> u, both ignored.
    updates : int
        Matrix cells lowered so far (Omega(n^3) on Ausiello's sequence).
    rows_visited : int
        Rows examined by the search of step 2 so far.
    search : str
        "lists" or "scan": the method step 2 uses now.
    list_bytes : int
        Bytes held by the in-edge lists.
    nbytes : int
        Bytes allocated for the distance matrix (n rows of ``capacity``
        cells, plus the unused tail of the last slab, < 2 MiB).

    Raises
    ------
    DistanceOverflowError
        From :meth:`add_edges`, when a reachable pair's distance does not fit
        ``dtype``.  The edges before the offending one are inserted, the
        offending one is partly applied, and the instance is marked
        ``overflowed``: every later update or statistic read raises again.
        Distances are never silently clipped.

    Notes
    -----
    Memory: rows live in slabs (``_rowstore.pxd``; 2 MiB huge-page slabs
    for rows of 2 KiB or more); the row length (column capacity) grows by
    1/16 of itself (at least 64 columns), rows are added as nodes arrive.
    The matrix holds ``n * cap`` cells with ``cap <= 1.0625 n + 64``, i.e.
    at most about 1.0625 n^2 bytes (uint8) for large n, plus < 1 slab; growing
    the columns copies the rows slab by slab, so the peak during growth
    exceeds the new size by about two slabs (4 MiB), not by a second
    matrix.  The in-edge lists take 4-8 bytes per edge
    plus 16 per node; "auto" caps them at 1/16 of the matrix + 1 MiB, so the
    total stays below about 1.125 n^2 + 1 MiB.  Add 32 bytes per column
    (work buffers of the search) and 2 KiB for the histogram (512 KiB for
    uint16).

    Time: with lists, one insertion is O(n + sum over improved rows k of
    (indeg(k) + c_k)), c_k = columns lowered in the row k was reached from;
    rows that do not change are read only as in-neighbours of changed ones,
    once each, and a changed row checks only the columns its predecessor in
    the search lowered (see the module docstring).  With the scan it is
    O(n + a*c), a = improved rows, c = columns lowered in row i.  O(n^2 + m)
    in the worst case either way (the paper's bound is O(n^2)); the total
    over Ausiello's sequence is Theta(n^3).  A duplicate edge or self-loop
    is O(1).  ``diameter`` is O(1) amortized (a downward scan over at most
    ``unreachable`` bins, shared across reads); ``avg_distance`` is O(1).

    Not thread-safe: use one instance from one thread at a time (the
    :class:`GraphStats` facade serialises its calls with a lock).

    Examples
    --------
    >>> import numpy as np
    >>> a = APSD(4)
    >>> a.add_edges(np.array([0, 1, 2], np.int32), np.array([1, 2, 3], np.int32))
    3
    >>> a.diameter, a.avg_distance
    (3, 1.6666666666666667)
    >>> int(a.distance(0, 3)), int(a.distance(3, 0)) == a.unreachable
    (3, True)
    """

    cdef RowStore _store
    cdef Py_ssize_t _cap            # columns allocated per row
    cdef Py_ssize_t _limit          # max_nodes, or -1
    cdef int _wide                  # 0: uint8 cells, 1: uint16 cells
    cdef int _itemsize
    cdef int _inf
    cdef ApsdTally _t
    cdef int64_t[::1] _hist
    cdef node_t[::1] _cols
    cdef node_t[::1] _queue
    cdef Py_ssize_t[::1] _q_off
    cdef node_t[::1] _q_len
    cdef uint32_t[::1] _stamp
    cdef AdjLists _inn
    cdef int _use_lists             # searching over in-edge lists (else column scans)
    cdef int _may_drop              # search="auto"
    cdef object _search
    cdef bint _overflowed
    cdef object _overflow_msg

    def __cinit__(self):
        rowstore_init(&self._store)
        adj_init(&self._inn)

    def __init__(self, n=0, *, max_nodes=None, dtype=np.uint8, search="auto"):
        if search not in ("auto", "lists", "scan"):
            raise ValueError(f"search must be 'auto', 'lists' or 'scan', got {search!r}")
        self._search = search
        self._use_lists = search != "scan"
        self._may_drop = search == "auto"
        dt = np.dtype(dtype)
        if dt == np.uint8:
            self._wide, self._itemsize, self._inf = 0, 1, UNREACHABLE_U8
        elif dt == np.uint16:
            self._wide, self._itemsize, self._inf = 1, 2, UNREACHABLE_U16
        else:
            raise ValueError(f"dtype must be uint8 or uint16, got {dt}")
        self._limit = -1 if max_nodes is None else as_count(max_nodes, "max_nodes")
        self._cap = 0
        self._t = ApsdTally(0, 0, 0, 0, 0, 0, 0, 0, 0)
        self._hist = np.zeros(self._inf + 1, dtype=np.int64)
        self._cols = np.zeros(1, dtype=np.int32)
        self._queue = np.zeros(1, dtype=np.int32)
        self._q_off = np.zeros(1, dtype=np.intp)
        self._q_len = np.zeros(1, dtype=np.int32)
        self._stamp = np.zeros(1, dtype=np.uint32)
        self._overflowed = False
        self._overflow_msg = None
        self.add_nodes(n)

    def __dealloc__(self):
        rowstore_free(&self._store)
        adj_free(&self._inn)

    # ------------------------------------------------------------------ growth
    def add_nodes(self, k):
        """Add ``k`` nodes with the next ids; their rows and columns are unreachable.

        Parameters
        ----------
        k : int
            Number of nodes to add (>= 0).

        Raises
        ------
        ValueError
            ``k`` negative, or the instance would exceed ``max_nodes``.
        MemoryError
            Allocation failed (the instance is unchanged).

        Notes
        -----
        O(k * cap) to initialise the new rows; when the column capacity is
        exceeded, additionally O(n * cap) to lengthen the existing rows, which
        happens each time n grows by 1/16, i.e. amortized O(n) per node.
        """
        k = as_count(k)
        cdef Py_ssize_t n = self._store.n_rows
        cdef Py_ssize_t need = n + k, new_cap, r
        if k == 0:
            return
        if self._store.broken:
            raise MemoryError("APSD ran out of memory while growing and is unusable")
        if self._limit >= 0 and need > self._limit:
            raise ValueError(f"cannot add {k} nodes to {n}: max_nodes is {self._limit}")
        if need > self._cap:
            new_cap = grown_capacity(self._cap, need, self._limit)
            if rowstore_set_row_bytes(&self._store, new_cap * self._itemsize, 0xFF,
                                      new_cap * new_cap * self._itemsize >= HUGE_MATRIX) != 0:
                raise MemoryError(f"APSD: cannot grow rows to {new_cap} columns"
                                  + ("; the instance is unusable" if self._store.broken else ""))
            self._cols = np.zeros(4 * new_cap, dtype=np.int32)
            self._queue = np.zeros(new_cap, dtype=np.int32)
            self._q_off = np.zeros(new_cap, dtype=np.intp)
            self._q_len = np.zeros(new_cap, dtype=np.int32)
            stamp = np.zeros(new_cap, dtype=np.uint32)
            stamp[:n] = self._stamp[:n]
            self._stamp = stamp
            self._cap = new_cap
        if self._use_lists and adj_add_nodes(&self._inn, k) != 0:
            raise MemoryError(f"APSD: cannot allocate in-edge lists for {need} nodes")
        if rowstore_add_rows(&self._store, k, 0xFF) != 0:
            if self._use_lists:
                self._inn.n = n   # keep the two in step (the extra lists are empty)
            raise MemoryError(f"APSD: cannot allocate {k} rows of {self._cap} columns")
        for r in range(n, need):
            if self._wide:
                (<uint16_t*> self._store.rows[r])[r] = 0
            else:
                (<uint8_t*> self._store.rows[r])[r] = 0

    # ----------------------------------------------------------------- updates
    def add_edges(self, src, dst):
        """Insert a batch of edges ``src[e] -> dst[e]`` in order.

        The batch is validated first (nothing changes if it is rejected); the
        insertions then run without the GIL.

        Parameters
        ----------
        src, dst : array_like of int
            Node ids in ``[0, n)``; int32 C-contiguous arrays are used
            without a copy.

        Returns
        -------
        int
            Edges that entered the graph (duplicates and self-loops excluded;
            they are counted in ``duplicates`` / ``self_loops``).

        Raises
        ------
        ValueError
            Bad shapes, dtypes or ids; the message names the offending edge.
        DistanceOverflowError
            A distance does not fit the cell type (see the class notes).

        Notes
        -----
        O(n) per edge plus the work of the rows it changes; see the class
        notes.
        """
        self._check_usable()
        s, d = as_edge_arrays(src, dst, self._store.n_rows)
        cdef const node_t[::1] sv = s
        cdef const node_t[::1] dv = d
        cdef Py_ssize_t bad, before = self._t.inserted
        cdef int code = KERNEL_OK
        cdef Py_ssize_t n = self._store.n_rows
        cdef ApsdWork work
        if sv.shape[0] == 0:
            return 0
        work.hist = &self._hist[0]
        work.cols = &self._cols[0]
        work.ncols = self._cols.shape[0]
        work.queue = &self._queue[0]
        work.q_off = &self._q_off[0]
        work.q_len = &self._q_len[0]
        work.stamp = &self._stamp[0]
        work.inn = &self._inn
        work.use_lists = self._use_lists
        work.may_drop = self._may_drop
        work.list_budget = self.nbytes // 16 + LIST_BUDGET_FLOOR
        with nogil:
            if self._wide:
                bad = _insert_batch(<uint16_t**> self._store.rows, n, sv, dv, &work, &self._t, &code)
            else:
                bad = _insert_batch(<uint8_t**> self._store.rows, n, sv, dv, &work, &self._t, &code)
        self._use_lists = work.use_lists
        if bad >= 0:
            if code == KERNEL_DIST_OVERFLOW:
                self._overflowed = True
                self._overflow_msg = (
                    f"edge {bad}: ({sv[bad]}, {dv[bad]}): a shortest distance reaches "
                    f"{self._inf} hops or more and does not fit "
                    f"{'uint16' if self._wide else 'uint8'}; use a wider dtype")
                raise DistanceOverflowError(self._overflow_msg)
            if code == KERNEL_NO_MEMORY:
                raise MemoryError(f"APSD: out of memory at edge {bad}: ({sv[bad]}, {dv[bad]}); "
                                  f"the edges before it are inserted")
            raise RuntimeError(f"APSD kernel failed with code {code} at edge {bad}")
        return self._t.inserted - before

    def add_edge(self, i, j):
        """Insert one edge ``i -> j``; return True if it entered the graph."""
        return self.add_edges(np.array([i], dtype=np.int64), np.array([j], dtype=np.int64)) == 1

    cdef _check_usable(self):
        if self._store.broken:
            raise MemoryError("APSD ran out of memory while growing and is unusable")
        if self._overflowed:
            raise DistanceOverflowError("APSD overflowed earlier and is incomplete: " + self._overflow_msg)

    # ------------------------------------------------------------------- reads
    @property
    def n(self):
        return self._store.n_rows

    @property
    def capacity(self):
        """Columns allocated per row (>= n)."""
        return self._cap

    @property
    def search(self):
        """How step 2 finds the rows to update now: "lists" or "scan"."""
        return "lists" if self._use_lists else "scan"

    @property
    def list_bytes(self):
        """Bytes held by the in-edge lists (0 once dropped, or with search="scan")."""
        return adj_nbytes(&self._inn) if self._use_lists else 0

    @property
    def max_nodes(self):
        return None if self._limit < 0 else self._limit

    @property
    def dtype(self):
        return np.dtype(np.uint16 if self._wide else np.uint8)

    @property
    def unreachable(self):
        return self._inf

    @property
    def overflowed(self):
        return bool(self._overflowed)

    @property
    def nbytes(self):
        return rowstore_nbytes(&self._store)

    @property
    def inserted(self):
        return self._t.inserted

    @property
    def duplicates(self):
        return self._t.duplicates

    @property
    def self_loops(self):
        return self._t.self_loops

    @property
    def updates(self):
        return self._t.updates

    @property
    def rows_visited(self):
        """Rows examined by step 2 so far (improved or not)."""
        return self._t.rows_visited

    @property
    def reachable_pairs(self):
        self._check_usable()
        return self._t.pairs

    @property
    def diameter(self):
        self._check_usable()
        cdef Py_ssize_t b = self._t.hi
        while b > 0 and self._hist[b] == 0:
            b -= 1
        self._t.hi = b
        return int(b)

    @property
    def avg_distance(self):
        self._check_usable()
        if self._t.pairs == 0:
            return 0.0
        return self._t.dist_sum / self._t.pairs

    def histogram(self):
        """Counts of ordered pairs u != v per finite distance.

        Returns
        -------
        ndarray of int64
            ``h[d]`` for d = 0 .. diameter (``h[0]`` is always 0).
        """
        d = self.diameter
        return np.asarray(self._hist[:d + 1]).copy()

    def distance(self, u, v):
        """d(u, v), or ``unreachable``.  O(1)."""
        cdef Py_ssize_t a = u, b = v, n = self._store.n_rows
        if not (0 <= a < n and 0 <= b < n):
            raise ValueError(f"({u}, {v}): node id out of range [0, {n})")
        if self._wide:
            return (<uint16_t*> self._store.rows[a])[b]
        return (<uint8_t*> self._store.rows[a])[b]

    def distances(self):
        """A copy of the n x n distance matrix (``unreachable`` = no path).

        O(n^2) time and memory: for tests and inspection, not for polling.
        """
        cdef Py_ssize_t n = self._store.n_rows, r
        out = np.empty((n, n), dtype=self.dtype)
        cdef char[:, ::1] o = out.view(np.int8)
        for r in range(n):
            memcpy(&o[r, 0], self._store.rows[r], <size_t> (n * self._itemsize))
        return out

    def __repr__(self):
        return (f"APSD(n={self.n}, dtype={self.dtype.name}, search={self.search!r}, "
                f"inserted={self.inserted}, overflowed={self.overflowed})")
