"""Hosts that share an IP address are one politeness group across every rank (issue 30,
abc_crawler/sched/ipgroups.py): the groups every rank agrees on, the transition of a host into a group
checked against simultaneous holders, and crawls at 4 ranks checked by the server's own log —
the address spacing between any hosts and ranks, and the adaptive delay after slow answers."""
from __future__ import annotations

import doctest
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abc_crawler.sched import ipgroups
from abc_crawler.crawl.counters import RankCounters
from abc_crawler.crawl.slots import SlotGate
from abc_crawler.sched.frontier import Frontier
from abc_crawler.sched.ipgroups import Groups
from abc_crawler.sched.phases import HolderTable, PhaseClock
from crawlcheck import check_session, crawl_cli, generate, serve
from logcheck import check_ip_spacing, check_politeness

K = 4


def test_doctests():
    assert doctest.testmod(ipgroups).failed == 0


@settings(max_examples=200, deadline=None)
@given(learnt=st.lists(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 3)), max_size=6), min_size=1, max_size=4),
       ranks=st.integers(2, 4))
def test_every_rank_agrees_on_the_same_groups(learnt, ranks):
    """Each rank learns addresses of its own (a host may be seen at two addresses by two ranks); after
    each exchange every rank has the same groups, a host keeps its first agreed address, and a
    group is exactly the hosts of one address when there are several."""
    gs = [Groups(0.25) for _ in range(ranks)]
    for step in learnt:
        for host, ip in step:
            gs[host % ranks].learn(f"h{host}.test", f"10.0.0.{ip}")
        reports = [g.announce() for g in gs]
        for g in gs:
            g.agree(reports)
        views = [({h: g.group(h) for h in g.ip_of}, dict(g.ip_of), dict(g.moving)) for g in gs]
        assert all(v == views[0] for v in views)
        g = gs[0]
        for ip, hosts in g.hosts_of.items():
            want = f"ip:{ip}" if len(hosts) > 1 else None
            assert all(g.group(h) == (want or h) for h in hosts)


class Clock:
    def __init__(self, t):
        self.t = t

    def shared(self):
        return self.t


def _gate(rank, holders, clock, groups):
    pc = PhaseClock(rank, K, K, 1.0, 0.005)
    f = Frontier(n_columns=5, n_rows=2, batch_urls=4, window=100, flush_seconds=0.0)
    g = SlotGate(rank, pc, holders, clock, comm=None, frontier=f, counters=RankCounters(),
                 handover=False, groups=groups)
    return g


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n_hosts=st.integers(2, 6), split=st.booleans())
def test_a_host_moving_into_a_group_is_never_held_by_two_ranks(seed, n_hosts, split):
    """The addresses are agreed at exchange p; ranks complete exchanges at different times, so at
    any moment each rank has completed p - 1, p or p + 1 — but never two apart. In every mix of those
    views that can coexist, at every slot, no host and no address is admitted by two ranks."""
    rng = random.Random(seed)
    hosts = [f"h{i}.test" for i in range(n_hosts)]
    pages = None
    if split:                                   # a part vector: some hosts on a few ranks
        pages = {h: {r: rng.randint(1, 5) for r in rng.sample(range(K), rng.randint(1, K))}
                 for h in hosts if rng.random() < 0.6}
    holders = HolderTable(K, K, pages)
    learnt = {h: f"10.0.0.{0 if i < 2 else rng.randint(0, 1)}" for i, h in enumerate(hosts)}   # one group at least
    report = "\n".join(f"{h}\t{ip}" for h, ip in learnt.items()).encode()
    # the three views: before exchange p, between p and p + 1 (transition), after p + 1
    before, during, after = Groups(0.25), Groups(0.25), Groups(0.25)
    during.agree([report])
    after.agree([report])
    after.agree([])
    assert during.moving and not after.moving
    for mix in ((before, during), (during, after), (during, during), (before, before), (after, after)):
        clock = Clock(0.0)
        views = [mix[rng.randint(0, 1)] for _ in range(K)]
        gates = [_gate(r, holders, clock, views[r]) for r in range(K)]
        for slot in range(40, 80):
            clock.t = slot + 0.5
            for g in gates:
                g.update()
            for h in hosts:
                # only the ranks the assignment gives URLs of h ever have any to ask
                owners = set(pages[h]) if pages and h in pages else set(range(K))
                who = [r for r, g in enumerate(gates) if r in owners and g.admit(h)]
                assert len(who) <= 1, (slot, h, who)
            # one address, one rank at a time, once every rank has agreed on its group
            if all(v is after for v in views):
                for ip in {learnt[h] for h in hosts}:
                    on = [h for h in hosts if learnt[h] == ip]
                    if len(on) < 2:
                        continue
                    who = {r for h in on for r, g in enumerate(gates)
                           if r in (set(pages[h]) if pages and h in pages else set(range(K))) and g.admit(h)}
                    assert len(who) <= 1, (slot, ip, who)


