"""How a session ended, said in words: why it stopped, what work it left, and every URL a limit
dropped (issue 29: a session must never end "done" with pages silently missing). Pure functions
of ``stats.json``'s figures; the summary's *stopped* row and its last line use them, the
dashboard shows the same counts.

>>> stop_line("done", 0, {"over_host_limit": 2015})
'done (2,015 URLs dropped by limits: 2,015 over the per-host limit)'
>>> stop_line("time-limit", 957, {})
'stopped at the time limit with 957 URLs queued'
>>> stop_line("done", 0, {})
'done: every URL in scope was crawled'
"""
from __future__ import annotations

__all__ = ["LIMIT_REASONS", "dropped_by_limits", "stop_line"]

#: the ``links`` / ``errors`` counts of URLs a limit kept out of the crawl, with what each says
LIMIT_REASONS = {
    "over_host_limit": "over the per-host limit (--max-pages-per-host)",
    "out_of_scope_depth": "past --max-depth",
    "over_page_limit": "past --max-links-per-page",
    "url_too_long": "longer than --max-url-length",
    "path_too_deep": "deeper than --max-path-depth",
    "path_repetition": "repeating a path segment (--max-segment-repeats)",
    "crawl_delay_too_long": "on hosts asking a Crawl-delay over --max-crawl-delay",
}
_SHORT = {"over_host_limit": "over the per-host limit"}

_WHY = {
    "time-limit": "stopped at the time limit",
    "max-pages": "stopped at --max-pages",
    "signal": "stopped by a signal",
    "stalled": "stopped by the stall watchdog",
}


def dropped_by_limits(links: dict, errors: dict) -> dict[str, int]:
    """The non-zero counts of URLs dropped by a limit, by reason (in :data:`LIMIT_REASONS` order).

    >>> dropped_by_limits({"followed": 9, "over_host_limit": 3, "path_too_deep": 0}, {"crawl_delay_too_long": 2})
    {'over_host_limit': 3, 'crawl_delay_too_long': 2}
    """
    out = {}
    for k in LIMIT_REASONS:
        n = int(links.get(k, 0)) + int(errors.get(k, 0))
        if n:
            out[k] = n
    return out


def describe_dropped(dropped: dict[str, int]) -> str:
    """``2,015 over the per-host limit, 12 past --max-depth``.

    >>> describe_dropped({"over_host_limit": 2015, "out_of_scope_depth": 12})
    '2,015 over the per-host limit, 12 past --max-depth'
    """
    return ", ".join(f"{n:,} {_SHORT.get(k, LIMIT_REASONS[k])}" for k, n in dropped.items())


def stop_line(stopped: str, queued: int, dropped: dict[str, int]) -> str:
    """One line: why the crawl stopped, the URLs it left queued, and those limits dropped."""
    if stopped == "done":
        line = "done" if dropped else "done: every URL in scope was crawled"
    else:
        line = _WHY.get(stopped, f"stopped: {stopped}")
        if queued:
            line += f" with {queued:,} URLs queued"
    if dropped:
        total = sum(dropped.values())
        line += f" ({total:,} URLs dropped by limits: {describe_dropped(dropped)})"
    return line
