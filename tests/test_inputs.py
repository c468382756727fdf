"""Settings, the resolve list and the seeds file: clear errors naming the bad input."""
import pytest

from abc_crawler.config import CrawlConfig
from abc_crawler.exceptions import ConfigError, ResolveError, SeedError
from abc_crawler.web.scope import Scope, read_seeds, url_endpoint


def test_defaults_and_cli_override(tmp_path):
    toml = tmp_path / "c.toml"
    toml.write_text('max-pages = 50\nconcurrency = 4\nseeds = "from-toml.txt"\nrobots = false\ncontact = "ops@example.org"\n')
    cfg = CrawlConfig.build({"seeds": None, "concurrency": "8"}, str(toml))
    assert cfg.seeds == "from-toml.txt"
    assert cfg.max_pages == 50 and cfg.concurrency == 8 and cfg.robots is False
    assert cfg.superstep_pages == 256


@pytest.mark.parametrize("values,msg", [
    ({"concurrency": "x"}, "concurrency: expected int"),
    ({"superstep_seconds": "-1"}, "superstep-seconds: must be >="),
    ({"max_pages": 0}, "max-pages: must be >= 1"),
    ({"assign": "bogus"}, "assign: expected hash, site-hash"),
    ({"bucket_columns": 200, "contact": "ops@example.org"}, "bucket-columns: must be a prime"),
    ({"bucket_columns": 1, "contact": "ops@example.org"}, "bucket-columns: must be a prime"),
])
def test_bad_values_name_the_setting(values, msg):
    with pytest.raises(ConfigError, match=msg):
        CrawlConfig.build({"seeds": "s.txt", **values})


def test_a_resumed_sessions_settings_are_not_refused_by_a_check_added_since():
    """--bucket-columns had to be a prime only in the docs when older sessions began: resuming one
    that did not keep to it goes on."""
    values = {"seeds": "s.txt", "bucket_columns": 200, "contact": "ops@example.org"}
    assert CrawlConfig.build(values, resumed=True).bucket_columns == 200


def test_unknown_toml_key_is_an_error(tmp_path):
    toml = tmp_path / "c.toml"
    toml.write_text("max_pagez = 3\n")
    with pytest.raises(ConfigError, match="unknown setting 'max_pagez'"):
        CrawlConfig.build({"seeds": "s"}, str(toml))


def test_missing_seeds_setting():
    with pytest.raises(ConfigError, match="no seeds file"):
        CrawlConfig.build({})


def test_resolve_file(tmp_path):
    p = tmp_path / "r.txt"
    p.write_text("A.test:8080:127.0.0.1\n\n# x\nb.test:80:127.0.0.2\n")
    s = Scope.from_file(str(p))
    assert s.hosts == {"a.test:8080", "b.test"}
    assert s.curl_resolve == ["a.test:8080:127.0.0.1", "b.test:80:127.0.0.2"]
    assert s.endpoints == {"a.test:8080", "b.test:80"}
    assert Scope().allows_url("http://anything.example/") and Scope().allows_url("https://x.example:1/")
    assert not Scope().allows_url("ftp://anything.example/")


def test_scope_is_per_endpoint_not_per_name():
    """B1: a name listed for port 80 must not admit https:// (port 443): curl would resolve it itself."""
    from abc_crawler.net.fetcher import Fetcher, ScopeViolation
    from abc_crawler.web.urls import canonicalize

    s = Scope.from_lines(["cmake.org:80:127.0.0.1", "docs.test:8080:127.0.0.1"])
    assert s.allows_url(canonicalize("http://cmake.org/x"))
    assert s.allows_url(canonicalize("HTTP://CMAKE.ORG:80/x"))
    assert not s.allows_url(canonicalize("https://cmake.org/x"))
    assert not s.allows_url(canonicalize("http://cmake.org:8080/x"))
    assert s.allows_url(canonicalize("https://cmake.org:80/x"))          # port 80 is listed: curl connects there
    assert s.allows_url(canonicalize("http://docs.test:8080/"))
    assert not s.allows_url(canonicalize("http://docs.test/")) and not s.allows_url(canonicalize("https://docs.test/"))
    # answers are cached per origin: asking again, in any order, gives the same answers
    for u in ["http://cmake.org/y", "https://cmake.org/y", "http://docs.test:8080/z", "http://docs.test/z",
              "http://cmake.org", "http://cmake.org:8080/"] * 2:
        assert s.allows_url(u) == (url_endpoint(u) in s.endpoints), u
    f = Fetcher(scope=s, user_agent="t", timeout=1, connect_timeout=1, max_body_bytes=1000)
    try:
        with pytest.raises(ScopeViolation, match="not in the resolve list"):
            f.submit(1, "https://cmake.org/x")
        assert f.in_flight == 0 and f.requests == 0
    finally:
        f.close()


@pytest.mark.parametrize("line,msg", [("a.test:127.0.0.1", "expected HOST:PORT:ADDR"),
                                      ("a.test:99999:127.0.0.1", "bad host or port"),
                                      ("a.test:80:localhost", "'localhost' is not an IP address")])
def test_bad_resolve_lines(tmp_path, line, msg):
    p = tmp_path / "r.txt"
    p.write_text(f"ok.test:80:127.0.0.1\n{line}\n")
    with pytest.raises(ResolveError, match=f"r.txt:2: {msg}"):
        Scope.from_file(str(p))


def test_seeds_report_each_bad_line_once(tmp_path):
    p = tmp_path / "seeds.txt"
    p.write_text("\n# comment\nhttp://a.test:8080/\ngarbage\nftp://a.test/\nhttp://out.example/\n"
                 "HTTP://A.test:8080/#x\nhttp://a.test:8080/p\n")
    scope = Scope.from_lines(["a.test:8080:127.0.0.1"])
    seeds, problems = read_seeds(str(p), scope)
    assert seeds == ["http://a.test:8080/", "http://a.test:8080/p"]
    assert [str(x) for x in problems] == [
        f"{p}:4: not an absolute URL: 'garbage'",
        f"{p}:5: unsupported scheme 'ftp' (only http and https)",
        f"{p}:6: out.example:80 is not in the resolve list (out of scope)",
    ]


def test_missing_and_empty_seeds(tmp_path):
    with pytest.raises(SeedError, match="seeds file not found"):
        read_seeds(str(tmp_path / "nope.txt"), Scope())
    empty = tmp_path / "e.txt"
    empty.write_text("\n# only a comment\n")
    with pytest.raises(SeedError, match="no usable seed URL"):
        read_seeds(str(empty), Scope())
