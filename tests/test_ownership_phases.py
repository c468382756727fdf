"""Which hosts need phase slots: a part vector's hosts held by one rank do not (no other rank ever fetches them)."""
from __future__ import annotations

import json

import numpy as np

from abc_crawler.web.ownership import HashAssignment, PartvecAssignment, SiteHashAssignment
from abc_crawler.partition.partvec import make_partvec
from abc_crawler.store.session import SessionGraph
from crawlcheck import check_session, crawl_cli, generate, serve

URLS = ["http://a.test/1", "http://a.test/2", "http://b.test/1", "http://b.test/2", "http://c.test/"]


def vector(parts):
    g = SessionGraph.from_urls(URLS, ranks=2)
    g.url_rank = np.array(parts, np.int16)
    g.url_bytes = np.full(len(URLS), 100, np.int64)
    g.url_status = np.full(len(URLS), 200, np.int16)
    g.url_superstep = np.zeros(len(URLS), np.int32)
    g.link_src = g.link_dst = np.zeros(0, np.int32)
    g.node_url = np.arange(len(URLS), dtype=np.int32)
    g.url_node = np.arange(len(URLS), dtype=np.int32)
    g.edge_src = g.edge_dst = np.zeros(0, np.int32)
    return PartvecAssignment(make_partvec(g, np.array(parts), 2, "page-gp"), "test")


def test_exclusive_hosts_of_a_part_vector():
    a = vector([0, 0, 1, 0, 1])            # a.test whole on 0, b.test split, c.test whole on 1
    assert a.exclusive_hosts(0) == {"a.test"}
    assert a.exclusive_hosts(1) == {"c.test"}
    # the promise behind it: every page of an exclusive host, known or new, has that owner
    for u in ("http://a.test/1", "http://a.test/2", "http://a.test/new", "http://a.test/x/y?z=1"):
        assert a.owner(u) == 0
    for u in ("http://c.test/", "http://c.test/new"):
        assert a.owner(u) == 1
    b = vector([0, 1, 1, 0, 1])            # now a.test is split too
    assert b.exclusive_hosts(0) == frozenset() and b.exclusive_hosts(1) == {"c.test"}


def test_hash_assignments_know_no_exclusive_hosts():
    for a in (HashAssignment(4), SiteHashAssignment(4)):
        assert all(a.exclusive_hosts(r) == frozenset() for r in range(4))


def test_one_rank_runs_without_phases_under_auto(tmp_path):
    """With one rank nobody else can contact a host: auto turns phases (and their guard bands) off."""
    web = tmp_path / "web"
    generate(web, n_hosts=5, n_pages=60, seed=3)
    with serve(web, max_seconds=120) as srv:
        for mode, expect in (("auto", 0), ("on", 1)):
            s = tmp_path / f"s-{mode}"
            mark = srv.mark()
            r = crawl_cli(1, web, s, "--no-stats", "--phases", mode, "--phase-seconds", "0.2", timeout=120)
            assert r.returncode == 0, r.stderr
            stats = json.loads((s / "stats.json").read_text())
            assert [p["phases"] for p in stats["per_rank"]] == [expect]
            assert stats["pages_crawled"] > 50
            check_session(web, s, srv.rows(mark))
