#!/usr/bin/env python
"""GraphBench for the live-statistics kernels, in the spirit of SPAWC Appendix C.

Every graph is an edge *insertion sequence* (``abc_crawler.kernels.graphs``):
Ausiello's sequence needing Omega(n^3) distance updates (a300, a900, a1500),
complete graphs (c100 .. c800), the small sanity graphs (sc1 .. sc3), a
synthetic crawl-order web graph (crawl<n>), and optionally the crawled graph
of a session (``--session DIR``, edges in crawl order from ``graph.npz``).

For each graph the edges are fed in batches (``--batch``) to the APSD and SCC
kernels and to the whole :class:`GraphStats` facade, and the script prints

* n, edges (insertions), CPU seconds (median of ``--runs``), microseconds
  per edge, and the peak memory traced during the run (tracemalloc sees the
  kernels' ``PyMem_Raw*`` blocks and NumPy buffers) as MiB and per n^2
  (``--search scan`` times APSD with the paper's column scan instead of
  the in-edge search);
* the baseline of recomputing all-pairs BFS with scipy after every batch
  (``shortest_path(unweighted=True)``); when there are more batches than
  ``--scipy-samples``, that many evenly spaced batches are timed and the
  total is extrapolated (marked ``~``);
* NetworKit's ``DynAPSP`` fed the same batches (``updateBatch``), if
  ``networkit`` is importable, in a subprocess with ``--nk-timeout``.

With ``--whole`` it measures the whole-graph statistics of issue 22 instead,
on crawl-order sequences fed in batches of ``--whole-nodes`` new pages (a
superstep of 8 ranks x 256 pages by default), as the coordinator does:

* :class:`WholeSCC` per batch (one two-way search per batch over the
  condensation): seconds, microseconds per insertion, the slowest batch,
  list entries read, bytes per node;
* one recomputation at the final size by the kernel's Tarjan
  (``scc_of_csr``) and by scipy's ``connected_components``, and scipy per
  batch (sampled, extrapolated);
* HyperBall on the final graph (``--log2m``): seconds per pass, passes,
  bytes per node, and the estimate of an all-sources BFS (scipy from
  ``--bfs-sources`` sources, scaled to n).

Usage::

    python bench/graphbench.py                 # the full set (tens of minutes)
    python bench/graphbench.py --quick         # small graphs, one run, seconds
    python bench/graphbench.py --graphs a300,c200 --runs 5
    python bench/graphbench.py --session sessions/s1 --markdown
    python bench/graphbench.py --whole --markdown       # crawl200000, crawl1000000d11 (minutes)
    python bench/graphbench.py --whole --graphs crawl20000 --session sessions/s1
    # issue 4 at n = 20000: APSD+SCC only, no uint8 probe run, NetworKit once
    python bench/graphbench.py --graphs crawl20000 --kernels apsd,scc --dtype uint8 \
        --nk-runs 1 --nk-timeout 1500 --scipy-samples 6 --grow --rss

Seconds are CPU seconds of this process (``time.process_time``): the
kernels are single-threaded, so on an idle machine they equal wall time, and
they are less disturbed by other load.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np

from abc_crawler.kernels import (APSD, SCC, DistanceOverflowError, GraphStats, HyperBall, WholeSCC, graphs,
                                 scc_of_csr)
from abc_crawler.kernels.graphs import EdgeSequence

FULL = ["sc1", "sc2", "sc3", "a300", "a900", "a1500", "c100", "c200", "c400", "c800", "crawl5000"]
QUICK = ["sc1", "sc2", "sc3", "a300", "c100", "c200", "crawl1500"]
MiB = 1024 * 1024


# ------------------------------------------------------------------- graphs
def make_graph(name: str) -> EdgeSequence:
    """The insertion sequence called ``name`` (see the module docstring)."""
    if name.startswith("session:"):
        return graphs.from_session(name[len("session:"):])
    sanity = {g.name: g for g in graphs.sanity_graphs()}
    if name in sanity:
        return sanity[name]
    m = re.fullmatch(r"crawl(\d+)d(\d+(?:\.\d+)?)", name)
    if m:                                   # crawl<n>d<average out-degree>
        g = graphs.crawl_like(int(m.group(1)), avg_out=float(m.group(2)))
        return g._replace(name=name)
    for prefix, make in (("crawl", graphs.crawl_like), ("a", graphs.ausiello), ("c", graphs.complete)):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return make(int(name[len(prefix):]))
    raise SystemExit(f"graphbench: unknown graph {name!r} (try {', '.join(FULL)}, crawl<n>, crawl<n>d<deg>, a<n>, c<n>)")


def batches(g: EdgeSequence, size: int):
    for lo in range(0, g.m, size):
        yield g.src[lo:lo + size], g.dst[lo:lo + size]


# ------------------------------------------------------------ measurements
GROW = False            # set from --grow


def feed(kernel, g: EdgeSequence, batch: int):
    """Insert every batch; with --grow, first add the nodes the batch needs
    (the coordinator adds a page's node when it is crawled)."""
    for s, d in batches(g, batch):
        if GROW:
            need = max(int(s.max()), int(d.max())) + 1
            have = kernel.nodes if isinstance(kernel, GraphStats) else kernel.n
            if need > have:
                kernel.add_nodes(need - have)
        kernel.add_edges(s, d)
    return kernel


SEARCH = "auto"          # set from --search


def make_apsd(g, dtype):
    return APSD(0 if GROW else g.n, dtype=dtype, search=SEARCH)


def make_scc(g, _dtype):
    return SCC(0 if GROW else g.n)


def make_stats(g, dtype):
    gs = GraphStats(max_nodes=g.n, apsd_dtype=dtype)
    if not GROW:
        gs.add_nodes(g.n)
    return gs


def cpu_seconds(make, g, dtype, batch, runs):
    """Median CPU seconds of building the kernel and inserting every batch."""
    times = []
    for _ in range(runs):
        t = time.process_time()
        feed(make(g, dtype), g, batch)
        times.append(time.process_time() - t)
    return statistics.median(times), times


def peak_bytes(make, g, dtype, batch):
    """Peak traced memory of one run, and the kernel's final state."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        k = feed(make(g, dtype), g, batch)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base, k


def scipy_baseline(g: EdgeSequence, batch: int, samples: int):
    """CPU seconds of one scipy all-pairs BFS after every batch (total).

    Returns (seconds, exact): with more batches than ``samples``, only
    ``samples`` evenly spaced prefixes are timed and the mean is scaled.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    ends = list(range(batch, g.m, batch)) + [g.m]
    exact = len(ends) <= samples
    chosen = ends if exact else [ends[int(i)] for i in np.linspace(0, len(ends) - 1, samples)]
    spent = 0.0
    for end in chosen:
        t = time.process_time()
        a = csr_matrix((np.ones(end), (g.src[:end], g.dst[:end])), shape=(g.n, g.n))
        shortest_path(a, method="D", directed=True, unweighted=True)
        spent += time.process_time() - t
    return (spent if exact else spent / len(chosen) * len(ends)), exact


def networkit_worker(name: str, batch: int) -> None:
    """Subprocess body: feed NetworKit's DynAPSP, print JSON to stdout."""
    import networkit as nk

    g = make_graph(name)
    rss0 = _reset_peak_rss()
    G = nk.Graph(g.n, weighted=False, directed=True)
    apsp = nk.distance.DynAPSP(G)
    apsp.run()
    add = nk.dynamics.GraphEventType.EDGE_ADDITION
    t = time.process_time()
    for s, d in batches(g, batch):
        events = []
        for u, v in zip(s.tolist(), d.tolist()):
            if u != v and not G.hasEdge(u, v):
                G.addEdge(u, v)
                events.append(nk.dynamics.GraphEvent(add, u, v, 1.0))
        if events:
            apsp.updateBatch(events)
    seconds = time.process_time() - t
    print(json.dumps({"seconds": seconds, "rss_growth": _peak_rss() - rss0,
                      "version": nk.__version__}))


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def _reset_peak_rss() -> int:
    """Current RSS in bytes, after resetting the peak to it where Linux allows."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status_kib("VmRSS") * 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _peak_rss() -> int:
    try:
        return _status_kib("VmHWM") * 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def networkit_baseline(name: str, batch: int, timeout: float):
    """(seconds, peak RSS growth) of NetworKit DynAPSP, or a reason it has none."""
    try:
        import networkit  # noqa: F401
    except ImportError:
        return None, "networkit not installed"
    cmd = [sys.executable, os.path.abspath(__file__), "--networkit-worker", name, "--batch", str(batch)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None, f"> {timeout:g} s"
    except subprocess.CalledProcessError as exc:
        return None, f"failed: {exc.stderr.strip().splitlines()[-1:]}"
    return json.loads(out.stdout.strip().splitlines()[-1]), None


# ----------------------------------------------------------------- the run
KERNELS = (("apsd", make_apsd), ("scc", make_scc), ("stats", make_stats))


def rss_worker(spec: str, batch: int) -> None:
    """Subprocess body: feed one kernel, print its peak RSS growth as JSON."""
    kind, name, dtype = spec.split(":", 2)
    g = make_graph(name)
    make = dict(KERNELS)[kind]
    base = _reset_peak_rss()
    feed(make(g, np.dtype(dtype).type), g, batch)
    print(json.dumps({"rss_growth": _peak_rss() - base}))


def rss_growth(kind: str, name: str, dtype, args):
    """Peak RSS growth of one run of a kernel in a fresh process (bytes), or None."""
    cmd = [sys.executable, os.path.abspath(__file__), "--rss-worker", f"{kind}:{name}:{np.dtype(dtype).name}",
           "--batch", str(args.batch), "--search", args.search] + (["--grow"] if GROW else [])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=3600)
    except (subprocess.SubprocessError, OSError):
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])["rss_growth"]


def bench_graph(name: str, args) -> dict:
    """Every figure of one graph.  The runs are interleaved: run r times APSD,
    SCC, GraphStats and (with baselines) NetworKit one after the other, so
    that load from other jobs hits every side alike; medians are reported."""
    g = make_graph(name)
    row = {"graph": g.name, "n": g.n, "edges": g.m, "grow": GROW}
    # uint8 unless some distance reaches 255 hops; then uint16 (reported).
    # --dtype uint8/uint16 skips this extra APSD run.
    dtype, overflow = np.uint8, None
    if args.dtype != "auto":
        dtype = np.dtype(args.dtype).type
    else:
        try:
            feed(make_apsd(g, dtype), g, args.batch)
        except DistanceOverflowError as exc:
            dtype, overflow = np.uint16, str(exc)
    row["apsd_dtype"] = np.dtype(dtype).name
    row["uint8_overflow"] = overflow
    kernels = [(key, make) for key, make in KERNELS if key in args.kernels]
    times = {key: [] for key, _ in kernels}
    nk_runs, nk_why = [], None
    for _ in range(args.runs):
        for key, make in kernels:
            t = time.process_time()
            feed(make(g, dtype), g, args.batch)
            times[key].append(time.process_time() - t)
        if not args.no_baselines and nk_why is None and len(nk_runs) < args.nk_runs:
            nk_result, nk_why = networkit_baseline(name, args.batch, args.nk_timeout)
            if nk_result:
                nk_runs.append(nk_result)
    for key, make in kernels:
        med = statistics.median(times[key])
        peak, k = peak_bytes(make, g, dtype, args.batch)
        row[key] = {"seconds": med, "runs": times[key], "us_per_edge": 1e6 * med / max(g.m, 1),
                    "peak_bytes": peak, "peak_per_n2": peak / max(g.n * g.n, 1)}
        if key in ("apsd", "scc") and args.rss:
            rss = rss_growth(key, name, dtype, args)
            row[key]["rss_growth"] = rss
            row[key]["rss_per_n2"] = None if rss is None else rss / max(g.n * g.n, 1)
        if key == "apsd":
            row["diameter"], row["avg_distance"] = k.diameter, k.avg_distance
            row["updates"], row["apsd_search"] = k.updates, k.search
        elif key == "scc":
            row["scc_count"] = k.count
    if not args.no_baselines:
        seconds, exact = scipy_baseline(g, args.batch, args.scipy_samples)
        row["scipy"] = {"seconds": seconds, "exact": exact,
                        "batches": -(-g.m // args.batch)}
        if nk_runs:
            row["networkit"] = {"seconds": statistics.median(r["seconds"] for r in nk_runs),
                                "runs": [r["seconds"] for r in nk_runs],
                                "rss_growth": max(r["rss_growth"] for r in nk_runs),
                                "version": nk_runs[0]["version"]}
        else:
            row["networkit"] = {"skipped": nk_why}
    return row


def print_goals(rows) -> None:
    """Issue 4's goals (a) and (c), per graph, from the figures above."""
    for r in rows:
        n2 = r["n"] * r["n"]
        ours = r["apsd"]["seconds"] + r["scc"]["seconds"]
        nk = r.get("networkit", {})
        line = f"# goals {r['graph']}:"
        if "seconds" in nk:
            line += (f" (a) NetworKit {nk['seconds']:.3g} s / (APSD {r['apsd']['seconds']:.3g} + "
                     f"SCC {r['scc']['seconds']:.3g} s) = {nk['seconds'] / ours:.2f}x (goal >= 2);")
        a, c = r["apsd"], r["scc"]
        line += (f" (c) peak traced APSD {a['peak_per_n2']:.3f} n^2 (goal <= 1.2), "
                 f"SCC {c['peak_per_n2']:.4f} n^2 (goal <= 0.125)")
        if a.get("rss_growth") is not None and c.get("rss_growth") is not None:
            line += (f"; peak RSS growth APSD {a['rss_per_n2']:.3f} n^2, SCC {c['rss_per_n2']:.4f} n^2 "
                     f"({c['rss_growth'] - n2 / 8:+.0f} bytes against n^2/8)")
        print(line + ("" if r["grow"] else "  [kernels created at full size; --grow: as pages arrive]"))


def fmt_row(r: dict) -> list[str]:
    def t(x):
        return f"{x:.3g}" if x < 100 else f"{x:.0f}"

    a, c, s = r["apsd"], r["scc"], r.get("stats")
    cells = [r["graph"], str(r["n"]), str(r["edges"]),
             f"{t(a['seconds'])} ({a['us_per_edge']:.3g})" + ("" if r["apsd_dtype"] == "uint8" else " u16"),
             f"{a['peak_bytes'] / MiB:.3g} ({a['peak_per_n2']:.2f})",
             f"{t(c['seconds'])} ({c['us_per_edge']:.3g})",
             f"{c['peak_bytes'] / MiB:.3g} ({c['peak_per_n2']:.3f})",
             f"{t(s['seconds'])} ({s['us_per_edge']:.3g})" if s else "-",
             str(r["diameter"]), f"{r['avg_distance']:.3f}", str(r["scc_count"])]
    if "scipy" in r:
        sp = r["scipy"]
        cells.append(("" if sp["exact"] else "~") + t(sp["seconds"]))
        nk = r["networkit"]
        cells.append(f"{t(nk['seconds'])} ({nk['rss_growth'] / MiB:.3g} MiB)" if "seconds" in nk
                     else nk["skipped"])
    return cells


HEADER = ["graph", "n", "edges", "APSD s (us/edge)", "APSD peak MiB (/n^2)", "SCC s (us/edge)",
          "SCC peak MiB (/n^2)", "GraphStats s (us/edge)", "diam", "avg dist", "SCCs"]
BASELINE_HEADER = ["scipy BFS/batch s", "NetworKit DynAPSP s (RSS)"]


def print_table(rows, baselines: bool, markdown: bool) -> None:
    header = HEADER + (BASELINE_HEADER if baselines else [])
    body = [fmt_row(r) for r in rows]
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" for _ in header) + "|")
        for cells in body:
            print("| " + " | ".join(cells) + " |")
        return
    widths = [max(len(h), *(len(c[i]) for c in body)) for i, h in enumerate(header)]
    for cells in [header] + body:
        print("  ".join(c.rjust(w) for c, w in zip(cells, widths)))


# ------------------------------------------------------ whole graph (issue 22)
WHOLE = ["crawl200000", "crawl1000000d11"]


def node_batches(g: EdgeSequence, k: int):
    """(new nodes, src, dst) per batch of k crawled pages, as the coordinator submits them:
    an edge enters with the later of its two ends (ids are crawl order)."""
    last = np.maximum.accumulate(np.maximum(g.src, g.dst)) if g.m else np.zeros(0, np.int32)
    have = 0
    for hi in range(k, g.n + k, k):
        hi = min(hi, g.n)
        lo_e, hi_e = np.searchsorted(last, have, side="left"), np.searchsorted(last, hi, side="left")
        yield hi - have, g.src[lo_e:hi_e], g.dst[lo_e:hi_e]
        have = hi


def time_whole_scc(g: EdgeSequence, mode: str, k: int):
    """CPU seconds of WholeSCC over every batch, and of its slowest batch."""
    w = WholeSCC(mode=mode)
    spent, slowest, batches = 0.0, 0.0, 0
    for new, s, d in node_batches(g, k):
        w.add_nodes(new)
        t = time.process_time()
        w.add_edges(s, d)
        dt = time.process_time() - t
        spent += dt
        slowest = max(slowest, dt)
        batches += 1
    return {"seconds": spent, "slowest_batch_s": slowest, "us_per_insertion": 1e6 * spent / max(g.m, 1),
            "batches": batches, "count": w.count, "largest": w.largest, "work": w.work,
            "dropped": w.dropped, "searches": w.searches, "bytes_per_node": w.nbytes / max(g.n, 1),
            "bytes": w.nbytes}


def time_recompute_per_batch(g: EdgeSequence, k: int, samples: int):
    """Recomputing after every batch, by the kernel's Tarjan and by scipy, timed on
    ``samples`` evenly spaced prefixes and extrapolated to every batch."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    batches = list(node_batches(g, k))
    ends_n = np.cumsum([b[0] for b in batches])
    ends_m = np.cumsum([len(b[1]) for b in batches])
    pick = np.linspace(0, len(batches) - 1, min(samples, len(batches))).astype(int)
    ours, theirs = [], []
    for i in pick:
        n, m = int(ends_n[i]), int(ends_m[i])
        a = csr_matrix((np.ones(m, np.int8), (g.src[:m], g.dst[:m])), shape=(n, n))
        t = time.process_time()
        k1, _ = scc_of_csr(a.indptr, a.indices)
        ours.append(time.process_time() - t)
        t = time.process_time()
        k2, _ = connected_components(a, directed=True, connection="strong")
        theirs.append(time.process_time() - t)
        if k1 != k2:
            raise SystemExit(f"graphbench: Tarjan found {k1} SCCs, scipy {k2}, at batch {i} of {g.name}")
    scale = len(batches) / len(pick)
    return {"tarjan_per_batch_s": sum(ours) * scale, "scipy_per_batch_s": sum(theirs) * scale,
            "tarjan_final_s": ours[-1], "scipy_final_s": theirs[-1], "samples": len(pick)}


def time_hyperball(g: EdgeSequence, log2m: int):
    w = WholeSCC(g.n, mode="recompute")
    w.add_edges(g.src, g.dst)
    t = time.process_time()
    indptr, indices = w.csr()
    snapshot = time.process_time() - t
    t = time.process_time()
    hb = HyperBall(indptr, indices, log2m=log2m)
    init = time.process_time() - t
    passes = []
    while True:
        t = time.process_time()
        more = hb.step()
        passes.append(time.process_time() - t)
        if not more:
            break
    total = snapshot + init + sum(passes)
    from abc_crawler.kernels.distances import estimated_figures

    f = estimated_figures(hb.nf, hb.nf_replicates)
    return {"log2m": log2m, "snapshot_s": snapshot, "init_s": init, "pass_s": passes, "passes": hb.passes,
            "seconds": total, "median_pass_s": statistics.median(passes), "max_pass_s": max(passes),
            "bytes_per_node": (hb.nbytes + indptr.nbytes + indices.nbytes) / max(g.n, 1),
            "avg_distance": f["avg_distance"], "effective_diameter": f["effective_diameter"]}


def time_bfs(g: EdgeSequence, sources: int):
    """scipy BFS from ``sources`` random sources, scaled to all n sources."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    a = csr_matrix((np.ones(g.m, np.int8), (g.src, g.dst)), shape=(g.n, g.n))
    src = np.random.default_rng(0).choice(g.n, size=min(sources, g.n), replace=False)
    t = time.process_time()
    for chunk in np.array_split(src, max(1, src.size // 16)):
        shortest_path(a, directed=True, unweighted=True, indices=chunk)
    dt = time.process_time() - t
    return {"sources": int(src.size), "seconds": dt, "all_sources_s": dt / src.size * g.n}


def bench_whole(name: str, args) -> dict:
    t = time.perf_counter()
    g = make_graph(name)
    print(f"# {g.name}: {g.n} nodes, {g.m} edges, generated in {time.perf_counter() - t:.1f} s",
          file=sys.stderr, flush=True)
    row = {"graph": g.name, "n": g.n, "edges": g.m, "batch_nodes": args.whole_nodes}
    runs = [time_whole_scc(g, "search", args.whole_nodes) for _ in range(args.runs)]
    best = runs[0] | {"seconds": statistics.median(r["seconds"] for r in runs), "runs": [r["seconds"] for r in runs]}
    best["us_per_insertion"] = 1e6 * best["seconds"] / max(g.m, 1)
    row["scc_search"] = best
    row["scc_recompute"] = time_recompute_per_batch(g, args.whole_nodes, args.scipy_samples)
    row["hyperball"] = time_hyperball(g, args.log2m)
    row["bfs"] = time_bfs(g, args.bfs_sources)
    return row


WHOLE_HEADER = ["graph", "n", "edges", "batches", "SCC search s (us/ins, slowest batch)", "entries read",
                "SCC B/node", "Tarjan/batch s", "scipy cc/batch s", "Tarjan / scipy at n",
                "HyperBall s (passes, median pass)", "HB B/node", "all-sources BFS s"]


def fmt_whole(r: dict) -> list[str]:
    a, rc, hb, bfs = r["scc_search"], r["scc_recompute"], r["hyperball"], r["bfs"]
    return [r["graph"], str(r["n"]), str(r["edges"]), str(a["batches"]),
            f"{a['seconds']:.3g} ({a['us_per_insertion']:.3g}, {a['slowest_batch_s']:.3g})",
            str(a["work"]), f"{a['bytes_per_node']:.0f}",
            f"~{rc['tarjan_per_batch_s']:.3g}", f"~{rc['scipy_per_batch_s']:.3g}",
            f"{rc['tarjan_final_s']:.3g} / {rc['scipy_final_s']:.3g}",
            f"{hb['seconds']:.3g} ({hb['passes']}, {hb['median_pass_s']:.3g})", f"{hb['bytes_per_node']:.0f}",
            f"~{bfs['all_sources_s']:.3g}"]


def run_whole(names, args) -> int:
    print(f"# graphbench --whole: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, NumPy {np.__version__}; batches of {args.whole_nodes} pages, "
          f"HyperBall 2^{args.log2m} registers, CPU seconds, median of {args.runs}", flush=True)
    rows = [bench_whole(name, args) for name in names]
    body = [fmt_whole(r) for r in rows]
    if args.markdown:
        print("| " + " | ".join(WHOLE_HEADER) + " |")
        print("|" + "|".join("---" for _ in WHOLE_HEADER) + "|")
        for cells in body:
            print("| " + " | ".join(cells) + " |")
    else:
        widths = [max(len(h), *(len(c[k]) for c in body)) for k, h in enumerate(WHOLE_HEADER)]
        for cells in [WHOLE_HEADER] + body:
            print("  ".join(c.rjust(w) for c, w in zip(cells, widths)))
    for r in rows:
        a, rc, hb = r["scc_search"], r["scc_recompute"], r["hyperball"]
        print(f"# {r['graph']}: SCC {a['count']} (largest {a['largest']}); search / recompute-per-batch = "
              f"{a['seconds']:.3g} / {rc['tarjan_per_batch_s']:.3g} s = 1 : {rc['tarjan_per_batch_s'] / a['seconds']:.0f}; "
              f"HyperBall passes {', '.join(f'{x:.2f}' for x in hb['pass_s'][:12])}{' ...' if hb['passes'] > 12 else ''}; "
              f"avg distance {hb['avg_distance']['estimate']:.3f} ± {hb['avg_distance']['se']:.3f}, "
              f"effective diameter {hb['effective_diameter']['estimate']:.2f} ± {hb['effective_diameter']['se']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"argv": sys.argv[1:], "rows": rows}, f, indent=1)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graphs", help=f"comma-separated graph names (default: {','.join(FULL)})")
    p.add_argument("--quick", action="store_true", help=f"{','.join(QUICK)}, 1 run, scipy sampled")
    p.add_argument("--session", action="append", default=[], metavar="DIR",
                   help="add a session's crawled graph (graph.npz, crawl order); repeatable")
    p.add_argument("--runs", type=int, default=3, help="timed runs per kernel; the median is shown (3)")
    p.add_argument("--batch", type=int, default=1000, help="edges per add_edges call (1000)")
    p.add_argument("--search", choices=["auto", "lists", "scan"], default="auto",
                   help="how APSD finds the rows to update (auto; scan = the paper's column scan)")
    p.add_argument("--scipy-samples", type=int, default=12,
                   help="batches timed for the scipy baseline before extrapolating (12)")
    p.add_argument("--nk-timeout", type=float, default=300, help="seconds allowed to NetworKit per graph (300)")
    p.add_argument("--nk-runs", type=int, help="NetworKit runs, interleaved with the first ones (default: --runs)")
    p.add_argument("--kernels", default="apsd,scc,stats",
                   help="kernels to time, of apsd,scc,stats (default: all; apsd and scc are required)")
    p.add_argument("--dtype", choices=["auto", "uint8", "uint16"], default="auto",
                   help="APSD cell type; auto tries uint8 in an extra run and falls back to uint16 (auto)")
    p.add_argument("--no-baselines", action="store_true", help="skip scipy and NetworKit")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE")
    p.add_argument("--grow", action="store_true",
                   help="start the kernels empty and add nodes as the batches need them "
                        "(as the coordinator does); memory is then measured while growing")
    p.add_argument("--rss", action="store_true",
                   help="also measure each kernel's peak RSS growth in a fresh process")
    p.add_argument("--whole", action="store_true",
                   help=f"whole-graph statistics instead (WholeSCC, HyperBall; default graphs {','.join(WHOLE)})")
    p.add_argument("--whole-nodes", type=int, default=2048, help="--whole: pages per batch (2048 = 8 ranks x 256)")
    p.add_argument("--log2m", type=int, default=7, help="--whole: HyperBall registers per node, as a power of 2 (7)")
    p.add_argument("--bfs-sources", type=int, default=64, help="--whole: BFS sources timed for the all-sources estimate")
    p.add_argument("--networkit-worker", metavar="GRAPH", help=argparse.SUPPRESS)
    p.add_argument("--rss-worker", metavar="KIND:GRAPH:DTYPE", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    global GROW
    GROW = args.grow
    if args.networkit_worker:
        networkit_worker(args.networkit_worker, args.batch)
        return 0
    if args.rss_worker:
        global SEARCH
        SEARCH = args.search
        rss_worker(args.rss_worker, args.batch)
        return 0
    if args.runs < 1 or args.batch < 1 or args.scipy_samples < 1:
        p.error("--runs, --batch and --scipy-samples must be >= 1")
    SEARCH = args.search
    args.kernels = set(args.kernels.split(","))
    if not {"apsd", "scc"} <= args.kernels <= {"apsd", "scc", "stats"}:
        p.error("--kernels: apsd and scc, optionally stats")
    if args.nk_runs is None:
        args.nk_runs = args.runs
    if args.whole:
        if args.runs == 3 and "--runs" not in (argv or sys.argv):
            args.runs = 1
        names = args.graphs.split(",") if args.graphs else WHOLE
        return run_whole(names + [f"session:{d}" for d in args.session], args)
    names = args.graphs.split(",") if args.graphs else (QUICK if args.quick else FULL)
    if args.quick:
        args.runs = 1
        args.scipy_samples = min(args.scipy_samples, 4)
        args.nk_timeout = min(args.nk_timeout, 60)
    names += [f"session:{d}" for d in args.session]

    print(f"# graphbench: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, NumPy {np.__version__}; batch {args.batch}, "
          f"search {args.search}, median of {args.runs} interleaved run(s)"
          f"{', kernels grow as pages arrive' if GROW else ''}", flush=True)
    rows = []
    for name in names:
        t = time.perf_counter()
        rows.append(bench_graph(name, args))
        r = rows[-1]
        note = f"  [uint8 overflows: {r['uint8_overflow']}]" if r["uint8_overflow"] else ""
        print(f"# {r['graph']}: done in {time.perf_counter() - t:.1f} s wall{note}", file=sys.stderr, flush=True)
    print_table(rows, not args.no_baselines, args.markdown)
    print_goals(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"argv": sys.argv[1:], "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
