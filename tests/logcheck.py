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
  batch started without its rest merges with the one before and breaks one of these.

Gaps are measured from the server's ``t_write`` of the first request (taken before its response's
last write: the client cannot have the response earlier) to its ``t_start`` of the next (taken
after the request was read: the client sent it earlier): never more than the client's real gap, so
a gap below a bound here is one in the crawler too, however loaded the machine.
"""
from __future__ import annotations

from collections import Counter, defaultdict

__all__ = ["row_url", "failed_attempts", "check_once", "check_politeness", "CLOCK_SLACK", "SLOT_END_REST_BUG"]

#: KNOWN CRAWLER BUG (found by these checks; see tests/test_holders_crawl.py::
#: test_a_rank_holding_consecutive_slots_keeps_its_rests, a strict xfail): a batch cut at the end of
#: its phase slot takes no rest (abc_crawler/crawl/fetching.py, BatchRunner.advance: the slot is over,
#: so ``frontier.finish(b.element, now, 0.0)``), and a rank that holds the host again in the next slot
#: (by the holder table or a lease) starts its next batch at once: more than batch-urls requests, or
#: requests closer than the Crawl-delay, across the slot boundary. While this is True, a gap between
#: two requests in different slots is taken as a batch boundary that owes no rest; every other gap is
#: checked in full. Set it to False when the crawler rests after such a batch.
SLOT_END_REST_BUG = True

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


def check_politeness(rows: list[dict], port: int, *, delay: float, batch_urls: int, crawl_delays: dict[str, float],
                     keep_alive_hosts: set[str], slot_of=None) -> dict:
    """Assert one rank's requests to a host respect the rests (see the module docstring).
    ``delay``: the politeness delay expected; ``crawl_delays``: host name -> Crawl-delay;
    ``keep_alive_hosts``: hosts whose connections stay open (one batch, one connection).
    Failed attempts (:func:`failed_attempts`) are left out: their log times are when the server
    got to a request the client had given up; so are requests answered with no byte (``t_write``
    null: a stall or reset, no bound on when the client gave up). ``slot_of``: shared time -> phase
    slot, given while :data:`SLOT_END_REST_BUG` exempts gaps across a slot boundary; ``"unknown"``
    for a run whose slots cannot be told (a run of a resumed session before its last: its warm-up
    origin was not kept), where that exemption leaves only the check of one rank twice at once.
    Returns ``{"batches": n, "largest": n, "slot_exempt": gaps exempted}``."""
    failed = failed_attempts(rows, port)
    seqs: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for i, r in enumerate(rows):
        if r["rank"] >= 0 and i not in failed and r.get("t_write") is not None:
            seqs[(r["host"], r["rank"])].append(r)
    problems: list = []
    batches = largest = exempt = 0
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
            if slot_of is not None and gap >= -CLOCK_SLACK and (
                    slot_of == "unknown" or slot_of(a["t_start"]) != slot_of(b["t_start"])):
                exempt += 1                  # SLOT_END_REST_BUG: a new batch, no rest asked
                largest = max(largest, pages)
                pages = 0 if b["path"] == "/robots.txt" else 1
                batches += 1
                continue
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
    assert not problems, problems[:10]
    return {"batches": batches, "largest": largest, "slot_exempt": exempt}
