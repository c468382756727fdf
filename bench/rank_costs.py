"""Issue 37: a crawl's CPU split into what every rank pays once and what each page costs, by rank count.

    nice -n 10 .venv/bin/python bench/rank_costs.py [--ranks 1 2 4 8] [--runs 3] [--hosts 60]
        [--pages 4000] [--seed 37] [--port 18371] [--web DIR] [--out bench/results/rank_costs.json]

The web of ``bench/cpu_guard.py`` (``harness.generated_web``, served by nginx), crawled at default
settings (the tree's lab settings, statistics and WARC on) by ``mpiexec -n K abc-crawl`` for each K
of ``--ranks``, two ways, interleaved run by run:

``full``   the whole web (4,207 requests on the default web);
``fixed``  the same command with ``--max-pages 8``: interpreters, imports, ``MPI_Init``, the clock
           sync, the session's start and end, and eight pages: what a K-rank crawl costs whatever
           the web's size.

CPU is user + system seconds of the whole process tree (mpiexec, hydra, every rank:
``harness.run_measured``). Printed per K (medians of ``--runs``): the full crawl's CPU and
pages per CPU-second, the fixed CPU, and the marginal CPU ``full - fixed`` per page in µs (each
run's own difference, then the median). On a machine with fewer cores than ranks the marginal cost
per page includes what oversubscription costs (context switches, cold caches); the fixed share tells
how much a larger web would amortize.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import nginx  # noqa: E402

FIXED_PAGES = 8


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=60)
    ap.add_argument("--pages", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--port", type=int, default=18371)
    ap.add_argument("--web", default=None, help="a web directory to crawl instead (e.g. bench/corpus.py's)")
    ap.add_argument("--timeout", type=float, default=900.0, help="longest single run")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    if a.runs < 1:
        ap.error(f"--runs: expected at least 1, got {a.runs}")
    if any(k < 1 for k in a.ranks):
        ap.error(f"--ranks: expected counts of at least 1, got {a.ranks}")
    web = Path(a.web) if a.web else harness.generated_web(a.hosts, a.pages, seed=a.seed, port=a.port)
    if not (web / "manifest.json").exists():
        ap.error(f"--web {web}: no manifest.json (a web directory of abc-testweb generate or bench/corpus.py)")
    print(harness.describe_header(f"issue 37: fixed and per-page CPU by rank count, web {web.name}"), flush=True)
    cases = [(k, kind) for k in a.ranks for kind in ("full", "fixed")]
    rows: dict[tuple[int, str], list[dict]] = {c: [] for c in cases}
    tmp = Path(tempfile.mkdtemp(prefix="abc-rank-costs-"))
    try:
        with nginx.serve(web, max_seconds=a.runs * len(cases) * a.timeout + 600):
            for run in range(a.runs):
                for k, kind in harness.rotated(cases, run):
                    extra = ("--max-pages", str(FIXED_PAGES)) if kind == "fixed" else ()
                    r = harness.run_tree_abc(harness.ROOT, k, web, tmp / f"s-{k}-{kind}", *extra, timeout=a.timeout)
                    rows[(k, kind)].append(r)
                    print(f"  run {run + 1} K={k} {kind:5s}: {r['pages']:6d} requests, CPU {r['cpu_s']:6.2f} s,"
                          f" wall {r['wall_s']:6.2f} s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = lambda xs: statistics.median(xs)  # noqa: E731
    out = {"web": str(web), "runs": a.runs, "fixed_pages": FIXED_PAGES, "ranks": {}}
    print(f"\n{'K':>3s} {'requests':>8s} {'CPU s':>7s} {'pages/CPU-s':>11s} {'fixed CPU s':>11s} {'fixed %':>7s}"
          f" {'marginal µs/page':>16s}")
    for k in a.ranks:
        full, fixed = rows[(k, "full")], rows[(k, "fixed")]
        pages = med([r["pages"] for r in full])
        marg = [(f["cpu_s"] - x["cpu_s"]) / (f["pages"] - x["pages"]) * 1e6 for f, x in zip(full, fixed)]
        o = {"requests": pages, "cpu_s": med([r["cpu_s"] for r in full]),
             "pages_per_cpu_s": med([r["pages_per_cpu_s"] for r in full]),
             "fixed_cpu_s": med([r["cpu_s"] for r in fixed]), "marginal_us_per_page": med(marg),
             "full_cpu_runs": [r["cpu_s"] for r in full], "fixed_cpu_runs": [r["cpu_s"] for r in fixed]}
        o["fixed_pct"] = 100.0 * o["fixed_cpu_s"] / o["cpu_s"]
        out["ranks"][str(k)] = o
        print(f"{k:3d} {pages:8d} {o['cpu_s']:7.2f} {o['pages_per_cpu_s']:11.1f} {o['fixed_cpu_s']:11.2f}"
              f" {o['fixed_pct']:7.1f} {o['marginal_us_per_page']:16.0f}")
    print(f"\nresult: {harness.write_result('rank_costs', out, a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
