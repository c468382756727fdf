"""End to end: crawling the way real sites are crawled, on this machine only.

- without --resolve (names resolved by the system resolver from a hosts file of the test's own, in
  a private network namespace): private addresses refused by default; with
  --allow-private-addresses --allowed-domains --url-filter, exactly the web those rules leave;
- HTTPS with a CA made by the test, every http:// URL redirected to https:// (robots.txt too);
- robots.txt with a group for the crawler's token and a looser * group, with a browser-style agent;
- sitemaps (plain, index, gzip'd) listing pages no page links to;
- gzip'd responses stored as received and parsed;
- a forward proxy that sees every request (--proxy URL and --proxy env);
- --max-depth across ranks, redirects not counted, XHTML parsed.
"""
from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from abc_crawler.net.robots import robots_token
from abc_crawler.web.scope import UrlFilter
from abc_crawler.store.session import load_graph
from abc_crawler.testweb.canonical import split_url
from abc_crawler.testweb.expected import compute_expected
from abc_crawler.testweb.generator import generate_web
from abc_crawler.web.urls import host_of
from crawlcheck import BIN, LAB, MPIEXEC, check_session, crawl_cli, free_port, generate, read_log, serve, warc_records
from sandbox import run_sandboxed, unavailable
from tlscerts import make_certs, openssl_missing

BROWSER_UA = "Mozilla/5.0 (compatible; MyBot/1.0; +https://bot.example/about)"


def _sandbox_or_skip():
    why = unavailable()
    if why:
        pytest.skip(why)


def _crawl_argv(ranks: int, seeds: Path, session: Path, *extra: str) -> list[str]:
    return [MPIEXEC, "-n", str(ranks), str(BIN / "abc-crawl"), str(seeds), *LAB, "--session-dir", str(session),
            "--politeness-delay", "0", "--progress-seconds", "5", "--test-rank-header",
            "--contact", "https://abc.test/about", *extra]


def _robots_texts(m: dict) -> dict:
    return {net: info["robots_txt"] for net, info in m["robots"].items()}


def _with_expected(web: Path, view: Path, expected: dict, robots: dict | None = None) -> Path:
    """A directory whose manifest.json is ``web``'s with another ``expected`` (what check_session reads)."""
    m = json.loads((web / "manifest.json").read_text())
    m["expected"] = expected
    if robots is not None:
        m["robots"] = {net: {"robots_txt": txt, "crawl_delay": None} for net, txt in robots.items()}
    view.mkdir(parents=True, exist_ok=True)
    (view / "manifest.json").write_text(json.dumps(m))
    for p in web.iterdir():          # the sites and routes the server's bytes are computed from
        if p.name != "manifest.json" and not (view / p.name).exists():
            (view / p.name).symlink_to(p.resolve())
    return view


def _stats(session: Path) -> dict:
    return json.loads((session / "stats.json").read_text())


def _hostnames(m: dict) -> dict:
    return {h.split(":")[0]: "127.0.0.1" for h in m["hosts"]}


# -- without --resolve --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def names_web(tmp_path_factory):
    d = tmp_path_factory.mktemp("names")
    m = generate_web(d / "web", n_hosts=6, n_pages=150, seed=41, port=8080)
    return d / "web", m


def test_without_resolve_private_addresses_are_refused_and_nothing_reaches_the_server(names_web, tmp_path):
    _sandbox_or_skip()
    web, m = names_web
    seeds = tmp_path / "seeds.txt"
    extra = ["http://127.0.0.1:8080/", "http://169.254.169.254/latest/meta-data/", "http://[::ffff:10.0.0.1]/"]
    seeds.write_text("".join(s + "\n" for s in m["seeds"] + extra))
    log = tmp_path / "access.log"
    res = run_sandboxed({"hosts": _hostnames(m), "web": str(web), "serve_args": ["--access-log", str(log)],
                         "crawl": _crawl_argv(2, seeds, tmp_path / "s"), "timeout": 120}, tmp_path / "box")
    assert res["returncode"] == 0, res["stderr"][-3000:]
    assert not log.exists() or read_log(log) == []              # zero requests reached the server
    st = _stats(tmp_path / "s")
    assert st["requests"] == 0 and st["pages_crawled"] == 0
    # every seed (and every seed host's /sitemap.xml) was refused, counted as such
    assert st["errors"]["address_refused"] >= len(m["seeds"]) + len(extra)
    assert set(st["errors"]) <= {"address_refused", "robots_address_refused"}
    assert st["refused_connections"] > 0
    assert res["dns_queries"] == []                              # every name came from the hosts file


