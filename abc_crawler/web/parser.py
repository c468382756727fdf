r"""Link extraction with lxml: every kind of link, with its kind kept.

:func:`extract_links` returns a page's references (resolved later against the
page's base URL) by kind, Heritrix's hop codes in brackets:

* navigation (``L``): ``<a>``/``<area>`` href, separated into followed links and
  ``rel=nofollow`` ones (a ``<meta name="robots">`` with ``nofollow`` or ``none``
  makes every one nofollow), and ``<link rel=canonical|alternate|next|prev>``
  (``related``);
* embeds, the page's requisites (``E``): ``<link>`` href of a stylesheet, icon,
  preload, modulepreload or manifest; ``img`` src and srcset; ``picture``/
  ``source``/``video``/``audio``/``track`` src and srcset, ``video`` poster;
  ``script`` src; ``iframe``/``frame`` src; ``embed`` src; ``object`` data;
  ``url()`` and ``@import`` in ``<style>`` blocks and ``style`` attributes;
* refresh (``R``): ``<meta http-equiv=refresh content="N; url=...">``.

``<base href>`` sets the base. CSS files (``text/css``) give their ``url()`` and
``@import`` references through :func:`css_links`; the ``Link`` and ``Refresh``
HTTP headers through :func:`header_links`. Only HTML, XHTML and CSS bodies are
parsed (:func:`parsed_kind`). The HTML parser recovers from malformed markup and
never touches the network.

Examples
--------
>>> p = extract_links(b'<base href="/d/"><a href="x.html">x</a><a rel="nofollow" href="y">y</a>')
>>> p.base, p.links, p.nofollow
('/d/', ['x.html'], ['y'])
>>> p = extract_links(b'<link rel=stylesheet href=s.css><img src=a.png srcset="b.png 2x, c.png 3x">'
...                   b'<div style="background: url(bg.png)"></div><meta http-equiv=Refresh content="0; URL=\'n.html\'">')
>>> p.embeds, p.refresh
(['s.css', 'a.png', 'b.png', 'c.png', 'bg.png'], ['n.html'])
>>> css_links(b'@import "base.css"; /* url(no.png) */ body { background: url( \'i.png\' ) }')
['base.css', 'i.png']
"""
from __future__ import annotations

import codecs
import re
import threading
from dataclasses import dataclass, field
from itertools import chain

from lxml import etree

__all__ = ["ParsedPage", "extract_links", "charset_of", "HTML_TYPES", "is_html", "is_css", "css_links",
           "header_links", "refresh_url", "srcset_urls", "NAV", "EMBED", "REDIRECT", "REFRESH", "KIND_NAMES",
           "HOP_CODES"]

#: content types parsed for links (XHTML is parsed by the same forgiving HTML parser)
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
CSS_TYPE = "text/css"

#: the kind of an edge (graph.npz ``edge_kind``, stats.json ``links_by_kind``): navigation (a link a
#: reader follows), embed (a requisite the page needs to render), an HTTP redirect, a refresh
#: (``<meta http-equiv=refresh>`` or the ``Refresh`` header)
NAV, EMBED, REDIRECT, REFRESH = 0, 1, 2, 3
KIND_NAMES = ("navigation", "embed", "redirect", "refresh")
#: Heritrix's hop code of each kind (a refresh is a redirect there)
HOP_CODES = ("L", "E", "R", "R")

_EMBED_RELS = frozenset({"stylesheet", "icon", "shortcut", "apple-touch-icon", "apple-touch-icon-precomposed",
                         "mask-icon", "preload", "modulepreload", "manifest"})
_NAV_RELS = frozenset({"canonical", "alternate", "next", "prev", "previous"})
#: elements whose ``src`` is a requisite
_SRC_TAGS = frozenset({"img", "script", "iframe", "frame", "embed", "source", "video", "audio", "track", "input"})
_SRCSET_TAGS = frozenset({"img", "source"})
#: Linear on any sheet: an unquoted URL stops at a "(" too, as CSS's url token does (otherwise every
#: ``url(`` of a run of them without a ")" scanned to the end of the sheet: 72 s for 160 KB), and the
#: quantifiers are possessive, so the white space after ``url(`` is not given back to be tried as
#: the white space before the ")" (``url(`` and 8,000 spaces: 127 ms, 4x for each doubling)
_CSS_URL = re.compile(rb"""url\(\s*+(?:"([^"]*+)"|'([^']*+)'|([^()"'\s]*+))\s*+\)|@import\s++(?:"([^"]*+)"|'([^']*+)')""",
                      re.I)
