"""The compiled pass over a page's references (abc_crawler/web/_linkpass.pyx) against its Python
references: ada's join called straight against ``ada_url.join_url``, and
``LinkClassifier.targets`` against ``LinkClassifier.targets_reference`` (the same targets, counts
and cache)."""
from __future__ import annotations

import ada_url
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abc_crawler.crawl.counters import RankCounters
from abc_crawler.crawl.links import DecisionCache, LinkClassifier
from abc_crawler.web import _linkpass, urls
from abc_crawler.web.ownership import HashAssignment
from abc_crawler.web.scope import Scope, ScopeRules, UrlFilter

from test_link_cache import CFG, PAGES, SCOPE, href

BASES = ["http://a.test/", "http://a.test/d/x.html?q=1", "https://A.test:443/d/", "http://b.test:8080/d/e/",
         "http://[::1]:8080/x", "http://xn--bcher-kva.test/a/b", "file:///etc/passwd", "mailto:a@b.test", "", "x"]
RULES = {"none": ScopeRules(),
         "domain+filter": ScopeRules(domains=("a.test",), url_filter=UrlFilter(((False, "/e/"), (True, "."))))}


def test_canonicalize_joins_through_the_compiled_call():
    """The installed ada_url gives its C functions' addresses: the crawl does not fall back to the wrapper."""
    assert _linkpass.bound()
    assert urls._join is _linkpass.join_url


@pytest.mark.parametrize("change", ["signature", "missing"])
def test_an_ada_url_with_another_c_interface_is_called_through_its_wrapper(monkeypatch, change):
    """A function whose C signature is not the one the compiled call was written for (or that is
    not there) is never called straight: the join falls back to ``ada_url.join_url``."""
    sig = dict(urls._ADA_SIGNATURES)
    if change == "signature":
        sig["ada_get_href"] = "char *(*)(void *)"
    else:
        sig["ada_no_such_function"] = "void(*)(void *)"
    monkeypatch.setattr(urls, "_ADA_SIGNATURES", sig)
    assert urls._compiled_join() is ada_url.join_url
    monkeypatch.undo()
    assert urls._compiled_join() is _linkpass.join_url


def _join(f, base, ref):
    try:
        return f(base, ref)
    except ValueError:
        return ValueError


@settings(max_examples=600, deadline=None)
@given(base=st.one_of(st.sampled_from(BASES), st.text(max_size=30)),
       ref=st.one_of(href, st.text(max_size=30), st.sampled_from(["\ud800", "a\udfff/b", "\x00", " http://a.test/ "])))
def test_join_url_is_ada_urls(base, ref):
    assert _join(_linkpass.join_url, base, ref) == _join(ada_url.join_url, base, ref)


@pytest.mark.parametrize("base, ref", [("http://a.test/d/x", "../y?b=2&a=1#f"), ("http://a.test/", "HTTP://É.test/ü"),
                                       ("http://a.test/", "http://[zz]/"), ("not a url", "x"), ("\ud800", "x")])
def test_join_url_examples(base, ref):
    assert _join(_linkpass.join_url, base, ref) == _join(ada_url.join_url, base, ref)


def _pair(rules: ScopeRules, generation: int, limit: int) -> tuple[LinkClassifier, LinkClassifier]:
    def one():
        c = LinkClassifier.from_config(CFG, SCOPE, HashAssignment(4), 1, RankCounters(), rules)
        c.cache, c._any_host_cache = DecisionCache(generation), DecisionCache(generation)
        c.trap_limits["max_length"] = limit
        return c
    return one(), one()


def _state(c: LinkClassifier):
    return (dict(c.links), dict(c.out_of_scope_hosts),
            [(dict(d.new), dict(d.old)) for d in (c.cache, c._any_host_cache)])


@settings(max_examples=300, deadline=None)
@given(pages=st.lists(st.tuples(st.sampled_from(PAGES), st.one_of(st.none(), st.sampled_from(["/d/", "sub/", "http://b.test:8080/"])),
                                st.lists(href, max_size=12), st.booleans()), min_size=1, max_size=6),
       rules=st.sampled_from(sorted(RULES)), generation=st.sampled_from([1, 3, 1000]),
       limit=st.sampled_from([40, 2048]))
def test_targets_is_its_python_reference(pages, rules, generation, limit):
    """Page after page (the cache carried over, small generations turning over, bases longer than
    --max-url-length), the compiled pass gives the Python loop's targets, counts and cache."""
    compiled, reference = _pair(RULES[rules], generation, limit)
    for page, base, hrefs, requisite in pages:
        got = compiled.targets(page, base, list(hrefs), requisite)
        want = reference.targets_reference(page, base, list(hrefs), requisite)
        assert got == want
        assert _state(compiled) == _state(reference)


def test_scheme_case_shares_one_decision():
    """``HTTP://A.test/x`` and ``http://A.test/x`` are one cache entry (the scheme is keyed lower-cased)."""
    c, _ = _pair(RULES["none"], 1000, 2048)
    first = c.targets("http://a.test/", None, ["HTTP://a.test/x"])
    assert len(c.cache) == 1
    assert c.targets("http://a.test/", None, ["http://a.test/x#f"]) == first
    assert len(c.cache) == 1


def test_link_pass_refuses_what_is_not_a_string():
    c, _ = _pair(RULES["none"], 1000, 2048)
    with pytest.raises(TypeError):
        c.targets("http://a.test/", None, [b"/x"])
    assert [t[0] for t in c.targets("http://a.test/", None, ("/x", "/y"))] == ["http://a.test/x", "http://a.test/y"]
    c.max_links = 1                          # a tuple over the page limit: cut, then passed as a list
    assert [t[0] for t in c.targets("http://a.test/", None, ("/z", "/w"))] == ["http://a.test/z"]
    assert c.links["over_page_limit"] == 1


