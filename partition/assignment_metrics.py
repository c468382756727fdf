"""Communication and balance metrics of an owner assignment.

One function, :func:`predict`, computes the metrics of
``docs/SESSION_FORMAT.md`` for any assignment of the URLs of a session's
graph to ranks. It serves both purposes:

* **predicted** — ``owners`` from a part vector (the next session's owners of
  the previous session's pages), or from the hash baselines;
* **measured** — ``owners = url_rank`` for the URLs the session requested and
  the session's own owner function for link targets it never requested (see
  :func:`abc_crawler.web.assignments.owners_for_assignment`); the result
  must then equal the exchange counters of that session.

Definitions (``own`` = owners, ``R`` = requested URLs, links = distinct
``(link_src, link_dst)`` with a requested source):

``volume_bytes``
    Σ over links (u, v) with own(v) ≠ own(u) of len(UTF-8 of v) + 1. v may be
    a URL that was never requested; its owner comes from ``owners``.
``messages_thesis``
    Σ over requested u of |{own(v) : (u, v) a link} \\ {own(u)}|.
``bytes_per_rank`` / ``requests_per_rank``
    ``url_bytes`` summed / requested URLs counted per rank over R.
``storage_pct`` / ``request_pct``
    (W_max − W_avg) / W_avg × 100 over all K ranks (0 if W is all 0).
``cut_page_graph``
    Cut cost of the page graph: the part of ``volume_bytes`` over links whose
    two ends were requested (self-links never count).
``km1_page_hypergraph``
    Connectivity−1 of the page hypergraph: ``messages_thesis`` restricted to
    requested link targets.

The exchange's own figures, ``wire_bytes`` and ``messages_mpi``, depend on the
order in which a crawl finds the links; :func:`exchange_lower_bounds` gives
what the graph alone forces on them.

Examples
--------
>>> import numpy as np
>>> from abc_crawler.store.session import SessionGraph
>>> g = SessionGraph.from_urls(["http://a.test/", "http://b.test/", "http://c.test/"], ranks=2)
>>> g.url_rank[:2] = [0, 1]; g.url_bytes[:2] = [10, 30]
>>> g.link_src = np.array([0, 0], np.int32); g.link_dst = np.array([1, 2], np.int32)
>>> m = predict(g, np.array([0, 1, 1]), 2)
>>> m["volume_bytes"], m["messages_thesis"], m["cut_page_graph"], m["storage_pct"]
(30, 1, 15, 50.0)
"""
from __future__ import annotations

import numpy as np

from ..graph.metrics import imbalance_pct, url_wire_cost
from ..store.session import SessionGraph
from ._np import uniq
from .models import distinct_links, url_lengths
from ..web.ownership import owners_array

__all__ = ["predict", "exchange_lower_bounds", "METRIC_KEYS"]

#: Scalar keys of the dict returned by :func:`predict`.
METRIC_KEYS = ("K", "pages", "links", "remote_links", "volume_bytes", "messages_thesis",
               "cut_page_graph", "km1_page_hypergraph", "storage_pct", "request_pct")


