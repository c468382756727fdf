"""Distances from scratch: breadth-first searches from many sources, counted by distance.

:func:`distance_histogram` returns, for a CSR digraph, the number of ordered
pairs (s, v), s != v, at each finite distance, over a set of sources (all by
default): everything the exact distance figures need (diameter, average and
effective diameter, reachable pairs; ``kernels/distances.py``), in O(n)
memory instead of APSD's n^2 bytes.

It is the recomputation the kernel thread uses when the incremental APSD
kernel has fallen behind: with every source it costs O(n (n + m)) however
the graph was built, where the incremental updates still to do can cost
more (measured in ``docs/benchmarks/kernels.md``); and the exact check of
HyperBall's estimates in the tests and benchmarks.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint64_t

import numpy as np

from kernels._types cimport node_t

from abc_crawler.kernels._validation import as_csr

__all__ = ["distance_histogram"]


cdef extern from *:
    """
    static inline int abc_popcount64(unsigned long long x) { return __builtin_popcountll(x); }
    """
    int abc_popcount64(uint64_t x) noexcept nogil


cdef Py_ssize_t _bfs_64(const int64_t* indptr, const node_t* idx, Py_ssize_t n,
                        const node_t* sources, Py_ssize_t k, uint64_t* seen, uint64_t* front,
                        uint64_t* nxt, int64_t* hist, Py_ssize_t hist_len) noexcept nogil:
    """Add the pairs of k <= 64 sources to hist, all searches at once (bit i of a
    word = source i: a multi-source BFS).  Returns the largest distance seen, or -1
    if it did not fit ``hist_len``."""
    cdef Py_ssize_t i, x, top = 0, d = 0
    cdef int64_t e
    cdef uint64_t w, fresh, active = 1
    for x in range(n):
        seen[x] = 0
        front[x] = 0
        nxt[x] = 0
    for i in range(k):
        seen[sources[i]] |= (<uint64_t> 1) << i
        front[sources[i]] |= (<uint64_t> 1) << i
    while active:
        d += 1
        for x in range(n):
            w = front[x]
            if w:
                for e in range(indptr[x], indptr[x + 1]):
                    nxt[idx[e]] |= w
        active = 0
        for x in range(n):
            fresh = nxt[x] & ~seen[x]
            nxt[x] = 0
            front[x] = fresh
            if fresh:
                if d >= hist_len:
                    return -1
                seen[x] |= fresh
                hist[d] += abc_popcount64(fresh)
                active = 1
                top = d
    return top


def distance_histogram(indptr, indices, sources=None):
    """Ordered pairs (s, v), s != v, by finite distance d(s, v), for the given sources.

    Parameters
    ----------
    indptr, indices : array_like of int
        The digraph in CSR form (repeated edges and self-loops are harmless).
    sources : array_like of int, optional
        Sources of the searches (default: every node).

    Returns
    -------
    ndarray of int64
        ``h[d]`` = pairs at distance d, for d = 0 .. the largest distance
        (``h[0]`` = 0); ``[0]`` when no pair is connected.

    Notes
    -----
    The searches run 64 at a time, one bit per source in a 64-bit word per
    node (multi-source BFS: each pass over a node's edges serves every
    search that reached it at that distance): O(ceil(k / 64) D (n + m))
    word operations for k sources and largest distance D, 24 bytes per node
    of scratch; releases the GIL.

    Examples
    --------
    >>> distance_histogram([0, 1, 2, 2], [1, 2]).tolist()    # the path 0 -> 1 -> 2
    [0, 2, 1]
    >>> distance_histogram([0, 1, 2, 2], [1, 2], sources=[1]).tolist()
    [0, 1]
    """
    ip, ix, n = as_csr(indptr, indices)
    if sources is None:
        src = np.arange(n, dtype=np.int32)
    else:
        src = np.ascontiguousarray(np.asarray(sources), dtype=np.int64)
        if src.ndim != 1 or (src.size and (src.min() < 0 or src.max() >= n)):
            raise ValueError(f"sources: expected node ids in [0, {n}), got {np.asarray(sources)!r}")
        src = src.astype(np.int32)
    cdef Py_ssize_t hist_len = min(n, 1 << 16) + 1
    cdef Py_ssize_t top = 0, got, lo
    hist = np.zeros(hist_len, dtype=np.int64)
    words = np.empty((3, max(n, 1)), dtype=np.uint64)
    cdef int64_t[::1] p = ip
    cdef node_t[::1] t = ix
    cdef node_t[::1] sv = src if src.size else np.zeros(1, np.int32)
    cdef uint64_t[:, ::1] wv = words
    cdef int64_t[::1] hv = hist
    cdef Py_ssize_t nn = n, k = src.shape[0]
    with nogil:
        for lo in range(0, k, 64):
            got = _bfs_64(&p[0], &t[0], nn, &sv[lo], min(64, k - lo), &wv[0, 0], &wv[1, 0], &wv[2, 0],
                          &hv[0], hist_len)
            if got < 0:
                top = -1
                break
            if got > top:
                top = got
    if top < 0:
        raise ValueError(f"a shortest distance of {hist_len} hops or more: not supported")
    return hist[:top + 1].copy()
