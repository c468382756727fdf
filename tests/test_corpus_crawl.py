"""A crawl of real documentation pages: the SQLite sample shipped in tests/data/corpus (public
domain; 45 pages of www.sqlite.org as Debian packages it), served on loopback by the embedded
server's static fallback, so it runs on a fresh machine.

What a correct crawl finds is computed here with nothing of the crawler (the standard library's
html.parser and urljoin): the pages reachable from index.html over <a>/<area> links on the site's
own host and port (pages outside the sample answer 404), and each page's requisites (style sheets,
images, scripts: tests/linkref.py, html.parser and tinycss2) on that host, fetched by default. The session is then checked like every
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
from linkref import reference

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

    def requisites(url: str) -> list[str]:
        out = []
        for ref in reference(pages[url[len(base):]])["embeds"]:
            u = urldefrag(urljoin(url, ref.strip()))[0]
            if u.startswith(base + "/") and u not in out:
                out.append(u)
        return out

    seed = f"{base}/index.html"
    seen, queue, requested, out_links = {seed}, deque([seed]), [], {}
    embeds: dict[str, list[str]] = {}
    while queue:
        u = queue.popleft()
        requested.append(u)
        if u[len(base):] in pages:
            out_links[u] = links(u)
            embeds[u] = requisites(u)
            for v in out_links[u] + embeds[u]:
                if v not in seen:
                    seen.add(v)
                    queue.append(v)
    nodes = set(out_links)
    edges = sorted({(u, v) for u, vs in out_links.items() for v in vs if v != u and v in nodes})
    return {"requested": sorted(requested), "nodes": sorted(nodes), "edges": [list(e) for e in edges],
            "disallowed": [], "embeds": embeds}


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
    # every requisite a stored page references on the site was requested (the sample ships no
    # style sheet or image: they answer 404, and are asked once each all the same)
    want = {v for vs in exp["embeds"].values() for v in vs}
    assert want and want <= set(exp["requested"]) and stats["links_by_kind"]["embed"] >= len(want)
    polite = facts["log"]["politeness"]
    assert sum(p["spaced"] for p in polite) == sum(p["pairs"] for p in polite) > 0   # every request rested


# -- a real site with its requisites: Debian's python3 documentation (tests/data/site-python3) ----

SITE = Path(__file__).resolve().parent / "data" / "site-python3"


def _site_files() -> dict[str, bytes]:
    root = SITE / "docs.test"
    return {"/" + p.relative_to(root).as_posix()[:-3]: gzip.decompress(p.read_bytes()) for p in root.rglob("*.gz")}


def test_a_real_site_is_stored_with_every_style_sheet_image_and_script_it_references(tmp_path):
    """Every requisite a stored page of a real Sphinx site references — its style sheets, the one
    they @import, the images their url() name, its scripts — is requested once and stored with
    the file's bytes; found by an independent reading (html.parser and tinycss2)."""
    from linkref import css_refs

    files = _site_files()
    assert {"/index.html", "/_static/nature.css", "/_static/basic.css", "/_static/file.png"} <= set(files)
    d = tmp_path / "web"
    (d / "sites").mkdir(parents=True)
    (d / "sites" / "docs.test").symlink_to(SITE / "docs.test")
    port = free_port()
    base = f"http://docs.test:{port}"
    # the truth: pages over links on the site, requisites of pages and of style sheets
    seed = f"{base}/index.html"
    seen, queue, requested, nodes, edges, wanted = {seed}, deque([seed]), [], [], set(), set()
    while queue:
        u = queue.popleft()
        requested.append(u)
        path = u[len(base):]
        body = files.get(path)
        out: list[str] = []
        if body is not None and path.endswith(".html"):
            nodes.append(u)
            ref = reference(body)
            nav = [urldefrag(urljoin(u, h.strip()))[0] for h in ref["links"] + ref["related"]]
            emb = [urldefrag(urljoin(u, h.strip()))[0] for h in ref["embeds"]]
            edges |= {(u, v) for v in nav if v.startswith(base + "/") and v != u}
            wanted |= {v for v in emb if v.startswith(base + "/")}
            out = nav + emb
        elif body is not None and path.endswith(".css"):
            emb = [urldefrag(urljoin(u, h.strip()))[0] for h in css_refs(body.decode())]
            wanted |= {v for v in emb if v.startswith(base + "/")}
            out = emb
        for v in out:
            if v.startswith(base + "/") and v not in seen:
                seen.add(v)
                queue.append(v)
    nodeset = set(nodes)
    exp = {"requested": sorted(requested), "nodes": sorted(nodes),
           "edges": sorted([u, v] for u, v in edges if v in nodeset), "disallowed": []}
    manifest = {"format": "abc-corpus-sample/1", "addr": "127.0.0.1", "port": port, "hosts": [f"docs.test:{port}"],
                "seeds": [seed], "robots": {}, "expected": exp}
    (d / "routes.json").write_text(json.dumps({"format": "abc-testweb-routes/1", "static_fallback": True}))
    (d / "manifest.json").write_text(json.dumps(manifest))
    (d / "seeds.txt").write_text(seed + "\n")
    (d / "resolve.txt").write_text(f"docs.test:{port}:127.0.0.1\n")
    session = tmp_path / "s"
    with serve(d) as srv:
        r = crawl_cli(1, d, session, "--no-stats", timeout=300)
        rows = srv.rows()
    assert r.returncode == 0, r.stderr[-3000:]
    check_session(d, session, rows)
    on_disk = {f"{base}{p}" for p in files}
    want = {v for v in wanted if v in on_disk}
    assert {f"{base}/_static/{n}" for n in ("nature.css", "basic.css", "file.png", "pygments.css", "jquery.js")} <= want
    from warcio.archiveiterator import ArchiveIterator

    stored = {}
    for f in sorted((session / "warc").glob("*.warc.gz")):
        with open(f, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    stored[rec.rec_headers.get_header("WARC-Target-URI")] = (
                        rec.http_headers.get_statuscode(), rec.content_stream().read())
    for v in sorted(want):
        assert v in stored and stored[v][0] == "200" and stored[v][1] == files[v[len(base):]], v
