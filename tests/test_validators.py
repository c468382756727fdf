"""The validator table and --previous without MPI or network: rows from the WARC writer, the table
written and read back, each rank's share under a new assignment (another K), and what a page
answered 304 becomes."""
from __future__ import annotations

import numpy as np
import pytest

from abc_crawler.crawl.counters import RankCounters
from abc_crawler.crawl.links import LinkClassifier
from abc_crawler.crawl.pages import PageProcessor
from abc_crawler.net.fetcher import Response
from abc_crawler.web.ownership import HashAssignment
from abc_crawler.web.scope import Scope
from abc_crawler.store.session import SessionGraph, save_graph
from abc_crawler.web.urls import fingerprint
from abc_crawler.store.validators import PreviousShare, ValidatorLog, load_table, previous_shares, write_table
from abc_crawler.store.warc import RankWarc

URLS = [f"http://h{i % 3}.test/p{i}.html" for i in range(12)]


def _resp(url, body, status=200, headers=(), t=1_800_000_000.0):
    return Response(key=None, url=url, status=status, status_line=f"HTTP/1.1 {status} X",
                    headers=[("Content-Type", "text/html"), *headers], body=body, t_start=t,
                    request_headers=[("Host", "h.test")], ip="127.0.0.1")


def _previous_session(d, ranks=2):
    """A finished session: pages 0..9 fetched (9 a 404, 8 without validators), 10 and 11 only linked;
    page i links to i+1 and i+2."""
    logs = [ValidatorLog() for _ in range(ranks)]
    owner = HashAssignment(ranks)
    warcs = [RankWarc(d, r, on_page=logs[r].on_page) for r in range(ranks)]
    for i, u in enumerate(URLS[:10]):
        hdr = [] if i == 8 else [("ETag", f'"e{i}"'), ("Last-Modified", "Tue, 01 Jan 2030 00:00:00 GMT")]
        warcs[owner.owner(u)].write(_resp(u, b"<p>page %d</p>" % (i % 7), status=404 if i == 9 else 200, headers=hdr,
                                          t=1_800_000_000.0 + i))
    for w in warcs:
        w.close()
    write_table(d, [log.to_bytes() for log in logs])
    g = SessionGraph.from_urls(URLS, ranks=ranks)
    g.url_rank[:10] = [owner.owner(u) for u in URLS[:10]]
    g.url_status[:10] = [200] * 9 + [404]
    nodes = [i for i in range(9)]
    g.url_node[nodes] = np.arange(len(nodes))
    g.node_url = np.array(nodes, dtype=np.int32)
    src = [i for i in range(10) for _ in (1, 2)]
    dst = [min(i + k, 11) for i in range(10) for k in (1, 2)]
    g.link_src, g.link_dst = np.array(src, np.int32), np.array(dst, np.int32)
    save_graph(d, g)
    return owner


def test_the_table_holds_one_row_per_stored_page(tmp_path):
    _previous_session(tmp_path)
    t = load_table(tmp_path)
    assert sorted(t["url"]) == sorted(URLS[:10]) and list(t["fp"]) == sorted(t["fp"])
    row = {u: i for i, u in enumerate(t["url"])}
    p0, p7 = row[URLS[0]], row[URLS[7]]
    assert t["etag"][p0] == '"e0"' and t["last_modified"][p0] == "Tue, 01 Jan 2030 00:00:00 GMT"
    assert t["etag"][row[URLS[8]]] == "" and t["status"][row[URLS[9]]] == 404
    # page 7 has page 0's body: a revisit whose payload is page 0's record
    assert t["payload_url"][p7] == URLS[0] and t["payload_date"][p7] == t["date"][p0]
    assert t["digest"][p7] == t["digest"][p0] and t["offset"][p7] > 0 and t["file"][p7].endswith(".warc.gz")
    assert not t["not_modified"].any() and t["body_bytes"][p0] == len(b"<p>page 0</p>")


@pytest.mark.parametrize("ranks", [1, 3])
def test_each_rank_gets_the_urls_it_owns_under_the_new_assignment(tmp_path, ranks):
    _previous_session(tmp_path, ranks=2)
    new = HashAssignment(ranks)
    shares, summary = previous_shares(tmp_path, new, ranks, Scope())
    got = [PreviousShare.from_bytes(b) for b in shares]
    # asked conditionally: the 200s with a validator (not page 8, not the 404)
    cond = {u for u in URLS[:8]}
    assert summary["conditional"] == len(cond) and summary["seeds"] == 2
    for r, share in enumerate(got):
        mine = {u for u in cond if new.owner(u) == r}
        assert len(share) == len(mine)
        for u in URLS:
            prev = share.lookup(fingerprint(u))
            assert (prev is not None) == (u in mine)
            if prev is not None:
                i = URLS.index(u)
                assert share.conditional_headers(fingerprint(u)) == (
                    ("If-None-Match", f'"e{i}"'), ("If-Modified-Since", "Tue, 01 Jan 2030 00:00:00 GMT"))
                assert prev.node and prev.links == [URLS[min(i + 1, 11)], URLS[min(i + 2, 11)]]
        assert sorted(share.seeds) == sorted(u for u in URLS[10:] if new.owner(u) == r)
    # a URL out of the new scope is no seed
    scope = Scope.from_lines(["h0.test:80:127.0.0.1", "h2.test:80:127.0.0.1"])
    _, summary = previous_shares(tmp_path, new, ranks, scope)
    assert summary["seeds"] == sum(1 for u in URLS[10:] if "h1.test" not in u)


