"""Pure-Python/NumPy references of the graph kernels, for tests.

Each class mirrors the public API of its Cython kernel and does the
obvious thing, with no attention to memory or speed:

* :class:`ReferenceAPSD`: SPAWC Algorithm 1 on an int64 NumPy matrix (no
  overflow possible), with every statistic recomputed from the matrix.
* :class:`ReferenceSCC`: SPAWC SCC Algorithm 2 on a bool matrix; components
  read off mutual reachability.
* :class:`ReferenceDegrees`: a Python set of edges and per-node counters.
* :class:`ReferenceWholeSCC`: the whole graph's components recomputed from
  scratch after every batch (:func:`scc_labels`, Kosaraju in plain Python).
* :class:`ReferenceHyperBall`: HyperBall with NumPy, every counter and every
  estimate recomputed at every pass (the kernel updates them by differences).
* :func:`bfs_distances`: all-pairs BFS from scratch, in plain Python;
  :func:`neighbourhood_function`: the exact N(t) from it.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from abc_crawler.kernels._validation import as_count, as_edge_arrays

__all__ = ["ReferenceAPSD", "ReferenceSCC", "ReferenceDegrees", "ReferenceWholeSCC", "ReferenceHyperBall",
           "bfs_distances", "distance_stats", "scc_labels", "neighbourhood_function", "splitmix64",
           "hll_estimates"]

_INF = 1 << 40      # "no path"; sums of two stay far below int64 overflow


def bfs_distances(n: int, src, dst, unreachable: int = 255) -> np.ndarray:
    """All-pairs shortest distances by one BFS per source.

    Parameters
    ----------
    n : int
        Nodes ``0 .. n-1``.
    src, dst : array_like of int
        Edges ``src[e] -> dst[e]`` (repeats and self-loops are harmless).
    unreachable : int, optional
        Value for "no path" (default 255).

    Returns
    -------
    ndarray of int64, shape (n, n)

    Notes
    -----
    O(n (n + m)) time.

    Examples
    --------
    >>> bfs_distances(3, [0, 1], [1, 2]).tolist()
    [[0, 1, 2], [255, 0, 1], [255, 255, 0]]
    """
    adj: list[list[int]] = [[] for _ in range(n)]
    for u, v in zip(np.asarray(src).tolist(), np.asarray(dst).tolist()):
        adj[u].append(v)
    out = np.full((n, n), unreachable, dtype=np.int64)
    for s in range(n):
        out[s, s] = 0
        queue = deque([s])
        while queue:
            u = queue.popleft()
            for v in adj[u]:
                if out[s, v] == unreachable and v != s:
                    out[s, v] = out[s, u] + 1
                    queue.append(v)
    return out


def distance_stats(dist: np.ndarray, unreachable: int) -> tuple[int, float, np.ndarray]:
    """Diameter, average distance and histogram of a distance matrix.

    Over ordered pairs u != v with ``dist[u, v] != unreachable``.  Returns
    ``(diameter, avg_distance, hist)`` with ``hist[d]`` the number of pairs at
    distance d for d = 0 .. diameter; (0, 0.0, [0]) when no pair is connected.
    """
    d = np.asarray(dist, dtype=np.int64)
    off = ~np.eye(d.shape[0], dtype=bool)
    finite = d[off & (d != unreachable)]
    if finite.size == 0:
        return 0, 0.0, np.zeros(1, dtype=np.int64)
    diameter = int(finite.max())
    return diameter, float(finite.sum() / finite.size), np.bincount(finite, minlength=diameter + 1)


class ReferenceAPSD:
    """SPAWC Algorithm 1 (Fig. 8), vectorized over rows with NumPy."""

    def __init__(self, n: int = 0):
        self.d = np.zeros((0, 0), dtype=np.int64)
        self.inserted = self.duplicates = self.self_loops = 0
        self.add_nodes(n)

    @property
    def n(self) -> int:
        return self.d.shape[0]

    def add_nodes(self, k: int) -> None:
        k, n = as_count(k), self.n
        d = np.full((n + k, n + k), _INF, dtype=np.int64)
        d[:n, :n] = self.d
        np.fill_diagonal(d, 0)
        self.d = d

    def add_edges(self, src, dst) -> int:
        s, t = as_edge_arrays(src, dst, self.n)
        before = self.inserted
        d = self.d
        for i, j in zip(s.tolist(), t.tolist()):
            if i == j:
                self.self_loops += 1
                continue
            if d[i, j] == 1:
                self.duplicates += 1
                continue
            self.inserted += 1
            d[i] = np.minimum(d[i], d[j] + 1)                    # row i from row j
            anc = d[:, i] < _INF                                 # rows that reach i
            anc[i] = anc[j] = False
            d[anc] = np.minimum(d[anc], d[anc, i][:, None] + d[i][None, :])
        return self.inserted - before

    def distances(self, unreachable: int = 255) -> np.ndarray:
        """The matrix with ``unreachable`` for "no path" (int64, no overflow)."""
        return np.where(self.d >= _INF, unreachable, self.d)

    def _stats(self):
        return distance_stats(self.distances(-1), -1)

    @property
    def diameter(self) -> int:
        return self._stats()[0]

    @property
    def avg_distance(self) -> float:
        return self._stats()[1]

    def histogram(self) -> np.ndarray:
        return self._stats()[2]

    @property
    def reachable_pairs(self) -> int:
        return int(self._stats()[2].sum())


class ReferenceSCC:
    """SPAWC SCC Algorithm 2 (Fig. 13) on a bool transitive-closure matrix."""

    def __init__(self, n: int = 0):
        self.t = np.zeros((0, 0), dtype=bool)
        self.inserted = self.redundant = self.self_loops = 0
        self.add_nodes(n)

    @property
    def n(self) -> int:
        return self.t.shape[0]

    def add_nodes(self, k: int) -> None:
        k, n = as_count(k), self.n
        t = np.zeros((n + k, n + k), dtype=bool)
        t[:n, :n] = self.t
        np.fill_diagonal(t, True)
        self.t = t

    def add_edges(self, src, dst) -> int:
        s, d = as_edge_arrays(src, dst, self.n)
        before = self.inserted
        t = self.t
        for u, v in zip(s.tolist(), d.tolist()):
            if u == v:
                self.self_loops += 1
            elif t[u, v]:
                self.redundant += 1
            else:
                self.inserted += 1
                t[u] |= t[v]
                t[t[:, u]] |= t[u]      # every row that reaches u
        return self.inserted - before

    def closure(self) -> np.ndarray:
        return self.t.copy()

    def labels(self) -> np.ndarray:
        """Label = rank of the component's smallest node (0, 1, ... by first appearance)."""
        if self.n == 0:
            return np.zeros(0, dtype=np.int32)
        mutual = self.t & self.t.T
        smallest = mutual.argmax(axis=1)            # first True: the diagonal guarantees one
        _, labels = np.unique(smallest, return_inverse=True)
        return labels.astype(np.int32)

    @property
    def count(self) -> int:
        return int(np.unique(self.labels()).size)


