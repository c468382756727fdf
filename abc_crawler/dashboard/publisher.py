"""Rank 0's side of the dashboard: a snapshot per superstep, served by :class:`.server.StatusServer`.

The crawl loop calls :meth:`Dashboard.publish` after each superstep's
exchange, beside the progress line, with what it already has: the globally
reduced status vector, the ranks' vitals gathered in that exchange
(:mod:`.vitals`) and the coordinator. It builds a new snapshot
(:func:`.snapshot.build_snapshot`, a pure function; the exchange series is
read incrementally) at most once per ``min_interval`` seconds while someone
polls ``/status.json`` (a poll in the last :data:`WATCHED_SECONDS`), and once
per ``idle_interval`` otherwise, and hands it to the server as one
reference; in between it keeps the latest vitals, undecoded. The server
thread never touches the coordinator or the crawler.

:meth:`Dashboard.finish` publishes the final snapshot from ``stats.json``'s
figures once the session is written (state ``finished``).
"""
from __future__ import annotations

import os
import signal
import time
from datetime import datetime, timezone

from ..exceptions import AbcError
from .server import StatusServer, parse_address
from .snapshot import MAX_POINTS, build_snapshot, merge_errors, merge_hosts
from .sources import ExchangeSeries, graph_summary, kernel_lag
from .vitals import decode_vitals

__all__ = ["Dashboard", "RANK_KEYS", "WATCHED_SECONDS"]

#: the page counts as watched for this long after a poll of /status.json
WATCHED_SECONDS = 10.0

#: the keys of each ``per_rank`` entry of ``/status.json`` (None until the rank was heard from)
RANK_KEYS = ("rank", "superstep", "seen_s", "pages_ok", "pages_failed", "bytes", "requests", "responses", "retries",
             "queued", "frontier", "outbox", "in_flight", "idle_s", "idle_slot_s", "idle_rest_s", "idle_empty_s",
             "exchange_s", "errors_total")
#: the keys of a ``per_rank`` entry taken from the rank's vitals as they are
_VITAL_KEYS = ("pages_ok", "pages_failed", "bytes", "requests", "queued", "frontier", "outbox", "in_flight", "idle_s",
               "idle_slot_s", "idle_rest_s", "idle_empty_s", "exchange_s")


def _utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _sigterm() -> None:
    """POST /stop: the same graceful stop as ``kill -TERM`` of rank 0 (its StopFlag handler runs)."""
    os.kill(os.getpid(), signal.SIGTERM)


def rank_entry(r: int, v: dict | None, seen_s: float | None, responses: int | None = None) -> dict:
    """One ``per_rank`` entry from a rank's vitals (all None but ``rank`` when there are none).

    ``responses``: the rank's page requests answered as the coordinator's reports count them
    (unless the vitals say); ``retries`` are its ``retried_*`` errors (unless the vitals say)."""
    e = dict.fromkeys(RANK_KEYS)
    e["rank"] = r
    if v is not None:
        for k in _VITAL_KEYS:
            e[k] = v.get(k)
        e["superstep"] = v.get("superstep")
        e["seen_s"] = seen_s
        errors = v.get("errors") or {}
        e["errors_total"] = sum(errors.values())
        e["responses"] = v.get("responses", responses)
        e["retries"] = v["retries"] if "retries" in v else sum(n for k, n in errors.items() if k.startswith("retried_"))
    return e