def test_allowed_domains_and_url_filter_crawl_exactly_their_web(names_web, tmp_path):
    _sandbox_or_skip()
    web, m = names_web
    exp0 = m["expected"]
    # exclude a host the plain crawl reaches (not the first seed's), and a directory everywhere
    reached = Counter(split_url(u)[1] for u in exp0["requested"])
    excluded = next(h for h, _ in reached.most_common() if h != split_url(m["seeds"][0])[1])
    ex_name = excluded.split(":")[0]
    flt = tmp_path / "filter.txt"
    flt.write_text(f"# the excluded host\n-^https?://{ex_name.replace('.', '[.]')}[:/]\n-/d2/\n"
                   "+^http://[a-z0-9]+[.]test:8080/\n")
    rule = UrlFilter.from_file(str(flt))
    hosts = [h for h in m["hosts"] if h != excluded]
    expected = compute_expected(m["pages"], m["seeds"], hosts, _robots_texts(m), in_scope=rule.accepts)
    assert expected["requested"] and len(expected["requested"]) < len(exp0["requested"])
    log = tmp_path / "access.log"
    session = tmp_path / "s"
    res = run_sandboxed({"hosts": _hostnames(m), "web": str(web), "serve_args": ["--access-log", str(log)],
                         "crawl": _crawl_argv(2, web / "seeds.txt", session, "--allow-private-addresses",
                                              "--allowed-domains", "test", "--url-filter", str(flt)),
                         "timeout": 180}, tmp_path / "box")
    assert res["returncode"] == 0, res["stderr"][-3000:]
    check_session(_with_expected(web, tmp_path / "view", expected), session, log)
    rows = read_log(log)
    assert rows and not [r for r in rows if r["host"] == ex_name]          # never contacted
    assert not [r for r in rows if "/d2/" in r["path"]]
    st = _stats(session)
    assert st["links"]["out_of_scope_domain"] > 0 and st["links"]["out_of_scope_filter"] > 0
    # the hosts --allowed-domains kept out are named (the filter's rejections are not per host)
    assert st["out_of_scope_hosts"] and all(h.endswith(".example") for h in st["out_of_scope_hosts"])
    assert res["dns_queries"] == []          # *.example links were never looked up (nor anything else)


# -- HTTPS --------------------------------------------------------------------------------------

def _https(url: str) -> str:
    return "https://" + url[len("http://"):]


def _tls_overlaps(rows: list[dict]) -> int:
    """Pairs of requests of one rank to one host name (either scheme) whose times overlap."""
    by = defaultdict(list)
    for r in rows:
        by[(r["host"], r["rank"])].append((r["t_start"], r["t_end"]))
    n = 0
    for iv in by.values():
        iv.sort()
        n += sum(1 for (s0, e0), (s1, _) in zip(iv, iv[1:]) if s1 < e0)
    return n


@pytest.fixture(scope="module")
def tls_web(tmp_path_factory):
    why = openssl_missing()
    if why:
        pytest.skip(why)
    d = tmp_path_factory.mktemp("tls")
    m = generate_web(d / "web", n_hosts=5, n_pages=120, seed=43, port=80)
    certs = make_certs(d / "certs", [h.split(":")[0] for h in m["hosts"]])
    resolve = d / "resolve-tls.txt"
    resolve.write_text("".join(f"{h}:{p}:127.0.0.1\n" for h in m["hosts"] for p in (80, 443)))
    return d / "web", m, certs, resolve


