"""The WARC writer's compiled pieces (abc_crawler.store._warcrec) against their Python references:
base32 of a digest, the SURT key, the CDXJ line (issue 37)."""
from __future__ import annotations

import base64
import hashlib

from hypothesis import example, given, settings, strategies as st

from abc_crawler.store import _warcrec, cdxj, digests, warc
from abc_crawler.store.cdxj import _PLAIN_URL, cdxj_line, cdxj_line_reference, surt_key, surt_key_reference
from abc_crawler.store.digests import b32_sha1, b32_sha1_reference


def test_the_writer_and_the_index_use_the_compiled_pieces():
    """No silent fallback: the installed extension is what the writer calls."""
    assert digests.b32_sha1 is warc.b32_sha1 is _warcrec.b32_sha1
    assert cdxj.surt_key is _warcrec.surt_key
    assert cdxj.cdxj_line is _warcrec.cdxj_line


@settings(max_examples=400, deadline=None)
@given(st.binary(min_size=0, max_size=40))
@example(b"")
@example(bytes(20))
@example(b"\xff" * 20)
def test_b32_equals_the_reference_and_b32encode(data):
    for d in (data, hashlib.sha1(data).digest()):
        assert b32_sha1(d) == b32_sha1_reference(d) == base64.b32encode(d).decode("ascii")


def test_b32_of_what_is_not_bytes_is_the_references():
    """A bytearray or memoryview goes to the reference (the stdlib takes them)."""
    d = hashlib.sha1(b"x").digest()
    assert b32_sha1(bytearray(d)) == b32_sha1_reference(bytearray(d)) == base64.b32encode(d).decode()
    assert b32_sha1(memoryview(d)) == base64.b32encode(d).decode()


# URLs at the plain form's edges: plain ones (a www label or not, a port or not, dotted segments),
# and plain ones with one character put in, replaced or taken out, from the characters the scan
# tells apart and the ones it must hand over (upper case, "%", "?", "#", "_" in a host, a newline,
# non-ASCII)
_label = st.text("abwx019-", min_size=1, max_size=5)
_run = st.text("aZ09_~-", min_size=1, max_size=4)
_EDGE = "./:-_~wW0159aZ?#%\né "


@st.composite
def _plain_urls(draw):
    scheme = draw(st.sampled_from(["http", "https"]))
    www = draw(st.sampled_from(["", "", "www.", "www0.", "www12."]))
    host = ".".join(draw(st.lists(_label, min_size=1, max_size=3)))
    port = draw(st.one_of(st.none(), st.sampled_from(["80", "443", "65535", "65536", "99999"]),
                          st.integers(1, 70000).map(str)))
    segs = ["." .join(draw(st.lists(_run, min_size=1, max_size=3))) for _ in range(draw(st.integers(0, 4)))]
    slash = draw(st.sampled_from(["", "/"])) if segs or port or draw(st.booleans()) else ""
    return f"{scheme}://{www}{host}" + (f":{port}" if port else "") + ("/" + "/".join(segs) if segs else "") + slash


@st.composite
def _urls(draw):
    url = draw(_plain_urls())
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2]))):
        i = draw(st.integers(0, len(url)))
        c = draw(st.sampled_from(_EDGE))
        url = draw(st.sampled_from([url[:i] + c + url[i:], url[:i] + c + url[i + 1:], url[:i] + url[i + 1:]]))
    return url


def test_the_urls_tried_are_plain_often_enough():
    """Control: the property below tries the scan's own path, not only the hand-over."""
    tried, plain = [], []

    @settings(max_examples=1000, deadline=None, database=None)
    @given(_urls())
    def count(url):
        tried.append(url)
        if _PLAIN_URL.match(url):
            plain.append(url)

    count()
    assert len(plain) > len(tried) / 5, len(plain)
    assert any(_PLAIN_URL.match(u)[3] for u in plain)                          # with a port
    assert any(u.split("/")[2].startswith("www") for u in plain)                # a www label dropped
    assert any(u.count("/") > 4 and "." in u.split("/")[-1] for u in plain)     # segments, dots


@settings(max_examples=3000, deadline=None)
@given(_urls())
@example("http://www.www.h.test/")
@example("http://www1.2.3.4/")
@example("http://wwwx.test/")
@example("http://www/")
@example("http://www5.x/")
@example("http://www.com")
@example("http://1.2.3.4:80/a")
@example("http://h.test:65536/")
@example("http://h.test/a\n")
@example("http://h.test\n")
@example("https://a.b.test:443/x/")
@example("http://a..b/")
@example("http://.a/")
@example("http://a./")
def test_the_surt_key_equals_the_reference(url):
    assert surt_key(url) == surt_key_reference(url), (url, bool(_PLAIN_URL.match(url)))


