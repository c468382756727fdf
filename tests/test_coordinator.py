"""Rank 0's merge of reports as columns (abc_crawler/graph/coordinator.py, issue 35) against the plain
reference of tests/coordinator_ref.py, on random reports from several ranks over many supersteps:
pages fetched twice, failures, non-HTML pages, given-up URLs, embeds, self links, links to pages
fetched later, in the same report or never. The URL table, the nodes, the links, the edges (as a
multiset: the order of edges found by a waiting link may differ) and what the statistics kernels
get at each superstep are the same."""
from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from abc_crawler.graph.coordinator import Coordinator, SuperstepReport, encode_report
from abc_crawler.web.urls import fingerprint

from coordinator_ref import RefCoordinator


class _Kernels:
    """Records what the kernels are given."""

    def __init__(self):
        self.batches: list[tuple[int, list[tuple[int, int]]]] = []

    def submit(self, n_new, src, dst):
        self.batches.append((n_new, list(zip(src.tolist(), dst.tolist()))))


def _reports(seed: int, ranks: int = 3, steps: int = 25, universe: int = 150):
    rnd = random.Random(seed)
    urls = [f"http://h{i % 13}.test/p{i}" + ("ü" if i % 17 == 0 else "") for i in range(universe)]
    told = [set() for _ in range(ranks)]          # URLs each rank sent the text of
    kinds_fail = ["", "http_404", "timeout", "not_html", "redirect"]
    for step in range(steps):
        for rank in range(ranks):
            rep = SuperstepReport(rank=rank, superstep=step, volume=rnd.randrange(1000))

            def tell(u):
                if u not in told[rank]:
                    told[rank].add(u)
                    rep.new_fp.append(fingerprint(u))
                    rep.new_urls.append(u)

            pages = rnd.sample(urls, rnd.randrange(0, 8))
            if pages and rnd.random() < 0.2:
                pages.append(pages[0])             # the same page twice in one report
            for u in pages:
                tell(u)
                kind = "" if rnd.random() < 0.7 else rnd.choice(kinds_fail)
                node = kind == "" and rnd.random() < 0.85
                rep.page_fp.append(fingerprint(u))
                rep.page_status.append(200 if kind in ("", "not_html") else rnd.choice([404, -1, 301]))
                rep.page_bytes.append(rnd.randrange(10 ** 6))
                rep.page_node.append(node)
                rep.page_kind.append(kind)
                for _ in range(rnd.randrange(0, 10)):
                    d = rnd.choice(urls) if rnd.random() > 0.05 else u      # now and then a self link
                    tell(d)
                    rep.link_src.append(fingerprint(u))
                    rep.link_dst.append(fingerprint(d))
                    rep.link_kind.append(rnd.choice([0, 0, 0, 1, 2, 3]))
            for u in rnd.sample(urls, rnd.randrange(0, 3)):
                tell(u)
                rep.given_up_fp.append(fingerprint(u))
                rep.given_up_kind.append(rnd.choice(["robots_disallowed", "host_given_up"]))
            rep.send_bytes = [rnd.randrange(0, 50) for _ in range(ranks)]
            rep.send_urls = [b // 10 for b in rep.send_bytes]
            yield step, encode_report(rep)
        yield step, None                            # the end of the superstep


@pytest.mark.parametrize("page_edges_only", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_columns_equal_the_reference(seed, page_edges_only):
    k = _Kernels()
    co = Coordinator(ranks=3, kernels=k, page_edges_only=page_edges_only)
    ref = RefCoordinator(page_edges_only=page_edges_only)
    ref_batches = []
    for step, data in _reports(seed):
        if data is None:
            co.end_superstep(step, float(step))
            n, e = ref.end_superstep()
            if n or e:
                ref_batches.append((n, e))
            continue
        co.consume(data)
        ref.consume(data)
    g = co.graph()
    assert g.urls == [u or "" for u in ref.urls]
    assert g.url_fp.tolist() == ref.fps
    assert g.url_status.tolist() == ref.status and g.url_rank.tolist() == ref.rank
    assert g.url_bytes.tolist() == ref.nbytes and g.url_superstep.tolist() == ref.superstep
    assert g.url_node.tolist() == ref.node and g.node_url.tolist() == ref.node_url
    assert [g.kinds[i] for i in g.url_kind.tolist()] == ref.kind
    assert g.link_src.tolist() == ref.link_src and g.link_dst.tolist() == ref.link_dst
    assert g.link_kind.tolist() == ref.link_kind
    assert Counter(zip(g.edge_src.tolist(), g.edge_dst.tolist())) == Counter(ref.edges)
    assert len(ref.edges) > 50 and co.n_edges == len(ref.edges)
    assert co.overlap_pages == ref.overlap_pages > 0
    # the kernels get, superstep by superstep, the same new nodes and the same edges
    assert [(n, Counter(e)) for n, e in k.batches] == [(n, Counter(e)) for n, e in ref_batches]
    # links to pages never fetched still wait; none to a fetched page does
    assert co.links_waiting == sum(len(v) for v in ref.links_to.values())
    assert all(r < 0 for r in g.url_rank[co._wait_row.view()].tolist())


def test_memory_per_url_row_and_per_edge():
    """The URL table and the graph without a Python object per row or per link (issue 35: rank 0
    held ~400 B a URL row and ~80 B an edge)."""
    co = Coordinator(ranks=4)
    rng = np.random.default_rng(1)
    n = 200_000
    urls = [f"http://h{i % 997}.test/d{i % 31}/p{i}.html" for i in range(n)]
    fps = [fingerprint(u) for u in urls]
    for b in range(0, n, 5000):
        rep = SuperstepReport(rank=b % 4, superstep=b // 5000)
        rep.new_fp, rep.new_urls = fps[b:b + 5000], urls[b:b + 5000]
        rep.page_fp = fps[b:b + 5000]
        rep.page_status = [200] * 5000
        rep.page_bytes = [1000] * 5000
        rep.page_node = [True] * 5000
        rep.page_kind = [""] * 5000
        dst = rng.integers(0, b + 5000, size=5000 * 8)
        rep.link_src = np.repeat(np.array(fps[b:b + 5000], dtype=np.uint64), 8).tolist()
        rep.link_dst = np.array(fps, dtype=np.uint64)[dst].tolist()
        rep.link_kind = [0] * len(rep.link_src)
        rep.send_bytes = rep.send_urls = [0] * 4
        co.consume(encode_report(rep))
        co.end_superstep(b // 5000, 0.0)
    held = co.nbytes_held()
    text = sum(len(u) + 1 for u in urls)
    per_row = (held["index"] + held["url_text"] - text + held["url_columns"] + held["nodes"]) / n
    per_edge = (held["links"] + held["edges"]) / co.n_edges
    assert co.n_nodes == n and co.n_edges > 1_500_000
    assert per_row <= 100, held          # beyond the URL's own text
    assert per_edge <= 16, held          # a link's two ends and kind, an edge's index, as capacity grows
    assert list(co.urls)[:3] == urls[:3] and co.urls[n - 1] == urls[-1]


def test_a_url_named_twice_in_one_report_gets_one_row_with_its_text():
    co = Coordinator(ranks=2)
    a, b, c = "http://a.test/", "http://b.test/", "http://c.test/"
    first = SuperstepReport(rank=0, superstep=0, new_fp=[fingerprint(a)], new_urls=[a])
    co.consume(encode_report(first))
    rep = SuperstepReport(rank=1, superstep=0, new_fp=[fingerprint(b), fingerprint(a), fingerprint(b), fingerprint(c)],
                          new_urls=[b, a, b, c])
    co.consume(encode_report(rep))
    assert list(co.urls) == [a, b, c] and co.n_urls == 3
