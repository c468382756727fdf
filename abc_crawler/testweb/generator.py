"""Synthetic web generator: a deterministic web of virtual hosts on loopback.

:func:`generate_web` writes a complete, self-describing web into ``out_dir``
(``sites/<hostname>/`` static files, ``routes.json`` for the server,
``manifest.json`` with what a correct crawl finds, ``seeds.txt``,
``resolve.txt``). It is a pure function of its arguments: the same seed, sizes,
address, port and knobs give byte-identical files; absolute links embed the
port, so a web is generated for one port. Links are written in the canonical
form of :mod:`.canonical`; :func:`.expected.compute_expected` derives the
manifest's ``expected`` sets; hostile hosts come from :mod:`.hostile`.

The format of every file, the web's features (link forms, traps, errors, host
communities) and the hostile modes are specified in ``docs/TESTWEB.md``.
"""
from __future__ import annotations

import json
import math
import os
import posixpath
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .canonical import canonical, netloc_for, split_url
from .expected import USER_AGENT, compute_expected, robots_parsers

__all__ = [
    "COMMUNITY_KNOBS",
    "DEFAULT_KNOBS",
    "USER_AGENT",
    "generate_web",
    "compute_expected",
    "canonical",
    "load_manifest",
    "netloc_for",
]

MANIFEST_FORMAT = "abc-testweb/1"
ROUTES_FORMAT = "abc-testweb-routes/1"
HTML_TYPE = "text/html; charset=utf-8"

# Knobs and their defaults.  ``features=False`` turns every trap/error feature
# off (rates and counts 0, no robots.txt, plain absolute links) unless a knob is
# given explicitly.
DEFAULT_KNOBS: dict = {
    "intra_frac": 0.85,        # probability that a random link stays on its host
    "zipf_s": 1.1,             # host size ~ 1/(rank+1)**zipf_s
    "mean_links": 10.0,        # mean number of random out-links per page (+ structural ones)
    "pareto_alpha": 1.2,       # page popularity ~ Pareto(alpha): power-law in-degrees
    "page_size_median": 4000,  # bytes, lognormal
    "page_size_sigma": 0.8,
    "page_size_max": 200_000,
    "n_seeds": 3,              # seed = root page of h000 and of n_seeds-1 other hosts
    "link_forms": True,        # False: every link is the absolute canonical URL
    "robots_frac": 0.8,        # fraction of hosts with a robots.txt
    "disallow_frac": 0.05,     # fraction of pages under /private/ or /tmp/
    "crawl_delay_hosts": 2,    # smallest hosts get "Crawl-delay: crawl_delay"
    "crawl_delay": 0.05,
    "error_404_rate": 0.03,    # fraction of pages carrying a link to a missing page
    "error_500_rate": 0.01,    # 500 pages, as a fraction of n_pages
    "redirect_rate": 0.02,     # 301/302 URLs, as a fraction of n_pages
    "special_redirects": True, # chain, loop, relative, out of scope, file:, ftp:, to disallowed
    "nofollow_rate": 0.03,     # fraction of links with rel=nofollow
    "meta_nofollow_pages": 2,  # pages with <meta name=robots content=nofollow>
    "hidden_pages": 2,         # pages linked only through nofollow links
    "base_pages": 3,           # pages with <base href>
    "duplicates": 3,           # byte-identical copies of pages
    "non_html": 4,             # .txt / .pdf / .html-served-as-text/plain resources
    "query_pages": 2,          # pages with a query string
    "out_of_scope_rate": 0.03, # fraction of pages linking to an out-of-scope host
    "special_link_rate": 0.03, # fraction of pages with javascript:/mailto: links
}

# Host communities (opt-in, off by default): hosts are grouped into
# ``host_communities`` communities and a cross-host random link picks its
# target host inside the source's community with probability
# ``community_locality`` (anywhere, as without communities, otherwise).  Kept
# apart from DEFAULT_KNOBS: with ``host_communities=0`` the web, manifest
# included, is byte-identical to one generated before the knob existed.
COMMUNITY_KNOBS: dict = {
    "host_communities": 0,       # 0: no communities (uniform cross-host links)
    "community_locality": 0.9,   # P(cross-host link stays in the community), when communities are on
}

# Pages with every kind of requisite (opt-in, 0 by default: the web is then unchanged): each is
# linked from a page of its host and has a style sheet (with url() and @import), images with
# srcset, a script, an iframe (whose page has an image), a CSS background in a style attribute and
# in <style>, a <meta http-equiv=refresh>, a Link header naming another style sheet and a link to
# a page whose answer has a Refresh header. Drawn from a random stream of their own.
REQUISITE_KNOBS: dict = {"requisite_pages": 0}