# -- crawls at 4 ranks -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("ipweb")
    generate(d, n_hosts=6, n_pages=120, seed=33)
    return d


def _crawl(web, tmp_path, name, *args, latency=0.0):
    session = tmp_path / name
    with serve(web, latency=latency) as srv:
        r = crawl_cli(K, web, session, *args, timeout=240)
        rows = srv.rows()
    assert r.returncode == 0, r.stderr[-3000:]
    return session, rows


def _one_address(web) -> dict[str, str]:
    """host -> address of the web's resolve list: every host of the generated web on 127.0.0.1."""
    out = {}
    for line in (web / "resolve.txt").read_text().split():
        host, _, addr = line.split(":", 2)
        out[host] = addr
    assert len(set(out.values())) == 1 and len(out) == 6
    return out


def test_hosts_on_one_address_are_spaced_across_every_rank(web, tmp_path):
    """Six hosts on one loopback address in the resolve list, 4 ranks, no per-host delay: any two
    requests to the address — any hosts, any ranks — are at least the IP delay apart."""
    session, rows = _crawl(web, tmp_path, "ip", "--ip-politeness-delay", "0.05")
    facts = check_session(web, session, rows)
    groups = _one_address(web)
    polite = check_politeness(rows, facts["manifest"]["port"], delay=0.0, crawl_delays={}, ip_groups=groups,
                              ip_delay=0.05)
    assert polite["ip_pairs"] > 100
    ranks = {r["rank"] for r in rows}
    assert len(ranks) == K                                 # every rank asked something


def test_control_without_the_ip_delay_the_address_check_fails(web, tmp_path):
    session, rows = _crawl(web, tmp_path, "noip", "--ip-politeness-delay", "0")
    check_session(web, session, rows)
    kept = [r for r in rows if r["rank"] >= 0 and r.get("t_write") is not None]
    pairs, problems = check_ip_spacing(kept, _one_address(web), 0.05)
    assert pairs > 100 and problems and "closer than the IP delay 0.05" in problems[0][0]


def test_after_a_slow_answer_the_host_rests_the_delay_factor_times_it(web, tmp_path):
    """Every answer takes 0.1 s: with --delay-factor 3 each host rests at least 0.3 s after each,
    whichever rank asks next (the server's log); the same log fails that check for a crawl that
    ignores the factor (the control)."""
    session, rows = _crawl(web, tmp_path, "slow", "--delay-factor", "3", "--max-delay", "1",
                           "--phase-seconds", "2", latency=0.1)
    facts = check_session(web, session, rows)             # checked with the session's own factor
    assert sum(p["pairs"] for p in facts["log"]["politeness"]) > 50
    session2, rows2 = _crawl(web, tmp_path, "slow0", "--delay-factor", "0", "--phase-seconds", "2", latency=0.1)
    check_session(web, session2, rows2)
    with pytest.raises(AssertionError, match="a request without the rest 0.3|closer than its rest 0.3"):
        check_politeness(rows2, facts["manifest"]["port"], delay=0.0, crawl_delays={}, factor=3.0, max_delay=1.0)
