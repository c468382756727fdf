"""``--max-pages-per-host`` over all ranks, exactly, whatever the assignment.

The limit is "in all": a host below it never loses a URL to it, and a host above it gets exactly
the limit. Under hashing a host's URLs spread over every rank, under a part vector they gather on
one or a few, and under site hashing on one: no fixed split of the limit over the ranks is right
for all three (``limit / ranks`` per rank lost 2,133 pages of one host under a part vector).

How (one role: :class:`HostQuotas` of one rank):

* **Static shares.** Each rank may admit up to its static share of every host without telling
  anyone: ``limit // ranks`` (the first ``limit % ranks`` ranks one more) under page-level
  assignment, the whole limit under site-level (one rank owns the host). The shares sum to the
  limit, so no rank ever needs to ask about a host that stays under them.
* **Contention.** A rank whose share of a host is used up *defers* the host's next URLs (they
  wait in this rank's memory, counted as work, nothing is dropped) and reports the host at the
  next superstep exchange. Once any rank reported it, the host is *contended* for every rank from
  that exchange on: each rank reports its admitted and deferred counts of the host whenever they
  change, and while an exchange is in flight it defers the host's URLs instead of admitting them,
  so the counts it reported are its exact counts when the exchange completes.
* **Settling.** At each exchange after the one that made a host contended (every rank knew of it
  since), every rank computes the same new quotas from the same reports: with ``A`` URLs admitted
  in all and ``R = limit - A`` left, each rank's quota becomes its admitted count plus a grant; the
  grants sum to ``R`` — deferred URLs first (all of them when they fit, else ``R`` spread over the
  deferring ranks in proportion to what they deferred), the rest over the ranks in proportion to
  their share of the host so far. Quotas may move between ranks at a settle because no rank admits
  a contended host between its report and the settle. Deferred URLs within the new quota are
  admitted at once; once ``A`` reaches the limit the host is full and its deferred and later URLs
  are dropped, counted as ``over_host_limit``.

Safety: at every moment each rank admits at most its current quota, the quotas of one settle sum
to the limit, and a settle never gives a rank less than it had admitted; so the ranks together
never admit more than the limit, and nothing is dropped before all of it is admitted.

>>> q = [HostQuotas(5, r, 2, site_level=False) for r in range(2)]
>>> [x.static for x in q]
[3, 2]
"""
from __future__ import annotations

from collections import deque

__all__ = ["HostQuotas", "grants", "static_share"]


def static_share(limit: int, rank: int, ranks: int, site_level: bool) -> int:
    """The share of ``limit`` that ``rank`` may admit of any host without asking.

    >>> [static_share(10, r, 4, False) for r in range(4)], static_share(10, 3, 4, True)
    ([3, 3, 2, 2], 10)
    """
    if site_level:
        return limit
    return limit // ranks + (1 if rank < limit % ranks else 0)


def _apportion(total: int, weights: dict[int, int]) -> dict[int, int]:
    """``total`` split over the ranks of ``weights`` in proportion (largest remainders, ties to the
    smaller rank); equal weights when all are 0."""
    ranks = sorted(weights)
    if not ranks or total <= 0:
        return {r: 0 for r in ranks}
    w = {r: weights[r] for r in ranks}
    s = sum(w.values())
    if s <= 0:
        w = {r: 1 for r in ranks}
        s = len(ranks)
    quota = {r: total * w[r] / s for r in ranks}
    out = {r: int(quota[r]) for r in ranks}
    left = total - sum(out.values())
    for r in sorted(ranks, key=lambda r: (-(quota[r] - out[r]), r))[:left]:
        out[r] += 1
    return out


def grants(limit: int, counts: dict[int, tuple[int, int]], ranks: int) -> dict[int, int]:
    """Every rank's new quota of one contended host from its ``(admitted, deferred)`` counts
    (ranks missing from ``counts`` have admitted and deferred nothing). Pure; the same on every rank.

    >>> grants(10, {0: (4, 3), 1: (2, 0)}, 2)              # 4 left, 3 deferred: all granted, 1 more
    {0: 8, 1: 2}
    >>> grants(10, {0: (5, 6), 1: (3, 2)}, 2)              # 2 left for 8 deferred: by what each deferred
    {0: 7, 1: 3}
    >>> grants(10, {0: (10, 4)}, 3)                        # full
    {0: 10, 1: 0, 2: 0}
    """
    adm = {r: counts.get(r, (0, 0))[0] for r in range(ranks)}
    dfr = {r: counts.get(r, (0, 0))[1] for r in range(ranks)}
    left = max(0, limit - sum(adm.values()))
    want = sum(dfr.values())
    if want >= left:
        g = _apportion(left, dfr)
    else:
        extra = _apportion(left - want, {r: adm[r] + dfr[r] for r in range(ranks)})
        g = {r: dfr[r] + extra[r] for r in range(ranks)}
    return {r: adm[r] + g[r] for r in range(ranks)}


