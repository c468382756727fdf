"""What a final answer becomes: the WARC records, the page's outcome for rank 0's graph, and
the links to follow (the body is stored as received, decoded within the bomb limit and parsed
with lxml); and what a sitemap file lists (:func:`abc_crawler.net.sitemaps.read_sitemap`), which is
not a page: not stored, not reported to rank 0, its URLs not links.

A ``304 Not Modified`` to a conditional request (``--previous``) stands for the earlier 200: it is
stored as a server-not-modified revisit of the earlier payload, counted (``not_modified``, and as
a page crawled with the earlier body's size), and when the earlier page was a graph node it is one
again, with the links the earlier session found on it — so the graph and the exchange are what
fetching the page would have given."""
from __future__ import annotations

from ..net.fetcher import Response
from ..sched.limits import InflateError, inflate
from ..web.parser import EMBED, NAV, REDIRECT, REFRESH, charset_of, css_links, extract_links, header_links, is_css, is_html
from ..net.sitemaps import MAX_INDEX_DEPTH, read_sitemap
from ..web.urls import encode_query, fingerprint, query_codec, scheme_of
from ..store.validators import PreviousShare, ValidatorLog
from ..store.warc import RankWarc
from .counters import RankCounters
from .links import LinkClassifier, Target

__all__ = ["PageProcessor", "PageOutcome", "SitemapOutcome"]

#: ``(status (-1: transport failure), body bytes, is a graph node, links to follow, redirect hops,
#: kind)``; kind: how the request failed or why the page is not a node ("" for a node or a redirect)
PageOutcome = tuple[int, int, bool, list[Target], int, str]
#: ``(page URLs listed, sitemap files listed, their index level)``
SitemapOutcome = tuple[list[Target], list[Target], int]


