"""GraphBench-style edge insertion sequences (SPAWC Appendix C).

Each generator returns an :class:`EdgeSequence`: a node count and the edges
in insertion order, as int32 arrays ready for the kernels.  Used by the
tests and by ``bench/graphbench.py``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["EdgeSequence", "ausiello", "complete", "sanity_graphs", "random_graph", "crawl_like",
           "from_session"]


class EdgeSequence(NamedTuple):
    """A graph as an edge insertion sequence."""

    name: str
    n: int
    src: np.ndarray     # int32 [m]
    dst: np.ndarray     # int32 [m]

    @property
    def m(self) -> int:
        return int(self.src.shape[0])


def _seq(name: str, n: int, edges) -> EdgeSequence:
    e = np.asarray(edges, dtype=np.int32).reshape(-1, 2)
    return EdgeSequence(name, n, np.ascontiguousarray(e[:, 0]), np.ascontiguousarray(e[:, 1]))


def ausiello(n: int) -> EdgeSequence:
    """Ausiello et al.'s sequence needing Omega(n^3) distance updates.

    With k = n/3, nodes are s_1..s_k (ids 0..k-1), x_1..x_k (k..2k-1) and
    t_1..t_k (2k..3k-1).  Inserted in this order (SPAWC Appendix C.1, Fig. 19):

    1. s_i -> x_1 for i = 1..k;
    2. the chain x_{i-1} -> x_i for i = 2..k;
    3. x_k -> t_i for i = 1..k;
    4. the shortcuts x_1 -> x_i for i = 2..k, in increasing i.

    After step 3 every d(s_a, t_b) is k + 1; each shortcut x_1 -> x_i with
    i >= 3 lowers all k^2 of them by one, hence >= (k - 2) k^2 updates.  The
    first shortcut x_1 -> x_2 repeats a chain edge, so the sequence has
    4k - 2 insertions of 4k - 3 distinct edges (SPAWC's a300 has 397 edges).

    Final distances: d(s, x_1) = 1, d(s, x_i) = 2 (i >= 2), d(s, t) = 3,
    d(x_1, x_i) = 1, d(x_1, t) = 2, d(x_i, x_l) = l - i (2 <= i < l),
    d(x_i, t) = k - i + 1 (i >= 2); diameter max(3, k - 1).

    The largest distance along the way is k + 1, so uint8 distances
    overflow for k >= 254 (n >= 762).

    Parameters
    ----------
    n : int
        Number of nodes, a positive multiple of 3.

    Examples
    --------
    >>> g = ausiello(6)
    >>> list(zip(g.src.tolist(), g.dst.tolist()))
    [(0, 2), (1, 2), (2, 3), (3, 4), (3, 5), (2, 3)]
    """
    if n <= 0 or n % 3:
        raise ValueError(f"ausiello: n must be a positive multiple of 3, got {n}")
    k = n // 3
    s, x, t = range(0, k), range(k, 2 * k), range(2 * k, 3 * k)
    edges = [(s[i], x[0]) for i in range(k)]
    edges += [(x[i - 1], x[i]) for i in range(1, k)]
    edges += [(x[k - 1], t[i]) for i in range(k)]
    edges += [(x[0], x[i]) for i in range(1, k)]
    return _seq(f"a{n}", n, edges)


def complete(n: int) -> EdgeSequence:
    """The complete digraph on n nodes, edges (i, j), i != j, in row-major order.

    Examples
    --------
    >>> complete(3).src.tolist(), complete(3).dst.tolist()
    ([0, 0, 1, 1, 2, 2], [1, 2, 0, 2, 0, 1])
    """
    i, j = np.divmod(np.arange(n * n, dtype=np.int64), n)
    keep = i != j
    return EdgeSequence(f"c{n}", n, i[keep].astype(np.int32), j[keep].astype(np.int32))


def sanity_graphs() -> list[EdgeSequence]:
    """Three small graphs in the spirit of GraphBench's sc1..sc3 (8/11, 8/14, 4/6).

    * sc1: two directed 4-cycles joined one way (2 SCCs);
    * sc2: a layered graph 0 -> {1, 2} -> 3 -> ... -> 7 with two back edges
      (2 SCCs), a repeated edge and a self-loop mixed in;
    * sc3: a 4-cycle with two chords (1 SCC).
    """
    sc1 = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4), (3, 4), (1, 5), (2, 6)]
    sc2 = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7),
           (3, 4), (7, 7), (2, 5), (6, 3), (1, 7), (4, 0)]
    sc3 = [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (1, 3)]
    return [_seq("sc1", 8, sc1), _seq("sc2", 8, sc2), _seq("sc3", 4, sc3)]


def random_graph(n: int, m: int, seed: int = 0) -> EdgeSequence:
    """m uniformly random edges (repeats and self-loops possible) on n nodes."""
    rng = np.random.default_rng(seed)
    return EdgeSequence(f"r{n}_{m}", n, rng.integers(0, n, m, dtype=np.int32),
                        rng.integers(0, n, m, dtype=np.int32))


def crawl_like(n: int, avg_out: float = 10.0, seed: int = 0, site_size: int = 40) -> EdgeSequence:
    """A synthetic web graph, as the coordinator would insert it while crawling.

    A hidden web of ``n`` pages is made first: pages fall into sites of
    about ``site_size`` pages; each page has a Poisson(``avg_out``) number
    of links, 70 % to a page of its own site and 30 % to a page anywhere,
    skewed towards a few popular pages.  It is then crawled breadth-first
    (restarting at the first unvisited page when the frontier empties), and
    the edges are emitted the way SPAWC's UPDATE GRAPH (Fig. 4) inserts them:
    when page v is crawled it gets the next dense id, then the waiting links
    u -> v from pages crawled earlier are inserted, then v's own links to
    pages crawled already; links to pages not crawled yet wait.  Every page
    is crawled, so the node ids are 0 .. n-1 in crawl order.

    Examples
    --------
    >>> g = crawl_like(50, seed=1)
    >>> g.n, bool(g.m > 100), bool((g.src != g.dst).all())
    (50, True, True)
    """
    rng = np.random.default_rng(seed)
    site = np.minimum(np.arange(n) // max(1, site_size), n)
    site_lo = np.searchsorted(site, site, side="left")
    site_hi = np.searchsorted(site, site, side="right")
    links: list[list[int]] = []
    for p in range(n):
        k = int(rng.poisson(avg_out))
        local = rng.random(k) < 0.7
        t = np.where(local, rng.integers(site_lo[p], site_hi[p], k),
                     (n * rng.random(k) ** 3).astype(np.int64))
        links.append(sorted(set(t.tolist()) - {p}))
    order = np.full(n, -1, dtype=np.int64)        # hidden page -> dense id
    waiting: list[list[int]] = [[] for _ in range(n)]
    src: list[int] = []
    dst: list[int] = []
    queue, head, nxt = [], 0, 0
    for root in range(n):
        if order[root] >= 0 or root in queue[head:]:
            continue
        queue.append(root)
        seen = set(queue)
        while head < len(queue):
            v = queue[head]
            head += 1
            order[v] = nxt
            nxt += 1
            for u in waiting[v]:                  # links_to[v], in arrival order
                src.append(int(order[u]))
                dst.append(int(order[v]))
            waiting[v] = []
            for w in links[v]:
                if order[w] >= 0:
                    src.append(int(order[v]))
                    dst.append(int(order[w]))
                else:
                    waiting[w].append(v)
                    if w not in seen:
                        seen.add(w)
                        queue.append(w)
    return EdgeSequence(f"crawl{n}", n, np.asarray(src, dtype=np.int32), np.asarray(dst, dtype=np.int32))


def from_session(path) -> EdgeSequence:
    """The crawled graph of a session, in crawl order (``graph.npz``: ``edge_src``/``edge_dst``).

    Parameters
    ----------
    path : str or os.PathLike
        A session directory or its ``graph.npz``.
    """
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        p = p / "graph.npz"
    with np.load(p, allow_pickle=False) as z:
        src = np.ascontiguousarray(z["edge_src"], dtype=np.int32)
        dst = np.ascontiguousarray(z["edge_dst"], dtype=np.int32)
        if "node_url" in z.files:
            n = int(z["node_url"].shape[0])
        else:
            n = int(max(src.max(initial=-1), dst.max(initial=-1)) + 1)
    return EdgeSequence(f"session:{p.parent.name}", n, src, dst)
