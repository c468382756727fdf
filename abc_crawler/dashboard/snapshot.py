"""What ``GET /status.json`` returns: the crawl's state as one JSON-ready dict.

Everything here is a pure function of its arguments (no clock, no MPI, no
coordinator): :func:`build_snapshot` assembles a snapshot from the globally
reduced status vector, the per-rank *vitals* (:mod:`.vitals`), the exchange
series, the graph-statistics summary and the rate history that
:class:`abc_crawler.dashboard.Dashboard` gathers once per superstep on rank 0.
The schema (``"schema": 1``) is documented key by key in
``docs/DASHBOARD.md``.

Examples
--------
>>> degree_bins([3, 5, 2, 0, 1])
{'lo': [0, 1, 2, 4], 'hi': [0, 1, 3, 4], 'count': [3, 5, 2, 1]}
>>> degree_bins({'lo': [0, 1], 'hi': [0, 3], 'count': [4, 2]})
{'lo': [0, 1], 'hi': [0, 3], 'count': [4, 2]}
>>> [f["name"] for f in graph_figures({"nodes": 4, "edges": 3, "dangling": 1, "scc_count": 2,
...     "diameter": 2, "avg_distance": 1.25, "stats_nodes": 4, "capped": False})]
['nodes', 'edges', 'dangling', 'scc_count', 'diameter', 'avg_distance']
"""
from __future__ import annotations

import numpy as np

from ..graph.metrics import imbalance_pct

__all__ = ["SCHEMA", "degree_bins", "graph_figures", "merge_errors", "merge_hosts",
           "build_snapshot", "STATES"]

#: version of the ``/status.json`` layout (``docs/DASHBOARD.md``)
SCHEMA = 1
#: the crawl's state as the snapshot tells it
STATES = ("starting", "running", "stopping", "finished")
#: at most this many points per series (the exchange over supersteps, the rate history)
MAX_POINTS = 240
#: hosts listed in ``hosts``
TOP_HOSTS = 10


def degree_bins(hist) -> dict:
    """A degree histogram in logarithmic bins ``{lo, hi, count}`` (inclusive bounds).

    ``hist`` is either a list with ``hist[d]`` = nodes of degree d (the live
    kernel summary) or already binned ``{lo, hi, count}`` (``stats.json`` after
    the whole-graph statistics): bins 0, 1, 2–3, 4–7, … up to the largest
    degree; empty bins between non-empty ones are kept, so a log–log plot
    shows where the distribution is zero.
    """
    if hist is None:
        return {"lo": [], "hi": [], "count": []}
    if isinstance(hist, dict):
        return {"lo": list(hist.get("lo", [])), "hi": list(hist.get("hi", [])), "count": list(hist.get("count", []))}
    h = np.asarray(hist, dtype=np.int64)
    nz = np.flatnonzero(h)
    if nz.size == 0:
        return {"lo": [], "hi": [], "count": []}
    top = int(nz[-1])                        # nothing above the largest degree
    lo = [0] + [1 << k for k in range(top.bit_length())]
    hi = [min(b - 1, top) for b in lo[1:]] + [top]
    count = np.add.reduceat(h[:top + 1], lo).tolist()
    return {"lo": lo, "hi": hi, "count": count}


def _fig(name: str, label: str, value, scope: str, kind: str, se=None, rse=None) -> dict:
    out = {"name": name, "label": label, "value": value, "scope": scope, "kind": kind}
    if kind == "estimate":
        out["se"], out["rse"] = se, rse
    return out


def _estimate(name: str, label: str, e, scope: str) -> dict | None:
    if isinstance(e, dict) and e.get("estimate") is not None:
        return _fig(name, label, e["estimate"], scope, "estimate", e.get("se"), e.get("rse"))
    return None


