"""Live host ranks on rank 0: the host graph beside the page graph, and its top hosts by harmonic
centrality while the crawl goes (issue 36).

:class:`LiveHostRanks` folds the links of every superstep's reports into the distinct host pairs
of the host graph (the same graph ``abc-graph export --level host`` writes: a vertex per host of
every URL rank 0 knows, named and numbered as Common Crawl names hosts, an edge per distinct pair
of hosts linked by a link of any kind, self-links dropped) and, now and then, ranks its hosts by
harmonic centrality with :func:`abc_crawler.graph.graphrank.harmonic_centrality` — exact up to
``exact_max`` hosts, HyperBall's estimate with its standard error above — so that the figure at the
end of the crawl is the one ``abc-graph rank SESSION --level host`` computes from the session.

The ranking runs in rank 0's loop between supersteps, on a budget: a new one starts only when the
graph changed and ``interval`` seconds passed, and never before the last one's time divided by
``duty`` (5 %: at most about a twentieth of rank 0's time); its cost is kept (``cpu_s``,
``updates``, the last one's ``seconds``). Folding the links costs a NumPy pass over each report's
link rows.
"""
from __future__ import annotations

import time
from array import array

import numpy as np

from ..arrays import distinct
from .graphrank import DEFAULT_EXACT_MAX, DEFAULT_LOG2M, harmonic_centrality, positions
from .webgraph import host_name, reverse_name

__all__ = ["LiveHostRanks", "TOP_HOSTS"]

#: hosts listed by the dashboard and stats.json
TOP_HOSTS = 10


class LiveHostRanks:
    """The host graph of the URLs rank 0 knows and the top hosts by harmonic centrality."""

    def __init__(self, top: int = TOP_HOSTS, interval: float = 2.0, duty: float = 0.05,
                 exact_max: int = DEFAULT_EXACT_MAX, log2m: int = DEFAULT_LOG2M, seed: int = 0):
        if not 0 < duty <= 1:
            raise ValueError(f"duty must be in (0, 1], got {duty!r}")
        self.top, self.interval, self.duty = top, interval, duty
        self.exact_max, self.log2m, self.seed = exact_max, log2m, seed
        self.names: list[str] = []                 # host id -> name
        self._ids: dict[str, int] = {"": -1}       # name -> host id ("" : a URL without a host)
        self._host_of_row = array("i")             # URL row -> host id (-1: none)
        self._by_authority: dict[str, int] = {}    # scheme://AUTHORITY/ of canonical URLs -> host id
        self._pairs: set[int] = set()              # distinct src_host << 32 | dst_host, src != dst
        self._waiting: list[tuple[np.ndarray, np.ndarray]] = []   # link rows not folded yet
        self._changed = False
        self._next = 0.0                           # monotonic time before which no ranking starts
        self.updates = 0
        self.cpu_s = 0.0
        self.last: dict | None = None

    def add_links(self, src_rows: np.ndarray, dst_rows: np.ndarray) -> None:
        """A report's links (rows of the coordinator's URL table), folded at the next update."""
        if len(src_rows):
            self._waiting.append((src_rows, dst_rows))

    def _fold(self, urls: list) -> None:
        """Host ids of the URL rows new since the last fold, and the waiting links' host pairs."""
        h = self._host_of_row
        ids = self._ids
        by_auth = self._by_authority
        for u in urls[len(h):len(urls)]:
            # canonical URLs: the authority ends at the path's "/"; its host id is cached by it
            a = u.find("://") + 3
            e = u.find("/", a)
            auth = u[a:e] if e >= 0 else u[a:]
            k = by_auth.get(auth) if a >= 3 else None
            if k is None:
                name = host_name(u) if u else ""
                k = ids.get(name)
                if k is None:
                    k = ids[name] = len(self.names)
                    self.names.append(name)
                if a >= 3 and "?" not in auth and "#" not in auth:
                    by_auth[auth] = k
            h.append(k)
        if not self._waiting:
            return
        host = np.frombuffer(h, dtype=np.int32)        # a view: no copy of the whole table per fold
        src = np.concatenate([s for s, _ in self._waiting])
        dst = np.concatenate([d for _, d in self._waiting])
        self._waiting = []
        hs, hd = host[src].astype(np.int64), host[dst].astype(np.int64)
        keep = (hs >= 0) & (hd >= 0) & (hs != hd)
        new = distinct((hs[keep] << 32) | hd[keep]).tolist()
        n0 = len(self._pairs)
        self._pairs.update(new)
        self._changed |= len(self._pairs) != n0

    def update(self, urls: list, now: float | None = None, force: bool = False) -> bool:
        """Fold what came and, when due (or ``force``), rank the hosts again; True if it did."""
        now = time.monotonic() if now is None else now
        n_hosts = len(self.names)
        self._fold(urls)
        self._changed |= len(self.names) != n_hosts
        if not force and (now < self._next or not self._changed):
            return False
        t0, c0 = time.perf_counter(), time.process_time()
        self.last = self._rank()
        spent = time.perf_counter() - t0
        self.cpu_s += time.process_time() - c0
        self.updates += 1
        self._changed = False
        self._next = now + max(self.interval, spent / self.duty)
        self.last["seconds"] = round(spent, 4)
        return True

    def _rank(self) -> dict:
        """Harmonic centrality of every host, numbered as ``abc-graph`` numbers them (sorted by
        reversed name); the top ones."""
        order = sorted(range(len(self.names)), key=lambda k: reverse_name(self.names[k]))
        vid = np.empty(len(self.names), dtype=np.int64)
        vid[order] = np.arange(len(order))
        keys = np.fromiter(self._pairs, dtype=np.int64, count=len(self._pairs))
        src, dst = vid[keys >> 32], vid[keys & 0xFFFFFFFF]
        n = len(order)
        hc = harmonic_centrality(n, src, dst, exact_max=self.exact_max, log2m=self.log2m, seed=self.seed)
        best = np.argsort(positions(hc.values))[: self.top]     # abc-graph rank's order, ties by id
        names = [self.names[k] for k in order]
        return {"method": hc.method, "rse": round(float(hc.rse), 4), "hosts_known": n, "host_edges": int(keys.size),
                "top": [{"host": names[v], "harmonic": round(float(hc.values[v]), 4), "se": round(float(hc.se[v]), 4)}
                        for v in best.tolist()]}

    def summary(self) -> dict | None:
        """The last ranking with its cost so far (None before the first)."""
        if self.last is None:
            return None
        return {**self.last, "updates": self.updates, "cpu_s": round(self.cpu_s, 4)}
