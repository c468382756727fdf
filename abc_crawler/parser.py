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
from itertools import chain

from lxml import etree

__all__ = ["ParsedPage", "extract_links", "charset_of", "HTML_TYPES", "is_html"]

#: content types parsed for links (XHTML is parsed by the same forgiving HTML parser)
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


def is_html(content_type: str) -> bool:
    """True for a media type (lower case, parameters dropped) whose pages are parsed for links.

    >>> is_html("text/html"), is_html("application/xhtml+xml"), is_html("application/xml")
    (True, True, False)
    """
    return content_type in HTML_TYPES

# One parser per encoding, configured once. ``collect_ids=False``: libxml2 does not build the
# table of id attributes (nothing here looks elements up by id; ~8 % of a parse on the corpus).
_PARSER_OPTIONS = dict(recover=True, no_network=True, remove_comments=True, remove_pis=True, collect_ids=False)
_PARSER = etree.HTMLParser(**_PARSER_OPTIONS)
_ROBOTS_FOLD = str.maketrans("ROBTS", "robts")     # XPath translate(@name, 'ROBTS', 'robts'), as before


def _iter_document(root, *tags):
    """``root.iter(*tags)`` over the whole document: libxml2's HTML parser puts what follows a
    stray ``</html>`` into further top-level elements after the root, which XPath's ``//``
    reaches and ``root.iter`` alone does not."""
    nxt = root.getnext()
    if nxt is None:
        return root.iter(*tags)
    tops = [root]
    while nxt is not None:
        tops.append(nxt)
        nxt = nxt.getnext()
    return chain.from_iterable(t.iter(*tags) for t in tops)


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
            p = etree.HTMLParser(**_PARSER_OPTIONS, encoding=encoding)
        except LookupError:
            p = _PARSER
        _PARSERS[encoding] = p
    return p


def extract_links(body: bytes, encoding: str | None = None, *, _get=etree._Element.get) -> ParsedPage:
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
    # One walk over the elements that matter, in document order (it replaced three XPath
    # walks: //base[@href][1]/@href, //meta[translate(@name,...)='robots']/@content and
    # //a[@href] | //area[@href]; the same results, tests/test_parser_robots.py).
    base_el = None
    meta_nofollow = False
    links: list[str] = []
    nofollow: list[str] = []
    # (``_get(el, name)``, the unbound method, costs less than ``el.get(name)``: the bound-method
    # lookup on an lxml element was a third of the walk, bench/parser_micro.py)
    for el in _iter_document(root, "a", "area", "base", "meta"):
        tag = el.tag
        if tag == "a" or tag == "area":
            href = _get(el, "href")
            if href:
                rel = _get(el, "rel")
                if rel and "nofollow" in rel.lower().split():
                    nofollow.append(href)
                else:
                    links.append(href)
        elif tag == "base":
            if base_el is None and _get(el, "href") is not None:
                base_el = el                          # the first <base> with an href, even an empty one
        elif not meta_nofollow:
            name = _get(el, "name")
            if name is not None and name.translate(_ROBOTS_FOLD) == "robots":
                content = _get(el, "content")
                if content is not None:
                    tokens = {t.strip().lower() for t in content.split(",")}
                    if "nofollow" in tokens or "none" in tokens:
                        meta_nofollow = True
    page = ParsedPage()
    if base_el is not None:
        page.base = base_el.get("href").strip() or None
    if meta_nofollow:                                  # every link is nofollow, in document order
        page.meta_nofollow = True
        nofollow = [h for el in _iter_document(root, "a", "area") if (h := _get(el, "href"))]
        links = []
    page.links, page.nofollow = links, nofollow
    return page
