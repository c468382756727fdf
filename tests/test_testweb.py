"""The local test web: generator, embedded server, CLI.  Fast; every server is bounded in time."""
from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from abc_crawler.testweb.cli import free_port, main
from abc_crawler.testweb.generator import DEFAULT_KNOBS, canonical, compute_expected, generate_web
from abc_crawler.testweb.server import ServerError, TestWebServer

pytestmark = pytest.mark.timeout(60)

PY = sys.executable


def tree_digest(d: Path) -> dict:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


def read_log(path) -> list[dict]:
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("web")
    m = generate_web(d, n_hosts=8, n_pages=150, seed=3, port=free_port())
    return d, m


@pytest.fixture(scope="module")
def server(web, tmp_path_factory):
    d, m = web
    log = tmp_path_factory.mktemp("log") / "access.jsonl"
    srv = TestWebServer.from_manifest(d, access_log=log, max_seconds=120)
    with srv:
        yield srv, log


def request(conn, host, path, method="GET", headers=None):
    h = {"Host": host}
    h.update(headers or {})
    conn.request(method, path, headers=h)
    r = conn.getresponse()
    return r, r.read()


def split_url(url):
    rest = url.split("://", 1)[1]
    i = rest.find("/")
    return rest[:i], rest[i:]


# ----------------------------------------------------------------------------- generator

def test_generator_is_deterministic(tmp_path):
    a = generate_web(tmp_path / "a", n_hosts=6, n_pages=80, seed=11, port=18123)
    b = generate_web(tmp_path / "b", n_hosts=6, n_pages=80, seed=11, port=18123)
    assert a == b
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")
    c = generate_web(tmp_path / "c", n_hosts=6, n_pages=80, seed=12, port=18123)
    assert c["pages"] != a["pages"]
    # written files agree with the returned manifest
    assert json.loads((tmp_path / "a" / "manifest.json").read_text()) == a
    assert (tmp_path / "a" / "seeds.txt").read_text().split() == a["seeds"]
    assert (tmp_path / "a" / "resolve.txt").read_text().split() == [f"{h}:127.0.0.1" for h in a["hosts"]]