def _tls_run(tmp_path, web, m, certs, resolve, *extra, ports=(80, 443), name="s"):
    log = tmp_path / f"{name}.log"
    session = tmp_path / name
    serve_args = ["--access-log", str(log), "--port", str(ports[0]), "--tls-port", str(ports[1]),
                  "--tls-cert", str(certs.cert), "--tls-key", str(certs.key), "--https-redirect", "--latency", "0.01"]
    res = run_sandboxed({"hosts": {}, "web": str(web), "serve_args": serve_args,
                         "crawl": _crawl_argv(2, web / "seeds.txt", session, "--resolve", str(resolve),
                                              "--phases", "off", *extra),
                         "timeout": 240}, tmp_path / f"box-{name}")
    assert res["returncode"] == 0, res["stderr"][-3000:]
    return session, (read_log(log) if log.exists() else []), res


def test_https_with_the_ca_bundle_every_page_once_and_nothing_disallowed(tls_web, tmp_path):
    _sandbox_or_skip()
    web, m, certs, resolve = tls_web
    session, rows, res = _tls_run(tmp_path, web, m, certs, resolve, "--ca-bundle", str(certs.ca))
    exp = m["expected"]
    recs = warc_records(session)
    # every page of the web stored once, under its https:// URL (the http:// URLs are redirects)
    for u in exp["requested"]:
        c = recs.get(_https(u), Counter())
        assert c["response"] + c["revisit"] == 1, (u, c)
    g = load_graph(session)
    requested = {g.urls[i] for i in np.flatnonzero(g.url_rank >= 0)}
    https_requested = {u for u in requested if u.startswith("https://")}
    assert https_requested == {_https(u) for u in exp["requested"]}
    # nothing else: every http:// URL requested is one of the web's, answered with its redirect
    http_requested = requested - https_requested
    assert http_requested <= set(exp["requested"])
    assert {g.urls[i] for i in g.node_url} == {_https(u) for u in exp["nodes"]}
    # no request to a disallowed path, on either scheme
    disallowed = {split_url(u)[1].split(":")[0] + split_url(u)[2] for u in exp["disallowed"]}
    assert rows and not [r for r in rows if r["host"] + r["path"] in disallowed]
    assert {r["scheme"] for r in rows} == {"http", "https"}
    assert all(r["status"] == 301 for r in rows if r["scheme"] == "http")
    # robots.txt: asked once per host and rank over http (then followed to https), as one state
    robots = Counter((r["host"], r["rank"], r["scheme"]) for r in rows if r["path"] == "/robots.txt")
    assert robots and max(robots.values()) == 1
    st = _stats(session)
    assert st["robots_redirects"] >= 1 and st["overlap_pages"] == 0
    # http and https of one host share one politeness state: a rank never has two requests to one
    # host in flight at once, whichever the scheme
    assert _tls_overlaps(rows) == 0


def test_https_without_the_ca_bundle_stores_nothing_and_counts_tls_errors(tls_web, tmp_path):
    _sandbox_or_skip()
    web, m, certs, resolve = tls_web
    session, rows, res = _tls_run(tmp_path, web, m, certs, resolve, name="noca")
    st = _stats(session)
    assert st["pages_crawled"] == 0 and st["bytes_stored"] == 0 and warc_records(session) == {}
    assert st["errors"].get("robots_tls_unknown_issuer", 0) >= 1
    assert st["errors"].get("tls_unknown_issuer", 0) >= len(m["seeds"])      # the seeds' URLs, given up
    assert all(r["path"] == "/robots.txt" for r in rows)                        # only robots.txt was asked


