"""A small HTTP forward proxy on loopback, for tests of ``abc-crawl --proxy``.

It forwards absolute-form requests (``GET http://host:port/path HTTP/1.1``) and
tunnels ``CONNECT host:port`` (https), one request per client connection
(``Connection: close`` upstream and back), and writes one JSON line per request
to its access log: ``{"method", "host", "port", "path", "status", "t"}``
(``path`` is ``""`` for a CONNECT). It never looks a name up: a target host is
mapped to an address by a resolve list (``HOST:PORT:ADDR`` lines, like
``abc-crawl --resolve``) or is an IP literal, and only loopback addresses are
connected to; anything else is answered ``502`` (unknown name) or ``403`` (not
loopback) and logged as such.

Usage::

    with ForwardProxy(resolve=["h000.test:8080:127.0.0.1"], access_log="proxy.jsonl") as p:
        ...  # abc-crawl ... --proxy http://127.0.0.1:{p.port}
"""
from __future__ import annotations

import asyncio
import ipaddress
import json
import threading
import time

from .responses import ServerError, status_body

__all__ = ["ForwardProxy", "run_proxy"]

MAX_HEAD = 65536


def _resolve_map(lines) -> dict[tuple[str, int], str]:
    out: dict[tuple[str, int], str] = {}
    for raw in lines or ():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        host, port, addr = line.split(":", 2)
        out[(host.lower(), int(port))] = addr.strip("[]")
    return out


