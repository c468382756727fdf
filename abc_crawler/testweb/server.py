"""Embedded HTTP/1.1 server for the local web: many virtual hosts on one loopback port.

An asyncio server (uvloop is used when installed and asked for; it is
optional) in a background thread (:class:`TestWebServer`, a context manager)
or in the calling thread (:func:`run_server`, for ``abc-testweb serve``). Only
loopback addresses (127.0.0.0/8) are accepted. Idle keep-alive connections
are closed after ``idle_timeout`` seconds.

What is served comes from a web directory: :mod:`.routes` (routes.json and
``sites/``) and :mod:`.modes` (hostile hosts); the HTTP/1.1 protocol is
:mod:`.protocol`. The formats of routes.json and of the access log are in
``docs/TESTWEB.md``.

Usage::

    with TestWebServer("web", port=0, access_log="access.jsonl") as srv:
        ...  # http://127.0.0.1:{srv.port}/ with Host: h000.test

    srv = TestWebServer.from_manifest("web")   # at the manifest's addr:port

The access log has one JSON object per request, written when the response has
been handed to the kernel completely (hostile responses: when they end), and
is flushed every 0.5 s, when the server stops, and on a ``FLUSH`` request
(:func:`flush_request`, :meth:`TestWebServer.flush`): answered once every other
connection has ended, so a test reads everything that came before it without
waiting for the timer.

TLS (for tests of https crawling): with ``tls=(certfile, keyfile)`` the server
also listens on ``tls_port`` (0: a free port) and serves the same web over TLS
there; with ``https_redirect`` every request on the plain port is answered with
a ``301`` to the same host and target on the TLS port (``robots.txt``
included), as sites that moved to https do.
"""
from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import os
import ssl
import threading
import time
from pathlib import Path

from .protocol import Connection
from .responses import ServerError
from .routes import WebSite

__all__ = ["TestWebServer", "ServerError", "check_loopback", "run_server", "flush_request", "FLUSH_WAIT"]

#: longest time a FLUSH request waits for the other connections to end
FLUSH_WAIT = 10.0


def flush_request(addr: str, port: int, timeout: float = FLUSH_WAIT + 20) -> dict:
    """Ask the server at ``addr:port`` to flush its access log (a FLUSH request, answered once every
    other connection has ended); returns its answer ``{"log_bytes", "open", "requests", "time"}``."""
    import socket

    with socket.create_connection((addr, port), timeout=timeout) as s:
        s.sendall(b"FLUSH / HTTP/1.1\r\nHost: abc-testweb\r\nConnection: close\r\n\r\n")
        with s.makefile("rb") as fh:
            data = fh.read()                  # up to the close (Connection: close)
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise ServerError(f"FLUSH to {addr}:{port} answered {head[:40]!r}")
    return json.loads(body)


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


