"""Per-rank WARC 1.1 files: request + response records, revisits for duplicates and for 304 answers.

Files rotate at ``max_bytes`` (``--warc-max-bytes``): a file is closed after the page whose
records take it to that size (a page's request and response stay in one file), its CDXJ index
is written beside it (:mod:`abc_crawler.store.cdxj`), and the next one is opened when the next page
arrives. Names sort and say the session, the rank and the sequence number
(:func:`abc_crawler.store.warcnames.warc_name`: ``warc/SESSION-rank-00003-00000.warc.gz``, index ``…-00000.cdxj``). Every
file starts with a ``warcinfo`` record (the fields of :func:`warcinfo_fields`, ISO 28500's
recommended ones), responses and revisits carry ``WARC-IP-Address`` (the address curl
connected to).

A page answered ``304 Not Modified`` to a conditional request (``--previous``) is stored as a
``revisit`` record with profile ``server-not-modified``: its block is the 304 head as received,
``WARC-Refers-To-Target-URI`` / ``-Date`` name the earlier record that holds the payload, and
``WARC-Payload-Digest`` is that payload's digest.

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
- base32 of a SHA-1 digest (:func:`abc_crawler.store.digests.b32_sha1`) and
  each record's CDXJ index line (:func:`abc_crawler.store.cdxj.cdxj_line`, its
  SURT key included) are compiled (:mod:`abc_crawler.store._warcrec`; their
  Python stays as the references the tests hold them equal to);
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

import hashlib
import math
import os
import time
import uuid
import zlib
from pathlib import Path
from typing import Callable, NamedTuple

from .contentseen import ContentSeen
from .digests import b32_sha1, b32_sha1_reference
from .cdxj import IndexRuns, cdxj_line, index_lines, index_path, media_type, write_index
from .warcnames import parse_warc_name, session_prefix, warc_name
from ..net.fetcher import Response

__all__ = ["RankWarc", "b32_sha1", "b32_sha1_reference", "page_records", "page_records_reference", "record",
           "record_reference", "warcinfo_fields",
           "DEFAULT_MAX_BYTES", "PROFILE_IDENTICAL", "PROFILE_NOT_MODIFIED", "PageRecord"]

PROFILE_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
PROFILE_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
_REVISIT_PROFILE = PROFILE_IDENTICAL
#: ``--warc-max-bytes``: a file is closed once it holds this many bytes (1 GB, Heritrix's default)
DEFAULT_MAX_BYTES = 1_000_000_000

def warcinfo_fields(*, version: str, session: str, rank: int, host: str, user_agent: str, robots: bool,
                    settings: dict, operator: str | None = None) -> list[tuple[str, str]]:
    """The ``warcinfo`` fields of a rank's files: those ISO 28500 (WARC 1.1, 6.1) recommends
    (``software``, ``format``, ``conformsTo``, ``hostname``, ``operator`` and ``http-header-from``
    when an operator is known, ``http-header-user-agent``, ``robots``, ``isPartOf``,
    ``description``) and ``abc-settings``, the session's settings as one line of JSON.

    >>> dict(warcinfo_fields(version="0.1", session="s1", rank=2, host="n1", user_agent="ua", robots=True,
    ...                      settings={"max_pages": 5}))["robots"]
    'obey'
    """
    import json

    out = [("software", f"abc-crawler/{version} (MPI coordinated data-parallel crawler)"),
           ("format", "WARC File Format 1.1"),
           ("conformsTo", "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"),
           ("hostname", host)]
    if operator:
        out += [("operator", operator), ("http-header-from", operator)]
    out += [("http-header-user-agent", user_agent),
            ("robots", "obey" if robots else "ignore"),
            ("isPartOf", session),
            ("description", f"ABC crawl session {session}, rank {rank}"),
            ("abc-settings", json.dumps(settings, sort_keys=True, default=str))]
    return [(k, _clean(str(v))) for k, v in out]


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


def _index_status(http_head: bytes) -> str | None:
    """The status code of a head's status line (its second word), as warcio reads it."""
    line = http_head.split(b"\r\n", 1)[0].split(b"\n", 1)[0].decode("latin-1").strip()
    parts = line.split(" ", 2)
    return parts[1] if len(parts) > 1 else None


