"""Link extraction (lxml) and robots.txt handling (RFC 9309 semantics)."""
from abc_crawler.parser import extract_links
from abc_crawler.robots import RobotsCache


def test_links_nofollow_and_base():
    html = (b"<html><head><base href='http://b.test/dir/'></head><body>"
            b"<a href='x.html'>x</a><a rel='NoFollow external' href='n.html'>n</a>"
            b"<area href='/map.html'><a>no href</a><a href=''>empty</a></body></html>")
    p = extract_links(html)
    assert p.ok and p.base == "http://b.test/dir/"
    assert p.links == ["x.html", "/map.html"]
    assert p.nofollow == ["n.html"]


def test_meta_robots_nofollow_makes_every_link_nofollow():
    p = extract_links(b"<meta name='ROBOTS' content='noindex, nofollow'><a href='a'>a</a>")
    assert p.meta_nofollow and p.links == [] and p.nofollow == ["a"]


def test_malformed_and_empty_bodies():
    assert extract_links(b"").ok is False
    assert extract_links(b"   ").ok is False
    p = extract_links(b"<a href='a.html'<b><a href=b.html>unclosed")
    assert p.ok and "b.html" in p.links


def test_robots_rules_and_crawl_delay():
    rc = RobotsCache("abc-crawler/0.1")
    assert rc.needs_fetch("h.test", 0.0)
    rc.on_response("h.test", 200, b"User-agent: *\nDisallow: /private/\nCrawl-delay: 0.5\n", 0.0)
    assert not rc.needs_fetch("h.test", 0.0)
    assert rc.allowed("h.test", "http://h.test/public.html")
    assert not rc.allowed("h.test", "http://h.test/private/x.html")
    assert rc.get("h.test").crawl_delay == 0.5


def test_robots_agent_specific_group():
    rc = RobotsCache("abc-crawler/0.1")
    rc.on_response("h.test", 200, b"User-agent: abc-crawler\nDisallow: /a\n\nUser-agent: *\nDisallow: /\n", 0.0)
    assert rc.allowed("h.test", "http://h.test/b") and not rc.allowed("h.test", "http://h.test/a")


def test_robots_4xx_allows_all_5xx_retries_then_gives_up():
    rc = RobotsCache("abc-crawler", retry_seconds=1.0)
    rc.on_response("a.test", 404, b"", 0.0)
    assert rc.get("a.test").state == "ready" and rc.allowed("a.test", "http://a.test/x")
    rc.on_response("b.test", 503, b"", 0.0)
    h = rc.get("b.test")
    assert h.state == "retry" and h.retry_at == 1.0
    assert not rc.needs_fetch("b.test", 0.5) and rc.needs_fetch("b.test", 1.0)
    rc.on_response("b.test", 0, b"", 1.0)        # transport error
    assert h.state == "retry" and h.retry_at == 3.0
    rc.on_response("b.test", 500, b"", 3.0)
    assert h.state == "dead"
    assert rc.fetches == 4


def test_robots_disabled():
    rc = RobotsCache("abc-crawler", enabled=False)
    assert not rc.needs_fetch("a.test", 0.0) and rc.allowed("a.test", "http://a.test/x")
