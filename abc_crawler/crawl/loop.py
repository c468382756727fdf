"""One rank's superstep loop: fetch, then exchange, until the global stop.

Each superstep a rank fetches for up to ``--superstep-pages`` answers or ``--superstep-seconds``
(the first supersteps of a run are shorter: 50 ms, doubling), then starts the superstep's
exchange — the outboxes' URLs to their owners, the status vector summed over all ranks, the
:class:`~abc_crawler.graph.coordinator.SuperstepReport` to rank 0, robots.txt answers and work
announcements to all — and keeps fetching while slower ranks finish theirs. The summed status
decides when to stop (no work anywhere, the page or time limit, a signal on any rank) and when
to checkpoint or re-synchronize clocks. Rank 0's role (the crawled graph, the journal, the progress
line) is passed in as a :class:`Rank0Role`.
"""
from __future__ import annotations

import resource
import signal
import time
from pathlib import Path
from dataclasses import dataclass

import numpy as np

from ..store.checkpoint import CheckpointLog, Journal
from ..store.crawllog import CrawlLog
from ..mpi.clock import SharedClock, estimate_offset
from ..net.addresses import AddressPolicy
from ..config import CrawlConfig, accept_types_of, body_caps_of, clock_skew, from_header, phase_seconds_of, robots_token_of
from ..graph.coordinator import Coordinator
from ..store.crash import InjectedCrash, parse_test_crash, raise_thread_failures
from ..dashboard.vitals import VitalsSender, top_hosts
from ..mpi.exchange import Communicator
from ..net.fetcher import Fetcher
from ..sched.frontier import Frontier
from ..sched.ipgroups import Groups
from ..store import logs
from ..web.ownership import Assignment
from ..sched.phases import HolderTable, PhaseClock, uses_phases
from ..sched.politeness import warm_slot_needed
from ..net.robots import RobotsCache, decode_shared, encode_shared
from ..web.scope import Scope, ScopeRules
from ..sched.budget import default_budget, mem_total, within_budget
from ..net.sitemaps import seed_sitemap_urls
from ..sched.stopping import dropped_by_limits
from ..sched.watchdog import STALL_FATAL, StallWatch
from ..store.validators import PreviousShare, ValidatorLog
from ..store.warc import RankWarc, warcinfo_fields
from . import state
from .counters import RankCounters, summary_of

_log = logs.get("crawl")
from .decisions import budget_by_work, budget_share
from .discovery import INFERRED, SEED
from .fetching import BatchRunner
from .links import LinkClassifier
from .pages import PageProcessor
from .quotas import HostQuotas
from .routing import Router
from .slots import SlotGate
from .stall import StallDuty

__all__ = ["RankCrawler", "Rank0Role", "StopFlag", "STATUS_FIELDS", "step_seconds", "RAMP_FIRST_STEP"]

# The status vector summed over ranks at every exchange.
STATUS_FIELDS = ("work", "requests", "pages_ok", "bytes", "failed", "frontier", "signal", "time_up",
                 "volume", "outbox", "errors", "clock_due", "checkpoint_due", "asked", "stall")
_S = {name: i for i, name in enumerate(STATUS_FIELDS)}
#: seconds of the first superstep of a run; each next one twice as long, up to superstep-seconds
RAMP_FIRST_STEP = 0.05


def step_seconds(steps_run: int, superstep_seconds: float) -> float:
    """Length of the work phase of a run's superstep number ``steps_run`` (0, 1, ...): 50 ms,
    doubling, up to ``superstep_seconds``. The exponent is capped, so the result stays a finite
    float however long the run (``2 ** 1024`` does not fit a float)."""
    return min(superstep_seconds, RAMP_FIRST_STEP * 2.0 ** min(steps_run, 60))


def frames(*parts: bytes) -> bytes:
    """Several byte strings as one buffer (8-byte little-endian length before each); b"" if all empty."""
    if not any(parts):
        return b""
    return b"".join(len(p).to_bytes(8, "little") + p for p in parts)


def unframe(data: bytes, n: int) -> list[bytes]:
    """The inverse of :func:`frames` for ``n`` parts."""
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
class Rank0Role:
    """What rank 0 does beside crawling: the crawled graph and its statistics, the journal of
    every superstep's reports (for ``--resume``), the progress line."""

    coordinator: Coordinator
    progress: object | None = None
    journal: Journal | None = None
    dashboard: object | None = None          # --dashboard: an abc_crawler.dashboard.Dashboard


