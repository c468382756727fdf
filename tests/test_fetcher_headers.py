"""The fetcher's header parsing, against the line-by-line definition."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from abc_crawler.net.fetcher import Fetcher, Response


def _reference(lines: list[bytes]) -> tuple[str, list[tuple[str, str]]]:
    """One line at a time: decode, drop the line end, skip lines without a colon, split at the first."""
    status = lines[0].decode("latin-1").strip()
    headers = []
    for raw in lines[1:]:
        line = raw.decode("latin-1").rstrip("\r\n")
        if not line or ":" not in line:
            continue
        k, v = line.split(":", 1)
        headers.append((k.strip(), v.strip()))
    return status, headers


_text = st.text(alphabet=st.sampled_from(list("aZ-_ :;\t\r/é\x7f\xff0")), max_size=12)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(_text, st.sampled_from([":", ": ", "", "::"]), _text), max_size=8),
       st.sampled_from(["\r\n", "\n"]))
def test_parse_headers_matches_the_line_by_line_definition(fields, end):
    # curl hands over one header line per call, each ending in its line end, and a blank line last
    lines = [b"HTTP/1.1 200 OK\r\n"]
    for k, sep, v in fields:
        line = (k + sep + v).replace("\n", "").encode("latin-1", "replace") + end.encode()
        lines.append(line)
    lines.append(b"\r\n")
    r = Response(key=None, url="http://h.test/")
    Fetcher._parse_headers(r, lines)
    assert (r.status_line, r.headers) == _reference(lines)
    # the raw head: every line up to the first blank one (a value of "\r" makes a line look blank)
    blank = next(i for i, line in enumerate(lines) if i > 0 and line in (b"\r\n", b"\n"))
    assert r.raw_head == b"".join(lines[:blank + 1])


def test_parse_headers_plain_response():
    r = Response(key=None, url="http://h.test/")
    Fetcher._parse_headers(r, [b"HTTP/1.1 301 Moved\r\n", b"Location: http://h.test/x?a=1:2\r\n",
                               b"Content-Type:text/html; charset=utf-8\r\n", b"\r\n"])
    assert r.status_line == "HTTP/1.1 301 Moved"
    assert r.headers == [("Location", "http://h.test/x?a=1:2"), ("Content-Type", "text/html; charset=utf-8")]
    assert r.header("location") == "http://h.test/x?a=1:2"


def test_header_lookup_is_case_insensitive_first_value_and_follows_new_headers():
    r = Response(key=None, url="http://h.test/", headers=[("Set-Cookie", "a"), ("set-cookie", "b"), ("X", "1")])
    assert r.header("SET-COOKIE") == "a" and r.header("x") == "1" and r.header("y") is None
    r.headers.append(("Y", "2"))
    assert r.header("y") == "2"


def test_parse_headers_skips_interim_responses():
    # curl hands over the lines of a 100 Continue (or 103 Early Hints) before the final response's
    r = Response(key=None, url="http://h.test/")
    Fetcher._parse_headers(r, [b"HTTP/1.1 100 Continue\r\n", b"\r\n", b"HTTP/1.1 103 Early Hints\r\n",
                               b"Link: </s.css>\r\n", b"\r\n", b"HTTP/1.1 200 OK\r\n", b"X: 1\r\n", b"\r\n"])
    assert r.status_line == "HTTP/1.1 200 OK" and r.headers == [("X", "1")]
    r = Response(key=None, url="http://h.test/")
    Fetcher._parse_headers(r, [b"HTTP/1.1 200 OK\r\n", b"Via: HTTP/1.1 proxy\r\n", b"\r\n"])
    assert r.status_line == "HTTP/1.1 200 OK" and r.headers == [("Via", "HTTP/1.1 proxy")]


def test_raw_head_is_the_final_head_as_received():
    lines = [b"HTTP/1.1 100 Continue\r\n", b"\r\n", b"HTTP/1.1 200 OK\r\n", b"content-type:text/html\r\n",
             b"X-Odd:   two  spaces \r\n", b"\r\n"]
    r = Response(key=None, url="http://h.test/")
    Fetcher._parse_headers(r, lines)
    assert r.raw_head == b"HTTP/1.1 200 OK\r\ncontent-type:text/html\r\nX-Odd:   two  spaces \r\n\r\n"
    assert r.headers == [("content-type", "text/html"), ("X-Odd", "two  spaces")]
    # trailers of a chunked body come after the blank line: parsed, but not part of the head
    r = Response(key=None, url="http://h.test/")
    Fetcher._parse_headers(r, [b"HTTP/1.1 200 OK\n", b"Transfer-Encoding: chunked\n", b"\n", b"X-Trailer: 1\r\n", b"\r\n"])
    assert r.raw_head == b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n"
    assert r.headers == [("Transfer-Encoding", "chunked"), ("X-Trailer", "1")]
    # a head cut off before its blank line has no raw head (the WARC writer rebuilds one)
    r = Response(key=None, url="http://h.test/")
    Fetcher._parse_headers(r, [b"HTTP/1.1 200 OK\r\n", b"X: 1\r\n"])
    assert r.raw_head == b"" and r.headers == [("X", "1")]


def test_counting_write_callback_aborts_at_the_cap():
    # the write callback used with a libcurl older than 8.4.0, which caps only by Content-Length
    from abc_crawler.net.fetcher import _Transfer

    t = _Transfer(curl=None)
    t.cap = 10
    assert t.write(b"12345") is None and t.write(b"67890") is None and not t.over
    assert t.write(b"x") == 0 and t.over           # 0: curl aborts the transfer (CURLE_WRITE_ERROR)
    assert t.chunks == [b"12345", b"67890"]
