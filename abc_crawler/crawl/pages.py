"""What a final answer becomes: the WARC records, the page's outcome for rank 0's graph, and
the links to follow (the body is inflated within the bomb limit and parsed with lxml)."""
from __future__ import annotations

from ..fetcher import Response
from ..limits import InflateError, inflate
from ..parser import charset_of, extract_links
from ..urls import scheme_of
from ..warc import RankWarc
from .counters import RankCounters
from .links import LinkClassifier, Target

__all__ = ["PageProcessor", "PageOutcome"]

#: ``(status (-1: transport failure), body bytes, is a graph node, links to follow, redirect hops,
#: kind)``; kind: how the request failed or why the page is not a node ("" for a node or a redirect)
PageOutcome = tuple[int, int, bool, list[Target], int, str]


class PageProcessor:
    """One rank's page processing: ``outcome(response, hops_in)``."""

    def __init__(self, warc: RankWarc, links: LinkClassifier, counters: RankCounters, *, max_redirects: int,
                 max_inflated_bytes: int):
        self.warc = warc
        self.links = links
        self.counters = counters
        self.max_redirects = max_redirects
        self.max_inflated = max_inflated_bytes

    def outcome(self, r: Response, hops_in: int) -> PageOutcome:
        """Record the answer in the WARC file and say what it is; ``hops_in``: the redirect hops that
        led to this URL."""
        c = self.counters
        if r.error is not None:
            c.pages_failed += 1
            c.errors[r.error] += 1
            return -1, 0, False, [], 0, r.error
        nbytes = len(r.body)
        c.bytes += nbytes
        if self.warc.write(r):
            c.duplicates += 1
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
            if r.content_type != "text/html":
                c.links["not_html_pages"] += 1
                return r.status, nbytes, False, [], 0, "not_html"
            try:
                body = inflate(r.body, r.header("content-encoding"), self.max_inflated)
            except InflateError as exc:
                c.errors[exc.kind] += 1
                return r.status, nbytes, False, [], 0, exc.kind
            parsed = extract_links(body, charset_of(r.header("content-type")))
            if not parsed.ok:
                c.errors["unparsable_html"] += 1
                return r.status, nbytes, False, [], 0, "unparsable_html"
            c.nodes += 1
            c.links["nofollow"] += len(parsed.nofollow)
            return r.status, nbytes, True, self.links.targets(r.url, parsed.base, parsed.links), 0, ""
        kind = f"status_{r.status}"
        if r.status >= 400:
            c.pages_failed += 1
            kind = f"http_{r.status // 100}xx"
            c.errors[kind] += 1
        return r.status, nbytes, False, [], 0, kind