_CSS_COMMENT = re.compile(rb"/\*.*?(?:\*/|\Z)", re.S)
#: every style attribute's value, in document order (C-level: a regular expression over the body to
#: find out whether there is one cost 5x more, bench/parser_micro.py)
_STYLE_VALUES = etree.XPath("//@style", smart_strings=False)


_URL_PAREN_REF = re.compile(rb"url&(?:#0*40|#x0*28|lpar)")       # (in a lower-cased body)


def _may_have_style_urls(body: bytes) -> bool:
    """False when no ``style`` attribute of the page can hold a ``url()``: the body says ``style``,
    or ``url(`` with its ``(`` written or as a character reference (``url&#40;``, ``&#x28;``,
    ``&lpar;``), in no case (a ``u`` so written is not looked for). Not ``url`` alone, nor ``url&``:
    nearly every page has the word, and documentation says ``&lt;url&gt;``; on the corpus pages
    with ``<style>`` elements the walk then ran on 491 (``url``) or 23 (``url&``) of 495 pages
    instead of 5, +19 % on their ``extract_links`` with ``url``. libxml2's walk of every attribute for ``//@style`` costs 70–130 µs on a corpus
    page (30 KB), where 99.9 % of the pages say ``style`` (a stylesheet link is enough) and 1 %
    say ``url(``; this test 34 µs (one search of a lower-cased copy: four searches of the body for
    the case variants cost 100 µs, a regular expression 200; docs/BENCHMARKS.md, session 16). A
    body with a NUL byte (UTF-16 or UTF-32, whose bytes say nothing here) is always walked. Only
    pages parsed into a tree ask (:func:`_tree_walk`); the tree-less path reads every ``style``
    attribute as it goes (:class:`_StyleWalk`)."""
    if b"\x00" in body:
        return True
    low = body.lower()
    return b"style" in low and (b"url(" in low or (b"url&" in low and _URL_PAREN_REF.search(low) is not None))


def is_css(content_type: str) -> bool:
    """True for ``text/css`` (lower case, parameters dropped): parsed for ``url()`` and ``@import``."""
    return content_type == CSS_TYPE


def css_links(css: bytes | str) -> list[str]:
    """The ``url()`` and ``@import`` references of a style sheet (comments skipped), in order.
    ``@import url(x)`` is found as ``url(x)``; escapes are not undone (rare in URLs)."""
    if isinstance(css, str):
        css = css.encode("utf-8", "replace")
    if b"url" not in css.lower() and b"@import" not in css.lower():
        return []
    css = _CSS_COMMENT.sub(b" ", css)
    out = []
    for m in _CSS_URL.finditer(css):
        ref = next(g for g in m.groups() if g is not None).strip()
        if ref:
            out.append(ref.decode("utf-8", "replace"))
    return out


def srcset_urls(srcset: str) -> list[str]:
    """The image candidates' URLs of a ``srcset`` (HTML's parsing: a URL runs to whitespace; commas
    that end it are dropped; descriptors run to the next comma outside parentheses).

    >>> srcset_urls("a.png 1x, b.png 2x,c.png"), srcset_urls(" x,y.png 100w ,z.png")
    (['a.png', 'b.png', 'c.png'], ['x,y.png', 'z.png'])
    """
    out, i, n = [], 0, len(srcset)
    while i < n:
        while i < n and (srcset[i].isspace() or srcset[i] == ","):
            i += 1
        j = i
        while j < n and not srcset[j].isspace():
            j += 1
        url = srcset[i:j]
        if url.endswith(","):
            url = url.rstrip(",")
            i = j
        else:
            depth, i = 0, j
            while i < n and (depth or srcset[i] != ","):
                depth += srcset[i] == "("
                depth -= srcset[i] == ")" and depth > 0
                i += 1
        if url:
            out.append(url)
    return out