class HostQuotas:
    """This rank's side of the per-host limit (module docstring): what it may admit, what it
    defers, what it reports and how it settles."""

    def __init__(self, limit: int, rank: int, ranks: int, site_level: bool):
        self.limit = limit
        self.rank = rank
        self.ranks = ranks
        self.static = static_share(limit, rank, ranks, site_level)
        self.quota: dict[str, int] = {}           # contended hosts: this rank's quota since the last settle
        self.contended: dict[str, int] = {}       # host -> exchange number at which it became contended
        self.counts: dict[str, dict[int, tuple[int, int]]] = {}   # host -> rank -> last reported counts
        self.deferred: dict[str, deque] = {}      # host -> URLs waiting for quota (admit's arguments)
        self.full: set[str] = set()               # hosts whose limit is reached in all
        self.changed: set[str] = set()            # hosts to report at the next exchange
        self.hold = False                         # an exchange is in flight: contended hosts defer
        self.exchanges = 0

    # -- admission -------------------------------------------------------------------------------
    def decide(self, host: str, admitted: int) -> str:
        """``"admit"``, ``"defer"`` or ``"drop"`` for the next URL of ``host`` (``admitted``: this
        rank's URLs of it so far)."""
        if host in self.full:
            return "drop"
        if host in self.contended:
            if self.hold or host in self.deferred or admitted >= self.quota.get(host, self.static):
                return "defer"
            self.changed.add(host)           # its admitted count changes: reported next time
            return "admit"
        if admitted >= self.static:
            return "defer"
        return "admit"

    def defer(self, host: str, item: tuple) -> None:
        d = self.deferred.get(host)
        if d is None:
            d = self.deferred[host] = deque()
        d.append(item)
        self.changed.add(host)

    @property
    def waiting(self) -> int:
        """URLs deferred here (work: the crawl is not done while any wait)."""
        return sum(len(d) for d in self.deferred.values())

    # -- the exchange ------------------------------------------------------------------------------
    def report(self, admitted_of) -> bytes:
        """Lines ``host\\tadmitted\\tdeferred`` for the hosts whose counts changed (``admitted_of(host)``:
        this rank's admitted URLs of it); called when the exchange starts (the hold begins)."""
        self.hold = True
        lines = []
        for host in sorted(self.changed):
            if host in self.full:
                continue
            lines.append(f"{host}\t{admitted_of(host)}\t{len(self.deferred.get(host, ()))}")
        self.changed.clear()
        return "\n".join(lines).encode()

    def receive(self, src: int, data: bytes, admitted_of) -> None:
        """One rank's report (this rank's own included); a host named becomes contended here."""
        if not data:
            return
        for line in data.decode().split("\n"):
            host, a, d = line.split("\t")
            self.counts.setdefault(host, {})[src] = (int(a), int(d))
            if host not in self.contended:
                self.contended[host] = self.exchanges
                if src != self.rank:
                    self.changed.add(host)    # every rank reports its counts at the next exchange
                self.counts[host].setdefault(self.rank, (admitted_of(host), len(self.deferred.get(host, ()))))

    def settle(self) -> list[tuple[str, int]]:
        """After the exchange's reports: new quotas of the hosts every rank knew to be contended
        before it; returns ``(host, quota)`` of those, in a fixed order. The hold ends."""
        out = []
        for host in sorted(self.contended):
            if self.contended[host] >= self.exchanges or host in self.full:
                continue
            q = grants(self.limit, self.counts[host], self.ranks)
            self.quota[host] = q[self.rank]
            if sum(a for a, _ in self.counts[host].values()) >= self.limit:
                self.full.add(host)
            out.append((host, q[self.rank]))
        self.exchanges += 1
        self.hold = False
        return out

    def take(self, host: str, n: int) -> list[tuple]:
        """Up to ``n`` deferred URLs of ``host``, oldest first."""
        d = self.deferred.get(host)
        out = []
        while d and len(out) < n:
            out.append(d.popleft())
        if d is not None and not d:
            del self.deferred[host]
        if out:
            self.changed.add(host)
        return out

    def drop_all(self, host: str) -> int:
        """The host is full: its deferred URLs are dropped; returns how many."""
        d = self.deferred.pop(host, None)
        return len(d) if d else 0

    # -- checkpoints -------------------------------------------------------------------------------
    def as_plain(self) -> dict:
        return {"quota": dict(self.quota), "contended": dict(self.contended),
                "counts": {h: {str(r): list(c) for r, c in v.items()} for h, v in self.counts.items()},
                "deferred": {h: [list(x) for x in d] for h, d in self.deferred.items()},
                "full": sorted(self.full), "changed": sorted(self.changed), "exchanges": self.exchanges}

    def load(self, d: dict) -> None:
        self.quota = dict(d.get("quota", {}))
        self.contended = dict(d.get("contended", {}))
        self.counts = {h: {int(r): tuple(c) for r, c in v.items()} for h, v in d.get("counts", {}).items()}
        self.deferred = {h: deque(tuple(x) for x in v) for h, v in d.get("deferred", {}).items()}
        self.full = set(d.get("full", ()))
        self.changed = set(d.get("changed", ()))
        self.exchanges = d.get("exchanges", 0)
        self.hold = False
