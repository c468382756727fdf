"""abc_crawler/crawl/routing.py: where a followed link goes, without MPI or fetching (issue 32: the
module had no direct test; crawls checked it only as a whole).

The rules checked are the ones the module's docstrings and docs/DESIGN.md state: a URL leaves a
rank at most once (its own into the frontier, another rank's into ``outbox[owner]``); every link of
a page goes into the report to rank 0, and a URL's text goes there the first time only; Türk's
volume is the wire bytes of a page's remote links and his messages the distinct ranks they go to,
one per rank and page even when a page's links come in several kinds; seeds and sitemap URLs are
not links; what travels with a URL (redirect hops, depth, sitemap) arrives with it; the outboxes
become one ``\\n``-terminated buffer per other rank. The owners are given by the test (the router
does not compute them), and several routers exchange their buffers as the superstep's all-to-all
would.
"""
from __future__ import annotations

import random

import pytest

from abc_crawler.crawl.counters import RankCounters
from abc_crawler.crawl.discovery import LINK, SITEMAP
from abc_crawler.crawl.quotas import HostQuotas
from abc_crawler.crawl.routing import Router
from abc_crawler.graph.coordinator import decode_report
from abc_crawler.sched.frontier import Frontier
from abc_crawler.sched.seen import new_fpset
from abc_crawler.web.urls import fingerprint, host_of

NO_LIMIT = 10 ** 9


def make_router(rank: int = 0, size: int = 3, limit: int = NO_LIMIT, track_depth: bool = False) -> Router:
    return Router(rank, size, Frontier(), new_fpset(), RankCounters(),
                  HostQuotas(limit, rank, size, site_level=False), track_depth=track_depth)


def target(url: str, owner: int, me: int) -> tuple:
    """A followed link as the link classifier gives it: wire bytes are what the URL costs on the
    wire to its owner (here its length and a newline), 0 for this rank's own."""
    return (url, fingerprint(url), owner, 0 if owner == me else len(url) + 1)


def frontier_urls(r: Router) -> list[str]:
    return [r.frontier.url(i) for i in range(len(r.frontier))]


def test_own_urls_enter_the_frontier_and_others_go_to_their_owners_outbox_once():
    r = make_router(rank=1, size=3)
    page = fingerprint("http://a.test/")
    links = [target("http://a.test/x", 1, 1), target("http://b.test/y", 0, 1),
             target("http://c.test/z", 2, 1), target("http://b.test/w", 0, 1)]
    r.route(page, links)
    # the same URLs again, from another page: each has left this rank already
    r.route(fingerprint("http://a.test/other"), list(reversed(links)))
    assert frontier_urls(r) == ["http://a.test/x"]
    assert r.outbox == [["http://b.test/y", "http://b.test/w"], [], ["http://c.test/z"]]
    assert r.queued == 3
    # but both pages' links are in the report, every one of them
    assert len(r.report.link_src) == len(r.report.link_dst) == len(r.report.link_kind) == 8
    assert r.report.link_dst == [t[1] for t in links] + [t[1] for t in reversed(links)]
    assert r.counters.links["followed"] == 8


def test_a_url_text_goes_to_rank_0_the_first_time_only_whatever_reports_it():
    r = make_router(rank=0, size=2)
    p = "http://a.test/"
    x = target("http://a.test/x", 0, 0)
    y = target("http://a.test/y", 1, 0)
    r.route(fingerprint(p), [x, y])
    r.record_page(fingerprint(p), p, 200, 10, True)           # the page's own answer: new to rank 0
    r.record_page(x[1], x[0], 200, 5, True)                    # known from the link already
    r.route(fingerprint(x[0]), [y, target(p, 0, 0)])           # all known
    assert r.report.new_urls == ["http://a.test/x", "http://a.test/y", p]
    assert r.report.new_fp == [fingerprint(u) for u in r.report.new_urls]
    # after the report was taken, nothing is sent twice: the seen set remembers what rank 0 has
    data = r.take_report(superstep=4)
    rep = decode_report(data)
    assert rep["superstep"] == 4 and rep["rank"] == 0
    assert list(rep["new_urls"]) == [x[0], y[0], p]
    assert list(rep["page_status"]) == [200, 200] and list(rep["page_bytes"]) == [10, 5]
    assert r.report.link_dst == [] and r.report.new_urls == []
    r.record_page(y[1], y[0], 404, 0, False, "http_404")
    assert r.report.new_urls == [] and r.report.page_kind == ["http_404"]


