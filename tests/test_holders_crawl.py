"""Phase-slot holders under a part vector, proven by the server's log at 4 ranks.

The part vector gives the biggest host's pages to two ranks, very unevenly: rank 0 holds every
page this web really has, rank 2 holds pages of the host that the web no longer has (a previous
session's pages that are gone). Rank 2 therefore holds the host in about half of the slots but
never has work for it. With slot hand-over, rank 2 gives each such slot to rank 0, so the host
is fetched in every slot while its pages last; without it (the control), those slots stay idle.
"""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from abc_crawler.partition.partvec import make_partvec, save_partvec
from abc_crawler.sched.phases import PhaseClock
from abc_crawler.store.session import load_graph
from abc_crawler.web.urls import host_of
from crawlcheck import check_session, crawl_cli, generate, graph_crawled_by, host_overlaps, read_log, serve

K = 4
#: a slot long enough against the rest that a late request does not cost the next slot. The rest
#: is owed before a holder's run of slots ends, so after a request late in a leased slot (a lease
#: that travelled long, or the loop away for 50 ms) the rest reaches into the holder's own next
#: slot. In 0.3 s slots the time left of that slot was then below what a request may start with,
#: and the slot stayed idle by the rule, not by a fault of the hand-over: 3 crawls of 17 on a quiet
#: machine (a first request 109-114 ms into the leased slot; a 53 ms loop gap that left 35 ms of
#: the next). At 0.5 s, about 0.3 s of delay still leaves room (0 of 17).
SLOT = 0.5
#: a politeness delay long enough that the big host keeps pages queued through many slots (at
#: 0.05 s a fast machine drained it in time for only 4 of them)
ARGS = ("--politeness-delay", "0.15", "--phase-seconds", str(SLOT), "--phase-warmup", "0", "--batch-urls", "8",
        "--no-stats")


@pytest.fixture(scope="module")
def split_web(tmp_path_factory):
    """A web, its hash session, and a part vector that splits the biggest host between ranks 0 and 2."""
    d = tmp_path_factory.mktemp("holders")
    web = d / "web"
    generate(web, n_hosts=6, n_pages=600, seed=16)
    s1 = d / "s1"
    with serve(web):
        r = crawl_cli(K, web, s1, "--no-stats")
    assert r.returncode == 0, r.stderr[-2000:]
    g = load_graph(s1)
    requested = [u for u, rk in zip(g.urls, g.url_rank.tolist()) if rk >= 0 and u]
    by_host = Counter(host_of(u) for u in requested)
    big = by_host.most_common(1)[0][0]
    gone = [f"http://{big}/gone/{i}.html" for i in range(by_host[big])]   # as many pages as it has
    urls = requested + gone
    others = sorted(h for h in by_host if h != big)
    parts = np.array([0 if host_of(u) == big else 1 + others.index(host_of(u)) % 3 for u in requested]
                     + [2] * len(gone))
    vg = graph_crawled_by(urls, parts, K)
    pv = d / "pv.npz"
    save_partvec(pv, make_partvec(vg, parts, K, "page-gp"))
    return web, pv, big


