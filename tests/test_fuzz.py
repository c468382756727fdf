"""Fuzzing (hypothesis) of everything that reads untrusted input: URLs, ownership, robots.txt,
link extraction and the limits. Each runs a bounded number of examples in `make test`.

Inputs that once broke something are pinned with @example as regression tests.
"""
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from abc_crawler.sched.limits import trap_reason
from abc_crawler.web.ownership import HashAssignment, SiteHashAssignment
from abc_crawler.web.parser import extract_links
from abc_crawler.net.robots import RobotsCache
from abc_crawler.web.urls import UrlError, canonicalize, fingerprint, host_of

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
url_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=120)
url_like = st.builds(lambda s, h, p: f"{s}://{h}/{p}", st.sampled_from(["http", "https", "HTTP", "ftp", "file"]),
                     st.text(alphabet="abcXYZ.-:0123456789@[]%", min_size=0, max_size=20), url_text)


@FUZZ
@given(href=st.one_of(url_text, url_like), base=st.sampled_from(["http://h.test/a/b.html", "https://X.test:8443/",
                                                                  "http://h.test/a%20b/?q=1"]))
@example(href="http://[::1]:80/", base="http://h.test/")
@example(href="//", base="http://h.test/")
@example(href="http://h.test:0/", base="http://h.test/")
@example(href="\x00http://h.test/", base="http://h.test/")
@example(href="http://xn--/", base="http://h.test/")
def test_canonicalize_never_crashes_and_is_stable(href, base):
    try:
        url = canonicalize(href, base)
    except UrlError:
        return
    if url is None:
        return
    assert url.startswith(("http://", "https://")) and "#" not in url
    assert canonicalize(url) == url                       # idempotent: ranks agree on fingerprints
    host = host_of(url)
    assert host and "/" not in host
    fp = fingerprint(url)
    assert 0 <= fp < 2**64
    for a in (HashAssignment(7), SiteHashAssignment(7)):
        r = a.owner(url, fp)
        assert 0 <= r < 7 and r == a.owner(url)
    trap_reason(url, max_length=2048, max_depth=32, max_repeats=3)


@FUZZ
@given(body=st.binary(max_size=3000))
@example(body=b"User-agent: *\nDisallow: /\x00\xff\n")
@example(body=b"\xef\xbb\xbfUser-agent: abc-crawler\nCrawl-delay: -5\n")
@example(body=b"Crawl-delay: 1e309\n")
def test_robots_never_crash(body):
    rc = RobotsCache("abc-crawler/0.1")
    rc.on_response("h.test", 200, body, 0.0)
    assert isinstance(rc.allowed("h.test", "http://h.test/x/y.html"), bool)
    delay = rc.get("h.test").crawl_delay
    assert delay == delay          # not NaN


@FUZZ
@given(text=st.text(max_size=2000))
def test_robots_text_never_crash(text):
    rc = RobotsCache("abc-crawler/0.1")
    rc.on_response("h.test", 200, text.encode(), 0.0)
    assert isinstance(rc.allowed("h.test", "http://h.test/"), bool)


html_frag = st.lists(st.sampled_from(["<a href='", "'>", "<base href=", "<meta name=robots content=nofollow>",
                                      "<area href=x>", "</a>", "<a rel=nofollow href=y>", "<!--", "-->", "<",
                                      ">", "\x00", "&#0;", "<![CDATA[", "<script>", "</script>", "\udcff"]), max_size=40)


@FUZZ
@given(body=st.one_of(st.binary(max_size=4000), html_frag.map(lambda xs: "".join(xs).encode("utf-8", "replace"))))
@example(body=b"<a href='\x00'>")
@example(body=b"<?xml version='1.0' encoding='bogus'?><a href=x>")
@example(body=b"<meta charset=utf-7><a href=+ADw->")
def test_link_extraction_never_crashes(body):
    p = extract_links(body)
    assert isinstance(p.links, list) and isinstance(p.nofollow, list)
    for href in p.links + p.nofollow:
        assert isinstance(href, str)
        try:
            canonicalize(href, "http://h.test/d/")
        except UrlError:
            pass


def test_deeply_nested_and_huge_pages_parse():
    deep = b"<div>" * 100_000 + b"<a href=deep.html>x</a>" + b"</div>" * 100_000
    extract_links(deep)                      # libxml2 limits depth; must not crash or hang
    many = b"".join(b"<a href=p%d.html>x</a>" % i for i in range(100_000))
    assert len(extract_links(many).links) == 100_000
