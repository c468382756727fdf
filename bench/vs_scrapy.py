"""P1: abc-crawl (1 and 8 ranks) against a Scrapy spider on the same nginx: pages per CPU-second and pages/s.

    .venv/bin/python bench/vs_scrapy.py [--web synthetic|corpus|both] [--runs 5] [--hosts 400] [--pages 20000]
                                       [--delay 0] [--stats] [--profile] [--out bench/results/vs_scrapy.json]

Webs: ``synthetic`` = ``abc-testweb generate --hosts 400 --pages 20000 --seed 1``
(20,442 URLs to request, 400 hosts; generated once under /var/tmp/abc-bench),
``corpus`` = the Debian documentation sites of bench/corpus.py (7 hosts,
~9,650 URLs). Both are served by nginx (bench/nginx.py, 1 worker) on
127.0.0.1 for the whole benchmark.

For ``--runs`` rounds, in an order rotated every round (the machine is
shared, so load drifts): ``mpiexec -n 1 abc-crawl``, ``mpiexec -n 8
abc-crawl`` and ``bench/scrapy_spider.py`` (one process), each crawling the
whole web to the end. Same politeness for all: robots.txt obeyed, one
connection per host, ``--delay`` seconds between batches/requests to a host
(default 0: throughput), 32 hosts in flight per abc rank and in Scrapy, 10 s
timeout. abc-crawl runs with ``--no-stats`` (Scrapy computes no graph
statistics; ``--stats`` turns rank 0's kernels on) and writes its WARC files,
graph and session as usual; Scrapy stores nothing.

Figures: pages = URLs requested (robots.txt excluded; abc: ``requests`` of
stats.json, Scrapy: responses minus robots.txt responses — both crawls request
the same URLs); CPU = user+system seconds of every process of the run
(``getrusage(RUSAGE_CHILDREN)`` delta around the run: mpiexec, hydra, all
ranks, interpreter start-up and session writing included); wall = the run's
wall time, start-up included. Also abc's in-crawl figures (stats.json
``wall_s`` and the ranks' own CPU). nginx's CPU is reported apart.
Medians over the runs. Goal (issue P1): abc ≥ 3 × Scrapy's pages per
CPU-second.

``--profile`` adds one more 1-rank abc-crawl under ``py-spy record`` (250 Hz,
Python frames, idle samples excluded) per web, writes the speedscope file to
bench/results/profile-<web>.speedscope.json and prints the top costs
(self and inclusive time per function, and time per crawler stage).

A default run (synthetic, 5 rounds) takes about 12–25 minutes on the 2-core
machine: Scrapy's five crawls are 3/4 of it.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import harness  # noqa: E402
import nginx  # noqa: E402
from harness import BIN, RESULTS, medians, rotated, run_abc, run_measured, write_result  # noqa: E402

SPIDER = Path(__file__).resolve().parent / "scrapy_spider.py"


def prepare_web(kind: str, a) -> Path:
    if kind == "synthetic":
        return harness.generated_web(a.hosts, a.pages, a.seed, a.port)
    return corpus.prepare(a.corpus_dir, port=8080)


def run_scrapy(web: Path, a, tmp: Path) -> dict:
    stats_file = tmp / f"scrapy-{time.monotonic_ns()}.json"
    cmd = [str(BIN / "python"), str(SPIDER), str(web / "seeds.txt"), "--resolve", str(web / "resolve.txt"),
           "--concurrency", str(a.concurrency), "--delay", str(a.delay), "--stats-out", str(stats_file),
           "--max-seconds", str(a.timeout)]
    r = run_measured(cmd, a.timeout + 60)
    if r["rc"] != 0 or not stats_file.exists():
        raise RuntimeError(f"scrapy failed (status {r['rc']}): {r['stderr'][-3000:]}")
    st = json.loads(stats_file.read_text())
    pages = st["pages"]
    return {"pages": pages, "pages_ok": st.get("downloader/response_status_count/200", 0), "wall_s": r["wall_s"],
            "cpu_s": r["cpu_s"], "pages_per_s": pages / r["wall_s"], "pages_per_cpu_s": pages / r["cpu_s"],
            "crawl_wall_s": st["crawl_wall_s"], "crawl_cpu_s": st["cpu_s"], "robots": st["robots"],
            "max_rss_kb": st["max_rss_kb"], "finish_reason": st.get("finish_reason")}


# -- profile ------------------------------------------------------------------------------------

# crawler stage of a sample: the first frame from the leaf upwards whose function matches
STAGES = [
    ("parse (lxml)", r"^extract_links$"),
    ("canonicalize links", r"^(canonicalize|LinkClassifier\.(targets|classify|target))$"),
    ("route links (owner, seen, report)", r"^Router\.(route|admit_local|record_page)$"),
    ("WARC write", r"^RankWarc\."),
    ("fetch (pycurl)", r"^Fetcher\.|^BatchRunner\.advance$"),
    ("inflate / charset", r"^(inflate|charset_of)$"),
    ("frontier/Bucket scheduling", r"^Frontier\.|^BatchRunner\.start$|^SlotGate\."),
    ("exchange/MPI", r"^(Communicator|SuperstepExchange)\.|^Router\.(payloads|receive|take_report)$|^encode_report$"),
    ("coordinator (rank 0 graph)", r"^Coordinator\.|^KernelWorker\."),
    ("session write", r"^(save_graph|_write_session|atomic_write)"),
    ("robots", r"^Robots"),
    ("checkpoint", r"^(save_checkpoint|save|capture)$"),
    ("start-up (imports)", r"^(_find_and_load|_call_with_frames_removed)$"),
    ("loop bookkeeping (drive, on_answer, process, run)",
     r"^BatchRunner\.(drive|on_answer|process)$|^RankCrawler\.(run|_exchange)$|^PageProcessor\.outcome$"),
]


_STAGE_RX = [(s, re.compile(rx)) for s, rx in STAGES]


def stage_by_name(frames: list[dict], stack: list[int]) -> str:
    """The stage of a sample: the first frame from the leaf upwards whose function matches STAGES."""
    for i in reversed(stack):
        n = frames[i]["name"]
        hit = next((s for s, rx in _STAGE_RX if rx.search(n)), None)
        if hit:
            return hit
    return "other"


def summarize_speedscope(path: Path, top: int = 20) -> dict:
    """Self and inclusive sample shares per function, and per crawler stage, from a py-spy speedscope file."""
    return harness.summarize_speedscope(path, stage_by_name, top)


def profile_abc(web: Path, label: str, extra: list[str], tmp: Path, rate: int = 250) -> dict:
    out = RESULTS / f"profile-{label}.speedscope.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    wrap = [str(BIN / "py-spy"), "record", "-r", str(rate), "-f", "speedscope", "-o", str(out), "--"]
    row = run_abc(1, web, tmp / f"profile-{label}", *extra, wrap=wrap)
    summary = summarize_speedscope(out)
    summary.update({"file": str(out.relative_to(harness.ROOT)), "run": {k: v for k, v in row.items() if not k.startswith("_")}})
    return summary


def print_profile(label: str, s: dict) -> None:
    print(f"\nprofile of one rank ({label}, py-spy, {s['samples']} samples = {s['seconds']} s on CPU; {s['file']}):")
    print("  by crawler stage:        " + ", ".join(f"{k} {v} %" for k, v in s["stages"]))
    print("  top self time:")
    for k, v in s["self"][:12]:
        print(f"    {v:5.1f} %  {k}")
    print("  top self time by line:")
    for k, v in s["self_lines"][:12]:
        print(f"    {v:5.1f} %  {k}")
    print("  top inclusive time:")
    for k, v in s["inclusive"][:16]:
        print(f"    {v:5.1f} %  {k}")


# -- main ---------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--web", choices=["synthetic", "corpus", "both"], default="synthetic")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--hosts", type=int, default=400)
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=18081, help="port of the generated web")
    ap.add_argument("--corpus-dir", default=corpus.DEFAULT_OUT)
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--concurrency", type=int, default=32, help="hosts in flight per abc rank and in Scrapy")
    ap.add_argument("--delay", type=float, default=0.0, help="politeness delay (abc) / DOWNLOAD_DELAY (Scrapy)")
    ap.add_argument("--stats", action="store_true", help="abc-crawl with the graph-statistics kernels on")
    ap.add_argument("--no-scrapy", action="store_true")
    ap.add_argument("--profile", action="store_true", help="one more 1-rank run under py-spy per web")
    ap.add_argument("--timeout", type=float, default=1800.0, help="longest single crawl")
    ap.add_argument("--out", default=str(RESULTS / "vs_scrapy.json"))
    a = ap.parse_args()
    webs = ["synthetic", "corpus"] if a.web == "both" else [a.web]
    print(harness.describe_header("P1: abc-crawl vs Scrapy", ["scrapy", "twisted", "parsel", "py-spy"]), flush=True)
    extra = ["--politeness-delay", str(a.delay), "--concurrency", str(a.concurrency)]
    if not a.stats:
        extra.append("--no-stats")
    configs = [f"abc-{k}" for k in a.ranks] + ([] if a.no_scrapy else ["scrapy"])
    result = {"benchmark": "P1 vs_scrapy", "args": vars(a), "abc_flags": extra, "webs": {}}
    tmp = Path(tempfile.mkdtemp(prefix="abc-vs-scrapy-"))
    try:
        for kind in webs:
            web = prepare_web(kind, a)
            raw: dict[str, list] = {c: [] for c in configs}
            with nginx.serve(web, max_seconds=a.runs * len(configs) * a.timeout + 600) as ng:
                for run in range(a.runs):
                    for cfg in rotated(configs, run):
                        c0 = ng.cpu_seconds()
                        if cfg == "scrapy":
                            row = run_scrapy(web, a, tmp)
                        else:
                            k = int(cfg.split("-")[1])
                            row = run_abc(k, web, tmp / f"{kind}-{cfg}-{run}", *extra, timeout=a.timeout)
                        row["nginx_cpu_s"] = ng.cpu_seconds() - c0
                        raw[cfg].append(row)
                        print(f"[{kind} run {run + 1}/{a.runs}] {cfg:8s} {row['pages']:6d} pages  wall {row['wall_s']:7.1f} s"
                              f"  CPU {row['cpu_s']:7.1f} s  {row['pages_per_s']:7.1f} pages/s"
                              f"  {row['pages_per_cpu_s']:7.1f} pages/CPU-s", flush=True)
                prof = None
                if a.profile:
                    prof = profile_abc(web, kind, extra, tmp)
            med = {c: medians(rows) for c, rows in raw.items()}
            entry = {"web": str(web), "medians": med, "raw": raw}
            if "scrapy" in med:
                base = med["scrapy"]["pages_per_cpu_s"]
                entry["ratio_vs_scrapy"] = {c: med[c]["pages_per_cpu_s"] / base for c in med if c != "scrapy"}
                entry["goal"] = {"target_ratio": 3.0,
                                 "met": {c: r >= 3.0 for c, r in entry["ratio_vs_scrapy"].items()}}
            if prof:
                entry["profile"] = prof
            result["webs"][kind] = entry
            print(f"\n{kind} web ({web}), medians of {a.runs} interleaved runs:")
            print(f"  {'system':10s} {'pages':>7s} {'wall s':>8s} {'CPU s':>8s} {'pages/s':>8s} {'pages/CPU-s':>12s}"
                  f" {'vs Scrapy':>9s}   {'in-crawl pages/s, pages/CPU-s (abc)':s}")
            for c, m in med.items():
                ratio = entry.get("ratio_vs_scrapy", {}).get(c)
                inner = (f"   {m['crawl_pages_per_s']:8.1f} {m['crawl_pages_per_cpu_s']:8.1f}"
                         if c != "scrapy" else "")
                print(f"  {c:10s} {m['pages']:7.0f} {m['wall_s']:8.1f} {m['cpu_s']:8.1f} {m['pages_per_s']:8.1f}"
                      f" {m['pages_per_cpu_s']:12.1f} {('%.2fx' % ratio) if ratio else '':>9s}{inner}")
            print(f"  nginx CPU per crawl (median): {medians([{'x': x['nginx_cpu_s']} for r in raw.values() for x in r])['x']:.1f} s")
            if prof:
                print_profile(kind, prof)
            path = write_result("vs_scrapy", result, a.out)
        print(f"\nwrote {path}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