def predict(graph: SessionGraph, owners, K: int | None = None, *, url_len: np.ndarray | None = None,
            links: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """Metrics of the assignment ``owners`` on the session graph ``graph``.

    Parameters
    ----------
    graph : SessionGraph
        The session's graph (the previous session's graph for predictions).
    owners : array_like of int, shape (U,), or callable
        Rank of every URL-table entry, or a function ``owners(url) -> rank``
        evaluated on every URL (see
        :func:`abc_crawler.web.ownership.owners_array`). Entries of URLs
        that are neither requested nor link targets are not read.
    K : int, optional
        Number of ranks (default ``graph.ranks``). Every owner read must lie
        in ``[0, K)``.
    url_len : numpy.ndarray, optional
        Precomputed :func:`~abc_crawler.partition.models.url_lengths`.
    links : tuple of numpy.ndarray, optional
        Precomputed :func:`~abc_crawler.partition.models.distinct_links`.

    Returns
    -------
    dict
        The keys of :data:`METRIC_KEYS` plus ``bytes_per_rank`` and
        ``requests_per_rank`` (lists of K ints). All values are plain Python
        numbers (JSON-serializable).

    Raises
    ------
    ValueError
        Owners of the wrong shape, or out of ``[0, K)`` for a requested URL or
        a link target.
    """
    K = graph.ranks if K is None else int(K)
    if K < 1:
        raise ValueError(f"K must be >= 1, got {K}")
    own = owners_array(graph, owners)
    req = graph.url_rank >= 0
    s, d = distinct_links(graph) if links is None else links
    url_len = url_lengths(graph) if url_len is None else url_len
    for name, idx in (("requested URL", np.flatnonzero(req)), ("link target", d)):
        o = own[idx]
        bad = (o < 0) | (o >= K)
        if bad.any():
            i = int(idx[np.argmax(bad)])
            raise ValueError(f"{int(bad.sum())} {name}(s) have no owner in [0, {K}), "
                             f"e.g. {graph.urls[i]!r} -> {int(own[i])}")
    os_, od = own[s], own[d]
    remote = os_ != od
    cost = url_wire_cost(url_len[d])
    both = req[d]
    volume = int(cost[remote].sum())
    cut = int(cost[remote & both].sum())
    msg_keys = s[remote] * K + od[remote]
    messages = int(uniq(msg_keys).size)
    km1 = int(uniq(msg_keys[both[remote]]).size)
    r = own[req]
    bytes_pr = np.zeros(K, dtype=np.int64)
    np.add.at(bytes_pr, r, graph.url_bytes[req].astype(np.int64))
    req_pr = np.bincount(r, minlength=K).astype(np.int64)
    return {
        "K": K,
        "pages": int(req.sum()),
        "links": int(s.size),
        "remote_links": int(remote.sum()),
        "volume_bytes": volume,
        "messages_thesis": messages,
        "cut_page_graph": cut,
        "km1_page_hypergraph": km1,
        "storage_pct": float(imbalance_pct(bytes_pr)),
        "request_pct": float(imbalance_pct(req_pr)),
        "bytes_per_rank": bytes_pr.tolist(),
        "requests_per_rank": req_pr.tolist(),
    }


def exchange_lower_bounds(owners, links: tuple[np.ndarray, np.ndarray], url_len: np.ndarray, K: int) -> dict:
    """What the graph forces the exchange to move under ``owners``, whatever the crawl's order.

    A rank sends each remote URL to its owner at most once per session (its
    URL-seen set remembers what it sent), as one line: so the URLs that must
    cross are the distinct pairs (own(u), v) over links (u, v) with
    own(v) ≠ own(u), each costing :func:`~abc_crawler.graph.metrics.url_wire_cost`
    of v. The crawl may send more (a redirect-hop count ``\\tN`` after a URL
    first found as a redirect target) and spreads them over supersteps.

    Parameters
    ----------
    owners : array_like of int, shape (U,)
        Rank of every URL-table entry.
    links : tuple of numpy.ndarray
        Distinct ``(link_src, link_dst)`` (:func:`.models.distinct_links`).
    url_len : numpy.ndarray, shape (U,)
        UTF-8 length of every URL (:func:`.models.url_lengths`).
    K : int
        Number of ranks.

    Returns
    -------
    dict
        ``wire_url_bytes`` (a lower bound of ``wire_bytes``), ``wire_urls``
        (the distinct (sender rank, URL) pairs) and ``rank_pairs`` (the
        ordered rank pairs with a remote link: a lower bound of
        ``messages_mpi``).

    Examples
    --------
    >>> s, d = np.array([0, 1, 1]), np.array([2, 2, 0])
    >>> exchange_lower_bounds(np.array([0, 0, 1]), (s, d), np.array([14, 14, 14]), 2)
    {'wire_url_bytes': 15, 'wire_urls': 1, 'rank_pairs': 1}
    """
    own = np.asarray(owners, dtype=np.int64)
    s, d = links
    os_, od = own[s], own[d]
    r = os_ != od
    U = max(own.shape[0], 1)
    key = uniq(os_[r] * U + d[r])  # distinct (sender rank, URL)
    return {"wire_url_bytes": int(url_wire_cost(url_len[key % U]).sum()), "wire_urls": int(key.size),
            "rank_pairs": int(uniq(os_[r] * K + od[r]).size)}
