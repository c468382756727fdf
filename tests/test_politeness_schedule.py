"""Politeness as spacing, and the phase slots that keep it across ranks (abc_crawler/sched/politeness.py,
abc_crawler/sched/phases.py "The rest across a change of holder", abc_crawler/crawl/slots.py): the pure
rules against brute-force references, the gate's request limits, the batch runner's spacing, and a
simulated schedule of several ranks on one host whose requests are checked for overlaps, rests and
waits (issue 28: a rest as long as a slot stopped the crawl for good)."""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abc_crawler.config import CrawlConfig, phase_seconds_of
from abc_crawler.crawl.counters import RankCounters
from abc_crawler.crawl.fetching import BatchRunner
from abc_crawler.crawl.slots import SlotGate
from abc_crawler.exceptions import ConfigError
from abc_crawler.sched.frontier import IN_LIST, TIMEWAIT, Frontier
from abc_crawler.sched.phases import HolderTable, PhaseClock
from abc_crawler.sched.politeness import (MIN_REQUEST_SECONDS, longest_rest, request_budget, rest_after,
                                    slot_seconds_needed, start_threshold, warm_slot_needed)


# -- the pure rules ----------------------------------------------------------------------------------
def _rest(t, base, factor, max_delay):
    return max(base, min(factor * t, max_delay))


@settings(max_examples=400, deadline=None)
@given(left=st.floats(0.0, 100.0), base=st.floats(0.0, 30.0), factor=st.floats(0.0, 5.0),
       max_delay=st.floats(0.0, 60.0))
def test_request_budget_is_the_largest_time_whose_rest_still_fits(left, base, factor, max_delay):
    """T + rest(T) <= left, and a slightly longer T does not fit (brute force over a fine grid)."""
    t = request_budget(left, base, factor, max_delay)
    assert t >= 0.0
    if t > 0:
        assert t + _rest(t, base, factor, max_delay) <= left + 1e-9
    # nothing much longer fits: the largest T on a grid that fits is at most t
    grid = [left * i / 2000 for i in range(2001)]
    best = max((x for x in grid if x + _rest(x, base, factor, max_delay) <= left), default=0.0)
    assert best <= t + left / 2000 + 1e-9


def test_rest_after_follows_heritrix_with_crawl_delay_as_a_floor():
    kw = dict(delay=1.0, factor=2.0, max_delay=30.0)
    assert rest_after(0.01, crawl_delay=0.0, **kw) == 1.0          # the politeness delay
    assert rest_after(3.0, crawl_delay=0.0, **kw) == 6.0           # F x t
    assert rest_after(100.0, crawl_delay=0.0, **kw) == 30.0        # capped at max-delay
    assert rest_after(0.01, crawl_delay=45.0, **kw) == 45.0        # a Crawl-delay is never capped
    assert rest_after(5.0, crawl_delay=0.0, delay=0.0, factor=0.0, max_delay=0.0) == 0.0


