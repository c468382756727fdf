"""Tests of the GraphStats facade (abc_crawler.kernels.GraphStats): every figure
against the pure-Python references, in its scope (whole graph / first N pages)."""
from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

from abc_crawler.kernels import GraphStats, graphs
from abc_crawler.kernels.distances import exact_figures
from abc_crawler.kernels.reference import (ReferenceDegrees, ReferenceSCC, ReferenceWholeSCC, bfs_distances,
                                           distance_stats)

I32 = np.int32
KEYS = {"nodes", "edges", "scc_count", "dangling", "diameter", "avg_distance", "stats_nodes",
        "capped", "in_degree_hist", "out_degree_hist", "duplicate_edges", "self_loops", "apsd_overflow",
        "whole", "first_n"}


def arr(xs):
    return np.asarray(xs, dtype=I32)


def expected(n, src, dst, cap=None):
    """Summary computed from scratch with the references (no distance estimates yet)."""
    deg = ReferenceDegrees(n)
    deg.add_edges(src, dst)
    k = n if cap is None else min(n, cap)
    keep = (np.asarray(src) < k) & (np.asarray(dst) < k)
    s, d = np.asarray(src)[keep], np.asarray(dst)[keep]
    scc = ReferenceSCC(k)
    scc.add_edges(s, d)
    dist = bfs_distances(k, s, d)
    diameter, avg, hist = distance_stats(dist, 255)
    whole = ReferenceWholeSCC(n)
    whole.add_edges(src, dst)
    ex = exact_figures(k, hist)
    return {"nodes": n, "edges": deg.edges, "scc_count": scc.count, "dangling": deg.dangling,
            "diameter": diameter, "avg_distance": avg, "stats_nodes": k,
            "capped": cap is not None and n > cap,
            "in_degree_hist": deg.in_hist().tolist() if n else [],
            "out_degree_hist": deg.out_hist().tolist() if n else [],
            "duplicate_edges": deg.duplicates, "self_loops": deg.self_loops, "apsd_overflow": False,
            "whole": {"scope": "whole graph", "nodes": n, "edges": deg.edges, "scc_count": whole.count,
                      "largest_scc": whole.largest, "scc_sizes": whole.size_counts().tolist(),
                      "reachable_pairs": None, "avg_distance": None, "effective_diameter": None,
                      "neighbourhood_function": None, "hyperball": None},
            "first_n": {"scope": f"first {k} pages", "n": k, "max_pages": cap,
                        "capped": cap is not None and n > cap, "scc_count": scc.count,
                        "largest_scc": int(np.bincount(scc.labels()).max()) if k else 0,
                        "diameter": diameter, "avg_distance": avg,
                        "effective_diameter": ex["effective_diameter"],
                        "reachable_pairs": ex["reachable_pairs"], "apsd_overflow": False,
                        "pending_edges": 0, "method": "incremental"}}


def same(got, want):
    """``got == want`` with float figures compared to 1e-12."""
    got, want = dict(got), dict(want)
    got["whole"], want["whole"] = dict(got["whole"]), dict(want["whole"])
    got["first_n"], want["first_n"] = dict(got["first_n"]), dict(want["first_n"])
    for sect in (got, got["first_n"]):
        other = want if sect is got else want["first_n"]
        for key in ("avg_distance", "effective_diameter"):
            if key in sect:
                assert sect.pop(key) == pytest.approx(other.pop(key), rel=1e-12, abs=1e-12), key
    assert got == want


def test_summary_of_a_small_graph():
    gs = GraphStats(max_nodes=100)
    assert gs.add_nodes(4) == range(0, 4)
    assert gs.add_edges(arr([0, 1, 2, 0, 0, 3]), arr([1, 2, 0, 1, 0, 3])) == 3
    s = gs.summary()
    assert set(s) == KEYS
    whole, first = s.pop("whole"), s.pop("first_n")
    assert s == {"nodes": 4, "edges": 3, "scc_count": 2, "dangling": 1, "diameter": 2,
                 "avg_distance": 1.5, "stats_nodes": 4, "capped": False,
                 "in_degree_hist": [1, 3], "out_degree_hist": [1, 3],
                 "duplicate_edges": 1, "self_loops": 2, "apsd_overflow": False}
    assert (whole["scope"], whole["scc_count"], whole["largest_scc"], whole["scc_sizes"]) == (
        "whole graph", 2, 3, [[1, 1], [3, 1]])
    assert (first["scope"], first["diameter"], first["reachable_pairs"], first["effective_diameter"]) == (
        "first 4 pages", 2, 6, pytest.approx(1.8))
    assert gs.scc_labels().tolist() == [0, 0, 0, 1]


