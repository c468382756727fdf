#!/usr/bin/env python
"""A whole crawl with and without spilling (issue 35, item 3): the same graph, every page once,
and the wall time side by side.

Crawls a generated web (default: the held-out 2,000-host web of 175,000 pages, seed 1, served by
nginx with an access log) at ``--ranks`` with the lab settings, once with the default memory
budget (nothing spills on this machine) and once with ``--memory-budget BUDGET`` small enough that
every rank's URL-seen set and frontier spill, one after the other (``--runs`` pairs, alternating
which goes first). Each crawl is checked against the web's truth and the other crawl:

* its requests against the generator's expected URL count, and nginx's access log: no URL asked
  twice (robots.txt aside);
* its graph (``graph.npz``): the nodes' and the edges' fingerprints, equal to the other crawl's and
  as many as the generator expects.

Printed per crawl: wall time, requests, nodes, edges, what spilled (``stats.json`` per-rank
``memory``), the ranks' peak RSS.

    .venv/bin/python bench/spill_crawl.py --budget 4M
"""
from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness  # noqa: E402
import nginx  # noqa: E402

from abc_crawler.store.session import load_graph  # noqa: E402


def graph_keys(session: Path) -> tuple[np.ndarray, np.ndarray]:
    """(sorted node fingerprints, sorted edge fingerprint pairs as one structured array)."""
    g = load_graph(session)
    node_fp = np.asarray(g.url_fp, dtype=np.uint64)[np.asarray(g.node_url, dtype=np.int64)]
    pairs = np.empty(len(g.edge_src), dtype=[("s", np.uint64), ("d", np.uint64)])
    pairs["s"] = node_fp[np.asarray(g.edge_src, dtype=np.int64)]
    pairs["d"] = node_fp[np.asarray(g.edge_dst, dtype=np.int64)]
    return np.sort(node_fp), np.sort(pairs, order=("s", "d"))


def crawl(web: Path, ranks: int, session: Path, log: Path, extra: list[str]) -> dict:
    with nginx.serve(web, access_log=str(log), max_seconds=4 * 3600):
        r = harness.run_measured(harness.abc_command(ranks, web, session, *extra), timeout=4 * 3600)
    if r["rc"] != 0:
        raise RuntimeError(f"abc-crawl failed: {r['stderr'][-3000:]}")
    st = json.loads((session / "stats.json").read_text())
    asked = collections.Counter((row["host"], row["path"]) for row in nginx.read_access_log(log)
                                if not row["path"].startswith("/robots.txt"))
    mem = [p["memory"] for p in st["per_rank"]]
    return {"wall_s": r["wall_s"], "requests": st["requests"], "asked_twice": sum(1 for n in asked.values() if n > 1),
            "asked": len(asked), "nodes": st["graph"]["nodes"], "edges": st["graph"]["edges"],
            "seen_spills": sum(m.get("seen_spills", 0) for m in mem),
            "seen_disk_mb": sum(m.get("seen_disk_bytes", 0) for m in mem) / 2 ** 20,
            "frontier_disk_mb": sum(m.get("frontier_disk_bytes", 0) for m in mem) / 2 ** 20,
            "trimmed": sum(m.get("frontier_trimmed_urls", 0) for m in mem),
            "budget_mb": mem[0].get("memory_budget", 0) / 2 ** 20,
            "max_rss_mb": [p["max_rss_kb"] // 1024 for p in st["per_rank"]]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--pages", type=int, default=175_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=18081)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--budget", default="4M", help="--memory-budget of the spilling crawl")
    ap.add_argument("--runs", type=int, default=1, help="pairs of crawls (alternating which goes first)")
    a = ap.parse_args()
    web = harness.generated_web(a.hosts, a.pages, seed=a.seed, port=a.port)
    expected = json.loads((web / "manifest.json").read_text())["expected"]
    print(f"web {web.name}: expected {expected['requested']:,} requests, {expected['nodes']:,} nodes, "
          f"{expected['edges']:,} edges", flush=True)
    rows: dict[str, list[dict]] = {"default": [], "spill": []}
    keys: dict[str, tuple] = {}
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(a.runs):
            for name in harness.rotated(["default", "spill"], run):
                session = Path(tmp) / f"{name}-{run}"
                extra = ["--memory-budget", a.budget] if name == "spill" else []
                row = crawl(web, a.ranks, session, Path(tmp) / f"{name}-{run}.log", extra)
                k = graph_keys(session)
                same = True
                if "first" in keys:
                    same = all(np.array_equal(x, y) for x, y in zip(k, keys["first"]))
                else:
                    keys["first"] = k
                exact = (row["requests"] == expected["requested"] and row["nodes"] == expected["nodes"]
                         and row["edges"] == expected["edges"] and row["asked_twice"] == 0)
                ok = ok and same and exact
                rows[name].append(row)
                print(f"[{run + 1}/{a.runs}] {name:7s} budget {row['budget_mb']:,.0f} MB: {row['wall_s']:.0f} s, "
                      f"{row['requests']:,} requests ({row['asked_twice']} URLs asked twice), {row['nodes']:,} nodes, "
                      f"{row['edges']:,} edges; {'exact' if exact else 'NOT EXACT'}, graph "
                      f"{'equal to the first crawl' if same else 'DIFFERENT'}; seen set spilled {row['seen_spills']} "
                      f"times ({row['seen_disk_mb']:.0f} MB), frontier {row['frontier_disk_mb']:.0f} MB to disk, "
                      f"{row['trimmed']:,} completed URLs out of the columns; peak RSS per rank "
                      f"{min(row['max_rss_mb'])}-{max(row['max_rss_mb'])} MB", flush=True)
            import shutil

            for p in Path(tmp).glob("*"):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
    d = statistics.median(r["wall_s"] for r in rows["default"])
    s = statistics.median(r["wall_s"] for r in rows["spill"])
    print(f"median wall: default {d:.0f} s, --memory-budget {a.budget} {s:.0f} s (spill / default {s / d:.3f}); "
          f"{'every crawl exact and the graphs equal' if ok else 'SOME CRAWL WAS NOT EXACT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
