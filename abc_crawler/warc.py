"""Per-rank WARC 1.1 files: request + response records, revisits for duplicates.

Content-seen dedup is per rank: when a body's hash equals one this rank has
already stored, the response is written as a ``revisit`` record (profile
identical-payload-digest) that refers to the first URL, so every fetched URL
still has exactly one response-or-revisit record. Each record is its own gzip
member and the file is flushed at every checkpoint, so a crash leaves every
earlier record readable.

The duplicate decision is made as each page arrives; its records are serialized
and compressed in batches of ``batch`` pages (``--warc-batch``, 64; a batch
also ends at 1 MiB of bodies), always before a checkpoint's offset is taken:
what waits in a batch at a crash was fetched after the last checkpoint, and a
resume fetches it again. One batch after another keeps the compressor's and
the parser's state in the CPU caches (≈ 5 % less CPU per page in a crawl of
6 KB pages, ``docs/benchmarks/perf.md``).

Records are serialized here, not with warcio's writer: in profiles warcio's
writer (level-9 gzip, digests recomputed through several layers, header
objects) cost a third of a rank's CPU. The output is checked with warcio's
reader, digests included, in ``tests/test_warc.py``. Compression level 1.

Per record the cost is the two SHA-1 passes (payload and block digest) and
deflate; everything else is kept to a few C calls (``bench/warc_micro.py``,
``docs/benchmarks/perf.md``):

- each record is one gzip member made in one C call: ISA-L's
  ``isal_zlib.compress`` when the ``isal`` package is installed (the same
  gzip format at about a third of zlib's CPU, same ratio at level 1), else
  ``zlib.compress(data, 1, wbits=31)``;
- base32 of a SHA-1 digest (:func:`b32_sha1`) spreads the 160 bits into 32
  bytes with five mask-and-shift steps on one int and maps them with
  ``bytes.translate`` (``base64.b32encode`` is pure Python in 3.11);
- ``WARC-Date`` (:func:`_iso`) reuses the formatted second and appends the
  microseconds, rounded exactly as ``datetime.fromtimestamp`` does;
- record ids are one random ``uuid4`` per writer whose last 48 bits (the
  random ``node`` field) are XORed with a counter: valid, distinct
  ``urn:uuid`` version-4 ids without ``os.urandom`` per record;
- each record header is one f-string encoded once, and the body is copied
  once (into the record) before it is compressed.

The HTTP head in a response or revisit record is the one received, byte for
byte (``Response.raw_head``: status line, header lines, blank line); a
response without one (built in code, or whose head had no blank line) gets a
head rebuilt from its status line and parsed headers.
"""
from __future__ import annotations

import base64
import hashlib
import math
import os
import time
import uuid
import zlib
from pathlib import Path

from .fetcher import Response

__all__ = ["RankWarc", "warc_path", "b32_sha1"]

_REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"


def warc_path(session_dir: str | os.PathLike, rank: int) -> Path:
    return Path(session_dir) / "warc" / f"rank-{rank:05d}.warc.gz"


# ---------------------------------------------------------------- WARC-Date

_date_cache: list = [(None, "")]        # [(whole second, "YYYY-MM-DDTHH:MM:SS")], swapped as one tuple


def _iso(t: float, _modf=math.modf, _gmtime=time.gmtime, _strftime=time.strftime, _c=_date_cache) -> str:
    """``datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")``, faster.

    The microseconds are rounded half-to-even from the fractional part, as
    CPython's ``datetime.fromtimestamp`` does (``_PyTime_ROUND_HALF_EVEN``).
    """
    frac, whole = _modf(t)
    us = round(frac * 1e6)
    if us >= 1000000:
        us -= 1000000
        whole += 1.0
    elif us < 0:
        us += 1000000
        whole -= 1.0
    sec = int(whole)
    cached = _c[0]
    if cached[0] != sec:
        cached = _c[0] = (sec, _strftime("%Y-%m-%dT%H:%M:%S", _gmtime(sec)))
    return f"{cached[1]}.{us:06d}Z"


# ---------------------------------------------------------------- base32

