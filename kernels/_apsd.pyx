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

Three more savings of the search (measured on the crawl-order graph of
n = 5000, ``docs/benchmarks/kernels.md``: 4.3 s before, about 2 s after):

* One cell per row: the first touch of k from q (layer dqi of the FIFO
  search) decides from d[k][j] alone: k is improved iff d[k][j] > dqi + 2,
  and then d[k][i] = dqi + 1 (proof at the loop), so d[k][i] is never read.
* Groups: a shortest path uses at most one edge into j, so edges i1 -> j,
  i2 -> j, ... are inserted together: step 1 for each row i_t (exact, since
  d[i_t][S] = 0 for S = {i_t}), then one search from all of S, lowering a
  row k to ``d[k][S] + 1 + d[j][x]``.  The batch is grouped by head (stable
  sort) first; the distances after a batch do not depend on the order of
  its edges.  A crawl inserts a new page's waiting in-links together, and a
  batch's links into the same popular page; this halves the rows visited.
* Prefetch across in-lists: a cursor runs ahead of the search over the
  stream of candidates (the in-lists of the queued rows, one after the
  other) and prefetches d[k][j], so the cache misses of many candidates
  overlap even though most in-lists are short.

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
                             KERNEL_OK, LIST_BUDGET_FLOOR, PREFETCH_AHEAD, PREFETCH_MATRIX, PREFETCH_STREAM,
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


cdef struct ApsdWork:
    int64_t* hist       # [unreachable + 1]
    node_t* cols        # [ncols]: changed-column lists of the rows in the search
    Py_ssize_t ncols    #   (row i's list first; >= capacity)
    node_t* queue       # [capacity]: the breadth-first search of step 2
    Py_ssize_t* q_off   # [capacity]: queue[h]'s list is cols[q_off[h] : q_off[h] + q_len[h]]
    node_t* q_len       # [capacity]
    node_t* q_dist      # [capacity]: d[queue[h]][i]
    uint32_t* stamp     # [capacity]
    uint32_t epoch      # search stamp: node k is visited iff stamp[k] == epoch
    int prefetch        # run the search's prefetch cursor (the matrix outgrows the caches)
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
cdef inline int _step1(dist_t* ri, dist_t* rj, Py_ssize_t n, int64_t* hist, Acc* acc,
                       node_t* out, Py_ssize_t* nc) noexcept nogil:
    """Row i from row j (Fig. 8, lines 10-11): ``ri[x] = min(ri[x], 1 + rj[x])``.

    The lowered columns go to ``out[0 .. nc-1]``.  Returns KERNEL_OK, or
    KERNEL_DIST_OVERFLOW if i comes to reach a column at a distance the type
    cannot hold.
    """
    cdef int inf
    if dist_t is uint8_t:
        inf = UNREACHABLE_U8
    else:
        inf = UNREACHABLE_U16
    cdef Py_ssize_t x, c = 0
    cdef int dj, di, cand
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
            out[c] = <node_t> x
            c += 1
        elif di == inf:
            nc[0] = c
            acc.upd += c
            return KERNEL_DIST_OVERFLOW
    nc[0] = c
    acc.upd += c
    return KERNEL_OK


@cython.cdivision(True)
cdef int _scan_rows(dist_t** rows, Py_ssize_t n, node_t i, node_t j, node_t* cols,
                    Py_ssize_t nc, int64_t* hist, Acc* acc, int64_t* visited) noexcept nogil:
    """Step 2 (Fig. 8, lines 14-22) as in the paper, a scan of column i,
    minus the rows that cannot improve (module docstring)."""
    cdef int inf
    if dist_t is uint8_t:
        inf = UNREACHABLE_U8
    else:
        inf = UNREACHABLE_U16
    cdef dist_t* ri = rows[i]
    cdef dist_t* rk
    cdef Py_ssize_t k, used = 0
    cdef int dki, dk, code
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
        visited[0] += 1
        code = _lower_row(rk, dki, ri, cols, nc, hist, acc, NULL, &used, 0)
        if code != KERNEL_OK:
            return code
    return KERNEL_OK


