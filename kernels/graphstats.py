"""Live statistics of the crawled graph, kept by the coordinator on rank 0.

:class:`GraphStats` is the one object the coordinator talks to:
it numbers nothing itself (the coordinator gives each crawled page the next
dense id and calls :meth:`GraphStats.add_nodes`), it takes edges in batches,
and it answers :meth:`GraphStats.summary` for ``stats.json`` and the live
log.  Every figure has a scope and a kind (issue 22):

* the **whole graph**, every node: degrees and dangling nodes (exact,
  :class:`Degrees`), strongly connected components (exact,
  :class:`WholeSCC`, O(n + m) memory), and the distance figures estimated
  by HyperBall (:class:`HyperBall`, with their standard errors), recomputed
  one pass at a time by :meth:`GraphStats.advance_distances` on a snapshot;
* the **first N pages** (``max_nodes``, ``--stats-max-pages``): SPAWC's
  O(n^2) kernels, exact SCCs (:class:`SCC`) and exact distances
  (:class:`APSD`), which also check the estimates where the whole graph is
  small enough.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque

import numpy as np

from abc_crawler.kernels._apsd import APSD
from abc_crawler.kernels._bfs import distance_histogram
from abc_crawler.kernels._degree import Degrees
from abc_crawler.kernels._hyperball import HyperBall
from abc_crawler.kernels._scc import SCC
from abc_crawler.kernels._validation import DistanceOverflowError, as_count, as_edge_arrays
from abc_crawler.kernels._wholescc import WholeSCC, scc_of_csr
from abc_crawler.kernels.distances import (counter_rse, estimated_figures, exact_figures,
                                           log2m_for_error)

__all__ = ["GraphStats", "log_binned", "graph_json"]

log = logging.getLogger(__name__)


def log_binned(hist, linear: int = 16) -> dict:
    """A degree histogram with one bin per degree below ``linear``, then bins doubling.

    Parameters
    ----------
    hist : array_like of int
        ``hist[d]`` = nodes of degree d.
    linear : int
        Degrees 0 .. linear-1 get a bin each; then [linear, 2 linear - 1],
        [2 linear, 4 linear - 1], ... (the last bin ends at the largest degree).

    Returns
    -------
    dict
        ``lo``, ``hi`` (inclusive degree bounds) and ``count`` (nodes), lists
        of equal length; empty lists for an empty histogram.

    Examples
    --------
    >>> log_binned([5, 3, 0, 0, 1, 0, 0, 0, 0, 2], linear=2)
    {'lo': [0, 1, 2, 4, 8], 'hi': [0, 1, 3, 7, 9], 'count': [5, 3, 0, 1, 2]}
    """
    h = np.asarray(hist, dtype=np.int64)
    if linear < 1:
        raise ValueError(f"linear must be >= 1, got {linear}")
    lo, hi, count = [], [], []
    top = h.size - 1
    a = 0
    while a <= top:
        b = a if a < linear else min(2 * a - 1, top)
        lo.append(a)
        hi.append(b)
        count.append(int(h[a:b + 1].sum()))
        a = b + 1
    return {"lo": lo, "hi": hi, "count": count}


def graph_json(summary: dict) -> dict:
    """The graph figures of ``stats.json`` from a :meth:`GraphStats.summary`.

    Keeps ``dangling``, ``duplicate_edges``, ``self_loops``, the ``whole``
    and ``first_n`` sections (each figure with its scope and kind) and the
    kernel thread's timings when present; the degree histograms are
    :func:`log_binned`.  The flat first-N keys of the summary
    (``scc_count``, ``diameter``, ...) are left out: in ``stats.json`` every
    figure sits under the scope it describes.
    """
    out = {k: summary[k] for k in ("dangling", "duplicate_edges", "self_loops") if k in summary}
    out["whole"] = summary.get("whole")
    out["first_n"] = summary.get("first_n")
    for k in ("in_degree_hist", "out_degree_hist"):
        if summary.get(k) is not None:
            out[k] = log_binned(summary[k])
    for k in ("kernel_lag_s", "kernel_lag_parts", "kernel_max_delay_s", "kernel_cpu_s", "kernel_cpu_parts",
              "kernel_first_n_refreshes"):
        if k in summary:
            out[k] = summary[k]
    return out


class GraphStats:
    """Degrees, SCCs and distances of a growing web graph, each with its scope and kind.

    Parameters
    ----------
    max_nodes : int or None, optional
        Cap of the O(n^2) kernels (``--stats-max-pages``).  Nodes with id
        ``>= max_nodes`` and every edge touching one are left out of the
        *first N pages* statistics (SCC, APSD); the whole-graph ones
        (degrees, ``dangling``, ``nodes``, ``edges``, :class:`WholeSCC`,
        HyperBall) always cover every node.  None: no cap.  Default 20000
        (when full: 400 MB for the distance matrix, 50 MB for the closure,
        and APSD's in-edge lists, at most 1/16 of its matrix + 1 MiB).
    enable_apsd, enable_scc : bool, optional
        Run the first-N distance / component kernels (default True).  A
        disabled kernel allocates nothing and its summary keys are None.
    apsd_dtype : {numpy.uint8, numpy.uint16}, optional
        Cell type of the distance matrix; uint8 (default) holds distances up
        to 254 hops in n^2 bytes.
    enable_whole : bool, optional
        Keep the whole graph's SCCs (:class:`WholeSCC`) and, on request,
        its HyperBall distance estimates (default True).
    distance_error : float, optional
        Target relative standard error of one HyperLogLog counter
        (``--stats-distance-error``, default 0.1): HyperBall uses 2^b
        registers per node, b = :func:`log2m_for_error` (7 for 0.1).
    distance_seed : int, optional
        Seed of HyperBall's node hash.
    scc_mode : str, optional
        :class:`WholeSCC`'s ``mode`` (default ``"search"``).
    defer_first_n : bool, optional
        Queue the first-N kernels' work instead of doing it in
        :meth:`add_nodes` / :meth:`add_edges`; :meth:`advance_first_n` does
        it a piece at a time.  The kernel thread uses this so that the
        whole-graph figures (cheap) stay current while SPAWC's O(n^2)
        kernels catch up (default False).

    Notes
    -----
    Definitions (the same everywhere: docs/SESSION_FORMAT.md): diameter = the largest finite d(u, v) over
    u != v (0 if no pair is connected); average distance = the mean of the
    finite d(u, v) over ordered pairs u != v (0.0 if none); effective
    diameter = their interpolated 90th percentile
    (:mod:`abc_crawler.kernels.distances`); dangling = nodes with out-degree
    0; SCC counts include singleton components.

    Repeated edges and self-loops are ignored (counted in ``duplicate_edges``
    and ``self_loops``); only new edges reach the other kernels.

    If a kernel cannot allocate memory, it is dropped with a logged warning
    and its keys become None; the crawl and the other statistics carry on.
    If a shortest distance inside the cap ever reaches 255 hops (uint8),
    the distance kernel stops (it never reports a clipped value): a warning
    is logged, ``apsd_overflow`` becomes True, and the first-N distances are
    None from then on.

    Distances of the whole graph are not updated by :meth:`add_edges`:
    :meth:`advance_distances` runs one HyperBall pass at a time (starting a
    run on a snapshot of the graph when none is running), so the caller
    decides the cadence; :meth:`finish_distances` brings them up to date.
    The summary says which graph (nodes, edges) the estimates describe.

    Threads: every method takes an internal lock, so :meth:`add_edges` may
    run in a worker thread while another thread calls :meth:`summary` (which
    waits for the running batch or pass to finish).  The kernels release the
    GIL, so the rest of the process keeps running meanwhile.

    Time per edge: O(1) expected for degrees; see :class:`WholeSCC`,
    :class:`SCC` and :class:`APSD` for the rest.  :meth:`summary` is
    O(n + max degree) (the component-size distribution is read off a
    histogram over sizes).

    Examples
    --------
    >>> import numpy as np
    >>> gs = GraphStats(max_nodes=100)
    >>> gs.add_nodes(3)
    range(0, 3)
    >>> gs.add_edges(np.array([0, 1, 2], np.int32), np.array([1, 2, 0], np.int32))
    3
    >>> s = gs.summary()
    >>> s["scc_count"], s["diameter"], s["avg_distance"], s["dangling"]
    (1, 2, 1.5, 0)
    >>> s["whole"]["scc_count"], s["whole"]["largest_scc"], s["first_n"]["diameter"]
    (1, 3, 2)
    >>> gs.finish_distances()
    True
    >>> round(gs.summary()["whole"]["avg_distance"]["estimate"], 1)
    1.5
    """

    def __init__(self, max_nodes: int | None = 20000, *, enable_apsd: bool = True,
                 enable_scc: bool = True, apsd_dtype=np.uint8, enable_whole: bool = True,
                 distance_error: float = 0.1, distance_seed: int = 0, scc_mode: str = "search",
                 defer_first_n: bool = False):
        self._cap = None if max_nodes is None else as_count(max_nodes, "max_nodes")
        self._lock = threading.Lock()
        self._deg = Degrees()
        self._enable_scc, self._enable_apsd = bool(enable_scc), bool(enable_apsd)
        self._scc = SCC(max_nodes=self._cap) if enable_scc else None
        self._apsd = APSD(max_nodes=self._cap, dtype=apsd_dtype) if enable_apsd else None
        self._apsd_overflow: str | None = None
        self._whole = WholeSCC(mode=scc_mode) if enable_whole else None
        self._log2m = log2m_for_error(distance_error)
        self._seed = int(distance_seed)
        self._hb: HyperBall | None = None            # the run in progress
        self._hb_graph = (-1, -1)                    # (nodes, edges) of its snapshot
        self._hb_seconds = 0.0                       # thread CPU seconds of its passes so far
        self._dist: dict | None = None               # the last finished run
        self._dist_runs = 0
        self._defer = bool(defer_first_n)
        self._pending: deque = deque()               # first-N work: (k nodes, None) or (src, dst)
        self._pending_edges = 0
        self._first_n = 0                            # nodes the first-N kernels hold
        self._recomputed: dict | None = None         # first-N figures recomputed from scratch (refresh_first_n)

    def nbytes_held(self) -> dict[str, int]:
        """Bytes each kernel holds now (their own counts: matrices, lists, registers, buffers)."""
        with self._lock:
            out = {"degrees": int(self._deg.nbytes)}
            if self._apsd is not None:
                out["apsd"] = int(self._apsd.nbytes) + int(self._apsd.list_bytes)
            if self._scc is not None:
                out["scc"] = int(self._scc.nbytes)
            if self._whole is not None:
                out["whole_scc"] = int(self._whole.nbytes)
            out["hyperball"] = int(self._hb.nbytes) if self._hb is not None else 0
            out["first_n_pending"] = 8 * self._pending_edges
        return out

    # ----------------------------------------------------------------- updates
    def add_nodes(self, k: int) -> range:
        """Add ``k`` nodes; they get the next dense ids, which are returned.

        Notes
        -----
        Amortized O(k * min(n, max_nodes)) while under the cap (new matrix
        rows), O(k) past it.
        """
        k = as_count(k)
        with self._lock:
            first = self._deg.n
            in_cap = k if self._cap is None else max(0, min(k, self._cap - first))
            if in_cap:
                if self._recomputed is not None:
                    pass                    # recomputed again by the next finish_first_n
                elif self._defer:
                    self._pending.append((in_cap, None))
                else:
                    self._first_n_add_nodes(in_cap)
            if k and self._whole is not None:
                try:
                    self._whole.add_nodes(k)
                except MemoryError:
                    log.warning("whole-graph statistics stopped: out of memory at %d nodes", first + k)
                    self._drop_whole()
            self._deg.add_nodes(k)
            return range(first, first + k)

    def add_edges(self, src, dst) -> int:
        """Add a batch of edges ``src[e] -> dst[e]`` (ids of nodes already added).

        The whole batch is validated before anything changes; then each
        kernel processes it without the GIL (the first-N kernels later,
        with ``defer_first_n``).

        Parameters
        ----------
        src, dst : array_like of int
            int32 arrays are used without a copy.

        Returns
        -------
        int
            New distinct edges (repeats and self-loops excluded).

        Raises
        ------
        ValueError
            Bad shapes, dtypes or node ids; the message names the first
            offending edge, e.g. ``edge 3: (5, 17): node id 17 out of range
            [0, 10)``.
        """
        with self._lock:
            s, d = as_edge_arrays(src, dst, self._deg.n)
            if s.shape[0] == 0:
                return 0
            new = np.empty(s.shape[0], dtype=np.uint8)
            added = self._deg.add_edges(s, d, new=new)
            if not added:
                return 0
            keep = new.view(bool)
            if self._whole is not None:
                try:
                    self._whole.add_edges(s[keep], d[keep])
                except MemoryError as exc:
                    log.warning("whole-graph statistics stopped: %s", exc)
                    self._drop_whole()
            if self._recomputed is not None:
                inside = keep if self._cap is None else keep & (s < self._cap) & (d < self._cap)
                self._recomputed["behind"] += int(np.count_nonzero(inside))   # until the next recomputation
            elif self._scc is not None or self._apsd_active:
                if self._cap is not None and self._deg.n > self._cap:
                    keep = keep & (s < self._cap) & (d < self._cap)
                ks, kd = s[keep], d[keep]
                if ks.shape[0]:
                    if self._defer:
                        self._pending.append((ks, kd))
                        self._pending_edges += ks.shape[0]
                    else:
                        self._first_n_add_edges(ks, kd)
            return added

    def _first_n_add_nodes(self, k: int) -> None:
        if self._scc is not None:
            try:
                self._scc.add_nodes(k)
            except MemoryError:
                # Statistics must not take the crawl down with them.
                log.warning("SCC statistics stopped: out of memory at %d nodes", self._first_n + k)
                self._scc = None
        if self._apsd_active:
            try:
                self._apsd.add_nodes(k)
            except MemoryError:
                log.warning("distance statistics stopped: out of memory at %d nodes", self._first_n + k)
                self._apsd = None
        self._first_n += k

    def _first_n_add_edges(self, ks: np.ndarray, kd: np.ndarray) -> None:
        if self._scc is not None:
            self._scc.add_edges(ks, kd)
        if self._apsd_active:
            try:
                self._apsd.add_edges(ks, kd)
            except DistanceOverflowError as exc:
                self._apsd_overflow = str(exc)
                log.warning("distance statistics stopped: %s", exc)
            except MemoryError as exc:      # its in-edge lists could not grow
                log.warning("distance statistics stopped: %s", exc)
                self._apsd = None

    @property
    def first_n_pending(self) -> int:
        """Edges waiting for the first-N kernels (``defer_first_n``)."""
        return self._pending_edges

    def advance_first_n(self, max_edges: int = 4096) -> bool:
        """Feed the first-N kernels what waits for them, up to about ``max_edges`` edges.

        Returns False when nothing was waiting.  (With ``defer_first_n``
        False nothing ever waits.)
        """
        with self._lock:
            if not self._pending:
                return False
            done = 0
            while self._pending and done < max_edges:
                a, b = self._pending[0]
                if b is None:
                    self._pending.popleft()
                    self._first_n_add_nodes(a)
                    continue
                take = min(a.shape[0], max(1, max_edges - done))
                if take == a.shape[0]:
                    self._pending.popleft()
                else:
                    self._pending[0] = (a[take:], b[take:])
                self._first_n_add_edges(a[:take], b[:take])
                self._pending_edges -= take
                done += take
            return True

    def finish_first_n(self, recompute: bool = True) -> str:
        """Bring the first-N figures up to date with every node and edge added.

        With work waiting (``defer_first_n``) and ``recompute`` True, the
        figures are recomputed from scratch on the subgraph of the first N
        pages -- Tarjan (:func:`scc_of_csr`) and a breadth-first search from
        every page (:func:`distance_histogram`, 64 at a time): exact, and far
        cheaper than the incremental updates a lagging APSD still has to do
        (20,000 pages of a 175k-page crawl: 0.85 s against tens of seconds;
        ``docs/benchmarks/kernels.md``).  The incremental kernels are then
        dropped (their O(n^2) memory freed) and later first-N work is
        recomputed by the next call.  Without whole-graph statistics, or
        with ``recompute`` False, the waiting work is done incrementally.

        Returns ``"incremental"`` or ``"recomputed"``: how the figures were
        brought up to date.
        """
        with self._lock:
            if not self.first_n_behind:
                return "recomputed" if self._recomputed is not None else "incremental"
            if self._recomputed is None and (not recompute or self._whole is None):
                while self._pending:
                    a, b = self._pending.popleft()
                    if b is None:
                        self._first_n_add_nodes(a)
                    else:
                        self._first_n_add_edges(a, b)
                self._pending_edges = 0
                return "incremental"
            if self._whole is not None:         # (else the whole graph was dropped: the last figures stay)
                self._recompute_first_n()
            return "recomputed"

    @property
    def first_n_method(self) -> str:
        """``"incremental"`` (SPAWC's kernels) or ``"recomputed"`` (from scratch, since :meth:`refresh_first_n`)."""
        return "incremental" if self._recomputed is None else "recomputed"

    @property
    def stats_cap_nodes(self) -> int:
        """The nodes the first-N figures are to cover: min(nodes, max_nodes)."""
        return self._cap_nodes()

    @property
    def can_recompute_first_n(self) -> bool:
        """Whether :meth:`refresh_first_n` can run (it needs the whole graph's CSR)."""
        return self._whole is not None

    @property
    def first_n_behind(self) -> bool:
        """Whether the first-N figures lag the graph: edges waiting for the
        incremental kernels, or nodes or edges added since the last recomputation."""
        r = self._recomputed
        return bool(self._pending) or (r is not None and (r["n"] != self._cap_nodes() or r["behind"] > 0))

    def refresh_first_n(self) -> bool:
        """Recompute the first-N figures from scratch now (as :meth:`finish_first_n`).

        Exact on the first N pages of the graph as it is; from then on the
        figures are recomputed by each call (the incremental kernels are
        dropped) and, between calls, the summary gives the last figures with
        the scope they were computed on (``n``) and the first-N edges added
        since (``pending_edges``).  Returns False (nothing done) when the
        figures are current or the whole graph is not kept.
        """
        with self._lock:
            if self._whole is None or (self._recomputed is not None and not self.first_n_behind):
                return False
            self._recompute_first_n()
            return True

    def _recompute_first_n(self) -> None:
        k = self._cap_nodes()
        indptr, indices = self._whole.csr()
        src = np.repeat(np.arange(k, dtype=np.int32), np.diff(indptr[:k + 1]))
        dst = indices[:indptr[k]]
        keep = dst < k
        sub = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(np.bincount(src[keep], minlength=k), out=sub[1:])
        sub_idx = dst[keep]
        count, labels = scc_of_csr(sub, sub_idx)
        figs = exact_figures(k, distance_histogram(sub, sub_idx))
        self._recomputed = {"n": k, "behind": 0, "scc_count": count,
                            "largest_scc": int(np.bincount(labels).max()) if k else 0, **figs}
        self._pending.clear()
        self._pending_edges = 0
        self._first_n = k
        self._scc = self._apsd = None
        self._apsd_overflow = None

    def _cap_nodes(self) -> int:
        n = self._deg.n
        return n if self._cap is None else min(n, self._cap)

    def _drop_whole(self) -> None:
        self._whole = None
        self._hb = None
        self._dist = None

    @property
    def _apsd_active(self) -> bool:
        return self._apsd is not None and self._apsd_overflow is None

    # ---------------------------------------------------- whole-graph distances
    @property
    def distances_running(self) -> bool:
        """True while a HyperBall run is in progress."""
        return self._hb is not None

    @property
    def distances_stale(self) -> bool:
        """True when the graph differs from the one the last run started on."""
        w = self._whole
        return w is not None and (w.n, w.m) != self._hb_graph

    @property
    def last_distance_seconds(self) -> float | None:
        """Thread CPU seconds of the last finished HyperBall run (None before the first)."""
        return None if self._dist is None else self._dist["hyperball"]["seconds"]

    def advance_distances(self) -> bool:
        """One step of the whole-graph distance estimates.

        Starts a HyperBall run on a snapshot of the current graph when none
        is running and the graph changed since the last start, else runs
        one pass of the current run; when that run ends, its figures become
        the summary's.  Returns False when there was nothing to do.

        Notes
        -----
        Starting: O(n + m) for the snapshot, O(2^b n) for the counters.  A
        pass: see :class:`HyperBall`.
        """
        with self._lock:
            if self._whole is None:
                return False
            t = time.thread_time()
            if self._hb is None:
                if not self.distances_stale:
                    return False
                try:
                    indptr, indices = self._whole.csr()
                    self._hb = HyperBall(indptr, indices, log2m=self._log2m, seed=self._seed)
                except MemoryError:
                    log.warning("whole-graph distance estimates stopped: out of memory at %d nodes",
                                self._whole.n)
                    self._hb, self._dist, self._hb_graph = None, None, (self._whole.n, self._whole.m)
                    return False
                self._hb_graph = (self._whole.n, self._whole.m)
                self._hb_seconds = time.thread_time() - t
                return True
            more = self._hb.step()
            self._hb_seconds += time.thread_time() - t
            if not more:
                self._finish_run()
            return True

    def _finish_run(self) -> None:
        hb = self._hb
        self._hb = None
        self._dist_runs += 1
        figs = estimated_figures(hb.nf, hb.nf_replicates)
        figs["hyperball"] = {
            "nodes": self._hb_graph[0], "edges": self._hb_graph[1], "log2m": hb.log2m,
            "registers_per_node": 1 << hb.log2m, "counter_rse": counter_rse(hb.log2m),
            "jackknife_groups": hb.groups, "passes": hb.passes, "seconds": round(self._hb_seconds, 4),
            "runs": self._dist_runs, "bytes": hb.nbytes}
        self._dist = figs

    def finish_distances(self) -> bool:
        """Bring the distance estimates up to date with the current graph.

        A run on an older snapshot is dropped; a run on the current graph
        is finished, or started and finished.  Returns True when the
        estimates describe the current graph (False when whole-graph
        statistics are off or out of memory).
        """
        with self._lock:
            if self._hb is not None and self.distances_stale:
                self._hb = None
        while self.advance_distances():
            pass
        with self._lock:
            return (self._whole is not None and self._dist is not None
                    and self._dist["hyperball"]["nodes"] == self._whole.n
                    and self._dist["hyperball"]["edges"] == self._whole.m)

    # ------------------------------------------------------------------- reads
    @property
    def nodes(self) -> int:
        return self._deg.n

    @property
    def edges(self) -> int:
        return self._deg.edges

    @property
    def stats_nodes(self) -> int:
        """Nodes covered by the first-N SCC and distance statistics (so far, with ``defer_first_n``)."""
        return self._first_n

    @property
    def capped(self) -> bool:
        """True once there are more nodes than ``max_nodes``."""
        return self._cap is not None and self._deg.n > self._cap

    def _whole_summary(self) -> dict | None:
        w = self._whole
        if w is None:
            return None
        out = {"scope": "whole graph", "nodes": w.n, "edges": w.m,
               "scc_count": w.count, "largest_scc": w.largest,
               "scc_sizes": w.size_counts().tolist(),
               "reachable_pairs": None, "avg_distance": None, "effective_diameter": None,
               "neighbourhood_function": None, "hyperball": None}
        if self._dist is not None:
            out.update(self._dist)
        return out

    def _first_n_summary(self) -> dict:
        k = self.stats_nodes
        out = {"scope": f"first {k} pages",
               "n": k, "max_pages": self._cap, "capped": self.capped,
               "scc_count": None, "largest_scc": None, "diameter": None, "avg_distance": None,
               "effective_diameter": None, "reachable_pairs": None,
               "apsd_overflow": self._apsd_overflow is not None, "pending_edges": self._pending_edges,
               "method": "incremental"}
        r = self._recomputed
        if r is not None:
            out["method"] = "recomputed"
            out["pending_edges"] = r["behind"]          # the figures are those of the first n pages
            if self._enable_scc:                        # as they were at the last recomputation
                out.update(scc_count=r["scc_count"], largest_scc=r["largest_scc"])
            if self._enable_apsd:
                out.update({key: r[key] for key in ("diameter", "avg_distance", "effective_diameter",
                                                     "reachable_pairs")})
            return out
        if self._scc is not None:
            out["scc_count"] = self._scc.count
            lab = self._scc.labels()
            out["largest_scc"] = int(np.bincount(lab).max()) if lab.size else 0
        if self._apsd_active:
            out.update(exact_figures(k, self._apsd.histogram()))
            out["avg_distance"] = float(self._apsd.avg_distance)   # the kernel's own sum / pairs
        return out

    def summary(self) -> dict:
        """The current statistics as a JSON-ready dict.

        Returns
        -------
        dict
            ``whole``: the whole graph -- ``scope``, ``nodes``, ``edges``,
            ``scc_count``, ``largest_scc``, ``scc_sizes`` (rows ``[size,
            components]``), all exact; and the
            estimates ``reachable_pairs``, ``avg_distance``,
            ``effective_diameter`` (each ``{"estimate", "se", "rse"}``),
            ``neighbourhood_function`` (``{"estimate": [...], "rse": [...]}``)
            and ``hyperball`` (the graph they describe, b, passes, seconds),
            None until a run finished.  None when ``enable_whole`` is False.

            ``first_n``: the first ``n`` pages -- ``scope``, ``n``,
            ``max_pages``, ``capped``, and exact ``scc_count``,
            ``largest_scc``, ``diameter``, ``avg_distance``,
            ``effective_diameter``, ``reachable_pairs``, ``apsd_overflow``.

            And, as before issue 22 (first-N scope where it applies):
            ``nodes``, ``edges`` (distinct), ``scc_count``, ``dangling``,
            ``diameter``, ``avg_distance``, ``stats_nodes``, ``capped``,
            ``in_degree_hist`` and ``out_degree_hist`` (lists, ``h[d]`` =
            nodes of degree d up to the largest degree), ``duplicate_edges``,
            ``self_loops``, ``apsd_overflow``.

        Notes
        -----
        O(n + max degree): every count is maintained incrementally.
        """
        with self._lock:
            first = self._first_n_summary()
            return {
                "nodes": self._deg.n,
                "edges": self._deg.edges,
                "scc_count": first["scc_count"],
                "dangling": self._deg.dangling,
                "diameter": first["diameter"],
                "avg_distance": first["avg_distance"],
                "stats_nodes": self.stats_nodes,
                "capped": self.capped,
                "in_degree_hist": self._deg.in_hist().tolist(),
                "out_degree_hist": self._deg.out_hist().tolist(),
                "duplicate_edges": self._deg.duplicates,
                "self_loops": self._deg.self_loops,
                "apsd_overflow": self._apsd_overflow is not None,
                "whole": self._whole_summary(),
                "first_n": first,
            }

    def scc_labels(self) -> np.ndarray:
        """Component labels of the first ``stats_nodes`` nodes (see :meth:`SCC.labels`)."""
        with self._lock:
            if self._scc is None:
                raise ValueError("SCC statistics are disabled")
            return self._scc.labels()

    def whole_scc_labels(self) -> np.ndarray:
        """Component labels of every node (see :meth:`WholeSCC.labels`)."""
        with self._lock:
            if self._whole is None:
                raise ValueError("whole-graph statistics are disabled")
            return self._whole.labels()

    def __repr__(self) -> str:
        return (f"GraphStats(nodes={self.nodes}, edges={self.edges}, "
                f"max_nodes={self._cap}, capped={self.capped})")
