"""Canonical URLs, their 64-bit fingerprints and host names.

The canonical form (documented in docs/ARCHITECTURE.md) is a pure function of the URL, so
every rank computes the same fingerprint and the same owner for a link:

1. the link is joined with its base and parsed by a WHATWG URL parser
   (``ada-url``): scheme and host lower-cased, IDNA applied, the default port
   dropped, ``.``/``..`` segments resolved, unsafe characters percent-encoded;
2. the fragment is dropped;
3. when a query or a percent sign is present, w3lib's ``canonicalize_url``
   sorts the query arguments and normalizes percent escapes.

Only ``http`` and ``https`` URLs are canonicalized; others are reported by
:func:`canonicalize` returning ``None``. URLs with user credentials are refused
too (a crawler must not send credentials it found in a page).

Examples
--------
>>> canonicalize("../b.html?z=1&a=2#top", "HTTP://Ex.TEST:80/dir/a.html")
'http://ex.test/b.html?a=2&z=1'
>>> canonicalize("mailto:x@y.test", "http://ex.test/") is None
True
>>> host_of("http://ex.test:8080/x")
'ex.test:8080'
"""
from __future__ import annotations

import codecs
import re
from functools import lru_cache

import ada_url
import xxhash

__all__ = ["canonicalize", "fingerprint", "host_of", "scheme_of", "UrlError", "query_codec", "encode_query"]

_xxh = xxhash.xxh3_64_intdigest


#: the C signatures :mod:`abc_crawler.web._linkpass` calls ada's functions with (as cffi names them)
_ADA_SIGNATURES = {"ada_parse_with_base": "void *(*)(char *, size_t, char *, size_t)",
                   "ada_is_valid": "_Bool(*)(void *)", "ada_get_href": "ada_string(*)(void *)",
                   "ada_free": "void(*)(void *)"}


def _compiled_join():
    """``ada_url.join_url`` compiled (:func:`abc_crawler.web._linkpass.join_url`: ada's C functions
    called straight, their addresses taken from ``ada_url``'s cffi module), or ``ada_url.join_url``
    itself where that module does not offer them with the signatures the compiled call expects
    (another ``ada_url`` may change its C interface: a function called with the wrong one would
    crash the process, so it is checked, not assumed)."""
    try:
        from ada_url._ada_wrapper import ffi, lib
        from . import _linkpass
    except ImportError:
        return ada_url.join_url
    try:
        fields = [(name, f.type.cname) for name, f in ffi.typeof("ada_string").fields]
        pointers = {name: ffi.addressof(lib, name) for name in _ADA_SIGNATURES}
        if (fields != [("data", "char *"), ("length", "size_t")]
                or any(ffi.typeof(p).cname != _ADA_SIGNATURES[name] for name, p in pointers.items())):
            return ada_url.join_url
        if not _linkpass.bound():
            _linkpass.bind_ada(*(int(ffi.cast("uintptr_t", pointers[name])) for name in _ADA_SIGNATURES))
        return _linkpass.join_url
    except (AttributeError, TypeError, ValueError, ffi.error):     # ffi.error: a type it does not know
        return ada_url.join_url



def canonicalize_url(url: str) -> str:
    """w3lib's ``canonicalize_url``, imported at its first use: ``w3lib.url`` imports
    ``urllib.request`` and with it ``http.client``, ``email`` and ``ssl`` (15 ms of every rank's
    start-up), and many crawls never meet a query or a percent sign before their first pages."""
    global canonicalize_url
    from w3lib.url import canonicalize_url as w3lib_canonicalize_url

    canonicalize_url = w3lib_canonicalize_url
    return w3lib_canonicalize_url(url)


class UrlError(ValueError):
    """A URL that cannot be canonicalized; ``reason`` says why."""

    def __init__(self, url: str, reason: str):
        super().__init__(f"{url!r}: {reason}")
        self.url = url
        self.reason = reason


def scheme_of(href: str) -> str:
    """Lower-cased scheme of an absolute URL, or '' for a relative reference."""
    head, sep, _ = href.partition(":")
    if not sep or not head or not head[0].isalpha():
        return ""
    for ch in head:
        if not (ch.isalnum() or ch in "+-."):
            return ""
    return head.lower()


def canonicalize_reference(href: str, base: str | None = None) -> str | None:
    """Canonical form of ``href`` (resolved against ``base``), or None if not http(s).

    Raises :class:`UrlError` for a URL that cannot be parsed or carries
    credentials. :func:`canonicalize` is this compiled (``abc_crawler.web._linkpass``).
    """
    href = href.strip()
    try:
        url = _join(base, href) if base is not None else _join(href, "")
    except ValueError:
        raise UrlError(href, "unparsable URL") from None
    if url.startswith("http://"):
        rest = url[7:]
    elif url.startswith("https://"):
        rest = url[8:]
    else:
        return None
    cut = url.find("#")
    if cut >= 0:
        url = url[:cut]
    slash = rest.find("/")
    authority = rest if slash < 0 else rest[:slash]
    if "@" in authority:
        raise UrlError(href, "URL carries credentials")
    if "?" in url or "%" in url:
        url = canonicalize_url(url)
    return url


#: Python's codec for the encodings the WHATWG Encoding Standard reads under another one's name
#: (its labels ``ascii``, ``latin1``, ``iso-8859-1`` are windows-1252, ``shift_jis`` is Windows'
#: superset, and so on)
_WHATWG_CODEC = {"ascii": "cp1252", "iso8859-1": "cp1252", "iso8859-9": "cp1254", "tis-620": "cp874",
                 "shift_jis": "cp932", "gb2312": "gbk", "euc_kr": "cp949"}


