"""Türk's page/site graph and hypergraph models of a session (thesis ch. 4–5).

All four models are built from one :class:`~abc_crawler.store.session.SessionGraph`
and are held in CSR form, ready for METIS (:mod:`.metis`) and Mt-KaHyPar
(:mod:`.hypergraph`).

Vertices
    *page models*: one vertex per **requested** URL (``url_rank >= 0``: the
    URLs a session fetches, including redirects and errors), numbered in
    URL-table order. *site models*: one vertex per host (``host_of``) that has
    at least one requested URL, numbered in order of first appearance.
Vertex weights (two constraints, column 0 and 1 of ``vwgt``)
    ``bytes`` (``url_bytes``, summed over a host's requested pages for sites)
    and ``requests`` (1 per requested page).
Links
    The distinct ``(link_src, link_dst)`` pairs of the session; their cost is
    ``len(UTF-8 URL of the target) + 1``, what the naive exchange sends.
Page graph
    An undirected edge per pair of requested URLs linked in either direction
    (self-links dropped); its cost is the total cost of the links both ways
    whose two ends are requested.
Site graph
    An undirected edge per pair of distinct hosts linked in either direction;
    its cost is the total cost of the inter-site links between them. A link
    counts when its source is requested and its target's host is a vertex: the
    target need not have been requested, because a site assignment puts every
    URL of a known host on the host's rank, so such links are exchanged too.
Page hypergraph
    One net per requested page u (net i is the page of vertex i); pins = u and
    the requested pages it links to. Net cost 1; connectivity−1 of a
    partition = number of messages (thesis Eq. 5.1).
Site hypergraph
    One net per requested page u; pins = host(u) and the hosts (vertices) of
    the URLs it links to. Net cost 1.

Every model carries ``vertex_of_url`` (URL-table index → vertex, -1 for none)
so a vertex partition maps back onto URLs.

Examples
--------
>>> import numpy as np
>>> from abc_crawler.store.session import SessionGraph
>>> g = SessionGraph.from_urls(["http://a.test/", "http://a.test/x", "http://b.test/"], ranks=1)
>>> g.url_rank[:] = 0; g.url_bytes[:] = [100, 200, 300]
>>> g.link_src = np.array([0, 1, 0], np.int32); g.link_dst = np.array([1, 0, 2], np.int32)
>>> pg = page_graph(g)
>>> pg.xadj.tolist(), pg.adjncy.tolist(), pg.adjwgt.tolist()
([0, 2, 3, 4], [1, 2, 0, 0], [31, 15, 31, 15])
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..graph.metrics import url_wire_cost
from ..store.session import SessionGraph
from ._np import uniq, uniq_inverse
from ..web.ownership import url_hosts

__all__ = [
    "WeightedGraph",
    "Hypergraph",
    "url_lengths",
    "distinct_links",
    "requested_vertices",
    "page_graph",
    "site_graph",
    "page_hypergraph",
    "site_hypergraph",
    "build_model",
    "MODELS",
]

#: The four model names of the CLI: (granularity, partitioner).
MODELS = {"page-gp": ("page", "graph"), "site-gp": ("site", "graph"),
          "page-hp": ("page", "hypergraph"), "site-hp": ("site", "hypergraph")}


@dataclass
class WeightedGraph:
    """An undirected graph with two vertex weights, in METIS CSR form.

    Attributes
    ----------
    kind : str
        ``"page"`` or ``"site"``.
    xadj : numpy.ndarray of int64, shape (n+1,)
        Adjacency of vertex i is ``adjncy[xadj[i]:xadj[i+1]]``.
    adjncy : numpy.ndarray of int32, shape (2m,)
        Neighbours; every edge is stored in both directions, rows sorted.
    adjwgt : numpy.ndarray of int64, shape (2m,)
        Edge costs (bytes), aligned with ``adjncy``.
    vwgt : numpy.ndarray of int64, shape (n, 2)
        Vertex weights: column 0 bytes, column 1 requested pages.
    vertex_of_url : numpy.ndarray of int64, shape (U,)
        Vertex of each URL-table entry, -1 if none.
    labels : list of str
        Vertex labels: the URL (page) or host (site).
    """

    kind: str
    xadj: np.ndarray
    adjncy: np.ndarray
    adjwgt: np.ndarray
    vwgt: np.ndarray
    vertex_of_url: np.ndarray
    labels: list[str] = field(repr=False)

    @property
    def n_vertices(self) -> int:
        return int(self.xadj.shape[0] - 1)

    @property
    def n_edges(self) -> int:
        """Number of undirected edges m."""
        return int(self.adjncy.shape[0] // 2)

    def edge_list(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each undirected edge once: ``(u, v, cost)`` with ``u < v``."""
        src = np.repeat(np.arange(self.n_vertices, dtype=np.int64), np.diff(self.xadj))
        keep = src < self.adjncy
        return src[keep], self.adjncy[keep].astype(np.int64), self.adjwgt[keep]

    def cut(self, part) -> int:
        """Cut cost χ(Π) (thesis Eq. 4.2) of a vertex partition."""
        u, v, c = self.edge_list()
        p = np.asarray(part)
        return int(c[p[u] != p[v]].sum())


