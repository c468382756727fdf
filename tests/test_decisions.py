"""abc_crawler/crawl/decisions.py: what happens to a request after its answer, decision by decision,
with the edge cases (issue 32: the module had its doctests only).

The expected values are written from the rules the docstrings and docs/SESSION_FORMAT.md state
(``--max-slot-cuts``, 24 uncounted cuts make ``slot_never_full``, ``--max-retries`` after a
timeout, reset, 429 or 503, the back-off doubling from ``--retry-backoff-seconds`` up to 60 s, a
``Retry-After`` of seconds or an HTTP date, ``--max-depth``, requisites one hop past it), not from
the functions' own code; the properties are checked over every small input.
"""
from __future__ import annotations

import email.utils
import time

import pytest

from abc_crawler.crawl.decisions import (MAX_BACKOFF, MAX_FREE_CUTS, SLOT_ERRORS, after_answer, after_cut,
                                         budget_by_work, budget_share, links_depth, requisite_depth)

CAUSES = ("warm_up", "late_start", "starved", "slow_response")
KW = dict(max_retries=2, host_max_failures=8, backoff=1.0)


# -- after_cut --------------------------------------------------------------------------------------
@pytest.mark.parametrize("max_cuts", [1, 2, 3, 255])
def test_a_slow_response_fails_at_exactly_max_slot_cuts_counted_cuts(max_cuts):
    for counted in range(0, max_cuts + 3):
        got = after_cut("slow_response", counted, 0, max_cuts)
        assert got == (("fail", "slot_too_short") if counted >= max_cuts else ("again", None)), counted
    # uncounted cuts do not bring a slow response closer to failing
    assert after_cut("slow_response", max_cuts - 1, 10 ** 6, max_cuts) == ("again", None)


@pytest.mark.parametrize("cause", ["late_start", "starved"])
def test_uncounted_cuts_fail_as_slot_never_full_at_the_24th(cause):
    assert MAX_FREE_CUTS == 24
    for free in range(0, 30):
        want = ("fail", "slot_never_full") if free >= 24 else ("again", None)
        assert after_cut(cause, 0, free, 3) == want, free
    # counted cuts do not matter to them, however many (max_slot_cuts is for slow responses only)
    assert after_cut(cause, 99, 0, 3) == ("again", None)


def test_warm_up_cuts_never_fail():
    for free in (0, 23, 24, 25, 10 ** 6):
        for counted in (0, 3, 10 ** 6):
            assert after_cut("warm_up", counted, free, 3) == ("again", None)


def test_every_failure_kind_of_a_cut_is_a_retryable_slot_error():
    kinds = {after_cut(c, n, f, 3)[1] for c in CAUSES for n in range(6) for f in range(0, 30, 3)} - {None}
    assert kinds == set(SLOT_ERRORS) == {"slot_too_short", "slot_never_full"}


# -- after_answer -----------------------------------------------------------------------------------
@pytest.mark.parametrize("error", ["timeout", "connect_failed", "recv_error", "send_error", "empty_reply",
                                   "partial_body", "slot_too_short", "slot_never_full"])
def test_transient_failures_are_retried_max_retries_times_with_a_doubling_back_off(error):
    delays = []
    for attempts in range(0, 5):
        action, delay = after_answer(error, 0, None, attempts, 1, max_retries=3, host_max_failures=8, backoff=0.5)
        if attempts < 3:
            assert action == "retry", (error, attempts)
            delays.append(delay)
        else:
            assert (action, delay) == ("final", 0.0), (error, attempts)
    assert delays == [0.5, 1.0, 2.0]


@pytest.mark.parametrize("status", [429, 503])
def test_429_and_503_are_retried(status):
    assert after_answer(None, status, None, 0, 0, **KW) == ("retry", 1.0)
    assert after_answer(None, status, None, 2, 0, **KW) == ("final", 0.0)


@pytest.mark.parametrize("status", [200, 204, 301, 304, 400, 401, 403, 404, 410, 500, 502, 504, 599])
def test_other_statuses_are_final_at_once(status):
    assert after_answer(None, status, "5", 0, 0, **KW) == ("final", 0.0)
    # a dead host count does not turn a final answer into a dead host
    assert after_answer(None, status, None, 0, 100, **KW) == ("final", 0.0)


@pytest.mark.parametrize("error", ["body_too_large", "decompression_bomb", "address_refused", "not_html",
                                   "redirect_limit", "tls_certificate", "unparsable_html"])
def test_failures_that_would_fail_again_are_final(error):
    assert after_answer(error, 0, None, 0, 1, **KW) == ("final", 0.0)
    assert after_answer(error, 0, None, 0, 100, **KW) == ("final", 0.0)


def test_a_host_is_given_up_at_host_max_failures_consecutive_failures():
    for fails in range(0, 12):
        action, delay = after_answer("timeout", 0, None, 0, fails, **KW)
        assert (action == "dead_host") == (fails >= 8), fails
        if action == "dead_host":
            assert delay == 0.0
    # before the URL's own retries are counted: a host at its limit is given up even on a URL's
    # last attempt
    assert after_answer("timeout", 0, None, 2, 8, **KW) == ("dead_host", 0.0)
    assert after_answer(None, 503, None, 0, 8, **KW) == ("dead_host", 0.0)


