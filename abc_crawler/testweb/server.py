"""Embedded HTTP/1.1 server for the local web: many virtual hosts on one loopback port.

An asyncio :class:`asyncio.Protocol` server (uvloop is used when installed and
asked for; it is optional).  Keep-alive by default (HTTP/1.1; HTTP/1.0 with
``Connection: keep-alive``), ``Connection: close`` honoured, pipelined
requests answered in order, GET and HEAD (other methods: 405), every response
carries ``Content-Length`` (except hostile ones that say ``"sized": false``).  Virtual hosts are chosen by the ``Host`` header
(case-insensitive, port ignored; absolute-form request targets work too);
unknown hosts and paths answer 404.  Idle keep-alive connections are closed
after ``idle_timeout`` seconds.  Only loopback addresses (127.0.0.0/8) are
accepted.

What is served comes from a web directory (see :mod:`.generator` for the
``routes.json`` format): exact routes first (status, content type, file,
``Location``), then ``prefix_redirects``, then, when ``static_fallback`` is on
(the default without routes.json), any file under ``sites/<host>/``
(symlinks followed; a directory answers its ``index.html`` or a 301 to the
slash form; ``x.gz`` on disk is served decompressed as ``x``).  Bodies are
cached in memory up to ``cache_bytes``.

Usage::

    with TestWebServer("web", port=0, access_log="access.jsonl") as srv:
        ...  # http://127.0.0.1:{srv.port}/ with Host: h000.test

    srv = TestWebServer.from_manifest("web")   # at the manifest's addr:port

Access log
----------
One JSON object per line, one line per request, written when the response
has been handed to the kernel completely::

    {"conn": 3, "req": 0, "method": "GET", "host": "h000.test", "path": "/d1/p3.html",
     "status": 200, "bytes": 5120, "t_start": 1718000000.123456, "t_end": 1718000000.123789,
     "rank": -1}

``conn``: connection id (1, 2, ... in accept order), ``req``: index of the
request on that connection, ``host``: Host header lower-cased without port,
``path``: the request target as sent (path and query), ``bytes``: body bytes
sent (0 for HEAD), ``t_start``: ``time.time()`` when the first byte of the
request was read, ``t_end``: when the last byte of the response was written to
the socket, ``rank``: integer value of the ``X-ABC-Rank`` request header, -1
if absent or not an integer.  The log is flushed every 0.5 s and when the
server stops.

Hostile responses
-----------------
Any host can be switched to hostile behaviour in routes.json (the generator
does it for its hostile hosts, see :mod:`.generator`; a test can add it to
any web)::

    "modes": {"h007.test": {"robots": "5xx", "all": "drip"},
              "trap-calendar.test": {"prefix": {"/cal/": {"status": 200, "dynamic": "calendar"}}},
              "http-503.test": {"default": {"status": 503, "headers": {"Retry-After": "2"}}}}

=============  ==================================================================================
``modes`` key  what it does (for ``/robots.txt`` only ``robots`` applies)
=============  ==================================================================================
``robots``     the answer to ``/robots.txt``: a route, or ``"5xx"`` (503), ``"garbage"`` (64 KiB of
               random bytes), ``"huge"`` (> 1 MiB of rules), ``"redirect"`` (301 to
               ``/robots-moved.txt``), ``"stall"`` (headers, then nothing), ``"missing"`` (404), or a
               status code as a string
``prefix``     ``{path prefix: route}`` for targets without an exact route (longest prefix first)
``default``    the route for every target that would otherwise be 404
``all``        applied to every response of the host: with ``status`` it replaces the response,
               without it wraps it (transport, failures, encoding, headers); shortcuts ``"drip"``,
               ``"reset"``, ``"stall_headers"``, ``"stall_nothing"``, ``"flaky"`` (fail_first 2),
               ``"gzip"``, ``"deflate"``, or a status code as a string
=============  ==================================================================================

Route keys (exact routes and the routes above): besides ``status``, ``type``,
``file`` and ``location``:

======================  ==========================================================================
key                     meaning
======================  ==========================================================================
``type``: null or ""    no Content-Type header at all
``text``                an inline body (text/plain unless ``type`` says otherwise)
``headers``             ``{name: value}`` extra headers (``Retry-After`` ...)
``dynamic``             a generated body (bombs, 100 MiB streams, nested or link-heavy pages,
                        trap pages, garbage, huge robots.txt): the table in :mod:`.dynamic`;
                        its parameters are keys of the same route
``sized``: false        no Content-Length; ``Connection: close`` ends the body
``transport``           ``drip``: ``drip_bytes`` (4) every ``drip_interval`` (2.0) s, from the
                        body on, or from the status line with ``drip_headers``: true;
                        ``reset``: headers, ``reset_after`` body bytes (default half the body,
                        at most 1 MiB; -1: not even headers), then after ``reset_delay``
                        (0.05 s) a TCP RST (SO_LINGER 0 + abort);
                        ``stall_headers``: headers, then nothing; ``stall_nothing``: nothing;
                        both close the connection after ``stall_seconds`` (60)
``fail_first``          the first N requests of each target (per server run) answer
                        ``fail_status`` (503) with ``fail_headers`` ({"Retry-After": "1"})
``content_encoding``    ``gzip`` or ``deflate``: the body is compressed and labelled so
======================  ==========================================================================

Such responses are built per request (never cached); bodies are streamed in
256 KiB writes as fast as the socket takes them (the transport's write
buffer limit is 0, so ``pause_writing``/``resume_writing`` give
backpressure: a slow reader never makes the server hold a 100 MiB body); a
connection does not read its next request while one is in progress.  Their
access-log lines carry two more fields: ``"hostile"`` (the generator or
transport, e.g. ``"big+reset"``, ``"drip"``, ``"fail_first 1/2"``) and
``"end"``: ``"done"``, ``"reset"``, ``"stalled"`` (dropped by the server) or
``"closed"`` (the client went away first); ``bytes`` counts the body bytes
handed to the socket, and the line is written when the response ends.
Unknown ``modes`` keys, shortcuts, dynamic names or transports make the
server refuse to start (:class:`ServerError`).
"""
from __future__ import annotations

