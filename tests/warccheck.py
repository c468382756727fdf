"""The WARC files of a session read back and compared with what the server sent.

Every record is read with warcio (``check_digests="raise"``: a block or payload digest that does
not match its bytes fails the read); each record's raw bytes are also taken from its own gzip
member, independently of warcio, so the HTTP head is compared byte for byte too. A response
record holds exactly the head and the body the embedded server sends for its URL
(:class:`abc_crawler.testweb.expected.ServedBytes`: the web's routes, not the crawler); a revisit
record holds the head, and its payload digest is that of the body the server sends for its own URL
and that of a response record stored earlier in the same file for the URL and date it refers to.
"""
from __future__ import annotations

import base64
import hashlib
import re
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["WarcRecord", "read_session_warc", "check_warc_payloads", "b32", "members", "split_record"]


def b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


@dataclass
class WarcRecord:
    file: str
    index: int                  # position in its file (0: warcinfo)
    type: str
    headers: dict[str, str]
    block: bytes                # the record block as stored (raw)
    payload: bytes = b""        # what warcio read as the payload (responses: after the HTTP head)

    @property
    def uri(self) -> str:
        return self.headers.get("WARC-Target-URI", "")

    @property
    def date(self) -> str:
        return self.headers.get("WARC-Date", "")


def members(data: bytes) -> list[bytes]:
    """Every gzip member of a file, decompressed (one WARC record each)."""
    out = []
    while data:
        d = zlib.decompressobj(31)
        out.append(d.decompress(data))
        if not d.eof:
            raise AssertionError("a gzip member is cut short")
        data = d.unused_data
    return out


def split_record(raw: bytes) -> tuple[dict[str, str], bytes]:
    head, sep, rest = raw.partition(b"\r\n\r\n")
    assert sep, "a WARC record without the end of its header"
    lines = head.decode("utf-8").split("\r\n")
    assert lines[0] == "WARC/1.1", lines[0]
    headers = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        headers[k.strip()] = v.strip()
    n = int(headers["Content-Length"])
    assert rest[n:] == b"\r\n\r\n", "a record block longer or shorter than its Content-Length"
    return headers, rest[:n]


def read_session_warc(session: Path) -> list[WarcRecord]:
    """Every record of every rank's WARC file, read by warcio with digests checked (a mismatch
    raises) and from its own gzip member."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed

    out: list[WarcRecord] = []
    for f in sorted((session / "warc").glob("*.warc.gz")):
        raws = members(f.read_bytes())
        payloads = []
        with open(f, "rb") as fh:
            try:
                for rec in ArchiveIterator(fh, check_digests="raise"):
                    # reading to the end is what makes warcio compare the digests
                    payloads.append((rec.rec_type, rec.rec_headers.get_header("WARC-Record-ID"),
                                     rec.raw_stream.read()))
            except ArchiveLoadFailed as exc:
                raise AssertionError(f"{f.name}: record {len(payloads)}: warcio: {exc}") from None
        assert len(payloads) == len(raws), (f.name, len(payloads), len(raws))
        for i, (raw, (rtype, rid, payload)) in enumerate(zip(raws, payloads)):
            headers, block = split_record(raw)
            assert headers["WARC-Type"] == rtype and headers["WARC-Record-ID"] == rid, (f.name, i)
            out.append(WarcRecord(f.name, i, rtype, headers, block, payload))
    return out


_ETAG_LINE = re.compile(rb"\r\nETag: [^\r]*")
_DATE_LINE = re.compile(rb"\r\nDate: [^\r\n]*\r\n")


def _split_head(block: bytes) -> tuple[bytes, bytes]:
    end = block.find(b"\r\n\r\n")
    assert end >= 0, "an HTTP response without the end of its head"
    return block[:end + 4], block[end + 4:]


def _compare(truth, rec: WarcRecord, head: bytes, body_sha1: str, body: bytes | None, problems: list) -> None:
    """``rec`` (head, and the body when given) against what the server sends for its URL."""
    from abc_crawler.testweb.canonical import split_url

    _, netloc, target = split_url(rec.uri)
    status = int(head.split(b" ", 2)[1])
    served = truth.response(netloc.split(":")[0], target, status, body)
    m = _DATE_LINE.search(head)
    if m is None:
        problems.append((rec.uri, "no Date line in the stored head", head[:200]))
        return
    want_head = served.wire_head(m.group(0)[2:])
    # Connection is hop-by-hop: through a forward proxy (--proxy) the server closes each connection
    closed = want_head.replace(b"\r\nConnection: keep-alive\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    if head != want_head and head != closed:
        problems.append((rec.uri, "head differs from the server's", head[:300], want_head[:300]))
    want = served.body() if served.length <= 64 << 20 else None
    if want is None or b32(want) != body_sha1:
        got_len = len(body) if body is not None else "?"
        problems.append((rec.uri, f"{rec.type}: body differs from the server's ({got_len} bytes stored,"
                                  f" {served.length} sent)"))


def _rank_of(file: str) -> str:
    """The files of one rank share this: ``SESSION-rank-NNNNN`` of ``SESSION-rank-NNNNN-SSSSS.warc.gz``."""
    return file.rsplit("-", 1)[0] if file.count("-rank-") else file


def _not_modified(truth, rec: WarcRecord, head: bytes, digest: str, problems: list) -> None:
    """A server-not-modified revisit against the server: a 304 head with the page's current
    validator, for a page whose current body has the referred payload's digest."""
    from abc_crawler.testweb.canonical import split_url

    _, netloc, target = split_url(rec.uri)
    served = truth.response(netloc.split(":")[0], target)
    if not head.startswith(b"HTTP/1.1 304 "):
        problems.append((rec.uri, "a server-not-modified revisit without a 304 head", head[:100]))
    body = served.body()
    if body is None or b32(body) != digest:
        problems.append((rec.uri, "a 304 stored for a page the server changed"))
    want = _ETAG_LINE.search(served.wire_head(b"Date: x\r\n"))
    got = _ETAG_LINE.search(head)
    if want is None or got is None or want.group(0) != got.group(0):
        problems.append((rec.uri, "the 304's ETag is not the page's", got and got.group(0), want and want.group(0)))


