"""The host's rest across a change of holder (abc_crawler/phases.py, "The rest across a change of
holder"): the pure rule against a brute-force reference, and its use by SlotGate and BatchRunner
(a refused batch gives its URLs back, rests only when it asked something, and is started again
once the rest is over, within the same slot, with no request lost or counted as a cut)."""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abc_crawler.crawl.counters import RankCounters
from abc_crawler.crawl.fetching import BatchRunner
from abc_crawler.crawl.hosts import HostTable
from abc_crawler.crawl.slots import SlotGate
from abc_crawler.frontier import IN_LIST, TIMEWAIT, Frontier
from abc_crawler.phases import HolderTable, PhaseClock, rest_start


def reference(rank, now, rest, cur, ends, holders, released, before):
    """Brute force: the latest end of any earlier slot (all of them, from the first) in which another
    rank may have fetched the host; a wait when that end plus the rest is after now. ``ends[n]``,
    ``holders[n]``: end and holder of slot n (0 .. cur); every slot before slot 0 is another rank's,
    the last of them ending at ``before``."""
    others = [ends[n] for n in range(cur) if holders[n] != rank or (released is not None and n <= released)]
    e = max(others, default=before)
    return e + rest if e + rest > now else None


@settings(max_examples=400, deadline=None)
@given(lengths=st.lists(st.floats(0.01, 2.0), min_size=1, max_size=40),
       holders=st.lists(st.integers(0, 3), min_size=40, max_size=40),
       rank=st.integers(0, 3), rest=st.floats(0.0, 5.0), into=st.floats(0.0, 0.999),
       released_back=st.none() | st.integers(0, 8))
def test_rest_start_matches_the_brute_force_reference(lengths, holders, rank, rest, into, released_back):
    starts = [0.0]
    for x in lengths:
        starts.append(starts[-1] + x)
    ends = starts[1:]
    cur = len(lengths) - 1
    now = starts[cur] + into * lengths[cur]
    released = None if released_back is None else cur - released_back   # the newest hand-over, if any

    def bounds(n):
        return (starts[n], starts[n + 1]) if n >= 0 else (n + 0.0, n + 1.0)   # before 0: 1 s slots, others'

    def holder_of(n):
        return holders[n] if n >= 0 else rank + 1
    got = rest_start(rank, now, rest, cur, bounds, holder_of, released)
    assert got == reference(rank, now, rest, cur, ends, holders, released, 0.0)
    if got is not None:
        assert now < got <= now + rest              # the wait is never longer than the rest


def test_rest_start_over_a_real_phase_clock_with_warm_up():
    """PhaseClock.bounds gives the slots PhaseClock.slot tells, warm-up included, and the rule over
    them and a holder table agrees with the reference at random times, rests and hand-overs."""
    rng = random.Random(11)
    K = 4
    pc = PhaseClock(0, K, K, 1.0, 0.005, warmup=3, origin=100.37)
    table = HolderTable(K, K, {"b.test": {0: 5, 2: 1}})
    # the slots from before the origin to well past the warm-up, walked time by time
    slots = {}
    t = 95.0
    while t < 130.0:
        s, a, b = pc.slot(t)
        slots[s] = (a, b)
        assert pc.bounds(s) == (a, b), s
        t = b + 1e-7
    first, last = min(slots), max(slots)
    for _ in range(3000):
        host = rng.choice(["a.test", "b.test"])
        rank = rng.randrange(K)
        cur = rng.randrange(first + 6, last)     # the walk never reaches before first
        a, b = slots[cur]
        now = rng.uniform(a, b)
        rest = rng.choice([0.0, 0.05, 0.25, 1.0, 3.0])
        released = rng.choice([None, cur - 1, cur - rng.randrange(1, 10)])
        got = rest_start(rank, now, rest, cur, pc.bounds, lambda n: table.holder(host, n), released)
        # slot numbers from ``first`` on; the slots before it end long before now (> 3 s)
        ends = [slots[n][1] for n in range(first, cur + 1)]
        holders = [table.holder(host, n) for n in range(first, cur + 1)]
        rel = None if released is None else released - first
        assert got == reference(rank, now, rest, cur - first, ends, holders, rel, slots[first][0]), (
            host, rank, cur, now, rest, released)