def test_plain_urls_are_keyed_without_the_reference(monkeypatch):
    """Control: the comparison above is not the reference against itself. With the reference
    replaced, plain URLs still get their keys and every other URL gets the replacement's."""
    calls = []
    _warcrec.bind_cdxj(lambda url: calls.append(url) or "handed over", cdxj.encode_basestring_ascii)
    try:
        plain = {"http://h000.test:8123/D1/p3.html": "test,h000:8123)/d1/p3.html",
                 "https://a.b.test:443/x/": "test,b,a)/x", "http://www2.h.test:8080/A/": "test,h:8080)/a",
                 "http://h.test": "test,h)/", "http://www.com": "com)/", "http://h.test:80/": "test,h)/"}
        for url, key in plain.items():
            assert _PLAIN_URL.match(url)
            assert surt_key(url) == key
        assert calls == []
        others = ["http://h.test/a?b=1", "http://www.www.h.test/", "http://www1.2.3.4/", "http://wwwx.test/",
                  "http://h.test:65536/", "http://H.test/", "http://h.test/a\n", "http://h.test//x", "ftp://h.test/"]
        for url in others:
            assert surt_key(url) == "handed over"
        assert calls == others
        assert surt_key(b"http://h.test/") == "handed over"      # not text: the reference's to judge
    finally:
        _warcrec.bind_cdxj(surt_key_reference, cdxj.encode_basestring_ascii)


_text = st.text(min_size=0, max_size=12)


@settings(max_examples=500, deadline=None)
@given(url=st.one_of(_urls(), _text), date=st.one_of(st.just("2026-01-02T03:04:05.123456Z"), _text),
       mime=st.one_of(st.none(), _text), status=st.one_of(st.none(), st.sampled_from(["200", "304", "ü"])),
       digest=st.one_of(st.none(), st.just("sha1:" + "A" * 32), _text),
       length=st.integers(0, 2**40), offset=st.integers(0, 2**40), filename=_text)
def test_the_cdxj_line_equals_the_reference(url, date, mime, status, digest, length, offset, filename):
    assert (cdxj_line(url, date, mime, status, digest, length, offset, filename)
            == cdxj_line_reference(url, date, mime, status, digest, length, offset, filename))


# -- the records ---------------------------------------------------------------------------------

from abc_crawler.net.fetcher import Response  # noqa: E402
from abc_crawler.store.warc import page_records, page_records_reference, record, record_reference  # noqa: E402

_hvalue = st.one_of(st.text("abc xyz:;=/0", max_size=10), st.text(max_size=6), st.sampled_from(["a\r\nb", "x\ny", "\r"]))
_headers = st.lists(st.tuples(st.sampled_from(["Host", "Content-Type", "content-type", "ETag", "X\r", "A-B"]), _hvalue),
                    max_size=5)


@st.composite
def _responses(draw):
    url = draw(st.one_of(_urls(), st.text(max_size=12), st.sampled_from(["", "http://h.test", "http://é.test/ü?q"])))
    headers = draw(_headers)
    raw = draw(st.one_of(st.just(b""), st.just(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"),
                         st.binary(max_size=40), st.sampled_from([b"HTTP/1.1\r\n\r\n", b"X 304 Not Modified\n\n"])))
    return Response(key=None, url=url, status=draw(st.sampled_from([0, 200, 304, 404])),
                    status_line=draw(st.one_of(st.just(""), st.sampled_from(["HTTP/1.1 200 OK", "HTTP/1.0 404 x\r\ny"]),
                                               st.text(max_size=8))),
                    headers=headers, raw_head=raw, body=draw(st.binary(max_size=64)),
                    request_headers=draw(_headers), ip=draw(st.sampled_from(["", "127.0.0.1", "::1"])),
                    truncated=draw(st.sampled_from(["", "type"])))


@settings(max_examples=600, deadline=None)
@given(r=_responses(), dig=st.one_of(st.none(), st.just("sha1:" + "B" * 32), st.text(max_size=5)),
       which=st.sampled_from(["response", "revisit", "not_modified"]),
       ref_url=st.text(max_size=10), ref_date=st.text(max_size=8), ref_digest=st.text(max_size=8),
       ids=st.tuples(st.text(min_size=1, max_size=6), st.text(min_size=1, max_size=6)))
def test_page_records_equal_the_reference(r, dig, which, ref_url, ref_date, ref_digest, ids):
    first = (ref_url, ref_date) if which == "revisit" else None
    ref = (ref_url, ref_date, ref_digest) if which == "not_modified" else None
    date = "2026-11-29T12:00:00.000001Z"
    try:
        want = page_records_reference(r, date, dig, first, ref, *ids)
    except Exception as exc:              # noqa: BLE001 - the compiled one fails the same way
        try:
            page_records(r, date, dig, first, ref, *ids)
        except Exception as got:          # noqa: BLE001
            assert (type(got), got.args) == (type(exc), exc.args)
            return
        raise AssertionError(f"the reference raised {exc!r}, the compiled one did not")
    assert page_records(r, date, dig, first, ref, *ids) == want


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["warcinfo", "metadata"]), url=st.one_of(st.just(""), _urls(), st.text(max_size=8)),
       block=st.binary(max_size=64), extra=st.lists(st.tuples(st.text(max_size=5), st.text(max_size=5)), max_size=3),
       rid=st.text(min_size=1, max_size=8))
