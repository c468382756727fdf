"""WARC files others can use (issue 21): rotation, warcinfo, WARC-IP-Address, server-not-modified
revisits, and CDXJ indexes equal to those of an independent indexer (cdxj-indexer, PyPI)."""
from __future__ import annotations

import subprocess

import pytest
from warcio.archiveiterator import ArchiveIterator

from abc_crawler.store.cdxj import index_lines, index_path, read_index, write_index
from abc_crawler.net.fetcher import Response
from abc_crawler.store.warc import PROFILE_NOT_MODIFIED, RankWarc, warcinfo_fields
from abc_crawler.store.warcnames import parse_warc_name

from crawlcheck import BIN, cdxj_indexer


def _resp(url, body, status=200, ctype="text/html; charset=utf-8", t=1_800_000_000.25, ip="127.0.0.1", extra=()):
    head = [("Content-Type", ctype)] if ctype is not None else []
    head += [("Content-Length", str(len(body))), *extra]
    return Response(key=None, url=url, status=status, status_line=f"HTTP/1.1 {status} X", headers=head, body=body,
                    t_start=t, request_headers=[("Host", "h.test"), ("User-Agent", "abc-crawler/0.1")], ip=ip)


def _pages(n=40):
    out = []
    for i in range(n):
        body = b"<html><p>%d</p>" % (i % 13) + b"x" * (300 + 97 * (i % 13)) + b"</html>"
        ctype = [None, "text/html", "text/html;charset=utf-8", "application/pdf", " TEXT/plain ; q=1"][i % 5]
        url = f"http://H{i % 4}.test:8080/d/p{i}.html?b=2&a={i}" if i % 6 else f"http://www.h.test/p{i}"
        out.append(_resp(url, body, status=[200, 200, 404, 301][i % 4], ctype=ctype, t=1_800_000_000 + i * 1.7,
                         ip="" if i % 7 == 0 else f"127.0.0.{i % 3 + 1}"))
    return out


def _records(path):
    with open(path, "rb") as fh:
        return [(r.rec_type, r.rec_headers, r.content_stream().read())
                for r in ArchiveIterator(fh, check_digests="raise")]


