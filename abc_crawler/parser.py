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

from dataclasses import dataclass, field

from lxml import etree

__all__ = ["ParsedPage", "extract_links"]

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


def extract_links(body: bytes) -> ParsedPage:
    """Hrefs of a page body (not yet joined with the page URL)."""
    if not body or not body.strip():
        return ParsedPage(ok=False)
    try:
        root = etree.fromstring(body, _PARSER)
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
