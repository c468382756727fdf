"""Make the real-site sample under tests/data/corpus/ from Debian's sqlite3-doc (SQLite's own web
site, public domain), so that the corpus tests run on a machine without the documentation packages.

    python tests/data/corpus/make_sample.py [--root /usr/share/doc/sqlite3] [--pages 45] [--max-bytes 40000]

A breadth-first walk from index.html over the <a>/<area> links (html.parser, urljoin: nothing of
the crawler) takes the first --pages pages of at most --max-bytes; each is written gzipped
(mtime 0: the same input gives the same bytes) as www.sqlite.org/PATH.gz, which the embedded
server serves decompressed as PATH (docs/TESTWEB.md, static_fallback). The list is SAMPLE.txt.
"""
from __future__ import annotations

import argparse
import gzip
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin

HERE = Path(__file__).resolve().parent
BASE = "http://www.sqlite.org/"


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("a", "area") and a.get("href") is not None:
            self.links.append(a["href"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="/usr/share/doc/sqlite3")
    ap.add_argument("--pages", type=int, default=45)
    ap.add_argument("--max-bytes", type=int, default=40000)
    a = ap.parse_args(argv)
    root = Path(a.root)
    seen, queue, picked = {"index.html"}, deque(["index.html"]), []
    while queue and len(picked) < a.pages:
        rel = queue.popleft()
        f = root / rel
        if not f.is_file():
            continue
        if f.stat().st_size <= a.max_bytes:
            picked.append(rel)
        p = _Links()
        p.feed(f.read_bytes().decode("utf-8", "replace"))
        for href in p.links:
            url = urldefrag(urljoin(BASE + rel, href.strip()))[0]
            if url.startswith(BASE) and url.endswith(".html") and "?" not in url:
                r = url[len(BASE):]
                if r not in seen:
                    seen.add(r)
                    queue.append(r)
    out = HERE / "www.sqlite.org"
    for rel in picked:
        dst = out / (rel + ".gz")
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(gzip.compress((root / rel).read_bytes(), 9, mtime=0))
    (HERE / "SAMPLE.txt").write_text("".join(f"{r}\n" for r in picked))
    print(f"{len(picked)} pages into {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