def graph_figures(s: dict | None) -> list[dict]:
    """Every graph figure of a statistics summary, each with its ``scope`` and ``kind``.

    ``s`` is :meth:`GraphStats.summary` (live) or ``stats.json["graph"]``, in
    either shape: the flat keys of the first-N kernels (``scc_count``,
    ``diameter``, ``avg_distance`` over the first ``stats_nodes`` pages) or
    the ``whole`` / ``first_n`` sections of the whole-graph statistics (exact
    SCCs of every node, HyperBall estimates with their standard error). A
    figure the summary does not have (statistics off, not computed yet) is
    left out. Scope is ``"whole graph"`` or ``"first N pages"``; kind is
    ``"exact"`` or ``"estimate"`` (then ``se`` and ``rse`` say its error).
    """
    if not s:
        return []
    whole = "whole graph"
    figs = [_fig(k, label, s[k], whole, "exact") for k, label in
            (("nodes", "nodes"), ("edges", "edges"), ("dangling", "dangling nodes")) if s.get(k) is not None]
    w, f = s.get("whole"), s.get("first_n")
    if isinstance(w, dict):
        figs += [_fig(k, label, w[k], whole, "exact") for k, label in
                 (("scc_count", "SCC count"), ("largest_scc", "largest SCC")) if w.get(k) is not None]
        for k, label in (("avg_distance", "average distance"), ("effective_diameter", "effective diameter"),
                         ("reachable_pairs", "reachable pairs")):
            e = _estimate(k, label, w.get(k), whole)
            if e is not None:
                figs.append(e)
    if isinstance(f, dict):
        n = f.get("n", s.get("stats_nodes"))
        behind = n is not None and s.get("nodes") is not None and n < s["nodes"]
        scope = f"first {n} pages" if f.get("capped", s.get("capped")) or behind else whole
        for k, label in (("scc_count", "SCC count"), ("largest_scc", "largest SCC"), ("diameter", "diameter"),
                         ("avg_distance", "average distance"), ("effective_diameter", "effective diameter")):
            v = f.get(k)
            if v is not None and not isinstance(v, dict):
                figs.append(_fig(k, label, v, scope, "exact"))
    elif not isinstance(w, dict):
        # the first-N kernels alone: their figures cover the whole graph until the cap is reached
        scope = f"first {s.get('stats_nodes')} pages" if s.get("capped") else whole
        figs += [_fig(k, label, s[k], scope, "exact") for k, label in
                 (("scc_count", "SCC count"), ("diameter", "diameter"), ("avg_distance", "average distance"))
                 if s.get(k) is not None]
    return figs


def merge_errors(per_rank: list[dict | None]) -> dict[str, int]:
    """Errors by kind summed over the ranks, largest first.

    >>> merge_errors([{"timeout": 2, "http_4xx": 1}, None, {"timeout": 1}])
    {'timeout': 3, 'http_4xx': 1}
    """
    total: dict[str, int] = {}
    for errs in per_rank:
        for k, v in (errs or {}).items():
            total[k] = total.get(k, 0) + int(v)
    return dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))


def merge_hosts(per_rank: list[list | None], top: int = TOP_HOSTS) -> list[dict]:
    """The busiest hosts over all ranks: each rank names its hosts with the most URLs admitted
    (``[host, admitted, queued]``); a host several ranks crawl is summed over them.

    >>> merge_hosts([[["a.test", 10, 4]], [["a.test", 6, 0], ["b.test", 3, 3]]])
    [{'host': 'a.test', 'admitted': 16, 'queued': 4, 'ranks': 2}, {'host': 'b.test', 'admitted': 3, 'queued': 3, 'ranks': 1}]
    """
    acc: dict[str, list[int]] = {}
    for hosts in per_rank:
        for h, admitted, queued in hosts or []:
            a = acc.setdefault(h, [0, 0, 0])
            a[0] += int(admitted)
            a[1] += int(queued)
            a[2] += 1
    rows = sorted(acc.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0]))[:top]
    return [{"host": h, "admitted": a, "queued": q, "ranks": n} for h, (a, q, n) in rows]


def _rate(history: list[tuple[float, int, int]], window: float) -> tuple[float, float]:
    """Requests/s and bytes/s over the last ``window`` seconds of ``history`` ((t, requests, bytes))."""
    if len(history) < 2:
        return 0.0, 0.0
    t1, r1, b1 = history[-1]
    t0, r0, b0 = history[0]
    for t, r, b in reversed(history[:-1]):
        t0, r0, b0 = t, r, b
        if t1 - t >= window:
            break
    dt = t1 - t0
    return (0.0, 0.0) if dt <= 0 else ((r1 - r0) / dt, (b1 - b0) / dt)


