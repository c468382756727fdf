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
* :func:`check_politeness`: politeness is spacing. Per host, between any two consecutive requests
  — of one rank, and under phase slots of any ranks — at least the rest the crawler owed after
  the first: max(politeness delay, Crawl-delay, delay factor x its response time); never two at
  once. Per address shared by several hosts (:func:`check_ip_spacing`), at least the IP delay.

Gaps are measured from the server's ``t_write`` of the first request (taken before its response's
last write: the client cannot have the response earlier) to its ``t_start`` of the next (taken
after the request was read: the client sent it earlier): never more than the client's real gap, so
a gap below a bound here is one in the crawler too, however loaded the machine.
"""
from __future__ import annotations

from collections import Counter, defaultdict

__all__ = ["row_url", "failed_attempts", "check_once", "check_politeness", "check_ip_spacing", "CLOCK_SLACK"]

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


def _rest(a: dict, b: dict, *, delay: float, cd: float, factor: float, max_delay: float) -> float:
    """The least gap the crawler owed between ``a``'s answer and request ``b`` to the same host,
    as the server can bound it: max(politeness delay, Crawl-delay, delay factor x a's time) — a's
    time taken as ``t_write - t_start`` (the client's is longer: it sent before the server read and
    read after the server wrote) — except after a robots.txt request answered to another rank than
    ``b``'s: its rank reserved the rest before the end of its phase slots before it could read
    the Crawl-delay, so it owes the next holder the politeness delay and the adaptive part only
    (its own next request waits the Crawl-delay too)."""
    adaptive = min(factor * max(0.0, a["t_write"] - a["t_start"]), max_delay)
    blind = a["path"] == "/robots.txt" and a["rank"] != b["rank"]
    return max(delay, 0.0 if blind else cd, adaptive)


def check_politeness(rows: list[dict], port: int, *, delay: float, crawl_delays: dict[str, float],
                     factor: float = 0.0, max_delay: float = 0.0, across_ranks: bool = True,
                     ip_groups: dict[str, str] | None = None, ip_delay: float = 0.0) -> dict:
    """Assert that the requests to each host are spaced (see the module docstring): between two
    consecutive requests to a host — of one rank, and with ``across_ranks`` of any ranks (a crawl
    under phase slots; without them, ranks sharing a host do not coordinate) — at least the rest
    the first one left (:func:`_rest`), and never two at once. ``ip_groups``: host -> address of
    the hosts that share one; consecutive requests to one address, whatever their hosts, at least
    ``ip_delay`` apart (:func:`check_ip_spacing`). Failed attempts and requests answered with no
    byte are left out (:func:`_kept`).
    Returns ``{"pairs": gaps checked, "cross_rank": of which between two ranks, "spaced": of which
    owed a rest > 0, "ip_pairs": gaps checked between hosts of one address}``."""
    kept = _kept(rows, port)
    seqs: dict[tuple, list[dict]] = defaultdict(list)
    for r in kept:
        seqs[(r["host"],) if across_ranks else (r["host"], r["rank"])].append(r)
    problems: list = []
    pairs = cross = spaced = 0
    for key, rs in seqs.items():
        host = key[0]
        rs.sort(key=lambda r: r["t_start"])
        cd = crawl_delays.get(host) or 0.0
        for a, b in zip(rs, rs[1:]):
            pairs += 1
            two = a["rank"] != b["rank"]
            cross += two
            # an upper bound of the client's real gap: it sent b before the server read it (t_start) and
            # had a's answer only after the server's last write of it began (t_write); t_end can be
            # late by however long the server was descheduled after that write
            gap = b["t_start"] - a["t_write"]
            rest = _rest(a, b, delay=delay, cd=cd, factor=factor, max_delay=max_delay)
            spaced += rest > 0
            where = (host, a["rank"], b["rank"], a["path"], b["path"], round(gap, 4))
            if gap < -CLOCK_SLACK:
                problems.append(("two ranks with requests to a host at once" if two
                                 else "one rank with two requests to a host at once", where))
            elif gap < rest - CLOCK_SLACK:
                if two:
                    problems.append((f"two ranks' requests to a host closer than its rest {rest:g}", where))
                elif b["path"] != "/robots.txt" and gap < cd - CLOCK_SLACK:
                    problems.append((f"gap under the Crawl-delay {cd:g}", where))
                else:
                    problems.append((f"a request without the rest {rest:g}", where))
    ip_pairs = 0
    if ip_groups:
        ip_pairs, ip_problems = check_ip_spacing(kept, ip_groups, ip_delay)
        problems += ip_problems
    assert not problems, _some_of_each(problems)
    return {"pairs": pairs, "cross_rank": cross, "spaced": spaced, "ip_pairs": ip_pairs}


def _some_of_each(problems: list, n: int = 3) -> list:
    """The first ``n`` problems of each kind (the message), with the count of each."""
    kinds: dict[str, list] = defaultdict(list)
    for p in problems:
        kinds[p[0]].append(p)
    return [(k, len(v), v[:n]) for k, v in kinds.items()]


def check_ip_spacing(kept: list[dict], ip_groups: dict[str, str], ip_delay: float) -> tuple[int, list]:
    """Per address shared by several hosts (``ip_groups``: host -> address), each two consecutive
    requests to it (by ``t_start``, any hosts, any ranks) at least ``ip_delay`` apart, as
    :func:`check_politeness` bounds gaps. Returns (pairs checked, problems)."""
    by_ip: dict[str, list[dict]] = defaultdict(list)
    for r in kept:
        ip = ip_groups.get(r["host"])
        if ip is not None:
            by_ip[ip].append(r)
    problems: list = []
    pairs = 0
    for ip, rs in by_ip.items():
        rs.sort(key=lambda r: r["t_start"])
        for a, b in zip(rs, rs[1:]):
            pairs += 1
            gap = b["t_start"] - a["t_write"]
            if gap < ip_delay - CLOCK_SLACK:
                problems.append((f"two requests to one address closer than the IP delay {ip_delay:g}",
                                 (ip, a["host"], b["host"], a["rank"], b["rank"], round(gap, 4))))
    return pairs, problems
