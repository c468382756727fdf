"""A page's links are read as a browser reads them in the page's encoding (the WHATWG URL parser
with the document's encoding): the query of a link on a page that is not UTF-8 is percent-encoded
in the page's encoding, its path and fragment in UTF-8. The page's encoding is its byte-order
mark's, else the HTTP header's charset, else the first one the page declares."""
from __future__ import annotations

import pytest

from abc_crawler.crawl.counters import RankCounters
from abc_crawler.crawl.links import LinkClassifier
from abc_crawler.crawl.pages import PageProcessor
from abc_crawler.net.fetcher import Response
from abc_crawler.store.warc import RankWarc
from abc_crawler.web.ownership import HashAssignment
from abc_crawler.web.parser import extract_links
from abc_crawler.web.scope import Scope
from abc_crawler.web.urls import canonicalize, encode_query, query_codec

# what Chromium and Firefox request for these links (a browser's rule, not this code's)
BROWSER = [
    ("cp1252", "/search?q=été&x=1", "/search?q=%E9t%E9&x=1"),
    ("cp932", "/jq?q=日語", "/jq?q=%93%FA%8C%EA"),
    ("koi8-r", "/r?q=да", "/r?q=%C4%C1"),
    ("cp1252", "/s?q=日", "/s?q=%26%2326085%3B"),         # not in windows-1252: its character reference
    ("cp1252", "/café/x.html?q=é#frag-é", "/café/x.html?q=%E9#frag-é"),   # path and fragment: UTF-8
    ("cp1252", "/plain?q=a b", "/plain?q=a b"),           # ASCII: left to the URL parser
]


@pytest.mark.parametrize("codec, href, want", BROWSER)
def test_a_query_is_encoded_in_the_pages_encoding(codec, href, want):
    assert encode_query(href, codec) == want


def test_a_latin1_page_is_read_as_windows_1252_and_a_stateful_encoding_shifts_once(tmp_path):
    """A page labelled ISO-8859-1 is windows-1252 to a browser: its bytes 0x80-0x9F (€, curly quotes)
    are the same bytes in a query, not character references of C1 controls. ISO-2022-JP shifts once
    for a run of characters, as an encoder given the whole query does."""
    nav, _ = _page(tmp_path, b'<a href="/s?q=\x80uro\x92s">x</a>', "text/html; charset=iso-8859-1")
    assert nav == ["http://h.test/s?q=%80uro%92s"]
    assert encode_query("/s?q=日本", "iso2022_jp") == "/s?q=%1B$BF|K\\%1B(B"


def test_an_ascii_byte_of_an_encoded_character_is_left_as_the_whatwg_parser_leaves_it():
    """本 is 0x96 0x7B in Shift_JIS: "{" is not in the special-query percent-encode set; a quote is."""
    assert encode_query("/jq?q=本", "cp932") == "/jq?q=%96{"
    assert encode_query("/jq?q=é", "utf-16-le") == "/jq?q=%E9%00"      # (a codec query_codec never gives)


def test_the_codec_of_a_query_is_the_whatwg_encodings():
    assert [query_codec(c) for c in ("utf-8", "UTF8", "utf-16le", None, "", "no-such")] == [None] * 6
    # the WHATWG Encoding Standard reads these labels as windows-1252 and Windows' Shift_JIS
    assert [query_codec(c) for c in ("latin1", "ISO-8859-1", "us-ascii", "windows-1252")] == ["cp1252"] * 4
    assert query_codec("Shift_JIS") == "cp932" and query_codec("windows-1251") == "cp1251"
    # WHATWG labels Python's codecs know by another name
    assert [query_codec(c) for c in ("Windows-31J", "x-sjis", "iso-8859-8-i")] == ["cp932", "cp932", "iso8859-8"]


def test_the_pages_encoding_is_the_boms_the_headers_or_its_declared_one():
    meta = b'<meta charset="Shift_JIS"><a href="/x?q=1">x</a>'
    assert extract_links(meta).charset == "Shift_JIS"
    assert extract_links(meta, "cp1252").charset == "cp1252"                 # the header wins
    assert extract_links(b"\xef\xbb\xbf" + meta, "cp1252").charset == "utf-8"  # a byte-order mark wins over both
    equiv = b'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><a href="/x">x</a>'
    assert query_codec(extract_links(equiv).charset) == "koi8-r"
    assert extract_links(b'<a href="/x">x</a>').charset is None


def _page(tmp_path, body: bytes, content_type: str):
    c = RankCounters()
    links = LinkClassifier(Scope(), HashAssignment(1), 0, max_links_per_page=100, max_url_length=2048,
                           max_path_depth=32, max_segment_repeats=3, links=c.links)
    pages = PageProcessor(RankWarc(tmp_path, 0, enabled=False), links, c, max_redirects=5,
                          max_inflated_bytes=1 << 20)
    r = Response(key=None, url="http://h.test/d/p.html", status=200, status_line="HTTP/1.1 200 OK",
                 headers=[("Content-Type", content_type)], body=body, request_headers=[("Host", "h.test")])
    _, _, node, nav, _, _ = pages.outcome(r, 0)
    assert node
    return [t[0] for t in nav], [t[0] for t in pages.embeds]


def test_the_crawler_requests_what_a_browser_would(tmp_path):
    """Pages in windows-1252 (by their header), Shift_JIS (by their <meta>) and UTF-8: the same
    links, three different requests for the query; the path is UTF-8 in all three."""
    text = '<a href="/search?q=été">s</a><a href="/café.html?q=1">c</a><img src="i.png?t=é">'
    want = {"cp1252": ["http://h.test/search?q=%E9t%E9", "http://h.test/caf%C3%A9.html?q=1"],
            "utf-8": ["http://h.test/search?q=%C3%A9t%C3%A9", "http://h.test/caf%C3%A9.html?q=1"]}
    nav, embeds = _page(tmp_path, text.encode("cp1252"), "text/html; charset=windows-1252")
    assert nav == want["cp1252"] and embeds == ["http://h.test/d/i.png?t=%E9"]
    nav, embeds = _page(tmp_path, text.encode("utf-8"), "text/html; charset=utf-8")
    assert nav == want["utf-8"] and embeds == ["http://h.test/d/i.png?t=%C3%A9"]
    sjis = '<meta charset="shift_jis"><a href="/jq?q=日">j</a>'.encode("shift_jis")
    nav, _ = _page(tmp_path, sjis, "text/html")
    assert nav == ["http://h.test/jq?q=%93%FA"]
    # the UTF-8 form is what canonicalize gives a UTF-8 page's link: the two differ
    assert canonicalize("/search?q=été", "http://h.test/") == want["utf-8"][0]
