"""Frontier cost per response at 10k / 100k / 1M pending URLs: window scan (before) vs per-host queues.

    .venv/bin/python bench/frontier_micro.py [--sizes 10000 100000 1000000] [--responses 300] [--rounds 3]
                                            [--out bench/results/frontier_micro.json]

Both implementations run in one process, interleaved (order rotated each round):
``scan`` is the Frontier of commit ebe161a (``tests/frontier_scan.py``, a
verbatim copy: ``schedule`` scans every IN_LIST URL of the window), ``queues``
is ``abc_crawler.sched.frontier.Frontier`` (per-host FIFOs, marked hosts, heaps).
Crawler defaults: 199 × 8 Bucket, L = 16, window 250,000, flush 0.05 s,
concurrency 32, no politeness delay (as in P2).

Set-up (not timed): N URLs on 1,000 hosts (synthetic style), one ``schedule``.
Then ``--responses`` simulated responses, each doing what ``RankCrawler`` does
per response: ``complete`` the URL, ``add`` 5 new URLs (new links on random
hosts), ``finish`` the element when its batch is done, then
``_start_batches``: ``schedule(now)`` and ``ready(now, limit=free slots)``.
Figures: CPU µs per response (``time.process_time``), split into schedule,
ready and add+complete+finish; medians over ``--rounds``.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _url(i: int) -> tuple[str, str]:
    h = f"h{i % 1000:03d}.test:18081"
    return f"http://{h}/d{(i // 1000) % 8}/d{(i // 8000) % 8}/p{i}.html", h


def run_one(cls, n: int, responses: int, seed: int = 1) -> dict:
    rng = random.Random(seed)
    f = cls(n_columns=199, n_rows=8, batch_urls=16, window=250_000, flush_seconds=0.05)
    for i in range(n):
        f.add(*_url(i))
    now = 0.0
    f.schedule(now)
    batches: list = []        # [element, remaining url indices]
    next_id = n
    t_sched = t_ready = t_other = 0.0
    pt = time.process_time
    for _ in range(responses):
        # _start_batches
        t0 = pt()
        f.schedule(now)
        t1 = pt()
        free = 32 - len(batches)
        if free > 0:
            for e in f.ready(now, limit=free):
                batches.append([e, list(e.urls)])
        t2 = pt()
        t_sched += t1 - t0
        t_ready += t2 - t1
        if not batches:
            now += 0.05
            continue
        # one response: complete its URL, its links come in, the batch may end
        t0 = pt()
        b = batches[rng.randrange(len(batches))]
        f.complete(b[1].pop())
        for _ in range(5):
            f.add(*_url(rng.randrange(1000) + 1000 * next_id))
            next_id += 1
        if not b[1]:
            batches.remove(b)
            f.finish(b[0], now, 0.0)
        t_other += pt() - t0
        now += 0.001
    per = 1e6 / responses
    return {"schedule_us": t_sched * per, "ready_us": t_ready * per, "other_us": t_other * per,
            "total_us": (t_sched + t_ready + t_other) * per}


def main() -> int:
    from frontier_scan import Frontier as ScanFrontier

    from abc_crawler.sched.frontier import Frontier

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--responses", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "frontier_micro.json"))
    a = ap.parse_args()
    impls = {"scan": ScanFrontier, "queues": Frontier}
    raw: dict[str, list] = {}
    for rnd in range(a.rounds):
        for n in a.sizes:
            order = list(impls) if rnd % 2 == 0 else list(reversed(impls))
            for name in order:
                r = run_one(impls[name], n, a.responses, seed=rnd + 1)
                raw.setdefault(f"{name}/{n}", []).append(r)
                print(f"[round {rnd + 1}/{a.rounds}] {name:6s} N={n:>9,}: {r['total_us']:9.1f} us/response "
                      f"(schedule {r['schedule_us']:9.1f}, ready {r['ready_us']:6.1f}, "
                      f"add+complete+finish {r['other_us']:6.1f})", flush=True)
    med = {k: {f: statistics.median(r[f] for r in rows) for f in rows[0]} for k, rows in raw.items()}
    print(f"\nmedians of {a.rounds} rounds, CPU us per response ({a.responses} responses):")
    print(f"{'pending URLs':>14} {'scan':>12} {'queues':>10} {'speed-up':>9}   schedule scan -> queues")
    for n in a.sizes:
        s, q = med[f"scan/{n}"], med[f"queues/{n}"]
        print(f"{n:>14,} {s['total_us']:12.1f} {q['total_us']:10.1f} {s['total_us'] / q['total_us']:8.1f}x"
              f"   {s['schedule_us']:.1f} -> {q['schedule_us']:.1f}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "frontier micro", "args": vars(a), "medians": med, "raw": raw}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