def test_auto_slots_hold_the_longest_rest_and_short_explicit_slots_are_refused():
    d = CrawlConfig.build({"seeds": "s", "contact": "ops@example.org"})
    assert d.politeness_delay == 1.0 and d.delay_factor == 2.0 and d.max_delay == 30.0
    L = phase_seconds_of(d)
    rest = longest_rest(d.politeness_delay, d.max_crawl_delay, d.delay_factor, d.max_delay)
    assert L == slot_seconds_needed(rest, d.phase_guard) and L - 2 * d.phase_guard >= rest + MIN_REQUEST_SECONDS
    # the issue's command: a 1 s delay with the slots at their default runs (no 1 s slots any more)
    assert phase_seconds_of(CrawlConfig.build({"seeds": "s", "contact": "ops@example.org", "politeness_delay": 1.0})) > 1.0
    with pytest.raises(ConfigError, match=r"phase-seconds: 1 s slots cannot hold the longest rest a host may owe \(30 s"):
        CrawlConfig.build({"seeds": "s", "contact": "ops@example.org", "phase_seconds": 1.0})
    with pytest.raises(ConfigError, match="phase-seconds: 0.5 s slots cannot hold.*give at least 0.61"):
        CrawlConfig.build({"seeds": "s", "contact": "ops@example.org", "phase_seconds": 0.5, "politeness_delay": 0.58, "max_crawl_delay": 0.1,
                           "delay_factor": 0.0, "ip_politeness_delay": 0.0})
    ok = CrawlConfig.build({"seeds": "s", "contact": "ops@example.org", "phase_seconds": 0.5, "politeness_delay": 0.3, "max_crawl_delay": 0.1,
                            "delay_factor": 0.0, "ip_politeness_delay": 0.0, "max_delay": 0.3})
    assert phase_seconds_of(ok) == 0.5
    # max-delay caps the adaptive part only: the politeness delay stays a floor above it
    low = CrawlConfig.build({"seeds": "s", "contact": "ops@example.org", "politeness_delay": 2.0, "max_delay": 1.0})
    assert rest_after(10.0, delay=low.politeness_delay, crawl_delay=0.0, factor=low.delay_factor,
                      max_delay=low.max_delay) == 2.0


def test_warm_up_slots_never_get_shorter_than_the_politeness_delay_needs():
    pc = PhaseClock(0, 8, 8, 37.51, 0.005, warmup=3, min_slot=warm_slot_needed(1.0, 0.005))
    assert pc.warmup == 3                                  # 4.7 s slots hold four requests at 1 s
    pc = PhaseClock(0, 8, 8, 37.51, 0.005, warmup=3, min_slot=warm_slot_needed(2.0, 0.005))
    assert pc.warmup == 2                                  # 9.4 s slots, not 4.7 s: four at 2 s
    pc = PhaseClock(0, 8, 8, 37.51, 0.005, warmup=3, min_slot=warm_slot_needed(5.0, 0.005))
    assert pc.warmup == 0                                  # no slot shorter than 20 s: no warm-up


# -- the gate ------------------------------------------------------------------------------------------
class FakeClock:
    def __init__(self, t, err=0.0):
        self.t = t
        self.err = err

    def shared(self):
        return self.t + self.err


def _gate(rank, t, K=2, host_pages=None, factor=0.0, max_delay=0.0, L=1.0, guard=0.005, err=0.0, handover=False):
    pc = PhaseClock(rank, K, K, L, guard)
    holders = HolderTable(K, K, host_pages)
    clock = FakeClock(t, err)
    f = Frontier(n_columns=5, n_rows=2, batch_urls=4, window=100, flush_seconds=0.0)
    hosts = f.hosts
    gate = SlotGate(rank, pc, holders, clock, comm=None, frontier=f, counters=RankCounters(),
                    handover=handover, delay_factor=factor, max_delay=max_delay)
    return gate, pc, holders, clock, f, hosts


def _slot_after_another(holders, host, rank):
    """A slot this rank holds whose previous and next slots another rank holds."""
    return next(s for s in range(10, 200) if holders.holder(host, s) == rank
                and holders.holder(host, s - 1) != rank and holders.holder(host, s + 1) != rank)