def web_fingerprint(d: Path, skip_manifest: bool = False) -> str:
    """One SHA-256 over every file of a web (relative path, NUL, bytes), in path order
    (``skip_manifest``: all but the top-level manifest.json)."""
    h = hashlib.sha256()
    for f in sorted(x for x in d.rglob("*") if x.is_file()):
        if skip_manifest and f.parent == d and f.name == "manifest.json":
            continue
        h.update(str(f.relative_to(d)).encode())
        h.update(b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()


# Fingerprints of two small webs: with the knob off (the default, or host_communities=0) the web
# must stay byte-for-byte the same as the generator made it *before* host communities existed
# (commit e4b9b11). Every file but manifest.json is pinned as it was then (the second SHA-256, of
# the tree without the manifest: the same with the generator of e4b9b11 and of today); the
# manifest (first SHA-256) gained the truth of page requisites (issue 33: each page's `embeds` and
# `refresh`, the hosts' /style.css entries, `expected` with requisites) and is pinned as it is now.
# Before that change the manifests were a94043ad… and 53e3e789…, the whole trees f672e6e4… and
# 9d767468….
_FINGERPRINTS = [
    (dict(n_hosts=8, n_pages=160, seed=5),
     "2e7c272ca5c05fe4a8e4e08298d098fde45505ff99e2da0aab31cb4498b350f1",
     "2f2bbc4c0fb0e862076deae1770344255559c4de017cb2527d3462a00b205669"),
    (dict(n_hosts=12, n_pages=300, seed=11, features=False),
     "b2912deb308f41bb327cca56ddb6a6cc0702ec1b603c19c4e7c2547ba9f90f6b",
     "0a264ceb5aff56fd896cdc5b4dd20a8fffc49322375401f3d3ebd95e988358a4"),
]


@pytest.mark.parametrize("explicit", [False, True])
@pytest.mark.parametrize("case", range(len(_FINGERPRINTS)))
def test_communities_off_leaves_the_web_unchanged(tmp_path, case, explicit):
    kw, manifest_sha, tree_sha = _FINGERPRINTS[case]
    extra = {"host_communities": 0, "community_locality": 0.5} if explicit else {}
    m = generate_web(tmp_path, port=8123, **kw, **extra)
    assert "communities" not in m and "host_communities" not in m["knobs"]
    assert hashlib.sha256((tmp_path / "manifest.json").read_bytes()).hexdigest() == manifest_sha
    assert web_fingerprint(tmp_path, skip_manifest=True) == tree_sha


def _cross_host_share(m: dict) -> tuple[int, float]:
    """(cross-host links between served HTML pages, share of them inside the source's community)."""
    comm = m["communities"]
    tot = within = 0
    for u, e in m["pages"].items():
        if e["status"] != 200 or e["content_type"] != "text/html":
            continue
        a = split_url(u)[0]
        for v in e["links"]:
            b = split_url(v)[0]
            if b != a and b in comm:
                tot += 1
                within += comm[a] == comm[b]
    return tot, within / tot


@pytest.mark.parametrize("features", [False, True])
@pytest.mark.parametrize("p", [0.9, 0.5])
def test_communities_make_cross_host_links_local(tmp_path, features, p):
    m = generate_web(tmp_path, n_hosts=48, n_pages=1500, seed=4, port=8123, features=features,
                     host_communities=8, community_locality=p)
    assert m["knobs"]["host_communities"] == 8 and m["knobs"]["community_locality"] == p
    comm = m["communities"]
    assert sorted(comm) == sorted(m["hosts"]) and set(comm.values()) == set(range(8))
    sizes = sorted(list(comm.values()).count(c) for c in range(8))
    assert sizes[0] >= 2 and sizes[-1] > sizes[0]          # several hosts each, mixed sizes
    tot, share = _cross_host_share(m)
    assert tot > 1000
    # P of the links are drawn in the community, the others anywhere (some land in it by chance)
    assert p - 0.04 <= share <= p + (1 - p) * 0.35, share
    # the true graph stays exact: expected sets recomputed from pages agree
    assert compute_expected(m["pages"], m["seeds"], m["hosts"],
                            {h: r["robots_txt"] for h, r in m["robots"].items()}) == m["expected"]
    # every host is still reached by a correct crawl
    assert {split_url(u)[0] for u in m["expected"]["nodes"]} == set(m["hosts"])


def test_communities_are_deterministic_and_change_the_web(tmp_path):
    kw = dict(n_hosts=20, n_pages=400, port=18123, host_communities=4, community_locality=0.95)
    a = generate_web(tmp_path / "a", seed=7, **kw)
    b = generate_web(tmp_path / "b", seed=7, **kw)
    assert a == b and tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")
    assert json.loads((tmp_path / "a" / "manifest.json").read_text()) == a
    c = generate_web(tmp_path / "c", seed=8, **kw)
    assert c["communities"] != a["communities"] or c["pages"] != a["pages"]
    off = generate_web(tmp_path / "off", seed=7, n_hosts=20, n_pages=400, port=18123)
    assert off["pages"] != a["pages"]
    # hosts and page sets are the same: only the links move
    assert off["hosts"] == a["hosts"] and off["seeds"] == a["seeds"]
    with pytest.raises(ValueError):
        generate_web(tmp_path / "x", n_hosts=4, n_pages=20, port=18123, host_communities=2, community_locality=1.5)
    with pytest.raises(ValueError):
        generate_web(tmp_path / "x", n_hosts=4, n_pages=20, port=18123, host_communities=-1)


def test_cli_generate_communities(tmp_path, capsys):
    out = tmp_path / "w"
    assert main(["generate", str(out), "--hosts", "12", "--pages", "120", "--seed", "2",
                 "--communities", "3", "--community-locality", "0.8"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["knobs"]["host_communities"] == 3 and m["knobs"]["community_locality"] == 0.8
    assert set(m["communities"].values()) == {0, 1, 2}
    capsys.readouterr()
    for argv in (["generate", str(tmp_path / "x"), "--community-locality", "0.8"],   # needs --communities
                 ["generate", str(tmp_path / "x"), "--communities", "-2"],
                 ["generate", str(tmp_path / "x"), "--communities", "2", "--community-locality", "2"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, (argv, err)


def test_expected_sets_are_consistent(web):
    d, m = web
    exp, pages = m["expected"], m["pages"]
    req, nodes, dis = set(exp["requested"]), set(exp["nodes"]), set(exp["disallowed"])
    hosts = set(m["hosts"])
    assert set(m["seeds"]) <= req
    assert nodes <= req and not (dis & req)
    assert len(req) == len(exp["requested"])
    for u in req:
        assert split_url(u)[0] in hosts
        assert not pages.get(u, {"disallowed": False})["disallowed"]
    for u in nodes:
        assert pages[u]["status"] == 200 and pages[u]["content_type"] == "text/html"
    for u, v in exp["edges"]:
        assert u != v and u in nodes and v in nodes and v in pages[u]["links"]
    for u in dis:
        assert pages[u]["disallowed"] and split_url(u)[0] in hosts
    assert not set(m["out_of_scope_hosts"]) & {h.split(":")[0] for h in hosts}
    for u in exp["out_of_scope_links"]:
        assert split_url(u)[0].split(":")[0] in m["out_of_scope_hosts"]
    # every reached URL of a served host is requested or disallowed; closure recomputes the same
    robots = {h: r["robots_txt"] for h, r in m["robots"].items()}
    assert compute_expected(pages, m["seeds"], m["hosts"], robots) == exp
    for u in req:
        for v in pages.get(u, {"links": []})["links"]:
            assert v in req or v in dis or v in exp["out_of_scope_links"]
    # the features are there
    statuses = {int(s) for s in exp["statuses"]}
    assert {200, 404, 500} <= statuses and statuses & {301, 302, 307, 308}
    assert dis and exp["out_of_scope_links"]
    hidden = [u for u in pages if "/hidden/" in u]
    assert hidden and not set(hidden) & req
    assert any(p["nofollow"] for p in pages.values())
    assert any(r["crawl_delay"] == DEFAULT_KNOBS["crawl_delay"] for r in m["robots"].values())
    assert any(r["robots_txt"] is None for r in m["robots"].values())
    non_html = [u for u in req if pages[u]["status"] == 200 and pages[u]["content_type"] != "text/html"]
    assert non_html
    locs = {p["location"] for p in pages.values() if p["location"]}
    assert "file:///etc/passwd" in locs and any(x.startswith("ftp://") for x in locs)


def test_canonical_agrees_with_urllib_and_the_crawler():
    import itertools

    from abc_crawler.testweb.canonical import canonical_reference

    try:
        from abc_crawler.web.urls import canonicalize
    except ImportError:  # pragma: no cover
        canonicalize = None
    bases = ["http://h.test:81/a/b/c.html", "http://h.test/a/", "http://h.test/", "http://h.test/x.html?b=1&a=2",
             "https://H.test:443/a/b"]
    hrefs = ["", "#x", "?z=1&a=2", "p.html", "./p.html", "../p.html", "../../../../p.html", "../", "./", "..", ".",
             "/", "/a/./b/../c.html", "//H2.TEST:80/x", "//h2.test", "http://H2.Test:80", "https://h3.test:443/",
             "HTTP://h2.test:8080/a/../b?y=2&x=1#f", "mailto:x@y", "javascript:void(0)", "ftp://x/y",
             " p.html\n", "a/b/..", "a/b/.", "/d1/p3.html?page=2&q=crawl", "http://h.test:81?x=1", "file:///etc/passwd"]
    for base, href in itertools.product(bases, hrefs):
        got = canonical(href, base)
        assert got == canonical_reference(href, base), (href, base)
        if canonicalize is not None:
            assert got == canonicalize(href, base), (href, base)



def test_canonical_docstring_examples():
    import doctest

    from abc_crawler.testweb import canonical as mod

    res = doctest.testmod(mod)
    assert res.attempted > 0 and res.failed == 0


def test_duplicates_are_byte_identical(web):
    d, m = web
    routes = json.loads((d / "routes.json").read_text())["hosts"]
    bodies = {}
    for url, p in m["pages"].items():
        if p["status"] == 200:
            host, path = split_url(url)
            f = routes[host.split(":")[0]][path]["file"]
            bodies.setdefault((d / "sites" / host.split(":")[0] / f).read_bytes(), []).append(url)
    dups = [urls for urls in bodies.values() if len(urls) > 1]
    assert len(dups) >= DEFAULT_KNOBS["duplicates"]


def _parse_links(data: bytes, url: str, canon):
    from lxml import etree

    doc = etree.fromstring(data, etree.HTMLParser())
    base = url
    b = doc.xpath("//base/@href")
    if b:
        base = canon(b[0], url)
    metas = doc.xpath("//meta[translate(@name,'ROBTS','robts')='robots']/@content")
    meta_nf = any("nofollow" in c.lower() for c in metas)
    links, nof = [], []
    for el in doc.xpath("//a[@href]|//area[@href]"):
        c = canon(el.get("href"), base)
        if c is None:
            continue
        rel = (el.get("rel") or "").lower().split()
        (nof if meta_nf or "nofollow" in rel else links).append(c)
    links = list(dict.fromkeys(links))
    nof = [u for u in dict.fromkeys(nof) if u not in set(links)]
    return links, nof


@pytest.mark.parametrize("which", ["generator", "crawler"])
def test_manifest_links_match_the_html(web, which):
    """Parsing the files (lxml, <base>, rel/meta nofollow) gives the manifest's link lists."""
    if which == "crawler":
        urls = pytest.importorskip("abc_crawler.web.urls")
        canon = urls.canonicalize
    else:
        canon = canonical
    d, m = web
    routes = json.loads((d / "routes.json").read_text())["hosts"]
    checked = 0
    for url, p in m["pages"].items():
        if p["status"] != 200 or p["content_type"] != "text/html":
            continue
        host, path = split_url(url)
        data = (d / "sites" / host.split(":")[0] / routes[host.split(":")[0]][path]["file"]).read_bytes()
        assert _parse_links(data, url, canon) == (p["links"], p["nofollow"]), url
        checked += 1
    assert checked > 100


def test_plain_and_tiny_webs(tmp_path):
    m = generate_web(tmp_path / "p", n_hosts=3, n_pages=30, seed=1, port=18124, features=False)
    # HTML pages, and each host's /style.css (a requisite every page names)
    css = {u for u in m["pages"] if u.endswith("/style.css")}
    assert len(css) == 3 and all(m["pages"][u]["content_type"] == "text/css" for u in css)
    assert all(p["status"] == 200 and p["content_type"] == "text/html" for u, p in m["pages"].items() if u not in css)
    assert all(r["robots_txt"] is None for r in m["robots"].values())
    assert set(m["expected"]["requested"]) == set(m["pages"]) == set(m["expected"]["nodes"]) | css
    assert not m["expected"]["disallowed"] and not m["expected"]["out_of_scope_links"]
    t = generate_web(tmp_path / "t", n_hosts=1, n_pages=1, seed=0, port=18125)
    assert t["seeds"] == ["http://h000.test:18125/"]
    assert "http://h000.test:18125/" in t["expected"]["nodes"]
    with pytest.raises(ValueError):
        generate_web(tmp_path / "x", n_hosts=5, n_pages=3, port=1)
    with pytest.raises(ValueError):
        generate_web(tmp_path / "x", addr="10.1.2.3", port=8000)
    with pytest.raises(TypeError):
        generate_web(tmp_path / "x", port=8000, no_such_knob=1)


def test_port_80_urls_and_default_port_links(tmp_path):
    m = generate_web(tmp_path / "w", n_hosts=4, n_pages=200, seed=2, port=80)
    assert m["hosts"][0] == "h000.test" and m["seeds"][0] == "http://h000.test/"
    assert (tmp_path / "w" / "resolve.txt").read_text().splitlines()[0] == "h000.test:80:127.0.0.1"
    html = b"".join(p.read_bytes() for p in (tmp_path / "w" / "sites").rglob("*.html"))
    assert b".test:80/" in html and b"<base href=" in html
    assert all(":80" not in u for u in m["pages"])


# ----------------------------------------------------------------------------- server

def test_serves_every_url_over_one_keepalive_connection(web, server):
    d, m = web
    srv, log = server
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    routes = json.loads((d / "routes.json").read_text())["hosts"]
    n = 0
    for url, p in m["pages"].items():
        host, path = split_url(url)
        r, body = request(conn, host, path, headers={"X-ABC-Rank": "5"})
        assert r.status == p["status"], url
        assert r.getheader("Content-Length") == str(len(body))
        assert r.getheader("Location") == p["location"]
        if p["status"] == 200:
            assert r.getheader("Content-Type").split(";")[0] == p["content_type"]
            f = d / "sites" / host.split(":")[0] / routes[host.split(":")[0]][path]["file"]
            assert body == f.read_bytes()
        n += 1
    for host, info in m["robots"].items():
        r, body = request(conn, host, "/robots.txt")
        if info["robots_txt"] is None:
            assert r.status == 404
        else:
            assert r.status == 200 and body.decode() == info["robots_txt"]
            assert r.getheader("Content-Type").startswith("text/plain")
        n += 1
    conn.close()
    deadline = time.time() + 5   # the server thread counts a request just after writing it
    while srv.stats()["requests"] < n and time.time() < deadline:
        time.sleep(0.01)
    assert srv.stats()["requests"] >= n


def test_virtual_hosts_head_and_unknown_hosts(web, server):
    d, m = web
    srv, _ = server
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    h0, h1 = m["hosts"][0], m["hosts"][1]
    r0, b0 = request(conn, h0, "/")
    r1, b1 = request(conn, h1, "/")
    assert r0.status == r1.status == 200 and b0 != b1
    assert b0 == (d / "sites" / h0.split(":")[0] / "index.html").read_bytes()
    r, b = request(conn, h0.upper(), "/")          # case-insensitive, port in Host
    assert r.status == 200 and b == b0
    r, b = request(conn, h0.split(":")[0], "/")    # without port
    assert b == b0
    r, b = request(conn, "unknown.test", "/")
    assert r.status == 404
    r, b = request(conn, "elsewhere.example", "/")
    assert r.status == 404
    r, b = request(conn, h0, "/no/such/page.html")
    assert r.status == 404 and int(r.getheader("Content-Length")) == len(b) > 0
    r, b = request(conn, h0, "/", method="HEAD")
    assert r.status == 200 and b == b"" and int(r.getheader("Content-Length")) == len(b0)
    r, b = request(conn, h0, "/", method="POST")
    assert r.status == 405
    r, b = request(conn, h0, "/../../etc/passwd")
    assert r.status == 404
    conn.close()
    # absolute-form request target
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        s.sendall(f"GET http://{h1}/ HTTP/1.1\r\nHost: ignored.test\r\nConnection: close\r\n\r\n".encode())
        data = recv_all(s)
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b1)


def recv_all(s) -> bytes:
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return out
        out += chunk


def test_connection_close_http10_and_pipelining(web, server):
    d, m = web
    srv, _ = server
    h0 = m["hosts"][0]
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        s.sendall(f"GET / HTTP/1.1\r\nHost: {h0}\r\nConnection: close\r\n\r\n".encode())
        data = recv_all(s)   # returns: the server closed the connection
    assert data.startswith(b"HTTP/1.1 200 OK\r\n") and b"Connection: close\r\n" in data
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        s.sendall(f"GET / HTTP/1.0\r\nHost: {h0}\r\n\r\n".encode())
        data = recv_all(s)
    assert data.startswith(b"HTTP/1.1 200 OK\r\n")
    # two pipelined requests, then a third with close: three responses in order
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        reqs = (f"GET / HTTP/1.1\r\nHost: {h0}\r\n\r\n"
                f"HEAD /robots.txt HTTP/1.1\r\nHost: {h0}\r\n\r\n"
                f"GET /nope HTTP/1.1\r\nHost: {h0}\r\nConnection: close\r\n\r\n")
        s.sendall(reqs.encode())
        data = recv_all(s)
    assert data.count(b"HTTP/1.1 ") == 3
    assert data.index(b"HTTP/1.1 200") < data.rindex(b"HTTP/1.1 404")
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        s.sendall(b"garbage\r\n\r\n")
        assert recv_all(s).startswith(b"HTTP/1.1 400")


def test_many_parallel_keepalive_connections(web, server):
    """128 connections open at once, each doing several requests: all succeed."""
    d, m = web
    srv, log = server
    urls = [u for u in m["expected"]["nodes"]]
    n_conn, per_conn = 128, 4
    socks = [socket.create_connection(("127.0.0.1", srv.port), timeout=10) for _ in range(n_conn)]
    results = []
    try:
        for rnd in range(per_conn):
            for i, s in enumerate(socks):
                host, path = split_url(urls[(i * per_conn + rnd) % len(urls)])
                s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nX-ABC-Rank: {i % 8}\r\n\r\n".encode())
            for s in socks:
                f = s.makefile("rb")
                status = f.readline()
                length = 0
                while True:
                    line = f.readline()
                    if line == b"\r\n":
                        break
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                    assert b"close" not in line.lower()
                body = f.read(length)
                f.close()
                results.append((status, len(body) == length))
    finally:
        for s in socks:
            s.close()
    assert len(results) == n_conn * per_conn
    assert all(st.startswith(b"HTTP/1.1 200") and ok for st, ok in results)


def test_pycurl_multi_64_handles(web, server):
    pycurl = pytest.importorskip("pycurl")
    from abc_crawler.testweb.cli import bench_fetch

    d, m = web
    srv, _ = server
    assert srv.port == m["port"]
    urls = m["expected"]["nodes"]
    r = bench_fetch(urls, m["resolve"], connections=64, seconds=0.5)
    assert r["errors"] == 0 and r["requests"] >= 64


def test_flush_request_gives_the_whole_log_once_other_connections_end(web, tmp_path):
    """FLUSH (docs/TESTWEB.md): answered once every other connection has ended, with the log flushed
    up to everything before it; never logged or counted itself."""
    from abc_crawler.testweb.server import flush_request

    d, m = web
    log = tmp_path / "log.jsonl"
    h0 = m["hosts"][0]
    with TestWebServer(d, port=0, access_log=log, max_seconds=60) as srv:
        c1 = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        for _ in range(3):
            request(c1, h0, "/")
        # c1 is still open: a short wait gives up and says so, the log is flushed anyway
        info = srv.flush(wait=0.1)
        assert info["open"] == 1 and info["requests"] == 3
        assert log.stat().st_size == info["log_bytes"] and len(read_log(log)) == 3
        # once c1 has gone, a FLUSH request over the wire answers with nothing open
        c1.close()
        info = flush_request("127.0.0.1", srv.port)
        assert info["open"] == 0 and info["requests"] == 3 == srv.stats()["requests"]
        assert len(read_log(log)) == 3                      # the FLUSH request is not in the log
        assert log.stat().st_size == info["log_bytes"]
        c2 = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        request(c2, h0, "/missing.html")
        c2.close()
        info = flush_request("127.0.0.1", srv.port)
        rows = read_log(log)
        assert [r["status"] for r in rows] == [200, 200, 200, 404] and info["log_bytes"] == log.stat().st_size


def test_access_log_fields_and_connection_ids(web, tmp_path):
    d, m = web
    log = tmp_path / "log.jsonl"
    h0 = m["hosts"][0]
    with TestWebServer(d, port=0, access_log=log, max_seconds=30) as srv:
        c1 = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        c2 = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        for _ in range(3):
            request(c1, h0, "/", headers={"X-ABC-Rank": "3"})
        request(c2, h0.upper(), "/missing.html")
        request(c2, h0, "/", method="HEAD", headers={"X-ABC-Rank": "junk"})
        c1.close()
        c2.close()
    t_stop = time.time()
    rows = read_log(log)   # readable right after the server stopped
    assert len(rows) == 5
    for r in rows:
        assert set(r) >= {"conn", "req", "method", "host", "path", "status", "bytes", "t_start", "t_write", "t_end",
                          "rank"}
        assert r["t_start"] <= r["t_write"] <= r["t_end"] <= t_stop
        assert r["host"] == h0.split(":")[0]
    by_conn = {}
    for r in rows:
        by_conn.setdefault(r["conn"], []).append(r)
    assert sorted(len(v) for v in by_conn.values()) == [2, 3]
    c1rows = max(by_conn.values(), key=len)
    assert [r["req"] for r in c1rows] == [0, 1, 2] and all(r["rank"] == 3 for r in c1rows)
    assert all(r["status"] == 200 and r["path"] == "/" for r in c1rows)
    c2rows = min(by_conn.values(), key=len)
    assert [r["status"] for r in c2rows] == [404, 200] and [r["rank"] for r in c2rows] == [-1, -1]
    assert c2rows[1]["method"] == "HEAD" and c2rows[1]["bytes"] == 0


def test_static_fallback_symlinks_gzip_large_and_prefix_redirects(tmp_path):
    root = tmp_path / "real"
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    big = os.urandom(300_000)
    (docs / "index.html").write_text("<html>index</html>")
    (docs / "sub" / "index.html").write_text("<html>sub</html>")
    (docs / "big.bin").write_bytes(big)
    (docs / "z.html.gz").write_bytes(gzip.compress(b"<html>gz</html>"))
    (root / "sites").mkdir(parents=True)
    (root / "sites" / "docs.example.test").symlink_to(docs, target_is_directory=True)
    (root / "routes.json").write_text(json.dumps(
        {"prefix_redirects": {"docs.example.test": {"/old/": "http://other.test/new/"}}}))
    with TestWebServer(root, max_seconds=30) as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        host = "docs.example.test"
        r, b = request(conn, host, "/")
        assert (r.status, b) == (200, b"<html>index</html>")
        r, b = request(conn, host, "/sub")
        assert r.status == 301 and r.getheader("Location") == "/sub/"
        r, b = request(conn, host, "/sub/")
        assert b == b"<html>sub</html>"
        r, b = request(conn, host, "/big.bin")
        assert r.status == 200 and b == big
        r, b = request(conn, host, "/z.html")
        assert (r.status, b) == (200, b"<html>gz</html>") and r.getheader("Content-Type").startswith("text/html")
        r, b = request(conn, host, "/old/a/b.html?x=1")
        assert r.status == 301 and r.getheader("Location") == "http://other.test/new/a/b.html?x=1"
        r, b = request(conn, host, "/sub/../../x")
        assert r.status == 404
        conn.close()


def test_server_errors_bounds_and_reload(tmp_path, web):
    d, m = web
    with TestWebServer(d, max_seconds=30) as srv:
        with pytest.raises(ServerError, match="cannot listen"):
            TestWebServer(d, port=srv.port).start()
    with pytest.raises(ServerError, match="loopback"):
        TestWebServer(d, addr="0.0.0.0")
    with pytest.raises(ServerError):
        TestWebServer(tmp_path / "missing").start()
    srv = TestWebServer(d, max_seconds=0.3).start()
    assert srv.wait(5)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", srv.port), timeout=1)
    srv.stop()
    # idle keep-alive connections are closed; reload picks up a web generated for the bound port
    empty = tmp_path / "later"
    empty.mkdir()
    # Kept alive after an answer: checked on a server whose idle timer (60 s) no pause of this process
    # between two requests reaches, however busy the machine (a 0.2 s timer raced the second request)
    with TestWebServer(empty, idle_timeout=60, max_seconds=120) as srv:
        generate_web(empty, n_hosts=2, n_pages=10, port=srv.port, features=False)
        srv.reload()                    # returns once the new site answers
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        r, b = request(conn, f"h001.test:{srv.port}", "/")
        assert r.status == 200 and r.getheader("Connection", "").lower() == "keep-alive"
        s = conn.sock
        r, b = request(conn, f"h001.test:{srv.port}", "/")     # kept alive after an answer
        assert r.status == 200 and conn.sock is s
        conn.close()
    # then closed by the idle timer: on a server with a 0.2 s timer (looked at every 0.5 s) a kept-alive
    # connection left idle ends: recv returns the end of the stream, and would time out (30 s, a
    # bound for a busy machine) on a connection kept open
    with TestWebServer(empty, idle_timeout=0.2, max_seconds=60) as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        r, b = request(conn, f"h001.test:{srv.port}", "/")
        assert r.status == 200 and r.getheader("Connection", "").lower() == "keep-alive"
        s = conn.sock
        s.settimeout(30)
        assert s.recv(10) == b""
        conn.close()


# ----------------------------------------------------------------------------- CLI

def test_cli_generate_and_errors(tmp_path, capsys):
    out = tmp_path / "w"
    assert main(["generate", str(out), "--hosts", "3", "--pages", "20", "--seed", "4"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["port"] > 0 and len(m["hosts"]) == 3
    capsys.readouterr()
    cases = [
        ["serve", str(tmp_path)],                    # no manifest
        ["serve", str(tmp_path / "nope")],
        ["exec", str(tmp_path), "--", "true"],
        ["exec", str(out)],                          # no command
        ["generate", str(tmp_path / "x"), "--addr", "10.0.0.1"],
        ["generate", str(tmp_path / "x"), "--hosts", "5", "--pages", "2"],
        ["generate", str(tmp_path / "x"), "--pages", "many"],
        ["bogus"],
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, (argv, err)
    # port in use
    with TestWebServer(out, port=m["port"], max_seconds=30):
        assert main(["serve", str(out), "--max-seconds", "5"]) == 2
        err = capsys.readouterr().err
        assert "cannot listen" in err and err.count("\n") == 1


def test_cli_serve_subprocess_ready_file_and_signal(web, tmp_path):
    d, m = web
    ready, log = tmp_path / "ready.json", tmp_path / "log.jsonl"
    p = subprocess.Popen([PY, "-m", "abc_crawler.testweb.cli", "serve", str(d), "--port", "0",
                          "--ready-file", str(ready), "--access-log", str(log), "--max-seconds", "30"])
    try:
        deadline = time.time() + 10
        while not ready.exists():
            assert p.poll() is None and time.time() < deadline
            time.sleep(0.02)
        info = json.loads(ready.read_text())
        assert info["pid"] == p.pid
        conn = http.client.HTTPConnection("127.0.0.1", info["port"], timeout=5)
        r, b = request(conn, m["hosts"][0], "/")
        assert r.status == 200
        conn.close()
        p.send_signal(signal.SIGTERM)
        assert p.wait(10) == 0
        assert [r["status"] for r in read_log(log)] == [200]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # --max-seconds stops it by itself
    # (a server that did not stop would hit the subprocess's timeout)
    r = subprocess.run([PY, "-m", "abc_crawler.testweb.cli", "serve", str(d), "--port", "0", "--max-seconds", "0.5"],
                       timeout=60)
    assert r.returncode == 0


def test_cli_exec_runs_command_and_stops(tmp_path):
    web = tmp_path / "w"
    m = generate_web(web, n_hosts=2, n_pages=10, port=free_port(), features=False)
    log = tmp_path / "log.jsonl"
    script = (
        "import http.client, os, sys\n"
        "c = http.client.HTTPConnection(os.environ['ABC_TESTWEB_ADDR'], int(os.environ['ABC_TESTWEB_PORT']))\n"
        "c.request('GET', '/', headers={'Host': 'h001.test'})\n"
        "assert c.getresponse().status == 200\n"
        "assert os.path.exists(os.environ['ABC_TESTWEB_SEEDS'])\n"
        "sys.exit(7)\n")
    r = subprocess.run([PY, "-m", "abc_crawler.testweb.cli", "exec", str(web), "--access-log", str(log),
                        "--", PY, "-c", script], timeout=30)
    assert r.returncode == 7
    assert [x["host"] for x in read_log(log)] == ["h001.test"]
    with pytest.raises(OSError):      # the server is gone
        socket.create_connection(("127.0.0.1", m["port"]), timeout=1)
    r = subprocess.run([PY, "-m", "abc_crawler.testweb.cli", "exec", str(web), "--", "/no/such/cmd"],
                       timeout=30, capture_output=True, text=True)
    assert r.returncode == 127 and "Traceback" not in r.stderr
    r = subprocess.run([PY, "-m", "abc_crawler.testweb.cli", "exec", str(web), "--max-seconds", "0.5", "--",
                        PY, "-c", "import time; time.sleep(30)"], timeout=30, capture_output=True, text=True)
    assert r.returncode == 124
