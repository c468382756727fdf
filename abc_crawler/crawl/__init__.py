"""One rank's crawl, along the life of a URL; each module holds one role:

=================  ===========================================================================
``links``          which links of a page are followed, and to which rank (pure: scope, traps,
                   canonical URL, fingerprint, owner; decisions cached)
``routing``        URL-seen test, frontier or outbox, the superstep report to rank 0
``slots``          phase slots: which hosts this rank may contact now, leases, work announcements
``fetching``       the Bucket's batches over pycurl: robots.txt, pacing, answers
``decisions``      pure decisions on an answer: cut, retry, give the host up, final
``pages``          a final answer: WARC records, inflate, parse, the page's outcome
``hosts``          per-host state in one place
``counters``       what a rank counts, and its idle time by cause
``state``          the versioned checkpoint state (plain data)
``loop``           the superstep loop; rank 0's role passed in
=================  ===========================================================================

The life of a URL: found on a page (or a seed) → ``links`` (scope and trap filters before the
fingerprint, then the owner) → ``routing`` (the URL-seen set lets it through once: the owner's
seen set gives "fetched at most once"; a local URL enters URLStates, a remote one the outbox,
exchanged at the end of the superstep) → the frontier's Bucket → ``slots`` (only when this rank
holds the host in the current slot) → ``fetching`` (robots.txt first, one connection per host,
politeness rest after) → ``decisions`` → ``pages`` (WARC, parse) → its links start again.
"""
from .loop import STATUS_FIELDS, RankCrawler, Rank0Role, StopFlag, step_seconds

__all__ = ["RankCrawler", "Rank0Role", "StopFlag", "STATUS_FIELDS", "step_seconds"]