def test_request_limit_leaves_room_for_the_rest_before_the_slot_ends():
    host = "a.test"
    gate, pc, holders, clock, f, hosts = _gate(0, 0.0)
    s = _slot_after_another(holders, host, 0)
    g = pc.guard_for(1.0)
    clock.t = s + g + 1e-6                               # the usable start: no wait after the other rank
    limit, full = gate.request_limit(host, 0.25)
    assert limit == pytest.approx(s + 1 - g - clock.t - 0.25) and full == pytest.approx(1 - 2 * g - 0.25)
    clock.t = s + 0.7                                    # 0.3 s left: a request and its 0.25 s rest fit
    assert gate.request_limit(host, 0.25)[0] == pytest.approx(s + 1 - g - clock.t - 0.25)
    clock.t = s + 1 - g - 0.25 - 0.01                    # 10 ms left for the request: less than the least
    assert gate.request_limit(host, 0.25)[0] == 0.0
    # the adaptive rest counts too: T + max(0.25, 2T) must fit in what is left
    gate.factor, gate.max_delay = 2.0, 30.0
    clock.t = s + g + 1e-6
    limit, _ = gate.request_limit(host, 0.25)
    assert limit == pytest.approx((s + 1 - g - clock.t) / 3)
    # a slot another rank holds: nothing
    clock.t = s + 1.5
    assert gate.request_limit(host, 0.25) == (0.0, 0.0)
    # a host only this rank ever holds: no slot limit at all
    gate.holders = HolderTable(2, 2, {"x.test": {0: 3}})
    assert gate.request_limit("x.test", 10.0) == (None, None)


def test_a_run_of_held_slots_counts_as_one():
    """Rank 0 holds most slots of b.test: the rest may fall into its next slot, so its requests are
    limited by the end of the run, not of the slot (no rest lost at a boundary it keeps)."""
    gate, pc, holders, clock, f, hosts = _gate(0, 0.0, host_pages={"b.test": {0: 3, 1: 1}})
    hold = holders.holder
    n = next(n for n in range(10, 200) if hold("b.test", n) == hold("b.test", n + 1) == 0 != hold("b.test", n - 1))
    m = n + 1
    while hold("b.test", m + 1) == 0:
        m += 1
    g = pc.guard_for(1.0)
    clock.t = n + 0.5
    limit, _ = gate.request_limit("b.test", 0.25)
    assert limit == pytest.approx(m + 1 - g - clock.t - 0.25)
    assert gate.run_end("b.test", n) == pytest.approx(m + 1 - g)


def test_a_slow_host_still_gets_a_request_at_the_start_of_each_held_slot():
    host = "a.test"
    gate, pc, holders, clock, f, hosts = _gate(0, 0.0)
    s = _slot_after_another(holders, host, 0)
    g = pc.guard_for(1.0)
    hosts[host].time = 0.7                               # twice that is more than a slot less its rest
    clock.t = s + g + 0.01
    limit, full = gate.request_limit(host, 0.25)
    assert limit >= start_threshold(0.7, full) and limit == pytest.approx(s + 1 - g - 0.25 - clock.t)
    clock.t = s + 0.5                                    # later: too little left, it waits for its next slot
    assert gate.request_limit(host, 0.25)[0] == 0.0


# -- a simulated schedule: several ranks, one host, shared time ------------------------------------------------
def simulate(K, shares, L, guard, errs, base, factor, max_delay, durations, slots, dt):
    """Every rank has endless work for one host and asks it whenever its own rest is over and the
    gate lets it. Returns the requests as (rank, true start, true end, rest owed after)."""
    host = "h.test"
    holders = HolderTable(K, K, {host: shares} if shares else None)
    clocks = [FakeClock(0.0, errs[r]) for r in range(K)]
    gates = []
    for r in range(K):
        pc = PhaseClock(r, K, K, L, guard)
        f = Frontier(n_columns=5, n_rows=2, batch_urls=4, window=100, flush_seconds=0.0)
        gates.append(SlotGate(r, pc, holders, clocks[r], comm=None, frontier=f,
                              counters=RankCounters(), handover=False, delay_factor=factor, max_delay=max_delay))
    free_at = [0.0] * K            # true time from which the rank may ask again (its own rest)
    out = []
    t = 10 * L                      # start away from slot 0
    end_t = t + slots * L
    i = 0
    while t < end_t:
        for r in range(K):
            if free_at[r] > t:
                continue
            clocks[r].t = t
            limit, _ = gates[r].request_limit(host, base)
            if not limit:
                continue
            d = durations[i % len(durations)]
            i += 1
            took = min(d, limit)                     # cut at its limit (the curl timeout)
            gates[r].hosts[host].observe_time(took)
            rest = rest_after(took, delay=base, crawl_delay=0.0, factor=factor, max_delay=max_delay)
            out.append((r, t, t + took, rest))
            free_at[r] = t + took + rest
        t += dt
    return out


