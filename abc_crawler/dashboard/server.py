"""Rank 0's HTTP server for the dashboard: a thread that never blocks the crawl.

=======  ====================  =================================================================
method   path                  answer
=======  ====================  =================================================================
GET      ``/``                 the dashboard page (HTML, its style and script inline)
GET      ``/status.json``      the latest snapshot (``docs/DASHBOARD.md``)
GET      ``/metrics``          the same snapshot in the Prometheus text format (:mod:`.metrics`)
POST     ``/stop``             with the stop token (form field ``token``): the same graceful
                               stop as SIGTERM; 202, or 403 without the right token
=======  ====================  =================================================================

``HEAD`` is answered for the ``GET`` paths. Another method on a known path
is 405 (with ``Allow``), an unknown path 404, a ``POST`` body over
:data:`MAX_BODY` bytes 413, a ``POST`` without ``Content-Length`` 411. When
the server listens on a loopback address it answers only requests whose
``Host`` names a loopback host (``127.0.0.1``, ``localhost``, ``[::1]``,
any port: an ssh tunnel works), so a web page the user visits cannot read
the dashboard through DNS rebinding (421 otherwise).

The crawl loop hands over a snapshot with :meth:`StatusServer.publish` (one
reference assignment); request threads read the latest one and serialize
it, caching the JSON (and the ``/metrics`` text) per snapshot. No lock is taken while a
request is served. Each connection has its own thread (at most
:data:`MAX_CONNECTIONS` at once; more are answered 503 and closed) and a
socket timeout, so a slow client holds nothing but its own thread.

Failures are not swallowed: a request thread whose handler raises anything
but a client disconnect lets the exception escape the thread, where
:func:`abc_crawler.store.crash.install_thread_hook` keeps it and the crawl loop
raises it at its next superstep (the crash is recorded like any other). The
listening thread is a plain :class:`threading.Thread` too.
"""
from __future__ import annotations

import hmac
import ipaddress
import json
import re
import secrets
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from .page import Page

__all__ = ["StatusServer", "Published", "parse_address", "is_loopback", "MAX_BODY", "MAX_CONNECTIONS"]

#: largest request body accepted (POST /stop carries only the token)
MAX_BODY = 1024
#: connections served at once; more are answered 503
MAX_CONNECTIONS = 16
#: seconds a connection may stay silent before it is closed
SOCKET_TIMEOUT = 10.0
_NO_STORE = "no-store"                   # nothing is cached by a browser: every answer is live
_GET_PATHS = ("/", "/status.json", "/metrics")


def parse_address(spec: str) -> tuple[str, int]:
    """``ADDR:PORT`` → (address, port); ``[v6]:PORT`` for IPv6. Raises ValueError naming ``spec``.

    >>> parse_address("127.0.0.1:0"), parse_address("[::1]:8080"), parse_address("localhost:9000")
    (('127.0.0.1', 0), ('::1', 8080), ('localhost', 9000))
    >>> parse_address("8080")
    Traceback (most recent call last):
    ...
    ValueError: expected ADDR:PORT (e.g. 127.0.0.1:0 for a free port), got '8080'
    """
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:(\d{1,5})|([A-Za-z0-9.\-]+):(\d{1,5})", spec.strip())
    if not m:
        raise ValueError(f"expected ADDR:PORT (e.g. 127.0.0.1:0 for a free port), got {spec!r}")
    addr = m.group(1) or m.group(3)
    port = int(m.group(2) or m.group(4))
    if port > 65535:
        raise ValueError(f"port must be 0..65535, got {port} in {spec!r}")
    if m.group(1):
        try:
            ipaddress.IPv6Address(addr)
        except ValueError:
            raise ValueError(f"not an IPv6 address: {addr!r} in {spec!r}") from None
    return addr, port