def _outcome(f, *args, **kw):
    """What ``f`` gives, or the class and arguments of what it raises."""
    try:
        return f(*args, **kw)
    except Exception as e:          # noqa: BLE001 - compared as a value
        return type(e), e.args


@settings(max_examples=600, deadline=None)
@given(ref=st.one_of(href, st.text(max_size=25), st.sampled_from(["http://u:p@a.test/", "HTTP://a.test/?b=1&a=2#f",
                                                                 "/%7e/%41?x", " \thttp://a.test/ \n", "\ud800"])),
       base=st.one_of(st.none(), st.sampled_from(BASES)))
def test_canonicalize_is_its_python_reference(ref, base):
    assert urls.canonicalize is _linkpass.canonicalize
    assert _outcome(urls.canonicalize, ref, base) == _outcome(urls.canonicalize_reference, ref, base)


segment = st.sampled_from(["a", "b", "", "x.html", "%2F", "?", "?q=/a/a", "#"])


@settings(max_examples=600, deadline=None)
@given(url=st.one_of(st.lists(segment, max_size=12).map(lambda p: "http://a.test/" + "/".join(p)),
                     st.lists(segment, max_size=6).map(lambda p: "http://a.test" + "".join(p)),
                     st.text(max_size=40)),
       max_length=st.integers(0, 60), max_depth=st.integers(0, 8), max_repeats=st.integers(0, 4))
def test_trap_reason_is_its_python_reference(url, max_length, max_depth, max_repeats):
    from abc_crawler.sched.limits import trap_reason

    assert (_linkpass.trap_reason(url, max_length, max_depth, max_repeats)
            == trap_reason(url, max_length=max_length, max_depth=max_depth, max_repeats=max_repeats))


@settings(max_examples=600, deadline=None)
@given(ref=href, base=st.sampled_from(PAGES + ["http://a.test/a/a/a/", "http://c.test/"]),
       rules=st.sampled_from(sorted(RULES)), any_host=st.booleans(), depth=st.sampled_from([1, 3, 32]))
def test_classify_is_its_python_reference(ref, base, rules, any_host, depth):
    c, _ = _pair(RULES[rules], 1000, 2048)
    c.trap_limits["max_depth"] = c.trap_limits["max_repeats"] = depth
    assert c.classify(ref, base, any_host) == c.classify_reference(ref, base, any_host)


class _Text(str):
    """A str subclass, as lxml gives attribute values from XPath (``_ElementUnicodeResult``)."""


def test_str_subclasses_are_taken_as_their_python_references_take_them():
    c, ref = _pair(RULES["none"], 1000, 2048)
    page, hrefs = _Text("http://a.test/d/"), [_Text("x.html"), _Text("HTTP://a.test/y?b=1&a=2"), _Text("/z#f")]
    assert c.targets(page, _Text("sub/"), hrefs) == ref.targets_reference(page, _Text("sub/"), hrefs)
    assert _state(c) == _state(ref)
    assert _linkpass.join_url(_Text("http://a.test/d/"), _Text("../e")) == "http://a.test/e"
    assert urls.canonicalize(_Text(" x?b=1&a=2 "), _Text("http://A.test/")) == "http://a.test/x?a=2&b=1"
    assert _linkpass.trap_reason(_Text("http://a.test/a/a/a/a"), 100, 32, 3) == "path_repetition"


@pytest.mark.parametrize("base, ref", [(None, "x"), ("http://a.test/", None), (b"http://a.test/", "x")])
def test_join_url_refuses_what_is_not_text_as_ada_url_does(base, ref):
    assert _join(_linkpass.join_url, base, ref) is ValueError is _join(ada_url.join_url, base, ref)


_FALLBACK = r"""
import sys, types
import ada_url, ada_url._ada_wrapper as real
stub = types.ModuleType("ada_url._ada_wrapper")
stub.ffi, stub.lib = real.ffi, object()          # a module that gives no function's address
sys.modules["ada_url._ada_wrapper"] = stub
from abc_crawler.web import urls
from abc_crawler.crawl.links import LinkClassifier
from abc_crawler.web.ownership import HashAssignment
from abc_crawler.web.scope import Scope
assert not urls.COMPILED and urls._join is ada_url.join_url and urls.canonicalize is urls.canonicalize_reference
assert LinkClassifier.classify is LinkClassifier.classify_reference
c = LinkClassifier(Scope(), HashAssignment(2), 0, max_links_per_page=100, max_url_length=2048,
                   max_path_depth=32, max_segment_repeats=3)
print([t[0] for t in c.targets("http://a.test/d/", None, ["x?b=1&a=2", "/a/a/a/a/y", "mailto:x", "HTTP://B.test/"])],
      sorted(c.links.items()))
"""


def test_without_ada_s_c_functions_the_link_path_runs_its_python():
    """Where ``ada_url`` gives no C function to call straight, nothing compiled that needs them runs:
    ``canonicalize`` and ``classify`` are their references, and a page's links come out the same."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _FALLBACK], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    c = LinkClassifier(Scope(), HashAssignment(2), 0, max_links_per_page=100, max_url_length=2048,
                       max_path_depth=32, max_segment_repeats=3)
    want = c.targets("http://a.test/d/", None, ["x?b=1&a=2", "/a/a/a/a/y", "mailto:x", "HTTP://B.test/"])
    assert [t[0] for t in want] == ["http://a.test/d/x?a=2&b=1", "http://b.test/"]
    assert out.stdout.strip() == f"{[t[0] for t in want]} {sorted(c.links.items())}"