def test_http_and_https_on_other_ports_are_two_hosts_the_control(tls_web, tmp_path):
    """The control of the shared politeness state: with the web on ports 8080/8443, http and https
    of one host are two endpoints (two host keys), and their requests do overlap."""
    _sandbox_or_skip()
    web, m, certs, _ = tls_web
    d = tmp_path / "web8080"
    # absolute links only: a protocol-relative "//h.test:8080/x" on an https page would mean https on the
    # plain port (the web's own fault on other ports than 80/443)
    m2 = generate_web(d, n_hosts=5, n_pages=120, seed=43, port=8080, link_forms=False)
    resolve = tmp_path / "resolve.txt"
    resolve.write_text("".join(f"{h.split(':')[0]}:{p}:127.0.0.1\n" for h in m2["hosts"] for p in (8080, 8443)))
    session, rows, _ = _tls_run(tmp_path, d, m2, certs, resolve, "--ca-bundle", str(certs.ca), "--batch-urls", "4",
                                ports=(8080, 8443), name="ports")
    assert _stats(session)["pages_crawled"] > 0
    assert _tls_overlaps(rows) > 0


# -- robots.txt with a browser-style user agent ------------------------------------------------------

def test_browser_style_agent_obeys_its_own_robots_group(tmp_path):
    d = tmp_path / "web"
    m = generate(d, n_hosts=6, n_pages=200, seed=44)
    # every host: a looser * group and a group for the crawler's token forbidding two more prefixes
    token = robots_token(BROWSER_UA)
    txt = ("User-agent: *\nDisallow: /private/\n\n"
           f"User-agent: {token.upper()}\nDisallow: /private/\nDisallow: /d1/\nDisallow: /tmp/\n")
    routes = json.loads((d / "routes.json").read_text())
    for net in m["hosts"]:
        h = net.split(":")[0]
        (d / "sites" / h / "robots.txt").write_text(txt)
        routes["hosts"][h]["/robots.txt"] = {"status": 200, "type": "text/plain; charset=utf-8", "file": "robots.txt"}
    (d / "routes.json").write_text(json.dumps(routes))
    robots = {net: txt for net in m["hosts"]}
    expected = compute_expected(m["pages"], m["seeds"], m["hosts"], robots, user_agent=token)
    forbidden = set(expected["disallowed"])
    assert any("/d1/" in u for u in forbidden)
    view = _with_expected(d, tmp_path / "view", expected, robots)
    log, clog = tmp_path / "access.log", tmp_path / "control.log"
    with serve(d, log):
        r = crawl_cli(2, d, tmp_path / "s", "--user-agent", BROWSER_UA, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    with serve(d, clog):
        # the control: matching the text before the first "/" (the old rule) obeys the * group only
        c = crawl_cli(2, d, tmp_path / "c", "--user-agent", BROWSER_UA, "--robots-token", "Mozilla", timeout=240)
    assert c.returncode == 0, c.stderr[-3000:]
    port = m["port"]

    def forbidden_requests(path):
        return [x for x in read_log(path) if f"http://{x['host']}:{port}{x['path']}" in forbidden]

    check_session(view, tmp_path / "s", log)          # exactly the web the token's groups allow
    assert forbidden_requests(log) == []               # no request the crawler's group forbids
    assert forbidden_requests(clog)                    # the check can fail: the old rule makes them


# -- sitemaps --------------------------------------------------------------------------------------

def _page(links: list[str]) -> bytes:
    return ("<!DOCTYPE html><html><head><title>orphan</title></head><body>"
            + "".join(f'<a href="{u}">x</a>' for u in links) + "</body></html>").encode()


def _urlset(locs: list[str]) -> bytes:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            + "".join(f"  <url><loc>{u}</loc></url>\n" for u in locs) + "</urlset>\n").encode()