def test_seeds_and_sitemap_urls_are_not_links():
    r = make_router(rank=0, size=2)
    seeds = [target("http://a.test/", 0, 0), target("http://b.test/", 1, 0)]
    r.route(None, seeds, hop=ord("-"))
    r.route_sitemaps([target("http://b.test/sitemap.xml", 1, 0)], level=0)
    rep = r.report
    assert rep.link_src == rep.link_dst == rep.link_kind == []
    assert rep.volume == 0 and r.counters.volume == 0 and r.counters.messages_thesis == 0
    assert r.counters.links["followed"] == 2           # seeds are counted as followed, sitemaps not
    assert sum(r.counters.links.values()) == 2
    # rank 0 still learns the seeds' text with the first report naming them (none yet)
    assert rep.new_urls == []
    assert frontier_urls(r) == ["http://a.test/"]
    assert r.outbox[1] == ["http://b.test/", "http://b.test/sitemap.xml\t0\t0\ts"]


def test_volume_is_the_wire_bytes_of_remote_links_and_messages_the_ranks_per_page():
    r = make_router(rank=0, size=4)
    page = fingerprint("http://a.test/")
    nav = [target("http://a.test/1", 0, 0), target("http://b.test/1", 1, 0), target("http://b.test/2", 1, 0),
           target("http://c.test/1", 2, 0)]
    r.route(page, nav, kind=0)
    # the same page's embeds: rank 1 again (no new message), rank 3 new; a link seen before still
    # counts its volume (Türk counts links, not new URLs)
    emb = [target("http://b.test/i.png", 1, 0), target("http://d.test/s.css", 3, 0), target("http://b.test/1", 1, 0)]
    r.route(page, emb, kind=1)
    want_volume = sum(t[3] for t in nav + emb)
    assert r.counters.volume == r.report.volume == want_volume
    assert r.counters.messages_thesis == 3            # ranks 1, 2, 3 for this page
    # another page sending to rank 1 again is another message
    r.route(fingerprint("http://a.test/1"), [target("http://b.test/3", 1, 0)])
    assert r.counters.messages_thesis == 4
    assert r.report.link_kind == [0] * 4 + [1] * 3 + [0]


def test_not_followed_links_are_reported_but_not_crawled_and_can_be_followed_later():
    r = make_router(rank=0, size=2)
    page = fingerprint("http://a.test/")
    deep = [target("http://a.test/deep", 0, 0), target("http://b.test/deep", 1, 0)]
    r.route(page, deep, follow=False, tally="over_depth")
    assert frontier_urls(r) == [] and r.queued == 0
    assert r.report.link_dst == [t[1] for t in deep] and r.counters.links["over_depth"] == 2
    r.route(fingerprint("http://a.test/2"), deep, tally=None)
    assert frontier_urls(r) == ["http://a.test/deep"] and r.outbox[1] == ["http://b.test/deep"]
    assert "followed" not in r.counters.links


