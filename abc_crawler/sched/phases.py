"""Phase slots: no two ranks talk to one host at the same time.

Under page-level assignment the pages of one host are spread over several
ranks. Time is cut into slots of ``phase_seconds`` on a clock shared by all
ranks (rank 0's, see :mod:`abc_crawler.mpi.clock`), and in every slot each shared
host has exactly one *holder* (below), the only rank that may contact it.

A request never outlives its slot: no request starts in the last
``phase_guard`` seconds of a slot, and its curl timeout is capped at the slot
end; a request cut short by that cap is put back and retried in the host's next
slot (it is not counted as a failure). The guard band at both ends of a slot
covers the clock error: each rank uses the larger of ``phase_guard`` (a floor)
and its own measured error bound (half the round trip of its best clock
sample plus drift since then, :meth:`abc_crawler.mpi.clock.SharedClock.error_bound`).
The holders of one host in consecutive slots would have to err by more than
the sum of their guards to overlap, and each guard is at least its rank's
error. If the bound is not known (no sync yet) or too large, the guard is
capped at 40 % of the slot.

Warm-up. While the frontier fills, a URL found for a host another rank holds
now waits about half a rotation (``n_phases`` slots) before its owner may
fetch it, at every link depth. So the rotation starts fast: counted from an
``origin`` all ranks agree on, the first ``n_phases`` slots last
``phase_seconds / 2**warmup``, the next ``n_phases`` twice that, and so on
until slots reach ``phase_seconds`` (with ``warmup = 3`` and 1 s slots at
K = 8: 8 slots of 0.125 s, 8 of 0.25 s, 8 of 0.5 s, then 1 s slots; fewer
halvings when a slot would be shorter than 50 ms, four guard bands, or the slot the politeness
delay needs for a request). Slot
numbers keep counting up by one, so holders stay one per slot; under equal
shares every rank holds every host once per ``n_phases`` slots at every length,
so a page too slow for the short slots is cut at most ``warmup`` times per rank,
and those cuts do not count towards ``max_slot_cuts``.

Holders (a departure from KSpider). KSpider hashes hosts into phases and lets
rank ``r`` serve phase ``(r + t) mod n`` in slot ``t``: every rank then holds
every host once per rotation. That assumes every host has pages on every rank
(hash assignment). A part vector does the opposite — it gathers a host's pages
on one or a few ranks — and under the plain rotation a host whose pages sit on
2 of 8 ranks would be fetched in only 2 slots of 8. So the unit here is the
*holder*: for host h with owning ranks S_h (the ranks the assignment gives pages
of h; all ranks under hash, or for a host the part vector does not know), exactly
one rank of S_h holds h in each slot, :func:`holder` — a pure function of (h, t,
S_h, the ranks' shares of h's pages): the slots of a period of ``q`` are
apportioned to the ranks of S_h in proportion to their pages (each at least
one slot, :func:`slot_weights`), laid out by a smooth weighted round robin
(:func:`swrr_sequence`: the counts of any prefix stay within one slot of the
shares) and shifted by a hash of the host, so that the hosts a rank holds in a
slot are spread evenly. Under hash (equal shares over all ranks) this is
KSpider's rotation. A host with |S_h| = 1 is fetched by its rank in every slot,
with no guard bands (nobody else ever contacts it). Safety does not depend on
the table: one function value per (host, slot) means one holder per slot, and
the guard bands keep consecutive holders apart whatever the clocks' error.

A holder with nothing queued for a host hands its slot over (see
:mod:`abc_crawler.crawl.slots`): every rank announces in the superstep exchange which
shared hosts it has work for; the holder of a host it has no work for sends a
*lease* for that slot (point to point) to one rank that announced work, and
stops contacting the host for the rest of the slot before it sends. The
receiver fetches the host only within that slot, after the politeness rest the
lease carries. The lease is the only way a non-holder may fetch a shared host,
and only one is sent per (host, slot), so two ranks never hold one host at once.

The rest across a change of holder (:mod:`abc_crawler.sched.politeness`). Politeness is spacing: after
each request a host rests (max(politeness delay, Crawl-delay, delay factor x response time)) before
the next one, from whichever rank. Whoever contacts a shared host in a slot — its holder by the
table, or the receiver of a lease — leaves the host rested when its run of held slots ends: a
request starts only when its time limit plus the rest it would owe fits before the run's usable
end (:meth:`abc_crawler.crawl.slots.SlotGate.request_limit`). The next holder then starts at its
slot's usable start with no wait. Why it is safe: the previous holder's requests and their rests
end before its run's end minus its guard on its clock, that is before the slot boundary E on the
true clock; the next holder starts at E plus its guard on its own clock, at E or later on the true
clock: the server sees at least the rest, without any rank knowing another's Crawl-delay or
response times. Why it cannot starve a host: ``--phase-seconds`` (auto by default) is long enough
for the longest rest a host can owe plus a request (a longer Crawl-delay skips the host), so every
held slot lets its holder send at least one request once its own rest is over; a host with queued
work is therefore fetched within its rest plus one rotation of its holders, and a holder with
nothing queued hands its slot to a rank that announced work. A back-off is longer than a rest (a
``Retry-After`` of up to 60 s, a failure's back-off) and may outlast the run: the rank that met it
tells every rank at the next exchange (the host, and until when on the shared clock), and each holds
the host off as well. The news travels within a superstep and its exchange (0.5 s by default and a
few ms), which must be less than the rest the holder leaves between the answer and its run's end
(1 s by default); with a rest shorter than the superstep the next holder may ask once before it
knows (a lease, ``_free_at``, carries the back-off itself).

Examples
--------
>>> swrr_sequence(((0, 3), (1, 1)))
(0, 0, 1, 0)
>>> slot_weights({0: 900, 1: 100}, 8)
((0, 7), (1, 1))
>>> slot_of(10.7, 2.0), slot_bounds(5, 2.0)
(5, (10.0, 12.0))
"""
from __future__ import annotations

