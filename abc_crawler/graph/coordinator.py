"""Rank 0's view of the crawl: the crawled graph (SPAWC's UPDATE GRAPH) and its statistics.

Every superstep each rank sends rank 0 a *report*: the responses it processed
(fingerprint, status, body bytes, whether it is a node) and the distinct links
found on them, with the text of every URL the rank has not reported before.
:class:`Coordinator` merges the reports:

* a URL gets a row in the URL table when rank 0 first hears of it;
* a page gets a dense node id when it is crawled successfully (status 200,
  parsed as HTML);
* an edge u→v enters the graph only when both ends are nodes; a link to a page
  not yet crawled waits (its row and its source node, two int32 columns) until
  the end of the superstep in which v is crawled; when v turns out to have
  failed (or to be a redirect or non-HTML), its waiting links are dropped;
* new nodes and edges go, in batches, to the statistics kernels, which run in
  a worker thread (they release the GIL) while rank 0 keeps crawling.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..store import plaindata
from .columns import URLText, _Col, _Rows
from .kernelworker import KernelWorker
from ..web.parser import EMBED
from ..store.session import SessionGraph

__all__ = ["SuperstepReport", "encode_report", "decode_report", "Coordinator"]


@dataclass
class SuperstepReport:
    """What one rank tells rank 0 about one superstep."""

    rank: int = 0
    superstep: int = 0
    page_fp: list[int] = field(default_factory=list)
    page_status: list[int] = field(default_factory=list)
    page_bytes: list[int] = field(default_factory=list)
    page_node: list[bool] = field(default_factory=list)
    page_kind: list[str] = field(default_factory=list)    # why not a node / how it failed ("" = none)
    given_up_fp: list[int] = field(default_factory=list)  # URLs completed without a request
    given_up_kind: list[str] = field(default_factory=list)
    link_src: list[int] = field(default_factory=list)     # fingerprints
    link_dst: list[int] = field(default_factory=list)
    link_kind: list[int] = field(default_factory=list)    # abc_crawler.web.parser NAV, EMBED, REDIRECT, REFRESH
    new_fp: list[int] = field(default_factory=list)       # URLs reported for the first time
    new_urls: list[str] = field(default_factory=list)
    send_bytes: list[int] = field(default_factory=list)   # per destination rank, this superstep
    send_urls: list[int] = field(default_factory=list)
    volume: int = 0                                       # Türk MV of this superstep's pages

    def empty(self) -> bool:
        return not self.page_fp and not self.new_fp


def encode_report(r: SuperstepReport) -> bytes:
    """Columnar encoding (NumPy buffers + one URL blob) as a plain-data record: no pickle, it is
    also what the journal keeps on disk (:mod:`abc_crawler.store.plaindata`)."""
    obj = {
        "rank": r.rank, "superstep": r.superstep, "volume": r.volume,
        "page_fp": np.array(r.page_fp, dtype=np.uint64),
        "page_status": np.array(r.page_status, dtype=np.int16),
        "page_bytes": np.array(r.page_bytes, dtype=np.int64),
        "page_node": np.array(r.page_node, dtype=np.bool_),
        "page_kind": "\n".join(r.page_kind).encode(),
        "given_up_fp": np.array(r.given_up_fp, dtype=np.uint64),
        "given_up_kind": "\n".join(r.given_up_kind).encode(),
        "link_src": np.array(r.link_src, dtype=np.uint64),
        "link_dst": np.array(r.link_dst, dtype=np.uint64),
        "link_kind": np.array(r.link_kind, dtype=np.uint8),
        "new_fp": np.array(r.new_fp, dtype=np.uint64),
        "new_urls": "\n".join(r.new_urls).encode(),
        "send_bytes": np.array(r.send_bytes, dtype=np.int64),
        "send_urls": np.array(r.send_urls, dtype=np.int64),
    }
    return plaindata.dumps(obj)


def decode_report(data: bytes) -> dict:
    obj = plaindata.loads(data)
    blob = obj.pop("new_urls")
    obj["new_urls"] = blob.decode().split("\n") if blob else []
    for key, n in (("page_kind", len(obj["page_fp"])), ("given_up_kind", len(obj["given_up_fp"]))):
        obj[key] = obj[key].decode().split("\n") if n else []
    return obj


class Coordinator:
    """Merges reports into the URL table and the crawled graph (rank 0 only).

    Everything is columns (issue 35: rank 0 held ~400 B per URL row and ~80 B per edge as Python
    objects): the fingerprint -> row index is a compiled map (``kernels/_fpmap.pyx``), a URL row's
    facts NumPy columns, its text one buffer (:class:`URLText`), links the reports' own arrays,
    edges two int32 columns; a report is merged with array operations, not a Python step per link.
    Links to pages not fetched yet wait as (row, source node) pairs and are resolved at the end
    of each superstep, once for all its reports."""

    def __init__(self, ranks: int, kernels: KernelWorker | None = None, page_edges_only: bool = True,
                 host_ranks=None):
        from ..kernels.fpmap import new_fpmap

        self.ranks = ranks
        self.kernels = kernels
        # the host graph and its top hosts by harmonic centrality, live (abc_crawler/graph/hostranks.py)
        self.host_ranks = host_ranks
        self.page_edges_only = page_edges_only   # --stats-edges pages (default): no embed in the page graph
        self.index = new_fpmap()              # fp -> URL-table row
        self.urls = URLText()
        self.fps = _Col(np.uint64)
        self.status = _Col(np.int16)
        self.rank = _Col(np.int16, -1)
        self.nbytes = _Col(np.int64)
        self.superstep = _Col(np.int32, -1)
        self.node = _Col(np.int32, -1)
        self.kind = _Col(np.int16)            # per URL row: index into kinds (0: none)
        self.kinds: list[str] = [""]          # outcome kinds: why a URL is not a node, how it failed
        self._kind_ids: dict[str, int] = {"": 0}
        self.link_src: list[np.ndarray] = []
        self.link_dst: list[np.ndarray] = []
        self.link_kind: list[np.ndarray] = []
        self.node_url = _Col(np.int32)
        self._n_links = 0
        # the page graph's edges as the links they are (an index into the links, in the order the
        # edges were found): 4 B an edge, its ends read from the links and the nodes when needed
        self.edge_link = _Col(np.uint32)
        self._wait_row = _Col(np.int32)       # links to a page not fetched yet: its row,
        self._wait_src = _Col(np.int32)       # the node the link came from
        self._wait_link = _Col(np.uint32)     # and the link's index
        self._fetched_rows: list[np.ndarray] = []   # pages fetched this superstep (their waiting links)
        self.overlap_pages = 0
        self.exchange_rows = _Rows(5)          # (superstep, src, dst, bytes, URLs), non-empty payloads
        self.step_volume = _Rows(ranks)        # [superstep, rank] -> MV
        self.step_pages = _Rows(ranks)         # [superstep, rank] -> responses
        self.step_t = _Rows(1, np.float64)     # [superstep] -> seconds since the start
        self._pending_kernel_nodes = 0
        self._pending_kernel_edges: list[tuple[np.ndarray, np.ndarray]] = []

    @property
    def n_urls(self) -> int:
        return len(self.fps)

    def _rows_of(self, fps: np.ndarray) -> np.ndarray:
        """Rows of many fingerprints; new ones get rows (no text: see :meth:`consume`)."""
        fps = np.ascontiguousarray(fps, dtype=np.uint64)
        start = self.n_urls
        rows, fresh = self.index.intern(fps, start)
        if len(fresh):
            self._new_rows(fresh)
            self.urls.empty(len(fresh))
        return rows

    def _new_rows(self, fresh: np.ndarray) -> None:
        k = len(fresh)
        self.fps.extend(fresh)
        for col in (self.status, self.rank, self.nbytes, self.superstep, self.node, self.kind):
            col.grow(k)

    def _kind_id(self, kind: str) -> int:
        k = self._kind_ids.get(kind)
        if k is None:
            k = self._kind_ids[kind] = len(self.kinds)
            self.kinds.append(kind)
        return k

    def _kind_ids_of(self, kinds: list[str]) -> np.ndarray:
        ids = self._kind_ids
        get = ids.get
        out = [get(k) for k in kinds]
        if None in out:
            out = [self._kind_id(k) for k in kinds]
        return np.array(out, dtype=np.int16)

    def consume(self, data: bytes) -> None:
        """Merge one encoded report."""
        r = plaindata.loads(data)
        rank, step = r["rank"], r["superstep"]
        # URL text first: the rows new to rank 0 get their text in order (a rank sends a URL's
        # text with the first report that names it, so every new row of a report is among them)
        new_fp = np.ascontiguousarray(r["new_fp"], dtype=np.uint64)
        if len(new_fp):
            start = self.n_urls
            rows, fresh = self.index.intern(new_fp, start)
            blob = r["new_urls"]
            if len(fresh) == len(new_fp):             # all new (the rule): the blob as it came
                self._new_rows(fresh)
                self.urls.append_blob(blob, len(new_fp))
            else:                                     # some known already (from other ranks)
                texts = blob.decode("utf-8").split("\n")
                is_new = rows >= start
                if len(fresh):                        # each new row's text at its first mention
                    self._new_rows(fresh)
                    _, at = np.unique(rows, return_index=True)
                    at = at[rows[at] >= start]        # (unique sorts by row: new rows in order)
                    self.urls.append([texts[j] for j in at.tolist()])
                old = np.flatnonzero(~is_new)
                missing = old[self.urls.text_lengths(rows[old]) == 0]   # a row made before its text
                for j in missing.tolist():
                    self.urls.set_late(int(rows[j]), texts[j])
        send_b, send_u = r["send_bytes"].tolist(), r["send_urls"].tolist()
        for dst, (b, u) in enumerate(zip(send_b, send_u)):
            if b and dst != rank:
                self.exchange_rows.append((step, rank, dst, b, u))
        page_fp = np.ascontiguousarray(r["page_fp"], dtype=np.uint64)
        self.step_volume.add_at(step, rank, r["volume"])
        self.step_pages.add_at(step, rank, len(page_fp))
        # pages first (so links between pages of one report resolve), then links
        if len(page_fp):
            prow = self._rows_of(page_fp)
            first = self.rank.a[prow] < 0
            if len(prow) > 1:                         # a page twice in one report: its first answer
                _, at = np.unique(prow, return_index=True)
                once = np.zeros(len(prow), dtype=bool)
                once[at] = True
                first &= once
            self.overlap_pages += int(len(prow) - np.count_nonzero(first))
            rows = prow[first]
            self.status.a[rows] = np.asarray(r["page_status"])[first]
            self.rank.a[rows] = rank
            self.nbytes.a[rows] = np.asarray(r["page_bytes"])[first]
            self.superstep.a[rows] = step
            kinds = r["page_kind"].decode().split("\n")
            if any(kinds):                            # (an empty kind leaves the row's as it is)
                ids = self._kind_ids_of(kinds)
                named = first & (ids != 0)
                self.kind.a[prow[named]] = ids[named]
            isnode = np.asarray(r["page_node"], dtype=bool)[first]
            new_nodes = rows[isnode]
            n0 = len(self.node_url)
            self.node.a[new_nodes] = np.arange(n0, n0 + len(new_nodes), dtype=np.int32)
            self.node_url.extend(new_nodes)
            self._pending_kernel_nodes += len(new_nodes)
            self._fetched_rows.append(rows)
        given = np.ascontiguousarray(r["given_up_fp"], dtype=np.uint64)
        if len(given):
            grow = self._rows_of(given)
            ids = self._kind_ids_of(r["given_up_kind"].decode().split("\n"))
            open_ = self.rank.a[grow] < 0
            self.kind.a[grow[open_]] = ids[open_]
        src_rows = self._rows_of(r["link_src"]).astype(np.int32)
        dst_rows = self._rows_of(r["link_dst"]).astype(np.int32)
        kinds = r.get("link_kind")
        if kinds is None or len(kinds) != len(src_rows):      # a report without kinds: all navigation
            kinds = np.zeros(len(src_rows), dtype=np.uint8)
        base = self._n_links
        if base + len(src_rows) > 2 ** 32:
            raise OverflowError("rank 0's graph would hold more than 2**32 links")
        self._n_links += len(src_rows)
        self.link_src.append(src_rows)
        self.link_dst.append(dst_rows)
        self.link_kind.append(kinds)
        if self.host_ranks is not None:
            self.host_ranks.add_links(src_rows, dst_rows)
        if len(src_rows):
            # the page graph (statistics, graph.npz edges): navigation, redirect and refresh links
            # between HTML pages; an embed (a requisite, an iframe's page too) is a link of the URL
            # graph only, unless --stats-edges all
            node = self.node.a
            ns, nd = node[src_rows], node[dst_rows]
            keep = (ns >= 0) & (src_rows != dst_rows)
            if self.page_edges_only:
                keep &= kinds != EMBED
            now = keep & (nd >= 0)
            self._add_edges(ns[now], nd[now], base + np.flatnonzero(now))
            wait = keep & (nd < 0) & (self.rank.a[dst_rows] < 0)
            if wait.any():
                self._wait_row.extend(dst_rows[wait])
                self._wait_src.extend(ns[wait])
                self._wait_link.extend(base + np.flatnonzero(wait))

    def _add_edges(self, s: np.ndarray, d: np.ndarray, links: np.ndarray) -> None:
        if len(s):
            self.edge_link.extend(links)
            self._pending_kernel_edges.append((s.astype(np.int32), d.astype(np.int32)))

    def _resolve_waiting(self) -> None:
        """Links waiting for pages fetched this superstep: an edge when the page is a node (and
        not the link's own source), dropped when it failed, redirected or is not HTML."""
        if not self._fetched_rows or not len(self._wait_row):
            self._fetched_rows = []
            return
        self._fetched_rows = []
        wr, ws, wl = self._wait_row.view(), self._wait_src.view(), self._wait_link.view()
        done = self.rank.a[wr] >= 0
        if not done.any():
            return
        nd = self.node.a[wr[done]]
        s = ws[done]
        edge = (nd >= 0) & (nd != s)
        self._add_edges(s[edge], nd[edge], wl[done][edge])
        left = ~done
        kept = [c.view()[left].copy() for c in (self._wait_row, self._wait_src, self._wait_link)]
        self._wait_row, self._wait_src, self._wait_link = _Col(np.int32), _Col(np.int32), _Col(np.uint32)
        for col, v in zip((self._wait_row, self._wait_src, self._wait_link), kept):
            col.extend(v)

    @property
    def links_waiting(self) -> int:
        """Links to pages not fetched yet (they become edges when those pages are nodes)."""
        return len(self._wait_row)

    def end_superstep(self, step: int, t: float) -> None:
        """Close a superstep: record its time, hand new nodes and edges to the kernels."""
        self._resolve_waiting()
        self.step_t.set_at(step, 0, t)
        if self.host_ranks is not None:
            self.host_ranks.update(self.urls)        # when due, on its budget
        if self.kernels is not None and (self._pending_kernel_nodes or self._pending_kernel_edges):
            es = [s for s, _ in self._pending_kernel_edges]
            ed = [d for _, d in self._pending_kernel_edges]
            self.kernels.submit(self._pending_kernel_nodes,
                                np.concatenate(es) if es else np.zeros(0, np.int32),
                                np.concatenate(ed) if ed else np.zeros(0, np.int32))
        self._pending_kernel_nodes = 0
        self._pending_kernel_edges = []

    @property
    def n_nodes(self) -> int:
        return len(self.node_url)

    @property
    def n_edges(self) -> int:
        return len(self.edge_link)

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """``(edge_src, edge_dst)``: node ids of every edge, in the order they were found."""
        idx = self.edge_link.view().astype(np.int64)
        if not len(idx):
            return np.zeros(0, np.int32), np.zeros(0, np.int32)
        ls = np.concatenate(self.link_src)
        ld = np.concatenate(self.link_dst)
        node = self.node.a
        return node[ls[idx]].astype(np.int32), node[ld[idx]].astype(np.int32)

    def nbytes_held(self) -> dict[str, int]:
        """Bytes (capacity) of the URL table, the node list, the links, the edges and the waiting
        links (not the statistics kernels')."""
        cols = (self.fps, self.status, self.rank, self.nbytes, self.superstep, self.node, self.kind)
        return {"index": self.index.nbytes, "url_text": self.urls.nbytes(),
                "url_columns": sum(c.a.nbytes for c in cols),
                "links": sum(a.nbytes for a in self.link_src) * 2 + sum(a.nbytes for a in self.link_kind),
                "nodes": self.node_url.a.nbytes, "edges": self.edge_link.a.nbytes,
                "waiting": self._wait_row.a.nbytes + self._wait_src.a.nbytes + self._wait_link.a.nbytes}

    def graph(self) -> SessionGraph:
        ls = np.concatenate(self.link_src) if self.link_src else np.zeros(0, np.int32)
        ld = np.concatenate(self.link_dst) if self.link_dst else np.zeros(0, np.int32)
        lk = np.concatenate(self.link_kind).astype(np.uint8) if self.link_kind else np.zeros(0, np.uint8)
        es, ed = self.edges()
        return SessionGraph(
            ranks=self.ranks,
            urls=list(self.urls),
            url_fp=self.fps.view().copy(),
            url_status=self.status.view().copy(),
            url_rank=self.rank.view().copy(),
            url_bytes=self.nbytes.view().copy(),
            url_superstep=self.superstep.view().copy(),
            url_node=self.node.view().copy(),
            url_kind=self.kind.view().copy(),
            kinds=list(self.kinds),
            link_src=ls.astype(np.int32), link_dst=ld.astype(np.int32),
            node_url=self.node_url.view().copy(),
            edge_src=es,
            edge_dst=ed,
            link_kind=lk,
        )

    def exchange_arrays(self) -> dict[str, np.ndarray]:
        n = max(self.step_volume.n, self.step_pages.n, self.step_t.n)
        vol = np.zeros((n, self.ranks), dtype=np.int64)
        pages = np.zeros((n, self.ranks), dtype=np.int64)
        t = np.zeros(n, dtype=np.float64)
        vol[:self.step_volume.n] = self.step_volume.view()
        pages[:self.step_pages.n] = self.step_pages.view()
        t[:self.step_t.n] = self.step_t.view()[:, 0]
        return {"rows": self.exchange_rows.view().copy(), "step_volume": vol, "step_pages": pages, "step_t": t}
