"""A reference of rank 0's merge of reports, written plainly (dicts and lists, one Python step per
page and per link, links to pages not fetched yet resolved the moment the page comes), as the
coordinator was before it became columns (issue 35). tests/test_coordinator.py checks
:class:`abc_crawler.graph.coordinator.Coordinator` against it on random reports."""
from __future__ import annotations

from abc_crawler.graph.coordinator import decode_report

EMBED = 1


class RefCoordinator:
    def __init__(self, page_edges_only: bool = True):
        self.page_edges_only = page_edges_only
        self.index: dict[int, int] = {}
        self.urls: list[str | None] = []
        self.fps: list[int] = []
        self.status: list[int] = []
        self.rank: list[int] = []
        self.nbytes: list[int] = []
        self.superstep: list[int] = []
        self.node: list[int] = []
        self.kind: list[str] = []
        self.link_src: list[int] = []
        self.link_dst: list[int] = []
        self.link_kind: list[int] = []
        self.node_url: list[int] = []
        self.edges: list[tuple[int, int]] = []
        self.links_to: dict[int, list[int]] = {}
        self.overlap_pages = 0
        self.step_edges: list[tuple[int, int]] = []     # edges of the current superstep
        self.step_nodes = 0

    def _row(self, fp: int) -> int:
        i = self.index.get(fp)
        if i is None:
            i = self.index[fp] = len(self.fps)
            for col, v in ((self.fps, fp), (self.urls, None), (self.status, 0), (self.rank, -1),
                           (self.nbytes, 0), (self.superstep, -1), (self.node, -1), (self.kind, "")):
                col.append(v)
        return i

    def _edge(self, s: int, d: int) -> None:
        self.edges.append((s, d))
        self.step_edges.append((s, d))

    def consume(self, data: bytes) -> None:
        r = decode_report(data)
        rank, step = r["rank"], r["superstep"]
        for fp, url in zip(r["new_fp"].tolist(), r["new_urls"]):
            i = self._row(fp)
            if self.urls[i] is None:
                self.urls[i] = url
        page_rows = []
        for fp, st, nb, isnode, kind in zip(r["page_fp"].tolist(), r["page_status"].tolist(),
                                            r["page_bytes"].tolist(), r["page_node"].tolist(), r["page_kind"]):
            i = self._row(fp)
            if self.rank[i] >= 0:
                self.overlap_pages += 1
                continue
            if kind:
                self.kind[i] = kind
            self.status[i], self.rank[i], self.nbytes[i], self.superstep[i] = st, rank, nb, step
            page_rows.append(i)
            if isnode:
                self.node[i] = len(self.node_url)
                self.node_url.append(i)
                self.step_nodes += 1
        for fp, kind in zip(r["given_up_fp"].tolist(), r["given_up_kind"]):
            i = self._row(fp)
            if self.rank[i] < 0:
                self.kind[i] = kind
        src = [self._row(fp) for fp in r["link_src"].tolist()]
        dst = [self._row(fp) for fp in r["link_dst"].tolist()]
        kinds = r["link_kind"].tolist()
        self.link_src += src
        self.link_dst += dst
        self.link_kind += kinds
        for s, d, k in zip(src, dst, kinds):
            ns = self.node[s]
            if ns < 0 or s == d or (k == EMBED and self.page_edges_only):
                continue
            nd = self.node[d]
            if nd >= 0:
                self._edge(ns, nd)
            elif self.rank[d] < 0:
                self.links_to.setdefault(d, []).append(ns)
        for i in page_rows:
            waiting = self.links_to.pop(i, None)
            if waiting is None or self.node[i] < 0:
                continue
            for ns in waiting:
                if ns != self.node[i]:
                    self._edge(ns, self.node[i])

    def end_superstep(self) -> tuple[int, list[tuple[int, int]]]:
        """The new nodes and the edges of the superstep (what the kernels get)."""
        out = (self.step_nodes, self.step_edges)
        self.step_nodes, self.step_edges = 0, []
        return out
