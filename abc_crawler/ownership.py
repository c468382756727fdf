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

__all__ = ["Assignment", "HashAssignment", "SiteHashAssignment", "PartvecAssignment", "make_assignment",
           "load_partvec_assignment", "hash_bucket_table"]


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

    def exclusive_hosts(self, rank: int) -> frozenset[str]:
        """Hosts whose every page, known or new, is owned by ``rank`` (none known here)."""
        return frozenset()

    def host_pages(self) -> dict[str, dict[int, int]]:
        """host -> {rank: pages of the host that rank owns} for the hosts this assignment knows
        (a part vector's); any other host's pages are spread over all ranks by the hash. The
        phase-slot holders follow these shares (:class:`abc_crawler.phases.HolderTable`)."""
        return {}


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


class PartvecAssignment(Assignment):
    """A part vector of an earlier session (``abc-repartition``) decides (DESIGN §4).

    1. a URL in the vector goes to its rank;
    2. a new URL goes to the rank that holds most of its host's pages in the vector;
    3. a URL of a host the vector does not know goes to the hash assignment.

    It is a pure function of the URL and the vector file, so every rank computes
    the same owner; "whoever found it first" is never used.
    """

    name = "partvec"

    def __init__(self, pv, path: str):
        super().__init__(pv.K, pv.n_buckets)
        self.pv = pv
        self.path = path
        self.model = pv.model
        self.site_level = pv.model.startswith("site")
        self._fp = dict(zip(pv.url_fp.tolist(), pv.url_rank.tolist()))
        self._host = dict(zip(pv.hosts, pv.host_rank_.tolist()))
        self.fallback_host = 0
        self.fallback_hash = 0
        # pages of each host per rank; a host all of whose vector pages sit on one rank: its new
        # pages go there too (rule 2)
        pages: dict[str, dict[int, int]] = {}
        for u, r in zip(pv.urls, pv.url_rank.tolist()):
            d = pages.setdefault(host_of(u), {})
            d[r] = d.get(r, 0) + 1
        for h, d in pages.items():
            maj = self._host.get(h)
            if maj is not None and maj not in d:    # new pages of h go to maj: it holds h too
                d[maj] = 1
        self._host_pages = pages
        exclusive: dict[int, set[str]] = {}
        for h, d in pages.items():
            if len(d) == 1:
                exclusive.setdefault(next(iter(d)), set()).add(h)
        self._exclusive = {r: frozenset(hs) for r, hs in exclusive.items()}

    def owner(self, url: str, fp: int | None = None) -> int:
        if fp is None:
            fp = fingerprint(url)
        r = self._fp.get(fp)
        if r is not None:
            return r
        r = self._host.get(host_of(url))
        if r is not None:
            return r
        return self.table[fp % self.buckets]

    def describe(self) -> str:
        return f"partvec:{self.path}"

    def exclusive_hosts(self, rank: int) -> frozenset[str]:
        """Hosts whose every page in the vector is on ``rank``: rule 2 sends their new pages
        there too, so no other rank ever fetches them (phase slots are not needed for them)."""
        return self._exclusive.get(rank, frozenset())

    def host_pages(self) -> dict[str, dict[int, int]]:
        return self._host_pages


def load_partvec_assignment(path: str, ranks: int, remap: bool = False) -> PartvecAssignment:
    """Read a part vector (file, or a session directory holding ``partvec.npz``) for ``ranks`` ranks.

    A vector made for another number of ranks is refused unless ``remap``: then
    whole parts are merged, or (part, host) groups split, onto the new ranks by
    greedy bin packing of their bytes and pages (:func:`abc_crawler.partition.partvec.remap`).
    """
    from pathlib import Path

    from .partition.partvec import load_partvec, remap as remap_pv

    p = Path(path)
    if p.is_dir():
        p = p / "partvec.npz"
    try:
        pv = load_partvec(p)
    except FileNotFoundError:
        raise AssignmentError(f"assign: {p}: no part vector (run abc-repartition on the session first)") from None
    except ValueError as exc:
        raise AssignmentError(f"assign: {exc}") from None
    if pv.K != ranks:
        if not remap:
            raise AssignmentError(
                f"assign: {p} was made for {pv.K} ranks, this crawl has {ranks}; "
                f"run abc-repartition --parts {ranks}, or pass --remap to map its parts onto {ranks} ranks")
        pv = remap_pv(pv, ranks)
    return PartvecAssignment(pv, str(p))


def make_assignment(spec: str, ranks: int, buckets: int = 4096, remap: bool = False) -> Assignment:
    """Build the assignment named by ``--assign``: hash, site-hash, or a part-vector path."""
    if spec == "hash":
        return HashAssignment(ranks, buckets)
    if spec == "site-hash":
        return SiteHashAssignment(ranks, buckets)
    return load_partvec_assignment(spec, ranks, remap)
