"""The user's scope rules (--allowed-domains, --url-filter, --max-depth), what travels with a URL to
its owner (urlline), and the settings of real-web crawling as the command line takes them."""
from __future__ import annotations

import doctest
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

from abc_crawler.web import scope as scope_mod, urlline
from abc_crawler.config import CrawlConfig
from abc_crawler.exceptions import ConfigError, UrlFilterError
from abc_crawler.web.scope import Scope, ScopeRules, UrlFilter, hostname_of, normalize_domain, parse_domains, read_seeds
from abc_crawler.web.urlline import decode_line, encode_line
from abc_crawler.web.urls import canonicalize
from crawlcheck import LAB

BIN = Path(sys.executable).parent


@pytest.mark.parametrize("mod", [scope_mod, urlline])
def test_doctests(mod):
    assert doctest.testmod(mod).failed == 0


# -- --allowed-domains ---------------------------------------------------------------------------

def test_domains_are_idna_normalized_and_match_the_host_or_below():
    r = ScopeRules(domains=parse_domains("Bücher.Example, EXAMPLE.org."))
    assert r.domains == ("xn--bcher-kva.example", "example.org")
    ok = ["http://bücher.example/", "http://www.BÜCHER.example:8080/x", "https://xn--bcher-kva.example/",
          "http://a.b.example.org./", "https://example.org/"]
    no = ["http://xbücher.example/", "http://bücher.example.evil/", "http://example.org.evil/", "http://org/",
          "http://notexample.org/", "http://127.0.0.1/"]
    for u in ok:
        assert r.reason(canonicalize(u)) is None, u
    for u in no:
        assert r.reason(canonicalize(u)) == "out_of_scope_domain", u


def test_ip_literal_domains_match_only_themselves():
    r = ScopeRules(domains=parse_domains("10.0.0.1,0.1"))
    assert r.reason("http://10.0.0.1/") is None
    assert r.reason("http://10.0.0.1:8080/") is None
    assert r.reason("http://10.0.0.10/") == "out_of_scope_domain"
    assert r.reason("http://10.0.0.1.evil.test/") == "out_of_scope_domain"
    assert r.reason("http://9.0.0.1/") == "out_of_scope_domain"        # not "under" 0.1


@pytest.mark.parametrize("bad", ["", ",", "a b.test", "a.test/x", "a.test:80", "http://a.test", "[::1]", "a@b"])
def test_bad_domains_are_config_errors(bad):
    with pytest.raises(ConfigError, match="allowed-domains"):
        parse_domains(bad)


_label = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-éü", min_size=1, max_size=8).filter(
    lambda s: not s.startswith("-") and not s.endswith("-") and "--" not in s[2:4])


@settings(max_examples=400, deadline=None)
@given(st.lists(_label, min_size=1, max_size=3), st.lists(_label, min_size=0, max_size=2),
       st.sampled_from(["http", "https"]), st.sampled_from(["", ":8080"]), st.sampled_from([str.lower, str.upper]))
def test_domain_rule_is_label_suffix_matching_on_canonical_hosts(domain, prefix, scheme, port, case):
    try:
        d = normalize_domain(".".join(domain))
        url = canonicalize(f"{scheme}://{case('.'.join(prefix + domain))}{port}/p")
    except ValueError:                      # normalize_domain's and canonicalize's (UrlError) documented refusal
        return                              # not a host name (IDNA refuses it): nothing to check
    if url is None:
        return
    host = hostname_of(url)
    r = ScopeRules(domains=(d,))
    # the reference: compare label lists
    assert (r.reason(url) is None) == (host.split(".")[-len(d.split(".")):] == d.split(".")), (url, d)


# -- --url-filter --------------------------------------------------------------------------------

