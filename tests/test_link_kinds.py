"""Every kind of link (issue 33): abc_crawler/web/parser.py against an independent reference
(tests/linkref.py: html.parser and tinycss2's tokenizer) on hand-made, generated and real pages
and style sheets; the HTTP Link and Refresh headers."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from abc_crawler.web.parser import css_links, extract_links, header_links, refresh_url, srcset_urls
from linkref import css_refs, reference

FIELDS = ("links", "nofollow", "embeds", "related", "refresh", "base", "meta_nofollow")


def _crawler(body: bytes) -> dict:
    p = extract_links(body, "utf-8")
    return {k: getattr(p, k) for k in FIELDS}


def _same(body: bytes) -> None:
    ref = reference(body)
    got = _crawler(body)
    assert got == {k: ref[k] for k in FIELDS}, body[:400]


PAGE = b"""<!DOCTYPE html><html><head>
<base href="/docs/">
<link rel="stylesheet" href="css/site.css"><link rel="icon" href="/favicon.ico">
<link rel="preload" href="font.woff2" as="font"><link rel="modulepreload" href="m.js">
<link rel="manifest" href="app.webmanifest"><link rel="canonical" href="https://a.test/docs/">
<link rel="alternate" hreflang="de" href="de/"><link rel="author" href="humans.txt">
<meta http-equiv="refresh" content="30; url=next.html">
<style>@import url("print.css") print; body { background: url(img/bg.png) } /* url(not.png) */</style>
<script src="js/app.js"></script><script>var x = "<img src=no.png>";</script>
</head><body style="background-image: url('body.jpg')">
<a href="a.html">a</a><a rel="nofollow" href="n.html">n</a><area href="m.html">
<img src="i.png" srcset="i-2x.png 2x, i-3x.png 3x"><picture><source srcset="p.webp 1x, p2.webp 2x" type="image/webp">
<img src="p.png"></picture><video src="v.mp4" poster="v.jpg"><track src="v.vtt"><source src="v.webm"></video>
<audio src="s.ogg"></audio><iframe src="frame.html"></iframe><frame src="f2.html"><embed src="e.swf">
<object data="o.svg"></object><input type="image" src="go.png"><input type="text" src="no2.png">
<div style="color: red">x</div><span style='background:url("s.gif")'>y</span>
</body></html>"""


def test_every_kind_on_a_page_made_by_hand():
    got = _crawler(PAGE)
    assert got["links"] == ["a.html", "m.html"] and got["nofollow"] == ["n.html"]
    assert got["related"] == ["https://a.test/docs/", "de/"]
    assert got["refresh"] == ["next.html"] and got["base"] == "/docs/"
    assert got["embeds"] == ["css/site.css", "/favicon.ico", "font.woff2", "m.js", "app.webmanifest", "print.css",
                             "img/bg.png", "js/app.js", "i.png", "i-2x.png", "i-3x.png", "p.webp", "p2.webp", "p.png",
                             "v.mp4", "v.jpg", "v.vtt", "v.webm", "s.ogg", "frame.html", "f2.html", "e.swf", "o.svg",
                             "go.png", "body.jpg", "s.gif"]
    _same(PAGE)
    # --no-page-requisites: no embeds, the rest unchanged
    p = extract_links(PAGE, requisites=False)
    assert p.embeds == [] and p.links == got["links"] and p.refresh == got["refresh"]


@pytest.mark.parametrize("spelling", ["url", "URL", "Url", "uRl", "urL"])
def test_style_attribute_urls_in_any_case_and_only_those(spelling):
    """The style attributes are walked only when the body says ``style`` and ``url(`` in some case:
    every spelling of ``url(`` is still found; a page whose only ``url(`` is outside any style
    attribute gives none from them."""
    body = f'<link rel=stylesheet href=a.css><p style="background: {spelling}(bg.png)">x</p>'.encode()
    assert extract_links(body).embeds == ["a.css", "bg.png"]
    assert extract_links(b'<p style="color: red">url(no.png)</p>').embeds == []


@pytest.mark.timeout(60)
def test_css_runs_without_a_closing_parenthesis_cost_linear_work():
    """A sheet (or <style>) of 400,000 ``url(`` with no ")" anywhere: every unquoted URL used to scan
    to the end of the sheet (160 KB took 72 s, this one would take hours). An unquoted URL stops at
    a "(" as CSS's url token does, so ``url(a(b).png)`` is no reference (tinycss2: a bad-url).
    White space after ``url(`` is not tried again as the white space before ")" (8,000 spaces took
    127 ms, 4x for each doubling), nor is a run of "<" in a Link header scanned once per "<"."""
    assert css_links(b"url(" * 400_000) == []
    assert css_links(b"url(" + b" " * 400_000) == css_links(b"@import" + b"\n" * 400_000) == []
    assert css_links(b"url(  " * 100_000) == []
    # the Link header: a run of "<" with no ">" (each used to scan to the end of the header)
    assert header_links("<" * 400_000 + "<n.html>; rel=next", None) == ([], ["n.html"], [])
    assert css_links(b"url( " * 100_000 + b"url(x.png)") == ["x.png"]
    assert extract_links(b"<style>" + b"url(" * 100_000 + b"</style><img src=i.png>").embeds == ["i.png"]
    sheet = b"a{background:url(a(b).png)} b{background:url(ok.png)} @import 'x.css';"
    assert css_links(sheet) == css_refs(sheet.decode()) == ["ok.png", "x.css"]


def test_css_against_tinycss2():
    css = (b'@charset "utf-8"; @import "a.css"; @import url(b.css) screen; @IMPORT \'c.css\';'
           b'.x { background: url( d.png ) no-repeat, url("e.png"), URL(\'f.png\') } /* url(g.png) */'
           b'@font-face { src: url(h.woff2) format("woff2") } .y { content: "url(i.png)" }')
    got = css_links(css)
    assert got[:6] == ["a.css", "b.css", "c.css", "d.png", "e.png", "f.png"] and "g.png" not in got
    # (a url( inside a quoted string is text to tinycss2; the crawler's scan takes it: one more fetch,
    # never a missed one)
    assert [u for u in got if u != "i.png"] == css_refs(css.decode())


@pytest.mark.parametrize("value,want", [("a.png 1x, b.png 2x", ["a.png", "b.png"]), ("a.png", ["a.png"]),
                                        ("a.png 100w,b.png 200w", ["a.png", "b.png"]),
                                        ("data:image/png;base64,AAA 1x", ["data:image/png;base64,AAA"]),
                                        (" , a.png , ", ["a.png"]), ("x.png (1) 1x, y.png", ["x.png", "y.png"])])
def test_srcset(value, want):
    assert srcset_urls(value) == want


def test_headers():
    assert header_links('<s.css>; rel="stylesheet", <i.png>; rel="icon"; type="image/png", </n>; rel="next"',
                        None) == (["s.css", "i.png"], ["/n"], [])
    assert header_links(None, "5;URL=http://a.test/x") == ([], [], ["http://a.test/x"])
    assert header_links('<x>; rel="author"', "10") == ([], [], [])
    assert refresh_url('0; url="q.html"') == "q.html"


_url = st.sampled_from(["a.png", "/b.css", "c d.js", "http://h.test/e", "f.html?x=1&y=2", "&amp;g", " h ", "", "#i"])
_rel = st.sampled_from(["stylesheet", "icon", "Stylesheet", "canonical", "alternate stylesheet", "nofollow", "next",
                        "author", "preload", "shortcut icon"])


def _el(kind, url, url2, rel):
    q = url.replace('"', "")
    return {
        "a": f'<a href="{q}">t</a>', "anf": f'<a rel="nofollow" href="{q}">t</a>', "link": f'<link rel="{rel}" href="{q}">',
        "img": f'<img src="{q}" srcset="{url2} 1x, {q} 2x">', "script": f'<script src="{q}"></script>',
        "iframe": f'<iframe src="{q}"></iframe>', "object": f'<object data="{q}"></object>',
        "style": f"<style>.a {{ background: url('{q}') }} @import \"{url2}\";</style>",
        "sattr": f'<div style="background:url({url2})">x</div>',
        "meta": f'<meta http-equiv="refresh" content="1; url={q}">', "video": f'<video src="{q}" poster="{url2}"></video>',
        "text": "<p>text</p>", "base": f'<base href="{q}">',
    }[kind]


_kind = st.sampled_from(["a", "anf", "link", "img", "script", "iframe", "object", "style", "sattr", "meta", "video",
                         "text", "base"])
_doc = st.lists(st.builds(_el, _kind, _url, _url.filter(lambda u: u.strip() and " " not in u and "#" not in u),
                          _rel), max_size=25)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=_doc)
def test_generated_pages_against_the_reference(parts):
    _same(("<!DOCTYPE html><html><head></head><body>" + "".join(parts) + "</body></html>").encode())


def _corpus(n=250):
    shipped = sorted((Path(__file__).parent / "data" / "corpus").rglob("*.html.gz"))
    pages = [gzip.decompress(p.read_bytes()) for p in shipped]
    roots = ["/usr/share/doc/python3/html", "/usr/share/doc/python3.11/html", "/usr/share/doc/git-doc",
             "/usr/share/doc/valgrind/html", "/usr/share/doc/nodejs/api"]
    files = []
    for r in roots:
        if Path(r).is_dir():
            files += sorted(p for p in Path(r).rglob("*.html") if p.is_file())
    step = max(1, len(files) // n)
    return pages + [f.read_bytes() for f in files[::step][:n]]


def test_real_pages_against_the_reference():
    pages = _corpus()
    assert len(pages) >= 45
    embeds = 0
    for body in pages:
        _same(body)
        embeds += len(extract_links(body).embeds)
    assert embeds > len(pages)          # real pages have requisites, and they are found


def test_real_style_sheets_against_tinycss2():
    # the shipped sample (tests/data/css: Debian's python3 and nodejs documentation) and what else
    # this machine has
    sheets = sorted((Path(__file__).parent / "data" / "css").glob("*.css.gz"))
    assert len(sheets) >= 3, "the shipped style sheets (tests/data/css) are missing"
    sheets += sorted(Path("/usr/share/doc").rglob("*.css"))[:200]
    refs = 0
    for f in sheets:
        data = gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_bytes()
        text = data.decode("utf-8", "replace")
        assert css_links(data) == css_refs(text), f
        refs += len(css_refs(text))
    assert refs > 0