@cython.cdivision(True)
cdef int _search_rows(dist_t** rows, node_t j, Py_ssize_t nroots, Py_ssize_t used,
                      ApsdWork* w, int64_t* hist, Acc* acc, int64_t* visited) noexcept nogil:
    """Step 2 (Fig. 8, lines 14-22) for a group of new edges i -> j, i in
    the set S of roots ``queue[0 .. nroots-1]`` (each with its step-1 list
    of lowered columns in ``cols``, stamped with ``w.epoch``).

    A breadth-first search from S over in-edges visits the rows k whose
    distance to j drops, d[k][S] + 1 < d[k][j], and lowers them to
    ``d[k][S] + 1 + d[j][x]`` on the columns their predecessor in the search
    lowered (module docstring).
    """
    cdef int inf
    if dist_t is uint8_t:
        inf = UNREACHABLE_U8
    else:
        inf = UNREACHABLE_U16
    cdef dist_t* rj = rows[j]
    cdef dist_t* rk
    cdef node_t* cols = w.cols
    cdef node_t* queue = w.queue
    cdef uint32_t* stamp = w.stamp
    cdef uint32_t epoch = w.epoch
    cdef Py_ssize_t head = 0, tail = nroots, e, deg, off, plen, start
    cdef Py_ssize_t pf_h = 0, pf_e = 0, ahead = 0
    cdef node_t q, k, pq, pk
    cdef node_t* preds
    cdef int dk, dqi, code = KERNEL_OK
    # The candidates of the search are the in-lists of queue[0], queue[1],
    # ... in turn; most lists are short, so a prefetch a few entries ahead
    # *within* a list would rarely fire.  A cursor (pf_h, pf_e) walks the
    # same stream PREFETCH_STREAM candidates ahead of the search, across
    # lists (it waits at the queue's tail), and asks for the one cell
    # d[k][j] each candidate reads.  (Only for matrices of PREFETCH_MATRIX
    # bytes or more; smaller ones stay in the caches and the cursor would
    # be pure overhead.)
    while head < tail:
        q = queue[head]
        off = w.q_off[head]
        plen = w.q_len[head]
        dqi = w.q_dist[head]
        head += 1
        preds = w.inn.nbrs[q]
        deg = w.inn.deg[q]
        for e in range(deg):
            while w.prefetch and ahead <= PREFETCH_STREAM and pf_h < tail:
                pq = queue[pf_h]
                if pf_e < w.inn.deg[pq]:
                    pk = w.inn.nbrs[pq][pf_e]
                    pf_e += 1
                    ahead += 1
                    if stamp[pk] != epoch:
                        ABC_PREFETCH(rows[pk] + j)
                else:
                    pf_h += 1
                    pf_e = 0
            ahead -= 1
            k = preds[e]
            if stamp[k] == epoch:
                continue
            # First touch of k decides, from one cell: k is improved iff
            # d[k][j] > dqi + 2, and then d[k][S] = dqi + 1.  If k is
            # improved, so is the next node on each of its shortest ways to
            # S (module docstring); those sit in layer d[k][S] - 1 of the
            # FIFO search, and no out-neighbour of k is in an earlier layer,
            # so q is in that layer and d[k][S] = dqi + 1 < d[k][j] - 1.  If
            # k is not improved, d[k][j] <= d[k][S] + 1 <= dqi + 2 (q is an
            # out-neighbour of k).  So every row is read at most once per
            # search, and only at column j.
            stamp[k] = epoch
            visited[0] += 1
            rk = rows[k]
            dk = rk[j]
            if dk != inf and dk <= dqi + 2:
                continue                # not improved: nothing to do here or above
            start = used
            code = _lower_row(rk, dqi + 2, rj, cols + off, plen, hist, acc, cols, &used, w.ncols)
            if code != KERNEL_OK:
                return code
            queue[tail] = k
            w.q_dist[tail] = dqi + 1
            if used <= w.ncols:
                w.q_off[tail] = start
                w.q_len[tail] = <node_t> (used - start)
            else:
                used = start            # no room: reuse the parent's list
                w.q_off[tail] = off
                w.q_len[tail] = <node_t> plen
            tail += 1
    return KERNEL_OK


