"""Partition quality: METIS recursive bisection and multi-start, and the volume bounds (partition/bounds.py).

Every check of a cut or a balance here is recomputed from scratch (brute force or
plain loops), never taken from the partitioner's own report.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from abc_crawler.partition import bounds, metis, synthetic
from abc_crawler.partition.assignment_metrics import predict
from abc_crawler.partition.models import WeightedGraph, _undirected_csr, page_graph
from abc_crawler.web.ownership import owners_hash
from abc_crawler.store.session import SessionGraph


def graph_from_edges(n, edges, vwgt):
    a = np.array([e[0] for e in edges], np.int64)
    b = np.array([e[1] for e in edges], np.int64)
    c = np.array([e[2] for e in edges], np.int64)
    xadj, adjncy, adjwgt = _undirected_csr(a, b, c, n)
    return WeightedGraph("page", xadj, adjncy, adjwgt, np.asarray(vwgt, np.int64), np.arange(n), [str(i) for i in range(n)])


def brute_cut(edges, part):
    return sum(c for u, v, c in edges if part[u] != part[v])


def within(part, vwgt, K, eps):
    """Both constraints within (1 + eps) of the average, recomputed with plain loops."""
    vwgt = np.asarray(vwgt)
    for c in range(vwgt.shape[1]):
        loads = [0] * K
        for v, p in enumerate(part):
            loads[int(p)] += int(vwgt[v, c])
        if max(loads) > sum(loads) / K * (1 + eps) + 1e-9:
            return False
    return True


def cliques(k, size, heavy=10, light=1):
    """k cliques of `size` vertices (edge cost `heavy`), clique i joined to i+1 by one `light` edge."""
    edges = []
    for i in range(k):
        base = i * size
        edges += [(base + a, base + b, heavy) for a, b in itertools.combinations(range(size), 2)]
        if i + 1 < k:
            edges.append((base + size - 1, base + size, light))
    return edges


@pytest.mark.parametrize("recursive", [False, True])
def test_both_methods_find_the_known_optimum(recursive):
    # 4 cliques of 5 in a chain, K = 4 at 5 %: the optimum keeps every clique whole, cut = 3 light edges
    edges = cliques(4, 5)
    g = graph_from_edges(20, edges, np.ones((20, 2)))
    part, _ = metis.part_graph_kway(g.xadj, g.adjncy, g.vwgt, 4, g.adjwgt, imbalance=0.05, seed=1,
                                    recursive=recursive)
    assert brute_cut(edges, part.tolist()) == 3
    assert within(part.tolist(), g.vwgt, 4, 0.05)


def test_multi_start_is_balanced_and_optimal_on_a_brute_forced_graph():
    # 10 vertices, two weights, K = 2 at 25 %: enumerate every partition for the true optimum
    # (at 10 % a part holds exactly 5 pages, and reaching the byte cap would take a swap)
    rng = np.random.default_rng(5)
    n, K, eps = 10, 2, 0.25
    edges = cliques(2, 5, heavy=7, light=2)
    edges += [(int(a), int(b), int(c)) for a, b, c in zip(rng.integers(0, 5, 4), rng.integers(5, 10, 4),
                                                          rng.integers(1, 3, 4))]
    vw = np.stack([rng.integers(50, 150, n), np.ones(n, np.int64)], axis=1)
    g = graph_from_edges(n, edges, vw)
    best = min(brute_cut(edges, p) for p in itertools.product(range(K), repeat=n) if within(p, vw, K, eps))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metis.MetisWarning)
        r = metis.partition_graph(g, K, eps, seed=1, methods=("kway", "rb"), tries=3)
    assert within(r.part.tolist(), vw, K, eps)
    assert brute_cut(edges, r.part.tolist()) == r.cut
    assert r.cut == best
    assert set(r.starts) == {"metis", "metis+1", "metis+2", "metis-rb", "metis-rb+1", "metis-rb+2"}
    assert r.start in r.starts and r.starts[r.start]["cut"] == r.cut
    assert r.cut == min(v["cut"] for v in r.starts.values() if v["balanced"])


@pytest.fixture(scope="module")
def syn():
    return synthetic.synthetic_graph(4000, 40, ranks=4, seed=11)


def test_more_starts_never_do_worse_and_stay_within_tolerance(syn):
    pg = page_graph(syn)
    K, eps = 8, 0.05
    one = metis.partition_graph(pg, K, eps, seed=1)
    many = metis.partition_graph(pg, K, eps, seed=1, methods=("kway", "rb"), tries=3, ncuts=2)
    assert many.cut <= one.cut
    # independent check of both constraints on the true weights
    for r in (one, many):
        bytes_w = np.bincount(r.part, weights=pg.vwgt[:, 0], minlength=K)
        pages_w = np.bincount(r.part, minlength=K)
        assert bytes_w.max() <= bytes_w.mean() * (1 + eps) + 1e-9
        assert pages_w.max() <= pages_w.mean() * (1 + eps) + 1e-9
        assert r.cut == pg.cut(r.part)


def test_partition_graph_argument_checks(syn):
    pg = page_graph(syn)
    with pytest.raises(ValueError, match="methods"):
        metis.partition_graph(pg, 2, methods=("spectral",))
    with pytest.raises(ValueError, match="tries"):
        metis.partition_graph(pg, 2, tries=0)


# ---------------------------------------------------------------- bounds


def hub_graph():
    """A hub linked from 5 pages of its host; one source also links a never-requested URL."""
    urls = ["http://a.test/hub"] + [f"http://a.test/{i}" for i in range(5)] + ["http://b.test/gone"]
    g = SessionGraph.from_urls(urls, ranks=2)
    g.url_rank = np.array([0, 0, 0, 1, 1, 1, -1], np.int16)
    g.url_bytes = np.array([10, 10, 10, 10, 10, 10, 0], np.int64)
    g.link_src = np.array([1, 2, 3, 4, 5, 1, 1], np.int32)
    g.link_dst = np.array([0, 0, 0, 0, 0, 6, 0], np.int32)
    return g


def brute_min_volume(g, K, eps):
    """Lowest predicted volume over all assignments of the requested pages within the caps
    (never-requested targets placed optimally too)."""
    req = np.flatnonzero(g.url_rank >= 0)
    free = np.flatnonzero(g.url_rank < 0)
    vw = np.stack([g.url_bytes[req], np.ones(req.size, np.int64)], axis=1)
    best = None
    for p in itertools.product(range(K), repeat=req.size):
        if not within(p, vw, K, eps):
            continue
        for q in itertools.product(range(K), repeat=free.size):
            own = np.zeros(len(g.urls), np.int64)
            own[req] = p
            own[free] = q
            v = predict(g, own, K)["volume_bytes"]
            best = v if best is None else min(best, v)
    return best


@pytest.mark.parametrize("K,eps", [(2, 0.0), (2, 0.2), (3, 0.05)])
def test_hub_bound_is_a_lower_bound_and_matches_its_reference(K, eps):
    g = hub_graph()
    lb = bounds.hub_lower_bound(g, K, eps)
    assert lb["bound"] == bounds.hub_lower_bound_reference(g, K, eps)
    assert lb["bound"] <= brute_min_volume(g, K, eps)


def test_hub_bound_is_tight_on_a_star():
    g = hub_graph()
    # K=2, eps=0: 3 pages per rank, so the hub keeps at most 2 of its 5 sources; 3 links of 18 bytes are remote
    lb = bounds.hub_lower_bound(g, 2, 0.0)
    assert lb["bound"] == 3 * (len("http://a.test/hub") + 1)
    assert lb["cap_pages"] == 3 and lb["top"][0]["kept_max"] == 2
    assert brute_min_volume(g, 2, 0.0) == lb["bound"]


def test_hub_bound_respects_the_byte_cap():
    g = hub_graph()
    g.url_bytes[:6] = [10, 10, 10, 10, 10, 1000]   # one heavy source: it cannot join the hub's rank
    capP, capB = bounds.caps(g, 2, 0.05)
    assert capP == 3 and capB == pytest.approx(1.05 * 1050 / 2)
    assert bounds.hub_lower_bound(g, 2, 0.05)["bound"] == bounds.hub_lower_bound_reference(g, 2, 0.05)


def test_hub_bound_on_a_synthetic_session(syn):
    K, eps = 4, 0.05
    lb = bounds.hub_lower_bound(syn, K, eps)
    assert lb["bound"] == bounds.hub_lower_bound_reference(syn, K, eps)
    assert lb["bound"] <= predict(syn, owners_hash(syn, K), K)["volume_bytes"]


def test_volume_breakdown_adds_up(syn):
    K = 4
    own = owners_hash(syn, K)
    b = bounds.volume_breakdown(syn, own, K)
    assert b["inter_host"] + b["intra_host"] + b["unrequested"] == b["volume_bytes"]
    assert b["volume_bytes"] == predict(syn, own, K)["volume_bytes"]
    for k in ("inter_host", "intra_host", "unrequested"):
        assert 0 <= b[k] <= b[k + "_total"]
    one = bounds.volume_breakdown(syn, np.zeros(len(syn.urls), np.int64), K)
    assert one["volume_bytes"] == 0


def test_forced_splits():
    urls = [f"http://big.test/{i}" for i in range(6)] + ["http://s.test/", "http://t.test/", "http://u.test/",
                                                          "http://heavy.test/"]
    g = SessionGraph.from_urls(urls, ranks=4)
    g.url_rank[:] = 0
    g.url_bytes[:] = [1] * 9 + [30]
    f = {h["host"]: h for h in bounds.forced_splits(g, 4, 0.05)}
    # 10 pages on 4 ranks: cap 2 pages each, so big.test (6 pages) needs 3 ranks;
    # 39 bytes: cap 10.2 bytes, so heavy.test (30 bytes, 1 page) would need 3 ranks - a single page cannot
    assert f["big.test"]["min_ranks"] == 3 and f["s.test"]["min_ranks"] == 1
    assert f["heavy.test"]["min_ranks"] == 3