def test_retry_after_seconds_are_followed_and_capped():
    assert after_answer(None, 503, "7", 0, 0, **KW) == ("retry", 7.0)
    assert after_answer(None, 429, "0", 0, 0, **KW) == ("retry", 0.0)
    assert after_answer(None, 429, " 2.5 ", 0, 0, **KW) == ("retry", 2.5)
    assert after_answer(None, 503, "86400", 0, 0, **KW) == ("retry", MAX_BACKOFF) and MAX_BACKOFF == 60.0
    # not a number nor a date: the back-off
    assert after_answer(None, 503, "soon", 1, 0, **KW) == ("retry", 2.0)
    assert after_answer(None, 503, "", 0, 0, **KW) == ("retry", 1.0)


def test_retry_after_as_an_http_date():
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    action, delay = after_answer(None, 503, later, 0, 0, **KW)
    assert action == "retry" and 20.0 <= delay <= 30.0, delay
    past = email.utils.formatdate(time.time() - 3600, usegmt=True)
    assert after_answer(None, 503, past, 0, 0, **KW) == ("retry", 0.0)
    far = email.utils.formatdate(time.time() + 10 ** 6, usegmt=True)
    assert after_answer(None, 503, far, 0, 0, **KW) == ("retry", MAX_BACKOFF)


def test_retry_after_is_ignored_on_a_transport_failure():
    """A Retry-After header belongs to an HTTP answer; a transport failure backs off by the rule."""
    assert after_answer("timeout", 0, "30", 0, 1, **KW) == ("retry", 1.0)
    assert after_answer("timeout", 0, "30", 1, 1, **KW) == ("retry", 2.0)


def test_the_back_off_is_capped_for_any_attempt_count():
    assert after_answer("timeout", 0, None, 5, 1, max_retries=10, host_max_failures=8, backoff=1.0) == ("retry", 32.0)
    for attempts in (6, 10, 100, 10 ** 6):
        action, delay = after_answer("timeout", 0, None, attempts, 1, max_retries=10 ** 7, host_max_failures=8,
                                     backoff=1.0)
        assert action == "retry" and delay == MAX_BACKOFF, attempts
    assert after_answer("timeout", 0, None, 0, 1, max_retries=0, host_max_failures=8, backoff=1.0) == ("final", 0.0)


# -- links_depth / requisite_depth ------------------------------------------------------------------
def test_links_are_one_hop_deeper_and_followed_up_to_max_depth():
    for max_depth in range(0, 5):
        for depth in range(0, 7):
            assert links_depth(depth, False, max_depth) == (depth + 1, depth + 1 <= max_depth)
            # a redirect's target is as deep as its source
            assert links_depth(depth, True, max_depth) == (depth, depth <= max_depth)
    assert links_depth(0, False, 0) == (1, False)       # --max-depth 0: the seeds only
    assert links_depth(0, True, 0) == (0, True)         # ... and where they redirect


def test_requisites_are_fetched_one_hop_past_max_depth():
    for max_depth in range(0, 5):
        for depth in range(0, 8):
            assert requisite_depth(depth, True, max_depth) == (depth + 1, depth + 1 <= max_depth + 1)
            # a style sheet's images and imports belong to the same page: as deep as the sheet
            assert requisite_depth(depth, False, max_depth) == (depth, depth <= max_depth + 1)
    # a page at the depth limit still gets its requisites; a page past it does not
    assert requisite_depth(2, True, 2)[1] and not requisite_depth(3, True, 2)[1]


# -- budget_share / budget_by_work ------------------------------------------------------------------
def test_budget_share_splits_exactly_and_evenly():
    for ranks in range(1, 9):
        for n in range(0, 40):
            shares = [budget_share(n, ranks, r) for r in range(ranks)]
            assert sum(shares) == n
            assert max(shares) - min(shares) <= 1
            assert shares == sorted(shares, reverse=True)      # the first ranks get the extra ones


def test_budget_by_work_is_proportional_exact_and_gives_idle_ranks_nothing():
    import itertools

    for work in itertools.product(range(0, 4), repeat=3):
        for n in range(0, 12):
            shares = [budget_by_work(n, list(work), r) for r in range(3)]
            assert sum(shares) == n, (n, work, shares)
            if sum(work) == 0:
                assert shares == [budget_share(n, 3, r) for r in range(3)]
                continue
            total = sum(work)
            for r, w in enumerate(work):
                if w == 0:
                    assert shares[r] == 0, (n, work, shares)
                # largest remainders: within one of the exact quota
                assert abs(shares[r] - n * w / total) < 1, (n, work, shares)


def test_budget_by_work_ties_go_to_the_smaller_rank():
    assert [budget_by_work(1, [1, 1, 1], r) for r in range(3)] == [1, 0, 0]
    assert [budget_by_work(2, [1, 1, 1], r) for r in range(3)] == [1, 1, 0]
    assert [budget_by_work(1, [0, 2, 2], r) for r in range(3)] == [0, 1, 0]
    # a bigger remainder wins over a smaller rank: quotas 5 * (1, 3) / 4 = 1.25, 3.75
    assert [budget_by_work(5, [1, 3], r) for r in range(2)] == [1, 4]