import asyncio
import email.utils
import gzip
import ipaddress
import json
import mimetypes
import os
import socket
import struct
import threading
import time
import zlib
from pathlib import Path
from urllib.parse import unquote

from .dynamic import DYNAMIC, Body

__all__ = ["TestWebServer", "WebSite", "Plan", "ServerError", "check_loopback", "run_server"]

_REASONS = {
    200: "OK", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
    307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request", 403: "Forbidden",
    404: "Not Found", 405: "Method Not Allowed", 410: "Gone", 414: "URI Too Long",
    429: "Too Many Requests", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
    501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
    505: "HTTP Version Not Supported",
}
MAX_HEAD = 65536
SERVER_NAME = b"abc-testweb"


class ServerError(RuntimeError):
    """The server cannot start (bad web directory, address in use, ...)."""


def check_loopback(addr: str) -> str:
    """``addr`` if it is an IPv4 loopback address ("localhost": 127.0.0.1), else :class:`ServerError`."""
    if addr == "localhost":
        return "127.0.0.1"
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        raise ServerError(f"address {addr!r} is not an IPv4 address") from None
    if ip.version != 4 or not ip.is_loopback:
        raise ServerError(f"address {addr} is not on loopback (127.0.0.0/8)")
    return addr


def _status_body(status: int) -> bytes:
    reason = _REASONS.get(status, "Status")
    return (f"<!DOCTYPE html>\n<html><head><title>{status} {reason}</title></head>"
            f"<body><h1>{status} {reason}</h1></body></html>\n").encode()


def _head(status: int, ctype: str | None, length: int | None, location: str | None = None,
          extra: str = "") -> bytes:
    h = f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\nServer: abc-testweb\r\n"
    if ctype:
        h += f"Content-Type: {ctype}\r\n"
    if length is not None:   # None: no Content-Length (the body ends when the connection closes)
        h += f"Content-Length: {length}\r\n"
    if location is not None:
        h += f"Location: {location}\r\n"
    return (h + extra).encode("latin-1", "replace")


def _guess_type(name: str) -> str:
    t, _ = mimetypes.guess_type(name)
    if t is None:
        return "application/octet-stream"
    if t.startswith("text/") or t in ("application/javascript", "application/json"):
        return t + "; charset=utf-8"
    return t


class Plan:
    """A response that is not one plain byte string: generated, streamed, dripped, cut or stalled.

    ``head`` is the status line and headers without ``Date``/``Connection``
    and the final blank line (as for plain responses); the body is ``data``
    or, when that is None, ``chunks()`` (an iterator of bytes) of ``length``
    bytes.  ``sized`` False: no Content-Length, the connection closes after the
    body.  ``transport``: ``normal``, ``drip``, ``reset``, ``stall_headers``,
    ``stall_nothing`` with its options in ``opts``; ``note`` names the plan in
    the access log (``"hostile"`` field).
    """

    __slots__ = ("status", "head", "data", "chunks", "length", "sized", "transport", "opts", "note")

    def __init__(self, status, head, data, chunks=None, length=0, sized=True, transport="normal",
                 opts=None, note="route"):
        self.status, self.head, self.data, self.chunks = status, head, data, chunks
        self.length, self.sized, self.transport = length, sized, transport
        self.opts = opts or {}
        self.note = note

    def body_iter(self, limit: int | None = None):
        """The body in pieces of at most 256 KiB (at most ``limit`` bytes)."""
        left = self.length if limit is None else min(limit, self.length)
        if self.data is not None:
            mv = memoryview(self.data)
            for i in range(0, left, 1 << 18):
                yield mv[i:min(i + (1 << 18), left)]
            return
        for chunk in self.chunks():
            if left <= 0:
                return
            if len(chunk) > left:
                chunk = chunk[:left]
            left -= len(chunk)
            yield chunk


TRANSPORTS = ("normal", "drip", "reset", "stall_headers", "stall_nothing")
_WRAP_KEYS = {"transport", "drip_bytes", "drip_interval", "drip_headers", "reset_after", "reset_delay",
              "stall_seconds", "fail_first", "fail_status", "fail_headers", "content_encoding"}
_PLAIN_KEYS = {"status", "type", "file", "location"}
_MODE_KEYS = {"robots", "prefix", "default", "all"}

