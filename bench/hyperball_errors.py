#!/usr/bin/env python
"""Are HyperBall's stated standard errors right?  z-scores against exact figures, over hash seeds.

For every graph (small enough for scipy's all-pairs BFS) and every seed, HyperBall's
reachable pairs, average distance and effective diameter are compared with the exact
figures: z = (estimate - exact) / se.  Honest errors give |z| > 2 about 5 % of the time
and |z| > 3 about 0.3 %; the script prints those shares, the largest |z| and the root
mean square of z (1 for honest errors, below 1 for cautious ones), per figure.

``--quantile-jackknife`` also scores the effective diameter's error taken from a
jackknife of the quantile itself (the estimator ``kernels/distances.py`` replaced by
Woodruff's interval).

    .venv/bin/python bench/hyperball_errors.py                       # 5 synthetic graphs x 20 seeds
    .venv/bin/python bench/hyperball_errors.py --session sessions/s1 --seeds 100 --quantile-jackknife
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from abc_crawler.kernels import HyperBall, graphs  # noqa: E402
from abc_crawler.kernels.distances import estimated_figures, figures, jackknife  # noqa: E402
from graphcheck import adjacency, exact_distance_figures  # noqa: E402

KEYS = ("reachable_pairs", "avg_distance", "effective_diameter")


def synthetic():
    return [graphs.crawl_like(500, seed=1), graphs.crawl_like(2000, seed=2, avg_out=4),
            graphs.random_graph(1000, 1500, seed=3), graphs.random_graph(1500, 3000, seed=4),
            graphs.crawl_like(3000, seed=5, site_size=200, avg_out=3)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--session", action="append", default=[], help="add a session's graph.npz (repeatable)")
    ap.add_argument("--no-synthetic", action="store_true")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--log2m", type=int, default=7)
    ap.add_argument("--quantile-jackknife", action="store_true")
    ap.add_argument("--json", help="write the z-scores here")
    args = ap.parse_args()
    gs = [] if args.no_synthetic else synthetic()
    gs += [graphs.from_session(s) for s in args.session]
    keys = KEYS + (("effective_diameter_jackknife",) if args.quantile_jackknife else ())
    zs = {k: [] for k in keys}
    for g in gs:
        a = adjacency(g.n, g.src, g.dst)
        exact = exact_distance_figures(a)
        for seed in range(args.seeds):
            hb = HyperBall(a.indptr, a.indices, log2m=args.log2m, seed=seed)
            hb.run()
            est = estimated_figures(hb.nf, hb.nf_replicates)
            for k in KEYS:
                zs[k].append((est[k]["estimate"] - exact[k]) / est[k]["se"])
            if args.quantile_jackknife:
                rep = hb.nf_replicates
                se = jackknife(0, [figures(rep[:, j])["effective_diameter"] for j in range(rep.shape[1])])
                zs["effective_diameter_jackknife"].append(
                    (est["effective_diameter"]["estimate"] - exact["effective_diameter"]) / se)
        print(f"# {g.name}: n {g.n}, m {g.m}, exact " + ", ".join(f"{k} {exact[k]:.4g}" for k in KEYS),
              file=sys.stderr)
    print(f"{len(gs)} graphs x {args.seeds} seeds, 2^{args.log2m} registers per node")
    print(f"{'figure':30s} {'|z|>2':>7s} {'|z|>3':>7s} {'max|z|':>7s} {'rms z':>6s}")
    for k, v in zs.items():
        v = np.abs(np.array(v))
        print(f"{k:30s} {100 * (v > 2).mean():6.1f}% {100 * (v > 3).mean():6.1f}% {v.max():7.2f} "
              f"{np.sqrt((v ** 2).mean()):6.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"argv": sys.argv[1:], "z": zs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