def test_what_travels_with_a_url_arrives_with_it():
    a, b = make_router(rank=0, size=2, track_depth=True), make_router(rank=1, size=2, track_depth=True)
    a.route(fingerprint("http://a.test/r"), [target("http://b.test/redirected", 1, 0)], hops=2, depth=3,
            kind=2, tally="redirect")
    a.route(fingerprint("http://a.test/"), [target("http://b.test/page", 1, 0)], depth=4)
    a.route_sitemaps([target("http://b.test/sm.xml", 1, 0)], level=1)
    payloads = a.payloads()
    assert payloads[0] == b"" and a.queued == 0
    b.receive(payloads[1])
    f = b.frontier
    got = {f.url(i): (f.hops[i], f.depth[i], bool(f.sitemap[i])) for i in range(len(f))}
    assert got == {"http://b.test/redirected": (2, 3, False), "http://b.test/page": (0, 4, False),
                   "http://b.test/sm.xml": (0, 1, True)}
    # a received URL has no referrer on its owner (the exchange does not carry it) and its hop
    # letter comes from its line: a redirect target's is not known, a page's is a link
    assert b.path_via(0) == ("LLLRR", "-")
    assert b.path_via(1) == ("LLLL", "-")
    assert b.path_via(2) == ("M", "-")
    # the same payload again: nothing new (the owner's seen set makes "fetched once" hold)
    b.receive(payloads[1])
    assert len(b.frontier) == 3


def test_depth_is_kept_only_with_max_depth_except_for_sitemap_files():
    r = make_router(rank=0, size=1, track_depth=False)
    r.route(fingerprint("http://a.test/"), [target("http://a.test/p", 0, 0)], depth=5)
    r.route_sitemaps([target("http://a.test/s.xml", 0, 0)], level=2)
    f = r.frontier
    assert (f.depth[0], f.depth[1]) == (0, 2)


def test_a_local_link_records_its_hop_and_referrer_for_the_crawl_log():
    r = make_router(rank=0, size=1)
    r.route(fingerprint("http://a.test/"), [target("http://a.test/x", 0, 0)], via="http://a.test/", hop=LINK)
    r.route_sitemaps([target("http://a.test/s.xml", 0, 0)], level=0, via="http://a.test/robots.txt")
    assert r.path_via(0) == ("L", "http://a.test/")
    assert r.path_via(1) == ("M", "http://a.test/robots.txt")
    assert r.discovery.hop_of(1) == SITEMAP


def test_payloads_are_one_newline_terminated_buffer_per_other_rank_with_their_wire_figures():
    r = make_router(rank=2, size=4)
    urls = {0: ["http://a.test/1", "http://a.test/2"], 3: ["http://d.test/ü"]}
    for owner, us in urls.items():
        r.route(fingerprint("http://c.test/"), [target(u, owner, 2) for u in us])
    out = r.payloads()
    assert out[0] == b"http://a.test/1\nhttp://a.test/2\n"
    assert out[1] == out[2] == b""
    assert out[3] == "http://d.test/ü\n".encode()
    assert r.report.send_bytes == [len(out[0]), 0, 0, len(out[3])]
    assert r.report.send_urls == [2, 0, 0, 1]
    c = r.counters
    assert (c.wire_bytes, c.wire_urls, c.messages_mpi) == (len(out[0]) + len(out[3]), 3, 2)
    assert r.outbox == [[], [], [], []] and r.payloads() == [b""] * 4


def test_the_per_host_limit_defers_past_the_share_and_settles_exactly():
    # --max-pages-per-host 3 over 2 ranks: rank 0's static share is 2 of any host
    r = make_router(rank=0, size=2, limit=3)
    page = fingerprint("http://z.test/")
    urls = [f"http://a.test/{i}" for i in range(5)]
    r.route(page, [target(u, 0, 0) for u in urls])
    assert frontier_urls(r) == urls[:2]
    assert r.quotas.waiting == 3
    # the exchange: rank 0 reports the host; rank 1 has admitted none of it
    q = r.quotas
    q.receive(0, q.report(lambda h: r.hosts[h].admitted), lambda h: r.hosts[h].admitted)
    r.settle_quotas()                                  # contended from this exchange: no settle yet
    assert frontier_urls(r) == urls[:2]
    q.receive(0, q.report(lambda h: r.hosts[h].admitted), lambda h: r.hosts[h].admitted)
    q.receive(1, b"a.test\t0\t0", lambda h: r.hosts[h].admitted)
    r.settle_quotas()                                  # 1 left of 3: the oldest deferred URL
    assert frontier_urls(r) == urls[:3]
    assert r.hosts["a.test"].admitted == 3
    # the ranks learn that the host is full from the next exchange's counts: until then the rest
    # waits (nothing is dropped before the whole limit is admitted), a later URL too
    assert q.waiting == 2 and "over_host_limit" not in r.counters.links
    r.route(page, [target("http://a.test/late", 0, 0)])
    assert q.waiting == 3 and len(r.frontier) == 3
    q.receive(0, q.report(lambda h: r.hosts[h].admitted), lambda h: r.hosts[h].admitted)
    q.receive(1, b"a.test\t0\t0", lambda h: r.hosts[h].admitted)
    r.settle_quotas()
    assert "a.test" in q.full and r.counters.links["over_host_limit"] == 3 and q.waiting == 0
    # later URLs of the full host are dropped and counted
    r.route(page, [target("http://a.test/later", 0, 0)])
    assert r.counters.links["over_host_limit"] == 4 and len(r.frontier) == 3