class PageProcessor:
    """One rank's page processing: ``outcome(response, hops_in)``; sitemap files:
    ``sitemap_outcome(response, level)``."""

    def __init__(self, warc: RankWarc, links: LinkClassifier, counters: RankCounters, *, max_redirects: int,
                 max_inflated_bytes: int, previous: PreviousShare | None = None,
                 validators: ValidatorLog | None = None, requisites: bool = True, outlinks: bool = True):
        self.warc = warc
        self.outlinks = outlinks and warc.enabled   # --warc-outlinks: a metadata record of each answer's links
        self.requisites = requisites             # --page-requisites
        # the last answer's requisites (embeds: style sheets, images, scripts, frames; a style
        # sheet's url() and @import; Link headers) and refresh targets (<meta http-equiv=refresh>,
        # the Refresh header), beside the navigation links outcome() returns
        self.embeds: list[Target] = []
        self.refresh: list[Target] = []
        self.links = links
        self.counters = counters
        self.max_redirects = max_redirects
        self.max_inflated = max_inflated_bytes
        self.previous = previous
        self.validators = validators
        # the last answer's payload digest ("sha1:BASE32", "-": none) and what its WARC record is
        # ("duplicate:digest", "revisit" for a 304, ""), for the crawl log
        self.digest = "-"
        self.stored_as = ""

    def decoded(self, r: Response) -> tuple[bytes | None, str | None]:
        """The body with its Content-Encoding undone (within --max-inflated-bytes), or (None, error kind)."""
        enc = r.header("content-encoding")
        if not enc:
            return r.body, None
        try:
            return inflate(r.body, enc, self.max_inflated), None
        except InflateError as exc:
            return None, exc.kind

    def outcome(self, r: Response, hops_in: int, fp: int | None = None) -> PageOutcome:
        """Record the answer in the WARC file (as received) and say what it is; ``hops_in``: the
        redirect hops that led to this URL; ``fp``: the URL's fingerprint if known."""
        c = self.counters
        self.digest, self.stored_as = "-", ""
        self.embeds, self.refresh = [], []
        if r.error is not None:
            c.pages_failed += 1
            c.errors[r.error] += 1
            return -1, 0, False, [], 0, r.error
        if r.status == 304:
            return self.not_modified(r, fingerprint(r.url) if fp is None else fp)
        nbytes = len(r.body)
        c.bytes += nbytes
        body, decode_error = self.decoded(r)
        c.bytes_decoded += nbytes if body is None else len(body)
        out = self._answered(r, hops_in, nbytes, body, decode_error)
        # stored with its links (a metadata record, --warc-outlinks), once they are known
        if self.warc.write(r, self._outlinks(out[3], out[4]) if self.outlinks else ""):
            c.duplicates += 1
            self.stored_as = "duplicate:digest"
        self.digest = self.warc.last_payload_digest   # the digest the writer computed
        return out

    def _outlinks(self, links: list[Target], hops: int) -> str:
        """The ``outlink: URL HOP`` lines of an answer's metadata record: its links (a redirect's
        target: ``R``), requisites ``E``, refresh targets ``R``."""
        nav = "R" if hops else "L"
        return "".join([*(f"outlink: {t[0]} {nav}\r\n" for t in links),
                        *(f"outlink: {t[0]} E\r\n" for t in self.embeds),
                        *(f"outlink: {t[0]} R\r\n" for t in self.refresh)])

    def _answered(self, r: Response, hops_in: int, nbytes: int, body: bytes | None,
                  decode_error: str | None) -> PageOutcome:
        """What an answer (not an error, not a 304) is, and its links."""
        c = self.counters
        if 300 <= r.status < 400:
            c.pages_redirected += 1
            loc = r.header("location")
            if not loc:
                return r.status, nbytes, False, [], 0, "redirect_without_location"
            if scheme_of(loc) not in ("", "http", "https"):
                c.links["redirect_bad_scheme"] += 1
                c.errors["redirect_unsupported_scheme"] += 1
            if hops_in + 1 > self.max_redirects:
                c.errors["redirect_limit"] += 1
                return r.status, nbytes, False, [], 0, "redirect_limit"
            return r.status, nbytes, False, self.links.targets(r.url, None, [loc]), hops_in + 1, ""
        if r.status == 200:
            c.pages_ok += 1
            if r.truncated:                       # --accept-types: stored without its body
                c.errors["type_not_accepted"] += 1
                return r.status, nbytes, False, [], 0, "type_not_accepted"
            nav_h = self._header_links(r)          # Link and Refresh headers, whatever the type
            ctype = r.content_type
            if not is_html(ctype):                 # text/html and application/xhtml+xml
                c.links["not_html_pages"] += 1
                if self.requisites and decode_error is None and is_css(ctype):
                    self.embeds += self.links.targets(r.url, None, css_links(body), requisite=True)
                if self.embeds or self.refresh:
                    self._distinct(nav_h)
                return r.status, nbytes, False, nav_h, 0, "not_html"
            if decode_error is not None:
                c.errors[decode_error] += 1
                return r.status, nbytes, False, [], 0, decode_error
            parsed = extract_links(body, charset_of(r.header("content-type")), requisites=self.requisites)
            if not parsed.ok:
                c.errors["unparsable_html"] += 1
                return r.status, nbytes, False, [], 0, "unparsable_html"
            codec = query_codec(parsed.charset)
            if codec is not None:                  # not UTF-8: its links' queries in its encoding, as a browser's
                _queries_in(parsed, codec)
            c.nodes += 1
            c.links["nofollow"] += len(parsed.nofollow)
            nav = self.links.targets(r.url, parsed.base, parsed.links + parsed.related)
            if nav_h:
                known = {t[1] for t in nav}
                nav += [t for t in nav_h if t[1] not in known]
            if parsed.embeds:
                self.embeds += self.links.targets(r.url, parsed.base, parsed.embeds, requisite=True)
            if parsed.refresh:
                self.refresh += self.links.targets(r.url, parsed.base, parsed.refresh)
            if self.embeds or self.refresh:        # one link per target: navigation, then embed, then refresh
                self._distinct(nav)
            return r.status, nbytes, True, nav, 0, ""
        kind = f"status_{r.status}"
        if r.status >= 400:
            c.pages_failed += 1
            kind = f"http_{r.status // 100}xx"
            c.errors[kind] += 1
        return r.status, nbytes, False, [], 0, kind

    def _distinct(self, nav: list[Target]) -> None:
        """A target found as several kinds on one page is one link, of its first kind in the order
        navigation, embed, refresh (an image both linked and shown is a navigation link)."""
        seen = {t[1] for t in nav}
        embeds = []
        for t in self.embeds:
            if t[1] not in seen:
                seen.add(t[1])
                embeds.append(t)
        self.embeds = embeds
        self.refresh = [t for t in dict((t[1], t) for t in self.refresh).values() if t[1] not in seen]

    def _header_links(self, r: Response) -> list[Target]:
        """The ``Link`` header's requisites (into :attr:`embeds`) and navigation links (returned),
        and the ``Refresh`` header's target (into :attr:`refresh`), joined with the answer's URL."""
        link, refresh = r.header("link"), r.header("refresh")
        if link is None and refresh is None:
            return []
        embeds, nav, ref = header_links(link, refresh)
        if embeds and self.requisites:
            self.embeds += self.links.targets(r.url, None, embeds, requisite=True)
        if ref:
            self.refresh += self.links.targets(r.url, None, ref)
        return self.links.targets(r.url, None, nav) if nav else []

    def sitemap_outcome(self, r: Response, level: int) -> SitemapOutcome:
        """What a sitemap file's final answer lists: its page URLs (through the same checks as
        links, counted by reason into ``links`` when refused) and the sitemap files it names (a
        redirect's target at the same ``level``, index entries one level deeper, at most
        :data:`~abc_crawler.net.sitemaps.MAX_INDEX_DEPTH`). Counted into ``sitemaps`` and, for
        failures, ``errors`` as ``sitemap_<kind>``."""
        c = self.counters
        sm = c.sitemaps
        sm["fetched"] += 1
        if r.error is None and 300 <= r.status < 400 and r.header("location"):
            sm["redirects"] += 1
            return [], self.links.sitemap_targets(r.url, [r.header("location")]), level
        if r.error is not None or r.status != 200:
            sm["failed"] += 1
            c.errors[f"sitemap_{r.error or f'http_{r.status // 100}xx'}"] += 1
            return [], [], level
        try:
            f = read_sitemap(r.body, r.header("content-encoding"))
        except InflateError as exc:
            c.errors[f"sitemap_{exc.kind}"] += 1
            return [], [], level
        sm.update(f.counts)
        if f.kind == "too_large":
            c.errors["sitemap_too_large"] += 1
        pages = []
        for u in f.urls:
            hit = self.links.classify(u, r.url)
            if hit[0] is None:
                c.links[hit[1]] += 1
            else:
                pages.append(hit)
        sm["urls"] += len(pages)
        files: list[Target] = []
        if f.sitemaps and level >= MAX_INDEX_DEPTH:
            sm["too_deep"] += len(f.sitemaps)
        elif f.sitemaps:
            files = self.links.sitemap_targets(r.url, f.sitemaps)
        return pages, files, level + 1

    def not_modified(self, r: Response, fp: int) -> PageOutcome:
        """A 304: the earlier answer it stands for, or (not asked conditionally) a plain status."""
        c = self.counters
        prev = self.previous.lookup(fp) if self.previous is not None else None
        if prev is None:                         # a 304 to an unconditional request: nothing to stand for
            c.errors["not_modified_unasked"] += 1
            self.warc.write(r)
            self.digest = self.warc.last_payload_digest
            return r.status, 0, False, [], 0, "not_modified_unasked"
        c.not_modified += 1
        c.pages_ok += 1
        c.bytes += prev.body_bytes
        if self.validators is not None:
            self.validators.expect_not_modified(r.url, prev)
        nav = self._earlier_links(r.url, prev)
        self.warc.write_not_modified(r, prev.payload_url, prev.payload_date, prev.digest,
                                     self._outlinks(nav, 0) if self.outlinks else "")
        self.digest, self.stored_as = prev.digest, "revisit"
        if not prev.node:              # a style sheet keeps its requisites, a non-HTML page its Link header's links
            return r.status, prev.body_bytes, False, nav, 0, "status_304"
        c.nodes += 1
        return r.status, prev.body_bytes, True, nav, 0, ""

    def _earlier_links(self, url: str, prev) -> list[Target]:
        """The links the earlier session found on ``url``, by the kind it found them as: navigation
        links (returned), requisites (:attr:`embeds`; none with ``--no-page-requisites``) and
        refresh targets (:attr:`refresh`) — what fetching the page again would have given."""
        if not prev.links:
            return []
        if not any(prev.kinds):                    # navigation links only (and any page of a session before kinds)
            return self.links.targets(url, None, prev.links)
        by_kind: dict[int, list[str]] = {}
        for u, k in zip(prev.links, prev.kinds):
            by_kind.setdefault(k, []).append(u)
        if self.requisites and EMBED in by_kind:
            self.embeds = self.links.targets(url, None, by_kind[EMBED], requisite=True)
        if REFRESH in by_kind:
            self.refresh = self.links.targets(url, None, by_kind[REFRESH])
        return self.links.targets(url, None, by_kind.get(NAV, []) + by_kind.get(REDIRECT, []))


def _queries_in(parsed, codec: str) -> None:
    """The references of a page in encoding ``codec`` (not UTF-8) with their queries' non-ASCII
    characters percent-encoded in it (:func:`abc_crawler.web.urls.encode_query`)."""
    for name in ("links", "related", "embeds", "refresh"):
        hrefs = getattr(parsed, name)
        if hrefs and not all(h.isascii() for h in hrefs):
            setattr(parsed, name, [encode_query(h, codec) for h in hrefs])
    if parsed.base is not None:
        parsed.base = encode_query(parsed.base, codec)
