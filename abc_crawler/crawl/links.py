"""Which links of a page the crawl follows, and to which rank each goes (pure: no MPI, no I/O).

A link is joined with the page's base and canonicalized (:func:`abc_crawler.web.urls.canonicalize`),
checked against the scope (the resolve list, then the user's scope rules: ``--allowed-domains``,
``--url-filter``; a URL outside it is counted and never resolved) and the spider-trap limits, then
fingerprinted and given its owner rank (:mod:`abc_crawler.web.ownership`). The order is the life of a
URL: scope and trap filters come before the fingerprint, so a refused URL costs no hash. Decisions
are cached under a key naming exactly what they depend on.

Sitemap files (robots.txt ``Sitemap:`` lines, ``/sitemap.xml`` of seed hosts, sitemap index
entries) pass the host-level scope only (:meth:`LinkClassifier.sitemap_targets`): a filter written
for pages should not hide a site's list of them (:mod:`abc_crawler.net.sitemaps`).
"""
from __future__ import annotations

from collections import Counter

from ..sched.limits import trap_reason
from ..graph.metrics import url_wire_cost
from ..web.ownership import Assignment
from ..web.scope import Scope, ScopeRules
from ..web.urls import COMPILED, UrlError, canonicalize, canonicalize_reference, fingerprint, host_of, scheme_of
from ..web._linkpass import classify as compiled_classify, link_pass

__all__ = ["LinkClassifier", "Target", "CACHE_GENERATION", "DecisionCache"]

#: ``(canonical URL, fingerprint, owner rank, wire bytes)``; wire bytes: what sending the URL to its
#: owner costs, 0 if it is this rank's
Target = tuple[str, int, int, int]
#: the decision cache keeps at most twice this many entries: two generations, the older dropped when
#: the newer fills (a decision used again is carried into the newer, so a site's menu links stay)
CACHE_GENERATION = 32_768


class DecisionCache:
    """Link decisions by key, bounded: a newer and an older generation of at most
    :data:`CACHE_GENERATION` entries each. A miss in the newer that hits the older moves the entry
    into the newer; when the newer is full it becomes the older and the old older is dropped. So
    a rank holds at most ``2 * generation`` decisions (about 390 B each, measured: the key, the
    canonical URL and the decision's tuple; 25 MB at the default) however long it crawls, and the
    decisions in use survive. (It was one dict emptied at 262,144 entries: up to 100 MB a rank.)"""

    __slots__ = ("new", "old", "generation")

    def __init__(self, generation: int = CACHE_GENERATION):
        if generation < 1:
            raise ValueError("a cache generation holds at least one entry")
        self.generation = generation
        self.new: dict = {}
        self.old: dict = {}

    def __len__(self) -> int:
        return len(self.new) + len(self.old)

    def __iter__(self):
        yield from self.new
        yield from (k for k in self.old if k not in self.new)

    def get(self, key):
        hit = self.new.get(key)
        if hit is None:
            hit = self.old.get(key)
            if hit is not None:
                self.put(key, hit)
        return hit

    def put(self, key, hit) -> None:
        new = self.new
        if len(new) >= self.generation:
            self.old = new
            new = self.new = {}
        new[key] = hit


_C0_SPACE = "".join(map(chr, range(33)))


