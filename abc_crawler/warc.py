"""Per-rank WARC 1.1 files: request + response records, revisits for duplicates.

Content-seen dedup is per rank: when a body's hash equals one this rank has
already stored, the response is written as a ``revisit`` record (profile
identical-payload-digest) that refers to the first URL, so every fetched URL
still has exactly one response-or-revisit record. Each record is its own gzip
member and the file is flushed at every checkpoint, so a crash leaves every
earlier record readable.

Records are serialized here, not with warcio's writer: in profiles warcio's
writer (level-9 gzip, digests recomputed through several layers, header
objects) cost a third of a rank's CPU. The output is checked with warcio's
reader, digests included, in ``tests/test_warc.py``. Compression level 1.
"""
from __future__ import annotations

import base64
import hashlib
import os
import time
import uuid
import zlib
from datetime import datetime, timezone
from pathlib import Path

from .fetcher import Response

__all__ = ["RankWarc", "warc_path"]

_REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"


def warc_path(session_dir: str | os.PathLike, rank: int) -> Path:
    return Path(session_dir) / "warc" / f"rank-{rank:05d}.warc.gz"


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _sha1_label(h) -> str:
    return "sha1:" + base64.b32encode(h.digest()).decode()


def _clean(value: str) -> str:
    """Header values must not break the record framing."""
    return value.replace("\r", " ").replace("\n", " ")


def _record(warc_type: str, url: str, date: str, content_type: str, block: bytes, block_sha1,
            extra: list[tuple[str, str]], record_id: str) -> bytes:
    head = [f"WARC/1.1\r\nWARC-Type: {warc_type}\r\nWARC-Record-ID: {record_id}\r\nWARC-Date: {date}\r\n"]
    if url:
        head.append(f"WARC-Target-URI: {url}\r\n")
    for k, v in extra:
        head.append(f"{k}: {v}\r\n")
    head.append(f"Content-Type: {content_type}\r\nWARC-Block-Digest: {_sha1_label(block_sha1)}\r\n"
                f"Content-Length: {len(block)}\r\n\r\n")
    return "".join(head).encode("utf-8") + block + b"\r\n\r\n"


def _gzip_member(data: bytes) -> bytes:
    z = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    return z.compress(data) + z.flush()


class RankWarc:
    """Writes one rank's WARC file."""

    def __init__(self, session_dir: str | os.PathLike, rank: int, enabled: bool = True):
        self.enabled = enabled
        self.path = warc_path(session_dir, rank)
        self.records = 0
        self.revisits = 0
        self._seen: dict[bytes, tuple[str, str]] = {}   # sha1 digest -> (url, date)
        if enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "ab")
            if self._fh.tell() == 0:
                body = b"software: abc-crawler\r\nformat: WARC File Format 1.1\r\n"
                rid = f"<urn:uuid:{uuid.uuid4()}>"
                self._fh.write(_gzip_member(_record("warcinfo", "", _iso(time.time()),
                                                    "application/warc-fields", body, hashlib.sha1(body),
                                                    [("WARC-Filename", self.path.name)], rid)))

    def write(self, r: Response) -> bool:
        """Write the request and the response (or a revisit); True if it was a duplicate body."""
        payload_sha1 = hashlib.sha1(r.body)
        digest = payload_sha1.digest()
        first = self._seen.get(digest)
        if not self.enabled:
            if first is None:
                self._seen[digest] = (r.url, "")
            return first is not None
        date = _iso(r.t_start)
        # request: what was sent (reconstructed from the fetcher's fixed headers)
        slash = r.url.find("/", r.url.find("://") + 3)
        target = r.url[slash:] if slash >= 0 else "/"
        req_block = (f"GET {target} HTTP/1.1\r\n" + "".join(f"{k}: {_clean(v)}\r\n" for k, v in r.request_headers)
                     + "\r\n").encode("utf-8")
        req_id = f"<urn:uuid:{uuid.uuid4()}>"
        req = _record("request", r.url, date, "application/http; msgtype=request", req_block,
                      hashlib.sha1(req_block), [], req_id)
        status_line = r.status_line or f"HTTP/1.1 {r.status}"
        http_head = (_clean(status_line) + "\r\n" + "".join(f"{k}: {_clean(v)}\r\n" for k, v in r.headers)
                     + "\r\n").encode("latin-1", "replace")
        block_sha1 = hashlib.sha1(http_head)
        payload_label = "sha1:" + base64.b32encode(digest).decode()
        extra = [("WARC-Concurrent-To", req_id), ("WARC-Payload-Digest", payload_label)]
        if first is None:
            self._seen[digest] = (r.url, date)
            block_sha1.update(r.body)
            rec = _record("response", r.url, date, "application/http; msgtype=response", http_head + r.body,
                          block_sha1, extra, f"<urn:uuid:{uuid.uuid4()}>")
        else:
            extra += [("WARC-Profile", _REVISIT_PROFILE), ("WARC-Refers-To-Target-URI", first[0]),
                      ("WARC-Refers-To-Date", first[1])]
            rec = _record("revisit", r.url, date, "application/http; msgtype=response", http_head,
                          block_sha1, extra, f"<urn:uuid:{uuid.uuid4()}>")
            self.revisits += 1
        self._fh.write(_gzip_member(req) + _gzip_member(rec))
        self.records += 2
        return first is not None

    def checkpoint(self) -> dict:
        """What a resume needs: the file size and the content-seen table."""
        return {"offset": self._fh.tell() if self.enabled else 0, "seen": dict(self._seen),
                "records": self.records, "revisits": self.revisits}

    def restore(self, ck: dict) -> None:
        """Cut the file back to a checkpoint: records written after it are dropped (their URLs are fetched again)."""
        self._seen = dict(ck["seen"])
        self.records, self.revisits = ck["records"], ck["revisits"]
        if self.enabled:
            self._fh.close()
            with open(self.path, "r+b") as fh:
                fh.truncate(ck["offset"])
            self._fh = open(self.path, "ab")

    def flush(self) -> None:
        if self.enabled:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self.enabled:
            self.flush()
            self._fh.close()