def test_url_filter_first_match_wins_and_no_match_rejects(tmp_path):
    f = tmp_path / "filter.txt"
    f.write_text("# skip the excluded host\n-^https?://h003\\.test\n\n  # and the private pages\n"
                 "-/private/\n+^https?://[a-z0-9.]+\\.test(:\\d+)?/\n")
    flt = UrlFilter.from_file(str(f))
    assert [acc for acc, _ in flt.rules] == [False, False, True]
    assert flt.accepts("http://h000.test:8080/x.html")
    assert not flt.accepts("http://h003.test:8080/x.html")              # the first rule decides
    assert not flt.accepts("http://h000.test/private/x")
    assert not flt.accepts("http://elsewhere.example/")                  # no rule matches: rejected
    r = ScopeRules(url_filter=flt)
    assert r.reason("http://h000.test/private/y") == "out_of_scope_filter"
    assert r.host_reason("http://h000.test/private/y") is None           # host-level only: allowed


@pytest.mark.parametrize("text,line,what", [
    ("+ok\n*bad\n", 2, "expected +REGEX or -REGEX"),
    ("# c\n\n+(unclosed\n", 3, "bad regular expression"),
    ("+a\n-\n", 2, "empty regular expression"),
    ("-[z-a]\n", 1, "bad regular expression"),
])
def test_a_bad_filter_line_names_file_and_line(tmp_path, text, line, what):
    f = tmp_path / "f.txt"
    f.write_text(text)
    with pytest.raises(UrlFilterError) as e:
        UrlFilter.from_file(str(f))
    assert str(e.value).startswith(f"{f}:{line}: ") and what in str(e.value)


def test_filter_files_without_rules_or_unreadable(tmp_path):
    f = tmp_path / "f.txt"
    f.write_text("# nothing\n\n")
    with pytest.raises(UrlFilterError, match="no \\+REGEX or -REGEX line"):
        UrlFilter.from_file(str(f))
    with pytest.raises(UrlFilterError, match="not found"):
        UrlFilter.from_file(str(tmp_path / "missing.txt"))


_rule = st.tuples(st.booleans(), st.sampled_from(["a", "b", "^http://x", r"\.pdf$", "/p/", "q=1", "."]))


@settings(max_examples=500, deadline=None)
@given(st.lists(_rule, min_size=1, max_size=6),
       st.sampled_from(["http://x.test/a", "http://x.test/p/b.pdf", "https://y.test/?q=1", "http://z.test/"]))
def test_url_filter_equals_first_match_reference(rules, url):
    flt = UrlFilter(tuple(rules))
    expected = next((acc for acc, p in rules if re.search(p, url)), False)
    assert flt.accepts(url) == expected


def test_filter_survives_pickling_to_other_ranks():
    import pickle

    flt = UrlFilter(((False, "/x/"), (True, ".")), "f.txt")
    back = pickle.loads(pickle.dumps(ScopeRules(("test",), flt, 3)))
    assert back.url_filter.accepts("http://a.test/y") and not back.url_filter.accepts("http://a.test/x/")
    assert back.max_depth == 3 and back.domains == ("test",)


def test_seeds_outside_the_rules_are_bad_lines(tmp_path):
    f = tmp_path / "seeds.txt"
    f.write_text("http://a.test/\nhttp://b.example/\nhttp://a.test/private/\n")
    rules = ScopeRules(parse_domains("test"), UrlFilter(((False, "/private/"), (True, "."))))
    seeds, problems = read_seeds(str(f), Scope(), rules)
    assert seeds == ["http://a.test/"]
    assert [(p.lineno, "allowed-domains" in p.reason, "url-filter" in p.reason) for p in problems] == [
        (2, True, False), (3, False, True)]


# -- what travels with a URL ---------------------------------------------------------------------

_url = st.builds(lambda p: "http://a.test/" + p, st.text(alphabet="abc/%?=&._-~", max_size=20))


@settings(max_examples=500, deadline=None)
@given(_url, st.integers(0, 50), st.integers(0, 10_000), st.booleans(),
       st.sampled_from([None, ord("L"), ord("-"), ord("E"), ord("R"), ord("M")]))
