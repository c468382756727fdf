"""HTTP/1.1 responses of the test web's server: heads, short status bodies, and :class:`Plan`.

A plain response is ``(status, head, body)``: ``head`` is the status line and
headers without ``Date``/``Connection`` and the final blank line (the
connection adds those), ``body`` bytes. A :class:`Plan` stands for a body that
is not one plain byte string (generated, streamed, dripped, cut or stalled).
"""
from __future__ import annotations

import mimetypes

__all__ = ["REASONS", "HTML_TYPE", "ServerError", "Plan", "status_body", "response_head", "guess_type",
           "patch_head"]

REASONS = {
    200: "OK", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
    307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request", 403: "Forbidden",
    404: "Not Found", 405: "Method Not Allowed", 410: "Gone", 414: "URI Too Long",
    429: "Too Many Requests", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
    501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
    505: "HTTP Version Not Supported",
}

#: Content type of the server's own HTML bodies.
HTML_TYPE = "text/html; charset=utf-8"


class ServerError(RuntimeError):
    """The server cannot start (bad web directory, address in use, ...)."""


def status_body(status: int) -> bytes:
    """A short HTML page naming ``status``."""
    reason = REASONS.get(status, "Status")
    return (f"<!DOCTYPE html>\n<html><head><title>{status} {reason}</title></head>"
            f"<body><h1>{status} {reason}</h1></body></html>\n").encode()


def response_head(status: int, ctype: str | None, length: int | None, location: str | None = None,
                  extra: str = "") -> bytes:
    """Status line and headers (``extra``: more header lines, each ending in CRLF); no blank line."""
    h = f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}\r\nServer: abc-testweb\r\n"
    if ctype:
        h += f"Content-Type: {ctype}\r\n"
    if length is not None:   # None: no Content-Length (the body ends when the connection closes)
        h += f"Content-Length: {length}\r\n"
    if location is not None:
        h += f"Location: {location}\r\n"
    return (h + extra).encode("latin-1", "replace")


def guess_type(name: str) -> str:
    """Content type of a file name (``; charset=utf-8`` for text, JSON and JavaScript)."""
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


def patch_head(head: bytes, length: int | None, add: list[tuple[str, str]], drop=(b"content-length",)) -> bytes:
    """``head`` with its Content-Length replaced by ``length`` (None: removed) and headers ``add`` appended."""
    lines = head.split(b"\r\n")
    keep = [lines[0]] + [ln for ln in lines[1:] if ln and ln.split(b":", 1)[0].strip().lower() not in drop]
    if length is not None:
        keep.append(b"Content-Length: %d" % length)
    keep += [f"{k}: {v}".encode("latin-1", "replace") for k, v in add]
    return b"\r\n".join(keep) + b"\r\n"