class LinkClassifier:
    """Link decisions of one rank: ``targets(page, base, hrefs)``; reasons counted into ``links``
    (and the hosts of URLs out of the resolve list or ``--allowed-domains`` into
    ``out_of_scope_hosts``; sitemap files into ``sitemaps``)."""

    def __init__(self, scope: Scope, assignment: Assignment, rank: int, *, max_links_per_page: int,
                 max_url_length: int, max_path_depth: int, max_segment_repeats: int,
                 links: Counter | None = None, out_of_scope_hosts: Counter | None = None,
                 rules: ScopeRules | None = None, sitemaps: Counter | None = None,
                 requisites_any_host: bool = False):
        self.scope = scope
        # --requisites-any-host: a page's requisites pass the resolve list, the address rule and the
        # trap limits only, not --allowed-domains and the URL filters (Heritrix's transclusion rule)
        self.requisites_any_host = requisites_any_host
        self._any_host_cache = DecisionCache()
        self.rules = rules if rules is not None else ScopeRules()
        self.assign = assignment
        self.rank = rank
        self.max_links = max_links_per_page
        self.trap_limits = {"max_length": max_url_length, "max_depth": max_path_depth,
                            "max_repeats": max_segment_repeats}
        self.links = links if links is not None else Counter()
        self.out_of_scope_hosts = out_of_scope_hosts if out_of_scope_hosts is not None else Counter()
        self.sitemaps = sitemaps if sitemaps is not None else Counter()
        self.cache = DecisionCache()          # decisions by key, bounded (DecisionCache)

    @property
    def cached_decisions(self) -> int:
        """Decisions held by the two caches (each bounded: :class:`DecisionCache`)."""
        return len(self.cache) + len(self._any_host_cache)

    @classmethod
    def from_config(cls, cfg, scope: Scope, assignment: Assignment, rank: int, counters,
                    rules: ScopeRules | None = None) -> "LinkClassifier":
        return cls(scope, assignment, rank, max_links_per_page=cfg.max_links_per_page,
                   max_url_length=cfg.max_url_length, max_path_depth=cfg.max_path_depth,
                   max_segment_repeats=cfg.max_segment_repeats, links=counters.links,
                   out_of_scope_hosts=counters.out_of_scope_hosts, rules=rules, sitemaps=counters.sitemaps,
                   requisites_any_host=cfg.requisites_any_host)

    def target(self, url: str) -> Target:
        """The :data:`Target` of a canonical URL."""
        fp = fingerprint(url)
        r = self.assign.owner(url, fp)
        return url, fp, r, (0 if r == self.rank else url_wire_cost(len(url.encode())))

    def classify_reference(self, href: str, base_url: str, any_host: bool = False) -> tuple:
        """A :data:`Target` to follow, else ``(None, reason, detail)``; ``detail``: the host of a URL
        out of the resolve list or ``--allowed-domains``, else None. ``any_host``: the user's scope
        rules are not applied (a requisite under ``--requisites-any-host``)."""
        try:
            url = canonicalize_reference(href, base_url)
        except UrlError:
            return None, "invalid", None
        if url is None:
            return None, "not_http", None
        if not self.scope.allows_url(url):
            return None, "out_of_scope", host_of(url)
        if self.rules.active and not any_host:
            why = self.rules.reason(url)
            if why is not None:
                return None, why, (host_of(url) if why == "out_of_scope_domain" else None)
        trap = trap_reason(url, **self.trap_limits)
        if trap is not None:
            return None, trap, None
        return self.target(url)

    #: ``classify(href, base_url, any_host=False)``: :meth:`classify_reference` compiled
    #: (:func:`abc_crawler.web._linkpass.classify`), where ada's C functions are reachable
    classify = compiled_classify if COMPILED else classify_reference

    def targets(self, page_url: str, base: str | None, hrefs: list[str], requisite: bool = False) -> list[Target]:
        """The links of a page to follow (distinct, in page order); links not followed are counted
        by reason. ``requisite``: the page's requisites (with ``--requisites-any-host`` they are not
        held to the user's scope rules). One compiled pass over the references
        (:func:`abc_crawler.web._linkpass.link_pass`); :meth:`targets_reference` is the same in Python."""
        hrefs, scheme, origin, base_dir, cache, decide = self._page(page_url, base, hrefs, requisite, self.classify)
        return link_pass(hrefs, scheme, origin, base_dir, cache, decide, self.links, self.out_of_scope_hosts)

    def _page(self, page_url: str, base: str | None, hrefs: list[str], requisite: bool, classify) -> tuple:
        """What a page's references are decided with: the references (at most ``max_links``; those
        over it counted), the base's scheme, origin and directory, the decision cache and
        ``decide(href)``, the decision of a reference not in it (by ``classify``)."""
        any_host = requisite and self.requisites_any_host
        try:
            base_url = canonicalize(base, page_url) if base else page_url
        except UrlError:
            base_url = page_url
        if base_url is None:
            base_url = page_url
        if len(hrefs) > self.max_links:
            self.links["over_page_limit"] += len(hrefs) - self.max_links
            hrefs = hrefs[:self.max_links]
        if type(hrefs) is not list:          # the compiled pass takes a list
            hrefs = list(hrefs)
        nq = base_url.find("?")
        base_dir = base_url[: base_url.rfind("/", 0, nq if nq >= 0 else len(base_url)) + 1]
        colon = base_url.find("://")
        scheme = base_url[:colon + 1]
        slash = base_url.find("/", colon + 3)
        origin = base_url if slash < 0 else base_url[:slash]
        cache = self._any_host_cache if any_host else self.cache
        if len(base_url) > self.trap_limits["max_length"]:
            # a <base href> longer than --max-url-length: references are joined with the part of
            # the base they depend on (:meth:`_classify_long_base`), not parsed with the whole base each
            def decide(href, long=self._classify_long_base):
                return long(href, base_url, base_dir, origin, any_host, classify)
        else:
            def decide(href):
                return classify(href, base_url, any_host)
        return hrefs, scheme, origin, base_dir, cache, decide

    def targets_reference(self, page_url: str, base: str | None, hrefs: list[str],
                          requisite: bool = False) -> list[Target]:
        """:meth:`targets` in Python: the reference its compiled pass is tested against."""
        hrefs, scheme, origin, base_dir, cache, decide = self._page(page_url, base, hrefs, requisite,
                                                                    self.classify_reference)
        links = self.links
        out: dict[int, tuple] = {}
        # Decisions are cached, with everything a followed link needs later (fingerprint, owner,
        # wire bytes), under a key that names what the decision depends on:
        # - an absolute "http(s)://..." reference: nothing else (its scheme lower-cased);
        # - a root-relative "/path" reference: the base's origin;
        # - a scheme-relative "//host/path" reference: the base's scheme;
        # - any other relative reference: the base's directory.
        # The fragment is left out of the key (canonical URLs have none). References that
        # depend on the base's own path or query ("", "?q", "#f") are not cached.
        newer = cache.new                 # the newer generation first, inline (most hits are there)
        oos = self.out_of_scope_hosts
        for href in hrefs:
            key = None
            if href and href[0] not in "?# \t\n\r":
                cut = href.find("#")
                k = href if cut < 0 else href[:cut]
                h8 = k[:8].lower()
                if h8.startswith("http://") or h8 == "https://":
                    key = h8 + k[8:]
                elif k[0] == "/":
                    key = (scheme, k) if k[1:2] in ("/", "\\") else (origin, k)
                else:
                    key = (base_dir, k)
                hit = newer.get(key)
                if hit is None:
                    hit = cache.get(key)
                    newer = cache.new     # a hit in the older may have started a new generation
            else:
                hit = None
            if hit is None:
                hit = decide(href)
                if key is not None:
                    cache.put(key, hit)
                    newer = cache.new
            if hit[0] is not None:
                out[hit[1]] = hit
            else:
                links[hit[1]] += 1
                if hit[2] is not None:
                    oos[hit[2]] += 1
        return list(out.values())

    def _classify_long_base(self, href: str, base_url: str, base_dir: str, origin: str, any_host: bool,
                            classify) -> tuple:
        """:meth:`classify` against a base longer than ``--max-url-length`` (only a page's ``<base
        href>`` can be: the page's own URL passed the limit). Joining each reference with the
        whole base cost time in the base's length, so a page of a 5 MB base and 10,000 links took
        75 s. The reference is joined with the part of the base it depends on, which gives the
        same URL: an absolute URL or one with a scheme with the origin (the base does not matter),
        ``/x`` and ``//h/x`` with the origin, ``?q`` with the base without its query, a relative
        path with the base's directory. What would need more than ``--max-url-length`` characters
        of the base (a relative path under a longer directory, ``?q`` under a longer path, ``#f``
        and ``""``, which are the base itself) is counted ``url_too_long`` unjoined: a reason,
        where the join could have found another (out of scope, a URL filter) or, through ``..``,
        a shorter URL. ``classify``: what decides the joined reference (:meth:`classify` or
        :meth:`classify_reference`)."""
        limit = self.trap_limits["max_length"]
        # the reference as the URL parser reads it: C0 controls and spaces around it dropped, tabs
        # and newlines inside it removed; its fragment does not matter
        ref = href.strip(_C0_SPACE)
        if "\t" in ref or "\n" in ref or "\r" in ref:
            ref = ref.replace("\t", "").replace("\n", "").replace("\r", "")
        cut = ref.find("#")
        ref = ref if cut < 0 else ref[:cut]
        # /x, //h/x (\\ as / in http), a:b (a scheme is ASCII: "é:x" is a relative path)
        if ref[:1] in ("/", "\\") or (scheme_of(ref) and ref.partition(":")[0].isascii()):
            return classify(href, origin + "/", any_host)
        if ref[:1] == "?":
            nq = base_url.find("?")
            base = base_url if nq < 0 else base_url[:nq]
        elif ref:
            base = base_dir
        else:
            base = base_url                  # "" or "#f": the base itself
        if len(base) <= limit:
            return classify(href, base, any_host)
        return None, "url_too_long", None

    def host_in_scope(self, url: str) -> bool:
        """The host-level scope of a canonical URL: in the resolve list and ``--allowed-domains``
        (robots.txt redirects, sitemap files)."""
        return self.scope.allows_url(url) and self.rules.host_reason(url) is None

    def sitemap_targets(self, base: str | None, urls: list[str], mine_only: bool = False) -> list[Target]:
        """Sitemap files to fetch, from ``urls`` (joined with ``base`` when given): canonical and
        within the host-level scope; ``mine_only``: only those this rank owns. Counted into
        ``sitemaps`` (``bad_loc``, ``out_of_scope``, ``files_listed``)."""
        sm = self.sitemaps
        out = []
        for u in urls:
            try:
                url = canonicalize(u, base) if base else canonicalize(u)
            except UrlError:
                url = None
            if url is None:
                sm["bad_loc"] += 1
                continue
            if not self.host_in_scope(url):
                sm["out_of_scope"] += 1
                continue
            t = self.target(url)
            if not mine_only or t[2] == self.rank:
                out.append(t)
        sm["files_listed"] += len(out)
        return out
