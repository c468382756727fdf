"""Politeness as spacing: how long a host rests after each request, and how much of a phase slot a
request may take so that the host is rested when the slot ends (pure functions).

The rule a webmaster judges is per request. After a request to a host that took ``t`` seconds
(sent to answer read), the next request to that host — from any rank — starts no earlier than

    end of the request + max(politeness delay, Crawl-delay, min(delay factor x t, max delay))

(Heritrix's ``max(minDelayMs, delayFactor x fetch time)`` capped at ``maxDelayMs``, with the
host's robots.txt Crawl-delay as a floor; a Crawl-delay above ``--max-crawl-delay`` means the
host is skipped, as Nutch does). The politeness delay is therefore also the least time between
the starts of two requests. A Bucket element's URLs share one keep-alive connection; their
requests are spaced like any others.

Across ranks (phase slots, :mod:`abc_crawler.sched.phases`): whoever contacts a shared host in a slot
leaves it *rested* by the end of the run of slots it holds: a request may start only when its
time limit plus the rest it would owe fits before the run's usable end
(:func:`request_budget`). The next holder may then start at its slot's usable start, with no
wait: the rest was kept on the previous holder's side, and the guard bands cover the clocks'
error. Nothing a holder needs comes from another rank, so no two ranks must agree on a host's
Crawl-delay or response time. A slot long enough for the longest rest in force plus a request
(:func:`slot_seconds_needed`; ``--phase-seconds auto``) lets every holder send at least one
request per slot it holds, so a host with queued work is never starved, whatever the ratio of
its rest to the slot: its next request comes within its rest plus at most one rotation of the
holders (and a hand-over gives a waiting rank the slot of a holder with nothing to do).

Examples
--------
>>> rest_after(0.004, delay=1.0, crawl_delay=0.0, factor=2.0, max_delay=30.0)
1.0
>>> rest_after(2.0, delay=1.0, crawl_delay=0.0, factor=2.0, max_delay=30.0)    # a slow answer
4.0
>>> rest_after(20.0, delay=1.0, crawl_delay=5.0, factor=2.0, max_delay=30.0)   # capped
30.0
>>> round(request_budget(10.0, 1.0, 2.0, 30.0), 6)   # T + max(1, 2T) <= 10
3.333333
>>> request_budget(0.5, 1.0, 2.0, 30.0)               # no room for the rest: no request
0.0
"""
from __future__ import annotations

import math

__all__ = ["rest_after", "request_budget", "slot_seconds_needed", "longest_rest", "start_threshold",
           "warm_slot_needed", "MIN_REQUEST_SECONDS", "SLOT_REST_SHARE", "WARM_SLOT_REQUESTS"]

#: shortest time a request may be given (below it, it waits for the host's next slot)
MIN_REQUEST_SECONDS = 0.02
#: the longest rest in force may take at most this share of a slot's usable length, so that a
#: holder has at least the rest of it for its requests (``--phase-seconds auto``)
SLOT_REST_SHARE = 0.8


def rest_after(seconds: float, *, delay: float, crawl_delay: float, factor: float, max_delay: float) -> float:
    """Seconds a host rests after a request that took ``seconds`` (from its end to the next start).

    The adaptive part (``factor`` x ``seconds``) is capped at ``max_delay``; the politeness delay
    and the host's Crawl-delay are floors that the cap never lowers (a Crawl-delay above
    ``--max-crawl-delay`` never gets here: the host is skipped).
    """
    adaptive = min(factor * max(seconds, 0.0), max_delay)
    return max(delay, crawl_delay, adaptive)


def request_budget(left: float, base: float, factor: float, max_delay: float) -> float:
    """The longest time limit ``T`` a request may be given when ``left`` seconds of its holder's run
    remain, so that it ends and its rest is over by then: the largest ``T`` with
    ``T + max(base, min(factor x T, max_delay)) <= left`` (``base``: the host's fixed rest,
    max(politeness delay, Crawl-delay)); 0.0 when not even an instant request fits.

    The left side grows with ``T``, so the answer is found region by region.

    >>> request_budget(10.0, 1.0, 0.0, 30.0)              # no adaptive part: left - base
    9.0
    >>> request_budget(100.0, 1.0, 2.0, 30.0)             # the cap binds: left - max_delay
    70.0
    >>> request_budget(1.2, 1.0, 2.0, 30.0) == 1.2 - 1.0  # 2T stays under the base rest
    True
    """
    if left <= base:
        return 0.0
    if factor <= 0.0:
        return left - base
    t = left - base                      # region 1: factor x T <= base
    if factor * t <= base:
        return t
    t = left / (1.0 + factor)            # region 2: base < factor x T <= max_delay
    if factor * t <= max_delay:
        return max(t, 0.0)
    return max(left - max(max_delay, base), 0.0)   # region 3: the cap binds


def longest_rest(delay: float, max_crawl_delay: float, factor: float, max_delay: float) -> float:
    """The longest rest a host can owe under these settings (a longer Crawl-delay skips the host).

    >>> longest_rest(1.0, 30.0, 2.0, 30.0), longest_rest(0.0, 0.5, 0.0, 30.0)
    (30.0, 0.5)
    """
    return max(delay, max_crawl_delay, max_delay if factor > 0 else 0.0)


def slot_seconds_needed(rest: float, guard: float, request: float = 1.0) -> float:
    """The shortest phase slot in which a host resting ``rest`` still gets a request of up to
    ``request`` seconds: the rest takes at most :data:`SLOT_REST_SHARE` of the usable length, which
    leaves room for the request (``guard``: the guard band at each end).

    >>> slot_seconds_needed(30.0, 0.005)
    37.51
    >>> slot_seconds_needed(0.0, 0.005, 0.2)
    0.21
    """
    usable = max(rest / SLOT_REST_SHARE, rest + request)
    return math.ceil(round((usable + 2 * guard) * 100, 6)) / 100


#: requests a warm-up slot must hold at the politeness delay (a slot that holds one request at a
#: long delay serves a host at half its rate, and each change of holder costs a rest)
WARM_SLOT_REQUESTS = 4


def warm_slot_needed(delay: float, guard: float) -> float:
    """The shortest warm-up slot (``--phase-warmup`` halves the slot length down to it, no further):
    :data:`WARM_SLOT_REQUESTS` requests at the politeness delay.

    >>> warm_slot_needed(5.0, 0.005), warm_slot_needed(0.0, 0.005)
    (20.03, 0.03)
    """
    return math.ceil(round((WARM_SLOT_REQUESTS * delay + MIN_REQUEST_SECONDS + 2 * guard) * 100, 6)) / 100


def start_threshold(host_time: float | None, full_budget: float) -> float:
    """The least time limit a request may start with: twice the host's measured response time, so
    that a request unlikely to finish waits for the host's next slot — but never more than 90 %
    of the limit a request gets at the start of a slot it holds (``full_budget``), so that a slow
    host still gets a request at the start of every slot it is held in (and a cut then counts:
    the server did not answer within a full slot). Without that cap a slow host would never be
    asked again and the crawl would stall.

    >>> start_threshold(None, 5.0), start_threshold(0.1, 5.0), start_threshold(4.0, 5.0)
    (0.02, 0.2, 4.5)
    """
    if host_time is None:
        return MIN_REQUEST_SECONDS
    return max(MIN_REQUEST_SECONDS, min(2 * host_time, 0.9 * full_budget))