_B32_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B32_MAP = bytes(_B32_ALPHABET[i & 31] for i in range(256))


def _spread_steps() -> list[tuple[int, int, int]]:
    """Mask-and-shift steps moving the 32 five-bit groups of a 160-bit int into 32 bytes.

    Step k halves the chunks: each chunk of ``c`` bits in a slot of ``s`` bits
    becomes two chunks of ``c/2`` bits in slots of ``s/2`` bits (160 in 256 ->
    80 in 128 -> ... -> 5 in 8).
    """
    steps = []
    slot, chunk = 256, 160
    while chunk > 5:
        half, nslot = chunk // 2, slot // 2
        lo = hi = 0
        for k in range(256 // slot):
            lo |= ((1 << half) - 1) << (k * slot)
            hi |= ((1 << half) - 1) << (k * slot + half)
        steps.append((lo, hi, nslot - half))
        slot, chunk = nslot, half
    return steps


(_L1, _H1, _S1), (_L2, _H2, _S2), (_L3, _H3, _S3), (_L4, _H4, _S4), (_L5, _H5, _S5) = _spread_steps()


def b32_sha1(digest: bytes, _from=int.from_bytes, _map=_B32_MAP) -> str:
    """``base64.b32encode(digest).decode()`` for a 20-byte digest (other lengths: the stdlib)."""
    if len(digest) != 20:
        return base64.b32encode(digest).decode("ascii")
    x = _from(digest, "big")
    x = (x & _L1) | ((x & _H1) << _S1)
    x = (x & _L2) | ((x & _H2) << _S2)
    x = (x & _L3) | ((x & _H3) << _S3)
    x = (x & _L4) | ((x & _H4) << _S4)
    x = (x & _L5) | ((x & _H5) << _S5)
    return x.to_bytes(32, "big").translate(_map).decode("ascii")


# ---------------------------------------------------------------- gzip members

def _gzip_zlib(data: bytes, _compress=zlib.compress) -> bytes:
    """One gzip member, level 1, in one C call (zlib's own gzip header and trailer)."""
    return _compress(data, 1, 31)


try:                                    # ISA-L: the same format, about 3.5x faster at level 1, same ratio
    from isal.isal_zlib import compress as _isal_compress
except ImportError:                     # pragma: no cover - depends on the environment
    _isal_compress = None


def _gzip_isal(data: bytes) -> bytes:
    return _isal_compress(data, 1, 31)


GZIP_BACKENDS = {"zlib": _gzip_zlib}
if _isal_compress is not None:
    GZIP_BACKENDS["isal"] = _gzip_isal
DEFAULT_GZIP = "isal" if "isal" in GZIP_BACKENDS else "zlib"


# ---------------------------------------------------------------- records

def _clean(value: str) -> str:
    """Header values must not break the record framing."""
    return value.replace("\r", " ").replace("\n", " ")


def _header_lines(headers: list[tuple[str, str]]) -> str:
    """``"k: v\\r\\n"`` for every header, values cleaned of CR/LF (one join when none has any)."""
    if not headers:
        return ""
    s = "\r\n".join([f"{k}: {v}" for k, v in headers])
    n = len(headers) - 1
    if s.count("\n") != n or s.count("\r") != n:   # a CR or LF inside a name or value: slow path
        return "".join(f"{k}: {_clean(v)}\r\n" for k, v in headers)
    return s + "\r\n"


def _record(warc_type: str, url: str, date: str, content_type: str, block: bytes, block_sha1,
            extra: list[tuple[str, str]], record_id: str) -> bytes:
    """A whole record (the warcinfo record; ``_records`` inlines the same layout)."""
    head = [f"WARC/1.1\r\nWARC-Type: {warc_type}\r\nWARC-Record-ID: {record_id}\r\nWARC-Date: {date}\r\n"]
    if url:
        head.append(f"WARC-Target-URI: {url}\r\n")
    for k, v in extra:
        head.append(f"{k}: {v}\r\n")
    head.append(f"Content-Type: {content_type}\r\nWARC-Block-Digest: sha1:{b32_sha1(block_sha1.digest())}\r\n"
                f"Content-Length: {len(block)}\r\n\r\n")
    return "".join(head).encode("utf-8") + block + b"\r\n\r\n"


class _RecordIds:
    """``<urn:uuid:...>`` ids: one random version-4 UUID whose 48-bit node field is XORed with a counter."""

    __slots__ = ("_prefix", "_node", "_n")

    def __init__(self):
        u = uuid.uuid4()
        self._prefix = f"<urn:uuid:{str(u)[:24]}"      # 8-4-4-4- : version and variant bits stay as drawn
        self._node = u.node
        self._n = 0

    def __call__(self) -> str:
        self._n += 1
        return f"{self._prefix}{(self._node ^ self._n) & 0xFFFFFFFFFFFF:012x}>"


#: write buffer: records reach the file in ~1 MiB writes, not one system call per record; nothing is
#: lost by it that a crash would not lose anyway: resume cuts the file back to the checkpoint's
#: offset, and a checkpoint flushes and fsyncs first
_BUFFER = 1 << 20

#: records are made in batches: a page's records are serialized and compressed when ``batch`` pages
#: (``--warc-batch``), or this many bytes of bodies, wait, and before every flush, checkpoint and
#: close. Compressing one batch after another keeps ISA-L's and hashlib's state in the CPU caches,
#: and the parse and the link path that run between pages keep theirs (``bench/page_costs.py``:
#: ``abc`` against ``abc batch 1``; ``bench/stack_limit.py --warc-batch-run 1``)
DEFAULT_BATCH = 64
_BATCH_BYTES = 1 << 20


class RankWarc:
    """Writes one rank's WARC file."""

    def __init__(self, session_dir: str | os.PathLike, rank: int, enabled: bool = True, gzip: str | None = None,
                 batch: int = DEFAULT_BATCH):
        if batch < 1:
            raise ValueError(f"batch: expected at least 1 page, got {batch}")
        self.enabled = enabled
        self.batch = batch
        self.path = warc_path(session_dir, rank)
        self.records = 0
        self.revisits = 0
        self._seen: dict[bytes, tuple[str, str]] = {}   # sha1 digest -> (url, date)
        self._next_id = _RecordIds()
        self.gzip = gzip or DEFAULT_GZIP
        self._gzip_member = GZIP_BACKENDS[self.gzip]
        self._pending: list[tuple[Response, str, bytes, tuple[str, str] | None]] = []   # (response, date, digest, first)
        self._pending_bytes = 0
        if enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "ab", buffering=_BUFFER)
            if self._fh.tell() == 0:
                body = b"software: abc-crawler\r\nformat: WARC File Format 1.1\r\n"
                self._fh.write(self._gzip_member(_record("warcinfo", "", _iso(time.time()),
                                                        "application/warc-fields", body, hashlib.sha1(body),
                                                        [("WARC-Filename", self.path.name)], self._next_id())))

    def write(self, r: Response, _sha1=hashlib.sha1) -> bool:
        """Take the request and the response (or a revisit); True if it was a duplicate body.

        The content digest and the duplicate decision are made here; the records are serialized
        and compressed in batches (:meth:`_drain`), when ``batch`` pages or ``_BATCH_BYTES`` of
        bodies are waiting and before every flush, checkpoint and close.
        """
        body = r.body
        digest = _sha1(body).digest()
        first = self._seen.get(digest)
        if not self.enabled:
            if first is None:
                self._seen[digest] = (r.url, "")
            return first is not None
        date = _iso(r.t_start)
        if first is None:
            self._seen[digest] = (r.url, date)
        pending = self._pending
        pending.append((r, date, digest, first))
        self._pending_bytes += len(body)
        if len(pending) >= self.batch or self._pending_bytes >= _BATCH_BYTES:
            self._drain()
        return first is not None

    def _drain(self) -> None:
        """Serialize and compress the waiting pages' records into the file, in arrival order."""
        pending = self._pending
        if not pending:
            return
        self._pending = []
        self._pending_bytes = 0
        self._fh.write(b"".join([self._records(*p) for p in pending]))

    def _records(self, r: Response, date: str, digest: bytes, first, _sha1=hashlib.sha1, _b32=b32_sha1) -> bytes:
        """The request record and the response (``first`` is None) or revisit record, two gzip members."""
        body = r.body
        url = r.url
        uri_line = f"WARC-Target-URI: {url}\r\n" if url else ""
        # request: what was sent (reconstructed from the fetcher's fixed headers)
        slash = url.find("/", url.find("://") + 3)
        target = url[slash:] if slash >= 0 else "/"
        req_block = f"GET {target} HTTP/1.1\r\n{_header_lines(r.request_headers)}\r\n".encode("utf-8")
        req_id = self._next_id()
        req = b"".join((
            f"WARC/1.1\r\nWARC-Type: request\r\nWARC-Record-ID: {req_id}\r\nWARC-Date: {date}\r\n{uri_line}"
            f"Content-Type: application/http; msgtype=request\r\n"
            f"WARC-Block-Digest: sha1:{_b32(_sha1(req_block).digest())}\r\n"
            f"Content-Length: {len(req_block)}\r\n\r\n".encode("utf-8"),
            req_block, b"\r\n\r\n"))
        http_head = r.raw_head          # the head as received; rebuilt from the parsed fields if there is none
        if not http_head:
            status_line = r.status_line or f"HTTP/1.1 {r.status}"
            http_head = f"{_clean(status_line)}\r\n{_header_lines(r.headers)}\r\n".encode("latin-1", "replace")
        block_sha1 = _sha1(http_head)
        if first is None:
            block_sha1.update(body)
            rec = b"".join((
                f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: {self._next_id()}\r\nWARC-Date: {date}\r\n"
                f"{uri_line}WARC-Concurrent-To: {req_id}\r\nWARC-Payload-Digest: sha1:{_b32(digest)}\r\n"
                f"Content-Type: application/http; msgtype=response\r\n"
                f"WARC-Block-Digest: sha1:{_b32(block_sha1.digest())}\r\n"
                f"Content-Length: {len(http_head) + len(body)}\r\n\r\n".encode("utf-8"),
                http_head, body, b"\r\n\r\n"))
        else:
            rec = b"".join((
                f"WARC/1.1\r\nWARC-Type: revisit\r\nWARC-Record-ID: {self._next_id()}\r\nWARC-Date: {date}\r\n"
                f"{uri_line}WARC-Concurrent-To: {req_id}\r\nWARC-Payload-Digest: sha1:{_b32(digest)}\r\n"
                f"WARC-Profile: {_REVISIT_PROFILE}\r\nWARC-Refers-To-Target-URI: {first[0]}\r\n"
                f"WARC-Refers-To-Date: {first[1]}\r\n"
                f"Content-Type: application/http; msgtype=response\r\n"
                f"WARC-Block-Digest: sha1:{_b32(block_sha1.digest())}\r\n"
                f"Content-Length: {len(http_head)}\r\n\r\n".encode("utf-8"),
                http_head, b"\r\n\r\n"))
            self.revisits += 1
        self.records += 2
        member = self._gzip_member
        return member(req) + member(rec)

    def checkpoint(self) -> dict:
        """What a resume needs: the file size and the content-seen table (waiting records written first)."""
        if self.enabled:
            self._drain()
        return {"offset": self._fh.tell() if self.enabled else 0, "seen": dict(self._seen),
                "records": self.records, "revisits": self.revisits}

    def restore(self, ck: dict) -> None:
        """Cut the file back to a checkpoint: records written after it are dropped (their URLs are fetched again)."""
        self._seen = dict(ck["seen"])
        self._pending, self._pending_bytes = [], 0
        self.records, self.revisits = ck["records"], ck["revisits"]
        if self.enabled:
            self._fh.close()
            with open(self.path, "r+b") as fh:
                fh.truncate(ck["offset"])
            self._fh = open(self.path, "ab", buffering=_BUFFER)

    def flush(self) -> None:
        """Write the waiting records and get the file to disk."""
        if self.enabled:
            self._drain()
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self.enabled:
            self.flush()
            self._fh.close()