# shortcuts accepted in routes.json "modes" for "robots" and "all"
ROBOTS_SHORTCUTS = {
    "5xx": {"status": 503},
    "garbage": {"status": 200, "type": "text/plain", "dynamic": "garbage", "size": 65536},
    "huge": {"status": 200, "type": "text/plain; charset=utf-8", "dynamic": "robots_huge", "size": 1 << 20},
    "redirect": {"status": 301, "location": "/robots-moved.txt"},
    "stall": {"status": 200, "type": "text/plain; charset=utf-8", "text": "User-agent: *\nDisallow:\n",
              "transport": "stall_headers"},
    "missing": {"status": 404},
}
ALL_SHORTCUTS = {
    "drip": {"transport": "drip"},
    "reset": {"transport": "reset"},
    "stall_headers": {"transport": "stall_headers"},
    "stall_nothing": {"transport": "stall_nothing"},
    "flaky": {"fail_first": 2},
    "gzip": {"content_encoding": "gzip"},
    "deflate": {"content_encoding": "deflate"},
}


def _shortcut(value, table: dict, what: str) -> dict:
    if isinstance(value, dict):
        return value
    v = str(value)
    if v in table:
        return dict(table[v])
    if v.isdigit() and 100 <= int(v) <= 599:
        return {"status": int(v)}
    raise ServerError(f"routes.json: unknown {what} mode {value!r}")


def _check_route(route, where: str) -> None:
    if not isinstance(route, dict):
        raise ServerError(f"routes.json: {where}: a route must be an object")
    dyn = route.get("dynamic")
    if dyn is not None and dyn not in DYNAMIC:
        raise ServerError(f"routes.json: {where}: unknown dynamic body {dyn!r} (known: {', '.join(DYNAMIC)})")
    tr = route.get("transport", "normal")
    if tr not in TRANSPORTS:
        raise ServerError(f"routes.json: {where}: unknown transport {tr!r} (known: {', '.join(TRANSPORTS)})")
    ce = route.get("content_encoding")
    if ce is not None and ce not in ("gzip", "deflate"):
        raise ServerError(f"routes.json: {where}: content_encoding must be gzip or deflate")


def _is_plain(route: dict) -> bool:
    return route.keys() <= _PLAIN_KEYS and route.get("type", "x") not in (None, "")


def _patch_head(head: bytes, length: int | None, add: list[tuple[str, str]], drop=(b"content-length",)) -> bytes:
    """``head`` with its Content-Length replaced by ``length`` (None: removed) and headers ``add`` appended."""
    lines = head.split(b"\r\n")
    keep = [lines[0]] + [ln for ln in lines[1:] if ln and ln.split(b":", 1)[0].strip().lower() not in drop]
    if length is not None:
        keep.append(b"Content-Length: %d" % length)
    keep += [f"{k}: {v}".encode("latin-1", "replace") for k, v in add]
    return b"\r\n".join(keep) + b"\r\n"


