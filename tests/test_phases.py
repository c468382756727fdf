"""Phase swapping (KSpider) and the NTP-style clock: pure functions, no MPI."""
import json
import os
import pickle
import random
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abc_crawler.mpi.clock import SharedClock, estimate_offset
from abc_crawler.sched.frontier import Frontier, IN_LIST, QUEUING
from abc_crawler.sched import phases as phases_mod
from abc_crawler.sched.phases import (LEASE_POLL_MAX, LEASE_POLL_MIN, HolderTable, PhaseClock, lease_poll_seconds,
                                     slot_bounds, slot_of, slot_weights, swrr_sequence)


HOSTS = [f"h{i:03d}.test" for i in range(400)]


@pytest.mark.parametrize("ranks,n_phases", [(1, 1), (2, 2), (4, 4), (4, 7), (8, 8), (8, 13)])
def test_equal_shares_are_kspiders_rotation(ranks, n_phases):
    """Under hash (no host known to the assignment) every rank holds every host once per
    n_phases slots — more often when n_phases > ranks — and in every slot the hosts are spread
    evenly over the ranks."""
    t = HolderTable(ranks, n_phases)
    for h in HOSTS[:50]:
        seq = [t.holder(h, s) for s in range(3 * n_phases)]
        for a in range(2 * n_phases):
            assert set(seq[a:a + n_phases]) == set(range(ranks))
    for slot in range(5):
        counts = Counter(t.holder(h, slot) for h in HOSTS)
        assert set(counts) == set(range(ranks))
        assert max(counts.values()) - min(counts.values()) <= 0.75 * len(HOSTS) / ranks   # hash spread


share_maps = st.dictionaries(st.integers(0, 7), st.integers(1, 3000), min_size=1, max_size=8)


@given(st.integers(1, 8), share_maps, st.integers(0, 10**6))
@settings(max_examples=150, deadline=None)
def test_holder_properties_for_random_assignments(n_phases_extra, pages, slot0):
    ranks = max(pages) + 1
    n_phases = ranks + n_phases_extra - 1
    table = HolderTable(ranks, n_phases, {"split.test": pages})
    q = table.q
    holders = [table.holder("split.test", slot0 + k) for k in range(q)]
    # exactly one holder per slot (a function value), and it owns pages of the host
    assert set(holders) <= set(pages) and table.ranks_of("split.test") == frozenset(pages)
    # the slots of a period follow the page shares within the rounding of the slot count
    total = sum(pages.values())
    tiny = sum(1 for p in pages.values() if q * p / total < 1)
    counts = Counter(holders)
    for r, p in pages.items():
        assert counts[r] >= 1
        assert abs(counts[r] - q * p / total) < 1 + tiny
    # every rank computes the same table: another insertion order, a pickled copy, another process
    other = HolderTable(ranks, n_phases, {"split.test": dict(reversed(list(pages.items())))})
    copy = pickle.loads(pickle.dumps(table))
    for k in range(q):
        assert other.holder("split.test", slot0 + k) == copy.holder("split.test", slot0 + k) == holders[k]
    # a host with all its pages on one rank is that rank's in every slot
    one = HolderTable(ranks, n_phases, {"one.test": {max(pages): 5}})
    assert one.exclusive("one.test") == max(pages)
    assert (table.exclusive("split.test") is None) == (len(pages) > 1)


def test_holder_table_is_the_same_in_another_process():
    pages = {"a.test": {0: 2135, 3: 1}, "b.test": {1: 10, 2: 30, 3: 60}}
    table = HolderTable(4, 4, pages)
    mine = [[table.holder(h, s) for s in range(200)] for h in ("a.test", "b.test", "c.test")]
    code = ("import json, sys; from abc_crawler.sched.phases import HolderTable; "
            "p = {h: {int(r): n for r, n in d.items()} for h, d in json.loads(sys.argv[1]).items()}; "
            "t = HolderTable(4, 4, p); "
            "print(json.dumps([[t.holder(h, s) for s in range(200)] for h in ('a.test', 'b.test', 'c.test')]))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(pages)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONHASHSEED": "12345"}, check=True).stdout
    assert json.loads(out) == mine
    # 2135 of 2136 pages on rank 0: rank 0 holds a.test in 15 of every 16 slots, rank 3 in 1
    assert Counter(mine[0][:16]) == {0: 15, 3: 1}


@pytest.mark.parametrize("pages,q,expected", [
    ({0: 900, 1: 100}, 8, ((0, 7), (1, 1))),
    ({0: 1, 1: 1, 2: 1}, 12, ((0, 4), (1, 4), (2, 4))),
    ({0: 2135, 3: 1}, 32, ((0, 31), (3, 1))),
    ({2: 5}, 4, ((2, 4),)),
])
def test_slot_weights(pages, q, expected):
    assert slot_weights(pages, q) == expected
    seq = swrr_sequence(expected)
    assert len(seq) == q and Counter(seq) == dict(expected)


