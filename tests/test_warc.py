"""WARC files are valid for warcio's reader, digests included; revisits, checkpoints."""
import hashlib

from warcio.archiveiterator import ArchiveIterator

from abc_crawler.net.fetcher import Response
from abc_crawler.store.warc import RankWarc


def _file(session, rank, seq=0):
    """The path of a rank's WARC file number ``seq`` in a session directory."""
    from abc_crawler.store.warcnames import session_prefix, warc_name

    return session / "warc" / warc_name(session_prefix(session), rank, seq)


def _resp(url, body, status=200):
    return Response(key=None, url=url, status=status, status_line=f"HTTP/1.1 {status} OK",
                    headers=[("Content-Type", "text/html"), ("Content-Length", str(len(body)))], body=body,
                    t_start=1_800_000_000.5, request_headers=[("Host", "h.test"), ("User-Agent", "abc-crawler/0.1")])


def test_records_read_back_with_valid_digests(tmp_path):
    w = RankWarc(tmp_path, 3)
    assert w.write(_resp("http://h.test/a", b"<a href=x>hello</a>")) is False
    assert w.write(_resp("http://h.test/b", b"other")) is False
    assert w.write(_resp("http://h.test/c", b"<a href=x>hello</a>")) is True      # duplicate body
    w.write(_resp("http://h.test/r", b"", status=301))
    w.close()
    recs = []
    with open(_file(tmp_path, 3), "rb") as fh:
        for rec in ArchiveIterator(fh, check_digests="raise"):
            body = rec.content_stream().read()
            recs.append((rec.rec_type, rec.rec_headers.get_header("WARC-Target-URI"), body, rec))
    types = [(t, u) for t, u, _, _ in recs]
    assert types == [("warcinfo", None), ("request", "http://h.test/a"), ("response", "http://h.test/a"),
                     ("request", "http://h.test/b"), ("response", "http://h.test/b"),
                     ("request", "http://h.test/c"), ("revisit", "http://h.test/c"),
                     ("request", "http://h.test/r"), ("response", "http://h.test/r")]
    assert recs[2][2] == b"<a href=x>hello</a>"
    assert recs[2][3].http_headers.get_statuscode() == "200"
    rev = recs[6][3]
    assert rev.rec_headers.get_header("WARC-Refers-To-Target-URI") == "http://h.test/a"
    assert rev.rec_headers.get_header("WARC-Payload-Digest") == recs[2][3].rec_headers.get_header("WARC-Payload-Digest")
    assert recs[2][3].rec_headers.get_header("WARC-Concurrent-To") == recs[1][3].rec_headers.get_header("WARC-Record-ID")
    assert w.records == 8 and w.revisits == 1


def test_checkpoint_restore_truncates(tmp_path):
    w = RankWarc(tmp_path, 0)
    w.write(_resp("http://h.test/a", b"A"))
    w.flush()
    ck = w.checkpoint()
    w.write(_resp("http://h.test/b", b"B"))
    w.flush()
    w.restore(ck)
    w.write(_resp("http://h.test/c", b"C"))
    w.close()
    with open(_file(tmp_path, 0), "rb") as fh:
        uris = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(fh) if r.rec_type == "response"]
    assert uris == ["http://h.test/a", "http://h.test/c"]


def test_disabled_still_dedups():
    w = RankWarc("/nonexistent", 0, enabled=False)
    assert w.write(_resp("http://h.test/a", b"x")) is False
    assert w.write(_resp("http://h.test/b", b"x")) is True


# -- the fast encoders against the standard library ---------------------------------------------

import base64  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import uuid  # noqa: E402
import zlib  # noqa: E402
from datetime import datetime, timezone  # noqa: E402

import pytest  # noqa: E402
from hypothesis import example, given, settings, strategies as st  # noqa: E402

from abc_crawler.store import warc as warc_mod  # noqa: E402
from abc_crawler.store.warc import GZIP_BACKENDS, _header_lines, _iso, _RecordIds, b32_sha1  # noqa: E402


