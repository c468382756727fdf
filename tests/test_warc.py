"""WARC files are valid for warcio's reader, digests included; revisits, checkpoints."""
import hashlib

from warcio.archiveiterator import ArchiveIterator

from abc_crawler.fetcher import Response
from abc_crawler.warc import RankWarc


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
    with open(tmp_path / "warc" / "rank-00003.warc.gz", "rb") as fh:
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
    with open(tmp_path / "warc" / "rank-00000.warc.gz", "rb") as fh:
        uris = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(fh) if r.rec_type == "response"]
    assert uris == ["http://h.test/a", "http://h.test/c"]


def test_disabled_still_dedups():
    w = RankWarc("/nonexistent", 0, enabled=False)
    assert w.write(_resp("http://h.test/a", b"x")) is False
    assert w.write(_resp("http://h.test/b", b"x")) is True