@settings(max_examples=60, deadline=None)
@given(K=st.integers(2, 4), ratio=st.floats(0.05, 0.78), factor=st.sampled_from([0.0, 0.0, 1.0, 2.0]),
       err_share=st.floats(0.0, 1.0), seed=st.integers(0, 10_000), shared=st.booleans())
def test_simulated_schedule_keeps_every_rest_never_overlaps_and_never_starves(K, ratio, factor, err_share, seed, shared):
    """For rest/slot ratios up to what a slot holds, random host shares and clock errors within the
    guard: one rank at a time, the rest after every request kept on the true clock whichever rank
    asks next, and the next request within the rest plus one slot."""
    rng = random.Random(seed)
    L, guard = 1.0, 0.01
    base = ratio * (L - 2 * guard - MIN_REQUEST_SECONDS)
    max_delay = base                                   # the adaptive part never exceeds what a slot holds
    shares = None if shared else {r: rng.randint(1, 9) for r in rng.sample(range(K), rng.randint(2, K))}
    errs = [rng.uniform(-1, 1) * err_share * guard for _ in range(K)]
    durations = [rng.choice([0.001, 0.005, 0.02, 0.05, 0.2]) for _ in range(50)]
    dt = 0.003
    reqs = simulate(K, shares, L, guard, errs, base, factor, max_delay, durations, slots=24, dt=dt)
    assert len(reqs) >= 10
    reqs.sort(key=lambda x: x[1])
    for (r1, s1, e1, rest1), (r2, s2, e2, _) in zip(reqs, reqs[1:]):
        assert s2 >= e1 - 1e-9, (r1, r2, s1, e1, s2)                 # never two at once
        assert s2 - e1 >= rest1 - 1e-9, (r1, r2, e1, s2, rest1)      # the rest, across ranks too
        assert s2 - e1 <= rest1 + L + 3 * guard + 2 * dt, (r1, r2, e1, s2, rest1)   # no starving


@settings(max_examples=40, deadline=None)
@given(K=st.integers(2, 4), ratio=st.floats(0.05, 20.0), seed=st.integers(0, 10_000), shared=st.booleans())
def test_auto_slots_keep_the_schedule_whatever_the_ratio_of_delay_to_slot(K, ratio, seed, shared):
    """Issue 28 asked for any delay / slot ratio from 0.05 to 20 (1 s slots): with --phase-seconds
    auto the slot follows the longest rest (here the delay), so the same properties hold — no two
    ranks at once, every rest kept, the next request within the rest plus one slot."""
    rng = random.Random(seed)
    guard = 0.01
    delay = ratio * 1.0
    L = max(1.0, slot_seconds_needed(delay, guard))
    shares = None if shared else {r: rng.randint(1, 9) for r in rng.sample(range(K), rng.randint(2, K))}
    errs = [rng.uniform(-1, 1) * guard for _ in range(K)]
    durations = [rng.choice([0.001, 0.01, 0.05]) for _ in range(20)]
    dt = L / 200
    reqs = simulate(K, shares, L, guard, errs, delay, 0.0, delay, durations, slots=10, dt=dt)
    assert len(reqs) >= 5
    reqs.sort(key=lambda x: x[1])
    for (r1, s1, e1, rest1), (r2, s2, e2, _) in zip(reqs, reqs[1:]):
        assert s2 >= e1 - 1e-9
        assert s2 - e1 >= rest1 - 1e-9
        assert s2 - e1 <= rest1 + L + 3 * guard + 2 * dt