def _old_iso(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_b32_sha1_equals_b32encode_on_random_digests():
    for _ in range(20_000):
        d = os.urandom(20)
        assert b32_sha1(d) == base64.b32encode(d).decode()
    for d in (b"\x00" * 20, b"\xff" * 20, hashlib.sha1(b"").digest(), bytes(range(20))):
        assert b32_sha1(d) == base64.b32encode(d).decode()


@settings(max_examples=500, deadline=None)
@given(d=st.binary(min_size=0, max_size=40))
def test_b32_sha1_equals_b32encode_any_length(d):
    assert b32_sha1(d) == base64.b32encode(d).decode()


@settings(max_examples=2000, deadline=None)
@given(t=st.floats(min_value=0.0, max_value=253_402_300_799.0, allow_nan=False, allow_infinity=False))
@example(t=1_800_000_000.5)
@example(t=1_800_000_000.9999996)       # rounds up into the next second
@example(t=1_800_000_000.0000005)       # a half: rounds to even
@example(t=1_800_000_000.0000015)
@example(t=0.0)
@example(t=86_399.9999999)
def test_iso_equals_datetime_strftime(t):
    assert _iso(t) == _old_iso(t)


def test_iso_sequence_across_seconds_uses_the_right_second():
    t = 1_799_999_990.0
    while t < 1_800_000_010.0:
        assert _iso(t) == _old_iso(t)
        t += 0.0999999


def test_record_ids_are_distinct_valid_uuid4_urns():
    ids = _RecordIds()
    seen = set()
    for _ in range(50_000):
        rid = ids()
        assert rid.startswith("<urn:uuid:") and rid.endswith(">")
        u = uuid.UUID(rid[10:-1])
        assert str(u) == rid[10:-1] and u.version == 4 and u.variant == uuid.RFC_4122
        seen.add(rid)
    assert len(seen) == 50_000
    assert _RecordIds()() != _RecordIds()()          # one random prefix per writer


def test_header_lines_clean_cr_lf_as_before():
    hs = [("A", "1"), ("B", "x\r\ny"), ("C", "z\n")]
    assert _header_lines(hs) == "A: 1\r\nB: x  y\r\nC: z \r\n"
    assert _header_lines([("A", "1"), ("B", "2")]) == "A: 1\r\nB: 2\r\n"
    assert _header_lines([]) == ""


# -- records: the previous writer's layout, byte for byte; one gzip member each ------------------

def _reference_records(responses, next_id):
    """The records the previous writer (git ea428f4, warcio-checked) produced, uncompressed."""
    def clean(v):
        return v.replace("\r", " ").replace("\n", " ")

    def b32(h):
        return "sha1:" + base64.b32encode(h.digest()).decode()

    def record(typ, url, date, ctype, block, h, extra, rid):
        head = [f"WARC/1.1\r\nWARC-Type: {typ}\r\nWARC-Record-ID: {rid}\r\nWARC-Date: {date}\r\n"]
        if url:
            head.append(f"WARC-Target-URI: {url}\r\n")
        head += [f"{k}: {v}\r\n" for k, v in extra]
        head.append(f"Content-Type: {ctype}\r\nWARC-Block-Digest: {b32(h)}\r\nContent-Length: {len(block)}\r\n\r\n")
        return "".join(head).encode("utf-8") + block + b"\r\n\r\n"

    seen, out = {}, []
    for r in responses:
        digest = hashlib.sha1(r.body).digest()
        first = seen.get(digest)
        date = _old_iso(r.t_start)
        slash = r.url.find("/", r.url.find("://") + 3)
        target = r.url[slash:] if slash >= 0 else "/"
        req_block = (f"GET {target} HTTP/1.1\r\n" + "".join(f"{k}: {clean(v)}\r\n" for k, v in r.request_headers)
                     + "\r\n").encode("utf-8")
        req_id = next_id()
        out.append(record("request", r.url, date, "application/http; msgtype=request", req_block,
                          hashlib.sha1(req_block), [], req_id))
        head = (clean(r.status_line or f"HTTP/1.1 {r.status}") + "\r\n"
                + "".join(f"{k}: {clean(v)}\r\n" for k, v in r.headers) + "\r\n").encode("latin-1", "replace")
        extra = [("WARC-Concurrent-To", req_id), ("WARC-Payload-Digest", "sha1:" + base64.b32encode(digest).decode())]
        if first is None:
            seen[digest] = (r.url, date)
            out.append(record("response", r.url, date, "application/http; msgtype=response", head + r.body,
                              hashlib.sha1(head + r.body), extra, next_id()))
        else:
            extra += [("WARC-Profile", "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"),
                      ("WARC-Refers-To-Target-URI", first[0]), ("WARC-Refers-To-Date", first[1])]
            out.append(record("revisit", r.url, date, "application/http; msgtype=response", head,
                              hashlib.sha1(head), extra, next_id()))
    return out


def _members(data: bytes) -> list[bytes]:
    """The decompressed gzip members of a file, one by one."""
    out = []
    while data:
        d = zlib.decompressobj(31)
        out.append(d.decompress(data) + d.flush())
        assert d.eof
        data = d.unused_data
    return out


def _mixed_responses(n=60):
    rs = []
    for i in range(n):
        body = (b"<html><body>" + b"<p>page %d text</p>" % (i % 17) * (50 + i * 37 % 400) + b"</body></html>"
                if i % 9 else b"")
        headers = [("Content-Type", "text/html; charset=\u00e9t\u00e9"), ("Content-Length", str(len(body)))]
        if i % 13 == 5:
            headers.append(("X-Evil", "a\r\nWARC-Type: fake\n"))      # CR/LF inside a value
        rs.append(Response(key=None, url=f"http://h{i % 3}.test/d/p{i}.html?q=\u00fc" if i % 11 else f"http://h.test",
                           status=200 if i % 7 else 404, status_line="" if i % 5 == 0 else "HTTP/1.1 200 OK",
                           headers=headers, body=body, t_start=1_800_000_000.0 + i * 0.3333337,
                           request_headers=[("Host", f"h{i % 3}.test"), ("User-Agent", "abc-crawler/0.1"),
                                            ("X-ABC-Rank", "0")]))
    return rs


@pytest.mark.parametrize("batch", [1, 7, 64])
@pytest.mark.parametrize("backend", sorted(GZIP_BACKENDS))
def test_records_equal_the_previous_writer_one_member_each(tmp_path, backend, batch):
    rs = _mixed_responses()
    w = RankWarc(tmp_path, 1, gzip=backend, batch=batch)
    counter = iter(range(10**6))
    w._next_id = lambda: f"<urn:uuid:00000000-0000-4000-8000-{next(counter):012x}>"
    dups = [w.write(r) for r in rs]
    w.close()
    members = _members((_file(tmp_path, 1)).read_bytes())
    assert members[0].startswith(b"WARC/1.1\r\nWARC-Type: warcinfo\r\n")
    ref_counter = iter(range(10**6))              # the warcinfo record was written with the writer's own id
    ref = _reference_records(rs, lambda: f"<urn:uuid:00000000-0000-4000-8000-{next(ref_counter):012x}>")
    assert members[1:] == ref
    assert sum(dups) == w.revisits > 0 and w.records == 2 * len(rs)


@pytest.mark.parametrize("backend", sorted(GZIP_BACKENDS))
def test_warcio_reads_every_backend_with_digests(tmp_path, backend):
    rs = _mixed_responses()
    w = RankWarc(tmp_path, 2, gzip=backend)
    for r in rs:
        w.write(r)
    w.close()
    n = 0
    with open(_file(tmp_path, 2), "rb") as fh:
        it = ArchiveIterator(fh, check_digests="raise")
        for rec in it:
            rec.content_stream().read()
            uuid.UUID(rec.rec_headers.get_header("WARC-Record-ID")[10:-1])
            n += 1
    assert n == 1 + 2 * len(rs)


def test_checkpoint_offsets_fall_on_member_boundaries(tmp_path):
    w = RankWarc(tmp_path, 4)
    offsets = []
    for r in _mixed_responses(20):
        w.write(r)
        offsets.append(w.checkpoint()["offset"])
    w.close()
    data = (_file(tmp_path, 4)).read_bytes()
    assert offsets[-1] == len(data)
    for i, off in enumerate(offsets):
        assert len(_members(data[:off])) == 1 + 2 * (i + 1)


def test_response_records_keep_the_head_as_received(tmp_path):
    body = b"<html><body><p>as received</p></body></html>"
    head = b"HTTP/1.1 200 OK\r\ncontent-type:text/html\r\nX-Odd:   two  spaces \r\nContent-Length: %d\r\n\r\n" % len(body)
    r = _resp("http://h.test/a.html", body)
    r.raw_head = head
    again = _resp("http://h.test/b.html", body)          # the same payload: a revisit, with its own head
    again.raw_head = head.replace(b"X-Odd", b"X-Other")
    w = RankWarc(tmp_path, 3)
    assert w.write(r) is False and w.write(again) is True
    w.close()
    with open(_file(tmp_path, 3), "rb") as fh:     # valid, digests included
        heads = [rec.http_headers.get_header("X-Odd") for rec in ArchiveIterator(fh, check_digests="raise")
                 if rec.rec_type in ("response", "revisit")]
    assert heads == ["two  spaces", None]
    blocks = {}
    for m in _members((_file(tmp_path, 3)).read_bytes()):
        warc_head, _, block = m.partition(b"\r\n\r\n")
        for kind in (b"response", b"revisit"):
            if b"\r\nWARC-Type: " + kind + b"\r\n" in warc_head:
                uri = warc_head.split(b"WARC-Target-URI: ", 1)[1].split(b"\r\n", 1)[0].decode()
                blocks[uri] = (kind.decode(), block)
    assert blocks["http://h.test/a.html"] == ("response", head + body + b"\r\n\r\n")
    assert blocks["http://h.test/b.html"] == ("revisit", again.raw_head + b"\r\n\r\n")


def _uris(path, kinds=("response", "revisit")):
    with open(path, "rb") as fh:
        return [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(fh, check_digests="raise")
                if r.rec_type in kinds]


def test_batches_are_written_when_full_and_at_every_checkpoint(tmp_path):
    w = RankWarc(tmp_path, 5, batch=3)
    path = _file(tmp_path, 5)
    start = w.checkpoint()["offset"]                        # the warcinfo record
    for i in range(2):
        w.write(_resp(f"http://h.test/{i}", b"body %d" % i))
    w._fh.flush()
    assert path.stat().st_size == start                     # two pages wait for the third
    w.write(_resp("http://h.test/2", b"body 2"))
    w._fh.flush()
    assert path.stat().st_size > start and w.records == 6   # the batch is full: written
    w.write(_resp("http://h.test/3", b"body 3"))
    ck = w.checkpoint()                                     # a checkpoint writes what waits
    assert ck["records"] == 8
    w._fh.flush()
    assert ck["offset"] == path.stat().st_size
    assert _uris(path) == [f"http://h.test/{i}" for i in range(4)]
    w.close()


def test_a_batch_ends_at_one_mib_of_bodies(tmp_path):
    w = RankWarc(tmp_path, 6, batch=1000)
    big = b"x" * (400 * 1024)
    for i in range(5):
        w.write(_resp(f"http://h.test/{i}", big + b"%d" % i))
        assert w._pending_bytes < 1 << 20                   # bodies held back never reach 1 MiB
    assert w.records == 6                                   # the first three pages went out together
    w.close()
    assert _uris(_file(tmp_path, 6)) == [f"http://h.test/{i}" for i in range(5)]


def test_restore_drops_pages_waiting_in_a_batch(tmp_path):
    w = RankWarc(tmp_path, 7, batch=10)
    w.write(_resp("http://h.test/a", b"A"))
    ck = w.checkpoint()
    w.write(_resp("http://h.test/b", b"B"))                 # waits in the batch: after the checkpoint
    w.restore(ck)
    w.write(_resp("http://h.test/c", b"C"))
    w.write(_resp("http://h.test/d", b"A"))                 # A was stored before the checkpoint: a revisit
    w.close()
    assert _uris(_file(tmp_path, 7)) == ["http://h.test/a", "http://h.test/c", "http://h.test/d"]
    assert w.records == 6 and w.revisits == 1


def test_duplicates_inside_one_batch_become_revisits_of_the_first(tmp_path):
    w = RankWarc(tmp_path, 8, batch=64)
    assert [w.write(_resp(f"http://h.test/{i}", b"same" if i % 2 else b"own %d" % i)) for i in range(6)] == \
        [False, False, False, True, False, True]
    w.close()
    with open(_file(tmp_path, 8), "rb") as fh:
        revisits = [(r.rec_headers.get_header("WARC-Target-URI"), r.rec_headers.get_header("WARC-Refers-To-Target-URI"))
                    for r in ArchiveIterator(fh, check_digests="raise") if r.rec_type == "revisit"]
    assert revisits == [("http://h.test/3", "http://h.test/1"), ("http://h.test/5", "http://h.test/1")]


def test_batch_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="batch"):
        RankWarc(tmp_path, 0, batch=0)


