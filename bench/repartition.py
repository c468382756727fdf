"""Repartition between sessions at K = 8: measured against predicted, page-hash vs page-GP, site-hash vs site-GP.

    .venv/bin/python bench/repartition.py [--web synthetic|corpus|both] [--parts 8] [--runs 1]
                                         [--hosts 400] [--pages 20000] [--out bench/results/repartition.json]
                                         [--communities C [--community-locality L]]
    .venv/bin/python bench/repartition.py --politeness default [--web ...] [--runs 3] ...
    .venv/bin/python bench/repartition.py --web synthetic --hosts 2000 --pages 175000   # issue 29

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

Every page stored by both sessions of a pair (issue 29: a part vector gathers a
big host on one rank, and a per-host limit split as limit/ranks per rank left
pages of it unrequested): for page-hash / page-GP and site-hash / site-GP the
URLs with ``url_rank >= 0`` in each session's ``graph.npz`` are compared —
pages in 1 and in 2, only in 1 and only in 2 (count, up to 5 examples, their
hosts), stats.json ``dropped`` and ``links.over_host_limit`` of both,
``stopped``, session 1's three biggest hosts' pages in both, and how many of
the generated web's ``expected.requested`` URLs each did not store (reported
only). It is printed, stored as ``same_pages`` in the result, and the script
exits with status 1 when a pair differs. ``--session-timeout`` (default 3600 s)
bounds one crawl: a 175,000-page web takes minutes per session.

``--communities C`` (with ``--community-locality L``, default 0.9) generates
the synthetic web with host communities (``abc-testweb generate --communities
C --community-locality L``: cross-host links stay inside the source host's
community with probability L) in its own directory under the data dir, and
the result file is ``repartition-WEB-cC-lL.json``.

``--politeness default`` (issue 16: a repartitioned session must not take
longer than the hash session it replaces) crawls the page pair only —
``page-hash`` (session 1), ``abc-repartition --model page-gp``, ``page-GP``
(session 2) — with **every crawl setting at its default**: politeness delay
0.25 s, phase slots with their holders and slot hand-over, statistics kernels,
WARC files. ``--runs`` (default 3 here) pairs are run; the webs take turns in
each run, and the order inside a pair alternates: even runs crawl session 1,
partition it, then session 2; odd runs crawl session 2 first, on the part
vector of the previous run's session 1 of the same web (the same pages and
links; ``vector_same_as_previous`` says whether the vector came out identical:
METIS sees the vertices in crawl order, so it may differ slightly, and its
predicted volume is printed per run), then session 1. nginx is started for
each session with a JSON access log. Per session it reports:

* wall time: ``crawl_wall_s`` (stats.json ``wall_s``: the crawl itself) and
  ``wall_s`` (mpiexec's launch to exit: adds ``start_s``, launch to the
  crawl's start, and ``tail_s``, the crawl's end to the exit — writing the
  session and waiting for the statistics kernels' thread, which runs at nice
  10 and on a loaded machine can be minutes behind); per run the ratio
  session 2 / session 1 of both, and medians over runs. The goal (median
  ratio <= 1.1) is checked on the crawl's wall time, which the assignment
  and the phase slots determine; the tail is the same work in both sessions;
* every page exactly once: ``overlap_pages`` (stats.json), ``requests``
  against the distinct (host, path) the server logged (robots.txt apart),
  paths the server logged more than once (each must be a request cut at a
  slot's end and asked again: at most ``slot_cuts``), and *host overlaps*:
  requests to one host from two ranks at the same time (from the log's start
  and end times, 2 ms tolerance for its millisecond clock);
* what bounded it: stats.json ``bounds`` (the biggest host's politeness-bound
  makespan, the busiest rank's busy time, the longest time in exchanges), the
  ranks' idle time summed by kind (``idle_slot_s`` waiting for a slot with
  work queued, ``idle_rest_s`` hosts resting, ``idle_empty_s`` nothing
  queued), ``handovers`` / ``leases`` / ``leases_late`` / ``slot_cuts``
  summed; from the access log, for the biggest hosts: requests by rank, first
  request and last response, and their span split into time in requests (the
  server's), gaps inside batches (< 0.1 s: the crawler's turnaround between
  requests on one connection), the politeness rests (up to the delay per
  batch boundary) and the *excess* (boundary gaps beyond the rest: the host
  was free but nobody fetched it — waiting for a slot, a lease or links),
  and when each rank's last request ended;
* the load average before and after each session, and the processes using
  the most CPU at the start and end (``top``; the machine is shared);
* volume and imbalances, measured beside predicted, as in the default mode.

The per-rank lists (idle split, busy time, requests, handovers, leases) of
every session are in the result file (``raw``), ``repartition-default-WEB.json``.
``--keep DIR`` keeps every session (without WARC files and checkpoints) and
its access log for a closer look.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
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


def stored_pages(session: Path) -> tuple[dict[str, int], dict]:
    """The URLs a session requested and stored (``graph.npz``: ``url_rank >= 0``) with the rank that
    requested each, and its stats.json."""
    from abc_crawler.store.session import load_graph

    g = load_graph(session)
    ranks = g.url_rank.tolist()
    return {u: r for u, r in zip(g.urls, ranks) if r >= 0}, json.loads((session / "stats.json").read_text())


def host_ranks(pages: dict[str, int], host: str) -> dict[int, int]:
    """A host's stored pages per rank that requested them."""
    return dict(sorted(Counter(r for u, r in pages.items() if host_of(u) == host).items()))


def host_of(url: str) -> str:
    return url.split("/", 3)[2] if "://" in url else url


