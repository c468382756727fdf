"""Live progress on rank 0: one updating line on a terminal, a line every few seconds otherwise."""
from __future__ import annotations

import sys
import time

__all__ = ["Progress", "format_bytes"]


def format_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"  # pragma: no cover


class Progress:
    """Prints crawl progress from the globally reduced status vector."""

    def __init__(self, fields: tuple[str, ...], interval: float = 2.0, stream=None):
        self.idx = {f: i for i, f in enumerate(fields)}
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval = 0.25 if self.tty else interval
        self.t0 = time.monotonic()
        self.last = 0.0
        self.last_pages = 0
        self.last_t = self.t0

    def update(self, step: int, status, coordinator=None, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < self.interval:
            return
        g = {k: int(status[i]) for k, i in self.idx.items()}
        dt = max(1e-9, now - self.last_t)
        rate = (g["requests"] - self.last_pages) / dt
        self.last_pages, self.last_t, self.last = g["requests"], now, now
        stats = ""
        if coordinator is not None and coordinator.kernels is not None:
            s = coordinator.kernels.summary()
            stats = f" | graph {s.get('nodes', 0)} nodes, {s.get('scc_count', 0)} SCC, diam {s.get('diameter', 0)}"
        elif coordinator is not None:
            stats = f" | graph {coordinator.n_nodes} nodes"
        line = (f"[{now - self.t0:7.1f}s] step {step:5d} | {g['requests']} req ({rate:.0f}/s), {g['pages_ok']} ok, "
                f"{g['failed']} failed, {g['errors']} errors, {format_bytes(g['bytes'])} | frontier {g['frontier']} | "
                f"exchange MV {format_bytes(g['volume'])}{stats}")
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