def test_pages_linked_from_nowhere_but_a_sitemap_are_crawled(tmp_path):
    d = tmp_path / "web"
    m = generate(d, n_hosts=5, n_pages=120, seed=45)
    port = m["port"]
    seed_net = split_url(m["seeds"][0])[1]
    reached = {split_url(u)[1] for u in m["expected"]["requested"]}
    other_net = next(h for h in m["hosts"] if h != seed_net and h in reached)
    sh, oh = seed_net.split(":")[0], other_net.split(":")[0]
    routes = json.loads((d / "routes.json").read_text())
    pages = dict(m["pages"])
    robots = _robots_texts(m)

    def add(h, path, body, ctype, links=None):
        f = d / "sites" / h / path.lstrip("/")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(body)
        routes["hosts"][h][path] = {"status": 200, "type": ctype, "file": path.lstrip("/")}
        if links is not None:
            pages[f"http://{h}:{port}{path}"] = {"status": 200, "content_type": "text/html", "location": None,
                                                "links": links, "nofollow": [], "disallowed": False, "bytes": len(body)}

    u = lambda h, p: f"http://{h}:{port}{p}"  # noqa: E731
    deep = u(sh, "/orphans/deep.html")
    a = [u(sh, "/orphans/a1.html"), u(sh, "/orphans/a2.html")]
    b = [u(oh, "/orphans/b1.html"), u(oh, "/orphans/b2.html"), u(oh, "/orphans/b3.html")]
    c = [u(oh, "/orphans/c1.html")]
    html = "text/html; charset=utf-8"
    add(sh, "/orphans/a1.html", _page([deep, a[1]]), html, [deep, a[1]])
    add(sh, "/orphans/a2.html", _page([]), html, [])
    add(sh, "/orphans/deep.html", _page([]), html, [])
    for x in b + c:
        add(oh, split_url(x)[2], _page([]), html, [])
    # the seed host's /sitemap.xml (plain) lists a1, a2 and URLs the scope or robots.txt keep out
    add(sh, "/sitemap.xml", _urlset(a + ["http://elsewhere.example/x.html", "ftp://x/", u(sh, "/private/s.html")]),
        "application/xml")
    # the other host's robots.txt names an index of a gzip'd sitemap and a plain one
    add(oh, "/maps/index.xml", ('<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                                f"<sitemap><loc>{u(oh, '/maps/part1.xml.gz')}</loc></sitemap>"
                                f"<sitemap><loc>{u(oh, '/maps/part2.xml')}</loc></sitemap></sitemapindex>").encode(),
        "application/xml")
    add(oh, "/maps/part1.xml.gz", gzip.compress(_urlset(b)), "application/x-gzip")
    add(oh, "/maps/part2.xml", _urlset(c), "text/xml")
    txt = (robots.get(other_net) or "User-agent: *\nDisallow: /private/\n") + f"\nSitemap: {u(oh, '/maps/index.xml')}\n"
    robots[other_net] = txt
    add(oh, "/robots.txt", txt.encode(), "text/plain; charset=utf-8")
    (d / "routes.json").write_text(json.dumps(routes))
    # a correct crawl: sitemap URLs in scope and allowed enter like seeds; they are not links
    listed = a + b + c + [u(sh, "/private/s.html")]
    expected = compute_expected(pages, m["seeds"] + listed, m["hosts"], robots)
    orphans = set(a + b + c + [deep])
    assert orphans <= set(expected["requested"]) and not orphans & set(m["expected"]["requested"])
    log = tmp_path / "access.log"
    with serve(d, log):
        r = crawl_cli(2, d, tmp_path / "s", timeout=240)
        assert r.returncode == 0, r.stderr[-3000:]
        n = crawl_cli(2, d, tmp_path / "n", "--no-sitemaps", timeout=240)
        assert n.returncode == 0, n.stderr[-3000:]
    facts = check_session(_with_expected(d, tmp_path / "view", expected, robots), tmp_path / "s")
    g = facts["metrics"]["graph"]
    # no edge into a listed orphan: sitemaps are not links (a1 -> deep and a1 -> a2 are links)
    nodes = {i: g.urls[g.node_url[i]] for i in range(g.n_nodes)}
    into = {nodes[int(dst)] for dst in g.edge_dst}
    assert into & orphans == {deep, a[1]}
    st = _stats(tmp_path / "s")
    sm = st["sitemaps"]
    assert sm["fetched"] >= len(m["seeds"]) + 3 and sm["urls"] == len(a + b + c) + 1     # /private/s.html: listed, then disallowed
    assert sm["bad_loc"] == 1 and st["links"]["out_of_scope"] >= 1
    assert st["links"]["robots_disallowed"] >= 1
    # the sitemap files were fetched, and are neither pages nor WARC records
    paths = {x["path"] for x in read_log(log)}
    assert {"/sitemap.xml", "/maps/index.xml", "/maps/part1.xml.gz", "/maps/part2.xml"} <= paths
    assert not [x for x in warc_records(tmp_path / "s") if "sitemap" in x or "/maps/" in x]
    # the control: without sitemaps, no orphan but the ones pages link to
    gn = load_graph(tmp_path / "n")
    assert not {gn.urls[i] for i in np.flatnonzero(gn.url_rank >= 0)} & orphans