def record_reference(warc_type: str, url: str, date: str, content_type: str, block: bytes, block_sha1,
                     extra: list[tuple[str, str]], record_id: str, _b32=b32_sha1_reference) -> bytes:
    """A whole record, uncompressed (warcinfo, metadata). :func:`record` is this compiled
    (:mod:`abc_crawler.store._warcrec`)."""
    head = [f"WARC/1.1\r\nWARC-Type: {warc_type}\r\nWARC-Record-ID: {record_id}\r\nWARC-Date: {date}\r\n"]
    if url:
        head.append(f"WARC-Target-URI: {url}\r\n")
    for k, v in extra:
        head.append(f"{k}: {v}\r\n")
    head.append(f"Content-Type: {content_type}\r\nWARC-Block-Digest: sha1:{_b32(block_sha1.digest())}\r\n"
                f"Content-Length: {len(block)}\r\n\r\n")
    return "".join(head).encode("utf-8") + block + b"\r\n\r\n"


def page_records_reference(r: Response, date: str, dig: str | None, first, ref, req_id: str, rec_id: str,
                           _sha1=hashlib.sha1, _b32=b32_sha1_reference) -> tuple[bytes, bytes, tuple]:
    """One answer's request record and its response (``first`` and ``ref`` None), revisit
    (``first``: the URL and date of the same payload stored earlier) or server-not-modified revisit
    (``ref``: the URL, date and digest of the record holding the payload) record, uncompressed; and
    the index fields of the second (mime, status, payload digest). ``dig``: the payload digest,
    ``sha1:BASE32`` (None for a 304, whose digest is in ``ref``). :func:`page_records` is this
    compiled (:mod:`abc_crawler.store._warcrec`)."""
    body = r.body
    url = r.url
    uri_line = f"WARC-Target-URI: {url}\r\n" if url else ""
    ip_line = f"WARC-IP-Address: {r.ip}\r\n" if r.ip else ""
    # request: what was sent (reconstructed from the fetcher's fixed headers)
    slash = url.find("/", url.find("://") + 3)
    target = url[slash:] if slash >= 0 else "/"
    req_block = f"GET {target} HTTP/1.1\r\n{_header_lines(r.request_headers)}\r\n".encode("utf-8")
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
    if first is None and ref is None:
        payload_digest = dig
        block_sha1.update(body)
        rec = b"".join((
            f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: {rec_id}\r\nWARC-Date: {date}\r\n"
            f"{uri_line}WARC-Concurrent-To: {req_id}\r\n{ip_line}WARC-Payload-Digest: {payload_digest}\r\n"
            f"{'WARC-Truncated: unspecified' + chr(13) + chr(10) if r.truncated else ''}"
            f"Content-Type: application/http; msgtype=response\r\n"
            f"WARC-Block-Digest: sha1:{_b32(block_sha1.digest())}\r\n"
            f"Content-Length: {len(http_head) + len(body)}\r\n\r\n".encode("utf-8"),
            http_head, body, b"\r\n\r\n"))
        mime = media_type(r.header("content-type"))
    else:
        if ref is not None:          # a 304: the payload is the earlier session's
            profile, (ref_uri, ref_date, payload_digest) = PROFILE_NOT_MODIFIED, ref
        else:                        # the same payload stored earlier in this session
            profile, (ref_uri, ref_date), payload_digest = _REVISIT_PROFILE, first, dig
        rec = b"".join((
            f"WARC/1.1\r\nWARC-Type: revisit\r\nWARC-Record-ID: {rec_id}\r\nWARC-Date: {date}\r\n"
            f"{uri_line}WARC-Concurrent-To: {req_id}\r\n{ip_line}WARC-Payload-Digest: {payload_digest}\r\n"
            f"WARC-Profile: {profile}\r\nWARC-Refers-To-Target-URI: {ref_uri}\r\n"
            f"WARC-Refers-To-Date: {ref_date}\r\n"
            f"Content-Type: application/http; msgtype=response\r\n"
            f"WARC-Block-Digest: sha1:{_b32(block_sha1.digest())}\r\n"
            f"Content-Length: {len(http_head)}\r\n\r\n".encode("utf-8"),
            http_head, b"\r\n\r\n"))
        mime = "warc/revisit"
    return req, rec, (mime, _index_status(http_head), payload_digest)


try:                                    # the compiled twins (built with the kernels by setup.py)
    from ._warcrec import bind_records, page_records, record
except ImportError:                     # pragma: no cover - an install without its extensions
    page_records, record = page_records_reference, record_reference
