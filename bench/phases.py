"""Cost and effect of KSpider phase swapping: pages/s with phases on and off, and host overlaps.

    .venv/bin/python bench/phases.py [--ranks 8] [--hosts 60] [--pages 3000] [--runs 3] [--latency 0.002]

On one generated web, served by the embedded server with an access log (and a
small per-response latency so that requests take time, as on a real server),
interleaved runs of `mpiexec -n RANKS abc-crawl` with `--phases on` and
`--phases off`. Prints medians of pages/s and of the number of pairs of
requests from different ranks that overlapped in time on one host (from the
server's log), and writes them as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from crawlcheck import crawl_cli, free_port, host_overlaps, read_log, serve  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--hosts", type=int, default=60)
    ap.add_argument("--pages", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.002)
    ap.add_argument("--phase-seconds", default="1.0")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "phases.json"))
    args = ap.parse_args()
    from abc_crawler.testweb.generator import generate_web

    tmp = Path(tempfile.mkdtemp(prefix="abc-phases-"))
    web = tmp / "web"
    man = generate_web(web, n_hosts=args.hosts, n_pages=args.pages, seed=2, port=free_port())
    res: dict = {"on": [], "off": []}
    for run in range(args.runs):
        for mode in ("on", "off"):
            log = tmp / f"{mode}-{run}.log"
            session = tmp / f"{mode}-{run}"
            with serve(web, log, max_seconds=3600, latency=args.latency):
                r = crawl_cli(args.ranks, web, session, "--phases", mode, "--phase-seconds", args.phase_seconds,
                              "--no-stats", "--progress-seconds", "600", timeout=1800)
            if r.returncode != 0:
                print(r.stderr[-2000:], file=sys.stderr)
                return 1
            time.sleep(0.2)
            st = json.loads((session / "stats.json").read_text())
            rows = read_log(log)
            res[mode].append({"requests": st["requests"], "wall_s": st["wall_s"],
                              "pages_per_s": st["requests"] / st["wall_s"], "overlaps": host_overlaps(rows),
                              "idle_phase_s": sum(p.get("idle_phase_s", 0.0) for p in st["per_rank"]),
                              "urls_per_connection": statistics.mean(p.get("urls_per_connection", 0.0)
                                                                     for p in st["per_rank"])})
            shutil.rmtree(session)
        print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    med = {m: {k: statistics.median(r[k] for r in rows) for k in rows[0]} for m, rows in res.items()}
    out = {"machine": {"cores": os.cpu_count()}, "ranks": args.ranks,
           "web": {"hosts": args.hosts, "requested": len(man["expected"]["requested"])},
           "latency_s": args.latency, "phase_seconds": float(args.phase_seconds), "runs": args.runs,
           "medians": med, "raw": res}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"{args.ranks} ranks, {len(man['expected']['requested'])} URLs on {args.hosts} hosts, "
          f"{args.latency * 1000:.0f} ms per response, {args.runs} interleaved runs, medians:")
    for m in ("on", "off"):
        x = med[m]
        print(f"  phases {m:3s}: {x['pages_per_s']:7.0f} pages/s  wall {x['wall_s']:6.2f} s  host overlaps "
              f"{x['overlaps']:6.0f}  idle for phase {x['idle_phase_s']:6.1f} rank-s  URLs/connection "
              f"{x['urls_per_connection']:.1f}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
