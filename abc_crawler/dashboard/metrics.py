"""``GET /metrics``: the dashboard's snapshot in the Prometheus text format, with ``prometheus_client``.

The figures are the ones ``/status.json`` serves: a :class:`SnapshotCollector`
(a ``prometheus_client`` custom collector) turns one snapshot dict
(:func:`.snapshot.build_snapshot`) into metric families, registered in a
private :class:`~prometheus_client.CollectorRegistry` (never the global one)
and written by :func:`~prometheus_client.generate_latest`. Nothing is counted
here and no MPI message is added: a scrape reads the latest snapshot, like a
poll of ``/status.json``, and its text is made once per snapshot.

Names follow the Prometheus conventions (``abc_`` prefix, ``_total`` for
counters, base units ``_seconds`` and ``_bytes``); every family is listed in
:data:`METRICS` and documented in ``docs/DASHBOARD.md``. A family is always
written (with its ``HELP`` and ``TYPE``), its samples only where the snapshot
has the figure: a rank not heard from yet has no sample.

Examples
--------
>>> text = exposition({"seq": 2, "state": "running", "ranks": 1, "per_rank": [
...     {"rank": 0, "pages_ok": 5, "pages_failed": 1, "responses": 7, "retries": 0, "bytes": 900}]}).decode()
>>> [ln for ln in text.splitlines() if ln.startswith("abc_requests_total")]
['abc_requests_total{outcome="ok",rank="0"} 5.0', 'abc_requests_total{outcome="failed",rank="0"} 1.0', \
'abc_requests_total{outcome="retried",rank="0"} 0.0', 'abc_requests_total{outcome="other",rank="0"} 1.0']
>>> 'abc_crawl_state{state="running"} 1.0' in text, 'abc_crawl_state{state="done"} 0.0' in text
(True, True)
"""
from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["METRICS", "CRAWL_STATES", "OUTCOMES", "IDLE_CAUSES", "CONTENT_TYPE", "SnapshotCollector",
           "crawl_state", "exposition"]

#: the ``Content-Type`` of ``GET /metrics``
CONTENT_TYPE = CONTENT_TYPE_LATEST
#: ``abc_crawl_state``'s states (one of them 1, the others 0)
CRAWL_STATES = ("starting", "running", "stalled", "stopping", "done", "stopped")
#: ``abc_requests_total``'s outcomes
OUTCOMES = ("ok", "failed", "retried", "other")
#: ``abc_idle_seconds_total``'s causes, with the ``per_rank`` key of each
IDLE_CAUSES = {"slot": "idle_slot_s", "rest": "idle_rest_s", "empty": "idle_empty_s"}

#: name (as the samples are written), type, label names, help — in the order they are written
METRICS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("abc_requests_total", "counter", ("rank", "outcome"),
     "Page requests by outcome: ok (200, or a 304 standing for a stored page), failed (transport error, 4xx, 5xx), "
     "retried (a transient failure asked again), other (redirects, other statuses); the sum is stats.json requests"),
    ("abc_stored_bytes_total", "counter", ("rank",), "Response body bytes stored (stats.json bytes_stored)"),
    ("abc_errors_total", "counter", ("kind",), "Errors by kind, all ranks (stats.json errors)"),
    ("abc_dropped_urls_total", "counter", ("reason",), "URLs dropped by a limit, by reason (stats.json dropped)"),
    ("abc_frontier_urls", "gauge", ("rank",), "URLs in the rank's frontier not completed"),
    ("abc_queued_urls", "gauge", ("rank",), "Work left on the rank: frontier, requests in flight and outbox"),
    ("abc_outbox_urls", "gauge", ("rank",), "URLs waiting for the next exchange"),
    ("abc_exchange_volume_bytes_total", "counter", ("rank",), "Tuerk exchange volume MV of the rank's reports"),
    ("abc_exchange_sent_bytes_total", "counter", ("rank",), "Bytes of URLs the rank sent to other ranks"),
    ("abc_exchange_sent_urls_total", "counter", ("rank",), "URLs (links) the rank sent to other ranks"),
    ("abc_exchange_messages_total", "counter", (), "MPI messages between different ranks with a non-empty payload"),
    ("abc_supersteps_total", "counter", (), "Supersteps closed"),
    ("abc_idle_seconds_total", "counter", ("rank", "cause"),
     "Seconds the rank waited with no request in flight, by cause: slot (work queued, not in this phase slot), "
     "rest (its hosts resting), empty (nothing queued)"),
    ("abc_exchange_seconds_total", "counter", ("rank",), "Seconds the rank spent completing superstep exchanges"),
    ("abc_pages_per_second", "gauge", (), "Page requests per second over the last rate window (5 s)"),
    ("abc_pages_per_second_average", "gauge", (), "Page requests per second since the start"),
    ("abc_elapsed_seconds", "gauge", (), "Seconds since the crawl started"),
    ("abc_crawl_state", "gauge", ("state",), "1 for the crawl's state, 0 for the others"),
    ("abc_ranks", "gauge", (), "Ranks of the crawl"),
    ("abc_graph_nodes", "gauge", (), "Nodes of the crawled graph the statistics count"),
    ("abc_graph_edges", "gauge", (), "Edges of the crawled graph the statistics count"),
    ("abc_stats_lag_nodes", "gauge", (), "Pages crawled that the statistics kernels have not counted yet"),
    ("abc_stats_max_delay_seconds", "gauge", (), "Longest a batch of new pages waited for the statistics kernels"),
    ("abc_stats_final_lag_seconds", "gauge", (), "Once finished: seconds the final statistics took after the crawl"),
    ("abc_snapshot_seq", "gauge", (), "Number of the snapshot these figures come from (status.json seq)"),
)