cdef inline void _new_epoch(ApsdWork* w, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t x
    w.epoch += 1
    if w.epoch == 0:                        # wrapped: forget every old stamp
        for x in range(n):
            w.stamp[x] = 0
        w.epoch = 1


@cython.cdivision(True)
cdef int _insert_group(dist_t** rows, Py_ssize_t n, const node_t* src, Py_ssize_t cnt,
                       node_t j, ApsdWork* w, ApsdTally* t, Py_ssize_t* failed) noexcept nogil:
    """Insert the edges src[c] -> j, c = 0 .. cnt-1 (0 <= ids < n).

    A shortest path uses at most one edge into j, so the edges of the group
    can share one search: every row i = src[c] first gets step 1
    (``d[i][x] = min(d[i][x], 1 + d[j][x])``, exact since d[i][S] = 0), then
    one search from all of them does step 2.  Without in-edge lists the
    edges go one at a time through the paper's column scan.  Returns a
    KERNEL_* code; on failure ``failed[0]`` is the offending c.
    """
    cdef dist_t* rj = rows[j]
    cdef dist_t* ri
    cdef node_t i
    cdef Py_ssize_t c, used = 0, nc, nroots = 0, last = 0
    cdef int code = KERNEL_OK, drop
    cdef int64_t visited = 0
    cdef Acc acc
    acc.pairs, acc.dsum, acc.upd, acc.hi = t.pairs, t.dist_sum, 0, t.hi
    for c in range(cnt):
        i = src[c]
        if i == j:
            t.self_loops += 1
            continue
        ri = rows[i]
        if ri[j] == 1:
            t.duplicates += 1
            continue
        drop = w.use_lists and w.may_drop and adj_nbytes(w.inn) > w.list_budget
        if nroots and (drop or used + n > w.ncols):
            # Finish the roots so far: no room for another step-1 list, or
            # the lists are about to go.
            code = _search_rows(rows, j, nroots, used, w, w.hist, &acc, &visited)
            nroots, used = 0, 0
            if code != KERNEL_OK:
                failed[0] = last
                break
        if drop:
            adj_free(w.inn)                 # dense graph: back to the column scan
            w.use_lists = 0
        if w.use_lists and adj_append(w.inn, j, i) != 0:
            code = KERNEL_NO_MEMORY
            failed[0] = c
            break
        t.inserted += 1
        code = _step1(ri, rj, n, w.hist, &acc, w.cols + used, &nc)
        if code == KERNEL_OK and not w.use_lists:
            code = _scan_rows(rows, n, i, j, w.cols, nc, w.hist, &acc, &visited)
        elif code == KERNEL_OK:
            if nroots == 0:
                _new_epoch(w, n)
            w.stamp[i] = w.epoch
            w.queue[nroots] = i
            w.q_off[nroots] = used
            w.q_len[nroots] = <node_t> nc
            w.q_dist[nroots] = 0
            nroots += 1
            used += nc
            last = c
        if code != KERNEL_OK:
            failed[0] = c
            break
    if code == KERNEL_OK and nroots:
        code = _search_rows(rows, j, nroots, used, w, w.hist, &acc, &visited)
        if code != KERNEL_OK:
            failed[0] = last
    t.updates += acc.upd
    t.rows_visited += visited
    t.pairs = acc.pairs
    t.dist_sum = acc.dsum
    t.hi = acc.hi
    return code


cdef Py_ssize_t _insert_batch(dist_t** rows, Py_ssize_t n,
                              const node_t[::1] src, const node_t[::1] dst,
                              ApsdWork* w, ApsdTally* t, int* code) noexcept nogil:
    """Insert every edge of the batch, consecutive edges with the same head
    as one group; return -1, or the index of the edge whose insertion
    failed (its code in ``code[0]``)."""
    cdef Py_ssize_t e = 0, end, m = src.shape[0], failed = 0
    while e < m:
        end = e + 1
        while end < m and dst[end] == dst[e]:
            end += 1
        code[0] = _insert_group(rows, n, &src[e], end - e, dst[e], w, t, &failed)
        if code[0] != KERNEL_OK:
            return e + failed
        e = end
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
        ``dtype``.  The message names the offending edge (its index in the
        batch as passed); the batch is partly applied (with search "scan":
        the edges before it are inserted), and the instance is marked
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
    cdef node_t[::1] _q_dist
    cdef uint32_t[::1] _stamp
    cdef uint32_t _epoch            # the search's stamp (ApsdWork.epoch between batches)
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
        self._t = ApsdTally(0, 0, 0, 0, 0, 0, 0, 0)
        self._epoch = 0
        self._hist = np.zeros(self._inf + 1, dtype=np.int64)
        self._cols = np.zeros(1, dtype=np.int32)
        self._queue = np.zeros(1, dtype=np.int32)
        self._q_off = np.zeros(1, dtype=np.intp)
        self._q_len = np.zeros(1, dtype=np.int32)
        self._q_dist = np.zeros(1, dtype=np.int32)
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
            self._q_dist = np.zeros(new_cap, dtype=np.int32)
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
        """Insert a batch of edges ``src[e] -> dst[e]``.

        The batch is validated first (nothing changes if it is rejected); the
        insertions then run without the GIL.  While the in-edge lists are in
        use, the batch is regrouped by head (stable sort on ``dst``) and each
        group of edges into one node shares a search (module docstring); the
        distances after the call are those of the graph with every edge of
        the batch, whatever their order.

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
        order = None
        if self._use_lists and s.shape[0] > 1 and bool((d[1:] < d[:-1]).any()):
            # Group the batch by head (stable): edges into the same node share
            # one search (class notes).  The distances after the batch do not
            # depend on the order of its edges.
            order = np.argsort(d, kind="stable")
            s, d = s[order], d[order]
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
        work.q_dist = &self._q_dist[0]
        work.stamp = &self._stamp[0]
        work.epoch = self._epoch
        work.inn = &self._inn
        work.use_lists = self._use_lists
        work.may_drop = self._may_drop
        work.list_budget = self.nbytes // 16 + LIST_BUDGET_FLOOR
        work.prefetch = self.nbytes >= PREFETCH_MATRIX
        with nogil:
            if self._wide:
                bad = _insert_batch(<uint16_t**> self._store.rows, n, sv, dv, &work, &self._t, &code)
            else:
                bad = _insert_batch(<uint8_t**> self._store.rows, n, sv, dv, &work, &self._t, &code)
        self._use_lists = work.use_lists
        self._epoch = work.epoch
        if bad >= 0:
            pos = bad if order is None else int(order[bad])      # index in the caller's batch
            if code == KERNEL_DIST_OVERFLOW:
                self._overflowed = True
                self._overflow_msg = (
                    f"edge {pos}: ({sv[bad]}, {dv[bad]}): a shortest distance reaches "
                    f"{self._inf} hops or more and does not fit "
                    f"{'uint16' if self._wide else 'uint8'}; use a wider dtype")
                raise DistanceOverflowError(self._overflow_msg)
            if code == KERNEL_NO_MEMORY:
                raise MemoryError(f"APSD: out of memory at edge {pos}: ({sv[bad]}, {dv[bad]}); "
                                  + ("the edges before it are inserted" if order is None else
                                     "the batch is partly inserted"))
            raise RuntimeError(f"APSD kernel failed with code {code} at edge {pos}")
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
