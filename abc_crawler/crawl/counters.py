"""What a rank counts: :class:`RankCounters` (plain numbers and counters, saved in checkpoints
as plain data) and where its idle time went (:class:`IdleTimes`)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields

__all__ = ["RankCounters", "IdleTimes"]


@dataclass
class RankCounters:
    requests: int = 0             # page requests issued (robots.txt excluded)
    responses: int = 0            # final outcomes processed (responses and transport failures)
    pages_ok: int = 0
    pages_failed: int = 0
    pages_redirected: int = 0
    bytes: int = 0                # response bodies as received (Content-Encoding and all)
    bytes_decoded: int = 0        # the same bodies with their Content-Encoding undone
    nodes: int = 0
    duplicates: int = 0
    not_modified: int = 0         # pages answered 304 to a conditional request (--previous)
    volume: int = 0               # Türk MV
    messages_thesis: int = 0
    wire_bytes: int = 0
    wire_urls: int = 0
    messages_mpi: int = 0
    batches: int = 0
    slot_cuts: int = 0            # requests cut at a slot end and put back
    warm_cuts: int = 0            # of which at the end of a warm-up slot (not counted towards max-slot-cuts)
    cuts_late: int = 0            # of which started too late in their slot to have it (not counted)
    cuts_starved: int = 0         # of which this rank's loop was away (a busy machine; not counted)
    cuts_slow: int = 0            # of which the server did not answer within a full slot (counted)
    retries: int = 0
    handovers: int = 0            # slots this rank handed over (it held a host with nothing queued)
    leases: int = 0               # slots handed to this rank
    leases_late: int = 0          # leases that arrived after the crawl ended
    errors: Counter = field(default_factory=Counter)
    links: Counter = field(default_factory=Counter)
    out_of_scope_hosts: Counter = field(default_factory=Counter)
    sitemaps: Counter = field(default_factory=Counter)   # sitemap files fetched, URLs listed, skipped

    def as_plain(self) -> dict:
        """Plain data (numbers and dicts) for a checkpoint."""
        # (not dataclasses.asdict: it rebuilds a Counter from (key, value) pairs, counting the pairs)
        return {f.name: (dict(v) if isinstance(v := getattr(self, f.name), Counter) else v) for f in fields(self)}

    def load(self, d: dict) -> None:
        """Take the values of :meth:`as_plain`'s ``d``, in place (the parts of the crawler keep
        references to the counters); unknown keys are refused, missing ones are zero."""
        names = {f.name for f in fields(self)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown counters {sorted(unknown)}")
        fresh = type(self)()
        for k in names:
            v = d.get(k, getattr(fresh, k))
            cur = getattr(self, k)
            if isinstance(cur, Counter):
                cur.clear()
                cur.update(v)
            else:
                setattr(self, k, v)


@dataclass
class IdleTimes:
    """Seconds a rank waited with no request in flight, by what it waited for."""

    total: float = 0.0
    slot: float = 0.0             # work queued, none of it held in this phase slot
    rest: float = 0.0             # work queued for hosts resting (politeness, Crawl-delay, back-off)
    empty: float = 0.0            # nothing queued
    exchange: float = 0.0         # time spent completing superstep exchanges (not idle time as such)
