"""Bodies the server generates on the fly for hostile routes (``"dynamic": NAME``).

Every generator is a pure function of the route's parameters and the request
target (plus a per-server counter for ``session``), so a test can compute what
the server sends.  Large bodies are never stored: ``big`` streams a repeating
block, the bombs are built once per server from a handful of identical deflate
blocks, ``nested``/``links``/``robots_huge`` are built once and kept in the
server's cache.

=================  =====================================  ==========================================================
``dynamic``        parameters (defaults)                  body
=================  =====================================  ==========================================================
``gzip_bomb``      ``inflated`` (100 MiB)                 ``Content-Encoding: gzip``; ~100 KB on the wire that
                                                          inflates to ``inflated`` bytes (an HTML start tag, then
                                                          spaces), sent whatever the request's Accept-Encoding says
``deflate_bomb``   ``inflated`` (100 MiB)                 the same as ``Content-Encoding: deflate`` (zlib stream)
``big``            ``size`` (100 MiB)                     ``size`` bytes of HTML paragraphs, streamed in 256 KiB
                                                          writes with backpressure (with ``"sized": false``: no
                                                          Content-Length, the end is the connection's close)
``nested``         ``depth`` (100000), ``tag`` (div)      ``<a href="/before.html">``, ``depth`` nested elements
                                                          with ``<a href="/deep.html">`` inside, then
                                                          ``<a href="/after.html">``
``links``          ``count`` (100000), ``prefix`` (/l/)   one page with ``count`` links ``PREFIX{i}.html``
``link_leaf``      ``count``, ``prefix``                  ``PREFIX{i}.html`` (``0 <= i < count``): a small page
                                                          without links; other targets: 404
``leaf``           none                                   a small page without links
``calendar``       ``prefix`` (/cal/)                     ``PREFIX{Y:04d}/{M:02d}/{D:02d}`` (any valid date, year
                                                          >= 1, no upper bound): links to the previous and the next
                                                          day; anything else under the prefix: 404
``repeat``         ``prefix`` (/a/), ``segment`` (a)      ``/a/``, ``/a/a/``, ``/a/a/a/`` ...: a page with the
                                                          relative link ``a/`` (one level deeper, forever)
``session``        ``prefix`` (/s/), ``links`` (5)        any ``PREFIX...`` page: ``links`` links
                                                          ``PREFIX p{j}.html?sid=FRESH``, a new session id per link
                                                          (per-server counter: never the same twice)
``garbage``        ``size`` (65536), ``seed`` (0)         ``size`` pseudo-random bytes (NULs, high bytes, no
                                                          structure), the same for the same seed
``robots_huge``    ``size`` (1 MiB)                       a robots.txt of at least ``size`` bytes: ``User-agent:
                                                          *``, ``Disallow: /early/``, thousands of ``Disallow:
                                                          /filler/N/`` lines, then ``Disallow: /late/`` at the end
=================  =====================================  ==========================================================
"""
from __future__ import annotations

import functools
import hashlib
import random
import re
import struct
import zlib
from typing import Callable, Iterator

__all__ = ["Body", "DYNAMIC", "bomb_bytes", "big_body_bytes", "robots_huge_text", "nested_page",
           "links_page", "calendar_neighbours", "BOMB_PREFIX", "MiB"]

MiB = 1 << 20
HTML_TYPE = "text/html; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"
BOMB_PREFIX = b"<!DOCTYPE html><html><head><title>bomb</title></head><body>\n"
_BLOCK = 1 << 20


class Body:
    """What a generator returns: status, content type, then ``data`` or ``chunks()`` of ``length`` bytes."""

    __slots__ = ("status", "ctype", "data", "chunks", "length", "headers")

    def __init__(self, status: int = 200, ctype: str | None = HTML_TYPE, data: bytes | None = b"",
                 chunks: Callable[[], Iterator[bytes]] | None = None, length: int | None = None,
                 headers: list[tuple[str, str]] | None = None):
        self.status = status
        self.ctype = ctype
        self.data = data
        self.chunks = chunks
        self.length = len(data) if length is None and data is not None else length
        self.headers = headers or []


