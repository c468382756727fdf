"""Each rank's crawl log, in Heritrix's ``crawl.log`` format: one line per fetch attempt.

A rank appends one line to ``SESSION/logs/crawl/rank-NNNNN.log`` for every answer it gets (pages,
robots.txt, sitemap files: retries, slot cuts and failures each have their line) and for every URL
it gives up without a request (robots.txt disallows it, its host was given up). Fields, separated
by one space (:func:`format_line`; docs/SESSION_FORMAT.md says what each holds)::

    2026-11-27T15:04:05.168Z   200       5120 http://h001.test/d1/p3.html L http://h001.test/ text/html #003 20261127150405123+45 sha1:2ZVB… - -

timestamp of the line (UTC, ms), status (the HTTP status, or a negative code: :data:`ERROR_CODES`),
body bytes (``-`` without an HTTP answer), URL, discovery path (hop letters), via (the referrer),
MIME type, the rank as ``#NNN``, fetch start (17 digits, UTC) ``+`` duration in ms, the payload's
SHA-1 (``sha1:BASE32``, the ``WARC-Payload-Digest``), the source tag (``-``), annotations.

Lines go through a 1 MiB buffer: written to the file at most a second after the line before
(when the next line or the next superstep comes), and flushed and fsynced at every checkpoint and
at the end, like the WARC files (a line costs one f-string, no system call). A resumed rank
appends; a line cut by a kill (the file's last bytes after its last newline) is removed first.

``abc-report SESSION --crawl-log`` merges the ranks' files in time order (:func:`merge`).

>>> format_line(1795014245.168, 200, 5120, "http://h.test/", "-", "-", "text/html", "#003",
...             1795014245.123, 1795014245.168, "sha1:X", "-")
'2026-11-18T15:04:05.168Z   200       5120 http://h.test/ - - text/html #003 20261118150405123+45 sha1:X - -\\n'
>>> status_code("timeout"), status_code("tls_expired"), status_code("robots_disallowed"), status_code("curl_99")
(-4, -2, -9998, -3)
"""
from __future__ import annotations

import hashlib
import heapq
import os
import time
from pathlib import Path
from typing import Iterable, Iterator

__all__ = ["CrawlLog", "ERROR_CODES", "status_code", "format_line", "log_path", "log_files", "read_lines",
           "merge", "payload_digest", "FLUSH_SECONDS", "TIMESTAMP_CHARS"]

#: the directory of the crawl logs, under the session directory
LOG_DIR = Path("logs") / "crawl"
#: seconds a line may wait in the buffer while lines keep coming
FLUSH_SECONDS = 1.0
#: width of the timestamp that starts every line (the merge key)
TIMESTAMP_CHARS = 24
_BUFFER = 1 << 20

#: ABC's failure kinds (``stats.json``'s ``errors``) as Heritrix's negative fetch status codes
#: (Heritrix's ``FetchStatusCodes``); kinds not listed: :func:`status_code`
ERROR_CODES = {
    "dns_failed": -6, "proxy_dns_failed": -6,                       # S_DOMAIN_PREREQUISITE_FAILURE
    "connect_failed": -2, "proxy_connect_failed": -2,               # S_CONNECT_FAILED
    "proxy_refused": -2, "proxy_failed": -2,
    "recv_error": -3, "send_error": -3, "empty_reply": -3,          # S_CONNECT_LOST
    "partial_body": -3, "body_too_large": -3, "bad_content_encoding": -3,
    "timeout": -4, "slot_too_short": -4, "slot_never_full": -4,     # S_TIMEOUT
    "unsupported_protocol": -7, "too_many_redirects": -7,           # S_UNFETCHABLE_URI
    "address_refused": -5001, "crawl_delay_too_long": -5001,        # S_BLOCKED_BY_USER
    "host_unreachable": -62,                                        # S_OTHER_PREREQUISITE_FAILURE
    "robots_unavailable": -61,                                      # S_ROBOTS_PREREQUISITE_FAILURE
    "robots_disallowed": -9998,                                     # S_ROBOTS_PRECLUDED
}


def status_code(kind: str) -> int:
    """The negative status of a failure kind: :data:`ERROR_CODES`; ``tls_*`` -2 (the handshake is
    part of connecting), ``robots_*`` -61 (a host given up for its robots.txt), ``internal_*`` -5
    (a crawler bug: S_RUNTIME_EXCEPTION), any other transport error (``curl_N``) -3."""
    code = ERROR_CODES.get(kind)
    if code is not None:
        return code
    if kind.startswith("tls_"):
        return -2
    if kind.startswith("robots_"):
        return -61
    if kind.startswith("internal_"):
        return -5
    return -3


def log_path(session_dir, rank: int) -> Path:
    """``SESSION/logs/crawl/rank-NNNNN.log``: a rank's own file (docs/SESSION_FORMAT.md)."""
    return Path(session_dir) / LOG_DIR / f"rank-{rank:05d}.log"


def payload_digest(body: bytes) -> str:
    """``sha1:BASE32`` of a body (what the WARC writer puts in ``WARC-Payload-Digest``)."""
    from .digests import b32_sha1

    return "sha1:" + b32_sha1(hashlib.sha1(body).digest())


#: the two seconds formatted last, newest first: [(second, "YYYY-MM-DDTHH:MM:SS", "YYYYMMDDHHMMSS")] (a line
#: stamps the time of writing and of the request, which may fall in the second before it)
_stamp_cache: list = [(None, "", ""), (None, "", "")]


def _second(sec: int, _c=_stamp_cache) -> tuple:
    cached = _c[0]
    if cached[0] == sec:
        return cached
    older = _c[1]
    if older[0] == sec:
        return older
    tm = time.gmtime(sec)
    fresh = (sec, time.strftime("%Y-%m-%dT%H:%M:%S", tm), time.strftime("%Y%m%d%H%M%S", tm))
    _c[0], _c[1] = fresh, cached
    return fresh


