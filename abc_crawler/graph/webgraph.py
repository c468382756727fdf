"""The crawled graph at page, host and domain level, named as web-graph tools name it.

A session's ``graph.npz`` (docs/SESSION_FORMAT.md) holds a URL table and the links found on the
requested URLs (``link_src``/``link_dst``/``link_kind``: the followed, in-scope ``<a>``/``<area>``
hrefs, requisites and refreshes of HTML pages, and the ``Location`` of redirects).
:func:`level_graph` folds the links of the kinds asked for (all by default, as Common Crawl's
graphs) into one of three graphs, as ``abc-graph`` exports them (docs/GRAPH_EXPORT.md):

* **page**: a vertex per row of the URL table (vertex id = URL-table index: every URL rank 0
  heard of, requested or not), an edge per distinct link between two different URLs;
* **host**: a vertex per host name, as Common Crawl's host graph names it: lower case, no port,
  a leading ``www.`` dropped (``www.example.com`` and ``example.com`` are one vertex), written in
  reverse domain name notation (``com.example``); an edge h → k when some URL of h links a URL of
  k, h ≠ k; its weight is the number of distinct page links behind it;
* **domain**: a vertex per registrable domain (the public suffix list's ICANN section, as Common
  Crawl's domain graph; shipped with the ``publicsuffixlist`` package, nothing is downloaded), an
  edge and weight as for hosts.

Links inside one vertex (self-loops) are dropped at every level: a page linking itself, and at
host (domain) level every link between two pages of one host (domain); their number is kept
(:attr:`LevelGraph.self_links`). Host and domain vertices are numbered in the lexicographic order
of their reversed names, as Common Crawl numbers its vertices; edges are sorted by (from, to).

Names that are not DNS names: an IP-literal host (``127.0.0.1``, ``[::1]``) is its own host and
domain, not reversed; a host that is itself a public suffix (``co.uk``, or a bare unknown TLD) is
its own domain (Common Crawl's ``--multipart-suffixes-as-domains``); a TLD the list does not know
(``.test``, ``.internal``) counts as a public suffix of one label (the list's ``*`` rule), so
``a.b.test`` is in domain ``b.test`` — where Common Crawl, which keeps only IANA TLDs, would drop it.

Examples
--------
>>> host_name("http://www.Example.co.uk:8080/x")
'example.co.uk'
>>> reverse_name("example.co.uk"), reverse_name(registrable_domain("shop.example.co.uk"))
('uk.co.example', 'uk.co.example')
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..web.parser import NAV, REDIRECT

__all__ = ["LEVELS", "LevelGraph", "level_graph", "page_links", "link_kinds_of", "host_name", "netloc_host", "cc_host",
           "reverse_name", "registrable_domain", "is_ip_literal", "distinct_edges"]

LEVELS = ("page", "host", "domain")


def netloc_host(netloc: str) -> str:
    """The host of an authority (``user@`` and ``:port`` dropped; an IPv6 literal keeps its brackets)."""
    netloc = netloc.rpartition("@")[2]
    if netloc.startswith("["):
        end = netloc.find("]")
        return netloc[:end + 1] if end >= 0 else netloc
    return netloc.partition(":")[0]


def is_ip_literal(host: str) -> bool:
    if host.startswith("["):
        return True
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


def cc_host(host: str) -> str:
    """A host name as Common Crawl's host graph has it: lower case, no trailing dot, a leading
    ``www.`` dropped (not from an IP literal, nor when nothing would be left)."""
    host = host.lower().rstrip(".")
    if host.startswith("www.") and len(host) > 4 and not is_ip_literal(host):
        host = host[4:]
    return host


def host_name(url: str) -> str:
    """The host vertex name of a URL (:func:`cc_host` of its host); ``""`` when it has none."""
    start = url.find("://")
    if start < 0:
        return ""
    start += 3
    end = len(url)
    for ch in "/?#":
        k = url.find(ch, start)
        if 0 <= k < end:
            end = k
    return cc_host(netloc_host(url[start:end]))


def reverse_name(name: str) -> str:
    """``www.example.com`` → ``com.example.www`` (reverse domain name notation, Common Crawl's
    vertex names); an IP literal stays as it is. Its own inverse."""
    if not name or is_ip_literal(name):
        return name
    return ".".join(reversed(name.split(".")))


@lru_cache(maxsize=1)
def _psl():
    from publicsuffixlist import PublicSuffixList
    return PublicSuffixList(only_icann=True)       # the list the package ships: no download


def registrable_domain(host: str) -> str:
    """The domain of a host name: the public suffix plus one label (ICANN section of the public
    suffix list, as Common Crawl's domain graph); a host that is a public suffix itself, an IP
    literal, or a single label is its own domain."""
    if not host or is_ip_literal(host):
        return host
    d = _psl().privatesuffix(host)
    return d if d else host


def _unique_counts(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and their counts (a sort: faster here than np.unique's hashing)."""
    key = np.sort(key, kind="stable")
    if key.size == 0:
        return key, np.zeros(0, dtype=np.int64)
    start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    return key[start], np.diff(np.r_[start, key.size])


def distinct_edges(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Distinct (src, dst) pairs without self-loops, sorted by (src, dst), with the number of input
    pairs behind each; and the number of input self-loops dropped. Pairs with a negative end are
    ignored."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    ok = (src >= 0) & (dst >= 0)
    src, dst = src[ok], dst[ok]
    loop = src == dst
    self_links = int(loop.sum())
    src, dst = src[~loop], dst[~loop]
    key, counts = _unique_counts(src * max(n, 1) + dst)
    s = (key // max(n, 1)).astype(np.int32)
    d = (key % max(n, 1)).astype(np.int32)
    return s, d, counts.astype(np.int64), self_links


@dataclass
class LevelGraph:
    """One level of a session's graph (see the module's docstring)."""

    level: str
    names: list[str]             # page: the URL; host: host name (www. dropped); domain: the domain
    src: np.ndarray              # int32 [m], sorted by (src, dst), distinct, src != dst
    dst: np.ndarray              # int32 [m]
    weight: np.ndarray           # int64 [m]: distinct page links behind the edge (1 at page level)
    url_vertex: np.ndarray       # int32 [U]: the vertex of each URL-table row (-1: none, e.g. no URL text)
    self_links: int = 0          # distinct page links dropped as self-loops
    host_of_domain: list[list[str]] = field(default_factory=list)   # domain level: its host vertices
    kinds: tuple[int, ...] | None = None   # the link kinds it was built from (None: all)

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def m(self) -> int:
        return int(self.src.shape[0])

    @property
    def labels(self) -> list[str]:
        """Vertex names as Common Crawl writes them: reversed host/domain names (page level: URLs)."""
        if self.level == "page":
            return self.names
        return [reverse_name(x) for x in self.names]

    def csr(self, transpose: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(indptr int64 [n+1], indices int32 [m]): out-lists, or in-lists with ``transpose``."""
        a, b = (self.dst, self.src) if transpose else (self.src, self.dst)
        order = np.argsort(a, kind="stable") if transpose else slice(None)
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(a, minlength=self.n), out=indptr[1:])
        return indptr, np.ascontiguousarray(b[order], dtype=np.int32)


def _fold(g, url_key: list[str], level: str, kinds) -> LevelGraph:
    """Vertices = the distinct non-empty keys, numbered in the order of their reversed names."""
    distinct = sorted({k for k in url_key if k}, key=reverse_name)
    vid = {k: i for i, k in enumerate(distinct)}
    url_vertex = np.array([vid.get(k, -1) for k in url_key], dtype=np.int32) if url_key else np.zeros(0, np.int32)
    ls, ld, _ = page_links(g, kinds)
    s, d, w, loops = distinct_edges(url_vertex[ls], url_vertex[ld], len(distinct))
    return LevelGraph(level, distinct, s, d, w, url_vertex, self_links=loops)


def link_kinds_of(g) -> np.ndarray:
    """The kind of every link of graph.npz (``abc_crawler.web.parser``: 0 navigation, 1 embed, 2 redirect,
    3 refresh). A session written before ``link_kind`` existed has navigation and redirect links
    only: a link whose source answered 3xx is its redirect."""
    lk = getattr(g, "link_kind", None)
    if lk is not None:
        return np.asarray(lk, dtype=np.uint8)
    st = g.url_status[g.link_src] if len(g.link_src) else np.zeros(0, np.int16)
    return np.where((st >= 300) & (st < 400), REDIRECT, NAV).astype(np.uint8)


def page_links(g, kinds=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct links (src, dst) of graph.npz whose kind is in ``kinds`` (None: every kind),
    sorted, with their kind (a pair found as several kinds: the lowest code, navigation first)."""
    u = max(len(g.urls), 1)
    kind = link_kinds_of(g)
    src, dst = g.link_src.astype(np.int64), g.link_dst.astype(np.int64)
    if kinds is not None:
        keep = np.isin(kind, np.fromiter(kinds, dtype=np.uint8))
        src, dst, kind = src[keep], dst[keep], kind[keep]
    key = src * u + dst
    order = np.lexsort((kind, key))
    key, kind = key[order], kind[order]
    first = np.r_[True, key[1:] != key[:-1]] if key.size else np.zeros(0, bool)
    key, kind = key[first], kind[first]
    return key // u, key % u, kind


def level_graph(g, level: str, kinds=None) -> LevelGraph:
    """The page, host or domain graph of a :class:`~abc_crawler.store.session.SessionGraph`, over the
    links whose kind is in ``kinds`` (codes of :data:`abc_crawler.web.parser.KIND_NAMES`; None: all)."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}: expected one of {', '.join(LEVELS)}")
    kinds = None if kinds is None else tuple(sorted(set(int(k) for k in kinds)))
    lg = _level_graph(g, level, kinds)
    lg.kinds = kinds
    return lg


def _level_graph(g, level: str, kinds) -> LevelGraph:
    if level == "page":
        u = len(g.urls)
        ls, ld, _ = page_links(g, kinds)
        s, d, w, loops = distinct_edges(ls, ld, u)
        vertex = np.arange(u, dtype=np.int32)
        return LevelGraph("page", list(g.urls), s, d, w, vertex, self_links=loops)
    hosts = [host_name(x) if x else "" for x in g.urls]
    if level == "host":
        return _fold(g, hosts, "host", kinds)
    dom = {h: registrable_domain(h) for h in set(hosts) if h}
    lg = _fold(g, [dom.get(h, "") for h in hosts], "domain", kinds)
    members: dict[str, list[str]] = {}
    for h, d in sorted(dom.items(), key=lambda kv: reverse_name(kv[0])):
        members.setdefault(d, []).append(h)
    lg.host_of_domain = [members[d] for d in lg.names]
    return lg