# --------------------------------------------------------------------------- bombs

def _deflate_raw(inflated: int, check) -> tuple[bytes, int]:
    """Raw deflate of BOMB_PREFIX + spaces (``inflated`` bytes in all) and its ``check`` (zlib.crc32/adler32).

    After a full flush deflate starts from an empty history, so every 1 MiB
    block of spaces compresses to the same bytes: one block is compressed and
    repeated (100 MiB in a few milliseconds instead of half a second).
    """
    if inflated < len(BOMB_PREFIX):
        raise ValueError(f"inflated size {inflated} is smaller than the HTML prefix")
    rest = inflated - len(BOMB_PREFIX)
    n_blocks, tail = divmod(rest, _BLOCK)
    block = b" " * _BLOCK
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    parts = [co.compress(BOMB_PREFIX) + co.flush(zlib.Z_FULL_FLUSH)]
    if n_blocks:
        one = co.compress(block) + co.flush(zlib.Z_FULL_FLUSH)
        parts.append(one * n_blocks)
    parts.append(co.compress(b" " * tail) + co.flush(zlib.Z_FINISH))
    value = check(BOMB_PREFIX)
    for _ in range(n_blocks):
        value = check(block, value)
    if tail:
        value = check(block[:tail], value)
    return b"".join(parts), value


@functools.lru_cache(maxsize=8)
def bomb_bytes(kind: str, inflated: int = 100 * MiB) -> bytes:
    """The wire bytes of a ``gzip`` or ``deflate`` (zlib) bomb inflating to ``inflated`` bytes."""
    inflated = int(inflated)
    if kind == "gzip":
        raw, crc = _deflate_raw(inflated, zlib.crc32)
        header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"   # no name, mtime 0: deterministic
        return header + raw + struct.pack("<II", crc, inflated & 0xFFFFFFFF)
    if kind == "deflate":
        raw, adler = _deflate_raw(inflated, zlib.adler32)
        return b"\x78\xda" + raw + struct.pack(">I", adler)
    raise ValueError(f"unknown bomb kind {kind!r}")


def _bomb(kind: str):
    def gen(route: dict, target: str, ctx: dict) -> Body:
        inflated = int(route.get("inflated", 100 * MiB))
        key = ("bomb", kind, inflated)
        data = ctx.get(key)
        if data is None:
            data = ctx[key] = bomb_bytes(kind, inflated)
        return Body(200, HTML_TYPE, data, headers=[("Content-Encoding", kind)])
    return gen


# --------------------------------------------------------------------------- big bodies

_BIG_HEAD = b"<!DOCTYPE html>\n<html><head><title>big</title></head><body>\n"
_BIG_LINE = (b"<p>alpha beta gamma delta crawl graph rank page link host phase bucket frontier "
             b"session partition vertex edge weight volume message exchange superstep</p>\n")
