"""Who owns a URL: one rule, in scalar form (the crawler) and vectorized form (the partitioner
and the report), a pure function of the URL and the session's assignment.

Every rank builds the same :class:`Assignment` from the same settings, so
``owner(url)`` is identical everywhere and no page is fetched twice.

Assignments
-----------
``hash``
    WebGather's two-stage mapping: the 64-bit xxh3 fingerprint of the canonical
    URL (:func:`abc_crawler.web.urls.fingerprint`) picks one of ``M`` logical buckets
    (``fp % M``, M = :data:`N_BUCKETS` by default), and a bucket table maps
    buckets to ranks (``bucket % K`` by default), so a later session can run on
    another number of ranks by moving buckets. xxh3 is a real hash; KSpider's
    sum of characters clusters similar host names and is not used.
``site-hash``
    The same on the fingerprint of the URL's host (with port).
``partvec``
    A part vector of an earlier session (``abc-repartition``,
    :mod:`abc_crawler.partition.partvec`) decides for the URLs it contains; a
    new URL goes to the rank holding most of its host's pages in the vector,
    else to ``hash``. Never "whoever found it first".
measured
    The ranks that actually requested the URLs in a session (``url_rank``),
    with the session's own assignment for URLs it never requested.

Examples
--------
>>> a = HashAssignment(ranks=4)
>>> a.owner("http://a.test/x") == hash_rank(fingerprint("http://a.test/x"), 4)
True
>>> s = SiteHashAssignment(ranks=4)
>>> s.owner("http://a.test/x") == s.owner("http://a.test/y")
True
>>> from abc_crawler.store.session import SessionGraph
>>> g = SessionGraph.from_urls(["http://a.test/", "http://a.test/x", "http://b.test/"], ranks=2)
>>> o = owners_site_hash(g, 4)
>>> bool(o[0] == o[1])
True
"""
from __future__ import annotations


import numpy as np

from ..exceptions import AssignmentError
from ..store.session import SessionGraph
from .urls import fingerprint, host_of

__all__ = ["N_BUCKETS", "hash_rank", "hash_bucket_table", "url_hosts", "owners_hash", "owners_site_hash",
           "partvec_owner", "partvec_owners", "owners_measured", "owners_array",
           "Assignment", "HashAssignment", "SiteHashAssignment", "PartvecAssignment"]

#: Number of logical buckets of the two-stage hash assignment (``--assign-buckets``).
N_BUCKETS = 4096

def hash_rank(fp, K: int, n_buckets: int = N_BUCKETS):
    """Rank of fingerprint(s) under the default two-stage hash assignment.

    Parameters
    ----------
    fp : int or array_like of uint64
        64-bit fingerprint(s).
    K : int
        Number of ranks.
    n_buckets : int, optional
        Number of logical buckets M (default 4096).

    Returns
    -------
    int or numpy.ndarray
        ``(fp % n_buckets) % K`` (int64 array for array input).
    """
    if K < 1 or n_buckets < 1:
        raise ValueError(f"K={K} and n_buckets={n_buckets} must be >= 1")
    if np.isscalar(fp) and not isinstance(fp, np.ndarray):
        return int(fp) % n_buckets % K
    a = np.asarray(fp, dtype=np.uint64)
    return ((a % np.uint64(n_buckets)) % np.uint64(K)).astype(np.int64)



def hash_bucket_table(buckets: int, ranks: int) -> np.ndarray:
    """Default bucket → rank table: bucket b goes to rank b mod K (so that ``table[fp % M]`` is
    :func:`hash_rank`)."""
    return hash_rank(np.arange(buckets, dtype=np.uint64), ranks, buckets).astype(np.int32)


class Assignment:
    """Base class: ``owner(url, fp=None) -> rank`` and ``host_owner(host)``."""

    name = "abstract"
    #: True when every page of a host has the same owner (site-level assignment)
    site_level = False

    def __init__(self, ranks: int, buckets: int = N_BUCKETS):
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
        phase-slot holders follow these shares (:class:`abc_crawler.sched.phases.HolderTable`)."""
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

    def __init__(self, ranks: int, buckets: int = N_BUCKETS):
        super().__init__(ranks, buckets)
        self._cache: dict[str, int] = {}

    def owner(self, url: str, fp: int | None = None) -> int:
        host = host_of(url)
        r = self._cache.get(host)
        if r is None:
            r = self._cache[host] = self.table[fingerprint(host) % self.buckets]
        return r


class PartvecAssignment(Assignment):
    """A part vector of an earlier session (``abc-repartition``) decides.

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
        return self.table[fp % self.buckets]    # = hash_rank(fp, K, M): the vector's rule, dict-fast

    def describe(self) -> str:
        return f"partvec:{self.path}"

    def exclusive_hosts(self, rank: int) -> frozenset[str]:
        """Hosts whose every page in the vector is on ``rank``: rule 2 sends their new pages
        there too, so no other rank ever fetches them (phase slots are not needed for them)."""
        return self._exclusive.get(rank, frozenset())

    def host_pages(self) -> dict[str, dict[int, int]]:
        return self._host_pages


