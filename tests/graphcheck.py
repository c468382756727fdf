"""Check a session's graph statistics (``stats.json`` ``graph``) against its ``graph.npz``.

Every expected figure is recomputed here from the saved graph with scipy
(strong components, BFS distances) or with the kernels run again from
scratch; nothing is taken from ``stats.json`` without being recomputed.
Used by the crawl tests and by ``bench/whole_graph.py``.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, shortest_path

from abc_crawler.kernels import HyperBall
from abc_crawler.kernels.distances import estimated_figures, figures, jackknife, nf_from_histogram
from abc_crawler.kernels.graphstats import log_binned

FIGURES = ("avg_distance", "effective_diameter", "reachable_pairs")


def load(session: Path) -> tuple[int, np.ndarray, np.ndarray, dict]:
    """(nodes, edge_src, edge_dst, stats) of a session."""
    with np.load(session / "graph.npz", allow_pickle=False) as z:
        src, dst, n = z["edge_src"].astype(np.int64), z["edge_dst"].astype(np.int64), int(z["node_url"].shape[0])
    return n, src, dst, json.loads((session / "stats.json").read_text())


def adjacency(n: int, src, dst) -> csr_matrix:
    a = csr_matrix((np.ones(len(src)), (np.asarray(src), np.asarray(dst))), shape=(n, n))
    a.sum_duplicates()
    a.sort_indices()
    return a


def scc_figures(a: csr_matrix) -> dict:
    """count, largest and size distribution of the strong components, by scipy."""
    k, lab = connected_components(a, directed=True, connection="strong")
    sizes = np.bincount(lab) if lab.size else np.zeros(0, np.int64)
    dist = np.bincount(sizes) if sizes.size else np.zeros(0, np.int64)
    nz = np.flatnonzero(dist)
    return {"scc_count": int(k), "largest_scc": int(sizes.max()) if sizes.size else 0,
            "scc_sizes": [[int(s), int(dist[s])] for s in nz]}


def exact_distance_figures(a: csr_matrix) -> dict:
    """Exact figures by scipy all-pairs BFS (small graphs only: n^2 floats)."""
    d = shortest_path(a, directed=True, unweighted=True)
    n = a.shape[0]
    fin = d[np.isfinite(d) & ~np.eye(n, dtype=bool)].astype(np.int64)
    hist = np.bincount(fin) if fin.size else np.zeros(1, np.int64)
    out = figures(nf_from_histogram(n, hist))
    out["diameter"] = int(fin.max()) if fin.size else 0
    return out


def sampled_distance_figures(a: csr_matrix, sources: int, seed: int = 0) -> dict:
    """Figures from BFS out of a uniform sample of sources, each ``{"estimate", "se"}``.

    The pairs at each distance are the sample's, scaled by n / sources;
    standard errors by a delete-one-source jackknife.
    """
    n = a.shape[0]
    rng = np.random.default_rng(seed)
    src = rng.choice(n, size=min(sources, n), replace=False)
    d = shortest_path(a, directed=True, unweighted=True, indices=src)
    d[np.arange(src.size), src] = np.inf                      # pairs u != v only
    top = int(d[np.isfinite(d)].max()) if np.isfinite(d).any() else 0
    per = np.stack([np.bincount(row[np.isfinite(row)].astype(np.int64), minlength=top + 1) for row in d])
    total = per.sum(axis=0)

    def nf(h, k):
        return nf_from_histogram(n, h * (n / k))

    full = figures(nf(total, src.size))
    loo = [figures(nf(total - per[i], src.size - 1)) for i in range(src.size)]
    return {k: {"estimate": full[k], "se": jackknife(full[k], [r[k] for r in loo])} for k in FIGURES}


def hyperball_again(n: int, src, dst, hb_info: dict) -> dict:
    """HyperBall run again on the saved graph with the session's settings."""
    a = adjacency(n, src, dst)
    hb = HyperBall(a.indptr, a.indices, log2m=hb_info["log2m"], groups=hb_info["jackknife_groups"])
    hb.run()
    return estimated_figures(hb.nf, hb.nf_replicates)


