"""One rank's crawl loop: supersteps of fetch → parse → classify → exchange.

The life of a URL (DESIGN §3):

1. it is found on a page (or is a seed), canonicalized and fingerprinted;
2. ``owner()`` decides which rank crawls it; out-of-scope and non-http(s)
   links are counted and dropped here;
3. the URL-seen set (which also remembers URLs sent to other ranks) lets it
   through once; a local URL enters URLStates, a remote one ``outbox[owner]``;
4. at the end of the superstep the outboxes are exchanged (nonblocking
   all-to-all) and received URLs pass the owner's URL-seen test;
5. the scheduler scans URLStates into the Bucket; a full or aged element
   (one host's batch) is fetched over one connection, robots.txt first;
6. the response is written to the WARC, parsed, its links go to step 1; the
   page and its links are reported to rank 0, which builds the graph.

The loop keeps fetching while an exchange is in flight; a global reduction in
the same exchange decides when to stop.
"""
from __future__ import annotations

import os
import resource
import signal
import time
from collections import Counter, deque
from dataclasses import dataclass, field

import numpy as np
import xxhash

from .checkpoint import CheckpointLog, Journal, load_checkpoint, save_checkpoint
from .clock import SharedClock, estimate_offset
from .config import CrawlConfig, clock_skew, robots_token_of
from .coordinator import Coordinator, Report, encode_report
from .crash import InjectedCrash, parse_test_crash, raise_thread_failures
from .exchange import Communicator
from .fetcher import Fetcher, Response
from .frontier import Element, Frontier
from .seen import new_fpset
from .limits import RETRYABLE_ERRORS, RETRYABLE_STATUS, InflateError, inflate, retry_delay, trap_reason
from .ownership import Assignment
from .parser import charset_of, extract_links, is_html
from .phases import CUT_LATE, CUT_SLOW, CUT_STARVED, CUT_WARM, HolderTable, PhaseClock, cut_cause, uses_phases
from .robots import SHARE_MAX_BYTES, RobotsCache, decode_shared, encode_shared, redirect_target, robots_url
from .scope import Scope, ScopeRules
# [h20] real-web crawling: the address rule, sitemaps, what travels with a URL to its owner
from .addresses import AddressPolicy
from .sitemaps import MAX_INDEX_DEPTH, read_sitemap, seed_sitemap_urls
from .urlline import decode_line, encode_line
from .urls import UrlError, canonicalize, fingerprint, host_of, scheme_of
from .warc import RankWarc

__all__ = ["RankCrawler", "StopFlag", "STATUS_FIELDS", "step_seconds"]

# The status vector summed over ranks at every exchange.
STATUS_FIELDS = ("work", "requests", "pages_ok", "bytes", "failed", "frontier", "signal", "time_up",
                 "volume", "outbox", "errors", "clock_due", "checkpoint_due")
_S = {name: i for i, name in enumerate(STATUS_FIELDS)}
#: a URL cut at slot ends this many times without its own fault (late start, starved rank) is
#: handled as a transient failure (retried with back-off, then failed as ``slot_never_full``)
MAX_FREE_CUTS = 24
#: loop gaps (seconds) worth remembering to tell a starved rank's cut
GAP_NOTED = 0.01
#: longest sleep of a rank under phase slots before it looks for leases handed to it
LEASE_POLL_SECONDS = 0.01
#: seconds of the first superstep of a run; each next one twice as long, up to superstep-seconds
RAMP_FIRST_STEP = 0.05


def step_seconds(steps_run: int, superstep_seconds: float) -> float:
    """Length of the work phase of a run's superstep number ``steps_run`` (0, 1, ...): 50 ms,
    doubling, up to ``superstep_seconds``. The exponent is capped, so the result stays a finite
    float however long the run (``2 ** 1024`` does not fit a float)."""
    return min(superstep_seconds, RAMP_FIRST_STEP * 2.0 ** min(steps_run, 60))


def _frames(*parts: bytes) -> bytes:
    """Several byte strings as one buffer (8-byte little-endian length before each); b"" if all empty."""
    if not any(parts):
        return b""
    return b"".join(len(p).to_bytes(8, "little") + p for p in parts)


def _unframe(data: bytes, n: int = 2) -> list[bytes]:
    out, i = [], 0
    for _ in range(n):
        k = int.from_bytes(data[i:i + 8], "little")
        out.append(data[i + 8:i + 8 + k])
        i += 8 + k
    return out


class StopFlag:
    """Set by SIGINT/SIGTERM; checked at superstep boundaries."""

    def __init__(self):
        self.signum: int | None = None

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handler)

    def _handler(self, signum, frame) -> None:
        self.signum = signum

    @property
    def set(self) -> bool:
        return self.signum is not None


@dataclass
class Batch:
    """An element being fetched: the URLs left and the pacing within the batch."""

    element: Element
    host: str
    todo: list[int]
    next_at: float = 0.0
    robots: bool = False          # a robots.txt request is in flight
    current: int | None = None    # URL index in flight
    deadline: float | None = None # shared-clock end of the slot the request in flight belongs to
    slot_len: float = 0.0         # length of that slot (shorter than phase-seconds: a warm-up slot)
    limit: float = 0.0            # seconds the request in flight was given (deadline - its start)
    started: float = 0.0          # monotonic time the request in flight started


@dataclass
class RankCounters:
    requests: int = 0             # page requests issued (robots.txt excluded)
    responses: int = 0
    pages_ok: int = 0
    pages_failed: int = 0
    pages_redirected: int = 0
    pages_other: int = 0
    bytes: int = 0
    nodes: int = 0
    duplicates: int = 0
    volume: int = 0               # Türk MV
    messages_thesis: int = 0
    wire_bytes: int = 0
    wire_urls: int = 0
    messages_mpi: int = 0
    robots_fetches: int = 0
    batches: int = 0
    slot_cuts: int = 0            # requests cut at a slot end and put back
    warm_cuts: int = 0            # of which at the end of a warm-up slot (not counted towards max-slot-cuts)
    cuts_late: int = 0            # of which started too late in their slot to have it (not counted)
    cuts_starved: int = 0         # of which this rank's loop was away (a busy machine; not counted)
    cuts_slow: int = 0            # of which the server did not answer within a full slot (counted)
    retries: int = 0
    handovers: int = 0            # slots this rank handed over (it held a host with nothing queued)
    leases: int = 0               # slots handed to this rank
    leases_late: int = 0          # leases that arrived after the crawl ended
    errors: Counter = field(default_factory=Counter)
    links: Counter = field(default_factory=Counter)
    out_of_scope_hosts: Counter = field(default_factory=Counter)
    bytes_decoded: int = 0        # [h20] response bodies after Content-Encoding is undone (bytes: as received)
    sitemaps: Counter = field(default_factory=Counter)   # [h20] sitemap files fetched, URLs listed, skipped