# -- vectorized owners over a session's URL table ------------------------------------------------
def url_hosts(graph: SessionGraph) -> tuple[np.ndarray, list[str]]:
    """Host of every URL, as ids into a host list.

    Parameters
    ----------
    graph : SessionGraph

    Returns
    -------
    host_id : numpy.ndarray of int64, shape (U,)
        ``hosts[host_id[i]] == host_of(graph.urls[i])``.
    hosts : list of str
        Distinct hosts in order of first appearance in the URL table.
    """
    ids: dict[str, int] = {}
    hid = np.fromiter((ids.setdefault(host_of(u), len(ids)) for u in graph.urls),
                      dtype=np.int64, count=len(graph.urls))
    return hid, list(ids)


def owners_hash(graph: SessionGraph, K: int, n_buckets: int = N_BUCKETS) -> np.ndarray:
    """Owners of every URL under the page ``hash`` assignment with K ranks."""
    return hash_rank(graph.url_fp, K, n_buckets)


def owners_site_hash(graph: SessionGraph, K: int, n_buckets: int = N_BUCKETS,
                     hosts: tuple[np.ndarray, list[str]] | None = None) -> np.ndarray:
    """Owners of every URL under the ``site-hash`` assignment with K ranks.

    Parameters
    ----------
    graph : SessionGraph
    K : int
    n_buckets : int, optional
    hosts : tuple, optional
        Precomputed :func:`url_hosts` result.
    """
    hid, names = hosts if hosts is not None else url_hosts(graph)
    host_fp = np.array([fingerprint(h) for h in names], dtype=np.uint64)
    return hash_rank(host_fp, K, n_buckets)[hid] if len(hid) else np.zeros(0, np.int64)



# -- the part-vector rule, scalar and vectorized ------------------------------------------------
def partvec_owner(pv, url: str, fp: int | None = None) -> int:
    """Owner of a canonical URL under part vector ``pv``: its rank in the vector; else the rank
    holding most of its host's pages there; else :func:`hash_rank`."""
    fp = fingerprint(url) if fp is None else fp
    r = pv.rank_of_fp(fp)
    if r is None:
        r = pv.host_rank(host_of(url))
    return hash_rank(fp, pv.K, pv.n_buckets) if r is None else r


def partvec_owners(pv, graph: SessionGraph, hosts=None) -> np.ndarray:
    """:func:`partvec_owner` of every URL-table entry of ``graph`` (int64 array, vectorized)."""
    hid, names = hosts if hosts is not None else url_hosts(graph)
    out = pv.ranks_of_fps(graph.url_fp)
    miss = out < 0
    if miss.any():
        hfp = np.array([fingerprint(h) for h in names], dtype=np.uint64)
        hr = pv.host_ranks_of_fps(hfp)[hid[miss]]
        hh = hash_rank(graph.url_fp[miss], pv.K, pv.n_buckets)
        out[miss] = np.where(hr >= 0, hr, hh)
    return out

def owners_measured(graph: SessionGraph, fallback) -> np.ndarray:
    """Owners as measured in a session: ``url_rank`` where requested, else ``fallback``.

    Parameters
    ----------
    graph : SessionGraph
    fallback : array_like of int, shape (U,)
        Owners under the session's assignment, used for URLs the session
        never requested (link targets beyond the crawl).
    """
    fb = np.asarray(fallback, dtype=np.int64)
    r = graph.url_rank.astype(np.int64)
    return np.where(r >= 0, r, fb)


def owners_array(graph: SessionGraph, owners) -> np.ndarray:
    """Normalize an ``owners`` argument to an int64 array over the URL table.

    Parameters
    ----------
    graph : SessionGraph
    owners : array_like of int, shape (U,), or callable
        Either the owners of every URL-table entry, or a function
        ``owners(url: str) -> int`` (the session's owner function), which is
        evaluated once per URL.

    Returns
    -------
    numpy.ndarray of int64, shape (U,)
    """
    U = len(graph.urls)
    if callable(owners):
        out = np.fromiter((int(owners(u)) for u in graph.urls), dtype=np.int64, count=U)
    else:
        out = np.asarray(owners)
        if out.ndim != 1 or out.shape[0] != U:
            raise ValueError(f"owners has shape {out.shape}, expected ({U},): one rank per URL-table entry")
        if out.dtype.kind not in "iu":
            raise ValueError(f"owners must be integers, got dtype {out.dtype}")
        out = out.astype(np.int64, copy=False)
    return out
