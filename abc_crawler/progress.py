"""Live progress on rank 0: one updating line on a terminal, a line every few seconds otherwise.

Graph figures are printed with their scope and kind (issue 22): *whole
graph* or *first N pages*, *exact* or *estimate ± standard error*.  The
same formatting serves the progress line and the final summary
(:func:`graph_rows`), from the ``whole`` / ``first_n`` sections that
:meth:`abc_crawler.kernels.GraphStats.summary` returns and ``stats.json``
stores.
"""
from __future__ import annotations

import sys
import time

__all__ = ["Progress", "format_bytes", "format_estimate", "graph_rows", "graph_progress", "stall_text"]


def format_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"  # pragma: no cover


def format_estimate(e: dict | None, digits: int = 2) -> str:
    """``estimate ± standard error`` of a ``{"estimate", "se", "rse"}`` figure.

    Large values (>= 1e5) are written in powers of ten with the relative error.

    Examples
    --------
    >>> format_estimate({"estimate": 16.984, "se": 0.2133, "rse": 0.01256})
    '16.98 ± 0.21'
    >>> format_estimate({"estimate": 3.08e10, "se": 2.8e9, "rse": 0.0909})
    '3.08e+10 ± 9.1 %'
    >>> format_estimate(None)
    '-'
    """
    if not e:
        return "-"
    v, se, rse = e["estimate"], e["se"], e["rse"]
    if abs(v) >= 1e5:
        return f"{v:.{digits}e} ± {100 * rse:.1f} %"
    return f"{v:.{digits}f} ± {se:.{digits}f}"


def _num(x, digits: int = 2) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def first_n_scope(f: dict, nodes: int | None) -> str:
    """The scope of the first-N figures: ``first N pages`` when they cover fewer pages than the
    graph has (past the cap, or lagging it), else ``all N pages``.

    >>> first_n_scope({"n": 5, "capped": True}, 9), first_n_scope({"n": 5}, 8), first_n_scope({"n": 5}, 5)
    ('first 5 pages', 'first 5 pages', 'all 5 pages')
    """
    n = f.get("n")
    if f.get("capped") or (nodes is not None and n is not None and n < nodes):
        return f"first {n} pages"
    return f"all {n} pages"


def first_n_lag(f: dict) -> str:
    """What the first-N figures lack while the kernel thread catches up (empty when current).

    >>> first_n_lag({"pending_edges": 1200}), first_n_lag({"pending_edges": 0})
    (' (1,200 edges behind)', '')
    """
    k = f.get("pending_edges") or 0
    return f" ({k:,} edges behind)" if k else ""


def graph_rows(g: dict) -> list[tuple[str, str]]:
    """Summary rows of the crawled graph, each label naming scope and kind.

    ``g`` is ``stats.json``'s ``graph`` (or a :meth:`GraphStats.summary`):
    ``nodes``, ``edges``, ``dangling``, ``whole`` and ``first_n``; missing
    sections (statistics off) leave their rows out.

    Examples
    --------
    >>> g = {"nodes": 4, "edges": 3, "dangling": 1,
    ...      "whole": {"nodes": 4, "edges": 3, "scc_count": 2, "largest_scc": 3,
    ...                "avg_distance": {"estimate": 1.52, "se": 0.04, "rse": 0.026},
    ...                "effective_diameter": {"estimate": 1.9, "se": 0.1, "rse": 0.05},
    ...                "reachable_pairs": {"estimate": 6.1, "se": 0.3, "rse": 0.05},
    ...                "hyperball": {"nodes": 4, "edges": 3, "log2m": 7, "passes": 2}},
    ...      "first_n": {"n": 2, "capped": True, "scc_count": 2, "largest_scc": 1, "diameter": 1,
    ...                  "avg_distance": 1.0, "effective_diameter": 0.9}}
    >>> for k, v in graph_rows(g): print(f"{k}: {v}")
    graph, whole (exact): 4 nodes, 3 edges, 2 SCC (largest 3), 1 dangling
    graph, whole (HyperBall estimate ± s.e.): avg distance 1.52 ± 0.04, effective diameter 1.90 ± 0.10, reachable pairs 6.10 ± 0.30 (2^7 registers/node, 2 passes)
    graph, first 2 pages (exact): 2 SCC (largest 1), diameter 1, avg distance 1.00, effective diameter 0.90
    """
    rows = []
    w, f = g.get("whole"), g.get("first_n")
    exact = f"{g.get('nodes')} nodes, {g.get('edges')} edges"
    if w:
        exact += f", {w['scc_count']} SCC (largest {w['largest_scc']})"
    if g.get("dangling") is not None:
        exact += f", {g['dangling']} dangling"
    rows.append(("graph, whole (exact)", exact))
    if w:
        hb = w.get("hyperball")
        if hb:
            at = "" if (hb["nodes"], hb["edges"]) == (g.get("nodes"), g.get("edges")) else (
                f", of the graph at {hb['nodes']} nodes, {hb['edges']} edges")
            rows.append(("graph, whole (HyperBall estimate ± s.e.)",
                         f"avg distance {format_estimate(w['avg_distance'])}, effective diameter "
                         f"{format_estimate(w['effective_diameter'])}, reachable pairs "
                         f"{format_estimate(w['reachable_pairs'])} (2^{hb['log2m']} registers/node, "
                         f"{hb['passes']} passes{at})"))
        else:
            rows.append(("graph, whole (HyperBall estimate)", "not computed"))
    if f:
        rows.append((f"graph, {first_n_scope(f, g.get('nodes'))} (exact)",
                     f"{_num(f['scc_count'])} SCC (largest {_num(f.get('largest_scc'))}), "
                     f"diameter {_num(f['diameter'])}, avg distance {_num(f['avg_distance'])}, "
                     f"effective diameter {_num(f.get('effective_diameter'))}{first_n_lag(f)}"))
    return rows


