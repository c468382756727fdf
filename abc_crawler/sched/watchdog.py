"""The stall watchdog: a crawl with queued work that sends no request says so, then stops.

A crawl can look alive and do nothing: every rank exchanges, the progress line ticks, but no
request leaves (issue 28: phase slots too short for the politeness rest stopped a crawl for good,
and it ended "normally" at its time limit). Rank 0 watches the one figure that cannot lie — the
number of requests sent in all (pages, robots.txt and sitemap files), summed over the ranks at
every superstep exchange — against the queued work:

* the crawl is *stalled* while work is queued and that number does not grow;
* after ``bound = --stall-seconds + 2 x the longest wait in force`` (the longest rest, back-off or
  lease any rank's queued hosts wait for, and what is left of the phase warm-up, reported by the
  ranks with the exchange) the progress line, ``stats.json`` and the dashboard say so, with the
  hosts waiting and what each waits for;
* after three times that bound the crawl stops: ``stopped: "stalled"``, a record in
  ``errors/stall.txt``, and exit status :data:`STALL_EXIT`.

The verdict is rank 0's alone and travels in the summed status vector (the other ranks add 0), so
every rank stops at the same superstep.

>>> w = StallWatch(floor=10.0)
>>> w.observe(0.0, asked=5, work=3, longest_wait=1.0), w.observe(11.0, asked=5, work=3, longest_wait=1.0)
(0, 0)
>>> w.observe(12.5, asked=5, work=3, longest_wait=1.0), round(w.stalled_for, 1)     # past 10 + 2 x 1
(1, 12.5)
>>> w.observe(40.0, asked=5, work=3, longest_wait=1.0)                               # past 3 x 12
2
>>> w.observe(41.0, asked=6, work=3, longest_wait=1.0)                               # a request: all well
0
"""
from __future__ import annotations

__all__ = ["StallWatch", "STALL_OK", "STALL_WARN", "STALL_FATAL", "STALL_EXIT", "FATAL_FACTOR", "wait_reason",
           "format_waiting"]

STALL_OK, STALL_WARN, STALL_FATAL = 0, 1, 2
#: exit status of a crawl stopped by the watchdog (2: bad input; 1: a gathered copy failed its check)
STALL_EXIT = 3
#: the crawl stops after this many times the warning's bound
FATAL_FACTOR = 3.0


class StallWatch:
    """Rank 0's judgement, from what every exchange tells it (pure: the caller passes the time)."""

    def __init__(self, floor: float):
        self.floor = floor
        self.asked: int | None = None
        self.since = 0.0
        self.stalled_for = 0.0
        self.bound = floor
        self.warnings = 0             # supersteps that ended with a warning
        self.longest = 0.0            # longest stall seen (seconds)

    def observe(self, now: float, *, asked: int, work: int, longest_wait: float) -> int:
        """The verdict after an exchange: :data:`STALL_OK`, :data:`STALL_WARN` or :data:`STALL_FATAL`."""
        if work <= 0 or asked != self.asked:
            self.asked = asked
            self.since = now
            self.stalled_for = 0.0
            return STALL_OK
        self.stalled_for = now - self.since
        self.longest = max(self.longest, self.stalled_for)
        self.bound = self.floor + 2.0 * max(0.0, longest_wait)
        if self.stalled_for > FATAL_FACTOR * self.bound:
            return STALL_FATAL
        if self.stalled_for > self.bound:
            self.warnings += 1
            return STALL_WARN
        return STALL_OK


def wait_reason(now: float, *, blocked_until: float = 0.0, next_at: float = 0.0, held: bool = True,
                holder: int | None = None, robots: str = "ready", may_request: bool = True,
                test_stall: bool = False) -> tuple[str, float]:
    """What a host with queued work waits for on this rank, and for how many more seconds (0: not
    known). Pure; the first reason that holds is the one given.

    >>> wait_reason(10.0, blocked_until=12.5)
    ('back-off', 2.5)
    >>> wait_reason(10.0, next_at=10.4)
    ('rest', 0.4)
    >>> wait_reason(10.0, held=False, holder=3)
    ('slot held by rank 3', 0.0)
    >>> wait_reason(10.0)
    ('ready', 0.0)
    """
    if test_stall:
        return "test hook --test-stall", 0.0
    if not may_request:
        return "page budget", 0.0
    if blocked_until > now:
        return "back-off", round(blocked_until - now, 3)
    if next_at > now:
        return "rest", round(next_at - now, 3)
    if robots not in ("ready", "dead"):
        return f"robots.txt ({robots})", 0.0
    if not held:
        return (f"slot held by rank {holder}" if holder is not None else "phase slot"), 0.0
    return "ready", 0.0


def format_waiting(hosts: list[dict], limit: int = 5) -> str:
    """``h1.test (rest 0.4 s), h2.test (slot held by rank 3)``: the first hosts of a stall report.

    >>> format_waiting([{"host": "a.test", "why": "rest", "seconds": 0.4, "queued": 3},
    ...                 {"host": "b.test", "why": "slot held by rank 3", "seconds": 0.0, "queued": 9}])
    'b.test: 9 queued, slot held by rank 3; a.test: 3 queued, rest 0.4 s'
    """
    rows = sorted(hosts, key=lambda h: (-h.get("queued", 0), h["host"]))[:limit]
    out = []
    for h in rows:
        s = f" {h['seconds']:g} s" if h.get("seconds") else ""
        out.append(f"{h['host']}: {h.get('queued', 0)} queued, {h['why']}{s}")
    return "; ".join(out)
