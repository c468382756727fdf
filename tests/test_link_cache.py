"""The link-decision cache gives exactly the decisions made without it (crawler._links_of)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from abc_crawler.config import CrawlConfig
from abc_crawler.crawler import RankCounters, RankCrawler
from abc_crawler.scope import Scope

SCOPE = Scope.from_lines(["a.test:80:127.0.0.1", "b.test:8080:127.0.0.1", "a.test:443:127.0.0.1"])
CFG = CrawlConfig.build({"seeds": "seeds.txt"})


def _crawler() -> RankCrawler:
    c = RankCrawler.__new__(RankCrawler)     # only what _links_of uses
    c.cfg, c.scope, c.c, c._link_cache = CFG, SCOPE, RankCounters(), {}
    return c


PAGES = ["http://a.test/", "http://a.test/d/x.html", "http://a.test/d/e/y.html?q=1", "https://a.test/d/x.html",
         "http://b.test:8080/d/x.html", "http://a.test/d/"]
PARTS = ["x", "..", ".", "d", "e", "%41", "?q=1&b=2", "#f", "a b", "é", ":80", "\\", "\t", "//", "/"]
href = st.one_of(
    st.lists(st.sampled_from(PARTS), max_size=5).map("".join),
    st.sampled_from(["http://", "https://", "HTTP://", "//", "/", "/\\", "/\t/", "mailto:", "ftp://"]).flatmap(
        lambda p: st.lists(st.sampled_from(["a.test", "b.test:8080", "c.test", "/", "x", ".."] + PARTS), max_size=4)
        .map(lambda rest: p + "".join(rest))),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PAGES), st.lists(href, max_size=8)), min_size=1, max_size=12))
def test_cached_decisions_equal_uncached(pages):
    cached = _crawler()
    for page, hrefs in pages:
        fresh = _crawler()                   # an empty cache: every href decided afresh
        assert cached._links_of(page, None, hrefs) == fresh._links_of(page, None, hrefs)
    total = RankCounters()
    for page, hrefs in pages:
        f = _crawler()
        f._links_of(page, None, hrefs)
        total.links.update(f.c.links)
        total.out_of_scope_hosts.update(f.c.out_of_scope_hosts)
    assert cached.c.links == total.links and cached.c.out_of_scope_hosts == total.out_of_scope_hosts


def test_the_cache_is_used_across_directories():
    c = _crawler()
    c._links_of("http://a.test/d/x.html", None, ["/top.html", "http://a.test/abs", "rel.html"])
    keys = set(c._link_cache)
    assert ("http://a.test", "/top.html") in keys and "http://a.test/abs" in keys
    assert ("http://a.test/d/", "rel.html") in keys
    assert c._links_of("http://a.test/other/z.html", None, ["/top.html", "http://a.test/abs"]) == [
        "http://a.test/top.html", "http://a.test/abs"]
