"""P6: memory of one rank's URL-seen set and frontier at 1,000,000 URLs (no network).

    .venv/bin/python bench/memory.py [--urls 1000000] [--style synthetic|corpus] [--runs 3]
                                    [--out bench/results/memory.json]

Each measurement runs in a fresh process: it imports the crawler, then adds N
distinct canonical URLs (built one by one, as canonicalize() would return
them: a new ``str`` each) to the structures under test exactly as
``RankCrawler._route``/``receive`` do for a local URL — ``fp =
fingerprint(url)``; ``seen.add(fp)``; ``frontier.add(url, host_of(url))`` —
and finally runs one ``Frontier.schedule()`` pass (the Bucket takes its
share). Figure: (peak RSS − RSS before) / N, from /proc/self/status (VmHWM,
VmRSS), plus the RSS still held at the end. Variants:

``seen``            the URL-seen set alone (``set`` of 64-bit ints, RankCrawler.seen)
``frontier``        ``abc_crawler.frontier.Frontier`` alone (URLStates + Bucket)
``seen+frontier``   both: **the P6 figure** (goal ≤ 64 bytes per URL)
``crawler``         both + ``RankCrawler.reported`` (a second set of the same
                    fingerprints: URLs whose text rank 0 already has), i.e.
                    what a rank really keeps per local URL
``compact``         what a compact layout costs, for comparison: the seen set as
                    an open-addressing ``uint64`` NumPy table (load ≤ 0.5), the
                    URL text as one UTF-8 byte buffer + ``uint32`` offsets with
                    the host replaced by a ``uint32`` host id (only the path
                    and query are stored), states one byte

URL styles: ``synthetic`` (``http://h123.test:18081/d4/d1/p98765.html``, 1,000
hosts, like the generated webs) and ``corpus`` (the real paths of the Debian
documentation sites on copies of their hosts, like
``http://w17.docs.python.org:8080/library/asyncio-eventloop.html``: 109
copies × 7 sites = 763 hosts for 1,000,000 URLs).
Medians of ``--runs`` runs. A default run takes about 2 minutes.
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

VARIANTS = ("seen", "frontier", "seen+frontier", "crawler", "compact")


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


class CompactSeen:
    """Open addressing over a uint64 array (0 = empty), load ≤ 0.5, doubling."""

    def __init__(self, cap: int = 1 << 16):
        import numpy as np

        self.np = np
        self.t = np.zeros(cap, dtype=np.uint64)
        self.n = 0

    def add(self, fp: int) -> bool:
        fp = fp or 1
        if 2 * (self.n + 1) > len(self.t):
            self._grow()
        t = self.t
        mask = len(t) - 1
        i = fp & mask
        while True:
            v = int(t[i])
            if v == 0:
                t[i] = fp
                self.n += 1
                return True
            if v == fp:
                return False
            i = (i + 1) & mask

    def _grow(self) -> None:
        np = self.np
        old = self.t[self.t != 0]
        cap = 2 * len(self.t)
        t = np.zeros(cap, dtype=np.uint64)
        mask = np.uint64(cap - 1)
        for fp in old.tolist():
            i = fp & (cap - 1)
            while t[i] != 0:
                i = (i + 1) & (cap - 1)
            t[i] = fp
        del old
        self.t = t


class CompactFrontier:
    """URL paths in one byte buffer + uint32 offsets, uint32 host ids, one state byte per URL."""

    def __init__(self):
        import numpy as np

        self.np = np
        self.blob = bytearray()
        self.off = np.zeros(1 << 16, dtype=np.uint32)
        self.host_id = np.zeros(1 << 16, dtype=np.uint32)
        self.states = bytearray()
        self.hosts: dict[str, int] = {}
        self.n = 0

    def add(self, url: str, host: str) -> int:
        hid = self.hosts.setdefault(host, len(self.hosts))
        start = url.find("/", url.find("://") + 3)
        if self.n + 1 >= len(self.off):
            self.off = self.np.resize(self.off, 2 * len(self.off))
            self.host_id = self.np.resize(self.host_id, 2 * len(self.host_id))
        self.blob += url[start:].encode()
        self.off[self.n + 1] = len(self.blob)
        self.host_id[self.n] = hid
        self.states.append(0)
        self.n += 1
        return self.n - 1


def measure(variant: str, n: int, style: str) -> dict:
    """Runs in the child process."""
    import gc

    from abc_crawler.frontier import Frontier
    from abc_crawler.urls import fingerprint, host_of

    make = url_source(style, n)
    sample = [make(i) for i in range(0, n, max(1, n // 10000))]
    mean_len = sum(len(u) for u in sample) / len(sample)
    del sample
    gc.collect()
    seen = reported = frontier = None
    if variant in ("seen", "seen+frontier", "crawler"):
        seen = set()
    if variant == "crawler":
        reported = set()
    if variant in ("frontier", "seen+frontier", "crawler"):
        frontier = Frontier()          # the crawler's defaults: 199 x 8 Bucket, L = 16, window 250,000
    if variant == "compact":
        seen = CompactSeen()
        frontier = CompactFrontier()
    time.sleep(0.1)
    rss0 = _status_kb("VmRSS")
    _reset_peak()
    t0 = time.process_time()
    for i in range(n):
        url = make(i)
        fp = fingerprint(url)
        if reported is not None and fp not in reported:
            reported.add(fp)
        if seen is not None:
            if variant == "compact":
                seen.add(fp)
            elif fp in seen:
                continue
            else:
                seen.add(fp)
        if frontier is not None:
            frontier.add(url, host_of(url))
    if isinstance(frontier, Frontier):
        frontier.schedule(now=0.0)
    cpu = time.process_time() - t0
    gc.collect()
    rss1 = _status_kb("VmRSS")
    hwm = _status_kb("VmHWM")
    out = {"variant": variant, "urls": n, "style": style, "mean_url_len": round(mean_len, 1),
           "peak_bytes_per_url": (hwm - rss0) * 1024 / n, "held_bytes_per_url": (rss1 - rss0) * 1024 / n,
           "insert_us_per_url": cpu / n * 1e6}
    # analytic shares (sys.getsizeof), for the breakdown
    if isinstance(frontier, Frontier):
        n = len(frontier.urls)
        out["frontier_urls"] = n
        k = min(n, 20000)
        url_obj = sum(sys.getsizeof(frontier.urls[i]) for i in range(0, n, n // k)) / k
        host_obj = sum(sys.getsizeof(frontier.hosts[i]) for i in range(0, n, n // k)) / k
        shared = len({id(frontier.hosts[i]) for i in range(0, n, n // k)})
        out["frontier_parts"] = {
            "urls list (pointer)": sys.getsizeof(frontier.urls) / n,
            "URL str objects": url_obj,
            "hosts list (pointer)": sys.getsizeof(frontier.hosts) / n,
            "host str objects (one per URL)" if shared > k // 2 else "host str objects (shared)":
                host_obj if shared > k // 2 else 0.0,
            "states bytearray": sys.getsizeof(frontier.states) / n,
        }
    if isinstance(seen, set):
        out["seen_parts"] = {"set table": sys.getsizeof(seen) / n, "int objects": 32.0}
    if reported is not None:
        out["reported_parts"] = {"set table": sys.getsizeof(reported) / n, "int objects (shared with seen)": 0.0}
    if variant == "compact":
        out["compact_parts"] = {"seen table (uint64, load <= 0.5)": seen.t.nbytes / n,
                                "path bytes": len(frontier.blob) / n, "offsets (uint32)": frontier.off.nbytes / n,
                                "host ids (uint32)": frontier.host_id.nbytes / n, "states": 1.0}
    return out


def main() -> int:
    import nginx
    from nginx import RESULTS, medians, write_result

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--urls", type=int, default=1_000_000)
    ap.add_argument("--style", choices=["synthetic", "corpus"], nargs="+", default=["synthetic", "corpus"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--out", default=str(RESULTS / "memory.json"))
    a = ap.parse_args()
    print(nginx.describe_header(f"P6: memory per URL at {a.urls:,} URLs"), flush=True)
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
        for part in ("frontier_parts", "seen_parts", "reported_parts", "compact_parts"):
            if part in rows[0]:
                med[k][part] = rows[0][part]
    res = {"benchmark": "P6 memory", "args": vars(a), "medians": med, "raw": raw,
           "goal": {"target_bytes_per_url": 64,
                    "met": {s: med[f"{s}/seen+frontier"]["peak_bytes_per_url"] <= 64 for s in a.style
                            if f"{s}/seen+frontier" in med}}}
    path = write_result("memory", res, a.out)
    print(f"\nmedians of {a.runs} runs, {a.urls:,} URLs (bytes per URL; goal seen+frontier <= 64):")
    for style in a.style:
        print(f"  {style} URLs (mean length {med[f'{style}/{a.variants[0]}']['mean_url_len']:.1f} chars):")
        for v in a.variants:
            m = med[f"{style}/{v}"]
            print(f"    {v:14s} peak {m['peak_bytes_per_url']:6.1f}   held {m['held_bytes_per_url']:6.1f}"
                  f"   insert {m['insert_us_per_url']:.2f} us")
        for v in a.variants:
            m = med[f"{style}/{v}"]
            for part in ("seen_parts", "frontier_parts", "reported_parts", "compact_parts"):
                if part in m and (v in ("crawler", "compact") or part != "reported_parts"):
                    if v in ("seen+frontier", "compact") or (v == "crawler" and part == "reported_parts"):
                        print(f"      {v} / {part}: " + ", ".join(f"{k} {x:.1f}" for k, x in m[part].items()))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]), sys.argv[4])))
        sys.exit(0)
    sys.exit(main())
