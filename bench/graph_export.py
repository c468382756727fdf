#!/usr/bin/env python
"""abc-graph's cost (issue 36): export and ranking of one session's graph, step by step.

Times, on one session (``--session``, else the biggest ``graph.npz`` found under ``sessions/`` and
``/tmp`` with at least ``--min-nodes`` nodes, else a generated one: ``--nodes`` pages on
``--hosts`` hosts, ``--edges`` links, written with ``abc_crawler.store.session.save_graph``):

* reading ``graph.npz`` and folding it into the page, host and domain graphs;
* PageRank (page and host level), harmonic centrality (host level: exact; page level: HyperBall,
  2^``--log2m`` registers) — the ranking of host graphs is "Host ranks at 175k pages / 2,000 hosts";
* every export (``abc_crawler.graph.graphexport``) at page and host level, and ``cc`` at domain level,
  with the bytes written;
* networkx's ``write_graphml`` of the page graph beside abc-graph's streamed writer
  (``--no-networkx`` skips it: it holds every vertex and edge as Python objects);

and the process's peak RSS after each step. Prints the figures; writes bench/results/graph_export.json.

    .venv/bin/python bench/graph_export.py                     # generated 175k / 1.5M graph
    .venv/bin/python bench/graph_export.py --session sessions/s1
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from abc_crawler.graph import graphexport as gx  # noqa: E402
from abc_crawler.graph.graphrank import harmonic_centrality, pagerank  # noqa: E402
from abc_crawler.store.session import SessionGraph, load_graph, save_graph  # noqa: E402
from abc_crawler.graph.webgraph import level_graph  # noqa: E402


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def find_session(min_nodes: int) -> Path | None:
    """The biggest graph.npz under sessions/ and /tmp (two levels deep) with >= min_nodes nodes."""
    best, best_n = None, min_nodes - 1
    cands = list((ROOT / "sessions").glob("*/graph.npz")) + list(Path("/tmp").glob("*/graph.npz")) \
        + list(Path("/tmp").glob("*/*/graph.npz")) + list(Path("/var/tmp/abc-bench").glob("*/graph.npz"))
    for p in cands:
        try:
            with np.load(p, allow_pickle=False) as z:
                n = int(z["node_url"].shape[0])
        except Exception:
            continue
        if n > best_n:
            best, best_n = p.parent, n
    return best


def generate_session(out: Path, nodes: int, hosts: int, edges: int, seed: int = 36) -> Path:
    """A crawl-like graph.npz: Zipf host sizes, 85 % of links on their host, power-law in-degrees,
    2 % of the nodes' links to URLs that failed (404) and 3 % to URLs never requested."""
    rng = np.random.default_rng(seed)
    size = 1.0 / np.arange(1, hosts + 1) ** 1.1
    size = np.maximum(1, np.floor(size / size.sum() * nodes)).astype(np.int64)
    size[0] += nodes - size.sum()
    start = np.r_[0, np.cumsum(size)[:-1]]
    host_of = np.repeat(np.arange(hosts), size)
    pos = np.arange(nodes) - start[host_of]
    extra_fail, extra_never = nodes // 50, nodes // 33
    u = nodes + extra_fail + extra_never
    urls = [f"http://h{h:04d}.test/p{k}.html" for h, k in zip(host_of.tolist(), pos.tolist())]
    fail_host = rng.integers(0, hosts, extra_fail)
    never_host = rng.integers(0, hosts, extra_never)
    urls += [f"http://h{h:04d}.test/gone{k}.html" for k, h in enumerate(fail_host.tolist())]
    urls += [f"http://h{h:04d}.test/later{k}.html" for k, h in enumerate(never_host.tolist())]
    g = SessionGraph.from_urls(urls, ranks=8)
    g.url_status[:nodes] = 200
    g.url_status[nodes:nodes + extra_fail] = 404
    g.url_rank[:nodes + extra_fail] = rng.integers(0, 8, nodes + extra_fail)
    g.url_bytes[:nodes] = rng.lognormal(np.log(4000), 0.8, nodes).astype(np.int64)
    g.url_superstep[:nodes + extra_fail] = np.sort(rng.integers(0, 700, nodes + extra_fail))
    g.url_node[:nodes] = np.arange(nodes)
    g.node_url = np.arange(nodes, dtype=np.int32)
    g.url_kind = np.zeros(u, dtype=np.int16)
    g.url_kind[nodes:nodes + extra_fail] = 1
    g.kinds = ["", "http_4xx"]
    m = int(edges * 1.4)                                # drawn with repeats; `edges` distinct pairs kept
    src = rng.integers(0, nodes, m)
    intra = rng.random(m) < 0.85
    h = np.where(intra, host_of[src], rng.choice(hosts, m, p=size / size.sum()))
    dst = start[h] + np.floor(size[h] * rng.random(m) ** 3).astype(np.int64)   # skewed: power-law-like in-degrees
    n_fail, n_never = m // 50, m // 33
    dst[:n_fail] = nodes + rng.integers(0, extra_fail, n_fail)
    dst[n_fail:n_fail + n_never] = nodes + extra_fail + rng.integers(0, extra_never, n_never)
    key = np.unique(src * u + dst)
    if key.size > edges:
        key = np.sort(rng.choice(key, edges, replace=False))
    src, dst = key // u, key % u
    g.link_src, g.link_dst = src.astype(np.int32), dst.astype(np.int32)
    e = (dst < nodes) & (src != dst)
    g.edge_src, g.edge_dst = src[e].astype(np.int32), dst[e].astype(np.int32)
    save_graph(out, g)
    (out / "manifest.json").write_text(json.dumps({"format": 1, "config": {}, "generated": "bench/graph_export.py"}))
    return out


