"""Rank 0's statistics thread: feeds the crawled graph's batches to the kernels (``kernels/``).

:class:`KernelWorker` runs the statistics kernels in a worker thread beside rank 0's crawling
(they release the GIL) and decides, by measure and within a CPU budget, when each part runs;
:func:`first_n_plan` and :func:`refresh_estimate` are its decisions as pure functions.
"""
from __future__ import annotations

import os
import queue
import threading
import time

import numpy as np

__all__ = ["KernelWorker", "first_n_plan", "refresh_estimate", "REFRESH_S_PER_NODE_EDGE"]

_NO_BATCH = object()

# CPU seconds per (node x edge) of a first-N recomputation before one was measured: 1.6e-10 was
# measured on a crawl's graph (3,897 pages, 33,846 edges: 24 ms); twice that, to err on the side
# of the incremental kernels, whose cost is measured from the start.
REFRESH_S_PER_NODE_EDGE = 3.2e-10


def refresh_estimate(k: int, nodes: int, edges: int, last: tuple[float, int, int] | None) -> float:
    """CPU seconds a recomputation of the first-N figures is expected to take.

    ``k`` first-N pages of a graph of ``nodes`` nodes and ``edges`` edges
    (the first N pages' share of the edges taken as ``k / nodes``): a
    bit-parallel BFS from every page costs about k x (k + edges inside).
    Scaled from the last measured recomputation ``last`` = (CPU s, nodes,
    edges), or from :data:`REFRESH_S_PER_NODE_EDGE` before any.

    >>> refresh_estimate(100, 100, 900, None) == 100 * 1000 * REFRESH_S_PER_NODE_EDGE
    True
    >>> refresh_estimate(200, 200, 1800, (0.01, 100, 900))
    0.04
    """
    def work(k: int, n: int, m: int) -> float:
        inside = m * (k / n) if n else 0.0
        return float(k) * (k + inside)

    w = work(k, nodes, edges)
    if last is None:
        return w * REFRESH_S_PER_NODE_EDGE
    cost, n0, m0 = last
    w0 = work(min(k, n0), n0, m0)
    return cost * (w / w0) if w0 > 0 else w * REFRESH_S_PER_NODE_EDGE


def first_n_plan(pending_edges: int, per_edge_s: float | None, refresh_s: float, can_refresh: bool) -> str:
    """How the kernel thread brings the first-N figures up to date: ``"incremental"`` or ``"recompute"``.

    The incremental kernels (SPAWC's Algorithm 1 and 2) run while their
    measured cost of the edges waiting, ``pending_edges`` x ``per_edge_s``,
    stays below the expected cost of a recomputation ``refresh_s``; they
    run first, unmeasured, so their cost is known (``per_edge_s`` None).

    >>> first_n_plan(300, None, 0.001, True), first_n_plan(300, 1e-6, 0.001, True)
    ('incremental', 'incremental')
    >>> first_n_plan(3000, 1e-6, 0.001, True), first_n_plan(3000, 1e-6, 0.001, False)
    ('recompute', 'incremental')
    """
    if not can_refresh or per_edge_s is None:
        return "incremental"
    return "recompute" if pending_edges * per_edge_s > refresh_s else "incremental"


