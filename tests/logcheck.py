"""Checks of a crawl against the embedded server's access log (docs/TESTWEB.md): what the server
saw, not what the crawler says it did.

* :func:`check_once`: each page is answered once per session. A *failed attempt* apart: an answer
  the crawler did not get (it gave up, e.g. a request cut at its phase slot's end or timed out,
  closing the connection) is the last request of its connection and the same URL is asked again
  later; there are no more of them than the crawler's own count of requests asked again
  (``slot_cuts`` + ``retries``). A resumed session is given as one log per run: a page fetched in
  a run after that run's last checkpoint is fetched again by design, so a page may be answered
  once per run, but only the stored fetch (the WARC record's date) may be the last, and no run
  after the stored fetch asks for it again.
* :func:`check_politeness`: per host and rank, no two requests at once; every gap between one
  rank's consecutive requests to a host is at least the host's Crawl-delay; and a *batch* (the
  requests between two gaps of at least the rest, max(politeness delay, Crawl-delay)) holds at
  most ``batch-urls`` pages and, on a host that keeps its connections open, one connection: a
  batch started without its rest merges with the one before and breaks one of these. Across
  ranks (phase slots, hand-overs): per host, two consecutive requests from different ranks are at
  least the host's rest apart (the end of one rank's batch to the start of another's).

Gaps are measured from the server's ``t_write`` of the first request (taken before its response's
last write: the client cannot have the response earlier) to its ``t_start`` of the next (taken
after the request was read: the client sent it earlier): never more than the client's real gap, so
a gap below a bound here is one in the crawler too, however loaded the machine.
"""
from __future__ import annotations

from collections import Counter, defaultdict

__all__ = ["row_url", "failed_attempts", "check_once", "check_politeness", "check_cross_rank", "CLOCK_SLACK", "SLOT_END_REST_BUG"]

#: FIXED CRAWLER BUG (found by these checks): a batch cut at the end of its phase slot took no rest
#: (abc_crawler/crawl/fetching.py, BatchRunner.advance), and a rank that held the host again in the
#: next slot started its next batch at once. While it was True, a gap across a slot boundary was
#: exempted from the rests; the exemption is gone (check_politeness refuses a ``slot_of``), and every
#: gap is checked in full.
SLOT_END_REST_BUG = False

#: seconds of slack on every lower bound of a gap between two log times: both ends are the
#: server's time.time() taken in one process (microseconds apart from what the client waits);
#: 2 ms covers the clock's resolution and slewing, not scheduling
CLOCK_SLACK = 0.002


def row_url(r: dict, port: int) -> str:
    return f"http://{r['host'] if port == 80 else r['host'] + ':' + str(port)}{r['path']}"


def _answered(r: dict) -> bool:
    """A complete answer (a hostile response that was cut, reset or stalled is not one)."""
    return r.get("end") in (None, "done")


def failed_attempts(rows: list[dict], port: int) -> set[int]:
    """Indices (in ``rows``) of answers the client did not take: the last request on its connection,
    with the same URL asked again by the same rank after it."""
    last_req: dict[int, int] = {}
    for r in rows:
        last_req[r["conn"]] = max(last_req.get(r["conn"], -1), r["req"])
    later: dict[tuple[str, int], float] = {}
    for r in rows:
        key = (row_url(r, port), r["rank"])
        later[key] = max(later.get(key, float("-inf")), r["t_start"])
    return {i for i, r in enumerate(rows)
            if r["req"] == last_req[r["conn"]] and later[(row_url(r, port), r["rank"])] > r["t_start"]}