class _Core:
    """The server proper; runs inside one asyncio event loop."""

    def __init__(self, site: WebSite, addr: str, port: int, access_log=None, idle_timeout: float = 60.0,
                 latency: float = 0.0, tls=None, tls_port: int = 0, https_redirect: bool = False,
                 also: tuple[str, ...] = ()):
        self.site = site
        self.also = tuple(check_loopback(a) for a in also)   # more loopback addresses, the same port
        self.also_servers: list = []
        self.tls = tls                 # (certfile, keyfile) or None
        self.tls_port = tls_port
        self.https_redirect = bool(https_redirect) and tls is not None
        self.tls_server = None
        self.latency = latency     # seconds every response is held back (a server that takes time)
        self.addr, self.port = addr, port
        self.idle_timeout = idle_timeout
        self.log = open(access_log, "a", buffering=1 << 16) if access_log else None
        self.conns: set[Connection] = set()
        self.next_cid = 0
        self.requests = 0
        self.by_status: dict[int, int] = {}
        self.server = None
        self.date = b""
        self._timers: list = []
        self._quiet: list = []           # futures of FLUSH requests waiting for the other connections to end

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

    def conn_ended(self) -> None:
        """A connection ended: wake FLUSH requests waiting for the others to end."""
        for fut in self._quiet:
            if not fut.done():
                fut.set_result(None)

    async def flush_log(self, conn, wait: float = FLUSH_WAIT) -> dict:
        """Once no connection but ``conn`` is open (at most ``wait`` seconds), flush the access log;
        what a FLUSH request answers (protocol.py)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while any(c is not conn for c in self.conns) and loop.time() < deadline:
            fut = loop.create_future()
            self._quiet.append(fut)
            try:
                await asyncio.wait_for(fut, deadline - loop.time())
            except asyncio.TimeoutError:
                pass
            finally:
                self._quiet.remove(fut)
        size = 0
        if self.log:
            self.log.flush()
            size = self.log.tell()
        return {"log_bytes": size, "open": sum(1 for c in self.conns if c is not conn),
                "requests": self.requests, "time": time.time()}

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self.server = await loop.create_server(
                lambda: Connection(self), self.addr, self.port, reuse_address=True, backlog=1024)
        except OSError as exc:
            if self.log:
                self.log.close()
            raise ServerError(f"cannot listen on {self.addr}:{self.port}: {exc.strerror or exc}") from None
        self.port = self.server.sockets[0].getsockname()[1]
        for a in self.also:                   # hosts on their own addresses (--also-addr)
            try:
                self.also_servers.append(await loop.create_server(
                    lambda: Connection(self), a, self.port, reuse_address=True, backlog=1024))
            except OSError as exc:
                self.server.close()
                if self.log:
                    self.log.close()
                raise ServerError(f"cannot listen on {a}:{self.port}: {exc.strerror or exc}") from None
        if self.tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            try:
                ctx.load_cert_chain(*self.tls)
                self.tls_server = await loop.create_server(
                    lambda: Connection(self, "https"), self.addr, self.tls_port, ssl=ctx, reuse_address=True,
                    backlog=1024)
            except (OSError, ssl.SSLError) as exc:
                self.server.close()
                if self.log:
                    self.log.close()
                raise ServerError(f"cannot serve TLS on {self.addr}:{self.tls_port}: {exc}") from None
            self.tls_port = self.tls_server.sockets[0].getsockname()[1]
        self._tick()

    async def close(self) -> None:
        for t in self._timers:
            t.cancel()
        if self.server is not None:
            self.server.close()
        for srv in self.also_servers:
            srv.close()
        if self.tls_server is not None:
            self.tls_server.close()
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

    def record(self, cid, req, method, host, target, status, nbytes, t0, t1, rank, note=None, end=None,
               scheme="http", *, tw=None) -> None:
        self.requests += 1
        self.by_status[status] = self.by_status.get(status, 0) + 1
        if self.log:
            extra = "" if note is None else f', "hostile": {json.dumps(note)}, "end": {json.dumps(end)}'
            t_write = "null" if tw is None else f"{tw:.6f}"
            self.log.write(
                f'{{"conn": {cid}, "req": {req}, "method": {json.dumps(method)}, "scheme": "{scheme}", '
                f'"host": {json.dumps(host)}, "path": {json.dumps(target)}, "status": {status}, '
                f'"bytes": {nbytes}, "t_start": {t0:.6f}, "t_write": {t_write}, "t_end": {t1:.6f}, '
                f'"rank": {rank}{extra}}}\n')

    def redirect_to_https(self, host: str, target: str) -> tuple | None:
        """The 301 to https of a request on the plain port (``https_redirect``), else None."""
        if not self.https_redirect:
            return None
        from .responses import HTML_TYPE, response_head, status_body

        netloc = host if self.tls_port == 443 else f"{host}:{self.tls_port}"
        body = status_body(301)
        return 301, response_head(301, HTML_TYPE, len(body), f"https://{netloc}{target}"), body


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
                 cache_bytes: int = 256 << 20, use_uvloop: bool = False, latency: float = 0.0,
                 tls=None, tls_port: int = 0, https_redirect: bool = False):
        self.addr = check_loopback(addr)
        self.tls, self.tls_port, self.https_redirect = tls, int(tls_port), https_redirect
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
            core = _Core(site, self.addr, self.port, self.access_log, self.idle_timeout, self.latency,
                         self.tls, self.tls_port, self.https_redirect)
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
            self.tls_port = core.tls_port
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
        """Re-read routes.json and sites/ (e.g. after generating a web for ``.port``); the new site
        answers every request read after this returns."""
        site = WebSite(self.web_dir, self.cache_bytes)
        if self._loop is not None and self._core is not None:
            core = self._core
            done = threading.Event()

            def swap() -> None:
                core.site = site
                done.set()
            self._loop.call_soon_threadsafe(swap)
            done.wait(30)

    def flush(self, wait: float = FLUSH_WAIT) -> dict:
        """Flush the access log once every connection has ended (at most ``wait`` s): what a FLUSH
        request answers; after :meth:`stop` the log is complete and closed (``{"log_bytes": size}``)."""
        loop, core = self._loop, self._core
        if loop is None or core is None or self._stopped.is_set():
            size = os.path.getsize(self.access_log) if self.access_log and os.path.exists(self.access_log) else 0
            return {"log_bytes": size, "open": 0, "requests": core.requests if core else 0, "time": time.time()}
        fut = asyncio.run_coroutine_threadsafe(core.flush_log(None, wait), loop)
        return fut.result(wait + 10)

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
               cache_bytes: int = 256 << 20, latency: float = 0.0, tls=None, tls_port: int = 0,
               https_redirect: bool = False, also: tuple[str, ...] = ()) -> None:
    """Serve in the calling thread until SIGINT/SIGTERM or ``max_seconds``.

    ``ready_file`` is written (atomically, JSON ``{"addr", "port", "pid"}``, and
    ``"tls_port"`` with ``tls``) once the server listens.  Raises
    :class:`ServerError` if it cannot start.
    """
    import signal

    addr = check_loopback(addr)
    site = WebSite(web_dir, cache_bytes)
    loop = _new_loop(use_uvloop)
    asyncio.set_event_loop(loop)
    core = _Core(site, addr, port, access_log, idle_timeout, latency, tls, tls_port, https_redirect, also)
    try:
        loop.run_until_complete(core.start())
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, loop.stop)
        if max_seconds is not None:
            loop.call_later(max_seconds, loop.stop)
        if ready_file:
            tmp = f"{ready_file}.tmp{os.getpid()}"
            with open(tmp, "w") as fh:
                ready = {"addr": addr, "port": core.port, "pid": os.getpid()}
                if tls is not None:
                    ready["tls_port"] = core.tls_port
                json.dump(ready, fh)
                fh.write("\n")
            os.replace(tmp, ready_file)
        loop.run_forever()
        loop.run_until_complete(core.close())
    finally:
        loop.close()