class KernelWorker:
    """Feeds node and edge batches to the statistics kernels in a worker thread.

    The thread's work, most urgent first:

    1. every waiting batch, for the whole-graph figures (degrees and exact
       SCCs: a few milliseconds per superstep even at a million pages), so
       they are current after each superstep;
    2. the first-N figures (exact distances and SCCs over the first
       ``max_nodes`` pages), by whichever is cheaper by measure
       (:func:`first_n_plan`): SPAWC's incremental kernels, 256 edges at a
       time (``GraphStats(defer_first_n=True)``), or a recomputation from
       scratch (:meth:`GraphStats.refresh_first_n`: Tarjan and a
       bit-parallel BFS from every page).  On a crawl's graph the
       recomputation wins as soon as batches hold more than a few hundred
       edges (4,000 pages: 24 ms against 1.4 s for the incremental
       updates, ``docs/BENCHMARKS.md``); once chosen it is kept, and runs
       when the figures lag the graph and at most once per
       ``interval`` seconds or per its own CPU time divided by
       ``first_n_duty`` (0.05: a twentieth of a core; at the 20,000-page cap a
       recomputation takes about 0.9 s, so the figures lag by up to 18 s), whichever
       is longer.
       Between runs the summary gives the last exact figures with the
       scope they cover (``first_n.n``) and the first-N edges added since
       (``first_n.pending_edges``);
    3. the whole-graph distance estimates (HyperBall), one pass at a time
       on a snapshot of the graph; a new run starts when the graph has
       changed and the last run's CPU time, divided by ``duty``, has passed
       since it ended, and at least ``interval`` seconds (``duty`` = 0.05:
       HyperBall takes at most about a twentieth of a core; with the first-N
       recomputations, a tenth in all). ``kernel_cpu_parts`` in stats.json
       says what each part took.

    :meth:`close` finishes all three on the final graph -- the first-N
    figures by recomputation from scratch if the incremental kernels are
    behind (:meth:`GraphStats.finish_first_n`: about a second at 20,000
    pages, where catching up can take minutes on a busy machine); how long
    it took, in all and per part, is ``lag_s`` / ``lag_parts``.  A failure in the
    thread is kept in ``error`` (the thread stops) and raised by
    :meth:`close`; :meth:`summary` keeps returning the last good figures.
    """

    def __init__(self, max_nodes: int, nice: int = 10, *, distance_error: float = 0.1,
                 duty: float = 0.05, tick: float = 0.1, first_n_duty: float = 0.05,
                 interval: float = 1.0):
        from ..kernels import GraphStats  # the Cython kernels (kernels/ folder)

        for name, v in (("duty", duty), ("first_n_duty", first_n_duty)):
            if not 0 < v <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {v!r}")
        if not interval >= 0:
            raise ValueError(f"interval must be >= 0, got {interval!r}")
        self.nice = nice
        self.duty = duty
        self.tick = tick
        self.first_n_duty = first_n_duty
        self.interval = interval
        self.first_n_refreshes = 0               # recomputations of the first-N figures during the crawl
        self._per_edge: float | None = None      # measured CPU seconds per edge of the incremental kernels
        self._refreshed: tuple[float, int, int] | None = None   # (CPU s, nodes, edges) of the last one
        self._next_refresh = 0.0                 # monotonic time before which no recomputation starts
        self.stats = GraphStats(max_nodes=max_nodes, distance_error=distance_error, defer_first_n=True)
        self._q: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._summary: dict = self.stats.summary()
        self.error: BaseException | None = None
        self.lag_s: float | None = None          # seconds close() waited for the thread
        self.lag_parts: dict[str, float] = {}    # ... for the batches, the first-N kernels, HyperBall
        self.max_delay_s = 0.0                   # longest wait of a batch for the whole-graph figures
        self.cpu_s = 0.0                         # the thread's CPU time
        self.cpu_parts = dict.fromkeys(("batches_s", "first_n_s", "hyperball_s", "summary_s"), 0.0)
        self._next_run = 0.0                     # monotonic time before which no HyperBall run starts
        self._thread = threading.Thread(target=self._run, name="abc-kernels", daemon=True)
        self._thread.start()

    def _distances_due(self) -> bool:
        st = self.stats
        return st.distances_running or (st.distances_stale and time.monotonic() >= self._next_run)

    def _first_n_due(self) -> bool:
        st = self.stats
        if st.first_n_pending:
            return True
        return st.first_n_behind and st.first_n_method == "recomputed" and time.monotonic() >= self._next_refresh

    def _advance_first_n(self) -> None:
        """One step of the first-N work: a piece of the incremental kernels' or a recomputation."""
        st = self.stats
        t0 = time.thread_time()
        if st.first_n_method == "incremental":
            waiting = st.first_n_pending
            if first_n_plan(waiting, self._per_edge, self._refresh_estimate(),
                            st.can_recompute_first_n) == "incremental":
                st.advance_first_n(256)
                done = waiting - st.first_n_pending
                if done > 0:
                    per = (time.thread_time() - t0) / done
                    self._per_edge = per if self._per_edge is None else 0.5 * (self._per_edge + per)
                return
        if st.refresh_first_n():
            cost = time.thread_time() - t0
            self.first_n_refreshes += 1
            self._refreshed = (cost, st.nodes, st.edges)
            self._next_refresh = time.monotonic() + max(self.interval, cost * (1 / self.first_n_duty - 1))

    def _refresh_estimate(self) -> float:
        st = self.stats
        return refresh_estimate(st.stats_cap_nodes, st.nodes, st.edges, self._refreshed)

    def _apply(self, item) -> None:
        if callable(item):                  # a test's injected fault
            item()
            return
        t_put, n_new, src, dst = item
        if n_new:
            self.stats.add_nodes(n_new)
        if len(src):
            self.stats.add_edges(src, dst)
        self.max_delay_s = max(self.max_delay_s, time.monotonic() - t_put)

    def _run(self) -> None:
        # The kernels are CPU-bound; at a lower priority they take what the crawl leaves
        # (ranks usually outnumber cores), so rank 0 keeps crawling at full speed.
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self.nice)
        except (AttributeError, OSError):
            pass
        try:
            while True:
                busy = self._first_n_due() or self._distances_due()
                try:
                    item = self._q.get_nowait() if busy else self._q.get(timeout=self.tick)
                except queue.Empty:
                    item = _NO_BATCH
                if item is None:
                    break
                c0 = time.thread_time()
                if item is not _NO_BATCH:
                    self._apply(item)
                    part = "batches_s"
                elif self._first_n_due():
                    self._advance_first_n()
                    part = "first_n_s"
                elif self._distances_due():
                    running = self.stats.distances_running
                    self.stats.advance_distances()
                    if running and not self.stats.distances_running:        # a run ended
                        pause = max(self.interval, self.stats.last_distance_seconds * (1 / self.duty - 1))
                        self._next_run = time.monotonic() + pause
                    part = "hyperball_s"
                else:
                    continue
                c1 = time.thread_time()
                self._publish()
                self.cpu_parts[part] += c1 - c0
                self.cpu_parts["summary_s"] += time.thread_time() - c1
            self._finish()
        except BaseException as exc:  # raised again in the main thread at the next superstep
            self.error = exc
            from ..store.crash import record_thread_failure

            record_thread_failure(threading.current_thread().name, exc)
        finally:
            self.cpu_s = time.thread_time()

    def _finish(self) -> None:
        """After the last batch: everything on the final graph, timed per part.

        The crawl is over, so the thread gives up its low priority (where the
        system allows it: raising a thread's priority may need privileges)."""
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 0)
        except (AttributeError, OSError):
            pass
        t = time.monotonic()
        while True:                               # batches put before close()'s None were taken;
            try:                                  # none can follow it
                item = self._q.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                self._apply(item)
        t1 = time.monotonic()
        self.first_n_method = self.stats.finish_first_n()
        t2 = time.monotonic()
        self.stats.finish_distances()
        t3 = time.monotonic()
        self.lag_parts = {"batches_s": round(t1 - t, 3), "first_n_s": round(t2 - t1, 3),
                          "hyperball_s": round(t3 - t2, 3)}
        self._publish()

    def _publish(self) -> None:
        s = self.stats.summary()
        with self._lock:
            self._summary = s

    def submit(self, n_new: int, src: np.ndarray, dst: np.ndarray) -> None:
        self._q.put((time.monotonic(), n_new, src, dst))

    def inject_failure(self, message: str) -> None:
        """Test hook: the thread fails when it reaches this point of its queue."""
        from ..store.crash import InjectedCrash

        def fail() -> None:
            raise InjectedCrash(message)

        self._q.put(fail)

    def summary(self) -> dict:
        """The figures after the last step the thread finished (a shallow copy)."""
        with self._lock:
            return dict(self._summary)

    def close(self) -> dict:
        """Apply the waiting batches, finish the first-N kernels and the distance
        estimates on the final graph, stop the thread; return the final summary, with
        ``kernel_lag_s`` (the seconds this took), ``kernel_lag_parts``,
        ``kernel_max_delay_s`` and ``kernel_cpu_s``."""
        t = time.monotonic()
        self._q.put(None)
        self._thread.join()
        self.lag_s = time.monotonic() - t
        if self.error is not None:
            raise self.error
        s = self.stats.summary()
        s["kernel_lag_s"] = round(self.lag_s, 3)
        s["kernel_lag_parts"] = dict(self.lag_parts)
        s["kernel_max_delay_s"] = round(self.max_delay_s, 3)
        s["kernel_cpu_s"] = round(self.cpu_s, 3)
        s["kernel_cpu_parts"] = {k: round(v, 3) for k, v in self.cpu_parts.items()}
        s["kernel_first_n_refreshes"] = self.first_n_refreshes
        return s
