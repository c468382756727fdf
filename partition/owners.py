"""Owner functions over a session's URL table (DESIGN §4).

Every function here returns an ``int64`` array ``owners`` with one entry per
URL-table index of a :class:`~abc_crawler.session.SessionGraph`: the rank that
owns (requests) that URL under some assignment. These arrays are what
:func:`abc_crawler.partition.metrics.predict` consumes.

Assignments
-----------
``hash``
    Two-stage mapping: ``bucket = fingerprint(url) % n_buckets`` (default
    4096 buckets), ``rank = bucket % K`` (the default bucket table). The
    fingerprint is the 64-bit xxh3 of the canonical URL
    (:func:`abc_crawler.urls.fingerprint`).
``site-hash``
    The same on ``fingerprint(host_of(url))``.
``partvec``
    A part vector (:mod:`abc_crawler.partition.partvec`) decides for the URLs
    it contains; any other URL goes to the rank holding most of its host's
    known pages, else to ``hash``. See :meth:`PartVec.owner
    <abc_crawler.partition.partvec.PartVec.owner>`.
measured
    The ranks that actually requested the URLs in a session (``url_rank``),
    with the session's own assignment for URLs it never requested.

Examples
--------
>>> from abc_crawler.session import SessionGraph
>>> g = SessionGraph.from_urls(["http://a.test/", "http://a.test/x", "http://b.test/"], ranks=2)
>>> o = owners_site_hash(g, 4)
>>> bool(o[0] == o[1])
True
"""
from __future__ import annotations

import os
import numpy as np

from ..session import SessionGraph
from ..urls import fingerprint, host_of

__all__ = [
    "N_BUCKETS",
    "hash_rank",
    "url_hosts",
    "owners_hash",
    "owners_site_hash",
    "owners_measured",
    "owners_for_assignment",
    "owners_array",
]

#: Number of logical buckets of the two-stage hash assignment (DESIGN §4).
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


def owners_for_assignment(graph: SessionGraph, assignment: str, K: int | None = None,
                          n_buckets: int = N_BUCKETS, session_dir: str | os.PathLike | None = None,
                          measured: bool = True) -> np.ndarray:
    """Owners of every URL under a session's assignment string.

    Parameters
    ----------
    graph : SessionGraph
    assignment : str
        ``"hash"``, ``"site-hash"`` or ``"partvec:<path>"`` (as in
        ``stats.json``). A relative partvec path is resolved against
        ``session_dir`` first, then the working directory.
    K : int, optional
        Number of ranks; default ``graph.ranks``.
    n_buckets : int, optional
    session_dir : path, optional
    measured : bool, optional
        If True (default), requested URLs keep their measured ``url_rank``
        and the assignment only decides the never-requested ones.

    Returns
    -------
    numpy.ndarray of int64, shape (U,)
    """
    K = graph.ranks if K is None else K
    if assignment == "hash":
        o = owners_hash(graph, K, n_buckets)
    elif assignment == "site-hash":
        o = owners_site_hash(graph, K, n_buckets)
    elif assignment.startswith("partvec:"):
        from .partvec import load_partvec, remap

        p = assignment[len("partvec:"):]
        cand = [os.path.join(session_dir, p)] if session_dir is not None and not os.path.isabs(p) else []
        cand.append(p)
        path = next((c for c in cand if os.path.exists(c)), cand[-1])
        pv = load_partvec(path)
        if pv.K != K:
            # the crawl only accepts a vector for another K with --remap, which maps it like this
            pv = remap(pv, K)
        o = pv.owners_of_graph(graph)
    else:
        raise ValueError(f"unknown assignment {assignment!r} (hash, site-hash, partvec:<path>)")
    return owners_measured(graph, o) if measured else o
