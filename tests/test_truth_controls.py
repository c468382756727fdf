"""A control for every truth check of crawlcheck.check_session / logcheck (issue 32): a copy of a
good session or of its server log, edited in one place, that the check must reject, with the
message it rejects it by. The session is one polite 2-rank crawl; every edit is made on a copy."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from abc_crawler.store.session import load_graph, save_graph
from crawlcheck import check_session, crawl_cli, generate, serve
from logcheck import check_once, check_politeness
from ownership_ref import owner_function

K = 2


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    d = tmp_path_factory.mktemp("truth")
    web = d / "web"
    generate(web, n_hosts=4, n_pages=120, seed=32)
    session = d / "s"
    with serve(web) as srv:
        r = crawl_cli(K, web, session, "--politeness-delay", "0.02", "--no-stats", timeout=240)
        rows = srv.rows()
    assert r.returncode == 0, r.stderr[-3000:]
    check_session(web, session, rows)                     # the original passes every check
    return web, session, rows


def _copy(session, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(session, dst)
    return dst


def _edit_graph(session, tmp_path, change):
    s = _copy(session, tmp_path)
    g = load_graph(s)
    change(g)
    save_graph(s, g)
    return s


def _edit_stats(session, tmp_path, change):
    s = _copy(session, tmp_path)
    st = json.loads((s / "stats.json").read_text())
    change(st)
    (s / "stats.json").write_text(json.dumps(st))
    return s


def _requested(g):
    return np.flatnonzero(g.url_rank >= 0)


def test_the_independent_owner_rule_is_the_crawlers(good):
    """The test's own owner rule (tests/ownership_ref.py) agrees with the crawler's on every URL the
    session knows, so a disagreement found by the ownership check is the crawl's."""
    from abc_crawler.web.assignments import make_assignment
    web, session, rows = good
    g = load_graph(session)
    ref = owner_function("hash", K, 4096)
    mine = make_assignment("hash", K, 4096)
    assert all(ref(u) == mine.owner(u) for u in g.urls if u)


def test_control_a_page_missing_from_the_session(good, tmp_path):
    web, session, rows = good
    def change(g):
        i = _requested(g)[3]
        g.url_rank = g.url_rank.copy()
        g.url_rank[i] = -1
    with pytest.raises(AssertionError, match="requested: missing"):
        check_session(web, _edit_graph(session, tmp_path, change), rows)


def test_control_a_page_the_web_does_not_have_requested(good, tmp_path):
    """An extra requested URL (one the generator's truth does not request) is caught, complete or not."""
    web, session, rows = good
    m = json.loads((web / "manifest.json").read_text())
    never = set(m["expected"]["requested"])
    def change(g):
        i = next(i for i, u in enumerate(g.urls) if u and g.url_rank[i] < 0 and u not in never)
        g.url_rank = g.url_rank.copy()
        g.url_rank[i] = 0
    s = _edit_graph(session, tmp_path, change)
    with pytest.raises(AssertionError, match="requested: .*extra"):
        check_session(web, s, rows)
    with pytest.raises(AssertionError, match="requested: extra"):
        check_session(web, s, rows, complete=False)


def test_control_a_node_or_an_edge_too_few_or_too_many(good, tmp_path):
    web, session, rows = good
    def drop_edge(g):
        g.edge_src, g.edge_dst = g.edge_src[1:], g.edge_dst[1:]
    with pytest.raises(AssertionError, match="edges: missing"):
        check_session(web, _edit_graph(session, tmp_path / "a", drop_edge), rows)
    def extra_edge(g):
        pairs = set(zip(g.edge_src.tolist(), g.edge_dst.tolist()))
        s, d = next((s, d) for s in range(g.n_nodes) for d in range(g.n_nodes) if s != d and (s, d) not in pairs)
        g.edge_src = np.append(g.edge_src, np.int32(s)).astype(g.edge_src.dtype)
        g.edge_dst = np.append(g.edge_dst, np.int32(d)).astype(g.edge_dst.dtype)
    with pytest.raises(AssertionError, match="edges: .*extra"):
        check_session(web, _edit_graph(session, tmp_path / "b", extra_edge), rows)
    with pytest.raises(AssertionError, match="edges: .*extra"):
        check_session(web, _edit_graph(session, tmp_path / "c", extra_edge), rows, complete=False)


def test_control_a_page_requested_by_another_rank_than_its_owner(good, tmp_path):
    web, session, rows = good
    def change(g):
        i = _requested(g)[5]
        g.url_rank = g.url_rank.copy()
        g.url_rank[i] = (int(g.url_rank[i]) + 1) % K
    with pytest.raises(AssertionError, match="ownership: pages requested by another rank"):
        check_session(web, _edit_graph(session, tmp_path, change), rows)