@example("http://a.test/", 0, 0, False, None)
def test_url_lines_round_trip(url, hops, depth, sitemap, hop):
    """A line gives back what was sent: the hop letter of a requisite, a refresh or a sitemap's URL
    (a link's, a seed's are not sent: the owner reads a line without one as a link)."""
    line = encode_line(url, hops, depth, sitemap, hop)
    assert "\n" not in line
    sent = hop if hop in (ord("E"), ord("R"), ord("M")) and not sitemap else None
    assert decode_line(line) == (url, hops, depth, sitemap, sent)
    if not (hops or depth or sitemap or sent):
        assert line == url                  # a plain URL costs no byte more than before


def test_url_lines_written_before_depth_and_sitemaps_read_the_same():
    assert decode_line("http://a.test/x") == ("http://a.test/x", 0, 0, False, None)
    assert decode_line("http://a.test/x\t3") == ("http://a.test/x", 3, 0, False, None)
    for bad in ("http://a.test/\t1\t2\tx", "http://a.test/\tz", "http://a.test/\t1\t2\ts\t9", "u\t-1",
                "http://a.test/\t\t\tL", "http://a.test/\t\t\tEE", "http://a.test/\t\t\t"):
        with pytest.raises(ValueError):
            decode_line(bad)


# -- settings ------------------------------------------------------------------------------------

def _build(**kw):
    return CrawlConfig.build({"seeds": "s.txt", "contact": "ops@example.org", **kw})


def test_settings_of_real_web_crawling_are_checked():
    assert _build(max_depth=0).max_depth == 0
    for kw, what in [({"max_depth": -1}, "max-depth"), ({"allowed_domains": "a b"}, "allowed-domains"),
                     ({"robots_token": "My Bot"}, "robots-token"), ({"robots_token": "bot2"}, "robots-token"),
                     ({"user_agent": "Bot2000/1.0"}, "user-agent"), ({"contact": "not an address"}, "contact"),
                     ({"contact": "a@b\r\nX: y"}, "contact"), ({"proxy": "ftp://p.test:21"}, "proxy"),
                     ({"proxy": "http://"}, "proxy"), ({"user_agent": "a\nb"}, "user-agent")]:
        with pytest.raises(ConfigError, match=what):
            _build(**kw)
    assert _build(user_agent="Bot2000/1.0", robots_token="Bot").robots_token == "Bot"
    assert _build(proxy="env").proxy == "env" and _build(contact="ops@example.org").contact == "ops@example.org"


def test_the_open_web_needs_a_contact_and_the_default_user_agent_carries_it():
    """Without --resolve the crawl may reach public addresses: it refuses to start without a way
    for site operators to reach whoever runs it (exit status 2 from the CLI, naming --contact)."""
    def build(**kw):
        return CrawlConfig.build({"seeds": "s.txt", **kw})
    with pytest.raises(ConfigError, match=r"contact: a crawl that may reach public addresses \(no --resolve\).*--contact"):
        build()
    with pytest.raises(ConfigError, match="give --contact"):
        build(user_agent="MyBot/1.0")
    assert build(user_agent="Mozilla/5.0 (compatible; MyBot/1.0; +https://bot.example/about)").contact is None
    assert build(user_agent="MyBot/1.0 (ops@bot.example)").user_agent == "MyBot/1.0 (ops@bot.example)"
    cfg = build(contact="https://bot.example/about")
    assert cfg.user_agent.startswith("abc-crawler/") and cfg.user_agent.endswith(" (+https://bot.example/about)")
    from abc_crawler.config import from_header
    assert from_header(cfg) is None and from_header(build(contact="ops@bot.example")) == "ops@bot.example"
    with pytest.raises(ConfigError, match="contact: expected a URL"):
        build(contact="ftp://bot.example/")


