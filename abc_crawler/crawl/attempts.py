"""The crawl log's line of each fetch attempt of one rank (:mod:`abc_crawler.store.crawllog`): what
:class:`.fetching.BatchRunner` says of an answer or of a URL given up, with the discovery path and
via the router keeps (:mod:`.discovery`) and the digest the WARC writer computed (:mod:`.pages`).
Without a crawl log every call returns at once."""
from __future__ import annotations

from ..store.crawllog import CrawlLog
from ..net.fetcher import Response

__all__ = ["AttemptLog", "tries"]


def tries(n: int) -> list[str]:
    """The annotations of a URL's ``n``-th request: ``Nt`` past the first (Heritrix's tries).

    >>> tries(1), tries(3)
    ([], ['3t'])
    """
    return [f"{n}t"] if n > 1 else []


class AttemptLog:
    """The lines of one rank's answers; ``router``: its :class:`.routing.Router`, ``pages``: its
    :class:`.pages.PageProcessor`."""

    def __init__(self, log: CrawlLog | None, router, pages):
        self.log = log if log is not None else CrawlLog(None, 0, enabled=False)
        self.router = router
        self.pages = pages

    @property
    def enabled(self) -> bool:
        return self.log.enabled

    def path_via(self, idx: int | None) -> tuple[str, str] | None:
        """The discovery path and via of URL ``idx``, None without a log."""
        return self.router.path_via(idx) if self.log.enabled else None

    def answer(self, r: Response, idx: int | None, notes: list[str]) -> None:
        """An answer that is not final (a cut, a retry), or a sitemap file's."""
        if self.log.enabled:
            self.log.response(r, *self.router.path_via(idx), None, notes)

    def final(self, r: Response, path_via: tuple[str, str] | None, notes: list[str] | None, kind: str) -> None:
        """A final answer, once :meth:`.pages.PageProcessor.outcome` has stored it: the digest the WARC
        writer computed, how it was stored, and why an answered page was not used (``err=KIND``)."""
        if path_via is None:
            return
        p = self.pages
        notes = list(notes or ())
        if p.stored_as:
            notes.append(p.stored_as)
        if r.error is None and kind and kind != "not_html" and not kind.startswith(("http_", "status_")):
            notes.append(f"err={kind}")
        self.log.response(r, *path_via, p.digest if r.error is None else "-", notes)

    def robots(self, r: Response, redirects: int, via: str | None, cause: str | None) -> None:
        """A robots.txt answer: a prerequisite (``P``, an ``R`` per redirect followed), via the page
        that needed it or the robots.txt URL that redirected."""
        if self.log.enabled:
            self.log.response(r, "P" + "R" * redirects, via or "-", None,
                              [f"slotcut:{cause}"] if cause is not None else None)

    def late(self, r: Response, kind: str) -> None:
        """A robots.txt or sitemap answer read while the rank stops (not used)."""
        if self.log.enabled:
            self.log.response(r, "P" if kind == "robots" else "M", "-", None,
                              ["sitemap"] if kind == "sitemap" else None)

    def given_up(self, idx: int, url: str, kind: str) -> None:
        """A URL completed without a request (robots.txt disallows it, its host was given up)."""
        if self.log.enabled:
            self.log.given_up(url, kind, *self.router.path_via(idx))