def du(paths) -> int:
    return sum(Path(p).stat().st_size for p in paths)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--session", help="a session directory (default: the biggest found, else a generated graph)")
    ap.add_argument("--min-nodes", type=int, default=100_000, help="a found session needs this many nodes")
    ap.add_argument("--nodes", type=int, default=175_000)
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--edges", type=int, default=1_500_000)
    ap.add_argument("--log2m", type=int, default=8)
    ap.add_argument("--no-networkx", action="store_true", help="skip networkx's write_graphml of the page graph")
    ap.add_argument("--out", help="result JSON (default bench/results/graph_export.json)")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="abc-graph-bench-"))
    fig: dict = {"steps": {}}
    steps = fig["steps"]

    def step(name, fn, *args, **kw):
        t0, c0 = time.perf_counter(), time.process_time()
        r = fn(*args, **kw)
        steps[name] = {"wall_s": round(time.perf_counter() - t0, 3), "cpu_s": round(time.process_time() - c0, 3),
                       "peak_rss_mb": round(peak_rss_mb(), 1)}
        print(f"  {name:<34} {steps[name]['wall_s']:>8.2f} s wall {steps[name]['cpu_s']:>8.2f} s CPU   "
              f"peak RSS {steps[name]['peak_rss_mb']:>7.0f} MB", flush=True)
        return r

    try:
        session = Path(a.session) if a.session else find_session(a.min_nodes)
        if session is None:
            session = work / "generated"
            session.mkdir()
            step("generate graph.npz", generate_session, session, a.nodes, a.hosts, a.edges)
            fig["session"] = f"generated: {a.nodes} nodes, {a.hosts} hosts, ~{a.edges} links"
        else:
            fig["session"] = str(session)
        print(f"session: {fig['session']}")
        g = step("load graph.npz", load_graph, session)
        lp = step("page graph", level_graph, g, "page")
        lh = step("host graph", level_graph, g, "host")
        ld = step("domain graph", level_graph, g, "domain")
        fig["graph"] = {"urls": len(g.urls), "nodes": g.n_nodes, "links": int(len(g.link_src)),
                        "page": [lp.n, lp.m], "host": [lh.n, lh.m], "domain": [ld.n, ld.m]}
        print(f"graph: {len(g.urls)} URLs, {g.n_nodes} nodes, {len(g.link_src)} links; page {lp.n}/{lp.m}, "
              f"host {lh.n}/{lh.m}, domain {ld.n}/{ld.m} (vertices/edges)")
        pr_h = step("host PageRank", pagerank, lh.n, lh.src, lh.dst)
        hc_h = step("host harmonic centrality", harmonic_centrality, lh.n, lh.src, lh.dst)
        fig["host_ranks"] = {"seconds": round(steps["host graph"]["wall_s"] + steps["host PageRank"]["wall_s"]
                                              + steps["host harmonic centrality"]["wall_s"], 3),
                             "harmonic": hc_h.describe(), "pagerank_iterations": pr_h.iterations}
        hb = step("host harmonic, HyperBall", harmonic_centrality, lh.n, lh.src, lh.dst, exact_max=0,
                  log2m=a.log2m)
        err = np.abs(hb.values - hc_h.values)
        fig["host_hyperball"] = {"within_2se": float(np.mean(err <= 2 * hb.se)),
                                 "rms_rel_error": float(np.sqrt(np.mean((err / (hc_h.values + 1)) ** 2))),
                                 "rse": hb.rse}
        pr_p = step("page PageRank", pagerank, lp.n, lp.src, lp.dst)
        hc_p = step("page harmonic, HyperBall", harmonic_centrality, lp.n, lp.src, lp.dst, log2m=a.log2m)
        fig["page_ranks"] = {"pagerank_iterations": pr_p.iterations, "harmonic": hc_p.describe()}
        sizes = {}
        for level, lg, fmts in (("page", lp, ("parquet", "graphml", "edgelist")),
                                ("host", lh, ("cc", "parquet", "graphml", "edgelist")),
                                ("domain", ld, ("cc",))):
            pr, hc = (pr_p, hc_p) if level == "page" else (pr_h, hc_h)
            if level == "domain":
                pr = step("domain PageRank", pagerank, ld.n, ld.src, ld.dst)
                hc = step("domain harmonic centrality", harmonic_centrality, ld.n, ld.src, ld.dst)
            for fmt in fmts:
                out = work / f"{level}-{fmt}"
                files = step(f"export {level} {fmt}", gx.export, g, lg, fmt, out, session, pr=pr, hc=hc)
                sizes[f"{level} {fmt}"] = du(files)
                shutil.rmtree(out)
        fig["bytes"] = sizes
        if not a.no_networkx:
            import networkx as nx

            def nx_graphml():
                G = nx.DiGraph()
                cols = gx.vertex_columns(g, lp, session)
                G.add_nodes_from((i, {"url": cols["url"][i], "status": int(cols["status"][i]),
                                      "outcome": cols["outcome"][i]}) for i in range(lp.n))
                G.add_edges_from(zip(lp.src.tolist(), lp.dst.tolist()))
                nx.write_graphml(G, work / "nx.graphml")
                return (work / "nx.graphml").stat().st_size

            sizes["page graphml (networkx, 3 attributes)"] = step("networkx write_graphml page", nx_graphml)
        print("bytes written: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sizes.items()))
        print(f"host ranks ({lh.n} hosts, {lh.m} edges, from graph.npz already loaded): "
              f"{fig['host_ranks']['seconds']:.2f} s (fold + PageRank + {hc_h.method} harmonic centrality)")
        print(f"host HyperBall (2^{a.log2m}): {fig['host_hyperball']['within_2se']:.1%} of hosts within 2 s.e. of "
              f"the exact figure; RMS relative error {fig['host_hyperball']['rms_rel_error']:.3f} "
              f"(bound {hb.rse:.3f})")
        sys.path.insert(0, str(ROOT / "bench"))
        from harness import write_result
        print(f"wrote {write_result('graph_export', fig, a.out)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
