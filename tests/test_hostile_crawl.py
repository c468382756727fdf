"""A crawl of a web mixing every hostile-server mode with a normal web.

The crawl must finish within its time limit; every good page is crawled exactly
once (check_session on the normal part); each hostile case ends as the generator
says a correct crawler ends it, counted under its own error kind; memory stays
bounded; nothing outside the resolve list or outside http(s) is ever contacted
(tripwire listeners on the addresses hostile redirects point to, and the server log).
"""
from __future__ import annotations

import json
import time

import pytest

from abc_crawler.testweb.hostile import HOSTILE_MODES
from abc_crawler.testweb.tripwire import tripwires
from crawlcheck import check_session, crawl_cli, free_port, generate, read_log, serve

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
    log = d.parent / "hlog"
    with tripwires(manifest["expected_hostile"]["never_contacted"]) as wires:
        with serve(d, log):
            t0 = time.monotonic()
            r = crawl_cli(2, d, session, *ARGS, timeout=TIME_LIMIT + 60)
            elapsed = time.monotonic() - t0
        time.sleep(0.2)
        touched = [list(w.hits) for w in wires]
    assert r.returncode == 0, r.stderr[-3000:]
    return {"web": d, "session": session, "log": log, "manifest": manifest, "elapsed": elapsed, "touched": touched,
            "stats": json.loads((session / "stats.json").read_text())}


def test_finishes_in_time_and_good_pages_exactly_once(crawl):
    assert crawl["elapsed"] < TIME_LIMIT + 30
    assert crawl["stats"]["stopped"] == "done"
    check_session(crawl["web"], crawl["session"], crawl["log"])


def test_nothing_outside_scope_or_http_is_contacted(crawl):
    assert all(not t for t in crawl["touched"]), crawl["touched"]
    rows = read_log(crawl["log"])
    m = crawl["manifest"]
    allowed = {h.split(":")[0] for h in m["hosts"] + m["hostile_hosts"]}
    assert {r["host"] for r in rows} <= allowed


def test_each_hostile_case_ends_as_expected_and_is_counted(crawl):
    from abc_crawler.session import load_graph

    g = load_graph(crawl["session"])
    requested = {g.urls[i] for i in range(len(g.urls)) if g.url_rank[i] >= 0}
    errors = crawl["stats"]["errors"]
    links = crawl["stats"]["links"]
    problems = []
    for mode, h in crawl["manifest"]["hostile"].items():
        missing = set(h["requested"]) - requested
        wrong = set(h["not_requested"]) & requested
        if missing or wrong:
            problems.append((mode, "missing", sorted(missing)[:3], "wrongly requested", sorted(wrong)[:3]))
        if h["errors"] and not any(errors.get(k, 0) for k in h["errors"]):
            problems.append((mode, "no error counted among", h["errors"]))
    assert not problems, problems
    # traps are bounded by the limits, and the limits were counted
    assert links.get("over_host_limit", 0) > 0 and links.get("over_page_limit", 0) > 0
    assert links.get("path_repetition", 0) > 0
    for h in ("trap-calendar.test", "trap-session.test"):
        n = sum(1 for u in requested if f"//{h}" in u)
        assert 0 < n <= 300 + 2, (h, n)


def test_memory_stays_bounded(crawl):
    for p in crawl["stats"]["per_rank"]:
        assert p["max_rss_kb"] / 1024 < RSS_BOUND_MB, p
