"""What one rank tells the stall watchdog (:mod:`abc_crawler.sched.watchdog`): how long its queued work
may legitimately wait, and — once a stall is suspected — which hosts wait and for what."""
from __future__ import annotations

import heapq
import json
import time

from ..sched.frontier import TIMEWAIT
from ..sched.watchdog import STALL_OK, STALL_WARN, StallWatch, wait_reason

__all__ = ["StallDuty", "longest_wait", "waiting_hosts", "encode_report", "decode_report"]


def longest_wait(frontier, batches, gate, now: float) -> float:
    """Seconds until the latest back-off, rest or lease wait in force on this rank ends, and what
    is left of the phase warm-up (slots too short for a long rest) — 0 when none."""
    t = max(0.0, frontier.backoff_end() - now)
    for b in batches.values():
        t = max(t, b.next_at - now)
    for e in frontier.by_host.values():
        if e.state == TIMEWAIT:
            t = max(t, e.until - now)
    pc = gate.pc if gate is not None else None
    if pc is not None and pc.origin is not None:
        shared = gate.clock.shared()
        t = max(t, pc.origin + pc._warm_span - shared)
    return max(0.0, t)


def waiting_hosts(frontier, robots, gate, *, rank: int, may_request: bool, test_stall: bool,
                  limit: int = 5) -> list[dict]:
    """The hosts with the most URLs queued here, each with what it waits for (:func:`wait_reason`)."""
    pend = frontier._hpend
    names = frontier._host_names
    top = heapq.nlargest(limit, (i for i in range(len(pend)) if pend[i] > 0), key=pend.__getitem__)
    now = time.monotonic()
    out = []
    for i in top:
        host = names[i]
        st = frontier.hosts.get(host)
        held, holder = True, None
        if gate is not None and gate.holders.exclusive(host) is None:
            held = gate.admit(host)
            w = gate.window
            if not held and w is not None:
                holder = gate.holders.holder(host, w[0])
        why, secs = wait_reason(now, blocked_until=frontier.blocked_until(host),
                                next_at=st.next_at if st is not None else 0.0, held=held, holder=holder,
                                robots=robots.get(host).state, may_request=may_request, test_stall=test_stall)
        out.append({"host": host, "rank": rank, "queued": int(pend[i]), "why": why, "seconds": secs})
    return out


def encode_report(wait: float, hosts: list[dict] | None) -> bytes:
    """This rank's part of the exchange for the watchdog (empty when there is nothing to say)."""
    if wait <= 0 and not hosts:
        return b""
    return json.dumps({"wait": round(wait, 3), "hosts": hosts or []}, separators=(",", ":")).encode()


def decode_report(data: bytes) -> dict:
    return json.loads(data) if data else {"wait": 0.0, "hosts": []}


class StallDuty:
    """One rank's part in the watchdog: what it sends with each exchange, and — on rank 0, which
    holds the :class:`~abc_crawler.sched.watchdog.StallWatch` — the verdict and the report of the hosts
    waiting while the crawl is stalled."""

    #: seconds between two forced progress lines while stalled
    PRINT_EVERY = 10.0

    def __init__(self, crawler, watch: StallWatch | None):
        self.crawler = crawler
        self.watch = watch
        self.verdict = STALL_OK            # rank 0's verdict, sent with the next status
        self.state = STALL_OK              # the verdict every rank got with the last exchange
        self.report: dict | None = None    # rank 0: the stall (seconds, bound, queued, hosts), while one lasts
        self._asked_before = -1            # requests sent in all at the exchange before
        self._quiet = False                # no request in all since the exchange before
        self._printed = None

    def part(self) -> bytes:
        """Nothing while requests flow; the longest wait in force when none went out in all since the
        exchange before; and the hosts waiting once a stall was declared."""
        if not self._quiet:
            return b""
        c = self.crawler
        now = time.monotonic()
        wait = longest_wait(c.frontier, c.runner.batches, c.gate, now)
        hosts = None
        if self.state >= STALL_WARN:
            test = c.cfg.test_stall is not None and now - c.t0 >= c.cfg.test_stall
            hosts = waiting_hosts(c.frontier, c.robots, c.gate, rank=c.rank,
                                  may_request=test or c.may_request(), test_stall=test)
        return encode_report(wait, hosts)

    def judge(self, asked: int, work: int, verdict: int, parts: list[bytes]) -> None:
        """After an exchange (the summed ``asked`` and ``work``, rank 0's last ``verdict``, every rank's
        :meth:`part`); rank 0 also judges anew."""
        self._quiet = asked == self._asked_before and work > 0
        self._asked_before = asked
        self.state = verdict
        if self.watch is None:
            return
        reports = [decode_report(p) for p in parts]
        wait = max((r["wait"] for r in reports), default=0.0)
        self.verdict = self.watch.observe(time.monotonic(), asked=asked, work=work, longest_wait=wait)
        if self.verdict == STALL_OK:
            self.report, self._printed = None, None
            return
        hosts = [h for r in reports for h in r["hosts"]] or (self.report or {}).get("hosts", [])
        self.report = {"seconds": round(self.watch.stalled_for, 1), "bound_s": round(self.watch.bound, 1),
                       "queued": work, "hosts": hosts}

    def print_now(self) -> bool:
        """Rank 0: a progress line is due now whatever its interval (a stall is news)."""
        if self.report is None:
            return False
        t = self.watch.stalled_for
        if self._printed is None or t - self._printed >= self.PRINT_EVERY:
            self._printed = t
            return True
        return False

    def summary(self) -> dict:
        """For ``stats.json``: the longest stall, how many supersteps ended with a warning, and the
        last report."""
        w = self.watch
        return {"longest_s": round(w.longest, 1), "warnings": w.warnings, "bound_s": round(w.bound, 1),
                "last": self.report}
