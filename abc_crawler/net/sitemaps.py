"""Sitemaps (sitemaps.org protocol): where they come from and what one file lists.

Where from. The ``Sitemap:`` lines of every robots.txt a rank fetches, and
``/sitemap.xml`` of every seed's host (:func:`seed_sitemap_urls`). A sitemap
file is fetched like a page of its host (same politeness, robots.txt, phase
slots), by the rank that owns its URL, but it is not a page: it is not counted
as a request, not stored in the WARC file and not reported to rank 0, and the
URLs it lists are **not links** — no graph edge, no exchange volume (MV), no
message of Türk's count — they enter the frontier as seeds do (link depth 0),
through the same scope rules as links. Sitemap files themselves are subject to
the host-level scope (``--resolve``, ``--allowed-domains``), not to
``--url-filter``: a filter written for pages should not hide the site's list
of them. ``--no-sitemaps`` turns all of it off.

What one file lists (:func:`read_sitemap`), strict about the protocol's limits
and lenient about sloppy XML, like crawler-commons' ``SiteMapParser``:

* the body is decoded for its ``Content-Encoding`` and, when it is gzip data
  itself (``sitemap.xml.gz``), gunzipped — never beyond :data:`MAX_BYTES`
  (50 MiB, the protocol's limit): a larger file is refused whole
  (``too_large``);
* XML (``<urlset>`` of ``<url><loc>``, ``<sitemapindex>`` of
  ``<sitemap><loc>``; namespace or not; recovered when malformed; entities
  never expanded, no network) or plain text (one URL per line);
* at most :data:`MAX_URLS` (50,000) ``<loc>`` per file; the rest are counted
  (``over_limit``), as are ``<loc>`` values that are not absolute http(s)
  URLs (``bad_loc``);
* an index nests at most :data:`MAX_INDEX_DEPTH` levels (the protocol allows
  one; a deeper index is counted as ``too_deep``, not read).

The sitemaps' own rule that a file lists URLs of its own host and directory
only (crawler-commons' "strict" mode) is not applied: the crawl's scope rules
decide what is crawled, for sitemap URLs as for links.

Examples
--------
>>> r = read_sitemap(b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
...                  b'<url><loc> http://a.test/x </loc></url><url><loc>ftp://a.test/</loc></url></urlset>', None)
>>> r.kind, r.urls, r.sitemaps, dict(r.counts)
('urlset', ['http://a.test/x'], [], {'bad_loc': 1})
>>> read_sitemap(b"<sitemapindex><sitemap><loc>http://a.test/s1.xml.gz</loc></sitemap></sitemapindex>", None).sitemaps
['http://a.test/s1.xml.gz']
>>> seed_sitemap_urls(["http://a.test/x", "http://a.test/y", "https://b.test:8443/"])
['http://a.test/sitemap.xml', 'https://b.test:8443/sitemap.xml']
"""
from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass, field

from lxml import etree

from ..sched.limits import InflateError, inflate

__all__ = ["SitemapFile", "read_sitemap", "seed_sitemap_urls", "MAX_URLS", "MAX_BYTES", "MAX_INDEX_DEPTH"]

#: <loc> entries read from one file (sitemaps.org)
MAX_URLS = 50_000
#: largest file, uncompressed (sitemaps.org: 50 MB = 52,428,800 bytes)
MAX_BYTES = 52_428_800
#: sitemap index levels read below a sitemap named by robots.txt or a seed host (the protocol allows 1)
MAX_INDEX_DEPTH = 2


@dataclass
class SitemapFile:
    """What one sitemap file lists: ``kind`` is ``urlset``, ``sitemapindex``, ``text``, ``empty``
    or ``too_large``; ``counts`` what was skipped (``bad_loc``, ``over_limit``)."""

    kind: str
    urls: list[str] = field(default_factory=list)        # page URLs (<url><loc>, text lines)
    sitemaps: list[str] = field(default_factory=list)    # sitemap files (<sitemap><loc>)
    counts: Counter = field(default_factory=Counter)


