"""The two ways :func:`extract_links` reads a page give the same: libxml2's parse with no tree built
(lxml's parser target; ``<style>`` elements' text read from the bytes) and the walk over a parsed
tree (``_tree_walk``, which a page takes whose style text the bytes cannot vouch for). Every field of the
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


#: <style> elements and their look-alikes, for the tree-less path's reading of their text from the bytes
_STYLES = [
    "<style>p{background:url(p.png)}</style>", "<style type='text/css' media=\"all\">q{background:url(q.png)}</style>",
    "<style media='x>y'>m{background:url(m.png)}</style>", "<style a\"b>n{background:url(n.png)}</style>",
    "<!-- <style>c{background:url(c.png)}</style> -->", "<style>/* <style> */ d{background:url(d.png)}</style>",
    "<style>e{background:url(e.png)}</style x>f{background:url(f.png)}</style>",
    "<style>g{background:url(g.png)}</styles>h{background:url(h.png)}</style>",
    "<style>i{background:url(\u00e9.png)}</style>", "<style>j{background:url('cr\r\nlf.png')}</style>",
    "<style>k{background:url('nul\x00.png')}</style>", "<style/>l{background:url(l.png)}</style>",
    "<style\tmedia=all>t{background:url(t.png)}</style>", "<style\x0b>v{background:url(v.png)}</style>",
    "<style>@import 'imp.css'; u{background:url(u.png)}", "<style></style>", "<style>x{}</STYLE >",
    "<svg><style>s{fill:url(#g)}</style></svg>", "<textarea><style>w{background:url(w.png)}</style></textarea>",
    "<title><style>y{background:url(y.png)}</style></title>", "<noscript><style>z{background:url(z.png)}</style>"
    "</noscript>", "<script>'<style>'</script>", "<a title='<style>'>", "<plaintext><style>", "<xmp><style></xmp>",
    "<meta charset=utf-7>", "<meta charset=' UTF-8 '>", "<meta charset=shift_jis>", "<meta charset=x-bogus>",
    "<meta http-equiv=Content-Type content='text/html; charset=iso-2022-jp'>",
    "<meta http-equiv=content-type content='text/html;charset=\"windows-1252\"'>",
    "<?xml version='1.0' encoding='utf-8'?>", "\x1b$B", "<meta http-equiv=Content-Type content=text/html>",
    "<style", "<style ", "<style media=x",
]

_piece = st.one_of(
    st.builds(_open_tag, _tag, st.lists(_attr, max_size=4), st.booleans()),
    st.builds(lambda n: f"</{n}>", _tag),
    st.sampled_from(["text", "<!-- <a href=c.html> -->", "<?pi x?>", "&", "<", ">", "\u00e9", "\x00",
                     "<meta charset=latin-1>", "<!DOCTYPE html>", "<html>", "</html>", "<head>", "<body>",
                     "<script>var a='<a href=s.html><style>';</script>", "<textarea><img src=t.png></textarea>",
                     "<Style>p{background:url(st.png)}</Style>", "<sTyLe>@import 'i.css';</sTyLe>",
                     "<STYLE>b{background:url(S.png)}</STYLE>", "<style>a{}</style>"]),
    st.sampled_from(_STYLES),
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
@example(text="".join(_STYLES), enc="utf-8", charset=None)
@example(text="<img src=a><style>b{background:url(b)}</style><img src=c><STYLE>d{background:url(d)}</STYLE>"
              "<img src=e>", enc="latin-1", charset="iso-8859-1")
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


def test_style_text_is_read_from_the_bytes_without_a_tree(monkeypatch):
    # pages with <style> elements take the tree-less path when their bytes can be read as ASCII's,
    # the style's links in document order among the other embeds
    def no_tree(*a):
        raise AssertionError("parsed into a tree")

    pages = [
        (b'<?xml version="1.0" encoding="UTF-8"?>\r\n<html><head><meta http-equiv="Content-Type" '
         b'content="application/xhtml+xml; charset=UTF-8" />\r\n<link rel=stylesheet href=a.css>'
         b'<style type="text/css">\r\nb { background: url("b\r\n.png") }\r\n</style></head><body>'
         b'<img src=c.png><STYLE media=print>@import "d.css";</STYLE ><a href=n>n</a>', None,
         ["a.css", "b\n.png", "c.png", "d.css"]),
        (b"<meta charset=latin-1><style>x{background:url(e.png)}</style><img src=f.png>", "iso8859-1",
         ["e.png", "f.png"]),
        (b"<meta charset=shift_jis><style></style><img src=g.png><style>y{}</style>", None, ["g.png"]),
        (b"<meta http-equiv=content-type content=text/html><style>h{background:url(h.png)}</style>", "utf-8",
         ["h.png"]),
    ]
    want = [P._tree_walk(b, enc, True) for b, enc, _ in pages]
    monkeypatch.setattr(P, "_tree_walk", no_tree)
    for (body, enc, embeds), w in zip(pages, want):
        got = extract_links(body, enc)
        assert got.embeds == embeds and _fields(got) == _fields(w)


def test_style_text_the_bytes_cannot_vouch_for_is_read_from_the_tree(monkeypatch):
    trees = []
    real = P._tree_walk
    monkeypatch.setattr(P, "_tree_walk", lambda *a: trees.append(a[0]) or real(*a))
    style = b"<style>x{background:url(s.png)}</style><img src=i.png>"
    cases = [
        b"<!-- <style> -->" + style,                               # a <style that is text: one too many
        b"<style/>" + style,                                       # libxml2 closes <style/> at once
        b"<style media='a>b'>" + style,                            # not a plain tag
        b"<meta charset=utf-7>" + style,                           # a charset whose ASCII is not ASCII
        b"<meta http-equiv=content-type content='text/html; charset=iso-2022-jp'>" + style,
        b"<?xml version='1.0' encoding='cp037'?>" + style,
        b"<style>x{background:url(\xc3\xa9.png)}</style>",         # not ASCII
        b"<style>y{background:url(u.png)}",                        # no end
    ]
    for body in cases:
        before = len(trees)
        got = extract_links(body)
        assert len(trees) == before + 1, body
        assert _fields(got) == _fields(real(body, None, True))
    assert extract_links(style, "utf-16").embeds == real(style, "utf-16", True).embeds


def test_the_links_of_many_style_elements_keep_document_order():
    # each style's links go where it was met, in one merge (an insertion per style made the page
    # quadratic: 200,000 styles took 7.7 s where 50,000 took 0.9; the merge 2.6 and 0.6)
    n = 20_000
    body = b"<style>a{background:url(x.png)}</style><img src=i.png>" * n
    p = extract_links(body)
    assert p.embeds == ["x.png", "i.png"] * n
