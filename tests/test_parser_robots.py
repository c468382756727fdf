"""Link extraction (lxml) and robots.txt handling (RFC 9309 semantics)."""
from abc_crawler.web.parser import extract_links
from abc_crawler.net.robots import RobotsCache


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


# -- the single-pass extraction against the previous three-XPath one ---------------------------

import os  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from hypothesis import HealthCheck, example, given, settings, strategies as st  # noqa: E402
from lxml import etree  # noqa: E402

from abc_crawler.web.parser import ParsedPage, charset_of  # noqa: E402

_OLD_PARSERS: dict = {}


def _xpath_reference(body: bytes, encoding: str | None = None) -> ParsedPage:
    """extract_links as it was (git ea428f4): its parser options and its three XPath walks."""
    xp_base = etree.XPath("//base[@href][1]/@href")
    xp_meta = etree.XPath("//meta[translate(@name,'ROBTS','robts')='robots']/@content")
    xp_links = etree.XPath("//a[@href] | //area[@href]")
    if not body or not body.strip():
        return ParsedPage(ok=False)
    if body[:3] == b"\xef\xbb\xbf" or body[:2] in (b"\xff\xfe", b"\xfe\xff"):
        encoding = None
    if encoding not in _OLD_PARSERS:
        opts = dict(recover=True, no_network=True, remove_comments=True, remove_pis=True)
        try:
            _OLD_PARSERS[encoding] = etree.HTMLParser(**opts, **({"encoding": encoding} if encoding else {}))
        except LookupError:
            _OLD_PARSERS[encoding] = etree.HTMLParser(**opts)
    try:
        root = etree.fromstring(body, _OLD_PARSERS[encoding])
    except (etree.ParserError, ValueError):
        return ParsedPage(ok=False)
    if root is None:
        return ParsedPage(ok=False)
    page = ParsedPage()
    base = xp_base(root)
    if base:
        page.base = str(base[0]).strip() or None
    for content in xp_meta(root):
        tokens = {t.strip().lower() for t in str(content).split(",")}
        if "nofollow" in tokens or "none" in tokens:
            page.meta_nofollow = True
    for el in xp_links(root):
        href = el.get("href")
        if not href:
            continue
        rel = el.get("rel")
        if page.meta_nofollow or (rel and "nofollow" in rel.lower().split()):
            page.nofollow.append(href)
        else:
            page.links.append(href)
    return page


def _anchors(p: ParsedPage) -> tuple:
    """What the XPath reference knows of: the anchors, the base and meta robots (the requisites and
    other kinds have their own reference, tests/test_link_kinds.py)."""
    return p.ok, p.base, p.links, p.nofollow, p.meta_nofollow


def _same(body: bytes, encoding: str | None = None) -> None:
    assert _anchors(extract_links(body, encoding)) == _anchors(_xpath_reference(body, encoding)), body[:300]


_attr_value = st.sampled_from(["x.html", "", " ", " /d/ ", "http://h.test/a b", "&amp;q=1", "#frag", "javascript:v()",
                               "nofollow", "NoFollow external", "noopener nofollow", "nofollowx", "robots",
                               "ROBOTS", "Robots", " robots", "rObOtS", "googlebot", "noindex, NOFOLLOW", "none",
                               "index,follow", "no follow", "\u00e9t\u00e9", "r\u00f6bots"])
_attr = st.tuples(st.sampled_from(["href", "HREF", "rel", "REL", "name", "NAME", "content", "id", "http-equiv"]),
                  _attr_value, st.sampled_from(["'", '"', ""]))
_tag_name = st.sampled_from(["a", "A", "area", "AREA", "base", "BASE", "meta", "Meta", "div", "p", "head", "body",
                             "map", "svg:a", "html", "table", "td", "b", "script", "noscript", "title", "li"])


def _open_tag(name, attrs, close):
    parts = [f" {k}={q}{v}{q}" if q or v else f" {k}" for k, v, q in attrs]
    return f"<{name}{''.join(parts)}{' /' if close else ''}>"


_piece = st.one_of(
    st.builds(_open_tag, _tag_name, st.lists(_attr, max_size=4), st.booleans()),
    st.builds(lambda n: f"</{n}>", _tag_name),
    st.sampled_from(["text", "<!-- <a href=c.html> -->", "<![CDATA[<a href=d>]]>", "<?pi x?>", "&", "<", ">",
                     "\u00e9", "<meta charset=latin-1>", "<meta charset=utf-8>", "<!DOCTYPE html>",
                     "<script>var a='<a href=s.html>';</script>", "\x00", "<html>", "</html>", "<head>", "<body>"]),
)
_html = st.lists(_piece, max_size=60).map("".join)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_html, enc=st.sampled_from(["utf-8", "latin-1", "windows-1252", None]),
       charset=st.sampled_from([None, "utf-8", "iso-8859-1", "bogus"]))