def refresh_url(content: str) -> str | None:
    """The URL of a refresh (``<meta http-equiv=refresh content=...>`` or the ``Refresh`` header):
    ``N; url=URL``, ``N, URL``, quotes allowed; None for a plain reload (no URL).

    >>> refresh_url("5; url=http://a.test/n"), refresh_url("0;URL='x.html'"), refresh_url("3"), refresh_url("1, y")
    ('http://a.test/n', 'x.html', None, 'y')
    """
    m = re.match(r"\s*[0-9.]*\s*[;,]?\s*(?:url\s*=\s*)?(.*)$", content, re.I | re.S)
    rest = m.group(1).strip() if m else ""
    if rest[:1] in ("'", '"'):
        q = rest[0]
        rest = rest[1:].split(q, 1)[0]
    return rest.strip() or None


def header_links(link: str | None, refresh: str | None) -> tuple[list[str], list[str], list[str]]:
    """``(embeds, navigation, refresh)`` of the ``Link`` (RFC 8288: ``<URL>; rel=...``, several
    comma-separated) and ``Refresh`` headers of an answer.

    >>> header_links('<s.css>; rel="stylesheet", </n>; rel=canonical, <p.js>; rel=preload; as=script', "0; url=/r")
    (['s.css', 'p.js'], ['/n'], ['/r'])
    """
    embeds: list[str] = []
    nav: list[str] = []
    if link:
        for m in re.finditer(r"<([^<>]*)>([^<]*)", link):     # ([^<>]: a run of "<" is linear)
            params = m.group(2)
            rel = re.search(r";\s*rel\s*=\s*(?:\"([^\"]*)\"|([^;,\s]*))", params, re.I)
            rels = set(((rel.group(1) or rel.group(2) or "") if rel else "").lower().split())
            ref = m.group(1).strip()
            if not ref:
                continue
            if rels & _EMBED_RELS:
                embeds.append(ref)
            elif rels & _NAV_RELS:
                nav.append(ref)
    target = refresh_url(refresh) if refresh else None
    return embeds, nav, [target] if target else []


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
    embeds: list[str] = field(default_factory=list)      # requisites, in document order
    related: list[str] = field(default_factory=list)     # <link rel=canonical|alternate|next|prev>
    refresh: list[str] = field(default_factory=list)     # <meta http-equiv=refresh> targets
    charset: str | None = None          # the page's encoding: a BOM's, the header's, its first <meta>'s


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


_NAV_TAGS = ("a", "area", "base", "meta", "link")
_TAGS = ("a", "area", "base", "meta", "link", "img", "source", "video", "audio", "track", "script", "iframe",
         "frame", "embed", "object", "style", "input")
_NAV_SET, _TAG_SET = frozenset(_NAV_TAGS), frozenset(_TAGS)