def check_warc_payloads(web_dir: Path, records: list[WarcRecord]) -> dict:
    """Assert every record against the server's bytes; returns ``{"types": {uri: Counter of record
    types}, "stored": {uri: (file, WARC-Date) of its response or revisit}}``."""
    from abc_crawler.testweb.expected import ServedBytes

    truth = ServedBytes(web_dir)
    problems: list = []
    types: dict[str, Counter] = defaultdict(Counter)
    stored: dict[str, tuple[str, str]] = {}
    responses: dict[tuple[str, str, str], str] = {}     # (rank's files, uri, date) -> payload digest
    requests: dict[str, WarcRecord] = {}
    outlinks: dict[str, list[tuple[str, str]]] = {}
    answer = None                                       # the last response or revisit record
    for rec in records:
        if rec.index == 0:
            if rec.type != "warcinfo":
                problems.append((rec.file, "the first record is not warcinfo"))
            continue
        if rec.type == "metadata":
            _outlinks(rec, answer, outlinks, problems)
            continue
        if rec.uri:
            types[rec.uri][rec.type] += 1
        if rec.type == "request":
            requests[rec.headers["WARC-Record-ID"]] = rec
            continue
        if rec.type not in ("response", "revisit"):
            problems.append((rec.uri, "unexpected record type", rec.type))
            continue
        req = requests.pop(rec.headers.get("WARC-Concurrent-To", ""), None)
        if req is None or req.uri != rec.uri or req.file != rec.file:
            problems.append((rec.uri, "no request record of the same URL before it"))
        head, payload = _split_head(rec.block)
        digest = rec.headers.get("WARC-Payload-Digest", "")
        if rec.type == "response":
            if payload != rec.payload:
                problems.append((rec.uri, "warcio's payload and the raw block disagree"))
            if b32(payload) != digest:      # warcio checked it; the raw bytes must say the same
                problems.append((rec.uri, "payload digest"))
            _compare(truth, rec, head, digest, payload, problems)
            responses[(_rank_of(rec.file), rec.uri, rec.date)] = digest
        else:
            # warcio checks no digest of a revisit record: the block digest here, the payload
            # digest against the record it refers to and against the server's body for this URL
            if payload:
                problems.append((rec.uri, "a revisit record with a payload"))
            if b32(rec.block) != rec.headers.get("WARC-Block-Digest"):
                problems.append((rec.uri, "revisit block digest"))
            if rec.headers.get("WARC-Profile", "").endswith("/server-not-modified"):
                # a 304 to a conditional request (--previous): it refers to the earlier session's
                # record; the server's page must be unchanged (its body has the stored digest) and
                # the 304 carries the page's validator
                _not_modified(truth, rec, head, digest, problems)
            else:
                # the earlier response of the same rank: in this file or an earlier one of its rank
                ref = (_rank_of(rec.file), rec.headers.get("WARC-Refers-To-Target-URI", ""),
                       rec.headers.get("WARC-Refers-To-Date", ""))
                if responses.get(ref) != digest:
                    problems.append((rec.uri, "the revisit refers to no earlier response with its payload digest",
                                     ref, digest))
                _compare(truth, rec, head, digest, None, problems)
        if rec.uri in stored:
            problems.append((rec.uri, "stored twice"))
        stored[rec.uri] = (rec.file, rec.date)
        answer = rec
    if requests:
        problems.append(("request records without a response", sorted(r.uri for r in requests.values())[:5]))
    assert not problems, problems[:10]
    return {"types": types, "stored": stored, "outlinks": outlinks}


def _outlinks(rec: WarcRecord, answer: WarcRecord | None, out: dict, problems: list) -> None:
    """A metadata record (--warc-outlinks): right after the response or revisit it is concurrent to,
    of the same URL, ``application/warc-fields`` with its block digest, one ``outlink: URL HOP``
    line per link (HOP L, E or R); its links go into ``out[uri]``."""
    if (answer is None or answer.file != rec.file or answer.index != rec.index - 1 or answer.uri != rec.uri
            or answer.headers["WARC-Record-ID"] != rec.headers.get("WARC-Concurrent-To")):
        problems.append((rec.uri, "a metadata record not right after the answer it is concurrent to"))
    if rec.headers.get("Content-Type") != "application/warc-fields":
        problems.append((rec.uri, "metadata content type", rec.headers.get("Content-Type")))
    if b32(rec.block) != rec.headers.get("WARC-Block-Digest"):
        problems.append((rec.uri, "metadata block digest"))
    links = []
    for line in rec.block.decode("utf-8").split("\r\n"):
        if not line:
            continue
        name, _, value = line.partition(": ")
        url, _, hop = value.rpartition(" ")
        if name != "outlink" or hop not in ("L", "E", "R") or not url.startswith(("http://", "https://")):
            problems.append((rec.uri, "not an outlink line", line))
        links.append((url, hop))
    if rec.uri in out:
        problems.append((rec.uri, "two metadata records"))
    out[rec.uri] = links