def test_a_304_stands_for_the_earlier_page(tmp_path):
    _previous_session(tmp_path / "s1")
    new = HashAssignment(1)
    share = PreviousShare.from_bytes(previous_shares(tmp_path / "s1", new, 1, Scope())[0][0])
    c = RankCounters()
    log = ValidatorLog()
    warc = RankWarc(tmp_path / "s2", 0, on_page=log.on_page)
    links = LinkClassifier(Scope(), new, 0, max_links_per_page=100, max_url_length=2048, max_path_depth=32,
                           max_segment_repeats=3, links=c.links)
    pages = PageProcessor(warc, links, c, max_redirects=5, max_inflated_bytes=1 << 20, previous=share,
                          validators=log)
    nm = _resp(URLS[3], b"", status=304, headers=[("ETag", '"e3-new"')])
    status, nbytes, node, targets, hops, kind = pages.outcome(nm, 0)
    assert (status, nbytes, node, hops, kind) == (304, len(b"<p>page 3</p>"), True, 0, "")
    assert [t[0] for t in targets] == [URLS[4], URLS[5]]
    assert c.not_modified == 1 and c.pages_ok == 1 and c.nodes == 1
    # a 304 for a URL the previous session cannot stand for (asked without validators)
    status, _, node, targets, _, kind = pages.outcome(_resp(URLS[8], b"", status=304), 0)
    assert (status, node, targets, kind) == (304, False, [], "not_modified_unasked")
    assert c.errors["not_modified_unasked"] == 1
    warc.close()
    t = log.table()
    from abc_crawler.store.validators import unpack_table

    rows = unpack_table(t)
    i = rows["url"].index(URLS[3])
    assert rows["not_modified"][i] and rows["status"][i] == 304 and rows["etag"][i] == '"e3-new"'
    assert rows["last_modified"][i] == "Tue, 01 Jan 2030 00:00:00 GMT"         # carried from the earlier answer
    assert rows["payload_url"][i] == URLS[3] and rows["body_bytes"][i] == len(b"<p>page 3</p>")
    earlier = load_table(tmp_path / "s1")
    assert rows["payload_date"][i] == earlier["date"][earlier["url"].index(URLS[3])]
    assert warc.not_modified == 1


