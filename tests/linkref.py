"""An independent reference for link extraction (issue 33): the standard library's
``html.parser`` for HTML and ``tinycss2``'s tokenizer for CSS, written from the rules of
docs (README "Page requisites"), not from abc_crawler/web/parser.py.

``reference(body)`` -> ``{"links", "nofollow", "embeds", "related", "refresh", "base"}``.
"""
from __future__ import annotations

import re
from html.parser import HTMLParser

import tinycss2

EMBED_RELS = {"stylesheet", "icon", "shortcut", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon",
              "preload", "modulepreload", "manifest"}
NAV_RELS = {"canonical", "alternate", "next", "prev", "previous"}
SRC = {"img", "script", "iframe", "frame", "embed", "source", "video", "audio", "track"}


def css_refs(text: str) -> list[str]:
    """``url()`` tokens, ``url("...")`` functions and ``@import "..."`` of a style sheet, in order."""
    out: list[str] = []

    def walk(tokens, at_import=False):
        for t in tokens:
            if t.type == "url":
                if t.value.strip():
                    out.append(t.value.strip())
            elif t.type == "function" and t.lower_name == "url":
                strings = [a for a in t.arguments if a.type == "string"]
                if strings and strings[0].value.strip():
                    out.append(strings[0].value.strip())
            elif t.type == "at-keyword" and t.lower_value == "import":
                at_import = True
            elif at_import and t.type == "string":
                if t.value.strip():
                    out.append(t.value.strip())
                at_import = False
            elif at_import and t.type not in ("whitespace", "comment"):
                at_import = False
            if t.type in ("() block", "[] block", "{} block"):
                walk(t.content)
            elif t.type == "function" and t.lower_name != "url":
                walk(t.arguments)

    walk(tinycss2.parse_component_value_list(text, skip_comments=True))
    return out


def srcset(value: str) -> list[str]:
    """HTML's srcset candidates, URL parts only (a simpler reading: split the descriptor-bearing list)."""
    out = []
    pos = 0
    while pos < len(value):
        m = re.compile(r"[\s,]*(\S*)").match(value, pos)
        url = m.group(1)
        pos = m.end()
        if not url:
            break
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            depth = 0
            while pos < len(value) and (depth or value[pos] != ","):
                depth = depth + (value[pos] == "(") - (value[pos] == ")" and depth > 0)
                pos += 1
        if url:
            out.append(url)
    return out


def refresh_target(content: str) -> str | None:
    m = re.match(r"\s*[\d.]*\s*[;,]?\s*(url\s*=\s*)?", content, re.I)
    rest = content[m.end():].strip()
    if rest[:1] in "'\"" and rest:
        rest = rest[1:].split(rest[0], 1)[0]
    return rest.strip() or None


class _Ref(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.r = {"links": [], "nofollow": [], "embeds": [], "related": [], "refresh": [], "base": None,
                  "meta_nofollow": False}
        self.in_style = False

    def handle_starttag(self, tag, attrs):
        a: dict = {}
        for k, v in attrs:
            a.setdefault(k, v)
        r = self.r
        href = (a.get("href") or "")
        if tag in ("a", "area") and a.get("href"):
            rel = (a.get("rel") or "").lower().split()
            (r["nofollow"] if "nofollow" in rel else r["links"]).append(a["href"])
            r.setdefault("_all", []).append(a["href"])
        elif tag == "base" and a.get("href") is not None and r["base"] is None and "base_seen" not in r:
            r["base_seen"] = True
            r["base"] = a["href"].strip() or None
        elif tag == "link" and href.strip():
            rels = set((a.get("rel") or "").lower().split())
            if rels & EMBED_RELS:
                r["embeds"].append(href.strip())
            elif rels & NAV_RELS:
                r["related"].append(href.strip())
        elif tag == "meta":
            if (a.get("http-equiv") or "").strip().lower() == "refresh":
                t = refresh_target(a.get("content") or "")
                if t:
                    r["refresh"].append(t)
            elif (a.get("name") or "").lower() == "robots":
                tokens = {t.strip().lower() for t in (a.get("content") or "").split(",")}
                if tokens & {"nofollow", "none"}:
                    r["meta_nofollow"] = True
        elif tag == "style":
            self.in_style = True
        if tag in SRC and (a.get("src") or "").strip():
            r["embeds"].append(a["src"].strip())
        if tag == "input" and (a.get("type") or "").strip().lower() == "image" and (a.get("src") or "").strip():
            r["embeds"].append(a["src"].strip())
        if tag in ("img", "source") and a.get("srcset"):
            r["embeds"].extend(srcset(a["srcset"]))
        if tag == "video" and (a.get("poster") or "").strip():
            r["embeds"].append(a["poster"].strip())
        if tag == "object" and (a.get("data") or "").strip():
            r["embeds"].append(a["data"].strip())
        if a.get("style") and "url" in a["style"].lower():
            self.r.setdefault("_styles", []).extend(css_refs(a["style"]))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag == "style":
            self.in_style = False

    def handle_endtag(self, tag):
        if tag == "style":
            self.in_style = False

    def handle_data(self, data):
        if self.in_style:
            self.r["embeds"].extend(css_refs(data))


def reference(body: bytes | str) -> dict:
    """The references of an HTML page by kind (style attributes' URLs after the elements', as the
    crawler gives them: one pass over the elements, then the attributes)."""
    p = _Ref()
    p.feed(body if isinstance(body, str) else body.decode("utf-8", "replace"))
    p.close()
    r = p.r
    r["embeds"] = r["embeds"] + r.pop("_styles", [])
    r.pop("base_seen", None)
    every = r.pop("_all", [])
    if r["meta_nofollow"]:
        r["nofollow"], r["links"] = every, []
    return r
