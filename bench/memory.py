"""P6: memory of one rank's URL-seen set and frontier at 1,000,000 URLs (no network).

    .venv/bin/python bench/memory.py [--urls 1000000] [--style synthetic|corpus] [--runs 5]
                                    [--out bench/results/memory.json]
    .venv/bin/python bench/memory.py --process [--hosts 2000] [--pages 500000 125000] [--ranks 8]
                                    [--trace] [--against CHECKOUT] [--out bench/results/memory_process.json]

``--process`` (issue 35: where a crawling rank's memory goes) crawls a generated web (nginx) at
``--ranks`` with the defaults and the lab settings, once per ``--pages`` size (``--max-pages``
cuts the larger web at each smaller size, so both crawls see the same web), and reports from
each session's stats.json: every rank's peak RSS (``max_rss_kb``) against the URLs it knows
(``urls_known``: its URL-seen set) and owns (``urls_owned``); the **slope** between the two
sizes, ΔRSS / ΔURLs known per crawl rank (what one more known URL costs, the fixed cost of a rank
cancelled), and rank 0's extra over the median crawl rank per graph node and per edge. With
``--trace`` the larger crawl runs again with ``ABC_TRACEMALLOC`` (abc_crawler/run.py): every rank's
live Python allocations at the end, by source line, summed into the crawler's structures
(:data:`STRUCTURES`); what tracemalloc does not see (libcurl, lxml, the Cython seen set's and
kernels' own allocations, allocator slack) is the RSS less the traced bytes. ``--against
CHECKOUT`` (an earlier tree with its own ``.venv``, e.g. a ``git worktree``) crawls the same web
at each size right after this tree, so before and after come from one run.

Each measurement runs in a fresh process: it imports the crawler, then adds N
distinct canonical URLs (built one by one, as canonicalize() would return
them: a new ``str`` each) to the structures under test exactly as
``Router.route``/``Router.admit_local`` do for a local URL found on a page —
``fp = fingerprint(url)``; ``seen.report(fp)``; ``if seen.add(fp):
frontier.add(url, host_of(url))`` — and finally runs one
``Frontier.schedule()`` (the Bucket takes its share). Figure: (peak RSS − RSS
before) / N, from /proc/self/status (VmHWM, VmRSS), plus the RSS still held
at the end. Variants, each for the current layout and (``old-``) the layout
of commit ebe161a (a ``set`` of ints per seen set, the window-scan Frontier of
``tests/frontier_scan.py`` with a ``str`` per URL and per host):

``seen``            the URL-seen set alone (now ``abc_crawler.sched.seen`` FPSet:
                    open-addressing uint64 table + flag byte)
``frontier``        ``abc_crawler.sched.frontier.Frontier`` alone (URLStates + Bucket)
``seen+frontier``   both: **the P6 figure** as the issue defines it ("one
                    rank's URL-seen set and frontier"; goal ≤ 64 bytes per URL)
``crawler``         what a rank keeps per local URL — seen set, reported mark (old: a
                    second ``set``; now a flag bit of the same table) and
                    frontier; now also with the checkpoint journal on (the
                    default) and a checkpoint's increments taken every
                    100,000 URLs

URL styles: ``synthetic`` (``http://h123.test:18081/d4/d1/p98765.html``, 1,000
hosts, like the generated webs) and ``corpus`` (the real paths of the Debian
documentation sites on copies of their hosts, like
``http://w17.docs.python.org:8080/library/asyncio-eventloop.html``: 109
copies × 7 sites = 763 hosts for 1,000,000 URLs).
Medians of ``--runs`` runs. A default run takes about 5 minutes.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))   # frontier_scan

VARIANTS = ("old-seen", "old-frontier", "old-seen+frontier", "old-crawler", "seen", "frontier", "seen+frontier", "crawler")


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _reset_peak() -> None:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0: write 5 to clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def url_source(style: str, n: int):
    """A function i -> URL (a fresh str each call) for i in range(n)."""
    if style == "synthetic":
        def make(i: int) -> str:
            return f"http://h{i % 1000:03d}.test:18081/d{(i // 1000) % 8}/d{(i // 8000) % 8}/p{i}.html"
        return make
    import corpus

    pairs: list[tuple[str, str]] = []
    for host, (_, root, _) in corpus.SITES.items():
        base = Path(root)
        for dp, _, files in os.walk(base, followlinks=True):
            for f in files:
                if f.endswith((".html", ".htm")):
                    pairs.append((host, "/" + str(Path(dp, f).relative_to(base))))
    if not pairs:
        raise SystemExit("memory: --style corpus needs the doc packages (bench/corpus.py)")
    pairs.sort()
    m = len(pairs)

    def make(i: int) -> str:
        host, path = pairs[i % m]
        return f"http://w{i // m}.{host}:8080{path}"
    return make


def measure(variant: str, n: int, style: str) -> dict:
    """Runs in the child process."""
    import gc

    from abc_crawler.web.urls import fingerprint, host_of

    old = variant.startswith("old-")
    base = variant[4:] if old else variant
    if old:
        from frontier_scan import Frontier      # verbatim copy of the window-scan Frontier (ebe161a)
    else:
        from abc_crawler.sched.frontier import Frontier
        from abc_crawler.sched.seen import new_fpset

    make = url_source(style, n)
    sample = [make(i) for i in range(0, n, max(1, n // 10000))]
    mean_len = sum(len(u) for u in sample) / len(sample)
    del sample
    gc.collect()
    seen = frontier = None
    crawler = base == "crawler"
    if base in ("seen", "seen+frontier", "crawler"):
        # new: RankCrawler's table; the journal is on in "crawler", as with checkpoints (the default)
        seen = (set(), set() if crawler else None) if old else new_fpset(journal=crawler)
    if base in ("frontier", "seen+frontier", "crawler"):
        frontier = Frontier()          # the crawler's defaults: 199 x 8 Bucket, L = 16, window 250,000
    time.sleep(0.1)
    rss0 = _status_kb("VmRSS")
    _reset_peak()
    t0 = time.process_time()
    ckpt_every = 100_000
    for i in range(n):
        url = make(i)
        fp = fingerprint(url)
        if old:
            if seen is not None:
                seen_set, reported = seen
                if reported is not None and fp not in reported:     # Router.route (ebe161a)
                    reported.add(fp)
                if fp in seen_set:
                    continue
                seen_set.add(fp)
        elif seen is not None:
            if crawler:
                seen.report(fp)                                    # Router.route
            if not seen.add(fp):
                continue
        if frontier is not None:
            frontier.add(url, host_of(url))                        # Router.admit_local
        if crawler and not old and i % ckpt_every == ckpt_every - 1:
            # a checkpoint every 100,000 URLs: the increments go to the log (here: dropped)
            frontier.take_increment()
            seen.take_changes()
    if frontier is not None:
        frontier.schedule(now=0.0)
    cpu = time.process_time() - t0
    gc.collect()
    rss1 = _status_kb("VmRSS")
    hwm = _status_kb("VmHWM")
    out = {"variant": variant, "urls": n, "style": style, "mean_url_len": round(mean_len, 1),
           "peak_bytes_per_url": (hwm - rss0) * 1024 / n, "held_bytes_per_url": (rss1 - rss0) * 1024 / n,
           "insert_us_per_url": cpu / n * 1e6}
    # analytic shares, for the breakdown
    if frontier is not None and old:
        k = min(n, 20000)
        url_obj = sum(sys.getsizeof(frontier.urls[i]) for i in range(0, n, n // k)) / k
        host_obj = sum(sys.getsizeof(frontier.hosts[i]) for i in range(0, n, n // k)) / k
        out["frontier_parts"] = {
            "urls list (pointer)": sys.getsizeof(frontier.urls) / n, "URL str objects": url_obj,
            "hosts list (pointer)": sys.getsizeof(frontier.hosts) / n, "host str objects": host_obj,
            "states bytearray": sys.getsizeof(frontier.states) / n}
    elif frontier is not None:
        text = frontier.text_bytes()
        out["frontier_parts"] = {
            "path text (1 MiB chunks)": text / n, "positions (uint32)": float(frontier._pos.itemsize),
            "origin ids (uint32)": 4.0, "FIFO links (int32)": 4.0, "states": 1.0,
            "origin+host tables": (sum(sys.getsizeof(p) for p in frontier._origin_prefix)
                                   + sum(sys.getsizeof(h) for h in frontier._host_names)) / n}
    if seen is not None and old:
        out["seen_parts"] = {"set table": sys.getsizeof(seen[0]) / n, "int objects": 32.0}
        if seen[1] is not None:
            out["reported_parts"] = {"set table": sys.getsizeof(seen[1]) / n}
    elif seen is not None:
        out["seen_parts"] = {f"FPSet table (9 B/slot, {len(seen) / seen.capacity:.2f} full)": seen.nbytes / n}
    return out


#: source files (relative to the repository, or a library's folder) → the structure they hold
STRUCTURES = (
    ("abc_crawler/sched/urlstates.py", "frontier: URL text and per-URL columns"),
    ("abc_crawler/sched/frontier.py", "frontier: Bucket and per-host queues"),
    ("abc_crawler/sched/visits.py", "per-host records"),
    ("abc_crawler/net/robots.py", "robots.txt rules"),
    ("abc_crawler/sched/seen.py", "URL-seen set"),
    ("abc_crawler/crawl/links.py", "link-decision caches"),
    ("abc_crawler/crawl/discovery.py", "crawl-log discovery table"),
    ("abc_crawler/crawl/routing.py", "outboxes and the report to rank 0"),
    ("abc_crawler/crawl/quotas.py", "per-host quotas"),
    ("abc_crawler/store/validators.py", "validators"),
    ("abc_crawler/store/warc.py", "WARC buffers and content-seen table"),
    ("abc_crawler/store/cdxj.py", "CDXJ index buffers"),
    ("abc_crawler/graph/coordinator.py", "rank 0: URL table and graph"),
    ("abc_crawler/graph/hostranks.py", "rank 0: host graph"),
    ("abc_crawler/kernels", "rank 0: statistics kernels"),
    ("abc_crawler/mpi/exchange.py", "MPI exchange buffers"),
    ("abc_crawler/store/checkpoint.py", "checkpoint log"),
    ("abc_crawler/", "other crawler code"),
    ("/lxml/", "lxml"),
    ("/pycurl", "pycurl"),
    ("/numpy/", "numpy (arrays made by the crawler's calls)"),
    ("", "Python and other libraries"),
)


def _structure(filename: str) -> str:
    for key, name in STRUCTURES:
        if key in filename:
            return name
    return STRUCTURES[-1][1]


def _crawl_sizes(a) -> dict:
    """Crawl the web at each size (with ``--against``, each size by the other checkout too, right
    after); per size, the sessions' per-rank memory figures (the other's under ``against:SIZE``)."""
    import harness
    import nginx

    web = harness.generated_web(a.hosts, max(a.pages), seed=35, port=a.port)
    out: dict = {}
    todo = []
    for pages in sorted(set(a.pages)):
        todo.append((str(pages), pages, None))
        if a.against:
            todo.append((f"against:{pages}", pages, a.against))
    if a.trace:
        todo.append(("trace", max(a.pages), None))
    with tempfile.TemporaryDirectory() as tmp, nginx.serve(web, max_seconds=4 * 3600):
        for key, pages, tree in todo:
            session = Path(tmp) / f"s{key.replace(':', '-')}"
            extra = [] if pages == max(a.pages) else ["--max-pages", str(pages)]
            env = dict(os.environ)
            trace = Path(tmp) / "trace"
            if key == "trace":
                env["ABC_TRACEMALLOC"] = str(trace)
            if tree is None:
                cmd = harness.abc_command(a.ranks, web, session, *extra)
            else:
                harness.tree_bytecode(tree)
                cmd = harness.tree_abc_command(tree, a.ranks, web, session, *extra)
            r = harness.run_measured(cmd, timeout=4 * 3600, env=env)
            if r["rc"] != 0:
                raise RuntimeError(f"abc-crawl failed: {r['stderr'][-3000:]}")
            st = json.loads((session / "stats.json").read_text())
            row = {"requests": st["requests"], "wall_s": round(r["wall_s"], 1), "nodes": st["graph"]["nodes"],
                   "edges": st["graph"]["edges"],
                   "ranks": [{k: p.get(k) for k in ("rank", "max_rss_kb", "urls_known", "urls_owned", "memory")}
                             for p in st["per_rank"]]}
            if key == "trace":
                row["trace"] = _attribute(trace)
            out[key] = row
            print(f"  {key}: {st['requests']:,} requests in {r['wall_s']:.0f} s; peak RSS per rank "
                  + ", ".join(f"{p['max_rss_kb'] // 1024} MB/{p['urls_known']:,} URLs" for p in row["ranks"]), flush=True)
    return out


def _attribute(trace: Path) -> list[dict]:
    """Per rank: traced bytes by structure, the traced total and the RSS it does not explain."""
    out = []
    for f in sorted(trace.glob("rank-*.json")):
        d = json.loads(f.read_text())
        by: dict[str, int] = {}
        lines: dict[str, int] = {}
        for filename, line, size, _count in d["lines"]:
            k = _structure(filename)
            by[k] = by.get(k, 0) + size
            where = f"{filename.split('site-packages/')[-1].split('/work/main/')[-1]}:{line}"
            lines[where] = lines.get(where, 0) + size
        out.append({"rank": d["rank"], "rss_bytes": d["rss_kb"] * 1024, "traced_bytes": d["traced_bytes"],
                    "untraced_bytes": d["rss_kb"] * 1024 - d["traced_bytes"],
                    "by_structure": dict(sorted(by.items(), key=lambda kv: -kv[1])),
                    "top_lines": dict(sorted(lines.items(), key=lambda kv: -kv[1])[:12])})
    return out


def _slopes(res: dict, runs: dict, lo_key: str, hi_key: str, ranks: int, what: str) -> None:
    """The RSS slope per known URL of each rank between two sizes, and rank 0's extra per node
    and per edge, into ``res``; printed."""
    lo, hi = runs[lo_key], runs[hi_key]
    slopes = []
    for p, q in zip(lo["ranks"], hi["ranks"]):
        du = q["urls_known"] - p["urls_known"]
        slopes.append(round((q["max_rss_kb"] - p["max_rss_kb"]) * 1024 / du, 1) if du > 0 else None)
    res["slope_bytes_per_known_url"] = slopes
    crawl = [s for s in slopes[1:] if s is not None]
    med = sorted(crawl)[len(crawl) // 2] if crawl else None
    extra = lambda run: run["ranks"][0]["max_rss_kb"] * 1024 - sorted(  # noqa: E731
        r["max_rss_kb"] * 1024 for r in run["ranks"][1:])[len(run["ranks"][1:]) // 2] if len(run["ranks"]) > 1 else 0
    dn, de = hi["nodes"] - lo["nodes"], hi["edges"] - lo["edges"]
    d0 = extra(hi) - extra(lo)
    res["rank0_extra_bytes"] = {"per_node": round(d0 / dn, 1) if dn else None, "per_edge": round(d0 / de, 1) if de else None}
    print(f"{what}: RSS slope per known URL, crawl ranks 1..{ranks - 1}: {slopes[1:]} B (median {med} B; goal <= 400)")
    print(f"rank 0 beyond the median crawl rank: {res['rank0_extra_bytes']['per_node']} B per node, "
          f"{res['rank0_extra_bytes']['per_edge']} B per edge (the two ends of the same ΔRSS)")


def process_main(a) -> int:
    """``--process``: see the module's docstring."""
    import harness

    print(harness.describe_header(f"memory of crawling ranks: {a.hosts} hosts, pages {a.pages}, {a.ranks} ranks"),
          flush=True)
    runs = _crawl_sizes(a)
    sizes = sorted(set(a.pages))
    res: dict = {"benchmark": "memory --process", "args": vars(a), "runs": runs}
    if len(sizes) >= 2:
        _slopes(res, runs, str(sizes[0]), str(sizes[-1]), a.ranks, "this tree")
        if a.against:
            res["against"] = {}
            _slopes(res["against"], runs, f"against:{sizes[0]}", f"against:{sizes[-1]}", a.ranks, a.against)
    big = runs[str(sizes[-1])]["ranks"]
    if big and big[0].get("memory"):
        print(f"where the memory goes at {sizes[-1]:,} pages (stats.json per_rank memory; bytes per known URL):")
        for p in big:
            m, n = p["memory"], max(1, p["urls_known"])
            print(f"  rank {p['rank']}: RSS {p['max_rss_kb'] * 1024 / n:,.0f} B/URL; "
                  + ", ".join(f"{k.removesuffix('_bytes')} {v / n:,.1f}" for k, v in m.items()
                              if k.endswith("_bytes") and not k.endswith("disk_bytes") and isinstance(v, int))
                  + "; " + ", ".join(f"{k} {v:,}" for k, v in m.items()
                                     if not k.endswith("_bytes") or k.endswith("disk_bytes")))
            if isinstance(m.get("stats_bytes"), dict):   # rank 0: the statistics kernels, by their own count
                print("    statistics kernels: " + ", ".join(f"{k} {v / 2 ** 20:,.1f} MB" for k, v in m["stats_bytes"].items()))
    if a.trace:
        for t in runs["trace"]["trace"]:
            top = ", ".join(f"{k} {v / 2 ** 20:.1f}" for k, v in list(t["by_structure"].items())[:8])
            print(f"rank {t['rank']}: RSS {t['rss_bytes'] / 2 ** 20:.0f} MB, traced {t['traced_bytes'] / 2 ** 20:.0f} MB "
                  f"({top} MB), not traced {t['untraced_bytes'] / 2 ** 20:.0f} MB")
            print("    largest lines: " + ", ".join(f"{k} {v / 2 ** 20:.1f}" for k, v in list(t["top_lines"].items())[:6]))
    path = harness.write_result("memory_process", res, a.out)
    print(f"wrote {path}")
    return 0