@example(text="<a href=a>1</a><meta name=Robots content='NOINDEX, NoFollow'><a href=b>", enc="utf-8", charset=None)
@example(text="<base href=''><base href='/b/'><a href=x>", enc="utf-8", charset=None)
@example(text="<div><base href=' /d/ '></div><head><base href=/e/></head>", enc="utf-8", charset=None)
@example(text="<base><base href=/f/><area href=m rel=NOFOLLOW><a rel=nofollow>", enc="utf-8", charset=None)
def test_single_pass_equals_xpath_on_generated_html(text, enc, charset):
    body = text.encode(enc or "utf-8", "replace")
    _same(body, charset_of(f"text/html; charset={charset}") if charset else None)


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=2000))
def test_single_pass_equals_xpath_on_random_bytes(body):
    _same(body)


def _corpus_sample(n=400) -> list[bytes]:
    """Real documentation pages: the SQLite sample shipped in tests/data/corpus (always there), and a
    spread of up to ``n`` pages of the Debian documentation sites where they are installed
    (/work/shared/corpus/README.md)."""
    import gzip

    shipped = sorted((Path(__file__).parent / "data" / "corpus").rglob("*.html.gz"))
    bodies = [gzip.decompress(p.read_bytes()) for p in shipped]
    roots = ["/usr/share/doc/python3.11/html", "/usr/share/doc/python-django-doc/html",
             "/usr/share/doc/postgresql-doc-15/html", "/usr/share/doc/git-doc", "/usr/share/doc/sqlite3",
             "/usr/share/doc/cmake-data/html", "/usr/share/doc/gcc-12-base/libstdc++"]
    files = []
    for r in roots:
        if os.path.isdir(r):
            files += sorted(p for p in Path(r).rglob("*.html") if p.is_file())
    step = max(1, len(files) // n)
    return bodies + [f.read_bytes() for f in files[::step][:n]]


def test_single_pass_equals_xpath_on_the_real_corpus():
    bodies = _corpus_sample()
    assert len(bodies) >= 45, "the shipped sample (tests/data/corpus) is missing"
    links = 0
    for body in bodies:
        _same(body)
        _same(body, "utf-8")
        links += len(extract_links(body).links)
    assert links > 10 * len(bodies)


# -- robots.txt answers shared between ranks -------------------------------------------------

from abc_crawler.net.robots import decode_shared, encode_shared  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.from_regex(r"[a-z0-9.\-]{1,20}(:[0-9]{1,5})?", fullmatch=True),
                          st.integers(200, 499), st.binary(max_size=300)), max_size=6))
def test_shared_robots_round_trip(records):
    assert decode_shared(encode_shared(records)) == records


def test_shared_robots_malformed_buffers_raise():
    good = encode_shared([("a.test", 200, b"User-agent: *\nDisallow: /x\n")])
    for bad in (good[:-3], b"a.test\t200\n", b"a.test\t200\tx\nbody", b"no newline at all"):
        with pytest.raises(ValueError):
            decode_shared(bad)


def test_adopted_answer_is_obeyed_but_never_overrides_an_own_one():
    rc = RobotsCache("abc-crawler/0.1")
    body = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n"
    assert rc.adopt("a.test", 200, body, now=0.0)
    assert rc.fetches == 0 and rc.adopted == 1                 # not this rank's request
    assert not rc.needs_fetch("a.test", now=0.0)
    assert not rc.allowed("a.test", "http://a.test/private/x") and rc.allowed("a.test", "http://a.test/y")
    assert rc.get("a.test").crawl_delay == 2.0
    # this rank's own answer stands: a later shared one for the same host is ignored
    rc.on_response("b.test", 404, b"", now=0.0)
    assert not rc.adopt("b.test", 200, b"User-agent: *\nDisallow: /\n", now=0.0)
    assert rc.allowed("b.test", "http://b.test/anything")
    # a host in back-off after a 5xx takes a definitive answer from another rank
    rc.on_response("c.test", 503, b"", now=0.0)
    assert rc.get("c.test").state == "retry"
    assert rc.adopt("c.test", 200, b"User-agent: *\nDisallow: /\n", now=0.0)
    assert rc.get("c.test").state == "ready" and not rc.allowed("c.test", "http://c.test/")


def test_a_crawl_delay_over_the_maximum_skips_the_host():
    """Nutch's rule (fetcher.max.crawl.delay): a host asking a longer Crawl-delay than
    --max-crawl-delay is skipped, its URLs counted as crawl_delay_too_long; a shorter one is kept
    as the host's floor. Another rank's copy of the answer skips it there too."""
    rc = RobotsCache("abc-crawler/0.1", max_crawl_delay=30.0)
    rc.on_response("slow.test", 200, b"User-agent: *\nCrawl-delay: 45\n", 0.0)
    h = rc.get("slow.test")
    assert h.state == "dead" and h.reason == "crawl_delay_too_long" and h.crawl_delay == 45.0
    rc.on_response("ok.test", 200, b"User-agent: *\nCrawl-delay: 30\n", 0.0)
    assert rc.get("ok.test").state == "ready" and rc.get("ok.test").crawl_delay == 30.0
    other = RobotsCache("abc-crawler/0.1", max_crawl_delay=30.0)
    assert other.adopt("slow.test", 200, b"User-agent: *\nCrawl-delay: 45\n", 0.0)
    assert other.get("slow.test").state == "dead"
