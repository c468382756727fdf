"""Reading rank 0's coordinator for the dashboard, a little at a time.

The coordinator (:mod:`abc_crawler.graph.coordinator`) keeps the exchange counters
per superstep; :class:`ExchangeSeries` takes, at each call of
:meth:`ExchangeSeries.update`, only the supersteps closed since the previous
call, so the cost per superstep stays constant however long the crawl; it also
keeps per-rank totals of the same tables (Türk volume, bytes and URLs sent,
pages answered) for ``GET /metrics``. The coordinator's tables have had two
shapes (growable NumPy row tables with a ``view()``, or plain lists and dicts
keyed by superstep); both are read.

:func:`graph_summary` returns the live statistics summary (the kernel
thread's last published figures: a dict copy, no kernel work) or, with the
statistics off, the coordinator's node and edge counts; :func:`kernel_lag` how far
the statistics kernels are behind the crawl.
"""
from __future__ import annotations

import numpy as np

from .snapshot import MAX_POINTS

__all__ = ["ExchangeSeries", "graph_summary", "kernel_lag"]


def _rows_since(rows, start: int) -> np.ndarray:
    """Exchange rows ``(superstep, src, dst, bytes, urls)`` from index ``start`` on."""
    if hasattr(rows, "view"):
        return np.asarray(rows.view()[start:], dtype=np.int64).reshape(-1, 5)
    return np.asarray(rows[start:], dtype=np.int64).reshape(-1, 5)


def _n_rows(rows) -> int:
    return rows.n if hasattr(rows, "n") else len(rows)


def _step_sums(table, start: int, stop: int) -> list[int]:
    """Per-superstep sums over the ranks of a [superstep, rank] table, for supersteps start..stop-1."""
    if hasattr(table, "view"):
        v = table.view()[start:stop]
        out = v.sum(axis=1).astype(np.int64).tolist()
        return out + [0] * (stop - start - len(out))
    return [int(sum(table.get(s, ()))) for s in range(start, stop)]


def _rank_sums(table, start: int, stop: int) -> list[int]:
    """Per-rank sums over supersteps start..stop-1 of a [superstep, rank] table."""
    if hasattr(table, "view"):
        v = table.view()[start:stop]
        return v.sum(axis=0).astype(np.int64).tolist() if len(v) else []
    out: list[int] = []
    for s in range(start, stop):
        for r, x in enumerate(table.get(s, ())):
            if r >= len(out):
                out.extend([0] * (r + 1 - len(out)))
            out[r] += int(x)
    return out


def _grow(acc: list[int], n: int) -> None:
    """``acc`` padded with zeros to at least ``n`` entries."""
    if n > len(acc):
        acc.extend([0] * (n - len(acc)))


def _add_into(acc: list[int], values) -> None:
    """``acc[i] += values[i]``, ``acc`` grown as needed."""
    values = list(values)
    _grow(acc, len(values))
    for i, v in enumerate(values):
        acc[i] += int(v)


def _step_time(table, step: int) -> float | None:
    if hasattr(table, "view"):
        v = table.view()
        return float(v[step, 0]) if step < len(v) else None
    t = table.get(step)
    return None if t is None else float(t)