def test_the_issue_28_ratio_stalled_without_slots_that_hold_the_rest():
    """Control: the same simulation with a rest longer than a slot's usable part sends nothing (the
    stall of issue 28) — why such slots are refused at start and auto slots hold the longest rest."""
    reqs = simulate(4, None, 1.0, 0.005, [0.0] * 4, 1.0, 0.0, 1.0, [0.002], slots=12, dt=0.01)
    assert reqs == []
    L = slot_seconds_needed(1.0, 0.005)                  # the shortest slot for a 1 s rest: one request each
    reqs = simulate(4, None, L, 0.005, [0.0] * 4, 1.0, 0.0, 1.0, [0.002], slots=12, dt=0.01)
    assert len(reqs) >= 12
    # 8 s slots: at most one rest per change of holder is lost, the host gets >= 7 requests a slot
    reqs = simulate(4, None, 8.0, 0.005, [0.0] * 4, 1.0, 0.0, 1.0, [0.002], slots=12, dt=0.01)
    assert len(reqs) >= 12 * 7


# -- the batch runner ------------------------------------------------------------------------------------------
def _runner(gate, clock, f, hosts, delay, factor=0.0, max_delay=None):
    cfg = SimpleNamespace(politeness_delay=delay, concurrency=4, active_hosts=8, delay_factor=factor, ip_politeness_delay=0.0,
                          max_delay=delay if max_delay is None else max_delay)
    robots = SimpleNamespace(get=lambda host: SimpleNamespace(crawl_delay=0.0, state="ready"),
                             needs_fetch=lambda h, now: False, allowed=lambda h, u: True)
    submitted = []
    fetcher = SimpleNamespace(submit=lambda key, url, timeout=None, headers=(): submitted.append((key, url, timeout)),
                              in_flight=0)
    pages = SimpleNamespace(previous=None)
    assert hosts is f.hosts                    # the frontier owns the per-host records
    runner = BatchRunner(cfg, f, fetcher, robots, gate, gate.counters if gate else RankCounters(), pages,
                         router=SimpleNamespace(), clock=clock,
                         may_request=lambda: True, share_robots=False, own_hosts=frozenset(), links=None)
    return runner, submitted


def _answer(runner, b, now, took):
    """The answer of the batch's request in flight arrives at ``now`` after ``took`` seconds."""
    runner.frontier.complete(b.current)
    b.current = None
    r = SimpleNamespace(t_start=0.0, t_end=took, ip="", proxied=False)
    runner._rested(b, r, now)


def test_the_requests_of_one_batch_are_spaced_by_the_rest():
    """A Bucket element's URLs go over one connection, but never back to back: each waits the host's
    rest after the answer before (KSpider's batching saves connections, not politeness)."""
    host = "a.test"
    f = Frontier(n_columns=5, n_rows=2, batch_urls=4, window=100, flush_seconds=0.0)
    for i in range(3):
        f.add(f"http://{host}/{i}", host)
    hosts = f.hosts
    runner, submitted = _runner(None, None, f, hosts, delay=1.0, factor=2.0, max_delay=30.0)
    runner.start(100.0)
    assert [u for _, u, _ in submitted] == [f"http://{host}/0"]
    b = runner.batches[host]
    _answer(runner, b, 100.01, 0.01)                    # fast: the politeness delay
    runner.start(100.5)
    assert len(submitted) == 1                           # resting
    runner.start(101.01)
    assert len(submitted) == 2
    _answer(runner, b, 103.01, 2.0)                      # slow: 2 s x factor 2 = 4 s
    runner.start(106.9)
    assert len(submitted) == 2
    runner.start(107.01)
    assert len(submitted) == 3
    _answer(runner, b, 107.02, 0.01)
    assert host not in runner.batches and b.element.state == TIMEWAIT
    assert b.element.until == pytest.approx(108.02)      # the batch ends with what is left of the rest