def png_bytes(rgb: tuple[int, int, int], size: int = 16) -> bytes:
    """A valid ``size`` x ``size`` PNG of one colour (browsers draw it)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + bytes(rgb) * size
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(row * size, 9)) + chunk(b"IEND", b""))

_FEATURE_KNOBS_OFF = {
    "link_forms": False, "robots_frac": 0.0, "disallow_frac": 0.0, "crawl_delay_hosts": 0,
    "error_404_rate": 0.0, "error_500_rate": 0.0, "redirect_rate": 0.0,
    "special_redirects": False, "nofollow_rate": 0.0, "meta_nofollow_pages": 0,
    "hidden_pages": 0, "base_pages": 0, "duplicates": 0, "non_html": 0, "query_pages": 0,
    "out_of_scope_rate": 0.0, "special_link_rate": 0.0,
}

OUT_OF_SCOPE_HOSTS = ["elsewhere.example", "cdn.offsite.example", "www.elsewhere.example"]

_WORDS = (
    "alpha beta gamma delta crawl graph rank page link host phase bucket frontier "
    "session partition metis vertex edge weight volume message exchange superstep "
    "robots politeness fetch parse canonical fingerprint owner hash table column row "
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud"
).split()


# --------------------------------------------------------------------------- model

@dataclass
class _Link:
    target: str            # canonical URL (or a raw non-http href when special)
    nofollow: bool = False
    raw: str | None = None  # pre-rendered href (javascript:, mailto:, ...)
    rel: str | None = None  # rel attribute to write (may be followable, e.g. "noopener")


@dataclass
class _Page:
    host: str               # host name without port
    path: str               # path (+ ?query)
    url: str
    status: int = 200
    ctype: str = "text/html"
    kind: str = "page"      # page | private | hidden | dup | query | text | pdf | fakehtml | err500 | redirect
    location: str | None = None
    links: list = field(default_factory=list)
    base_href: str | None = None
    meta_nofollow: bool = False
    file: str | None = None
    body: bytes | None = None
    hrefs: list = field(default_factory=list)  # rendered (href, nofollow) pairs
    dup_of: "_Page | None" = None
    size: int = 0           # body length once written
    embeds: list | None = None   # requisite hrefs (None: the site's /style.css, as every page has)
    refresh: list = field(default_factory=list)   # <meta http-equiv=refresh> hrefs
    headers: dict = field(default_factory=dict)   # extra response headers (Link, Refresh)


class _Gen:
    def __init__(self, n_hosts: int, n_pages: int, seed: int, addr: str, port: int, knobs: dict):
        self.rng = random.Random(seed)
        self.n_hosts, self.n_pages, self.seed, self.addr, self.port = n_hosts, n_pages, seed, addr, port
        self.k = knobs
        width = max(3, len(str(n_hosts - 1)))
        self.hosts = [f"h{i:0{width}d}.test" for i in range(n_hosts)]
        self.netloc = {h: netloc_for(h, port) for h in self.hosts}
        self.pages: dict[str, _Page] = {}       # url -> page (every route but robots/style)
        self.host_pages: dict[str, list[_Page]] = {h: [] for h in self.hosts}  # normal HTML pages
        self.robots: dict[str, str | None] = {}
        self.dirs: dict[str, list[str]] = {}
        self._parsers: dict = {}
        self._pool = self.rng.choices(_WORDS, k=1 << 16)

    # -- helpers
    def url(self, host: str, path: str) -> str:
        return f"http://{self.netloc[host]}{path}"

    def add(self, page: _Page) -> _Page:
        assert page.url not in self.pages, page.url
        self.pages[page.url] = page
        return page

    def words(self, n: int) -> str:
        """``n`` random words (a slice of a random word pool: fast and deterministic)."""
        pool = self._pool
        off = self.rng.randrange(len(pool) - n)
        return " ".join(pool[off:off + n])

    # -- structure
    def host_sizes(self) -> list[int]:
        s = self.k["zipf_s"]
        w = [1.0 / (i + 1) ** s for i in range(self.n_hosts)]
        sizes = [1] * self.n_hosts
        extra = self.n_pages - self.n_hosts
        cum, t = [], 0.0
        for x in w:
            t += x
            cum.append(t)
        for i in self.rng.choices(range(self.n_hosts), cum_weights=cum, k=extra):
            sizes[i] += 1
        return sizes

    def build_robots(self, sizes: list[int]) -> None:
        k, rng = self.k, self.rng
        order = sorted(range(self.n_hosts), key=lambda i: (sizes[i], i))
        delay_hosts = set(order[: k["crawl_delay_hosts"]]) if k["crawl_delay_hosts"] else set()
        # round(robots_frac * n) hosts get a robots.txt (at least one host without
        # and one with when 0 < robots_frac < 1), crawl-delay hosts always do
        n_with = round(k["robots_frac"] * self.n_hosts)
        if 0 < k["robots_frac"] < 1 and self.n_hosts >= 2:
            n_with = min(max(n_with, 1), self.n_hosts - 1)
        shuffled = list(range(self.n_hosts))
        rng.shuffle(shuffled)
        shuffled.sort(key=lambda i: i not in delay_hosts)  # stable: delay hosts first
        with_robots = set(shuffled[: max(n_with, len(delay_hosts))])
        for i, h in enumerate(self.hosts):
            has = i in with_robots
            if not has:
                self.robots[h] = None
                continue
            variant = rng.choice(["star", "star", "both", "override", "pattern"])
            delay = f"Crawl-delay: {k['crawl_delay']}\n" if i in delay_hosts else ""
            if variant == "star":
                txt = f"# robots.txt for {h}\nUser-agent: *\nDisallow: /private/\nDisallow: /tmp/\n{delay}"
            elif variant == "both":
                txt = ("User-agent: *\nDisallow: /private/\n\n"
                       f"User-agent: abc-crawler\nDisallow: /private/\nDisallow: /tmp/\n{delay}")
            elif variant == "override":
                # the abc-crawler group replaces '*': /private/ and /d1/ are allowed to us
                txt = ("User-agent: *\nDisallow: /private/\nDisallow: /d1/\n\n"
                       f"User-agent: abc-crawler\nDisallow: /tmp/\n{delay}")
            else:
                txt = ("User-agent: other-bot\nDisallow: /\n\n"
                       "User-agent: *\nDisallow: /private/\nDisallow: /*.pdf$\nDisallow: /tmp/\n"
                       f"Allow: /private/p1.html\n{delay}")
            self.robots[h] = txt

    def build_pages(self, sizes: list[int]) -> None:
        k, rng = self.k, self.rng
        for i, h in enumerate(self.hosts):
            n = sizes[i]
            ndirs = min(8, 1 + n // 15)
            dirs = [""]
            for d in range(1, ndirs):
                parent = rng.choice(dirs) if d > 2 else ""
                dirs.append(f"{parent}d{d}/" if parent.count("/") < 2 else f"d{d}/")
            self.dirs[h] = dirs
            self.host_pages[h].append(self.add(_Page(h, "/", self.url(h, "/"), file="index.html")))
            for j in range(1, n):
                kind = "page"
                if rng.random() < k["disallow_frac"]:
                    d = rng.choice(["private/", "tmp/"])
                    kind = "private"
                else:
                    d = rng.choice(dirs)
                path = f"/{d}p{j}.html"
                p = self.add(_Page(h, path, self.url(h, path), kind=kind, file=path[1:]))
                self.host_pages[h].append(p)

    def build_requisites(self, n: int) -> None:
        """``n`` pages with every kind of requisite (see :data:`REQUISITE_KNOBS`), on the biggest hosts
        in turn, each linked from its host's root page."""
        rng = random.Random(self.seed * 104_729 + 33)
        order = sorted(self.hosts, key=lambda h: -len(self.host_pages[h]))
        for i in range(n):
            h = order[i % len(order)]
            u = lambda path, h=h: self.url(h, path)   # noqa: E731
            colour = (rng.randrange(40, 200), rng.randrange(40, 200), rng.randrange(40, 200))

            def res(path, ctype, body, kind="requisite", **kw):
                return self.add(_Page(h, path, u(path), ctype=ctype, kind=kind, file=path[1:], body=body, **kw))

            d = f"/req{i}/"
            res(f"{d}bg.png", "image/png", png_bytes(colour))
            res(f"{d}img.png", "image/png", png_bytes((colour[2], colour[0], colour[1])))
            res(f"{d}img-2x.png", "image/png", png_bytes((colour[1], colour[2], colour[0]), 32))
            res(f"{d}div.png", "image/png", png_bytes((250, 250, 210)))
            res(f"{d}inline.png", "image/png", png_bytes((210, 250, 250)))
            res(f"{d}frame.png", "image/png", png_bytes((10, 120, 10)))
            res(f"{d}font.png", "image/png", png_bytes((1, 2, 3), 4))
            base_css = f"h1 {{ color: rgb{colour}; border-bottom: 4px solid rgb{colour}; }}\n"
            res(f"{d}base.css", "text/css", base_css.encode())
            site_css = (f'@import url("base.css");\n/* url(not-fetched.png) */\n'
                        f"body {{ background: rgb{colour} url('bg.png') repeat-x; color: #111; margin: 2em; }}\n"
                        f".box {{ width: 120px; height: 60px; background-image: url(font.png); }}\n")
            res(f"{d}site.css", "text/css", site_css.encode(), embeds=["base.css", "bg.png", "font.png"])
            res(f"{d}header.css", "text/css", b"p { font-size: 18px; }\n")
            res(f"{d}app.js", "application/javascript", b"document.documentElement.dataset.js = 'ran';\n")
            frame = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>frame {i}</title></head>'
                     f'<body><img src="frame.png" alt="f"></body></html>\n')
            fp = res(f"{d}frame.html", "text/html", frame.encode(), kind="rich", embeds=["frame.png"])
            target = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>refreshed {i}</title></head>'
                      f'<body><p>the page a refresh leads to</p></body></html>\n')
            res(f"{d}refreshed.html", "text/html", target.encode(), kind="rich", embeds=[])
            res(f"{d}after-header.html", "text/html", target.replace(b"refreshed", b"after a Refresh header")
                if isinstance(target, bytes) else target.replace("refreshed", "after a Refresh header").encode(),
                kind="rich", embeds=[])
            res(f"{d}header-refresh.html", "text/html", b"<!DOCTYPE html><title>moving</title><p>moving</p>\n",
                kind="rich", embeds=[], headers={"Refresh": "0; url=after-header.html"})
            root = self.host_pages[h][0]
            page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>requisites {i}</title>\n'
                    f'<link rel="stylesheet" href="site.css">\n'
                    f'<meta http-equiv="refresh" content="600; url=refreshed.html">\n'
                    f"<style>.inline {{ width: 50px; height: 50px; background: url(inline.png); }}</style>\n"
                    f'<script src="app.js"></script></head>\n<body><h1>Requisites {i}</h1>\n'
                    f'<p><img src="img.png" srcset="img-2x.png 2x" alt="i" width="16" height="16"></p>\n'
                    f'<div class="box"></div><div class="inline"></div>'
                    f'<div style="width: 40px; height: 40px; background-image: url(&quot;div.png&quot;)"></div>\n'
                    f'<iframe src="frame.html" width="60" height="40"></iframe>\n'
                    f'<p><a href="{root.url}">home</a> <a href="header-refresh.html">moving</a></p>\n'
                    f"</body></html>\n")
            self.add(_Page(h, f"{d}index.html", u(f"{d}index.html"), kind="rich", file=f"{d[1:]}index.html",
                           body=page.encode(), links=[_Link(root.url), _Link(u(f"{d}header-refresh.html"))],
                           hrefs=[(root.url, False), ("header-refresh.html", False)],
                           embeds=["site.css", "inline.png", "app.js", "img.png", "img-2x.png", "frame.html",
                                   "div.png", "header.css"],
                           refresh=["refreshed.html"], headers={"Link": '<header.css>; rel="stylesheet"'}))
            root.links.append(_Link(u(f"{d}index.html")))
            fp.links = []

    def pick_host(self, sizes_cum: list[float]) -> str:
        return self.hosts[self.rng.choices(range(self.n_hosts), cum_weights=sizes_cum, k=1)[0]]

    def build_communities(self) -> list[int] | None:
        """Community index of every host (None when communities are off).

        A separate random stream (the main one is untouched, so the rest of
        the web is drawn in the same order): hosts are shuffled (big and
        small hosts mix) and cut into ``host_communities`` contiguous runs of
        lognormal sizes, each of at least two hosts when there are enough.
        """
        C = min(int(self.k.get("host_communities", 0) or 0), self.n_hosts)
        if C <= 0:
            return None
        crng = random.Random(self.seed * 1_000_033 + 101)
        order = list(range(self.n_hosts))
        crng.shuffle(order)
        w = [crng.lognormvariate(0.0, 0.7) for _ in range(C)]
        base = 2 if self.n_hosts >= 2 * C else 1
        sizes = [base] * C
        for c in crng.choices(range(C), weights=w, k=self.n_hosts - base * C):
            sizes[c] += 1
        comm = [0] * self.n_hosts
        pos = 0
        for c, n in enumerate(sizes):
            for i in order[pos:pos + n]:
                comm[i] = c
            pos += n
        return comm

    def build(self) -> None:
        k, rng = self.k, self.rng
        sizes = self.host_sizes()
        self.build_robots(sizes)
        self.build_pages(sizes)
        comm = self.community = self.build_communities()
        locality = float(k.get("community_locality", COMMUNITY_KNOBS["community_locality"]))
        sizes_cum, t = [], 0
        for s in sizes:
            t += s
            sizes_cum.append(t)

        # popularity (Pareto) over normal pages; roots are popular within their host
        pop: dict[str, float] = {}
        for h in self.hosts:
            for p in self.host_pages[h]:
                pop[p.url] = rng.paretovariate(k["pareto_alpha"]) * (5.0 if p.path == "/" else 1.0)
        all_normal = [p for h in self.hosts for p in self.host_pages[h]]
        glob_cum, t = [], 0.0
        for p in all_normal:
            t += pop[p.url]
            glob_cum.append(t)
        host_cum = {}
        for h in self.hosts:
            c, t = [], 0.0
            for p in self.host_pages[h]:
                t += pop[p.url]
                c.append(t)
            host_cum[h] = c

        def random_page(host: str | None = None) -> _Page:
            if host is not None:
                return rng.choices(self.host_pages[host], cum_weights=host_cum[host], k=1)[0]
            return rng.choices(all_normal, cum_weights=glob_cum, k=1)[0]

        # structural links: a tree per host, host roots linked from earlier hosts
        tree_parents = set()
        for h in self.hosts:
            hp = self.host_pages[h]
            for j in range(1, len(hp)):
                parent = hp[rng.randrange(j)]
                parent.links.append(_Link(hp[j].url))
                tree_parents.add(parent.url)
        for i in range(1, self.n_hosts):
            if comm is not None and rng.random() < locality:
                earlier = [j for j in range(i) if comm[j] == comm[i]]
                src_i = earlier[rng.randrange(len(earlier))] if earlier else rng.randrange(i)
            else:
                src_i = rng.randrange(i)
            src = random_page(self.hosts[src_i])
            src.links.append(_Link(self.url(self.hosts[i], "/")))
            tree_parents.add(src.url)

        # communities: the normal pages of each community, popularity-weighted
        comm_pages: list[list[_Page]] = []
        comm_cum: list[list[float]] = []
        comm_of: dict[str, int] = {}
        if comm is not None:
            comm_of = {h: comm[i] for i, h in enumerate(self.hosts)}
            n_comm = max(comm) + 1
            comm_pages = [[] for _ in range(n_comm)]
            for h in self.hosts:
                comm_pages[comm_of[h]].extend(self.host_pages[h])
            for cp in comm_pages:
                c, t = [], 0.0
                for q in cp:
                    t += pop[q.url]
                    c.append(t)
                comm_cum.append(c)
            comm_hosts = [0] * n_comm
            for c in comm:
                comm_hosts[c] += 1

        # random links
        mu = math.log(max(k["mean_links"], 0.01)) - 0.18  # lognormal sigma 0.6: mean ~ mean_links
        for p in all_normal:
            n = int(round(rng.lognormvariate(mu, 0.6))) if k["mean_links"] > 0 else 0
            for _ in range(n):
                if rng.random() < k["intra_frac"] or self.n_hosts == 1:
                    t = random_page(p.host)
                elif comm is not None and rng.random() < locality and comm_hosts[comm_of[p.host]] > 1:
                    c = comm_of[p.host]
                    t = rng.choices(comm_pages[c], cum_weights=comm_cum[c], k=1)[0]
                    while t.host == p.host:
                        t = rng.choices(comm_pages[c], cum_weights=comm_cum[c], k=1)[0]
                else:
                    t = random_page()
                    while t.host == p.host:
                        t = random_page()
                p.links.append(_Link(t.url, nofollow=rng.random() < k["nofollow_rate"]))

        # pages with <meta name=robots content=nofollow>: leaves of the link tree
        leaves = [p for p in all_normal if p.kind == "page" and p.path != "/" and p.url not in tree_parents]
        rng.shuffle(leaves)
        meta_pages = leaves[: k["meta_nofollow_pages"]]
        for p in meta_pages:
            p.meta_nofollow = True

        # the pages that may link to a special route: normal pages of kind "page" without meta
        # nofollow, fixed from here on, so listed once (a scan per special route made generation
        # quadratic); all_normal is host by host, so each host's list keeps host_pages' order
        link_sources = [p for p in all_normal if p.kind == "page" and not p.meta_nofollow]
        host_sources: dict[str, list[_Page]] = {}
        for p in link_sources:
            host_sources.setdefault(p.host, []).append(p)
        link_sources = link_sources or all_normal

        def some_source(host: str) -> _Page:
            """A page that links to a special route of ``host`` (mostly from the same host)."""
            if rng.random() < 0.8:
                cands = host_sources.get(host)
                if cands:
                    return rng.choice(cands)
            return rng.choice(link_sources)

        # special pages -------------------------------------------------------
        counters = {h: len(self.host_pages[h]) for h in self.hosts}

        def new_path(host: str, prefix: str = "", ext: str = ".html") -> str:
            counters[host] += 1
            d = prefix if prefix else rng.choice(self.dirs[host])
            return f"/{d}p{counters[host]}{ext}"

        def add_special(host: str, path: str, **kw) -> _Page:
            return self.add(_Page(host, path, self.url(host, path), **kw))

        def link_to(page: _Page, nofollow: bool = False, src: _Page | None = None) -> _Page:
            src = src or some_source(page.host)
            src.links.append(_Link(page.url, nofollow=nofollow))
            return src

        # 500 pages
        for _ in range(int(round(k["error_500_rate"] * self.n_pages))):
            h = self.pick_host(sizes_cum)
            link_to(add_special(h, new_path(h), status=500, kind="err500"))

        # redirects to normal pages (same host mostly, sometimes another host)
        for _ in range(int(round(k["redirect_rate"] * self.n_pages))):
            h = self.pick_host(sizes_cum)
            target = random_page(h) if rng.random() < 0.7 else random_page()
            status = rng.choice([301, 301, 302, 302, 307, 308])
            r = add_special(h, new_path(h, "old/"), status=status, kind="redirect", location=target.url)
            link_to(r)

        if k["special_redirects"]:
            h = self.hosts[0]
            hp = self.host_pages[h]
            tgt = rng.choice(hp)
            # relative Location (resolved against the request URL)
            rel_target = tgt.path
            r = add_special(h, "/old/relative.html", status=301, kind="redirect", location=rel_target)
            link_to(r)
            # chain: chain1 -> chain2 -> page on another host
            other = self.hosts[min(1, self.n_hosts - 1)]
            end = random_page(other)
            r2 = add_special(h, "/old/chain2.html", status=302, kind="redirect", location=end.url)
            r1 = add_special(h, "/old/chain1.html", status=301, kind="redirect",
                             location=r2.url.replace(f"http://{self.netloc[h]}", f"http://{self._mixcase(self.netloc[h])}"))
            link_to(r1)
            # loop: loop-a <-> loop-b
            la_path, lb_path = "/old/loop-a.html", "/old/loop-b.html"
            la = add_special(h, la_path, status=302, kind="redirect", location=self.url(h, lb_path))
            add_special(h, lb_path, status=302, kind="redirect", location=self.url(h, la_path))
            link_to(la)
            # redirect to a page disallowed by robots.txt (if any host has one)
            priv = [p for p in all_normal if p.kind == "private" and self._disallowed_raw(p)]
            if priv:
                t = rng.choice(priv)
                link_to(add_special(h, "/old/to-private.html", status=301, kind="redirect", location=t.url))
            # out of scope, file:, ftp:
            link_to(add_special(h, "/old/offsite.html", status=301, kind="redirect",
                                location=f"http://{OUT_OF_SCOPE_HOSTS[0]}/landing.html"))
            link_to(add_special(h, "/old/passwd.html", status=302, kind="redirect",
                                location="file:///etc/passwd"))
            link_to(add_special(h, "/old/ftp.html", status=302, kind="redirect",
                                location=f"ftp://ftp.{OUT_OF_SCOPE_HOSTS[0]}/pub/file.txt"))

        # non-HTML resources
        kinds = [("text", ".txt", "text/plain"), ("pdf", ".pdf", "application/pdf"),
                 ("fakehtml", ".html", "text/plain")]
        for n in range(k["non_html"]):
            kind, ext, ctype = kinds[n % len(kinds)]
            h = self.pick_host(sizes_cum)
            path = new_path(h, "files/", ext)
            if kind == "pdf":
                body = b"%PDF-1.4\n% abc-testweb\n" + self.words(40).encode() + b"\n%%EOF\n"
            elif kind == "fakehtml":
                body = (b"<html><body>This is text/plain, not HTML: "
                        b"<a href=\"/never-followed.html\">no</a></body></html>\n")
            else:
                body = (self.words(80) + "\nhttp://h000.test/this-is-text-not-a-link.html\n").encode()
            link_to(add_special(h, path, ctype=ctype, kind=kind, body=body, file=path[1:]))

        # query pages: served at the sorted form, linked with unsorted arguments
        for n in range(k["query_pages"]):
            h = self.pick_host(sizes_cum)
            path = f"/search.html?page={n + 1}&q=crawl"
            if self.url(h, path) in self.pages:   # every page's url is self.url(host, path)
                continue
            q = add_special(h, path, kind="query", file=f"_q/search-{n + 1}.html")
            link_to(q)
            q.links.append(_Link(random_page(h).url))

        # hidden pages: linked only by rel=nofollow links or from meta-nofollow pages
        for n in range(k["hidden_pages"]):
            h = self.pick_host(sizes_cum)
            hp = add_special(h, f"/hidden/p{n}.html", kind="hidden", file=f"hidden/p{n}.html")
            if n % 2 == 1 and meta_pages:
                src = meta_pages[n % len(meta_pages)]
                src.links.append(_Link(hp.url))
            else:
                link_to(hp, nofollow=True)
            hp.links.append(_Link(random_page(h).url))

        # duplicates: same directory, same host, byte-identical body
        cands = [p for p in all_normal if p.kind == "page" and p.path != "/" and not p.meta_nofollow]
        rng.shuffle(cands)
        for n, orig in enumerate(cands[: k["duplicates"]]):
            d = orig.path.rsplit("/", 1)[0]
            path = f"{d}/copy{n}.html"
            dup = add_special(orig.host, path, kind="dup", file=path[1:], dup_of=orig)
            link_to(dup)

        # pages with <base href>
        bcands = [p for p in all_normal if p.kind == "page" and not p.meta_nofollow and p.dup_of is None
                  and p.path != "/"]
        dup_origs = {p.dup_of.url for p in self.pages.values() if p.dup_of is not None}
        bcands = [p for p in bcands if p.url not in dup_origs]
        rng.shuffle(bcands)
        for n, p in enumerate(bcands[: k["base_pages"]]):
            if n % 3 == 2:
                dirs = [d for d in self.dirs[p.host] if d] or [""]
                p.base_href = "/" + rng.choice(dirs)
            else:
                bh = rng.choice(self.hosts)
                bdir = rng.choice([d for d in self.dirs[bh] if d] or [""])
                p.base_href = f"http://{self._mixcase(self.netloc[bh]) if n % 2 else self.netloc[bh]}/{bdir}"

        # 404 links, out-of-scope links, javascript:/mailto:
        for p in all_normal:
            if rng.random() < k["error_404_rate"]:
                miss = rng.choice([f"/missing/p{rng.randrange(10**6)}.html",
                                   f"/{rng.choice(self.dirs[p.host])}gone{rng.randrange(10**6)}.html"])
                p.links.append(_Link(self.url(p.host, miss)))
            if rng.random() < k["out_of_scope_rate"]:
                oh = rng.choice(OUT_OF_SCOPE_HOSTS)
                scheme = rng.choice(["http", "https"])
                p.links.append(_Link(f"{scheme}://{oh}/{self.words(1)}/p{rng.randrange(1000)}.html"))
            if rng.random() < k["special_link_rate"]:
                p.links.append(_Link("", raw="javascript:void(0)"))
                p.links.append(_Link("", raw=f"mailto:webmaster@{p.host}"))
                p.links.append(_Link("", raw="JavaScript:window.location='/d1/p1.html'"))

        # shuffle link order (structural links are not always first)
        for p in self.pages.values():
            rng.shuffle(p.links)

    # -- rendering
    def _mixcase(self, s: str) -> str:
        out = "".join(c.upper() if c.isalpha() and self.rng.random() < 0.5 else c for c in s)
        if out == s:
            out = s[0].upper() + s[1:]
        return out

    def _disallowed_raw(self, p: _Page) -> bool:
        txt = self.robots.get(p.host)
        if txt is None:
            return False
        rp = self._parsers.get(p.host)
        if rp is None:
            from protego import Protego
            rp = self._parsers[p.host] = Protego.parse(txt)
        return not rp.can_fetch(p.url, USER_AGENT)

    def render_href(self, target: str, base: str, bsplit: tuple | None = None) -> str:
        rng = self.rng
        frag = f"#sec{rng.randrange(5)}" if rng.random() < 0.1 else ""
        if not self.k["link_forms"]:
            return target + frag
        t_scheme, t_net, t_path = split_url(target)
        b_scheme, b_net, b_path = bsplit or split_url(canonical(base, base))
        r = rng.random()
        port80 = self.port == 80
        if t_net == b_net and t_scheme == b_scheme:
            if r < 0.40:
                bdir = b_path.split("?", 1)[0].rsplit("/", 1)[0] or "/"
                tp, _, q = t_path.partition("?")
                rel = posixpath.relpath(tp, bdir)
                if tp.endswith("/"):
                    rel = "./" if rel == "." else rel + "/"
                elif rng.random() < 0.1 and not rel.startswith("."):
                    rel = "./" + rel
                href = rel + (f"?{q}" if q else "")
            elif r < 0.65:
                href = t_path
            elif r < 0.85:
                href = target
            elif r < 0.90:
                href = f"//{t_net}{t_path}"
            elif r < 0.95:
                href = f"{t_scheme}://{self._mixcase(t_net)}{t_path}"
            else:
                if port80:
                    href = f"{t_scheme}://{t_net}:80{t_path}"
                else:
                    href = f"{t_scheme.upper()}://{t_net}{t_path}"
        else:
            if r < 0.6:
                href = target
            elif r < 0.8:
                href = f"{t_scheme}://{self._mixcase(t_net)}{t_path}"
            elif r < 0.9 and t_scheme == b_scheme:
                href = f"//{t_net}{t_path}"
            elif port80 and t_scheme == "http" and ":" not in t_net:
                href = f"http://{t_net}:80{t_path}"
            else:
                href = target
        if "?" in href:
            # write the query arguments in reverse (unsorted) order
            head, q = href.split("?", 1)
            href = head + "?" + "&".join(reversed(q.split("&")))
        return href + frag

    def render_pages(self, sink) -> None:
        """Render every HTML body; ``sink(page)`` writes it, after which only its size is kept."""
        rng, k = self.rng, self.k
        keep = {p.dup_of.url for p in self.pages.values() if p.dup_of is not None}
        med, sig, cap = k["page_size_median"], k["page_size_sigma"], k["page_size_max"]
        for p in self.pages.values():
            if p.status != 200 or p.ctype != "text/html" or p.dup_of is not None or p.kind == "rich":
                continue
            base = canonical(p.base_href, p.url) if p.base_href else p.url
            bsplit = split_url(base)
            target_size = min(cap, int(rng.lognormvariate(math.log(max(med, 1)), sig)))
            head = [
                "<!DOCTYPE html>",
                "<html lang=\"en\"><head><meta charset=\"utf-8\">",
                f"<title>{self.words(3).title()}</title>",
            ]
            if p.base_href:
                head.append(f"<base href=\"{p.base_href}\">")
            if p.meta_nofollow:
                head.append("<meta name=\"robots\" content=\"nofollow\">")
            head.append("<link rel=\"stylesheet\" href=\"/style.css\">")
            head.append("</head><body>")
            head.append(f"<h1 id=\"top\">{self.words(4).title()}</h1>")
            parts: list[str] = []
            for ln in p.links:
                if ln.raw is not None:
                    parts.append(f"<a href=\"{ln.raw}\">{self.words(2)}</a>")
                    p.hrefs.append((ln.raw, False))
                    continue
                href = self.render_href(ln.target, base, bsplit)
                if " " not in href and rng.random() < 0.01:
                    href = f"  {href}\n"
                shown = href.replace("&", "&amp;")
                rel = ""
                if ln.nofollow:
                    rel = rng.choice([" rel=\"nofollow\"", " rel=\"nofollow\"", " rel=\"noopener nofollow\"",
                                      " rel=\"NoFollow\""])
                elif rng.random() < 0.03:
                    rel = " rel=\"noopener\""
                anchor = self.words(rng.randint(1, 3))
                r = rng.random()
                if r < 0.01:
                    parts.append(f"<map name=\"m{len(parts)}\"><area shape=\"rect\" coords=\"0,0,9,9\""
                                 f" href=\"{shown}\"{rel} alt=\"{anchor}\"></map>")
                elif r < 0.03:
                    parts.append(f"<A HREF=\"{shown}\"{rel.upper()}>{anchor}</A>")
                else:
                    parts.append(f"<a href=\"{shown}\"{rel}>{anchor}</a>")
                p.hrefs.append((href, ln.nofollow or p.meta_nofollow))
            if p.links and not p.base_href and rng.random() < 0.05:
                parts.append("<a href=\"#top\">top</a>")
                p.hrefs.append(("#top", p.meta_nofollow))
            if rng.random() < 0.05:
                parts.append("<a name=\"anchor-only\">no href</a>")
            body = []
            used = sum(map(len, head)) + 20
            i = 0
            while i < len(parts) or used < target_size:
                if i < len(parts):
                    chunk = f"<p>{self.words(rng.randint(8, 30))} {parts[i]} {self.words(3)}</p>"
                    i += 1
                else:
                    chunk = f"<p>{self.words(rng.randint(40, 160))}</p>"
                body.append(chunk)
                used += len(chunk) + 1
            p.body = ("\n".join(head + body) + "\n</body></html>\n").encode()
            p.size = len(p.body)
            sink(p)
            if p.url not in keep:
                p.body = None
        for p in self.pages.values():
            if p.dup_of is not None:
                p.body = p.dup_of.body
                p.size = len(p.body)
                p.hrefs = list(p.dup_of.hrefs)
                p.meta_nofollow = p.dup_of.meta_nofollow
                p.base_href = p.dup_of.base_href
                sink(p)
        for p in self.pages.values():
            if p.body is not None and p.size == 0:   # non-HTML resources
                p.size = len(p.body)
                sink(p)
            p.body = None


