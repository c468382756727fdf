"""Sessions that build on each other (issue 21): session 2 with --previous asks conditionally.

Session 1 crawls a generated web served by the embedded server; 40 pages change on disk; session
2 runs with ``--previous`` (and, in the second test, with another number of ranks and the part
vector of session 1). The server's access log must show exactly the unchanged pages session 1
stored with a validator answered 304 (and they must be >= 90 % of the unchanged pages), every
changed page fetched (200) and stored with its new body, no URL requested twice; and
session 2's graph must equal the truth of the changed web (check_session recomputes everything).
The first web has pages with every kind of requisite: a page or a style sheet answered 304 keeps
its links as the kinds they were (a style sheet's images and imported sheets are still requested,
and are requisites), and its revisit record has its metadata record of outlinks.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlcheck import BIN, check_indexes, check_session, crawl_cli, generate, read_log, serve

from abc_crawler.testweb.canonical import split_url
from abc_crawler.testweb.changes import change_pages

CHANGED = 40


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("recrawl-web")
    generate(d, n_hosts=8, n_pages=420, seed=21, requisite_pages=4)
    return d


def _log_key(row: dict, port: int) -> str:
    return f"http://{row['host']}:{port}{row['path']}"


def _stored_bodies(session: Path) -> dict[str, tuple[str, bytes]]:
    """URL -> (record type, payload) of every response/revisit record of a session."""
    out = {}
    for f in sorted((session / "warc").glob("*.warc.gz")):
        with open(f, "rb") as fh:
            for rec in ArchiveIterator(fh, check_digests="raise"):
                if rec.rec_type in ("response", "revisit"):
                    out[rec.rec_headers.get_header("WARC-Target-URI")] = (rec.rec_type, rec.content_stream().read())
    return out


def _conditional(session: Path) -> set[str]:
    """The URLs a next session asks conditionally, from ``validators.npz`` as docs/SESSION_FORMAT.md
    describes it: answered 200 (or 304 standing for one), with an ETag or a Last-Modified, stored in
    a WARC file."""
    import numpy as np

    def strings(z, key):
        blob, off = z[f"{key}_blob"].tobytes(), z[f"{key}_off"]
        return [blob[off[i]:off[i + 1]].decode() for i in range(len(off) - 1)]
    with np.load(session / "validators.npz", allow_pickle=False) as z:
        urls, etag, lm, files = (strings(z, k) for k in ("url", "etag", "last_modified", "file"))
        status = z["status"].tolist()
    return {u for u, st, e, m, f in zip(urls, status, etag, lm, files) if st in (200, 304) and (e or m) and f}


def _recrawl(web: Path, tmp: Path, ranks1: int, ranks2: int, *extra2: str, repartition: bool = False):
    s1, s2 = tmp / "s1", tmp / "s2"
    with serve(web, log=tmp / "log1.jsonl"):
        r = crawl_cli(ranks1, web, s1, "--no-stats")
    assert r.returncode == 0, r.stderr[-3000:]
    check_session(web, s1)
    extra = list(extra2)
    if repartition:
        p = subprocess.run([str(BIN / "abc-repartition"), str(s1), "--parts", str(ranks2)], capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        extra += ["--assign", str(s1 / "partvec.npz")]
    before = json.loads((web / "manifest.json").read_text())["expected"]
    changed = change_pages(web, CHANGED, seed=ranks1 * 10 + ranks2)
    manifest = json.loads((web / "manifest.json").read_text())
    assert manifest["expected"]["edges"] != before["edges"]        # the truth moved: links were added
    with serve(web, log=tmp / "log2.jsonl"):
        r = crawl_cli(ranks2, web, s2, "--no-stats", "--previous", str(s1), *extra)
    assert r.returncode == 0, r.stderr[-3000:]
    # graph nodes and edges equal the changed web's truth; from the server's log: each page answered
    # once (a request cut at its slot's end and asked again apart: crawlcheck/logcheck), the rests
    facts = check_session(web, s2, tmp / "log2.jsonl")
    port = manifest["port"]
    rows = [x for x in read_log(tmp / "log2.jsonl") if x["path"] != "/robots.txt"]
    status = {_log_key(x, port): x["status"] for x in rows}
    pages = manifest["pages"]
    html = {u for u in manifest["expected"]["requested"] if pages.get(u, {}).get("status") == 200}
    unchanged = html - set(changed)
    not_modified = {u for u in unchanged if status.get(u) == 304}
    # exactly the unchanged pages session 1 stored with a validator were answered 304 (the docs'
    # rule, read from session 1's validators.npz directly: a 200 with an ETag or Last-Modified, in a
    # WARC file)
    assert not_modified == _conditional(s1) & unchanged, (
        sorted((_conditional(s1) & unchanged) - not_modified)[:5], sorted(not_modified - _conditional(s1))[:5])
    assert len(not_modified) >= 0.9 * len(unchanged), (len(not_modified), len(unchanged))
    assert all(status.get(u) == 200 for u in changed), {u: status.get(u) for u in changed}
    # every changed page stored with its new body; unchanged ones as server-not-modified revisits
    stored = _stored_bodies(s2)
    routes = json.loads((web / "routes.json").read_text())["hosts"]
    for u in changed:
        _, net, target = split_url(u)
        body = (web / "sites" / net.split(":")[0] / routes[net.split(":")[0]][target]["file"]).read_bytes()
        assert b'class="changed"' in body
        kind, payload = stored[u]
        assert kind in ("response", "revisit") and payload == body, u   # a revisit only for a duplicate body
    # every WARC file of both sessions indexed, the same lines as cdxj-indexer's
    assert check_indexes(s1) >= ranks1 and check_indexes(s2) >= ranks2
    stats = facts["stats"]
    # (by URL, its last answer: a 304 cut at its slot's end and asked again is logged twice)
    assert stats["not_modified"] == sum(1 for v in status.values() if v == 304) == len(not_modified)
    return s1, s2, facts


def _links_by_kind(session: Path) -> set[tuple[str, str, int]]:
    from abc_crawler.store.session import load_graph

    g = load_graph(session)
    return {(g.urls[s], g.urls[d], k) for s, d, k in zip(g.link_src.tolist(), g.link_dst.tolist(),
                                                        g.link_kinds().tolist())}


def test_recrawl_asks_conditionally_and_keeps_the_graph(web, tmp_path):
    s1, s2, facts = _recrawl(web, tmp_path, 2, 2)
    # every link of session 1 is in session 2 as the same kind (changed pages only add links): a
    # style sheet answered 304 keeps its url() and @import requisites, a page its embeds and refresh
    links1, links2 = _links_by_kind(s1), _links_by_kind(s2)
    assert {k for _, _, k in links1} >= {0, 1, 3}          # the web has navigation, embed and refresh links
    assert links1 <= links2, sorted(links1 - links2)[:5]
    css = {d for s, d, k in links1 if k == 1 and s.endswith(".css")}
    assert css and facts["stats"]["not_modified"] > 0
    # ... and a style sheet was answered 304 in session 2 (so its requisites came from session 1's graph)
    g2 = facts["metrics"]["graph"]
    assert any(u.endswith(".css") and st == 304 for u, st in zip(g2.urls, g2.url_status.tolist()))


def test_recrawl_with_another_number_of_ranks_and_a_part_vector(tmp_path_factory, tmp_path):
    d = tmp_path_factory.mktemp("recrawl-web-k")
    generate(d, n_hosts=8, n_pages=420, seed=22)
    s1, s2, facts = _recrawl(d, tmp_path, 2, 3, repartition=True)
    assert json.loads((s2 / "manifest.json").read_text())["ranks"] == 3
    assert facts["stats"]["assignment"].startswith("partvec")


def test_previous_must_be_a_finished_session(web, tmp_path):
    """Bad input, refused on rank 0 with one line and status 2: a missing directory, a directory
    that holds no validator table, the session's own directory."""
    empty = tmp_path / "not-a-session"
    empty.mkdir()
    for prev, says in ((tmp_path / "missing", "previous: expected the directory of an earlier session"),
                       (empty, "has no validators.npz"),
                       (tmp_path / "s", "is this session's own directory")):
        (tmp_path / "s").mkdir(exist_ok=True)
        r = crawl_cli(2, web, tmp_path / "s", "--previous", str(prev), timeout=120)
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, (prev, r.stderr[-1500:])