def test_a_batch_refused_near_the_end_of_its_slot_gives_its_urls_back():
    host = "a.test"
    gate, pc, holders, clock, f, hosts = _gate(0, 0.0)
    s = _slot_after_another(holders, host, 0)
    for i in range(3):
        f.add(f"http://{host}/{i}", host)
    runner, submitted = _runner(gate, clock, f, hosts, delay=0.25)
    clock.t = s + 0.3
    runner.start(2000.0)
    assert len(submitted) == 1 and submitted[0][2] == pytest.approx(s + 1 - 0.005 - 0.25 - clock.t)
    b = runner.batches[host]
    e = b.element
    clock.t = s + 0.7
    _answer(runner, b, 2000.4, 0.01)                     # rests 0.25 s: until 2000.65
    clock.t = s + 0.7 + 0.26
    runner.start(2000.66)                                # 0.035 s left: no room for a request and its rest
    assert len(submitted) == 1
    assert host not in runner.batches and e.state == "FREE"   # its rest was over: the element is free
    assert hosts[host].next_at == pytest.approx(2000.65)
    assert f.n_in_list == 2 and all(f.states[i] == IN_LIST for i in (1, 2))
    assert gate.counters.requests == 1 and gate.counters.slot_cuts == 0    # one asked, none cut


class FakeComm:
    """Leases between gates of one process: ``send_lease`` to rank r lands in r's inbox."""

    def __init__(self):
        self.inbox: dict[int, list[bytes]] = {}

    def for_rank(self, r):
        comm = self

        class One:
            def send_lease(self, dst, data):
                comm.inbox.setdefault(dst, []).append(data)

            def poll_leases(self):
                out, comm.inbox[r] = comm.inbox.get(r, []), []
                return out
        return One()


def test_a_lease_is_passed_on_and_only_one_rank_holds_the_slot_at_a_time():
    """The holder with nothing queued leases its slot to a rank with work; that rank, done too,
    passes it on (once it was given only by the table holder, so a slot served one hand-over); at
    every step exactly one rank may contact the host, and a lease coming back is usable again."""
    host = "a.test"
    comm = FakeComm()
    K = 3
    holders = HolderTable(K, K)
    s = next(n for n in range(10, 200) if holders.holder(host, n) == 0)
    clock = FakeClock(s + 0.1)
    gates = []
    for r in range(K):
        pc = PhaseClock(r, K, K, 1.0, 0.005)
        f = Frontier(n_columns=5, n_rows=2, batch_urls=4, window=100, flush_seconds=0.0)
        g = SlotGate(r, pc, holders, clock, comm.for_rank(r), f, RankCounters())
        g.update()
        gates.append(g)
    for r, g in enumerate(gates):
        g.hosts[host].work_mask = sum(1 << x for x in (1, 2) if x != r)   # ranks 1 and 2 have work

    def holding():
        return [r for r, g in enumerate(gates) if g.admit(host)]
    assert holding() == [0]
    gates[0].batch_done(host)                        # rank 0: nothing queued here → to the next with work
    assert holding() == []                           # the lease travels: nobody holds it meanwhile
    nxt = next(r for r in (1, 2) if comm.inbox.get(r))
    gates[nxt].take_leases(1000.0)
    assert holding() == [nxt]
    gates[nxt].hosts[host].work_mask = 1 << (3 - nxt)   # the other rank still has work
    gates[nxt].batch_done(host)                      # done too: passed on (a lease holder may)
    other = 3 - nxt
    gates[other].take_leases(1000.0)
    assert holding() == [other]
    gates[other].hosts[host].work_mask = 1 << nxt
    gates[other].batch_done(host)                    # back to the rank that passed it: usable again
    gates[nxt].take_leases(1000.0)
    assert holding() == [nxt]
    assert sum(g.counters.handovers for g in gates) == 3 and sum(g.counters.leases for g in gates) == 3


