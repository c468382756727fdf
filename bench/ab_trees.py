"""A/B of two checkouts of ABC: the same abc-crawl runs from each, interleaved, on one nginx web.

    .venv/bin/python bench/ab_trees.py --a /path/to/old/checkout --b /path/to/new/checkout
                                       [--ranks 1 8] [--runs 5] [--hosts 400] [--pages 20000] [--port 18083]
                                       [--out bench/results/ab_trees.json]

Each checkout must have its own ``.venv`` (``make venv``); a git revision instead of a directory
is checked out under /tmp with its own venv (``harness.checkout``). For every round and every K of
``--ranks``, ``mpiexec -n K abc-crawl --no-stats --politeness-delay 0`` runs from A and from B
(the order alternates every round) on the generated web (served by nginx, as in
``bench/stack_limit.py``'s ``abc-1`` and ``bench/vs_scrapy.py``'s abc runs). Figures per K:
pages per CPU-second of the whole process tree (start-up included) and pages/s, medians over
the rounds, and the per-round ratio B / A with its median: a change of the crawl loop must not
lower pages per CPU-second. Every run must request the same number of URLs (a check that both
crawls did the same work).
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


def crawl(tree: Path, ranks: int, web: Path, tmp: Path) -> dict:
    """One crawl with ``tree``'s own venv (its lab settings, ``--no-stats --politeness-delay 0``); its figures."""
    row = harness.run_tree_abc(tree, ranks, web, tmp / f"s-{tree.name}-{ranks}", "--progress-seconds", "600",
                               "--no-stats", "--politeness-delay", "0", timeout=1800)
    return {"requests": row["pages"], "wall_s": row["wall_s"], "cpu_s": row["cpu_s"],
            "pages_per_cpu_s": row["pages_per_cpu_s"], "pages_per_s": row["pages_per_s"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="checkout A (the baseline): a directory with its .venv, or a git revision")
    ap.add_argument("--b", required=True, help="checkout B (the change): a directory with its .venv, or a git revision")
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--hosts", type=int, default=400)
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--port", type=int, default=18083, help="port of the generated web (its own web per port)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    a, b = harness.checkout(args.a), harness.checkout(args.b)
    print(harness.describe_header(f"A/B of two checkouts: A = {a}, B = {b}"), flush=True)
    web = harness.generated_web(args.hosts, args.pages, port=args.port)
    tmp = Path(tempfile.mkdtemp(prefix="abc-ab-"))
    rows: dict[int, list[dict]] = {k: [] for k in args.ranks}
    try:
        with nginx.serve(web):
            for run in range(args.runs):
                for k in args.ranks:
                    order = [("A", a), ("B", b)] if run % 2 == 0 else [("B", b), ("A", a)]
                    pair = {}
                    for name, tree in order:
                        pair[name] = crawl(tree, k, web, tmp)
                    if pair["A"]["requests"] != pair["B"]["requests"]:
                        raise RuntimeError(f"A and B requested {pair['A']['requests']} and {pair['B']['requests']} URLs")
                    pair["ratio"] = pair["B"]["pages_per_cpu_s"] / pair["A"]["pages_per_cpu_s"]
                    rows[k].append(pair)
                    print(f"round {run + 1} K={k}: A {pair['A']['pages_per_cpu_s']:7.1f} pages/CPU-s, "
                          f"B {pair['B']['pages_per_cpu_s']:7.1f}, B/A {pair['ratio']:.3f}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {}
    for k, pairs in rows.items():
        med = {n: statistics.median(p[n]["pages_per_cpu_s"] for p in pairs) for n in ("A", "B")}
        ratios = sorted(p["ratio"] for p in pairs)
        summary[k] = {"A_pages_per_cpu_s": med["A"], "B_pages_per_cpu_s": med["B"],
                      "ratio_median": statistics.median(ratios), "ratios": ratios,
                      "A_pages_per_s": statistics.median(p["A"]["pages_per_s"] for p in pairs),
                      "B_pages_per_s": statistics.median(p["B"]["pages_per_s"] for p in pairs),
                      "requests": pairs[0]["A"]["requests"]}
        print(f"K={k}: median pages/CPU-s A {med['A']:.1f}, B {med['B']:.1f}; B/A median "
              f"{summary[k]['ratio_median']:.3f} (per round {', '.join(f'{r:.3f}' for r in ratios)})")
    path = harness.write_result("ab_trees", {"args": {k: str(v) for k, v in vars(args).items()},
                                             "summary": summary, "rows": rows}, args.out)
    print(f"result: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