def build_snapshot(*, seq: int, meta: dict, state: str, stopped: str | None, elapsed: float, superstep: int,
                   totals: dict, ranks: list[dict], exchange: dict, graph: dict | None, errors: dict,
                   hosts: list[dict], history: list[tuple[float, int, int]], rate_window: float = 5.0,
                   updated: str | None = None, stall: dict | None = None, dropped: dict | None = None,
                   kernels: dict | None = None, top_hosts: dict | None = None) -> dict:
    """The ``/status.json`` document (schema in ``docs/DASHBOARD.md``).

    ``totals``: the crawl's counters (``requests``, ``pages_ok``,
    ``pages_failed``, ``bytes``, ``errors``, ``frontier``, ``queued``,
    ``outbox``), summed over the ranks; ``ranks``: one dict per rank (or
    ``{"rank": r}`` alone when nothing was heard from it yet); ``exchange``:
    the totals and the binned series of :class:`.sources.ExchangeSeries`;
    ``graph``: a statistics summary (either shape, see
    :func:`graph_figures`); ``history``: (elapsed s, requests, bytes) points,
    oldest first (times rounded by the caller); ``stall``: the stall watchdog's report while the
    crawl sends no request with work queued (``seconds``, ``bound_s``, ``hosts`` waiting and what
    for), else None; ``dropped``: URLs dropped by limits, by reason; ``kernels``: how far the
    statistics kernels are behind (:func:`.sources.kernel_lag`), None with the statistics off;
    ``top_hosts``: the host graph's top hosts by harmonic centrality
    (:meth:`abc_crawler.graph.hostranks.LiveHostRanks.summary`), None before the first ranking or with
    the statistics off.
    """
    if state not in STATES:
        raise ValueError(f"state must be one of {STATES}, got {state!r}")
    now_rps, now_bps = _rate(history, rate_window)
    avg = (lambda x: x / elapsed if elapsed > 0 else 0.0)  # noqa: E731
    weights = lambda key: [r.get(key, 0) or 0 for r in ranks]  # noqa: E731
    g = graph or {}
    return {
        "schema": SCHEMA,
        "seq": seq,
        "updated": updated,
        "state": state,
        "stopped": stopped,
        **meta,
        "elapsed_s": round(elapsed, 3),
        "superstep": superstep,
        "requests": totals.get("requests", 0),
        "pages_ok": totals.get("pages_ok", 0),
        "pages_failed": totals.get("pages_failed", 0),
        "bytes": totals.get("bytes", 0),
        "errors_total": totals.get("errors", 0),
        "frontier": totals.get("frontier", 0),
        "queued": totals.get("queued", 0),
        "outbox": totals.get("outbox", 0),
        "rate": {"now": round(now_rps, 2), "average": round(avg(totals.get("requests", 0)), 2),
                 "window_s": rate_window},
        "throughput": {"now": round(now_bps, 1), "average": round(avg(totals.get("bytes", 0)), 1)},
        "per_rank": ranks,
        "imbalance": {"storage_pct": round(float(imbalance_pct(weights("bytes"))), 2) if ranks else 0.0,
                      "request_pct": round(float(imbalance_pct(weights("requests"))), 2) if ranks else 0.0},
        "exchange": exchange,
        "graph": {"nodes": g.get("nodes"), "edges": g.get("edges"), "figures": graph_figures(graph),
                  "in_degree": degree_bins(g.get("in_degree_hist")),
                  "out_degree": degree_bins(g.get("out_degree_hist")), "kernels": kernels,
                  "top_hosts": top_hosts},
        "hosts": hosts,
        "errors": errors,
        "stall": stall,
        "dropped": dropped or {},
        "history": {"t": [t for t, _, _ in history[-MAX_POINTS:]],
                    "requests": [r for _, r, _ in history[-MAX_POINTS:]],
                    "bytes": [b for _, _, b in history[-MAX_POINTS:]]},
    }
