"""HTTP/1.1 over asyncio: one :class:`Connection` per accepted socket of the test web's server.

Keep-alive by default (HTTP/1.1; HTTP/1.0 with ``Connection: keep-alive``),
``Connection: close`` honoured, pipelined requests answered in order, GET and
HEAD (other methods: 405; a chunked request body: 501; a head over 64 KiB:
431; ``FLUSH``: the test hook that flushes the access log, below), every plain response with ``Content-Length``. The virtual host is the
``Host`` header (case-insensitive, port ignored) or the host of an
absolute-form request target. Conditional GET and HEAD are answered as RFC
9110 13.2.2 says (``If-None-Match`` first, weak comparison; else
``If-Modified-Since``): ``304 Not Modified`` with the validators and no body,
logged with status 304. A :class:`~.responses.Plan` is sent by its
transport (normal, drip, reset, stall), with backpressure: the transport's
write buffer limit is 0, so ``pause_writing``/``resume_writing`` pace the
body in 256 KiB writes and a slow reader never makes the server hold a
100 MiB body; no further request is read while one is in progress.

The connection calls back into its server object (``core``): ``site``
(a :class:`.routes.WebSite`), ``date`` (the current ``Date:`` header line),
``latency``, ``conns``, ``next_cid``, ``record(...)`` (one access-log line), ``conn_ended()``
and ``flush_log(conn)``.

``FLUSH / HTTP/1.1`` (any target and Host) is answered once every other connection has ended
(at most 10 s) and the access log has been flushed: ``200`` with a JSON body ``{"log_bytes",
"open", "requests", "time"}`` (the log's size, connections still open, requests logged, the
server's ``time.time()``). It is neither logged nor counted, so a test reads the log of what
came before it deterministically (a crawler sends only GET).
"""
from __future__ import annotations

import asyncio
import json
import socket
import struct
import time

from .responses import HTML_TYPE, Plan, not_modified, not_modified_head, response_head, status_body

__all__ = ["Connection", "MAX_HEAD"]

#: Longest request head (request line and headers) read; longer: 431.
MAX_HEAD = 65536


class Connection(asyncio.Protocol):
    """One client connection (see the module docstring)."""

    __slots__ = ("core", "transport", "cid", "buf", "t0", "last", "paused", "pending", "closing",
                 "nreq", "discard", "waiting", "run", "scheme")

    def __init__(self, core, scheme: str = "http"):
        self.core = core
        self.scheme = scheme      # "https" on the server's TLS port
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
        # resume_writing() when the buffer is empty: exact end-of-response times. Not over TLS:
        # asyncio's TLS transport reports its buffer drained late (up to the next read), which
        # held back the next request and the log record by 100s of ms; there the default limits
        # apply and a response is logged when it is handed to the TLS layer.
        if self.scheme == "http":
            transport.set_write_buffer_limits(high=0, low=0)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

    def connection_lost(self, exc) -> None:
        self.core.conns.discard(self)
        self.core.conn_ended()
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
            rec(*p[:8], t1, p[8], tw=p[9], scheme=self.scheme)
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
        body = status_body(status)
        self._send(status, response_head(status, HTML_TYPE, len(body)), body,
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
        inm = ims = None
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
            elif name == b"if-none-match":
                inm = value if inm is None else inm + b"," + value     # a list may span several lines
            elif name == b"if-modified-since":
                ims = value.strip() if ims is None else ims + b"," + value.strip()
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
        if method == "FLUSH":
            # the test hook (docs/TESTWEB.md, "Reading the access log"): answered once every other
            # connection has ended and the access log is flushed; never logged itself
            self.waiting = True
            asyncio.get_running_loop().create_task(self._flush_answer(keep))
            return
        if method not in ("GET", "HEAD"):
            body = status_body(405)
            self._send(405, response_head(405, HTML_TYPE, len(body), None, "Allow: GET, HEAD\r\n"),
                       body, keep, method, hs, target, rank)
            return
        moved = self.core.redirect_to_https(hs, target) if self.scheme == "http" else None
        status, rhead, body = moved if moved is not None else self.core.site.respond(hs, target)
        if (inm is not None or ims is not None) and status == 200 and type(body) is bytes \
                and not_modified(rhead, inm, ims):
            status, rhead, body = 304, not_modified_head(rhead), b""
        if method == "HEAD" and type(body) is bytes:
            body = b""
        if self.core.latency > 0:
            # hold the response back; this connection reads no further request meanwhile
            self.waiting = True
            asyncio.get_running_loop().call_later(self.core.latency, self._delayed, self.t0,
                                                  (status, rhead, body, keep, method, hs, target, rank))
            return
        self._send(status, rhead, body, keep, method, hs, target, rank)

    async def _flush_answer(self, keep: bool) -> None:
        info = await self.core.flush_log(self)
        self.waiting = False
        if self.closing:
            return
        body = (json.dumps(info) + "\n").encode()
        head = response_head(200, "application/json", len(body))
        self.transport.write(head + self.core.date + (b"Connection: keep-alive\r\n\r\n" if keep
                                                      else b"Connection: close\r\n\r\n") + body)
        self.last = time.monotonic()
        if not keep:
            self.closing = True
            self.buf.clear()
            self.transport.close()
        elif self.buf and not self.paused:
            self.t0 = time.time()
            self._process()

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
        tw = time.time()        # before the last write: the client cannot have the response before it
        if len(body) < 65536:
            self.transport.write(rhead + tail + body)
        else:
            self.transport.write(rhead + tail)
            tw = time.time()
            self.transport.write(body)
        rec = (self.cid, self.nreq, method, host, target, status, len(body), self.t0)
        self.nreq += 1
        if self.paused:
            self.pending.append(rec + (rank, tw))
        else:
            core.record(*rec, time.time(), rank, tw=tw, scheme=self.scheme)
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
            run.tw = time.time()
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
            run.tw = time.time()
            self.transport.write(head)
            run.it = plan.body_iter(ra) if has_body else iter(())
            self._pump()
        elif tr == "drip":
            run.src = plan.body_iter() if has_body else iter(())
            if o.get("drip_headers"):
                run.pending = bytearray(head)
                run.skip = len(head)
            else:
                run.tw = time.time()
                self.transport.write(head)
            self._drip_more(first=True)
        else:
            run.tw = time.time()
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
            run.tw = time.time()
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
            run.tw = time.time()
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
                         time.time(), run.rank, p.note, end, tw=run.tw, scheme=self.scheme)
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
                 "pending", "skip", "dripped", "tw")

    def __init__(self, plan, keep, method, host, target, rank, t0, req):
        self.plan, self.keep, self.method, self.host, self.target = plan, keep, method, host, target
        self.rank, self.t0, self.req = rank, t0, req
        self.it = None         # body pieces still to pump (normal, reset)
        self.src = None        # body pieces still to drip
        self.sent = 0          # body bytes handed to the socket
        self.timer = None
        self.pending = bytearray()
        self.tw = None         # time.time() before the last write of a response byte (None: none yet)
        self.skip = 0          # header bytes at the front of a dripped stream
        self.dripped = 0