def is_loopback(host: str) -> bool:
    """True for loopback addresses and the names ``localhost`` / ``*.localhost``.

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, True, False)
    """
    h = host.lower().rstrip(".")
    if h == "localhost" or h.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The host part of a ``Host`` header (``[::1]:8080`` → ``::1``)."""
    header = header.strip()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


@dataclass
class Published:
    """One snapshot as the server holds it; its JSON is made on the first request.

    The snapshot dict is never changed after it is published; the cache is
    filled by a request thread (two threads may both fill it: same result).
    """

    seq: int
    data: dict
    finished: bool = False
    _json: bytes | None = None
    _metrics: bytes | None = None

    def json_bytes(self) -> bytes:
        if self._json is None:
            self._json = (json.dumps(self.data, separators=(",", ":"), allow_nan=False) + "\n").encode()
        return self._json

    def metrics_bytes(self) -> bytes:
        """``GET /metrics``: the snapshot in the Prometheus text format (prometheus_client is imported on the
        first scrape: a crawl nobody scrapes does not pay for it)."""
        if self._metrics is None:
            from .metrics import exposition

            self._metrics = exposition(self.data)
        return self._metrics


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 32

    def __init__(self, addr, handler, app: "StatusServer", family: int):
        self.address_family = family
        self.app = app
        self.active = 0                     # connections being served (a counter, read racily)
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(addr, handler)

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            self.app.refused += 1
            try:
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request, client_address):
        """A client that went away is no failure; anything else is a bug: let it out of the thread."""
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, socket.timeout)):
            self.app.disconnects += 1
            return
        raise exc


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "abc-dashboard"
    sys_version = ""
    timeout = SOCKET_TIMEOUT
    server: _HTTPServer

    def log_message(self, format, *args):  # noqa: A002 - the crawl's stderr is for the crawl
        pass

    def __getattr__(self, name: str):
        # every method, known or not, goes through _dispatch (BaseHTTPRequestHandler looks up do_<METHOD>)
        if name.startswith("do_"):
            return self._dispatch
        raise AttributeError(name)

    # -- answers ------------------------------------------------------------------------
    def _send(self, code: int, body: bytes, ctype: str, headers: dict | None = None, close: bool = False) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", _NO_STORE)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, code: int, message: str, headers: dict | None = None) -> None:
        # the body of a refused request is not read: close the connection rather than parse it as a request
        unread = self.headers.get("Content-Length", "0").strip() not in ("", "0") or "Transfer-Encoding" in self.headers
        self._send(code, (json.dumps({"error": message}) + "\n").encode(), "application/json", headers,
                   close=unread or code >= 500)

    # -- routing ------------------------------------------------------------------------------
    def _dispatch(self) -> None:
        app = self.server.app
        app.requests += 1
        if app.loopback_only and "Host" in self.headers and not is_loopback(_host_name(self.headers["Host"])):
            return self._error(421, "this dashboard answers only requests for a loopback host name")
        path = urlsplit(self.path).path
        if path in _GET_PATHS:
            if self.command not in ("GET", "HEAD"):
                return self._error(405, f"{self.command} is not allowed on {path}", {"Allow": "GET, HEAD"})
            if "Content-Length" in self.headers and self.headers["Content-Length"].strip() not in ("", "0"):
                return self._error(400, "a GET request has no body")
            if path == "/":
                return self._send(200, app.page.html, "text/html; charset=utf-8",
                                  {"Content-Security-Policy": app.page.csp})
            app.polls += 1
            latest = app.latest
            if path == "/metrics":
                from .metrics import CONTENT_TYPE

                app.scrapes += 1
                return self._send(200, latest.metrics_bytes(), CONTENT_TYPE)
            return self._send(200, latest.json_bytes(), "application/json")
        if path == "/stop":
            if self.command != "POST":
                return self._error(405, f"{self.command} is not allowed on /stop", {"Allow": "POST"})
            return self._stop()
        return self._error(404, f"no such page: {path}")

    def _stop(self) -> None:
        app = self.server.app
        if "Transfer-Encoding" in self.headers:
            return self._error(411, "send the body with Content-Length (no chunked encoding)")
        length = self.headers.get("Content-Length")
        if length is None:
            return self._error(411, "POST /stop needs Content-Length")
        try:
            n = int(length)
            if n < 0:
                raise ValueError(length)
        except ValueError:
            return self._error(400, f"bad Content-Length {length!r}")
        if n > MAX_BODY:
            return self._error(413, f"body of {n} bytes; at most {MAX_BODY} are accepted")
        body = self.rfile.read(n) if n else b""
        if len(body) < n:
            return self._error(400, "body shorter than its Content-Length")
        try:
            token = parse_qs(body.decode("ascii"), max_num_fields=4).get("token", [""])[0]
        except (UnicodeDecodeError, ValueError):
            token = ""
        if not token or not hmac.compare_digest(token.encode(), app.token.encode()):
            app.refused_stops += 1
            return self._send(403, b'{"error": "wrong or missing stop token"}\n', "application/json")
        if app.latest.finished:
            return self._send(409, b'{"error": "the crawl has already finished"}\n', "application/json")
        first = not app.stop_requested
        app.stop_requested = True
        if first:
            app.on_stop()
        return self._send(202, b'{"stopping": true}\n', "application/json")


class StatusServer:
    """Listens on ``address`` (ADDR, PORT; port 0 = a free one) from :meth:`start` on.

    ``on_stop`` is called once, from a request thread, when ``POST /stop``
    carries the right token. The token is made here (``secrets``, 128 bits)
    unless given.
    """

    def __init__(self, address: tuple[str, int], on_stop, token: str | None = None, first: dict | None = None):
        host, port = address
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.token = token or secrets.token_urlsafe(16)
        self.on_stop = on_stop
        self.loopback_only = is_loopback(host)
        self.page = Page.load()
        self.latest = Published(0, first or {"schema": 1, "seq": 0, "state": "starting"})
        self.stop_requested = False
        self.requests = self.polls = self.scrapes = self.refused = self.refused_stops = self.disconnects = 0
        self.httpd = _HTTPServer((host, port), _Handler, self, family)
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        return self.httpd.server_address[:2]

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"

    def start(self) -> "StatusServer":
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.25},
                                        name="abc-dashboard", daemon=True)
        self._thread.start()
        return self

    def publish(self, data: dict, finished: bool = False) -> None:
        """Make ``data`` (never to be changed again) the snapshot every request sees."""
        self.latest = Published(int(data.get("seq", 0)), data, finished)

    def close(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.httpd.server_close()
