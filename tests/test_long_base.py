"""A page whose <base href> is longer than --max-url-length: its links are joined with the part of
the base they depend on (crawl/links.py ``_classify_long_base``), with the URLs and reasons the
whole base gives, in time linear in the page."""
from __future__ import annotations

import pytest

from abc_crawler.crawl.links import LinkClassifier
from abc_crawler.web.ownership import HashAssignment
from abc_crawler.web.scope import Scope

PAGE = "http://h.test/index.html"
REFS = ["http://o.test/a", "HTTPS://o.test/b", "/root.html", "//o.test/c", "\\\\o.test\\d", "rel.html", "../up.html",
        "sub/dir/", "./x.html", "?q=1", "#frag", "", "mailto:a@b.test", "ftp://x.test/", "javascript:void(0)",
        "data:text/plain,x", "a%20b.html", "  /spaced.html", "\u00e9:x.html"]


def _classifier(limit: int) -> LinkClassifier:
    return LinkClassifier(Scope(), HashAssignment(1), 0, max_links_per_page=100_000, max_url_length=limit,
                          max_path_depth=10_000, max_segment_repeats=100_000)


def _decision(links: LinkClassifier, base: str, href: str):
    """What ``targets`` decides for one reference: its URL, or its reason."""
    before = dict(links.links)
    got = links.targets(PAGE, base, [href])
    if got:
        return got[0][0]
    return next(k for k, v in links.links.items() if v != before.get(k, 0))


@pytest.mark.parametrize("base", [
    "http://h.test/dir/page.html?q=" + "x" * 300,                 # the query is long: the rest is short
    "http://h.test/" + "seg/" * 80 + "page.html",                  # the directory is long
    "http://h.test/" + "seg/" * 40 + "page.html?q=" + "y" * 100,   # both: neither alone over the limit
])
def test_long_base_gives_what_the_whole_base_gives(base):
    limit = 200
    assert len(base) > limit
    for href in REFS:
        # the same decision as joining with the whole base (a fresh classifier each: no cache)
        want = _classifier(limit).classify(href, base)
        want = want[0] if want[0] is not None else want[1]
        assert _decision(_classifier(limit), base, href) == want, href


def test_long_base_climbing_out_with_dots_is_counted_too_long():
    """The one difference, documented: ``..`` out of a directory longer than the limit would reach
    a shorter URL; it is counted ``url_too_long`` without the join."""
    base = "http://h.test/" + "seg/" * 80 + "page.html"
    href = "../" * 80 + "top.html"
    assert _classifier(200).classify(href, base)[0] == "http://h.test/top.html"
    assert _decision(_classifier(200), base, href) == "url_too_long"


@pytest.mark.timeout(60)
def test_long_base_costs_linear_time():
    """An 8 MB <base href> and 10,000 links: each joined with the whole base took ~12 ms (the
    base parsed again), two minutes a page. Root-relative links still resolve."""
    links = _classifier(2048)
    base = "http://h.test/" + "a" * 8_000_000 + "/"
    hrefs = [f"p{i}.html" for i in range(5000)] + [f"/r{i}.html" for i in range(5000)]
    got = links.targets(PAGE, base, hrefs)
    assert [t[0] for t in got] == [f"http://h.test/r{i}.html" for i in range(5000)]
    assert links.links["url_too_long"] == 5000