@pytest.mark.parametrize("key", ["volume_bytes", "messages_thesis", "messages_mpi", "wire_bytes"])
def test_control_a_metric_of_stats_json_that_the_files_do_not_give(good, tmp_path, key):
    web, session, rows = good
    def change(st):
        st["exchange"][key] += 1
    with pytest.raises(AssertionError, match=f"metrics: stats.json differs from the recomputed figure.*{key}"):
        check_session(web, _edit_stats(session, tmp_path, change), rows)


def test_control_an_imbalance_and_a_request_count_off_by_a_little(good, tmp_path):
    web, session, rows = good
    def imb(st):
        st["imbalance"]["request_pct"] = round(st["imbalance"]["request_pct"] + 0.01, 4)
    with pytest.raises(AssertionError, match="metrics: imbalance"):
        check_session(web, _edit_stats(session, tmp_path / "a", imb), rows)
    def req(st):
        st["requests"] += 1
    with pytest.raises(AssertionError, match="requests: stats.json's count"):
        check_session(web, _edit_stats(session, tmp_path / "b", req), rows)
    def nodes(st):
        st["graph"]["nodes"] -= 1
    with pytest.raises(AssertionError, match="graph: stats.json's nodes"):
        check_session(web, _edit_stats(session, tmp_path / "c", nodes), rows)


def test_control_an_error_count_of_one_kind(good, tmp_path):
    web, session, rows = good
    st = json.loads((session / "stats.json").read_text())
    assert st["errors"].get("http_4xx", 0) > 0
    def change(st):
        st["errors"]["http_4xx"] += 1
    with pytest.raises(AssertionError, match="errors: stats.json's count of a kind.*http_4xx"):
        check_session(web, _edit_stats(session, tmp_path, change), rows)


def _port(web):
    return json.loads((web / "manifest.json").read_text())["port"]


def test_control_robots_txt_asked_twice_by_one_rank(good):
    web, session, rows = good
    i = next(i for i, r in enumerate(rows) if r["path"] == "/robots.txt")
    twice = rows + [dict(rows[i], conn=10 ** 6, req=0, t_start=rows[-1]["t_end"] + 1,
                         t_write=rows[-1]["t_end"] + 1.001, t_end=rows[-1]["t_end"] + 1.002)]
    with pytest.raises(AssertionError, match="robots.txt fetched more than once by one rank"):
        check_session(web, session, twice)


def test_control_a_sitemap_asked_twice_and_a_request_the_session_does_not_know(good):
    web, session, rows = good
    end = rows[-1]["t_end"]
    i = next(i for i, r in enumerate(rows) if r["path"] == "/sitemap.xml")
    twice = rows + [dict(rows[i], conn=10 ** 6, req=0, t_start=end + 1, t_write=end + 1.001, t_end=end + 1.002)]
    with pytest.raises(AssertionError, match="/sitemap.xml fetched more than once"):
        check_session(web, session, twice)
    j = next(j for j, r in enumerate(rows) if r["path"] not in ("/robots.txt", "/sitemap.xml"))
    unknown = rows + [dict(rows[j], path="/not/in/the/session.html", conn=10 ** 6 + 1, req=0,
                           t_start=end + 2, t_write=end + 2.001, t_end=end + 2.002)]
    with pytest.raises(AssertionError, match="not/in/the/session"):
        check_session(web, session, unknown)


def test_control_a_page_the_server_never_answered(good):
    """A page the session stored but the log does not hold: caught for a complete crawl and, from the
    pages the session says were answered, for one stopped early too."""
    web, session, rows = good
    k = next(k for k, r in enumerate(rows) if r["path"] not in ("/robots.txt", "/sitemap.xml") and r["status"] == 200)
    gone = rows[:k] + rows[k + 1:]
    with pytest.raises(AssertionError, match="requested pages the server never answered"):
        check_session(web, session, gone)
    with pytest.raises(AssertionError, match="requested pages the server never answered"):
        check_session(web, session, gone, complete=False)


def test_control_an_empty_log_passes_nothing(good):
    """An empty log of a session that was answered is no log of it (complete or not)."""
    web, session, rows = good
    for complete in (True, False):
        with pytest.raises(AssertionError, match="log: the access log holds no request"):
            check_session(web, session, [], complete=complete)
    # and the log checks on their own see nothing to pass: no answers, no pairs
    facts = check_once([[]], _port(web), set(), {}, 0)
    assert facts["answers"] == 0
    assert check_politeness([], _port(web), delay=0.0, crawl_delays={})["pairs"] == 0
