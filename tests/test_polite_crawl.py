"""Politeness by default, proven by the server's own log at 4 ranks (issues 28 and 30), and the
stall watchdog: a crawl that sends nothing with work queued says so and stops with status 3."""
from __future__ import annotations

import json
import statistics
from collections import defaultdict

import pytest

from abc_crawler.sched import watchdog
from crawlcheck import check_session, crawl_cli, generate, own_addresses, serve

K = 4


def test_doctests():
    import doctest

    from abc_crawler.sched import politeness, stopping
    from abc_crawler import progress

    for mod in (watchdog, politeness, progress, stopping):
        assert doctest.testmod(mod).failed == 0, mod.__name__


@pytest.fixture(scope="module")
def small_web(tmp_path_factory):
    d = tmp_path_factory.mktemp("politeweb")
    generate(d, n_hosts=6, n_pages=72, seed=28)
    return d


def test_the_issue_28_command_crawls_to_the_end(small_web, tmp_path):
    """The command of issue 28 — every setting at its default but a 1 s politeness delay — at 4
    ranks: it stopped for good after ~25 s on 1 s phase slots (its rest plus a guard never fit a
    slot). Now it crawls every page, once, never two requests to a host closer than 1 s."""
    session = tmp_path / "s"
    with serve(small_web, max_seconds=200) as srv:
        r = crawl_cli(K, small_web, session, "--politeness-delay", "1.0", "--time-limit", "150", lab=False,
                      timeout=200)
        rows = srv.rows()
    assert r.returncode == 0, r.stderr[-3000:]
    facts = check_session(small_web, session, rows)      # every page once; the rests, across ranks too
    stats = facts["stats"]
    assert stats["stopped"] == "done" and stats["queued_at_stop"] == 0
    assert "STALLED" not in r.stderr
    polite = facts["log"]["politeness"]
    assert sum(p["cross_rank"] for p in polite) > 0 and sum(p["spaced"] for p in polite) == sum(p["pairs"] for p in polite)
    assert r.stderr.strip().splitlines()[-1] == "abc-crawl: done: every URL in scope was crawled"


def _host_rates(rows) -> dict[str, tuple[int, float]]:
    """host -> (requests, requests per second over its busy span), from the server's log."""
    by = defaultdict(list)
    for r in rows:
        if r["rank"] >= 0:
            by[r["host"]].append(r["t_start"])
    out = {}
    for h, ts in by.items():
        ts.sort()
        if len(ts) >= 2:
            out[h] = (len(ts), (len(ts) - 1) / (ts[-1] - ts[0]))
    return out


@pytest.mark.parametrize("delay", [1.0, 2.0, 5.0])
def test_each_host_is_fetched_at_its_polite_rate(tmp_path, delay):
    """Default settings but the delay, 4 ranks, a small web of a few big hosts, each on an address of
    its own (hosts sharing one are one politeness group: test_ip_groups.py): the crawl ends, every
    page once, no gap below the delay (any ranks), and each busy host runs between half its polite
    rate and that rate."""
    web = tmp_path / "web"
    generate(web, n_hosts=3, n_pages=24 if delay < 5 else 12, seed=30)
    resolve, addrs = own_addresses(web)
    session = tmp_path / "s"
    with serve(web, max_seconds=400, also=addrs) as srv:
        r = crawl_cli(K, web, session, "--politeness-delay", str(delay), "--time-limit", "300",
                      "--resolve", str(resolve), lab=False, timeout=400)
        rows = srv.rows()
    assert r.returncode == 0, r.stderr[-3000:]
    facts = check_session(web, session, rows)
    assert facts["stats"]["stopped"] == "done"
    gaps = []
    by = defaultdict(list)
    for row in rows:
        by[row["host"]].append(row)
    for rs in by.values():
        rs.sort(key=lambda x: x["t_start"])
        gaps += [b["t_start"] - a["t_write"] for a, b in zip(rs, rs[1:])]
    assert min(gaps) >= delay - 0.002
    rates = [rate for n, rate in _host_rates(rows).values() if n >= 6]
    assert rates, _host_rates(rows)
    assert all(rate <= 1 / delay for rate in rates), rates
    assert statistics.median(rates) >= 0.5 / delay, rates


def test_the_watchdog_says_so_and_stops_a_stalled_crawl(small_web, tmp_path):
    """The test hook stops every rank's requests after 1.5 s with work queued: the progress line
    says STALLED with the hosts waiting and why, then the crawl stops with status 3, a record in
    errors/stall.txt and "stopped": "stalled"."""
    session = tmp_path / "s"
    with serve(small_web):
        r = crawl_cli(K, small_web, session, "--politeness-delay", "0.2", "--test-stall", "1.5",
                      "--stall-seconds", "1", timeout=120)
    assert r.returncode == watchdog.STALL_EXIT, r.stderr[-3000:]
    stalled = [ln for ln in r.stderr.splitlines() if "STALLED: no request for" in ln]
    assert stalled and any("test hook --test-stall" in ln for ln in stalled), r.stderr[-3000:]
    record = (session / "errors" / "stall.txt").read_text()
    assert "abc-crawl crash record" in record and "hosts waiting, and what for" in record
    assert "test hook --test-stall" in record
    manifest = json.loads((session / "manifest.json").read_text())
    assert manifest["stopped"] == "stalled" and manifest["stall"] == {"file": "errors/stall.txt"}
    stats = json.loads((session / "stats.json").read_text())
    assert stats["stopped"] == "stalled" and stats["queued_at_stop"] > 0
    st = stats["stall"]
    assert st["warnings"] > 0 and st["longest_s"] >= watchdog.FATAL_FACTOR * 1.0
    assert st["last"]["hosts"] and all(h["why"] == "test hook --test-stall" for h in st["last"]["hosts"])
    assert r.stderr.strip().splitlines()[-1] == (
        f"abc-crawl: stopped by the stall watchdog with {stats['queued_at_stop']:,} URLs queued")


def test_control_without_the_hook_nothing_is_stalled(small_web, tmp_path):
    session = tmp_path / "s"
    with serve(small_web):
        r = crawl_cli(K, small_web, session, "--politeness-delay", "0.2", "--stall-seconds", "1", timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "STALLED" not in r.stderr
    stats = json.loads((session / "stats.json").read_text())
    assert stats["stopped"] == "done" and stats["stall"]["warnings"] == 0


def test_a_crawl_stopped_at_its_time_limit_says_what_it_left(tmp_path):
    web = tmp_path / "web"
    generate(web, n_hosts=4, n_pages=400, seed=31)
    session = tmp_path / "s"
    with serve(web):
        r = crawl_cli(K, web, session, "--politeness-delay", "0.1", "--time-limit", "2", timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    stats = json.loads((session / "stats.json").read_text())
    assert stats["stopped"] == "time-limit" and stats["queued_at_stop"] > 0
    assert r.stderr.strip().splitlines()[-1] == (
        f"abc-crawl: stopped at the time limit with {stats['queued_at_stop']:,} URLs queued")