def same_pages(s1: Path, s2: Path, expected: set[str] | None = None, top: int = 3) -> dict:
    """Issue 29: did session 2 (on the part vector) store exactly the pages session 1 stored? Pages in
    each, pages only in one (count, up to 5 examples, the hosts they are on), what each session dropped
    by a limit (stats.json ``dropped``, ``links.over_host_limit``) and session 1's biggest hosts' pages
    in both, with the pages each rank requested (a part vector gathers a big host on few ranks: more
    than limit / ranks on one rank is the case of issue 29). ``expected`` (a generated web's
    ``expected.requested``): how many of those each session did not store (reported, not part of
    ``same``)."""
    r1, st1 = stored_pages(s1)
    r2, st2 = stored_pages(s2)
    p1, p2 = set(r1), set(r2)
    only1, only2 = sorted(p1 - p2), sorted(p2 - p1)
    h1, h2 = Counter(map(host_of, p1)), Counter(map(host_of, p2))
    exp = {} if expected is None else {"expected": len(expected), "expected_missing_1": len(expected - p1),
                                       "expected_missing_2": len(expected - p2)}
    return {"pages_1": len(p1), "pages_2": len(p2), **exp,
            "only_in_1": len(only1), "only_in_1_examples": only1[:5],
            "only_in_1_hosts": dict(Counter(map(host_of, only1)).most_common(5)),
            "only_in_2": len(only2), "only_in_2_examples": only2[:5],
            "only_in_2_hosts": dict(Counter(map(host_of, only2)).most_common(5)),
            "dropped_1": st1.get("dropped") or {}, "dropped_2": st2.get("dropped") or {},
            "over_host_limit_1": st1["links"].get("over_host_limit", 0),
            "over_host_limit_2": st2["links"].get("over_host_limit", 0),
            "stopped_1": st1.get("stopped"), "stopped_2": st2.get("stopped"),
            "biggest_hosts": [{"host": h, "pages_1": n, "pages_2": h2.get(h, 0), "ranks_1": host_ranks(r1, h),
                               "ranks_2": host_ranks(r2, h)} for h, n in h1.most_common(top)],
            "same": not only1 and not only2}


SAME_PAIRS = (("page-hash", "page-GP"), ("site-hash", "site-GP"))


def print_same_pages(kind: str, rounds: list[dict]) -> bool:
    """Print the per-pair comparison of every round; True if every pair stored the same pages."""
    ok = True
    print(f"\n{kind}: session 2 (on the part vector) stores exactly the pages of session 1 (graph.npz url_rank >= 0):")
    for i, r in enumerate(rounds):
        for pair, c in r.get("same_pages", {}).items():
            ok = ok and c["same"]
            print(f"  run {i + 1} {pair:19s} pages {c['pages_1']:,} / {c['pages_2']:,}; only in 1: {c['only_in_1']:,}"
                  f"{' ' + str(c['only_in_1_examples']) + ' on ' + str(c['only_in_1_hosts']) if c['only_in_1'] else ''}"
                  f"; only in 2: {c['only_in_2']:,}"
                  f"{' ' + str(c['only_in_2_examples']) + ' on ' + str(c['only_in_2_hosts']) if c['only_in_2'] else ''}"
                  f"; dropped {c['dropped_1']} / {c['dropped_2']}; over_host_limit {c['over_host_limit_1']} / "
                  f"{c['over_host_limit_2']}; stopped {c['stopped_1']} / {c['stopped_2']}: "
                  f"{'SAME' if c['same'] else 'DIFFERENT'}")
            print("  " + " " * 26 + "biggest hosts: pages 1 / 2 (most on one rank 1 / 2, ranks with pages 1 / 2): "
                  + ", ".join(f"{b['host']} {b['pages_1']:,} / {b['pages_2']:,} ({max(b['ranks_1'].values()):,} / "
                              f"{max(b['ranks_2'].values(), default=0):,}, {len(b['ranks_1'])} / {len(b['ranks_2'])})"
                              for b in c["biggest_hosts"])
                  + (f"; of the web's {c['expected']:,} URLs to request, not stored: {c['expected_missing_1']:,} / "
                     f"{c['expected_missing_2']:,}" if "expected" in c else ""))
    print(f"  every pair the same pages: {'yes' if ok else 'NO'}")
    return ok