class RankCrawler:
    """The crawl state and loop of one rank: its parts are built here and meet in :meth:`run`."""

    def __init__(self, cfg: CrawlConfig, comm: Communicator, scope: Scope, assignment: Assignment,
                 seeds: list[str], session_dir: str, stop: StopFlag, rank0: Rank0Role | None = None,
                 holders: HolderTable | None = None, rules: ScopeRules | None = None, proxies=None, ca=None,
                 previous: PreviousShare | None = None):
        self.cfg = cfg
        self.comm = comm
        self.rank = rank = comm.rank
        self.size = size = comm.size
        self.seeds = seeds
        self.stop = stop
        self.rank0 = rank0
        self.session_dir = session_dir
        self.counters = counters = RankCounters()
        # the frontier (with its per-host records) and the URL-seen set: built once, filled by the
        # seeds or by a resume (crawl/state.py restores into them)
        self.frontier = Frontier(n_columns=cfg.bucket_columns, n_rows=cfg.bucket_rows, batch_urls=cfg.batch_urls,
                                 window=cfg.window, flush_seconds=cfg.bucket_flush_seconds)
        self.hosts = self.frontier.hosts
        # URLs admitted here or sent to their owner, with a REPORTED flag per fingerprint (URLs whose
        # text rank 0 already has from this rank): one exact uint64 table
        # Both within their shares of --memory-budget, past which they spill to SESSION/spill
        # (sched/seenruns, sched/overflow; the default budget: sched/budget)
        self.memory_budget = cfg.memory_budget or default_budget(mem_total(), comm.ranks_on_node())
        self.seen = within_budget(self.frontier, self.memory_budget, Path(session_dir) / "spill", rank,
                                  checkpoints=cfg.checkpoint_seconds > 0)
        # where the fetcher may connect (the resolve list's addresses are the user's choice); the
        # user's scope rules, proxies and CAs come from rank 0
        body_cap, typed_caps = body_caps_of(cfg.max_body_bytes)
        self.fetcher = Fetcher(scope=scope, user_agent=cfg.user_agent, timeout=cfg.timeout,
                               connect_timeout=cfg.connect_timeout, max_body_bytes=body_cap,
                               body_caps=typed_caps,
                               rank=rank, max_connections=max(cfg.concurrency, cfg.active_hosts),
                               addresses=AddressPolicy(cfg.allow_private_addresses, scope.addresses),
                               proxies=proxies, ca=ca, contact=from_header(cfg), rank_header=cfg.test_rank_header,
                               accept_types=accept_types_of(cfg.accept_types))
        self.robots = RobotsCache(robots_token_of(cfg), cfg.robots_retry_seconds, enabled=cfg.robots,
                                  max_crawl_delay=cfg.max_crawl_delay, visits=self.hosts)
        # the validators of every page stored (validators.npz at the end; the next session's --previous)
        self.validators = ValidatorLog(spill=Path(session_dir) / "spill" / f"validators-rank-{rank:05d}.bin")
        self.previous = previous
        self.warc = RankWarc(session_dir, rank, enabled=cfg.warc, batch=cfg.warc_batch, max_bytes=cfg.warc_max_bytes,
                             info=self.warcinfo(), on_page=self.validators.on_page)
        # a line per fetch attempt, Heritrix's crawl.log (SESSION/logs/crawl/rank-NNNNN.log); a resume appends
        self.crawl_log = CrawlLog(session_dir, rank)
        self.clock = SharedClock(clock_skew(cfg.test_clock_skew, rank), reference=rank == 0)
        self.links = LinkClassifier.from_config(cfg, scope, assignment, rank, counters, rules)
        self.quotas = HostQuotas(cfg.max_pages_per_host, rank, size, assignment.site_level)
        self.router = Router(rank, size, self.frontier, self.seen, counters, self.quotas,
                             track_depth=cfg.max_depth is not None)
        # hosts sharing an address are one politeness group, agreed by every rank (abc_crawler/sched/ipgroups.py)
        self.groups = Groups(cfg.ip_politeness_delay, resolved=scope.resolved_ips())
        self.phase_clock: PhaseClock | None = None
        self.gate: SlotGate | None = None
        if uses_phases(cfg.phases, assignment.site_level, size):
            n = cfg.n_phases or size
            self.phase_clock = PhaseClock(rank, size, n, phase_seconds_of(cfg), cfg.phase_guard,
                                          error=self.clock.error_bound, warmup=cfg.phase_warmup,
                                          min_slot=warm_slot_needed(max(cfg.politeness_delay, cfg.ip_politeness_delay),
                                                                    cfg.phase_guard))
            # who holds which host in which slot: built by rank 0 from the assignment and sent
            holders = holders if holders is not None else HolderTable(size, n, assignment.host_pages())
            self.gate = SlotGate(rank, self.phase_clock, holders, self.clock, comm, self.frontier,
                                 counters, handover=cfg.slot_handover, delay_factor=cfg.delay_factor,
                                 max_delay=cfg.max_delay, groups=self.groups)
        pages = PageProcessor(self.warc, self.links, counters, max_redirects=cfg.max_redirects,
                              max_inflated_bytes=cfg.max_inflated_bytes, previous=previous,
                              validators=self.validators, requisites=cfg.page_requisites,
                              outlinks=cfg.warc_outlinks)
        # robots.txt answers are sent to every rank under page-level assignment (they crawl the host
        # too); not for hosts only this rank ever fetches
        share = size > 1 and not assignment.site_level and cfg.robots
        self.runner = BatchRunner(cfg, self.frontier, self.fetcher, self.robots, self.gate, counters,
                                  pages, self.router, self.clock, self.may_request, share,
                                  assignment.exclusive_hosts(rank), self.links, groups=self.groups,
                                  crawl_log=self.crawl_log)
        self.budget: int | None = None if cfg.max_pages is None else budget_share(cfg.max_pages, size, rank)
        self._work_of = [0] * size                   # the URLs each rank had queued at the last exchange
        self.superstep = 0
        self.t0 = time.monotonic()
        self.stopped = "done"
        self.queued = 0                              # URLs left queued in all when the crawl stopped
        self._test_crash = parse_test_crash(cfg.test_crash, size)
        # the stall watchdog (abc_crawler/sched/watchdog.py): rank 0 judges, every rank reports
        self.stall = StallDuty(self, StallWatch(cfg.stall_seconds) if rank0 is not None else None)
        # --dashboard: every rank sends its vitals with the exchange; rank 0 publishes snapshots
        self.vitals = VitalsSender(STATUS_FIELDS) if cfg.dashboard else None
        self.last_vitals = None                      # rank 0: the ranks' vitals of the last exchange
        self._last_sync = 0.0
        self._last_ckpt = time.monotonic()
        self.ckpt_log: CheckpointLog | None = None   # append-only part of the checkpoints
        self.cpu_before = 0.0                        # CPU seconds of earlier runs (after --resume)
        self.resumed_from: int | None = None

    def warcinfo(self) -> list[tuple[str, str]]:
        """The warcinfo fields of this rank's WARC files (no operator: abc-crawl has no contact
        setting to take it from)."""
        import platform

        from .. import __version__
        from ..store.warcnames import session_prefix

        cfg = self.cfg
        return warcinfo_fields(version=__version__, session=session_prefix(self.session_dir), rank=self.rank,
                               host=platform.node(), user_agent=cfg.user_agent, robots=cfg.robots,
                               settings=cfg.as_dict())

    # -- the budget ----------------------------------------------------------------------------
    def may_request(self) -> bool:
        if self.cfg.test_stall is not None and time.monotonic() - self.t0 >= self.cfg.test_stall:
            return False                             # the test hook: no request any more
        return self.budget is None or self.counters.requests < self.budget

    def _set_budget(self, status: np.ndarray, my_requests_at_capture: int) -> None:
        if self.cfg.max_pages is None:
            return
        remaining = max(0, self.cfg.max_pages - int(status[_S["requests"]]))
        # shared by the work each rank has queued (a part vector may leave it all on one rank)
        self.budget = my_requests_at_capture + budget_by_work(remaining, self._work_of, self.rank)

    # -- the loop --------------------------------------------------------------------------------
    def add_seeds(self) -> None:
        """The seeds this rank owns, and the URLs the previous session knew but did not fetch (each
        rank got its own from rank 0)."""
        mine = [t for t in map(self.links.target, self.seeds) if t[2] == self.rank]
        if self.previous is not None:
            mine += [t for t in map(self.links.target, self.previous.seeds) if t[2] == self.rank]
        self.router.route(None, mine, hop=SEED)
        if self.cfg.sitemaps:                    # /sitemap.xml of every seed host, by its owner
            files = self.links.sitemap_targets(None, seed_sitemap_urls(self.seeds), mine_only=True)
            self.router.route_sitemaps(files, 0, hop=INFERRED)

    def sync_clock(self) -> None:
        """Collective: every rank re-estimates its offset to rank 0's clock."""
        samples = self.comm.clock_samples(self.clock.local)
        if self.rank != 0:
            self.clock.update(*estimate_offset(samples))
        else:
            self.clock.update(0.0, 0.0)
        self._last_sync = time.monotonic()

    def _status(self) -> np.ndarray:
        c = self.counters
        st = np.zeros(len(STATUS_FIELDS), dtype=np.int64)
        outbox = self.router.queued
        # URLs waiting for their host's share of --max-pages-per-host are work too
        st[_S["work"]] = self.frontier.pending + self.fetcher.in_flight + outbox + self.quotas.waiting
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
        st[_S["asked"]] = self.fetcher.requests        # every request sent: pages, robots.txt, sitemaps
        st[_S["stall"]] = self.stall.verdict if self.rank == 0 else 0
        return st

    def _idle_while_exchanging(self, pause: float):
        """Fetch while slower ranks finish their superstep, sleeping at most ``pause`` (the
        exchange is tested again after it); otherwise follow the slots (None: no fetch work was
        done, the exchange may sleep)."""
        if self.runner.can_progress():
            return self.runner.drive(pause)
        if self.gate is not None:
            self.gate.tick()
        return None

    def _rank0(self, superstep: int, reports: list[bytes]) -> None:
        """Rank 0: the superstep's reports into the journal and the graph."""
        r0 = self.rank0
        if r0 is None:
            return
        t = time.monotonic() - self.t0
        if r0.journal is not None:
            r0.journal.append(superstep, t, reports)
        for data in reports:
            r0.coordinator.consume(data)
        r0.coordinator.end_superstep(superstep, t)

    def _exchange(self, status: np.ndarray, shared: bytes = b"", fetch: bool = True) -> np.ndarray:
        """One superstep exchange (fetching meanwhile unless ``fetch`` is False); returns the summed
        status."""
        vitals = None
        if self.vitals is not None:                 # this rank's figures for rank 0's dashboard
            idle = self.runner.idle
            vitals = self.vitals.encode(
                status, rank=self.rank, superstep=self.superstep, elapsed_s=time.monotonic() - self.t0,
                errors=self.counters.errors, idle_s=idle.total, idle_slot_s=idle.slot, exchange_s=idle.exchange,
                idle_rest_s=idle.rest, idle_empty_s=idle.empty, dropped=dropped_by_limits(self.counters.links, self.counters.errors),
                hosts=lambda: top_hosts(((h, st.admitted) for h, st in self.hosts.items()), self.frontier.host_pending))
        ex = self.comm.start_superstep(self.router.payloads(), status, self.router.take_report(self.superstep),
                                       shared, vitals)
        t_ex = time.monotonic()
        self.comm.wait(ex, idle=self._idle_while_exchanging if fetch else None)
        self.runner.idle.exchange += time.monotonic() - t_ex
        for src, data in enumerate(ex.received):
            if src != self.rank:
                self.router.receive(data)
        now = time.monotonic()
        admitted = lambda host: self.hosts[host].admitted  # noqa: E731
        stall_parts, addresses = [], []
        self._work_of = [0] * self.size
        for src, data in enumerate(ex.shared_in):
            if not data:
                continue
            robots, work, quota, stall, addr, queued, holds = unframe(data, 7)
            self._work_of[src] = int(queued or 0)
            self.quotas.receive(src, quota, admitted)     # this rank's own report too
            stall_parts.append(stall)
            addresses.append(addr)
            if src != self.rank:
                for host, st, body in decode_shared(robots):
                    self.robots.adopt(host, st, body, now)
                if work and self.gate is not None:
                    self.gate.receive_work(src, work)
                if holds and self.gate is not None:
                    self.gate.receive_holds(holds, now)
        self.router.settle_quotas()
        self.groups.agree(addresses)                      # the same groups on every rank, from now on
        self.stall.judge(int(ex.status[_S["asked"]]), int(ex.status[_S["work"]]), int(ex.status[_S["stall"]]),
                         stall_parts)
        self._rank0(self.superstep, ex.reports)
        self.last_vitals = ex.vitals
        return ex.status

    def run(self) -> str:
        """Crawl until the global stop; returns why it stopped."""
        cfg = self.cfg
        if self.rank0 is not None and self.rank0.journal is None:
            self.rank0.journal = Journal(self.session_dir)
        if self.resumed_from is None:
            self.add_seeds()
        runner = self.runner
        steps_run = 0
        while True:
            # work phase: up to R answers or the superstep's time, or until nothing can progress.
            # The first supersteps are short (50 ms, doubling): while the frontiers fill, every
            # link depth waits for an exchange, so the exchange comes often at first.
            step_end = time.monotonic() + step_seconds(steps_run, cfg.superstep_seconds)
            steps_run += 1
            self._check_failures()
            runner.responses = 0
            while (runner.responses < cfg.superstep_pages and time.monotonic() < step_end
                   and runner.can_progress() and not self.stop.set):
                runner.drive(min(0.1, max(0.0, step_end - time.monotonic())))
            status = self._status()
            my_requests = self.counters.requests
            if cfg.max_pages is not None:
                # Under a page limit no new request starts while the exchange is in flight: the
                # unused budget is given back and shared out again from the exact global count,
                # so the ranks together never exceed the limit.
                self.budget = my_requests
            shared = frames(encode_shared(runner.robots_out) if runner.robots_out else b"",
                            self.gate.announce() if self.gate is not None else b"",
                            self.quotas.report(lambda host: self.hosts[host].admitted),
                            self.stall.part(), self.groups.announce(),
                            str(self.frontier.pending).encode() if cfg.max_pages is not None else b"",
                            "\n".join(self.gate.holds_out).encode() if self.gate is not None else b"")
            runner.robots_out = []
            if self.gate is not None:
                self.gate.holds_out = []
            g = self._exchange(status, shared)
            self.crawl_log.tick()
            r0 = self.rank0
            if r0 is not None and r0.progress is not None:
                r0.progress.update(self.superstep, g, r0.coordinator, stall=self.stall.report,
                                   force=self.stall.print_now())
            if r0 is not None and r0.dashboard is not None:     # a snapshot for rank 0's status page
                r0.dashboard.publish(self.superstep, g, self.last_vitals, r0.coordinator, self.t0,
                                     stall=self.stall.report)
            why = self._why_stop(g)
            if cfg.checkpoint_seconds > 0 and (g[_S["checkpoint_due"]] > 0 or why is not None):
                self.write_checkpoint()
            self.superstep += 1
            self._set_budget(g, my_requests)
            if g[_S["clock_due"]] > 0 and not g[_S["signal"]]:
                self.sync_clock()
            if why is not None:
                self.stopped = why
                self.queued = int(g[_S["work"]])     # work left in all (0 when done)
                break
        self._finish()
        return self.stopped

    def _why_stop(self, g: np.ndarray) -> str | None:
        cfg = self.cfg
        if g[_S["signal"]] > 0:
            return "signal"
        if g[_S["stall"]] >= STALL_FATAL:
            return "stalled"
        if g[_S["time_up"]] > 0:
            return "time-limit"
        if g[_S["work"]] == 0:
            return "done"
        if cfg.max_pages is not None and g[_S["requests"]] >= cfg.max_pages:
            return "max-pages"
        return None

    def _check_failures(self) -> None:
        """Raise here, in the main thread, what failed in a thread; and the ``--test-crash`` hook."""
        raise_thread_failures()
        if self._test_crash is not None:
            who, step = self._test_crash
            if step == self.superstep:
                if who == self.rank:
                    self._test_crash = None
                    raise InjectedCrash(f"--test-crash {who}:{step}: injected failure on rank {who}")
                kernels = self.rank0.coordinator.kernels if self.rank0 is not None else None
                if who == "kernels" and kernels is not None:
                    self._test_crash = None
                    kernels.inject_failure(f"--test-crash kernels:{step}: injected failure")

    def _finish(self) -> None:
        """Complete or abandon what is in flight, then a last report to rank 0."""
        deadline = time.monotonic() + (0.0 if self.stopped == "signal" else self.cfg.timeout + 1)
        self.budget = self.counters.requests        # no new requests
        self.counters.requests -= self.runner.drain(deadline)
        self.counters.cuts_left = self.frontier.cut_and_left()
        self.fetcher.close()
        self.router.drop_outbox()                   # nobody will crawl these now
        self._exchange(self._status(), fetch=False)
        if self.gate is not None:
            self.counters.leases_late = self.gate.close()
        if self.rank0 is not None and self.rank0.journal is not None:
            self.rank0.journal.close()
        self.warc.close()
        self.crawl_log.close()
        self.frontier.close_overflow()               # what spilled is not needed any more
        self.seen.close()

    # -- checkpoints and the summary ---------------------------------------------------------------
    def write_checkpoint(self) -> None:
        """Save this rank's state after the current superstep's exchange."""
        t = time.monotonic()
        state.save(self)
        self._last_ckpt = time.monotonic()
        _log.debug("checkpoint of superstep %d written in %.3f s", self.superstep, self._last_ckpt - t)

    def restore(self, superstep: int) -> None:
        """Continue from this rank's checkpoint of ``superstep`` (all ranks call it with the same one)."""
        state.restore(self, superstep)

    def cpu_seconds(self) -> float:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return self.cpu_before + ru.ru_utime + ru.ru_stime

    def memory_held(self) -> dict:
        """Where this rank's memory goes, by structure (bytes, or entries where noted): what
        ``bench/memory.py --process`` sets beside the RSS (issue 35). Rank 0 adds its graph."""
        out = {
            "seen_bytes": self.seen.nbytes,
            "frontier_bytes": self.frontier.nbytes(),
            "discovery_bytes": self.router.discovery.nbytes(),
            "content_seen_bytes": self.warc.content_seen_bytes(),
            "link_cache_entries": self.links.cached_decisions,
            "validator_rows_in_memory": self.validators.rows_in_memory,
            "cdxj_lines_in_memory": self.warc.index_lines_in_memory,
            "outbox_urls": self.router.queued,
            "memory_budget": self.memory_budget,
            "seen_spills": self.seen.spills,
            "seen_disk_bytes": self.seen.runs.bytes_written,
            "frontier_urls_on_disk": self.frontier.n_spilled,
            "frontier_disk_bytes": self.frontier.overflow_bytes_written,
            "frontier_trimmed_urls": self.frontier.base,
        }
        if self.rank0 is not None:
            out["graph_bytes"] = sum(self.rank0.coordinator.nbytes_held().values())
            k = self.rank0.coordinator.kernels
            if k is not None:                         # the statistics kernels' own structures
                out["stats_bytes"] = k.stats.nbytes_held()
        return out

    def summary(self) -> dict:
        c = self.counters
        idle = self.runner.idle
        gaps = self.runner.gaps
        pc = self.phase_clock
        conns = self.fetcher.connections
        # the counters under their registered keys (crawl/counters.STATS), then what other parts know
        return {
            "rank": self.rank, **summary_of(c), "cpu_s": round(self.cpu_seconds(), 3),
            "robots_fetches": self.robots.fetches, "robots_adopted": self.robots.adopted,
            "urls_per_connection": round(c.requests / conns, 2) if conns else 0.0,
            "idle_phase_s": round(idle.slot, 3), "idle_slot_s": round(idle.slot, 3),
            "idle_rest_s": round(idle.rest, 3), "idle_empty_s": round(idle.empty, 3),
            "exchange_s": round(idle.exchange, 3), "loop_gap_s": round(gaps.seconds, 3),
            "loop_gap_count": gaps.count, "loop_gaps": gaps.longest(),
            "phase_origin": pc.origin if pc is not None else None,
            "crawl_delays": self.robots.crawl_delays(),
            "dead_hosts": self.hosts.dead(),
            "clock_offset_s": self.clock.offset, "clock_rtt_s": self.clock.rtt, "clock_syncs": self.clock.syncs,
            "phases": pc.n_phases if pc is not None else 0, "phase_warmup": pc.warmup if pc is not None else 0,
            "connections": conns, "idle_s": round(idle.total, 3),
            "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            "urls_owned": len(self.frontier), "urls_known": len(self.seen), "memory": self.memory_held(),
            "frontier": self.frontier.counts(), "warc_records": self.warc.records,
            "warc_revisits": self.warc.revisits,
            "robots_redirects": self.robots.redirects, "refused_connections": self.fetcher.refused,
            "warc_files": self.warc.files,
            "addresses": len(self.groups.ip_of),
            "ip_groups": sum(1 for hosts in self.groups.hosts_of.values() if len(hosts) > 1 and self.groups.active),
        }