def seed_sitemap_urls(seeds) -> list[str]:
    """``/sitemap.xml`` of every seed's origin (scheme, host, port), each once, in seed order."""
    out: list[str] = []
    seen: set[str] = set()
    for url in seeds:
        slash = url.find("/", url.find("://") + 3)
        origin = url if slash < 0 else url[:slash]
        if origin not in seen:
            seen.add(origin)
            out.append(origin + "/sitemap.xml")
    return out


def _absolute(loc: str) -> bool:
    low = loc[:8].lower()
    return low.startswith("http://") or low.startswith("https://")


def _decode(body: bytes, content_encoding: str | None, max_bytes: int) -> bytes | None:
    """The file's bytes: Content-Encoding undone, a gzip file gunzipped; None when over ``max_bytes``."""
    try:
        data = inflate(body, content_encoding, max_bytes)
        if data[:2] == b"\x1f\x8b":              # a .gz file (served as such, or gzip'd twice)
            data = inflate(data, "gzip", max_bytes)
    except InflateError as exc:
        if exc.kind == "decompression_bomb":
            return None
        raise
    return data if len(data) <= max_bytes else None


def read_sitemap(body: bytes, content_encoding: str | None, *, max_urls: int = MAX_URLS,
                 max_bytes: int = MAX_BYTES) -> SitemapFile:
    """What a fetched sitemap file lists (see the module docstring).

    Raises :class:`~abc_crawler.sched.limits.InflateError` for a body that cannot be
    decoded (``bad_content_encoding``, ``unsupported_content_encoding``).
    """
    data = _decode(body, content_encoding, max_bytes)
    if data is None:
        return SitemapFile("too_large")
    start = data[:3] == b"\xef\xbb\xbf" and 3 or 0
    head = data[start:start + 512].lstrip()
    if not head:
        return SitemapFile("empty")
    if head[:1] == b"<":
        return _read_xml(data, max_urls)
    return _read_text(data[start:], max_urls)


def _read_text(data: bytes, max_urls: int) -> SitemapFile:
    out = SitemapFile("text")
    for raw in data.decode("utf-8", errors="replace").splitlines():
        line = raw.strip()
        if not line:
            continue
        if not _absolute(line):
            out.counts["bad_loc"] += 1
        elif len(out.urls) >= max_urls:
            out.counts["over_limit"] += 1
        else:
            out.urls.append(line)
    return out


def _local(tag) -> str:
    if not isinstance(tag, str):
        return ""                                # comments, processing instructions
    return tag.rsplit("}", 1)[-1].lower()


def _read_xml(data: bytes, max_urls: int) -> SitemapFile:
    out = SitemapFile("empty")
    parser_kw = dict(events=("end",), recover=True, resolve_entities=False, no_network=True, huge_tree=False,
                     remove_comments=True, remove_pis=True)
    n = 0
    root_kind = ""
    try:
        for _, el in etree.iterparse(io.BytesIO(data), **parser_kw):
            name = _local(el.tag)
            if name != "loc":
                if name in ("url", "sitemap"):
                    el.clear()                   # keep memory flat over 50,000 entries
                elif name in ("urlset", "sitemapindex"):
                    root_kind = name
                continue
            parent = el.getparent()
            where = _local(parent.tag) if parent is not None else ""
            loc = (el.text or "").strip()
            if not loc or not _absolute(loc):
                out.counts["bad_loc"] += 1
                continue
            if n >= max_urls:
                out.counts["over_limit"] += 1
                continue
            n += 1
            (out.sitemaps if where == "sitemap" else out.urls).append(loc)
    except etree.LxmlError:
        out.counts["unparsable"] += 1            # what was read before the damage is kept
    if root_kind:
        out.kind = root_kind
    elif out.sitemaps or out.urls:
        out.kind = "sitemapindex" if out.sitemaps and not out.urls else "urlset"
    return out
