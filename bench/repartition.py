"""Repartition between sessions at K = 8: measured against predicted, page-hash vs page-GP, site-hash vs site-GP.

    .venv/bin/python bench/repartition.py [--web synthetic|corpus|both] [--parts 8] [--runs 1]
                                         [--hosts 400] [--pages 20000] [--out bench/results/repartition.json]
                                         [--communities C [--community-locality L]]

For each web (served by nginx, bench/nginx.py), four complete crawls with
``mpiexec -n K abc-crawl --no-stats --politeness-delay 0``:

1. ``page-hash``: ``--assign hash`` (session S1);
2. ``page-GP``: ``abc-repartition S1 --parts K --model page-gp`` (METIS, two
   constraints, 5 %), then ``--assign S1/partvec-page-gp.npz``;
3. ``site-hash``: ``--assign site-hash`` (session S3);
4. ``site-GP``: ``abc-repartition S3 --parts K --model site-gp``, then
   ``--assign S3/partvec-site-gp.npz``.

For each session: measured ``volume_bytes`` (Türk MV), ``wire_bytes``,
``messages_thesis``, ``messages_mpi``, storage and request imbalance
(stats.json), beside the predicted values (the part vector's stored
prediction for the GP sessions; for the hash sessions the baselines
abc-repartition computed on the source graph), and the measured/predicted
ratio. ``abc-report S2 --against S1`` is run too (its table goes into the
JSON). Targets (issue "Repartition between sessions"): page-GP measured
volume ≤ page-hash's / 20, both imbalances ≤ 5 %, measured within 10 % of
predicted.

Volume, messages and imbalances of a complete crawl are functions of the
crawled graph and the assignment only, not of timing (``messages_mpi`` and
``wire_bytes`` do depend on how links fall into supersteps), so ``--runs``
defaults to 1; with more runs the medians are printed. A default run (both
webs) takes about 8 minutes.

``--communities C`` (with ``--community-locality L``, default 0.9) generates
the synthetic web with host communities (``abc-testweb generate --communities
C --community-locality L``: cross-host links stay inside the source host's
community with probability L) in its own directory under the data dir, and
the result file is ``repartition-WEB-cC-lL.json``.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import harness  # noqa: E402
import nginx  # noqa: E402
from harness import BIN, medians, run_abc, write_result  # noqa: E402

METRICS = ("volume_bytes", "messages_thesis", "storage_pct", "request_pct")


def measured(st: dict) -> dict:
    ex, im = st["exchange"], st["imbalance"]
    return {"volume_bytes": ex["volume_bytes"], "wire_bytes": ex["wire_bytes"],
            "messages_thesis": ex["messages_thesis"], "messages_mpi": ex["messages_mpi"],
            "storage_pct": im["storage_pct"], "request_pct": im["request_pct"], "requests": st["requests"],
            "pages_ok": st["pages_crawled"], "wall_s": st["wall_s"], "overlap_pages": st["overlap_pages"]}


def repartition(session: Path, model: str, parts: int, out: Path) -> dict:
    r = subprocess.run([str(BIN / "abc-repartition"), str(session), "--parts", str(parts), "--model", model,
                        "--out", str(out), "--json", "--no-export"], capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"abc-repartition {model} failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout)


def report(s2: Path, s1: Path) -> str:
    r = subprocess.run([str(BIN / "abc-report"), str(s2), "--against", str(s1), "--no-thesis", "--no-plots",
                        "--no-hp", "--out", str(s2 / "report")], capture_output=True, text=True, timeout=1800)
    return r.stdout if r.returncode == 0 else f"abc-report failed ({r.returncode}): {r.stderr[-1500:]}"


def one_round(web: Path, K: int, tmp: Path, tag: str) -> dict:
    flags = ["--no-stats", "--politeness-delay", "0"]
    out: dict = {}
    s1 = tmp / f"{tag}-page-hash"
    row = run_abc(K, web, s1, *flags, "--assign", "hash", keep=True)
    out["page-hash"] = {"measured": measured(row["_stats"]), "cpu_s": row["cpu_s"]}
    pg = repartition(s1, "page-gp", K, s1 / "partvec-page-gp.npz")
    out["page-hash"]["predicted"] = pg["baselines"]["hash"]
    s2 = tmp / f"{tag}-page-gp"
    row = run_abc(K, web, s2, *flags, "--assign", str(s1 / "partvec-page-gp.npz"), keep=True)
    out["page-GP"] = {"measured": measured(row["_stats"]), "predicted": pg["predicted"], "cpu_s": row["cpu_s"],
                      "partition": {k: pg["partition"].get(k) for k in ("seconds", "start", "cut", "objective")}}
    out["page-GP"]["report"] = report(s2, s1)
    s3 = tmp / f"{tag}-site-hash"
    row = run_abc(K, web, s3, *flags, "--assign", "site-hash", keep=True)
    out["site-hash"] = {"measured": measured(row["_stats"]), "cpu_s": row["cpu_s"]}
    n_hosts = len({h for h in (json.loads((web / "manifest.json").read_text()).get("hosts") or [])})
    s4 = tmp / f"{tag}-site-gp"
    if n_hosts and n_hosts < K:
        # a site model cannot give K parts to fewer than K hosts (abc-repartition refuses it)
        out["site-hash"]["predicted"] = pg["baselines"]["site-hash"]
        out["site-GP"] = {"skipped": f"{n_hosts} hosts < {K} parts: site-GP is not applicable"}
    else:
        sg = repartition(s3, "site-gp", K, s3 / "partvec-site-gp.npz")
        out["site-hash"]["predicted"] = sg["baselines"]["site-hash"]
        row = run_abc(K, web, s4, *flags, "--assign", str(s3 / "partvec-site-gp.npz"), keep=True)
        out["site-GP"] = {"measured": measured(row["_stats"]), "predicted": sg["predicted"], "cpu_s": row["cpu_s"],
                          "partition": {k: sg["partition"].get(k) for k in ("seconds", "start", "cut", "objective")}}
        out["site-GP"]["report"] = report(s4, s3)
    for s in (s1, s2, s3, s4):
        shutil.rmtree(s, ignore_errors=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--web", choices=["synthetic", "corpus", "both"], default="both")
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--hosts", type=int, default=400)
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=18081)
    ap.add_argument("--communities", type=int, default=0,
                    help="synthetic web with C host communities (abc-testweb generate --communities; 0: off)")
    ap.add_argument("--community-locality", type=float, default=None,
                    help="with --communities: P(cross-host link stays in its community) (default 0.9)")
    ap.add_argument("--out", default=None, help="default bench/results/repartition-WEB.json")
    a = ap.parse_args()
    if a.community_locality is not None and not a.communities:
        ap.error("--community-locality needs --communities C")
    tag = f"repartition-{a.web}"
    if a.communities:
        tag += f"-c{a.communities}" + (f"-l{a.community_locality:g}" if a.community_locality is not None else "")
    print(harness.describe_header(f"Repartition between sessions, K = {a.parts}", ["pymetis", "cmeel-metis"]), flush=True)
    webs = ["synthetic", "corpus"] if a.web == "both" else [a.web]
    result = {"benchmark": "repartition", "args": vars(a), "webs": {}}
    tmp = Path(tempfile.mkdtemp(prefix="abc-repart-"))
    try:
        for kind in webs:
            web = harness.generated_web(a.hosts, a.pages, a.seed, a.port, a.communities,
                                      a.community_locality) if kind == "synthetic" else corpus.prepare(
                corpus.DEFAULT_OUT, port=8080)
            rounds = []
            with nginx.serve(web, max_seconds=a.runs * 4 * 1800 + 600):
                for run in range(a.runs):
                    rounds.append(one_round(web, a.parts, tmp, f"{kind}-{run}"))
                    print(f"[{kind} run {run + 1}/{a.runs}] done", flush=True)
            entry: dict = {"web": str(web), "sessions": {}, "raw": rounds}
            for name in ("page-hash", "page-GP", "site-hash", "site-GP"):
                if "skipped" in rounds[0][name]:
                    entry["skipped"] = {name: rounds[0][name]["skipped"]}
                    continue
                meas = medians([r[name]["measured"] for r in rounds])
                pred = rounds[0][name]["predicted"]
                entry["sessions"][name] = {"measured": meas, "predicted": {k: pred.get(k) for k in METRICS},
                                           "measured_over_predicted": {
                                               k: (meas[k] / pred[k] if pred.get(k) else None) for k in METRICS}}
            ph, pg = entry["sessions"]["page-hash"]["measured"], entry["sessions"]["page-GP"]["measured"]
            cut = ph["volume_bytes"] / pg["volume_bytes"] if pg["volume_bytes"] else float("inf")
            mop = entry["sessions"]["page-GP"]["measured_over_predicted"]
            entry["targets"] = {
                "volume_cut_x": cut, "volume_cut_met": cut >= 20,
                "storage_pct": pg["storage_pct"], "request_pct": pg["request_pct"],
                "imbalance_met": pg["storage_pct"] <= 5 and pg["request_pct"] <= 5,
                "within_10pct": {k: (abs(v - 1) <= 0.10 if v is not None else None) for k, v in mop.items()}}
            result["webs"][kind] = entry
            print(f"\n{kind} web ({web}), K = {a.parts}, median of {a.runs} run(s); measured (predicted) "
                  f"[measured/predicted]:")
            print(f"  {'session':10s} {'volume_bytes':>28s} {'messages_thesis':>24s} {'storage %':>22s}"
                  f" {'request %':>22s} {'wire_bytes':>11s} {'msgs MPI':>9s}")
            for name, s in entry["sessions"].items():
                m, p, r = s["measured"], s["predicted"], s["measured_over_predicted"]
                cell = lambda k, f: (f"{m[k]:{f}} ({p[k]:{f}}) [{r[k]:.2f}]" if p.get(k) is not None and r[k] is not None  # noqa: E731
                                     else f"{m[k]:{f}} ({p.get(k)})")
                print(f"  {name:10s} {cell('volume_bytes', ',.0f'):>28s} {cell('messages_thesis', ',.0f'):>24s}"
                      f" {cell('storage_pct', '.2f'):>22s} {cell('request_pct', '.2f'):>22s}"
                      f" {m['wire_bytes']:11,.0f} {m['messages_mpi']:9,.0f}")
            t = entry["targets"]
            print(f"  page-GP cuts measured volume {t['volume_cut_x']:.1f}x against page-hash (target >= 20x: "
                  f"{'met' if t['volume_cut_met'] else 'missed'}); imbalance storage {t['storage_pct']:.2f} %, "
                  f"requests {t['request_pct']:.2f} % (target <= 5 %: {'met' if t['imbalance_met'] else 'missed'}); "
                  f"within 10 % of predicted: {t['within_10pct']}")
            if "skipped" in entry:
                print(f"  {entry['skipped']}")
            path = write_result(tag, result, a.out)
        print(f"wrote {path}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
