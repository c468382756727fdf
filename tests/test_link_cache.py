"""The link-decision cache gives exactly the decisions made without it (LinkClassifier.targets),
with and without the user's scope rules."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abc_crawler.config import CrawlConfig
from abc_crawler.crawl.counters import RankCounters
from abc_crawler.crawl.links import CACHE_GENERATION, DecisionCache, LinkClassifier
from abc_crawler.web.ownership import HashAssignment
from abc_crawler.web.scope import Scope, ScopeRules, UrlFilter
from abc_crawler.web.urls import fingerprint

SCOPE = Scope.from_lines(["a.test:80:127.0.0.1", "b.test:8080:127.0.0.1", "a.test:443:127.0.0.1"])
CFG = CrawlConfig.build({"seeds": "seeds.txt", "contact": "https://example.org/bot"})


#: no --allowed-domains or --url-filter; and both (b.test is outside the domain, paths with /e/ filtered out)
RULES = {"none": ScopeRules(),
         "domain+filter": ScopeRules(domains=("a.test",), url_filter=UrlFilter(((False, "/e/"), (True, "."))))}


def _crawler(rules: ScopeRules | None = None, generation: int = CACHE_GENERATION) -> LinkClassifier:
    """Rank 1's link decisions under a 4-rank hash assignment, counted into fresh counters (its
    caches' generations of ``generation`` entries)."""
    c = LinkClassifier.from_config(CFG, SCOPE, HashAssignment(4), 1, RankCounters(), rules)
    c.cache, c._any_host_cache = DecisionCache(generation), DecisionCache(generation)
    return c


PAGES = ["http://a.test/", "http://a.test/d/x.html", "http://a.test/d/e/y.html?q=1", "https://a.test/d/x.html",
         "http://b.test:8080/d/x.html", "http://a.test/d/"]
PARTS = ["x", "..", ".", "d", "e", "%41", "?q=1&b=2", "#f", "#g", "#", "a b", "é", ":80", "\\", "\t", "//", "/"]
href = st.one_of(
    st.lists(st.sampled_from(PARTS), max_size=5).map("".join),
    st.sampled_from(["http://", "https://", "HTTP://", "HTTPS://", "Http://", "//", "/", "/\\", "\\/", "/\t/",
                     "mailto:", "ftp://"]).flatmap(
        lambda p: st.lists(st.sampled_from(["a.test", "A.test", "b.test:8080", "c.test", "/", "x", ".."] + PARTS),
                           max_size=4)
        .map(lambda rest: p + "".join(rest))),
)
ASSIGN = HashAssignment(4)


def _uncached(page: str, hrefs: list[str], rules: ScopeRules) -> tuple[list[tuple], LinkClassifier]:
    """Every href decided on its own (no cache): the targets, distinct by fingerprint, and the counts
    (the host of a URL out of the resolve list or the allowed domains is the decision's detail)."""
    c = _crawler(rules)
    out: dict[int, tuple] = {}
    for h in hrefs:
        t = c.classify(h, page)
        if t[0] is None:
            c.links[t[1]] += 1
            if t[1] in ("out_of_scope", "out_of_scope_domain"):
                assert t[2] is not None
                c.out_of_scope_hosts[t[2]] += 1
            else:
                assert t[2] is None
        else:
            out.setdefault(t[1], t)
    return list(out.values()), c


def _urls(c, page, base, hrefs):
    """The URLs the crawler follows from ``page`` (its targets' first field)."""
    return [t[0] for t in c.targets(page, base, hrefs)]


@pytest.mark.parametrize("generation", [CACHE_GENERATION, 3])
@pytest.mark.parametrize("rules", RULES)
@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PAGES), st.lists(href, max_size=8)), min_size=1, max_size=12))
def test_cached_decisions_equal_uncached(rules, generation, pages):
    """Also with generations of 3 entries: decisions dropped from the bounded cache are made again,
    the same."""
    cached = _crawler(RULES[rules], generation)
    total = RankCounters()
    for page, hrefs in pages:
        expect, counts = _uncached(page, hrefs, RULES[rules])
        got = cached.targets(page, None, hrefs)
        assert got == expect
        assert _urls(cached, page, None, hrefs) == [t[0] for t in expect]
        for url, fp, owner, wire in got:     # what routing needs, computed once with the decision
            assert fp == fingerprint(url) and owner == ASSIGN.owner(url)
            assert wire == (0 if owner == 1 else len(url.encode()) + 1)
        total.links.update(counts.links)
        total.links.update(counts.links)     # _urls above decided the page a second time
        total.out_of_scope_hosts.update(counts.out_of_scope_hosts)
        total.out_of_scope_hosts.update(counts.out_of_scope_hosts)
    assert cached.links == total.links and cached.out_of_scope_hosts == total.out_of_scope_hosts
    assert len(cached.cache) <= 2 * generation


def test_the_cache_is_bounded_and_keeps_the_decisions_in_use():
    """However many distinct links a rank decides, it holds at most two generations of decisions;
    a link seen on every page (a site's menu) is never decided again."""
    c = _crawler(generation=50)
    calls = []
    classify = c.classify
    c.classify = lambda href, base, any_host=False: calls.append(href) or classify(href, base, any_host)
    for i in range(2_000):
        got = _urls(c, "http://a.test/d/x.html", None, ["/menu.html", f"/p{i}.html"])
        assert got == ["http://a.test/menu.html", f"http://a.test/p{i}.html"]
        assert len(c.cache) <= 100
    assert calls.count("/menu.html") == 1
    assert len([h for h in calls if h.startswith("/p")]) == 2_000
    with pytest.raises(ValueError):
        DecisionCache(0)


def test_the_cache_is_used_across_directories():
    c = _crawler()
    _urls(c, "http://a.test/d/x.html", None, ["/top.html", "http://a.test/abs", "rel.html", "//b.test:8080/s"])
    keys = set(c.cache)
    assert ("http://a.test", "/top.html") in keys and "http://a.test/abs" in keys
    assert ("http://a.test/d/", "rel.html") in keys and ("http:", "//b.test:8080/s") in keys
    assert _urls(c, "http://a.test/other/z.html", None, ["/top.html", "http://a.test/abs"]) == [
        "http://a.test/top.html", "http://a.test/abs"]
    n = len(c.cache)
    # spellings that differ only in the fragment or the scheme's case share the decision
    assert _urls(c, "http://b.test:8080/e/f.html", None,
                 ["HTTP://a.test/abs#top", "http://a.test/abs#", "//b.test:8080/s#x"]) == [
        "http://a.test/abs", "http://b.test:8080/s"]
    assert len(c.cache) == n


def test_scope_rules_are_applied_before_the_fingerprint_and_counted_by_reason():
    c = _crawler(RULES["domain+filter"])
    got = _urls(c, "http://a.test/d/x.html", None,
                ["http://a.test/ok.html", "http://b.test:8080/x", "/d/e/y.html", "http://c.test/z"])
    assert got == ["http://a.test/ok.html"]
    # the resolve list first (c.test is not in it), then the domain, then the filter
    assert c.links["out_of_scope"] == 1 and c.links["out_of_scope_domain"] == 1
    assert c.links["out_of_scope_filter"] == 1
    assert c.out_of_scope_hosts == {"c.test": 1, "b.test:8080": 1}
