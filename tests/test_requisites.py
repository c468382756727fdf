"""Page requisites and link kinds end to end (issue 33): an 8-rank crawl of a web whose pages have
every kind of requisite stores each exactly once and its graph equals the truth kind by kind;
--no-page-requisites, one hop past --max-depth, --requisites-any-host against the URL filters,
and --accept-types."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from warcio.archiveiterator import ArchiveIterator

from abc_crawler.web.parser import EMBED, KIND_NAMES, NAV, REDIRECT, REFRESH
from abc_crawler.store.session import load_graph
from abc_crawler.testweb.generator import load_manifest
from abc_crawler.testweb.expected import compute_expected, robots_parsers  # noqa: F401
from crawlcheck import check_session, crawl_cli, generate, serve


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("reqweb") / "web"
    generate(d, n_hosts=8, n_pages=240, seed=21, requisite_pages=4)
    return d


def _requested(session: Path) -> set[str]:
    g = load_graph(session)
    return {u for u, r in zip(g.urls, g.url_rank.tolist()) if r >= 0}


def _kinds_by_page(session: Path) -> dict[str, dict[int, set[str]]]:
    g = load_graph(session)
    out: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for s, d, k in zip(g.link_src.tolist(), g.link_dst.tolist(), g.link_kinds().tolist()):
        out[g.urls[s]][k].add(g.urls[d])
    return out


def _robots(m: dict) -> dict:
    return {h: v["robots_txt"] for h, v in m["robots"].items()}


def test_eight_ranks_store_every_requisite_once_and_the_graph_equals_the_truth_kind_by_kind(web, tmp_path):
    session = tmp_path / "s"
    with serve(web) as srv:
        r = crawl_cli(8, web, session, timeout=400)
        rows = srv.rows()
    assert r.returncode == 0, r.stderr[-3000:]
    # requested == the truth with requisites, each answered once, stored once (crawlcheck's checks)
    check_session(web, session, rows)
    m = load_manifest(web)
    pages = m["pages"]
    requested = _requested(session)
    rich = [u for u in pages if u.endswith("/index.html") and "/req" in u]
    assert len(rich) == 4 and set(rich) <= requested
    for u in rich:
        assert set(pages[u]["embeds"]) <= requested, set(pages[u]["embeds"]) - requested
    css = [u for u in requested if u.endswith("/site.css")]
    assert len(css) == 4 and all(set(pages[u]["embeds"]) <= requested for u in css)
    # every reached host's /style.css, once
    style = [u for u in requested if u.endswith("/style.css")]
    assert len(style) == len({u.split("/")[2] for u in requested if pages.get(u, {}).get("content_type") == "text/html"})
    # kind by kind: every page's links in graph.npz are the manifest's, split the same way
    kinds = _kinds_by_page(session)
    served = set(m["hosts"])

    def mine(urls):            # links to the served web (the graph holds no out-of-scope URL)
        return {v for v in urls if v.startswith("http://") and v.split("/")[2] in served}
    checked = 0
    for u in requested:
        e = pages.get(u)
        if not e or e["status"] != 200:
            continue
        got = kinds.get(u, {})
        if e["content_type"] == "text/html":
            assert got.get(NAV, set()) == mine(e["links"]), u
            assert got.get(EMBED, set()) == mine(e["embeds"]) - mine(e["links"]), u
            assert got.get(REFRESH, set()) == mine(e["refresh"]), u
            checked += 1
        elif e["content_type"] == "text/css":
            assert got.get(EMBED, set()) == mine(e["embeds"]), u
    assert checked > 200
    for u, e in pages.items():
        if e["status"] in (301, 302, 307, 308) and u in requested and e["links"]:
            assert kinds[u].get(REDIRECT, set()) == mine(e["links"]), u
    stats = json.loads((session / "stats.json").read_text())
    lbk = stats["links_by_kind"]
    assert list(lbk) == list(KIND_NAMES)
    g = load_graph(session)
    assert sum(lbk.values()) == g.link_src.size and lbk["embed"] >= len(style) + 4 * 8 and lbk["refresh"] >= 8
    # the page graph: no embed edge (an iframe's page is a node, the edge to it is not)
    frames = {u for u in requested if u.endswith("/frame.html")}
    nid = {g.urls[i]: n for n, i in enumerate(g.node_url.tolist())}
    edges = set(zip(g.edge_src.tolist(), g.edge_dst.tolist()))
    assert frames and all(nid[f] not in {d for s, d in edges if s == nid[u]} for u in rich for f in frames)
    # WARC: one response per requisite, its bytes the server's
    stored = defaultdict(int)
    for f in sorted((session / "warc").glob("*.warc.gz")):
        with open(f, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type in ("response", "revisit"):
                    stored[rec.rec_headers.get_header("WARC-Target-URI")] += 1
    assert all(stored[u] == 1 for u in css + style)
    # the crawl log: a URL found only as a requisite is logged E, only as a refresh target R, on
    # whichever of the 8 ranks crawls it (the hop letter travels with a URL sent to its owner)
    incoming: dict[str, set[int]] = defaultdict(set)
    for s, d, k in zip(g.link_src.tolist(), g.link_dst.tolist(), g.link_kinds().tolist()):
        incoming[g.urls[d]].add(k)
    paths = {}
    for f in sorted((session / "logs" / "crawl").glob("*.log")):
        for line in f.read_text().splitlines():
            x = line.split()
            paths.setdefault(x[3], x[4])
    only = {k: {u for u, ks in incoming.items() if ks == {k} and u in paths} for k in (EMBED, REFRESH)}
    owners = {int(g.url_rank[i]) for i, u in enumerate(g.urls) if u in only[EMBED]}
    assert len(only[EMBED]) > 20 and len(owners) == 8 and only[REFRESH]
    assert {u: paths[u] for u in only[EMBED] if paths[u] != "E"} == {}
    assert {u: paths[u] for u in only[REFRESH] if paths[u] != "R"} == {}


def test_no_page_requisites_fetches_none(web, tmp_path):
    session = tmp_path / "s"
    with serve(web):
        r = crawl_cli(2, web, session, "--no-page-requisites", "--no-stats", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    m = load_manifest(web)
    want = compute_expected(m["pages"], m["seeds"], m["hosts"], _robots(m), requisites=False)
    assert _requested(session) == set(want["requested"])
    assert not any(u.endswith(".css") or u.endswith(".png") for u in _requested(session))
    # the control: with requisites the truth differs
    assert set(want["requested"]) != set(m["expected"]["requested"])


def test_requisites_one_hop_past_max_depth(web, tmp_path):
    session = tmp_path / "s"
    m = load_manifest(web)
    with serve(web):
        r = crawl_cli(2, web, session, "--max-depth", "0", "--no-stats", "--no-sitemaps", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    pages = m["pages"]
    seeds = m["seeds"]
    want = set(seeds) | {e for s in seeds for e in pages[s]["embeds"]}
    # redirects of a seed's requisites aside (none here): the seeds and their requisites, no link
    assert _requested(session) == want
    assert all(u.endswith("/style.css") for u in want - set(seeds))


def test_requisites_any_host_passes_the_url_filters_and_nothing_else(web, tmp_path):
    """--reject-regex '\\.png$' keeps images out; with --requisites-any-host a requisite passes the
    URL filters (links do not: a .png linked by <a> would stay out)."""
    m = load_manifest(web)
    pngs = {u for u in m["expected"]["requested"] if u.endswith(".png")}
    assert pngs
    got = {}
    for tag, extra in (("filtered", []), ("any", ["--requisites-any-host"])):
        session = tmp_path / tag
        with serve(web):
            r = crawl_cli(2, web, session, "--reject-regex", r"\.png$", "--no-stats", *extra, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        got[tag] = _requested(session)
    assert not {u for u in got["filtered"] if u.endswith(".png")}
    assert {u for u in got["any"] if u.endswith(".png")} == pngs
    assert got["any"] - pngs == got["filtered"]


def test_accept_types_cuts_other_bodies_after_their_headers(web, tmp_path):
    session = tmp_path / "s"
    with serve(web):
        r = crawl_cli(2, web, session, "--accept-types", "text/html,text/css", "--no-stats", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    m = load_manifest(web)
    pages = m["pages"]
    cut = {u for u in m["expected"]["requested"] if pages.get(u, {}).get("status") == 200
           and not pages[u]["content_type"].startswith(("text/html", "text/css"))}
    assert {u for u in cut if u.endswith((".png", ".js"))}          # the requisites among them
    stats = json.loads((session / "stats.json").read_text())
    assert stats["errors"]["type_not_accepted"] == len(cut)
    truncated, whole = {}, {}
    for f in sorted((session / "warc").glob("*.warc.gz")):
        with open(f, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type != "response":
                    continue
                uri = rec.rec_headers.get_header("WARC-Target-URI")
                body = rec.content_stream().read()
                if rec.rec_headers.get_header("WARC-Truncated"):
                    truncated[uri] = (body, rec.http_headers.get_header("Content-Type"))
                else:
                    whole[uri] = body
    assert set(truncated) == cut
    assert all(b == b"" and ct for b, ct in truncated.values())      # the head kept, no body
    assert any(u.endswith(".css") for u in whole) and all(whole[u] for u in whole if u.endswith(".css"))
    assert np.all(load_graph(session).url_status[[i for i, u in enumerate(load_graph(session).urls) if u in cut]] == 200)


def test_max_body_bytes_per_type_aborts_exactly_the_bodies_over_their_types_cap(web, tmp_path):
    """--max-body-bytes image/=76,10M: the images longer than 76 bytes are aborted (body_too_large,
    not stored); shorter images and every page and style sheet are stored whole."""
    session = tmp_path / "s"
    with serve(web):
        r = crawl_cli(2, web, session, "--max-body-bytes", "image/=76,10M", "--no-stats", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    pages = load_manifest(web)["pages"]
    asked = [u for u in load_manifest(web)["expected"]["requested"] if pages.get(u, {}).get("status") == 200]
    over = {u for u in asked if pages[u]["content_type"].startswith("image/") and pages[u]["bytes"] > 76}
    under = {u for u in asked if pages[u]["content_type"].startswith("image/") and pages[u]["bytes"] <= 76}
    assert over and under                                             # the control: both kinds exist
    stats = json.loads((session / "stats.json").read_text())
    assert stats["errors"]["body_too_large"] == len(over)
    stored, revisits = {}, set()                # (a body stored before is a revisit record: no body again)
    for f in sorted((session / "warc").glob("*.warc.gz")):
        with open(f, "rb") as fh:
            for rec in ArchiveIterator(fh):
                uri = rec.rec_headers.get_header("WARC-Target-URI")
                if rec.rec_type == "response":
                    stored[uri] = len(rec.content_stream().read())
                elif rec.rec_type == "revisit":
                    revisits.add(uri)
    assert not over & (set(stored) | revisits)
    kept = [u for u in asked if u not in over]
    assert set(kept) <= set(stored) | revisits
    assert {u: stored[u] for u in kept if u in stored} == {u: pages[u]["bytes"] for u in kept if u in stored}


def test_the_report_says_how_requisites_enter_the_partition_models():
    """abc-report's requisite figures on a hand-made graph: a URL found only by embed links is a
    requisite (one also linked by navigation is not), its bytes' share, and the embed links whose
    ends one rank requested."""
    import numpy as np

    from abc_crawler.report.build import requisite_figures
    from abc_crawler.store.session import SessionGraph

    urls = ["http://a.test/p0", "http://a.test/p1", "http://a.test/s.css", "http://a.test/i.png", "http://b.test/x.js"]
    g = SessionGraph.from_urls(urls, ranks=2)
    g.url_rank[:] = [0, 1, 0, 1, -1]                      # x.js never requested
    g.url_bytes[:] = [100, 100, 50, 250, 0]
    links = [(0, 2, 1), (1, 2, 1), (0, 3, 1), (1, 3, 0), (0, 4, 1), (0, 1, 0)]   # (src, dst, kind)
    g.link_src = np.array([s for s, _, _ in links], dtype=np.int32)
    g.link_dst = np.array([d for _, d, _ in links], dtype=np.int32)
    g.link_kind = np.array([k for _, _, k in links], dtype=np.uint8)
    f = requisite_figures(g)
    assert f == {"urls": 1, "requested": 4, "bytes_pct": 10.0, "embed_links": 3, "embed_links_local_pct": 33.33}
    g.link_kind = None                                   # a session before link kinds: no requisite
    assert requisite_figures(g)["urls"] == 0
