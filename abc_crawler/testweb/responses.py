"""HTTP/1.1 responses of the test web's server: heads, short status bodies, and :class:`Plan`.

A plain response is ``(status, head, body)``: ``head`` is the status line and
headers without ``Date``/``Connection`` and the final blank line (the
connection adds those), ``body`` bytes. A :class:`Plan` stands for a body that
is not one plain byte string (generated, streamed, dripped, cut or stalled).
"""
from __future__ import annotations

import email.utils
import hashlib
import mimetypes

__all__ = ["REASONS", "HTML_TYPE", "ServerError", "Plan", "status_body", "response_head", "guess_type",
           "patch_head", "validator_headers", "not_modified", "not_modified_head"]

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


# -- conditional requests (RFC 9110 section 13) ---------------------------------------------------

def validator_headers(body: bytes, mtime: float) -> str:
    r"""``ETag`` and ``Last-Modified`` header lines of a static representation.

    The entity tag is strong (no ``W/``): a hash of the body, so it changes exactly when the bytes
    do; Last-Modified is the file's modification time (whole seconds, as HTTP-dates have).

    >>> validator_headers(b"abc", 0.0)
    'ETag: "a9993e364706816a"\r\nLast-Modified: Thu, 01 Jan 1970 00:00:00 GMT\r\n'
    """
    tag = hashlib.sha1(body).hexdigest()[:16]
    return f'ETag: "{tag}"\r\nLast-Modified: {email.utils.formatdate(int(mtime), usegmt=True)}\r\n'


def _head_field(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        k, sep, v = line.partition(b":")
        if sep and k.strip().lower() == name:
            return v.strip()
    return None


def _opaque(tag: bytes) -> bytes:
    """An entity tag for the weak comparison (RFC 9110 8.8.3.2): ``W/`` dropped."""
    return tag[2:] if tag[:2] == b"W/" else tag


def not_modified(head: bytes, if_none_match: bytes | None, if_modified_since: bytes | None) -> bool:
    r"""True when a GET or HEAD of the representation whose 200 ``head`` is given must be answered 304.

    RFC 9110 13.2.2: ``If-None-Match`` is evaluated first, with the weak comparison (``*`` matches
    any current representation); when it is present ``If-Modified-Since`` is ignored. Otherwise
    ``If-Modified-Since`` (ignored unless one valid HTTP-date) is false when the representation was
    last modified at or before the date given.

    >>> h = b'HTTP/1.1 200 OK\r\nETag: "x1"\r\nLast-Modified: Thu, 01 Jan 1970 00:01:00 GMT\r\n'
    >>> not_modified(h, b'"x0", W/"x1"', None), not_modified(h, b'"x0"', b"Thu, 01 Jan 1970 00:02:00 GMT")
    (True, False)
    >>> not_modified(h, None, b"Thu, 01 Jan 1970 00:01:00 GMT"), not_modified(h, None, b"Thu, 01 Jan 1970 00:00:59 GMT")
    (True, False)
    >>> not_modified(h, b"*", None), not_modified(h, None, b"yesterday")
    (True, False)
    """
    if if_none_match is not None:
        etag = _head_field(head, b"etag")
        if etag is None:
            return False
        if if_none_match.strip() == b"*":
            return True
        mine = _opaque(etag)
        return any(_opaque(t.strip()) == mine for t in if_none_match.split(b",") if t.strip())
    if if_modified_since is None or b"," in if_modified_since.replace(b", ", b" ", 1):
        return False        # absent, or more than one member
    lm = _head_field(head, b"last-modified")
    if lm is None:
        return False
    try:
        since = email.utils.parsedate_to_datetime(if_modified_since.decode("latin-1"))
        modified = email.utils.parsedate_to_datetime(lm.decode("latin-1"))
    except (TypeError, ValueError, IndexError):
        return False        # not a valid HTTP-date: ignored
    return modified <= since


def not_modified_head(head: bytes) -> bytes:
    """The 304 head for a 200 ``head``: status line, ``Server`` and the validators (RFC 9110 15.4.5:
    no Content-Length, no body)."""
    out = b"HTTP/1.1 304 Not Modified\r\nServer: abc-testweb\r\n"
    for name, field in ((b"etag", b"ETag"), (b"last-modified", b"Last-Modified")):
        v = _head_field(head, name)
        if v is not None:
            out += field + b": " + v + b"\r\n"
    return out
