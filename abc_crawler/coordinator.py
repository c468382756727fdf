"""Rank 0's view of the crawl: the crawled graph (SPAWC's UPDATE GRAPH) and its statistics.

Every superstep each rank sends rank 0 a *report*: the responses it processed
(fingerprint, status, body bytes, whether it is a node) and the distinct links
found on them, with the text of every URL the rank has not reported before.
:class:`Coordinator` merges the reports:

* a URL gets a row in the URL table when rank 0 first hears of it;
* a page gets a dense node id when it is crawled successfully (status 200,
  parsed as HTML);
* an edge u→v enters the graph only when both ends are nodes; a link to a page
  not yet crawled waits in ``links_to[v]``; when v turns out to have failed (or
  to be a redirect or non-HTML), its pending links are dropped;
* new nodes and edges go, in batches, to the statistics kernels, which run in
  a worker thread (they release the GIL) while rank 0 keeps crawling.
"""
from __future__ import annotations

import os
from array import array
import pickle
import queue
import threading
from dataclasses import dataclass, field

import numpy as np

from .session import SessionGraph

__all__ = ["SuperstepReport", "encode_report", "decode_report", "Coordinator", "KernelWorker"]


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
    new_fp: list[int] = field(default_factory=list)       # URLs reported for the first time
    new_urls: list[str] = field(default_factory=list)
    send_bytes: list[int] = field(default_factory=list)   # per destination rank, this superstep
    send_urls: list[int] = field(default_factory=list)
    volume: int = 0                                       # Türk MV of this superstep's pages

    def empty(self) -> bool:
        return not self.page_fp and not self.new_fp


def encode_report(r: SuperstepReport) -> bytes:
    """Columnar, pickle-free-of-Python-lists encoding (NumPy buffers + one URL blob)."""
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
        "new_fp": np.array(r.new_fp, dtype=np.uint64),
        "new_urls": "\n".join(r.new_urls).encode(),
        "send_bytes": np.array(r.send_bytes, dtype=np.int64),
        "send_urls": np.array(r.send_urls, dtype=np.int64),
    }
    return pickle.dumps(obj, protocol=5)


def decode_report(data: bytes) -> dict:
    obj = pickle.loads(data)
    blob = obj.pop("new_urls")
    obj["new_urls"] = blob.decode().split("\n") if blob else []
    for key, n in (("page_kind", len(obj["page_fp"])), ("given_up_kind", len(obj["given_up_fp"]))):
        obj[key] = obj[key].decode().split("\n") if n else []
    return obj


class KernelWorker:
    """Feeds node and edge batches to the statistics kernels in a worker thread."""

    def __init__(self, max_nodes: int, nice: int = 10):
        from .kernels import GraphStats  # the Cython kernels (kernels/ folder)

        self.nice = nice
        self.stats = GraphStats(max_nodes=max_nodes)
        self._q: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._summary: dict = self.stats.summary()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="abc-kernels", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # The kernels are CPU-bound; at a lower priority they take what the crawl leaves
        # (ranks usually outnumber cores), so rank 0 keeps crawling at full speed.
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self.nice)
        except (AttributeError, OSError):
            pass
        while True:
            item = self._q.get()
            if item is None:
                return
            try:
                if callable(item):             # a test's injected fault (--test-crash kernels:STEP)
                    item()
                    continue
                n_new, src, dst = item
                if n_new:
                    self.stats.add_nodes(n_new)
                if len(src):
                    self.stats.add_edges(src, dst)
                s = self.stats.summary()
                with self._lock:
                    self._summary = s
            except BaseException as exc:  # raised again in the main thread at the next superstep
                self.error = exc
                from .crash import record_thread_failure

                record_thread_failure(threading.current_thread().name, exc)
                return

    def submit(self, n_new: int, src: np.ndarray, dst: np.ndarray) -> None:
        self._q.put((n_new, src, dst))

    def inject_failure(self, message: str) -> None:
        """Test hook: the thread fails when it reaches this point of its queue."""
        from .crash import InjectedCrash

        def fail() -> None:
            raise InjectedCrash(message)

        self._q.put(fail)

    def summary(self) -> dict:
        with self._lock:
            return dict(self._summary)

    def close(self) -> dict:
        self._q.put(None)
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.stats.summary()


