#!/usr/bin/env python
"""Live host ranks' cost to rank 0 during a crawl (issue 36), replayed superstep by superstep.

A session's graph (``--session``, else a generated one: ``--nodes`` pages on ``--hosts`` hosts,
``--edges`` links, as ``bench/graph_export.py`` makes it) is fed to
:class:`abc_crawler.graph.hostranks.LiveHostRanks` as rank 0's coordinator feeds it: the URLs and links
of each superstep (the session's own supersteps, ``url_superstep`` of each link's source), one
``update`` per superstep on a simulated clock of ``--superstep-seconds`` per superstep (the
ranking's budget: at most every 2 s and 5 % of the time). Measured with the process's CPU clock:
folding the links, every ranking, and the final forced ranking (the one ``stats.json`` keeps).
Prints the share of rank 0's time the live ranks took over the simulated crawl's wall time.

    .venv/bin/python bench/host_ranks.py                       # generated 175k pages / 2,000 hosts
    .venv/bin/python bench/host_ranks.py --session sessions/s1
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness  # noqa: E402
from graph_export import generate_session  # noqa: E402

from abc_crawler.graph.hostranks import LiveHostRanks  # noqa: E402
from abc_crawler.store.session import load_graph  # noqa: E402


def replay(g, superstep_seconds: float) -> dict:
    live = LiveHostRanks()
    steps = np.asarray(g.url_superstep, dtype=np.int64)
    src, dst = np.asarray(g.link_src, np.int32), np.asarray(g.link_dst, np.int32)
    link_step = steps[src] if src.size else np.zeros(0, np.int64)
    link_step = np.where(link_step < 0, 0, link_step)
    S = int(link_step.max()) + 1 if link_step.size else 1
    order = np.argsort(link_step, kind="stable")
    bounds = np.searchsorted(link_step[order], np.arange(S + 1))
    # the URLs rank 0 knows by each superstep: those whose first link or request came by then
    first = np.full(len(g.urls), S, dtype=np.int64)
    np.minimum.at(first, dst, link_step)
    np.minimum.at(first, src, link_step)
    known = np.where(steps >= 0, np.minimum(first, steps), first)
    url_order = np.argsort(known, kind="stable")     # rows in the order rank 0 first hears of them
    row_of = np.empty_like(url_order)
    row_of[url_order] = np.arange(url_order.size)
    urls_sorted = [g.urls[i] for i in url_order.tolist()]
    known_by = np.searchsorted(known[url_order], np.arange(S), side="right")
    c0 = time.process_time()
    fold_s = 0.0
    for s in range(S):
        sel = order[bounds[s]:bounds[s + 1]]
        t = time.process_time()
        live.add_links(row_of[src[sel]].astype(np.int32), row_of[dst[sel]].astype(np.int32))
        live.update(urls_sorted[: int(known_by[s])], now=s * superstep_seconds)
        fold_s += time.process_time() - t
    t = time.process_time()
    live.update(urls_sorted, now=S * superstep_seconds, force=True)
    final_s = time.process_time() - t
    total = time.process_time() - c0
    wall = S * superstep_seconds
    return {"supersteps": S, "simulated_wall_s": round(wall, 1), "rankings": live.updates - 1,
            "rankings_cpu_s": round(live.cpu_s, 3), "all_cpu_s": round(total, 3), "final_ranking_s": round(final_s, 3),
            "share_of_rank0_pct": round(100.0 * (total - final_s) / wall, 2) if wall else None,
            "hosts": live.last["hosts_known"], "host_edges": live.last["host_edges"], "method": live.last["method"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--session", help="a session directory (default: a generated graph)")
    ap.add_argument("--nodes", type=int, default=175_000)
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--edges", type=int, default=1_500_000)
    ap.add_argument("--superstep-seconds", type=float, default=1.0,
                    help="simulated time per superstep (abc-crawl's --superstep-seconds)")
    ap.add_argument("--out", help="result JSON (default bench/results/host_ranks.json)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        session = Path(a.session) if a.session else generate_session(Path(tmp) / "g", a.nodes, a.hosts, a.edges)
        g = load_graph(session)
        print(f"graph: {len(g.urls):,} URLs, {len(g.link_src):,} links, "
              f"{int((np.asarray(g.url_superstep) >= 0).sum()):,} requested", flush=True)
        r = replay(g, a.superstep_seconds)
    print(f"{r['supersteps']} supersteps ({r['simulated_wall_s']} s simulated): {r['rankings']} rankings during the "
          f"crawl, {r['rankings_cpu_s']} CPU-s; folding + rankings {r['all_cpu_s'] - r['final_ranking_s']:.3f} CPU-s "
          f"= {r['share_of_rank0_pct']} % of rank 0's time; final ranking {r['final_ranking_s']} s "
          f"({r['hosts']:,} hosts, {r['host_edges']:,} host edges, {r['method']})")
    harness.write_result("host_ranks", {"args": vars(a), "machine": harness.machine_info(), **r}, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