_BIG_BLOCK = (_BIG_LINE * (256 * 1024 // len(_BIG_LINE) + 1))[: 256 * 1024]


def _big_chunks(size: int) -> Iterator[bytes]:
    head = _BIG_HEAD[:size]
    if head:
        yield head
    left = size - len(head)
    while left > 0:
        if left >= len(_BIG_BLOCK):
            yield _BIG_BLOCK
            left -= len(_BIG_BLOCK)
        else:
            yield _BIG_BLOCK[:left]
            left = 0


def big_body_bytes(size: int) -> bytes:
    """The whole body ``big`` streams for ``size`` (for tests; materializes it)."""
    return b"".join(_big_chunks(size))


def _big(route: dict, target: str, ctx: dict) -> Body:
    size = int(route.get("size", 100 * MiB))
    return Body(200, HTML_TYPE, None, chunks=lambda: _big_chunks(size), length=size)


# --------------------------------------------------------------------------- HTML oddities

def nested_page(depth: int = 100_000, tag: str = "div") -> bytes:
    o, c = f"<{tag}>".encode(), f"</{tag}>".encode()
    return (b"<!DOCTYPE html>\n<html><head><title>nested</title></head><body>\n"
            b"<a href=\"/before.html\">before</a>\n" + o * depth +
            b"<a href=\"/deep.html\">deep</a>" + c * depth +
            b"\n<a href=\"/after.html\">after</a>\n</body></html>\n")


def _nested(route: dict, target: str, ctx: dict) -> Body:
    depth, tag = int(route.get("depth", 100_000)), str(route.get("tag", "div"))
    key = ("nested", depth, tag)
    data = ctx.get(key)
    if data is None:
        data = ctx[key] = nested_page(depth, tag)
    return Body(200, HTML_TYPE, data)


def links_page(count: int = 100_000, prefix: str = "/l/") -> bytes:
    parts = [b"<!DOCTYPE html>\n<html><head><title>many links</title></head><body>\n"]
    pre = prefix.encode()
    parts += [b"<a href=\"" + pre + str(i).encode() + b".html\">" + str(i).encode() + b"</a>\n"
              for i in range(count)]
    parts.append(b"</body></html>\n")
    return b"".join(parts)


def _links(route: dict, target: str, ctx: dict) -> Body:
    count, prefix = int(route.get("count", 100_000)), str(route.get("prefix", "/l/"))
    key = ("links", count, prefix)
    data = ctx.get(key)
    if data is None:
        data = ctx[key] = links_page(count, prefix)
    return Body(200, HTML_TYPE, data)


def _leaf_page(target: str) -> bytes:
    t = target.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return (f"<!DOCTYPE html>\n<html><head><title>leaf</title></head>"
            f"<body><p>leaf page {t}: no links here.</p></body></html>\n").encode("utf-8", "replace")


def _leaf(route: dict, target: str, ctx: dict) -> Body:
    return Body(200, HTML_TYPE, _leaf_page(target))


def _link_leaf(route: dict, target: str, ctx: dict) -> Body | None:
    count, prefix = int(route.get("count", 100_000)), str(route.get("prefix", "/l/"))
    path = target.split("?", 1)[0]
    m = re.fullmatch(re.escape(prefix) + r"(0|[1-9][0-9]*)\.html", path)
    if not m or int(m.group(1)) >= count:
        return None
    return Body(200, HTML_TYPE, _leaf_page(target))


# --------------------------------------------------------------------------- traps

def _days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def calendar_neighbours(y: int, m: int, d: int) -> tuple[tuple[int, int, int] | None, tuple[int, int, int]]:
    """(previous day or None before 0001-01-01, next day) of a valid date; no upper bound on years."""
    if d < _days_in_month(y, m):
        nxt = (y, m, d + 1)
    elif m < 12:
        nxt = (y, m + 1, 1)
    else:
        nxt = (y + 1, 1, 1)
    if d > 1:
        prv = (y, m, d - 1)
    elif m > 1:
        prv = (y, m - 1, _days_in_month(y, m - 1))
    elif y > 1:
        prv = (y - 1, 12, 31)
    else:
        prv = None
    return prv, nxt


def _cal_path(prefix: str, ymd: tuple[int, int, int]) -> str:
    return f"{prefix}{ymd[0]:04d}/{ymd[1]:02d}/{ymd[2]:02d}"


def _calendar(route: dict, target: str, ctx: dict) -> Body | None:
    prefix = str(route.get("prefix", "/cal/"))
    path = target.split("?", 1)[0]
    m = re.fullmatch(re.escape(prefix) + r"(\d{4,9})/(\d\d)/(\d\d)", path)
    if not m:
        return None
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if y < 1 or not 1 <= mo <= 12 or not 1 <= d <= _days_in_month(y, mo) or _cal_path(prefix, (y, mo, d)) != path:
        return None
    prv, nxt = calendar_neighbours(y, mo, d)
    links = []
    if prv is not None:
        links.append(f"<a href=\"{_cal_path(prefix, prv)}\">previous day</a>")
    links.append(f"<a href=\"{_cal_path(prefix, nxt)}\">next day</a>")
    body = (f"<!DOCTYPE html>\n<html><head><title>Calendar {y:04d}-{mo:02d}-{d:02d}</title></head><body>\n"
            f"<h1>Events on {y:04d}-{mo:02d}-{d:02d}</h1><p>No events.</p>\n<p>{' | '.join(links)}</p>\n"
            "</body></html>\n")
    return Body(200, HTML_TYPE, body.encode())


def _repeat(route: dict, target: str, ctx: dict) -> Body | None:
    prefix = str(route.get("prefix", "/a/"))
    seg = str(route.get("segment", "a"))
    path = target.split("?", 1)[0]
    if not path.startswith(prefix):
        return None
    rest = path[len(prefix):]
    if rest and rest != f"{seg}/" * (len(rest) // (len(seg) + 1)):
        return None
    depth = 1 + len(rest) // (len(seg) + 1)
    body = (f"<!DOCTYPE html>\n<html><head><title>level {depth}</title></head><body>\n"
            f"<p>Level {depth}.</p>\n<p><a href=\"{seg}/\">one level deeper</a></p>\n</body></html>\n")
    return Body(200, HTML_TYPE, body.encode())


def _session(route: dict, target: str, ctx: dict) -> Body | None:
    prefix = str(route.get("prefix", "/s/"))
    n = int(route.get("links", 5))
    path = target.split("?", 1)[0]
    if not re.fullmatch(re.escape(prefix) + r"(index|p[0-9]+)\.html", path):
        return None
    counter = ctx.get(("session", prefix), 0)
    links = []
    for j in range(n):
        counter += 1
        sid = hashlib.blake2b(f"{prefix}|{counter}".encode(), digest_size=8).hexdigest()
        links.append(f"<a href=\"{prefix}p{j}.html?sid={sid}\">page {j}</a>")
    ctx[("session", prefix)] = counter
    body = ("<!DOCTYPE html>\n<html><head><title>session</title></head><body>\n<p>Welcome back.</p>\n<p>"
            + " | ".join(links) + "</p>\n</body></html>\n")
    return Body(200, HTML_TYPE, body.encode())


# --------------------------------------------------------------------------- robots and garbage

def _garbage(route: dict, target: str, ctx: dict) -> Body:
    size, seed = int(route.get("size", 65536)), int(route.get("seed", 0))
    key = ("garbage", size, seed)
    data = ctx.get(key)
    if data is None:
        data = ctx[key] = random.Random(seed).randbytes(size)
    return Body(200, route.get("type", "text/plain"), data)


def robots_huge_text(size: int = MiB) -> bytes:
    head = b"# a very large robots.txt\nUser-agent: *\nDisallow: /early/\n"
    lines = [head]
    n = len(head)
    i = 0
    while n < size:
        line = b"Disallow: /filler/%d/\n" % i
        lines.append(line)
        n += len(line)
        i += 1
    lines.append(b"Disallow: /late/\n")
    return b"".join(lines)


def _robots_huge(route: dict, target: str, ctx: dict) -> Body:
    size = int(route.get("size", MiB))
    key = ("robots_huge", size)
    data = ctx.get(key)
    if data is None:
        data = ctx[key] = robots_huge_text(size)
    return Body(200, TEXT_TYPE, data)


DYNAMIC: dict[str, Callable[[dict, str, dict], Body | None]] = {
    "gzip_bomb": _bomb("gzip"),
    "deflate_bomb": _bomb("deflate"),
    "big": _big,
    "nested": _nested,
    "links": _links,
    "link_leaf": _link_leaf,
    "leaf": _leaf,
    "calendar": _calendar,
    "repeat": _repeat,
    "session": _session,
    "garbage": _garbage,
    "robots_huge": _robots_huge,
}
