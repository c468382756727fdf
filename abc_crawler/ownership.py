"""Who owns a URL: a pure function of the URL and the session's assignment.

Every rank builds the same :class:`Assignment` from the same settings, so
``owner(url)`` is identical everywhere and no page is fetched twice
(DESIGN §4).

The hash assignments use WebGather's two-stage mapping: a 64-bit xxh3
fingerprint picks one of ``M`` logical buckets (``fp % M``), and a bucket table
maps buckets to ranks (``bucket % K`` by default), so a later session can run
on another number of ranks by moving buckets. xxh3 is a real hash; KSpider's
sum of characters clusters similar host names and is not used.

Examples
--------
>>> a = HashAssignment(ranks=4)
>>> a.owner("http://a.test/x") == a.owner("http://a.test/x")
True
>>> s = SiteHashAssignment(ranks=4)
>>> s.owner("http://a.test/x") == s.owner("http://a.test/y")
True
"""
from __future__ import annotations

import numpy as np

from .exceptions import AssignmentError
from .urls import fingerprint, host_of

__all__ = ["Assignment", "HashAssignment", "SiteHashAssignment", "make_assignment", "hash_bucket_table"]


def hash_bucket_table(buckets: int, ranks: int) -> np.ndarray:
    """Default bucket → rank table: bucket b goes to rank b mod K."""
    return (np.arange(buckets, dtype=np.int64) % ranks).astype(np.int32)


class Assignment:
    """Base class: ``owner(url, fp=None) -> rank`` and ``host_owner(host)``."""

    name = "abstract"
    #: True when every page of a host has the same owner (site-level assignment)
    site_level = False

    def __init__(self, ranks: int, buckets: int = 4096):
        if ranks < 1:
            raise AssignmentError(f"ranks must be >= 1, got {ranks}")
        if buckets < ranks:
            raise AssignmentError(f"assign-buckets ({buckets}) must be >= the number of ranks ({ranks})")
        self.ranks = ranks
        self.buckets = buckets
        self.table = hash_bucket_table(buckets, ranks).tolist()

    def owner(self, url: str, fp: int | None = None) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:
        return self.name


class HashAssignment(Assignment):
    """Page-level: the URL's fingerprint decides."""

    name = "hash"

    def owner(self, url: str, fp: int | None = None) -> int:
        if fp is None:
            fp = fingerprint(url)
        return self.table[fp % self.buckets]


class SiteHashAssignment(Assignment):
    """Site-level: the fingerprint of the URL's host (with port) decides."""

    name = "site-hash"
    site_level = True

    def __init__(self, ranks: int, buckets: int = 4096):
        super().__init__(ranks, buckets)
        self._cache: dict[str, int] = {}

    def owner(self, url: str, fp: int | None = None) -> int:
        host = host_of(url)
        r = self._cache.get(host)
        if r is None:
            r = self._cache[host] = self.table[fingerprint(host) % self.buckets]
        return r


def make_assignment(spec: str, ranks: int, buckets: int = 4096) -> Assignment:
    """Build the assignment named by ``--assign``."""
    if spec == "hash":
        return HashAssignment(ranks, buckets)
    if spec == "site-hash":
        return SiteHashAssignment(ranks, buckets)
    raise AssignmentError(f"assign: unknown assignment {spec!r} (part vectors come with abc-repartition)")