class WebSite:
    """The routing table of a web directory, and the responses it gives.

    ``respond(host, target)`` returns ``(status, head, body)`` where ``head``
    is the status line and headers without ``Date``/``Connection`` and the
    final blank line; ``body`` is bytes, or a :class:`Plan` for hostile and
    generated responses (never cached).
    """

    def __init__(self, web_dir, cache_bytes: int = 256 << 20):
        self.dir = Path(web_dir)
        if not self.dir.is_dir():
            raise ServerError(f"{web_dir}: not a directory")
        self.sites = self.dir / "sites"
        routes_file = self.dir / "routes.json"
        routes: dict = {}
        if routes_file.exists():
            try:
                routes = json.loads(routes_file.read_text())
            except (OSError, ValueError) as exc:
                raise ServerError(f"{routes_file}: unreadable routes ({exc})") from None
        self.static = bool(routes.get("static_fallback", True))
        self.routes: dict[str, dict] = {h.lower(): v for h, v in routes.get("hosts", {}).items()}
        self.prefixes: dict[str, list] = {
            h.lower(): sorted(v.items(), key=lambda kv: -len(kv[0]))
            for h, v in routes.get("prefix_redirects", {}).items()}
        self.modes: dict[str, dict] = {}
        for h, m in (routes.get("modes") or {}).items():
            self.modes[h.lower()] = self._load_mode(h, m)
        for h, rs in self.routes.items():
            for t, r in rs.items():
                if not _is_plain(r):
                    _check_route(r, f"{h}{t}")
        self.hosts = set(self.routes) | set(self.prefixes) | set(self.modes)
        if self.sites.is_dir():
            self.hosts |= {p.name.lower() for p in self.sites.iterdir() if p.is_dir()}
        self.cache: dict[tuple[str, str], tuple[int, bytes, bytes]] = {}
        self.cache_left = cache_bytes
        self.ctx: dict = {}                    # generated bodies and counters (dynamic.py)
        self.hits: dict[tuple[str, str], int] = {}   # requests per (host, target), for fail_first
        self._404 = (404, _head(404, "text/html; charset=utf-8", len(_status_body(404))), _status_body(404))

    @staticmethod
    def _load_mode(host: str, m) -> dict:
        if not isinstance(m, dict):
            raise ServerError(f"routes.json: modes.{host} must be an object")
        unknown = set(m) - _MODE_KEYS
        if unknown:
            raise ServerError(f"routes.json: modes.{host}: unknown key(s) {', '.join(sorted(unknown))}"
                              f" (known: {', '.join(sorted(_MODE_KEYS))})")
        out: dict = {}
        if "robots" in m:
            out["robots"] = _shortcut(m["robots"], ROBOTS_SHORTCUTS, "robots")
            _check_route(out["robots"], f"modes.{host}.robots")
        if "all" in m:
            out["all"] = _shortcut(m["all"], ALL_SHORTCUTS, "all")
            _check_route(out["all"], f"modes.{host}.all")
        if "default" in m:
            _check_route(m["default"], f"modes.{host}.default")
            out["default"] = m["default"]
        prefixes = m.get("prefix") or {}
        for p, r in prefixes.items():
            _check_route(r, f"modes.{host}.prefix[{p}]")
        out["prefix"] = sorted(prefixes.items(), key=lambda kv: -len(kv[0]))
        return out

    def respond(self, host: str, target: str) -> tuple[int, bytes, "bytes | Plan"]:
        key = (host, target)
        r = self.cache.get(key)
        if r is not None:
            return r
        if host in self.modes:
            return self._moded(host, target)
        r = self._build(host, target)
        if type(r[2]) is bytes:
            size = len(r[2]) + len(r[1]) + 100
            if size <= self.cache_left:
                self.cache[key] = r
                self.cache_left -= size
        return r

    def _exact(self, host: str, target: str) -> dict | None:
        routes = self.routes.get(host)
        if routes is None:
            return None
        route = routes.get(target)
        if route is None and "?" not in target and "%" in target:
            route = routes.get(unquote(target))
        return route

    def _build(self, host: str, target: str) -> tuple:
        if host not in self.hosts:
            return self._404
        route = self._exact(host, target)
        if route is not None:
            return self._from_route(host, target, route)
        path = target.split("?", 1)[0]
        for prefix, dest in self.prefixes.get(host, ()):
            if path.startswith(prefix):
                loc = dest + target[len(prefix):]
                body = _status_body(301)
                return 301, _head(301, "text/html; charset=utf-8", len(body), loc), body
        if self.static:
            return self._static(host, target)
        return self._404

    def _moded(self, host: str, target: str) -> tuple:
        """A host with a ``modes`` entry (see the module docstring)."""
        m = self.modes[host]
        path = target.split("?", 1)[0]
        if path == "/robots.txt":
            rr = m.get("robots")
            return self._rich(host, target, rr) if rr is not None else self._build(host, target)
        allr = m.get("all")
        if allr is not None and "status" in allr:
            return self._rich(host, target, allr)
        route = self._exact(host, target)
        if route is None:
            for prefix, pr in m["prefix"]:
                if path.startswith(prefix):
                    route = pr
                    break
        if route is not None:
            res = self._from_route(host, target, route)
        else:
            res = self._build(host, target)
            if res is self._404 and "default" in m:
                res = self._rich(host, target, m["default"])
        if allr is not None:
            res = self._wrap(host, target, res, allr)
        return res

    def _from_route(self, host: str, target: str, route: dict) -> tuple:
        if not _is_plain(route):
            return self._rich(host, target, route)
        status = int(route.get("status", 200))
        ctype = route.get("type")
        f = route.get("file")
        if f is not None:
            try:
                body = (self.sites / host / f).read_bytes()
            except OSError:
                return self._404
            ctype = ctype or _guess_type(f)
        else:
            body = _status_body(status)
            ctype = "text/html; charset=utf-8"
        return status, _head(status, ctype, len(body), route.get("location")), body

    def _rich(self, host: str, target: str, route: dict) -> tuple:
        """A route with hostile or generated parts: always a :class:`Plan`."""
        status = int(route.get("status", 200))
        extra = [(str(k), str(v)) for k, v in (route.get("headers") or {}).items()]
        note = route.get("dynamic") or "route"
        dyn = route.get("dynamic")
        if dyn is not None:
            b = DYNAMIC[dyn](route, target, self.ctx)
            if b is None:
                return self._404
            if "status" in route:
                b.status = status
        elif "text" in route:
            b = Body(status, "text/plain; charset=utf-8", str(route["text"]).encode())
        elif route.get("file") is not None:
            f = route["file"]
            try:
                data = (self.sites / host / f).read_bytes()
            except OSError:
                return self._404
            b = Body(status, _guess_type(f), data)
        else:
            b = Body(status, "text/html; charset=utf-8", _status_body(status))
        if "type" in route:
            b.ctype = route["type"] or None     # null or "": no Content-Type header
        sized = bool(route.get("sized", True))
        head = _head(b.status, b.ctype, b.length if sized else None, route.get("location"),
                     "".join(f"{k}: {v}\r\n" for k, v in b.headers + extra))
        plan = Plan(b.status, head, b.data, b.chunks, b.length, sized, note=note)
        wrap = {k: v for k, v in route.items() if k in _WRAP_KEYS}
        return self._wrap(host, target, (b.status, head, plan), wrap) if wrap else (b.status, head, plan)

    def _wrap(self, host: str, target: str, res: tuple, w: dict) -> tuple:
        """Apply the transport/failure/encoding keys of ``w`` to a response."""
        status, head, body = res
        plan = body if isinstance(body, Plan) else Plan(status, head, body, None, len(body), note="wrap")
        extra = [(str(k), str(v)) for k, v in (w.get("headers") or {}).items()] if "status" not in w else []
        ff = int(w.get("fail_first", 0))
        if ff > 0:
            key = (host, target)
            n = self.hits.get(key, 0) + 1
            self.hits[key] = n
            if n <= ff:
                fs = int(w.get("fail_status", 503))
                fb = _status_body(fs)
                fh = "".join(f"{k}: {v}\r\n" for k, v in (w.get("fail_headers") or {"Retry-After": "1"}).items())
                fhead = _head(fs, "text/html; charset=utf-8", len(fb), None, fh)
                return fs, fhead, Plan(fs, fhead, fb, None, len(fb), note=f"fail_first {n}/{ff}")
        ce = w.get("content_encoding")
        if ce is not None:
            raw = plan.data if plan.data is not None else b"".join(bytes(c) for c in plan.body_iter())
            enc = gzip.compress(raw, mtime=0) if ce == "gzip" else zlib.compress(raw)
            plan = Plan(plan.status, plan.head, enc, None, len(enc), plan.sized, note=plan.note)
            extra.append(("Content-Encoding", ce))
        if ce is not None or extra:
            plan.head = _patch_head(plan.head, plan.length if plan.sized else None, extra)
        tr = w.get("transport")
        if tr is not None:
            plan.transport = tr
            plan.opts = {k: w[k] for k in ("drip_bytes", "drip_interval", "drip_headers", "reset_after",
                                            "reset_delay", "stall_seconds") if k in w}
            plan.note = tr if plan.note in ("route", "wrap") else f"{plan.note}+{tr}"
        return plan.status, plan.head, plan

    def _static(self, host: str, target: str) -> tuple[int, bytes, bytes]:
        path, _, query = target.partition("?")
        if not path.startswith("/"):
            return self._404
        segs = unquote(path).split("/")[1:]
        if any(s in ("..", ".") or "\0" in s for s in segs):
            return self._404
        fs = self.sites / host
        for s in segs[:-1]:
            fs = fs / s
        name = segs[-1] if segs else ""
        if name:
            fs = fs / name
        try:
            if fs.is_dir():
                if not path.endswith("/"):
                    loc = path + "/" + (f"?{query}" if query else "")
                    body = _status_body(301)
                    return 301, _head(301, "text/html; charset=utf-8", len(body), loc), body
                fs = fs / "index.html"
            if fs.is_file():
                body = fs.read_bytes()
                return 200, _head(200, _guess_type(fs.name), len(body)), body
            gz = fs.with_name(fs.name + ".gz")
            if gz.is_file():
                body = gzip.decompress(gz.read_bytes())
                return 200, _head(200, _guess_type(fs.name), len(body)), body
        except (OSError, EOFError, gzip.BadGzipFile):
            pass
        return self._404