def graph_progress(s: dict) -> str:
    """The graph part of the progress line, from a live kernel summary.

    Examples
    --------
    >>> graph_progress({"nodes": 9, "whole": {"nodes": 9, "scc_count": 3, "largest_scc": 6,
    ...                 "avg_distance": None}, "first_n": {"n": 5, "capped": True, "diameter": 4}})
    'whole graph 9 nodes: 3 SCC (largest 6) exact | first 5 pages: diameter 4 exact'
    """
    w, f = s.get("whole"), s.get("first_n")
    parts = []
    if w:
        part = f"whole graph {w['nodes']} nodes: {w['scc_count']} SCC (largest {w['largest_scc']}) exact"
        hb = w.get("hyperball")
        if w.get("avg_distance") and hb and hb["nodes"]:
            part += (f", avg distance {format_estimate(w['avg_distance'])}, eff. diameter "
                     f"{format_estimate(w['effective_diameter'], 1)} est. at {hb['nodes']} nodes")
        parts.append(part)
    else:
        parts.append(f"graph {s.get('nodes', 0)} nodes")
    if f:
        parts.append(f"{first_n_scope(f, s.get('nodes'))}: diameter {_num(f.get('diameter'))} exact"
                     f"{first_n_lag(f)}")
    return " | ".join(parts)


def stall_text(stall: dict) -> str:
    """The watchdog's report in words.

    >>> stall_text({"seconds": 65.0, "bound_s": 62.0, "queued": 957, "hosts": [
    ...     {"host": "a.test", "queued": 9, "why": "rest", "seconds": 0.4}]})
    'STALLED: no request for 65 s with 957 URLs queued (bound 62 s); waiting: a.test: 9 queued, rest 0.4 s'
    """
    from .sched.watchdog import format_waiting

    text = (f"STALLED: no request for {stall['seconds']:.0f} s with {stall['queued']:,} URLs queued "
            f"(bound {stall['bound_s']:.0f} s)")
    if stall.get("hosts"):
        text += "; waiting: " + format_waiting(stall["hosts"])
    return text


class Progress:
    """Prints crawl progress from the globally reduced status vector."""

    def __init__(self, fields: tuple[str, ...], interval: float = 2.0, stream=None):
        self.idx = {f: i for i, f in enumerate(fields)}
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval = 0.25 if self.tty else interval
        self.t0 = time.monotonic()
        self.last = 0.0
        self.last_pages = 0
        self.last_t = self.t0

    def update(self, step: int, status, coordinator=None, force: bool = False, stall: dict | None = None) -> None:
        """A progress line when one is due (or ``force``); ``stall``: the watchdog's report while the
        crawl sends no request with work queued, said first on the line."""
        now = time.monotonic()
        if not force and now - self.last < self.interval:
            return
        g = {k: int(status[i]) for k, i in self.idx.items()}
        dt = max(1e-9, now - self.last_t)
        rate = (g["requests"] - self.last_pages) / dt
        self.last_pages, self.last_t, self.last = g["requests"], now, now
        stats = ""
        if coordinator is not None and coordinator.kernels is not None:
            stats = " | " + graph_progress(coordinator.kernels.summary())
        elif coordinator is not None:
            stats = f" | graph {coordinator.n_nodes} nodes"
        alarm = "" if stall is None else stall_text(stall) + " | "
        line = (f"[{now - self.t0:7.1f}s] {alarm}step {step:5d} | {g['requests']} req ({rate:.0f}/s), {g['pages_ok']} ok, "
                f"{g['failed']} failed, {g['errors']} errors, {format_bytes(g['bytes'])} | frontier {g['frontier']} | "
                f"exchange MV {format_bytes(g['volume'])}{stats}")
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