def _crawl(split_web, tmp_path, name, *extra):
    web, pv, big = split_web
    log = tmp_path / f"{name}.log"
    session = tmp_path / name
    with serve(web, log, latency=0.003):
        r = crawl_cli(K, web, session, "--assign", str(pv), *ARGS, *extra, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    stats = json.loads((session / "stats.json").read_text())
    return session, log, read_log(log), stats       # the log is complete: the server has exited


@pytest.fixture(scope="module")
def handover(split_web, tmp_path_factory):
    return _crawl(split_web, tmp_path_factory.mktemp("handover"), "handover")


#: supersteps after the one that processed a page by whose end the URLs it links are certainly
#: queued on their owner and announced to every holder: the page's links leave with the exchange of
#: its superstep, or of the next one when it was processed during that exchange (S + 1); the owner
#: announces its work with the exchange after it has them (S + 2); and rank 0 completes an exchange
#: only once every rank has sent its part of it, that is, finished the one before (S + 3)
QUEUED_STEPS = 3


def _queued_since(session, rows):
    """Superstep -> a wall-clock time by which rank 0 had completed that superstep's exchange, from
    what the crawl reports: ``exchange.npz`` ``step_t`` (seconds from rank 0's loop start at which
    each exchange completed) added to the server's ``t_start`` of rank 0's first request, which is
    after its loop started. Late, never early: no race with how fast the machine is."""
    t0 = min(r["t_start"] for r in rows if r["rank"] == 0)
    with np.load(session / "exchange.npz") as z:
        step_t = z["step_t"].tolist()
    return lambda step: t0 + step_t[step] if step < len(step_t) else float("inf")


def _away(stats, ranks=(0, 2)):
    """The shared-clock intervals in which the loop of a rank holding the big host (0 or 2) did not
    turn (``stats.json`` ``loop_gaps``): descheduled on a loaded machine, it could neither fetch nor
    hand its slot over, which is no fault of the scheduling under test."""
    return [(t, t + g) for r in ranks for t, g in stats["per_rank"][r]["loop_gaps"]]


def _idle_slots(rows, session, host, away=()):
    """(regular slots in which the host had queued work but nobody requested it, regular slots in
    which it had queued work, the shared-clock starts of the idle ones). "Queued" from the log and
    the session's supersteps: a page of the host is queued (and its owner's work announced) from
    the end of the exchange QUEUED_STEPS supersteps after the one that processed the first page
    linking to it (:func:`_queued_since`), until its own request starts. Slots that meet an
    interval of ``away`` are left out of both counts."""
    name = host.split(":")[0]
    fetched: dict[str, tuple[float, float]] = {}
    for r in rows:
        fetched.setdefault(f"{r['host'].split(':')[0]}{r['path']}", (r["t_start"], r["t_end"]))
    g = load_graph(session)
    key = [(host_of(u).split(":")[0] + u[u.index("/", u.index("://") + 3):]) if u else "" for u in g.urls]
    since = _queued_since(session, rows)
    found: dict[int, int] = {}
    for s_, d_ in zip(g.link_src.tolist(), g.link_dst.tolist()):
        step = int(g.url_superstep[s_])
        if step >= 0 and key[d_].startswith(name + "/"):
            found[d_] = min(found.get(d_, step), step)
    waits = [(since(st + QUEUED_STEPS), fetched[key[d]][0]) for d, st in found.items() if key[d] in fetched]
    starts = sorted(v[0] for k, v in fetched.items() if k.startswith(name + "/") and not k.endswith("/robots.txt"))
    pc = PhaseClock(0, K, K, SLOT, 0.005)
    idle = queued = 0
    idle_at = []
    s, a, b = pc.slot(starts[0])
    while a <= starts[-1]:
        if any(q <= a and e >= b for q, e in waits) and not any(u < b and v > a for u, v in away):
            # some page of the host waited all slot long, and both holders' loops were running
            queued += 1
            if not any(a <= t < b for t in starts):
                idle += 1
                idle_at.append(round(a, 3))
        s, a, b = pc.slot(b + 1e-6)
    return idle, queued, idle_at


def test_a_split_host_is_fetched_in_every_slot_and_never_by_two_ranks(split_web, handover):
    web, pv, big = split_web
    session, log, rows, stats = handover
    assert host_overlaps(rows) == 0
    check_session(web, session, rows)                 # every page exactly once, the rests
    away = _away(stats)
    idle, total, idle_at = _idle_slots(rows, session, big, away)
    assert total >= 5, (total, away)                  # the host had work queued in several slots
    # on failure: the idle slots, when the holders' loops stood still, and the hand-overs' latency
    leased = [(p["leases"], p["lease_wait_ms"], p["lease_wait_max_ms"]) for p in stats["per_rank"]]
    assert idle == 0, (idle, total, idle_at, away, leased)
    per_rank = stats["per_rank"]
    # rank 2 held the host (about half of the slots) with nothing queued and handed each slot over
    assert per_rank[2]["handovers"] > 0 and per_rank[0]["leases"] > 0
    assert sum(p["leases"] + p["leases_late"] for p in per_rank) == sum(p["handovers"] for p in per_rank)
    for p in per_rank:                                # the hand-overs' latency: the longest bounds the mean
        assert p["lease_wait_max_ms"] * p["leases"] >= p["lease_wait_ms"] >= 0
        assert p["leases"] > 0 or p["lease_wait_ms"] == p["lease_wait_max_ms"] == 0
    # where the time went is visible: the idle split and the host's politeness bound
    b = stats["bounds"]
    bounds = [h["bound_s"] for h in b["hosts"]]
    assert bounds == sorted(bounds, reverse=True) and b["host_bound_s"] == bounds[0]
    mine = [h for h in b["hosts"] if h["host"] == big]
    name = big.split(":")[0]
    assert mine and mine[0]["requests"] == len({r["path"] for r in rows if r["host"].split(":")[0] == name
                                                and r["path"] not in ("/robots.txt", "/sitemap.xml")})
    assert all(k in per_rank[0] for k in ("idle_slot_s", "idle_rest_s", "idle_empty_s", "exchange_s"))
    for p in per_rank:                                # when each rank's loop was away, the longest first
        gaps = p["loop_gaps"]
        assert len(gaps) <= p["loop_gap_count"] and sum(g for _, g in gaps) <= p["loop_gap_s"] + 0.01
        assert all(g >= 0.05 for _, g in gaps) and [g for _, g in gaps] == sorted((g for _, g in gaps), reverse=True)


def test_a_rank_holding_consecutive_slots_keeps_its_rests(split_web, handover):
    """Here rank 0 holds the big host in about every slot (its own and rank 2's, handed over):
    every request to it, across slot boundaries and changes of holder too, is spaced by the rest
    (once a known bug: a batch cut at a slot's end took no rest)."""
    web, pv, big = split_web
    session, log, rows, stats = handover
    facts = check_session(web, session, rows)
    p = facts["log"]["politeness"][0]
    assert p["spaced"] == p["pairs"] > 0


def test_control_without_handover_leaves_slots_idle(split_web, tmp_path):
    """The check above can fail: without hand-over rank 2's slots of the host stay unused."""
    web, pv, big = split_web
    session, log, rows, stats = _crawl(split_web, tmp_path, "nohandover", "--no-slot-handover")
    assert host_overlaps(rows) == 0
    idle, total, _ = _idle_slots(rows, session, big, _away(stats))
    assert total >= 5 and idle >= total // 4, (idle, total)
    assert all(p["handovers"] == 0 and p["leases"] == 0 for p in stats["per_rank"])