class ReferenceDegrees:
    """Degrees from a Python set of edges."""

    def __init__(self, n: int = 0):
        self.n = 0
        self.edge_set: set[tuple[int, int]] = set()
        self.duplicates = self.self_loops = 0
        self.add_nodes(n)

    def add_nodes(self, k: int) -> None:
        self.n += as_count(k)

    def add_edges(self, src, dst) -> int:
        s, d = as_edge_arrays(src, dst, self.n)
        before = len(self.edge_set)
        for u, v in zip(s.tolist(), d.tolist()):
            if u == v:
                self.self_loops += 1
            elif (u, v) in self.edge_set:
                self.duplicates += 1
            else:
                self.edge_set.add((u, v))
        return len(self.edge_set) - before

    @property
    def edges(self) -> int:
        return len(self.edge_set)

    def out_degree(self) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.int32)
        for u, _ in self.edge_set:
            out[u] += 1
        return out

    def in_degree(self) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.int32)
        for _, v in self.edge_set:
            out[v] += 1
        return out

    def out_hist(self) -> np.ndarray:
        return np.bincount(self.out_degree()).astype(np.int64)

    def in_hist(self) -> np.ndarray:
        return np.bincount(self.in_degree()).astype(np.int64)

    @property
    def dangling(self) -> int:
        return int((self.out_degree() == 0).sum())


# ----------------------------------------------------------------- whole graph
def scc_labels(n: int, src, dst) -> np.ndarray:
    """Strong components by Kosaraju's algorithm (two iterative DFS), plain Python.

    Labels are numbered 0, 1, ... in order of each component's smallest node.

    Examples
    --------
    >>> scc_labels(4, [0, 1, 2], [1, 0, 3]).tolist()
    [0, 0, 1, 2]
    """
    out: list[list[int]] = [[] for _ in range(n)]
    inn: list[list[int]] = [[] for _ in range(n)]
    for u, v in zip(np.asarray(src).tolist(), np.asarray(dst).tolist()):
        out[u].append(v)
        inn[v].append(u)
    seen = [False] * n
    finish: list[int] = []
    for s in range(n):                          # 1: finishing order on the graph
        if seen[s]:
            continue
        seen[s] = True
        stack = [(s, iter(out[s]))]
        while stack:
            v, it = stack[-1]
            for w in it:
                if not seen[w]:
                    seen[w] = True
                    stack.append((w, iter(out[w])))
                    break
            else:
                stack.pop()
                finish.append(v)
    comp = [-1] * n
    k = 0
    for s in reversed(finish):                  # 2: DFS on the reverse graph
        if comp[s] >= 0:
            continue
        comp[s] = k
        todo = [s]
        while todo:
            v = todo.pop()
            for w in inn[v]:
                if comp[w] < 0:
                    comp[w] = k
                    todo.append(w)
        k += 1
    first: dict[int, int] = {}
    return np.array([first.setdefault(c, len(first)) for c in comp], dtype=np.int32)