def crawl_state(snap: dict) -> str:
    """The snapshot's state for ``abc_crawl_state``: ``stalled`` while the stall watchdog reports,
    ``done`` / ``stopped`` once finished (``done``: the frontier ran out; ``stopped``: a limit, a
    signal or the stall watchdog ended it).

    >>> crawl_state({"state": "running", "stall": {"seconds": 70}})
    'stalled'
    >>> crawl_state({"state": "finished", "stopped": "done"}), crawl_state({"state": "finished", "stopped": "signal"})
    ('done', 'stopped')
    """
    state = snap.get("state", "starting")
    if state == "running" and snap.get("stall"):
        return "stalled"
    if state == "finished":
        return "done" if snap.get("stopped") == "done" else "stopped"
    return state if state in CRAWL_STATES else "starting"


def _num(v) -> float | None:
    return None if v is None or isinstance(v, bool) else float(v)


def _samples(snap: dict) -> dict[str, list[tuple[tuple[str, ...], float]]]:
    """name → [(label values, value)] from one snapshot."""
    out: dict[str, list] = {name: [] for name, *_ in METRICS}

    def put(name: str, labels: tuple[str, ...], value) -> None:
        v = _num(value)
        if v is not None:
            out[name].append((labels, v))

    for e in snap.get("per_rank") or []:
        r = str(e.get("rank"))
        ok, failed, answered = e.get("pages_ok"), e.get("pages_failed"), e.get("responses")
        put("abc_requests_total", (r, "ok"), ok)
        put("abc_requests_total", (r, "failed"), failed)
        put("abc_requests_total", (r, "retried"), e.get("retries"))
        if None not in (ok, failed, answered):
            put("abc_requests_total", (r, "other"), max(0, answered - ok - failed))
        put("abc_stored_bytes_total", (r,), e.get("bytes"))
        put("abc_frontier_urls", (r,), e.get("frontier"))
        put("abc_queued_urls", (r,), e.get("queued"))
        put("abc_outbox_urls", (r,), e.get("outbox"))
        for cause, key in IDLE_CAUSES.items():
            put("abc_idle_seconds_total", (r, cause), e.get(key))
        put("abc_exchange_seconds_total", (r,), e.get("exchange_s"))
    for kind, n in (snap.get("errors") or {}).items():
        put("abc_errors_total", (kind,), n)
    for reason, n in (snap.get("dropped") or {}).items():
        put("abc_dropped_urls_total", (reason,), n)
    ex = snap.get("exchange") or {}
    for name, key in (("abc_exchange_volume_bytes_total", "volume_bytes"),
                      ("abc_exchange_sent_bytes_total", "sent_bytes"), ("abc_exchange_sent_urls_total", "sent_urls")):
        for r, v in enumerate((ex.get("per_rank") or {}).get(key) or []):
            put(name, (str(r),), v)
    put("abc_exchange_messages_total", (), ex.get("messages_mpi"))
    put("abc_supersteps_total", (), ex.get("supersteps"))
    put("abc_pages_per_second", (), (snap.get("rate") or {}).get("now"))
    put("abc_pages_per_second_average", (), (snap.get("rate") or {}).get("average"))
    put("abc_elapsed_seconds", (), snap.get("elapsed_s"))
    state = crawl_state(snap)
    for s in CRAWL_STATES:
        put("abc_crawl_state", (s,), 1 if s == state else 0)
    put("abc_ranks", (), snap.get("ranks"))
    g = snap.get("graph") or {}
    put("abc_graph_nodes", (), g.get("nodes"))
    put("abc_graph_edges", (), g.get("edges"))
    k = g.get("kernels") or {}
    put("abc_stats_lag_nodes", (), k.get("nodes_behind"))
    put("abc_stats_max_delay_seconds", (), k.get("max_delay_s"))
    put("abc_stats_final_lag_seconds", (), k.get("lag_s"))
    put("abc_snapshot_seq", (), snap.get("seq"))
    return out


class SnapshotCollector(Collector):
    """A ``prometheus_client`` collector over one snapshot (or a callable returning the latest)."""

    def __init__(self, snapshot):
        self._snapshot = snapshot

    def collect(self):
        snap = self._snapshot() if callable(self._snapshot) else self._snapshot
        samples = _samples(snap or {})
        for name, kind, labels, doc in METRICS:
            family = (CounterMetricFamily if kind == "counter" else GaugeMetricFamily)(name, doc, labels=labels)
            for values, v in samples[name]:
                family.add_metric(values, v)
            yield family


def exposition(snap: dict) -> bytes:
    """The text of ``GET /metrics`` for snapshot ``snap`` (a private registry, never the global one)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snap))
    return generate_latest(registry)