def main() -> int:
    import harness
    from harness import RESULTS, medians, write_result

    if "--process" in sys.argv:
        ap = argparse.ArgumentParser(description="memory of crawling ranks (issue 35)")
        ap.add_argument("--process", action="store_true")
        ap.add_argument("--hosts", type=int, default=2000)
        ap.add_argument("--pages", type=int, nargs="+", default=[125_000, 500_000])
        ap.add_argument("--ranks", type=int, default=8)
        ap.add_argument("--port", type=int, default=18085)
        ap.add_argument("--trace", action="store_true", help="run the largest size again with tracemalloc")
        ap.add_argument("--against", default=None,
                        help="another checkout (with its own .venv) crawled at each size right after this one")
        ap.add_argument("--out", default=None)
        return process_main(ap.parse_args())

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--urls", type=int, default=1_000_000)
    ap.add_argument("--style", choices=["synthetic", "corpus"], nargs="+", default=["synthetic", "corpus"])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--out", default=str(RESULTS / "memory.json"))
    ap.add_argument("--process", action="store_true",
                    help="crawl a generated web instead (see the module's docstring): takes --hosts, --pages, --ranks, "
                         "--port, --trace, --against, --out")
    for flag in ("--hosts", "--pages", "--ranks", "--port", "--against"):
        ap.add_argument(flag, help="with --process")
    ap.add_argument("--trace", action="store_true", help="with --process: run the largest size again with tracemalloc")
    a = ap.parse_args()
    print(harness.describe_header(f"P6: memory per URL at {a.urls:,} URLs"), flush=True)
    raw: dict[str, list] = {}
    for run in range(a.runs):
        for style in a.style:
            for v in a.variants:
                r = subprocess.run([sys.executable, __file__, "_child", v, str(a.urls), style], capture_output=True,
                                   text=True, timeout=1800)
                if r.returncode != 0:
                    raise RuntimeError(r.stderr[-2000:])
                row = json.loads(r.stdout)
                raw.setdefault(f"{style}/{v}", []).append(row)
                print(f"[run {run + 1}/{a.runs}] {style:9s} {v:14s} peak {row['peak_bytes_per_url']:6.1f} B/URL, "
                      f"held {row['held_bytes_per_url']:6.1f} B/URL, {row['insert_us_per_url']:.2f} us/URL", flush=True)
    med = {k: medians(rows, ["peak_bytes_per_url", "held_bytes_per_url", "insert_us_per_url", "mean_url_len"])
           for k, rows in raw.items()}
    for k, rows in raw.items():
        for part in ("frontier_parts", "seen_parts", "reported_parts"):
            if part in rows[0]:
                med[k][part] = rows[0][part]
    res = {"benchmark": "P6 memory", "args": vars(a), "medians": med, "raw": raw,
           "goal": {"target_bytes_per_url": 64, "variant": "seen+frontier",
                    "met": {s: med[f"{s}/seen+frontier"]["peak_bytes_per_url"] <= 64 for s in a.style
                            if f"{s}/seen+frontier" in med}}}
    path = write_result("memory", res, a.out)
    print(f"\nmedians of {a.runs} runs, {a.urls:,} URLs (bytes per URL; goal: seen+frontier peak <= 64):")
    for style in a.style:
        print(f"  {style} URLs (mean length {med[f'{style}/{a.variants[0]}']['mean_url_len']:.1f} chars):")
        for v in a.variants:
            m = med[f"{style}/{v}"]
            print(f"    {v:14s} peak {m['peak_bytes_per_url']:6.1f}   held {m['held_bytes_per_url']:6.1f}"
                  f"   insert {m['insert_us_per_url']:.2f} us")
        for v in a.variants:
            m = med[f"{style}/{v}"]
            if v.endswith("crawler"):
                for part in ("seen_parts", "frontier_parts", "reported_parts"):
                    if part in m:
                        print(f"      {v} / {part}: " + ", ".join(f"{k} {x:.1f}" for k, x in m[part].items()))
    for style, met in res["goal"]["met"].items():
        peak = med[f"{style}/seen+frontier"]["peak_bytes_per_url"]
        print(f"  goal ({style}): seen+frontier peak {peak:.1f} B/URL <= 64: {'met' if met else 'missed'}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]), sys.argv[4])))
        sys.exit(0)
    sys.exit(main())
