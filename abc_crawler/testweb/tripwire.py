"""Loopback tripwire: a listener that records every connection attempt, for tests that must not touch it.

A crawler that obeys its resolve list never connects to an address or port
outside it.  A tripwire listens there and remembers who came::

    with Tripwire("127.0.0.2", port) as tw:      # port 0: any free port (tw.port)
        ... run the crawl ...
    assert not tw.touched, tw.hits              # or tw.assert_untouched()

    with tripwires(manifest["expected_hostile"]["never_contacted"]) as tws:
        ...
    assert not any(t.touched for t in tws)

Every accepted connection becomes a hit ``{"peer": (addr, port), "t":
time.time(), "data": first bytes received}``: the listener reads for up to
``read_seconds`` (what was asked: an HTTP request line, a TLS ClientHello,
an FTP client waiting for a banner sends nothing), answers nothing, then
closes.  Only loopback addresses (127.0.0.0/8) are accepted.  The listener
thread stops when the block ends or, at the latest, after ``max_seconds``;
either way the socket is closed, after taking the connections still waiting to
be accepted: once the block has ended, ``hits`` is final.
"""
from __future__ import annotations

import contextlib
import ipaddress
import select
import socket
import threading
import time

__all__ = ["Tripwire", "tripwires"]


class Tripwire:
    """Listen on a loopback ``addr:port`` and record every connection; a context manager."""

    __test__ = False

    def __init__(self, addr: str = "127.0.0.2", port: int = 0, *, max_seconds: float = 600.0,
                 read_seconds: float = 0.3, read_bytes: int = 4096):
        try:
            ip = ipaddress.ip_address(addr)
        except ValueError:
            raise ValueError(f"tripwire address {addr!r} is not an IPv4 address") from None
        if ip.version != 4 or not ip.is_loopback:
            raise ValueError(f"tripwire address {addr} is not on loopback (127.0.0.0/8)")
        self.addr = addr
        self.port = int(port)
        self.max_seconds = max_seconds
        self.read_seconds = read_seconds
        self.read_bytes = read_bytes
        self.hits: list[dict] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    @property
    def touched(self) -> bool:
        with self._lock:
            return bool(self.hits)

    def start(self) -> "Tripwire":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((self.addr, self.port))
            s.listen(64)
        except OSError:
            s.close()
            raise
        s.setblocking(False)
        self._sock = s
        self.port = s.getsockname()[1]
        self._thread = threading.Thread(target=self._run, name=f"tripwire-{self.addr}:{self.port}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        deadline = time.monotonic() + self.max_seconds
        s = self._sock
        try:
            while not self._stop.is_set() and time.monotonic() < deadline:
                r, _, _ = select.select([s], [], [], 0.05)
                if not r:
                    continue
                try:
                    conn, peer = s.accept()
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    break
                self._hit(conn, peer)
        finally:
            # connections the kernel completed but nobody accepted yet are hits too: after stop()
            # the hits are final (a test reads them then, without waiting)
            while True:
                try:
                    conn, peer = s.accept()
                except OSError:
                    break
                self._hit(conn, peer)
            s.close()

    def _hit(self, conn: socket.socket, peer) -> None:
        hit = {"peer": peer, "t": time.time(), "data": b""}
        with self._lock:
            self.hits.append(hit)
        self._read(conn, hit)

    def _read(self, conn: socket.socket, hit: dict) -> None:
        end = time.monotonic() + self.read_seconds
        data = b""
        try:
            conn.setblocking(False)
            while len(data) < self.read_bytes and not self._stop.is_set():
                left = end - time.monotonic()
                if left <= 0:
                    break
                r, _, _ = select.select([conn], [], [], min(left, 0.05))
                if not r:
                    continue
                chunk = conn.recv(self.read_bytes - len(data))
                if not chunk:
                    break
                data += chunk
            while len(data) < self.read_bytes:     # what has arrived already, also once stopped
                chunk = conn.recv(self.read_bytes - len(data))
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        finally:
            conn.close()
        with self._lock:
            hit["data"] = data

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the listener has stopped (``stop()`` or ``max_seconds``); True if it has."""
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def assert_untouched(self) -> None:
        with self._lock:
            hits = list(self.hits)
        if hits:
            raise AssertionError(f"tripwire {self.addr}:{self.port} was touched {len(hits)} time(s): "
                                 f"{[(h['peer'], h['data'][:80]) for h in hits[:3]]}")

    def __enter__(self) -> "Tripwire":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@contextlib.contextmanager
def tripwires(addrs, **kw):
    """Tripwires on every ``(addr, port)`` of ``addrs`` (e.g. the manifest's ``never_contacted``)."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(Tripwire(a, int(p), **kw)) for a, p in addrs]
