"""What a rank counts, registered once: :data:`STATS` names each counter with its kind, its line
of documentation, its key in a rank's summary and in ``stats.json`` (:func:`totals`,
:func:`per_rank`); :class:`RankCounters` is made from it (plain numbers and counters, saved in
checkpoints as plain data). A new counter is one line here: the rank's summary, the totals and
``per_rank`` of ``stats.json`` follow, and ``tests/test_docs.py`` checks that
``docs/SESSION_FORMAT.md`` documents its keys. Where a rank's idle time went is :class:`IdleTimes`,
when its loop was away :class:`LoopGaps`."""
from __future__ import annotations

import heapq
import time
from collections import Counter, deque
from dataclasses import dataclass, field, fields, make_dataclass

__all__ = ["Stat", "STATS", "COUNT", "KINDS", "RankCounters", "IdleTimes", "LoopGaps", "summary_of", "totals", "per_rank_of",
           "sum_counts"]

#: a number summed over ranks
COUNT = "count"
#: ``{kind: count}`` (a :class:`collections.Counter`), summed per key over ranks
KINDS = "kinds"


@dataclass(frozen=True)
class Stat:
    """One counter of a rank. ``key``: its name in the rank's summary and ``per_rank`` (default: the
    attribute's); ``total``: where ``stats.json`` keeps its sum over ranks, a key or
    ``"parent.key"`` (None: not summed); ``per_rank``: listed for each rank too; ``top``: a
    :data:`KINDS` counter keeps its ``top`` largest keys only (None: all, sorted by key)."""

    name: str
    kind: str
    doc: str
    key: str | None = None
    total: str | None = None
    per_rank: bool = False
    top: int | None = None

    @property
    def summary_key(self) -> str:
        return self.key or self.name


#: every counter of a rank, in the order of the summary
STATS: tuple[Stat, ...] = (
    Stat("requests", COUNT, "page requests issued (robots.txt excluded)", total="requests", per_rank=True),
    Stat("responses", COUNT, "final outcomes processed (responses and transport failures)", per_rank=True),
    Stat("pages_ok", COUNT, "responses with status 200 (and 304s standing for one)", key="pages",
         total="pages_crawled", per_rank=True),
    Stat("pages_failed", COUNT, "responses with status >= 400 and transport failures", total="pages_failed"),
    Stat("pages_redirected", COUNT, "responses with status 3xx", total="pages_redirected"),
    Stat("bytes", COUNT, "response bodies as received (Content-Encoding and all)", total="bytes_stored",
         per_rank=True),
    Stat("bytes_decoded", COUNT, "the same bodies with their Content-Encoding undone", total="bytes_decoded"),
    Stat("nodes", COUNT, "responses that became graph nodes", per_rank=True),
    Stat("duplicates", COUNT, "bodies that duplicate one stored before (WARC revisits)", total="duplicates",
         per_rank=True),
    Stat("not_modified", COUNT, "pages answered 304 to a conditional request (--previous)", total="not_modified",
         per_rank=True),
    Stat("volume", COUNT, "Tuerk's exchange volume MV", key="volume_bytes", total="exchange.volume_bytes"),
    Stat("messages_thesis", COUNT, "Tuerk's message count NM", total="exchange.messages_thesis"),
    Stat("wire_bytes", COUNT, "bytes of URLs sent to other ranks", total="exchange.wire_bytes"),
    Stat("wire_urls", COUNT, "URLs sent to other ranks", total="exchange.wire_urls"),
    Stat("messages_mpi", COUNT, "MPI messages with a non-empty payload to another rank", total="exchange.messages_mpi"),
    Stat("batches", COUNT, "Bucket elements fetched (one host's URLs over one connection)", per_rank=True),
    Stat("slot_cuts", COUNT, "requests cut at a slot end and put back", total="slot_cuts.total", per_rank=True),
    Stat("warm_cuts", COUNT, "of which at the end of a warm-up slot (not counted towards --max-slot-cuts)",
         total="slot_cuts.warm_up", per_rank=True),
    Stat("cuts_late", COUNT, "of which started too late in their slot to have it (not counted)",
         total="slot_cuts.late_start", per_rank=True),
    Stat("cuts_starved", COUNT, "of which this rank's loop was away (a busy machine; not counted)",
         total="slot_cuts.starved", per_rank=True),
    Stat("cuts_slow", COUNT, "of which the server did not answer within a full slot (counted)",
         total="slot_cuts.slow_response", per_rank=True),
    Stat("cuts_left", COUNT, "URLs cut at a slot end and not asked again before the crawl stopped (counted in requests)",
         total="slot_cuts.left"),
    Stat("retries", COUNT, "requests asked again after a timeout, reset, 429 or 503", total="retries", per_rank=True),
    Stat("handovers", COUNT, "slots this rank handed over (it held a host with nothing queued)", per_rank=True),
    Stat("leases", COUNT, "slots handed to this rank", per_rank=True),
    Stat("leases_late", COUNT, "leases that arrived after the crawl ended", per_rank=True),
    Stat("lease_wait_ms", COUNT, "milliseconds from the sending of the leases it used to their taking, summed",
         per_rank=True),
    Stat("lease_wait_max_ms", COUNT, "the longest of those waits", per_rank=True),
    Stat("errors", KINDS, "why requests failed or pages were not used, by kind", total="errors"),
    Stat("links", KINDS, "what became of the links found, by reason", total="links"),
    Stat("out_of_scope_hosts", KINDS, "hosts of out-of-scope links, by links", total="out_of_scope_hosts", top=50),
    Stat("sitemaps", KINDS, "sitemap files fetched, URLs listed, skipped, by kind", total="sitemaps"),
)