def one_round(web: Path, K: int, tmp: Path, tag: str, timeout: float = 3600) -> dict:
    flags = ["--no-stats", "--politeness-delay", "0"]
    out: dict = {}
    s1 = tmp / f"{tag}-page-hash"
    tree = worktree_state()       # the tree each session's crawl starts from (others edit it meanwhile)
    row = run_abc(K, web, s1, *flags, "--assign", "hash", keep=True, timeout=timeout)
    out["page-hash"] = {"measured": measured(row["_stats"]), "cpu_s": row["cpu_s"], "mpiexec_wall_s": row["wall_s"],
                        "worktree": tree}
    pg = repartition(s1, "page-gp", K, s1 / "partvec-page-gp.npz")
    out["page-hash"]["predicted"] = pg["baselines"]["hash"]
    s2 = tmp / f"{tag}-page-gp"
    tree = worktree_state()
    row = run_abc(K, web, s2, *flags, "--assign", str(s1 / "partvec-page-gp.npz"), keep=True, timeout=timeout)
    out["page-GP"] = {"measured": measured(row["_stats"]), "predicted": pg["predicted"], "cpu_s": row["cpu_s"],
                      "mpiexec_wall_s": row["wall_s"], "worktree": tree,
                      "partition": {k: pg["partition"].get(k) for k in ("seconds", "start", "cut", "objective")}}
    out["page-GP"]["report"] = report(s2, s1)
    expected = expected_requested(web)
    out["same_pages"] = {"page-hash/page-GP": same_pages(s1, s2, expected)}
    s3 = tmp / f"{tag}-site-hash"
    tree = worktree_state()
    row = run_abc(K, web, s3, *flags, "--assign", "site-hash", keep=True, timeout=timeout)
    out["site-hash"] = {"measured": measured(row["_stats"]), "cpu_s": row["cpu_s"], "mpiexec_wall_s": row["wall_s"],
                        "worktree": tree}
    n_hosts = len({h for h in (json.loads((web / "manifest.json").read_text()).get("hosts") or [])})
    s4 = tmp / f"{tag}-site-gp"
    if n_hosts and n_hosts < K:
        # a site model cannot give K parts to fewer than K hosts (abc-repartition refuses it)
        out["site-hash"]["predicted"] = pg["baselines"]["site-hash"]
        out["site-GP"] = {"skipped": f"{n_hosts} hosts < {K} parts: site-GP is not applicable"}
    else:
        sg = repartition(s3, "site-gp", K, s3 / "partvec-site-gp.npz")
        out["site-hash"]["predicted"] = sg["baselines"]["site-hash"]
        tree = worktree_state()
        row = run_abc(K, web, s4, *flags, "--assign", str(s3 / "partvec-site-gp.npz"), keep=True, timeout=timeout)
        out["site-GP"] = {"measured": measured(row["_stats"]), "predicted": sg["predicted"], "cpu_s": row["cpu_s"],
                          "mpiexec_wall_s": row["wall_s"], "worktree": tree,
                          "partition": {k: sg["partition"].get(k) for k in ("seconds", "start", "cut", "objective")}}
        out["site-GP"]["report"] = report(s4, s3)
        out["same_pages"]["site-hash/site-GP"] = same_pages(s3, s4, expected)
    for s in (s1, s2, s3, s4):
        shutil.rmtree(s, ignore_errors=True)
    return out


def volume_entry(rounds: list[dict], names) -> dict:
    """Medians of the measured volume/messages/imbalances over rounds, beside the predicted ones, and the
    repartition targets (page-GP against page-hash)."""
    entry: dict = {"sessions": {}}
    for name in names:
        if "skipped" in rounds[0][name]:
            entry["skipped"] = {name: rounds[0][name]["skipped"]}
            continue
        meas = medians([r[name]["measured"] for r in rounds])
        pred = rounds[0][name]["predicted"]
        # each run against its own vector's prediction (runs may partition slightly different graphs)
        per_run = [{k: (r[name]["measured"][k] / r[name]["predicted"][k] if r[name]["predicted"].get(k) else None)
                    for k in METRICS} for r in rounds]
        entry["sessions"][name] = {"measured": meas, "predicted": {k: pred.get(k) for k in METRICS},
                                   "measured_over_predicted": {
                                       k: (meas[k] / pred[k] if pred.get(k) else None) for k in METRICS},
                                   "per_run_measured_over_predicted": per_run,
                                   "per_run_max_deviation": max(
                                       (abs(v - 1) for pr in per_run for v in pr.values() if v is not None),
                                       default=None)}
    ph, pg = entry["sessions"]["page-hash"]["measured"], entry["sessions"]["page-GP"]["measured"]
    cut = ph["volume_bytes"] / pg["volume_bytes"] if pg["volume_bytes"] else float("inf")
    mop = entry["sessions"]["page-GP"]["measured_over_predicted"]
    entry["targets"] = {
        "volume_cut_x": cut, "volume_cut_met": cut >= 20,
        "storage_pct": pg["storage_pct"], "request_pct": pg["request_pct"],
        "imbalance_met": pg["storage_pct"] <= 5 and pg["request_pct"] <= 5,
        "within_10pct": {k: (abs(v - 1) <= 0.10 if v is not None else None) for k, v in mop.items()}}
    return entry


def print_volume(kind: str, web, parts: int, runs: int, entry: dict) -> None:
    print(f"\n{kind} web ({web}), K = {parts}, median of {runs} run(s); measured (predicted by the first run's "
          f"vector) [measured/predicted]:")
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
    dev = {name: s["per_run_max_deviation"] for name, s in entry["sessions"].items()}
    print("  each run against its own prediction, largest |measured/predicted - 1| over the metrics and runs: "
          + ", ".join(f"{name} {v:.2e}" for name, v in dev.items() if v is not None))
    if "skipped" in entry:
        print(f"  {entry['skipped']}")


# -- --politeness default: the wall times of session 1 (hash) and session 2 (page-GP) ---------------------

OVERLAP_EPS_S = 0.002      # nginx logs $msec and $request_time in milliseconds
BATCH_GAP_S = 0.1          # a host's gap shorter than this lies inside a batch (one keep-alive connection)
PAGE_PAIR = ("page-hash", "page-GP")
RANK_KEYS = ("requests", "idle_s", "idle_slot_s", "idle_rest_s", "idle_empty_s", "exchange_s", "handovers", "leases",
             "leases_late", "slot_cuts", "warm_cuts", "batches")


