"""A rank's WARC content-seen table (:class:`ContentSeen`): which payload it stored first, for the
revisit records of identical payloads (:mod:`abc_crawler.store.warc`)."""
from __future__ import annotations

from array import array

import numpy as np

__all__ = ["ContentSeen"]


class ContentSeen:
    """A rank's content-seen table: payload SHA-1 -> the URL and ``WARC-Date`` of the first record
    that stored it (what a revisit refers to). Compact (issue 35): a compiled map from the digest's
    first 8 bytes to an entry of one byte buffer (the 20-byte digest, the URL, ``\n``, the date),
    ~150 B a page instead of ~350 for a dict of bytes to tuples of strings. A digest whose first
    8 bytes equal another's is compared whole: never a false revisit (it is stored as a response)."""

    def __init__(self):
        from ..kernels.fpmap import new_fpmap

        self._map = new_fpmap()
        self._blob = bytearray()
        self._off = array("Q", [0])

    def __len__(self) -> int:
        return len(self._off) - 1

    def nbytes(self) -> int:
        """Bytes held: the map's table, the entries' buffer and their offsets."""
        return self._map.nbytes + len(self._blob) + 8 * len(self._off)

    @staticmethod
    def _key(digest: bytes) -> int:
        return int.from_bytes(digest[:8], "little")

    @staticmethod
    def _entry(rec: bytes) -> tuple[bytes, str, str]:
        """``(digest, URL, date)`` of one entry of the buffer."""
        url, _, date = rec[20:].decode("utf-8").partition("\n")
        return bytes(rec[:20]), url, date

    def get(self, digest: bytes) -> tuple[str, str] | None:
        i = self._map.get(self._key(digest))
        if i < 0:
            return None
        first, url, date = self._entry(self._blob[self._off[i]:self._off[i + 1]])
        return (url, date) if first == digest else None

    def add(self, digest: bytes, url: str, date: str) -> None:
        """The first record of ``digest`` (a later one of the same key is not kept)."""
        if len(digest) != 20:
            raise ValueError("a SHA-1 digest has 20 bytes")
        k = self._key(digest)
        if k in self._map:
            return
        self._map.put(k, len(self._off) - 1)
        self._blob += digest
        self._blob += url.encode("utf-8")
        self._blob += b"\n"
        self._blob += date.encode("ascii")
        self._off.append(len(self._blob))

    def as_plain(self) -> dict:
        return {"blob": bytes(self._blob), "off": np.frombuffer(self._off, dtype=np.uint64).copy()}

    @classmethod
    def from_plain(cls, d) -> "ContentSeen":
        """From :meth:`as_plain`, or from a checkpoint of state version 5 or earlier (a dict of
        digest -> (URL, date))."""
        seen = cls()
        if set(d) == {"blob", "off"}:
            blob, off = bytes(d["blob"]), np.asarray(d["off"], dtype=np.uint64).tolist()
            for a, b in zip(off, off[1:]):
                seen.add(*cls._entry(blob[a:b]))
            return seen
        for digest, (url, date) in d.items():
            seen.add(bytes(digest), url, date)
        return seen