class _Rows:
    """A growable 2-D table (amortized doubling): per-superstep counters stay compact NumPy
    rows however long the crawl, not a Python tuple or list per superstep."""

    def __init__(self, width: int, dtype=np.int64):
        self.a = np.zeros((64, width), dtype=dtype)
        self.n = 0

    def _reserve(self, n: int) -> None:
        if n > len(self.a):
            grown = np.zeros((max(n, 2 * len(self.a)), self.a.shape[1]), dtype=self.a.dtype)
            grown[:self.n] = self.a[:self.n]
            self.a = grown

    def append(self, row) -> None:
        self._reserve(self.n + 1)
        self.a[self.n] = row
        self.n += 1

    def _row(self, i: int) -> None:
        if i >= self.n:
            self._reserve(i + 1)
            self.n = i + 1

    def add_at(self, i: int, col: int, value) -> None:
        """``table[i, col] += value``, rows up to ``i`` created (zero) as needed."""
        self._row(i)
        self.a[i, col] += value

    def set_at(self, i: int, col: int, value) -> None:
        self._row(i)
        self.a[i, col] = value

    def view(self) -> np.ndarray:
        return self.a[:self.n]


class Coordinator:
    """Merges reports into the URL table and the crawled graph (rank 0 only)."""

    def __init__(self, ranks: int, kernels: KernelWorker | None = None):
        self.ranks = ranks
        self.kernels = kernels
        self.index: dict[int, int] = {}       # fp -> URL-table row
        self.urls: list[str | None] = []
        self.fps: list[int] = []
        self.status: list[int] = []
        self.rank: list[int] = []
        self.nbytes: list[int] = []
        self.superstep: list[int] = []
        self.node: list[int] = []
        self.kind = array("h")               # per URL row: index into kinds (0: none)
        self.kinds: list[str] = [""]         # outcome kinds: why a URL is not a node, how it failed
        self._kind_ids: dict[str, int] = {"": 0}
        self.link_src: list[np.ndarray] = []
        self.link_dst: list[np.ndarray] = []
        self.node_url: list[int] = []
        self.edge_src: list[int] = []
        self.edge_dst: list[int] = []
        self.links_to: dict[int, list[int]] = {}
        self.overlap_pages = 0
        self.exchange_rows = _Rows(5)          # (superstep, src, dst, bytes, URLs), non-empty payloads
        self.step_volume = _Rows(ranks)        # [superstep, rank] -> MV
        self.step_pages = _Rows(ranks)         # [superstep, rank] -> responses
        self.step_t = _Rows(1, np.float64)     # [superstep] -> seconds since the start
        self._pending_kernel_nodes = 0
        self._pending_kernel_edges: tuple[list[int], list[int]] = ([], [])

    def _row(self, fp: int) -> int:
        i = self.index.get(fp)
        if i is None:
            i = self.index[fp] = len(self.fps)
            self.fps.append(fp)
            self.urls.append(None)
            self.status.append(0)
            self.rank.append(-1)
            self.nbytes.append(0)
            self.superstep.append(-1)
            self.node.append(-1)
            self.kind.append(0)
        return i

    def _rows(self, fps: list[int]) -> list[int]:
        """Rows of many fingerprints (new ones added): one dict lookup each when all are known."""
        get = self.index.get
        rows = [get(fp) for fp in fps]
        if None in rows:
            rows = [self._row(fp) for fp in fps]
        return rows

    def consume(self, data: bytes) -> None:
        """Merge one encoded report."""
        r = decode_report(data)
        rank, step = r["rank"], r["superstep"]
        for fp, url in zip(r["new_fp"].tolist(), r["new_urls"]):
            i = self._row(fp)
            if self.urls[i] is None:
                self.urls[i] = url
        for dst, (b, u) in enumerate(zip(r["send_bytes"].tolist(), r["send_urls"].tolist())):
            if b and dst != rank:
                self.exchange_rows.append((step, rank, dst, b, u))
        self.step_volume.add_at(step, rank, r["volume"])
        self.step_pages.add_at(step, rank, len(r["page_fp"]))
        # pages first (so links between pages of one report resolve), then links
        new_nodes: list[int] = []
        page_rows = []
        kind_id = self._kind_id
        for fp, st, nb, isnode, kind in zip(r["page_fp"].tolist(), r["page_status"].tolist(),
                                            r["page_bytes"].tolist(), r["page_node"].tolist(), r["page_kind"]):
            i = self._row(fp)
            if self.rank[i] >= 0:
                self.overlap_pages += 1
                continue
            if kind:
                self.kind[i] = kind_id(kind)
            self.status[i] = st
            self.rank[i] = rank
            self.nbytes[i] = nb
            self.superstep[i] = step
            page_rows.append(i)
            if isnode:
                nid = len(self.node_url)
                self.node[i] = nid
                self.node_url.append(i)
                new_nodes.append(i)
        for fp, kind in zip(r["given_up_fp"].tolist(), r["given_up_kind"]):
            i = self._row(fp)
            if self.rank[i] < 0:
                self.kind[i] = kind_id(kind)
        src_rows = np.array(self._rows(r["link_src"].tolist()), dtype=np.int32)
        dst_rows = np.array(self._rows(r["link_dst"].tolist()), dtype=np.int32)
        self.link_src.append(src_rows)
        self.link_dst.append(dst_rows)
        es, ed = self._pending_kernel_edges
        node = self.node
        for s, d in zip(src_rows.tolist(), dst_rows.tolist()):
            ns = node[s]
            if ns < 0 or s == d:
                continue
            nd = node[d]
            if nd >= 0:
                self.edge_src.append(ns); self.edge_dst.append(nd); es.append(ns); ed.append(nd)
            elif self.rank[d] < 0:
                self.links_to.setdefault(d, []).append(ns)
        for i in page_rows:
            waiting = self.links_to.pop(i, None)
            if waiting is None:
                continue
            nd = node[i]
            if nd < 0:
                continue                   # failed, redirect or non-HTML: links dropped
            for ns in waiting:
                if ns != nd:
                    self.edge_src.append(ns); self.edge_dst.append(nd); es.append(ns); ed.append(nd)
        self._pending_kernel_nodes += len(new_nodes)

    def _kind_id(self, kind: str) -> int:
        k = self._kind_ids.get(kind)
        if k is None:
            k = self._kind_ids[kind] = len(self.kinds)
            self.kinds.append(kind)
        return k

    def end_superstep(self, step: int, t: float) -> None:
        """Close a superstep: record its time, hand new nodes and edges to the kernels."""
        self.step_t.set_at(step, 0, t)
        if self.kernels is not None and (self._pending_kernel_nodes or self._pending_kernel_edges[0]):
            es, ed = self._pending_kernel_edges
            self.kernels.submit(self._pending_kernel_nodes, np.array(es, dtype=np.int32), np.array(ed, dtype=np.int32))
        self._pending_kernel_nodes = 0
        self._pending_kernel_edges = ([], [])

    @property
    def n_nodes(self) -> int:
        return len(self.node_url)

    def graph(self) -> SessionGraph:
        ls = np.concatenate(self.link_src) if self.link_src else np.zeros(0, np.int32)
        ld = np.concatenate(self.link_dst) if self.link_dst else np.zeros(0, np.int32)
        return SessionGraph(
            ranks=self.ranks,
            urls=[u if u is not None else "" for u in self.urls],
            url_fp=np.array(self.fps, dtype=np.uint64),
            url_status=np.array(self.status, dtype=np.int16),
            url_rank=np.array(self.rank, dtype=np.int16),
            url_bytes=np.array(self.nbytes, dtype=np.int64),
            url_superstep=np.array(self.superstep, dtype=np.int32),
            url_node=np.array(self.node, dtype=np.int32),
            url_kind=np.frombuffer(self.kind, dtype=np.int16).copy() if len(self.kind) else np.zeros(0, np.int16),
            kinds=list(self.kinds),
            link_src=ls.astype(np.int32), link_dst=ld.astype(np.int32),
            node_url=np.array(self.node_url, dtype=np.int32),
            edge_src=np.array(self.edge_src, dtype=np.int32),
            edge_dst=np.array(self.edge_dst, dtype=np.int32),
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
