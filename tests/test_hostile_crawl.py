"""A crawl of a web mixing every hostile-server mode with a normal web.

The crawl must finish within its time limit; every good page is crawled exactly
once (check_session on the normal part, with the server's log, every stored payload and no
internal error, hostile hosts included); each hostile URL ends in its own outcome (the generator's
``outcomes``, per URL from graph.npz, not a global counter another mode could raise); memory stays
bounded; nothing outside the resolve list or outside http(s) is ever contacted
(tripwire listeners on the addresses hostile redirects point to, and the server log).
"""
from __future__ import annotations

import json

import pytest

from abc_crawler.testweb.hostile import HOSTILE_MODES
from abc_crawler.testweb.tripwire import tripwires
from crawlcheck import (check_session, crawl_cli, free_port, generate, hostile_outcome_problems, serve,
                        url_outcomes)

TIME_LIMIT = 150
RSS_BOUND_MB = 600     # per rank, while 100 MB bodies and 100 MiB bombs are fetched

ARGS = ("--timeout", "3", "--connect-timeout", "2", "--max-links-per-page", "300", "--max-pages-per-host", "300",
        "--robots-retry-seconds", "0.3", "--retry-backoff-seconds", "0.2", "--time-limit", str(TIME_LIMIT),
        "--phases", "off", "--no-stats")


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    d = tmp_path_factory.mktemp("hweb")
    # every mode; the tripwires (where hostile redirects point) on ports free right now
    trip, other = free_port("127.0.0.2"), free_port()
    modes = {m: {} for m in HOSTILE_MODES}
    modes["redirect_scheme"] = {"trip_addr": "127.0.0.2", "trip_port": trip}
    modes["redirect_loopback"] = {"trip_addr": "127.0.0.2", "trip_port": trip, "other_port": other}
    manifest = generate(d, n_hosts=6, n_pages=120, seed=4, hostile=modes)
    session = d.parent / "hs"
    with tripwires(manifest["expected_hostile"]["never_contacted"]) as wires:
        with serve(d) as srv:
            r = crawl_cli(2, d, session, *ARGS, timeout=TIME_LIMIT + 60)
            rows = srv.rows()
    touched = [list(w.hits) for w in wires]          # final once the tripwires have stopped
    assert r.returncode == 0, r.stderr[-3000:]
    return {"web": d, "session": session, "rows": rows, "manifest": manifest, "touched": touched,
            "stats": json.loads((session / "stats.json").read_text())}


def test_finishes_in_time_and_good_pages_exactly_once(crawl):
    # within --time-limit: ended because nothing was left, not by the limit (the subprocess itself
    # is bounded by crawl_cli's timeout)
    assert crawl["stats"]["stopped"] == "done"
    check_session(crawl["web"], crawl["session"], crawl["rows"])


def test_nothing_outside_scope_or_http_is_contacted(crawl):
    assert all(not t for t in crawl["touched"]), crawl["touched"]
    m = crawl["manifest"]
    allowed = {h.split(":")[0] for h in m["hosts"] + m["hostile_hosts"]}
    assert {r["host"] for r in crawl["rows"]} <= allowed


def test_each_hostile_case_ends_in_its_own_outcome(crawl):
    """Per URL, from the session's graph: each hostile URL ends as the generator says ABC ends it
    (a mode is not passed by an error kind that another mode raised)."""
    from abc_crawler.store.session import load_graph

    g = load_graph(crawl["session"])
    m = crawl["manifest"]
    assert not hostile_outcome_problems(m, url_outcomes(g))
    # the generator's "requested"/"not_requested" hold too (they are what any correct crawler does)
    requested = {g.urls[i] for i in range(len(g.urls)) if g.url_rank[i] >= 0}
    for mode, h in m["hostile"].items():
        assert set(h["requested"]) <= requested, mode
        assert not set(h["not_requested"]) & requested, mode
    # traps are bounded by the limits, and the limits were counted
    links = crawl["stats"]["links"]
    assert links.get("over_host_limit", 0) > 0 and links.get("over_page_limit", 0) > 0
    assert links.get("path_repetition", 0) > 0
    for h in ("trap-calendar.test", "trap-session.test"):
        n = sum(1 for u in requested if f"//{h}" in u)
        assert 0 < n <= 300 + 2, (h, n)


def test_control_swapped_outcomes_are_caught_though_every_counter_is_the_same(crawl):
    """The check above can fail, where the old one (some error kind of the mode counted anywhere)
    could not: swap the outcomes of two URLs of different modes; stats.json is unchanged."""
    from abc_crawler.store.session import load_graph

    m = crawl["manifest"]
    out = url_outcomes(load_graph(crawl["session"]))
    a, b = m["hostile"]["reset"]["urls"][0], m["hostile"]["drip"]["urls"][0]
    c, d = m["hostile"]["http_503"]["urls"][0], m["hostile"]["http_429"]["urls"][0]
    assert (out[a], out[b], out[c], out[d]) == ("recv_error", "timeout", "http_5xx", "http_4xx")
    out[a], out[b], out[c], out[d] = out[b], out[a], out[d], out[c]
    problems = hostile_outcome_problems(m, out)
    assert {p[0] for p in problems} == {"reset", "drip", "http_503", "http_429"}, problems
    # the global counters these URLs feed are the same after the swap: only the per-URL check sees it
    assert all(any(crawl["stats"]["errors"].get(k, 0) for k in m["hostile"][mode]["errors"])
               for mode in ("reset", "drip", "http_503", "http_429"))
    # a URL that should never be requested, requested
    out2 = dict(url_outcomes(load_graph(crawl["session"])))
    out2[m["hostile"]["robots_huge"]["urls"][0].rstrip("/") + "/early/x.html"] = "node"
    assert [p[0] for p in hostile_outcome_problems(m, out2)] == ["robots_huge"]


def test_memory_stays_bounded(crawl):
    for p in crawl["stats"]["per_rank"]:
        assert p["max_rss_kb"] / 1024 < RSS_BOUND_MB, p