def test_swrr_prefixes_stay_within_one_slot_of_the_shares():
    w = ((0, 5), (1, 2), (2, 1))
    seq = swrr_sequence(w)
    for n in range(1, len(seq) + 1):
        c = Counter(seq[:n])
        for r, x in w:
            assert abs(c[r] - n * x / 8) < 1 + 1e-9


def test_slots_and_windows():
    assert slot_of(-0.1, 1.0) == -1 and slot_of(3.0, 1.0) == 3
    assert slot_bounds(2, 0.5) == (1.0, 1.5)
    pc = PhaseClock(rank=1, ranks=4, n_phases=4, phase_seconds=2.0, guard=0.1)
    assert pc.window(10.05) is None                   # guard band at the start of slot 5
    assert pc.window(10.5) == (5, 10.1, 11.9)
    assert pc.window(11.95) is None                   # guard band at the end
    assert pc.next_start(10.05) == pytest.approx(10.1)
    assert pc.next_start(10.5) == pytest.approx(12.1)


def test_holders_of_one_host_never_overlap():
    """For any host, the usable windows in which its holders may contact it are disjoint in time."""
    ranks, n, T, guard = 4, 5, 1.0, 0.1
    clocks = [PhaseClock(r, ranks, n, T, guard) for r in range(ranks)]
    table = HolderTable(ranks, n, {"b.test": {0: 5, 2: 1}})
    for k in range(2000):
        t = k * 0.0137
        for host in ("a.test", "b.test"):
            holding = [r for r, pc in enumerate(clocks)
                       if (w := pc.window(t)) is not None and table.holder(host, w[0]) == r]
            assert len(holding) <= 1


def test_phase_clock_validates():
    with pytest.raises(ValueError, match="n-phases .3. must be >= the number of ranks .4."):
        PhaseClock(0, 4, 3, 1.0, 0.1)
    with pytest.raises(ValueError, match="phase-guard"):
        PhaseClock(0, 2, 2, 1.0, 0.5)


@pytest.mark.parametrize("true_offset", [0.0, 0.25, -3.5, 1e-3])
def test_offset_estimate_recovers_injected_offset(true_offset):
    rng = random.Random(3)
    samples = []
    for i in range(8):
        t0 = 100.0 + i
        up, down = rng.uniform(1e-4, 5e-3), rng.uniform(1e-4, 5e-3)
        t1 = t0 + up + true_offset            # rank 0's clock = local + offset
        t2 = t1 + 1e-5
        t3 = t2 - true_offset + down
        samples.append((t0, t1, t2, t3))
    off, rtt = estimate_offset(samples)
    best = min(samples, key=lambda s: (s[3] - s[0]) - (s[2] - s[1]))
    assert rtt == pytest.approx((best[3] - best[0]) - (best[2] - best[1]))
    assert abs(off - true_offset) <= rtt / 2 + 1e-12


@pytest.mark.parametrize("fails, tests, yields", [(0, 50, 0), (49, 50, 0), (50, 50, 1), (151, 50, 3), (7, 3, 2)])
def test_clock_sample_polls_test_tightly_and_yield_the_core_every_so_many_tests(monkeypatch, fails, tests, yields):
    """``exchange._spin``: a request tested until done, the core given up after every ``tests``
    failed tests (with more ranks than cores the partner may need it), never otherwise."""
    from abc_crawler.mpi import exchange

    class Request:
        calls = 0

        def Test(self):
            self.calls += 1
            return self.calls > fails

    given_up = []
    monkeypatch.setattr(exchange.os, "sched_yield", lambda: given_up.append(1))
    req = Request()
    exchange._spin(req, tests)
    assert req.calls == fails + 1
    assert len(given_up) == yields


def test_estimate_needs_samples_and_clock_update(monkeypatch):
    with pytest.raises(ValueError):
        estimate_offset([])
    monkeypatch.setattr("abc_crawler.mpi.clock.time.time", lambda: 1000.0)
    c = SharedClock(skew=2.0)
    assert c.local() == 1002.0 and c.shared() == 1002.0
    c.update(-2.0, 0.001)
    assert c.shared() == 1000.0 and c.syncs == 1 and c.rtt == 0.001


def test_frontier_evict_returns_urls_of_other_phases():
    f = Frontier(n_columns=5, n_rows=2, batch_urls=4, window=100, flush_seconds=1.0)
    for h in ("a.test", "b.test"):
        for i in range(2):
            f.add(f"http://{h}/{i}", h)
    f.schedule(0.0)
    assert f.by_host["a.test"].state == QUEUING
    assert f.evict(lambda host: host == "a.test") == 2
    assert "a.test" not in f.by_host and f.n_in_list == 2
    assert [f.states[i] for i in range(2)] == [IN_LIST, IN_LIST]