#: WHATWG labels Python's codecs do not know by that name
_WHATWG_LABELS = {"windows-31j": "cp932", "x-sjis": "cp932", "ms_kanji": "cp932", "iso-8859-8-i": "iso8859-8",
                  "x-mac-roman": "mac-roman", "x-mac-cyrillic": "mac-cyrillic", "x-gbk": "gbk",
                  "x-euc-jp": "euc_jp"}


@lru_cache(maxsize=64)
def query_codec(charset: str | None) -> str | None:
    """The codec a page in ``charset`` encodes its links' queries in, or None for UTF-8.

    A browser parses a page's links with the page's encoding (the WHATWG URL parser's *encoding*):
    the path and the fragment are always UTF-8, but the query of an ``http(s)`` URL is encoded in the
    page's encoding — UTF-8 for a UTF-8 or UTF-16 page — so a link ``?q=été`` on a windows-1252 page
    asks ``?q=%E9t%E9``. None also for a charset Python does not know (read as UTF-8).

    >>> query_codec("UTF-8"), query_codec("utf-16le"), query_codec("Windows-1252"), query_codec("latin1")
    (None, None, 'cp1252', 'cp1252')
    >>> query_codec("Shift_JIS"), query_codec("koi8-r"), query_codec("x-no-such"), query_codec("Windows-31J")
    ('cp932', 'koi8-r', None, 'cp932')
    """
    if not charset:
        return None
    label = charset.strip().lower()
    try:
        name = codecs.lookup(_WHATWG_LABELS.get(label, label)).name
    except (LookupError, ValueError):
        return None
    if name.startswith("utf"):                    # utf-8, utf-16(-le/-be), utf-32: UTF-8 queries
        return None
    return _WHATWG_CODEC.get(name, name)


#: ASCII bytes an encoded character may leave as they are in a query (the WHATWG special-query
#: percent-encode set is C0 controls, space, ``"``, ``#``, ``'``, ``<``, ``>`` and every byte above 0x7E)
_QUERY_KEEP = frozenset(b for b in range(0x21, 0x7F) if b not in b"\"#'<>")
_RUNS = re.compile(r"[\x00-\x7f]+|[^\x00-\x7f]+")


def encode_query(href: str, codec: str | None) -> str:
    """``href`` with the non-ASCII characters of its query percent-encoded in ``codec`` (the page's
    :func:`query_codec`), as a browser reads a link of that page; a character the codec cannot encode
    becomes its HTML character reference, percent-encoded (``%26%23NNNN%3B``), as a browser sends it.
    The rest is left to the URL parser (UTF-8). A ``href`` that is ASCII, or has no query, is
    returned as it is.

    >>> encode_query("/s?q=été#é", "cp1252"), encode_query("/s?q=日", "cp932"), encode_query("/s?q=日", "cp1252")
    ('/s?q=%E9t%E9#é', '/s?q=%93%FA', '/s?q=%26%2326085%3B')
    >>> encode_query("/café?q=1", "cp1252"), encode_query("/s?q=été", None)
    ('/café?q=1', '/s?q=été')
    """
    if codec is None or href.isascii():
        return href
    q = href.find("?")
    if q < 0:
        return href
    end = href.find("#", q)
    end = len(href) if end < 0 else end
    query = href[q + 1:end]
    if query.isascii():
        return href
    out = []
    for run in _RUNS.findall(query):
        if run.isascii():
            out.append(run)
            continue
        try:
            out.append(_percent(run.encode(codec)))     # a run at once (a stateful encoding shifts once)
        except UnicodeEncodeError:
            out.extend(_encode_char(ch, codec) for ch in run)
    return f"{href[:q + 1]}{''.join(out)}{href[end:]}"


def _percent(data: bytes) -> str:
    return "".join(chr(b) if b in _QUERY_KEEP else f"%{b:02X}" for b in data)


def _encode_char(ch: str, codec: str) -> str:
    """One character in ``codec``, percent-encoded; one it cannot encode as its HTML character
    reference, percent-encoded. A C1 control on a page read as ISO-8859-1 (which browsers read as
    windows-1252, as ``codec`` says) is the byte it was."""
    try:
        return _percent(ch.encode(codec))
    except UnicodeEncodeError:
        if codec == "cp1252" and 0x80 <= ord(ch) <= 0x9F:
            return f"%{ord(ch):02X}"
        return f"%26%23{ord(ch)}%3B"


def fingerprint(url: str) -> int:
    """64-bit fingerprint (xxh3) of a canonical URL."""
    return _xxh(url.encode())


def host_of(url: str) -> str:
    """Host (with a non-default port) of a canonical http(s) URL."""
    start = url.find("://") + 3
    end = url.find("/", start)
    return url[start:] if end < 0 else url[start:end]


_join = _compiled_join()
#: the link path runs compiled (:mod:`abc_crawler.web._linkpass`): ada's C functions were reachable
COMPILED = _join is not ada_url.join_url
if not COMPILED:                    # the Python path (and LinkClassifier.classify_reference)
    canonicalize = canonicalize_reference
else:
    from . import _linkpass

    # the query normalization through the module's name: ``canonicalize_url`` replaces itself by
    # w3lib's function at its first call
    _linkpass.bind_urls(UrlError, lambda url: canonicalize_url(url), host_of)
    canonicalize = _linkpass.canonicalize
