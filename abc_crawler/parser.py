"""Link extraction with lxml.

:func:`extract_links` returns the hrefs of ``<a>`` and ``<area>`` elements
(resolved later against the page's base URL), separated into followed links
and ``rel=nofollow`` ones; ``<base href>`` sets the base; a ``<meta
name="robots">`` with ``nofollow`` or ``none`` turns every link into a
nofollow link. The HTML parser recovers from malformed markup and never
touches the network.

Examples
--------
>>> p = extract_links(b'<base href="/d/"><a href="x.html">x</a><a rel="nofollow" href="y">y</a>')
>>> p.base, p.links, p.nofollow
('/d/', ['x.html'], ['y'])
"""
from __future__ import annotations

import codecs
from dataclasses import dataclass, field

from lxml import etree

__all__ = ["ParsedPage", "extract_links", "charset_of"]

_PARSER = etree.HTMLParser(recover=True, no_network=True, remove_comments=True, remove_pis=True)
_XP_BASE = etree.XPath("//base[@href][1]/@href")
_XP_META = etree.XPath("//meta[translate(@name,'ROBTS','robts')='robots']/@content")
_XP_LINKS = etree.XPath("//a[@href] | //area[@href]")


@dataclass
class ParsedPage:
    ok: bool = True                     # False when the body is not parseable HTML
    base: str | None = None
    links: list[str] = field(default_factory=list)
    nofollow: list[str] = field(default_factory=list)
    meta_nofollow: bool = False


_PARSERS: dict[str, etree.HTMLParser] = {}


def charset_of(content_type: str | None) -> str | None:
    """The charset parameter of a Content-Type header, if Python knows it (normalized name)."""
    if not content_type:
        return None
    for part in content_type.split(";")[1:]:
        k, _, v = part.partition("=")
        if k.strip().lower() == "charset":
            v = v.strip().strip("\"'")
            try:
                return codecs.lookup(v).name
            except (LookupError, ValueError):
                return None
    return None


def _parser(encoding: str | None) -> etree.HTMLParser:
    if encoding is None:
        return _PARSER
    p = _PARSERS.get(encoding)
    if p is None:
        try:
            p = etree.HTMLParser(recover=True, no_network=True, remove_comments=True, remove_pis=True,
                                 encoding=encoding)
        except LookupError:
            p = _PARSER
        _PARSERS[encoding] = p
    return p


def extract_links(body: bytes, encoding: str | None = None) -> ParsedPage:
    """Hrefs of a page body (not yet joined with the page URL).

    ``encoding`` is the charset of the HTTP Content-Type header, which takes
    precedence over a ``<meta charset>`` in the page (HTML's encoding sniffing
    order); without it lxml uses the page's own declaration.
    """
    if not body or not body.strip():
        return ParsedPage(ok=False)
    if body[:3] == b"\xef\xbb\xbf" or body[:2] in (b"\xff\xfe", b"\xfe\xff"):
        encoding = None                        # a byte-order mark wins over the header
    try:
        root = etree.fromstring(body, _parser(encoding))
    except (etree.ParserError, ValueError):
        return ParsedPage(ok=False)
    if root is None:
        return ParsedPage(ok=False)
    page = ParsedPage()
    base = _XP_BASE(root)
    if base:
        page.base = str(base[0]).strip() or None
    for content in _XP_META(root):
        tokens = {t.strip().lower() for t in str(content).split(",")}
        if "nofollow" in tokens or "none" in tokens:
            page.meta_nofollow = True
    links, nofollow = page.links, page.nofollow
    for el in _XP_LINKS(root):
        href = el.get("href")
        if not href:
            continue
        rel = el.get("rel")
        if page.meta_nofollow or (rel and "nofollow" in rel.lower().split()):
            nofollow.append(href)
        else:
            links.append(href)
    return page
