"""robots.txt by RFC 9309 (abc_crawler.net.robots): the product token, group matching, the 500 KiB
limit, redirects, failures that give a host up at once, Sitemap lines."""
from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings, strategies as st

from abc_crawler.net import robots
from abc_crawler.net.robots import MAX_PARSE_BYTES, MAX_REDIRECTS, RobotsCache, RobotsRules, redirect_target, robots_token

BROWSER_UA = "Mozilla/5.0 (compatible; MyBot/1.0; +https://bot.example/about)"


def test_doctests():
    assert doctest.testmod(robots).failed == 0


@pytest.mark.parametrize("ua,token", [
    (BROWSER_UA, "MyBot"),
    ("Mozilla/5.0 (compatible;MyBot/2.1)", "MyBot"),
    ("Mozilla/5.0 (Compatible ; my_bot ; +http://x)", "my_bot"),
    ("Mozilla/5.0 (X11; Linux x86_64) (compatible; Other-Bot/3)", "Other-Bot"),
    ("Mozilla/5.0 (X11; Linux x86_64)", "Mozilla"),
    ("abc-crawler/0.1", "abc-crawler"),
    ("abc-crawler/0.1 (+mailto:ops@example.org)", "abc-crawler"),
    ("Googlebot", "Googlebot"),
])
def test_product_token_from_the_user_agent(ua, token):
    assert robots_token(ua) == token


def test_the_browser_style_agent_obeys_its_own_group_not_mozilla():
    # the case: a group for the crawler's token and a looser * group (and a Mozilla group)
    body = (b"User-agent: *\nDisallow: /private/\n\n"
            b"User-agent: Mozilla\nDisallow: /\n\n"
            b"User-agent: mybot\nDisallow: /private/\nDisallow: /tmp/\nDisallow: /d1/\n")
    rc = RobotsCache(BROWSER_UA)
    rc.on_response("h.test", 200, body, 0.0)
    assert rc.agent == "MyBot" and rc.get("h.test").rules.group == "mybot"
    assert not rc.allowed("h.test", "http://h.test/d1/p.html") and not rc.allowed("h.test", "http://h.test/tmp/x")
    assert rc.allowed("h.test", "http://h.test/d2/p.html")
    # the control: the old token (the text before the first "/") is matched on the Mozilla group
    old = RobotsCache("Mozilla")
    old.on_response("h.test", 200, body, 0.0)
    assert not old.allowed("h.test", "http://h.test/d2/p.html")


@pytest.mark.parametrize("body,token,url,allowed", [
    # a user-agent value is its leading token chars, compared whole and case-insensitively
    (b"User-agent: MyBot/2.0\nDisallow: /a\n", "mybot", "/a", False),
    (b"User-agent: MYBOT\nDisallow: /a\n", "mybot", "/a", False),
    (b"User-agent: My\nDisallow: /a\n", "mybot", "/a", True),              # not a prefix match
    (b"User-agent: MyBotX\nDisallow: /a\n", "mybot", "/a", True),
    (b"User-agent: MyBot MyOther\nDisallow: /a\n", "mybot", "/a", False),  # first token of the value
    # groups: consecutive user-agent lines share one; all groups naming the token are combined
    (b"User-agent: x\nUser-agent: mybot\nDisallow: /a\n", "mybot", "/a", False),
    (b"User-agent: mybot\nDisallow: /a\n\nUser-agent: x\nDisallow: /b\n\nUser-agent: mybot\nDisallow: /b\n",
     "mybot", "/b", False),
    # the token's groups replace *, combined * groups apply otherwise
    (b"User-agent: *\nDisallow: /a\n\nUser-agent: mybot\nDisallow: /b\n", "mybot", "/a", True),
    (b"User-agent: *\nDisallow: /a\n\nUser-agent: x\nDisallow: /\n\nUser-agent: *\nDisallow: /b\n", "mybot", "/b", False),
    # rules before any user-agent line are ignored; Sitemap lines do not end a group
    (b"Disallow: /a\nUser-agent: *\nAllow: /\n", "mybot", "/a", True),
    (b"User-agent: x\nSitemap: http://h.test/s.xml\nUser-agent: mybot\nDisallow: /a\n", "mybot", "/a", False),
    # a user-agent line after a rule opens a new group
    (b"User-agent: mybot\nDisallow: /a\nUser-agent: x\nDisallow: /b\n", "mybot", "/b", True),
    # longest match wins, Allow on a tie; wildcards and $
    (b"User-agent: *\nDisallow: /a\nAllow: /a/b\n", "mybot", "/a/b/c", True),
    (b"User-agent: *\nDisallow: /a/b\nAllow: /a\n", "mybot", "/a/b/c", False),
    (b"User-agent: *\nDisallow: /*.pdf$\n", "mybot", "/x/y.pdf", False),
    (b"User-agent: *\nDisallow: /*.pdf$\n", "mybot", "/x/y.pdf?z", True),
    # sloppy files: no colon, comments, BOM, CRLF
    (b"\xef\xbb\xbfUser-agent: *\r\nDisallow /a # comment\r\n", "mybot", "/a", False),
    (b"<html><body>not a robots file</body></html>", "mybot", "/a", True),
])
def test_group_matching(body, token, url, allowed):
    assert RobotsRules.parse(body, token).allowed("http://h.test" + url) is allowed


# A reference of RFC 9309's selection and matching for files of plain prefixes (no * or $):
# the groups naming the token (else the * groups) combined, longest matching path wins, Allow on a tie.
def _reference(groups, token, path):
    chosen = [g for g in groups if token in g[0]] or [g for g in groups if "*" in g[0]]
    best = None
    for _, rules in chosen:
        for allow, p in rules:
            if p and path.startswith(p):
                key = (len(p), allow)
                best = key if best is None or key > best else best
    return True if best is None else best[1]