else:
    bind_records(media_type, _header_lines, _index_status, PROFILE_IDENTICAL, PROFILE_NOT_MODIFIED)


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


class PageRecord(NamedTuple):
    """Where one page's answer was stored (what the validator table keeps, :mod:`abc_crawler.store.validators`)."""

    response: Response
    kind: str            # "response", "revisit" (identical payload) or "not_modified" (a 304)
    file: str            # the WARC file's name ("" when no WARC file is written)
    offset: int          # offset of the response or revisit record in it (-1: none)
    length: int          # its length in the file (one gzip member)
    date: str            # its WARC-Date
    digest: str          # the payload's digest, "sha1:BASE32"
    payload_url: str     # the response record that holds the payload: its target URI ...
    payload_date: str    # ... and its WARC-Date


class RankWarc:
    """Writes one rank's WARC files (rotated at ``max_bytes``), each indexed when it is closed.

    ``info``: the ``warcinfo`` fields (:func:`warcinfo_fields`); ``on_page``: called with a
    :class:`PageRecord` once a page's records are in the file (or at once without WARC files).
    """

    def __init__(self, session_dir: str | os.PathLike, rank: int, enabled: bool = True, gzip: str | None = None,
                 batch: int = DEFAULT_BATCH, max_bytes: int = DEFAULT_MAX_BYTES,
                 info: list[tuple[str, str]] | None = None,
                 on_page: Callable[[PageRecord], None] | None = None):
        if batch < 1:
            raise ValueError(f"batch: expected at least 1 page, got {batch}")
        if max_bytes < 1:
            raise ValueError(f"max_bytes: expected at least 1 byte, got {max_bytes}")
        self.enabled = enabled
        self.batch = batch
        self.max_bytes = max_bytes
        self.rank = rank
        self.dir = Path(session_dir) / "warc"
        self.prefix = session_prefix(session_dir)
        self.info = info if info is not None else [("software", "abc-crawler"), ("format", "WARC File Format 1.1")]
        self.on_page = on_page
        self.records = 0
        self.revisits = 0
        self.not_modified = 0
        self._seen = ContentSeen()                      # sha1 digest -> (url, date) of its first record
        self.last_payload_digest = ""                   # of the last body written, as WARC writes it: "sha1:BASE32"
        self._next_id = _RecordIds()
        self.gzip = gzip or DEFAULT_GZIP
        self._gzip_member = GZIP_BACKENDS[self.gzip]
        self._pending: list[tuple] = []   # (response, date, payload digest, first, payload ref of a 304, outlinks)
        self._pending_bytes = 0
        self.closed: list[tuple[str, int]] = []    # (name, bytes) of the files finished, each indexed
        self.seq = 0                               # sequence number of the current (or next) file
        self._index = IndexRuns(self.dir / self.name)   # CDXJ lines of the current file (sorted runs)
        self._fh = None
        self._size = 0
        if enabled:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._open()

    def content_seen_bytes(self) -> int:
        return self._seen.nbytes()

    @property
    def index_lines_in_memory(self) -> int:
        """CDXJ lines of the current file not yet written out in a sorted run."""
        return len(self._index)

    # -- files ----------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The name of the current (or next) file."""
        return warc_name(self.prefix, self.rank, self.seq)

    @property
    def path(self) -> Path:
        return self.dir / self.name

    @property
    def files(self) -> list[str]:
        """Every file of this rank so far, in order (the current one last)."""
        return [n for n, _ in self.closed] + ([self.name] if self._fh is not None else [])

    def _open(self) -> None:
        """Open the current file (a new one gets its warcinfo record)."""
        self._fh = open(self.path, "ab", buffering=_BUFFER)
        self._size = self._fh.tell()
        if self._size == 0:
            body = "".join(f"{k}: {v}\r\n" for k, v in self.info).encode("utf-8")
            rec = self._gzip_member(record("warcinfo", "", _iso(time.time()), "application/warc-fields", body,
                                            hashlib.sha1(body), [("WARC-Filename", self.name)], self._next_id()))
            self._fh.write(rec)
            self._size = len(rec)

    def _close_file(self) -> None:
        """Finish the current file: to disk, then its CDXJ index beside it; the next page opens the next."""
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        self._fh = None
        self._index.write()
        self.closed.append((self.name, self._size))
        self.seq += 1
        self._size = 0
        self._index = IndexRuns(self.dir / self.name)

    # -- pages ----------------------------------------------------------------------------------
    def write(self, r: Response, outlinks: str = "", _sha1=hashlib.sha1) -> bool:
        """Take the request and the response (or a revisit); True if it was a duplicate body.
        ``outlinks``: the ``outlink: URL HOP`` lines of a metadata record written after them ("": none).

        The content digest and the duplicate decision are made here; the records are serialized
        and compressed in batches (:meth:`_drain`), when ``batch`` pages or ``_BATCH_BYTES`` of
        bodies are waiting and before every flush, checkpoint and close.
        """
        body = r.body
        digest = _sha1(body).digest()
        dig = self.last_payload_digest = "sha1:" + b32_sha1(digest)    # once a page: records, index, log
        # a body cut after its headers (--accept-types) is stored as a response of its own, never as
        # a revisit of another cut one (they all have the empty payload)
        first = self._seen.get(digest) if not r.truncated else None
        date = _iso(r.t_start)
        if not self.enabled:
            if first is None:
                self._seen.add(digest, r.url, date)
            self._placed(r, date, dig, first, None, -1, 0)
            return first is not None
        if first is None and not r.truncated:
            self._seen.add(digest, r.url, date)
        self._queue((r, date, dig, first, None, outlinks), len(body))
        return first is not None

    def write_not_modified(self, r: Response, payload_url: str, payload_date: str, digest: str,
                           outlinks: str = "") -> None:
        """A ``304`` answer to a conditional request: a ``server-not-modified`` revisit record that
        refers to the record holding the payload (``payload_url`` at ``payload_date``, payload digest
        ``digest``, ``"sha1:BASE32"``); ``outlinks``: as for :meth:`write` (the links the page keeps)."""
        ref = (payload_url, payload_date, digest)
        if not self.enabled:
            self._placed(r, _iso(r.t_start), None, None, ref, -1, 0)
            return
        self._queue((r, _iso(r.t_start), None, None, ref, outlinks), 0)

    def _queue(self, item: tuple, nbytes: int) -> None:
        pending = self._pending
        pending.append(item)
        self._pending_bytes += nbytes
        if len(pending) >= self.batch or self._pending_bytes >= _BATCH_BYTES:
            self._drain()

    def _placed(self, r: Response, date: str, dig: str | None, first, ref, offset: int, length: int,
                name: str = "") -> None:
        """Tell ``on_page`` where a page's answer went (``dig``: its payload digest, ``sha1:BASE32``;
        ``name``: the file's, when the record is in one, ``offset`` >= 0)."""
        if self.on_page is None:
            return
        if ref is not None:
            kind, dig, purl, pdate = "not_modified", ref[2], ref[0], ref[1]
        else:
            kind, purl, pdate = ("response", r.url, date) if first is None else ("revisit", first[0], first[1])
        self.on_page(PageRecord(r, kind, name if offset >= 0 else "", offset, length, date, dig, purl, pdate))

    def _drain(self) -> None:
        """Serialize and compress the waiting pages' records into the file(s), in arrival order;
        index them, and close the file once it reaches ``max_bytes``."""
        pending = self._pending
        if not pending:
            return
        self._pending = []
        self._pending_bytes = 0
        out: list[bytes] = []
        name = self.name                  # the current (or next) file's, made again when a file is opened
        for p in pending:
            if self._fh is None:
                self._open()
                name = self.name
            req, rec, line_fields, rec_id = self._records(*p[:5])
            offset = self._size + len(req)
            out.append(req)
            out.append(rec)
            self._size = offset + len(rec)
            r, date = p[0], p[1]
            if p[5]:
                meta = self._metadata(r.url, date, rec_id, p[5])
                out.append(meta)
                self._size += len(meta)
            self._index.append(cdxj_line(r.url, date, *line_fields, len(rec), offset, name))
            self._placed(r, date, p[2], p[3], p[4], offset, len(rec), name)
            if self._size >= self.max_bytes:
                self._fh.write(b"".join(out))
                out = []
                self._close_file()
        if out:
            self._fh.write(b"".join(out))

    def _records(self, r: Response, date: str, dig: str | None, first, ref) -> tuple[bytes, bytes, tuple, str]:
        """The request record and the response, revisit or server-not-modified revisit record
        (:func:`page_records`), two gzip members; the index fields of the second (mime, status,
        digest) and its record id."""
        req_id = self._next_id()
        rec_id = self._next_id()
        req, rec, fields = page_records(r, date, dig, first, ref, req_id, rec_id)
        if ref is not None:
            self.not_modified += 1
        elif first is not None:
            self.revisits += 1
        self.records += 2
        member = self._gzip_member
        return member(req), member(rec), fields, rec_id

    def _metadata(self, url: str, date: str, concurrent_to: str, lines: str) -> bytes:
        """A page's outlinks as a ``metadata`` record (Heritrix's layout: ``application/warc-fields``,
        ``WARC-Concurrent-To`` the answer's record), one gzip member."""
        block = lines.encode("utf-8")
        self.records += 1
        return self._gzip_member(record("metadata", url, date, "application/warc-fields", block, hashlib.sha1(block),
                                         [("WARC-Concurrent-To", concurrent_to)], self._next_id()))

    # -- checkpoints ------------------------------------------------------------------------------
    def checkpoint(self) -> dict:
        """What a resume needs: every file with its size (the current one last, at its size now), the
        content-seen table and the counters (waiting records written first)."""
        if self.enabled:
            self._drain()
        files = list(self.closed) + ([(self.name, self._size)] if self._fh is not None else [])
        return {"offset": self._size if self._fh is not None else 0, "files": files, "seq": self.seq,
                "seen": self._seen.as_plain(), "records": self.records, "revisits": self.revisits,
                "not_modified": self.not_modified, "prefix": self.prefix}

    def restore(self, ck: dict) -> None:
        """Go back to a checkpoint: the current file is cut back to its size then, files begun after it
        are removed (with their indexes), files closed before it keep theirs (made again if missing).
        Records written after the checkpoint are dropped: their URLs are fetched again."""
        self._seen = ContentSeen.from_plain(ck["seen"])
        self._pending, self._pending_bytes = [], 0
        self.records, self.revisits = ck["records"], ck["revisits"]
        self.not_modified = ck.get("not_modified", 0)
        if not self.enabled:
            return
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        files = [tuple(f) for f in ck["files"]]
        # the session's files keep the name they began with, though its directory was renamed since
        # (the files of a checkpoint before the prefix was saved name it too)
        first = parse_warc_name(files[0][0]) if files else None
        prefix = ck.get("prefix") or (first[0] if first is not None else self.prefix)
        if prefix != self.prefix:                # the warcinfo of its next files names it as they do
            renamed = {("isPartOf", self.prefix): prefix,
                       ("description", f"ABC crawl session {self.prefix}, rank {self.rank}"):
                           f"ABC crawl session {prefix}, rank {self.rank}"}
            self.info = [(k, renamed.get((k, v), v)) for k, v in self.info]
            self.prefix = prefix
        self.seq = ck["seq"]
        current = files[-1] if files and parse_warc_name(files[-1][0])[2] == self.seq else None
        self.closed = files[:-1] if current is not None else files
        for p in self.dir.glob(f".{self.prefix}-rank-{self.rank:05d}-*.tmp"):
            p.unlink()                 # an index being written when the rank was killed
        kept = {name for name, _ in files}
        for p in self.dir.glob(f"*-rank-{self.rank:05d}-*"):
            parsed = parse_warc_name(p.name.replace(".cdxj", ".warc.gz"))
            if parsed is None or parsed[1] != self.rank or p.name.replace(".cdxj", ".warc.gz") in kept:
                continue
            if parsed[0] != self.prefix or parsed[2] >= self.seq:
                p.unlink()             # begun after the checkpoint (a WARC file or its index), or under the
                                       # directory's new name since (as this writer's first file was)
        for name, _ in self.closed:
            if not index_path(self.dir / name).exists():
                write_index(self.dir / name, index_lines(self.dir / name))
        self._index = IndexRuns(self.dir / self.name)
        if current is not None:
            name, size = current
            with open(self.dir / name, "r+b") as fh:
                fh.truncate(size)
            index_path(self.dir / name).unlink(missing_ok=True)
            self._index.extend(index_lines(self.dir / name))
            self._open()

    def flush(self) -> None:
        """Write the waiting records and get the file to disk."""
        if self.enabled:
            self._drain()
            if self._fh is not None:
                self._fh.flush()
                os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Write what waits, close the current file and index it."""
        if self.enabled:
            self._drain()
            if self._fh is not None:
                self._close_file()