def check_once(runs: list[list[dict]], port: int, normal_hosts: set[str], stored: dict[str, tuple[str, str]],
               asked_again: int, requested: set[str] | None = None) -> dict:
    """Assert each page is answered once (see the module docstring). ``runs``: the log of each run
    of the session, in order; ``normal_hosts``: host names whose every answer counts (elsewhere
    only 200 answers: a hostile host's 5xx and 429 are retried on purpose); ``stored``: URL ->
    (file, WARC-Date) of its stored record; ``asked_again``: the crawler's count of requests asked
    again; ``requested``: URLs that must have been answered (normal hosts), or None.
    Returns ``{"answers": {url: n}, "failed": n}``."""
    from datetime import datetime, timezone

    problems: list = []
    kept: dict[str, list[tuple[int, float]]] = defaultdict(list)   # url -> (run, t_start) of kept answers
    n_failed = 0
    robots: Counter = Counter()
    sitemaps: Counter = Counter()
    for k, rows in enumerate(runs):
        failed = failed_attempts(rows, port)
        n_failed += sum(1 for i in failed if rows[i]["status"] == 200 or rows[i]["host"] in normal_hosts)
        for i, r in enumerate(rows):
            if i in failed or not _answered(r) or r["rank"] < 0:
                continue
            if r["path"] == "/robots.txt":
                if r["host"] in normal_hosts:
                    robots[(k, r["host"], r["rank"])] += 1
                continue
            if r["path"] == "/sitemap.xml":      # a sitemap file (--sitemaps), not a page: once per host
                if r["host"] in normal_hosts:
                    sitemaps[(k, r["host"])] += 1
                continue
            if r["host"] in normal_hosts or r["status"] == 200:
                kept[row_url(r, port)].append((k, r["t_start"]))
    twice = [(key, n) for key, n in robots.items() if n > 1]
    if twice:
        problems.append(("robots.txt fetched more than once by one rank in one run", twice[:5]))
    twice = [(key, n) for key, n in sitemaps.items() if n > 1]
    if twice:
        problems.append(("/sitemap.xml fetched more than once in one run", twice[:5]))
    for url, ans in kept.items():
        runs_of = Counter(k for k, _ in ans)
        if max(runs_of.values()) > 1:
            problems.append((url, "answered more than once in one run", sorted(ans)))
            continue
        if len(runs) == 1 or url not in stored:
            if len(ans) > 1:
                problems.append((url, "answered in more than one run, and not stored", sorted(ans)))
            continue
        # several runs: the stored fetch is the last one (an earlier run's was cut back with its WARC
        # file at the resume); its date (the client's send time) is at most its answer's t_start
        t_stored = datetime.strptime(stored[url][1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
        last = max(ans, key=lambda a: a[1])
        if not (last[1] >= t_stored - CLOCK_SLACK and all(t < t_stored for k, t in ans if (k, t) != last)):
            problems.append((url, "the stored fetch is not the last answer of the session", sorted(ans),
                             stored[url]))
    if n_failed > asked_again:
        problems.append(("more failed attempts in the log than the crawler asked again", n_failed, asked_again))
    if requested is not None:
        missing = sorted(u for u in requested if u not in kept)
        if missing:
            problems.append(("requested pages the server never answered", missing[:5]))
    assert not problems, problems[:10]
    return {"pages": len(kept), "answers": sum(len(a) for a in kept.values()), "failed": n_failed}


def _kept(rows: list[dict], port: int) -> list[dict]:
    """The rows whose log times bound the client's: a crawler rank's, not a failed attempt (its times
    are when the server got to a request the client had given up), answered with a byte (``t_write``
    null: a stall or reset, no bound on when the client gave up)."""
    failed = failed_attempts(rows, port)
    return [r for i, r in enumerate(rows) if r["rank"] >= 0 and i not in failed and r.get("t_write") is not None]


def check_politeness(rows: list[dict], port: int, *, delay: float, batch_urls: int, crawl_delays: dict[str, float],
                     keep_alive_hosts: set[str], slot_of=None, across_ranks: bool = True) -> dict:
    """Assert the requests to each host respect the rests (see the module docstring): one rank's,
    and between ranks (:func:`check_cross_rank`).
    ``delay``: the politeness delay expected; ``crawl_delays``: host name -> Crawl-delay;
    ``keep_alive_hosts``: hosts whose connections stay open (one batch, one connection).
    Failed attempts and requests answered with no byte are left out (:func:`_kept`).
    ``across_ranks``: check the rests between ranks too (a crawl under phase slots; without them
    ranks sharing a host do not coordinate).
    ``slot_of`` must be None: the exemption of gaps across a phase-slot boundary
    (:data:`SLOT_END_REST_BUG`) is gone with the bug.
    Returns ``{"batches": n, "largest": n, "slot_exempt": 0, "cross_rank": pairs checked}``."""
    if slot_of is not None:
        raise ValueError("check_politeness: no slot-boundary exemption any more (SLOT_END_REST_BUG is fixed)")
    kept = _kept(rows, port)
    seqs: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for r in kept:
        seqs[(r["host"], r["rank"])].append(r)
    problems: list = []
    batches = largest = 0
    for (host, rank), rs in seqs.items():
        rs.sort(key=lambda r: r["t_start"])
        cd = crawl_delays.get(host) or 0.0
        rest = max(delay, cd)
        pages = 1 if rs[0]["path"] != "/robots.txt" else 0
        batches += 1
        for a, b in zip(rs, rs[1:]):
            # an upper bound of the client's real gap: it sent b before the server read it (t_start) and
            # had a's answer only after the server's last write of it began (t_write); t_end can be
            # late by however long the server was descheduled after that write
            gap = b["t_start"] - a["t_write"]
            where = (host, rank, a["path"], b["path"], round(gap, 4))
            if gap < -CLOCK_SLACK:
                problems.append(("one rank with two requests to a host at once", where))
            elif gap < cd - CLOCK_SLACK:
                problems.append((f"gap under the Crawl-delay {cd}", where))
            if gap >= rest - CLOCK_SLACK:
                largest = max(largest, pages)
                pages = 0
                batches += 1
            elif host in keep_alive_hosts and b["conn"] != a["conn"]:
                problems.append((f"a new connection without the rest {rest}", where))
            if b["path"] != "/robots.txt":
                pages += 1
                if pages == batch_urls + 1:
                    problems.append((f"more than {batch_urls} pages without the rest {rest}", where))
        largest = max(largest, pages)
    cross = 0
    if across_ranks:
        cross, cross_problems = check_cross_rank(kept, delay=delay, crawl_delays=crawl_delays)
        problems += cross_problems
    assert not problems, problems[:10]
    return {"batches": batches, "largest": largest, "slot_exempt": 0, "cross_rank": cross}


def check_cross_rank(kept: list[dict], *, delay: float, crawl_delays: dict[str, float]) -> tuple[int, list]:
    """Per host, each two consecutive requests (by the server's ``t_start``) from different ranks are
    at least the host's rest, max(politeness delay, Crawl-delay), apart: ``b.t_start - a.t_write``, a
    bound of the client's gap as above — except before a rank's own robots.txt request: a rank that
    has not read the host's robots.txt cannot know its Crawl-delay (ranks fetch it each on their
    own, unless one adopts another's copy), so that request owes the politeness delay only.
    ``kept``: the rows of :func:`_kept`. Returns (pairs checked, problems)."""
    by_host: dict[str, list[dict]] = defaultdict(list)
    for r in kept:
        by_host[r["host"]].append(r)
    problems: list = []
    pairs = 0
    for host, rs in by_host.items():
        rs.sort(key=lambda r: r["t_start"])
        full = max(delay, crawl_delays.get(host) or 0.0)
        for a, b in zip(rs, rs[1:]):
            if a["rank"] == b["rank"]:
                continue
            pairs += 1
            rest = delay if b["path"] == "/robots.txt" else full
            gap = b["t_start"] - a["t_write"]
            if gap < rest - CLOCK_SLACK:
                problems.append((f"two ranks' requests to a host closer than its rest {rest}",
                                 (host, a["rank"], b["rank"], a["path"], b["path"], round(gap, 4))))
    return pairs, problems
