"""P6: memory of one rank's URL-seen set and frontier at 1,000,000 URLs (no network).

    .venv/bin/python bench/memory.py [--urls 1000000] [--style synthetic|corpus] [--runs 5]
                                    [--out bench/results/memory.json]

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

``seen``            the URL-seen set alone (now ``abc_crawler.seen`` FPSet:
                    open-addressing uint64 table + flag byte)
``frontier``        ``abc_crawler.frontier.Frontier`` alone (URLStates + Bucket)
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

    from abc_crawler.urls import fingerprint, host_of

    old = variant.startswith("old-")
    base = variant[4:] if old else variant
    if old:
        from frontier_scan import Frontier      # verbatim copy of the window-scan Frontier (ebe161a)
    else:
        from abc_crawler.frontier import Frontier
        from abc_crawler.seen import new_fpset

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


def main() -> int:
    import harness
    from harness import RESULTS, medians, write_result

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--urls", type=int, default=1_000_000)
    ap.add_argument("--style", choices=["synthetic", "corpus"], nargs="+", default=["synthetic", "corpus"])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--out", default=str(RESULTS / "memory.json"))
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