class ReferenceWholeSCC:
    """The whole graph's components, recomputed from scratch after every batch."""

    def __init__(self, n: int = 0):
        self.n = 0
        self.src: list[int] = []
        self.dst: list[int] = []
        self._labels = np.zeros(0, dtype=np.int32)
        self.add_nodes(n)

    def add_nodes(self, k: int) -> None:
        k = as_count(k)
        self._labels = np.concatenate([self._labels, np.arange(k, dtype=np.int32) + (
            int(self._labels.max()) + 1 if self._labels.size else 0)])
        self.n += k

    def add_edges(self, src, dst) -> int:
        s, d = as_edge_arrays(src, dst, self.n)
        keep = s != d
        self.src += s[keep].tolist()
        self.dst += d[keep].tolist()
        self._labels = scc_labels(self.n, self.src, self.dst)
        return int(keep.sum())

    def labels(self) -> np.ndarray:
        return scc_labels(self.n, self.src, self.dst)

    @property
    def count(self) -> int:
        return int(np.unique(self.labels()).size)

    @property
    def largest(self) -> int:
        lab = self.labels()
        return int(np.bincount(lab).max()) if lab.size else 0

    def size_counts(self) -> np.ndarray:
        sizes = np.bincount(np.bincount(self.labels())) if self.n else np.zeros(0, np.int64)
        nz = np.flatnonzero(sizes)
        return np.stack([nz, sizes[nz]], axis=1).astype(np.int64) if nz.size else np.zeros((0, 2), np.int64)


def neighbourhood_function(n: int, src, dst) -> np.ndarray:
    """Exact N(t), t = 0 .. the largest finite distance: pairs (x, y) with d(x, y) <= t.

    Examples
    --------
    >>> neighbourhood_function(3, [0, 1], [1, 2]).tolist()
    [3, 5, 6]
    """
    d = bfs_distances(n, src, dst, unreachable=-1)
    fin = d[d >= 0]
    return np.cumsum(np.bincount(fin)) if fin.size else np.zeros(1, dtype=np.int64)


_M64 = (1 << 64) - 1


def splitmix64(z: int) -> int:
    """The splitmix64 finalizer on a Python int (the kernels' node hash)."""
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _sigma(x: float) -> float:
    if x >= 1.0:
        return float("inf")
    y, z, zp = 1.0, x, -1.0
    while z != zp:
        x *= x
        zp = z
        z += x * y
        y += y
    return z


def hll_estimates(reg: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Ertl's estimate of every counter (rows of ``reg``), and without each register group.

    Returns ``(full [n], loo [n, groups])``.
    """
    reg = np.asarray(reg)
    n, m = reg.shape
    gsize = m // groups
    alpha = 1 / (2 * np.log(2))
    p = np.where(reg > 0, np.ldexp(1.0, -reg.astype(np.int64)), 0.0)
    zeros = (reg == 0)
    sg = p.reshape(n, groups, gsize).sum(axis=2)
    zg = zeros.reshape(n, groups, gsize).sum(axis=2)
    S, Z = sg.sum(axis=1), zg.sum(axis=1)
    sig = np.vectorize(lambda z, mm: mm * _sigma(z / mm))
    full = alpha * m * m / (S + sig(Z, m))
    ml = m - gsize if groups > 1 else m
    loo = alpha * ml * ml / ((S[:, None] - sg) + sig(Z[:, None] - zg, ml)) if groups > 1 else full[:, None]
    return full, loo


class ReferenceHyperBall:
    """HyperBall with NumPy: the counters of every node at every pass, estimated from scratch."""

    def __init__(self, n: int, src, dst, log2m: int = 7, seed: int = 0, groups: int | None = None):
        s, d = as_edge_arrays(src, dst, n)
        self.n, self.log2m = n, log2m
        m = 1 << log2m
        self.groups = min(32, m // 2) if groups is None else groups
        self.src, self.dst = s.astype(np.int64), d.astype(np.int64)
        reg = np.zeros((n, m), dtype=np.uint8)
        key = splitmix64(seed & _M64)
        for x in range(n):
            h = splitmix64(x ^ key)
            w = ((h << log2m) & _M64) | (1 << (log2m - 1))
            reg[x, h >> (64 - log2m)] = 64 - w.bit_length() + 1
        self.reg = reg
        self.history = [reg.copy()]
        self._record()

    def _record(self) -> None:
        full, loo = hll_estimates(self.reg, self.groups)
        if not hasattr(self, "nf"):
            self.nf, self.replicates = [], []
        self.nf.append(float(full.sum()))
        self.replicates.append(loo.sum(axis=0))

    def run(self) -> int:
        """Passes until no counter changes; returns the passes that changed one."""
        k = 0
        while True:
            new = self.reg.copy()
            if self.src.size:
                np.maximum.at(new, self.src, self.reg[self.dst])
            if np.array_equal(new, self.reg):
                return k
            self.reg = new
            self.history.append(new.copy())
            self._record()
            k += 1