def test_given_up_urls_are_reported_except_sitemap_files():
    r = make_router(rank=0, size=1)
    r.route(None, [target("http://a.test/", 0, 0)])
    r.route_sitemaps([target("http://a.test/s.xml", 0, 0)], level=0)
    r.record_given_up(0, "http://a.test/", "robots_disallowed")
    r.record_given_up(1, "http://a.test/s.xml", "host_given_up")
    assert r.report.given_up_fp == [fingerprint("http://a.test/")]
    assert r.report.given_up_kind == ["robots_disallowed"]
    assert r.report.new_urls == ["http://a.test/"]


@pytest.mark.parametrize("seed", range(5))
def test_ranks_that_route_and_exchange_hold_every_url_once_on_its_owner(seed):
    """Random pages with random links over 4 ranks, several supersteps: after each all-to-all of
    the routers' buffers, every URL any rank linked is in its owner's frontier exactly once and in
    no other rank's; the report holds every link routed; the volume and the URLs sent add up."""
    rnd = random.Random(seed)
    size = 4
    routers = [make_router(rank=k, size=size) for k in range(size)]
    hosts = [f"h{i}.test" for i in range(7)]
    owner_of = {h: rnd.randrange(size) for h in hosts}            # a site-level owner rule of the test's
    universe = [f"http://{h}/p{j}" for h in hosts for j in range(40)]
    owner = {u: owner_of[host_of(u)] for u in universe}
    linked: set[str] = set()
    links_routed = [0] * size
    volume = [0] * size
    sent = [0] * size
    for _step in range(6):
        for k, r in enumerate(routers):
            for _page in range(rnd.randrange(1, 6)):
                src = rnd.choice(universe)
                hrefs = list(dict.fromkeys(rnd.sample(universe, rnd.randrange(0, 12))))
                tg = [target(u, owner[u], k) for u in hrefs]
                r.route(fingerprint(src), tg, kind=rnd.choice((0, 1)))
                links_routed[k] += len(tg)
                volume[k] += sum(t[3] for t in tg)
                linked.update(hrefs)
        outs = [r.payloads() for r in routers]
        for k in range(size):
            sent[k] += sum(len([x for x in o.split(b"\n") if x]) for o in outs[k])
        for dst in range(size):
            for src in range(size):
                routers[dst].receive(outs[src][dst])
        for k, r in enumerate(routers):
            mine = frontier_urls(r)
            assert len(mine) == len(set(mine)), "a URL entered a frontier twice"
            assert all(owner[u] == k for u in mine), "a URL in the frontier of a rank that does not own it"
        assert sorted(u for r in routers for u in frontier_urls(r)) == sorted(linked)
    for k, r in enumerate(routers):
        assert len(r.report.link_dst) == links_routed[k] == r.counters.links["followed"]
        assert r.counters.volume == volume[k]
        assert r.counters.wire_urls == sent[k]
        # a URL leaves a rank at most once: what it sent are distinct URLs of other ranks
        assert sent[k] <= sum(1 for u in linked if owner[u] != k)
