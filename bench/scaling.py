"""P3: scaling with the number of ranks when every request takes 20 ms longer (I/O-bound crawl).

    .venv/bin/python bench/scaling.py [--ranks 1 2 4 8] [--concurrency 2] [--latency 0.02] [--runs 5]
                                     [--time-limit 40] [--assign hash] [--server testweb|nginx]
                                     [--hosts 400] [--pages 200000] [--out bench/results/scaling.json]

One generated web (default 400 hosts, 200,000 pages), served with ``--latency``
seconds added to every response. The web must stay wide for the whole run: the
measure is how ranks scale while the network is the bottleneck, not how a
finite web runs dry. On the earlier default of 50,000 pages the 8-rank crawl
had fetched 23,396 of the 40,180 URLs it knew by 40 s, and the rest sat on few
hosts (median 7 per host, 69 % on the 10 largest): after about 30 s the ranks
whose phase held none of the big hosts idled and 8 ranks fell from 650-670 to
~500 pages/s (session 5). Each run prints its pages/s per 10 s and how thin
its frontier was at the end (known URLs left, on how many hosts), so a web
that runs thin shows. Served:

* ``--server testweb`` (default): ``abc-testweb serve --latency 0.02`` — the
  embedded asyncio server holds each response back (``call_later``) without
  blocking other connections;
* ``--server nginx``: nginx behind bench/nginx.py's delay relay (nginx cannot
  delay a response by itself; the relay holds each request 20 ms).

For ``--runs`` rounds, in an order rotated every round: ``mpiexec -n K
abc-crawl --concurrency C --time-limit T --no-stats --politeness-delay 0`` for
every K of ``--ranks``: the same per-rank concurrency C (hosts in flight per
rank), so K ranks have K·C requests in flight. Figures per K: pages/s over
the crawl (stats.json requests / wall_s), the steady-state rate (responses
processed after ``--warmup`` seconds, from exchange.npz), CPU seconds of all
ranks (and the server's), the ranks' idle time waiting for their phase; the
speed-up = pages/s(K) / pages/s(1). Goal (issue P3): 8 ranks ≥ 7.2 × 1 rank.

On 2 cores the goal can only be reached while the crawl stays I/O-bound: K
ranks need K × (pages/s of one rank) / (pages per CPU-second) cores. With the
default C = 2 one rank asks for at most C / latency = 100 pages/s, and eight
for 800 pages/s, about 1.2 cores at ~700 pages per CPU-second; the script
prints that CPU demand beside the speed-up. A default run takes about 16
minutes (32 with ``--assign hash site-hash``), plus about 2 minutes once to
generate the web (1.9 GB under ``$ABC_BENCH_DATA``, default /var/tmp/abc-bench).
"""
from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import nginx  # noqa: E402
from harness import BIN, RESULTS, medians, rotated, run_abc, write_result  # noqa: E402
from nginx import proc_tree_cpu  # noqa: E402


