"""What happens to a request after its answer: pure functions of the facts, returning a value.

* :func:`after_cut` — a request cut at the end of its phase slot: asked again in the host's next
  slot, or (after too many cuts) handled as a transient failure;
* :func:`after_answer` — a final answer or transport failure: retried after a back-off, the host
  given up, or final;
* :func:`links_depth` — how deep a final answer's links are, and whether they are followed
  (``--max-depth``).

The cut's cause itself is :func:`abc_crawler.sched.phases.cut_cause`.
"""
from __future__ import annotations

from ..sched.limits import RETRYABLE_ERRORS, RETRYABLE_STATUS, retry_delay
from ..sched.phases import CUT_SLOW, CUT_WARM

__all__ = ["MAX_FREE_CUTS", "SLOT_ERRORS", "after_cut", "after_answer", "links_depth", "budget_share",
           "budget_by_work"]

#: a URL cut at slot ends this many times without its own fault (late start, starved rank) is
#: handled as a transient failure (retried with back-off, then failed as ``slot_never_full``)
MAX_FREE_CUTS = 24
#: error kinds of requests that never fitted a slot (retryable like transport failures)
SLOT_ERRORS = ("slot_too_short", "slot_never_full")
#: longest back-off, seconds (Retry-After included)
MAX_BACKOFF = 60.0


def after_cut(cause: str, counted: int, free: int, max_slot_cuts: int) -> tuple[str, str | None]:
    """``("again", None)`` — put back, asked again in the host's next slot — or ``("fail",
    kind)`` — a transient failure of that kind. ``counted`` / ``free``: the URL's counted and
    uncounted cuts so far, this one included.

    >>> after_cut("slow_response", 1, 0, 3), after_cut("slow_response", 3, 0, 3)
    (('again', None), ('fail', 'slot_too_short'))
    >>> after_cut("late_start", 0, 24, 3), after_cut("warm_up", 0, 99, 3)
    (('fail', 'slot_never_full'), ('again', None))
    """
    if cause == CUT_SLOW:
        return ("fail", "slot_too_short") if counted >= max_slot_cuts else ("again", None)
    if cause != CUT_WARM and free >= MAX_FREE_CUTS:
        return "fail", "slot_never_full"
    return "again", None


def after_answer(error: str | None, status: int, retry_after: str | None, attempts: int, host_fails: int, *,
                 max_retries: int, host_max_failures: int, backoff: float) -> tuple[str, float]:
    """``("dead_host", 0)``, ``("retry", delay)`` or ``("final", 0)`` for a URL's answer
    (``error``: a transport or slot error kind, else None with the HTTP ``status``).

    ``attempts``: the URL's retries so far; ``host_fails``: the host's consecutive failures,
    this one included.

    >>> kw = dict(max_retries=2, host_max_failures=8, backoff=1.0)
    >>> after_answer("timeout", 0, None, 0, 1, **kw), after_answer("timeout", 0, None, 2, 1, **kw)
    (('retry', 1.0), ('final', 0.0))
    >>> after_answer(None, 503, "7", 1, 0, **kw), after_answer(None, 404, None, 0, 0, **kw)
    (('retry', 7.0), ('final', 0.0))
    >>> after_answer("recv_error", 0, None, 0, 8, **kw)
    ('dead_host', 0.0)
    """
    retryable = error in RETRYABLE_ERRORS or error in SLOT_ERRORS or (error is None and status in RETRYABLE_STATUS)
    if not retryable:
        return "final", 0.0
    if host_fails >= host_max_failures:
        return "dead_host", 0.0
    if attempts < max_retries:
        return "retry", retry_delay(attempts + 1, retry_after if error is None else None, backoff, MAX_BACKOFF)
    return "final", 0.0


def links_depth(page_depth: int, redirect: bool, max_depth: int) -> tuple[int, bool]:
    """``(depth, follow)`` of the links of a page ``page_depth`` link hops from a seed: a link is one
    hop deeper than its page, a redirect's target as deep as its source; followed while the depth
    is at most ``max_depth``.

    >>> links_depth(0, False, 1), links_depth(1, False, 1), links_depth(1, True, 1)
    ((1, True), (2, False), (1, True))
    """
    depth = page_depth + (0 if redirect else 1)
    return depth, depth <= max_depth


def requisite_depth(page_depth: int, page_is_html: bool, max_depth: int) -> tuple[int, bool]:
    """``(depth, follow)`` of the requisites of a URL ``page_depth`` link hops from a seed: an HTML
    page's are one hop deeper, a style sheet's as deep as it (its images and imports belong to the
    same page); fetched up to one hop past ``max_depth`` (wget's --page-requisites, Heritrix's
    transclusion), so a page at the depth limit still replays whole.

    >>> requisite_depth(2, True, 2), requisite_depth(3, False, 2), requisite_depth(3, True, 2)
    ((3, True), (3, True), (4, False))
    """
    depth = page_depth + (1 if page_is_html else 0)
    return depth, depth <= max_depth + 1


def budget_by_work(n: int, work: list[int], rank: int) -> int:
    """This rank's share of ``n`` requests split over the ranks in proportion to the URLs each has
    queued (``work``, one count per rank; largest remainders, ties to the smaller rank; evenly when
    none has any). A rank with nothing queued gets nothing, so a limit is never held back by ranks
    that cannot use their share — under a part vector the work may sit on one rank.

    >>> [budget_by_work(10, [0, 0, 0, 5], r) for r in range(4)], [budget_by_work(2, [3, 1, 0, 0], r) for r in range(4)]
    ([0, 0, 0, 10], [2, 0, 0, 0])
    >>> [budget_by_work(3, [0, 0, 0, 0], r) for r in range(4)]
    [1, 1, 1, 0]
    """
    total = sum(work)
    if total <= 0:
        return budget_share(n, len(work), rank)
    quota = [n * w / total for w in work]
    base = [int(q) for q in quota]
    left = n - sum(base)
    for r in sorted(range(len(work)), key=lambda r: (-(quota[r] - base[r]), r))[:left]:
        base[r] += 1
    return base[rank]


def budget_share(n: int, ranks: int, rank: int) -> int:
    """This rank's share of ``n`` requests split over ``ranks`` (the first ``n % ranks`` get one more).

    >>> [budget_share(10, 4, r) for r in range(4)]
    [3, 3, 2, 2]
    """
    return n // ranks + (1 if rank < n % ranks else 0)
