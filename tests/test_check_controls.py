"""The shared checker's new checks can fail: a correct crawl passes them, and each broken copy of it
(a WARC body cut short or swapped, a revisit pointing nowhere, a log with a page served twice, a
crawl without its politeness rests or Crawl-delay, a host's new holder starting within the rest,
an internal error in the graph) is caught.

One small web with Crawl-delay hosts and duplicate pages is crawled with the default politeness
delay (0.25 s) and batches of 4, with and without phase slots; the controls are made from copies of
those sessions and logs, or are crawls run without the rests (--politeness-delay 0, --no-robots).
"""
from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter, defaultdict

import numpy as np
import pytest

from crawlcheck import check_session, crawl_cli, generate, serve
from logcheck import check_once, check_politeness
from warccheck import b32, members, split_record

POLITE = ("--politeness-delay", "0.25", "--batch-urls", "4")


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("ctlweb")
    m = generate(d, n_hosts=5, n_pages=160, seed=9)
    delays = {h: v["crawl_delay"] for h, v in m["robots"].items() if v["crawl_delay"]}
    assert delays, "the generator gives some hosts a Crawl-delay"
    return d


def _crawl(web, root, name, ranks, *args):
    session = root / name
    with serve(web) as srv:
        r = crawl_cli(ranks, web, session, *args, timeout=240)
        rows = srv.rows()
    assert r.returncode == 0, r.stderr[-3000:]
    return session, rows


@pytest.fixture(scope="module")
def polite(web, tmp_path_factory):
    """One rank (every duplicate body is a revisit), phases off, the default politeness delay."""
    return _crawl(web, tmp_path_factory.mktemp("polite"), "s", 1, *POLITE)


def test_a_polite_crawl_passes_every_check(web, polite):
    session, rows = polite
    facts = check_session(web, session, rows)
    assert facts["stats"]["duplicates"] > 0                      # revisit records were checked
    polite = facts["log"]["politeness"]
    # every gap between two requests to a host was owed the 0.25 s rest, and was checked
    assert sum(p["spaced"] for p in polite) == sum(p["pairs"] for p in polite) > 100
    m = facts["manifest"]
    cd_hosts = {h.split(":")[0] for h, v in m["robots"].items() if v["crawl_delay"]}
    per = Counter(r["host"] for r in rows if r["host"] in cd_hosts and r["path"] != "/robots.txt")
    assert per and max(per.values()) >= 3, per          # Crawl-delay spacing was checked


@pytest.fixture(scope="module")
def phased(web, tmp_path_factory):
    """Page-level assignment (hash) at 3 ranks with phase slots: every host changes holder."""
    return _crawl(web, tmp_path_factory.mktemp("phased"), "ph", 3, *POLITE, "--phase-seconds", "0.3")


def test_a_polite_crawl_under_phase_slots_passes(web, phased):
    """The rests hold for each rank, across slot boundaries too, and between ranks: a host's new
    holder starts its rest after the previous holder's last request."""
    session, rows = phased
    facts = check_session(web, session, rows)
    assert all(p["phases"] == 3 for p in facts["stats"]["per_rank"])
    polite = facts["log"]["politeness"]
    assert sum(p["spaced"] for p in polite) == sum(p["pairs"] for p in polite)
    assert sum(p["cross_rank"] for p in polite) >= 10     # hosts changed hands, each change checked


def test_control_a_crawl_without_rests_under_phase_slots_fails(web, tmp_path):
    """A crawl that never rests fails the rests under phase slots too (no gap is exempted), between
    ranks as well as within one."""
    session, rows = _crawl(web, tmp_path, "phrude", 3, "--politeness-delay", "0", "--batch-urls", "4",
                           "--phase-seconds", "0.3")
    check_session(web, session, rows)
    with pytest.raises(AssertionError, match="without the rest 0.25"):
        check_session(web, session, rows, expect_delay=0.25)
    m = json.loads((web / "manifest.json").read_text())
    with pytest.raises(AssertionError, match="two ranks' requests to a host closer than its rest 0.25"):
        check_politeness(rows, m["port"], delay=0.25, crawl_delays={})