def test_the_content_seen_table_remembers_first_records_exactly(tmp_path):
    """ContentSeen (issue 35: compact): the first record of each digest, never a later one; a
    digest sharing its first 8 bytes with another is not taken for it; the plain form and a
    version-5 checkpoint's dict give the same table back."""
    import hashlib

    from abc_crawler.store.contentseen import ContentSeen

    seen = ContentSeen()
    digests = [hashlib.sha1(b"%d" % i).digest() for i in range(500)]
    for i, d in enumerate(digests):
        seen.add(d, f"http://h.test/ü{i}", f"2030-01-01T00:00:{i % 60:02d}.000001Z")
        seen.add(d, "http://h.test/later", "2031-01-01T00:00:00Z")
    assert len(seen) == 500
    assert seen.get(digests[7]) == ("http://h.test/ü7", "2030-01-01T00:00:07.000001Z")
    twin = digests[3][:8] + bytes(12)                 # same first 8 bytes, another digest
    assert seen.get(twin) is None and seen.get(hashlib.sha1(b"x").digest()) is None
    seen.add(twin, "http://h.test/twin", "2030")
    assert seen.get(twin) is None and seen.get(digests[3])[0] == "http://h.test/ü3"
    back = ContentSeen.from_plain(seen.as_plain())
    old = ContentSeen.from_plain({d: seen.get(d) for d in digests})
    for d in digests:
        assert back.get(d) == old.get(d) == seen.get(d)
    with pytest.raises(ValueError):
        seen.add(b"short", "http://h.test/", "2030")