def test_a_lease_holds_back_a_batch_already_resting_here():
    """A batch of the host resting on the receiving rank must not go before the leaser's rest is
    over (once only new elements waited: a resting batch asked 17 ms after the leaser's request)."""
    host = "a.test"
    comm = FakeComm()
    holders = HolderTable(2, 2)
    s = next(n for n in range(10, 200) if holders.holder(host, n) == 0)
    clock = FakeClock(s + 0.1)
    pc = PhaseClock(1, 2, 2, 1.0, 0.005)
    f = Frontier(n_columns=5, n_rows=2, batch_urls=4, window=100, flush_seconds=0.0)
    g = SlotGate(1, pc, holders, clock, comm.for_rank(1), f, RankCounters())
    g.update()
    g.hosts[host].next_at = 999.0                        # its own rest is long over
    # host, slot, the leaser's next allowed start, and when it sent the lease (40 ms ago)
    comm.inbox[1] = [f"{host}\t{s}\t{clock.shared() + 0.3!r}\t{clock.shared() - 0.04!r}".encode()]
    g.take_leases(1000.0)
    assert g.admit(host)
    assert g.hosts[host].next_at == pytest.approx(1000.0 + 0.3 + pc.guard_for(1.0))
    c = g.counters
    assert (c.leases, c.lease_wait_ms, c.lease_wait_max_ms) == (1, 40, 40)   # how long it travelled


@pytest.mark.parametrize("L,warmup,poll", [(1.0, 0, 0.01), (37.51, 0, 0.1), (37.51, 3, 37.51 / 8 / 100)])
def test_a_rank_under_slots_looks_for_leases_every_hundredth_of_its_slot(L, warmup, poll):
    """With nothing to fetch, the fetch loop sleeps in curl's select, which an MPI message does not
    wake: it wakes to look for leases every 1 % of its slot (10 ms in a lab's 1 s slots; 100 ms in
    the open web's 37.5 s ones, where a poll every 10 ms was half the CPU of a polite crawl; 47 ms
    in their first warm-up slots), and a lease waiting then is taken at once."""
    host = "a.test"
    comm = FakeComm()
    holders = HolderTable(2, 2)
    pc = PhaseClock(1, 2, 2, L, 0.005, warmup=warmup, origin=0.0)
    s = next(n for n in range(0, 200) if holders.holder(host, n) == 0)
    a, b = pc.bounds(s)
    clock = FakeClock((a + b) / 2)                       # mid-slot: the next slot is far
    f = Frontier(n_columns=5, n_rows=2, batch_urls=4, window=100, flush_seconds=0.0)
    gate = SlotGate(1, pc, holders, clock, comm.for_rank(1), f, RankCounters())
    gate.update()
    runner, _ = _runner(gate, clock, f, f.hosts, delay=1.0)
    slept = []
    runner.fetcher = SimpleNamespace(in_flight=0, poll=lambda timeout: slept.append(timeout) or [])
    comm.inbox[1] = [f"{host}\t{s}\t{clock.shared()!r}\t{clock.shared()!r}".encode()]
    assert not gate.admit(host)
    runner.drive(1.0)                                    # nothing queued: it would sleep the whole second
    assert slept == [pytest.approx(poll)]
    assert gate.admit(host) and gate.counters.leases == 1