class _Walk:
    """What a page's elements give, element by element in document order: ``start(tag, attrib)``
    for each (``attrib`` a mapping of the element's attributes). It is the target of
    :func:`_sax_parser` (lxml calls it as libxml2 reads each start tag, and no tree is built)
    and the body of :func:`_tree_walk`'s loop over a parsed tree (:meth:`element`, the elements
    it asked for). A ``<style>`` element's text comes to :meth:`style_text` from the tree; the
    tree-less path notes where each one was met (:attr:`style_at`, the count of embeds before it)
    and reads their text from the bytes (:func:`_style_texts`: a target that is sent the text of
    every element costs as much as the tree), and the page's declared charsets
    (:attr:`charsets`), which say whether the bytes can be read so. ``style`` attributes are read
    by :class:`_StyleWalk`, or by the tree walk's XPath.

    ``start`` runs for every element of a page (520 on a corpus page, 90 of them links), so it
    does the least it can: the target's calls alone cost 420 µs of a corpus page's 540."""

    __slots__ = ("tags", "requisites", "style_at", "charsets", "anchors", "nofollow_at", "embeds", "style_embeds",
                 "related", "refresh", "base", "meta_nofollow")

    def reset(self, requisites: bool) -> "_Walk":
        self.tags = _TAG_SET if requisites else _NAV_SET
        self.requisites = requisites
        self.meta_nofollow = False
        self.style_at: list[int] = []          # per <style> element met: len(embeds) there
        self.charsets: list[str | None] = []   # <meta charset>, http-equiv Content-Type's charset
        self.anchors: list[str] = []           # every <a>/<area> href, in order
        self.nofollow_at: list[int] = []       # ... the indexes of those with rel=nofollow
        self.embeds: list[str] = []
        self.style_embeds: list[str] = []      # from style attributes (after the other embeds)
        self.related: list[str] = []
        self.refresh: list[str] = []
        self.base: str | None = None           # the first <base> with an href, even an empty one
        return self

    def start(self, tag, attrib) -> None:
        if tag in self.tags:
            self.element(tag, attrib)

    def element(self, tag, attrib) -> None:
        """One element whose tag is in :attr:`tags`."""
        if tag == "a" or tag == "area":
            href = attrib.get("href")
            if href:
                self.anchors.append(href)
                rel = attrib.get("rel")
                if rel and "nofollow" in rel.lower().split():
                    self.nofollow_at.append(len(self.anchors) - 1)
        elif tag in _SRC_TAGS:
            embeds = self.embeds
            src = attrib.get("src")
            if src and src.strip():
                if tag != "input" or (attrib.get("type") or "").strip().lower() == "image":
                    embeds.append(src.strip())
            if tag in _SRCSET_TAGS:
                srcset = attrib.get("srcset")
                if srcset:
                    embeds.extend(srcset_urls(srcset))
            elif tag == "video":
                poster = attrib.get("poster")
                if poster and poster.strip():
                    embeds.append(poster.strip())
        elif tag == "link":
            href = attrib.get("href")
            if href and href.strip():
                rels = set((attrib.get("rel") or "").lower().split())
                if rels & _EMBED_RELS:
                    if self.requisites:
                        self.embeds.append(href.strip())
                elif rels & _NAV_RELS:
                    self.related.append(href.strip())
        elif tag == "base":
            if self.base is None:
                self.base = attrib.get("href")
        elif tag == "meta":
            equiv = attrib.get("http-equiv")
            equiv = equiv.strip().lower() if equiv is not None else None
            charset = attrib.get("charset")
            if charset is not None:
                self.charsets.append(charset)
            if equiv == "content-type":
                content = attrib.get("content") or ""
                if "charset" in content.lower():       # its charset parameter (None: not one Python knows)
                    self.charsets.append(charset_of(content))
            if equiv == "refresh":
                target = refresh_url(attrib.get("content") or "")
                if target:
                    self.refresh.append(target)
            elif not self.meta_nofollow:
                name = attrib.get("name")
                if name is not None and name.translate(_ROBOTS_FOLD) == "robots":
                    content = attrib.get("content")
                    if content is not None:
                        tokens = {t.strip().lower() for t in content.split(",")}
                        if "nofollow" in tokens or "none" in tokens:
                            self.meta_nofollow = True
        elif tag == "style":
            self.style_at.append(len(self.embeds))
        elif tag == "object":
            data = attrib.get("data")
            if data and data.strip():
                self.embeds.append(data.strip())

    def empty(self) -> bool:
        """Nothing found (a parse that made no element at all looks the same from here)."""
        return not (self.anchors or self.embeds or self.style_embeds or self.related or self.refresh
                    or self.base is not None or self.meta_nofollow)

    def style_text(self, text: str | None) -> None:
        if text:
            self.embeds.extend(css_links(text))

    def close(self) -> None:
        """(lxml calls it when the parse ends; what it returns, the parse returns)"""

    def page(self) -> ParsedPage:
        page = ParsedPage()
        base = self.base
        if base is not None:
            page.base = base.strip() or None
        anchors = self.anchors
        if self.meta_nofollow:                         # every link is nofollow, in document order
            page.meta_nofollow = True
            page.nofollow = anchors
        elif not self.nofollow_at:
            page.links = anchors
        else:
            nf = set(self.nofollow_at)
            page.links = [h for i, h in enumerate(anchors) if i not in nf]
            page.nofollow = [anchors[i] for i in self.nofollow_at]
        page.embeds = self.embeds + self.style_embeds if self.style_embeds else self.embeds
        page.related, page.refresh = self.related, self.refresh
        return page


class _StyleWalk(_Walk):
    """:class:`_Walk` that reads ``url()`` in every element's ``style`` attribute, as the target of
    a parse for requisites."""

    __slots__ = ()

    def start(self, tag, attrib) -> None:
        if attrib:          # (an element without attributes has lxml's empty mapping: its get costs 0.6 µs)
            style = attrib.get("style")
            if style and "url" in style.lower():
                self.style_embeds.extend(css_links(style))
        if tag in self.tags:
            self.element(tag, attrib)


_LOCAL = threading.local()      # per thread: {(encoding, requisites): (its target parser, its walk)}


