"""S2: CPU per WARC record, the previous ``abc_crawler/store/warc.py`` against the current one.

    .venv/bin/python bench/warc_micro.py [--baseline REV] [--records 400] [--rounds 11]
                                         [--out bench/results/warc_micro.json]

The previous writer is the file as it was at git revision ``--baseline``
(default ``ea428f4``, before the S2 changes), loaded with ``git show`` as the
module ``abc_crawler._warc_baseline``; the current one is imported as usual
and run with each gzip backend it has: ``new-zlib`` (stdlib, always) and
``new-isal`` (when the ``isal`` package is installed; the writer's default
then).

Records (``RankWarc.write`` of a :class:`abc_crawler.net.fetcher.Response` with
the fetcher's request headers and nginx-like response headers):

``corpus``     HTML files of 5-30 KB from the Debian documentation trees of
               ``/work/shared/corpus/README.md`` (an even sample over all
               sites; skipped when not installed);
``synthetic``  pages of an ``abc-testweb generate --plain`` web (300 hosts,
               6,000 pages, made once under the temporary directory; bodies
               of 1-20 KB, mean ≈ 6 KB).

One body in 20 repeats an earlier one, so revisit records are in the mix as
in a crawl. For each set and round the variants run one after the other (order
rotated between rounds), each writing all records into a fresh file and
closing it; the figure is process CPU time (user + system, so the file writes
count) per ``write`` call (request + response-or-revisit record): medians over
the rounds. Also printed: the WARC bytes per write (level 1 everywhere) and
the components alone (base32 of a SHA-1, WARC-Date, record id, one gzip
member).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from harness import describe_header, rotated, software_versions, write_result  # noqa: E402

DEFAULT_BASELINE = "ea428f4"


def load_baseline(rev: str, path: str = "abc_crawler/store/warc.py", name: str = "abc_crawler._warc_baseline"):
    """The module ``path`` as it was at git revision ``rev`` (relative imports resolve in the package of its
    folder: ``abc_crawler.store`` for ``abc_crawler/store/warc.py``; a revision from before the concern
    folders needs the flat ``abc_crawler/warc.py`` and the modules it imports as they are now)."""
    src = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    import abc_crawler

    spec = importlib.util.spec_from_loader(name, loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = str(Path(path).parent).replace("/", ".")
    mod.__file__ = f"{rev}:{path}"
    sys.modules[name] = mod
    exec(compile(src, mod.__file__, "exec"), mod.__dict__)
    setattr(abc_crawler, name.rsplit(".", 1)[1], mod)
    return mod


def corpus_files(n: int, lo: int = 0, hi: int = 1 << 60) -> list[Path]:
    """An even, deterministic sample of ``n`` corpus HTML files whose size is in [lo, hi]."""
    try:
        from corpus import SITES
    except ImportError:
        return []
    files = []
    for _, root, _ in SITES.values():
        if os.path.isdir(root):
            files += sorted(p for p in Path(root).rglob("*.html") if p.is_file() and lo <= p.stat().st_size <= hi)
    if len(files) <= n:
        return files
    step = len(files) / n
    return [files[int(i * step)] for i in range(n)]


def synthetic_files(n: int) -> list[Path]:
    """Pages of a generated web (``abc-testweb generate``, made once under a temporary directory)."""
    web = Path(tempfile.gettempdir()) / "abc-micro-web-300h-6000p-s1"
    if not (web / "manifest.json").exists():
        subprocess.run([str(ROOT / ".venv" / "bin" / "abc-testweb"), "generate", str(web), "--hosts", "300",
                        "--pages", "6000", "--seed", "1", "--plain"], check=True, capture_output=True)
    files = sorted((web / "sites").rglob("*.html"))
    step = max(1, len(files) // n)
    return files[::step][:n]


def responses(files: list[Path]):
    from abc_crawler.net.fetcher import Response

    out = []
    bodies = [f.read_bytes() for f in files]
    for i, f in enumerate(files):
        body = bodies[i - 7] if i % 20 == 19 else bodies[i]          # 5 % duplicates: revisit records
        host = f.parent.name if "." in f.parent.name else "docs.example.org"
        url = f"http://{host}/{f.name}"
        out.append(Response(
            key=i, url=url, status=200, status_line="HTTP/1.1 200 OK",
            headers=[("Server", "nginx/1.22.1"), ("Date", "Sat, 09 May 2026 07:35:25 GMT"),
                     ("Content-Type", "text/html"), ("Content-Length", str(len(body))),
                     ("Last-Modified", "Mon, 12 Feb 2024 10:00:00 GMT"), ("Connection", "keep-alive"),
                     ("ETag", f'"65c9ec20-{len(body):x}"'), ("Accept-Ranges", "bytes")],
            body=body, t_start=1_800_000_000.0 + i * 0.0137, t_end=1_800_000_000.0 + i * 0.0137 + 0.002,
            request_headers=[("Host", host), ("User-Agent", "abc-crawler/0.1"), ("Accept", "text/html,*/*;q=0.5"),
                             ("Accept-Encoding", "identity"), ("X-ABC-Rank", "0")]))
    return out


def run_writer(mod, kw: dict, recs, tmp: Path) -> tuple[float, int]:
    """CPU seconds of writing ``recs`` with ``mod.RankWarc(..., **kw)`` (fresh file, closed) and the file size."""
    d = Path(tempfile.mkdtemp(dir=tmp))
    t0 = time.process_time()
    w = mod.RankWarc(d, 0, **kw)
    write = w.write
    for r in recs:
        write(r)
    w.close()
    cpu = time.process_time() - t0
    # the bytes of every WARC file the writer made (a closed file's name is no longer ``w.path``)
    return cpu, sum(p.stat().st_size for p in (d / "warc").glob("*.warc.gz"))


def per_call(fn, arg, n: int = 20000) -> float:
    """µs per call of ``fn(arg)`` (process CPU, median of 5)."""
    out = []
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(n):
            fn(arg)
        out.append((time.process_time() - t0) / n * 1e6)
    return statistics.median(out)


def components(old, new, page: bytes) -> dict:
    import base64
    import hashlib
    import zlib

    d = hashlib.sha1(b"x").digest()
    small = (b"WARC/1.1\r\nWARC-Type: request\r\n" + b"X-Header: value value value\r\n" * 10)
    ids = new._RecordIds()
    old_gz = getattr(old, "_gzip_member", lambda b: zlib.compress(b, 1, 31))
    old_iso = getattr(old, "_iso")
    import uuid
    out = {
        "b32_old_us": per_call(lambda x: base64.b32encode(x).decode(), d),
        "b32_new_us": per_call(new.b32_sha1, d),
        "date_old_us": per_call(old_iso, 1_800_000_000.123456),
        "date_new_us": per_call(new._iso, 1_800_000_000.123456),
        "id_old_us": per_call(lambda _: f"<urn:uuid:{uuid.uuid4()}>", None),
        "id_new_us": per_call(lambda _: ids(), None),
        "gzip_request_old_us": per_call(old_gz, small, 3000),
        "gzip_request_new_us": per_call(new.GZIP_BACKENDS["zlib"], small, 3000),
        "gzip_page_old_us": per_call(old_gz, page, 1000),
        "gzip_page_new_us": per_call(new.GZIP_BACKENDS["zlib"], page, 1000),
    }
    if "isal" in new.GZIP_BACKENDS:
        out["gzip_request_isal_us"] = per_call(new.GZIP_BACKENDS["isal"], small, 3000)
        out["gzip_page_isal_us"] = per_call(new.GZIP_BACKENDS["isal"], page, 1000)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision of the previous warc.py")
    ap.add_argument("--records", type=int, default=400, help="records per set")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)

    import abc_crawler.store.warc as new
    old = load_baseline(a.baseline)
    print(describe_header(f"WARC writer micro-benchmark: {a.baseline}:abc_crawler/store/warc.py vs working tree",
                          extra_versions=("isal",)))
    sets = {}
    cf = corpus_files(a.records, 5_000, 30_000)
    if cf:
        sets["corpus"] = responses(cf)
    sets["synthetic"] = responses(synthetic_files(a.records))
    variants = [("old", old, {}), ("new-zlib", new, {"gzip": "zlib"})]
    if "isal" in new.GZIP_BACKENDS:
        variants.append(("new-isal", new, {"gzip": "isal"}))
    result = {"baseline": a.baseline, "rounds": a.rounds, "default_gzip": new.DEFAULT_GZIP, "sets": {},
              "versions": software_versions("isal")}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, recs in sets.items():
            mean_kb = sum(len(r.body) for r in recs) / len(recs) / 1024
            runs = {label: [] for label, _, _ in variants}
            size = {}
            for rnd in range(a.rounds):
                for label, mod, kw in rotated(variants, rnd):
                    cpu, size[label] = run_writer(mod, kw, recs, tmp)
                    runs[label].append(cpu / len(recs) * 1e6)
            med = {k: statistics.median(v) for k, v in runs.items()}
            row = {"records": len(recs), "mean_body_kb": round(mean_kb, 2), "runs": runs}
            print(f"\n{name}: {len(recs)} responses, mean body {mean_kb:.1f} KB, {a.rounds} interleaved rounds "
                  f"(CPU µs per write = request + response/revisit record, medians)")
            for label, _, _ in variants:
                row[f"us_per_write_{label}"] = round(med[label], 1)
                row[f"bytes_per_write_{label}"] = size[label] // len(recs)
                print(f"  {label:9s} {med[label]:8.1f} µs  {size[label] // len(recs):6d} B/write"
                      + ("" if label == "old" else f"   -{100 * (1 - med[label] / med['old']):.0f} %"
                                                   f" ({med['old'] / med[label]:.2f}x)"))
            result["sets"][name] = row
    page = max((r.body for r in next(iter(sets.values()))), key=lambda b: -abs(len(b) - 10_000))
    comp = components(old, new, page)
    result["components_us"] = {k: round(v, 3) for k, v in comp.items()}
    print(f"\ncomponents (µs per call, old -> new; gzip_page: a {len(page)}-byte page):")
    for k in ("b32", "date", "id", "gzip_request", "gzip_page"):
        isal = comp.get(k + "_isal_us")
        print(f"  {k:14s} {comp[k + '_old_us']:8.2f} -> {comp[k + '_new_us']:8.2f}"
              + (f"  (isal {isal:.2f})" if isal is not None else ""))
    path = write_result("warc_micro", result, a.out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