_MS = [f"{i:03d}" for i in range(1000)]            # milliseconds as three digits, without a format spec
_STATUS: dict[int, str] = {}                      # status -> right-aligned in 5 columns


def format_line(t: float, status: int, size, url: str, path: str, via: str, mime: str, worker: str,
                t_start: float | None, t_end: float, digest: str, notes: str) -> str:
    """One line (``\\n`` ended): times are ``time.time()`` values; ``size`` an int or ``"-"``;
    ``worker`` ``#NNN``; ``t_start`` None: no request (``-`` for the fetch time). A few µs: the
    formatted second is cached, numbers are padded without format specs."""
    ms = int(t * 1000)
    s = _second(ms // 1000)
    st = _STATUS.get(status)
    if st is None:
        st = _STATUS[status] = str(status).rjust(5)
    if t_start is None:
        fetch = "-"
    else:
        ms0 = int(t_start * 1000)
        fetch = f"{_second(ms0 // 1000)[2]}{_MS[ms0 % 1000]}+{max(0, int((t_end - t_start) * 1000))}"
    return (f"{s[1]}.{_MS[ms % 1000]}Z {st} {str(size).rjust(10)} {url} {path} {via} {mime} {worker} {fetch} "
            f"{digest} - {notes}\n")


class CrawlLog:
    """The crawl log of one rank (``enabled`` False: no file, lines dropped)."""

    def __init__(self, session_dir, rank: int, enabled: bool = True):
        self.rank = rank
        self.worker = f"#{rank:03d}"              # Heritrix's thread number, here the rank
        self.path = log_path(session_dir, rank) if enabled else None
        self.lines = 0
        self._fh = None
        self._flushed = time.time()
        if enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _cut_partial_line(self.path)
            self._fh = open(self.path, "a", encoding="utf-8", newline="\n", buffering=_BUFFER)

    @property
    def enabled(self) -> bool:
        return self._fh is not None

    def write(self, status: int, size, url: str, path: str, via: str, mime: str, t_start: float | None,
              t_end: float, digest: str = "-", notes: str = "-") -> None:
        """Append a line (:func:`format_line`; ``mime`` "" is written ``-``)."""
        fh = self._fh
        if fh is None:
            return
        t = time.time()
        if " " in mime:                          # a header value must not split the fields
            mime = mime.replace(" ", "")
        fh.write(format_line(t, status, size, url, path, via, mime or "-", self.worker, t_start, t_end, digest,
                             notes))
        self.lines += 1
        if t - self._flushed >= FLUSH_SECONDS:
            fh.flush()
            self._flushed = t

    def response(self, r, path: str, via: str, digest: str | None = None, notes: list[str] | None = None) -> None:
        """The line of an answer (:class:`abc_crawler.net.fetcher.Response`): its status, body size and
        type, or the negative code of its error; ``digest`` None: the body's own (HTTP answers)."""
        if r.error is None:
            self.write(r.status, len(r.body), r.url, path, via, r.content_type, r.t_start, r.t_end,
                       payload_digest(r.body) if digest is None else digest, ",".join(notes) if notes else "-")
        else:
            self.write(status_code(r.error), "-", r.url, path, via, "", r.t_start, r.t_end, "-",
                       ",".join([*(notes or ()), f"err={r.error}"]))

    def given_up(self, url: str, kind: str, path: str, via: str) -> None:
        """The line of a URL completed without a request (robots.txt, its host given up)."""
        self.write(status_code(kind), "-", url, path, via, "", None, 0.0, "-", f"err={kind}")

    def tick(self) -> None:
        """Between supersteps: lines older than :data:`FLUSH_SECONDS` go to the file."""
        if self._fh is not None and time.time() - self._flushed >= FLUSH_SECONDS:
            self._fh.flush()
            self._flushed = time.time()

    def flush(self, sync: bool = True) -> None:
        """Every line to the file (and to disk with ``sync``: a checkpoint)."""
        if self._fh is not None:
            self._fh.flush()
            self._flushed = time.time()
            if sync:
                os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self.flush()
            self._fh.close()
            self._fh = None


def _cut_partial_line(path: Path) -> None:
    """Remove what follows the last newline (a line a kill cut in two), so appended lines start a line."""
    try:
        fh = open(path, "r+b")
    except FileNotFoundError:
        return
    with fh:
        size = fh.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            start = max(0, end - 65536)
            fh.seek(start)
            i = fh.read(end - start).rfind(b"\n")
            if i >= 0:
                end = start + i + 1
                break
            end = start
        if end != size:
            fh.truncate(end)


# ---------------------------------------------------------------- reading

def log_files(session_dir) -> dict[int, Path]:
    """rank -> its crawl log, of the files under ``SESSION/logs/crawl/`` on this host."""
    out = {}
    for p in (Path(session_dir) / LOG_DIR).glob("rank-*.log"):
        try:
            out[int(p.name[5:-4])] = p
        except ValueError:
            continue
    return dict(sorted(out.items()))


def read_lines(path) -> Iterator[str]:
    """The complete lines of a crawl log (a last line without its newline, cut by a kill, is left out)."""
    with open(path, encoding="utf-8", newline="\n") as fh:
        for line in fh:
            if line.endswith("\n"):
                yield line


def merge(paths: Iterable) -> Iterator[str]:
    """The lines of several crawl logs in time order (their timestamps), streamed: a k-way merge
    (each file is in the order its rank wrote it; equal times keep the files' order)."""
    return heapq.merge(*(read_lines(p) for p in paths), key=lambda line: line[:TIMESTAMP_CHARS])