def test_guard_follows_the_clock_error_bound():
    """The guard is the floor or the rank's measured clock error, whichever is larger (≤ 40 % slot)."""
    err = [0.0]
    pc = PhaseClock(rank=0, ranks=2, n_phases=2, phase_seconds=1.0, guard=0.005, error=lambda: err[0])
    assert pc.guard == 0.005 and pc.window(3.004) is None and pc.window(3.006) is not None
    err[0] = 0.03
    assert pc.guard == 0.03 and pc.window(3.02) is None and pc.window(3.98) is None
    assert pc.window(3.5) == (3, 3.03, 3.97)
    assert pc.next_start(3.5) == pytest.approx(4.03)
    err[0] = float("inf")                               # never synchronized: the most it may take
    assert pc.guard == pytest.approx(0.4) and pc.window(3.5) is not None and pc.window(3.3) is None


def test_windows_with_per_rank_guards_never_overlap_in_true_time():
    """Each rank's clock errs by at most its own bound; its guard covers it: no phase is served
    by two ranks at one true instant."""
    rng = random.Random(5)
    ranks, n, T = 4, 4, 0.5
    errs = [0.0] + [rng.uniform(0, 0.02) for _ in range(ranks - 1)]
    offs = [rng.uniform(-e, e) for e in errs]          # true error of each rank's shared clock
    clocks = [PhaseClock(r, ranks, n, T, 0.001, error=(lambda e=e: e)) for r, e in enumerate(errs)]
    table = HolderTable(ranks, n, {"b.test": {1: 3, 3: 1}})
    for k in range(20000):
        t = k * 0.000731
        for host in ("a.test", "b.test", "c.test"):
            holding = [r for r, pc in enumerate(clocks)
                       if (w := pc.window(t + offs[r])) is not None and table.holder(host, w[0]) == r]
            assert len(holding) <= 1


def test_shared_clock_error_bound():
    from abc_crawler.mpi.clock import SharedClock

    assert SharedClock(reference=True).error_bound() == 0.0
    c = SharedClock()
    assert c.error_bound() == float("inf")
    c.update(0.25, 0.004)
    b = c.error_bound()
    assert 0.002 <= b < 0.0021                          # RTT/2 plus a little drift


def _slots_by_walking(pc, t_end):
    """The warm-up schedule written out slot by slot: lengths L/2**m (n slots), L/2**(m-1) (n), ..., then L."""
    L, n, m = pc.phase_seconds, pc.n_phases, pc.warmup
    s, a = slot_of(pc.origin, L) + 1, pc.origin
    out = []
    for k in range(m):
        for _ in range(n):
            out.append((s, a, a + L / 2 ** (m - k)))
            s, a = s + 1, a + L / 2 ** (m - k)
    while a < t_end:
        out.append((s, a, a + L))
        s, a = s + 1, a + L
    return out


@pytest.mark.parametrize("n,m,L", [(8, 3, 1.0), (2, 1, 0.5), (5, 4, 2.0), (3, 2, 1.0)])
def test_warmup_schedule_matches_the_slot_by_slot_definition(n, m, L):
    origin = 1_795_300_000.37                           # a realistic epoch time, off the regular grid
    pc = PhaseClock(rank=0, ranks=n, n_phases=n, phase_seconds=L, guard=0.001, warmup=m, origin=origin)
    walked = _slots_by_walking(pc, pc.origin + 3 * n * L)
    rng = random.Random(n * 100 + m)
    for s, a, b in walked:
        for t in (a + 1e-6, (a + b) / 2, b - 1e-6, rng.uniform(a, b)):
            got = pc.slot(t)
            assert got[0] == s and got[1] == pytest.approx(a) and got[2] == pytest.approx(b)
    # before the origin: the regular grid; the slot holding the origin ends there, and the count goes on
    t = origin - 1e-3
    assert pc.slot(t) == (walked[0][0] - 1, slot_of(t, L) * L, origin)
    t = origin - 1.3 * L
    assert pc.slot(t) == (slot_of(t, L), slot_of(t, L) * L, (slot_of(t, L) + 1) * L)
    # next_start from inside a slot: the next slot's start plus its own guard
    for (s, a, b), (_, a2, b2) in zip(walked, walked[1:]):
        assert pc.next_start((a + b) / 2) == pytest.approx(a2 + pc.guard_for(b2 - a2))