class Dashboard:
    """Snapshots of the crawl for the status page (rank 0 only); see the module docstring."""

    def __init__(self, server: StatusServer, fields: tuple[str, ...], meta: dict, ranks: int,
                 min_interval: float = 1.0, idle_interval: float = 10.0):
        self.server = server
        self.idx = {f: i for i, f in enumerate(fields)}
        self.meta = meta
        self.ranks = ranks
        self.min_interval = min_interval
        self.idle_interval = idle_interval
        self.exchange = ExchangeSeries()
        self.history: list[tuple[float, int, int]] = []
        self.seq = 0
        self._last = float("-inf")
        self._vitals: list[dict | None] = [None] * ranks
        self._stall: dict | None = None            # the stall watchdog's report, while there is one
        self._seen: list[float | None] = [None] * ranks
        self._raw: tuple[list[bytes], float] | None = None     # the latest vitals, not decoded yet
        self._polls = -1
        self._watched_at = float("-inf")
        self._totals: dict = {}
        self._step = 0

    @classmethod
    def bind(cls, cfg, session_dir: str, ranks: int, fields: tuple[str, ...], on_stop=None) -> "Dashboard":
        """Listen on ``cfg.dashboard`` (not serving until :meth:`start`). AbcError when the address is bad or
        taken."""
        try:
            addr = parse_address(cfg.dashboard)
            server = StatusServer(addr, on_stop or _sigterm)
        except (ValueError, OSError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise AbcError(f"dashboard {cfg.dashboard}: cannot listen ({why})") from None
        meta = {"session_dir": session_dir, "ranks": ranks, "assignment": None, "max_pages": cfg.max_pages,
                "time_limit": cfg.time_limit, "started": _utc()}
        return cls(server, fields, meta, ranks)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def token(self) -> str:
        return self.server.token

    def start(self, assignment: str) -> "Dashboard":
        """Serve from now on (a first snapshot says ``starting``)."""
        self.meta["assignment"] = assignment
        self._publish("starting", None, 0.0)
        self.server.start()
        return self

    def publish(self, step: int, status, vitals: list[bytes] | None, coordinator, t0: float,
                stall: dict | None = None) -> None:
        """After superstep ``step``'s exchange: keep the vitals; now and then a new snapshot (see above).
        ``stall``: the stall watchdog's report, while there is one."""
        now = time.monotonic()
        self._stall = stall
        if vitals:
            self._raw = (vitals, round(now - t0, 3))
        self._step = step
        if self.server.polls != self._polls:
            self._polls, self._watched_at = self.server.polls, now
        interval = self.min_interval if now - self._watched_at <= WATCHED_SECONDS else self.idle_interval
        if now - self._last < interval:
            return
        self._take_vitals()
        g = {k: int(status[i]) for k, i in self.idx.items()}
        self._totals = {"requests": g["requests"], "pages_ok": g["pages_ok"], "pages_failed": g["failed"],
                        "bytes": g["bytes"], "errors": g["errors"], "frontier": g["frontier"], "queued": g["work"],
                        "outbox": g["outbox"]}
        elapsed = now - t0
        self.history.append((round(elapsed, 2), g["requests"], g["bytes"]))
        if len(self.history) > 2 * MAX_POINTS:
            self.history = self.history[::-2][::-1]      # every other point, the newest kept
        self.exchange.update(coordinator, step)
        stopping = self.server.stop_requested or g.get("signal", 0) > 0
        summary = graph_summary(coordinator)
        hr = getattr(coordinator, "host_ranks", None)
        self._publish("stopping" if stopping else "running", summary, elapsed,
                      kernels=kernel_lag(coordinator, summary), top_hosts=hr.summary() if hr is not None else None)
        self._last = now

    def _take_vitals(self) -> None:
        if self._raw is None:
            return
        raw, seen = self._raw
        for r, v in enumerate(decode_vitals(raw)):
            if v is not None:
                self._vitals[r] = v
                self._seen[r] = seen
        self._raw = None

    def _publish(self, state: str, graph: dict | None, elapsed: float, stopped: str | None = None,
                 errors: dict | None = None, dropped: dict | None = None, kernels: dict | None = None,
                 top_hosts: dict | None = None) -> None:
        self.seq += 1
        answered = self.exchange.responses or []
        snap = build_snapshot(
            seq=self.seq, meta=self.meta, state=state, stopped=stopped, elapsed=elapsed, superstep=self._step,
            totals=self._totals,
            ranks=[rank_entry(r, v, s, answered[r] if r < len(answered) else None)
                   for r, (v, s) in enumerate(zip(self._vitals, self._seen))],
            exchange=self.exchange.as_dict(), graph=graph,
            errors=errors if errors is not None else merge_errors([(v or {}).get("errors") for v in self._vitals]),
            hosts=merge_hosts([(v or {}).get("hosts") for v in self._vitals]),
            history=self.history, updated=_utc(), stall=self._stall,
            dropped=dropped if dropped is not None else merge_errors([(v or {}).get("dropped") for v in self._vitals]),
            kernels=kernels, top_hosts=top_hosts)
        self.server.publish(snap, finished=state == "finished")

    def finish(self, stats: dict, coordinator, step: int) -> None:
        """The final snapshot, from the session's ``stats.json`` figures (state ``finished``)."""
        self._step = step
        self._take_vitals()
        self.exchange.update(coordinator, step)
        for r, pr in enumerate(stats.get("per_rank", [])[:self.ranks]):
            v = dict(self._vitals[r] or {})
            v.update({"pages_ok": pr.get("pages"), "bytes": pr.get("bytes"), "requests": pr.get("requests"),
                      "superstep": step})
            v.update({k: pr[k] for k in ("idle_s", "idle_slot_s", "idle_rest_s", "idle_empty_s", "exchange_s",
                                         "responses", "retries") if k in pr})
            self._vitals[r] = v
        self._totals = dict(self._totals, requests=stats["requests"], pages_ok=stats["pages_crawled"],
                            pages_failed=stats["pages_failed"], bytes=stats["bytes_stored"],
                            errors=sum(stats.get("errors", {}).values()))
        wall = float(stats.get("wall_s", 0.0))
        self.history.append((round(wall, 2), stats["requests"], stats["bytes_stored"]))
        self._stall = stats.get("stall") if stats.get("stopped") == "stalled" else None
        g = stats.get("graph") or {}
        kernels = ({"nodes_behind": 0, "max_delay_s": g.get("kernel_max_delay_s"), "lag_s": g["kernel_lag_s"]}
                   if g.get("kernel_lag_s") is not None else None)
        self._publish("finished", stats.get("graph"), wall, stopped=stats.get("stopped"),
                      errors=merge_errors([stats.get("errors", {})]), dropped=stats.get("dropped", {}),
                      kernels=kernels, top_hosts=g.get("top_hosts"))

    def close(self) -> None:
        self.server.close()