def _crawl(tmp_path, *args, timeout=60):
    seeds = tmp_path / "seeds.txt"
    if not seeds.exists():
        seeds.write_text("http://a.test/\n")
    cmd = [str(BIN / "mpiexec"), "-n", "2", str(BIN / "abc-crawl"), str(seeds), *LAB, "--session-dir",
           str(tmp_path / "s"), "--contact", "https://abc.test/about", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_a_bad_filter_file_ends_the_crawl_with_status_2_naming_file_and_line(tmp_path):
    f = tmp_path / "filter.txt"
    f.write_text("+^http://a\\.test/\n-(\n")
    r = _crawl(tmp_path, "--url-filter", str(f))
    assert r.returncode == 2
    lines = [x for x in r.stderr.splitlines() if x.startswith("abc-crawl:")]
    assert len(lines) == 1 and lines[0].startswith(f"abc-crawl: {f}:2: bad regular expression"), r.stderr
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("args,msg", [
    (["--ca-bundle", "/nonexistent/ca.pem"], "ca-bundle: /nonexistent/ca.pem: file not found"),
    (["--proxy", "socks4://127.0.0.1:1080"], "proxy: scheme 'socks4' not supported"),
    (["--allowed-domains", "b.test"], "no usable seed URL"),
])
def test_other_bad_real_web_inputs_end_with_status_2(tmp_path, args, msg):
    r = _crawl(tmp_path, *args)
    assert r.returncode == 2 and msg in r.stderr, r.stderr


def test_proxy_env_with_an_unusable_variable_ends_with_status_2(tmp_path):
    import os

    env = dict(os.environ, https_proxy="gopher://p.test:70")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\n")
    r = subprocess.run([str(BIN / "mpiexec"), "-n", "1", str(BIN / "abc-crawl"), str(seeds), *LAB, "--session-dir",
                        str(tmp_path / "s"), "--contact", "https://abc.test/about", "--proxy", "env"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2 and "proxy env: https_proxy: scheme 'gopher' not supported" in r.stderr, r.stderr


def test_a_crawl_of_the_open_web_without_a_contact_exits_2_naming_it(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\n")
    r = subprocess.run([str(BIN / "mpiexec"), "-n", "1", str(BIN / "abc-crawl"), str(seeds), "--session-dir",
                        str(tmp_path / "s")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--contact" in r.stderr, r.stderr
    assert [x for x in r.stderr.splitlines() if x.startswith("abc-crawl:")][0].startswith("abc-crawl: contact: ")
    assert not (tmp_path / "s").exists()


# -- a leading .* is dropped from the URL filters' patterns: the same yes or no on every URL --------

from abc_crawler.web.scope import compile_search  # noqa: E402

_piece = st.sampled_from(["a", "/", "[^/]+", r"\.pdf", "$", "^", "(/[^/]+)", r"\1", "x|a", "(?=a)", r"\b", "b*",
                          "(a|/)+", "(?<=/)a", ".", ".*", ".+?", "?", r"\?", "q="])


@settings(max_examples=600, deadline=None)
@given(lead=st.sampled_from([".*", ".*?", ".*.*", ".*+", ".*{2}", ""]), body=st.lists(_piece, max_size=6).map("".join),
       url=st.text("ab/x.?=q", max_size=30).map(lambda s: "http://h.test/" + s))
def test_a_dropped_leading_dot_star_finds_the_same(lead, body, url):
    try:
        whole = re.compile(lead + body)
    except re.error:
        return
    assert bool(compile_search(lead + body).search(url)) == bool(whole.search(url)), (lead + body, url)


def test_nutchs_loop_rule_without_its_dot_star():
    """The control: the rule still rejects a URL with a repeated segment, and its compiled
    pattern no longer starts with .* (which tried every length at every start)."""
    f = UrlFilter.from_lines([r"-.*(/[^/]+)/[^/]+\1/[^/]+\1/", "+."])
    assert f._compiled[0][1].pattern == r"(/[^/]+)/[^/]+\1/[^/]+\1/"
    assert not f.accepts("http://h.test/a/b/a/c/a/d") and f.accepts("http://h.test/a/b/c/d/e/f")
