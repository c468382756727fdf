"""Canonical URLs, fingerprints, hosts, and the ownership functions built on them."""
import pytest
from hypothesis import given, settings, strategies as st

from abc_crawler.web.assignments import make_assignment
from abc_crawler.web.ownership import HashAssignment, SiteHashAssignment
from abc_crawler.exceptions import AssignmentError
from abc_crawler.web.urls import UrlError, canonicalize, fingerprint, host_of, scheme_of


@pytest.mark.parametrize("href,base,expected", [
    ("HTTP://Ex.TEST:80/a/../b?z=1&a=2#frag", None, "http://ex.test/b?a=2&z=1"),
    ("https://ex.test:443/x", None, "https://ex.test/x"),
    ("http://ex.test:8080", None, "http://ex.test:8080/"),
    ("page2.html", "http://h.test:81/d/p1.html", "http://h.test:81/d/page2.html"),
    ("../x/p.html#s", "http://h.test/d/e/p1.html", "http://h.test/d/x/p.html"),
    ("/root.html", "http://h.test/d/e/p1.html", "http://h.test/root.html"),
    ("//other.test/p", "https://h.test/", "https://other.test/p"),
    ("  p.html\n", "http://h.test/", "http://h.test/p.html"),
    ("http://ex.test/%7euser/", None, "http://ex.test/~user/"),
    ("http://ex.test/a b", None, "http://ex.test/a%20b"),
])
def test_canonical_forms(href, base, expected):
    assert canonicalize(href, base) == expected


@pytest.mark.parametrize("href", ["mailto:a@b.test", "javascript:void(0)", "ftp://x.test/", "file:///etc/passwd",
                                  "data:text/html,hi", "gopher://g.test/"])
def test_non_http_is_none(href):
    assert canonicalize(href, "http://h.test/") is None


@pytest.mark.parametrize("href", ["http://", "http://a b.test/", "http://user:pw@h.test/"])
def test_bad_urls_raise_with_reason(href):
    with pytest.raises(UrlError) as ei:
        canonicalize(href)
    assert ei.value.url == href.strip()


def test_scheme_and_host():
    assert scheme_of("HTTP://x") == "http"
    assert scheme_of("/rel/path") == ""
    assert scheme_of("a b:c") == ""
    assert host_of("http://h.test:8080/x") == "h.test:8080"
    assert host_of("https://h.test/") == "h.test"


def test_fingerprint_is_64bit_and_stable():
    fp = fingerprint("http://a.test/")
    assert 0 <= fp < 2**64
    assert fp == fingerprint("http://a.test/")
    assert fp != fingerprint("http://a.test/x")


_seg = st.text(alphabet="abcXYZ09-._~%/?&=#: ", min_size=0, max_size=12)


@settings(max_examples=300, deadline=None)
@given(host=st.sampled_from(["a.test", "B.Test:80", "c.test:8080", "xn--bcher-kva.test"]), path=_seg,
       scheme=st.sampled_from(["http", "https", "HTTP"]))
def test_canonicalize_is_idempotent(host, path, scheme):
    try:
        once = canonicalize(f"{scheme}://{host}/{path}")
    except UrlError:
        return
    assert once is not None
    assert canonicalize(once) == once
    assert "#" not in once


def test_hash_owner_is_deterministic_and_balanced():
    a, b = HashAssignment(4), HashAssignment(4)
    urls = [f"http://h{i % 7}.test/p{i}.html" for i in range(4000)]
    owners = [a.owner(u) for u in urls]
    assert owners == [b.owner(u, fingerprint(u)) for u in urls]
    counts = [owners.count(r) for r in range(4)]
    assert min(counts) > 800        # roughly 1000 each


def test_site_hash_keeps_a_host_together():
    s = SiteHashAssignment(8)
    owners = {s.owner(f"http://h{i % 5}.test/p{i}") for i in range(100) if i % 5 == 2}
    assert len(owners) == 1
    assert s.site_level and not HashAssignment(8).site_level


def test_make_assignment_rejects_unknown():
    with pytest.raises(AssignmentError):
        make_assignment("random", 4)
    with pytest.raises(AssignmentError):
        HashAssignment(8, buckets=4)