@dataclass
class Hypergraph:
    """A hypergraph with two vertex weights, in CSR (net → pins) form.

    Attributes
    ----------
    kind : str
        ``"page"`` or ``"site"``.
    eptr : numpy.ndarray of int64, shape (N+1,)
        Pins of net j are ``eind[eptr[j]:eptr[j+1]]`` (sorted, distinct).
    eind : numpy.ndarray of int32, shape (pins,)
    ewgt : numpy.ndarray of int64, shape (N,)
        Net costs (all 1).
    vwgt : numpy.ndarray of int64, shape (n, 2)
        Vertex weights: column 0 bytes, column 1 requested pages.
    vertex_of_url : numpy.ndarray of int64, shape (U,)
        Vertex of each URL-table entry, -1 if none.
    net_url : numpy.ndarray of int64, shape (N,)
        URL-table index of the page whose net this is.
    labels : list of str
        Vertex labels: the URL (page) or host (site).
    """

    kind: str
    eptr: np.ndarray
    eind: np.ndarray
    ewgt: np.ndarray
    vwgt: np.ndarray
    vertex_of_url: np.ndarray
    net_url: np.ndarray
    labels: list[str] = field(repr=False)

    @property
    def n_vertices(self) -> int:
        return int(self.vwgt.shape[0])

    @property
    def n_nets(self) -> int:
        return int(self.eptr.shape[0] - 1)

    @property
    def n_pins(self) -> int:
        return int(self.eind.shape[0])

    def km1(self, part) -> int:
        """Connectivity−1 cutsize Σ w(n)(λ(n) − 1) (thesis Eq. 5.1)."""
        p = np.asarray(part, dtype=np.int64)
        net = np.repeat(np.arange(self.n_nets, dtype=np.int64), np.diff(self.eptr))
        K = int(p.max()) + 1 if p.size else 1
        lam = np.bincount(uniq(net * K + p[self.eind]) // K, minlength=self.n_nets)
        return int((self.ewgt * np.maximum(lam - 1, 0)).sum())


def url_lengths(graph: SessionGraph) -> np.ndarray:
    """UTF-8 byte length of every URL (int64, shape (U,))."""
    return np.fromiter((len(u.encode()) for u in graph.urls), dtype=np.int64, count=len(graph.urls))


def distinct_links(graph: SessionGraph) -> tuple[np.ndarray, np.ndarray]:
    """The distinct links (src, dst) whose source was requested.

    Returns
    -------
    src, dst : numpy.ndarray of int64
        Sorted by (src, dst); duplicates removed; self-links kept.
    """
    s = np.asarray(graph.link_src, dtype=np.int64)
    d = np.asarray(graph.link_dst, dtype=np.int64)
    U = len(graph.urls)
    if s.shape != d.shape:
        raise ValueError(f"link_src {s.shape} and link_dst {d.shape} differ")
    if s.size and (s.min() < 0 or d.min() < 0 or s.max() >= U or d.max() >= U):
        raise ValueError("link_src/link_dst hold indices outside the URL table")
    keep = graph.url_rank[s] >= 0
    key = uniq(s[keep] * max(U, 1) + d[keep])
    return key // max(U, 1), key % max(U, 1)


def requested_vertices(graph: SessionGraph) -> tuple[np.ndarray, np.ndarray]:
    """Vertex numbering of the page models.

    Returns
    -------
    vid : numpy.ndarray of int64, shape (U,)
        Vertex of each URL (its rank among requested URLs), -1 if not requested.
    pages : numpy.ndarray of int64, shape (n,)
        URL-table index of each vertex.
    """
    req = graph.url_rank >= 0
    pages = np.flatnonzero(req).astype(np.int64)
    vid = np.full(len(graph.urls), -1, dtype=np.int64)
    vid[pages] = np.arange(pages.size, dtype=np.int64)
    return vid, pages


def _undirected_csr(a: np.ndarray, b: np.ndarray, cost: np.ndarray, n: int):
    """Aggregate directed weighted pairs (a≠b) into a symmetric CSR graph."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key, inv = uniq_inverse(lo * n + hi)
    w = np.bincount(inv.ravel(), weights=cost, minlength=key.size)
    w = np.rint(w).astype(np.int64)  # integer sums < 2**53 are exact in float64
    lo, hi = key // n, key % n
    rows = np.concatenate([lo, hi])
    cols = np.concatenate([hi, lo])
    wts = np.concatenate([w, w])
    order = np.argsort(rows * n + cols)  # keys are distinct: no tie order to keep
    xadj = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=xadj[1:])
    return xadj, cols[order].astype(np.int32), wts[order]


def _site_vertices(graph: SessionGraph, hosts=None):
    hid, names = hosts if hosts is not None else url_hosts(graph)
    req = graph.url_rank >= 0
    first = np.full(len(names), np.iinfo(np.int64).max, dtype=np.int64)
    idx = np.flatnonzero(req)
    np.minimum.at(first, hid[idx], idx)
    has = first < np.iinfo(np.int64).max
    order = np.flatnonzero(has)[np.argsort(first[has], kind="stable")]
    hv = np.full(len(names), -1, dtype=np.int64)
    hv[order] = np.arange(order.size, dtype=np.int64)
    n = order.size
    vwgt = np.zeros((n, 2), dtype=np.int64)
    np.add.at(vwgt[:, 0], hv[hid[idx]], graph.url_bytes[idx].astype(np.int64))
    np.add.at(vwgt[:, 1], hv[hid[idx]], 1)
    vertex_of_url = hv[hid] if hid.size else np.zeros(0, np.int64)
    return hid, hv, vertex_of_url, vwgt, [names[h] for h in order]


def page_graph(graph: SessionGraph, url_len: np.ndarray | None = None) -> WeightedGraph:
    """Türk's page graph G^P (thesis §4.3).

    Parameters
    ----------
    graph : SessionGraph
    url_len : numpy.ndarray, optional
        Precomputed :func:`url_lengths`.

    Returns
    -------
    WeightedGraph
    """
    url_len = url_lengths(graph) if url_len is None else url_len
    vid, pages = requested_vertices(graph)
    s, d = distinct_links(graph)
    keep = (vid[d] >= 0) & (s != d)
    s, d = s[keep], d[keep]
    xadj, adjncy, adjwgt = _undirected_csr(vid[s], vid[d], url_wire_cost(url_len[d]), max(pages.size, 1))
    xadj = xadj[: pages.size + 1]
    vwgt = np.stack([graph.url_bytes[pages].astype(np.int64), np.ones(pages.size, np.int64)], axis=1)
    return WeightedGraph("page", xadj, adjncy, adjwgt, vwgt, vid, [graph.urls[i] for i in pages])


def site_graph(graph: SessionGraph, url_len: np.ndarray | None = None, hosts=None) -> WeightedGraph:
    """Türk's site graph G^S (thesis §4.4).

    Parameters
    ----------
    graph : SessionGraph
    url_len : numpy.ndarray, optional
        Precomputed :func:`url_lengths`.
    hosts : tuple, optional
        Precomputed :func:`abc_crawler.web.ownership.url_hosts`.

    Returns
    -------
    WeightedGraph
    """
    url_len = url_lengths(graph) if url_len is None else url_len
    hid, hv, vou, vwgt, labels = _site_vertices(graph, hosts)
    s, d = distinct_links(graph)
    a, b = hv[hid[s]], hv[hid[d]]
    keep = (b >= 0) & (a != b)
    xadj, adjncy, adjwgt = _undirected_csr(a[keep], b[keep], url_wire_cost(url_len[d[keep]]), max(vwgt.shape[0], 1))
    xadj = xadj[: vwgt.shape[0] + 1]
    return WeightedGraph("site", xadj, adjncy, adjwgt, vwgt, vou, labels)


def _nets(net: np.ndarray, pin: np.ndarray, n_nets: int, n_vtx: int):
    key = uniq(net * max(n_vtx, 1) + pin)
    net, pin = key // max(n_vtx, 1), key % max(n_vtx, 1)
    eptr = np.zeros(n_nets + 1, dtype=np.int64)
    np.cumsum(np.bincount(net, minlength=n_nets), out=eptr[1:])
    return eptr, pin.astype(np.int32)


def page_hypergraph(graph: SessionGraph) -> Hypergraph:
    """Türk's page hypergraph H^P (thesis §5.3).

    Returns
    -------
    Hypergraph
        Net i belongs to vertex (requested page) i.
    """
    vid, pages = requested_vertices(graph)
    s, d = distinct_links(graph)
    keep = vid[d] >= 0
    n = pages.size
    own = np.arange(n, dtype=np.int64)
    eptr, eind = _nets(np.concatenate([own, vid[s[keep]]]), np.concatenate([own, vid[d[keep]]]), n, n)
    vwgt = np.stack([graph.url_bytes[pages].astype(np.int64), np.ones(n, np.int64)], axis=1)
    return Hypergraph("page", eptr, eind, np.ones(n, np.int64), vwgt, vid, pages,
                      [graph.urls[i] for i in pages])


def site_hypergraph(graph: SessionGraph, hosts=None) -> Hypergraph:
    """Türk's site hypergraph H^S (thesis §5.4): site vertices, page nets.

    Returns
    -------
    Hypergraph
        Net i belongs to the i-th requested page (URL-table order).
    """
    hid, hv, vou, vwgt, labels = _site_vertices(graph, hosts)
    vid, pages = requested_vertices(graph)
    s, d = distinct_links(graph)
    b = hv[hid[d]]
    keep = b >= 0
    n = pages.size
    eptr, eind = _nets(np.concatenate([np.arange(n, dtype=np.int64), vid[s[keep]]]),
                       np.concatenate([hv[hid[pages]], b[keep]]), n, vwgt.shape[0])
    return Hypergraph("site", eptr, eind, np.ones(n, np.int64), vwgt, vou, pages, labels)


def build_model(graph: SessionGraph, model: str, url_len=None, hosts=None):
    """Build the model named ``page-gp``, ``site-gp``, ``page-hp`` or ``site-hp``.

    Returns
    -------
    WeightedGraph or Hypergraph
    """
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")
    gran, kind = MODELS[model]
    if kind == "graph":
        return page_graph(graph, url_len) if gran == "page" else site_graph(graph, url_len, hosts)
    return page_hypergraph(graph) if gran == "page" else site_hypergraph(graph, hosts)
