"""Phase slots on one rank: which hosts it may contact now, for how long, and the hand-over of
slots it holds with nothing to do (:mod:`abc_crawler.phases` states the rule and why it is safe).

:class:`SlotGate` follows the shared clock's slots: at a slot change the Bucket's elements still
queuing for hosts not held now give their URLs back, and the hosts this rank holds without work
(while another rank announced work for them) are handed over by a lease. Each superstep it
announces which shared hosts its queue for became empty or not, and takes the other ranks'
announcements. A rank that never holds the host's slot by the table may contact it only under a
lease for that slot.

The rest between two ranks' batches (:func:`abc_crawler.phases.rest_start`): a request to a shared
host starts only at E + rest + this rank's guard (its clock may run ahead by that much), E the end
of the newest earlier slot in which another rank may have fetched the host (a slot this rank held
by the table and did not hand over does not count; one it held only by a lease, or at or before its
newest hand-over, does), rest the host's max(politeness delay, Crawl-delay).
:meth:`SlotGate.request_limit` returns 0 before that time and :meth:`SlotGate.rest_until` tells the
batch runner when to try again (the host is blocked until then, within the same slot; the start
threshold's cap counts the slot from the rest's end, so a slow host still gets its request in a
slot that begins with a rest). Within the current slot a lease carries the leaser's end plus the
rest (:meth:`SlotGate.take_leases`), widened by the guard bands of both ranks: the leaser's
clock and the receiver's may each err by up to their guard, as at a slot boundary.
"""
from __future__ import annotations

from ..phases import CUT_LATE, CUT_STARVED, CUT_WARM, FULL_SLOT_SHARE, HolderTable, PhaseClock, cut_cause, rest_start
from .counters import RankCounters
from .hosts import HostTable

__all__ = ["SlotGate", "LEASE_POLL_SECONDS", "start_threshold"]

#: longest sleep of a rank under phase slots before it looks for leases handed to it (curl's
#: select does not wake on an MPI message)
LEASE_POLL_SECONDS = 0.01
#: shortest time left in a slot for a request to start
MIN_REQUEST_SECONDS = 0.02


def start_threshold(host_time: float | None, usable: float) -> float:
    """The least time left in a slot for a request to start: twice the host's response time, so
    that a request unlikely to finish waits for the host's next slot — but never more than
    :data:`~abc_crawler.phases.FULL_SLOT_SHARE` of the slot's usable length, so that a slow host
    still gets a request at the start of every slot it is held in (and a cut then counts: the
    server did not answer within a full slot). Without that cap a host whose measured time
    exceeded half a slot was never asked again, and the crawl ran on without finishing.

    >>> start_threshold(None, 0.99), start_threshold(0.1, 0.99), round(start_threshold(0.7, 0.99), 3)
    (0.02, 0.2, 0.891)
    """
    if host_time is None:
        return MIN_REQUEST_SECONDS
    return max(MIN_REQUEST_SECONDS, min(2 * host_time, FULL_SLOT_SHARE * usable))


