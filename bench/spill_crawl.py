#!/usr/bin/env python
"""A whole crawl with and without spilling (issue 35, item 3): the same graph, every page once,
and the wall time side by side.

Crawls a generated web (default: the held-out 2,000-host web of 175,000 pages, seed 1, served by
nginx with an access log) at ``--ranks`` with the lab settings, once with the default memory
budget (nothing spills on this machine) and once with ``--memory-budget BUDGET`` small enough that
every rank's URL-seen set and frontier spill, one after the other (``--runs`` pairs, alternating
which goes first). Each crawl is checked against the web's truth and the other crawl:

* nginx's access log: the URLs asked are those the generator says are requested (robots.txt,
  each host's stylesheet and the ``/sitemap.xml`` inferred for seed hosts aside), and how many were asked more than once — answered 500, so retried, or cut at a phase
  slot's end and asked again (these depend on timing);
* its graph (``graph.npz``): the nodes' and the edges' fingerprints, equal to the generator's
  (so the two crawls' graphs are equal too).

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
from abc_crawler.web.urls import fingerprint  # noqa: E402


def _keys(node_fp: np.ndarray, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pairs = np.empty(len(src), dtype=[("s", np.uint64), ("d", np.uint64)])
    pairs["s"], pairs["d"] = src, dst
    return np.sort(node_fp), np.sort(pairs, order=("s", "d"))


def graph_keys(session: Path) -> tuple[np.ndarray, np.ndarray]:
    """(sorted node fingerprints, sorted edge fingerprint pairs as one structured array)."""
    g = load_graph(session)
    node_fp = np.asarray(g.url_fp, dtype=np.uint64)[np.asarray(g.node_url, dtype=np.int64)]
    return _keys(node_fp, node_fp[np.asarray(g.edge_src, dtype=np.int64)],
                 node_fp[np.asarray(g.edge_dst, dtype=np.int64)])


def _key(url: str) -> tuple[str, str]:
    """(host, path) of a URL as nginx logs it."""
    rest = url.split("://", 1)[1]
    hostport, _, path = rest.partition("/")
    return hostport.rsplit(":", 1)[0] if ":" in hostport else hostport, "/" + path


def truth_keys(expected: dict) -> tuple[np.ndarray, np.ndarray]:
    """The same keys of the generator's truth (its node URLs and edges)."""
    fp = lambda urls: np.fromiter((fingerprint(u) for u in urls), dtype=np.uint64)  # noqa: E731
    edges = expected["edges"]
    return _keys(fp(expected["nodes"]), fp(e[0] for e in edges), fp(e[1] for e in edges))


def crawl(web: Path, ranks: int, session: Path, log: Path, extra: list[str]) -> dict:
    with nginx.serve(web, access_log=str(log), max_seconds=4 * 3600):
        r = harness.run_measured(harness.abc_command(ranks, web, session, *extra), timeout=4 * 3600)
    if r["rc"] != 0:
        raise RuntimeError(f"abc-crawl failed: {r['stderr'][-3000:]}")
    st = json.loads((session / "stats.json").read_text())
    asked: collections.Counter = collections.Counter()
    failed = set()                                       # URLs answered 5xx (retried) at least once
    for row in nginx.read_access_log(log):
        if not row["path"].startswith("/robots.txt"):
            asked[row["host"], row["path"]] += 1
            if int(row["status"]) >= 500:
                failed.add((row["host"], row["path"]))
    mem = [p["memory"] for p in st["per_rank"]]
    return {"wall_s": r["wall_s"], "requests": st["requests"], "asked_twice": sum(1 for n in asked.values() if n > 1),
            "_asks": asked, "_failed": failed,
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
    print(f"web {web.name}: expected {len(expected['requested']):,} requests, {len(expected['nodes']):,} nodes, "
          f"{len(expected['edges']):,} edges", flush=True)
    truth = truth_keys(expected)
    rows: dict[str, list[dict]] = {"default": [], "spill": []}
    want = {_key(u) for u in expected["requested"]}
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(a.runs):
            for name in harness.rotated(["default", "spill"], run):
                session = Path(tmp) / f"{name}-{run}"
                extra = ["--memory-budget", a.budget] if name == "spill" else []
                row = crawl(web, a.ranks, session, Path(tmp) / f"{name}-{run}.log", extra)
                same = all(np.array_equal(x, y) for x, y in zip(graph_keys(session), truth))
                asks = row.pop("_asks")
                # every URL the truth has asked, and no other but what the generator leaves out of it:
                # each host's stylesheet (a page requisite) and the /sitemap.xml inferred for seed hosts
                extra = {k for k in asks if k[1] in ("/sitemap.xml", "/style.css") and k not in want}
                exact = set(asks) - extra == want
                if not exact:
                    print(f"  asked, not in the truth: {sorted(set(asks) - want)[:5]}; in the truth, not asked: "
                          f"{sorted(want - set(asks))[:5]}")
                again = [k for k, n in asks.items() if n > 1]
                failed = row.pop("_failed")
                row["again_500"] = sum(1 for k in again if k in failed)
                ok = ok and same and exact
                rows[name].append(row)
                print(f"[{run + 1}/{a.runs}] {name:7s} budget {row['budget_mb']:,.0f} MB: {row['wall_s']:.0f} s, "
                      f"{row['requests']:,} requests ({row['asked']:,} URLs asked, "
                      f"{'those of the truth' if exact else 'NOT THOSE OF THE TRUTH'}; {row['asked_twice']:,} asked more "
                      f"than once, {row['again_500']:,} of them answered 5xx, the others after a slot-end cut or a timeout), "
                      f"{row['nodes']:,} nodes, {row['edges']:,} edges; graph "
                      f"{'equal to the truth' if same else 'DIFFERENT FROM THE TRUTH'}; seen set spilled {row['seen_spills']} "
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
