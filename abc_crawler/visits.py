"""Per-host state in one place (BUbiNG's ``VisitState``): failures, admission, slot leases, the
host's response time, which other ranks announced work for it. The Bucket's own scheduling state
(queues, TIMEWAIT, back-off heaps) stays in :mod:`abc_crawler.frontier`; robots.txt rules in
:mod:`abc_crawler.robots`."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HostState", "HostTable"]


@dataclass
class HostState:
    fails: int = 0                # consecutive transport failures
    dead: bool = False            # given up (--host-max-failures): its URLs are counted, not fetched
    admitted: int = 0             # URLs admitted here (--max-pages-per-host, this rank's share)
    robots_cuts: int = 0          # counted slot-end cuts of its robots.txt in a row
    time: float | None = None     # response time, moving average (seconds)
    next_at: float = 0.0          # monotonic time before which this rank sends it nothing (its rest)
    lease: int | None = None      # a slot another rank handed to this one
    released: int | None = None   # a slot this rank handed over (it keeps off the host in it)
    work_mask: int = 0            # other ranks that announced work for it (bit per rank)

    def observe_time(self, seconds: float) -> None:
        self.time = seconds if self.time is None else 0.7 * self.time + 0.3 * seconds


class HostTable(dict):
    """host -> :class:`HostState`, created on first use."""

    def __missing__(self, host: str) -> HostState:
        st = self[host] = HostState()
        return st

    def dead(self) -> list[str]:
        return sorted(h for h, st in self.items() if st.dead)

    def as_plain(self) -> dict:
        """What a checkpoint keeps: failures, dead hosts, admissions (the rest is rebuilt)."""
        return {h: (st.fails, st.dead, st.admitted) for h, st in self.items()
                if st.fails or st.dead or st.admitted}

    @classmethod
    def from_plain(cls, d: dict) -> "HostTable":
        t = cls()
        for h, (fails, dead, admitted) in d.items():
            t[h] = HostState(fails=fails, dead=dead, admitted=admitted)
        return t