# -- SlotGate and BatchRunner ----------------------------------------------------------------------
class FakeClock:
    def __init__(self, t):
        self.t = t

    def shared(self):
        return self.t


def _gate(rank, t, handover=False):
    K = 2
    pc = PhaseClock(rank, K, K, 1.0, 0.005)
    holders = HolderTable(K, K)
    clock = FakeClock(t)
    f = Frontier(n_columns=5, n_rows=2, batch_urls=4, window=100, flush_seconds=0.0)
    hosts = HostTable()
    gate = SlotGate(rank, pc, holders, clock, comm=None, frontier=f, hosts=hosts, counters=RankCounters(),
                    handover=handover)
    return gate, pc, holders, clock, f, hosts


def _slot_after_another(holders, host, rank):
    """A slot this rank holds whose previous slot another rank holds."""
    return next(s for s in range(10, 100) if holders.holder(host, s) == rank and holders.holder(host, s - 1) != rank)


def test_request_limit_waits_the_rest_after_another_ranks_slot():
    host = "a.test"
    gate, pc, holders, clock, f, hosts = _gate(0, 0.0)
    s = _slot_after_another(holders, host, 0)
    clock.t = s + 0.01                                  # past the guard band of slot s (1 s slots)
    assert gate.request_limit(host) > 0                 # no rest asked: may go
    g = pc.guard_for(1.0)                               # this rank's clock may run ahead by its guard
    assert gate.request_limit(host, 0.25) == 0.0        # the other rank's slot ended 0.01 s ago
    assert gate.rest_until(host, 0.25) == pytest.approx(s + 0.25 + g)
    clock.t = s + 0.25
    assert gate.request_limit(host, 0.25) == 0.0        # the rest is over on this clock, not its guard
    clock.t = s + 0.25 + g
    assert gate.request_limit(host, 0.25) == pytest.approx(s + 1 - 0.005 - clock.t)
    # a slot this rank holds after one it held too: no wait, unless it handed the earlier one over
    gate.holders = HolderTable(2, 2, {"b.test": {0: 3, 1: 1}})     # rank 0 holds 6 slots of 8
    hold = gate.holders.holder
    n = next(n for n in range(10, 100) if hold("b.test", n) == hold("b.test", n - 1) == 0 != hold("b.test", n - 2))
    clock.t = n + 0.01
    assert gate.request_limit("b.test", 0.25) > 0
    hosts["b.test"].released = n - 1
    assert gate.request_limit("b.test", 0.25) == 0.0 and gate.rest_until("b.test", 0.25) == pytest.approx(n + 0.25 + g)
    hosts["b.test"].released = n - 2                  # an older hand-over (of a slot it never held)
    assert gate.request_limit("b.test", 0.25) > 0
    assert gate.request_limit("b.test", 1.5) == 0.0 and gate.rest_until("b.test", 1.5) == pytest.approx(n - 1 + 1.5 + g)
    # an exclusive host is never gated
    ex = HolderTable(2, 2, {"x.test": {0: 3}})
    gate.holders = ex
    assert gate.request_limit("x.test", 10.0) is None and gate.rest_until("x.test", 10.0) is None



def test_a_slow_host_still_starts_once_the_rest_after_another_rank_is_over():
    """A host slower than half a slot (0.7 s here, 1 s slots) gets a request at the start of every
    slot it holds — after another rank's slot that start is the end of the rest, and the loop may
    wake a little later than that: the cap of the start threshold counts from the rest's end, also
    once the rest is over. (Counted from the slot's start, 0.9 of its usable length, the request
    never started there: a crawl of such a host under a Crawl-delay ran into its time limit.)"""
    host = "a.test"
    gate, pc, holders, clock, f, hosts = _gate(0, 0.0)
    s = _slot_after_another(holders, host, 0)
    g = pc.guard_for(1.0)
    hosts[host].time = 0.7
    clock.t = s + 0.25 + g + 0.01                       # the loop woke 10 ms after the rest
    left = s + 1 - g - clock.t
    assert left < 0.9 * (1 - 2 * g)                      # less than the cap over the whole usable slot
    assert gate.request_limit(host, 0.25) == pytest.approx(left)
    clock.t = s + 0.5                                    # later in the slot: too little left, it waits
    assert gate.request_limit(host, 0.25) == 0.0
    # the same slot without a rest to keep: the cap counts from the slot's start, 10 ms late is refused
    clock.t = s + 0.25 + g + 0.01
    assert gate.request_limit(host, 0.0) == 0.0

