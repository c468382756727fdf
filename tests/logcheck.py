"""Checks of a crawl against the embedded server's access log (docs/TESTWEB.md): what the server
saw, not what the crawler says it did.

* :func:`check_once`: each page is answered once per session. A *failed attempt* apart: an answer
  the crawler did not get (it gave up, e.g. a request cut at its phase slot's end or timed out,
  closing the connection) is the last request of its connection and the same URL is asked again
  later. Each one must be explained by the server's own log (:func:`unexplained_failures`): an
  answer the server did not complete, a 429 or 503 (the statuses the crawler asks again), or —
  under phase slots — a re-ask in a later slot than the attempt (a slot boundary of the run's grid,
  :class:`SlotGrid`, between them). The crawler's own count of requests asked again
  (``slot_cuts`` + ``retries``) is then checked against the log, not used as its bound: it is at
  least the failed attempts the log holds. A resumed session is given as one log per run: a page
  fetched in a run after that run's last checkpoint is fetched again by design, so a page may be
  answered once per run, but only the stored fetch (the WARC record's date) may be the last, and no
  run after the stored fetch asks for it again.
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

__all__ = ["row_url", "failed_attempts", "unexplained_failures", "SlotGrid", "ANY_SLOT", "check_once",
           "check_politeness", "check_ip_spacing", "CLOCK_SLACK", "SLOT_SLACK", "RETRY_STATUS"]

#: seconds of slack on every lower bound of a gap between two log times: both ends are the
#: server's time.time() taken in one process (microseconds apart from what the client waits);
#: 2 ms covers the clock's resolution and slewing, not scheduling
CLOCK_SLACK = 0.002
#: seconds of slack on a slot boundary: the ranks' shared clock is rank 0's, each rank's reading of it
#: off by at most its measured error bound (docs/ARCHITECTURE.md, phase slots), which its guard band
#: covers; on one machine that error is microseconds, across hosts (tests/multihost) milliseconds
SLOT_SLACK = 0.01
#: statuses the crawler asks again after (docs/SESSION_FORMAT.md, ``retries``: "a timeout, reset,
#: 429 or 503"); written here, not imported from the crawler
RETRY_STATUS = (429, 503)


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


class SlotGrid:
    """The phase slots of one run, as the docs define them (abc_crawler/sched/phases.py's docstring,
    "Warm-up"; docs/SESSION_FORMAT.md: ``phase_origin``, ``phases``, ``phase_warmup``,
    ``politeness.phase_seconds``), written here from that text: slots of ``phase_seconds`` counted
    from the epoch until ``origin``, where the slot containing it ends; from there ``n_phases``
    slots of ``phase_seconds / 2**warmup``, the next ``n_phases`` twice that, ... until slots reach
    ``phase_seconds``. Without a warm-up (``warmup`` 0 or no origin) the regular slots only.

    >>> g = SlotGrid(1.0, 2, 2, origin=10.3)          # slots 0.25, 0.25, 0.5, 0.5, then 1 s
    >>> [g.slot(t) for t in (10.2, 10.3, 10.54, 10.56, 10.9, 11.3, 11.8, 12.79, 12.81)]
    [(0, 10), (1, 0), (1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 4), (1, 5)]
    >>> g.boundary_between(10.4, 10.45), g.boundary_between(10.4, 10.6)   # 0.05 s of slack each side
    (False, True)
    >>> SlotGrid(1.0, 2).slot(7.5), SlotGrid(1.0, 2, 3, origin=None).slot(7.5)   # no warm-up: regular slots
    ((0, 7), (0, 7))
    """

    def __init__(self, phase_seconds: float, n_phases: int, warmup: int = 0, origin: float | None = None,
                 slack: float = SLOT_SLACK):
        self.length, self.n, self.slack = float(phase_seconds), int(n_phases), float(slack)
        self.warmup = int(warmup) if origin is not None else 0
        self.origin = float(origin) if self.warmup else None
        # the warm-up slots' starts (offsets from the origin), then the first regular one
        self.starts: list[float] = []
        x = 0.0
        for k in range(self.warmup):
            step = self.length / 2 ** (self.warmup - k)
            for _ in range(self.n):
                self.starts.append(x)
                x += step
        self.regular_from = x

    @classmethod
    def of_session(cls, stats: dict, slack: float = SLOT_SLACK) -> "SlotGrid | None":
        """The grid of a session's (last) run from its stats.json; None when phases were off."""
        pr = stats["per_rank"][0]
        if not pr.get("phases"):
            return None
        return cls(stats["politeness"]["phase_seconds"], pr["phases"], pr.get("phase_warmup", 0),
                   pr.get("phase_origin"), slack)

    def slot(self, t: float) -> tuple[int, int]:
        """A key of the slot holding time ``t``, increasing with ``t``."""
        import math

        if self.origin is None or t < self.origin:
            return 0, math.floor(t / self.length)
        x = t - self.origin
        if x >= self.regular_from:
            return 1, len(self.starts) + math.floor((x - self.regular_from) / self.length)
        return 1, max(i for i, a in enumerate(self.starts) if a <= x)

    def boundary_between(self, lo: float, hi: float) -> bool:
        """A slot boundary in (``lo``, ``hi``], give or take :data:`SLOT_SLACK`."""
        return self.slot(lo - self.slack) != self.slot(hi + self.slack)