def _sax_parser(encoding: str | None, requisites: bool) -> tuple[etree.HTMLParser, _Walk]:
    """A parser whose target is a :class:`_StyleWalk` (requisites) or a :class:`_Walk` (lxml
    parsers and their targets are not shared between threads)."""
    parsers = getattr(_LOCAL, "parsers", None)
    if parsers is None:
        parsers = _LOCAL.parsers = {}
    hit = parsers.get((encoding, requisites))
    if hit is None:
        walk = (_StyleWalk() if requisites else _Walk()).reset(requisites)
        try:
            hit = (etree.HTMLParser(**_PARSER_OPTIONS, encoding=encoding, target=walk), walk)
        except LookupError:
            hit = _sax_parser(None, requisites)
        parsers[(encoding, requisites)] = hit
    return hit


def _tree_walk(body: bytes, encoding: str | None, requisites: bool) -> ParsedPage:
    """:func:`extract_links` over a parsed tree: a page with ``<style>`` elements (their text)."""
    try:
        root = etree.fromstring(body, _parser(encoding))
    except (etree.ParserError, ValueError):
        return ParsedPage(ok=False)
    if root is None:
        return ParsedPage(ok=False)
    walk = _Walk().reset(requisites)
    element = walk.element
    for el in _iter_document(root, *(_TAGS if requisites else _NAV_TAGS)):
        if el.tag == "style":
            walk.style_text(el.text)
        else:
            element(el.tag, el)        # (an element's own get() reads its attributes, without el.attrib's proxy)
    if requisites and _may_have_style_urls(body):     # style="..." attributes: url() in inline CSS
        for style in _STYLE_VALUES(root):
            if "url" in style.lower():
                walk.style_embeds.extend(css_links(str(style)))
    return walk.page()


#: a ``<style`` start tag where HTML's tokenizer ends the tag name (any case): every ``<style>``
#: element libxml2 makes begins so, when the page's bytes are ASCII's (:func:`_style_texts`)
_STYLE_OPEN = re.compile(rb"<style[\t\n\f\r />]", re.I)
#: a plain one, whole: attribute names of letters, digits and ``-_:.``, values quoted or bare; not
#: ``<style/>``, which libxml2 closes at once (HTML's tokenizer would not)
_STYLE_TAG = re.compile(rb"""<style(?:[\t\n\f\r ]++[a-z0-9_:.-]++(?:[\t\n\f\r ]*+=[\t\n\f\r ]*+"""
                        rb"""(?:"[^"]*+"|'[^']*+'|[^\t\n\f\r "'=<>`]++))?+)*+[\t\n\f\r ]*+>""", re.I)
#: the end of a style element's text (HTML's "appropriate end tag" of its raw text)
_STYLE_CLOSE = re.compile(rb"</style[\t\n\f\r />]", re.I)
#: the start of an XML declaration (read without copying the body)
_XML_DECL = re.compile(rb"\s*+<\?xml", re.I)
#: an XML declaration and its encoding (group 1; None: none declared, UTF-8)
_XML_ENCODING = re.compile(rb"""\s*+<\?xml(?:[^>?]*?encoding\s*=\s*["']([^"'>]*)["'])?[^>]*>""", re.I)
#: charsets (Python's names) in which a run of ASCII bytes is that ASCII text, as any byte of
#: 0x00-0x7f is: no shift states, no ASCII-range lead bytes. Trail bytes of the double-byte ones
#: may be ASCII letters, but never "<", and a text checked to be all ASCII has no lead byte.
_ASCII_SAFE = frozenset({
    "utf-8", "ascii", "cp1250", "cp1251", "cp1252", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257",
    "cp1258", "koi8-r", "koi8-u", "mac-roman", "cp874", "tis-620", "shift_jis", "cp932", "euc_jp",
    "euc_kr", "cp949", "gb2312", "gbk", "gb18030", "big5", "big5hkscs",
    *(f"iso8859-{i}" for i in range(1, 17) if i != 12)})


def _ascii_safe(name: str | None) -> bool:
    try:
        return name is not None and codecs.lookup(name.strip()).name in _ASCII_SAFE
    except (LookupError, ValueError):
        return False


