"""Sitemap files (abc_crawler.net.sitemaps): what one file lists, the protocol's limits, hostile XML."""
from __future__ import annotations

import doctest
import gzip
import zlib
from xml.sax.saxutils import escape

import pytest
from hypothesis import given, settings, strategies as st

from abc_crawler.net import sitemaps
from abc_crawler.sched.limits import InflateError
from abc_crawler.net.sitemaps import MAX_BYTES, MAX_URLS, read_sitemap, seed_sitemap_urls

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def test_doctests():
    assert doctest.testmod(sitemaps).failed == 0


def _xml(locs, index=False, ns=True, pretty=True, extra=True) -> bytes:
    root, item = ("sitemapindex", "sitemap") if index else ("urlset", "url")
    sep = "\n  " if pretty else ""
    parts = [f'<?xml version="1.0" encoding="UTF-8"?>\n<{root}' + (f' xmlns="{NS}"' if ns else "") + ">"]
    for i, loc in enumerate(locs):
        more = f"<lastmod>2024-01-0{1 + i % 9}</lastmod><changefreq>daily</changefreq>" if extra else ""
        parts.append(f"{sep}<{item}>{sep}  <loc>{sep if pretty else ''}{escape(loc)}{sep if pretty else ''}</loc>{more}</{item}>")
    parts.append(f"\n</{root}>\n")
    return "".join(parts).encode()


_path = st.text(alphabet="abcxyz019/-_.~%&=?;,", max_size=30)
_loc = st.builds(lambda s, h, p: f"{s}://{h}/{p}", st.sampled_from(["http", "https", "HTTP"]),
                 st.sampled_from(["a.test", "b.test:8080", "xn--bcher-kva.example"]), _path)
_wrap = st.sampled_from(["plain", "gzip-file", "content-encoding", "both", "deflate"])


def _wrapped(data: bytes, how: str) -> tuple[bytes, str | None]:
    if how == "gzip-file":
        return gzip.compress(data), None
    if how == "content-encoding":
        return gzip.compress(data), "gzip"
    if how == "both":                            # a .gz file served with Content-Encoding: gzip as well
        return gzip.compress(gzip.compress(data)), "gzip"
    if how == "deflate":
        return zlib.compress(data), "deflate"
    return data, None


@settings(max_examples=300, deadline=None)
@given(st.lists(_loc, max_size=30), st.booleans(), st.booleans(), st.booleans(), _wrap)
def test_every_loc_is_read_in_order(locs, index, ns, pretty, how):
    body, enc = _wrapped(_xml(locs, index, ns, pretty), how)
    f = read_sitemap(body, enc)
    assert f.kind == ("sitemapindex" if index else "urlset")
    assert (f.sitemaps if index else f.urls) == locs
    assert (f.urls if index else f.sitemaps) == [] and not f.counts


@settings(max_examples=200, deadline=None)
@given(st.lists(_loc, max_size=30), _wrap, st.sampled_from(["\n", "\r\n"]))
def test_text_sitemaps(locs, how, nl):
    body, enc = _wrapped(("\ufeff" + nl.join(["", *locs, "not a url", "  "])).encode(), how)
    f = read_sitemap(body, enc)
    assert f.kind == "text" and f.urls == locs and f.counts["bad_loc"] == 1


def test_bad_locs_are_counted_not_listed():
    f = read_sitemap(_xml(["http://a.test/1", "ftp://a.test/2", "/relative", "javascript:x", "", "https://a.test/3"]), None)
    assert f.urls == ["http://a.test/1", "https://a.test/3"] and f.counts == {"bad_loc": 4}


def test_at_most_50000_urls_per_file():
    locs = [f"http://a.test/p{i}" for i in range(MAX_URLS + 7)]
    f = read_sitemap(_xml(locs, pretty=False, extra=False), None)
    assert MAX_URLS == 50_000
    assert f.urls == locs[:MAX_URLS] and f.counts["over_limit"] == 7
    f = read_sitemap(gzip.compress("\n".join(locs).encode()), None)
    assert len(f.urls) == MAX_URLS and f.counts["over_limit"] == 7


def test_at_most_50_mb_uncompressed():
    assert MAX_BYTES == 52_428_800
    small = _xml([f"http://a.test/p{i}" for i in range(100)])
    assert read_sitemap(small, None, max_bytes=len(small)).kind == "urlset"
    assert read_sitemap(small, None, max_bytes=len(small) - 1).kind == "too_large"
    assert read_sitemap(gzip.compress(small), None, max_bytes=len(small) - 1).kind == "too_large"
    # a real 50 MB bomb: 60 MB of blanks compress to kilobytes; refused without reading it all
    bomb = gzip.compress(b"<urlset>" + b" " * 60_000_000 + b"<url><loc>http://a.test/</loc></url></urlset>")
    assert len(bomb) < 200_000
    f = read_sitemap(bomb, None)
    assert f.kind == "too_large" and f.urls == []
    f = read_sitemap(bomb, "gzip")                     # the same file as a gzip'd .gz
    assert f.kind == "too_large"


def test_undecodable_bodies_raise_inflate_errors():
    with pytest.raises(InflateError):
        read_sitemap(b"\x1f\x8b not really gzip", None)
    with pytest.raises(InflateError):
        read_sitemap(b"<urlset/>", "br")


def test_sloppy_and_hostile_xml():
    # damaged XML: what comes before the damage is read
    f = read_sitemap(b"<urlset><url><loc>http://a.test/1</loc></url><url><loc>http://a.test/2</loc><url><<<", None)
    assert f.urls[:2] == ["http://a.test/1", "http://a.test/2"]
    # entities are never expanded: no file is read, no billion laughs
    xxe = (b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY e SYSTEM "file:///etc/hostname">]>'
           b"<urlset><url><loc>http://a.test/&e;</loc></url></urlset>")
    assert read_sitemap(xxe, None).urls == ["http://a.test/"]
    lol = b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">' + b"".join(
        b'<!ENTITY %c "%s">' % (98 + i, b"&%c;" % (97 + i) * 10) for i in range(8)) + b"]>"
    f = read_sitemap(lol + b"<urlset><url><loc>http://a.test/&i;</loc></url></urlset>", None)
    assert all(len(u) < 100 for u in f.urls)
    # no namespace, upper-case tags, comments and CDATA
    f = read_sitemap(b"<URLSET><!-- c --><URL><LOC><![CDATA[http://a.test/x?a=1&b=2]]></LOC></URL></URLSET>", None)
    assert f.urls == ["http://a.test/x?a=1&b=2"]
    assert read_sitemap(b"", None).kind == "empty" and read_sitemap(b"  \n ", None).kind == "empty"


def test_seed_sitemaps_one_per_origin():
    assert seed_sitemap_urls(["http://a.test/", "https://a.test/x", "http://a.test:81/", "http://a.test/y?z"]) == [
        "http://a.test/sitemap.xml", "https://a.test/sitemap.xml", "http://a.test:81/sitemap.xml"]
