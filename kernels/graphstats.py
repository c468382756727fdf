"""Live statistics of the crawled graph, kept by the coordinator on rank 0.

:class:`GraphStats` is the one object the coordinator talks to:
it numbers nothing itself (the coordinator gives each crawled page the next
dense id and calls :meth:`GraphStats.add_nodes`), it takes edges in batches,
and it answers :meth:`GraphStats.summary` for ``stats.json`` and the live
log.  Behind it are three kernels: :class:`Degrees` over every node, and
:class:`SCC` and :class:`APSD` over the first ``max_nodes`` nodes (their
memory is O(n^2)).
"""
from __future__ import annotations

import logging
import threading

import numpy as np

from abc_crawler.kernels._apsd import APSD
from abc_crawler.kernels._degree import Degrees
from abc_crawler.kernels._scc import SCC
from abc_crawler.kernels._validation import DistanceOverflowError, as_count, as_edge_arrays

__all__ = ["GraphStats"]

log = logging.getLogger(__name__)


class GraphStats:
    """Degrees, SCCs, diameter and average distance of a growing web graph.

    Parameters
    ----------
    max_nodes : int or None, optional
        Cap of the O(n^2) kernels (``--stats-max-pages``).  Nodes with id
        ``>= max_nodes`` and every edge touching one are left out of the SCC
        and distance statistics; degrees, ``dangling``, ``nodes`` and
        ``edges`` always cover the whole graph.  None: no cap.  Default 20000
        (when full: 400 MB for the distance matrix, 50 MB for the closure,
        and APSD's in-edge lists, at most 1/16 of its matrix + 1 MiB).
    enable_apsd, enable_scc : bool, optional
        Run the distance / component kernels (default True).  A disabled
        kernel allocates nothing and its summary keys are None.
    apsd_dtype : {numpy.uint8, numpy.uint16}, optional
        Cell type of the distance matrix; uint8 (default) holds distances up
        to 254 hops in n^2 bytes.

    Notes
    -----
    Definitions (the same everywhere: docs/SESSION_FORMAT.md): diameter = the largest finite d(u, v) over
    u != v (0 if no pair is connected); average distance = the mean of the
    finite d(u, v) over ordered pairs u != v (0.0 if none); dangling = nodes
    with out-degree 0; ``scc_count`` counts singleton components.

    Repeated edges and self-loops are ignored (counted in ``duplicate_edges``
    and ``self_loops``); only new edges reach the O(n^2) kernels.

    If the SCC or distance kernel cannot allocate memory, it is dropped with
    a logged warning and its keys become None; the crawl and the other
    statistics carry on.

    If a shortest distance inside the cap ever reaches 255 hops (uint8),
    the distance kernel stops (it never reports a clipped value): a warning
    is logged, ``apsd_overflow`` becomes True, and ``diameter`` and
    ``avg_distance`` are None from then on; degrees and SCCs carry on.

    Threads: every method takes an internal lock, so :meth:`add_edges` may
    run in a worker thread while another thread calls :meth:`summary` (which
    waits for the running batch to finish).  The kernels release the GIL for
    the whole batch, so the rest of the process keeps running meanwhile.

    Time per edge: O(1) expected for degrees; see :class:`SCC` and
    :class:`APSD` for the rest (O(n^2) worst case each, O(1) for an edge
    that is redundant to them).  :meth:`summary` is O(max degree).

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
    """

    def __init__(self, max_nodes: int | None = 20000, *, enable_apsd: bool = True,
                 enable_scc: bool = True, apsd_dtype=np.uint8):
        self._cap = None if max_nodes is None else as_count(max_nodes, "max_nodes")
        self._lock = threading.Lock()
        self._deg = Degrees()
        self._scc = SCC(max_nodes=self._cap) if enable_scc else None
        self._apsd = APSD(max_nodes=self._cap, dtype=apsd_dtype) if enable_apsd else None
        self._apsd_overflow: str | None = None

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
            if in_cap and self._scc is not None:
                try:
                    self._scc.add_nodes(in_cap)
                except MemoryError:
                    # Statistics must not take the crawl down with them.
                    log.warning("SCC statistics stopped: out of memory at %d nodes", first + in_cap)
                    self._scc = None
            if in_cap and self._apsd_active:
                try:
                    self._apsd.add_nodes(in_cap)
                except MemoryError:
                    log.warning("distance statistics stopped: out of memory at %d nodes", first + in_cap)
                    self._apsd = None
            self._deg.add_nodes(k)
            return range(first, first + k)

    def add_edges(self, src, dst) -> int:
        """Add a batch of edges ``src[e] -> dst[e]`` (ids of nodes already added).

        The whole batch is validated before anything changes; then each
        kernel processes it without the GIL.

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
            if added and (self._scc is not None or self._apsd_active):
                keep = new.view(bool)
                if self._cap is not None and self._deg.n > self._cap:
                    keep = keep & (s < self._cap) & (d < self._cap)
                ks, kd = s[keep], d[keep]
                if ks.shape[0]:
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
            return added

    @property
    def _apsd_active(self) -> bool:
        return self._apsd is not None and self._apsd_overflow is None

    # ------------------------------------------------------------------- reads
    @property
    def nodes(self) -> int:
        return self._deg.n

    @property
    def edges(self) -> int:
        return self._deg.edges

    @property
    def stats_nodes(self) -> int:
        """Nodes covered by the SCC and distance statistics."""
        n = self._deg.n
        return n if self._cap is None else min(n, self._cap)

    @property
    def capped(self) -> bool:
        """True once there are more nodes than ``max_nodes``."""
        return self._cap is not None and self._deg.n > self._cap

    def summary(self) -> dict:
        """The current statistics as a JSON-ready dict.

        Returns
        -------
        dict
            ``nodes``, ``edges`` (distinct), ``scc_count``, ``dangling``,
            ``diameter``, ``avg_distance``, ``stats_nodes``, ``capped``,
            ``in_degree_hist`` and ``out_degree_hist`` (lists, ``h[d]`` =
            nodes of degree d up to the largest degree), ``duplicate_edges``,
            ``self_loops``, ``apsd_overflow``.  ``scc_count`` is None when
            SCCs are disabled; ``diameter`` and ``avg_distance`` are None
            when distances are disabled or overflowed.

        Notes
        -----
        O(max degree): every count is maintained incrementally.
        """
        with self._lock:
            apsd_ok = self._apsd_active
            return {
                "nodes": self._deg.n,
                "edges": self._deg.edges,
                "scc_count": None if self._scc is None else self._scc.count,
                "dangling": self._deg.dangling,
                "diameter": self._apsd.diameter if apsd_ok else None,
                "avg_distance": float(self._apsd.avg_distance) if apsd_ok else None,
                "stats_nodes": self.stats_nodes,
                "capped": self.capped,
                "in_degree_hist": self._deg.in_hist().tolist(),
                "out_degree_hist": self._deg.out_hist().tolist(),
                "duplicate_edges": self._deg.duplicates,
                "self_loops": self._deg.self_loops,
                "apsd_overflow": self._apsd_overflow is not None,
            }

    def scc_labels(self) -> np.ndarray:
        """Component labels of the first ``stats_nodes`` nodes (see :meth:`SCC.labels`)."""
        with self._lock:
            if self._scc is None:
                raise ValueError("SCC statistics are disabled")
            return self._scc.labels()

    def __repr__(self) -> str:
        return (f"GraphStats(nodes={self.nodes}, edges={self.edges}, "
                f"max_nodes={self._cap}, capped={self.capped})")