def check_graph_stats(session: Path, *, sigmas: float = 3.0, exact_up_to: int = 5000,
                      sample_sources: int = 500) -> dict:
    """Assert that ``stats.json``'s graph figures are those of ``graph.npz``.

    * whole graph, exact: nodes, edges, SCC count, largest SCC and size
      distribution equal scipy's; the degree histograms equal the graph's;
    * whole graph, estimated: HyperBall ran on the final graph (its figures
      equal a run on ``graph.npz``), and each estimate is within ``sigmas``
      standard errors of the exact figure (all-pairs BFS up to
      ``exact_up_to`` nodes, else BFS from ``sample_sources`` sources, the
      two errors combined);
    * first N pages, exact: SCCs and distances of the subgraph of the first
      N node ids equal scipy's.

    Returns the figures compared, for a report.
    """
    n, src, dst, stats = load(session)
    g = stats["graph"]
    w, f = g["whole"], g["first_n"]
    a = adjacency(n, src, dst)
    assert (g["nodes"], g["edges"], w["nodes"], w["edges"]) == (n, len(src), n, len(src))
    want = scc_figures(a)
    got = {k: w[k] for k in want}
    assert got == want, (got, want)
    outdeg, indeg = np.bincount(src, minlength=n), np.bincount(dst, minlength=n)
    assert g["dangling"] == int((outdeg == 0).sum())
    assert g["out_degree_hist"] == log_binned(np.bincount(outdeg))
    assert g["in_degree_hist"] == log_binned(np.bincount(indeg))
    # the estimates describe the final graph, as computed again from graph.npz
    hb = w["hyperball"]
    assert (hb["nodes"], hb["edges"]) == (n, len(src))
    again = hyperball_again(n, src, dst, hb)
    for k in FIGURES:
        assert np.isclose(w[k]["estimate"], again[k]["estimate"], rtol=1e-9), (k, w[k], again[k])
        assert np.isclose(w[k]["se"], again[k]["se"], rtol=1e-6, atol=1e-12), (k, w[k], again[k])
    # ... and fall within their error of the exact figures
    if n <= exact_up_to:
        exact = exact_distance_figures(a)
        truth = {k: {"estimate": exact[k], "se": 0.0} for k in FIGURES}
    else:
        truth = sampled_distance_figures(a, sample_sources)
    report = {"nodes": n, "edges": len(src), "scc": want["scc_count"], "largest_scc": want["largest_scc"],
              "exact": n <= exact_up_to}
    for k in FIGURES:
        est, t = w[k], truth[k]
        bound = sigmas * float(np.hypot(est["se"], t["se"]))
        report[k] = {"estimate": est["estimate"], "se": est["se"], "check": t["estimate"], "check_se": t["se"],
                     "z": float((est["estimate"] - t["estimate"]) / max(np.hypot(est["se"], t["se"]), 1e-300))}
        assert abs(est["estimate"] - t["estimate"]) <= bound, (k, est, t, sigmas)
    # first N pages: exact, against the subgraph of the first N nodes
    k = f["n"]
    assert k == (n if f["max_pages"] is None else min(n, f["max_pages"]))
    keep = (src < k) & (dst < k)
    sub = adjacency(k, src[keep], dst[keep])
    want_f = scc_figures(sub)
    assert (f["scc_count"], f["largest_scc"]) == (want_f["scc_count"], want_f["largest_scc"])
    if not f["apsd_overflow"] and k <= exact_up_to:
        ex = exact_distance_figures(sub)
        assert f["diameter"] == ex["diameter"] and f["reachable_pairs"] == round(ex["reachable_pairs"])
        assert np.isclose(f["avg_distance"], ex["avg_distance"], rtol=1e-9)
        assert np.isclose(f["effective_diameter"], ex["effective_diameter"], rtol=1e-9)
    return report
