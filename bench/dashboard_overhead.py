"""What `--dashboard` costs rank 0: 8-rank crawls with and without it, the dashboard polled every second.

    .venv/bin/python bench/dashboard_overhead.py [--ranks 8] [--hosts 200] [--pages 20000] [--pairs 3]
                                                 [--time-limit S] [--extra "--stats-max-pages 2000"]

One generated web served by nginx on loopback (`make bench-setup` installs it), crawled whole
with the default settings (and `--extra`; by default the exact kernels are capped at 2,000
pages so that a run does not end with minutes of catching up on a busy machine). Each pair runs
the same crawl twice, once plain and once with `--dashboard 127.0.0.1:0` while a client fetches
`/status.json` every second (what the page does, at twice its default rate; the page draws its
charts itself); the order within a pair alternates. A whole crawl gives rank 0 the same pages every
time (hash assignment), so the pair differs only in the CPU it took. The figure is rank 0's
pages per CPU-second (`stats.json` per_rank[0]: requests / cpu_s; cpu_s covers every thread of
rank 0 — the server's, the kernels' — up to the end of the crawl loop), compared within each
pair; the script prints every pair, the median ratio with / without and the range, and writes
`bench/results/dashboard_overhead.json`.
"""
from __future__ import annotations

import argparse
import http.client
import json
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import abc_command, describe_header, ensure_bytecode, generated_web, rotated, write_result  # noqa: E402
from nginx import serve  # noqa: E402



class Poller(threading.Thread):
    """Every ``interval`` s: GET /status.json (over one keep-alive connection, as a browser does)."""

    def __init__(self, url: str, interval: float = 1.0):
        super().__init__(daemon=True)
        self.url, self.interval = url, interval
        self.polls = self.errors = self.bytes = 0
        self.done = threading.Event()

    def run(self) -> None:
        host, port = urllib.parse.urlsplit(self.url)[1].rsplit(":", 1)
        conn = None
        while not self.done.wait(self.interval):
            try:
                conn = conn or http.client.HTTPConnection(host, int(port), timeout=5)
                conn.request("GET", "/status.json")
                body = conn.getresponse().read()
                json.loads(body)
                self.bytes += len(body)
                self.polls += 1
            except (OSError, http.client.HTTPException):
                self.errors += 1          # the crawl has ended (or not started serving yet)
                conn = None


def run(ranks: int, web: Path, session: Path, dashboard: bool, extra: list[str], timeout: float) -> dict:
    ensure_bytecode()
    args = [*extra, *(["--dashboard", "127.0.0.1:0"] if dashboard else [])]
    proc = subprocess.Popen(abc_command(ranks, web, session, *args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    err: list[str] = []
    poller = None
    try:
        for line in proc.stderr:
            err.append(line)
            m = re.search(r"dashboard (http://\S+) stop token", line)
            if m:
                poller = Poller(m.group(1))
                poller.start()
                break
            if line.startswith("abc-crawl: ") and "rank(s)" in line and not dashboard:
                break
        err.append(proc.stderr.read())
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if poller is not None:
            poller.done.set()
            poller.join(timeout=10)
    if proc.returncode != 0 or not (session / "stats.json").exists():
        raise RuntimeError(f"abc-crawl failed ({proc.returncode}): {''.join(err)[-3000:]}")
    st = json.loads((session / "stats.json").read_text())
    r0 = st["per_rank"][0]
    shutil.rmtree(session, ignore_errors=True)
    return {"dashboard": dashboard, "rank0_requests": r0["requests"], "rank0_pages": r0["pages"], "rank0_cpu_s": r0["cpu_s"],
            "rank0_pages_per_cpu_s": r0["requests"] / r0["cpu_s"], "requests": st["requests"], "wall_s": st["wall_s"],
            "stopped": st["stopped"], "polls": poller.polls if poller else 0,
            "poll_errors": poller.errors if poller else 0, "polled_bytes": poller.bytes if poller else 0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=0.0, help="stop each crawl after this many seconds (0: "
                    "crawl the whole web)")
    ap.add_argument("--extra", default="--stats-max-pages 2000", help="more abc-crawl flags for every run")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    print(describe_header(f"--dashboard overhead: {a.ranks} ranks, {a.pairs} pairs, polled every second"))
    web = generated_web(a.hosts, a.pages)
    extra = [*(["--time-limit", str(a.time_limit)] if a.time_limit > 0 else []), *shlex.split(a.extra)]
    tmp = Path(tempfile.mkdtemp(prefix="abc-dashbench-"))
    pairs = []
    with serve(web):
        for i in range(a.pairs):
            pair = {}
            for dash in rotated([False, True], i):
                row = run(a.ranks, web, tmp / f"s{i}-{int(dash)}", dash, extra, 1800)
                pair["on" if dash else "off"] = row
                time.sleep(1)
            pair["ratio"] = pair["on"]["rank0_pages_per_cpu_s"] / pair["off"]["rank0_pages_per_cpu_s"]
            pairs.append(pair)
            off, on = pair["off"], pair["on"]
            print(f"pair {i + 1}: rank 0 pages/CPU-s without {off['rank0_pages_per_cpu_s']:.1f} "
                  f"({off['rank0_requests']} in {off['rank0_cpu_s']:.2f} s), with {on['rank0_pages_per_cpu_s']:.1f} "
                  f"({on['rank0_requests']} in {on['rank0_cpu_s']:.2f} s, {on['polls']} polls); "
                  f"ratio {pair['ratio']:.3f}", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    ratios = [p["ratio"] for p in pairs]
    med = statistics.median(ratios)
    print(f"median ratio with / without: {med:.3f} (range {min(ratios):.3f}-{max(ratios):.3f}); "
          f"{'within' if abs(med - 1) <= 0.05 else 'NOT within'} 5 %")
    path = write_result("dashboard_overhead", {"args": vars(a), "pairs": pairs, "median_ratio": med,
                                               "ratios": ratios}, a.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
