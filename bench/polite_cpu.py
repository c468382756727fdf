"""CPU of a polite crawl at the open web's defaults: what ranks spend while they wait, this tree
against an earlier one, interleaved on one nginx web.

    nice -n 10 .venv/bin/python bench/polite_cpu.py --against REV_OR_DIR [--tree REV_OR_DIR]
        [--ranks 8] [--seconds 60] [--runs 3] [--hosts 60] [--pages 4000] [--seed 37] [--port 18371]
        [--out bench/results/polite_cpu.json]

Each round runs ``mpiexec -n RANKS abc-crawl SEEDS --resolve resolve.txt --session-dir S
--time-limit SECONDS`` with each tree, in an order swapped every round, and nothing else: no
``lab.toml``, so every setting is the open web's default (a 1 s politeness delay, the adaptive
delay, 0.25 s per address, 37.5 s phase slots, statistics and WARC on). On a 60-host web the
ranks then wait most of the time, for a host's rest or for a slot of a host they share, and the
crawl asks for about as many pages in either tree; the figure is the CPU it costs meanwhile.

``--against`` and ``--tree``: a directory with its own ``.venv`` or a git revision (checked out at
``/tmp/abc-tree-<sha7>`` with its own ``make venv``: :func:`harness.checkout`); ``--tree`` is this
checkout by default.

Figures per run: CPU = user+system seconds of the whole process tree (mpiexec and every rank,
start-up included; ``harness.run_measured``); requests (``stats.json``); CPU ms per request;
leases and their mean travel (``lease_wait_ms``). Medians over the runs; the ratio new / old is the
median of the per-round ratios.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import nginx  # noqa: E402


def crawl(tree: Path, ranks: int, web: Path, session: Path, seconds: float) -> dict:
    """One crawl at the defaults; its figures."""
    row = harness.run_tree_abc(tree, ranks, web, session, "--time-limit", str(seconds), "--progress-seconds", "600",
                               timeout=seconds + 600, lab=False)
    st = row["_stats"]
    leases = sum(p.get("leases", 0) for p in st["per_rank"])
    wait = sum(p.get("lease_wait_ms", 0) for p in st["per_rank"])
    return {"cpu_s": row["cpu_s"], "wall_s": row["wall_s"], "requests": row["pages"],
            "cpu_ms_per_request": 1000.0 * row["cpu_s"] / max(1, row["pages"]),
            "leases": leases, "lease_wait_mean_ms": wait / leases if leases else None,
            "stopped": row["stopped"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", required=True, help="the earlier tree: a directory with its .venv or a git revision")
    ap.add_argument("--tree", default=str(harness.ROOT), help="the tree under test (default: this checkout)")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60.0, help="--time-limit of each crawl")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=60)
    ap.add_argument("--pages", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--port", type=int, default=18371)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    trees = {"new": harness.checkout(args.tree), "old": harness.checkout(args.against)}
    web = harness.generated_web(args.hosts, args.pages, seed=args.seed, port=args.port)
    rows: dict[str, list[dict]] = {"new": [], "old": []}
    print(harness.describe_header(f"polite crawl at the defaults, {args.ranks} ranks, {args.seconds:g} s"))
    with tempfile.TemporaryDirectory(prefix="abc-polite-") as tmp, \
            nginx.serve(web, max_seconds=args.runs * 2 * (args.seconds + 600) + 600):
        for run in range(args.runs):
            for name in (("new", "old") if run % 2 == 0 else ("old", "new")):
                row = crawl(trees[name], args.ranks, web, Path(tmp) / f"s-{name}", args.seconds)
                rows[name].append(row)
                print(f"round {run + 1} {name}: {row['cpu_s']:.2f} CPU-s, {row['requests']} requests, "
                      f"{row['cpu_ms_per_request']:.1f} CPU-ms a request, {row['leases']} leases "
                      f"(mean travel {row['lease_wait_mean_ms'] or 0:.0f} ms), stopped {row['stopped']}", flush=True)
    med = {name: {k: statistics.median(r[k] for r in rs) for k in ("cpu_s", "requests", "cpu_ms_per_request")}
           for name, rs in rows.items()}
    ratio = statistics.median(n["cpu_s"] / o["cpu_s"] for n, o in zip(rows["new"], rows["old"]))
    per_req = statistics.median(n["cpu_ms_per_request"] / o["cpu_ms_per_request"] for n, o in zip(rows["new"], rows["old"]))
    for name in ("new", "old"):
        m = med[name]
        print(f"{name} ({trees[name]}): median {m['cpu_s']:.2f} CPU-s, {m['requests']:.0f} requests, "
              f"{m['cpu_ms_per_request']:.1f} CPU-ms a request")
    print(f"new / old: CPU {ratio:.3f}, CPU a request {per_req:.3f} (medians of the per-round ratios)")
    out = harness.write_result("polite_cpu", {"args": vars(args), "trees": {k: str(v) for k, v in trees.items()},
                                              "rows": rows, "medians": med, "cpu_ratio": ratio,
                                              "cpu_per_request_ratio": per_req,
                                              "machine": harness.machine_info()}, args.out)
    print(f"result: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