def test_control_a_new_holder_starting_within_the_rest_is_caught(web, phased):
    """An edited copy of the phased crawl's log: one request moved to just after another rank's
    request to its host (half the rest later) fails the cross-rank check, and check_session with it;
    the per-rank checks alone (across_ranks=False) do not see it."""
    session, rows = phased
    m = json.loads((web / "manifest.json").read_text())
    cds = {h.split(":")[0]: v["crawl_delay"] or 0.0 for h, v in m["robots"].items()}
    by_host = defaultdict(list)
    for k, r in enumerate(rows):
        if r["rank"] >= 0 and r.get("t_write") is not None:
            by_host[r["host"]].append(k)
    # a host's first request of a rank, the previous request of the host being another rank's
    for host, ks in by_host.items():
        ks.sort(key=lambda k: rows[k]["t_start"])
        seen = {rows[ks[0]]["rank"]}
        pick = None
        for a, b in zip(ks, ks[1:]):
            if rows[b]["rank"] not in seen and rows[a]["rank"] != rows[b]["rank"]:
                pick = (a, b)
                break
            seen.add(rows[b]["rank"])
        if pick:
            break
    assert pick, "the phased crawl has a host that changed holder"
    a, b = pick
    rest = max(0.25, cds.get(rows[a]["host"], 0.0))
    shift = rows[b]["t_start"] - (rows[a]["t_write"] + rest / 2)
    assert shift > 0
    edited = list(rows)
    edited[b] = dict(rows[b], t_start=rows[b]["t_start"] - shift, t_write=rows[b]["t_write"] - shift,
                     t_end=rows[b]["t_end"] - shift)
    _politeness(web, session, edited, across_ranks=False)     # one rank's own rests still hold
    with pytest.raises(AssertionError, match="two ranks' requests to a host closer than its rest"):
        _politeness(web, session, edited)
    with pytest.raises(AssertionError, match="two ranks' requests to a host closer than its rest"):
        check_session(web, session, edited)