def _waiting_runner(monkeypatch, held_by, at, delay=0.0):
    """Rank 1's fetch loop under 1 s phase slots (K = 2), in a slot of ``a.test`` held by rank
    ``held_by``, at shared time ``at(start, end, phase_clock)``; its monotonic clock moves only
    with its fetcher's polls, which ``w.slept`` records (``w.on_poll(n)``, when set, runs during
    the n-th)."""
    from abc_crawler.crawl import fetching

    w = SimpleNamespace(host="a.test", comm=FakeComm(), slept=[], on_poll=None)
    holders = HolderTable(2, 2)
    pc = PhaseClock(1, 2, 2, 1.0, 0.005, origin=0.0)
    w.slot = next(n for n in range(0, 200) if holders.holder(w.host, n) == held_by)
    w.clock = FakeClock(at(*pc.bounds(w.slot), pc))
    w.f = Frontier(n_columns=5, n_rows=2, batch_urls=4, window=100, flush_seconds=0.0)
    w.gate = SlotGate(1, pc, holders, w.clock, w.comm.for_rank(1), w.f, RankCounters())
    w.gate.update()
    w.runner, w.submitted = _runner(w.gate, w.clock, w.f, w.f.hosts, delay=delay)
    mono = [100.0]
    monkeypatch.setattr(fetching, "time", SimpleNamespace(monotonic=lambda: mono[0]))

    def poll(timeout):
        w.slept.append(timeout)
        mono[0] += timeout
        if w.on_poll is not None:
            w.on_poll(len(w.slept))
        return []
    w.runner.fetcher = SimpleNamespace(in_flight=0, poll=poll, submit=w.runner.fetcher.submit)
    w.runner.last_turn = mono[0]
    return w


@pytest.mark.parametrize("lease_on_poll", [3, None])
def test_a_rank_waiting_for_a_lease_polls_for_it_without_planning_its_turn_again(monkeypatch, lease_on_poll):
    """Between two looks for leases nothing the turn planned can change: it waits on in curl's
    select, looking for leases every 1 % of its slot, without scheduling its Bucket again, until a
    lease comes (it is taken at once, and the turn ends so that the next one uses it) or the turn's
    wait is over."""
    w = _waiting_runner(monkeypatch, held_by=0, at=lambda a, b, pc: (a + b) / 2, delay=1.0)   # mid-slot
    lease = f"{w.host}\t{w.slot}\t{w.clock.shared()!r}\t{w.clock.shared()!r}".encode()

    def arrive(n):
        if n == lease_on_poll:                           # a lease arrives during this poll
            w.comm.inbox[1] = [lease]
    w.on_poll = arrive
    runner, gate, slept = w.runner, w.gate, w.slept
    planned = []
    start = runner.start
    monkeypatch.setattr(runner, "start", lambda now: planned.append(now) or start(now))

    assert runner.drive(0.035) == 0
    assert len(planned) == 1                             # the turn was planned once
    if lease_on_poll is not None:
        assert slept == [pytest.approx(0.01)] * lease_on_poll
        assert gate.admit(w.host) and gate.counters.leases == 1
    else:
        assert slept == [pytest.approx(0.01)] * 3 + [pytest.approx(0.005)]
        assert not gate.admit(w.host) and gate.counters.leases == 0
    assert runner.idle.total == pytest.approx(sum(slept))


@pytest.mark.parametrize("case", ["window ends", "host given back"])
def test_a_waiting_turn_is_planned_again_when_its_plan_may_change(monkeypatch, case):
    """The turn's plan holds only while nothing it planned can change: it ends at the end of the
    usable window it is in (the guard band follows: the Bucket gives back what it may not send),
    and at the first look after a batch the turn ended gave URLs back to a host's queue (here:
    the page budget is spent), as it did when every look was a planned turn."""
    if case == "window ends":                            # 20 ms before the usable window's end
        w = _waiting_runner(monkeypatch, held_by=0, at=lambda a, b, pc: b - pc.guard_for(b - a) - 0.02)
    else:                                                # rank 1 holds the host's slot
        w = _waiting_runner(monkeypatch, held_by=1, at=lambda a, b, pc: (a + b) / 2)
        w.f.add(f"http://{w.host}/0", w.host)
        w.runner.may_request = lambda: False             # the page budget is spent

    assert w.runner.drive(0.1) == 0
    if case == "window ends":
        assert w.slept == [pytest.approx(0.01), pytest.approx(0.01)]   # 20 ms: the window's end
    else:
        assert w.slept == [pytest.approx(0.01)]                          # one look, then a new plan
        assert w.submitted == [] and w.f.pending == 1 and w.f.changed  # the URL went back to its queue