def test_a_304_keeps_each_links_kind_and_a_style_sheets_requisites(tmp_path):
    """The earlier graph's links keep their kinds through the share: a page answered 304 gives its
    navigation links back as links, its requisites as embeds and its refresh target as a refresh;
    a style sheet answered 304 (not a node) gives its url() and @import requisites; each revisit
    record is followed by a metadata record of those outlinks, kind by kind; without requisites
    (--no-page-requisites) the embeds are left out."""
    from warcio.archiveiterator import ArchiveIterator

    from abc_crawler.web.parser import EMBED, NAV, REFRESH

    h = "http://h.test"
    urls = [f"{h}/", f"{h}/a.html", f"{h}/s.css", f"{h}/r.html", f"{h}/bg.png", f"{h}/base.css"]
    d = tmp_path / "s1"
    log = ValidatorLog()
    warc = RankWarc(d, 0, on_page=log.on_page)
    for i, u in enumerate(urls[:3]):
        ctype = "text/css" if u.endswith(".css") else "text/html"
        warc.write(Response(key=None, url=u, status=200, status_line="HTTP/1.1 200 OK",
                            headers=[("Content-Type", ctype), ("ETag", f'"e{i}"')], body=b"x%d" % i,
                            t_start=1_800_000_000.0 + i, request_headers=[("Host", "h.test")], ip="127.0.0.1"))
    warc.close()
    write_table(d, [log.to_bytes()])
    g = SessionGraph.from_urls(urls, ranks=1)
    g.url_rank[:3] = 0
    g.url_status[:3] = 200
    g.url_node[:2] = [0, 1]
    g.node_url = np.array([0, 1], dtype=np.int32)
    links = [(0, 1, NAV), (0, 2, EMBED), (0, 3, REFRESH), (2, 4, EMBED), (2, 5, EMBED)]
    g.link_src = np.array([s for s, _, _ in links], np.int32)
    g.link_dst = np.array([t for _, t, _ in links], np.int32)
    g.link_kind = np.array([k for _, _, k in links], np.uint8)
    save_graph(d, g)
    share = PreviousShare.from_bytes(previous_shares(d, HashAssignment(1), 1, Scope())[0][0])
    assert share.lookup(fingerprint(urls[2])).kinds == [EMBED, EMBED]
    for requisites in (True, False):
        c = RankCounters()
        out = tmp_path / f"s2-{requisites}"
        warc = RankWarc(out, 0)
        links = LinkClassifier(Scope(), HashAssignment(1), 0, max_links_per_page=100, max_url_length=2048,
                               max_path_depth=32, max_segment_repeats=3, links=c.links)
        pages = PageProcessor(warc, links, c, max_redirects=5, max_inflated_bytes=1 << 20, previous=share,
                              requisites=requisites)
        status, _, node, nav, _, kind = pages.outcome(_resp(urls[0], b"", status=304), 0)
        assert (status, node, kind) == (304, True, "")
        assert [t[0] for t in nav] == [urls[1]] and [t[0] for t in pages.refresh] == [urls[3]]
        assert [t[0] for t in pages.embeds] == ([urls[2]] if requisites else [])
        status, _, node, nav, _, kind = pages.outcome(_resp(urls[2], b"", status=304), 0)
        assert (status, node, nav, kind) == (304, False, [], "status_304")
        assert [t[0] for t in pages.embeds] == (urls[4:] if requisites else [])
        warc.close()
        meta = {}
        for f in sorted((out / "warc").glob("*.warc.gz")):
            with open(f, "rb") as fh:
                for rec in ArchiveIterator(fh):
                    if rec.rec_type == "metadata":
                        meta[rec.rec_headers.get_header("WARC-Target-URI")] = rec.content_stream().read().decode()
        e = " E\r\n"
        assert meta[urls[0]] == (f"outlink: {urls[1]} L\r\n" + (f"outlink: {urls[2]}{e}" if requisites else "")
                                 + f"outlink: {urls[3]} R\r\n")
        assert meta.get(urls[2]) == (f"outlink: {urls[4]}{e}outlink: {urls[5]}{e}" if requisites else None)


class _Rec:
    """What the WARC writer hands ValidatorLog.on_page for one stored page."""

    def __init__(self, i: int):
        self.response = _resp(f"http://h{i % 5}.test/p{i}.html", b"x" * (i % 17),
                              headers=[("ETag", f'"e{i}"')])
        self.kind = "response"
        self.digest = f"sha1:D{i:031d}"
        self.file, self.offset, self.length = f"w-{i // 1000}.warc.gz", 100 * i, 90 + i % 7
        self.date = f"2030-01-01T00:00:{i % 60:02d}Z"
        self.payload_url, self.payload_date = self.response.url, self.date


def test_a_spilling_log_holds_few_rows_in_memory_and_gives_every_row_back(tmp_path, monkeypatch):
    """With a spill file (what a crawling rank uses), the rows go to disk in packed parts of
    SPILL_ROWS; the checkpoint increments, the table at the end and a resume from the increments
    are the same as without one; close() removes the file."""
    import abc_crawler.store.validators as v
    from abc_crawler.store.validators import unpack_table

    monkeypatch.setattr(v, "SPILL_ROWS", 7)
    spill = tmp_path / "spill" / "validators-rank-00000.bin"
    disk, mem = ValidatorLog(spill=spill), ValidatorLog()
    incs_disk, incs_mem = [], []
    for i in range(100):
        rec = _Rec(i)
        disk.on_page(rec)
        mem.on_page(rec)
        assert len(disk._cols["fp"]) < 7                 # never more than SPILL_ROWS rows as objects
        assert len(disk) == len(mem) == i + 1
        if i % 23 == 22:                                  # a checkpoint
            incs_disk.append(disk.take_increment())
            incs_mem.append(mem.take_increment())
    assert disk._chunks == [] and spill.stat().st_size > 0
    for a, b in zip(incs_disk, incs_mem):
        assert unpack_table(a)["url"] == unpack_table(b)["url"]
    assert sum(len(t["fp"]) for t in incs_disk) == 92
    whole = unpack_table(disk.table())
    assert whole["url"] == unpack_table(mem.table())["url"] == [_Rec(i).response.url for i in range(100)]
    assert list(whole["offset"]) == [100 * i for i in range(100)]
    # a resume: the saved increments applied to a fresh log over the same spill file
    again = ValidatorLog(spill=spill)
    for t in incs_disk:
        again.apply_increment(t)
    assert unpack_table(again.table())["url"] == whole["url"][:92]
    assert len(again) == 92
    again.close()
    disk.close()
    assert not spill.exists() and not spill.parent.exists()