def test_rotation_warcinfo_and_indexes_equal_cdxj_indexer(tmp_path):
    session = tmp_path / "s1"
    placed = []
    info = warcinfo_fields(version="9.9", session="s1", rank=3, host="node7", user_agent="abc-crawler/0.1",
                           robots=True, settings={"max_pages": 10})
    w = RankWarc(session, 3, max_bytes=6000, batch=5, info=info, on_page=placed.append)
    pages = _pages()
    dups = [w.write(r) for r in pages]
    # a 304 answer stands for an earlier payload
    nm = _resp("http://h0.test:8080/d/p1.html?b=2&a=1", b"", status=304, ctype=None, t=1_800_000_100.5)
    nm.raw_head = b"HTTP/1.1 304 Not Modified\r\nETag: \"e1\"\r\n\r\n"
    w.write_not_modified(nm, "http://h0.test:8080/d/p1.html?b=2&a=1", "2027-01-15T08:00:01.700000Z", "sha1:AAAA")
    w.close()
    files = sorted((session / "warc").glob("*.warc.gz"))
    assert len(files) > 3 and [f.name for f in files] == w.files == [n for n, _ in w.closed]
    assert [parse_warc_name(f.name) for f in files] == [("s1", 3, i) for i in range(len(files))]
    uris, kinds = [], []
    for f in files:
        recs = _records(f)
        assert recs[0][0] == "warcinfo" and recs[0][1].get_header("WARC-Filename") == f.name
        fields = dict(line.split(": ", 1) for line in recs[0][2].decode().strip().split("\r\n"))
        assert fields["software"].startswith("abc-crawler/9.9") and fields["robots"] == "obey"
        assert fields["isPartOf"] == "s1" and fields["hostname"] == "node7" and '"max_pages": 10' in fields["abc-settings"]
        body = [r for r in recs[1:]]
        assert [t for t, _, _ in body[0::2]] == ["request"] * (len(body) // 2)      # pairs never split
        for (_, req, _), (kind, rec, _) in zip(body[0::2], body[1::2]):
            assert rec.get_header("WARC-Concurrent-To") == req.get_header("WARC-Record-ID")
            uris.append(rec.get_header("WARC-Target-URI"))
            kinds.append(kind)
        assert f.stat().st_size >= 6000 or f == files[-1]
        # the index written at close, the one read back from the file and cdxj-indexer's: the same lines
        mine = read_index(index_path(f))
        assert mine == cdxj_indexer(f) and mine
        assert sorted(set(index_lines(f))) == mine
    assert uris == [r.url for r in pages] + [nm.url]
    assert kinds.count("revisit") == sum(dups) + 1 and sum(dups) > 0
    # WARC-IP-Address on responses and revisits that have one
    by_uri = {}
    for f in files:
        for kind, h, _ in _records(f):
            if kind in ("response", "revisit"):
                by_uri[h.get_header("WARC-Target-URI")] = h
    for r in pages:
        assert by_uri[r.url].get_header("WARC-IP-Address") == (r.ip or None)
    # the server-not-modified revisit
    h = by_uri[nm.url]
    assert h.get_header("WARC-Profile") == PROFILE_NOT_MODIFIED
    assert h.get_header("WARC-Refers-To-Date") == "2027-01-15T08:00:01.700000Z"
    assert h.get_header("WARC-Payload-Digest") == "sha1:AAAA"
    # where each page went, for the validator table
    assert [p.response.url for p in placed] == uris and placed[-1].kind == "not_modified"
    for p in placed:
        assert p.file in w.files and p.offset > 0 and p.length > 0


def test_a_broken_index_is_told_apart(tmp_path):
    """Control: an index that misses a line, or has a changed offset, differs from cdxj-indexer's."""
    w = RankWarc(tmp_path, 0)
    for r in _pages(6):
        w.write(r)
    w.close()
    f = next((tmp_path / "warc").glob("*.warc.gz"))
    good = read_index(index_path(f))
    assert good == cdxj_indexer(f)
    assert good[1:] != cdxj_indexer(f)
    assert [line.replace('"offset": "', '"offset": "1') for line in good] != cdxj_indexer(f)


def test_abc_index_rebuilds_and_checks(tmp_path):
    w = RankWarc(tmp_path, 1, max_bytes=4000)
    for r in _pages(12):
        w.write(r)
    w.close()
    idx = sorted((tmp_path / "warc").glob("*.cdxj"))
    want = {p.name: p.read_text() for p in idx}
    ok = subprocess.run([str(BIN / "abc-index"), str(tmp_path), "--check"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    idx[0].unlink()
    idx[1].write_text(idx[1].read_text()[:-40])
    bad = subprocess.run([str(BIN / "abc-index"), str(tmp_path), "--check"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and f"{idx[0]}: missing" in bad.stdout and f"{idx[1]}: differs" in bad.stdout
    r = subprocess.run([str(BIN / "abc-index"), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and {p.name: p.read_text() for p in idx} == want
    none = subprocess.run([str(BIN / "abc-index"), str(tmp_path / "nothing")], capture_output=True, text=True, timeout=60)
    assert none.returncode == 2 and "not a session directory" in none.stderr and "Traceback" not in none.stderr


def test_restore_across_rotation(tmp_path):
    """A checkpoint in file k, then files k+1.. written: restore cuts file k back, removes the later
    files and their indexes, and the continued crawl's files are all indexed right."""
    w = RankWarc(tmp_path, 2, max_bytes=5000, batch=1)
    pages = _pages(30)
    for r in pages[:8]:
        w.write(r)
    ck = w.checkpoint()
    files_at_ck = [n for n, _ in ck["files"]]
    for r in pages[8:20]:
        w.write(r)
    w.flush()
    assert len(w.files) > len(files_at_ck)
    stale = tmp_path / "warc" / f".{w.prefix}-rank-00002-{len(w.closed):05d}.cdxj.x1y2.tmp"
    stale.write_text("an index being written at a kill -9")
    w.restore(ck)
    assert not stale.exists()
    left = sorted(p.name for p in (tmp_path / "warc").iterdir())
    assert [p for p in left if p.endswith(".warc.gz")] == files_at_ck
    for r in pages[8:]:
        w.write(r)
    w.close()
    uris = []
    for f in sorted((tmp_path / "warc").glob("*.warc.gz")):
        uris += [h.get_header("WARC-Target-URI") for k, h, _ in _records(f) if k in ("response", "revisit")]
        assert read_index(index_path(f)) == cdxj_indexer(f)
    assert uris == [r.url for r in pages]


@pytest.mark.parametrize("max_bytes", [1, 10**9])
def test_index_lines_of_an_empty_file(tmp_path, max_bytes):
    w = RankWarc(tmp_path, 0, max_bytes=max_bytes)
    w.close()
    f = next((tmp_path / "warc").glob("*.warc.gz"))
    assert index_lines(f) == [] and read_index(write_index(f, [])) == [] == cdxj_indexer(f)


# -- the SURT key's fast path against the surt package ----------------------------------------

from hypothesis import example, given, settings, strategies as st  # noqa: E402

from abc_crawler.store.cdxj import _PLAIN_URL, surt_key, surt_slow  # noqa: E402

_label = st.text("abcwxyz019-", min_size=1, max_size=6).filter(lambda s: not s.startswith("-"))
_seg = st.text("aBcXy09._~-/", min_size=0, max_size=8)
_tail = st.sampled_from(["", "?a=1&B=2", "?", "#f", "%7E", ";jsessionid=0123456789abcdef0123456789abcdef", "//x",
                         "/./y", "/../z", "/"])


@settings(max_examples=500, deadline=None)
@given(scheme=st.sampled_from(["http", "https"]), labels=st.lists(_label, min_size=1, max_size=4),
       port=st.one_of(st.none(), st.integers(0, 70000)), segs=st.lists(_seg, max_size=4), tail=_tail)
@example(scheme="http", labels=["www2", "h", "test"], port=None, segs=["a"], tail="")
@example(scheme="http", labels=["www", "www0", "h"], port=None, segs=["a"], tail="")
@example(scheme="http", labels=["www", "com"], port=None, segs=[], tail="")
@example(scheme="http", labels=["1", "2", "3", "4"], port=80, segs=[], tail="")
@example(scheme="https", labels=["h", "test"], port=443, segs=["A", "B.HTML"], tail="/")
def test_the_surt_key_equals_the_surt_package(scheme, labels, port, segs, tail):
    url = f"{scheme}://{'.'.join(labels)}" + (f":{port}" if port is not None else "") + \
        ("/" + "/".join(segs) if segs else "") + tail
    assert surt_key(url) == surt_slow(url), (url, bool(_PLAIN_URL.match(url)))


@pytest.mark.timeout(60)
def test_the_fast_path_fails_in_linear_time():
    """URLs the fast path does not take, with long path segments: a query after a 22-character
    segment cost 3.4 s a URL when a segment's "/" was optional (every way of cutting the segment
    was tried, 2^n), and 60 characters would never end. The keys are still surt's."""
    for url in ("http://h.test/" + "a" * 60 + "?id=1", "http://www.h.test/docs/" + "sql-createtable" * 4 + ".html?x",
                "http://h.test/" + "ab.c/" * 2000 + "%7E", "http://h.test/" + "a" * 100_000 + "+"):
        assert not _PLAIN_URL.match(url)
        assert surt_key(url) == surt_slow(url)


def test_the_fast_path_is_taken_for_plain_urls():
    """Control: the comparison above is not against itself — plain URLs do not call surt."""
    import surt

    for url in ("http://h000.test:8123/d1/p3.html", "https://a.test/", "http://h.test", "http://www.h.test/",
                "http://www2.h.test:8080/A/"):
        assert _PLAIN_URL.match(url)
    for url in ("http://h.test/a?b=1", "http://www.www.h.test/", "http://www1.2.3.4/", "http://wwwx.test/"):
        assert not _PLAIN_URL.match(url), url
    real = surt.surt
    try:
        surt.surt = lambda url: "called"
        assert surt_key("http://h000.test:8123/d1/p3.html") == "test,h000:8123)/d1/p3.html"
        assert surt_key("http://h.test/a?b=1") == "called"
        assert surt_key("http://www.postgresql.org:8080/docs/15/SQL.html") == "org,postgresql:8080)/docs/15/sql.html"
    finally:
        surt.surt = real


def test_sorted_runs_make_the_index_write_index_makes(tmp_path, monkeypatch):
    """A rank writes its current file's index lines out in sorted runs (bounded memory); the index
    merged from them is byte for byte the one made of all the lines at once, each distinct line
    once, and no run is left behind. Through RankWarc too: the indexes equal the files' own."""
    import random

    import abc_crawler.store.cdxj as cdxj
    from abc_crawler.store.cdxj import IndexRuns

    rnd = random.Random(7)
    lines = [f"com,h{rnd.randrange(9)})/p{rnd.randrange(50)} 2030010100{rnd.randrange(60):04d} {{}}\n"
             for _ in range(500)]
    want = write_index(tmp_path / "a.warc.gz", lines).read_bytes()
    runs = IndexRuns(tmp_path / "b.warc.gz", run_lines=37)
    for line in lines:
        runs.append(line)
        assert len(runs) < 37
    assert len(runs.runs) == 500 // 37
    got = runs.write().read_bytes()
    assert got == want and len(set(lines)) == got.count(b"\n")
    assert not list(tmp_path.glob(".*.tmp"))
    monkeypatch.setattr(cdxj, "RUN_LINES", 3)
    session = tmp_path / "s"
    w = RankWarc(session, 0, max_bytes=9000, batch=2)
    for r in _pages():
        w.write(r)
    w.close()
    for f in sorted((session / "warc").glob("*.warc.gz")):
        assert read_index(index_path(f)) == sorted(set(index_lines(f)))
    assert not list((session / "warc").glob(".*"))


def test_the_surt_package_is_imported_without_tldextract():
    """``surt`` imports ``tldextract`` (with ``requests`` and ``urllib3``: ~0.1 s a rank) for two
    methods the SURT form never calls: it is left unimported, and a later ``import tldextract``
    still gets the real module."""
    import sys

    code = ("import sys, types\n"
            "from abc_crawler.store.cdxj import surt_slow, _DeferredModule\n"
            "print(surt_slow('http://www.Example.com/a?b=1&a=2'))\n"
            "print('tldextract' in sys.modules, 'requests' in sys.modules)\n"
            "print(type(sys.modules['surt.handyurl'].tldextract).__name__)\n"
            "import tldextract\n"
            "print(type(tldextract) is types.ModuleType, callable(tldextract.extract))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:4] == ["com,example)/a?a=2&b=1", "False False", "_DeferredModule", "True True"]
