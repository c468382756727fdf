"""Conditional requests on the wire: the embedded server answers them as RFC 9110 says (strong
ETags, If-None-Match before If-Modified-Since), and the fetcher sends per-request headers only
with the request they belong to and reports the address it connected to (WARC-IP-Address)."""
from __future__ import annotations

import json
import time

import pytest

from crawlcheck import generate, read_log

from abc_crawler.net.fetcher import Fetcher
from abc_crawler.web.scope import Scope
from abc_crawler.testweb.responses import not_modified
from abc_crawler.testweb.server import TestWebServer


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    d = tmp_path_factory.mktemp("cond-web")
    generate(d, n_hosts=2, n_pages=20, seed=4)
    return d


def _fetch(f: Fetcher, url: str, headers=()):
    f.submit("k", url, headers=tuple(headers))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done = f.poll(0.05)
        if done:
            return done[0]
    raise AssertionError("no answer")


def test_the_server_answers_conditional_requests(web, tmp_path):
    m = json.loads((web / "manifest.json").read_text())
    url = m["seeds"][0]
    log = tmp_path / "access.jsonl"
    f = Fetcher(scope=Scope.from_file(str(web / "resolve.txt")), user_agent="abc-crawler/0.1", timeout=10,
                connect_timeout=5, max_body_bytes=1 << 20)
    try:
        with TestWebServer.from_manifest(web, access_log=str(log)):
            first = _fetch(f, url)
            etag, lm = first.header("etag"), first.header("last-modified")
            assert first.status == 200 and etag.startswith('"') and not etag.startswith("W/") and lm
            assert first.ip == "127.0.0.1"
            later = "Fri, 01 Jan 2100 00:00:00 GMT"
            earlier = "Thu, 01 Jan 1970 00:00:00 GMT"
            cases = [
                ([("If-None-Match", etag)], 304),
                ([("If-None-Match", f'"other", W/{etag}')], 304),              # weak comparison, a list
                ([("If-None-Match", '"other"'), ("If-Modified-Since", later)], 200),   # INM wins over IMS
                ([("If-Modified-Since", lm)], 304),
                ([("If-Modified-Since", earlier)], 200),
                ([("If-Modified-Since", "not a date")], 200),
                ([], 200),                                                     # the handle forgets the headers
            ]
            for headers, want in cases:
                r = _fetch(f, url, headers)
                assert r.status == want, (headers, r.status)
                assert [h for h in r.request_headers if h[0].startswith("If-")] == headers
                if want == 304:
                    assert r.body == b"" and r.header("etag") == etag and r.header("content-length") is None
                else:
                    assert r.body == first.body
    finally:
        f.close()
    statuses = [row["status"] for row in read_log(log)]
    assert statuses == [200] + [w for _, w in cases]


def test_not_modified_is_false_without_validators_and_for_other_tags():
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
    assert not not_modified(head, b"*", None) and not not_modified(head, None, b"Thu, 01 Jan 1970 00:00:00 GMT")
    tagged = head + b'ETag: "abc"\r\n'
    assert not_modified(tagged, b'"abc"', None) and not not_modified(tagged, b'"abd"', None)
    assert not not_modified(tagged, b'"ab"', None)
