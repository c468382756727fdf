"""What the live graph kernels cost the crawl: 8 ranks with the kernels on and off.

    .venv/bin/python bench/stats_overhead.py [--ranks 8] [--hosts 200] [--pages 5000] [--runs 3]

Interleaved runs on one generated web (phases off, so the crawl is not bound by
slot waits); prints medians of pages/s of the whole crawl and of rank 0 alone
(rank 0 runs the kernel thread), and the kernels' final figures.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from crawlcheck import crawl_cli, free_port, serve  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--pages", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "stats_overhead.json"))
    args = ap.parse_args()
    from abc_crawler.testweb.generator import generate_web

    tmp = Path(tempfile.mkdtemp(prefix="abc-statsbench-"))
    web = tmp / "web"
    generate_web(web, n_hosts=args.hosts, n_pages=args.pages, seed=1, port=free_port())
    res: dict = {"on": [], "off": []}
    with serve(web, max_seconds=3600):
        for run in range(args.runs):
            for mode in ("on", "off"):
                session = tmp / f"{mode}-{run}"
                flag = "--stats" if mode == "on" else "--no-stats"
                r = crawl_cli(args.ranks, web, session, flag, "--phases", "off", "--progress-seconds", "600",
                              timeout=1800)
                if r.returncode != 0:
                    print(r.stderr[-2000:], file=sys.stderr)
                    return 1
                st = json.loads((session / "stats.json").read_text())
                r0 = st["per_rank"][0]
                res[mode].append({"pages_per_s": st["requests"] / st["wall_s"],
                                  "rank0_pages_per_s": r0["requests"] / st["wall_s"],
                                  "rank0_cpu_s": r0["cpu_s"], "wall_s": st["wall_s"], "graph": st["graph"]})
                shutil.rmtree(session)
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    med = {m: {k: statistics.median(r[k] for r in rows) for k in ("pages_per_s", "rank0_pages_per_s",
                                                                     "rank0_cpu_s", "wall_s")}
           for m, rows in res.items()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"medians": med, "raw": res}, indent=1))
    g = res["on"][-1]["graph"]
    print(f"{args.ranks} ranks, {args.runs} interleaved runs, medians:")
    for m in ("on", "off"):
        x = med[m]
        print(f"  kernels {m:3s}: {x['pages_per_s']:6.0f} pages/s, rank 0 {x['rank0_pages_per_s']:5.0f} pages/s "
              f"(CPU {x['rank0_cpu_s']:.1f} s), wall {x['wall_s']:.1f} s")
    loss = 1 - med["on"]["rank0_pages_per_s"] / med["off"]["rank0_pages_per_s"]
    print(f"  rank 0 loses {100 * loss:.1f} % with the kernels on; graph: {g.get('nodes')} nodes, "
          f"{g.get('edges')} edges, {g.get('scc_count')} SCC, diameter {g.get('diameter')}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
