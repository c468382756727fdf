"""What the live graph kernels cost the crawl, and whether their whole-graph figures are right.

    .venv/bin/python bench/stats_overhead.py [--ranks 8] [--hosts 200] [--pages 5000] [--runs 3]
    # issue 22: an 8-rank crawl of a generated web of >= 150,000 pages, checked
    .venv/bin/python bench/stats_overhead.py --hosts 2000 --pages 175000 --runs 2 --check

Interleaved runs on one generated web (phases off, so the crawl is not bound by
slot waits), with the kernels on and off; prints medians of pages/s of the whole
crawl and of rank 0 alone (rank 0 runs the kernel thread), what rank 0 loses
with the kernels on, and the kernel thread's lag: the seconds its
``close()`` took at the end of the crawl (applying the waiting batches and
finishing HyperBall on the final graph; ``kernel_lag_s`` in stats.json) and
the longest time a batch waited for the thread during the crawl.

With ``--check``, every crawl with the kernels on is checked against its own
``graph.npz`` (``tests/graphcheck.py``): the whole graph's SCC count, largest
SCC and size distribution equal scipy's; HyperBall's average distance,
effective diameter and reachable pairs, recomputed from graph.npz, equal
stats.json's and fall within 3 standard errors (theirs and the check's
combined) of a BFS from ``--sources`` random sources; the first-N figures
equal scipy's on the first N pages.

``--web DIR`` reuses a web generated before (``abc-testweb generate``).
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from crawlcheck import crawl_cli, free_port, serve  # noqa: E402

KEYS = ("pages_per_s", "rank0_pages_per_s", "rank0_cpu_s", "wall_s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--pages", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--web", help="a generated web to crawl (default: generate one in a temporary directory)")
    ap.add_argument("--check", action="store_true", help="check every crawl's graph statistics against graph.npz")
    ap.add_argument("--sources", type=int, default=1000, help="--check: BFS sources of the sampled distance check")
    ap.add_argument("--keep", help="keep the last session with the kernels on in this directory")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "stats_overhead.json"))
    args = ap.parse_args()
    from abc_crawler.testweb.generator import generate_web

    tmp = Path(tempfile.mkdtemp(prefix="abc-statsbench-"))
    if args.web:
        web = Path(args.web)
    else:
        web = tmp / "web"
        t = time.perf_counter()
        generate_web(web, n_hosts=args.hosts, n_pages=args.pages, seed=1, port=free_port())
        print(f"web generated in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    res: dict = {"on": [], "off": []}
    checks = []
    with serve(web, max_seconds=4 * 3600):
        for run in range(args.runs):
            for mode in ("on", "off"):
                session = tmp / f"{mode}-{run}"
                flag = "--stats" if mode == "on" else "--no-stats"
                r = crawl_cli(args.ranks, web, session, flag, "--phases", "off", "--progress-seconds", "600",
                              timeout=4 * 3600)
                if r.returncode != 0:
                    print(r.stderr[-2000:], file=sys.stderr)
                    return 1
                st = json.loads((session / "stats.json").read_text())
                r0 = st["per_rank"][0]
                row = {"pages_per_s": st["requests"] / st["wall_s"],
                       "rank0_pages_per_s": r0["requests"] / st["wall_s"],
                       "rank0_cpu_s": r0["cpu_s"], "wall_s": st["wall_s"], "graph": st["graph"],
                       "summary": [ln for ln in r.stderr.splitlines() if ln.startswith("  graph")]}
                res[mode].append(row)
                if mode == "on" and args.check:
                    from graphcheck import check_graph_stats

                    t = time.perf_counter()
                    checks.append(check_graph_stats(session, sigmas=3.0, sample_sources=args.sources))
                    print(f"run {run + 1}: check passed in {time.perf_counter() - t:.0f} s: {checks[-1]}",
                          file=sys.stderr)
                if mode == "on" and args.keep and run == args.runs - 1:
                    shutil.rmtree(args.keep, ignore_errors=True)
                    shutil.copytree(session, args.keep)
                shutil.rmtree(session)
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    med = {m: {k: statistics.median(r[k] for r in rows) for k in KEYS} for m, rows in res.items()}
    lags = [r["graph"]["kernel_lag_s"] for r in res["on"]]
    delays = [r["graph"]["kernel_max_delay_s"] for r in res["on"]]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"argv": sys.argv[1:], "medians": med, "raw": res, "checks": checks},
                                         indent=1))
    g = res["on"][-1]["graph"]
    print(f"{args.ranks} ranks, {g['nodes']} pages, {g['edges']} links, {args.runs} interleaved runs, medians:")
    for m in ("on", "off"):
        x = med[m]
        print(f"  kernels {m:3s}: {x['pages_per_s']:6.0f} pages/s, rank 0 {x['rank0_pages_per_s']:5.0f} pages/s "
              f"(CPU {x['rank0_cpu_s']:.1f} s), wall {x['wall_s']:.1f} s")
    loss = 1 - med["on"]["rank0_pages_per_s"] / med["off"]["rank0_pages_per_s"]
    print(f"  rank 0 loses {100 * loss:.1f} % of its crawl rate with the kernels on (goal <= 10 %)")
    print(f"  kernel thread lag at the end: {', '.join(f'{x:.2f}' for x in lags)} s (goal < 10 s); "
          f"longest wait of a batch during the crawl: {', '.join(f'{x:.2f}' for x in delays)} s")
    hb = g["whole"]["hyperball"]
    print(f"  HyperBall: {hb['runs']} runs in the last crawl, the final one {hb['seconds']:.2f} CPU-s "
          f"({hb['passes']} passes, 2^{hb['log2m']} registers)")
    for line in res["on"][-1]["summary"]:
        print("  " + line.strip())
    for c in checks:
        print(f"  check: SCC {c['scc']} (largest {c['largest_scc']}) = scipy; " + "; ".join(
            f"{k} {c[k]['estimate']:.4g} ± {c[k]['se']:.2g} vs {'exact' if c['exact'] else 'sampled'} "
            f"{c[k]['check']:.4g} ± {c[k]['check_se']:.2g} (z = {c[k]['z']:+.2f})"
            for k in ("avg_distance", "effective_diameter", "reachable_pairs")))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