def host_timeline(rs: list[dict], rest_s: float) -> dict:
    """Where one host's span went, from its requests in the access log (sorted by start): time in
    requests, gaps inside a batch (same rank, < ``BATCH_GAP_S``), the politeness rests owed after each
    batch (up to ``rest_s`` per batch boundary) and the *excess*: the part of each boundary gap beyond
    the rest, when the host had no request although politeness allowed one (split by whether the next
    batch came from the same rank or another one: waiting for a slot, a lease, links). A batch boundary
    where the next batch came from another rank sooner than ``rest_s`` after the last response is a
    *short hand-over* (the host rested less than the politeness delay; ``rest_skipped_s`` sums the
    difference)."""
    in_req = sum(r["t_end"] - r["t_start"] for r in rs)
    inner = rests = excess = excess_other = skipped = 0.0
    boundaries = handovers = short = 0
    for a, b in zip(rs, rs[1:]):
        gap = b["t_start"] - a["t_end"]
        other = b["rank"] != a["rank"]
        if gap < BATCH_GAP_S and not other:
            inner += max(gap, 0.0)
            continue
        boundaries += 1
        rests += min(max(gap, 0.0), rest_s)
        more = max(0.0, gap - rest_s)
        excess += more
        if other:
            handovers += 1
            excess_other += more
            if gap < rest_s - OVERLAP_EPS_S:
                short += 1
                skipped += rest_s - max(gap, 0.0)
    return {"in_requests_s": round(in_req, 3), "inner_gaps_s": round(inner, 3), "batches": boundaries + 1,
            "requests_per_batch": round(len(rs) / (boundaries + 1), 2), "rests_s": round(rests, 3),
            "excess_s": round(excess, 3), "excess_rank_change_s": round(excess_other, 3),
            "rank_changes": handovers, "short_handovers": short, "rest_skipped_s": round(skipped, 3)}


def log_figures(rows: list[dict], rest_s: float, top: int = 3) -> dict:
    """Exactly-once and per-host figures of one session from the server's access log
    (:func:`nginx.read_access_log` rows): requests and distinct (host, path) without robots.txt and
    sitemap files, paths
    asked more than once, requests to one host from two ranks at once, the biggest hosts' span and
    its timeline (:func:`host_timeline`), and when each rank's last request ended."""
    # robots.txt and the seed hosts' /sitemap.xml (--sitemaps, the default) are no page requests
    pages = [r for r in rows if r["path"] not in ("/robots.txt", "/sitemap.xml")]
    seen = Counter((r["host"], r["path"]) for r in pages)
    by_host: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_host[r["host"]].append(r)
    t0 = min((r["t_start"] for r in rows), default=0.0)
    overlaps: Counter = Counter()
    hosts = []
    for host, rs in by_host.items():
        rs.sort(key=lambda r: r["t_start"])
        ends: dict[int, float] = {}          # rank -> latest end of its requests to this host so far
        for r in rs:
            if any(e > r["t_start"] + OVERLAP_EPS_S for rk, e in ends.items() if rk != r["rank"]):
                overlaps[host] += 1
            ends[r["rank"]] = max(ends.get(r["rank"], 0.0), r["t_end"])
        ranks = Counter(r["rank"] for r in rs if r["path"] != "/robots.txt")
        hosts.append({"host": host, "requests": sum(ranks.values()), "ranks": dict(sorted(ranks.items())),
                      "first_s": round(rs[0]["t_start"] - t0, 3), "last_s": round(max(ends.values()) - t0, 3),
                      "span_s": round(max(ends.values()) - rs[0]["t_start"], 3), "_rows": rs})
    hosts.sort(key=lambda h: -h["requests"])
    for h in hosts[:top]:
        h["timeline"] = host_timeline(h["_rows"], rest_s)
    rank_last: dict[int, float] = {}
    for r in rows:
        rank_last[r["rank"]] = max(rank_last.get(r["rank"], 0.0), r["t_end"] - t0)
    return {"log_requests": len(pages), "log_distinct": len(seen),
            "log_repeated": sum(c - 1 for c in seen.values() if c > 1),
            "repeated_statuses": dict(Counter(r["status"] for r in pages if seen[(r["host"], r["path"])] > 1)),
            "robots": len(rows) - len(pages), "host_overlaps": sum(overlaps.values()),
            "overlap_hosts": dict(overlaps.most_common(5)),
            "hosts": [{k: v for k, v in h.items() if k != "_rows"} for h in hosts[:top]],
            "rank_last_request_s": {rk: round(t, 3) for rk, t in sorted(rank_last.items())}}


def time_figures(st: dict) -> dict:
    """What bounded a session (stats.json ``bounds`` and the per-rank idle split, summed over ranks)."""
    b, pr = st["bounds"], st["per_rank"]
    tot = lambda k: round(sum(p.get(k) or 0 for p in pr), 3)  # noqa: E731
    top = b["hosts"][0] if b["hosts"] else {}
    return {"crawl_wall_s": st["wall_s"], "host_bound_s": b["host_bound_s"], "bound_host": top.get("host"),
            "bound_host_requests": top.get("requests"), "busy_max_s": max(b["rank_busy_s"]),
            "busy_mean_s": round(statistics.fmean(b["rank_busy_s"]), 3), "exchange_max_s": max(b["exchange_s"]),
            "idle_s": tot("idle_s"), "idle_slot_s": tot("idle_slot_s"), "idle_rest_s": tot("idle_rest_s"),
            "idle_empty_s": tot("idle_empty_s"), "handovers": tot("handovers"), "leases": tot("leases"),
            "leases_late": tot("leases_late"), "slot_cuts": tot("slot_cuts"), "warm_cuts": tot("warm_cuts"),
            "supersteps": st["exchange"]["supersteps"],
            # newer crawlers: the statistics kernels' thread, after the crawl and in all
            "kernel_lag_s": st.get("graph", {}).get("kernel_lag_s"), "kernel_cpu_s": st.get("graph", {}).get("kernel_cpu_s")}


