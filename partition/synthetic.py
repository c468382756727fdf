"""Synthetic web-like session graphs, for tests and partitioning benchmarks.

:func:`synthetic_graph` makes a :class:`~abc_crawler.store.session.SessionGraph`
that looks like a crawl of a small web: hosts with Zipf-distributed sizes,
mostly intra-host links, power-law in-degrees (targets drawn with a strong
bias to each host's first pages), lognormal page sizes, a few error pages and
redirects, and a share of link targets that were never requested (the
frontier left when the crawl stopped). The requesting ranks follow the
``hash`` assignment, as in a first session.

Command line::

    python -m abc_crawler.partition.synthetic OUT_DIR [--pages 20000] [--hosts 400] [--ranks 8] [--seed 0]
    python -m abc_crawler.partition.synthetic OUT_DIR --bench [--parts 8] [--models page-gp,site-gp,page-hp]

The first writes ``OUT_DIR/graph.npz``; with ``--bench`` it also partitions
the graph with each model and prints a Markdown table of time and quality
against the hash baselines (the table of ``docs/benchmarks/partition.md``).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from ..store.session import SessionGraph, save_graph
from ._np import uniq
from ..web.ownership import hash_rank

__all__ = ["synthetic_graph", "write_synthetic_session", "bench", "main"]

_WORDS = ("alpha", "beta", "gamma", "delta", "docs", "news", "shop", "wiki", "blog", "forum", "media",
          "library", "archive", "research", "portal", "static", "people", "events", "campus", "data")


def synthetic_graph(n_pages: int = 20000, n_hosts: int = 400, ranks: int = 8, seed: int = 0, *,
                    avg_out: float = 12.0, p_intra: float = 0.85, frac_unrequested: float = 0.1,
                    host_zipf: float = 0.8, mean_bytes: float = 12000.0) -> SessionGraph:
    """A random web-like session graph.

    Parameters
    ----------
    n_pages : int
        Requested URLs (the vertices of the page models).
    n_hosts : int
        Hosts; sizes follow a Zipf law with exponent ``host_zipf``.
    ranks : int
        K of the (simulated) session; ``url_rank`` is the hash assignment.
    seed : int
    avg_out : float
        Mean number of distinct out-links of an HTML page (lognormal).
    p_intra : float
        Probability that a link stays on its page's host.
    frac_unrequested : float
        Share of the URL table that is link targets never requested.
    host_zipf : float
    mean_bytes : float
        Mean body size of a 200 page (lognormal, sigma 1).

    Returns
    -------
    SessionGraph
    """
    if n_pages < 1 or n_hosts < 1 or n_hosts > n_pages:
        raise ValueError("need 1 <= n_hosts <= n_pages")
    rng = np.random.default_rng(seed)
    n_urls = int(round(n_pages / (1.0 - frac_unrequested)))
    hw = 1.0 / np.arange(1, n_hosts + 1) ** host_zipf
    sizes = np.maximum(1, np.floor(hw / hw.sum() * n_urls)).astype(np.int64)
    sizes[0] += n_urls - sizes.sum()
    start = np.zeros(n_hosts + 1, dtype=np.int64)
    np.cumsum(sizes, out=start[1:])
    host_of_url = np.repeat(np.arange(n_hosts), sizes)

    hosts = [f"{'www.' if h % 3 else ''}{_WORDS[h % len(_WORDS)]}{h}.{_WORDS[(h * 7) % len(_WORDS)]}.test"
             for h in range(n_hosts)]
    urls = []
    for h in range(n_hosts):
        base = "http://" + hosts[h]
        urls.append(base + "/")
        for k in range(1, int(sizes[h])):
            sec = _WORDS[(k * 31 + h) % len(_WORDS)]
            depth = 1 + (k * 2654435761 % 7) % 3
            path = "/".join([sec] + [_WORDS[(k >> (2 * i)) % len(_WORDS)] for i in range(1, depth)])
            urls.append(f"{base}/{path}/page-{k}.html")
    U = len(urls)
    g = SessionGraph.from_urls(urls, ranks=ranks)

    # Requested URLs: every host's home page, then a random share of the rest.
    home = start[:-1]
    others = np.setdiff1d(np.arange(U), home)
    n_more = max(0, n_pages - home.size)
    req = np.zeros(U, dtype=bool)
    req[home] = True
    req[rng.choice(others, size=min(n_more, others.size), replace=False)] = True
    ridx = np.flatnonzero(req)

    status = np.zeros(U, dtype=np.int16)
    roll = rng.random(ridx.size)
    status[ridx] = np.where(roll < 0.93, 200, np.where(roll < 0.97, 404, 301))
    status[home] = 200
    nbytes = np.zeros(U, dtype=np.int64)
    sigma = 1.0
    mu = np.log(mean_bytes) - sigma**2 / 2
    nbytes[ridx] = np.where(status[ridx] == 200,
                            np.maximum(200, rng.lognormal(mu, sigma, ridx.size)).astype(np.int64),
                            np.where(status[ridx] == 404, 512, 0))
    g.url_status = status
    g.url_bytes = nbytes
    g.url_rank = np.where(req, hash_rank(g.url_fp, ranks), -1).astype(np.int16)
    g.url_superstep = np.where(req, rng.integers(0, 50, U), -1).astype(np.int32)

    # Links.
    html = ridx[status[ridx] == 200]
    ls, lm = np.log(avg_out) - 0.5 * 0.8**2, 0.8
    deg = np.minimum(rng.lognormal(ls, lm, html.size).astype(np.int64) + 1, 400)
    src = np.repeat(html, deg)
    src_host = host_of_url[src]
    intra = rng.random(src.size) < p_intra
    # inter-host targets: hosts weighted by size^0.8, a mild locality (nearby host ids) for half of them
    pw = sizes.astype(np.float64) ** 0.8
    far = rng.choice(n_hosts, size=src.size, p=pw / pw.sum())
    near = (src_host + rng.integers(-5, 6, src.size)) % n_hosts
    tgt_host = np.where(intra, src_host, np.where(rng.random(src.size) < 0.5, near, far))
    k = np.floor(sizes[tgt_host] * rng.random(src.size) ** 2.5).astype(np.int64)
    dst = start[tgt_host] + np.minimum(k, sizes[tgt_host] - 1)
    redir = ridx[status[ridx] == 301]
    rdst = start[host_of_url[redir]] + np.minimum(
        np.floor(sizes[host_of_url[redir]] * rng.random(redir.size)).astype(np.int64),
        sizes[host_of_url[redir]] - 1)
    src = np.concatenate([src, redir])
    dst = np.concatenate([dst, rdst])
    keep = src != dst
    key = uniq(src[keep] * U + dst[keep])
    g.link_src = (key // U).astype(np.int32)
    g.link_dst = (key % U).astype(np.int32)

    # Nodes are the pages fetched with status 200 (and parsed as HTML); edges the links between them.
    nodes = np.flatnonzero(req & (status == 200))
    order = nodes[np.argsort(g.url_superstep[nodes], kind="stable")]
    g.node_url = order.astype(np.int32)
    g.url_node = np.full(U, -1, dtype=np.int32)
    g.url_node[order] = np.arange(order.size, dtype=np.int32)
    ns, nd = g.url_node[g.link_src], g.url_node[g.link_dst]
    e = (ns >= 0) & (nd >= 0)
    g.edge_src, g.edge_dst = ns[e].astype(np.int32), nd[e].astype(np.int32)
    return g


def write_synthetic_session(path, **kwargs) -> SessionGraph:
    """Write ``path/graph.npz`` of a :func:`synthetic_graph` and return the graph."""
    g = synthetic_graph(**kwargs)
    Path(path).mkdir(parents=True, exist_ok=True)
    save_graph(path, g)
    return g


def bench(graph: SessionGraph, K: int = 8, models=("page-gp", "site-gp", "page-hp"), imbalance: float = 0.05,
          seeds=(1,), threads: int = 2) -> list[dict]:
    """Partition ``graph`` with each model and return one row of metrics per model and baseline.

    Each row is the :func:`~abc_crawler.partition.assignment_metrics.predict` dict plus
    ``name``, ``build_s`` (model construction) and ``partition_s``
    (partitioner + balance repair); with several ``seeds`` the scalar values
    are means over the runs (as the thesis averages 8 runs) and
    ``*_max`` keys hold the worst imbalance seen. A model name
    ``page-gp:page-only`` runs page-gp without the site-graph start.
    """
    from .assignment_metrics import predict
    from .models import distinct_links, url_lengths
    from ..web.ownership import owners_hash, owners_site_hash, url_hosts
    from .repartition import run_model

    ul, links, hosts = url_lengths(graph), distinct_links(graph), url_hosts(graph)
    rows = []
    for name, own in (("hash", owners_hash(graph, K)), ("site-hash", owners_site_hash(graph, K, hosts=hosts))):
        rows.append({"name": name, "build_s": 0.0, "partition_s": 0.0,
                     **predict(graph, own, K, url_len=ul, links=links)})
    keys = ("build_s", "partition_s", "volume_bytes", "messages_thesis", "cut_page_graph",
            "km1_page_hypergraph", "storage_pct", "request_pct")
    for name in models:
        m, _, variant = name.partition(":")
        kw = {"site_start": False} if variant == "page-only" else {}
        runs = []
        for seed in seeds:
            res = run_model(graph, m, K, imbalance=imbalance, seed=seed, threads=threads, url_len=ul, hosts=hosts,
                            **kw)
            runs.append({"build_s": res["build_s"], "partition_s": res["partition_s"],
                         **predict(graph, res["owners"], K, url_len=ul, links=links)})
        row = {"name": name, "runs": len(runs)}
        row.update({k: float(np.mean([r[k] for r in runs])) for k in keys})
        row["storage_pct_max"] = max(r["storage_pct"] for r in runs)
        row["request_pct_max"] = max(r["request_pct"] for r in runs)
        rows.append(row)
    return rows


def _pct(r: dict, k: str) -> str:
    if r.get("runs", 1) > 1:
        return f"{r[k]:.2f} (max {r[k + '_max']:.2f})"
    return f"{r[k]:.2f}"


def _table(rows: list[dict]) -> str:
    head = ("| assignment | build s | partition s | volume_bytes | vs hash | messages_thesis | vs hash "
            "| storage_pct | request_pct |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    base = next(r for r in rows if r["name"] == "hash")
    out = [head]
    for r in rows:
        out.append(f"| {r['name']} | {r['build_s']:.2f} | {r['partition_s']:.2f} | {r['volume_bytes']:,.0f} "
                   f"| {r['volume_bytes'] / max(base['volume_bytes'], 1):.3f} | {r['messages_thesis']:,.0f} "
                   f"| {r['messages_thesis'] / max(base['messages_thesis'], 1):.3f} "
                   f"| {_pct(r, 'storage_pct')} | {_pct(r, 'request_pct')} |")
    return "\n".join(out)


def main(argv=None) -> int:
    """Command line: write a synthetic session (and optionally benchmark it)."""
    ap = argparse.ArgumentParser(prog="python -m abc_crawler.partition.synthetic",
                                 description="Write a synthetic web-like session graph (graph.npz).")
    ap.add_argument("out", help="session directory to write")
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--hosts", type=int, default=400)
    ap.add_argument("--ranks", type=int, default=8, help="K of the simulated (hash) session")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bench", action="store_true", help="partition with each model and print a table")
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--models", default="page-gp,site-gp,page-hp")
    ap.add_argument("--seeds", type=int, default=1, help="partitioner runs per model (seeds 1..N), averaged")
    a = ap.parse_args(argv)
    t = time.perf_counter()
    g = write_synthetic_session(a.out, n_pages=a.pages, n_hosts=a.hosts, ranks=a.ranks, seed=a.seed)
    print(f"{a.out}: {len(g.urls):,} URLs, {int((g.url_rank >= 0).sum()):,} requested, "
          f"{g.link_src.size:,} links, {g.n_nodes:,} nodes, {g.edge_src.size:,} edges "
          f"({time.perf_counter() - t:.2f} s)")
    if a.bench:
        print(_table(bench(g, a.parts, tuple(a.models.split(",")), seeds=tuple(range(1, a.seeds + 1)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
