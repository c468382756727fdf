"""Reading rank 0's coordinator for the dashboard, a little at a time.

The coordinator (:mod:`abc_crawler.coordinator`) keeps the exchange counters
per superstep; :class:`ExchangeSeries` takes, at each call of
:meth:`ExchangeSeries.update`, only the supersteps closed since the previous
call, so the cost per superstep stays constant however long the crawl. The
coordinator's tables have had two shapes (growable NumPy row tables with a
``view()``, or plain lists and dicts keyed by superstep); both are read.

:func:`graph_summary` returns the live statistics summary (the kernel
thread's last published figures: a dict copy, no kernel work) or, with the
statistics off, the coordinator's node and edge counts.
"""
from __future__ import annotations

import numpy as np

from .snapshot import MAX_POINTS, bin_series

__all__ = ["ExchangeSeries", "graph_summary"]


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


def _step_time(table, step: int) -> float | None:
    if hasattr(table, "view"):
        v = table.view()
        return float(v[step, 0]) if step < len(v) else None
    t = table.get(step)
    return None if t is None else float(t)


class ExchangeSeries:
    """The exchange per superstep: volume (Türk MV), wire bytes and MPI messages, with totals.

    Call :meth:`update` after the coordinator closed superstep ``step``
    (``end_superstep``); supersteps are taken once each, in order.
    """

    def __init__(self):
        self.volume: list[int] = []
        self.wire: list[int] = []
        self.messages: list[int] = []
        self.t: list[float] = []
        self._rows = 0                   # exchange rows already taken

    def update(self, co, step: int) -> None:
        """Take supersteps ``len(self.volume)`` … ``step`` from coordinator ``co``."""
        start, stop = len(self.volume), step + 1
        if stop <= start:
            return
        self.volume += _step_sums(co.step_volume, start, stop)
        grow = stop - len(self.wire)
        self.wire += [0] * max(0, grow)
        self.messages += [0] * max(0, grow)
        for s in range(start, stop):
            t = _step_time(co.step_t, s)
            self.t.append(self.t[-1] if t is None and self.t else (t or 0.0))
        rows = _rows_since(co.exchange_rows, self._rows)
        self._rows = _n_rows(co.exchange_rows)
        for s, b in zip(rows[:, 0].tolist(), rows[:, 3].tolist()):
            if s >= len(self.wire):            # a row of a superstep not closed yet (not expected)
                grow = s + 1 - len(self.wire)
                self.wire += [0] * grow
                self.messages += [0] * grow
            self.wire[s] += b
            self.messages[s] += 1

    def as_dict(self, max_points: int = MAX_POINTS) -> dict:
        """Totals and the series, binned to at most ``max_points`` points (:func:`.snapshot.bin_series`)."""
        n = len(self.volume)
        series = bin_series({"volume_bytes": self.volume, "wire_bytes": self.wire[:n], "messages": self.messages[:n],
                             "t": [round(t, 3) for t in self.t]}, max_points, ("volume_bytes", "wire_bytes", "messages"), ("t",))
        return {"supersteps": len(self.volume), "volume_bytes": int(sum(self.volume)),
                "wire_bytes": int(sum(self.wire)), "messages_mpi": int(sum(self.messages)), "series": series}


def graph_summary(co) -> dict | None:
    """The live graph statistics of coordinator ``co`` (None before there is one)."""
    if co is None:
        return None
    if getattr(co, "kernels", None) is not None:
        return co.kernels.summary()
    return {"nodes": co.n_nodes, "edges": len(co.edge_src)}
