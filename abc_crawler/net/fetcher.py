"""Fetching with pycurl's ``CurlMulti``: many hosts in flight, one connection each.

The fetcher does not follow redirects: a 3xx response is a fetched URL whose
``Location`` becomes a link, which goes through canonicalization, scope and
ownership like any other link. Only ``http``/``https`` are enabled (curl
``PROTOCOLS`` and ``REDIR_PROTOCOLS``). With a resolve list, a URL whose host
is not in it is refused here too, as a second line of defence: such a name is
never resolved and never connected to.

Where it connects. Every address libcurl is about to connect to passes the
crawl's :class:`~abc_crawler.net.addresses.AddressPolicy` first (curl's
``OPENSOCKETFUNCTION``: after the DNS answer, for every connection, so DNS
rebinding and redirects to a private address are caught); a refused address
ends the request as ``address_refused``, nothing is sent. A URL whose host is
an IP literal of a refused range, or ``localhost``, is refused before any
transfer (that is all the check can see through a proxy: :mod:`abc_crawler.net.proxies`).
With a proxy for a request, the only connection is to the proxy, which the
user chose.

What every request sends: ``User-Agent``; ``Accept``; ``Accept-Encoding: gzip,
deflate`` (bodies are kept as received, ``Content-Encoding`` and all, and
decoded for parsing by :func:`abc_crawler.sched.limits.inflate`); ``From`` with
``--contact``; ``X-ABC-Rank`` only with the test hook ``--test-rank-header``
(the test web's access log attributes requests to ranks by it).

TLS: certificates are verified against the crawl's CA bundle
(:mod:`abc_crawler.net.tls`); a TLS failure is counted by kind (``tls_…``).

Bodies larger than ``max_body_bytes`` are aborted (both by the declared
Content-Length and while streaming) and reported as ``body_too_large``.
"""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any

import pycurl

from .addresses import AddressPolicy
from .proxies import ProxySettings
from ..web.scope import Scope, hostname_of
from .tls import CaBundle, tls_error_kind
from ..web.urls import host_of

__all__ = ["Fetcher", "Response", "ScopeViolation", "request_headers", "error_kind", "name_refusal"]


class ScopeViolation(RuntimeError):
    """A URL outside the resolve list reached the fetcher (a bug upstream)."""


_CURL_ERRORS = {
    pycurl.E_OPERATION_TIMEDOUT: "timeout",
    pycurl.E_COULDNT_CONNECT: "connect_failed",
    pycurl.E_COULDNT_RESOLVE_HOST: "dns_failed",
    pycurl.E_RECV_ERROR: "recv_error",
    pycurl.E_SEND_ERROR: "send_error",
    pycurl.E_GOT_NOTHING: "empty_reply",
    pycurl.E_PARTIAL_FILE: "partial_body",
    pycurl.E_WRITE_ERROR: "body_too_large",
    pycurl.E_FILESIZE_EXCEEDED: "body_too_large",
    pycurl.E_UNSUPPORTED_PROTOCOL: "unsupported_protocol",
    pycurl.E_BAD_CONTENT_ENCODING: "bad_content_encoding",
    pycurl.E_TOO_MANY_REDIRECTS: "too_many_redirects",
    pycurl.E_COULDNT_RESOLVE_PROXY: "proxy_dns_failed",
    97: "proxy_failed",                        # CURLE_PROXY (SOCKS and proxy handshake errors)
}


def error_kind(errno: int, message: str, proxied: bool = False) -> str:
    """The kind a libcurl error is counted as (``timeout``, ``tls_expired``, ``proxy_connect_failed`` …).

    >>> error_kind(28, ""), error_kind(60, "SSL certificate problem: certificate has expired"), error_kind(999, "")
    ('timeout', 'tls_expired', 'curl_999')
    >>> error_kind(7, "Failed to connect to 127.0.0.1 port 3128", proxied=True)
    'proxy_connect_failed'
    """
    kind = tls_error_kind(errno, message)
    if kind is not None:
        return kind
    if proxied:
        if errno == pycurl.E_COULDNT_CONNECT:
            return "proxy_connect_failed"
        if "CONNECT tunnel failed" in message or "Proxy CONNECT aborted" in message:
            return "proxy_refused"
    return _CURL_ERRORS.get(errno, f"curl_{errno}")