def test_empty_summary():
    s = GraphStats().summary()
    assert (s["nodes"], s["edges"], s["scc_count"], s["diameter"], s["avg_distance"]) == (0, 0, 0, 0, 0.0)
    assert s["in_degree_hist"] == [] and s["dangling"] == 0 and not s["capped"]


def test_summary_matches_references_batch_by_batch():
    g = graphs.crawl_like(120, seed=5)
    gs = GraphStats(max_nodes=None)
    gs.add_nodes(g.n)
    for lo in range(0, g.m, 97):
        gs.add_edges(g.src[lo:lo + 97], g.dst[lo:lo + 97])
        same(gs.summary(), expected(g.n, g.src[:lo + 97], g.dst[:lo + 97]))


def test_nodes_arrive_over_time_like_the_coordinator():
    # UPDATE GRAPH: a page gets its id when crawled, then its edges enter.
    g = graphs.crawl_like(150, seed=2)
    gs = GraphStats(max_nodes=1000)
    order = np.maximum(g.src, g.dst)          # an edge can enter once both ends exist
    for v in range(g.n):
        gs.add_nodes(1)
        sel = order == v
        gs.add_edges(g.src[sel], g.dst[sel])
    want = expected(g.n, g.src, g.dst)
    want["first_n"]["max_pages"] = 1000
    same(gs.summary(), want)


def test_cap_degrees_cover_everything_distances_only_the_first_nodes():
    rng = np.random.default_rng(11)
    n, cap = 40, 25
    src, dst = rng.integers(0, n, 300).astype(I32), rng.integers(0, n, 300).astype(I32)
    gs = GraphStats(max_nodes=cap)
    gs.add_nodes(10)
    gs.add_nodes(30)                          # crosses the cap inside one call
    gs.add_edges(src, dst)
    s = gs.summary()
    assert s["capped"] and s["stats_nodes"] == cap and s["nodes"] == n
    same(s, expected(n, src, dst, cap=cap))
    assert s["whole"]["nodes"] == n and s["first_n"]["n"] == cap
    assert gs.scc_labels().shape == (cap,)


def test_disabled_kernels_report_none():
    gs = GraphStats(max_nodes=10, enable_apsd=False, enable_scc=False)
    gs.add_nodes(3)
    gs.add_edges(arr([0, 1]), arr([1, 2]))
    s = gs.summary()
    assert s["scc_count"] is None and s["diameter"] is None and s["avg_distance"] is None
    assert s["edges"] == 2 and s["dangling"] == 1
    with pytest.raises(ValueError, match="disabled"):
        gs.scc_labels()


def test_distance_overflow_stops_distances_only(caplog):
    gs = GraphStats(max_nodes=None)
    gs.add_nodes(300)
    path = np.arange(300, dtype=I32)
    with caplog.at_level(logging.WARNING, logger="abc_crawler.kernels.graphstats"):
        assert gs.add_edges(path[:-1], path[1:]) == 299
    assert "distance statistics stopped" in caplog.text
    s = gs.summary()
    assert s["apsd_overflow"] and s["diameter"] is None and s["avg_distance"] is None
    assert s["edges"] == 299 and s["scc_count"] == 300 and s["dangling"] == 1
    gs.add_nodes(5)                            # keeps working
    gs.add_edges(arr([299]), arr([0]))
    assert gs.summary()["scc_count"] == 6
    wide = GraphStats(max_nodes=None, apsd_dtype=np.uint16)
    wide.add_nodes(300)
    wide.add_edges(path[:-1], path[1:])
    assert wide.summary()["diameter"] == 299


def test_validation_rejects_the_whole_batch():
    gs = GraphStats(max_nodes=5)
    gs.add_nodes(10)
    with pytest.raises(ValueError, match=r"^edge 3: \(5, 17\): node id 17 out of range \[0, 10\)$"):
        gs.add_edges(arr([0, 1, 2, 5]), arr([1, 2, 3, 17]))
    assert gs.summary()["edges"] == 0
    with pytest.raises(ValueError, match=">= 0"):
        gs.add_nodes(-1)
    with pytest.raises(ValueError, match="integer"):
        GraphStats(max_nodes="many")


def test_worker_thread_and_concurrent_summaries():
    g = graphs.complete(200)
    gs = GraphStats(max_nodes=500)
    gs.add_nodes(g.n)
    errors = []

    def work():
        try:
            for lo in range(0, g.m, 2000):
                gs.add_edges(g.src[lo:lo + 2000], g.dst[lo:lo + 2000])
        except Exception as exc:              # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=work)
    t.start()
    seen = []
    while t.is_alive():
        seen.append(gs.summary()["edges"])    # consistent snapshots between batches
    t.join()
    assert not errors
    assert all(e % 2000 == 0 or e == g.m for e in seen)
    s = gs.summary()
    assert (s["edges"], s["scc_count"], s["diameter"], s["avg_distance"]) == (g.m, 1, 1, 1.0)


