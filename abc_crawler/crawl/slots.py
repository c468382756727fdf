"""Phase slots on one rank: which hosts it may contact now, for how long, and the hand-over of
slots it holds with nothing to do (:mod:`abc_crawler.sched.phases` states the rule and why it is safe).

:class:`SlotGate` follows the shared clock's slots: at a slot change the Bucket's elements still
queuing for hosts not held now give their URLs back, and the hosts this rank holds without work
(while another rank announced work for them) are handed over by a lease. Each superstep it
announces which shared hosts its queue for became empty or not, and takes the other ranks'
announcements; a holder with nothing queued for a host hands it over as soon as it hears of
another rank's work (not only at the next slot). A rank that never holds the host's slot by the
table may contact it only under a lease for that slot.

The unit held is a *politeness group* (:mod:`abc_crawler.sched.ipgroups`): the hosts that share an IP
address, or a host alone. Admission, leases and hand-overs are per group; work is announced per
host, and a group has work somewhere when one of its hosts has. While a host moves into a group
(an agreed change, until the next exchange) this rank contacts it only in slots where it holds
both its old group and the new one.

The rest across a change of holder (:mod:`abc_crawler.sched.politeness`): a holder leaves the host
rested when its run of held slots ends. :meth:`SlotGate.request_limit` gives a request only the
time that leaves room for the rest it will owe before the run's usable end (0: it must not start,
and waits for the host's next held slot), so the next holder may start at its slot's usable start.
A lease carries the leaser's own next allowed start (its last request's end plus the rest, and
its guard), and the receiver keeps off the host until then.
"""
from __future__ import annotations

import time

from ..sched.frontier import FETCHING
from ..sched.ipgroups import Groups
from ..sched.phases import CUT_LATE, CUT_STARVED, CUT_WARM, HolderTable, PhaseClock, cut_cause, lease_poll_seconds
from ..sched.politeness import request_budget, start_threshold
from .counters import RankCounters

__all__ = ["SlotGate", "LEASE_POLL_SECONDS"]

#: longest sleep of a rank under phase slots before it looks for leases handed to it (curl's
#: select does not wake on an MPI message)
LEASE_POLL_SECONDS = 0.01


