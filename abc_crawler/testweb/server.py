"""Embedded HTTP/1.1 server for the local web: many virtual hosts on one loopback port.

An asyncio :class:`asyncio.Protocol` server (uvloop is used when installed and
asked for; it is optional).  Keep-alive by default (HTTP/1.1; HTTP/1.0 with
``Connection: keep-alive``), ``Connection: close`` honoured, pipelined
requests answered in order, GET and HEAD (other methods: 405), every response
carries ``Content-Length``.  Virtual hosts are chosen by the ``Host`` header
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
import threading
import time
from pathlib import Path
from urllib.parse import unquote

__all__ = ["TestWebServer", "WebSite", "ServerError", "check_loopback", "run_server"]

_REASONS = {
    200: "OK", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
    307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request", 403: "Forbidden",
    404: "Not Found", 405: "Method Not Allowed", 410: "Gone", 414: "URI Too Long",
    431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented",
    503: "Service Unavailable", 505: "HTTP Version Not Supported",
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


def _head(status: int, ctype: str | None, length: int, location: str | None = None,
          extra: str = "") -> bytes:
    h = f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\nServer: abc-testweb\r\n"
    if ctype:
        h += f"Content-Type: {ctype}\r\n"
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


class WebSite:
    """The routing table of a web directory, and the responses it gives.

    ``respond(host, target)`` returns ``(status, head, body)`` where ``head``
    is the status line and headers without ``Date``/``Connection`` and the
    final blank line.
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
        self.hosts = set(self.routes) | set(self.prefixes)
        if self.sites.is_dir():
            self.hosts |= {p.name.lower() for p in self.sites.iterdir() if p.is_dir()}
        self.cache: dict[tuple[str, str], tuple[int, bytes, bytes]] = {}
        self.cache_left = cache_bytes
        self._404 = (404, _head(404, "text/html; charset=utf-8", len(_status_body(404))), _status_body(404))

    def respond(self, host: str, target: str) -> tuple[int, bytes, bytes]:
        key = (host, target)
        r = self.cache.get(key)
        if r is not None:
            return r
        r = self._build(host, target)
        size = len(r[2]) + len(r[1]) + 100
        if size <= self.cache_left:
            self.cache[key] = r
            self.cache_left -= size
        return r

    def _build(self, host: str, target: str) -> tuple[int, bytes, bytes]:
        if host not in self.hosts:
            return self._404
        routes = self.routes.get(host)
        if routes is not None:
            route = routes.get(target)
            if route is None and "?" not in target and "%" in target:
                route = routes.get(unquote(target))
            if route is not None:
                return self._from_route(host, route)
        path = target.split("?", 1)[0]
        for prefix, dest in self.prefixes.get(host, ()):
            if path.startswith(prefix):
                loc = dest + target[len(prefix):]
                body = _status_body(301)
                return 301, _head(301, "text/html; charset=utf-8", len(body), loc), body
        if self.static:
            return self._static(host, target)
        return self._404

    def _from_route(self, host: str, route: dict) -> tuple[int, bytes, bytes]:
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
            if now - c.last > self.idle_timeout:   # no byte read or written for that long
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

    def record(self, cid, req, method, host, target, status, nbytes, t0, t1, rank) -> None:
        self.requests += 1
        self.by_status[status] = self.by_status.get(status, 0) + 1
        if self.log:
            self.log.write(
                f'{{"conn": {cid}, "req": {req}, "method": {json.dumps(method)}, '
                f'"host": {json.dumps(host)}, "path": {json.dumps(target)}, "status": {status}, '
                f'"bytes": {nbytes}, "t_start": {t0:.6f}, "t_end": {t1:.6f}, "rank": {rank}}}\n')


class _Conn(asyncio.Protocol):
    __slots__ = ("core", "transport", "cid", "buf", "t0", "last", "paused", "pending", "closing",
                 "nreq", "discard", "waiting")

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
        self.waiting = False      # a response is being held back (latency)

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

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self.last = time.monotonic()
        if self.pending:
            self._flush_pending()
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
        if method == "HEAD":
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
        if self.buf and not self.closing:
            self.t0 = time.time()
            if not self.paused:
                self._process()

    def _send(self, status, rhead, body, keep, method, host, target, rank) -> None:
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