def _style_texts(body: bytes, encoding: str | None, walk: _Walk) -> list[bytes] | None:
    """The text of each ``<style>`` element the tree-less parse met (``walk.style_at``), read from
    the bytes, or None when that cannot be sure to be what libxml2 read, and the tree decides.

    Sure when: the page's bytes are ASCII-compatible (the header's charset and every ``<meta>``
    declaration, and an XML declaration's, one of :data:`_ASCII_SAFE`; no NUL or byte-order mark); the
    body has as many ``<style`` tags as the parse met ``<style>`` elements, each whole and plain
    (:data:`_STYLE_TAG`), each text ending at its ``</style`` before the next one begins; and
    every text is ASCII (its CR LF and CR are read as LF, as libxml2 does). A ``<style`` that
    is text (in a comment, a script, another style's text) makes one too many, so the counts
    differ and the tree decides; where they agree each tag is an element's."""
    if b"\x00" in body or body[:3] == b"\xef\xbb\xbf":
        return None
    if encoding is not None and encoding not in _ASCII_SAFE:
        return None
    if _XML_DECL.match(body):                           # XHTML's declaration (libxml2's HTML parser ignores it)
        decl = _XML_ENCODING.match(body)
        if decl is None or (decl.group(1) is not None and not _ascii_safe(decl.group(1).decode("ascii", "replace"))):
            return None
    if not all(_ascii_safe(declared) for declared in walk.charsets):
        return None
    opens = [m.start() for m in _STYLE_OPEN.finditer(body)]
    if len(opens) != len(walk.style_at):
        return None
    texts = []
    for k, at in enumerate(opens):
        tag = _STYLE_TAG.match(body, at)
        if tag is None:
            return None
        close = _STYLE_CLOSE.search(body, tag.end())
        if close is None or (k + 1 < len(opens) and close.start() > opens[k + 1]):
            return None
        text = body[tag.end():close.start()]
        if not text.isascii():
            return None
        if b"\r" in text:                              # HTML's input stream: CR LF and CR are LF
            text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        texts.append(text)
    return texts


def extract_links(body: bytes, encoding: str | None = None, *, requisites: bool = True) -> ParsedPage:
    """References of a page body by kind (not yet joined with the page URL).

    ``encoding`` is the charset of the HTTP Content-Type header, which takes
    precedence over a ``<meta charset>`` in the page (HTML's encoding sniffing
    order); without it lxml uses the page's own declaration. ``requisites=False``
    leaves ``embeds`` empty (``--no-page-requisites``).

    A page is read as libxml2 parses it, without building its tree (lxml's parser target,
    :class:`_StyleWalk`): on corpus pages without ``<style>`` elements that is 28 % less CPU
    (743 → 538 µs a page) than the parse and a walk over the tree, whose building and freeing
    cost as much as the walk saves (docs/BENCHMARKS.md, session 17). The text of ``<style>``
    elements (CSS to read) is taken from the bytes where they can vouch for it
    (:func:`_style_texts`; every styled page of the corpus, 15–20 % less than its tree), else
    the page is parsed into a tree. The two give the same
    (tests/test_parser_paths.py) but on a page nested deeper than 256 elements: libxml2 stops
    building a tree there (what follows is lost, as before), and the tree-less path reads on, in
    linear time (100,000 nested ``<div>``: 72 ms).
    """
    if not body or not body.strip():
        return ParsedPage(ok=False)
    bom = body[:3] == b"\xef\xbb\xbf" or body[:2] in (b"\xff\xfe", b"\xfe\xff")
    if bom:
        encoding = None                        # a byte-order mark wins over the header
    parser, walk = _sax_parser(encoding, requisites)
    walk.reset(requisites)
    try:
        etree.fromstring(body, parser)
    except (etree.ParserError, ValueError):
        return ParsedPage(ok=False)
    page = None
    if walk.style_at:                          # <style> elements: their text from the bytes
        texts = _style_texts(body, encoding, walk)
        if texts is None:
            page = _tree_walk(body, encoding, requisites)
        else:
            embeds, merged, done = walk.embeds, [], 0     # each style's links where it was met
            for at, text in zip(walk.style_at, texts):
                merged += embeds[done:at]
                done = at
                if text:
                    merged += css_links(text)
            merged += embeds[done:]
            walk.embeds = merged
    elif walk.empty():                         # nothing found: was there an element at all? The tree says
        page = _tree_walk(body, encoding, requisites)
    page = page or walk.page()
    # the page's encoding, for its links' queries: a byte-order mark's, the header's, else the first
    # one the page declares (abc_crawler.web.urls.query_codec)
    page.charset = "utf-8" if bom else encoding or next((c for c in walk.charsets if c), None)
    return page
