"""The two ways :func:`extract_links` reads a page give the same: libxml2's parse with no tree built
(lxml's parser target, every page without ``<style>`` elements) and the walk over a parsed tree
(``_tree_walk``, which a page with ``<style>`` elements takes for their text). Every field of the
result, with and without requisites, on generated markup, real documentation pages and the cases
where the tree-less path has to hand a page over."""
from __future__ import annotations

import threading

from hypothesis import HealthCheck, example, given, settings, strategies as st

from abc_crawler.web import parser as P
from abc_crawler.web.parser import charset_of, extract_links

from test_parser_robots import _corpus_sample, _open_tag


def _fields(p) -> tuple:
    return p.ok, p.base, p.links, p.nofollow, p.meta_nofollow, p.embeds, p.related, p.refresh


def _same(body: bytes, encoding: str | None = None) -> None:
    for requisites in (True, False):
        got = extract_links(body, encoding, requisites=requisites)
        enc = None if body[:3] == b"\xef\xbb\xbf" or body[:2] in (b"\xff\xfe", b"\xfe\xff") else encoding
        want = P._tree_walk(body, enc, requisites) if body.strip() else P.ParsedPage(ok=False)
        assert _fields(got) == _fields(want), (requisites, body[:400])


_value = st.sampled_from([
    "x.html", "", " ", " /d/ ", "a.png 1x, b.png 2x", "c.png,d.png 100w", "image", "IMAGE", "text",
    "stylesheet", "StyleSheet icon", "canonical", "next", "nofollow", "NoFollow x", "robots", "ROBOTS",
    "noindex, NOFOLLOW", "none", "refresh", "Refresh", "0; url=r.html", "5", "color: red",
    "background: url(s.png)", "BACKGROUND: URL('t.png')", "background:url&#40;u.png)", "url(", "url()",
    "x url(v.png) url(w.png)", "&amp;q=1", "#f", "\u00e9t\u00e9.png", "javascript:v()"])
_attr = st.tuples(st.sampled_from(["href", "HREF", "rel", "src", "SRC", "srcset", "style", "STYLE", "StYlE",
                                   "type", "poster", "data", "name", "content", "http-equiv", "id"]),
                  _value, st.sampled_from(["'", '"', ""]))
_tag = st.sampled_from(["a", "A", "area", "base", "meta", "link", "LINK", "img", "source", "video", "audio",
                        "track", "script", "iframe", "frame", "embed", "object", "input", "div", "p", "span",
                        "head", "body", "svg", "svg:a", "table", "td", "noscript", "template", "title"])


_piece = st.one_of(
    st.builds(_open_tag, _tag, st.lists(_attr, max_size=4), st.booleans()),
    st.builds(lambda n: f"</{n}>", _tag),
    st.sampled_from(["text", "<!-- <a href=c.html> -->", "<?pi x?>", "&", "<", ">", "\u00e9", "\x00",
                     "<meta charset=latin-1>", "<!DOCTYPE html>", "<html>", "</html>", "<head>", "<body>",
                     "<script>var a='<a href=s.html><style>';</script>", "<textarea><img src=t.png></textarea>",
                     "<Style>p{background:url(st.png)}</Style>", "<sTyLe>@import 'i.css';</sTyLe>",
                     "<STYLE>b{background:url(S.png)}</STYLE>", "<style>a{}</style>"]),
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.lists(_piece, max_size=50).map("".join), enc=st.sampled_from(["utf-8", "latin-1", "utf-16"]),
       charset=st.sampled_from([None, "utf-8", "iso-8859-1", "utf-16", "bogus"]))
@example(text="<a href=a>1</a><meta name=Robots content='NOINDEX, NoFollow'><a href=b rel=nofollow>",
         enc="utf-8", charset=None)
@example(text="<base><base href=''><base href='/b/'><a href>x</a><area href=m rel=NOFOLLOW>", enc="utf-8",
         charset=None)
@example(text="<html><body><a href=a></body></html><a href=b><img src=c><Style>x{background:url(d)}</Style>",
         enc="utf-8", charset=None)
def test_the_two_paths_agree_on_generated_markup(text, enc, charset):
    _same(text.encode(enc, "replace"), charset_of(f"text/html; charset={charset}") if charset else None)


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=2000))
def test_the_two_paths_agree_on_random_bytes(body):
    _same(body)


def test_the_two_paths_agree_on_real_pages():
    bodies = _corpus_sample(300)
    styled = sum(b"<style" in b.lower() for b in bodies)
    assert len(bodies) >= 45 and styled < len(bodies)    # most of them take the tree-less path
    for body in bodies:
        _same(body)
        _same(body, "utf-8")


def test_a_style_element_the_byte_test_misses_sends_the_page_to_the_tree():
    # <Style> (no "<style"/"<STYLE" in the bytes), and UTF-16, whose bytes hide every tag
    body = b"<a href=x>1</a><Style>p { background: url(s.png) }</Style><img src=i.png>"
    for b in (body, b"\xff\xfe" + body.decode().encode("utf-16-le")):
        p = extract_links(b)
        assert (p.links, p.embeds) == (["x"], ["s.png", "i.png"])       # in document order
        assert extract_links(b, requisites=False).embeds == []


def test_style_attributes_in_any_case_and_with_a_character_reference():
    body = (b"<div StYlE='background: URL(a.png)'></div><p style='x:url&#40;b.png)'>"
            b"<a href=n style='background:url(c.png)'>n</a>")
    assert extract_links(body).embeds == ["a.png", "b.png", "c.png"]      # tree-less
    assert extract_links(body + b"<style></style>").embeds == ["a.png", "b.png", "c.png"]   # the tree


def test_a_document_without_elements_is_not_parsed_ok_either_way():
    for body in (b"<!-- only a comment -->", b"<?pi x?>", b"<!DOCTYPE html>"):
        assert extract_links(body).ok is P._tree_walk(body, None, True).ok is False
    assert extract_links(b"text").ok and extract_links(b"<p>").ok


def test_threads_do_not_share_a_walk():
    bodies = [b"".join(b"<a href=t%d-%d.html>x</a><img src=i%d-%d.png>" % (t, i, t, i) for i in range(300))
              for t in range(4)]
    want = [extract_links(b) for b in bodies]
    bad = []

    def work(t):
        for _ in range(30):
            got = extract_links(bodies[t])
            if _fields(got) != _fields(want[t]):
                bad.append(t)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not bad and all(len(w.links) == 300 for w in want)


def test_a_page_nested_deeper_than_the_trees_limit_is_read_to_its_end():
    # libxml2 stops building a tree 256 elements deep (what follows was lost); the tree-less path
    # reads on, linearly
    body = b"<a href=first>" + b"<div>" * 300 + b"<a href=deep>" + b"</div>" * 300 + b"<a href=after>"
    assert extract_links(body).links == ["first", "deep", "after"]
    assert P._tree_walk(body, None, True).links == ["first"]
    assert extract_links(b"<span>" * 200_000 + b"<img src=i.png>").embeds == ["i.png"]