class _Core:
    """The server proper; runs inside one asyncio event loop."""

    def __init__(self, site: WebSite, addr: str, port: int, access_log=None, idle_timeout: float = 60.0,
                 latency: float = 0.0):
        self.site = site
        self.latency = latency     # seconds every response is held back (a server that takes time)
        self.addr, self.port = addr, port
        self.idle_timeout = idle_timeout
        self.log_path = access_log
        self.log = open(access_log, "a", buffering=1 << 16) if access_log else None
        self.conns: set[_Conn] = set()
        self.next_cid = 0
        self.requests = 0
        self.by_status: dict[int, int] = {}
        self.server = None
        self.date = b""
        self._timers: list = []

    def _tick(self) -> None:
        self.date = b"Date: " + email.utils.formatdate(usegmt=True).encode() + b"\r\n"
        now = time.monotonic()
        for c in list(self.conns):
            # no byte read or written for that long (a hostile response in progress has its own timers)
            if now - c.last > self.idle_timeout and c.run is None:
                c.transport.close()
        if self.log:
            self.log.flush()
        loop = asyncio.get_running_loop()
        self._timers = [loop.call_later(0.5, self._tick)]

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self.server = await loop.create_server(
                lambda: _Conn(self), self.addr, self.port, reuse_address=True, backlog=1024)
        except OSError as exc:
            if self.log:
                self.log.close()
            raise ServerError(f"cannot listen on {self.addr}:{self.port}: {exc.strerror or exc}") from None
        self.port = self.server.sockets[0].getsockname()[1]
        self._tick()

    async def close(self) -> None:
        for t in self._timers:
            t.cancel()
        if self.server is not None:
            self.server.close()
        for c in list(self.conns):
            c.transport.close()
        deadline = time.monotonic() + 1.0
        while self.conns and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for c in list(self.conns):
            c.transport.abort()
        await asyncio.sleep(0)
        if self.server is not None:
            try:
                await asyncio.wait_for(self.server.wait_closed(), 1.0)
            except (asyncio.TimeoutError, Exception):
                pass
        if self.log:
            self.log.flush()
            self.log.close()
            self.log = None

    def record(self, cid, req, method, host, target, status, nbytes, t0, t1, rank, note=None, end=None) -> None:
        self.requests += 1
        self.by_status[status] = self.by_status.get(status, 0) + 1
        if self.log:
            extra = "" if note is None else f', "hostile": {json.dumps(note)}, "end": {json.dumps(end)}'
            self.log.write(
                f'{{"conn": {cid}, "req": {req}, "method": {json.dumps(method)}, '
                f'"host": {json.dumps(host)}, "path": {json.dumps(target)}, "status": {status}, '
                f'"bytes": {nbytes}, "t_start": {t0:.6f}, "t_end": {t1:.6f}, "rank": {rank}{extra}}}\n')