def test_record_equals_the_reference(kind, url, block, extra, rid):
    date = "2026-11-29T12:00:00.000001Z"
    assert (record(kind, url, date, "application/warc-fields", block, hashlib.sha1(block), extra, rid)
            == record_reference(kind, url, date, "application/warc-fields", block, hashlib.sha1(block), extra, rid))


def test_the_writer_uses_the_compiled_records():
    assert warc.page_records is _warcrec.page_records and warc.record is _warcrec.record


def test_a_writer_makes_the_same_files_with_the_references(tmp_path, monkeypatch):
    """End to end: one rank's WARC file and CDXJ index, written through the compiled pieces and
    through their Python references (ids and dates made the same), are the same bytes — responses,
    a duplicate body's revisit, a 304's revisit, outlinks metadata records, a head rebuilt from
    parsed headers, a URL that is not plain."""
    import time

    class Ids:
        def __init__(self):
            self.n = 0

        def __call__(self):
            self.n += 1
            return f"<urn:uuid:00000000-0000-4000-8000-{self.n:012x}>"

    monkeypatch.setattr(warc, "_RecordIds", Ids)
    monkeypatch.setattr(time, "time", lambda: 1764417600.25)
    t = 1764417601.5
    pages = [Response(key=None, url=f"http://h{i % 3}.test:8080/d/p{i}.html", status=200, status_line="HTTP/1.1 200 OK",
                      headers=[("Content-Type", "text/html; charset=utf-8")],
                      raw_head=b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n",
                      body=b"<a href=x>%d</a>" % (i % 4), t_start=t + i, ip="127.0.0.1",
                      request_headers=[("Host", f"h{i % 3}.test:8080"), ("User-Agent", "abc")])
             for i in range(6)]
    pages.append(Response(key=None, url="http://H.test/a?b=1&a=2", status=404, status_line="HTTP/1.1 404 Not Found",
                          headers=[("Content-Type", "text/plain"), ("X", "a\r\nb")], body=b"gone", t_start=t + 9))
    not_modified = Response(key=None, url="http://h0.test:8080/old", status=304, status_line="HTTP/1.1 304 Not Modified",
                            raw_head=b"HTTP/1.1 304 Not Modified\r\n\r\n", t_start=t + 10)

    def write(session):
        w = warc.RankWarc(session, 0, batch=3)
        for i, r in enumerate(pages):
            w.write(r, f"outlink: http://h.test/{i} L\r\n" if i % 2 else "")
        w.write_not_modified(not_modified, "http://h0.test:8080/old", "2026-01-01T00:00:00Z", "sha1:" + "C" * 32)
        w.close()
        return {p.name: p.read_bytes() for p in (session / "warc").iterdir()}

    from abc_crawler.store import cdxj, digests

    compiled = write(tmp_path / "a" / "s1")
    with monkeypatch.context() as m:
        for name, ref in (("page_records", warc.page_records_reference), ("record", warc.record_reference),
                          ("b32_sha1", digests.b32_sha1_reference), ("cdxj_line", cdxj.cdxj_line_reference)):
            m.setattr(warc, name, ref)
        python = write(tmp_path / "b" / "s1")
    assert sorted(compiled) == ["s1-rank-00000-00000.cdxj", "s1-rank-00000-00000.warc.gz"]
    assert compiled == python
    index = compiled["s1-rank-00000-00000.cdxj"].decode()
    assert index.count("\n") == 8 and '"mime": "warc/revisit"' in index and "test,h)/a?a=2&b=1" in index
