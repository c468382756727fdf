"""Limits that keep a crawl finite and safe on hostile servers (pure functions).

* :func:`trap_reason` — URL length, path depth and repeated path segments
  (path-repetition traps such as ``/a/a/a/…`` made by relative links);
* :func:`retry_delay` — back-off before a retry, honouring ``Retry-After``;
* :func:`inflate` — decoding a ``Content-Encoding`` body for parsing, with a cap
  on the inflated size (gzip and deflate bombs).

Examples
--------
>>> trap_reason("http://h.test/a/a/a/a/x.html", max_length=2048, max_depth=32, max_repeats=3)
'path_repetition'
>>> retry_delay(attempt=1, retry_after="7", base=1.0, cap=60.0)
7.0
>>> retry_delay(attempt=2, retry_after=None, base=1.0, cap=60.0)
4.0
"""
from __future__ import annotations

import zlib
from collections import Counter
from email.utils import parsedate_to_datetime

__all__ = ["trap_reason", "retry_delay", "inflate", "InflateError", "RETRYABLE_ERRORS", "RETRYABLE_STATUS"]

RETRYABLE_ERRORS = frozenset({"timeout", "connect_failed", "recv_error", "send_error", "empty_reply", "partial_body"})
RETRYABLE_STATUS = frozenset({429, 503})


def trap_reason(url: str, *, max_length: int, max_depth: int, max_repeats: int) -> str | None:
    """Why a canonical URL is refused as a likely trap, or None."""
    if len(url) > max_length:
        return "url_too_long"
    start = url.find("/", url.find("://") + 3)
    if start < 0:
        return None
    path = url[start:]
    q = path.find("?")
    if q >= 0:
        path = path[:q]
    if path.count("/") <= max_depth and path.count("/") <= max_repeats:
        return None                     # fewer segments than either limit
    segments = [s for s in path.split("/") if s]
    if len(segments) > max_depth:
        return "path_too_deep"
    if len(segments) > max_repeats:
        if Counter(segments).most_common(1)[0][1] > max_repeats:
            return "path_repetition"
    return None


def retry_delay(attempt: int, retry_after: str | None, base: float, cap: float) -> float:
    """Seconds to wait before retry number ``attempt`` (1, 2, …)."""
    if retry_after:
        ra = retry_after.strip()
        try:
            secs = float(ra) if ra.replace(".", "", 1).isdigit() else None
        except ValueError:
            secs = None
        if secs is None:
            try:
                import time

                secs = parsedate_to_datetime(ra).timestamp() - time.time()
            except (TypeError, ValueError, IndexError, OverflowError):
                secs = None
        if secs is not None:
            return float(min(max(secs, 0.0), cap))
    return float(min(base * 2.0 ** min(max(attempt - 1, 0), 60), cap))   # capped exponent: any attempt count


class InflateError(ValueError):
    """A body that cannot be decoded, or inflates past the cap."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


def inflate(body: bytes, encoding: str | None, cap: int) -> bytes:
    """Decode ``body`` for ``Content-Encoding`` gzip/deflate, never producing more than ``cap`` bytes."""
    enc = (encoding or "").strip().lower()
    if enc in ("", "identity"):
        return body
    if enc in ("gzip", "x-gzip"):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif enc == "deflate":
        # RFC 9110 says zlib format; some servers send raw deflate
        d = zlib.decompressobj() if body[:1] == b"\x78" else zlib.decompressobj(-zlib.MAX_WBITS)
    else:
        raise InflateError("unsupported_content_encoding")
    try:
        out = d.decompress(body, cap + 1)
    except zlib.error:
        raise InflateError("bad_content_encoding") from None
    if len(out) > cap or d.unconsumed_tail:
        raise InflateError("decompression_bomb")
    return out
