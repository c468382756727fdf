"""Vertex ranks of a crawled graph: PageRank and harmonic centrality, as Common Crawl ranks hosts.

* :func:`pagerank` — power iteration over the CSR graph (SciPy sparse), damping 0.85, uniform
  teleport, the mass of dangling vertices (no out-edge) spread uniformly: networkx's ``pagerank``
  with its defaults, iterated until the L1 change of one step is below ``tol`` (1e-10).
* :func:`harmonic_centrality` — H(v) = Σ_{u ≠ v} 1 / d(u, v) over the vertices u that reach v
  (networkx's ``harmonic_centrality``; Common Crawl runs HyperBall on the transposed graph for
  the same figure). Exact (:func:`harmonic_exact`: breadth-first searches from every vertex, 64 at
  a time as the bits of one word) for graphs of at most ``exact_max`` vertices; above that
  HyperBall's estimate (:func:`harmonic_hyperball`) with its standard error.

The error of the HyperBall estimate: the counters of the balls B(v, t) (the vertices that reach v
within t) are HyperLogLog counters of 2^b registers, whose relative standard error is
η = 1.04 / √(2^b). H(v) = Σ_t |B(v,t)| (1/t − 1/(t+1)) (+ the last ball over its t) − 1 is a
positive combination of the balls' sizes, so its estimate's standard deviation is at most
η (H(v) + 1) however the counters of one vertex correlate (Boldi & Vigna, "In-core computation
of geometric centralities with HyperBall", 2013). :class:`Harmonic` reports that bound per
vertex (``se``) and η (``rse``).

Examples
--------
>>> import numpy as np
>>> src, dst = np.array([0, 1, 2]), np.array([1, 2, 0])          # a 3-cycle
>>> pagerank(3, src, dst).values.round(4).tolist()
[0.3333, 0.3333, 0.3333]
>>> harmonic_exact(3, src, dst).tolist()                         # 1/1 + 1/2 each
[1.5, 1.5, 1.5]
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

__all__ = ["PageRank", "Harmonic", "pagerank", "harmonic_exact", "harmonic_hyperball", "harmonic_centrality",
           "positions", "DEFAULT_EXACT_MAX", "DEFAULT_LOG2M"]

#: graphs with at most this many vertices get exact harmonic centrality (BFS from every vertex)
DEFAULT_EXACT_MAX = 5000
#: HyperBall registers per counter, 2^b: b = 8, η = 1.04 / 16 = 6.5 %
DEFAULT_LOG2M = 8


@dataclass
class PageRank:
    values: np.ndarray           # float64 [n], sums to 1
    iterations: int
    residual: float              # L1 change of the last step
    seconds: float
    damping: float
    tol: float


@dataclass
class Harmonic:
    values: np.ndarray           # float64 [n]
    se: np.ndarray               # float64 [n]: standard error bound (0 when exact)
    method: str                  # "exact" | "hyperball"
    rse: float                   # η: relative standard error of a counter (0 when exact)
    log2m: int | None
    passes: int                  # BFS levels (exact: the deepest) or HyperBall passes
    seconds: float

    def describe(self) -> str:
        if self.method == "exact":
            return "exact (breadth-first searches from every vertex)"
        return (f"HyperBall estimate, 2^{self.log2m} registers per counter, standard error at most "
                f"{self.rse:.1%} of (H + 1), {self.passes} passes")


def _csr(n: int, src: np.ndarray, dst: np.ndarray, by_dst: bool = False) -> tuple[np.ndarray, np.ndarray]:
    a, b = (np.asarray(dst), np.asarray(src)) if by_dst else (np.asarray(src), np.asarray(dst))
    order = np.argsort(a, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, minlength=n), out=indptr[1:])
    return indptr, np.ascontiguousarray(b[order], dtype=np.int32)


def pagerank(n: int, src, dst, *, damping: float = 0.85, tol: float = 1e-10, max_iter: int = 10000) -> PageRank:
    """PageRank of a digraph given by its edges (repeated edges count with their multiplicity, as
    in networkx's weighted sum; the graphs ``abc-graph`` ranks have none)."""
    from scipy.sparse import csr_matrix

    t0 = time.perf_counter()
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if n == 0:
        return PageRank(np.zeros(0), 0, 0.0, 0.0, damping, tol)
    out = np.bincount(src, minlength=n).astype(np.float64)
    # x_new[v] = damping * (sum over u -> v of x[u] / out[u] + dangling mass / n) + (1 - damping) / n
    m = csr_matrix((1.0 / out[src], (dst, src)), shape=(n, n))
    dangling = np.flatnonzero(out == 0)
    x = np.full(n, 1.0 / n)
    it, err = 0, float("inf")
    while it < max_iter:
        last = x
        x = damping * (m @ last + last[dangling].sum() / n) + (1.0 - damping) / n
        it += 1
        err = float(np.abs(x - last).sum())
        if err < tol:
            break
    else:
        raise RuntimeError(f"PageRank did not converge to {tol} in {max_iter} iterations (last change {err:.3g})")
    return PageRank(x, it, err, time.perf_counter() - t0, damping, tol)


def _popcount(words: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words)
    b = words.view(np.uint8).reshape(words.shape + (8,))          # numpy < 2.0
    return np.unpackbits(b, axis=-1).sum(axis=(-1, -2)).astype(np.uint8)


def harmonic_exact(n: int, src, dst, *, return_levels: bool = False):
    """Exact harmonic centrality: breadth-first searches from every vertex, 64 sources at a time
    (bit i of a vertex's word: reached by source i), one vectorized sweep over the in-lists per
    level; O(n / 64 · diameter · m) word operations."""
    h = np.zeros(n, dtype=np.float64)
    depth = 0
    if n == 0 or len(src) == 0:
        return (h, depth) if return_levels else h
    indptr, pred = _csr(n, src, dst, by_dst=True)        # in-lists: nxt[v] = OR of front[u], u -> v
    has_in = np.flatnonzero(np.diff(indptr) > 0)
    starts = indptr[has_in]
    for lo in range(0, n, 64):
        k = min(64, n - lo)
        bits = np.left_shift(np.uint64(1), np.arange(k, dtype=np.uint64))
        seen = np.zeros(n, dtype=np.uint64)
        seen[lo:lo + k] = bits
        front = seen.copy()
        d = 0
        while True:
            d += 1
            nxt = np.zeros(n, dtype=np.uint64)
            nxt[has_in] = np.bitwise_or.reduceat(front[pred], starts)
            fresh = nxt & ~seen
            hit = np.flatnonzero(fresh)
            if hit.size == 0:
                break
            seen[hit] |= fresh[hit]
            h[hit] += _popcount(fresh[hit]) / d
            front = fresh
        depth = max(depth, d - 1)
    return (h, depth) if return_levels else h


def harmonic_hyperball(n: int, src, dst, *, log2m: int = DEFAULT_LOG2M, seed: int = 0) -> Harmonic:
    """HyperBall's estimate of harmonic centrality (the crawler's kernel,
    :class:`abc_crawler.kernels.HyperBall`, run on the in-lists so that a vertex's counter holds
    the vertices that reach it), with the per-vertex standard error bound η (Ĥ + 1).

    After pass t the counters changed by it are estimated (Ertl's estimator, as the kernel's) and
    Ĥ(v) grows by (|B(v,t)| − |B(v,t−1)|) / t, with |B(v,0)| = 1 exactly."""
    from abc_crawler.kernels import HyperBall
    from abc_crawler.kernels._hyperball import sigma

    t0 = time.perf_counter()
    m = 1 << int(log2m)
    rse = 1.04 / np.sqrt(m)
    h = np.zeros(n, dtype=np.float64)
    if n == 0:
        return Harmonic(h, h.copy(), "hyperball", rse, int(log2m), 0, 0.0)
    indptr, pred = _csr(n, src, dst, by_dst=True)
    hb = HyperBall(indptr, pred, log2m=int(log2m), seed=seed, groups=1)
    p2 = np.ldexp(1.0, -np.arange(256)).astype(np.float64)
    p2[0] = 0.0
    sig = np.array([m * sigma(z / m) for z in range(m + 1)])
    c = (1.0 / (2.0 * np.log(2.0))) * m * m
    prev_est = np.ones(n, dtype=np.float64)            # |B(v, 0)| = 1, exactly
    prev = hb.registers().view(np.uint64)
    rows = max(1, (1 << 22) // m)                      # ~32 MiB of float64 per chunk
    t = 0
    while hb.step():
        t += 1
        regs = hb.registers()
        words = regs.view(np.uint64)
        changed = np.flatnonzero((words != prev).any(axis=1))
        for lo in range(0, changed.size, rows):
            idx = changed[lo:lo + rows]
            r = regs[idx]
            est = c / (p2[r].sum(axis=1) + sig[(r == 0).sum(axis=1)])
            h[idx] += (est - prev_est[idx]) / t
            prev_est[idx] = est
        prev = words
    np.maximum(h, 0.0, out=h)                          # an estimate below 0 stands for H = 0
    return Harmonic(h, rse * (h + 1.0), "hyperball", float(rse), int(log2m), t, time.perf_counter() - t0)


def harmonic_centrality(n: int, src, dst, *, exact_max: int = DEFAULT_EXACT_MAX, log2m: int = DEFAULT_LOG2M,
                        seed: int = 0) -> Harmonic:
    """Exact for at most ``exact_max`` vertices, else HyperBall's estimate."""
    if n <= exact_max:
        t0 = time.perf_counter()
        h, depth = harmonic_exact(n, src, dst, return_levels=True)
        return Harmonic(h, np.zeros(n), "exact", 0.0, None, depth, time.perf_counter() - t0)
    return harmonic_hyperball(n, src, dst, log2m=log2m, seed=seed)


def positions(values: np.ndarray) -> np.ndarray:
    """1-based positions by decreasing value, ties in vertex-id order (Common Crawl's
    ``#harmonicc_pos`` / ``#pr_pos``: ids follow the sorted names)."""
    values = np.asarray(values)
    order = np.lexsort((np.arange(values.size), -values))
    pos = np.empty(values.size, dtype=np.int64)
    pos[order] = np.arange(1, values.size + 1)
    return pos