# -- WARC controls ---------------------------------------------------------------------------------
def _copy(session, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(session, dst)
    return dst, sorted((dst / "warc").glob("*-rank-00000-*.warc.gz"))[0]


def _rebuild(headers: dict, block: bytes, payload_from: int | None = None) -> bytes:
    """A record with its Content-Length and digests made right for ``block`` (the payload starts
    after the HTTP head)."""
    h = dict(headers)
    h["Content-Length"] = str(len(block))
    h["WARC-Block-Digest"] = b32(block)
    if "WARC-Payload-Digest" in h and h.get("WARC-Type") == "response":
        h["WARC-Payload-Digest"] = b32(block[block.index(b"\r\n\r\n") + 4:])
    head = "WARC/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
    return head.encode() + block + b"\r\n\r\n"


def _rewrite(path, change) -> None:
    """Apply ``change(records)`` (a list of (headers, block)) and write the file back, one gzip member
    per record."""
    recs = [split_record(raw) for raw in members(path.read_bytes())]
    change(recs)
    path.write_bytes(b"".join(gzip.compress(_rebuild(h, b)) for h, b in recs))


def _responses(recs, min_body=200):
    return [i for i, (h, b) in enumerate(recs) if h["WARC-Type"] == "response"
            and len(b) - b.index(b"\r\n\r\n") - 4 >= min_body]


def test_the_copy_itself_passes(web, polite, tmp_path):
    """Rewriting the file with the helpers below changes nothing by itself."""
    session, rows = polite
    s, path = _copy(session, tmp_path)
    _rewrite(path, lambda recs: None)
    check_session(web, s, rows)


def _caught(web, polite, tmp_path, change, match) -> None:
    """``change`` applied to a copy of the polite session's WARC file makes check_session fail."""
    session, rows = polite
    s, path = _copy(session, tmp_path)
    _rewrite(path, change)
    with pytest.raises(AssertionError, match=match):
        check_session(web, s, rows)


def test_control_a_body_cut_short_with_its_digests_made_right_is_caught(web, polite, tmp_path):
    def cut(recs):
        i = _responses(recs)[3]
        recs[i] = (recs[i][0], recs[i][1][:-100])
    _caught(web, polite, tmp_path, cut, "body differs")


def test_control_a_body_cut_short_breaks_the_digest_warcio_checks(web, polite, tmp_path):
    session, rows = polite
    s, path = _copy(session, tmp_path)
    raws = members(path.read_bytes())
    i = next(k for k, raw in enumerate(raws) if b"WARC-Type: response" in raw[:200])
    h, block = split_record(raws[i])
    bad = block[:-50] + b"x" * 50              # same length, other bytes: only a digest can tell
    raws[i] = raws[i].replace(block, bad)
    path.write_bytes(b"".join(gzip.compress(r) for r in raws))
    with pytest.raises(AssertionError, match="digest"):
        check_session(web, s, rows)


def test_control_bodies_swapped_between_two_records_are_caught(web, polite, tmp_path):
    def swap(recs):
        i, j = _responses(recs)[2:4]
        (hi, bi), (hj, bj) = recs[i], recs[j]
        head_i, head_j = bi[:bi.index(b"\r\n\r\n") + 4], bj[:bj.index(b"\r\n\r\n") + 4]
        recs[i] = (hi, head_i + bj[len(head_j):])
        recs[j] = (hj, head_j + bi[len(head_i):])
    _caught(web, polite, tmp_path, swap, "body differs")


def test_control_a_changed_head_is_caught(web, polite, tmp_path):
    def retype(recs):
        i = _responses(recs)[1]
        recs[i] = (recs[i][0], recs[i][1].replace(b"Content-Type: text/html", b"Content-Type: text/plain", 1))
    _caught(web, polite, tmp_path, retype, "head differs")


@pytest.mark.parametrize("how", ["date", "digest"])
def test_control_a_revisit_pointing_at_no_stored_record_is_caught(web, polite, tmp_path, how):
    def point_away(recs):
        i = next(k for k, (h, _) in enumerate(recs) if h["WARC-Type"] == "revisit")
        h = dict(recs[i][0])
        if how == "date":
            h["WARC-Refers-To-Date"] = "2001-01-01T00:00:00.000000Z"
        else:
            other = next(hh["WARC-Payload-Digest"] for hh, _ in recs if hh["WARC-Type"] == "response"
                         and hh["WARC-Payload-Digest"] != h["WARC-Payload-Digest"])
            h["WARC-Payload-Digest"] = other
        recs[i] = (h, recs[i][1])
    _caught(web, polite, tmp_path, point_away, "revisit refers to no earlier response")


# -- log controls: each page answered once ---------------------------------------------------------
def _facts(web, session, rows):
    facts = check_session(web, session, rows)
    m = facts["manifest"]
    return facts, m["port"], {h.split(":")[0] for h in m["hosts"]}


def test_control_a_log_with_one_page_served_twice_is_caught(web, polite):
    session, rows = polite
    facts, port, hosts = _facts(web, session, rows)
    stored, n_again = facts["stored"], 0
    pages = [k for k, r in enumerate(rows) if r["path"] != "/robots.txt" and r["status"] == 200]
    k = pages[len(pages) // 2]
    # the same page asked again later on the same connection (a double fetch)
    twice = rows[:k + 1] + [dict(rows[k], req=rows[k]["req"] + 1)] + [
        dict(r, req=r["req"] + 1) if r["conn"] == rows[k]["conn"] and r["req"] > rows[k]["req"] else r
        for r in rows[k + 1:]]
    check_once([rows], port, hosts, stored, n_again)
    with pytest.raises(AssertionError, match="more than once"):
        check_once([twice], port, hosts, stored, n_again)


def _early_copy(rows, k, **kw):
    """Row ``k`` asked once before, 10 ms earlier, on a connection of its own that ends with it: in
    the log, a failed attempt of row k's URL (the last request of its connection, asked again)."""
    r = rows[k]
    early = {**r, "conn": 10 ** 6, "req": 0, "t_start": r["t_start"] - 0.01, "t_write": r["t_start"] - 0.009,
             "t_end": r["t_start"] - 0.009, **kw}
    return rows[:k] + [early] + rows[k:]


def test_control_a_double_fetch_passed_off_as_a_failed_attempt_is_caught(web, polite):
    """A first fetch on a connection of its own that ends with it looks like a failed attempt. The
    server answered it completely with a 200 and the session ran without phase slots (nothing is
    cut at a slot's end): the log explains no failure, so it is a page fetched twice, whatever the
    crawler counted. The same attempt is explained when the server's log shows a failure."""
    session, rows = polite
    facts, port, hosts = _facts(web, session, rows)
    k = next(k for k, r in enumerate(rows) if r["path"] != "/robots.txt" and r["req"] > 0)
    with pytest.raises(AssertionError, match="failed attempts the server's log does not explain"):
        check_once([_early_copy(rows, k)], port, hosts, facts["stored"], 0)
    # the crawler's counters do not excuse it: one request asked again is counted, still caught
    with pytest.raises(AssertionError, match="failed attempts the server's log does not explain"):
        check_once([_early_copy(rows, k)], port, hosts, facts["stored"], 1)
    # explained by the server: a 503 (asked again after a back-off), an answer the client left
    # before its end, a reset, or no byte written; each still needs the crawler to have counted it
    for kw in ({"status": 503}, {"hostile": "drip", "end": "closed"}, {"hostile": "reset", "end": "reset"},
               {"t_write": None}):
        check_once([_early_copy(rows, k, **kw)], port, hosts, facts["stored"], 1)
        with pytest.raises(AssertionError, match="more failed attempts in the log than the crawler asked again"):
            check_once([_early_copy(rows, k, **kw)], port, hosts, facts["stored"], 0)


def _boundaries(rows, grid, port):
    """(row index, whether a slot boundary lies between the rank's previous answer from that host
    and it) for the page rows of a log that follow another answer of their rank and host."""
    from logcheck import failed_attempts

    failed = failed_attempts(rows, port)
    last: dict = {}
    out = []
    for k in sorted(range(len(rows)), key=lambda k: rows[k]["t_start"]):
        r = rows[k]
        key = (r["host"], r["rank"])
        if r["path"] not in ("/robots.txt", "/sitemap.xml") and r["status"] == 200 and key in last \
                and last[key]["t_start"] < r["t_start"] - 0.01:
            # what check_once asks of an early copy of r (:func:`_early_copy`) re-asked by r
            out.append((k, grid.boundary_between(last[key]["t_write"], r["t_start"])))
        if k not in failed and r.get("t_write") is not None:
            last[key] = r
    return out


def test_control_under_phase_slots_a_failed_attempt_needs_a_slot_boundary(web, phased):
    """Under phase slots a complete answer may have been dropped at the slot's end (the server cannot
    see a client not reading what it wrote): the crawler asks again in a later slot, so the log
    explains such an attempt only when a boundary of the session's slot grid (read from stats.json,
    computed by tests/logcheck.SlotGrid) lies between the rank's previous answer from the host and
    the re-ask. A double fetch within one slot is caught; the same made across a boundary passes."""
    from logcheck import SlotGrid

    session, rows = phased
    facts, port, hosts = _facts(web, session, rows)
    grid = SlotGrid.of_session(facts["stats"])
    assert grid is not None, facts["stats"]["per_rank"][0]
    assert facts["log"]["once"]["failed"] <= facts["stats"]["slot_cuts"]["total"] + facts["stats"]["retries"]
    spots = _boundaries(rows, grid, port)
    within = [k for k, b in spots if not b]
    across = [k for k, b in spots if b]
    assert within and across, (len(within), len(across))
    for k in within[:3]:
        with pytest.raises(AssertionError, match="failed attempts the server's log does not explain"):
            check_once([_early_copy(rows, k)], port, hosts, facts["stored"], 10, grids=[grid])
        # the check of a session without phase slots catches it too, and ANY_SLOT (an earlier run of
        # a resumed session, whose grid is not recorded) lets it pass
        with pytest.raises(AssertionError, match="does not explain"):
            check_once([_early_copy(rows, k)], port, hosts, facts["stored"], 10)
        check_once([_early_copy(rows, k)], port, hosts, facts["stored"], 10, grids=["any slot"])
    for k in across[:3]:
        check_once([_early_copy(rows, k)], port, hosts, facts["stored"], 10, grids=[grid])


@pytest.mark.parametrize("length,n,warmup,origin", [
    (1.0, 3, 3, 1718000000.4567), (0.3, 4, 2, 1718000000.01), (2.0, 8, 1, 1718000003.0), (1.0, 2, 0, None),
    (0.3, 3, 0, None)])
def test_the_slot_grid_is_the_documented_one(length, n, warmup, origin):
    """SlotGrid (written from the docs) partitions time into the slots of the crawler's PhaseClock:
    a boundary between two times in one iff in the other, so a failed attempt is never excused or
    blamed by a grid the tests got wrong (the last two: a session without warm-up, as the phased
    crawl above runs: its 0.3 s slots cannot be halved under its 0.25 s rest)."""
    from abc_crawler.sched.phases import PhaseClock
    from logcheck import SlotGrid

    grid = SlotGrid(length, n, warmup, origin, slack=0.0)
    pc = PhaseClock(0, n, n, length, 0.0, warmup=warmup, origin=origin)
    assert pc.warmup == grid.warmup
    t0 = (origin or 1718000000.0) - 1.3
    ts = [t0 + i * 0.00731 for i in range(4000)]
    ours = [grid.slot(t) for t in ts]
    theirs = [pc.slot(t)[0] for t in ts]
    for i in range(len(ts) - 1):
        assert (ours[i] != ours[i + 1]) == (theirs[i] != theirs[i + 1]), (i, ts[i], ts[i + 1])
        assert grid.boundary_between(ts[i], ts[i + 1]) == (theirs[i] != theirs[i + 1])
    assert sum(a != b for a, b in zip(ours, ours[1:])) >= 10


# -- log controls: politeness ----------------------------------------------------------------------
def _politeness(web, session, rows, delay=None, crawl_delays=None, across_ranks=True):
    m = json.loads((web / "manifest.json").read_text())
    cfg = json.loads((session / "manifest.json").read_text())["config"]
    cds = crawl_delays if crawl_delays is not None else {
        h.split(":")[0]: v["crawl_delay"] or 0.0 for h, v in m["robots"].items()}
    return check_politeness(rows, m["port"], delay=cfg["politeness_delay"] if delay is None else delay,
                            crawl_delays=cds, factor=cfg["delay_factor"], max_delay=cfg["max_delay"],
                            across_ranks=across_ranks)


def test_control_a_crawl_without_rests_fails_the_politeness_check(web, tmp_path):
    """--politeness-delay 0 checked against the 0.25 s rest it should have kept: batches follow each
    other without it (the check of that crawl against its own setting passes)."""
    session, rows = _crawl(web, tmp_path, "rude", 2, "--politeness-delay", "0", "--batch-urls", "4",
                           "--phases", "off")
    check_session(web, session, rows)
    with pytest.raises(AssertionError, match="without the rest 0.25"):
        check_session(web, session, rows, expect_delay=0.25)


def test_control_a_crawl_ignoring_crawl_delay_fails_the_crawl_delay_check(web, tmp_path):
    """--no-robots ignores robots.txt and so its Crawl-delay: checked against the hosts' Crawl-delay,
    requests come too close together."""
    session, rows = _crawl(web, tmp_path, "nocd", 1, "--no-robots", "--politeness-delay", "0", "--phases", "off")
    _politeness(web, session, rows, crawl_delays={})
    with pytest.raises(AssertionError, match="under the Crawl-delay"):
        _politeness(web, session, rows)


def test_control_one_rank_twice_at_once_and_a_rest_shorter_than_the_adaptive_delay_are_caught(web, polite):
    session, rows = polite
    _politeness(web, session, rows)
    by = defaultdict(list)
    for k, r in enumerate(rows):
        by[(r["host"], r["rank"], r["conn"])].append(k)
    # two consecutive requests of one rank on one connection (no Crawl-delay host)
    m = json.loads((web / "manifest.json").read_text())
    cd_hosts = {h.split(":")[0] for h, v in m["robots"].items() if v["crawl_delay"]}
    a, b = next((ks[i], ks[i + 1]) for (host, _, _), ks in by.items() if host not in cd_hosts
                for i in range(len(ks) - 1) if rows[ks[i + 1]]["path"] != "/robots.txt")
    overlap = list(rows)                    # b sent 10 ms after a while a's answer took 50 ms
    overlap[a] = dict(rows[a], t_write=rows[a]["t_start"] + 0.05, t_end=rows[a]["t_start"] + 0.05)
    overlap[b] = dict(rows[b], t_start=rows[a]["t_start"] + 0.01)
    with pytest.raises(AssertionError, match="one rank with two requests to a host at once"):
        _politeness(web, session, overlap)
    # the adaptive rest: the same log checked with a delay factor, a's answer made 0.2 s long, wants
    # twice that before b
    slow = list(rows)
    slow[a] = dict(rows[a], t_write=rows[a]["t_start"] + 0.2, t_end=rows[a]["t_start"] + 0.2)
    slow[b] = dict(rows[b], t_start=rows[a]["t_start"] + 0.2 + 0.3)
    m = json.loads((web / "manifest.json").read_text())
    check_politeness(slow, m["port"], delay=0.25, crawl_delays={}, across_ranks=False)
    with pytest.raises(AssertionError, match="a request without the rest 0.4"):
        check_politeness(slow, m["port"], delay=0.25, crawl_delays={}, factor=2.0, max_delay=30.0, across_ranks=False)


# -- an internal error is never hidden -------------------------------------------------------------
def test_control_an_internal_error_on_one_page_fails_the_session(web, polite, tmp_path):
    session, rows = polite
    s, _ = _copy(session, tmp_path)
    from abc_crawler.store.session import load_graph, save_graph
    g = load_graph(s)
    g.kinds = list(g.kinds) + ["internal_ValueError"]
    victim = int(np.flatnonzero((g.url_status == 404) & (g.url_rank >= 0))[0])
    g.url_kind = g.url_kind.copy()
    g.url_kind[victim] = len(g.kinds) - 1      # one 404 page processed with an exception instead
    save_graph(s, g)
    stats = json.loads((s / "stats.json").read_text())
    stats["errors"]["http_4xx"] -= 1
    stats["errors"]["internal_ValueError"] = 1
    (s / "stats.json").write_text(json.dumps(stats))
    with pytest.raises(AssertionError, match="internal"):
        check_session(web, s, rows)


def test_outlink_check_rejects_a_metadata_record_that_is_not_the_graphs_links():
    """crawlcheck.check_outlinks: a page's WARC outlinks must be its graph.npz links kind by kind."""
    import numpy as np

    from abc_crawler.store.session import SessionGraph
    from crawlcheck import check_outlinks

    a, b, c = "http://a.test/", "http://a.test/b", "http://a.test/c.css"
    g = SessionGraph.from_urls([a, b, c], ranks=1)
    g.link_src, g.link_dst = np.array([0, 0], np.int32), np.array([1, 2], np.int32)
    g.link_kind = np.array([0, 1], np.uint8)
    cfg = {"warc": True, "warc_outlinks": True}
    good = [(b, "L"), (c, "E")]
    check_outlinks(g, {"outlinks": {a: good}, "stored": {a: ("f", "d")}}, cfg)
    for bad, msg in (([(b, "L")], "not the graph's links"), ([(b, "L"), (c, "L")], "not the graph's links"),
                     ([*good, (b, "L")], "a link listed twice")):
        with pytest.raises(AssertionError, match=msg):
            check_outlinks(g, {"outlinks": {a: bad}, "stored": {a: ("f", "d")}}, cfg)
    with pytest.raises(AssertionError, match="answers with links and no metadata record"):
        check_outlinks(g, {"outlinks": {}, "stored": {a: ("f", "d")}}, cfg)
    with pytest.raises(AssertionError, match="written with --no-warc-outlinks"):
        check_outlinks(g, {"outlinks": {a: good}, "stored": {a: ("f", "d")}}, {"warc_outlinks": False})
