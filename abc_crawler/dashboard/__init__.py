"""SPAWC's live dashboard for an MPI crawl: ``abc-crawl --dashboard ADDR:PORT``.

Rank 0 serves a status page from a thread that never blocks the crawl
(``docs/DASHBOARD.md``): ``GET /`` (the page: statistics, per-rank bars, the
exchange over supersteps, degree distributions, errors, busiest hosts, drawn
by the page itself), ``GET /status.json`` (every figure, live), ``GET /metrics``
(the same, for Prometheus) and
``POST /stop`` (the same graceful stop as SIGTERM, with the token printed at
the start).

Modules
-------
:mod:`.vitals`
    Each rank's live figures, sent to rank 0 with the superstep exchange.
:mod:`.sources`
    Reading rank 0's coordinator incrementally (exchange series, graph summary).
:mod:`.snapshot`
    ``/status.json`` as a pure function of those inputs.
:mod:`.publisher`
    :class:`Dashboard`: a snapshot per superstep (rate-limited), handed to the server.
:mod:`.metrics`
    ``/metrics``: the same snapshot in the Prometheus text format (``prometheus_client``).
:mod:`.server`
    The HTTP server thread, its routes, limits and the stop token.
:mod:`.page`
    The page (``assets/``: HTML, CSS and the script that draws the charts).
"""
from __future__ import annotations

import importlib

__all__ = ["Dashboard", "StatusServer", "VitalsSender", "SCHEMA", "build_snapshot", "graph_figures",
           "parse_address", "is_loopback"]

# Every rank imports .vitals; only rank 0 with --dashboard needs the server (http.server and its
# imports cost each rank ~15 ms at start), so the names below are imported when first used.
_WHERE = {"Dashboard": "publisher", "StatusServer": "server", "parse_address": "server", "is_loopback": "server",
          "SCHEMA": "snapshot", "build_snapshot": "snapshot", "graph_figures": "snapshot", "VitalsSender": "vitals"}


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
