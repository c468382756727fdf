"""Fetching one rank's Bucket elements: a batch per host over one connection, robots.txt first
(its redirects followed, RFC 9309), every request spaced from the one before by the host's rest
(:func:`abc_crawler.sched.politeness.rest_after`); every answer goes through
:mod:`.decisions` (cut, retry, give the host up, or final) and a final one through
:class:`.pages.PageProcessor` and the router. A sitemap file in a batch is fetched like a page of
its host but is not one: not a request of the page count, its answer read for the URLs it lists."""
from __future__ import annotations

import heapq
import time
from enum import StrEnum
from dataclasses import dataclass

from ..store.crawllog import CrawlLog
from ..net.fetcher import Fetcher, Response
from ..sched.ipgroups import Groups
from ..sched.politeness import rest_after
from ..sched.frontier import Element, Frontier
from ..net.robots import RobotsCache, robots_url
from ..web.urls import fingerprint, host_of
from .counters import IdleTimes, LoopGaps, RankCounters
from .attempts import AttemptLog, tries
from .decisions import after_answer, after_cut, links_depth, requisite_depth
from ..web.parser import EMBED, NAV, REDIRECT, REFRESH
from .discovery import SITEMAP
from .links import LinkClassifier
from .pages import PageProcessor
from .routing import Router
from .robotsfetch import RobotsFetching
from .slots import SlotGate
from ..sched.phases import CUT_SLOW
from ..store import logs

_log = logs.get("fetching")


class FetchKind(StrEnum):
    """What a request fetches (the first part of its fetcher key)."""

    ROBOTS = "robots"     # a robots.txt (or a hop of its redirects)
    SITEMAP = "sitemap"   # a sitemap file
    PAGE = "page"         # a URL of the frontier
#: the crawl log's hop letters of a requisite and a refresh target (Heritrix's E and R)
EMBED_HOP, REFRESH_HOP = ord("E"), ord("R")

__all__ = ["Batch", "BatchRunner", "GAP_NOTED"]

#: loop gaps (seconds) worth remembering to tell a starved rank's cut
GAP_NOTED = 0.01


@dataclass
class Batch:
    """An element being fetched: the URLs left and the pacing within the batch."""

    element: Element
    host: str
    todo: list[int]
    next_at: float = 0.0
    side_fetch: bool = False      # a robots.txt or sitemap request of the host is in flight
    current: int | None = None    # URL index in flight (a page)
    sitemap: int | None = None    # URL index of the sitemap file in flight
    deadline: float | None = None # shared-clock end of the slot the request in flight belongs to
    slot_len: float = 0.0         # length of that slot (shorter than phase-seconds: a warm-up slot)
    limit: float = 0.0            # seconds the request in flight was given (deadline - its start)
    full: float = 0.0             # seconds a request at the start of that slot would have had
    started: float = 0.0          # monotonic time the request in flight started
    asked: int = 0                # requests sent (pages, robots.txt, sitemap files)
    robots_next: str | None = None   # the next hop of a robots.txt redirect chain, asked after the rest
    addr: str | None = None       # the address the request in flight is spaced by (IP delay)
    via: str | None = None        # the page whose robots.txt is asked, or the robots.txt URL that redirected
    redirects: int = 0            # robots.txt redirects followed so far (the crawl log's discovery path)