from enum import StrEnum

import math
from typing import Mapping

import xxhash

__all__ = ["uses_phases", "cut_cause", "slot_of", "slot_bounds", "slot_weights", "swrr_sequence", "holder", "HolderTable", "PhaseClock",
           "HOLDER_RESOLUTION", "lease_poll_seconds", "LEASE_POLL_MIN", "LEASE_POLL_MAX"]

#: slots of a holder period per phase: a host's period is ``HOLDER_RESOLUTION * n_phases`` slots,
#: so shares are followed to 1 / (4 n) (at K = 8: one slot in 32)
HOLDER_RESOLUTION = 4


#: a rank under phase slots looks for the leases handed to it (curl's select does not wake on an MPI
#: message) every 1 % of its slot: a leased slot loses about that much at its start, half of it on
#: average. At least every 10 ms (a lab's short slots), at most every 100 ms: 37.5 s slots of the
#: open web's defaults, where waking every 10 ms half the CPU of a polite 8-rank crawl went to it
LEASE_POLL_MIN, LEASE_POLL_MAX, LEASE_POLL_SHARE = 0.01, 0.1, 0.01


def lease_poll_seconds(slot_len: float) -> float:
    """Longest sleep of a rank under phase slots before it looks for leases, in a slot of
    ``slot_len`` seconds (pure).

    >>> lease_poll_seconds(1.0), lease_poll_seconds(4.7), lease_poll_seconds(37.51), lease_poll_seconds(0.05)
    (0.01, 0.047, 0.1, 0.01)
    """
    return min(LEASE_POLL_MAX, max(LEASE_POLL_MIN, LEASE_POLL_SHARE * slot_len))


def uses_phases(mode: str, site_level: bool, ranks: int) -> bool:
    """``--phases``: ``on``; ``off``; ``auto`` = on where two ranks can share a host (page-level
    assignment with more than one rank)."""
    return mode == "on" or (mode == "auto" and not site_level and ranks > 1)


def host_key(host: str) -> int:
    """The 64-bit key of a host (with port) in holder tables and work announcements."""
    return xxhash.xxh3_64_intdigest(b"phase:" + host.encode())


def slot_of(t: float, phase_seconds: float) -> int:
    """Slot number of a time on the shared clock."""
    return math.floor(t / phase_seconds)


def slot_bounds(slot: int, phase_seconds: float) -> tuple[float, float]:
    return slot * phase_seconds, (slot + 1) * phase_seconds


