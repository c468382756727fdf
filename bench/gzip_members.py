"""Issue 37: the CPU and size of one WARC record's gzip member, by deflate library and level.

    .venv/bin/python bench/gzip_members.py [--pages 800] [--corpus-pages 300] [--repeat 5]
        [--hosts 60] [--site-pages 4000] [--seed 37] [--port 18371] [--out bench/results/gzip_members.json]

A WARC file is a run of gzip members, one a record (what lets a reader start at any record's
offset), so a page costs three deflate calls: its request record (~400 B), its response record (the
body) and the metadata record of its outlinks. This times each available compressor on three sets
of inputs, one call a member as the writer makes them: the bodies of the generated web's pages
(``harness.generated_web``), corpus pages (``bench/corpus.py``'s sites, when installed), and request
records as ``RankWarc`` writes them for the generated web's URLs. Printed: µs a member (the best
of ``--repeat``) and the compressed size over the input's.

Compressors: ISA-L (``isal``, levels 0, 1 and 2; the writer's is level 1), zlib level 1, and,
when installed (they are not dependencies of ABC), libdeflate (``pip install deflate``, levels 1
and 6) and zlib-ng (``pip install zlib-ng``, level 1).
"""
from __future__ import annotations

import argparse
import glob
import random
import sys
import timeit
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from page_costs import load_pages  # noqa: E402

CORPUS = Path("/var/tmp/abc-bench/corpus")


def compressors() -> dict:
    """name -> one gzip member of ``data`` (only the libraries installed here)."""
    from isal import isal_zlib

    out = {f"isal {lvl}": (lambda d, lvl=lvl: isal_zlib.compress(d, lvl, 31)) for lvl in (0, 1, 2)}
    out["zlib 1"] = lambda d: zlib.compress(d, 1, 31)
    try:
        import deflate
    except ImportError:
        pass
    else:
        for lvl in (1, 6):
            out[f"libdeflate {lvl}"] = lambda d, lvl=lvl: deflate.gzip_compress(d, lvl)
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        pass
    else:
        out["zlib-ng 1"] = lambda d: zlib_ng.compress(d, 1, 31)
    return out


def request_records(urls: list[str]) -> list[bytes]:
    """The request record of each URL, uncompressed, as the writer makes it."""
    import time

    from abc_crawler.net.fetcher import Response
    from abc_crawler.store.warc import page_records

    out = []
    for i, url in enumerate(urls):
        host = url.split("/")[2]
        r = Response(key=None, url=url, status=200, status_line="HTTP/1.1 200 OK", headers=[], raw_head=b"HTTP/1.1 200 OK\r\n\r\n",
                     body=b"", t_start=time.time(), t_end=time.time(),
                     request_headers=[("Host", host), ("User-Agent", "abc-crawler/0.1 (+https://example.invalid/abc-bench)"),
                                      ("Accept", "text/html,*/*;q=0.5"), ("Accept-Encoding", "identity")])
        req, _, _ = page_records(r, "2026-11-29T15:00:00Z", None, None, None, f"<urn:uuid:{i:036d}>", f"<urn:uuid:{i + 1:036d}>")
        out.append(req)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=800, help="generated pages (and request records)")
    ap.add_argument("--corpus-pages", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--hosts", type=int, default=60)
    ap.add_argument("--site-pages", type=int, default=4000, help="pages of the generated web")
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--port", type=int, default=18371)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.pages < 1 or a.repeat < 1:
        ap.error(f"--pages and --repeat must be at least 1, got {a.pages} and {a.repeat}")
    print(harness.describe_header("Issue 37: a WARC record's gzip member, by compressor"), flush=True)
    pages = load_pages(harness.generated_web(a.hosts, a.site_pages, a.seed, a.port), a.pages)
    sets = {"generated page bodies": [b for _, _, b in pages], "request records": request_records([u for u, _, _ in pages])}
    files = sorted(glob.glob(str(CORPUS / "**" / "*.html"), recursive=True))
    if files and a.corpus_pages:
        sets["corpus page bodies"] = [Path(f).read_bytes()
                                      for f in random.Random(1).sample(files, min(a.corpus_pages, len(files)))]
    else:
        print(f"(no corpus under {CORPUS}: bench/corpus.py installs it)")
    res = {}
    for name, data in sets.items():
        size = sum(map(len, data))
        print(f"\n{name}: {len(data)} members, {size / len(data):,.0f} B each on average")
        print(f"  {'compressor':14s} {'µs a member':>12s} {'size / input':>13s}")
        for cname, f in compressors().items():
            t = min(timeit.repeat(lambda: [f(d) for d in data], number=1, repeat=a.repeat))
            ratio = sum(len(f(d)) for d in data) / size
            res.setdefault(name, {})[cname] = {"us": 1e6 * t / len(data), "ratio": ratio}
            print(f"  {cname:14s} {1e6 * t / len(data):12.2f} {ratio:13.3f}")
    print(f"wrote {harness.write_result('gzip_members', {'benchmark': 'gzip_members', 'args': vars(a), 'results': res}, a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
