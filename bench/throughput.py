"""Throughput of abc-crawl at 1 and 8 ranks, and the embedded server's own capacity.

    .venv/bin/python bench/throughput.py [--hosts 200] [--pages 5000] [--runs 3] [--out bench/results/throughput.json]

Generates a web (default about 5,000 pages on 200 hosts), serves it with the
embedded server (`abc-testweb serve`, its own process), then, interleaved for
``--runs`` rounds: (a) the server's capacity measured with the same client the
crawler uses (pycurl CurlMulti, 64 keep-alive handles, every URL the crawl
requests, no parsing), (b) `mpiexec -n 1 abc-crawl`, (c) `mpiexec -n 8
abc-crawl`. Prints medians of pages/s (requests / crawl wall time) and pages
per CPU-second (requests / user+system seconds of all ranks), and writes them
as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from crawlcheck import crawl_cli, free_port, serve  # noqa: E402


def server_capacity(urls: list[str], resolve: list[str], handles: int = 64) -> float:
    import pycurl

    m = pycurl.CurlMulti()
    free = []
    for _ in range(handles):
        c = pycurl.Curl()
        c.setopt(pycurl.RESOLVE, resolve)
        c.setopt(pycurl.WRITEFUNCTION, lambda b: None)
        c.setopt(pycurl.NOSIGNAL, 1)
        free.append(c)
    todo = list(urls)
    done = 0
    t0 = time.perf_counter()
    active = 0
    while todo or active:
        while todo and free:
            c = free.pop()
            c.setopt(pycurl.URL, todo.pop())
            m.add_handle(c)
            active += 1
        m.select(0.01)
        while m.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass
        while True:
            q, ok, failed = m.info_read()
            for c in ok + [f[0] for f in failed]:
                m.remove_handle(c)
                free.append(c)
                active -= 1
                done += 1
            if not q:
                break
    return done / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--pages", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--stats", action="store_true", help="run with the graph kernels on (default off: crawl only)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "throughput.json"))
    args = ap.parse_args()
    from abc_crawler.testweb.generator import generate_web

    tmp = Path(tempfile.mkdtemp(prefix="abc-bench-"))
    web = tmp / "web"
    man = generate_web(web, n_hosts=args.hosts, n_pages=args.pages, seed=1, port=free_port())
    urls = man["expected"]["requested"]
    resolve = (web / "resolve.txt").read_text().split()
    results: dict = {"server_pages_per_s": [], **{f"ranks_{k}": [] for k in args.ranks}}
    with serve(web, max_seconds=3600):
        for run in range(args.runs):
            results["server_pages_per_s"].append(server_capacity(urls, resolve))
            for k in args.ranks:
                session = tmp / f"s{k}-{run}"
                extra = [] if args.stats else ["--no-stats"]
                r = crawl_cli(k, web, session, *extra, "--progress-seconds", "600", timeout=1800)
                if r.returncode != 0:
                    print(r.stderr[-2000:], file=sys.stderr)
                    return 1
                st = json.loads((session / "stats.json").read_text())
                cpu = sum(p["cpu_s"] for p in st["per_rank"])
                results[f"ranks_{k}"].append({"requests": st["requests"], "wall_s": st["wall_s"], "cpu_s": cpu,
                                              "pages_per_s": st["requests"] / st["wall_s"],
                                              "pages_per_cpu_s": st["requests"] / cpu})
                shutil.rmtree(session)
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    med = {"server_pages_per_s": statistics.median(results["server_pages_per_s"])}
    for k in args.ranks:
        rows = results[f"ranks_{k}"]
        med[f"ranks_{k}"] = {key: statistics.median(r[key] for r in rows)
                             for key in ("pages_per_s", "pages_per_cpu_s", "wall_s", "cpu_s", "requests")}
    out = {"machine": {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
           "web": {"hosts": args.hosts, "pages": args.pages, "requested": len(urls)},
           "runs": args.runs, "stats_kernels": args.stats, "medians": med, "raw": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"web: {len(urls)} URLs on {args.hosts} hosts; {args.runs} interleaved runs; medians:")
    print(f"  embedded server, pycurl 64 handles: {med['server_pages_per_s']:8.0f} pages/s")
    for k in args.ranks:
        m = med[f"ranks_{k}"]
        print(f"  abc-crawl {k} rank(s):              {m['pages_per_s']:8.0f} pages/s  "
              f"{m['pages_per_cpu_s']:8.0f} pages/CPU-s  (wall {m['wall_s']:.2f} s, CPU {m['cpu_s']:.2f} s)")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
