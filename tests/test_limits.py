"""Limits against traps and bombs (pure functions)."""
import gzip
import zlib

import pytest
from hypothesis import given, settings, strategies as st

from abc_crawler.sched.limits import InflateError, inflate, retry_delay, trap_reason

KW = dict(max_length=100, max_depth=5, max_repeats=2)


@pytest.mark.parametrize("url,reason", [
    ("http://h.test/a/b/c.html", None),
    ("http://h.test/", None),
    ("http://h.test/" + "x" * 200, "url_too_long"),
    ("http://h.test/1/2/3/4/5/6.html", "path_too_deep"),
    ("http://h.test/a/b/a/c/a.html", None),           # 'a' twice, 'a.html' once
    ("http://h.test/a/a/a/x.html", "path_repetition"),
    ("http://h.test/cal/2026?a=a/a/a/a", None),        # the query does not count
])
def test_trap_reason(url, reason):
    assert trap_reason(url, **KW) == reason


def _trap_reference(url, *, max_length, max_depth, max_repeats):
    """The definition, written plainly: split every path into segments, no shortcut."""
    from collections import Counter
    if len(url) > max_length:
        return "url_too_long"
    rest = url.split("://", 1)[1]
    path = rest[rest.index("/"):] if "/" in rest else ""
    segments = [x for x in path.split("?", 1)[0].split("/") if x]
    if len(segments) > max_depth:
        return "path_too_deep"
    if segments and Counter(segments).most_common(1)[0][1] > max_repeats:
        return "path_repetition"
    return None


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "", "c.html"]), max_size=9),
       st.sampled_from(["", "?x=/a/a/a/a", "?"]),
       st.integers(1, 6), st.integers(1, 4))
def test_trap_reason_matches_the_definition(segments, query, depth, repeats):
    url = "http://h.test/" + "/".join(segments) + query
    kw = dict(max_length=60, max_depth=depth, max_repeats=repeats)
    assert trap_reason(url, **kw) == _trap_reference(url, **kw)


def test_retry_delay_honours_retry_after_and_caps():
    assert retry_delay(1, None, 0.5, 60) == 0.5
    assert retry_delay(3, None, 0.5, 60) == 2.0
    assert retry_delay(10, None, 1.0, 60) == 60.0
    assert retry_delay(1, "3", 1.0, 60) == 3.0
    assert retry_delay(1, "86400", 1.0, 60) == 60.0
    assert retry_delay(2, "Wed, 21 Oct 2015 07:28:00 GMT", 1.0, 60) == 0.0   # in the past
    assert retry_delay(2, "soon", 1.0, 60) == 2.0                          # unparsable: back-off


def test_inflate_gzip_deflate_and_bombs():
    data = b"<a href=x>" * 1000
    assert inflate(gzip.compress(data), "gzip", 10**6) == data
    assert inflate(zlib.compress(data), "deflate", 10**6) == data
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    assert inflate(raw.compress(data) + raw.flush(), "deflate", 10**6) == data
    assert inflate(data, None, 10) == data                     # identity is not capped here
    bomb = gzip.compress(b"\0" * (20 * 2**20))                  # 20 MB of zeros, ~20 KB on the wire
    assert len(bomb) < 100_000
    with pytest.raises(InflateError) as ei:
        inflate(bomb, "gzip", 2**20)
    assert ei.value.kind == "decompression_bomb"
    with pytest.raises(InflateError, match="bad_content_encoding"):
        inflate(b"not gzip", "gzip", 100)
    with pytest.raises(InflateError, match="unsupported_content_encoding"):
        inflate(b"x", "br", 100)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000), st.sampled_from(["gzip", "deflate", "identity", "x-gzip"]))
def test_inflate_never_raises_anything_but_inflate_error(body, enc):
    try:
        out = inflate(body, enc, 5000)
    except InflateError:
        return
    assert len(out) <= max(5000, len(body))
