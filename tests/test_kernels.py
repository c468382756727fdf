"""Tests of the graph kernels (abc_crawler.kernels): APSD, SCC, Degrees.

Oracles: scipy.sparse.csgraph (BFS distances, strong components) on the same
graph, the pure-Python references in ``kernels/reference.py``, and closed
forms for Ausiello's sequence and complete graphs.
"""
from __future__ import annotations

import threading
import time
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, shortest_path

from abc_crawler.kernels import APSD, SCC, Degrees, DistanceOverflowError, graphs
from abc_crawler.kernels._validation import as_edge_arrays
from abc_crawler.kernels.reference import (ReferenceAPSD, ReferenceDegrees, ReferenceSCC,
                                           bfs_distances, distance_stats)

I32 = np.int32


def arr(xs):
    return np.asarray(xs, dtype=I32)


# --------------------------------------------------------------------- oracles
def scipy_distances(n, src, dst, unreachable=255):
    """BFS distances of the graph by scipy, ``unreachable`` for no path."""
    a = csr_matrix((np.ones(len(src)), (np.asarray(src), np.asarray(dst))), shape=(n, n))
    d = shortest_path(a, method="D", directed=True, unweighted=True)
    return np.where(np.isinf(d), unreachable, d).astype(np.int64)


def scipy_components(n, src, dst):
    a = csr_matrix((np.ones(len(src)), (np.asarray(src), np.asarray(dst))), shape=(n, n))
    return connected_components(a, directed=True, connection="strong")