class RankCrawler:
    """The crawl state and loop of one rank."""

    def __init__(self, cfg: CrawlConfig, comm: Communicator, scope: Scope, assignment: Assignment,
                 seeds: list[str], session_dir: str, stop: StopFlag, progress=None,
                 holders: HolderTable | None = None, rules: ScopeRules | None = None, proxies=None, ca=None):
        self.cfg = cfg
        self.comm = comm
        self.rank = comm.rank
        self.size = comm.size
        self.scope = scope
        self.assign = assignment
        self.seeds = seeds
        self.stop = stop
        self.progress = progress
        self.frontier, self.seen = self._empty_state()
        # [h20] the user's scope rules; where the fetcher may connect (the resolve list's addresses are the
        # user's choice); proxies and CAs come from rank 0
        self.rules = rules if rules is not None else ScopeRules()
        self.fetcher = Fetcher(scope=scope, user_agent=cfg.user_agent, timeout=cfg.timeout,
                               connect_timeout=cfg.connect_timeout, max_body_bytes=cfg.max_body_bytes,
                               rank=self.rank, max_connections=cfg.concurrency,
                               addresses=AddressPolicy(cfg.allow_private_addresses, scope.addresses),
                               proxies=proxies, ca=ca, contact=cfg.contact, rank_header=cfg.test_rank_header)
        self.robots = RobotsCache(robots_token_of(cfg), cfg.robots_retry_seconds, enabled=cfg.robots)
        self.depth: dict[int, int] = {}           # [h20] fp -> link hops from a seed (with --max-depth only)
        self.sitemap_fps: dict[int, int] = {}     # [h20] fp -> index level, of sitemap files admitted here
        self._sitemap_idx: dict[str, int] = {}    # [h20] host -> URL index of its sitemap file in flight
        self.warc = RankWarc(session_dir, self.rank, enabled=cfg.warc, batch=cfg.warc_batch)
        self.outbox: list[list[str]] = [[] for _ in range(self.size)]
        self.c = RankCounters()
        self.batches: dict[str, Batch] = {}
        self.report = Report(rank=self.rank)
        self.superstep = 0
        self.step_responses = 0
        self.budget: int | None = None
        if cfg.max_pages is not None:
            n, k = cfg.max_pages, self.size
            self.budget = n // k + (1 if self.rank < n % k else 0)
        self.t0 = time.monotonic()
        self.coordinator: Coordinator | None = None
        self.stopped = "done"
        self.idle_s = 0.0
        self.idle_slot_s = 0.0            # idle with work queued, none of it held in this slot
        self.idle_rest_s = 0.0            # idle with work queued for hosts resting or backing off
        self.idle_empty_s = 0.0           # idle with nothing queued
        self.exchange_s = 0.0             # time spent completing superstep exchanges
        self.clock = SharedClock(clock_skew(cfg.test_clock_skew, self.rank), reference=self.rank == 0)
        self._last_sync = 0.0
        self.phase_clock: PhaseClock | None = None
        # auto: phases only where two ranks can share a host (page-level assignment, K > 1)
        use = uses_phases(cfg.phases, assignment.site_level, self.size)
        # hosts that only this rank ever fetches (a part vector keeps every page of them here,
        # and new pages of a known host follow its pages): no slot needed, no other rank to meet
        self._own_hosts: frozenset[str] = assignment.exclusive_hosts(self.rank)
        # robots.txt answers to send to every rank (page-level assignment: they crawl the host too)
        self._share_robots = self.size > 1 and not assignment.site_level and cfg.robots
        self.robots_out: list[tuple[str, int, bytes]] = []
        self.holders: HolderTable | None = None
        if use:
            n = cfg.n_phases or self.size
            self.phase_clock = PhaseClock(self.rank, self.size, n, cfg.phase_seconds, cfg.phase_guard,
                                          error=self.clock.error_bound, warmup=cfg.phase_warmup)
            # who holds which host in which slot (built by rank 0 from the assignment and sent)
            self.holders = holders if holders is not None else HolderTable(self.size, n, assignment.host_pages())
        # hand-over of slots (see abc_crawler.phases): which ranks announced work for a shared host,
        # the hosts others have work for and this rank has none, leases received and given
        self._work_at: dict[str, int] = {}       # host -> bitmask of other ranks that announced work
        self._give: set[str] = set()
        self._leases: dict[str, int] = {}        # host -> slot another rank handed to this one
        self._released: dict[str, int] = {}      # host -> slot this rank handed over (it keeps off)
        self._test_crash = parse_test_crash(cfg.test_crash, self.size)
        self._window: tuple[int, float, float] | None = None
        self._gaps: deque[tuple[float, float]] = deque(maxlen=512)   # (end, length) of long loop gaps
        self._last_turn = time.monotonic()
        self.host_time: dict[str, float] = {}    # host -> its response time (moving average), seconds
        self.free_cuts: dict[int, int] = {}      # URL index -> cuts that were not its own fault
        self._slot_len = cfg.phase_seconds       # length of the slot of self._window
        # limits and failure state (BUbiNG-style: host state, not exceptions)
        self.hops: dict[int, int] = {}            # fp -> redirect hops that led to this URL
        self.attempts: dict[int, int] = {}        # URL index -> retries so far
        self.cuts: dict[int, int] = {}            # URL index -> slot-end cuts in a row
        self.robots_cuts: Counter = Counter()     # host -> robots.txt slot-end cuts in a row
        self.host_fail: Counter = Counter()       # consecutive transport failures per host
        self.dead_hosts: set[str] = set()
        self.host_admitted: Counter = Counter()
        k = 1 if assignment.site_level else self.size
        self.host_cap = -(-cfg.max_pages_per_host // k)
        self._link_cache: dict[str | tuple[str, str], tuple] = {}   # see _targets
        self.session_dir = session_dir
        self.journal: Journal | None = None       # rank 0: every superstep's reports
        self._last_ckpt = time.monotonic()
        self._ckpt_log: CheckpointLog | None = None   # append-only part of the checkpoints
        self.cpu_before = 0.0                     # CPU seconds of earlier runs (after --resume)
        self.resumed_from: int | None = None

    def _empty_state(self) -> tuple[Frontier, object]:
        """An empty frontier and URL-seen set (URLs admitted here or sent to their owner), with a
        REPORTED flag per fingerprint (URLs whose text rank 0 already has from us): one exact
        uint64 table."""
        cfg = self.cfg
        frontier = Frontier(n_columns=cfg.bucket_columns, n_rows=cfg.bucket_rows, batch_urls=cfg.batch_urls,
                            window=cfg.window, flush_seconds=cfg.bucket_flush_seconds)
        return frontier, new_fpset(journal=cfg.checkpoint_seconds > 0)

    # -- classification ------------------------------------------------------
    def _targets(self, page_url: str, base: str | None, hrefs: list[str]) -> list[tuple[str, int, int, int]]:
        """The links of a page to follow, as ``(canonical URL, fingerprint, owner rank, wire bytes)``
        (distinct, in page order; wire bytes: what sending the URL to its owner costs, 0 if it is
        this rank's); links not followed are counted by reason."""
        links = self.c.links
        try:
            base_url = canonicalize(base, page_url) if base else page_url
        except UrlError:
            base_url = page_url
        if base_url is None:
            base_url = page_url
        cfg = self.cfg
        if len(hrefs) > cfg.max_links_per_page:
            links["over_page_limit"] += len(hrefs) - cfg.max_links_per_page
            hrefs = hrefs[:cfg.max_links_per_page]
        out: dict[int, tuple] = {}
        # Decisions are cached, with everything a followed link needs later (fingerprint, owner,
        # wire bytes), under a key that names what the decision depends on:
        # - an absolute "http(s)://..." reference: nothing else (its scheme lower-cased);
        # - a root-relative "/path" reference: the base's origin;
        # - a scheme-relative "//host/path" reference: the base's scheme;
        # - any other relative reference: the base's directory.
        # The fragment is left out of the key (canonical URLs have none). References that
        # depend on the base's own path or query ("", "?q", "#f") are not cached.
        nq = base_url.find("?")
        base_dir = base_url[: base_url.rfind("/", 0, nq if nq >= 0 else len(base_url)) + 1]
        colon = base_url.find("://")
        scheme = base_url[:colon + 1]
        slash = base_url.find("/", colon + 3)
        origin = base_url if slash < 0 else base_url[:slash]
        cache = self._link_cache
        oos = self.c.out_of_scope_hosts
        for href in hrefs:
            key = None
            if href and href[0] not in "?# \t\n\r":
                cut = href.find("#")
                k = href if cut < 0 else href[:cut]
                h8 = k[:8].lower()
                if h8.startswith("http://") or h8 == "https://":
                    key = h8 + k[8:]
                elif k[0] == "/":
                    key = (scheme, k) if k[1:2] in ("/", "\\") else (origin, k)
                else:
                    key = (base_dir, k)
                hit = cache.get(key)
                if hit is not None:
                    if hit[0] is not None:
                        out[hit[1]] = hit
                    else:
                        links[hit[1]] += 1
                        if hit[2] is not None:     # [h20] out of scope: by resolve list or domain
                            oos[hit[2]] += 1
                    continue
            hit = self._classify(href, base_url)
            if hit[0] is not None:
                out[hit[1]] = hit
            else:
                links[hit[1]] += 1
                if hit[2] is not None:             # [h20]
                    oos[hit[2]] += 1
            if key is not None:
                if len(cache) >= 262_144:
                    cache.clear()
                cache[key] = hit
        return list(out.values())

    def _target(self, url: str) -> tuple[str, int, int, int]:
        """``(url, fingerprint, owner rank, wire bytes)`` of a canonical URL (see :meth:`_targets`)."""
        fp = fingerprint(url)
        r = self.assign.owner(url, fp)
        return url, fp, r, (0 if r == self.rank else len(url.encode()) + 1)

    def _classify(self, href: str, base_url: str) -> tuple:
        """A target to follow (:meth:`_target`), else ``(None, reason, detail)``."""
        try:
            url = canonicalize(href, base_url)
        except UrlError:
            return None, "invalid", None
        if url is None:
            return None, "not_http", None
        if not self.scope.allows_url(url):
            return None, "out_of_scope", host_of(url)
        if self.rules.active:                      # [h20] --allowed-domains, --url-filter
            why = self.rules.reason(url)
            if why is not None:
                return None, why, (host_of(url) if why == "out_of_scope_domain" else None)
        cfg = self.cfg
        trap = trap_reason(url, max_length=cfg.max_url_length, max_depth=cfg.max_path_depth,
                           max_repeats=cfg.max_segment_repeats)
        if trap is not None:
            return None, trap, None
        return self._target(url)

    def _route(self, src_fp: int | None, targets: list[tuple[str, int, int, int]], hops: int = 0,
               depth: int = 0, sitemap: bool = False, follow: bool = True, tally: str | None = "followed") -> None:
        """MV, URL-seen test, frontier or outbox, report to rank 0, for targets of :meth:`_targets`.

        ``hops`` > 0 marks the targets of a redirect chain (carried to the owner), as do ``depth``
        (link hops from a seed, with --max-depth) and ``sitemap`` (sitemap files). ``follow``
        False: reported to rank 0 (links of the graph) but not crawled (--max-depth). Only links
        (``src_fp`` given) count towards MV and Türk's messages; ``tally``: the ``links`` counter.
        """
        rep = self.report
        me = self.rank
        seen = self.seen
        remote: set[int] = set()
        volume = 0
        if src_fp is not None:
            rep.link_src.extend([src_fp] * len(targets))
        for url, fp, r, wire in targets:
            if wire and src_fp is not None:        # [h20] seeds and sitemap URLs are not links
                volume += wire
                remote.add(r)
            if src_fp is not None:
                rep.link_dst.append(fp)
                if seen.report(fp):
                    rep.new_fp.append(fp)
                    rep.new_urls.append(url)
            if not follow:                         # [h20] --max-depth
                continue
            if not seen.add(fp):
                continue
            if r == me:
                self._admit_local(url, fp, hops, depth, sitemap)
            else:
                self.outbox[r].append(encode_line(url, hops, depth, sitemap))   # [h20] urlline
        self.c.volume += volume
        rep.volume += volume
        self.c.messages_thesis += len(remote)
        if tally is not None:
            self.c.links[tally] += len(targets)

    def add_seeds(self) -> None:
        mine = [t for t in map(self._target, self.seeds) if t[2] == self.rank]
        self._route(None, mine)
        if self.cfg.sitemaps:                      # [h20] /sitemap.xml of every seed host, by its owner
            self._route_sitemaps(None, seed_sitemap_urls(self.seeds), 0, only_mine=True)

    def _admit_local(self, url: str, fp: int, hops: int, depth: int = 0, sitemap: bool = False) -> None:
        """Put a new URL of ours into URLStates (within the per-host limit)."""
        host = host_of(url)
        if self.host_admitted[host] >= self.host_cap:
            self.c.links["over_host_limit"] += 1
            return
        self.host_admitted[host] += 1
        if hops:
            self.hops[fp] = hops
        if sitemap:                                # [h20]
            self.sitemap_fps[fp] = depth
        elif depth and self.rules.max_depth is not None:
            self.depth[fp] = depth
        self.frontier.add(url, host)

    def receive(self, data: bytes) -> None:
        """URLs another rank found for us (lines ``URL`` or ``URL\tHOPS``)."""
        if not data:
            return
        for line in data.decode().split("\n"):
            if not line:
                continue
            url, h, depth, sitemap = decode_line(line)    # [h20] urlline
            fp = fingerprint(url)
            if not self.seen.add(fp):
                continue
            self._admit_local(url, fp, h, depth, sitemap)

    def receive_robots(self, data: bytes) -> None:
        """robots.txt answers other ranks fetched: taken for hosts this rank has not asked yet."""
        now = time.monotonic()
        for host, status, body in decode_shared(data):
            self.robots.adopt(host, status, body, now)

    # -- fetching ------------------------------------------------------------
    def _may_request(self) -> bool:
        return self.budget is None or self.c.requests < self.budget

    def _phase_window(self) -> tuple[int, float, float] | None:
        """The active (phase, start, end) on the shared clock, or None in a guard band."""
        pc = self.phase_clock
        if pc is None:
            return None
        now = self.clock.shared()
        w = pc.window(now)
        if w != self._window:
            old = self._window
            self._window = w
            self._slot_len = pc.slot_length(now)
            if old is not None:
                # a new slot: elements still queuing for hosts not held now give their URLs back
                self.frontier.evict(lambda host: not self._admit(host))
            self.frontier.readmit()              # hosts _admit refused may be admitted now
            if w is not None and (old is None or old[0] != w[0]):
                self._new_slot(w[0], now)
        return w

    def _admit(self, host: str) -> bool:
        """May this rank contact ``host`` now: its own host, or it holds the host in this slot (by
        the holder table and not handed over, or by a lease handed to it for this slot)."""
        h = self.holders
        if h.exclusive(host) is not None:
            return True
        w = self._window
        if w is None:
            return False
        slot = w[0]
        if self._leases.get(host) == slot:
            return True
        return h.holder(host, slot) == self.rank and self._released.get(host) != slot

    # -- slot hand-over (abc_crawler.phases) ----------------------------------------
    def _new_slot(self, slot: int, now: float) -> None:
        """At the start of a slot: forget old leases; hand over the hosts this rank holds now but
        has nothing queued for, when another rank announced work for them."""
        if self._leases:
            self._leases = {h: t for h, t in self._leases.items() if t >= slot}
        if self._released:
            self._released = {h: t for h, t in self._released.items() if t >= slot}
        if not self._give or not self.cfg.slot_handover:
            return
        hold = self.holders.holder
        for host in list(self._give):
            if self.frontier.host_pending(host) > 0 or not self._work_at.get(host):
                self._give.discard(host)
            elif hold(host, slot) == self.rank and host not in self.batches:
                self._hand_over(host, slot, self.clock.shared())

    def _slot_tick(self) -> None:
        """A rank with nothing to fetch still follows the slots while it waits for an exchange,
        so that it hands over the hosts it holds (returns None: no fetch work was done)."""
        if self._give and self.holders is not None:
            self._phase_window()

    def _hand_over(self, host: str, slot: int, not_before: float) -> bool:
        """Give this slot of ``host`` to the next holder in its sequence that announced work; this
        rank keeps off the host for the rest of the slot (marked before the lease is sent)."""
        mask = self._work_at.get(host, 0)
        hold = self.holders.holder
        for k in range(1, self.holders.q + 1):
            r = hold(host, slot + k)
            if r != self.rank and mask >> r & 1:
                break
        else:
            return False
        self._released[host] = slot
        self.comm.send_lease(r, f"{host}\t{slot}\t{not_before!r}".encode())
        self.c.handovers += 1
        return True

    def _take_leases(self, now: float) -> None:
        """Leases other ranks sent: this rank may fetch the host within that slot, after the rest."""
        for data in self.comm.poll_leases():
            host, slot, nb = data.decode().split("\t")
            slot = int(slot)
            w = self._window
            if w is not None and slot < w[0]:
                continue                          # the slot is over
            self._leases[host] = slot
            self.c.leases += 1
            wait = float(nb) - self.clock.shared()
            if wait > 0:
                self.frontier.blocked_until[host] = max(self.frontier.blocked_until.get(host, 0.0), now + wait)
            self.frontier.readmit()

    def _announce_work(self) -> bytes:
        """Shared hosts whose queue here went from empty to not empty or back since the last
        superstep, as ``host\tflag`` lines for every rank."""
        changes = self.frontier.take_work_changes()
        if self.holders is None or not changes:
            return b""
        lines = []
        for host, has in changes:
            if self.holders.exclusive(host) is not None:
                continue
            lines.append(f"{host}\t{1 if has else 0}")
            if has:
                self._give.discard(host)
            elif self._work_at.get(host):
                self._give.add(host)
        return ("\n".join(lines)).encode()

    def receive_work(self, src: int, data: bytes) -> None:
        """Another rank's work announcements."""
        bit = 1 << src
        for line in data.decode().split("\n"):
            host, _, flag = line.partition("\t")
            mask = self._work_at.get(host, 0)
            mask = mask | bit if flag == "1" else mask & ~bit
            if mask:
                self._work_at[host] = mask
                if self.frontier.host_pending(host) == 0:
                    self._give.add(host)
            else:
                self._work_at.pop(host, None)
                self._give.discard(host)

    def _start_batches(self, now: float) -> None:
        admit = None
        if self.phase_clock is not None:
            self._phase_window()                 # a guard band admits only this rank's own hosts
            admit = self._admit
        # O(hosts that changed): hosts with new or returned URLs, freed elements, ended back-offs
        self.frontier.schedule(now, admit)
        free = self.cfg.concurrency - len(self.batches)
        if free <= 0:
            return
        # nothing in flight: an element still filling is sent now rather than after its flush time
        for e in self.frontier.ready(now, limit=free, eager=not self.batches):
            b = Batch(element=e, host=e.host, todo=list(e.urls))
            self.batches[e.host] = b
            self.c.batches += 1
        for b in list(self.batches.values()):
            if b.current is None and not b.robots and b.next_at <= now:
                self._advance(b, now)

    def _request_timeout(self, host: str) -> float | None:
        """Seconds a request to ``host`` may take now: None = no limit beyond the timeout;
        0 = must not start (slot over or ending)."""
        if self.phase_clock is None:
            return None
        if self.holders.exclusive(host) is not None:
            return None
        w = self._phase_window()
        if w is None or not self._admit(host):
            return 0.0
        left = w[2] - self.clock.shared()
        ht = self.host_time.get(host)
        if left < 0.02 or (ht is not None and left < 2 * ht):
            return 0.0                   # it would likely be cut: the request waits for the next slot
        return left

    def _advance(self, b: Batch, now: float) -> None:
        """Issue the next request of a batch, or end it."""
        host = b.host
        h = self.robots.get(host)
        limit = self._request_timeout(host)
        if limit == 0.0:
            # the host's slot is over: give the URLs back; they come again in its next slot
            for idx in b.todo:
                self.frontier.release(idx)
            b.todo = []
            del self.batches[host]
            self.frontier.finish(b.element, now, 0.0)
            return
        b.deadline = None if limit is None else self.clock.shared() + limit
        b.slot_len = self._slot_len
        b.limit = 0.0 if limit is None else limit
        b.started = now
        if h.state == "dead" or host in self.dead_hosts:
            kind = "host_unreachable" if host in self.dead_hosts else h.reason   # [h20] e.g. address_refused
            for idx in b.todo:
                self.frontier.complete(idx, stalled=True)
                self.c.errors[kind] += 1
            b.todo = []
        elif self.robots.needs_fetch(host, now):
            url0 = self.frontier.url(b.todo[0]) if b.todo else None
            if url0 is not None:
                prefix = url0[: url0.index("/", url0.index("://") + 3)]
                b.robots = True
                self.c.robots_fetches += 1
                self.fetcher.submit(("robots", host), robots_url(prefix), timeout=limit)
                return
        elif h.state != "ready":           # retry pending: give the URLs back, try later
            for idx in b.todo:
                self.frontier.release(idx)
            b.todo = []
            self.frontier.blocked_until[host] = h.retry_at
        while b.todo:
            if not self._may_request():
                for idx in b.todo:
                    self.frontier.release(idx)
                b.todo = []
                break
            idx = b.todo.pop(0)
            url = self.frontier.url(idx)
            if not self.robots.allowed(host, url):
                self.frontier.complete(idx)
                self.c.links["robots_disallowed"] += 1
                continue
            if self.sitemap_fps and fingerprint(url) in self.sitemap_fps:   # [h20] a sitemap file, not a page
                self._sitemap_idx[host] = idx
                b.robots = True
                self.fetcher.submit(("sitemap", host), url, timeout=limit)
                return
            b.current = idx
            self.c.requests += 1
            self.fetcher.submit(("page", host), url, timeout=limit)
            return
        # batch done
        del self.batches[host]
        rest = max(self.cfg.politeness_delay, h.crawl_delay)
        self.frontier.finish(b.element, now, rest)
        w = self._window
        if (w is not None and self.cfg.slot_handover and self._work_at.get(host) and self.frontier.host_pending(host) == 0
                and self.holders.holder(host, w[0]) == self.rank and self._released.get(host) != w[0]
                and self.holders.exclusive(host) is None):
            # nothing more here for a host another rank has work for: the rest of the slot is theirs
            self._hand_over(host, w[0], self.clock.shared() + rest)

    def _cut_cause(self, host: str, b: Batch, now: float) -> str:
        """Why the request in flight of ``b`` was cut at its slot's end (:func:`phases.cut_cause`)."""
        warm = b.slot_len < self.cfg.phase_seconds - 1e-9
        usable = b.slot_len - 2 * self.phase_clock.guard_for(b.slot_len)
        gap = max((g for end, g in self._gaps if end > b.started), default=0.0)
        cause = cut_cause(b.limit, usable, self.host_time.get(host), gap, warm)
        c = self.c
        c.slot_cuts += 1
        if cause == CUT_WARM:
            c.warm_cuts += 1
        elif cause == CUT_LATE:
            c.cuts_late += 1
        elif cause == CUT_STARVED:
            c.cuts_starved += 1
        else:
            c.cuts_slow += 1
        return cause

    def _on_response(self, r: Response, now: float) -> None:
        kind, host = r.key
        b = self.batches[host]
        cut = (r.error == "timeout" and b.deadline is not None
               and self.clock.shared() >= b.deadline - 0.005 and r.t_end - r.t_start < self.cfg.timeout)
        cause = self._cut_cause(host, b, now) if cut else None
        if kind == "sitemap":                      # [h20]
            self._on_sitemap(b, r, now, cause)
            return
        if kind == "robots":
            b.robots = False
            if cause is not None:          # the slot ended first: ask again in the host's next slot
                if cause == CUT_SLOW:
                    self.robots_cuts[host] += 1
                if cause != CUT_SLOW or self.robots_cuts[host] < self.cfg.max_slot_cuts:
                    self.robots.get(host).state = "unknown"
                    self._advance(b, now)
                    return
                self.c.errors["robots_slot_too_short"] += 1   # and on as a timeout (back-off)
            self.robots_cuts.pop(host, None)
            if r.error is None and 300 <= r.status < 400 and self._robots_redirect(b, r, now):   # [h20]
                return
            self.robots.on_response(host, r.status if r.error is None else 0, r.body, now, error=r.error)
            if self.cfg.sitemaps and r.error is None:       # [h20] its Sitemap lines, from the rank that fetched it
                self._route_sitemaps(r.url, self.robots.take_sitemaps(host), 0)
            if (self._share_robots and r.error is None and 200 <= r.status < 500
                    and len(r.body) <= SHARE_MAX_BYTES and host not in self._own_hosts):
                self.robots_out.append((host, r.status, r.body))
            if r.error is not None:
                self.c.errors[f"robots_{r.error}"] += 1
            elif r.status >= 500:
                self.c.errors["robots_5xx"] += 1
            b.next_at = now + self.robots.get(host).crawl_delay
            if b.next_at <= now:
                self._advance(b, now)
            return
        idx = b.current
        b.current = None
        if cause is not None:
            # Only a cut that is the request's own fault counts: it had a full slot and the server
            # did not answer in it (or never answers within a slot). A request that started late in
            # its slot, or whose rank was starved, goes back to the front of its host's queue with no
            # penalty (a busy machine must not lose pages), bounded by MAX_FREE_CUTS.
            if cause == CUT_SLOW:
                n = self.cuts[idx] = self.cuts.get(idx, 0) + 1
                fail = n >= self.cfg.max_slot_cuts
                kind_, why = "slot_too_short", f"the server did not answer within {n} full phase slots"
            else:
                n = self.free_cuts[idx] = self.free_cuts.get(idx, 0) + 1
                fail = cause != CUT_WARM and n >= MAX_FREE_CUTS
                kind_, why = "slot_never_full", f"cut at {n} slot ends without a full slot (busy machine)"
            if not fail:
                self.c.requests -= 1       # not a request of this session's count: it is asked again
                self.frontier.release(idx)
                self._advance(b, now)
                return
            # a transient failure like any other: retried with back-off, failed only after that
            self.cuts.pop(idx, None)
            self.free_cuts.pop(idx, None)
            r.error, r.error_detail = kind_, why
        else:
            self.cuts.pop(idx, None)
            self.free_cuts.pop(idx, None)
            if r.error is None:
                t = r.t_end - r.t_start
                old = self.host_time.get(host)
                self.host_time[host] = t if old is None else 0.7 * old + 0.3 * t
        if r.error is not None:
            self.host_fail[host] += 1
        else:
            self.host_fail.pop(host, None)
        retryable = (r.error in RETRYABLE_ERRORS or r.error in ("slot_too_short", "slot_never_full")
                     or (r.error is None and r.status in RETRYABLE_STATUS))
        if retryable and self.host_fail[host] >= self.cfg.host_max_failures:
            self.dead_hosts.add(host)      # the host is given up; its other URLs are counted, not fetched
        elif retryable and self.attempts.get(idx, 0) < self.cfg.max_retries:
            n = self.attempts[idx] = self.attempts.get(idx, 0) + 1
            self.c.retries += 1
            self.c.errors[f"retried_{r.error or r.status}"] += 1
            delay = retry_delay(n, r.header("retry-after") if r.error is None else None,
                                self.cfg.retry_backoff_seconds, 60.0)
            self.frontier.release(idx)
            for j in b.todo:               # the host rests: the rest of the batch waits too
                self.frontier.release(j)
            b.todo = []
            self.frontier.blocked_until[host] = now + delay
            self._advance(b, now)
            return
        self.attempts.pop(idx, None)
        self.frontier.complete(idx)
        self._process_page(r)
        delay = self.robots.get(host).crawl_delay
        b.next_at = now + delay
        if delay <= 0:
            self._advance(b, now)

    def _process_page(self, r: Response) -> None:
        """Record a final response: WARC, report to rank 0, links into the crawl.

        Never raises for a bad page: an unexpected error is counted by kind
        (``internal_<Exception>``) and the crawl goes on.
        """
        c = self.c
        c.responses += 1
        self.step_responses += 1
        fp = fingerprint(r.url)
        try:
            status, nbytes, is_node, links, hops = self._page_outcome(r, fp)
        except Exception as exc:  # a crawler must not die on a page
            c.errors[f"internal_{type(exc).__name__}"] += 1
            status, nbytes, is_node, links, hops = (r.status or -1), len(r.body), False, [], 0
        rep = self.report
        rep.page_fp.append(fp)
        if self.seen.report(fp):
            rep.new_fp.append(fp)
            rep.new_urls.append(r.url)
        rep.page_status.append(status)
        rep.page_bytes.append(nbytes)
        rep.page_node.append(is_node)
        # [h20] --max-depth: a link is one hop deeper than its page, a redirect's target as deep
        if self.rules.max_depth is None:
            self._route(fp, links, hops)
            return
        depth = self.depth.pop(fp, 0) + (0 if hops else 1)
        follow = depth <= self.rules.max_depth
        if not follow and links:
            self.c.links["out_of_scope_depth"] += len(links)
        self._route(fp, links, hops, depth, follow=follow, tally="followed" if follow else None)

    def _page_outcome(self, r: Response, fp: int) -> tuple[int, int, bool, list[tuple], int]:
        """(status, body bytes, is node, links (:meth:`_targets`), redirect hops) of a final response."""
        c = self.c
        if r.error is not None:
            c.pages_failed += 1
            c.errors[r.error] += 1
            self.hops.pop(fp, None)
            return -1, 0, False, [], 0
        nbytes = len(r.body)
        c.bytes += nbytes
        body, decode_error = self._decoded(r)      # [h20] bodies are stored as received, decoded to parse
        c.bytes_decoded += nbytes if body is None else len(body)
        if self.warc.write(r):
            c.duplicates += 1
        hops_in = self.hops.pop(fp, 0)
        if 300 <= r.status < 400:
            c.pages_redirected += 1
            loc = r.header("location")
            if not loc:
                return r.status, nbytes, False, [], 0
            if scheme_of(loc) not in ("", "http", "https"):
                c.links["redirect_bad_scheme"] += 1
                c.errors["redirect_unsupported_scheme"] += 1
            if hops_in + 1 > self.cfg.max_redirects:
                c.errors["redirect_limit"] += 1
                return r.status, nbytes, False, [], 0
            return r.status, nbytes, False, self._targets(r.url, None, [loc]), hops_in + 1
        if r.status == 200:
            c.pages_ok += 1
            if not is_html(r.content_type):        # [h20] text/html and application/xhtml+xml
                c.links["not_html_pages"] += 1
                return r.status, nbytes, False, [], 0
            if decode_error is not None:
                c.errors[decode_error] += 1
                return r.status, nbytes, False, [], 0
            parsed = extract_links(body, charset_of(r.header("content-type")))
            if not parsed.ok:
                c.errors["unparsable_html"] += 1
                return r.status, nbytes, False, [], 0
            c.nodes += 1
            c.links["nofollow"] += len(parsed.nofollow)
            return r.status, nbytes, True, self._targets(r.url, parsed.base, parsed.links), 0
        if r.status >= 400:
            c.pages_failed += 1
            c.errors[f"http_{r.status // 100}xx"] += 1
        else:
            c.pages_other += 1
        return r.status, nbytes, False, [], 0

    # -- [h20] real-web crawling: robots.txt redirects, sitemaps, decoded bodies ---------------------
    def _robots_redirect(self, b: Batch, r: Response, now: float) -> bool:
        """Follow a robots.txt redirect (RFC 9309: up to five, to another scheme or host in scope);
        False when the chain ends here (the 3xx then means "unavailable")."""
        host = b.host
        in_scope = lambda u: self.scope.allows_url(u) and self.rules.host_reason(u) is None  # noqa: E731
        nxt = self.robots.next_hop(host, redirect_target(r.url, r.header("location"), in_scope))
        if nxt is None:
            self.c.errors["robots_redirect_unfollowed"] += 1
            return False
        limit = self._request_timeout(host)
        if limit == 0.0:                           # the slot is over: ask again in the host's next slot
            self.robots.get(host).state = "unknown"
            self._advance(b, now)
            return True
        b.robots = True
        self.c.robots_fetches += 1
        self.fetcher.submit(("robots", host), nxt, timeout=limit)
        return True

    def _route_sitemaps(self, base: str | None, urls: list[str], level: int, only_mine: bool = False) -> None:
        """Sitemap files (robots.txt Sitemap lines, /sitemap.xml of seed hosts, index entries) into the
        crawl, within the host-level scope; not links."""
        sm = self.c.sitemaps
        targets = []
        for u in urls:
            try:
                url = canonicalize(u, base) if base else canonicalize(u)
            except UrlError:
                url = None
            if url is None:
                sm["bad_loc"] += 1
                continue
            if not self.scope.allows_url(url) or self.rules.host_reason(url) is not None:
                sm["out_of_scope"] += 1
                continue
            t = self._target(url)
            if not only_mine or t[2] == self.rank:
                targets.append(t)
        sm["files_listed"] += len(targets)
        self._route(None, targets, depth=level, sitemap=True, tally=None)

    def _on_sitemap(self, b: Batch, r: Response, now: float, cause: str | None) -> None:
        """A sitemap file's response: the URLs it lists enter the frontier as seeds do."""
        host = b.host
        b.robots = False
        idx = self._sitemap_idx.pop(host)
        if cause is not None:
            # cut at the slot's end: asked again in the next slot, as a page would be, within the same
            # bounds (--max-slot-cuts cuts with a full slot, MAX_FREE_CUTS others); then given up
            if cause == CUT_SLOW:
                n = self.cuts[idx] = self.cuts.get(idx, 0) + 1
                give_up = n >= self.cfg.max_slot_cuts
            else:
                n = self.free_cuts[idx] = self.free_cuts.get(idx, 0) + 1
                give_up = cause != CUT_WARM and n >= MAX_FREE_CUTS
            if not give_up:
                self.frontier.release(idx)
                self._advance(b, now)
                return
            r.error = "slot_too_short"
        self.cuts.pop(idx, None)
        self.free_cuts.pop(idx, None)
        self.frontier.complete(idx)
        level = self.sitemap_fps.pop(fingerprint(r.url), 0)
        sm = self.c.sitemaps
        sm["fetched"] += 1
        if r.error is None and 300 <= r.status < 400 and r.header("location"):
            sm["redirects"] += 1
            self._route_sitemaps(r.url, [r.header("location")], level)
        elif r.error is not None or r.status != 200:
            sm["failed"] += 1
            self.c.errors[f"sitemap_{r.error or f'http_{r.status // 100}xx'}"] += 1
        else:
            try:
                f = read_sitemap(r.body, r.header("content-encoding"))
            except InflateError as exc:
                f = None
                self.c.errors[f"sitemap_{exc.kind}"] += 1
            if f is not None:
                sm.update(f.counts)
                if f.kind == "too_large":
                    self.c.errors["sitemap_too_large"] += 1
                targets = []
                for u in f.urls:
                    hit = self._classify(u, r.url)
                    if hit[0] is None:
                        self.c.links[hit[1]] += 1
                    else:
                        targets.append(hit)
                sm["urls"] += len(targets)
                self._route(None, targets, tally=None)
                if f.sitemaps and level >= MAX_INDEX_DEPTH:
                    sm["too_deep"] += len(f.sitemaps)
                elif f.sitemaps:
                    self._route_sitemaps(r.url, f.sitemaps, level + 1)
        delay = self.robots.get(host).crawl_delay
        b.next_at = now + delay
        if delay <= 0:
            self._advance(b, now)

    def _decoded(self, r: Response) -> tuple[bytes | None, str | None]:
        """The body with its Content-Encoding undone (within --max-inflated-bytes), or (None, error kind)."""
        enc = r.header("content-encoding")
        if not enc:
            return r.body, None
        try:
            return inflate(r.body, enc, self.cfg.max_inflated_bytes), None
        except InflateError as exc:
            return None, exc.kind

    def drive(self, wait: float) -> bool:
        """One turn of the fetch loop; sleeps at most ``wait`` seconds when there is nothing to do."""
        now = time.monotonic()
        if now - self._last_turn > GAP_NOTED:     # the loop was away (busy elsewhere, or starved)
            self._gaps.append((now, now - self._last_turn))
        self._start_batches(now)
        # sleep (in curl's select, which wakes on socket activity) until the next thing to do
        nxt = self.frontier.next_wakeup(now, queuing=len(self.batches) < self.cfg.concurrency)
        for b in self.batches.values():
            if b.current is None and not b.robots and (nxt is None or b.next_at < nxt):
                nxt = b.next_at
        if self.phase_clock is not None:
            shared = self.clock.shared()
            slot = now + (self.phase_clock.next_start(shared) - shared)
            nxt = slot if nxt is None else min(nxt, slot)
        timeout = wait if nxt is None else max(0.0, min(wait, nxt - now))
        if self.holders is not None:
            timeout = min(timeout, LEASE_POLL_SECONDS)   # a lease may arrive: curl's select does not wake on it
        t = time.monotonic()
        done = self.fetcher.poll(timeout)
        if not done and not self.fetcher.in_flight:
            dt = time.monotonic() - t
            self.idle_s += dt
            if not self.frontier.pending and not self.batches:
                self.idle_empty_s += dt        # nothing to do
            elif (self.phase_clock is not None and not self.batches
                  and (self._window is None or not self.frontier.waiting_for_rest(t))):
                self.idle_slot_s += dt         # work queued, none of it held in this slot
            else:
                self.idle_rest_s += dt         # work queued, its hosts resting (politeness, back-off)
        now = time.monotonic()
        if self.holders is not None:
            self._take_leases(now)
        for r in done:
            self._on_response(r, now)
        self._last_turn = time.monotonic()
        return True

    def sync_clock(self) -> None:
        """Collective: every rank re-estimates its offset to rank 0's clock."""
        samples = self.comm.clock_samples(self.clock.local)
        if self.rank != 0:
            self.clock.update(*estimate_offset(samples))
        else:
            self.clock.update(0.0, 0.0)
        self._last_sync = time.monotonic()

    def has_local_work(self) -> bool:
        return self.frontier.pending > 0 or self.fetcher.in_flight > 0 or bool(self.batches)

    def can_progress(self) -> bool:
        """Work that this rank can do now (not only waiting for pacing)."""
        return self.fetcher.in_flight > 0 or (self.frontier.pending > 0 and self._may_request())

    # -- supersteps ----------------------------------------------------------
    def _status(self) -> np.ndarray:
        c = self.c
        st = np.zeros(len(STATUS_FIELDS), dtype=np.int64)
        outbox = sum(len(o) for o in self.outbox)
        st[_S["work"]] = self.frontier.pending + self.fetcher.in_flight + outbox
        st[_S["requests"]] = c.requests
        st[_S["pages_ok"]] = c.pages_ok
        st[_S["bytes"]] = c.bytes
        st[_S["failed"]] = c.pages_failed
        st[_S["frontier"]] = self.frontier.pending
        st[_S["signal"]] = 1 if self.stop.set else 0
        tl = self.cfg.time_limit
        st[_S["time_up"]] = 1 if (tl is not None and time.monotonic() - self.t0 >= tl) else 0
        st[_S["volume"]] = c.volume
        st[_S["outbox"]] = outbox
        st[_S["errors"]] = sum(c.errors.values())
        if self.rank == 0 and self.phase_clock is not None:
            st[_S["clock_due"]] = int(time.monotonic() - self._last_sync >= self.cfg.clock_refresh_seconds)
        if self.rank == 0 and self.cfg.checkpoint_seconds > 0:
            st[_S["checkpoint_due"]] = int(time.monotonic() - self._last_ckpt >= self.cfg.checkpoint_seconds)
        return st

    def _payloads(self) -> list[bytes]:
        payloads = []
        rep = self.report
        rep.send_bytes = [0] * self.size
        rep.send_urls = [0] * self.size
        for dst, urls in enumerate(self.outbox):
            if dst == self.rank or not urls:
                payloads.append(b"")
                continue
            data = ("\n".join(urls) + "\n").encode()
            payloads.append(data)
            rep.send_bytes[dst] = len(data)
            rep.send_urls[dst] = len(urls)
            self.c.wire_bytes += len(data)
            self.c.wire_urls += len(urls)
            self.c.messages_mpi += 1
        self.outbox = [[] for _ in range(self.size)]
        return payloads

    def _take_report(self) -> bytes:
        rep = self.report
        rep.superstep = self.superstep
        data = encode_report(rep)
        self.report = Report(rank=self.rank)
        return data

    def _set_budget(self, status: np.ndarray, my_requests_at_capture: int) -> None:
        if self.cfg.max_pages is None:
            return
        remaining = max(0, self.cfg.max_pages - int(status[_S["requests"]]))
        k = self.size
        share = remaining // k + (1 if self.rank < remaining % k else 0)
        self.budget = my_requests_at_capture + share

    def run(self) -> str:
        """Crawl until the global stop; returns why it stopped."""
        cfg = self.cfg
        if self.resumed_from is None:
            self.add_seeds()
        steps_run = 0
        while True:
            t_step = time.monotonic()
            self.step_responses = 0
            # work phase: up to R responses or the superstep's time, or until nothing can progress.
            # The first supersteps are short (50 ms, doubling): while the frontiers fill, every
            # link depth waits for an exchange, so the exchange comes often at first.
            step_end = t_step + step_seconds(steps_run, cfg.superstep_seconds)
            steps_run += 1
            self._check_failures()
            while (self.step_responses < cfg.superstep_pages and time.monotonic() < step_end
                   and self.can_progress() and not self.stop.set):
                self.drive(min(0.1, max(0.0, step_end - time.monotonic())))
            status = self._status()
            my_requests = self.c.requests
            if cfg.max_pages is not None:
                # Under a page limit no new request starts while the exchange is in flight: the
                # unused budget is given back and shared out again from the exact global count,
                # so the ranks together never exceed the limit.
                self.budget = my_requests
            payloads = self._payloads()
            shared = _frames(encode_shared(self.robots_out) if self.robots_out else b"", self._announce_work())
            self.robots_out = []
            ex = self.comm.start_superstep(payloads, status, self._take_report(), shared)
            # keep fetching while slower ranks finish their superstep
            t_ex = time.monotonic()
            self.comm.wait(ex, idle=lambda: self.drive(0.005) if self.can_progress() else self._slot_tick())
            self.exchange_s += time.monotonic() - t_ex
            g = ex.status
            for src, data in enumerate(ex.received):
                if src != self.rank:
                    self.receive(data)
            for src, data in enumerate(ex.shared_in):
                if src != self.rank and data:
                    robots, work = _unframe(data)
                    if robots:
                        self.receive_robots(robots)
                    if work:
                        self.receive_work(src, work)
            if self.coordinator is not None:
                t = time.monotonic() - self.t0
                if self.journal is not None:
                    self.journal.append(self.superstep, t, ex.reports)
                for data in ex.reports:
                    self.coordinator.consume(data)
                self.coordinator.end_superstep(self.superstep, t)
            if self.progress is not None:
                self.progress.update(self.superstep, g, self.coordinator)
            stopping = g[_S["signal"]] > 0 or g[_S["time_up"]] > 0 or g[_S["work"]] == 0 or (
                cfg.max_pages is not None and g[_S["requests"]] >= cfg.max_pages)
            if cfg.checkpoint_seconds > 0 and (g[_S["checkpoint_due"]] > 0 or stopping):
                self.write_checkpoint()
            self.superstep += 1
            self._set_budget(g, my_requests)
            if g[_S["clock_due"]] > 0 and not g[_S["signal"]]:
                self.sync_clock()
            if g[_S["signal"]] > 0:
                self.stopped = "signal"
                break
            if g[_S["time_up"]] > 0:
                self.stopped = "time-limit"
                break
            if g[_S["work"]] == 0:
                self.stopped = "done"
                break
            if cfg.max_pages is not None and g[_S["requests"]] >= cfg.max_pages:
                self.stopped = "max-pages"
                break
        self._finish()
        return self.stopped

    def _check_failures(self) -> None:
        """Raise here, in the main thread, what failed in a thread; and the ``--test-crash`` hook."""
        raise_thread_failures()
        if self._test_crash is not None:
            who, step = self._test_crash
            if step == self.superstep:
                if who == self.rank:
                    self._test_crash = None
                    raise InjectedCrash(f"--test-crash {who}:{step}: injected failure on rank {who}")
                if who == "kernels" and self.coordinator is not None and self.coordinator.kernels is not None:
                    self._test_crash = None
                    self.coordinator.kernels.inject_failure(f"--test-crash kernels:{step}: injected failure")

    def _finish(self) -> None:
        """Complete or abandon what is in flight, then a last report to rank 0."""
        deadline = time.monotonic() + (0.0 if self.stopped == "signal" else self.cfg.timeout + 1)
        self.budget = self.c.requests        # no new requests
        while self.fetcher.in_flight and time.monotonic() < deadline:
            done = self.fetcher.poll(0.01)
            now = time.monotonic()
            for r in done:
                kind, host = r.key
                if kind == "page":
                    b = self.batches.get(host)
                    if b is not None and b.current is not None:
                        self.frontier.complete(b.current)
                        b.current = None
                    self._process_page(r)
        abandoned = self.fetcher.in_flight
        if abandoned:
            self.c.requests -= sum(1 for b in self.batches.values() if b.current is not None)
        self.fetcher.close()
        self.outbox = [[] for _ in range(self.size)]   # nobody will crawl these now
        ex = self.comm.start_superstep([b""] * self.size, self._status(), self._take_report())
        self.comm.wait(ex)
        if self.holders is not None:
            self.c.leases_late = self.comm.close_leases()
        if self.coordinator is not None:
            t = time.monotonic() - self.t0
            if self.journal is not None:
                self.journal.append(self.superstep, t, ex.reports)
                self.journal.close()
            for data in ex.reports:
                self.coordinator.consume(data)
            self.coordinator.end_superstep(self.superstep, t)
        self.warc.close()

    # -- checkpoints (see abc_crawler.checkpoint) -------------------------------
    def write_checkpoint(self) -> None:
        """Save this rank's state after the current superstep's exchange."""
        inflight = sum(1 for b in self.batches.values() if b.current is not None)
        self.warc.flush()
        ru = resource.getrusage(resource.RUSAGE_SELF)
        c = self.c
        c.requests -= inflight             # in-flight requests are asked again after a resume
        try:
            # new URLs and changed fingerprints since the last checkpoint: appended to the log
            if self._ckpt_log is None:
                self._ckpt_log = CheckpointLog(self.session_dir, self.rank)
            log_len = self._ckpt_log.append({"frontier": self.frontier.take_increment(),
                                             "seen": self.seen.take_changes()})
            state = {
                "superstep": self.superstep, "log": log_len, "frontier": self.frontier.state_for_checkpoint(),
                "counters": c, "report": self.report, "outbox": self.outbox,
                "hops": self.hops, "attempts": self.attempts, "cuts": self.cuts, "host_fail": self.host_fail,
                "depth": self.depth, "sitemaps": self.sitemap_fps,      # [h20]
                "dead_hosts": self.dead_hosts, "host_admitted": self.host_admitted, "budget": self.budget,
                "elapsed": time.monotonic() - self.t0, "cpu_s": self.cpu_before + ru.ru_utime + ru.ru_stime,
                "warc": self.warc.checkpoint(), "connections": self.fetcher.connections,
                "journal": self.journal.flush() if self.journal is not None else 0,
            }
            save_checkpoint(self.session_dir, self.rank, self.superstep, state)
        finally:
            c.requests += inflight
        self._last_ckpt = time.monotonic()

    def restore(self, superstep: int) -> None:
        """Continue from this rank's checkpoint of ``superstep`` (all ranks call it with the same one)."""
        st = load_checkpoint(self.session_dir, self.rank, superstep)
        f, seen = self._empty_state()
        for inc in CheckpointLog.truncate_and_read(self.session_dir, self.rank, st["log"]):
            f.apply_increment(inc["frontier"])
            seen.merge(*inc["seen"])
        # URLs that were being fetched are fetched again; the Bucket starts empty
        f.restore_state(st["frontier"])
        self.frontier = f
        self.seen = seen
        self.c = st["counters"]
        self.report = st["report"]
        self.outbox = st["outbox"]
        self.hops, self.attempts, self.cuts = st["hops"], st["attempts"], st.get("cuts", {})
        self.depth, self.sitemap_fps = st.get("depth", {}), st.get("sitemaps", {})   # [h20]
        self.host_fail, self.dead_hosts, self.host_admitted = st["host_fail"], st["dead_hosts"], st["host_admitted"]
        self.budget = st["budget"]
        self.t0 = time.monotonic() - st["elapsed"]
        self.cpu_before = st["cpu_s"]
        self.fetcher.connections = st["connections"]
        self.warc.restore(st["warc"])
        self.superstep = superstep + 1
        self.resumed_from = superstep
        if self.coordinator is not None:
            for step, t, reports in Journal.truncate_and_read(self.session_dir, st["journal"]):
                for data in reports:
                    self.coordinator.consume(data)
                self.coordinator.end_superstep(step, t)

    def summary(self) -> dict:
        c = self.c
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "rank": self.rank, "pages": c.pages_ok, "bytes": c.bytes, "requests": c.requests,
            "cpu_s": round(self.cpu_before + ru.ru_utime + ru.ru_stime, 3), "responses": c.responses,
            "pages_failed": c.pages_failed, "pages_redirected": c.pages_redirected, "nodes": c.nodes,
            "duplicates": c.duplicates, "volume_bytes": c.volume, "messages_thesis": c.messages_thesis,
            "wire_bytes": c.wire_bytes, "wire_urls": c.wire_urls, "messages_mpi": c.messages_mpi,
            "robots_fetches": self.robots.fetches, "robots_adopted": self.robots.adopted, "batches": c.batches,
            "urls_per_connection": round(c.requests / self.fetcher.connections, 2) if self.fetcher.connections else 0.0,
            "idle_phase_s": round(self.idle_slot_s, 3), "idle_slot_s": round(self.idle_slot_s, 3),
            "idle_rest_s": round(self.idle_rest_s, 3), "idle_empty_s": round(self.idle_empty_s, 3),
            "exchange_s": round(self.exchange_s, 3), "handovers": c.handovers, "leases": c.leases,
            "leases_late": c.leases_late,
            "phase_origin": self.phase_clock.origin if self.phase_clock is not None else None,
            "crawl_delays": {h: r.crawl_delay for h, r in self.robots.hosts.items() if r.crawl_delay > 0},
            "slot_cuts": c.slot_cuts, "cuts_late": c.cuts_late, "cuts_starved": c.cuts_starved,
            "cuts_slow": c.cuts_slow, "warm_cuts": c.warm_cuts, "retries": c.retries,
            "dead_hosts": sorted(self.dead_hosts),
            "clock_offset_s": self.clock.offset, "clock_rtt_s": self.clock.rtt, "clock_syncs": self.clock.syncs,
            "phases": self.phase_clock.n_phases if self.phase_clock is not None else 0,
            "phase_warmup": self.phase_clock.warmup if self.phase_clock is not None else 0,
            "connections": self.fetcher.connections, "idle_s": round(self.idle_s, 3),
            "max_rss_kb": ru.ru_maxrss, "errors": dict(c.errors), "links": dict(c.links),
            "out_of_scope_hosts": dict(c.out_of_scope_hosts.most_common(50)),
            "frontier": self.frontier.counts(), "warc_records": self.warc.records,
            "bytes_decoded": c.bytes_decoded, "sitemaps": dict(c.sitemaps),      # [h20]
            "robots_redirects": self.robots.redirects, "refused_connections": self.fetcher.refused,
            "warc_revisits": self.warc.revisits,
        }