def slot_weights(pages: Mapping[int, int | float], q: int) -> tuple[tuple[int, int], ...]:
    """Apportion ``q`` slots to the ranks of ``pages`` (rank -> its pages of the host, > 0) in
    proportion to their pages, each rank at least one slot; ``((rank, slots), ...)`` by rank.

    Largest remainders, ties to the smaller rank; deterministic, so every rank gets the same.
    """
    ranks = sorted(r for r, p in pages.items() if p > 0)
    if not ranks:
        raise ValueError("slot_weights: no rank holds pages of the host")
    if q < len(ranks):
        raise ValueError(f"slot_weights: {q} slots cannot give each of {len(ranks)} ranks one")
    total = float(sum(pages[r] for r in ranks))
    quota = {r: q * pages[r] / total for r in ranks}
    w = {r: max(1, math.floor(quota[r])) for r in ranks}
    while sum(w.values()) < q:
        r = max(ranks, key=lambda r: (quota[r] - w[r], -r))
        w[r] += 1
    while sum(w.values()) > q:
        r = min((r for r in ranks if w[r] > 1), key=lambda r: (quota[r] - w[r], r))
        w[r] -= 1
    return tuple((r, w[r]) for r in ranks)


def swrr_sequence(weights: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    """Smooth weighted round robin (nginx's): ``sum(weights)`` slots, rank r in exactly w_r of them,
    spread so that in every prefix each rank's count is within one slot of its share."""
    total = sum(w for _, w in weights)
    cur = {r: 0 for r, _ in weights}
    seq = []
    for _ in range(total):
        for r, w in weights:
            cur[r] += w
        best = max(cur, key=lambda r: (cur[r], -r))
        cur[best] -= total
        seq.append(best)
    return tuple(seq)


def holder(key: int, slot: int, seq: tuple[int, ...]) -> int:
    """The rank that holds the host with key ``key`` in ``slot``, given its sequence."""
    return seq[(slot + key) % len(seq)]


class HolderTable:
    """Who holds which host in which slot: built once on rank 0 from the assignment and sent to
    every rank (pure data: the same table gives the same answers everywhere).

    ``host_pages``: host -> {rank: pages} for the hosts the assignment knows (a part vector's
    hosts); every other host is shared by all ranks with equal shares (hash).
    """

    def __init__(self, ranks: int, n_phases: int, host_pages: Mapping[str, Mapping[int, int]] | None = None):
        if n_phases < ranks:
            raise ValueError(f"phases: n-phases ({n_phases}) must be >= the number of ranks ({ranks})")
        self.ranks = ranks
        self.q = HOLDER_RESOLUTION * n_phases
        self.default = swrr_sequence(slot_weights({r: 1 for r in range(ranks)}, self.q))
        seqs: dict[tuple, tuple[int, ...]] = {}
        self.table: dict[str, tuple[int, ...]] = {}    # host -> its slot sequence (ranks in slot order)
        self.pages: dict[str, dict[int, int]] = {}     # host -> its pages per rank (for groups of hosts)
        for host, pages in (host_pages or {}).items():
            w = slot_weights(pages, self.q)
            self.table[host] = seqs.setdefault(w, swrr_sequence(w))
            self.pages[host] = {int(r): int(n) for r, n in pages.items() if n > 0}
        self._cache: dict[str, tuple[int, tuple[int, ...], frozenset[int]]] = {}

    def __getstate__(self):
        return {"ranks": self.ranks, "q": self.q, "default": self.default, "table": self.table, "pages": self.pages}

    def __setstate__(self, st):
        self.__dict__.update(st)
        self.__dict__.setdefault("pages", {})
        self._cache = {}

    def _entry(self, host: str) -> tuple[int, tuple[int, ...], frozenset[int]]:
        e = self._cache.get(host)
        if e is None:
            seq = self.table.get(host, self.default)
            e = self._cache[host] = (host_key(host), seq, frozenset(seq))
        return e

    def holder(self, host: str, slot: int) -> int:
        key, seq, _ = self._entry(host)
        return seq[(slot + key) % len(seq)]

    def ranks_of(self, host: str) -> frozenset[int]:
        """S_h: the ranks that may hold ``host``."""
        return self._entry(host)[2]

    def key(self, host: str) -> int:
        return self._entry(host)[0]

    def exclusive(self, host: str) -> int | None:
        """The rank that holds ``host`` in every slot, or None when it is shared."""
        s = self._entry(host)[2]
        return next(iter(s)) if len(s) == 1 else None

    # -- groups of hosts (hosts sharing an address, abc_crawler/sched/ipgroups.py) ------------------------
    def group_entry(self, key: str, members: tuple[str, ...]) -> tuple[int, tuple[int, ...], frozenset[int]]:
        """(key hash, slot sequence, ranks) of a politeness group: one host's own entry, or for
        several hosts a sequence weighted by their pages summed (hosts the part vector does not know
        count one page on every rank); the same on every rank for the same members."""
        if len(members) == 1 and members[0] == key:
            return self._entry(key)
        ck = (key, len(members))
        e = self._cache.get(ck)
        if e is None:
            total: dict[int, int] = {}
            hashed = False
            for h in members:
                p = self.pages.get(h)
                if p is None:
                    hashed = True
                    continue
                for r, n in p.items():
                    total[r] = total.get(r, 0) + n
            if hashed:
                for r in range(self.ranks):
                    total[r] = total.get(r, 0) + 1
            seq = swrr_sequence(slot_weights(total, self.q)) if total else self.default
            e = self._cache[ck] = (host_key(key), seq, frozenset(seq))
        return e

    def holder_of_group(self, key: str, members: tuple[str, ...], slot: int) -> int:
        k, seq, _ = self.group_entry(key, members)
        return seq[(slot + k) % len(seq)]

    def exclusive_group(self, key: str, members: tuple[str, ...]) -> int | None:
        s = self.group_entry(key, members)[2]
        return next(iter(s)) if len(s) == 1 else None


# -- requests cut at a slot's end ------------------------------------------------------------
#: a request "had its slot" when it was given at least this share of the slot's usable length
FULL_SLOT_SHARE = 0.9
#: the rank was starved when its loop was away for at least this share of the request's time
STARVED_SHARE = 0.25


class Cut(StrEnum):
    """Why a request was cut at its slot's end (stats.json ``slot_cuts``; the crawl log's
    ``slotcut:CAUSE``). A ``StrEnum``: each member is the string the session files hold."""

    WARM_UP = "warm_up"              # a warm-up slot (not counted towards --max-slot-cuts)
    LATE_START = "late_start"        # started late in its slot
    STARVED = "starved"              # the rank's loop was away (a busy machine)
    SLOW_RESPONSE = "slow_response"  # it had its slot: the server is slower than a slot (counted)


CUT_WARM, CUT_LATE, CUT_STARVED, CUT_SLOW = Cut.WARM_UP, Cut.LATE_START, Cut.STARVED, Cut.SLOW_RESPONSE


def cut_cause(limit: float, usable: float, host_time: float | None = None, loop_gap: float = 0.0,
              warm: bool = False) -> str:
    """Why a request cut at the end of its slot was cut (pure; only ``slow_response`` counts
    towards ``--max-slot-cuts``).

    ``limit``: seconds the request was given (its slot's usable end minus its start); ``usable``:
    the usable length of that slot; ``host_time``: the host's measured response time (None when
    unknown); ``loop_gap``: the longest time this rank's loop was away while the request ran (a
    starved or busy process cannot read an answer); ``warm``: the slot was a warm-up slot.

    >>> str(cut_cause(0.95, 0.99)), str(cut_cause(0.3, 0.99)), str(cut_cause(0.95, 0.99, loop_gap=0.5))
    ('slow_response', 'late_start', 'starved')
    >>> str(cut_cause(0.3, 0.99, loop_gap=0.5))      # away for most of a late start's time: starved
    'starved'
    >>> str(cut_cause(0.3, 0.99, host_time=1.5))     # the host never answers within a slot
    'slow_response'
    """
    if warm:
        return CUT_WARM
    if host_time is not None and host_time >= usable:
        return CUT_SLOW
    # the loop away for a good part of the request's time explains the cut whenever it started:
    # its answer may have been there, unread (a late start alone does not, for a fast host)
    if loop_gap >= STARVED_SHARE * limit:
        return CUT_STARVED
    if limit < FULL_SLOT_SHARE * usable:
        return CUT_LATE
    return CUT_SLOW


#: shortest warm-up slot, seconds (``phase_warmup`` is lowered until no slot is shorter)
MIN_WARM_SLOT = 0.05


class PhaseClock:
    """Which phase a rank may serve now, and until when (pure, given shared-clock times)."""

    def __init__(self, rank: int, ranks: int, n_phases: int, phase_seconds: float, guard: float,
                 error=None, warmup: int = 0, origin: float | None = None, min_slot: float = 0.0):
        if n_phases < ranks:
            raise ValueError(f"phases: n-phases ({n_phases}) must be >= the number of ranks ({ranks})")
        if warmup < 0:
            raise ValueError(f"phases: phase-warmup ({warmup}) must be >= 0")
        if not 0 <= 2 * guard < phase_seconds:
            raise ValueError(f"phases: phase-guard ({guard}) must be less than half of phase-seconds ({phase_seconds})")
        # no warm-up slot shorter than MIN_WARM_SLOT, four guard bands or ``min_slot`` (the slot the
        # politeness delay needs to fit a request: a shorter one would serve no host): fewer halvings
        while warmup > 0 and phase_seconds / 2 ** warmup < max(MIN_WARM_SLOT, 4 * guard, min_slot):
            warmup -= 1
        self.rank = rank
        self.n_phases = n_phases
        self.phase_seconds = phase_seconds
        self.min_guard = guard
        self.error = error               # callable: this rank's clock error bound (seconds), or None
        self.warmup = warmup
        self.origin: float | None = None
        self.set_origin(origin)

    def set_origin(self, origin: float | None) -> None:
        """Start the warm-up at shared time ``origin`` (None: no warm-up, regular slots only).

        Before the origin the slots are the regular ones; the one containing the
        origin ends there (it may be too short to use), and the numbering goes on
        by one per slot from there, so every rank that knows the origin agrees on
        every slot.
        """
        if origin is None or self.warmup == 0:
            self.origin = None
            return
        self.origin = float(origin)
        self._base = slot_of(self.origin, self.phase_seconds) + 1
        self._warm_span = self.n_phases * self.phase_seconds * (1 - 2.0 ** -self.warmup)

    def slot(self, t: float) -> tuple[int, float, float]:
        """(slot number, start, end) of the slot containing shared time ``t``."""
        L = self.phase_seconds
        o = self.origin
        if o is None or t < o:
            s = slot_of(t, L)
            return s, s * L, (s + 1) * L if o is None else min((s + 1) * L, o)
        n, m = self.n_phases, self.warmup
        x = t - o
        if x >= self._warm_span:
            j = math.floor((x - self._warm_span) / L)
            a = o + self._warm_span + j * L
            return self._base + m * n + j, a, a + L
        # level k (0 .. m-1): n slots of L / 2**(m-k), starting at n * L * (2**(k-m) - 2**-m)
        k = min(m - 1, int(math.log2(x / (n * L * 2.0 ** -m) + 1)))
        while k > 0 and x < n * L * (2.0 ** (k - m) - 2.0 ** -m):
            k -= 1
        while k < m - 1 and x >= n * L * (2.0 ** (k + 1 - m) - 2.0 ** -m):
            k += 1
        lk = L * 2.0 ** (k - m)
        ck = n * L * (2.0 ** (k - m) - 2.0 ** -m)
        j = min(n - 1, math.floor((x - ck) / lk))
        a = o + ck + j * lk
        return self._base + k * n + j, a, a + lk

    def bounds(self, n: int) -> tuple[float, float]:
        """(start, end) of slot number ``n``: the same floats :meth:`slot` gives for a time in it."""
        L = self.phase_seconds
        o = self.origin
        if o is None or n < self._base:
            return n * L, (n + 1) * L if o is None else min((n + 1) * L, o)
        i, n_p, m = n - self._base, self.n_phases, self.warmup
        if i >= m * n_p:
            a = o + self._warm_span + (i - m * n_p) * L
            return a, a + L
        k, j = divmod(i, n_p)
        lk = L * 2.0 ** (k - m)
        a = o + n_p * L * (2.0 ** (k - m) - 2.0 ** -m) + j * lk
        return a, a + lk

    def guard_for(self, length: float) -> float:
        """Guard band of a slot of ``length`` seconds: the floor, or the clock's error bound when
        larger, at most 40 % of the slot."""
        if self.error is None:
            return self.min_guard
        return min(max(self.min_guard, self.error()), 0.4 * length)

    @property
    def guard(self) -> float:
        """Guard band of a regular slot now."""
        return self.guard_for(self.phase_seconds)

    def window(self, t: float) -> tuple[int, float, float] | None:
        """(slot number, usable start, usable end) of the slot containing shared time ``t``,
        or None when ``t`` is in a guard band."""
        s, a, b = self.slot(t)
        g = self.guard_for(b - a)
        lo, hi = a + g, b - g
        if not lo <= t < hi:
            return None
        return s, lo, hi

    def slot_length(self, t: float) -> float:
        _, a, b = self.slot(t)
        return b - a

    def next_start(self, t: float) -> float:
        """Shared time at which the next usable window begins (after ``t``)."""
        _, a, b = self.slot(t)
        g = self.guard_for(b - a)
        if t < a + g:
            return a + g
        # slots never get shorter, so half the shortest slot past b is inside the next one
        _, a2, b2 = self.slot(b + 0.5 * self.phase_seconds / 2 ** self.warmup)
        return a2 + self.guard_for(b2 - a2)