def same_partition(a, b):
    """Labelings equal up to renaming the labels."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def check_apsd(a: APSD, n, src, dst):
    """Matrix == scipy BFS; histogram statistics == recomputed from the matrix."""
    inf = a.unreachable
    want = scipy_distances(n, src, dst, inf)
    got = a.distances().astype(np.int64)
    np.testing.assert_array_equal(got, want)
    diameter, avg, hist = distance_stats(got, inf)
    assert a.diameter == diameter
    assert a.avg_distance == pytest.approx(avg, rel=1e-12, abs=0)
    np.testing.assert_array_equal(a.histogram(), hist)
    assert a.reachable_pairs == int(hist.sum())


def check_scc(c: SCC, n, src, dst):
    k, labels = scipy_components(n, src, dst)
    assert c.count == k
    assert same_partition(c.labels(), labels)
    reach = scipy_distances(n, src, dst) != 255
    np.testing.assert_array_equal(c.closure(), reach)


# ------------------------------------------------------------ tiny known graphs
def test_apsd_path_known_answers():
    a = APSD(4)
    assert a.add_edges(arr([0, 1, 2]), arr([1, 2, 3])) == 3
    u = a.unreachable
    np.testing.assert_array_equal(a.distances(), [[0, 1, 2, 3], [u, 0, 1, 2], [u, u, 0, 1], [u, u, u, 0]])
    assert a.diameter == 3
    assert a.avg_distance == pytest.approx(10 / 6)
    assert a.histogram().tolist() == [0, 3, 2, 1]
    assert a.reachable_pairs == 6


def test_apsd_cycle_closes_all_pairs():
    a = APSD(3)
    a.add_edges(arr([0, 1]), arr([1, 2]))
    a.add_edge(2, 0)
    np.testing.assert_array_equal(a.distances(), [[0, 1, 2], [2, 0, 1], [1, 2, 0]])
    assert (a.diameter, a.avg_distance) == (2, 1.5)


def test_apsd_empty_and_single_node():
    a = APSD()
    assert (a.n, a.diameter, a.avg_distance, a.reachable_pairs) == (0, 0, 0.0, 0)
    assert a.distances().shape == (0, 0)
    assert a.add_edges([], []) == 0
    a.add_nodes(1)
    assert a.add_edges(arr([0]), arr([0])) == 0          # self-loop
    assert (a.diameter, a.avg_distance, a.self_loops) == (0, 0.0, 1)
    np.testing.assert_array_equal(a.distances(), [[0]])


def test_apsd_shortcut_lowers_distances_of_ancestors():
    # 0 -> 1 -> 2 -> 3 -> 4, then the shortcut 1 -> 4 lowers d(0, 4) through row 1.
    a = APSD(5)
    a.add_edges(arr([0, 1, 2, 3]), arr([1, 2, 3, 4]))
    assert a.distance(0, 4) == 4
    updates = a.updates
    a.add_edge(1, 4)
    assert a.distance(1, 4) == 1 and a.distance(0, 4) == 2
    assert a.updates == updates + 2
    assert a.histogram().tolist() == [0, 5, 4, 1]


def test_apsd_duplicates_and_self_loops_are_ignored_and_counted():
    a = APSD(3)
    assert a.add_edges(arr([0, 0, 1, 0, 2]), arr([1, 1, 1, 1, 0])) == 2
    assert (a.inserted, a.duplicates, a.self_loops) == (2, 2, 1)
    check_apsd(a, 3, [0, 2], [1, 0])


def test_scc_known_answers():
    c = SCC(5)
    assert c.count == 5
    assert c.add_edges(arr([0, 1, 2, 3]), arr([1, 0, 3, 4])) == 4
    assert c.count == 4
    assert c.labels().tolist() == [0, 0, 1, 2, 3]
    assert c.add_edge(4, 2)
    assert c.count == 2 and c.labels().tolist() == [0, 0, 1, 1, 1]
    assert c.reaches(2, 4) and c.reaches(4, 3) and not c.reaches(2, 0) and c.reaches(3, 3)
    # 1 -> 0 is a duplicate, 0 -> 0 a self-loop, 0 -> 0's reachable set: redundant.
    assert c.add_edges(arr([1, 0]), arr([0, 0])) == 0
    assert (c.redundant, c.self_loops) == (1, 1)


def test_scc_merge_through_ancestors():
    # Chain 0 -> 1 -> 2 -> 3; closing 3 -> 0 merges all four through the ancestor rows.
    c = SCC(4)
    c.add_edges(arr([0, 1, 2]), arr([1, 2, 3]))
    assert c.count == 4
    c.add_edge(3, 0)
    assert c.count == 1 and c.closure().all()


def test_degrees_known_answers():
    g = Degrees(4)
    new = np.zeros(6, dtype=bool)
    assert g.add_edges(arr([0, 0, 1, 0, 2, 3]), arr([1, 2, 2, 1, 2, 0]), new=new) == 4
    assert new.tolist() == [True, True, True, False, False, True]
    assert g.out_degree().tolist() == [2, 1, 0, 1]
    assert g.in_degree().tolist() == [1, 1, 2, 0]
    assert g.out_hist().tolist() == [1, 2, 1]
    assert g.in_hist().tolist() == [1, 2, 1]
    assert (g.dangling, g.edges, g.duplicates, g.self_loops) == (1, 4, 1, 1)
    g.add_nodes(2)
    assert g.dangling == 3 and g.out_hist().tolist() == [3, 2, 1]


def test_degrees_empty():
    g = Degrees()
    assert g.out_hist().tolist() == [] and g.in_hist().tolist() == [] and g.dangling == 0
    g.add_nodes(3)
    assert g.out_hist().tolist() == [3] and g.dangling == 3


def test_degrees_edge_set_grows_with_many_edges():
    seq = graphs.random_graph(300, 20000, seed=3)
    g, ref = Degrees(300), ReferenceDegrees(300)
    for lo in range(0, seq.m, 4096):
        assert (g.add_edges(seq.src[lo:lo + 4096], seq.dst[lo:lo + 4096])
                == ref.add_edges(seq.src[lo:lo + 4096], seq.dst[lo:lo + 4096]))
    assert (g.edges, g.duplicates, g.self_loops) == (ref.edges, ref.duplicates, ref.self_loops)
    np.testing.assert_array_equal(g.out_hist(), ref.out_hist())
    np.testing.assert_array_equal(g.in_hist(), ref.in_hist())


@pytest.mark.parametrize("g", graphs.sanity_graphs(), ids=lambda g: g.name)
def test_sanity_graphs(g):
    a, c = APSD(g.n), SCC(g.n)
    a.add_edges(g.src, g.dst)
    c.add_edges(g.src, g.dst)
    check_apsd(a, g.n, g.src, g.dst)
    check_scc(c, g.n, g.src, g.dst)
    assert c.count == {"sc1": 2, "sc2": 2, "sc3": 1}[g.name]


# ------------------------------------------------------ adversarial sequences
def ausiello_final_stats(n):
    """Diameter, average distance and update lower bound from the closed form."""
    k = n // 3
    dists = [1] * k + [2] * (k * (k - 1)) + [3] * (k * k)           # from the s_a
    dists += [1] * (k - 1) + [2] * k                                 # from x_1
    for i in range(2, k + 1):                                        # from x_i, i >= 2
        dists += [l - i for l in range(i + 1, k + 1)] + [k - i + 1] * k
    return max(dists), sum(dists) / len(dists), (k - 2) * k * k


@pytest.mark.parametrize("search", ["lists", "scan"])
@pytest.mark.parametrize("n", [30, 90])
def test_ausiello_sequence_exact(n, search):
    g = graphs.ausiello(n)
    assert g.m == 4 * (n // 3) - 2
    a, c, ref = APSD(n, search=search), SCC(n), ReferenceAPSD(n)
    # one edge per batch: every prefix is checked against the reference
    for e in range(g.m):
        a.add_edges(g.src[e:e + 1], g.dst[e:e + 1])
        ref.add_edges(g.src[e:e + 1], g.dst[e:e + 1])
        assert a.diameter == ref.diameter
    c.add_edges(g.src, g.dst)
    diameter, avg, min_updates = ausiello_final_stats(n)
    assert a.diameter == diameter == max(3, n // 3 - 1)
    assert a.avg_distance == pytest.approx(avg, rel=1e-12)
    assert a.updates >= min_updates                                  # Omega(n^3) work
    assert a.duplicates == 1 and a.inserted == g.m - 1
    np.testing.assert_array_equal(a.distances(), ref.distances())
    check_apsd(a, n, g.src, g.dst)
    assert c.count == n                                              # a DAG
    check_scc(c, n, g.src, g.dst)


def test_ausiello_900_overflows_uint8_but_not_uint16():
    g = graphs.ausiello(900)                 # d(s, t) reaches k + 1 = 301 hops
    a = APSD(900)
    with pytest.raises(DistanceOverflowError, match=r"^edge \d+: \(\d+, \d+\): a shortest distance"):
        a.add_edges(g.src, g.dst)
    assert a.overflowed
    with pytest.raises(DistanceOverflowError):
        a.diameter
    with pytest.raises(DistanceOverflowError):
        a.add_edge(0, 1)
    w = APSD(900, dtype=np.uint16)
    w.add_edges(g.src, g.dst)
    diameter, avg, _ = ausiello_final_stats(900)
    assert (w.diameter, w.unreachable) == (diameter, 65535)
    assert w.avg_distance == pytest.approx(avg, rel=1e-12)
    check_apsd(w, 900, g.src, g.dst)


@pytest.mark.parametrize("search", ["lists", "scan"])
@pytest.mark.parametrize("n", [1, 2, 5, 40])
def test_complete_graph(n, search):
    g = graphs.complete(n)
    a, c = APSD(n, search=search), SCC(n)
    assert a.add_edges(g.src, g.dst) == n * (n - 1)
    c.add_edges(g.src, g.dst)
    assert a.diameter == (1 if n > 1 else 0)
    assert a.avg_distance == (1.0 if n > 1 else 0.0)
    assert a.reachable_pairs == n * (n - 1)
    assert c.count == 1 and c.labels().tolist() == [0] * n
    check_apsd(a, n, g.src, g.dst)
    # reversed order gives the same final answers
    b = APSD(n)
    b.add_edges(g.src[::-1], g.dst[::-1])
    np.testing.assert_array_equal(b.distances(), a.distances())


def test_overflow_boundary_uint8():
    # A path of 255 nodes has distances up to 254: fits.
    a = APSD(256)
    path = np.arange(255, dtype=I32)
    a.add_edges(path[:-1], path[1:])
    assert a.diameter == 254
    # One more hop makes d(0, 255) = 255, which uint8 cannot hold.
    with pytest.raises(DistanceOverflowError, match=r"^edge 0: \(254, 255\)"):
        a.add_edge(254, 255)


def test_overflow_detected_in_ancestor_rows():
    # Two paths of 128 nodes; joining them makes d(0, 255) = 255 in step 2 (row 0
    # is an ancestor row), while row 127 itself only reaches 128.
    a = APSD(256)
    p, q = np.arange(128, dtype=I32), np.arange(128, 256, dtype=I32)
    a.add_edges(np.r_[p[:-1], q[:-1]], np.r_[p[1:], q[1:]])
    with pytest.raises(DistanceOverflowError):
        a.add_edge(127, 128)
    w = APSD(256, dtype=np.uint16)
    w.add_edges(np.r_[p[:-1], q[:-1], 127], np.r_[p[1:], q[1:], 128])
    assert w.diameter == 255 and w.distance(0, 255) == 255


def test_auto_search_drops_in_edge_lists_on_dense_graphs():
    g = graphs.complete(700)             # 489,300 in-edges: ~2 MB of lists > 1 MiB + n^2/16
    a = APSD(g.n)
    for lo in range(0, g.m, 50_000):
        a.add_edges(g.src[lo:lo + 50_000], g.dst[lo:lo + 50_000])
        assert a.list_bytes <= a.nbytes // 16 + 2**20 + 4 * 50_000
    assert (a.search, a.list_bytes) == ("scan", 0)
    assert (a.diameter, a.avg_distance, a.reachable_pairs) == (1, 1.0, g.m)
    assert APSD(search="lists").search == "lists" and APSD(search="scan").search == "scan"
    with pytest.raises(ValueError, match="search must be"):
        APSD(search="bfs")


def test_scc_dag_where_every_edge_extends_the_closure():
    # A transitive tournament inserted by decreasing gap: no edge is redundant.
    n = 300
    gap, j = np.divmod(np.arange(n * n), n)
    keep = (gap >= 1) & (j + gap < n)
    order = np.lexsort((j[keep], -gap[keep]))
    src, dst = (j[keep] + gap[keep])[order].astype(I32), j[keep][order].astype(I32)
    c = SCC(n)
    c.add_edges(src, dst)
    assert (c.inserted, c.redundant, c.count) == (src.size, 0, n)
    np.testing.assert_array_equal(c.closure(), np.tril(np.ones((n, n), bool)))


def test_closing_a_long_cycle_overflows_the_search_buffers():
    # Closing a 200-cycle changes every row; the per-row column lists of the
    # APSD search then exceed their buffer and rows fall back to the parent's
    # list.  The answers must not change.
    n = 200
    path = np.arange(n, dtype=I32)
    src, dst = np.r_[path[:-1], n - 1], np.r_[path[1:], 0]
    a, c = APSD(n), SCC(n)
    a.add_edges(src, dst)
    c.add_edges(src, dst)
    assert a.updates > 4 * a.capacity
    check_apsd(a, n, src, dst)
    check_scc(c, n, src, dst)
    assert (a.diameter, c.count) == (n - 1, 1)


@pytest.mark.parametrize("seed", [0, 1])
def test_crawl_order_sequence_batch_by_batch(seed):
    g = graphs.crawl_like(400, seed=seed)
    a, c = APSD(g.n), SCC(g.n)
    for lo in range(0, g.m, 700):
        a.add_edges(g.src[lo:lo + 700], g.dst[lo:lo + 700])
        c.add_edges(g.src[lo:lo + 700], g.dst[lo:lo + 700])
        check_apsd(a, g.n, g.src[:lo + 700], g.dst[:lo + 700])
        check_scc(c, g.n, g.src[:lo + 700], g.dst[:lo + 700])


# ------------------------------------------------------------ property tests
@st.composite
def operations(draw):
    """A growth-and-insertion history: ("nodes", k) and ("edges", src, dst) steps."""
    ops, n = [], 0
    for _ in range(draw(st.integers(1, 8))):
        if n == 0 or draw(st.integers(0, 3)) == 0:
            k = draw(st.integers(0, 12))
            ops.append(("nodes", k))
            n += k
        else:
            m = draw(st.integers(0, 3 * n))
            src = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
            dst = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
            ops.append(("edges", arr(src), arr(dst)))
    return ops


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations(), search=st.sampled_from(["lists", "scan"]))
def test_kernels_match_scipy_and_references_batch_by_batch(ops, search):
    a, c, g = APSD(search=search), SCC(), Degrees()
    ra, rc, rg = ReferenceAPSD(), ReferenceSCC(), ReferenceDegrees()
    n, src, dst = 0, np.zeros(0, I32), np.zeros(0, I32)
    for op in ops:
        if op[0] == "nodes":
            for k in (a, c, g, ra, rc, rg):
                k.add_nodes(op[1])
            n += op[1]
        else:
            s, d = op[1], op[2]
            assert a.add_edges(s, d) == ra.add_edges(s, d)
            assert c.add_edges(s, d) == rc.add_edges(s, d)
            assert g.add_edges(s, d) == rg.add_edges(s, d)
            src, dst = np.r_[src, s], np.r_[dst, d]
        check_apsd(a, n, src, dst)
        check_scc(c, n, src, dst)
        np.testing.assert_array_equal(a.distances(), ra.distances(a.unreachable))
        assert (a.diameter, a.reachable_pairs) == (ra.diameter, ra.reachable_pairs)
        assert (a.duplicates, a.self_loops) == (ra.duplicates, ra.self_loops)
        np.testing.assert_array_equal(c.labels(), rc.labels())
        np.testing.assert_array_equal(c.closure(), rc.closure())
        assert (c.count, c.redundant, c.self_loops) == (rc.count, rc.redundant, rc.self_loops)
        np.testing.assert_array_equal(g.out_hist(), rg.out_hist())
        np.testing.assert_array_equal(g.in_hist(), rg.in_hist())
        np.testing.assert_array_equal(g.out_degree(), rg.out_degree())
        assert (g.dangling, g.edges, g.duplicates) == (rg.dangling, rg.edges, rg.duplicates)
        assert a.capacity >= n and c.capacity >= n


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 60), seed=st.integers(0, 2**32 - 1), wide=st.booleans(),
       search=st.sampled_from(["lists", "scan"]))
def test_random_sequences_one_edge_at_a_time_against_bfs(n, seed, wide, search):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 4 * n))
    src, dst = rng.integers(0, n, m).astype(I32), rng.integers(0, n, m).astype(I32)
    a = APSD(n, dtype=np.uint16 if wide else np.uint8, search=search)
    for e in range(m):
        a.add_edge(int(src[e]), int(dst[e]))
    np.testing.assert_array_equal(a.distances(), bfs_distances(n, src, dst, a.unreachable))


# ------------------------------------------------------------------- growth
def test_capacity_grows_in_steps_with_many_add_nodes():
    rng = np.random.default_rng(7)
    a, c, g = APSD(), SCC(), Degrees()
    src, dst, caps = [], [], set()
    n = 0
    for _ in range(400):
        for k in (a, c, g):
            k.add_nodes(1)
        n += 1
        caps.add(a.capacity)
        s, d = rng.integers(0, n, 2).astype(I32), rng.integers(0, n, 2).astype(I32)
        for k in (a, c, g):
            k.add_edges(s, d)
        src += s.tolist()
        dst += d.tolist()
        assert n <= a.capacity <= max(n + 64, int(1.0625 * n) + 1)
        assert n * a.capacity <= a.nbytes <= n * a.capacity + 2**16
        assert n * c.capacity // 8 <= c.nbytes <= n * c.capacity // 8 + 2**16
    # growth happened a few times, not once per node
    assert 3 <= len(caps) <= 12
    assert a.search == "lists"
    check_apsd(a, n, src, dst)
    check_scc(c, n, src, dst)


def test_memory_stays_within_1_2_n_squared_for_large_n():
    a, c = APSD(), SCC()
    while a.n < 3000:
        a.add_nodes(7)
        c.add_nodes(7)
        n = a.n
        if n >= 1000:
            assert a.nbytes <= 1.2 * n * n
            assert c.nbytes <= 1.2 * n * n / 8 + 2**16


def test_growth_never_holds_two_matrices():
    tracemalloc.start()                   # before the matrix exists, so it is traced
    try:
        a = APSD(2000)
        row = a.capacity
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        a.add_nodes(1)                    # lengthens all 2000 rows, one at a time
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    grown = a.nbytes - 2000 * row
    assert a.capacity > row
    assert peak - base <= grown + 4 * 2**16           # two 64 KiB slabs in flight, buffers


@pytest.mark.parametrize("kernel", ["apsd", "scc"])
def test_huge_page_slabs_grow_without_a_second_matrix(kernel):
    # Matrices of >= 32 MiB live in 2 MiB huge-page slabs; growing copies the
    # rows slab by slab.  Start small (64 KiB slabs) to cross over as well.
    tracemalloc.start()
    try:
        k = APSD(1000) if kernel == "apsd" else SCC(1000)
        k.add_edges(arr([0, 1]), arr([1, 999]))
        k.add_nodes(6000 if kernel == "apsd" else 16000)        # 64 KiB -> 2 MiB slabs
        n = k.n
        k.add_edge(n - 1, 0)
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        before = (k.capacity, k.nbytes)
        k.add_nodes(k.capacity - n + 1)                         # every row gets longer
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert k.capacity > before[0]
    assert peak - base <= max(0, k.nbytes - before[1]) + 2 * 2**21 + 2**20
    m = k.n
    k.add_edge(m - 1, n - 1)
    if kernel == "apsd":
        assert (k.distance(0, 999), k.distance(n - 1, 999), k.distance(m - 1, 999)) == (2, 3, 4)
        assert k.distance(999, 0) == 255
    else:
        assert k.reaches(m - 1, 999) and not k.reaches(999, 0) and k.count == m
    assert k.nbytes <= 1.07 * k.n * k.capacity * (1 if kernel == "apsd" else 1 / 8) + 2**21


def test_max_nodes_limits_growth():
    a, c = APSD(max_nodes=100), SCC(max_nodes=100)
    a.add_nodes(90)
    c.add_nodes(90)
    a.add_nodes(10)
    c.add_nodes(10)
    assert a.capacity == 100 and c.capacity >= 100 and a.max_nodes == 100
    with pytest.raises(ValueError, match="max_nodes is 100"):
        a.add_nodes(1)
    with pytest.raises(ValueError, match="max_nodes is 100"):
        c.add_nodes(1)


def test_edges_survive_growth():
    a = APSD(2)
    a.add_edge(0, 1)
    a.add_nodes(500)                  # forces a column reallocation
    a.add_edge(1, 501)
    assert a.distance(0, 501) == 2 and a.distance(501, 0) == a.unreachable
    assert a.distance(300, 300) == 0


# --------------------------------------------------------------- validation
@pytest.mark.parametrize("kernel", [APSD, SCC, Degrees])
def test_validation_names_the_offending_edge(kernel):
    k = kernel(10)
    with pytest.raises(ValueError, match=r"^edge 3: \(5, 17\): node id 17 out of range \[0, 10\)$"):
        k.add_edges(arr([0, 1, 2, 5]), arr([1, 2, 3, 17]))
    with pytest.raises(ValueError, match=r"^edge 1: \(-1, 2\): node id -1 out of range \[0, 10\)$"):
        k.add_edges(arr([0, -1]), arr([1, 2]))
    with pytest.raises(ValueError, match="differ in length: 2 != 1"):
        k.add_edges(arr([0, 1]), arr([1]))
    with pytest.raises(ValueError, match="integer node ids, got dtype float64"):
        k.add_edges(np.array([0.0]), np.array([1.0]))
    with pytest.raises(ValueError, match="1-D"):
        k.add_edges(np.zeros((2, 2), I32), np.zeros((2, 2), I32))
    # a rejected batch changes nothing, even if its first edges were valid
    assert k.add_edges(arr([0]), arr([1])) == 1


def test_validation_accepts_other_integer_dtypes_and_checks_before_casting():
    a = APSD(3)
    assert a.add_edges(np.array([0, 1], np.int64), np.array([1, 2], np.uint16)) == 2
    with pytest.raises(ValueError, match=r"node id 4294967296 out of range"):
        a.add_edges(np.array([2**32], np.int64), np.array([0], np.int64))   # would wrap to 0


def test_int32_batches_are_not_copied():
    s, d = arr([0, 1]), arr([1, 0])
    s2, d2 = as_edge_arrays(s, d, 2)
    assert s2 is s and d2 is d


def test_constructor_validation():
    with pytest.raises(ValueError, match="uint8 or uint16"):
        APSD(dtype=np.int32)
    with pytest.raises(ValueError, match=">= 0"):
        APSD(-1)
    with pytest.raises(ValueError, match="integer"):
        SCC(max_nodes=1.5)
    with pytest.raises(ValueError):
        Degrees().add_edges([0], [0], new=np.zeros(2, np.uint8))


# ------------------------------------------------------------------ the GIL
def test_add_edges_releases_the_gil():
    """While the kernel runs in one thread, this thread runs Python code. Event-based, not a rate:
    with the GIL held for the whole call, this thread could run only at the two hand-overs around it
    (a statement or two of the worker before and after the C call), never five times strictly
    inside it. A starved thread on a busy machine may miss a whole call: up to five tries."""
    g = graphs.complete(350)             # a few tenths of a second of kernel time
    inside = 0
    for _ in range(5):
        a = APSD(g.n)
        span: dict[str, float] = {}
        done = threading.Event()

        def work():
            span["in"] = time.perf_counter()
            a.add_edges(g.src, g.dst)
            span["out"] = time.perf_counter()
            done.set()

        ticks = []
        t = threading.Thread(target=work)
        t.start()
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)                # a held GIL would stall this loop
        t.join()
        assert a.diameter == 1
        inside = sum(1 for x in ticks if span["in"] < x < span["out"])
        if inside >= 5:
            break
    assert inside >= 5, inside


# ------------------------------------------------------------------ examples
@pytest.mark.parametrize("module", ["_apsd", "_scc", "_degree", "_validation", "graphs",
                                    "graphstats", "reference"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    mod = importlib.import_module(f"abc_crawler.kernels.{module}")
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


# ------------------------------------------- grouped insertion (edges into one head)
@st.composite
def head_batches(draw):
    """Batches whose edges point into a few heads, with repeats and self-loops:
    the kernel groups a batch by head and runs one search per group."""
    n = draw(st.integers(2, 40))
    batches = []
    for _ in range(draw(st.integers(1, 6))):
        heads = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3))
        m = draw(st.integers(1, 3 * n))
        src = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
        dst = draw(st.lists(st.sampled_from(heads + [draw(st.integers(0, n - 1))]), min_size=m, max_size=m))
        batches.append((arr(src), arr(dst)))
    return n, batches


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=head_batches(), search=st.sampled_from(["lists", "auto", "scan"]))
def test_grouped_heads_match_scipy_and_one_edge_at_a_time(case, search):
    n, batches = case
    a, one = APSD(n, search=search), APSD(n, search="scan")
    src, dst = [], []
    for s, d in batches:
        a.add_edges(s, d)
        for u, v in zip(s.tolist(), d.tolist()):
            one.add_edge(u, v)
        src += s.tolist()
        dst += d.tolist()
        check_apsd(a, n, arr(src), arr(dst))
        assert (a.inserted, a.duplicates, a.self_loops) == (one.inserted, one.duplicates, one.self_loops)
        assert (a.diameter, a.avg_distance, a.reachable_pairs) == (one.diameter, one.avg_distance,
                                                                   one.reachable_pairs)
        np.testing.assert_array_equal(a.histogram(), one.histogram())


def test_group_of_many_long_step1_lists_flushes_the_column_buffer():
    # Row 100 reaches every node of a 200-path, so each edge i -> 100 lowers
    # ~200 columns of row i in step 1; with 100 such sources in one group the
    # lists outgrow the buffer (4 columns per node of capacity) and the group
    # is searched in parts.  Some sources reach each other (9 -> 8 -> ... -> 0).
    n = 300
    path = np.arange(100, n, dtype=I32)
    a = APSD(n, search="lists")
    s0, d0 = np.r_[path[:-1], np.arange(1, 10, dtype=I32)], np.r_[path[1:], np.arange(0, 9, dtype=I32)]
    a.add_edges(s0, d0)
    s1 = np.arange(0, 100, dtype=I32)[::-1].copy()   # every i < 100 -> 100, in one group
    d1 = np.full(100, 100, dtype=I32)
    a.add_edges(s1, d1)
    assert a.updates > 4 * a.capacity * 4
    check_apsd(a, n, np.r_[s0, s1], np.r_[d0, d1])
    assert a.distance(9, 299) == 200 and a.distance(0, 299) == 200


def test_group_drops_the_lists_half_way_and_stays_exact():
    # A dense graph inserted head by head: the in-edge lists pass their budget
    # inside a group; the roots so far are searched first, the rest scans.
    g = graphs.complete(700)
    o = np.argsort(g.dst, kind="stable")
    src, dst = g.src[o], g.dst[o]
    a = APSD(g.n)
    for lo in range(0, g.m, 60_000):
        a.add_edges(src[lo:lo + 60_000], dst[lo:lo + 60_000])
    assert a.search == "scan"
    assert (a.diameter, a.avg_distance, a.reachable_pairs) == (1, 1.0, g.m)
    np.testing.assert_array_equal(a.distances(), 1 - np.eye(g.n, dtype=np.uint8))


def test_overflow_in_a_regrouped_batch_names_the_callers_edge():
    a = APSD(256)
    path = np.arange(255, dtype=I32)
    a.add_edges(path[:-1], path[1:])
    # Grouping by head puts (254, 255) last; the message gives its index in
    # the batch as passed.
    with pytest.raises(DistanceOverflowError, match=r"^edge 1: \(254, 255\)"):
        a.add_edges(arr([5, 254, 3]), arr([6, 255, 3]))
    assert a.overflowed


def test_search_with_prefetch_cursor_on_a_matrix_over_4_mib():
    # n = 2200: 4.8 MB matrix, so the search runs its prefetch cursor.
    g = graphs.crawl_like(2200, seed=3)
    a = APSD(g.n)
    assert a.nbytes >= 2**22
    for lo in range(0, g.m, 1000):
        a.add_edges(g.src[lo:lo + 1000], g.dst[lo:lo + 1000])
    check_apsd(a, g.n, g.src, g.dst)


# ----------------------------------------------- SCC growth: exact 64-bit words
def test_scc_columns_grow_one_word_at_a_time_across_multiples_of_64():
    rng = np.random.default_rng(11)
    c, src, dst = SCC(), [], []
    for n in range(1, 300):
        c.add_nodes(1)
        assert c.capacity == 64 * -(-n // 64)
        assert n * c.capacity // 8 <= c.nbytes <= n * c.capacity // 8 + 2**16
        if n % 64 in (63, 0, 1) or n % 17 == 0:
            s, d = rng.integers(0, n, 3).astype(I32), rng.integers(0, n, 3).astype(I32)
            s[0], d[0] = n - 1, 0                # an edge into the newest column
            c.add_edges(s, d)
            src += s.tolist()
            dst += d.tolist()
            check_scc(c, n, arr(src), arr(dst))


@pytest.mark.parametrize("start", [63, 64, 65, 1000])
def test_scc_growth_peak_stays_within_n2_over_8(start):
    tracemalloc.start()                   # before the matrix exists, so it is traced
    try:
        c = SCC(start)
        c.add_edges(arr([0, start - 1]), arr([start - 1, 0]))
        old = c.nbytes
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        c.add_nodes(1)                    # a new word at 64 and 1024, none at 63/65
        c.add_nodes(130)                  # two or three more words
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    n = c.n
    assert c.nbytes <= n * n / 8 + 8 * n + 2**16
    # the copy never holds a second matrix: two 64 KiB slabs, union-find, buffers
    assert peak - base <= c.nbytes - old + 2 * 2**16 + 16 * n + 4096
    assert c.reaches(start - 1, 0) and c.count == n - 1


def test_scc_memory_is_n2_over_8_plus_o_n_while_growing():
    c = SCC()
    while c.n < 3000:
        c.add_nodes(7)
        n = c.n
        assert c.nbytes <= n * n / 8 + 8 * n + 2**16