def _runner(gate, clock, f, hosts, delay):
    cfg = SimpleNamespace(politeness_delay=delay, concurrency=4)
    robots = SimpleNamespace(get=lambda host: SimpleNamespace(crawl_delay=0.0, state="ready"))
    submitted = []
    fetcher = SimpleNamespace(submit=lambda key, url, timeout=None, headers=(): submitted.append((key, url, timeout)))
    pages = SimpleNamespace(previous=None)
    runner = BatchRunner(cfg, f, fetcher, robots, gate, hosts, gate.counters, pages, router=None, clock=clock,
                         may_request=lambda: True, share_robots=False, own_hosts=frozenset(), links=None)
    return runner, submitted


def test_a_refused_batch_is_retried_once_the_rest_is_over_within_the_slot():
    """At the start of its slot, right after another rank's, the holder's batch is refused: its URLs
    go back, the host is blocked until the other rank's slot end + the rest (no rest of its own: it
    asked nothing), and the same slot then starts it; nothing is lost or counted as a cut."""
    host = "a.test"
    gate, pc, holders, clock, f, hosts = _gate(0, 0.0)
    s = _slot_after_another(holders, host, 0)
    for i in range(3):
        f.add(f"http://{host}/{i}", host)
    robots = SimpleNamespace(get=lambda h: SimpleNamespace(crawl_delay=0.0, state="ready"),
                             needs_fetch=lambda h, now: False, allowed=lambda h, u: True)
    runner, submitted = _runner(gate, clock, f, hosts, delay=0.25)
    runner.robots = robots
    runner.router = SimpleNamespace(is_sitemap=lambda u: False)
    mono = 1000.0                                     # monotonic time; shared = mono - 1000 + s
    clock.t = s + 0.01
    runner.start(mono)
    assert submitted == [] and not runner.batches       # refused before any request
    assert all(f.states[i] == IN_LIST for i in range(3)) and f.n_in_list == 3
    g = pc.guard_for(1.0)                             # the rest waits this rank's guard too
    assert f.blocked_until[host] == pytest.approx(mono + 0.24 + g)
    assert gate.counters.requests == 0 and gate.counters.slot_cuts == 0
    clock.t = s + 0.2                                 # still resting: nothing starts
    runner.start(mono + 0.19)
    assert submitted == []
    clock.t = s + 0.25 + g + 0.001                    # the rest is over, same slot: the batch goes
    runner.start(mono + 0.24 + g + 0.001)
    assert len(submitted) == 1 and submitted[0][1] == f"http://{host}/0"
    assert submitted[0][2] == pytest.approx(s + 1 - 0.005 - clock.t)   # capped at the slot's end
    assert gate.counters.requests == 1 and gate.counters.slot_cuts == 0


def test_a_batch_cut_at_its_slots_end_rests():
    """The slot is over after one request: the batch ends with the host's rest (TIMEWAIT), its URLs
    not asked back in the queue (the fix of a bug: it ended with no rest, and a rank holding the
    host in the next slot went on at once)."""
    host = "a.test"
    gate, pc, holders, clock, f, hosts = _gate(0, 0.0)
    s = _slot_after_another(holders, host, 0)
    for i in range(3):
        f.add(f"http://{host}/{i}", host)
    runner, submitted = _runner(gate, clock, f, hosts, delay=0.25)
    runner.robots = SimpleNamespace(get=lambda h: SimpleNamespace(crawl_delay=0.0, state="ready"),
                                    needs_fetch=lambda h, now: False, allowed=lambda h, u: True)
    runner.router = SimpleNamespace(is_sitemap=lambda u: False)
    clock.t = s + 0.5
    runner.start(2000.0)
    assert len(submitted) == 1
    b = runner.batches[host]
    e = b.element
    f.complete(b.current)                              # its answer came
    b.current = None
    clock.t = s + 1 - 0.001                            # the slot is over (its guard band)
    runner.advance(b, 2000.4)
    assert host not in runner.batches and e.state == TIMEWAIT and e.until == pytest.approx(2000.4 + 0.25)
    assert f.n_in_list == 2                            # the two URLs not asked are queued again
    assert gate.counters.requests == 1 and gate.counters.slot_cuts == 0
