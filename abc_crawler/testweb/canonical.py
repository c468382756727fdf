"""Canonical URLs of the test web: what the generator writes links as and the manifest lists.

Host names and paths use only ``[a-z0-9/_.-]`` and queries are sorted ``k=v``
pairs, so ``http://HOST[:PORT]/path[?query]`` (port omitted when 80, no
fragment) is both what the server routes and the crawler's canonical form
(:mod:`abc_crawler.web.urls`, which agrees on these URLs: tested). This module is
the test web's own implementation, independent of the crawler's.

Examples
--------
>>> canonical("../d2/p7.html#top", "http://H1.test:8080/d1/p3.html")
'http://h1.test:8080/d2/p7.html'
>>> [canonical(h, "http://h1.test/a/") for h in ("?b=2&a=1", "javascript:x()")]
['http://h1.test/a/?a=1&b=2', None]
"""
from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

__all__ = ["netloc_for", "canonical", "canonical_reference", "split_url"]


def netloc_for(host: str, port: int) -> str:
    """``host`` or ``host:port`` (the port is omitted when it is 80)."""
    return host if port == 80 else f"{host}:{port}"


def canonical(href: str, base: str) -> str | None:
    """Canonical form of ``href`` resolved against ``base`` (None if not http(s)).

    ``base`` must be an absolute http(s) URL.  Scheme and host lower-cased,
    default port dropped, empty path -> ``/``, dot segments removed, fragment
    dropped, query arguments sorted.  RFC 3986 resolution, enough for the URLs
    this generator writes (paths in ``[a-z0-9/_.-]``); the crawler uses
    :mod:`abc_crawler.web.urls`, which agrees on them (tested).
    """
    h = href.strip()
    cut = h.find("#")
    if cut >= 0:
        h = h[:cut]
    m = _SCHEME.match(h)
    if m:
        scheme = m.group(1).lower()
        if scheme not in ("http", "https"):
            return None
        rest = h[m.end():]
        if not rest.startswith("//"):   # "http:path" (same scheme, relative): rare, be exact
            return canonical_reference(href, base)
        return _assemble(scheme, rest[2:])
    bscheme, _, brest = base.partition("://")
    bscheme = bscheme.lower()
    if h.startswith("//"):
        return _assemble(bscheme, h[2:])
    slash = brest.find("/")
    bnet = brest if slash < 0 else brest[:slash]
    bpath = "/" if slash < 0 else brest[slash:]
    bcut = bpath.find("#")
    if bcut >= 0:
        bpath = bpath[:bcut]
    if not h:
        return _assemble(bscheme, bnet + bpath)
    if h.startswith("/"):
        return _assemble(bscheme, bnet + h)
    bpath_only = bpath.split("?", 1)[0]
    if h.startswith("?"):
        return _assemble(bscheme, bnet + bpath_only + h)
    return _assemble(bscheme, bnet + bpath_only[: bpath_only.rfind("/") + 1] + h)


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def _remove_dot_segments(path: str) -> str:
    if "/." not in path:
        return path
    out: list[str] = []
    segs = path.split("/")
    for i, seg in enumerate(segs[1:], 1):
        last = i == len(segs) - 1
        if seg == ".":
            if last:
                out.append("")
        elif seg == "..":
            if out:
                out.pop()
            if last:
                out.append("")
        else:
            out.append(seg)
    return "/" + "/".join(out)


def _assemble(scheme: str, rest: str) -> str:
    """``scheme://`` + authority/path?query (no fragment) in canonical form."""
    slash = rest.find("/")
    q = rest.find("?")
    if q >= 0 and (slash < 0 or q < slash):
        slash = q
    net = (rest if slash < 0 else rest[:slash]).lower()
    tail = "/" if slash < 0 else rest[slash:]
    if tail.startswith("?"):
        tail = "/" + tail
    if "@" in net:
        net = net.rsplit("@", 1)[1]
    host, colon, port = net.rpartition(":")
    if colon and not host.endswith("]"):
        if port == "" or port == ("80" if scheme == "http" else "443"):
            net = host
    path, qm, query = tail.partition("?")
    path = _remove_dot_segments(path)
    if qm and query:
        pairs = sorted(tuple(x.split("=", 1)) if "=" in x else (x, "") for x in query.split("&") if x)
        query = "&".join(f"{k}={v}" for k, v in pairs)
        return f"{scheme}://{net}{path}?{query}" if query else f"{scheme}://{net}{path}"
    return f"{scheme}://{net}{path}"


def canonical_reference(href: str, base: str) -> str | None:
    """The same as :func:`canonical` through urllib: the reference the tests compare it with."""
    url = urljoin(base, href.strip())
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        return None
    host = (parts.hostname or "").lower()
    port = parts.port
    default = 80 if scheme == "http" else 443
    netloc = host if port in (None, default) else f"{host}:{port}"
    path = _remove_dot_segments(parts.path or "/")
    query = parts.query
    if query:
        pairs = sorted(tuple(p.split("=", 1)) if "=" in p else (p, "") for p in query.split("&") if p)
        query = "&".join(f"{k}={v}" for k, v in pairs)
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def split_url(url: str) -> tuple[str, str, str]:
    """(scheme, netloc, path-with-query) of a canonical URL."""
    scheme, rest = url.split("://", 1)
    slash = rest.find("/")
    return scheme, rest[:slash], rest[slash:]