# --------------------------------------------------------------------------- driver

def _link_header_embeds(value: str) -> list[str]:
    """The style-sheet targets of a generated Link header (``<x>; rel="stylesheet"``)."""
    return [part.split(">", 1)[0].strip().lstrip("<") for part in value.split(",") if "stylesheet" in part]


def _check_addr(addr: str) -> None:
    import ipaddress
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        raise ValueError(f"address {addr!r} is not an IPv4 address") from None
    if ip.version != 4 or not ip.is_loopback:
        raise ValueError(f"address {addr} is not on loopback (127.0.0.0/8)")


def generate_web(out_dir, *, n_hosts: int = 20, n_pages: int = 600, seed: int = 0,
                 addr: str = "127.0.0.1", port: int, features: bool = True, hostile=None, **knobs) -> dict:
    """Write a synthetic web into ``out_dir`` and return its manifest.

    ``n_pages`` counts the ordinary HTML pages (roots included, at least one per
    host); redirects, 500 pages, non-HTML files, duplicates, hidden and query
    pages come on top.  ``features=False`` turns all traps and errors off (see
    :data:`DEFAULT_KNOBS`); any knob given explicitly wins.  ``hostile``
    adds hostile hosts (see "Hostile hosts" above; None, the default, adds
    none and changes nothing).  Existing ``sites/`` content in ``out_dir`` is
    replaced.
    """
    from .hostile import hostile_spec
    hspec = hostile_spec(hostile)
    _check_addr(addr)
    if not (1 <= int(port) <= 65535):
        raise ValueError(f"port {port} out of range 1..65535")
    if n_hosts < 1:
        raise ValueError("n_hosts must be >= 1")
    if n_pages < n_hosts:
        raise ValueError(f"n_pages ({n_pages}) must be >= n_hosts ({n_hosts})")
    unknown = set(knobs) - set(DEFAULT_KNOBS) - set(COMMUNITY_KNOBS) - set(REQUISITE_KNOBS)
    if unknown:
        raise TypeError(f"unknown knob(s): {', '.join(sorted(unknown))}")
    k = dict(DEFAULT_KNOBS)
    if not features:
        k.update(_FEATURE_KNOBS_OFF)
    k.update(knobs)
    n_req = int(k.pop("requisite_pages", 0) or 0)
    if n_req < 0:
        raise ValueError(f"requisite_pages ({n_req}) must be >= 0")
    if n_req:                   # only then in the manifest's knobs: a web without them is unchanged
        k["requisite_pages"] = n_req
    n_comm = int(k.pop("host_communities", 0) or 0)
    locality = k.pop("community_locality", COMMUNITY_KNOBS["community_locality"])
    if n_comm < 0:
        raise ValueError(f"host_communities ({n_comm}) must be >= 0")
    if not (0.0 <= float(locality) <= 1.0):
        raise ValueError(f"community_locality ({locality}) must be in [0, 1]")
    if n_comm > 0:   # only then in the manifest's knobs: a web without communities is unchanged
        k["host_communities"] = min(n_comm, n_hosts)
        k["community_locality"] = float(locality)
    port = int(port)

    g = _Gen(n_hosts, n_pages, seed, addr, port, k)
    g.build()
    if n_req:
        g.build_requisites(n_req)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sites = out / "sites"
    if sites.exists():
        shutil.rmtree(sites)
    made_dirs: set = set()

    def sink(p: _Page) -> None:
        if p.file is None or p.body is None:
            return
        f = sites / p.host / p.file
        if f.parent not in made_dirs:
            f.parent.mkdir(parents=True, exist_ok=True)
            made_dirs.add(f.parent)
        f.write_bytes(p.body)

    g.render_pages(sink)

    robots_by_net = {g.netloc[h]: g.robots[h] for h in g.hosts}
    parsers = robots_parsers(robots_by_net)

    # manifest pages
    pages: dict[str, dict] = {}
    for url in sorted(g.pages):
        p = g.pages[url]
        links: list[str] = []
        nof: list[str] = []
        embeds: list[str] = []
        refresh: list[str] = []
        if p.status in (301, 302, 307, 308):
            c = canonical(p.location, p.url)
            if c is not None:
                links.append(c)
        elif p.status == 200 and p.ctype == "text/html":
            base = canonical(p.base_href, p.url) if p.base_href else p.url
            for href, nofollow in p.hrefs:
                c = canonical(href, base)
                if c is None:
                    continue
                if nofollow:
                    nof.append(c)
                else:
                    links.append(c)
            links = list(dict.fromkeys(links))
            lset = set(links)
            nof = [u for u in dict.fromkeys(nof) if u not in lset]
            # requisites (issue 33): every generated page's /style.css, or a rich page's own; its
            # <meta http-equiv=refresh> targets
            src = p.dup_of or p
            for href in (["/style.css"] if src.embeds is None else src.embeds):
                c = canonical(href, base)
                if c is not None:
                    embeds.append(c)
            for href in src.refresh:
                c = canonical(href, base)
                if c is not None:
                    refresh.append(c)
        elif p.status == 200 and p.ctype == "text/css" and p.embeds:
            embeds = [c for c in (canonical(h, p.url) for h in p.embeds) if c is not None]
        if p.status == 200:
            for k_, v_ in p.headers.items():            # Link and Refresh headers
                if k_ == "Link":
                    embeds += [c for c in (canonical(h, p.url) for h in _link_header_embeds(v_)) if c is not None]
                elif k_ == "Refresh":
                    c = canonical(v_.split("url=", 1)[1], p.url)
                    if c is not None:
                        refresh.append(c)
        rp = parsers.get(g.netloc[p.host])
        pages[url] = {
            "status": p.status,
            "content_type": p.ctype,
            "location": p.location,
            "links": links,
            "nofollow": nof,
            "embeds": list(dict.fromkeys(embeds)),
            "refresh": list(dict.fromkeys(refresh)),
            "disallowed": bool(rp is not None and not rp.can_fetch(url, USER_AGENT)),
            "bytes": p.size,
        }
    # sanity: every rendered link resolves to the intended target
    for p in g.pages.values():
        if p.dup_of is None and p.status == 200 and p.ctype == "text/html":
            want = {ln.target for ln in p.links if ln.raw is None}
            got = set(pages[p.url]["links"]) | set(pages[p.url]["nofollow"])
            assert got - {p.url} <= want and want <= got, (p.url, want ^ got)
    # 404 entries for linked URLs on served hosts that do not exist
    netlocs = set(g.netloc.values())
    missing = set()
    css = b"body { font-family: sans-serif; max-width: 50em; }\n"
    for h in g.hosts:                        # every host's /style.css, which every generated page names
        u = g.url(h, "/style.css")
        rp = parsers.get(g.netloc[h])
        pages[u] = {"status": 200, "content_type": "text/css", "location": None, "links": [], "nofollow": [],
                    "embeds": [], "refresh": [], "disallowed": bool(rp is not None and not rp.can_fetch(u, USER_AGENT)),
                    "bytes": len(css)}
    for e in list(pages.values()):
        for u in e["links"] + e["nofollow"] + e["embeds"] + e["refresh"]:
            if u not in pages and split_url(u)[1] in netlocs:
                missing.add(u)
    for u in sorted(missing):
        net = split_url(u)[1]
        rp = parsers.get(net)
        pages[u] = {"status": 404, "content_type": "text/html", "location": None, "links": [],
                    "nofollow": [], "embeds": [], "refresh": [], "disallowed": bool(rp is not None and not rp.can_fetch(u, USER_AGENT)),
                    "bytes": 0}
    pages = dict(sorted(pages.items()))

    # seeds: root of h000 and of n_seeds-1 other hosts (allowed by robots.txt)
    srng = random.Random(seed * 7919 + 17)
    others = list(range(1, n_hosts))
    srng.shuffle(others)
    seed_hosts = [0] + sorted(others[: max(0, k["n_seeds"] - 1)])
    seeds = [g.url(g.hosts[i], "/") for i in seed_hosts]

    hosts = [g.netloc[h] for h in g.hosts]
    expected = compute_expected(pages, seeds, hosts, robots_by_net)
    resolve = [f"{h}:{port}:{addr}" for h in g.hosts]
    robots_info = {}
    for h in g.hosts:
        net = g.netloc[h]
        rp = parsers.get(net)
        robots_info[net] = {"robots_txt": g.robots[h],
                            "crawl_delay": rp.crawl_delay(USER_AGENT) if rp is not None else None}
    counts = {
        "hosts": n_hosts,
        "pages": len(pages),
        "html_pages": sum(1 for e in pages.values() if e["status"] == 200 and e["content_type"] == "text/html"),
        "requested": len(expected["requested"]),
        "nodes": len(expected["nodes"]),
        "edges": len(expected["edges"]),
        "disallowed": len(expected["disallowed"]),
        "out_of_scope_links": len(expected["out_of_scope_links"]),
        "bytes": sum(e["bytes"] for e in pages.values()),
    }
    manifest = {
        "format": MANIFEST_FORMAT,
        "addr": addr,
        "port": port,
        "seed": seed,
        "knobs": k,
        "hosts": hosts,
        "out_of_scope_hosts": list(OUT_OF_SCOPE_HOSTS),
        "resolve": resolve,
        "seeds": seeds,
        "robots": robots_info,
        "counts": counts,
        "pages": pages,
        "expected": expected,
    }
    if g.community is not None:
        manifest["communities"] = {g.netloc[h]: g.community[i] for i, h in enumerate(g.hosts)}

    # routes
    routes: dict[str, dict] = {h: {} for h in g.hosts}
    for h in g.hosts:
        if g.robots[h] is not None:
            routes[h]["/robots.txt"] = {"status": 200, "type": "text/plain; charset=utf-8", "file": "robots.txt"}
        routes[h]["/style.css"] = {"status": 200, "type": "text/css", "file": "style.css"}
    for url in sorted(g.pages):
        p = g.pages[url]
        r: dict = {"status": p.status}
        if p.status == 200:
            r["type"] = HTML_TYPE if p.ctype == "text/html" else (
                p.ctype + "; charset=utf-8" if p.ctype.startswith("text/") else p.ctype)
            r["file"] = p.file
        if p.location is not None:
            r["location"] = p.location
        if p.headers:
            r["headers"] = dict(p.headers)
        routes[p.host][p.path] = r
    routes_doc = {"format": ROUTES_FORMAT, "static_fallback": False,
                  "hosts": {h: dict(sorted(v.items())) for h, v in routes.items()}}
    if hspec:
        _add_hostile(g, hspec, manifest, routes_doc, sites, robots_by_net)
        resolve = manifest["resolve"]

    # write the rest
    for h in g.hosts:
        hd = sites / h
        hd.mkdir(parents=True, exist_ok=True)
        (hd / "style.css").write_bytes(css)
        if g.robots[h] is not None:
            (hd / "robots.txt").write_text(g.robots[h])
    indent = 1 if len(pages) <= 20000 else None   # big webs: compact JSON
    _write_text(out / "routes.json", json.dumps(routes_doc, indent=indent) + "\n")
    _write_text(out / "seeds.txt", "".join(s + "\n" for s in seeds))
    _write_text(out / "resolve.txt", "".join(r + "\n" for r in resolve))
    _write_text(out / "manifest.json", json.dumps(manifest, indent=indent) + "\n")
    return manifest