class BatchRunner(RobotsFetching):
    """The batches in flight of one rank and what becomes of their answers."""

    ROBOTS_KEY = FetchKind.ROBOTS      # the fetcher key's kind of a robots.txt request (RobotsFetching)

    def __init__(self, cfg, frontier: Frontier, fetcher: Fetcher, robots: RobotsCache, gate: SlotGate | None,
                 counters: RankCounters, pages: PageProcessor, router: Router, clock,
                 may_request, share_robots: bool, own_hosts: frozenset[str], links: LinkClassifier,
                 groups: Groups | None = None, crawl_log: CrawlLog | None = None):
        self.cfg = cfg
        # a line per answer and per URL given up (abc_crawler/store/crawllog.py); none without a log
        self.lines = AttemptLog(crawl_log, router, pages)
        # hosts sharing an address: one spacing for the address (--ip-politeness-delay), its groups
        self.groups = groups if groups is not None else Groups(0.0)
        self._ip_wait: dict[str, list[str]] = {}   # address -> hosts whose batch waits for it
        self.links = links
        self.frontier = frontier
        self.fetcher = fetcher
        self.robots = robots
        self.gate = gate
        self.hosts = frontier.hosts             # what this rank knows of each host (abc_crawler/sched/visits.py)
        self.counters = counters
        self.pages = pages
        self.router = router
        self.clock = clock
        self.may_request = may_request          # () -> bool: the page budget allows another request
        self.share_robots = share_robots
        self.own_hosts = own_hosts
        self.batches: dict[str, Batch] = {}
        self._due: list[tuple[float, int, str]] = []   # (next_at, seq, host): batches waiting for their rest
        self._seq = 0
        self.robots_out: list[tuple[str, int, bytes]] = []   # answers to share with every rank
        self.idle = IdleTimes()
        self.gaps = LoopGaps(clock)             # when the loop stood still: for slot cuts and stats.json
        self.last_turn = time.monotonic()
        self.responses = 0                      # final answers processed (the loop reads and resets)
        self.previous = pages.previous          # the previous session's share (--previous), or None

    @property
    def in_flight(self) -> int:
        """Counted page requests in flight (a URL asked again after a slot-end cut was counted when
        it was cut)."""
        f = self.frontier
        return sum(1 for b in self.batches.values() if b.current is not None and not f.was_cut(b.current))

    # -- the loop's turn ---------------------------------------------------------------------
    def drive(self, wait: float) -> int:
        """One turn of the fetch loop; sleeps at most ``wait`` seconds when there is nothing to do.
        Returns the number of answers handled."""
        now = time.monotonic()
        if now - self.last_turn > GAP_NOTED:     # the loop was away (busy elsewhere, or starved)
            self.gaps.note(now, now - self.last_turn)
        self.start(now)
        # sleep (in curl's select, which wakes on socket activity) until the next thing to do
        nxt = self.frontier.next_wakeup(now, queuing=len(self.batches) < self.cfg.active_hosts)
        due = self._due
        if due and self.fetcher.in_flight < self.cfg.concurrency and (nxt is None or due[0][0] < nxt):
            nxt = due[0][0]
        gate = self.gate
        if gate is not None:
            slot = gate.next_change(now)          # the window's end, or the next one's start
            nxt = slot if nxt is None else min(nxt, slot)
        timeout = wait if nxt is None else max(0.0, min(wait, nxt - now))
        end = now + timeout
        frontier = self.frontier
        while True:
            # under phase slots a lease may arrive, and curl's select does not wake on an MPI
            # message: the rank looks for leases every lease_poll. Until an answer or a lease comes,
            # a host's queue changes (a batch the turn ended gave its host back) or ``end``, the
            # turn's plan holds, so it waits on without planning again
            t = time.monotonic()
            step = timeout if gate is None else max(0.0, min(end - t, gate.lease_poll))
            done = self.fetcher.poll(step)
            now = time.monotonic()
            if now - t > step + GAP_NOTED:
                # the process was away inside the poll (descheduled, starved, stopped): the answers it
                # reads now may have been cut at their slot's end meanwhile, by no fault of theirs
                self.gaps.note(now, now - t - step)
            if not done and not self.fetcher.in_flight:
                self._count_idle(now - t, t)
            if gate is None or gate.take_leases(now) or done or now >= end or frontier.changed:
                break
        for r in done:
            self.on_answer(r, now)
        self.last_turn = time.monotonic()
        return len(done)

    def _count_idle(self, dt: float, t: float) -> None:
        idle = self.idle
        idle.total += dt
        if not self.frontier.pending and not self.batches:
            idle.empty += dt                     # nothing to do
        elif (self.gate is not None and not self.batches
              and (self.gate.window is None or not self.frontier.waiting_for_rest(t))):
            idle.slot += dt                      # work queued, none of it held in this slot
        else:
            idle.rest += dt                      # work queued, its hosts resting (politeness, back-off)

    def can_progress(self) -> bool:
        """Work this rank can do now (not only waiting for pacing)."""
        return self.fetcher.in_flight > 0 or (self.frontier.pending > 0 and self.may_request())

    # -- batches ------------------------------------------------------------------------------
    def start(self, now: float) -> None:
        """Schedule URLs into the Bucket, start ready elements, issue the next request of batches."""
        admit = None
        if self.gate is not None:
            self.gate.update()                   # a guard band admits only this rank's own hosts
            admit = self.gate.admit
        # O(hosts that changed): hosts with new or returned URLs, freed elements, ended back-offs
        self.frontier.schedule(now, admit)
        free = self.cfg.active_hosts - len(self.batches)
        if free > 0:
            # nothing in flight: an element still filling is sent now rather than after its flush time
            for e in self.frontier.ready(now, limit=free, eager=not self.fetcher.in_flight):
                b = self.batches[e.host] = Batch(element=e, host=e.host, todo=list(e.urls))
                self._wake(b, max(now, self.hosts[e.host].next_at))
                self.counters.batches += 1
        # the batches whose host's rest is over, while a request may be added
        due = self._due
        cap = self.cfg.concurrency
        while due and due[0][0] <= now and self.fetcher.in_flight < cap:
            at, _, host = heapq.heappop(due)
            b = self.batches.get(host)
            if b is not None and b.next_at == at and b.current is None and not b.side_fetch:
                self.advance(b, now)

    def _wake(self, b: Batch, at: float) -> None:
        """The batch asks its next request at monotonic time ``at`` (its host's rest)."""
        b.next_at = at
        self._seq += 1
        heapq.heappush(self._due, (at, self._seq, b.host))

    def _submit(self, b: Batch, key, url: str, limit: float | None, headers=()) -> None:
        """Send a request of ``b``; its address is busy until the answer (no other host of it is asked
        meanwhile, on this rank)."""
        if b.addr is not None:
            self.groups.next_at[b.addr] = float("inf")
        self.fetcher.submit(key, url, timeout=limit, headers=headers)

    def _wait_address(self, b: Batch, addr: str) -> None:
        """``b`` waits for its address: until the rest after its last request, or — while a request
        to it is in flight — until that answer comes."""
        t = self.groups.next_at[addr]
        if t == float("inf"):
            self._ip_wait.setdefault(addr, []).append(b.host)
        else:
            self._wake(b, t)

    def _address_done(self, b: Batch, r: Response, now: float) -> None:
        """The answer of ``b``'s request: its address rests ``--ip-politeness-delay`` (from here), the
        batches waiting for it are woken then; the address connected to is learnt."""
        if r.ip and not r.proxied and host_of(r.url) == b.host:
            self.groups.learn(b.host, r.ip)      # (not a robots.txt hop's to another host: its address)
        addr, b.addr = b.addr, None
        if addr is None:
            return
        t = self.groups.next_at[addr] = now + self.cfg.ip_politeness_delay
        for host in self._ip_wait.pop(addr, ()):
            w = self.batches.get(host)
            if w is not None and w.current is None and not w.side_fetch:
                self._wake(w, max(t, w.next_at))

    def _rest(self, host: str, seconds: float) -> float:
        """The host's rest after a request that took ``seconds`` (:func:`abc_crawler.sched.politeness.rest_after`)."""
        cfg = self.cfg
        return rest_after(seconds, delay=cfg.politeness_delay, crawl_delay=self.robots.get(host).crawl_delay,
                          factor=cfg.delay_factor, max_delay=cfg.max_delay)

    def _rested(self, b: Batch, r: Response, now: float) -> None:
        """After an answer of ``b``'s host: the host rests; the batch's next request comes after it."""
        st = self.hosts[b.host]
        st.next_at = now + self._rest(b.host, r.t_end - r.t_start)
        if st.next_at <= now or (not b.todo and b.robots_next is None):
            self.advance(b, now)                 # the next request, or the batch ends (and rests)
        else:
            self._wake(b, st.next_at)

    def _give_back(self, b: Batch) -> None:
        """The URLs the batch has not asked yet go back to their host's queue."""
        for idx in b.todo:
            self.frontier.release(idx)
        b.todo = []

    def advance(self, b: Batch, now: float) -> None:
        """Issue the next request of a batch, or end it."""
        host = b.host
        h = self.robots.get(host)
        st = self.hosts[host]
        if (h.state == "dead" or st.dead) and b.robots_next is None:
            # given up without a request: no rest to wait, no slot to hold (a Crawl-delay past
            # --max-crawl-delay fits no slot: the URLs would wait for one for ever)
            self._give_up_dead(b, "host_unreachable" if st.dead else h.reason)
            self._batch_done(b, now)
            return
        if st.next_at > now and (b.todo or b.robots_next is not None):
            self._wake(b, st.next_at)            # the host's rest after this rank's last request
            return
        addr = self.groups.spacing_address(host)
        if addr is not None and (b.todo or b.robots_next is not None) and self.groups.next_at.get(addr, 0.0) > now:
            self._wait_address(b, addr)          # another host of its address is asked or resting
            return
        if b.robots_next is not None and self._robots_hop(b, now):
            return
        limit = full = None
        if self.gate is not None:
            limit, full = self.gate.request_limit(
                host, max(self.cfg.politeness_delay, h.crawl_delay, self.cfg.ip_politeness_delay))
            if limit == 0.0:
                self._end_unheld(b, now)
                return
        self._stamp(b, limit, full, now)
        b.addr = addr
        if h.state == "dead" or st.dead:      # (the host died during a robots.txt redirect chain)
            self._give_up_dead(b, "host_unreachable" if st.dead else h.reason)
        elif self.robots.needs_fetch(host, now):
            url0 = self.frontier.url(b.todo[0]) if b.todo else None
            if url0 is not None:
                prefix = url0[: url0.index("/", url0.index("://") + 3)]
                b.side_fetch = True
                b.asked += 1
                b.via, b.redirects = url0, 0
                self._submit(b, (FetchKind.ROBOTS, host), robots_url(prefix), limit)
                return
        elif h.state != "ready":           # retry pending: give the URLs back, try later
            self._give_back(b)
            self.frontier.block(host, h.retry_at)
        while b.todo:
            # a URL cut at a slot's end is asked again within the page budget: its request was counted
            if not self.may_request() and not self.frontier.was_cut(b.todo[0]):
                self._give_back(b)
                break
            idx = b.todo.pop(0)
            url = self.frontier.url(idx)
            if not self.robots.allowed(host, url):
                self.router.record_given_up(idx, url, "robots_disallowed")
                self.lines.given_up(idx, url, "robots_disallowed")
                self.frontier.complete(idx)
                self.counters.links["robots_disallowed"] += 1
                continue
            if self.frontier.is_sitemap(idx):       # a sitemap file, not a page: no request of the count
                b.sitemap = idx
                b.side_fetch = True
                b.asked += 1
                self._submit(b, (FetchKind.SITEMAP, host), url, limit)
                return
            b.current = idx
            b.asked += 1
            if not self.frontier.was_cut(idx):   # (a request cut at a slot's end counted once)
                self.counters.requests += 1
            # a URL the previous session stored is asked conditionally (If-None-Match / If-Modified-Since)
            self._submit(b, (FetchKind.PAGE, host), url, limit, headers=(
                self.previous.conditional_headers(fingerprint(url)) if self.previous is not None else ()))
            return
        self._batch_done(b, now)

    def _batch_done(self, b: Batch, now: float) -> None:
        """The batch is done: its element rests in TIMEWAIT what is left of the host's rest."""
        del self.batches[b.host]
        self.frontier.finish(b.element, now, max(0.0, self.hosts[b.host].next_at - now))
        if self.gate is not None:
            self.gate.batch_done(b.host)

    def _give_up_dead(self, b: Batch, kind: str) -> None:
        """The batch's URLs given up, counted as ``kind`` (e.g. robots_unavailable, address_refused,
        crawl_delay_too_long, host_unreachable): its host will not be contacted."""
        for idx in b.todo:
            url = self.frontier.url(idx)
            self.router.record_given_up(idx, url, kind)
            self.lines.given_up(idx, url, kind)
            self.frontier.complete(idx, stalled=True)
            self.counters.errors[kind] += 1
        b.todo = []

    def _decide(self, r: Response, idx: int, host_fails: int) -> tuple[str, float]:
        """:func:`.decisions.after_answer` of URL ``idx``'s answer, with this crawl's retry settings."""
        cfg = self.cfg
        return after_answer(r.error, r.status, r.header("retry-after") if r.error is None else None,
                            self.frontier.attempts_of(idx), host_fails, max_retries=cfg.max_retries,
                            host_max_failures=cfg.host_max_failures, backoff=cfg.retry_backoff_seconds)

    def _retry(self, b: Batch, r: Response, idx: int, notes: list[str], delay: float, kind: str,
               now: float) -> None:
        """URL ``idx`` is asked again (its retry counted as ``kind``): the batch's other URLs go back
        and the host rests ``delay`` (at least its rest), on every rank that crawls it
        (:meth:`SlotGate.tell_hold`); then the batch goes on or ends."""
        self.lines.answer(r, idx, [*notes, "retry"])
        self.frontier.count_retry(idx)
        self.counters.errors[kind] += 1
        self.frontier.release(idx)
        self._give_back(b)                       # the host backs off: the rest of the batch waits too
        until = now + max(delay, self._rest(b.host, r.t_end - r.t_start))
        self.frontier.hold_off(b.host, until, now)
        if delay > 0 and self.gate is not None:
            self.gate.tell_hold(b.host, until - now)
        self.advance(b, now)

    def _end_unheld(self, b: Batch, now: float) -> None:
        """The gate refused the batch's next request (the host's slot is over, or too little of this
        rank's run of slots is left for a request and the rest it would owe): the URLs not asked go
        back to the host's queue and come again when the host is held; the element rests what is
        left of the host's rest."""
        self._give_back(b)
        del self.batches[b.host]
        self.frontier.finish(b.element, now, max(0.0, self.hosts[b.host].next_at - now))

    def _stamp(self, b: Batch, limit: float | None, full: float | None, now: float) -> None:
        """The slot a request of ``b`` starting now belongs to (``limit``: its seconds, None: no slot;
        ``full``: what a request at the start of the slot would have had)."""
        b.deadline = None if limit is None else self.clock.shared() + limit
        b.slot_len = self.gate.slot_len if self.gate is not None else 0.0
        b.limit = 0.0 if limit is None else limit
        b.full = 0.0 if full is None else full
        b.started = now

    # -- answers ------------------------------------------------------------------------------
    def on_answer(self, r: Response, now: float) -> None:
        kind, host = r.key
        b = self.batches[host]
        self._address_done(b, r, now)
        cut = (r.error == "timeout" and b.deadline is not None
               and self.clock.shared() >= b.deadline - 0.005 and r.t_end - r.t_start < self.cfg.timeout)
        cause = None
        if cut:
            gap = self.gaps.longest_since(b.started)
            cause = self.gate.cut_cause(host, b.slot_len, b.limit, b.full, gap)
        if kind == FetchKind.ROBOTS:
            self._on_robots(b, r, cause, now)
            return
        if kind == FetchKind.SITEMAP:
            self._on_sitemap(b, r, cause, now)
            return
        idx = b.current
        b.current = None
        notes = self._tries(idx)
        if cause is not None:
            notes.append(f"slotcut:{cause}")
            # Only a cut that is the request's own fault counts (it had a full slot and the server did
            # not answer, or the server never answers within a slot); after a late start or while the
            # rank was starved it goes back to the front of its host's queue with no penalty.
            counted, free = self.frontier.count_cut(idx, cause == CUT_SLOW)
            action, kind_ = after_cut(cause, counted, free, self.cfg.max_slot_cuts)
            if action == "again":                # counted once: asked again in the host's next slot
                self.lines.answer(r, idx, notes)
                self.frontier.release(idx)
                self._rested(b, r, now)
                return
            r.error = kind_                      # a transient failure like any other, below
            r.error_detail = f"cut at the end of {counted if cause == CUT_SLOW else free} phase slots"
        self.frontier.clear_cuts(idx)            # a retry after cuts starts its slots afresh
        st = self.hosts[host]
        if r.error is not None:
            st.fails += 1
        else:
            st.fails = 0
            if cause is None:
                st.observe_time(r.t_end - r.t_start)
        action, delay = self._decide(r, idx, st.fails)
        if action == "retry":
            self.counters.retries += 1
            self._retry(b, r, idx, notes, delay, f"retried_{r.error or r.status}", now)
            return
        if action == "dead_host":
            st.dead = True                       # given up: its other URLs are counted, not fetched
            notes.append("host-given-up")
            _log.warning("host %s given up after %d transport failures in a row (last: %s on %s)", host,
                         st.fails, r.error, r.url)
        self.frontier.complete(idx)
        self.process(r, idx, notes)
        self._rested(b, r, now)

    def _on_sitemap(self, b: Batch, r: Response, cause: str | None, now: float) -> None:
        """A sitemap file's answer: the URLs it lists enter the crawl as seeds do (not links)."""
        b.side_fetch = False
        idx, b.sitemap = b.sitemap, None
        notes = [*self._tries(idx), "sitemap"]
        if cause is not None:
            notes.append(f"slotcut:{cause}")
            # cut at the slot's end: asked again in the host's next slot, within a page's bounds
            counted, free = self.frontier.count_cut(idx, cause == CUT_SLOW)
            action, kind_ = after_cut(cause, counted, free, self.cfg.max_slot_cuts)
            if action == "again":
                self.lines.answer(r, idx, notes)
                self.frontier.release(idx)
                self._rested(b, r, now)
                return
            r.error = kind_                      # given up (a sitemap file is not retried after cuts)
        else:
            # a 429, a 503 or a transient failure: asked again after its back-off (Retry-After wins),
            # as a page is (its failures are not the host's: a sitemap file never kills a host)
            action, delay = self._decide(r, idx, 0)
            if action == "retry":
                self._retry(b, r, idx, notes, delay, f"sitemap_retried_{r.error or r.status}", now)
                return
        self.lines.answer(r, idx, notes)
        self.frontier.complete(idx)
        pages, files, level = self.pages.sitemap_outcome(r, self.frontier.depth_of(idx))
        self.router.route(None, pages, tally=None, hop=SITEMAP, via=r.url)
        self.router.route_sitemaps(files, level, via=r.url)
        self._rested(b, r, now)

    def process(self, r: Response, idx: int | None = None, notes: list[str] | None = None) -> None:
        """A final answer (of URL ``idx``): WARC, report to rank 0, links into the crawl, its line
        in the crawl log (``notes``: its annotations so far).

        Never raises for a bad page: an unexpected error is counted by kind
        (``internal_<Exception>``) and the crawl goes on.
        """
        c = self.counters
        c.responses += 1
        self.responses += 1
        fp = fingerprint(r.url)
        path_via = self.lines.path_via(idx)
        f = self.frontier
        try:
            status, nbytes, is_node, links, hops, kind = self.pages.outcome(r, 0 if idx is None else f.hops_of(idx), fp)
        except Exception as exc:  # a crawler must not die on a page: counted, and named in the graph
            kind = f"internal_{type(exc).__name__}"
            c.errors[kind] += 1
            status, nbytes, is_node, links, hops = (r.status or -1), len(r.body), False, [], 0
            self.pages.embeds, self.pages.refresh = [], []
        self.router.record_page(fp, r.url, status, nbytes, is_node, kind)
        self.lines.final(r, path_via, notes, kind)
        # the targets of a redirect inherit the hop that found the chain; a page's links are links
        hop = self.router.discovery.hop_of(idx) if hops else None
        kind_ = REDIRECT if hops else NAV
        embeds, refresh = self.pages.embeds, self.pages.refresh
        max_depth = self.cfg.max_depth
        if max_depth is None:
            self.router.route(fp, links, hops, hop=hop, via=r.url, kind=kind_)
            if embeds:
                self.router.route(fp, embeds, hop=EMBED_HOP, via=r.url, kind=EMBED)
            if refresh:
                self.router.route(fp, refresh, hop=REFRESH_HOP, via=r.url, kind=REFRESH)
            return
        page_depth = 0 if idx is None else f.depth_of(idx)
        depth, follow = links_depth(page_depth, hops > 0, max_depth)
        if not follow and links:
            self.counters.links["out_of_scope_depth"] += len(links)
        self.router.route(fp, links, hops, depth, follow=follow, tally="followed" if follow else None,
                          hop=hop, via=r.url, kind=kind_)
        if embeds:          # requisites: even one hop past --max-depth (a style sheet's: as deep as it)
            e_depth, e_follow = requisite_depth(page_depth, is_node, max_depth)
            if not e_follow:
                self.counters.links["out_of_scope_depth"] += len(embeds)
            self.router.route(fp, embeds, 0, e_depth, follow=e_follow, tally="followed" if e_follow else None,
                              hop=EMBED_HOP, via=r.url, kind=EMBED)
        if refresh:         # a refresh moves on like a redirect: as deep as its page
            r_depth, r_follow = links_depth(page_depth, True, max_depth)
            self.router.route(fp, refresh, 0, r_depth, follow=r_follow, tally="followed" if r_follow else None,
                              hop=REFRESH_HOP, via=r.url, kind=REFRESH)

    def _tries(self, idx: int | None) -> list[str]:
        """The crawl log's ``Nt`` of URL ``idx``'s request (retries and slot cuts before it)."""
        return tries(1 if idx is None else self.frontier.tries(idx))

    def drain(self, deadline: float) -> int:
        """At the end: complete what is in flight until ``deadline``; returns the requests abandoned
        (not counted: they are asked again after a resume)."""
        while self.fetcher.in_flight and time.monotonic() < deadline:
            for r in self.fetcher.poll(0.01):
                kind, host = r.key
                if kind == FetchKind.PAGE:
                    b = self.batches.get(host)
                    idx = None
                    if b is not None and b.current is not None:
                        idx, b.current = b.current, None
                        self.frontier.complete(idx)
                    self.process(r, idx, self._tries(idx))
                else:                            # a robots.txt or sitemap answer at the end: logged, unused
                    self.lines.late(r, kind)
        return self.in_flight if self.fetcher.in_flight else 0
