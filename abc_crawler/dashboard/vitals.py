"""Each rank's live figures for rank 0's dashboard (*vitals*), sent with every superstep's exchange.

Rank 0 alone serves the dashboard, but most of what it shows per rank is
known only to that rank: its requests, pages, bytes, queued work, time idle
waiting for a phase slot, errors by kind, and the hosts it has the most URLs
of. With ``--dashboard`` every rank encodes these as a small JSON object
(a few hundred bytes) and the superstep exchange gathers them to rank 0
beside the reports (:meth:`abc_crawler.mpi.exchange.Communicator.start_superstep`,
``vitals``). Without ``--dashboard`` nothing is encoded or sent.

The busiest hosts need a scan of the rank's host table, so they are
refreshed at most once per ``hosts_seconds`` (the rest costs a dict copy).

The crawl loop hands the figures over explicitly (:meth:`VitalsSender.encode`),
so this module knows nothing of the loop's attributes.

Examples
--------
>>> top_hosts([("a.test", 9), ("b.test", 4), ("c.test", 7)], {"a.test": 2, "c.test": 0}.get, 2)
[['a.test', 9, 2], ['c.test', 7, 0]]
>>> decode_vitals([b'{"rank": 0}', b"", None])
[{'rank': 0}, None, None]
"""
from __future__ import annotations

import heapq
import json
import time

__all__ = ["VitalsSender", "decode_vitals", "top_hosts", "TOP_HOSTS_PER_RANK"]

#: hosts each rank names (its hosts with the most URLs admitted)
TOP_HOSTS_PER_RANK = 5


def top_hosts(admitted, pending, n: int = TOP_HOSTS_PER_RANK) -> list[list]:
    """``[host, URLs admitted, URLs queued]`` of the ``n`` hosts with the most URLs admitted.

    ``admitted`` is an iterable of (host, URLs admitted) pairs (e.g. a Counter's ``items()``);
    ``pending(host)`` the URLs of the host not completed yet (None = 0).
    """
    return [[h, int(a), int(pending(h) or 0)] for h, a in heapq.nlargest(n, admitted, key=lambda ha: ha[1])]


class VitalsSender:
    """Encodes one rank's vitals at each superstep (see the module docstring).

    ``fields`` names the entries of the rank's status vector
    (:data:`abc_crawler.crawl.STATUS_FIELDS`).
    """

    def __init__(self, fields: tuple[str, ...], hosts_seconds: float = 1.0):
        self.idx = {f: i for i, f in enumerate(fields)}
        self.hosts_seconds = hosts_seconds
        self._hosts: list[list] = []
        self._hosts_at = float("-inf")

    def encode(self, status, *, rank: int, superstep: int, elapsed_s: float, errors: dict, idle_s: float,
               idle_slot_s: float, exchange_s: float, hosts, dropped: dict | None = None,
               idle_rest_s: float | None = None, idle_empty_s: float | None = None) -> bytes:
        """This rank's vitals: its own status vector ``status`` (before the reduction), its errors by
        kind, idle and exchange seconds, and ``hosts()`` — its busiest hosts as :func:`top_hosts`
        gives them, asked for at most once per ``hosts_seconds``. ``idle_rest_s`` / ``idle_empty_s``
        (the rest of ``idle_s`` by cause: hosts resting, nothing queued) are null when not given."""
        now = time.monotonic()
        if now - self._hosts_at >= self.hosts_seconds:
            self._hosts = hosts()
            self._hosts_at = now
        st = {k: int(status[i]) for k, i in self.idx.items()}
        return json.dumps({
            "rank": rank, "superstep": superstep, "elapsed_s": round(elapsed_s, 3),
            "requests": st["requests"], "pages_ok": st["pages_ok"], "pages_failed": st["failed"],
            "bytes": st["bytes"], "queued": st["work"], "frontier": st["frontier"], "outbox": st["outbox"],
            "in_flight": st["work"] - st["frontier"] - st["outbox"],
            "idle_s": round(idle_s, 3), "idle_slot_s": round(idle_slot_s, 3), "exchange_s": round(exchange_s, 3),
            "idle_rest_s": None if idle_rest_s is None else round(idle_rest_s, 3),
            "idle_empty_s": None if idle_empty_s is None else round(idle_empty_s, 3),
            "errors": dict(errors), "hosts": self._hosts, "dropped": dict(dropped or {}),
        }, separators=(",", ":")).encode()


def decode_vitals(raw: list[bytes | None] | None) -> list[dict | None]:
    """Rank 0: the vitals gathered in one exchange, per rank (None where a rank sent none)."""
    return [json.loads(b) if b else None for b in raw or []]