def crawler_source() -> dict:
    """Where the abc-crawl that runs comes from (the venv's package) and its commit: the bench
    script may run another checkout's crawler (``OTHER/.venv/bin/python bench/repartition.py``)."""
    r = subprocess.run([str(BIN / "python"), "-c", "import abc_crawler, os; print(os.path.dirname(abc_crawler.__file__))"],
                       capture_output=True, text=True, timeout=60, cwd="/")      # not the current directory's
    path = r.stdout.strip()
    commit = subprocess.run(["git", "-C", path or ".", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            timeout=10).stdout.strip() if path else ""
    return {"package": path, "commit": commit or None}


def top_cpu(n: int = 8) -> list[str]:
    """The load average and the processes using the most CPU over two seconds (``top``; the machine is
    shared): ``%CPU command line``."""
    r = subprocess.run(["top", "-b", "-n", "2", "-d", "2", "-w", "200", "-c", "-o", "%CPU"], capture_output=True,
                       text=True, timeout=60)
    lines = r.stdout.split("\ntop - ")[-1].splitlines()     # the second sample
    start = next((i for i, line in enumerate(lines) if line.split()[:1] == ["PID"]), len(lines))
    procs = [line.split() for line in lines[start + 1:start + 1 + n]]
    return ["load average " + lines[0].split("load average:")[-1].strip()] + [
        " ".join(f[8:9] + f[11:])[:150] for f in procs if len(f) > 11]


def timed_session(web: Path, K: int, session: Path, assign: str, logdir: Path, keep: Path | None = None,
                  extra: tuple[str, ...] = ()) -> dict:
    """One crawl with every setting at its default, served by its own nginx with an access log.

    ``start_s``: launch to the crawl's start (the phase warm-up origin on rank 0's clock: start-up,
    reading the assignment, the holder table, the clock synchronization); ``tail_s``: the crawl's end
    to the exit of mpiexec (writing the session, waiting for the statistics kernels' thread)."""
    log = logdir / f"{session.name}.access.json"
    load0 = os.getloadavg()
    with nginx.serve(web, access_log=str(log), max_seconds=3600):
        t_launch = time.time()
        row = run_abc(K, web, session, "--assign", assign, *extra, keep=True, timeout=3000)
        t_exit = time.time()
    load1 = os.getloadavg()      # nginx stopped: its log buffer is flushed
    st = row["_stats"]
    rest_s = json.loads((session / "manifest.json").read_text())["config"]["politeness_delay"]
    origin = st["per_rank"][0].get("phase_origin")
    out = {"wall_s": row["wall_s"], "cpu_s": row["cpu_s"], "measured": measured(st), "time": time_figures(st),
           "log": log_figures(nginx.read_access_log(log), rest_s), "bounds": st["bounds"],
           "per_rank": {k: [p.get(k) for p in st["per_rank"]] for k in RANK_KEYS} | {
               "busy_s": st["bounds"]["rank_busy_s"]},
           "load": [round(x, 2) for x in (*load0, *load1)]}
    if origin:
        out["time"]["start_s"] = round(origin - t_launch, 3)
        out["time"]["tail_s"] = round(t_exit - origin - st["wall_s"], 3)
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        shutil.move(str(log), keep / log.name)
        shutil.copytree(session, keep / session.name, ignore=shutil.ignore_patterns("warc", "checkpoint"))
    else:
        log.unlink()
    return out


def web_size(web: Path) -> dict:
    """A web's hosts, URLs and the URLs a complete crawl requests (a generated web's manifest: ``counts``,
    ``expected.requested``), and its biggest hosts by those."""
    man = json.loads((web / "manifest.json").read_text())
    req = (man.get("expected") or {}).get("requested") or []
    by_host = Counter(host_of(u) for u in req)
    return {"hosts": len(man.get("hosts") or []), "urls": len(man.get("pages") or {}), "requested": len(req),
            "counts": man.get("counts"), "biggest_hosts_requested": dict(by_host.most_common(3))}


def expected_requested(web: Path) -> set[str] | None:
    """The URLs a complete crawl of a generated web requests (its manifest's ``expected.requested``)."""
    try:
        req = (json.loads((web / "manifest.json").read_text()).get("expected") or {}).get("requested")
    except (OSError, ValueError):
        return None
    return set(req) if req else None


def worktree_state() -> dict:
    """The crawler's uncommitted changes (other developers edit the tree while a benchmark runs): the
    changed files and a digest of ``git diff HEAD`` and of the untracked files over the crawler's
    packages (empty: the commit as it is)."""
    dirs = ["abc_crawler", "kernels", "partition"]
    st = [x for x in subprocess.run(["git", "-C", str(harness.ROOT), "status", "--porcelain", *dirs],
                                    capture_output=True, text=True, timeout=30).stdout.split("\n") if x.strip()]
    h = hashlib.sha256(subprocess.run(["git", "-C", str(harness.ROOT), "diff", "HEAD", "--", *dirs],
                                      capture_output=True, timeout=60).stdout)
    for x in st:
        f = harness.ROOT / x[3:]
        if x.startswith("??") and f.is_file():
            h.update(x.encode() + f.read_bytes())
    head = subprocess.run(["git", "-C", str(harness.ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, timeout=10).stdout.strip()
    return {"head": head, "changed": st, "diff_sha256": h.hexdigest()[:16] if st else "",
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def vector_digest(path: Path) -> str:
    """SHA-256 of a part vector's assignment (URL and host fingerprints and ranks)."""
    import numpy as np

    h = hashlib.sha256()
    with np.load(path, allow_pickle=False) as z:
        for k in ("url_fp", "url_rank", "host_fp", "host_rank"):
            h.update(z[k].tobytes())
    return h.hexdigest()[:16]


def timed_pair(web: Path, K: int, tmp: Path, tag: str, prev: tuple[Path, dict] | None,
               keep: Path | None = None, extra: tuple[str, ...] = ()) -> tuple[dict, tuple[Path, dict]]:
    """Session 1 (hash) and session 2 (page-GP); ``prev`` = (vector, abc-repartition output) of the
    previous run on this web: then session 2 runs first, on it."""
    s1, s2 = tmp / f"{tag}-page-hash", tmp / f"{tag}-page-gp"
    vec = tmp / f"{tag}-partvec-page-gp.npz"
    out: dict = {}

    def hash_then_partition() -> dict:
        out["page-hash"] = timed_session(web, K, s1, "hash", tmp, keep, extra)
        pg = repartition(s1, "page-gp", K, vec)
        out["page-hash"]["predicted"] = pg["baselines"]["hash"]
        return pg

    if prev is None:
        out["order"] = "hash, GP"
        pg = hash_then_partition()
        used = (vec, pg)
    else:
        out["order"] = "GP (previous run's vector), hash"
        used = prev
    out["page-GP"] = timed_session(web, K, s2, str(used[0]), tmp, keep, extra)
    out["page-GP"]["predicted"] = used[1]["predicted"]
    out["page-GP"]["partition"] = {k: used[1]["partition"].get(k) for k in ("seconds", "start", "cut", "objective")}
    if prev is not None:
        pg = hash_then_partition()
        out["vector_same_as_previous"] = vector_digest(vec) == vector_digest(prev[0])
    out["vector"] = vector_digest(used[0])
    for s in (s1, s2):
        shutil.rmtree(s, ignore_errors=True)
    w1, w2 = out["page-hash"]["wall_s"], out["page-GP"]["wall_s"]
    c1, c2 = out["page-hash"]["time"]["crawl_wall_s"], out["page-GP"]["time"]["crawl_wall_s"]
    out["ratio"] = w2 / w1
    out["crawl_ratio"] = c2 / c1 if c1 else None
    return out, (vec, pg)


def exactly_once(sess: dict) -> dict:
    """Every page exactly once: no URL reported by two ranks, as many requests as distinct paths the
    server saw, no two ranks on one host at once, and every path the server saw twice explained by a
    request cut at a slot's end and asked again (``slot_cuts``)."""
    m, lg, t = sess["measured"], sess["log"], sess["time"]
    return {"overlap_pages": m["overlap_pages"], "requests": m["requests"], "log_distinct": lg["log_distinct"],
            "log_repeated": lg["log_repeated"], "slot_cuts": t["slot_cuts"], "host_overlaps": lg["host_overlaps"],
            "ok": m["overlap_pages"] == 0 and m["requests"] == lg["log_distinct"] and lg["host_overlaps"] == 0
            and lg["log_repeated"] <= t["slot_cuts"]}


def timing_entry(rounds: list[dict]) -> dict:
    """Per-run and median wall times and ratios of a web's pairs. The goal is checked on the crawl's
    wall time (stats.json ``wall_s``); mpiexec's wall time adds start-up and the session's writing."""
    sess = {}
    for name in PAGE_PAIR:
        rs = [r[name] for r in rounds]
        sess[name] = {"wall_s": statistics.median(x["wall_s"] for x in rs),
                      "crawl_wall_s": statistics.median(x["time"]["crawl_wall_s"] for x in rs),
                      "time": medians([x["time"] for x in rs]),
                      "exactly_once": [exactly_once(x) for x in rs]}
    med = statistics.median(r["crawl_ratio"] for r in rounds)
    return {"per_run": [{"order": r["order"], "hash_crawl_wall_s": r["page-hash"]["time"]["crawl_wall_s"],
                         "gp_crawl_wall_s": r["page-GP"]["time"]["crawl_wall_s"], "crawl_ratio": r["crawl_ratio"],
                         "hash_wall_s": r["page-hash"]["wall_s"], "gp_wall_s": r["page-GP"]["wall_s"],
                         "ratio": r["ratio"], "vector_same_as_previous": r.get("vector_same_as_previous")}
                        for r in rounds],
            "median_crawl_ratio": med, "median_ratio": statistics.median(r["ratio"] for r in rounds),
            "ratio_of_median_crawl_walls": sess["page-GP"]["crawl_wall_s"] / sess["page-hash"]["crawl_wall_s"],
            "goal_met": med <= 1.1, "sessions": sess,
            "exactly_once_all_runs": all(e["ok"] for s in sess.values() for e in s["exactly_once"])}


def print_timing(kind: str, entry: dict, rounds: list[dict]) -> None:
    print(f"\n{kind}: wall time of session 2 (page-GP) against session 1 (hash), every crawl setting at its default")
    print("  crawl = stats.json wall_s (first request to last response); mpiexec = launch to exit (adds start-up, "
          "session writing, the statistics kernels' catching up)")
    print(f"  {'run':>3s}  {'order':32s} {'crawl hash':>10s} {'GP':>6s} {'ratio':>6s}   {'mpiexec hash':>12s} {'GP':>6s}"
          f" {'ratio':>6s}  load 1-min before/after (hash; GP)")
    for i, (r, row) in enumerate(zip(rounds, entry["per_run"])):
        lh, lg = r["page-hash"]["load"], r["page-GP"]["load"]
        print(f"  {i + 1:3d}  {row['order']:32s} {row['hash_crawl_wall_s']:10.1f} {row['gp_crawl_wall_s']:6.1f}"
              f" {row['crawl_ratio']:6.3f}   {row['hash_wall_s']:12.1f} {row['gp_wall_s']:6.1f} {row['ratio']:6.3f}"
              f"  {lh[0]:.1f}/{lh[3]:.1f}; {lg[0]:.1f}/{lg[3]:.1f}")
    s1, s2 = entry["sessions"]["page-hash"], entry["sessions"]["page-GP"]
    print(f"  median crawl wall: hash {s1['crawl_wall_s']:.1f} s, GP {s2['crawl_wall_s']:.1f} s; median ratio "
          f"{entry['median_crawl_ratio']:.3f} (goal <= 1.1: {'met' if entry['goal_met'] else 'MISSED'}); mpiexec wall: "
          f"hash {s1['wall_s']:.1f} s, GP {s2['wall_s']:.1f} s, median ratio {entry['median_ratio']:.3f}")
    print("  what bounded each session (medians over runs; idle seconds summed over ranks):")
    for name, s in entry["sessions"].items():
        t = s["time"]
        print(f"    {name:9s} crawl {t['crawl_wall_s']:.1f} s (start-up {t.get('start_s', float('nan')):.1f} s, tail "
              f"{t.get('tail_s', float('nan')):.1f} s) | biggest host's politeness bound {t['host_bound_s']:.1f} s "
              f"({t['bound_host_requests']:.0f} requests) | busiest rank {t['busy_max_s']:.1f} s (mean "
              f"{t['busy_mean_s']:.1f}) | exchange max {t['exchange_max_s']:.1f} s | idle slot {t['idle_slot_s']:.1f} / "
              f"rest {t['idle_rest_s']:.1f} / empty {t['idle_empty_s']:.1f} s | handovers {t['handovers']:.0f}, leases "
              f"{t['leases']:.0f} (late {t['leases_late']:.0f}), slot cuts {t['slot_cuts']:.0f}"
              + (f" | kernels after the crawl {t['kernel_lag_s']:.1f} s, {t['kernel_cpu_s']:.1f} CPU-s in all"
                 if t.get("kernel_lag_s") is not None and t.get("kernel_cpu_s") is not None else ""))
    print("  biggest hosts in the server's log, per run: requests by rank; first request .. last response; span = "
          "in requests + gaps inside batches + rests + excess (of which the next batch on another rank)")
    for i, r in enumerate(rounds):
        for name in PAGE_PAIR:
            for h in r[name]["log"]["hosts"][:2]:
                tl = h["timeline"]
                print(f"    {i + 1} {name:9s} {h['host']:22s} {h['requests']:5d} {h['ranks']}; {h['first_s']:.1f} .. "
                      f"{h['last_s']:.1f} s; span {h['span_s']:.1f} = {tl['in_requests_s']:.1f} + "
                      f"{tl['inner_gaps_s']:.1f} + {tl['rests_s']:.1f} + {tl['excess_s']:.1f} ({tl['excess_rank_change_s']:.1f})"
                      f" s; {tl['batches']} batches of {tl['requests_per_batch']:.1f}; {tl['rank_changes']} changes of "
                      f"rank, {tl['short_handovers']} sooner than the rest ({tl['rest_skipped_s']:.1f} s of rest skipped)")
    print("  every page exactly once (per run: overlap_pages; requests = distinct logged; logged twice <= slot cuts; "
          "host overlaps):")
    for name, s in entry["sessions"].items():
        cells = "; ".join(f"{e['overlap_pages']}, {e['requests']} = {e['log_distinct']}, {e['log_repeated']} <= "
                          f"{e['slot_cuts']:.0f}, {e['host_overlaps']}" for e in s["exactly_once"])
        print(f"    {name:9s} {cells}")
    print(f"  exactly once in every run: {'yes' if entry['exactly_once_all_runs'] else 'NO'}")


def timed_main(a, webs: list[str], web_dirs: dict) -> dict:
    """``--politeness default``: paired runs, the webs taking turns, the order in a pair alternating."""
    result = {"benchmark": "repartition-default-politeness", "args": vars(a), "webs": {},
              "crawler": crawler_source(), "busy_at_start": top_cpu()}
    print(f"crawler: {result['crawler']['package']} at {result['crawler']['commit']}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="abc-repart-"))
    rounds: dict[str, list[dict]] = {k: [] for k in webs}
    prev: dict[str, tuple[Path, dict] | None] = {k: None for k in webs}
    try:
        for run in range(a.runs):
            for kind in harness.rotated(webs, run):
                r, last = timed_pair(web_dirs[kind], a.parts, tmp, f"{kind}-{run}", prev[kind] if run % 2 else None,
                                     Path(a.keep) if a.keep else None, tuple(a.crawl_arg))
                if prev[kind] is not None and prev[kind][0] != last[0]:
                    prev[kind][0].unlink(missing_ok=True)
                prev[kind] = last
                rounds[kind].append(r)
                print(f"[{kind} run {run + 1}/{a.runs}] {r['order']}: hash {r['page-hash']['wall_s']:.1f} s, "
                      f"GP {r['page-GP']['wall_s']:.1f} s, ratio {r['ratio']:.3f}", flush=True)
        result["busy_at_end"] = top_cpu()
        for kind in webs:
            entry = {"web": str(web_dirs[kind]), **timing_entry(rounds[kind]),
                     "volume": volume_entry(rounds[kind], PAGE_PAIR), "raw": rounds[kind]}
            result["webs"][kind] = entry
            print_volume(kind, web_dirs[kind], a.parts, a.runs, entry["volume"])
            print_timing(kind, entry, rounds[kind])
        print("\nbusiest processes at the start:\n  " + "\n  ".join(result["busy_at_start"]))
        print("and at the end:\n  " + "\n  ".join(result["busy_at_end"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--web", choices=["synthetic", "corpus", "both"], default="both")
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--runs", type=int, default=None, help="default 1 (3 with --politeness default)")
    ap.add_argument("--politeness", choices=["zero", "default"], default="zero",
                    help="zero: --politeness-delay 0 --no-stats, all four sessions (volume, imbalance); default: "
                         "every crawl setting at its default, page-hash and page-GP only, with wall times")
    ap.add_argument("--hosts", type=int, default=400)
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=18081)
    ap.add_argument("--communities", type=int, default=0,
                    help="synthetic web with C host communities (abc-testweb generate --communities; 0: off)")
    ap.add_argument("--community-locality", type=float, default=None,
                    help="with --communities: P(cross-host link stays in its community) (default 0.9)")
    ap.add_argument("--crawl-arg", action="append", default=[], metavar="ARG",
                    help="with --politeness default: one more abc-crawl argument for both sessions, e.g. "
                         "--crawl-arg=--no-stats (repeatable)")
    ap.add_argument("--keep", default=None, metavar="DIR",
                    help="with --politeness default: keep each session (without WARC files and checkpoints) and "
                         "its access log in DIR")
    ap.add_argument("--session-timeout", type=float, default=3600,
                    help="seconds one crawl may take before it is killed (default 3600)")
    ap.add_argument("--out", default=None, help="default bench/results/repartition[-default]-WEB.json")
    a = ap.parse_args()
    if a.community_locality is not None and not a.communities:
        ap.error("--community-locality needs --communities C")
    if a.runs is None:
        a.runs = 3 if a.politeness == "default" else 1
    if a.runs < 1:
        ap.error("--runs must be >= 1")
    if (a.crawl_arg or a.keep) and a.politeness != "default":
        ap.error("--crawl-arg and --keep need --politeness default")
    tag = "repartition-" + ("default-" if a.politeness == "default" else "") + a.web
    if a.communities:
        tag += f"-c{a.communities}" + (f"-l{a.community_locality:g}" if a.community_locality is not None else "")
    if a.crawl_arg:
        tag += "-" + re.sub(r"[^A-Za-z0-9.]+", "-", " ".join(a.crawl_arg)).strip("-")
    title = f"Repartition between sessions, K = {a.parts}" + (
        ", every crawl setting at its default" if a.politeness == "default" else "") + (
        f" but {' '.join(a.crawl_arg)}" if a.crawl_arg else "")
    print(harness.describe_header(title, ["pymetis", "cmeel-metis"]), flush=True)
    webs = ["synthetic", "corpus"] if a.web == "both" else [a.web]
    web_dirs = {kind: harness.generated_web(a.hosts, a.pages, a.seed, a.port, a.communities, a.community_locality)
                if kind == "synthetic" else corpus.prepare(corpus.DEFAULT_OUT, port=8080) for kind in webs}
    if a.politeness == "default":
        path = write_result(tag, timed_main(a, webs, web_dirs), a.out)
        print(f"wrote {path}")
        return 0
    result = {"benchmark": "repartition", "args": vars(a), "webs": {}, "crawler": crawler_source(),
              "worktree_at_start": worktree_state(), "busy_at_start": top_cpu()}
    tmp = Path(tempfile.mkdtemp(prefix="abc-repart-"))
    all_same = True
    try:
        for kind in webs:
            web = web_dirs[kind]
            rounds = []
            print(f"{kind} web: {web_size(web)}", flush=True)
            # nginx stops by itself after this: a crawl's timeout per session, and the partitioning and reports
            with nginx.serve(web, max_seconds=a.runs * 6 * a.session_timeout + 600):
                for run in range(a.runs):
                    t0 = time.time()
                    rounds.append(one_round(web, a.parts, tmp, f"{kind}-{run}", a.session_timeout))
                    print(f"[{kind} run {run + 1}/{a.runs}] done in {time.time() - t0:.0f} s: mpiexec wall "
                          + ", ".join(f"{n} {rounds[-1][n]['mpiexec_wall_s']:.1f} s (tree {rounds[-1][n]['worktree']['head']}"
                                      f"+{rounds[-1][n]['worktree']['diff_sha256'][:8] or 'clean'})" for n in
                                      ("page-hash", "page-GP", "site-hash", "site-GP")
                                      if "mpiexec_wall_s" in rounds[-1].get(n, {})), flush=True)
            entry = {"web": str(web), "web_size": web_size(web),
                     **volume_entry(rounds, ("page-hash", "page-GP", "site-hash", "site-GP")), "raw": rounds}
            same = print_same_pages(kind, rounds)
            entry["same_pages"] = {"all_same": same,
                                   "per_run": [r.get("same_pages", {}) for r in rounds]}
            all_same = all_same and same
            result["webs"][kind] = entry
            print_volume(kind, web, a.parts, a.runs, entry)
            result["worktree_at_end"] = worktree_state()
            result["busy_at_end"] = top_cpu()
            result["same_pages_all"] = all_same
            path = write_result(tag, result, a.out)
        print(f"wrote {path}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not all_same:
        print("a repartitioned session did not store the same pages as its hash session", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
