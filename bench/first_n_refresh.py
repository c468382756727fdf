#!/usr/bin/env python
"""What the first-N figures cost: SPAWC's incremental kernels against a recomputation (issue 37).

Replays a crawled session's page graph (``SESSION/graph.npz``: nodes in crawl order, edges in the
order rank 0 added them) into the first-N kernels the way the kernel thread feeds them, in
batches of ``--batch`` edges (256, the thread's piece), and times, in thread CPU seconds:

* ``incremental``: every batch through SPAWC's APSD and SCC kernels (``GraphStats`` without
  deferral: what the thread did before it chose by measure);
* ``recompute``: one recomputation from scratch on the final graph
  (``GraphStats.refresh_first_n``: Tarjan and a bit-parallel BFS from every page), and the same
  every ``--every`` edges (the cost of keeping the figures live that way);

and checks that both end with the same figures (SCC count, largest SCC, diameter, average
distance, effective diameter, reachable pairs).

    .venv/bin/python bench/first_n_refresh.py SESSION [--max-pages 20000] [--batch 256] [--every 5000]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from abc_crawler.kernels import GraphStats  # noqa: E402

FIGURES = ("scc_count", "largest_scc", "diameter", "avg_distance", "effective_diameter", "reachable_pairs")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("session", help="a crawled session directory (its graph.npz)")
    ap.add_argument("--max-pages", type=int, default=20000, help="the first-N cap (--stats-max-pages)")
    ap.add_argument("--batch", type=int, default=256, help="edges per batch of the incremental replay")
    ap.add_argument("--every", type=int, default=5000, help="edges between two recomputations")
    a = ap.parse_args(argv)
    z = np.load(Path(a.session) / "graph.npz")
    src, dst = z["edge_src"].astype(np.int32), z["edge_dst"].astype(np.int32)
    n = int(z["node_url"].shape[0])
    order = np.maximum(src, dst)                 # an edge is added once both its ends are nodes
    print(f"{a.session}: {n} nodes, {src.size} edges, first-N cap {a.max_pages}")

    inc = GraphStats(max_nodes=a.max_pages)
    t = time.thread_time()
    added = 0
    for i in range(0, src.size, a.batch):
        s, d = src[i:i + a.batch], dst[i:i + a.batch]
        need = int(order[i:i + a.batch].max()) + 1
        if need > added:
            inc.add_nodes(need - added)
            added = need
        inc.add_edges(s, d)
    if n > added:
        inc.add_nodes(n - added)
    t_inc = time.thread_time() - t

    live = GraphStats(max_nodes=a.max_pages, defer_first_n=True)
    live.add_nodes(n)
    t_live, runs = 0.0, 0
    for i in range(0, src.size, a.every):
        live.add_edges(src[i:i + a.every], dst[i:i + a.every])
        t = time.thread_time()
        live.refresh_first_n()
        t_live += time.thread_time() - t
        runs += 1
    final = GraphStats(max_nodes=a.max_pages, defer_first_n=True)
    final.add_nodes(n)
    final.add_edges(src, dst)
    t = time.thread_time()
    final.refresh_first_n()
    t_one = time.thread_time() - t

    want = {k: inc.summary()["first_n"][k] for k in FIGURES}
    got = {k: final.summary()["first_n"][k] for k in FIGURES}
    same = all(abs(want[k] - got[k]) <= 1e-9 * max(1.0, abs(want[k])) for k in FIGURES) and \
        {k: live.summary()["first_n"][k] for k in FIGURES} == got
    print(f"  incremental, batches of {a.batch}: {t_inc:8.3f} CPU-s")
    print(f"  one recomputation (final graph):  {t_one:8.3f} CPU-s  ({t_inc / max(t_one, 1e-9):,.0f}x less)")
    print(f"  a recomputation every {a.every} edges ({runs} runs): {t_live:8.3f} CPU-s")
    print(f"  figures equal: {same}  {got}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