# -- compression -----------------------------------------------------------------------------------

def test_gzip_responses_are_stored_as_received_and_parsed(tmp_path):
    from warcio.archiveiterator import ArchiveIterator

    d = tmp_path / "web"
    m = generate(d, n_hosts=4, n_pages=100, seed=46)
    reached = Counter(split_url(u)[1] for u in m["expected"]["requested"])
    gz_net = reached.most_common(1)[0][0]
    gz_host = gz_net.split(":")[0]
    routes = json.loads((d / "routes.json").read_text())
    routes.setdefault("modes", {})[gz_host] = {"all": "gzip"}
    (d / "routes.json").write_text(json.dumps(routes))
    log = tmp_path / "access.log"
    with serve(d, log):
        r = crawl_cli(2, d, tmp_path / "s", timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    check_session(d, tmp_path / "s", log)                  # the same web, exactly
    n_gz = 0
    for f in sorted((tmp_path / "s" / "warc").glob("*.warc.gz")):
        with open(f, "rb") as fh:
            it = ArchiveIterator(fh, check_digests="raise")   # every digest is checked
            for rec in it:
                if rec.rec_type != "response" or host_of(rec.rec_headers.get_header("WARC-Target-URI")) != gz_net:
                    continue
                assert rec.http_headers.get_header("Content-Encoding") == "gzip"
                raw = rec.raw_stream.read()
                assert raw[:2] == b"\x1f\x8b"                # the body as received
                if rec.http_headers.get_statuscode() == "200" and "html" in rec.http_headers.get_header("Content-Type"):
                    assert b"<a " in gzip.decompress(raw).lower()
                    n_gz += 1
    assert n_gz >= 3
    st = _stats(tmp_path / "s")
    assert st["bytes_decoded"] > st["bytes_stored"]


# -- proxies ---------------------------------------------------------------------------------------

def test_a_forward_proxy_sees_every_request(names_web, tmp_path):
    _sandbox_or_skip()
    web, m = names_web
    plog, slog = tmp_path / "proxy.log", tmp_path / "access.log"
    session = tmp_path / "s"
    # no hosts entry for the web's names: only the proxy can resolve them (its --resolve list)
    res = run_sandboxed({"hosts": {}, "web": str(web), "serve_args": ["--access-log", str(slog)],
                         "proxy": ["--resolve", str(web / "resolve.txt"), "--access-log", str(plog)],
                         "crawl": _crawl_argv(2, web / "seeds.txt", session, "--proxy", "http://127.0.0.1:{proxy_port}",
                                              "--allowed-domains", "test", "--phases", "off"),
                         "timeout": 180}, tmp_path / "box")
    assert res["returncode"] == 0, res["stderr"][-3000:]
    check_session(web, session, slog)
    prows, srows = read_log(plog), read_log(slog)
    assert len(prows) == len(srows) > 0
    assert Counter((r["host"], r["path"]) for r in prows) == Counter((r["host"], r["path"]) for r in srows)
    assert res["dns_queries"] == []                     # the crawler resolved no name itself


def test_proxy_env_and_no_proxy(names_web, tmp_path):
    _sandbox_or_skip()
    web, m = names_web
    plog, slog = tmp_path / "proxy.log", tmp_path / "access.log"
    direct = split_url(m["seeds"][0])[1].split(":")[0]
    res = run_sandboxed({"hosts": {}, "web": str(web), "serve_args": ["--access-log", str(slog)],
                         "proxy": ["--resolve", str(web / "resolve.txt"), "--access-log", str(plog)],
                         "crawl": _crawl_argv(2, web / "seeds.txt", tmp_path / "s", "--proxy", "env",
                                              "--resolve", str(web / "resolve.txt"), "--phases", "off"),
                         "env": {"http_proxy": "http://127.0.0.1:{proxy_port}", "no_proxy": f"{direct},.example"},
                         "timeout": 180}, tmp_path / "box")
    assert res["returncode"] == 0, res["stderr"][-3000:]
    check_session(web, tmp_path / "s", slog)
    prows, srows = read_log(plog), read_log(slog)
    assert prows and direct not in {r["host"] for r in prows}
    assert Counter((r["host"], r["path"]) for r in prows) == Counter(
        (r["host"], r["path"]) for r in srows if r["host"] != direct)
    assert [r for r in srows if r["host"] == direct]


# -- --max-depth, redirects, XHTML -------------------------------------------------------------------

def test_max_depth_counts_links_from_a_seed_across_ranks(tmp_path):
    from abc_crawler.web.assignments import make_assignment

    d = tmp_path / "web"
    hosts = ["c0.test", "c1.test", "c2.test"]
    # a chain: seed -> p1 -> p2 (XHTML) -> r3 (redirect) -> p3 -> p4 -> p5
    chain = [("c0.test", "/", "text/html", "/p1.html", "c1.test"),
             ("c1.test", "/p1.html", "text/html", "/p2.xhtml", "c0.test"),
             ("c0.test", "/p2.xhtml", "application/xhtml+xml", "/r3", "c2.test"),
             ("c2.test", "/p3.html", "text/html", "/p4.html", "c1.test"),
             ("c1.test", "/p4.html", "text/html", "/p5.html", "c0.test"),
             ("c0.test", "/p5.html", "text/html", None, None)]
    # the URLs in the order they are reached: the chain's pages, the redirect before its target
    steps = [(h, path) for h, path, *_ in chain]
    steps.insert(3, ("c2.test", "/r3"))

    def chain_urls(port):
        return [f"http://{h}:{port}{path}" for h, path in steps]

    # the depth must travel between ranks: the owners hash the URL with its port, so a free port that
    # puts all seven pages on one rank (about 1 in 64) is passed over for another
    hashed = make_assignment("hash", 2, 4096)
    for _ in range(100):
        port = free_port()
        if {hashed.owner(x) for x in chain_urls(port)} == {0, 1}:
            break
    else:
        pytest.fail("no free port gave a chain that spans both ranks")
    u = lambda h, p: f"http://{h}:{port}{p}"  # noqa: E731
    routes = {"format": 1, "static_fallback": False, "hosts": {h: {} for h in hosts}}
    for h, path, ctype, nxt_path, nxt_host in chain:
        f = d / "sites" / h / (path.strip("/") or "index.html")
        f.parent.mkdir(parents=True, exist_ok=True)
        link = f'<a href="{u(nxt_host, nxt_path)}">next</a>' if nxt_path else ""
        if ctype == "application/xhtml+xml":
            body = ('<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head>'
                    f"<title>x</title></head><body><p>{link}</p></body></html>")
        else:
            body = f"<html><body>{link}</body></html>"
        f.write_text(body)
        routes["hosts"][h][path] = {"status": 200, "type": ctype, "file": str(f.relative_to(d / "sites" / h))}
    routes["hosts"]["c2.test"]["/r3"] = {"status": 301, "location": "/p3.html"}
    (d / "routes.json").write_text(json.dumps(routes))
    (d / "seeds.txt").write_text(u("c0.test", "/") + "\n")
    (d / "resolve.txt").write_text("".join(f"{h}:{port}:127.0.0.1\n" for h in hosts))
    (d / "manifest.json").write_text(json.dumps({"addr": "127.0.0.1", "port": port}))
    order = chain_urls(port)
    assert {hashed.owner(x) for x in order} == {0, 1}

    def requested(session):
        g = load_graph(session)
        return {g.urls[i] for i in np.flatnonzero(g.url_rank >= 0)}, g

    with serve(d):
        runs = {}
        for depth in (3, 2, None):
            extra = ["--max-depth", str(depth)] if depth is not None else []
            r = crawl_cli(2, d, tmp_path / f"s{depth}", *extra, timeout=120)
            assert r.returncode == 0, r.stderr[-3000:]
            runs[depth] = requested(tmp_path / f"s{depth}")
    # depth 3: seed (0), p1 (1), p2 (2), r3 (3) and its target p3 (3: a redirect is no hop)
    assert runs[3][0] == set(order[:5])
    assert runs[2][0] == set(order[:3])
    assert runs[None][0] == set(order)
    # the XHTML page was parsed (its link followed) and is a node; p3's link is an edge only when crawled
    g = runs[3][1]
    assert u("c0.test", "/p2.xhtml") in {g.urls[i] for i in g.node_url}
    assert _stats(tmp_path / "s3")["links"]["out_of_scope_depth"] == 1
    assert _stats(tmp_path / "s2")["links"]["out_of_scope_depth"] == 1


def test_without_resolve_hosts_on_one_address_become_one_group_across_ranks(names_web, tmp_path):
    """No --resolve: the ranks learn each host's address from their first request to it, agree on
    it at the next exchange, and from then on hosts on one address are spaced by the IP delay
    whichever ranks ask them (before that, only each rank's own spacing holds: the docs say so).
    The control, the same crawl without the IP delay, fails the same check."""
    _sandbox_or_skip()
    web, m = names_web

    def crawl(name, ip_delay):
        log = tmp_path / f"{name}.log"
        session = tmp_path / name
        res = run_sandboxed({"hosts": _hostnames(m), "web": str(web), "serve_args": ["--access-log", str(log)],
                             "crawl": _crawl_argv(K_IP, web / "seeds.txt", session, "--allow-private-addresses",
                                                  "--allowed-domains", "test", "--ip-politeness-delay", ip_delay),
                             "timeout": 180}, tmp_path / f"box-{name}")
        assert res["returncode"] == 0, res["stderr"][-3000:]
        check_session(web, session, log)
        return _stats(session), read_log(log)

    def late_gaps(rows, wait=2.0):
        """Gaps between consecutive requests to the one address, from ``wait`` s after every host had
        its first request (its address was learnt and agreed by then)."""
        firsts = {}
        for r in sorted(rows, key=lambda r: r["t_start"]):
            firsts.setdefault(r["host"], r["t_start"])
        after = max(firsts.values()) + wait
        rs = sorted((r for r in rows if r["t_write"] is not None), key=lambda r: r["t_start"])
        return [b["t_start"] - a["t_write"] for a, b in zip(rs, rs[1:]) if b["t_start"] >= after]

    st, rows = crawl("grouped", "0.05")
    assert st["politeness"]["addresses"] == len(m["hosts"]) and st["politeness"]["ip_groups"] == 1
    gaps = late_gaps(rows)
    assert len(gaps) > 50 and min(gaps) >= 0.05 - 0.002, sorted(gaps)[:5]
    st0, rows0 = crawl("control", "0")
    assert st0["politeness"]["ip_groups"] == 0
    assert min(late_gaps(rows0, wait=0.0)) < 0.05 - 0.002     # (it ends within 2 s: no late window)


K_IP = 4