class SlotGate:
    """Slot admission, request time limits, leases and work announcements of one rank."""

    def __init__(self, rank: int, phase_clock: PhaseClock, holders: HolderTable, clock, comm, frontier,
                 hosts: HostTable, counters: RankCounters, handover: bool = True):
        self.rank = rank
        self.pc = phase_clock
        self.holders = holders
        self.clock = clock
        self.comm = comm
        self.frontier = frontier
        self.hosts = hosts
        self.counters = counters
        self.handover = handover
        self.window: tuple[int, float, float] | None = None   # (slot, usable start, usable end)
        self.slot_len = phase_clock.phase_seconds              # length of the window's slot
        self.give: set[str] = set()      # hosts others announced work for and this rank had none

    # -- admission ---------------------------------------------------------------------
    def update(self) -> tuple[int, float, float] | None:
        """The usable window now (None: a guard band); at a change, the Bucket follows."""
        now = self.clock.shared()
        w = self.pc.window(now)
        if w != self.window:
            old = self.window
            self.window = w
            self.slot_len = self.pc.slot_length(now)
            if old is not None:
                # a new slot: elements still queuing for hosts not held now give their URLs back
                self.frontier.evict(lambda host: not self.admit(host))
            self.frontier.readmit()              # hosts admit() refused may be admitted now
            if w is not None and (old is None or old[0] != w[0]):
                self._new_slot(w[0])
        return w

    def admit(self, host: str) -> bool:
        """May this rank contact ``host`` now: its own host, or it holds the host in this slot (by
        the holder table and not handed over, or by a lease handed to it for this slot)."""
        h = self.holders
        if h.exclusive(host) is not None:
            return True
        w = self.window
        if w is None:
            return False
        slot = w[0]
        st = self.hosts.get(host)
        if st is not None:
            if st.lease == slot:
                return True
            if st.released == slot:
                return False
        return h.holder(host, slot) == self.rank

    def request_limit(self, host: str, rest: float = 0.0) -> float | None:
        """Seconds a request to ``host`` may take now: None = no limit beyond the timeout; 0 = must
        not start (not held now, too little of the slot left for it, or the host's ``rest`` after
        another rank's requests is not over yet: :meth:`rest_until`)."""
        if self.holders.exclusive(host) is not None:
            return None
        w = self.update()
        if w is None or not self.admit(host):
            return 0.0
        now = self.clock.shared()
        # the end of the rest as seen from the slot's usable start (None: over by then); it stays
        # known once it is over, so that the host's share of the slot begins there and a slow host
        # still gets its request then
        t = self.rest_until(host, rest, w[1])
        if t is not None and now < t:
            return 0.0                   # another rank's batch of the host was too recent
        left = w[2] - now
        first = w[1] if t is None else t
        if left < start_threshold(self.hosts[host].time, w[2] - first):
            return 0.0                   # it would likely be cut: the request waits for the next slot
        return left

    def rest_until(self, host: str, rest: float, shared: float | None = None) -> float | None:
        """Shared time from which this rank may contact the shared ``host`` (the host's ``rest`` after
        the newest earlier slot in which another rank may have fetched it), or None for no wait."""
        now = self.clock.shared() if shared is None else shared
        if rest <= 0.0 or self.holders.exclusive(host) is not None:
            return None
        slot, a, b = self.pc.slot(now)
        st = self.hosts.get(host)
        # the other rank's requests end before E on the true clock (its guard covers its error);
        # this rank's clock may run ahead by up to its own guard: that is waited too, as for a lease
        return rest_start(self.rank, now, rest + self.pc.guard_for(b - a), slot, self.pc.bounds,
                          lambda n: self.holders.holder(host, n), None if st is None else st.released)

    def next_start(self, now: float) -> float:
        """Monotonic time at which the next usable window begins."""
        shared = self.clock.shared()
        return now + (self.pc.next_start(shared) - shared)

    def is_warm(self, slot_len: float) -> bool:
        return slot_len < self.pc.phase_seconds - 1e-9

    # -- cuts ------------------------------------------------------------------------------
    def cut_cause(self, host: str, slot_len: float, limit: float, loop_gap: float) -> str:
        """Why a request of ``host`` given ``limit`` seconds of a slot of ``slot_len`` was cut at the
        slot's end (:func:`abc_crawler.phases.cut_cause`), counted by cause."""
        usable = slot_len - 2 * self.pc.guard_for(slot_len)
        cause = cut_cause(limit, usable, self.hosts[host].time, loop_gap, self.is_warm(slot_len))
        c = self.counters
        c.slot_cuts += 1
        if cause == CUT_WARM:
            c.warm_cuts += 1
        elif cause == CUT_LATE:
            c.cuts_late += 1
        elif cause == CUT_STARVED:
            c.cuts_starved += 1
        else:
            c.cuts_slow += 1
        return cause

    # -- hand-over -----------------------------------------------------------------------
    def _new_slot(self, slot: int) -> None:
        """At the start of a slot: hand over the hosts this rank holds now but has nothing queued
        for, when another rank announced work for them."""
        if not self.give or not self.handover:
            return
        hold = self.holders.holder
        for host in list(self.give):
            st = self.hosts[host]
            if self.frontier.host_pending(host) > 0 or not st.work_mask:
                self.give.discard(host)
            elif hold(host, slot) == self.rank:
                self._hand_over(host, slot, self.clock.shared())

    def tick(self) -> None:
        """A rank with nothing to fetch still follows the slots while it waits for an exchange, so
        that it hands over the hosts it holds."""
        if self.give:
            self.update()

    def batch_done(self, host: str, rest: float) -> None:
        """This rank ended a batch of ``host``: when nothing more is queued here and another rank
        announced work for it, the rest of the slot (after the host's rest) is theirs."""
        w = self.window
        if w is None or not self.handover or self.holders.exclusive(host) is not None:
            return
        st = self.hosts[host]
        if (st.work_mask and st.released != w[0] and self.frontier.host_pending(host) == 0
                and self.holders.holder(host, w[0]) == self.rank):
            # the receiver starts after the rest on its own clock: this rank's guard covers its error
            self._hand_over(host, w[0], self.clock.shared() + rest + self.pc.guard_for(self.slot_len))

    def _hand_over(self, host: str, slot: int, not_before: float) -> bool:
        """Give this slot of ``host`` to the next holder in its sequence that announced work; this
        rank keeps off the host for the rest of the slot (marked before the lease is sent)."""
        st = self.hosts[host]
        hold = self.holders.holder
        for k in range(1, self.holders.q + 1):
            r = hold(host, slot + k)
            if r != self.rank and st.work_mask >> r & 1:
                break
        else:
            return False
        st.released = slot
        self.comm.send_lease(r, f"{host}\t{slot}\t{not_before!r}".encode())
        self.counters.handovers += 1
        return True

    def take_leases(self, now: float) -> None:
        """Leases other ranks sent: this rank may fetch the host within that slot, after the rest."""
        for data in self.comm.poll_leases():
            host, slot, nb = data.decode().split("\t")
            slot = int(slot)
            w = self.window
            if w is not None and slot < w[0]:
                continue                          # the slot is over
            self.hosts[host].lease = slot
            self.counters.leases += 1
            # the leaser's end plus the rest (and its guard), on its clock; this rank's guard covers ours
            until = now + float(nb) - self.clock.shared() + self.pc.guard_for(self.slot_len)
            if until > max(now, self.frontier.blocked_until.get(host, 0.0)):
                self.frontier.block(host, until)
            self.frontier.readmit()

    def announce(self) -> bytes:
        """Shared hosts whose queue here went from empty to not empty or back since the last
        superstep, as ``host\\tflag`` lines for every rank."""
        changes = self.frontier.take_work_changes()
        lines = []
        for host, has in changes:
            if self.holders.exclusive(host) is not None:
                continue
            lines.append(f"{host}\t{1 if has else 0}")
            if has:
                self.give.discard(host)
            elif self.hosts[host].work_mask:
                self.give.add(host)
        return ("\n".join(lines)).encode()

    def receive_work(self, src: int, data: bytes) -> None:
        """Another rank's work announcements."""
        bit = 1 << src
        for line in data.decode().split("\n"):
            host, _, flag = line.partition("\t")
            st = self.hosts[host]
            st.work_mask = st.work_mask | bit if flag == "1" else st.work_mask & ~bit
            if st.work_mask and self.frontier.host_pending(host) == 0:
                self.give.add(host)
            elif not st.work_mask:
                self.give.discard(host)

    def close(self) -> int:
        """At the end of the crawl (collective): the leases still travelling; returns how many."""
        return self.comm.close_leases()
