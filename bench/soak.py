"""Soak: an 8-rank crawl of at least 30 minutes ends normally, with memory and rate over time.

    .venv/bin/python bench/soak.py [--minutes 30] [--ranks 8] [--hosts 2000] [--pages 1000000]
                                   [--sample-seconds 10] [--out bench/results/soak.json]
    .venv/bin/python bench/soak.py --analyze SESSION     # the per-host windows of a finished crawl

One large generated web (default 2,000 hosts, 1,000,000 pages, Zipf host sizes; generated once
under ``$ABC_BENCH_DATA``, about 9.5 GB) served by nginx on loopback, crawled by ``mpiexec -n 8
abc-crawl --time-limit MINUTES*60`` with every other setting at its default (a politeness delay of
1 s per request, phase slots, statistics kernels, checkpoints every 10 s, WARC files). The web is larger than the
crawl can fetch in that time, so the crawl runs for the whole limit and ends with ``"stopped":
"time-limit"``.

Every ``--sample-seconds`` the script reads each rank's resident memory (``/proc/PID/status``
VmRSS) and the crawl's progress line (requests, frontier). It prints a row per 5 minutes — the
requests and the rate over those 5 minutes, the frontier, the ranks' RSS (rank 0 apart: it also
holds the crawled graph) and the RSS of all ranks per known URL (requests + frontier) — and
finally whether the crawl ended normally (exit status 0, ``stopped`` = ``time-limit``, no
``errors/`` record), its supersteps and stats.json's totals. The issue's goal: no growth in
memory per known URL, and no decay in rate beyond what the frontier explains — for that it
prints, per 5 minutes, the hosts fetched and the busiest hosts' rates (:func:`host_windows`).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import nginx  # noqa: E402

PROGRESS = re.compile(r"\[\s*([\d.]+)s\] step\s+(\d+) \| (\d+) req .*?\| frontier (\d+)")


def rss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def rank_pids(session: Path) -> dict[int, int]:
    """rank -> pid of the crawl's rank processes (MPICH sets PMI_RANK in their environment)."""
    out = subprocess.run(["pgrep", "-f", "--", str(session)], capture_output=True, text=True).stdout.split()
    ranks = {}
    for p in out:
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
            env = Path(f"/proc/{p}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"mpiexec"):
            continue
        for e in env:
            if e.startswith(b"PMI_RANK="):
                ranks[int(e.split(b"=")[1])] = int(p)
    return ranks


def host_windows(session: Path, minutes: float = 5.0) -> list[dict]:
    """What the frontier explains: per window of ``minutes`` (from the first record), the records
    stored per second, the hosts fetched, and the five busiest hosts' records per second — read
    from the session's CDXJ indexes (one line per WARC record: its host and its 14-digit date, so
    one-second resolution). A crawl whose rate falls because hosts run out of work shows fewer
    hosts and the busiest still at their politeness-bound rate; a crawler slowing down would show
    the busiest hosts' rate falling too."""
    import datetime
    from collections import Counter, defaultdict
    from urllib.parse import urlsplit

    from abc_crawler.store.cdxj import read_index

    times: list[tuple[float, str]] = []
    for f in sorted((session / "warc").glob("*.cdxj")):
        for line in read_index(f):
            _, ts, fields = line.split(" ", 2)
            host = urlsplit(json.loads(fields)["url"]).hostname
            dt = datetime.datetime.strptime(ts, "%Y%m%d%H%M%S").replace(tzinfo=datetime.timezone.utc)
            times.append((dt.timestamp(), host))
    if not times:
        return []
    t0 = min(t for t, _ in times)
    span = minutes * 60
    wins: dict[int, Counter] = defaultdict(Counter)
    for t, h in times:
        wins[int((t - t0) // span)][h] += 1
    rows = []
    for w in sorted(wins):
        c = wins[w]
        rows.append({"minutes": [round(w * minutes, 1), round((w + 1) * minutes, 1)],
                     "records_per_s": round(sum(c.values()) / span, 1), "hosts": len(c),
                     "top5_per_s": [round(v / span, 1) for _, v in c.most_common(5)]})
    return rows


def print_host_windows(rows: list[dict]) -> None:
    print(f"\n{'minutes':>9} {'records/s':>10} {'hosts fetched':>14}  busiest 5 hosts, records/s")
    for r in rows:
        a, b = r["minutes"]
        print(f"{a:4.0f}-{b:<4.0f} {r['records_per_s']:10.1f} {r['hosts']:14d}  {r['top5_per_s']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--pages", type=int, default=1_000_000)
    ap.add_argument("--sample-seconds", type=float, default=10.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--analyze", metavar="SESSION", default=None,
                    help="only print the per-host windows of an existing session (its CDXJ indexes)")
    args = ap.parse_args(argv)
    if args.analyze:
        session = Path(args.analyze)
        if not (session / "warc").is_dir():
            ap.error(f"--analyze: {session} has no warc/ directory (not a crawl session)")
        print_host_windows(host_windows(session))
        return 0
    print(harness.describe_header(f"soak: {args.ranks} ranks, {args.minutes:g} min, "
                                  f"{args.hosts} hosts / {args.pages} pages, nginx"), flush=True)
    web = harness.generated_web(args.hosts, args.pages, seed=7, port=18091)
    session = harness.DATA / "soak-session"
    shutil.rmtree(session, ignore_errors=True)
    limit = args.minutes * 60
    cmd = harness.abc_command(args.ranks, web, session, "--time-limit", str(limit), "--progress-seconds",
                              str(args.sample_seconds))
    samples: list[dict] = []
    progress: list[tuple[float, int, int, int]] = []
    with nginx.serve(web, max_seconds=limit + 3600):
        harness.ensure_bytecode()
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        tail: list[str] = []

        def read_err() -> None:
            for line in proc.stderr:
                m = PROGRESS.search(line)
                if m:
                    progress.append((float(m[1]), int(m[2]), int(m[3]), int(m[4])))
                else:
                    tail.append(line)
                    del tail[:-200]

        reader = threading.Thread(target=read_err, daemon=True)
        reader.start()
        pids: dict[int, int] = {}
        while proc.poll() is None:
            time.sleep(args.sample_seconds)
            if len(pids) < args.ranks:
                pids = rank_pids(session)
            rss = {r: rss_kb(p) for r, p in sorted(pids.items())}
            last = progress[-1] if progress else (0.0, 0, 0, 0)
            samples.append({"t": round(time.monotonic() - t0, 1), "rss_kb": rss, "requests": last[2],
                            "frontier": last[3], "supersteps": last[1]})
        rc = proc.wait()
        reader.join(timeout=10)
    stats = json.loads((session / "stats.json").read_text()) if (session / "stats.json").exists() else {}
    crashed = sorted(p.name for p in (session / "errors").glob("*")) if (session / "errors").exists() else []
    normal = rc == 0 and stats.get("stopped") == "time-limit" and not crashed
    print(f"\nended normally: {normal} (exit {rc}, stopped {stats.get('stopped')}, crash records {crashed or 'none'})")
    print(f"{'min':>5} {'requests':>9} {'pages/s':>8} {'frontier':>9} {'rank0 MB':>9} {'others MB min/med/max':>22} "
          f"{'B/known URL':>12}")
    rows = []
    step = max(1, int(300 / args.sample_seconds))
    base = samples[0] if samples else None
    for i in range(step - 1, len(samples), step):
        s = samples[i]
        prev = samples[i - step] if i >= step else {"t": 0.0, "requests": 0}
        rate = (s["requests"] - prev["requests"]) / max(1e-9, s["t"] - prev["t"])
        r = {k: v for k, v in s["rss_kb"].items() if v is not None}
        others = sorted(v for k, v in r.items() if k != 0)
        known = s["requests"] + s["frontier"]
        per_url = (sum(r.values()) - sum(v for v in base["rss_kb"].values() if v)) * 1024 / known if known and base else 0
        row = {"minute": round(s["t"] / 60, 1), "requests": s["requests"], "pages_per_s": round(rate, 1),
               "frontier": s["frontier"], "rank0_mb": round(r.get(0, 0) / 1024, 1),
               "others_mb": [round(others[0] / 1024, 1), round(others[len(others) // 2] / 1024, 1),
                             round(others[-1] / 1024, 1)] if others else [],
               "bytes_per_known_url": round(per_url, 1)}
        rows.append(row)
        o = row["others_mb"]
        print(f"{row['minute']:5.1f} {row['requests']:9d} {row['pages_per_s']:8.1f} {row['frontier']:9d} "
              f"{row['rank0_mb']:9.1f} {'/'.join(f'{x:.0f}' for x in o):>22} {row['bytes_per_known_url']:12.1f}")
    if stats:
        print(f"\nsupersteps {stats['exchange']['supersteps']}, requests {stats['requests']}, pages "
              f"{stats['pages_crawled']}, wall {stats['wall_s']:.0f} s, cpu {stats['cpu_s']:.0f} s, "
              f"errors {sum(stats['errors'].values())}, max RSS per rank (MB) "
              f"{[round(p['max_rss_kb'] / 1024) for p in stats['per_rank']]}")
    if not normal:
        print("".join(tail[-30:]))
    hosts = host_windows(session)
    print_host_windows(hosts)
    path = harness.write_result("soak", {"args": vars(args), "ended_normally": normal, "rc": rc,
                                         "host_windows": hosts,
                                         "stopped": stats.get("stopped"), "rows": rows, "samples": samples,
                                         "supersteps": stats.get("exchange", {}).get("supersteps"),
                                         "requests": stats.get("requests"), "wall_s": stats.get("wall_s")},
                                args.out)
    print(f"result: {path}")
    return 0 if normal else 1


if __name__ == "__main__":
    sys.exit(main())