class ExchangeSeries:
    """The exchange per superstep — volume (Türk MV), wire bytes, MPI messages — with totals.

    The series is kept binned: consecutive supersteps share a point, ``width``
    of them (1, 2, 4, …); when a new point would make more than
    ``max_points``, neighbouring points are merged and ``width`` doubles. So
    memory and the cost of :meth:`as_dict` stay bounded however long the
    crawl, and each superstep is added once, in O(1) amortized. Call
    :meth:`update` after the coordinator closed superstep ``step``
    (``end_superstep``).

    Per source rank it also sums the volume (``rank_volume``), the bytes and
    URLs sent to other ranks (``sent_bytes``, ``sent_urls``) and, where the
    coordinator has them (``step_pages``), the page requests answered
    (``responses``): lists indexed by rank, as long as the coordinator's
    ``ranks`` (or the highest rank seen).
    """

    KEYS = ("volume_bytes", "wire_bytes", "messages")

    def __init__(self, max_points: int = MAX_POINTS):
        self.max_points = max_points
        self.width = 1
        self.steps = 0                   # supersteps taken
        self.points: dict[str, list] = {k: [] for k in (*self.KEYS, "t")}
        self.totals = dict.fromkeys(self.KEYS, 0)
        self.wire_urls = 0               # URLs sent between different ranks
        self.rank_volume: list[int] = []
        self.sent_bytes: list[int] = []
        self.sent_urls: list[int] = []
        self.responses: list[int] | None = None    # None: the coordinator keeps no step_pages
        self._rows = 0                   # exchange rows already taken

    def _point(self, step: int) -> int:
        """Index of the point of ``step`` (points up to it created)."""
        i = step // self.width
        while len(self.points["t"]) <= i:
            for k in self.KEYS:
                self.points[k].append(0)
            self.points["t"].append(self.points["t"][-1] if self.points["t"] else 0.0)
        return i

    def _add(self, key: str, step: int, value: int) -> None:
        self.points[key][self._point(step)] += value
        self.totals[key] += value

    def _merge(self) -> None:
        while len(self.points["t"]) > self.max_points:
            for k in self.KEYS:
                v = self.points[k]
                self.points[k] = [sum(v[i:i + 2]) for i in range(0, len(v), 2)]
            t = self.points["t"]
            self.points["t"] = [t[min(i + 1, len(t) - 1)] for i in range(0, len(t), 2)]
            self.width *= 2

    def update(self, co, step: int) -> None:
        """Take supersteps ``self.steps`` … ``step`` (and the exchange rows since the last call) from ``co``."""
        start, stop = self.steps, step + 1
        ranks = getattr(co, "ranks", None)
        ranks = ranks if isinstance(ranks, int) else 0
        pages = getattr(co, "step_pages", None)
        if pages is not None and self.responses is None:
            self.responses = []
        tables = [self.rank_volume, self.sent_bytes, self.sent_urls] + ([self.responses] if pages is not None else [])
        for acc in tables:
            _grow(acc, ranks)
        if stop > start:
            for s, v in zip(range(start, stop), _step_sums(co.step_volume, start, stop)):
                self._add("volume_bytes", s, v)
                t = _step_time(co.step_t, s)
                if t is not None:
                    self.points["t"][self._point(s)] = round(t, 3)
            _add_into(self.rank_volume, _rank_sums(co.step_volume, start, stop))
            if pages is not None:
                _add_into(self.responses, _rank_sums(pages, start, stop))
            self.steps = stop
        rows = _rows_since(co.exchange_rows, self._rows)
        self._rows = _n_rows(co.exchange_rows)
        for s, b in zip(rows[:, 0].tolist(), rows[:, 3].tolist()):
            self._add("wire_bytes", s, b)
            self._add("messages", s, 1)
        if len(rows):
            self.wire_urls += int(rows[:, 4].sum())
            n = int(rows[:, 1].max()) + 1
            _add_into(self.sent_bytes, np.bincount(rows[:, 1], weights=rows[:, 3], minlength=n).astype(np.int64))
            _add_into(self.sent_urls, np.bincount(rows[:, 1], weights=rows[:, 4], minlength=n).astype(np.int64))
        self._merge()

    def as_dict(self) -> dict:
        """Totals and the binned series (``docs/DASHBOARD.md``, ``exchange``)."""
        n = len(self.points["t"])
        return {"supersteps": self.steps, "volume_bytes": self.totals["volume_bytes"],
                "wire_bytes": self.totals["wire_bytes"], "wire_urls": self.wire_urls,
                "messages_mpi": self.totals["messages"],
                "per_rank": {"volume_bytes": list(self.rank_volume), "sent_bytes": list(self.sent_bytes),
                             "sent_urls": list(self.sent_urls)},
                "series": {"width": self.width, "superstep": list(range(0, n * self.width, self.width)),
                           **{k: list(v) for k, v in self.points.items()}}}


def graph_summary(co) -> dict | None:
    """The live graph statistics of coordinator ``co`` (None before there is one)."""
    if co is None:
        return None
    if getattr(co, "kernels", None) is not None:
        return co.kernels.summary()
    return {"nodes": co.n_nodes, "edges": co.n_edges}


def kernel_lag(co, summary: dict | None) -> dict | None:
    """How far the statistics kernels of ``co`` are behind the crawl (None with the statistics off).

    ``nodes_behind``: pages the coordinator handed to the kernel thread that ``summary`` (its last
    published figures, :func:`graph_summary`) does not count yet; ``max_delay_s``: the longest a
    batch waited in the thread's queue so far; ``lag_s``: None while crawling (at the end, the
    seconds the final statistics took, ``stats.json``'s ``kernel_lag_s``).
    """
    k = getattr(co, "kernels", None) if co is not None else None
    if k is None:
        return None
    done = int((summary or {}).get("nodes") or 0)
    return {"nodes_behind": max(0, int(co.n_nodes) - done), "max_delay_s": round(float(k.max_delay_s), 3),
            "lag_s": None}