def test_a_session_renamed_after_its_checkpoint_resumes_with_the_files_it_began(tmp_path):
    """The WARC files are named after the session's directory when they begin. A resume after the
    directory was renamed keeps that name: the files begun after the checkpoint are removed (their
    pages are fetched again, not stored twice), the current one is cut back, and every file's index
    is its own. (Before, the resume looked for files of the new name only: the old ones begun after
    the checkpoint stayed, and the current file's index was made under the new name.)"""
    from abc_crawler.store.cdxj import index_lines, index_path

    old, new = tmp_path / "orig", tmp_path / "renamed"
    w = RankWarc(old, 0, max_bytes=600)
    for i in range(3):
        w.write(_resp(f"http://h.test/{i}", b"x%d" % i * 200))
    w.flush()
    ck = w.checkpoint()
    for i in range(3, 7):                               # files begun after the checkpoint
        w.write(_resp(f"http://h.test/{i}", b"y%d" % i * 200))
    w.close()
    old.rename(new)
    w = RankWarc(new, 0, max_bytes=600, info=[("isPartOf", "renamed"), ("description", "ABC crawl session renamed, rank 0")])
    w.restore(ck)
    w.write(_resp("http://h.test/late", b"late"))
    w.close()
    names = sorted(p.name for p in (new / "warc").glob("*.warc.gz"))
    assert names and all(n.startswith("orig-rank-00000-") for n in names), names
    assert not list((new / "warc").glob("renamed-*"))
    uris = []
    for n in names:
        f = new / "warc" / n
        with open(f, "rb") as fh:
            uris += [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(fh) if r.rec_type == "response"]
        assert index_path(f).read_text().splitlines() == sorted(x.rstrip("\n") for x in index_lines(f)), n
    assert uris == [f"http://h.test/{i}" for i in range(3)] + ["http://h.test/late"]
    # the files begun after the resume say the session is the one their names say
    with open(new / "warc" / names[-1], "rb") as fh:
        info = next(iter(ArchiveIterator(fh))).content_stream().read().decode()
    assert "isPartOf: orig\r\n" in info and "ABC crawl session orig, rank 0" in info
