"""What a final answer becomes: the WARC records, the page's outcome for rank 0's graph, and
the links to follow (the body is inflated within the bomb limit and parsed with lxml).

A ``304 Not Modified`` to a conditional request (``--previous``) stands for the earlier 200: it is
stored as a server-not-modified revisit of the earlier payload, counted (``not_modified``, and as
a page crawled with the earlier body's size), and when the earlier page was a graph node it is one
again, with the links the earlier session found on it — so the graph and the exchange are what
fetching the page would have given."""
from __future__ import annotations

from ..fetcher import Response
from ..limits import InflateError, inflate
from ..parser import charset_of, extract_links
from ..urls import fingerprint, scheme_of
from ..validators import PreviousShare, ValidatorLog
from ..warc import RankWarc
from .counters import RankCounters
from .links import LinkClassifier, Target

__all__ = ["PageProcessor", "PageOutcome"]

#: ``(status (-1: transport failure), body bytes, is a graph node, links to follow, redirect hops)``
PageOutcome = tuple[int, int, bool, list[Target], int]


class PageProcessor:
    """One rank's page processing: ``outcome(response, hops_in)``."""

    def __init__(self, warc: RankWarc, links: LinkClassifier, counters: RankCounters, *, max_redirects: int,
                 max_inflated_bytes: int, previous: PreviousShare | None = None,
                 validators: ValidatorLog | None = None):
        self.warc = warc
        self.links = links
        self.counters = counters
        self.max_redirects = max_redirects
        self.max_inflated = max_inflated_bytes
        self.previous = previous
        self.validators = validators

    def outcome(self, r: Response, hops_in: int, fp: int | None = None) -> PageOutcome:
        """Record the answer in the WARC file and say what it is; ``hops_in``: the redirect hops that
        led to this URL."""
        c = self.counters
        if r.error is not None:
            c.pages_failed += 1
            c.errors[r.error] += 1
            return -1, 0, False, [], 0
        if r.status == 304:
            return self.not_modified(r, fingerprint(r.url) if fp is None else fp)
        nbytes = len(r.body)
        c.bytes += nbytes
        if self.warc.write(r):
            c.duplicates += 1
        if 300 <= r.status < 400:
            c.pages_redirected += 1
            loc = r.header("location")
            if not loc:
                return r.status, nbytes, False, [], 0
            if scheme_of(loc) not in ("", "http", "https"):
                c.links["redirect_bad_scheme"] += 1
                c.errors["redirect_unsupported_scheme"] += 1
            if hops_in + 1 > self.max_redirects:
                c.errors["redirect_limit"] += 1
                return r.status, nbytes, False, [], 0
            return r.status, nbytes, False, self.links.targets(r.url, None, [loc]), hops_in + 1
        if r.status == 200:
            c.pages_ok += 1
            if r.content_type != "text/html":
                c.links["not_html_pages"] += 1
                return r.status, nbytes, False, [], 0
            try:
                body = inflate(r.body, r.header("content-encoding"), self.max_inflated)
            except InflateError as exc:
                c.errors[exc.kind] += 1
                return r.status, nbytes, False, [], 0
            parsed = extract_links(body, charset_of(r.header("content-type")))
            if not parsed.ok:
                c.errors["unparsable_html"] += 1
                return r.status, nbytes, False, [], 0
            c.nodes += 1
            c.links["nofollow"] += len(parsed.nofollow)
            return r.status, nbytes, True, self.links.targets(r.url, parsed.base, parsed.links), 0
        if r.status >= 400:
            c.pages_failed += 1
            c.errors[f"http_{r.status // 100}xx"] += 1
        return r.status, nbytes, False, [], 0

    def not_modified(self, r: Response, fp: int) -> PageOutcome:
        """A 304: the earlier answer it stands for, or (not asked conditionally) a plain status."""
        c = self.counters
        prev = self.previous.lookup(fp) if self.previous is not None else None
        if prev is None:                         # a 304 to an unconditional request: nothing to stand for
            c.errors["not_modified_unasked"] += 1
            self.warc.write(r)
            return r.status, 0, False, [], 0
        c.not_modified += 1
        c.pages_ok += 1
        c.bytes += prev.body_bytes
        if self.validators is not None:
            self.validators.expect_not_modified(r.url, prev)
        self.warc.write_not_modified(r, prev.payload_url, prev.payload_date, prev.digest)
        if not prev.node:
            return r.status, prev.body_bytes, False, [], 0
        c.nodes += 1
        return r.status, prev.body_bytes, True, self.links.targets(r.url, None, prev.links), 0