_agents = st.lists(st.sampled_from(["*", "mybot", "MyBot/1.0", "other", "my"]), min_size=1, max_size=2)
_rules = st.lists(st.tuples(st.booleans(), st.sampled_from(["", "/", "/a", "/a/", "/a/b", "/b", "/ab"])), max_size=4)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(_agents, _rules), max_size=4), st.sampled_from(["/", "/a", "/a/b/c", "/ab", "/b/x", "/c"]))
def test_selection_and_matching_equal_the_rfc_reference(groups, path):
    text = []
    norm = []
    for agents, rules in groups:
        text += [f"User-agent: {a}" for a in agents]
        # every group needs a rule line, or the next group's user-agent lines would join it
        lines = [f"{'Allow' if allow else 'Disallow'}: {p}" for allow, p in rules] or ["Disallow:"]
        text += lines + [""]
        names = {"*" if a == "*" else a.split("/")[0].lower() for a in agents}
        norm.append((names, rules))
    rules = RobotsRules.parse("\n".join(text).encode(), "mybot")
    assert rules.allowed("http://h.test" + path) == _reference(norm, "mybot", path), "\n".join(text)


def test_only_the_first_500_kib_are_parsed():
    pad = b"# " + b"x" * 1000 + b"\n"
    n = MAX_PARSE_BYTES // len(pad)
    before = b"User-agent: *\n" + pad * (n - 2) + b"Disallow: /a\n"
    after = b"User-agent: *\n" + pad * (n + 2) + b"Disallow: /a\n"
    assert len(before) <= MAX_PARSE_BYTES < len(after)
    assert not RobotsRules.parse(before, "mybot").allowed("http://h.test/a")
    assert RobotsRules.parse(after, "mybot").allowed("http://h.test/a")
    # a line cut by the limit is dropped whole, not read as a shorter rule
    cut = b"User-agent: *\n" + b"#" * (MAX_PARSE_BYTES - 14 - 8) + b"\nDisallow: /abcdef\n"
    assert RobotsRules.parse(cut, "mybot").allowed("http://h.test/ab")


def test_crawl_delay_of_the_chosen_groups_and_sitemaps():
    body = (b"Sitemap: http://h.test/s1.xml\nUser-agent: *\nCrawl-delay: 9\n\nUser-agent: mybot\nCrawl-delay: 1.5\n"
            b"Disallow: /x\n\nUser-agent: mybot\nCrawl-delay: nan\nCrawl-delay: 2\nSitemap: http://h.test/s2.xml.gz\n")
    r = RobotsRules.parse(body, "mybot")
    assert r.crawl_delay == 2.0 and r.sitemaps == ["http://h.test/s1.xml", "http://h.test/s2.xml.gz"]
    rc = RobotsCache("mybot")
    rc.on_response("h.test", 200, body, 0.0)
    assert rc.get("h.test").crawl_delay == 2.0
    assert rc.take_sitemaps("h.test") == r.sitemaps and rc.take_sitemaps("h.test") == []
    rc.adopt("g.test", 200, body, 0.0)                 # another rank fetched it and routes its sitemaps
    assert rc.take_sitemaps("g.test") == []


def test_redirects_are_followed_five_times_then_unavailable():
    rc = RobotsCache("mybot")
    for i in range(MAX_REDIRECTS):
        assert rc.next_hop("h.test", f"https://h.test/r{i}") == f"https://h.test/r{i}"
    assert rc.next_hop("h.test", "https://h.test/r6") is None          # the sixth is not followed
    rc.on_response("h.test", 301, b"", 0.0)                            # ... and the 3xx means unavailable
    assert rc.get("h.test").state == "ready" and rc.allowed("h.test", "http://h.test/anything")
    assert rc.redirects == MAX_REDIRECTS
    # an answer resets the count: the next chain may have five again
    rc.on_response("g.test", 200, b"", 0.0)
    assert all(rc.next_hop("g.test", "https://g.test/") for _ in range(MAX_REDIRECTS))


def test_redirect_targets_must_be_http_and_in_scope():
    in_scope = lambda u: u.startswith(("http://h.test", "https://h.test"))  # noqa: E731
    assert redirect_target("http://h.test/robots.txt", "https://h.test/robots.txt", in_scope) == "https://h.test/robots.txt"
    assert redirect_target("http://h.test/robots.txt", "/r.txt", in_scope) == "http://h.test/r.txt"
    assert redirect_target("http://h.test/robots.txt", "http://169.254.169.254/", in_scope) is None
    assert redirect_target("http://h.test/robots.txt", "file:///etc/passwd", in_scope) is None
    assert redirect_target("http://h.test/robots.txt", "http://u:p@h.test/", in_scope) is None
    assert redirect_target("http://h.test/robots.txt", None, in_scope) is None


@pytest.mark.parametrize("error,dead", [("address_refused", True), ("tls_unknown_issuer", True),
                                        ("tls_hostname_mismatch", True), ("timeout", False), ("dns_failed", False)])
def test_failures_no_retry_mends_give_the_host_up_at_once(error, dead):
    rc = RobotsCache("mybot", retry_seconds=1.0)
    rc.on_response("h.test", 0, b"", 0.0, error=error)
    h = rc.get("h.test")
    assert (h.state == "dead") is dead
    assert h.reason == (error if dead else "robots_unavailable")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.sampled_from(["mybot", "abc-crawler", "x"]))
def test_parsing_never_fails(body, token):
    r = RobotsRules.parse(body, token)
    assert isinstance(r.allowed("http://h.test/a/b?c"), bool) and r.crawl_delay >= 0
