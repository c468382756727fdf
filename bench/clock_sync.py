"""The clock synchronization's cost and precision at K ranks: this tree against an earlier one.

    .venv/bin/python bench/clock_sync.py --against REV_OR_DIR [--ranks 8] [--syncs 10] [--runs 5]
        [--out bench/results/clock_sync.json]

Each run is ``mpiexec -n K`` of a tree's Python doing what ``RankCrawler.sync_clock`` does,
``--syncs`` times in a row: ``Communicator.clock_samples`` (rank 0 answers 8 pings of every rank in
turn) and ``estimate_offset`` of the samples. Printed for each tree, medians over ``--runs``
interleaved runs: the CPU all ranks spent in the syncs (``time.process_time`` around them, summed),
per sync, and the median and largest round trip the ranks kept (the best of each rank's 8 samples:
what bounds the offset's error). With more ranks than cores the ping's partner may be waiting for
the pinging rank's core.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

PROBE = r"""
import json, sys, time
from abc_crawler.mpi.clock import SharedClock, estimate_offset
from abc_crawler.mpi.exchange import Communicator
comm = Communicator()
clock = SharedClock()
syncs = int(sys.argv[1])
comm.barrier()
t = time.process_time()
rtts = []
for _ in range(syncs):
    samples = comm.clock_samples(clock.local)
    if samples:
        rtts.append(estimate_offset(samples)[1])
cpu = time.process_time() - t
out = comm.gather({"cpu": cpu, "rtts": rtts})
if comm.rank == 0:
    print(json.dumps(out))
"""


def one_run(tree: Path, ranks: int, syncs: int) -> dict:
    b = harness.tree_bin(tree)
    r = subprocess.run([str(b / "mpiexec"), "-n", str(ranks), str(b / "python"), "-c", PROBE, str(syncs)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{tree}: clock probe failed ({r.returncode}): {r.stderr[-2000:]}")
    per_rank = json.loads(r.stdout.strip().splitlines()[-1])
    rtts = [x for p in per_rank for x in p["rtts"]]
    return {"cpu_s": sum(p["cpu"] for p in per_rank), "rtt_median_s": statistics.median(rtts),
            "rtt_max_s": max(rtts)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="the earlier tree: a directory with its .venv, or a git revision")
    ap.add_argument("--tree", default=None, help="the tree under test (default: this checkout)")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--syncs", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.ranks < 2 or a.syncs < 1 or a.runs < 1:
        ap.error(f"--ranks must be at least 2, --syncs and --runs at least 1; got {a.ranks}, {a.syncs}, {a.runs}")
    print(harness.describe_header("Clock synchronization: CPU and round trip"), flush=True)
    trees = {"new": harness.checkout(a.tree) if a.tree else harness.ROOT, "old": harness.checkout(a.against)}
    raw: dict[str, list[dict]] = {k: [] for k in trees}
    for run in range(a.runs):
        for name in harness.rotated(list(trees), run):
            raw[name].append(one_run(trees[name], a.ranks, a.syncs))
        print(f"[run {run + 1}/{a.runs}] " + "  ".join(
            f"{n}: {1e3 * raw[n][-1]['cpu_s'] / a.syncs:.2f} CPU-ms a sync, rtt {1e6 * raw[n][-1]['rtt_median_s']:.0f} µs"
            for n in trees), flush=True)
    print(f"\n{a.ranks} ranks, {a.syncs} syncs a run, medians of {a.runs} interleaved runs:")
    print(f"  {'tree':5s} {'CPU-ms a sync (all ranks)':>26s} {'round trip, median':>19s} {'largest':>10s}")
    med = {}
    for n, t in trees.items():
        med[n] = {k: statistics.median(r[k] for r in raw[n]) for k in raw[n][0]}
        print(f"  {n:5s} {1e3 * med[n]['cpu_s'] / a.syncs:26.2f} {1e6 * med[n]['rtt_median_s']:17.0f} µs"
              f" {1e6 * med[n]['rtt_max_s']:7.0f} µs   ({t})")
    ratios = [x["cpu_s"] / y["cpu_s"] for x, y in zip(raw["new"], raw["old"])]
    print(f"  new / old CPU: median of the per-run ratios {statistics.median(ratios):.3f}")
    res = {"benchmark": "clock_sync", "args": vars(a), "trees": {k: str(v) for k, v in trees.items()},
           "medians": med, "raw": raw}
    print(f"wrote {harness.write_result('clock_sync', res, a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