class _Conn(asyncio.Protocol):
    __slots__ = ("core", "transport", "cid", "buf", "t0", "last", "paused", "pending", "closing",
                 "nreq", "discard", "waiting", "run")

    def __init__(self, core: _Core):
        self.core = core
        self.transport = None
        self.buf = bytearray()
        self.t0 = 0.0
        self.last = time.monotonic()
        self.paused = False       # the socket has not taken the whole response yet
        self.pending: list = []   # log records waiting for their response to be written
        self.closing = False
        self.nreq = 0
        self.discard = 0          # request body bytes still to skip
        self.waiting = False      # a response is being held back (latency) or is a Plan in progress
        self.run: _Run | None = None   # the Plan being sent

    def connection_made(self, transport) -> None:
        self.transport = transport
        core = self.core
        core.next_cid += 1
        self.cid = core.next_cid
        core.conns.add(self)
        # pause_writing() is then called whenever a write is not sent at once and
        # resume_writing() when the buffer is empty: exact end-of-response times.
        transport.set_write_buffer_limits(high=0, low=0)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

    def connection_lost(self, exc) -> None:
        self.core.conns.discard(self)
        if self.pending:
            self._flush_pending()
        self.closing = True
        if self.run is not None:
            self._end_run("closed")

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self.last = time.monotonic()
        if self.pending:
            self._flush_pending()
        run = self.run
        if run is not None:
            if run.it is not None and not self.closing:
                self._pump()
            return
        if self.buf and not self.closing and not self.waiting:
            self._process()

    def _flush_pending(self) -> None:
        t1 = time.time()
        rec = self.core.record
        for p in self.pending:
            rec(*p[:8], t1, p[8])
        self.pending = []

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        if not self.buf:
            self.t0 = time.time()
        self.last = time.monotonic()
        if self.discard:
            n = min(self.discard, len(data))
            self.discard -= n
            data = data[n:]
            if not data:
                return
        self.buf += data
        if not self.paused and not self.waiting:
            self._process()

    def _process(self) -> None:
        buf = self.buf
        while buf and not self.paused and not self.waiting and not self.closing:
            while buf[:2] == b"\r\n":
                del buf[:2]
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD:
                    self._error(431)
                return
            head = bytes(buf[:end])
            del buf[:end + 4]
            self._handle(head)
            if self.discard and buf:
                n = min(self.discard, len(buf))
                del buf[:n]
                self.discard -= n
            if buf:
                self.t0 = time.time()

    def _error(self, status: int, method: str = "-", host: str = "", target: str = "") -> None:
        body = _status_body(status)
        self._send(status, _head(status, "text/html; charset=utf-8", len(body)), body,
                   False, method, host, target, -1)

    def _handle(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3:
            self._error(400)
            return
        method_b, target_b, version = parts
        try:
            method = method_b.decode("ascii")
            target = target_b.decode("latin-1")
        except UnicodeDecodeError:
            self._error(400)
            return
        if not version.startswith(b"HTTP/1."):
            self._error(505, method, "", target)
            return
        host = b""
        conn = b""
        rank = -1
        clen = 0
        chunked = False
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                self._error(400, method, "", target)
                return
            name = name.lower()
            if name == b"host":
                host = value.strip()
            elif name == b"connection":
                conn = value.strip().lower()
            elif name == b"x-abc-rank":
                try:
                    rank = int(value)
                except ValueError:
                    rank = -1
            elif name == b"content-length":
                try:
                    clen = int(value)
                except ValueError:
                    self._error(400, method, "", target)
                    return
            elif name == b"transfer-encoding":
                chunked = True
        if version == b"HTTP/1.1":
            keep = b"close" not in conn
        else:
            keep = b"keep-alive" in conn
        if target.startswith(("http://", "https://")):
            rest = target.split("://", 1)[1]
            slash = rest.find("/")
            host = rest[: slash if slash >= 0 else len(rest)].encode("latin-1")
            target = rest[slash:] if slash >= 0 else "/"
        hs = host.decode("latin-1").lower()
        if hs.startswith("["):
            hs = hs[: hs.find("]") + 1]
        else:
            hs = hs.rsplit(":", 1)[0] if ":" in hs else hs
        if hs.endswith("."):
            hs = hs[:-1]
        if chunked:
            self._error(501, method, hs, target)
            return
        if clen > 0:
            self.discard = clen
        if method not in ("GET", "HEAD"):
            body = _status_body(405)
            self._send(405, _head(405, "text/html; charset=utf-8", len(body), None, "Allow: GET, HEAD\r\n"),
                       body, keep, method, hs, target, rank)
            return
        status, rhead, body = self.core.site.respond(hs, target)
        if method == "HEAD" and type(body) is bytes:
            body = b""
        if self.core.latency > 0:
            # hold the response back; this connection reads no further request meanwhile
            self.waiting = True
            asyncio.get_running_loop().call_later(self.core.latency, self._delayed, self.t0,
                                                  (status, rhead, body, keep, method, hs, target, rank))
            return
        self._send(status, rhead, body, keep, method, hs, target, rank)

    def _delayed(self, t0: float, args: tuple) -> None:
        self.waiting = False
        if self.closing:
            return
        self.t0 = t0
        self._send(*args)
        if self.buf and not self.closing and not self.waiting:
            self.t0 = time.time()
            if not self.paused:
                self._process()

    def _send(self, status, rhead, body, keep, method, host, target, rank) -> None:
        if type(body) is not bytes:
            self._start_plan(body, keep, method, host, target, rank)
            return
        core = self.core
        tail = core.date + (b"Connection: keep-alive\r\n\r\n" if keep else b"Connection: close\r\n\r\n")
        self.transport.write(rhead + tail + body if len(body) < 65536 else rhead + tail)
        if len(body) >= 65536:
            self.transport.write(body)
        rec = (self.cid, self.nreq, method, host, target, status, len(body), self.t0)
        self.nreq += 1
        if self.paused:
            self.pending.append(rec + (rank,))
        else:
            core.record(*rec, time.time(), rank)
        self.last = time.monotonic()
        if not keep:
            self.closing = True
            self.buf.clear()
            self.transport.close()

    # -- hostile and generated responses (Plan) -----------------------------------------------
    def _start_plan(self, plan: Plan, keep, method, host, target, rank) -> None:
        """Send ``plan`` by its transport; no further request is read on this connection meanwhile."""
        if not plan.sized:
            keep = False           # the body ends with the connection
        loop = asyncio.get_running_loop()
        run = self.run = _Run(plan, keep, method, host, target, rank, self.t0, self.nreq)
        self.nreq += 1
        self.waiting = True
        head = plan.head + self.core.date + (b"Connection: keep-alive\r\n\r\n" if keep
                                             else b"Connection: close\r\n\r\n")
        has_body = method != "HEAD"
        o = plan.opts
        tr = plan.transport
        if tr == "stall_nothing":
            run.timer = loop.call_later(float(o.get("stall_seconds", 60.0)), self._end_run, "stalled")
        elif tr == "stall_headers":
            self.transport.write(head)
            run.timer = loop.call_later(float(o.get("stall_seconds", 60.0)), self._end_run, "stalled")
        elif tr == "reset":
            ra = o.get("reset_after")
            if ra is None:   # mid-body: half of it, at most 1 MiB
                ra = min(plan.length // 2, 1 << 20)
            ra = int(ra)
            if ra < 0:       # nothing at all: RST right after the request
                run.timer = loop.call_later(float(o.get("reset_delay", 0.05)), self._rst)
                return
            self.transport.write(head)
            run.it = plan.body_iter(ra) if has_body else iter(())
            self._pump()
        elif tr == "drip":
            run.src = plan.body_iter() if has_body else iter(())
            if o.get("drip_headers"):
                run.pending = bytearray(head)
                run.skip = len(head)
            else:
                self.transport.write(head)
            self._drip_more(first=True)
        else:
            self.transport.write(head)
            run.it = plan.body_iter() if has_body else iter(())
            self._pump()

    def _pump(self) -> None:
        """Write the body while the socket takes it (backpressure: pause_writing/resume_writing)."""
        run = self.run
        it = run.it
        transport = self.transport
        write = transport.write
        while not self.paused:
            # the peer may be gone: asyncio then closes the transport and reports it a little later
            if self.closing or self.run is not run or transport.is_closing():
                return
            chunk = next(it, None)
            if chunk is None:
                run.it = None
                self._body_done()
                return
            run.sent += len(chunk)
            write(chunk)
        self.last = time.monotonic()

    def _body_done(self) -> None:
        run = self.run
        if run.plan.transport == "reset":
            run.timer = asyncio.get_running_loop().call_later(
                float(run.plan.opts.get("reset_delay", 0.05)), self._rst)
        else:
            self._end_run("done")

    def _drip_more(self, first: bool = False) -> None:
        run = self.run
        if run is None or self.closing or self.transport.is_closing():
            return
        o = run.plan.opts
        n = max(1, int(o.get("drip_bytes", 4)))
        if not first:
            while len(run.pending) < n and run.src is not None:
                chunk = next(run.src, None)
                if chunk is None:
                    run.src = None
                else:
                    run.pending += chunk
            piece = bytes(run.pending[:n])
            del run.pending[:n]
            if not piece:
                self._end_run("done")
                return
            self.transport.write(piece)
            run.dripped += len(piece)
            run.sent = max(0, run.dripped - run.skip)
            self.last = time.monotonic()
        run.timer = asyncio.get_running_loop().call_later(float(o.get("drip_interval", 2.0)), self._drip_more)

    def _rst(self) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0)."""
        if self.run is None:
            return
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        self._end_run("reset")
        self.closing = True
        self.buf.clear()
        self.transport.abort()

    def _end_run(self, end: str) -> None:
        """The Plan is over (``done``, ``reset``, ``stalled`` or ``closed`` by the peer/server): log it, go on."""
        run = self.run
        if run is None:
            return
        self.run = None
        if run.timer is not None:
            run.timer.cancel()
            run.timer = None
        p = run.plan
        self.core.record(self.cid, run.req, run.method, run.host, run.target, p.status, run.sent, run.t0,
                         time.time(), run.rank, p.note, end)
        self.last = time.monotonic()
        self.waiting = False
        if end == "stalled":
            self.closing = True
            self.buf.clear()
            self.transport.abort()
            return
        if end != "done" or self.closing:
            return
        if not run.keep:
            self.closing = True
            self.buf.clear()
            # not at once: inside resume_writing(), asyncio's _write_ready() would report the loss twice
            asyncio.get_running_loop().call_soon(self.transport.close)
            return
        if self.buf and not self.paused:
            self.t0 = time.time()
            self._process()


class _Run:
    """A Plan being sent on one connection."""

    __slots__ = ("plan", "keep", "method", "host", "target", "rank", "t0", "req", "it", "src", "sent", "timer",
                 "pending", "skip", "dripped")

    def __init__(self, plan, keep, method, host, target, rank, t0, req):
        self.plan, self.keep, self.method, self.host, self.target = plan, keep, method, host, target
        self.rank, self.t0, self.req = rank, t0, req
        self.it = None         # body pieces still to pump (normal, reset)
        self.src = None        # body pieces still to drip
        self.sent = 0          # body bytes handed to the socket
        self.timer = None
        self.pending = bytearray()
        self.skip = 0          # header bytes at the front of a dripped stream
        self.dripped = 0


def _new_loop(use_uvloop: bool) -> asyncio.AbstractEventLoop:
    if use_uvloop:
        try:
            import uvloop  # type: ignore
            return uvloop.new_event_loop()
        except ImportError:
            pass
    return asyncio.new_event_loop()


class TestWebServer:
    """The server in a background thread: a context manager.

    ``port=0`` picks a free port (read ``.port`` after :meth:`start`);
    :meth:`from_manifest` serves at the addr/port a generated web was made
    for.  ``max_seconds`` (optional) stops the server by itself.
    :meth:`stop` closes every connection and flushes the access log.
    ``stats()`` gives ``{"requests", "connections", "by_status"}``.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, web_dir, addr: str = "127.0.0.1", port: int = 0, access_log=None, *,
                 max_seconds: float | None = None, idle_timeout: float = 60.0,
                 cache_bytes: int = 256 << 20, use_uvloop: bool = False, latency: float = 0.0):
        self.addr = check_loopback(addr)
        self.latency = latency
        self.web_dir = Path(web_dir)
        self.port = int(port)
        self.access_log = access_log
        self.max_seconds = max_seconds
        self.idle_timeout = idle_timeout
        self.cache_bytes = cache_bytes
        self.use_uvloop = use_uvloop
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._core: _Core | None = None
        self._stopped = threading.Event()

    @classmethod
    def from_manifest(cls, web_dir, access_log=None, **kw) -> "TestWebServer":
        from .generator import load_manifest
        try:
            m = load_manifest(web_dir)
        except (OSError, ValueError) as exc:
            raise ServerError(f"{web_dir}: no usable manifest.json ({exc})") from None
        return cls(web_dir, m["addr"], m["port"], access_log, **kw)

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._stopped.is_set()

    def start(self) -> "TestWebServer":
        if self._thread is not None:
            raise RuntimeError("server already started")
        site = WebSite(self.web_dir, self.cache_bytes)
        ready = threading.Event()
        error: list = []

        def run() -> None:
            loop = _new_loop(self.use_uvloop)
            self._loop = loop
            asyncio.set_event_loop(loop)
            core = _Core(site, self.addr, self.port, self.access_log, self.idle_timeout, self.latency)
            try:
                loop.run_until_complete(core.start())
            except BaseException as exc:  # noqa: BLE001 - reported to the caller
                error.append(exc)
                ready.set()
                loop.close()
                self._stopped.set()
                return
            self._core = core
            self.port = core.port
            if self.max_seconds is not None:
                loop.call_later(self.max_seconds, loop.stop)
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(core.close())
                loop.close()
                self._stopped.set()

        self._thread = threading.Thread(target=run, name="abc-testweb", daemon=True)
        self._thread.start()
        ready.wait()
        if error:
            self._thread.join()
            raise error[0]
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        loop = self._loop
        if loop is not None and not self._stopped.is_set():
            try:
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:
                pass
        self._thread.join()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the server has stopped (e.g. after ``max_seconds``)."""
        return self._stopped.wait(timeout)

    def reload(self) -> None:
        """Re-read routes.json and sites/ (e.g. after generating a web for ``.port``)."""
        site = WebSite(self.web_dir, self.cache_bytes)
        if self._loop is not None and self._core is not None:
            core = self._core
            self._loop.call_soon_threadsafe(setattr, core, "site", site)

    def stats(self) -> dict:
        core = self._core
        if core is None:
            return {"requests": 0, "connections": 0, "by_status": {}}
        return {"requests": core.requests, "connections": core.next_cid, "by_status": dict(core.by_status)}

    def url(self, path: str = "/") -> str:
        return f"http://{self.addr}:{self.port}{path}"

    def __enter__(self) -> "TestWebServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def run_server(web_dir, addr: str, port: int, access_log=None, *, max_seconds: float | None = 3600.0,
               ready_file=None, idle_timeout: float = 60.0, use_uvloop: bool = False,
               cache_bytes: int = 256 << 20, latency: float = 0.0) -> None:
    """Serve in the calling thread until SIGINT/SIGTERM or ``max_seconds``.

    ``ready_file`` is written (atomically, JSON ``{"addr", "port", "pid"}``)
    once the server listens.  Raises :class:`ServerError` if it cannot start.
    """
    import signal

    addr = check_loopback(addr)
    site = WebSite(web_dir, cache_bytes)
    loop = _new_loop(use_uvloop)
    asyncio.set_event_loop(loop)
    core = _Core(site, addr, port, access_log, idle_timeout, latency)
    try:
        loop.run_until_complete(core.start())
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, loop.stop)
        if max_seconds is not None:
            loop.call_later(max_seconds, loop.stop)
        if ready_file:
            tmp = f"{ready_file}.tmp{os.getpid()}"
            with open(tmp, "w") as fh:
                json.dump({"addr": addr, "port": core.port, "pid": os.getpid()}, fh)
                fh.write("\n")
            os.replace(tmp, ready_file)
        loop.run_forever()
        loop.run_until_complete(core.close())
    finally:
        loop.close()
