"""A crawl of real documentation pages: the SQLite sample shipped in tests/data/corpus (public
domain; 45 pages of www.sqlite.org as Debian packages it), served on loopback by the embedded
server's static fallback, so it runs on a fresh machine.

What a correct crawl finds is computed here with nothing of the crawler (the standard library's
html.parser and urljoin): the pages reachable from index.html over <a>/<area> links on the site's
own host and port (pages outside the sample answer 404). The session is then checked like every
other crawl (tests/crawlcheck.py): exactly that set requested, the graph's nodes and edges, every
stored head and payload byte for byte against the files, each page answered once in the server's
log, the politeness rests (the default 0.25 s, batches of 16, one host).
"""
from __future__ import annotations

import gzip
import json
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin

import pytest

from crawlcheck import check_session, crawl_cli, free_port, serve

SAMPLE = Path(__file__).resolve().parent / "data" / "corpus"
HOST = "www.sqlite.org"


class _Links(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("a", "area") and a.get("href") is not None:
            self.links.append((a["href"], (a.get("rel") or "").lower()))


def expected_crawl(pages: dict[str, bytes], base: str) -> dict:
    """Requested URLs, nodes and edges of a crawl of ``pages`` (path -> HTML) from ``base``/index.html."""
    def links(url: str) -> list[str]:
        p = _Links()
        p.feed(pages[url[len(base):]].decode("utf-8", "replace"))
        out = []
        for href, rel in p.links:
            if "nofollow" in rel.split():
                continue
            u = urldefrag(urljoin(url, href.strip()))[0]
            if u.startswith(base + "/") and u not in out:
                out.append(u)
        return out

    seed = f"{base}/index.html"
    seen, queue, requested, out_links = {seed}, deque([seed]), [], {}
    while queue:
        u = queue.popleft()
        requested.append(u)
        if u[len(base):] in pages:
            out_links[u] = links(u)
            for v in out_links[u]:
                if v not in seen:
                    seen.add(v)
                    queue.append(v)
    nodes = set(out_links)
    edges = sorted({(u, v) for u, vs in out_links.items() for v in vs if v != u and v in nodes})
    return {"requested": sorted(requested), "nodes": sorted(nodes), "edges": [list(e) for e in edges],
            "disallowed": []}


@pytest.fixture(scope="module")
def corpus_web(tmp_path_factory):
    """The sample as a web directory the server and check_session read (manifest with ``expected``)."""
    d = tmp_path_factory.mktemp("corpus") / "web"
    (d / "sites").mkdir(parents=True)
    (d / "sites" / HOST).symlink_to(SAMPLE / HOST)
    port = free_port()
    base = f"http://{HOST}:{port}"
    pages = {"/" + p.relative_to(SAMPLE / HOST).as_posix()[:-3]: gzip.decompress(p.read_bytes())
             for p in (SAMPLE / HOST).rglob("*.html.gz")}
    assert len(pages) == len((SAMPLE / "SAMPLE.txt").read_text().split()) == 45
    exp = expected_crawl(pages, base)
    manifest = {"format": "abc-corpus-sample/1", "addr": "127.0.0.1", "port": port, "hosts": [f"{HOST}:{port}"],
                "seeds": [f"{base}/index.html"], "robots": {}, "expected": exp}
    (d / "routes.json").write_text(json.dumps({"format": "abc-testweb-routes/1", "static_fallback": True}))
    (d / "manifest.json").write_text(json.dumps(manifest))
    (d / "seeds.txt").write_text(f"{base}/index.html\n")
    (d / "resolve.txt").write_text(f"{HOST}:{port}:127.0.0.1\n")
    return d, exp


def test_the_sample_is_a_real_site_with_broken_links(corpus_web):
    d, exp = corpus_web
    assert len(exp["nodes"]) == 45                       # every sample page is reachable from index.html
    assert len(exp["requested"]) > 2 * len(exp["nodes"])  # and links to many pages not in it (404)
    assert len(exp["edges"]) > 300


def test_crawl_of_the_real_sample(corpus_web, tmp_path):
    d, exp = corpus_web
    session = tmp_path / "s"
    with serve(d) as srv:
        r = crawl_cli(2, d, session, "--politeness-delay", "0.25", "--phases", "off", timeout=300)
        rows = srv.rows()
    assert r.returncode == 0, r.stderr[-3000:]
    facts = check_session(d, session, rows)
    stats = facts["stats"]
    assert stats["stopped"] == "done" and stats["pages_crawled"] == 45
    assert stats["errors"].get("http_4xx", 0) == len(exp["requested"]) - 45
    assert stats["links"]["out_of_scope"] > 0                  # https:// and other sites' links
    polite = facts["log"]["politeness"]
    assert sum(p["spaced"] for p in polite) == sum(p["pairs"] for p in polite) > 0   # every request rested