def test_warmup_keeps_one_holder_and_every_rank_holds_every_host_at_every_length():
    ranks, n, m, L = 4, 4, 3, 1.0
    clocks = [PhaseClock(r, ranks, n, L, 0.002, warmup=m, origin=1000.0) for r in range(ranks)]
    table = HolderTable(ranks, n)
    hosts = HOSTS[:12]
    seen = {r: {} for r in range(ranks)}                 # rank -> slot length -> hosts held
    t = 999.0
    while t < 1000.0 + 2 * n * L + n * L:
        ws = [pc.window(t) for pc in clocks]
        for h in hosts:
            holding = [r for r, w in enumerate(ws) if w is not None and table.holder(h, w[0]) == r]
            assert len(holding) <= 1
        for r, w in enumerate(ws):
            if w is not None:
                seen[r].setdefault(round(clocks[r].slot_length(t), 6), set()).update(
                    h for h in hosts if table.holder(h, w[0]) == r)
        t += 0.00317
    for r in range(ranks):
        assert sorted(seen[r]) == [0.125, 0.25, 0.5, 1.0]
        assert all(v == set(hosts) for v in seen[r].values())


def test_warmup_validation_names_the_setting():
    # halvings stop before a slot gets shorter than four guards (0.4 s here) or 50 ms
    assert PhaseClock(0, 2, 2, 1.0, 0.1, warmup=3).warmup == 1
    assert PhaseClock(0, 2, 2, 1.0, 0.005, warmup=3).warmup == 3
    assert PhaseClock(0, 2, 2, 0.2, 0.005, warmup=3).warmup == 2
    assert PhaseClock(0, 2, 2, 0.06, 0.001, warmup=3).warmup == 0
    with pytest.raises(ValueError, match="phase-warmup"):
        PhaseClock(0, 2, 2, 1.0, 0.01, warmup=-1)
    pc = PhaseClock(0, 2, 2, 1.0, 0.01, warmup=3)        # no origin yet: the regular grid
    assert pc.slot(5.5) == (5, 5.0, 6.0)


# -- requests cut at a slot's end (pure decision) ----------------------------------------------
from abc_crawler.sched.phases import CUT_LATE, CUT_SLOW, CUT_STARVED, CUT_WARM, cut_cause  # noqa: E402


@pytest.mark.parametrize("limit,usable,host_time,gap,warm,expected", [
    (0.95, 0.99, None, 0.0, False, CUT_SLOW),       # a full slot, no answer: the server's fault
    (0.95, 0.99, 0.02, 0.0, False, CUT_SLOW),       # fast host, full slot, still cut: counted
    (0.40, 0.99, None, 0.0, False, CUT_LATE),       # started late in its slot: no penalty
    (0.40, 0.99, 0.02, 0.6, False, CUT_STARVED),    # away most of a late start's time: the gap explains it
    (0.40, 0.99, 0.02, 0.05, False, CUT_LATE),      # a late start with a short gap: late
    (0.95, 0.99, 0.02, 0.30, False, CUT_STARVED),   # the rank's loop was away a quarter of the time
    (0.95, 0.99, 0.02, 0.20, False, CUT_SLOW),      # a short gap does not excuse it
    (0.30, 0.99, 1.50, 0.6, False, CUT_SLOW),       # the host never answers within a slot: counted
    (0.95, 0.99, None, 0.0, True, CUT_WARM),        # a warm-up slot: never counted
])
def test_cut_cause(limit, usable, host_time, gap, warm, expected):
    assert cut_cause(limit, usable, host_time, gap, warm) == expected


@given(st.floats(0.0, 10.0), st.floats(0.01, 10.0), st.one_of(st.none(), st.floats(0.0, 20.0)),
       st.floats(0.0, 20.0))
def test_only_a_request_that_had_its_slot_is_penalized(limit, usable, host_time, gap):
    cause = cut_cause(limit, usable, host_time, gap)
    if cause == CUT_SLOW:
        # either it had (nearly) the whole slot and the loop was there, or the host cannot fit a slot
        assert (limit >= 0.9 * usable and gap < 0.25 * limit) or (host_time is not None and host_time >= usable)
    else:
        assert cause in (CUT_LATE, CUT_STARVED)


def test_doctests():
    import doctest
    assert doctest.testmod(phases_mod).failed == 0


@given(st.floats(0.0, 1e4), st.floats(0.0, 1e4))
def test_the_lease_poll_is_a_hundredth_of_the_slot_within_its_bounds(a, b):
    """A leased slot loses at most 1 % of itself to the receiver's poll, never a poll more often
    than every 10 ms nor a wait longer than 100 ms; longer slots never poll more often."""
    pa, pb = lease_poll_seconds(a), lease_poll_seconds(b)
    assert LEASE_POLL_MIN <= pa <= LEASE_POLL_MAX
    assert pa <= max(LEASE_POLL_MIN, 0.01 * a) + 1e-12
    assert (a <= b) <= (pa <= pb)
    assert pa == LEASE_POLL_MAX or pa == LEASE_POLL_MIN or pa == pytest.approx(0.01 * a)