def _add_hostile(g: "_Gen", hspec: dict, manifest: dict, routes_doc: dict, sites: Path, robots_by_net: dict) -> None:
    """Add the hostile hosts of ``hspec``: files, routes, links from normal pages, manifest sections.

    Runs after the normal web is complete; it only appends one paragraph of
    absolute links to a few reachable normal pages (chosen with a separate
    random stream), so every other byte of the normal web stays the same and
    the normal ``expected`` sets are unchanged (checked).
    """
    from .hostile import build_hostile

    hh = build_hostile(hspec, addr=g.addr, port=g.port, seed=g.seed)
    pages, expected = manifest["pages"], manifest["expected"]
    clash = {h.host for h in hh} & set(g.hosts)
    assert not clash, clash
    dup_origs = {p.dup_of.url for p in g.pages.values() if p.dup_of is not None}
    eligible = [u for u in expected["nodes"]
                if (p := g.pages.get(u)) is not None and p.kind == "page" and not p.meta_nofollow
                and p.base_href is None and p.dup_of is None and u not in dup_origs and p.file]
    rng = random.Random(g.seed * 1_000_003 + 7)
    added: dict[str, list[tuple[str, str]]] = {}
    linked_from: dict[str, str] = {}
    for h in hh:
        src = rng.choice(eligible)
        linked_from[h.mode] = src
        added.setdefault(src, []).extend((h.mode, h.url(e)) for e in h.entries)
    for src in sorted(added):
        p = g.pages[src]
        f = sites / p.host / p.file
        body = f.read_bytes()
        cut = body.rfind(b"</body></html>")
        para = ("<p class=\"hostile\">" + " ".join(f"<a href=\"{u.replace('&', '&amp;')}\">{m}</a>"
                                                   for m, u in added[src]) + "</p>\n").encode()
        body = body[:cut] + para + body[cut:]
        f.write_bytes(body)
        e = pages[src]
        e["links"] = list(dict.fromkeys(e["links"] + [u for _, u in added[src]]))
        e["nofollow"] = [u for u in e["nofollow"] if u not in set(e["links"])]
        e["bytes"] = len(body)
    netlocs = [h.netloc for h in hh]
    exp = compute_expected(pages, manifest["seeds"], manifest["hosts"], robots_by_net, hostile_hosts=netlocs)
    linked = exp.pop("hostile_links")
    assert exp == expected, "hostile links changed the normal expectations"
    assert set(linked) == {h.url(e) for h in hh for e in h.entries}

    for h in hh:
        routes_doc["hosts"][h.host] = dict(sorted(h.routes.items()))
        if h.modes:
            routes_doc.setdefault("modes", {})[h.host] = h.modes
        for rel, data in sorted(h.files.items()):
            f = sites / h.host / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(data)
        (sites / h.host).mkdir(parents=True, exist_ok=True)

    def urls(h, paths):
        return [h.url(x) for x in paths]

    info = {}
    for h in hh:
        info[h.mode] = {
            "host": h.netloc,
            "urls": urls(h, h.entries),
            "linked_from": linked_from[h.mode],
            "params": h.params,
            "expect": h.expect,
            "errors": h.errors,
            "requested": urls(h, h.requested),
            "not_requested": urls(h, h.not_requested),
            "either": urls(h, h.either),
            "bounded": h.bounded,
            "out_of_scope_links": h.out_of_scope,
            "never_contacted": h.never_contacted,
            "outcomes": {h.url(x): o for x, o in sorted(h.outcomes.items())},
            "other_outcome": h.other_outcome,
            "facts": h.extra,
        }
    never = sorted({(a, int(p)) for h in hh for a, p in h.never_contacted})
    manifest["counts"]["bytes"] = sum(e["bytes"] for e in pages.values())
    manifest["counts"]["hostile_modes"] = len(hh)
    manifest["hostile_hosts"] = netlocs
    manifest["resolve"] = manifest["resolve"] + [f"{h.host}:{g.port}:{g.addr}" for h in hh]
    manifest["hostile"] = info
    manifest["expected_hostile"] = {
        "hosts": netlocs,
        "linked": linked,
        "requested": sorted(u for h in hh for u in urls(h, h.requested)),
        "not_requested": sorted(u for h in hh for u in urls(h, h.not_requested)),
        "either": sorted(u for h in hh for u in urls(h, h.either)),
        "bounded": sorted(u for h in hh if h.bounded for u in urls(h, h.entries)),
        "unlisted": {h.mode: h.extra["unlisted"] for h in hh if "unlisted" in h.extra},
        "out_of_scope_links": sorted({u for h in hh for u in h.out_of_scope}),
        "never_contacted": [list(x) for x in never],
    }


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def load_manifest(web_dir) -> dict:
    """The manifest of a generated web (raises FileNotFoundError / ValueError)."""
    path = Path(web_dir) / "manifest.json"
    with open(path) as fh:
        m = json.load(fh)
    if not isinstance(m, dict) or "port" not in m or "addr" not in m:
        raise ValueError(f"{path}: not an abc-testweb manifest")
    return m