class TestWeb:
    """``abc-testweb serve --latency`` under coreutils timeout (stops by itself)."""

    def __init__(self, web: Path, latency: float, max_seconds: float):
        self.web, self.latency, self.max_seconds = web, latency, max_seconds
        self.proc: subprocess.Popen | None = None

    def __enter__(self):
        ready = Path(tempfile.mkdtemp(prefix="abc-scaling-ready-")) / "ready.json"
        self.proc = subprocess.Popen(["timeout", "--kill-after=5", str(int(self.max_seconds)), str(BIN / "abc-testweb"),
                                      "serve", str(self.web), "--latency", str(self.latency), "--ready-file", str(ready),
                                      "--max-seconds", str(int(self.max_seconds))], stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError("abc-testweb serve did not start")
            time.sleep(0.05)
        shutil.rmtree(ready.parent, ignore_errors=True)
        return self

    def cpu_seconds(self) -> float:
        return proc_tree_cpu(self.proc.pid) if self.proc and self.proc.poll() is None else 0.0

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def steady_rate(exchange: Path, warmup: float) -> float | None:
    with np.load(exchange) as z:
        t, pages = z["step_t"], z["step_pages"].sum(axis=1)
    idx = np.flatnonzero(t >= warmup)
    if len(idx) < 2:
        return None
    a, b = idx[0], idx[-1]
    return float(pages[a + 1:b + 1].sum() / (t[b] - t[a])) if t[b] > t[a] else None


def window_rates(exchange: Path, width: float, limit: float) -> list[float]:
    """Pages/s of all ranks in consecutive windows of ``width`` seconds of crawl time (from the
    superstep times and counts: cumulative pages at the first superstep at or after each edge)."""
    with np.load(exchange) as z:
        t, pages = z["step_t"], np.cumsum(z["step_pages"].sum(axis=1))
    out = []
    edges = np.arange(0.0, limit + 1e-9, width)
    for a, b in zip(edges[:-1], edges[1:]):
        ia, ib = np.searchsorted(t, a), min(np.searchsorted(t, b), len(t) - 1)
        if ib <= ia:
            out.append(0.0)
            continue
        before = pages[ia - 1] if ia > 0 else 0
        out.append(float((pages[ib] - before) / (t[ib] - (t[ia - 1] if ia > 0 else 0.0))))
    return out


def pending_hosts(session: Path) -> dict:
    """Known but unfetched URLs at the end, by host: how thin the frontier had become."""
    from collections import Counter

    from abc_crawler.store.session import load_graph
    from abc_crawler.web.urls import host_of

    g = load_graph(session)
    pend = Counter(host_of(u) for u, r in zip(g.urls, g.url_rank.tolist()) if u and r < 0)
    n = sum(pend.values())
    top = sum(c for _, c in pend.most_common(10))
    return {"known": len(g.urls), "fetched": int((g.url_rank >= 0).sum()), "pending": n,
            "hosts_with_pending": len(pend), "median_pending_per_host": float(np.median(list(pend.values()))) if pend else 0.0,
            "top10_hosts_share": top / n if n else 0.0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--concurrency", type=int, default=2, help="hosts in flight per rank (the same for every K)")
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--time-limit", type=float, default=40.0)
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds left out of the steady-state rate")
    ap.add_argument("--assign", nargs="+", default=["hash"], help="assignments to run (hash, site-hash)")
    ap.add_argument("--server", choices=["testweb", "nginx"], default="testweb")
    ap.add_argument("--hosts", type=int, default=400)
    ap.add_argument("--pages", type=int, default=200000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=18082)
    ap.add_argument("--extra", default="", help="more abc-crawl flags, space-separated")
    ap.add_argument("--profile", action="store_true",
                    help="one more 1-rank run (first --assign) under py-spy: where an I/O-bound rank spends its CPU")
    ap.add_argument("--out", default=str(RESULTS / "scaling.json"))
    a = ap.parse_args()
    print(harness.describe_header("P3: scaling with 20 ms per request"), flush=True)
    web = harness.generated_web(a.hosts, a.pages, a.seed, a.port)
    configs = [(assign, k) for assign in a.assign for k in a.ranks]
    raw: dict[str, list] = {f"{s}/{k}": [] for s, k in configs}
    budget = a.runs * len(configs) * (a.time_limit + 120) + 600
    server = (TestWeb(web, a.latency, budget) if a.server == "testweb"
              else nginx.Nginx(web, delay=a.latency, max_seconds=budget))
    tmp = Path(tempfile.mkdtemp(prefix="abc-scaling-"))
    try:
        with server as srv:
            for run in range(a.runs):
                for assign, k in rotated(configs, run):
                    session = tmp / f"{assign}-{k}-{run}"
                    flags = ["--no-stats", "--politeness-delay", "0", "--concurrency", str(a.concurrency),
                             "--time-limit", str(a.time_limit), "--assign", assign, *a.extra.split()]
                    s0 = srv.cpu_seconds()
                    row = run_abc(k, web, session, *flags, timeout=a.time_limit + 600, keep=True)
                    row["server_cpu_s"] = srv.cpu_seconds() - s0
                    row["steady_pages_per_s"] = steady_rate(session / "exchange.npz", a.warmup)
                    row["rank_cpu_s"] = row["crawl_cpu_s"]
                    row["cores_used"] = (row["cpu_s"] + row["server_cpu_s"]) / row["wall_s"]
                    row["idle_phase_s_mean"] = float(np.mean(row["idle_phase_s"]))
                    row["window_pages_per_s"] = window_rates(session / "exchange.npz", 10.0, a.time_limit)
                    row["end_frontier"] = pending_hosts(session)
                    shutil.rmtree(session, ignore_errors=True)
                    raw[f"{assign}/{k}"].append(row)
                    print(f"[run {run + 1}/{a.runs}] {assign:9s} K={k}  {row['pages']:6d} pages in {row['crawl_wall_s']:5.1f} s"
                          f"  {row['crawl_pages_per_s']:7.1f} pages/s (steady {row['steady_pages_per_s'] or 0:7.1f})"
                          f"  CPU ranks {row['crawl_cpu_s']:5.1f} s, all {row['cpu_s']:5.1f} s, server {row['server_cpu_s']:4.1f} s"
                          f"  idle-phase {row['idle_phase_s_mean']:4.1f} s/rank", flush=True)
                    ef = row["end_frontier"]
                    print(f"        pages/s per 10 s: {' '.join(f'{x:6.1f}' for x in row['window_pages_per_s'])};"
                          f" at the end {ef['fetched']} of {ef['known']} known URLs fetched, {ef['pending']} pending on"
                          f" {ef['hosts_with_pending']} hosts (median {ef['median_pending_per_host']:.0f},"
                          f" top 10 hosts {100 * ef['top10_hosts_share']:.0f} %)", flush=True)
            prof = None
            if a.profile:
                import vs_scrapy

                out = RESULTS / "profile-scaling-1rank.speedscope.json"
                wrap = [str(BIN / "py-spy"), "record", "-r", "250", "-f", "speedscope", "-o", str(out), "--"]
                flags = ["--no-stats", "--politeness-delay", "0", "--concurrency", str(a.concurrency),
                         "--time-limit", str(a.time_limit), "--assign", a.assign[0], *a.extra.split()]
                prow = run_abc(1, web, tmp / "profile", *flags, timeout=a.time_limit + 600, wrap=wrap)
                prof = vs_scrapy.summarize_speedscope(out)
                prof["file"] = str(out.relative_to(harness.ROOT))
                prof["run"] = {k: v for k, v in prow.items() if not k.startswith("_")}
        med = {key: medians(rows) for key, rows in raw.items()}
        result = {"benchmark": "P3 scaling", "web": str(web), "args": vars(a), "medians": med, "raw": raw,
                  "speedup": {}, "goal": {"target_speedup_8": 7.2}}
        print(f"\nmedians of {a.runs} interleaved runs; per-rank concurrency {a.concurrency}, latency "
              f"{a.latency * 1000:.0f} ms, server {a.server}, time limit {a.time_limit:.0f} s:")
        print(f"  {'assign':9s} {'K':>2s} {'pages/s':>8s} {'speed-up':>8s} {'steady/s':>8s} {'speed-up':>8s}"
              f" {'ideal/s':>8s} {'cores used':>10s} {'pages/CPU-s':>11s} {'idle-phase s':>12s}")
        for assign in a.assign:
            base = med[f"{assign}/{a.ranks[0]}"]
            for k in a.ranks:
                m = med[f"{assign}/{k}"]
                sp = m["crawl_pages_per_s"] / base["crawl_pages_per_s"]
                ss = (m.get("steady_pages_per_s") or 0) / (base.get("steady_pages_per_s") or 1)
                result["speedup"][f"{assign}/{k}"] = {"crawl": sp, "steady": ss}
                ideal = k * a.concurrency / a.latency
                print(f"  {assign:9s} {k:2d} {m['crawl_pages_per_s']:8.1f} {sp:7.2f}x {m.get('steady_pages_per_s', 0):8.1f}"
                      f" {ss:7.2f}x {ideal:8.0f} {m['cores_used']:10.2f} {m['crawl_pages_per_cpu_s']:11.1f}"
                      f" {m['idle_phase_s_mean']:12.1f}")
            if 8 in a.ranks:
                s8 = result["speedup"][f"{assign}/8"]["crawl"]
                result["goal"][assign] = {"speedup_8": s8, "met": s8 >= 7.2}
                print(f"  {assign}: 8 ranks = {s8:.2f} x 1 rank: goal 7.2x {'met' if s8 >= 7.2 else 'missed'}")
        if prof:
            result["profile"] = prof
            import vs_scrapy

            vs_scrapy.print_profile(f"1 rank, C={a.concurrency}, {a.latency * 1000:.0f} ms", prof)
        path = write_result("scaling", result, a.out)
        print(f"wrote {path}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