def request_headers(user_agent: str, contact: str | None = None, rank: int | None = None) -> tuple:
    """The headers every request sends after ``Host``, in order (recorded in the WARC request records).

    >>> request_headers("abc-crawler/0.1", "ops@example.org")[2:]
    (('Accept-Encoding', 'gzip, deflate'), ('From', 'ops@example.org'))
    """
    h = [("User-Agent", user_agent), ("Accept", "text/html,application/xhtml+xml,*/*;q=0.5"),
         ("Accept-Encoding", "gzip, deflate")]
    if contact:
        h.append(("From", contact))
    if rank is not None:
        h.append(("X-ABC-Rank", str(rank)))
    return tuple(h)


def name_refusal(url: str, policy: AddressPolicy) -> str | None:
    """What the address rule can say from the URL alone: an IP-literal host of a refused range,
    ``localhost`` or a name under ``.localhost`` (RFC 6761: always loopback); else None.

    >>> p = AddressPolicy()
    >>> name_refusal("http://127.0.0.1:8080/", p), name_refusal("http://[fe80::1]/", p), name_refusal("http://a.localhost/", p)
    ('loopback', 'link_local', 'loopback')
    >>> name_refusal("http://example.org/", p), name_refusal("http://10.0.0.1/", AddressPolicy(allow_private=True))
    (None, None)
    """
    if policy.allow_private:
        return None
    host = hostname_of(url)
    if host == "localhost" or host.endswith(".localhost"):
        return "loopback"
    if host.startswith("["):
        return policy.check(host[1:-1])
    if host[-1:].isdigit() and host.replace(".", "").isdigit():
        return policy.check(host)
    return None


