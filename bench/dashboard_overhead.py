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

`--micro` measures instead, in one process, the costs the dashboard adds to rank 0: the CPU of
building one snapshot (8 ranks, a coordinator fed 2,000 supersteps of reports, a kernel summary
with long degree histograms), of serializing it (once per snapshot), and of answering one poll
of `/status.json` over a keep-alive connection (the client runs in another process).
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


def micro(rounds: int = 5) -> dict:
    """CPU seconds per snapshot build (main thread) and per /status.json poll (server), medians of rounds."""
    import resource

    import numpy as np

    from abc_crawler.graph.coordinator import Coordinator, Report, encode_report
    from abc_crawler.crawl import STATUS_FIELDS
    from abc_crawler.dashboard.publisher import Dashboard
    from abc_crawler.dashboard.server import Published, StatusServer

    ranks, rng = 8, np.random.default_rng(1)
    co = Coordinator(ranks=ranks)
    for step in range(2000):
        for r in range(ranks):
            sb = [int(x) if d != r else 0 for d, x in enumerate(rng.integers(0, 900, ranks))]
            co.consume(encode_report(Report(rank=r, superstep=step, volume=int(rng.integers(0, 9000)), send_bytes=sb,
                                            send_urls=[1 if b else 0 for b in sb])))
        co.end_superstep(step, 0.5 * step)
    hist = np.maximum(0, (1e5 / np.arange(1, 5001) ** 2)).astype(int).tolist()
    summary = {"nodes": 50000, "edges": 400000, "scc_count": 900, "dangling": 300, "diameter": 18,
               "avg_distance": 6.2, "stats_nodes": 20000, "capped": True, "in_degree_hist": hist,
               "out_degree_hist": hist[:400]}
    co.kernels = type("K", (), {"summary": lambda self: dict(summary)})()
    vit = [json.dumps({"rank": r, "superstep": 1999, "requests": 9000, "pages_ok": 8800, "pages_failed": 200,
                       "bytes": 10 ** 8, "queued": 500, "frontier": 400, "outbox": 50, "in_flight": 50, "idle_s": 30.0,
                       "idle_slot_s": 5.0, "exchange_s": 9.0, "errors": {f"kind_{i}": i for i in range(12)},
                       "hosts": [[f"h{i}.test:80", 900 - i, 100 - i] for i in range(5)]}).encode() for r in range(ranks)]
    status = np.arange(len(STATUS_FIELDS), dtype=np.int64) * 1000
    server = StatusServer(("127.0.0.1", 0), lambda: None)
    dash = Dashboard(server, STATUS_FIELDS, {"session_dir": "s", "ranks": ranks, "assignment": "hash",
                                             "max_pages": None, "time_limit": None, "started": "x"}, ranks,
                     min_interval=0.0)
    dash.start("hash")
    builds, dumps, polls = [], [], []
    t0 = time.monotonic() - 1000
    client = ("import http.client, sys\nc = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]))\n"
              "for i in range(300):\n    c.request('GET', '/status.json'); c.getresponse().read()\n")
    try:
        for _ in range(rounds):
            c = time.process_time()
            for _ in range(200):
                dash.publish(1999, status, vit, co, t0)
            builds.append((time.process_time() - c) / 200)
            ru = resource.getrusage(resource.RUSAGE_SELF)
            subprocess.run([sys.executable, "-c", client, str(server.address[1])], check=True, timeout=300)
            ru2 = resource.getrusage(resource.RUSAGE_SELF)
            polls.append((ru2.ru_utime + ru2.ru_stime - ru.ru_utime - ru.ru_stime) / 300)   # the JSON cached
            c = time.process_time()
            for i in range(200):
                Published(i, server.latest.data).json_bytes()
            dumps.append((time.process_time() - c) / 200)
    finally:
        server.close()
    size = len(server.latest.json_bytes())
    return {"build_cpu_s": statistics.median(builds), "json_cpu_s": statistics.median(dumps),
            "poll_cpu_s": statistics.median(polls), "status_json_bytes": size, "builds": builds, "dumps": dumps,
            "polls": polls}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=0.0, help="stop each crawl after this many seconds (0: "
                    "crawl the whole web)")
    ap.add_argument("--extra", default="--stats-max-pages 2000", help="more abc-crawl flags for every run")
    ap.add_argument("--micro", action="store_true", help="measure the CPU of one snapshot build and one poll instead")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.micro:
        m = micro()
        print(f"snapshot build: {1000 * m['build_cpu_s']:.2f} ms CPU (main thread); its JSON "
              f"({m['status_json_bytes']:,} bytes): {1000 * m['json_cpu_s']:.2f} ms (once per snapshot); one poll of "
              f"/status.json: {1000 * m['poll_cpu_s']:.2f} ms CPU (server thread, keep-alive)")
        print(f"wrote {write_result('dashboard_micro', {'micro': m}, a.out)}")
        return 0
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
    pooled = {m: sum(p[m]["rank0_requests"] for p in pairs) / sum(p[m]["rank0_cpu_s"] for p in pairs)
              for m in ("on", "off")}
    print(f"median ratio with / without: {med:.3f} (range {min(ratios):.3f}-{max(ratios):.3f}); "
          f"{'within' if abs(med - 1) <= 0.05 else 'NOT within'} 5 %; pooled over the pairs "
          f"{pooled['on'] / pooled['off']:.3f} ({pooled['on']:.1f} against {pooled['off']:.1f} pages/CPU-s)")
    path = write_result("dashboard_overhead", {"args": vars(a), "pairs": pairs, "median_ratio": med,
                                               "ratios": ratios, "pooled": pooled}, a.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