class SlotGate:
    """Slot admission, request time limits, leases and work announcements of one rank."""

    def __init__(self, rank: int, phase_clock: PhaseClock, holders: HolderTable, clock, comm, frontier,
                 counters: RankCounters, handover: bool = True, delay_factor: float = 0.0,
                 max_delay: float = 0.0, groups: Groups | None = None):
        self.rank = rank
        self.factor = delay_factor       # the adaptive rest (--delay-factor, --max-delay) a request may owe
        self.max_delay = max_delay
        self.groups = groups if groups is not None else Groups(0.0)
        self._runs: dict[str, tuple[int, int, float]] = {}   # group -> (slot, version, usable end of the run)
        self.pc = phase_clock
        self.holders = holders
        self.clock = clock
        self.comm = comm
        self.frontier = frontier
        self.holds_out: list[str] = []        # back-offs to tell every rank (tell_hold)
        self.hosts = frontier.hosts      # per host, and per group key: a group's lease and release
        self.counters = counters
        self.handover = handover
        self.window: tuple[int, float, float] | None = None   # (slot, usable start, usable end)
        self.slot_len = phase_clock.phase_seconds              # length of the window's slot
        self.give: set[str] = set()      # groups others announced work for and this rank had none

    @property
    def lease_poll(self) -> float:
        """Longest sleep before this rank looks for leases, in the window's slot."""
        return lease_poll_seconds(self.slot_len)

    # -- groups ----------------------------------------------------------------------------
    def _members(self, key: str) -> tuple[str, ...]:
        return self.groups.members(key)

    def _table_holder(self, key: str, slot: int) -> int:
        return self.holders.holder_of_group(key, self._members(key), slot)

    def tell_hold(self, host: str, seconds: float) -> None:
        """``host`` backs off ``seconds`` from now (a Retry-After, a failure's back-off), which may
        outlast this rank's run of its slots: every rank is told at the next exchange
        (:attr:`holds_out`, ``host\tuntil`` on the shared clock), so its next holder waits too."""
        if not self._exclusive(host):
            self.holds_out.append(f"{host}\t{self.clock.shared() + seconds!r}")

    def receive_holds(self, data: bytes, now: float) -> None:
        """Back-offs another rank met (:meth:`tell_hold`): this rank sends those hosts nothing
        before their end either, when their slots come to it."""
        shared = self.clock.shared()
        f = self.frontier
        for line in data.decode().split("\n"):
            host, _, until = line.partition("\t")
            if not (host and until):
                continue
            # its queued URLs wait (a back-off, counted so); none here: a batch it gets later waits
            f.hold_off(host, now + (float(until) - shared), now, block=f.host_pending(host) > 0)

    def _exclusive(self, host: str) -> bool:
        """``host`` is contacted by this rank alone (its group's pages all here): never gated.
        Computed once per version of the groups (kept in the host's record); while the host moves
        into a group, never."""
        groups = self.groups
        if groups.previous(host) is not None:
            return False
        v = self.hosts[host]
        known = v.exclusive
        if known is not None and known[0] == groups.version:
            return known[1]
        key = groups.group(host)
        alone = self.holders.exclusive_group(key, self._members(key)) is not None
        v.exclusive = (groups.version, alone)
        return alone

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

    def _holds_key(self, key: str, slot: int) -> bool:
        """This rank holds the group ``key`` in ``slot``: by a lease for it, or by the table and not
        handed over. A lease may be passed on like a slot of the table: each hand-over moves the
        one token of the slot forward and marks it released here first, so two ranks never hold it
        at once."""
        st = self.hosts.get(key)
        if st is not None:
            if st.released == slot:
                return False             # handed over (a slot of the table, or a lease passed on)
            if st.lease == slot:
                return True
        return self._table_holder(key, slot) == self.rank

    def admit(self, host: str) -> bool:
        """May this rank contact ``host`` now: its own host, or it holds the host's group in this
        slot (and, while the host moves into a group, its previous group too)."""
        if self._exclusive(host):
            return True
        w = self.window
        if w is None:
            return False
        slot = w[0]
        if not self._holds_key(self.groups.group(host), slot):
            return False
        prev = self.groups.previous(host)
        return prev is None or self._holds_key(prev, slot)

    def run_end(self, host: str, slot: int) -> float:
        """Shared time at which this rank's run of held slots of ``host``'s group, from ``slot`` (held
        now), stops being usable: the end of the last consecutive slot it holds by the table (the
        current one may be held by a lease), less its guard band; while the host moves into a
        group, the earlier of the two groups' runs."""
        ends = [self._run_end(self.groups.group(host), slot)]
        prev = self.groups.previous(host)
        if prev is not None:
            ends.append(self._run_end(prev, slot))
        return min(ends)

    def _run_end(self, key: str, slot: int) -> float:
        version = self.groups.version
        cached = self._runs.get(key)
        if cached is not None and cached[0] == slot and cached[1] == version:
            return cached[2]
        n = slot
        for _ in range(self.holders.q):
            if self._table_holder(key, n + 1) != self.rank:
                break
            n += 1
        a, b = self.pc.bounds(n)
        end = b - self.pc.guard_for(b - a)
        self._runs[key] = (slot, version, end)
        return end

    def request_limit(self, host: str, base: float = 0.0) -> tuple[float | None, float | None]:
        """``(limit, full)``: the seconds a request to ``host`` may take if it starts now, and the
        seconds one would get at the start of the current slot's usable window. ``(None, None)``: a
        host only this rank contacts (no limit beyond the timeout); limit 0: must not start (not
        held now, or too little of the run left for a request and the rest it would owe, ``base``
        = max(politeness delay, Crawl-delay, IP delay) plus the adaptive part; the host waits for
        its next held slot)."""
        if self._exclusive(host):
            return None, None
        w = self.update()
        if w is None or not self.admit(host):
            return 0.0, 0.0
        now = self.clock.shared()
        end = self.run_end(host, w[0])
        budget = request_budget(end - now, base, self.factor, self.max_delay)
        full = request_budget(end - w[1], base, self.factor, self.max_delay)
        if budget < start_threshold(self.hosts[host].time, full):
            return 0.0, full             # it would likely be cut: the request waits for the next slot
        return budget, full

    def next_change(self, now: float) -> float:
        """Monotonic time at which what this rank may contact changes next: the end of the usable
        window it is in (as of the last :meth:`update`), or else the next window's start."""
        shared = self.clock.shared()
        w = self.window
        at = w[2] if w is not None else self.pc.next_start(shared)
        return now + (at - shared)

    def is_warm(self, slot_len: float) -> bool:
        return slot_len < self.pc.phase_seconds - 1e-9

    # -- cuts ------------------------------------------------------------------------------
    def cut_cause(self, host: str, slot_len: float, limit: float, full: float, loop_gap: float) -> str:
        """Why a request of ``host`` given ``limit`` seconds (``full``: what a request at the start of
        its slot would have had) in a slot of ``slot_len`` was cut at its end
        (:func:`abc_crawler.sched.phases.cut_cause`), counted by cause."""
        cause = cut_cause(limit, full, self.hosts[host].time, loop_gap, self.is_warm(slot_len))
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
    def _others_work(self, key: str) -> int:
        """Ranks (a bit each) that announced work for a host of the group."""
        mask = 0
        for h in self._members(key):
            st = self.hosts.get(h)
            if st is not None:
                mask |= st.work_mask
        return mask

    def _idle_here(self, key: str) -> bool:
        """Nothing of the group queued or in flight on this rank, and no member moving into a group."""
        for h in self._members(key):
            if self.frontier.host_pending(h) > 0 or self._busy(h) or self.groups.previous(h) is not None:
                return False
        return True

    def _busy(self, host: str) -> bool:
        """A request of this rank to ``host`` may be in flight (its batch is being fetched)."""
        e = self.frontier.by_host.get(host)
        return e is not None and e.state == FETCHING

    def _free_at(self, key: str) -> float:
        """Shared time from which another rank may contact the group after this rank's requests:
        the latest next allowed start of its hosts here (the last request's end plus the rest) and of
        its address, plus this rank's guard (its clock may err by that much)."""
        mono = time.monotonic()
        wait = 0.0
        for h in self._members(key):
            st = self.hosts.get(h)
            if st is not None:
                wait = max(wait, st.next_at - mono)
            ip = self.groups.address(h)
            if ip is not None:
                wait = max(wait, self.groups.next_at.get(ip, 0.0) - mono)
        return self.clock.shared() + wait + self.pc.guard_for(self.slot_len)

    def _new_slot(self, slot: int) -> None:
        """At the start of a slot: hand over the groups this rank holds now but has nothing queued
        for, when another rank announced work for them."""
        if not self.give or not self.handover:
            return
        for key in list(self.give):
            if not self._others_work(key):
                self.give.discard(key)
            elif self._idle_here(key):
                if self._holds_key(key, slot):
                    self._hand_over(key, slot, self._free_at(key))
            elif any(self.frontier.host_pending(h) > 0 for h in self._members(key)):
                self.give.discard(key)

    def tick(self) -> None:
        """A rank with nothing to fetch still follows the slots while it waits for an exchange, so
        that it hands over the groups it holds."""
        if self.give:
            self.update()

    def batch_done(self, host: str) -> None:
        """This rank ended a batch of ``host``: when nothing more of its group is queued here and
        another rank announced work for it, the rest of the slot (after the rests) is theirs."""
        w = self.window
        if w is None or not self.handover or self._exclusive(host):
            return
        key = self.groups.group(host)
        if self._others_work(key) and self._idle_here(key) and self._holds_key(key, w[0]):
            # the receiver starts after the rest on its own clock: this rank's guard covers its error
            self._hand_over(key, w[0], self._free_at(key))

    def _hand_over(self, key: str, slot: int, not_before: float) -> bool:
        """Give this slot of the group ``key`` to the next holder in its sequence that announced work;
        this rank keeps off the group for the rest of the slot (marked before the lease is sent)."""
        mask = self._others_work(key)
        for k in range(1, self.holders.q + 1):
            r = self._table_holder(key, slot + k)
            if r != self.rank and mask >> r & 1:
                break
        else:
            return False
        self.hosts[key].released = slot
        self.comm.send_lease(r, f"{key}\t{slot}\t{not_before!r}\t{self.clock.shared()!r}".encode())
        self.counters.handovers += 1
        return True

    def take_leases(self, now: float) -> int:
        """Leases other ranks sent: this rank may fetch the group's hosts within that slot, after the
        rest. Returns how many came (those of slots already over included)."""
        leases = self.comm.poll_leases()
        for data in leases:
            key, slot, nb, sent = data.decode().split("\t")
            slot = int(slot)
            w = self.window
            if w is not None and slot < w[0]:
                continue                          # the slot is over
            gs = self.hosts[key]
            gs.lease = slot
            if gs.released == slot:
                gs.released = None                # the slot came back to this rank (passed on)
            shared = self.clock.shared()
            c = self.counters
            c.leases += 1
            # how long it travelled, on the shared clock (both ends' errors are within the guard)
            wait_ms = max(0, round(1000.0 * (shared - float(sent))))
            c.lease_wait_ms += wait_ms
            c.lease_wait_max_ms = max(c.lease_wait_max_ms, wait_ms)
            # the leaser's end plus the rest (and its guard), on its clock; this rank's guard covers ours.
            # The hosts' own next starts (a batch may be resting here) and their scheduling both wait.
            until = now + float(nb) - shared + self.pc.guard_for(self.slot_len)
            for host in self._members(key):
                self.frontier.hold_off(host, until, now)
            self.frontier.readmit()
        return len(leases)

    def announce(self) -> bytes:
        """Shared hosts whose queue here went from empty to not empty or back since the last
        superstep, as ``host\tflag`` lines for every rank."""
        changes = self.frontier.take_work_changes()
        lines = []
        for host, has in changes:
            if self._exclusive(host):
                continue
            lines.append(f"{host}\t{1 if has else 0}")
            key = self.groups.group(host)
            if has:
                self.give.discard(key)
            elif self._others_work(key):
                self.give.add(key)
        return ("\n".join(lines)).encode()

    def receive_work(self, src: int, data: bytes) -> None:
        """Another rank's work announcements."""
        bit = 1 << src
        for line in data.decode().split("\n"):
            host, _, flag = line.partition("\t")
            st = self.hosts[host]
            st.work_mask = st.work_mask | bit if flag == "1" else st.work_mask & ~bit
            key = self.groups.group(host)
            if self._others_work(key) and self._idle_here(key):
                self.give.add(key)
                self._give_now(key)
            elif not self._others_work(key):
                self.give.discard(key)

    def _give_now(self, key: str) -> None:
        """Hand over the current slot of a group at once when this rank holds it and has nothing for
        it (long slots would otherwise keep a waiting rank off it until the next)."""
        w = self.window
        if w is None or not self.handover or not self._holds_key(key, w[0]):
            return
        self._hand_over(key, w[0], self._free_at(key))

    def close(self) -> int:
        """At the end of the crawl (collective): the leases still travelling; returns how many."""
        return self.comm.close_leases()