@dataclass
class Response:
    """The outcome of one request: an HTTP response or a transport error."""

    key: Any
    url: str
    status: int = 0                 # 0 when no HTTP response was received
    status_line: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    raw_head: bytes = b""           # the status line and header lines as received, blank line included
    body: bytes = b""
    error: str | None = None        # error kind, e.g. "timeout"; None on a response
    error_detail: str = ""
    t_start: float = 0.0
    t_end: float = 0.0
    new_connections: int = 0
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    ip: str = ""                    # the address the answer came from (curl's PRIMARY_IP; WARC-IP-Address)
    proxied: bool = False           # it went through a proxy (``ip`` is then the proxy's)
    truncated: str = ""             # "type": the body was cut after the headers (--accept-types); WARC-Truncated

    _by_name: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (any case), or None."""
        cached = self._by_name
        if cached is None or cached[0] != len(self.headers):   # built once per response
            d = {}
            for k, v in reversed(self.headers):
                d[k.lower()] = v
            cached = self._by_name = (len(self.headers), d)
        return cached[1].get(name.lower())

    @property
    def content_type(self) -> str:
        ct = self.header("content-type") or ""
        return ct.split(";", 1)[0].strip().lower()


#: libcurl 8.4.0 and later stop a transfer whose body passes ``MAXFILESIZE`` while it streams
#: (``CURLE_FILESIZE_EXCEEDED``), not only by the declared Content-Length
_CURL_CAPS_STREAMS = pycurl.version_info()[2] >= 0x080400


def body_cap(content_type: str, caps: tuple[tuple[str, int], ...], default: int) -> int:
    """``--max-body-bytes`` per type: the cap of the longest prefix in ``caps`` the media type starts
    with, else ``default``.

    >>> caps = (("image/", 2048), ("image/svg", 65536))
    >>> body_cap("image/png", caps, 10), body_cap("image/svg+xml", caps, 10), body_cap("text/html", caps, 10)
    (2048, 65536, 10)
    """
    best, cap = -1, default
    for prefix, n in caps:
        if len(prefix) > best and content_type.startswith(prefix):
            best, cap = len(prefix), n
    return cap


def accepted_type(content_type: str, prefixes: tuple[str, ...]) -> bool:
    """``--accept-types``: is a body of this media type (lower case, no parameters) kept? A type
    matches a prefix it starts with (``image/`` takes ``image/png``); none given: every type.

    >>> accepted_type("image/png", ("text/html", "image/")), accepted_type("video/mp4", ("text/", "image/"))
    (True, False)
    >>> accepted_type("", ("text/html",)), accepted_type("x/y", ())
    (False, True)
    """
    if not prefixes:
        return True
    return any(content_type.startswith(p) for p in prefixes)


class _Transfer:
    """One easy handle and the response it is receiving.

    Body chunks and header lines are appended by libcurl straight into two lists that live
    as long as the handle (``list.append`` as the callbacks: no Python frame per chunk or per
    header line); :meth:`Fetcher._finish` takes them and clears the lists for the next request.
    With a libcurl older than 8.4.0, which caps only by the declared length, :meth:`write`
    counts the body and aborts it at the cap.
    """

    __slots__ = ("curl", "response", "chunks", "size", "cap", "header_lines", "over", "proxy", "refused", "extra",
                 "accept", "type_cut", "caps", "judged")

    def __init__(self, curl: pycurl.Curl):
        self.curl = curl
        self.response: Response | None = None
        self.chunks: list[bytes] = []
        self.size = 0
        self.cap = 0
        self.header_lines: list[bytes] = []
        self.over = False
        self.proxy = ""                   # the proxy of the request in flight ("": direct)
        self.refused = ""                 # why a connect address was refused ("": none was)
        self.extra = False                # the handle sends per-request headers (submit's ``headers``)
        self.accept: tuple[str, ...] = ()  # --accept-types: MIME prefixes whose bodies are kept
        self.type_cut = False             # the body was cut after the headers: a type not accepted
        self.caps: tuple[tuple[str, int], ...] = ()   # --max-body-bytes per type: (prefix, bytes)
        self.judged = False               # the answer's type was looked at (its first body bytes came)

    def write_typed(self, data: bytes):
        """The write callback under ``--accept-types`` or caps per type (``--max-body-bytes``): at
        the first body bytes, the final answer's Content-Type decides whether its body is kept (a 2xx
        of a type not accepted: cut after the headers) and how large it may be."""
        if not self.judged:
            self.judged = True
            ctype = b""
            for line in reversed(self.header_lines):
                if line.startswith(b"HTTP/"):
                    code = line.split(None, 2)[1:2]
                    if not (code and code[0][:1] == b"2"):
                        ctype = None                # a redirect's or an error's body is not judged
                    break
                if ctype == b"" and line[:13].lower() == b"content-type:":
                    ctype = line[13:].split(b";", 1)[0].strip().lower()
            if ctype is not None:
                mime = ctype.decode("latin-1")
                if self.accept and not accepted_type(mime, self.accept):
                    self.type_cut = True
                    return 0                # abort: CURLE_WRITE_ERROR, the head is kept
                if self.caps:
                    self.cap = body_cap(mime, self.caps, self.cap)
        if _CURL_CAPS_STREAMS and not self.caps:
            self.chunks.append(data)
            return None
        return self.write(data)

    def write(self, data: bytes):
        self.size += len(data)
        if self.size > self.cap:
            self.over = True
            return 0                      # abort: CURLE_WRITE_ERROR
        self.chunks.append(data)
        return None


class Fetcher:
    """A ``CurlMulti`` with a pool of reusable easy handles."""

    def __init__(self, *, scope: Scope, user_agent: str, timeout: float, connect_timeout: float,
                 max_body_bytes: int, rank: int = 0, max_connections: int = 64,
                 addresses: AddressPolicy | None = None, proxies: ProxySettings | None = None,
                 ca: CaBundle | None = None, contact: str | None = None, rank_header: bool = False,
                 accept_types: tuple[str, ...] = (), body_caps: tuple[tuple[str, int], ...] = ()):
        self.scope = scope
        self.accept_types = tuple(accept_types)   # --accept-types (empty: every type is kept)
        self.body_caps = tuple(body_caps)         # --max-body-bytes per type (max_body_bytes: the others')
        # without an explicit policy: the resolve list's addresses are the user's choice, all else is checked
        self.addresses = addresses if addresses is not None else AddressPolicy(allowed=scope.addresses)
        self.proxies = proxies if proxies is not None else ProxySettings()
        self.ca = ca
        self._ready: list[Response] = []  # requests refused before any transfer, returned by the next poll
        self.refused = 0                  # connections refused by the address rule
        self.user_agent = user_agent
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_body_bytes = max_body_bytes
        self.rank = rank
        self.multi = pycurl.CurlMulti()
        self.multi.setopt(pycurl.M_MAX_HOST_CONNECTIONS, 1)
        self.multi.setopt(pycurl.M_MAXCONNECTS, max(16, 2 * max_connections))
        self._pool: list[_Transfer] = []
        self._active: dict[pycurl.Curl, _Transfer] = {}
        self.requests = 0
        self.connections = 0
        self._kick = False                # handles added since the last perform()
        # what every request sends after Host (set on each handle in _handle; recorded in the WARC)
        self._req_rest = request_headers(user_agent, contact, rank if rank_header else None)

    @property
    def in_flight(self) -> int:
        return len(self._active) + len(self._ready)

    def _handle(self) -> _Transfer:
        if self._pool:
            return self._pool.pop()
        c = pycurl.Curl()
        t = _Transfer(c)
        c.setopt(pycurl.NOSIGNAL, 1)
        c.setopt(pycurl.FOLLOWLOCATION, 0)
        c.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        c.setopt(pycurl.REDIR_PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        c.setopt(pycurl.PROXY, "")        # set per request (submit); "" also keeps curl off the environment
        c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
        c.setopt(pycurl.HTTP_CONTENT_DECODING, 0)    # bodies are kept as received (decoded for parsing only)
        c.setopt(pycurl.SSL_VERIFYPEER, 1)
        c.setopt(pycurl.SSL_VERIFYHOST, 2)
        if self.ca is not None:
            c.setopt(pycurl.CAINFO, self.ca.path())
            c.setopt(pycurl.PROXY_CAINFO, self.ca.path())
        c.setopt(pycurl.OPENSOCKETFUNCTION, self._opener(t))
        c.setopt(pycurl.USERAGENT, self.user_agent)
        c.setopt(pycurl.TIMEOUT_MS, int(self.timeout * 1000))
        c.setopt(pycurl.CONNECTTIMEOUT_MS, int(self.connect_timeout * 1000))
        # curl stops a body past the largest cap; a smaller cap of its type is counted by write_typed
        c.setopt(pycurl.MAXFILESIZE_LARGE, max([self.max_body_bytes, *(n for _, n in self.body_caps)]))
        c.setopt(pycurl.HTTPHEADER, [f"{k}: {v}" for k, v in self._req_rest[1:]])
        if self.scope.curl_resolve:
            c.setopt(pycurl.RESOLVE, self.scope.curl_resolve)
        if self.accept_types or self.body_caps:
            t.accept = self.accept_types
            t.caps = self.body_caps
            c.setopt(pycurl.WRITEFUNCTION, t.write_typed)
        else:
            c.setopt(pycurl.WRITEFUNCTION, t.chunks.append if _CURL_CAPS_STREAMS else t.write)
        c.setopt(pycurl.HEADERFUNCTION, t.header_lines.append)
        return t

    def _opener(self, t: _Transfer):
        """curl's OPENSOCKETFUNCTION for transfer ``t``: the address rule on every connect address."""
        check = self.addresses.check

        def opensocket(purpose, address):
            ip = address.addr[0]
            if not t.proxy:                   # through a proxy the only connection is to the proxy
                why = check(ip)
                if why is not None:
                    t.refused = f"{why} address {ip}"
                    self.refused += 1
                    return pycurl.SOCKET_BAD
            return socket.socket(address.family, address.socktype, address.protocol)

        return opensocket

    def submit(self, key: Any, url: str, timeout: float | None = None,
               headers: tuple[tuple[str, str], ...] = ()) -> None:
        """Start fetching ``url``; its :class:`Response` comes back from :meth:`poll`. ``headers``:
        more request headers for this request only (e.g. ``If-None-Match``)."""
        if not (url.startswith("http://") or url.startswith("https://")):
            raise ScopeViolation(f"refusing non-http(s) URL {url!r}")
        host = host_of(url)
        if not self.scope.allows_url(url):
            raise ScopeViolation(f"refusing {url!r}: its host and port are not in the resolve list")
        self.requests += 1
        why = name_refusal(url, self.addresses)
        if why is not None:                   # judged by name: no transfer at all
            now = time.time()
            self.refused += 1
            self._ready.append(Response(key=key, url=url, error="address_refused", error_detail=f"{why} host in URL",
                                        t_start=now, t_end=now))
            return
        t = self._handle()
        t.size = 0
        t.cap = self.max_body_bytes
        t.over = False
        t.type_cut = False
        t.judged = False
        t.refused = ""
        t.proxy = self.proxies.for_url(url)
        t.curl.setopt(pycurl.PROXY, t.proxy)
        t.response = Response(key=key, url=url, t_start=time.time(),
                              request_headers=[("Host", host), *self._req_rest, *headers])
        # per-request headers (issue 21: conditional requests); a handle that had some gets the usual set back
        if headers or t.extra:
            t.curl.setopt(pycurl.HTTPHEADER, [f"{k}: {v}" for k, v in (*self._req_rest[1:], *headers)])
            t.extra = bool(headers)
        t.curl.setopt(pycurl.URL, url)
        t.curl.setopt(pycurl.TIMEOUT_MS, max(1, int(1000 * (self.timeout if timeout is None else min(timeout, self.timeout)))))
        self._active[t.curl] = t
        self.multi.add_handle(t.curl)
        self._kick = True

    def poll(self, timeout: float = 0.0) -> list[Response]:
        """Drive transfers; wait up to ``timeout`` seconds for activity; return finished ones."""
        if self._ready:
            timeout = 0.0
        if not self._active:
            if timeout > 0:
                time.sleep(timeout)
            done, self._ready = self._ready, []
            return done
        running = len(self._active)
        if self._kick:
            # send what was submitted since the last turn now: select() below watches only
            # sockets that exist, so a new request would otherwise wait for another
            # transfer's event (measured: one whole latency between requests of a batch)
            self._kick = False
            running = self._perform()
        if timeout > 0 and running == len(self._active):
            t = self.multi.timeout()          # libcurl's own next deadline (ms; -1: none)
            if t >= 0:
                timeout = min(timeout, t / 1000.0)
            if timeout > 0:
                self.multi.select(timeout)
        self._perform()
        done, self._ready = self._ready, []
        while True:
            queued, ok, failed = self.multi.info_read()
            for c in ok:
                done.append(self._finish(c, None, ""))
            for c, errno, errmsg in failed:
                done.append(self._finish(c, errno, errmsg))
            if queued == 0:
                break
        return done

    def _perform(self) -> int:
        while True:
            ret, running = self.multi.perform()
            if ret != pycurl.E_CALL_MULTI_PERFORM:
                return running

    def _finish(self, c: pycurl.Curl, errno: int | None, errmsg: str) -> Response:
        t = self._active.pop(c)
        self.multi.remove_handle(c)
        r = t.response
        r.t_end = time.time()
        r.proxied = bool(t.proxy)
        r.new_connections = c.getinfo(pycurl.NUM_CONNECTS)
        self.connections += r.new_connections
        if t.type_cut:                        # --accept-types: an answer whose body was not wanted
            errno = None
            r.truncated = "type"
        if errno is None:
            r.status = c.getinfo(pycurl.RESPONSE_CODE)
            r.ip = c.getinfo(pycurl.PRIMARY_IP)
            r.body = b"".join(t.chunks)
            self._parse_headers(r, t.header_lines)
        elif t.refused:
            r.error, r.error_detail = "address_refused", t.refused
        else:
            r.error = "body_too_large" if t.over else error_kind(errno, errmsg, bool(t.proxy))
            r.error_detail = errmsg
        t.chunks.clear()
        t.header_lines.clear()
        t.response = None
        self._pool.append(t)
        return r

    @staticmethod
    def _parse_headers(r: Response, lines: list[bytes]) -> None:
        """Status line, ``(name, value)`` pairs and the raw head from curl's header lines (one per line).

        After an interim ``1xx`` response curl hands over the final response's lines after
        the interim ones: the last status line (``HTTP/...``) starts the final response.
        ``raw_head`` is that response's head as received, up to and including its blank line
        (trailers of a chunked body, which curl passes after it, are not part of it; they are
        parsed as headers all the same); it stays empty when no blank line came.
        """
        if not lines:
            return
        code = lines[0].split(None, 2)[1:2]
        if code and code[0][:1] == b"1":                   # interim response(s) first: rare
            for i in range(len(lines) - 1, 0, -1):
                if lines[i].startswith(b"HTTP/"):
                    lines = lines[i:]
                    break
        raw = b"".join(lines)
        for i in range(1, len(lines)):                     # the head ends at the first blank line
            if lines[i] == b"\r\n" or lines[i] == b"\n":
                r.raw_head = raw if i == len(lines) - 1 else b"".join(lines[:i + 1])
                break
        first = len(lines[0])
        r.status_line = lines[0].decode("latin-1").strip()
        if len(raw) == first:
            return
        append = r.headers.append
        for line in raw[first:].decode("latin-1").split("\n"):
            k, sep, v = line.partition(":")
            if sep:
                append((k.strip(), v.strip()))

    def close(self) -> None:
        for c in list(self._active):
            self.multi.remove_handle(c)
            c.close()
        self._active.clear()
        for t in self._pool:
            t.curl.close()
        self._pool.clear()
        self.multi.close()