#: the grid of a run whose slots the session does not record (an earlier run of a resumed session):
#: any two times may lie in different slots
ANY_SLOT = "any slot"


def unexplained_failures(rows: list[dict], port: int, failed: set[int], grid) -> list[tuple]:
    """The failed attempts (indices ``failed`` into ``rows``) the server's log does not explain, as
    (URL, rank, status, t_start). The server cannot see whether a client read bytes it wrote, so an
    attempt is explained by what it can see:

    * it did not complete the answer: ``end`` ``reset``, ``stalled`` or ``closed`` (the client went
      away first), or no byte written (``t_write`` null);
    * it answered 429 or 503 (:data:`RETRY_STATUS`: the crawler asks again after a back-off);
    * under phase slots (``grid``: a :class:`SlotGrid`, or :data:`ANY_SLOT`; None: phases off): the
      crawler cuts a request at its slot's end and asks again in a later slot, so a slot boundary
      lies between the attempt's send and the re-ask's. The client sent the attempt after it had the
      answer to its previous request to that host (one at a time per rank and host: checked by
      :func:`check_politeness`), so after that answer's ``t_write``, and sent the re-ask before its
      ``t_start``: the boundary is in (previous ``t_write``, re-ask ``t_start``].

    A complete answer of another status, taken again by the same rank with no slot boundary in
    between (or with phases off), is a page fetched twice, whatever the crawler counted."""
    by_key: dict[tuple, list[int]] = defaultdict(list)       # (host, rank) -> row indices by t_start
    for i, r in enumerate(rows):
        by_key[(r["host"], r["rank"])].append(i)
    out = []
    for idx in by_key.values():
        idx.sort(key=lambda i: rows[i]["t_start"])
        for pos, i in enumerate(idx):
            if i not in failed:
                continue
            a = rows[i]
            if a.get("end") not in (None, "done") or a.get("t_write") is None or a["status"] in RETRY_STATUS:
                continue
            if grid == ANY_SLOT:
                continue
            if grid is not None:
                url = row_url(a, port)
                again = next((rows[j] for j in idx[pos + 1:] if row_url(rows[j], port) == url), None)
                prev = next((rows[j] for j in reversed(idx[:pos])
                             if j not in failed and rows[j].get("t_write") is not None), None)
                lo = prev["t_write"] if prev is not None else float("-inf")
                if again is not None and (lo == float("-inf") or grid.boundary_between(lo, again["t_start"])):
                    continue
            out.append((row_url(a, port), a["rank"], a["status"], a["t_start"]))
    return out


def check_once(runs: list[list[dict]], port: int, normal_hosts: set[str], stored: dict[str, tuple[str, str]],
               asked_again: int, requested: set[str] | None = None, grids: list | None = None) -> dict:
    """Assert each page is answered once (see the module docstring). ``runs``: the log of each run
    of the session, in order; ``normal_hosts``: host names whose every answer counts (elsewhere
    only 200 answers: a hostile host's 5xx and 429 are retried on purpose); ``stored``: URL ->
    (file, WARC-Date) of its stored record; ``asked_again``: the crawler's count of requests asked
    again, checked to be at least the log's failed attempts; ``requested``: URLs that must have
    been answered (normal hosts), or None; ``grids``: each run's phase slots (a :class:`SlotGrid`,
    :data:`ANY_SLOT`, or None for a run without phase slots; default: None for every run), which
    bound its failed attempts (:func:`unexplained_failures`).
    Returns ``{"answers": {url: n}, "failed": n}``."""
    from datetime import datetime, timezone

    problems: list = []
    kept: dict[str, list[tuple[int, float]]] = defaultdict(list)   # url -> (run, t_start) of kept answers
    n_failed = 0
    robots: Counter = Counter()
    sitemaps: Counter = Counter()
    grids = list(grids) if grids is not None else [None] * len(runs)
    assert len(grids) == len(runs), ("one slot grid per run", len(grids), len(runs))
    unexplained: list = []
    for k, rows in enumerate(runs):
        failed = failed_attempts(rows, port)
        counted = {i for i in failed if rows[i]["status"] == 200 or rows[i]["host"] in normal_hosts}
        n_failed += len(counted)
        unexplained += unexplained_failures(rows, port, counted, grids[k])
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
    if unexplained:
        problems.append(("failed attempts the server's log does not explain (a complete answer taken again "
                         "with no slot boundary between)", len(unexplained), unexplained[:5]))
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