def test_deferred_first_n_catches_up_to_the_same_figures():
    g = graphs.crawl_like(300, seed=3)
    now = GraphStats(max_nodes=120)
    later = GraphStats(max_nodes=120, defer_first_n=True)
    order = np.maximum(g.src, g.dst)
    for lo in range(0, g.n, 50):
        sel = (order >= lo) & (order < lo + 50)
        for gs in (now, later):
            gs.add_nodes(min(50, g.n - lo))
            gs.add_edges(g.src[sel], g.dst[sel])
        s = later.summary()
        assert s["whole"] == now.summary()["whole"]           # the whole graph is never deferred
        assert s["first_n"]["n"] == 0 and s["first_n"]["pending_edges"] == later.first_n_pending
    assert later.first_n_pending > 0
    steps = 0
    while later.advance_first_n(max_edges=100):
        steps += 1
    assert steps > 5                                           # done in pieces
    assert later.first_n_pending == 0 and not later.advance_first_n()
    same(later.summary(), now.summary())
    assert not now.advance_first_n()


def test_finish_first_n_recomputes_what_the_kernels_had_not_done():
    g = graphs.crawl_like(400, seed=4)
    behind = GraphStats(max_nodes=150, defer_first_n=True)
    behind.add_nodes(g.n)
    behind.add_edges(g.src, g.dst)
    behind.advance_first_n(max_edges=200)                  # part of the work done incrementally
    assert behind.first_n_pending > 0
    assert behind.finish_first_n() == "recomputed"
    want = expected(g.n, g.src, g.dst, cap=150)
    want["first_n"]["method"] = "recomputed"
    same(behind.summary(), want)
    assert behind.finish_first_n() == "recomputed"          # nothing new: nothing to do
    # new edges inside the first N pages: the last figures stay, saying how many edges they lack
    before = behind.summary()["first_n"]
    extra_s, extra_d = arr([3, 149, 200]), arr([140, 7, 3])      # (200 -> 3 is outside the first 150)
    behind.add_edges(extra_s, extra_d)
    lagging = behind.summary()["first_n"]
    assert behind.first_n_behind and lagging["pending_edges"] == 2
    assert {k: v for k, v in lagging.items() if k != "pending_edges"} == {
        k: v for k, v in before.items() if k != "pending_edges"}
    assert behind.refresh_first_n() and not behind.first_n_behind and not behind.refresh_first_n()
    src, dst = np.concatenate([g.src, extra_s]), np.concatenate([g.dst, extra_d])
    want = expected(g.n, src, dst, cap=150)
    want["first_n"]["method"] = "recomputed"
    same(behind.summary(), want)
    # without recomputation the waiting work is done by the kernels themselves
    slow = GraphStats(max_nodes=150, defer_first_n=True)
    slow.add_nodes(g.n)
    slow.add_edges(g.src, g.dst)
    assert slow.finish_first_n(recompute=False) == "incremental" and slow.first_n_pending == 0
    same(slow.summary(), expected(g.n, g.src, g.dst, cap=150))


def test_each_kernel_says_what_it_holds_and_the_first_n_matrix_stops_at_its_cap():
    """stats.json's rank-0 ``stats_bytes``: the first-N distance matrix grows as n² up to the cap,
    the degrees and the whole-graph SCC with every node; HyperBall's registers only while a run
    is in progress."""
    small, big = GraphStats(max_nodes=1000), GraphStats(max_nodes=1000)
    small.add_nodes(100)
    big.add_nodes(400)
    a, b = small.nbytes_held(), big.nbytes_held()
    assert set(a) == {"degrees", "apsd", "scc", "whole_scc", "hyperball", "first_n_pending"}
    assert b["apsd"] >= 400 * 400 > 100 * 100 <= a["apsd"] < b["apsd"] / 10
    assert b["degrees"] > a["degrees"] and b["whole_scc"] > a["whole_scc"]
    capped = GraphStats(max_nodes=50)
    capped.add_nodes(400)
    c = capped.nbytes_held()
    assert c["apsd"] < 50 * 50 * 4 and c["degrees"] == b["degrees"]
    assert GraphStats(max_nodes=10, enable_apsd=False, enable_scc=False).nbytes_held().keys() == {
        "degrees", "whole_scc", "hyperball", "first_n_pending"}
    g = GraphStats(max_nodes=50)
    g.add_nodes(300)
    g.add_edges(np.arange(299, dtype=np.int32), np.arange(1, 300, dtype=np.int32))
    assert g.nbytes_held()["hyperball"] == 0
    assert g.advance_distances() and g.distances_running    # a run starts on a snapshot (a 300-node path:
    assert g.nbytes_held()["hyperball"] > 0                 # it takes many passes): its registers count
    while g.advance_distances():
        pass
    assert not g.distances_running and g.nbytes_held()["hyperball"] == 0