def _as_plain(self) -> dict:
    """Plain data (numbers and dicts) for a checkpoint."""
    # (not dataclasses.asdict: it rebuilds a Counter from (key, value) pairs, counting the pairs)
    return {f.name: (dict(v) if isinstance(v := getattr(self, f.name), Counter) else v) for f in fields(self)}


def _load(self, d: dict) -> None:
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


#: the counters of one rank, one attribute per :data:`STATS` entry (0, or an empty Counter)
RankCounters = make_dataclass(
    "RankCounters",
    [(s.name, int, field(default=0)) if s.kind == COUNT else (s.name, Counter, field(default_factory=Counter))
     for s in STATS],
    namespace={"as_plain": _as_plain, "load": _load, "__doc__": "What one rank counts (:data:`STATS`)."},
)
RankCounters.__module__ = __name__


def summary_of(c) -> dict:
    """A rank's counters under their summary keys (Counters as dicts; ``top`` ones cut)."""
    out = {}
    for s in STATS:
        v = getattr(c, s.name)
        if s.kind == KINDS:
            v = dict(v.most_common(s.top)) if s.top is not None else dict(v)
        out[s.summary_key] = v
    return out


def sum_counts(dicts) -> dict:
    """Several ``{key: count}`` summed, sorted by key."""
    out: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return dict(sorted(out.items()))


def totals(summaries: list[dict]) -> dict:
    """The ``stats.json`` sums over ranks of every counter with a ``total`` (nested by ``parent.key``)."""
    out: dict = {}
    for s in STATS:
        if s.total is None:
            continue
        vals = [r[s.summary_key] for r in summaries]
        if s.kind == COUNT:
            v = sum(vals)
        else:
            v = sum_counts(vals)
            if s.top is not None:
                v = dict(sorted(v.items(), key=lambda kv: -kv[1])[:s.top])
        parent, _, key = s.total.rpartition(".")
        (out.setdefault(parent, {}) if parent else out)[key] = v
    return out


def per_rank_of(summary: dict) -> dict:
    """The counters of one rank's summary that ``stats.json`` lists per rank."""
    return {s.summary_key: summary[s.summary_key] for s in STATS if s.per_rank}


@dataclass
class IdleTimes:
    """Seconds a rank waited with no request in flight, by what it waited for."""

    total: float = 0.0
    slot: float = 0.0             # work queued, none of it held in this phase slot
    rest: float = 0.0             # work queued for hosts resting (politeness, Crawl-delay, back-off)
    empty: float = 0.0            # nothing queued
    exchange: float = 0.0         # time spent completing superstep exchanges (not idle time as such)


class LoopGaps:
    """The times a rank's fetch loop did not turn (busy elsewhere, or descheduled on a loaded
    machine): the last ``recent`` of every gap noted, as (monotonic end, seconds), to tell a starved
    rank's slot cut (:meth:`longest_since`); and of those of ``least`` seconds or more — in which
    the rank could neither start a request nor hand a phase slot over — their total and count and
    the ``kept`` longest as (shared-clock start, seconds), for ``stats.json``.

    >>> g = LoopGaps(None, least=0.05, kept=2)
    >>> for end, gap in ((10.0, 0.2), (11.0, 0.01), (12.0, 0.5), (13.0, 0.1)):
    ...     g.note(end, gap, shared=end + 100.0)
    >>> g.count, round(g.seconds, 3), g.longest(), g.longest_since(10.5), g.longest_since(13.0)
    (3, 0.8, [[111.5, 0.5], [109.8, 0.2]], 0.5, 0.0)
    """

    def __init__(self, clock, least: float = 0.05, kept: int = 200, recent: int = 512):
        self.clock = clock
        self.least = least
        self.kept = kept
        self.count = 0
        self.seconds = 0.0
        self._recent: deque[tuple[float, float]] = deque(maxlen=recent)   # (monotonic end, seconds)
        self._heap: list[tuple[float, float]] = []    # (seconds, shared-clock start), the longest kept

    def longest_since(self, t: float) -> float:
        """The longest recent gap that ended after monotonic time ``t`` (0.0: none)."""
        return max((g for end, g in self._recent if end > t), default=0.0)

    def note(self, end: float, gap: float, shared: float | None = None) -> None:
        """A gap of ``gap`` seconds ending at monotonic time ``end`` (``shared``: that end on the
        shared clock; read from the clock when not given)."""
        self._recent.append((end, gap))
        if gap < self.least:
            return
        self.count += 1
        self.seconds += gap
        if shared is None:
            shared = self.clock.shared() - (time.monotonic() - end)
        item = (gap, shared - gap)
        if len(self._heap) < self.kept:
            heapq.heappush(self._heap, item)
        elif item > self._heap[0]:
            heapq.heapreplace(self._heap, item)

    def longest(self) -> list[list[float]]:
        """[[shared-clock start, seconds], ...], the longest first."""
        return [[round(start, 3), round(gap, 3)] for gap, start in sorted(self._heap, reverse=True)]
