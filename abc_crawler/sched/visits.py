"""What one rank knows of one host, in one record (BUbiNG's ``VisitState``), owned by the frontier.

:class:`HostVisit` holds, for a host this rank fetches or hears of:

* **failures**: consecutive transport failures, given up (``--host-max-failures``), the slot-end cuts
  of its robots.txt in a row;
* **pacing**: its rest (``next_at``: no request before, after this rank's last one) and its back-off
  (``blocked_until``: no Bucket element before — a retry's back-off, a robots.txt retry, a lease's
  rest); :meth:`abc_crawler.sched.frontier.Frontier.hold_off` is the one rule that moves both;
* **admission**: the URLs admitted here (``--max-pages-per-host``, this rank's share);
* **its response time** (a moving average) and **robots.txt**: its rules and their state
  (:class:`abc_crawler.net.robots.HostRobots`, kept here by :class:`abc_crawler.net.robots.RobotsCache`);
* **phase slots**: a slot another rank leased to this one, a slot this rank handed over, the other
  ranks that announced work for it, and whether this rank contacts it alone (``exclusive``, computed
  once per version of the politeness groups by :class:`abc_crawler.crawl.slots.SlotGate`).

The politeness group a host belongs to (the hosts sharing its address) is agreed by every rank and
kept by :class:`abc_crawler.sched.ipgroups.Groups`; a group's lease and release are kept in the record of
the group's key. What a checkpoint keeps is :meth:`HostVisits.as_plain` (the rest is rebuilt)."""
from __future__ import annotations

from dataclasses import dataclass

from ..net.robots import HostRobots

__all__ = ["HostVisit", "HostVisits"]


@dataclass(slots=True)
class HostVisit:
    fails: int = 0                # consecutive transport failures
    dead: bool = False            # given up (--host-max-failures): its URLs are counted, not fetched
    admitted: int = 0             # URLs admitted here (--max-pages-per-host, this rank's share)
    robots_cuts: int = 0          # counted slot-end cuts of its robots.txt in a row
    time: float | None = None     # response time, moving average (seconds)
    next_at: float = 0.0          # monotonic time before which this rank sends it nothing (its rest)
    blocked_until: float = 0.0    # monotonic time before which no Bucket element of it is scheduled
    robots: HostRobots | None = None   # its robots.txt rules and their state (RobotsCache)
    lease: int | None = None      # a slot another rank handed to this one
    released: int | None = None   # a slot this rank handed over (it keeps off the host in it)
    work_mask: int = 0            # other ranks that announced work for it (bit per rank)
    exclusive: tuple[int, bool] | None = None   # (groups version, contacted by this rank alone)

    def observe_time(self, seconds: float) -> None:
        self.time = seconds if self.time is None else 0.7 * self.time + 0.3 * seconds


class HostVisits(dict):
    """host -> :class:`HostVisit`, created on first use (``get`` does not create one)."""

    def __missing__(self, host: str) -> HostVisit:
        v = self[host] = HostVisit()
        return v

    def dead(self) -> list[str]:
        return sorted(h for h, v in self.items() if v.dead)

    def as_plain(self) -> dict:
        """What a checkpoint keeps: failures, dead hosts, admissions (the rest is rebuilt)."""
        return {h: (v.fails, v.dead, v.admitted) for h, v in self.items()
                if v.fails or v.dead or v.admitted}

    def load_plain(self, d: dict) -> None:
        """Take :meth:`as_plain`'s ``d`` (in place: the parts of the crawler hold this table)."""
        self.clear()
        for h, (fails, dead, admitted) in d.items():
            self[h] = HostVisit(fails=fails, dead=dead, admitted=admitted)
