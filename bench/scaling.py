"""P3: scaling with the number of ranks when every request takes 20 ms longer (I/O-bound crawl).

    .venv/bin/python bench/scaling.py [--ranks 1 2 4 8] [--concurrency 2] [--latency 0.02] [--runs 5]
                                     [--time-limit 40] [--assign hash] [--server testweb|nginx]
                                     [--hosts 400] [--pages 50000] [--out bench/results/scaling.json]

One generated web (default 400 hosts, 50,000 pages: no run exhausts it within
the time limit), served with ``--latency`` seconds added to every response:

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
prints that CPU demand beside the speed-up. A default run takes about 11
minutes (22 with ``--assign hash site-hash``).
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

import nginx  # noqa: E402
from nginx import BIN, RESULTS, medians, proc_tree_cpu, rotated, run_abc, write_result  # noqa: E402


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


def steady_rate(session_stats: dict, exchange: Path, warmup: float) -> float | None:
    with np.load(exchange) as z:
        t, pages = z["step_t"], z["step_pages"].sum(axis=1)
    idx = np.flatnonzero(t >= warmup)
    if len(idx) < 2:
        return None
    a, b = idx[0], idx[-1]
    return float(pages[a + 1:b + 1].sum() / (t[b] - t[a])) if t[b] > t[a] else None


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
    ap.add_argument("--pages", type=int, default=50000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=18082)
    ap.add_argument("--extra", default="", help="more abc-crawl flags, space-separated")
    ap.add_argument("--profile", action="store_true",
                    help="one more 1-rank run (first --assign) under py-spy: where an I/O-bound rank spends its CPU")
    ap.add_argument("--out", default=str(RESULTS / "scaling.json"))
    a = ap.parse_args()
    print(nginx.describe_header("P3: scaling with 20 ms per request"), flush=True)
    web = nginx.generated_web(a.hosts, a.pages, a.seed, a.port)
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
                    row["steady_pages_per_s"] = steady_rate(row["_stats"], session / "exchange.npz", a.warmup)
                    row["rank_cpu_s"] = row["crawl_cpu_s"]
                    row["cores_used"] = (row["cpu_s"] + row["server_cpu_s"]) / row["wall_s"]
                    row["idle_phase_s_mean"] = float(np.mean(row["idle_phase_s"]))
                    shutil.rmtree(session, ignore_errors=True)
                    raw[f"{assign}/{k}"].append(row)
                    print(f"[run {run + 1}/{a.runs}] {assign:9s} K={k}  {row['pages']:6d} pages in {row['crawl_wall_s']:5.1f} s"
                          f"  {row['crawl_pages_per_s']:7.1f} pages/s (steady {row['steady_pages_per_s'] or 0:7.1f})"
                          f"  CPU ranks {row['crawl_cpu_s']:5.1f} s, all {row['cpu_s']:5.1f} s, server {row['server_cpu_s']:4.1f} s"
                          f"  idle-phase {row['idle_phase_s_mean']:4.1f} s/rank", flush=True)
            prof = None
            if a.profile:
                import vs_scrapy

                out = RESULTS / "profile-scaling-1rank.speedscope.json"
                wrap = [str(BIN / "py-spy"), "record", "-r", "250", "-f", "speedscope", "-o", str(out), "--"]
                flags = ["--no-stats", "--politeness-delay", "0", "--concurrency", str(a.concurrency),
                         "--time-limit", str(a.time_limit), "--assign", a.assign[0], *a.extra.split()]
                prow = run_abc(1, web, tmp / "profile", *flags, timeout=a.time_limit + 600, wrap=wrap)
                prof = vs_scrapy.summarize_speedscope(out)
                prof["file"] = str(out.relative_to(nginx.ROOT))
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