class _Proxy:
    def __init__(self, resolve: dict, log_path=None):
        self.resolve = resolve
        self.log = open(log_path, "a", buffering=1) if log_path else None
        self.requests = 0

    def _record(self, method: str, host: str, port: int, path: str, status: int) -> None:
        self.requests += 1
        if self.log:
            self.log.write(json.dumps({"method": method, "host": host, "port": port, "path": path,
                                       "status": status, "t": round(time.time(), 6)}) + "\n")

    def _address(self, host: str, port: int) -> tuple[str | None, int]:
        """(address, status): the loopback address to connect to, or None and the status to answer."""
        literal = host[1:-1] if host.startswith("[") else host
        try:
            ip = ipaddress.ip_address(literal)
        except ValueError:
            addr = self.resolve.get((host.lower().rstrip("."), port))
            if addr is None:
                return None, 502
            ip = ipaddress.ip_address(addr)
        return (str(ip), 200) if ip.is_loopback else (None, 403)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            await self._answer(writer, 400)
            return
        method, target, version = parts
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            await self._tunnel(reader, writer, host, int(port) if port.isdigit() else 443)
            return
        if not target.lower().startswith("http://"):
            self._record(method, "", 0, target, 400)
            await self._answer(writer, 400)
            return
        rest = target[7:]
        slash = rest.find("/")
        netloc, path = (rest, "/") if slash < 0 else (rest[:slash], rest[slash:])
        if netloc.startswith("["):
            end = netloc.find("]")
            host, port_s = netloc[:end + 1], netloc[end + 2:]
        else:
            host, _, port_s = netloc.partition(":")
        port = int(port_s) if port_s.isdigit() else 80
        addr, status = self._address(host, port)
        if addr is None:
            self._record(method, host, port, path, status)
            await self._answer(writer, status)
            return
        try:
            up_r, up_w = await asyncio.open_connection(addr, port)
        except OSError:
            self._record(method, host, port, path, 502)
            await self._answer(writer, 502)
            return
        out = [f"{method} {path} {version}"]
        for ln in lines[1:]:
            name = ln.split(":", 1)[0].strip().lower()
            if ln and name not in ("proxy-connection", "proxy-authorization", "connection", "keep-alive"):
                out.append(ln)
        out.append("Connection: close")
        up_w.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1"))
        await up_w.drain()
        status = 0
        try:
            first = True
            while True:
                chunk = await up_r.read(1 << 16)
                if not chunk:
                    break
                if first:
                    first = False
                    try:
                        status = int(chunk.split(b" ", 2)[1])
                    except (IndexError, ValueError):
                        status = 0
                writer.write(chunk)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            self._record(method, host, port, path, status)
            up_w.close()
            writer.close()

    async def _tunnel(self, reader, writer, host: str, port: int) -> None:
        addr, status = self._address(host, port)
        if addr is None:
            self._record("CONNECT", host, port, "", status)
            await self._answer(writer, status)
            return
        try:
            up_r, up_w = await asyncio.open_connection(addr, port)
        except OSError:
            self._record("CONNECT", host, port, "", 502)
            await self._answer(writer, 502)
            return
        self._record("CONNECT", host, port, "", 200)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()

        async def pipe(src, dst):
            try:
                while True:
                    chunk = await src.read(1 << 16)
                    if not chunk:
                        break
                    dst.write(chunk)
                    await dst.drain()
            except ConnectionError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))

    @staticmethod
    async def _answer(writer, status: int) -> None:
        body = status_body(status)
        writer.write(f"HTTP/1.1 {status} Proxy\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + body)
        try:
            await writer.drain()
        except ConnectionError:
            pass
        writer.close()


class ForwardProxy:
    """The proxy in a background thread (a context manager); ``port=0`` picks a free port."""

    __test__ = False

    def __init__(self, addr: str = "127.0.0.1", port: int = 0, resolve=(), access_log=None,
                 max_seconds: float | None = None):
        from .server import check_loopback

        self.addr = check_loopback(addr)
        self.port = int(port)
        self._proxy = _Proxy(_resolve_map(resolve), access_log)
        self.max_seconds = max_seconds
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def requests(self) -> int:
        return self._proxy.requests

    def start(self) -> "ForwardProxy":
        ready = threading.Event()
        error: list = []

        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            try:
                server = loop.run_until_complete(asyncio.start_server(self._proxy.handle, self.addr, self.port,
                                                                      limit=MAX_HEAD))
            except OSError as exc:
                error.append(ServerError(f"proxy cannot listen on {self.addr}:{self.port}: {exc.strerror or exc}"))
                ready.set()
                loop.close()
                return
            self.port = server.sockets[0].getsockname()[1]
            if self.max_seconds is not None:
                loop.call_later(self.max_seconds, loop.stop)
            ready.set()
            try:
                loop.run_forever()
            finally:
                server.close()
                # connections still open (a CONNECT tunnel's two pipes) end here, in the loop,
                # not when their coroutines are collected after it is closed
                # (gather of nothing would look for the thread's current loop, which is none)
                pending = asyncio.all_tasks(loop)
                if pending:
                    for task in pending:
                        task.cancel()
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(asyncio.sleep(0))
                loop.close()
                if self._proxy.log:
                    self._proxy.log.close()

        self._thread = threading.Thread(target=run, name="abc-testweb-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if error:
            raise error[0]
        return self

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        try:
            self._loop.call_soon_threadsafe(self._loop.stop)
        except RuntimeError:
            pass
        self._thread.join(10)

    def __enter__(self) -> "ForwardProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def run_proxy(addr: str, port: int, resolve=(), access_log=None, max_seconds: float | None = 3600.0,
              ready_file=None) -> None:
    """Run the proxy in the calling thread until SIGINT/SIGTERM or ``max_seconds``; ``ready_file``
    gets ``{"addr", "port", "pid"}`` once it listens."""
    import os
    import signal

    p = ForwardProxy(addr, port, resolve, access_log, max_seconds).start()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    if ready_file:
        tmp = f"{ready_file}.tmp{os.getpid()}"
        with open(tmp, "w") as fh:
            json.dump({"addr": p.addr, "port": p.port, "pid": os.getpid()}, fh)
        os.replace(tmp, ready_file)
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    while not stop.wait(0.2):
        if deadline is not None and time.monotonic() > deadline:
            break
    p.stop()
