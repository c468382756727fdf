"""Run one crawl session on all ranks and write the session directory.

Rank 0 reads the inputs (settings and the ``--config`` file, seeds, resolve
list, part vector; on ``--resume`` the session's manifest) and broadcasts them:
the ranks may run on hosts that share no file system, and no other rank opens
a path given on the command line. A bad input ends every rank with status 2
and one message from rank 0. Every rank then checks that it can write its
session directory on its own host, writes its own WARC file and checkpoints
there; rank 0 writes the graph, the exchange counters, ``stats.json`` and
``manifest.json`` (each atomically). At the end every rank lists the files it
wrote with their sizes and SHA-256, and the manifest says which host holds
which (``--gather-warc`` also copies the WARC files to rank 0).
"""
from __future__ import annotations

import numpy as np

import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from . import __version__
from .store import crash
from .config import CrawlConfig
from .graph.coordinator import Coordinator
from .graph.kernelworker import KernelWorker
from .crawl import STATUS_FIELDS, Rank0Role, RankCrawler, StopFlag
from .crawl.counters import per_rank_of, totals
from .graph.hostranks import LiveHostRanks
from .exceptions import AbcError, ConfigError
from .mpi.exchange import Communicator
from .graph.metrics import imbalance_pct
from .web.assignments import make_assignment
from .sched.phases import HolderTable, PhaseClock, uses_phases
from .progress import Progress, format_bytes, graph_rows
from .net.proxies import ProxySettings
from .web.scope import Scope, ScopeRules, read_seeds
from .store.checkpoint import agree_resume, placement_hostfile, placement_problems, resume_inventory
from .config import config_paths, phase_seconds_of, read_config_file
from .sched.stopping import describe_dropped, dropped_by_limits, stop_line
from .store import logs
from .web.parser import KIND_NAMES
from .sched.watchdog import STALL_EXIT
from .mpi.gather import gather_warc
from .net.tls import load_ca_bundle
from .store.validators import PreviousShare, previous_shares, write_table
from .store.session import (atomic_write_bytes, atomic_write_json, npz_bytes, prepare_rank_dir, rank_files, read_json,
                      save_graph)

__all__ = ["run_crawl"]

_log = logs.get("run")


def _utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _resume_config(resume: str, overrides: dict, ranks: int, config_file: str | list[str] | None = None) -> tuple[CrawlConfig, dict]:
    """Rank 0: the settings of the session to resume (a ``--config`` file and flags given now win) and its manifest."""
    sd = Path(resume)
    if sd.exists() and not sd.is_dir():
        raise AbcError(f"{sd}: not a directory (--resume takes a session directory)")
    try:
        manifest = read_json(sd / "manifest.json")
    except FileNotFoundError:
        raise AbcError(f"{sd}: no manifest.json on {platform.node()} (rank 0's host): not a session directory, "
                       "or rank 0 of the session ran on another host") from None
    except (OSError, ValueError) as exc:        # cut short (a full disk), not JSON, unreadable
        raise AbcError(f"{sd / 'manifest.json'}: cannot be read ({exc}): the session cannot be resumed") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("config"), dict):
        raise AbcError(f"{sd / 'manifest.json'}: has no settings (\"config\"): not the manifest of an abc-crawl "
                       "session, or a damaged one; the session cannot be resumed")
    if manifest.get("ranks") != ranks:
        raise AbcError(f"{sd}: the session ran on {manifest.get('ranks')} ranks; resume it with mpiexec -n "
                       f"{manifest.get('ranks')} (this run has {ranks})")
    if manifest.get("stopped") == "crashed" and manifest.get("crash"):
        c = manifest["crash"]
        print(f"abc-crawl: resuming after a crash: {crash.summary_line(c)} (see {sd / c.get('file', 'errors')})",
              file=sys.stderr)
    saved = dict(manifest["config"])
    saved.pop("test_crash", None)      # a test hook applies to the run it was given to
    for path in config_paths(config_file):
        saved.update(read_config_file(path))
    saved.update({k: v for k, v in overrides.items() if v is not None})
    saved["session_dir"] = str(sd)
    return CrawlConfig.build(saved, resumed=True), manifest


def _prepare(cfg: CrawlConfig, ranks: int, resume: bool = False) -> dict:
    """Rank 0: read and validate every input; returns what all ranks need."""
    scope = Scope.from_file(cfg.resolve) if cfg.resolve else Scope()
    # the user's scope rules (--url-filter is read here, on rank 0), proxies (--proxy env: rank 0's
    # environment) and the trusted CAs (--ca-bundle or the system's): sent to every rank with the rest
    rules = ScopeRules.from_config(cfg)
    proxies = ProxySettings.from_value(cfg.proxy)
    ca = load_ca_bundle(cfg.ca_bundle)
    seeds, problems = read_seeds(cfg.seeds, scope, rules)
    for p in problems:
        print(str(p), file=sys.stderr)
    assignment = make_assignment(cfg.assign, ranks, cfg.assign_buckets, cfg.remap)
    try:
        crash.parse_test_crash(cfg.test_crash, ranks)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    holders = None
    if uses_phases(cfg.phases, assignment.site_level, ranks):
        try:
            PhaseClock(0, ranks, cfg.n_phases or ranks, phase_seconds_of(cfg), cfg.phase_guard)
            # who holds which host in which slot: built here once, sent to every rank
            holders = HolderTable(ranks, cfg.n_phases or ranks, assignment.host_pages())
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    session_dir = cfg.session_dir or str(Path("sessions") / datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S"))
    sd = Path(session_dir)
    if not resume and ((sd / "manifest.json").exists() or (sd / "warc").exists()):
        raise AbcError(f"{sd}: session directory already holds a session (choose another --session-dir)")
    # the previous session's validators and links, split by owner under this session's assignment;
    # scattered after the broadcast (each rank gets its share only)
    if cfg.previous and Path(cfg.previous).resolve() == sd.resolve():
        raise ConfigError(f"previous: {cfg.previous} is this session's own directory")
    previous = previous_shares(cfg.previous, assignment, ranks, scope) if cfg.previous else None
    # Rank 0 read the assignment (a part vector may exist on its file system only); it is sent to all.
    return {"scope": scope, "seeds": seeds, "seed_problems": len(problems), "session_dir": str(sd),
            "assignment": assignment, "holders": holders, "rules": rules, "proxies": proxies, "ca": ca,
            "previous": previous}


def _refused(comm: Communicator, lines: list[str] | None) -> bool:
    """Rank 0 decided ``lines`` (None: go on); every rank learns it. True when the run must end (status 2)."""
    lines = comm.bcast(lines if comm.rank == 0 else None)
    if lines and comm.rank == 0:
        print("abc-crawl: " + "\n  ".join(lines), file=sys.stderr)
    return bool(lines)


def _agree_resume(comm: Communicator, session_dir: str, host: str,
                  hosts_before: list[str] | None) -> tuple[int, list[str] | None]:
    """Every rank: the superstep to resume from, or the lines refusing the resume. Reads files, writes none.

    Refused when a rank runs on another host than the manifest says, or when
    some rank lacks a usable checkpoint of the superstep the others hold.
    """
    reports = comm.gather((host, resume_inventory(session_dir, comm.rank)))
    answer = None
    if comm.rank == 0:
        hosts = [h for h, _ in reports]
        moved = placement_problems(hosts_before, hosts)
        if moved:
            answer = (-1, [f"{session_dir}: cannot resume, nothing was changed: every rank must run on the host "
                           "it ran on (its checkpoint and WARC file are there)", *moved,
                           "run it with a hostfile that places the ranks so, in this order:",
                           *placement_hostfile(hosts_before)])
        else:
            step, lines = agree_resume([inv for _, inv in reports], hosts, session_dir)
            answer = (step, None) if step is not None else (
                -1, [f"{session_dir}: cannot resume, nothing was changed: every rank needs its checkpoint of the "
                     "same superstep", *lines])
    return comm.bcast(answer)


def run_crawl(cfg: CrawlConfig | None, comm: Communicator | None = None, out=None,
              resume: str | None = None, overrides: dict | None = None, config_file: str | list[str] | None = None) -> int:
    """Crawl on every rank of ``comm``; returns the process exit status.

    With ``cfg`` None, rank 0 builds the settings from ``overrides`` (the
    command line's values, None = not given) and ``config_file`` (TOML). With
    ``resume`` (a session directory), ``cfg`` is ignored: the session's own
    settings are used, updated with ``config_file`` and the non-None
    ``overrides``.
    """
    comm = comm or Communicator()
    out = out if out is not None else sys.stderr
    trace_dir = os.environ.get(TRACEMALLOC_ENV)
    if trace_dir:                                  # bench/memory.py --process: where the memory goes
        import tracemalloc

        tracemalloc.start(1)
    crash.CONTEXT.rank, crash.CONTEXT.comm = comm.rank, comm
    crash.install_thread_hook()
    stop = StopFlag()
    stop.install()
    prep: dict | str
    manifest_before = None
    if comm.rank == 0:
        try:
            if resume is not None:
                cfg, manifest_before = _resume_config(resume, overrides or {}, comm.size, config_file)
            elif cfg is None:
                cfg = CrawlConfig.build(overrides or {}, config_file)
            prep = _prepare(cfg, comm.size, resume=resume is not None)
            prep["cfg"] = cfg
            prep["hosts_before"] = (manifest_before or {}).get("hosts")
        except AbcError as exc:
            prep = str(exc)
    else:
        prep = None
    previous = None
    if isinstance(prep, dict):
        previous = prep.pop("previous", None)          # not broadcast: scattered below, a share per rank
        prep["previous"] = None if previous is None else previous[1]
    prep = comm.bcast(prep)
    if isinstance(prep, str):
        if comm.rank == 0:
            print(f"abc-crawl: {prep}", file=sys.stderr)
        return 2
    cfg = prep["cfg"]
    share = None
    if prep["previous"] is not None:
        share = PreviousShare.from_bytes(comm.scatter_bytes(previous[0] if comm.rank == 0 else None))
    session_dir = prep["session_dir"]
    crash.CONTEXT.session_dir, crash.CONTEXT.settings = session_dir, cfg.as_dict()
    host = platform.node()
    step = -1
    if resume is not None:
        # nothing is cut back or rewritten before every rank is known to hold what the resume needs
        step, refusal = _agree_resume(comm, session_dir, host, prep["hosts_before"])
        if _refused(comm, refusal):
            return 2
    subdirs = [d for d, use in (("warc", cfg.warc), ("checkpoint", cfg.checkpoint_seconds > 0)) if use]
    problem = prepare_rank_dir(session_dir, comm.rank, [*subdirs, "logs"], fresh=resume is None)
    if problem is None:
        logs.setup(session_dir, comm.rank, cfg.log_level)
    dashboard = None                        # issue 24: rank 0 listens now, so a busy address is refused like bad input
    if comm.rank == 0 and cfg.dashboard and problem is None:
        from .dashboard import Dashboard

        try:
            dashboard = Dashboard.bind(cfg, session_dir, comm.size, STATUS_FIELDS)
        except AbcError as exc:
            problem = str(exc)
    problems = comm.gather(None if problem is None else f"rank {comm.rank} on host {host}: {problem}")
    if comm.rank == 0:
        problems = [p for p in problems if p] or None
    if _refused(comm, problems):
        if dashboard is not None:
            dashboard.close()
        return 2
    assignment = prep["assignment"]
    progress = rank0 = None
    if comm.rank == 0:
        progress = Progress(STATUS_FIELDS, cfg.progress_seconds, out)
        kernels = KernelWorker(cfg.stats_max_pages, distance_error=cfg.stats_distance_error) if cfg.stats else None
        rank0 = Rank0Role(Coordinator(comm.size, kernels, page_edges_only=cfg.stats_edges == "pages",
                                      host_ranks=LiveHostRanks() if cfg.stats else None), progress)
    crawler = RankCrawler(cfg, comm, prep["scope"], assignment, prep["seeds"], session_dir, stop, rank0,
                          holders=prep["holders"], rules=prep["rules"], proxies=prep["proxies"], ca=prep["ca"],
                          previous=share)
    crash.CONTEXT.superstep = lambda: crawler.superstep
    hostnames = comm.gather(host)
    started = _utc()
    resumes = list((manifest_before or {}).get("resumed", []))
    if step >= 0:
        crawler.restore(step)
    if comm.rank == 0:
        if resume is not None:
            started = manifest_before.get("started", started)
            resumes.append({"at": _utc(), "from_superstep": step})
            if manifest_before.get("crash"):
                resumes[-1]["after_crash"] = manifest_before["crash"]
        manifest = _manifest(cfg, comm.size, hostnames, assignment, started, None, "running", session_dir)
        manifest["resumed"] = resumes
        atomic_write_json(Path(session_dir) / "manifest.json", manifest)
        what = f"resumed from superstep {step}" if resume is not None else f"{len(prep['seeds'])} seed(s)"
        if prep["previous"] is not None:
            p = prep["previous"]
            what += (f", previous session {p['session']} ({p['conditional']} URLs asked conditionally, "
                     f"{p['seeds']} more seeds)")
        print(f"abc-crawl: {comm.size} rank(s), {what}, assignment {assignment.describe()}, "
              f"session {session_dir}", file=out)
        print(f"abc-crawl: logs {Path(session_dir) / 'logs'}/ (--log-level {cfg.log_level})", file=out)
        if dashboard is not None:           # issue 24: serve from now on; the URL and the stop token
            crawler.rank0.dashboard = dashboard.start(assignment.describe())
            print(f"abc-crawl: dashboard {dashboard.url} stop token {dashboard.token}", file=out, flush=True)
    comm.barrier()
    if crawler.phase_clock is not None:
        crawler.sync_clock()
        # the warm-up of the phase rotation starts now on rank 0's clock, the same for every rank
        crawler.phase_clock.set_origin(comm.bcast(crawler.clock.shared() if comm.rank == 0 else None))
    _log.info("rank %d of %d on host %s: %s, assignment %s, session %s", comm.rank, comm.size, host,
              f"resumed from superstep {step}" if step >= 0 else f"{len(prep['seeds'])} seed(s)",
              assignment.describe(), session_dir)
    if step < 0:
        crawler.t0 = time.monotonic()
    t_wall = time.time() - (time.monotonic() - crawler.t0)
    stopped = crawler.run()
    wall = time.time() - t_wall
    if trace_dir:
        _dump_tracemalloc(Path(trace_dir), comm.rank)
    summaries = comm.gather(crawler.summary())
    log_counts = comm.gather(logs.warning_counts())
    rows = comm.gather_bytes(crawler.validators.to_bytes())
    crawler.validators.close()               # the spilled rows went to rank 0
    stats = None
    if comm.rank == 0:
        if progress is not None:
            progress.close()
        write_table(session_dir, rows)
        stats = _write_session(cfg, crawler, summaries, wall, session_dir, assignment, stopped, log_counts)
        if stopped == "stalled":            # issue 28: a crash-style record of what waited
            rec = crash.stall_record(stats["stall"], crawler.superstep, cfg.as_dict())
            path = crash.write_record(session_dir, rec, crash.STALL_RECORD)
            print(f"abc-crawl: stopped by the stall watchdog: {rec['error']} (record: {path})", file=sys.stderr)
            _log.warning("stopped by the stall watchdog: %s (record: %s)", rec["error"], path)
        if dashboard is not None:           # issue 24: the final figures, state "finished"
            dashboard.finish(stats, crawler.rank0.coordinator, crawler.superstep)
    # the last line of each rank's log before the files are listed (with their sizes) in the manifest
    _log.info("%s", stats["stop_line"] if stats else f"stopped: {stopped}")
    logs.close()
    status = _locate_files(comm, cfg, session_dir, hostnames, summaries, assignment, started, stopped, resumes)
    if stopped == "stalled":
        status = status or STALL_EXIT
    if comm.rank == 0:
        _print_summary(stats, session_dir, out)
        if dashboard is not None:           # issue 24
            dashboard.close()
    comm.barrier()
    logs.close()
    return status


def _locate_files(comm: Communicator, cfg, session_dir: str, hostnames, summaries, assignment, started: str,
                  stopped: str, resumes) -> int:
    """Every rank, once rank 0's files are written: list what each rank wrote on its host (sizes,
    SHA-256), gather the WARC files to rank 0 with ``--gather-warc``; rank 0 writes the final manifest.
    Returns the exit status (1 when a gathered copy failed its check)."""
    listings = comm.gather(rank_files(session_dir, comm.rank, session_wide=comm.rank == 0))
    gathered = gather_warc(comm, session_dir, listings, hostnames) if cfg.gather_warc else None
    status = 0
    if comm.rank == 0:
        manifest = _manifest(cfg, len(summaries), hostnames, assignment, started, _utc(), stopped, session_dir)
        manifest["resumed"] = list(resumes)
        manifest["locations"] = [{"rank": r, "host": h, "files": files}
                                 for r, (h, files) in enumerate(zip(hostnames, listings))]
        if gathered is not None:
            manifest["gathered_warc"] = gathered
            for line in gathered["errors"]:
                print(f"abc-crawl: gather-warc: {line}", file=sys.stderr)
            status = 1 if gathered["errors"] else 0
        atomic_write_json(Path(session_dir) / "manifest.json", manifest)
    return comm.bcast(status)


def _manifest(cfg, ranks, hostnames, assignment, started, ended, stopped, session_dir) -> dict:
    import lxml.etree
    import mpi4py
    import numpy
    import pycurl

    return {
        "format": 1,
        "software": {"abc-crawler": __version__, "python": platform.python_version(),
                     "mpi4py": mpi4py.__version__, "numpy": numpy.__version__,
                     "pycurl": pycurl.version, "lxml": ".".join(map(str, lxml.etree.LXML_VERSION))},
        "config": cfg.as_dict(),
        "ranks": ranks,
        "hosts": hostnames,
        "assignment": assignment.describe(),
        "session_dir": session_dir,
        "started": started,
        "ended": ended,
        "stopped": stopped,
        **({"stall": {"file": f"{crash.ERRORS_DIR}/{crash.STALL_RECORD}"}} if stopped == "stalled" else {}),
    }


def _write_session(cfg, crawler: RankCrawler, summaries: list[dict], wall: float, session_dir: str,
                   assignment, stopped: str, log_counts: list[dict] | None = None) -> dict:
    """Rank 0: the graph, the exchange counters and ``stats.json`` (the manifest comes last, in _locate_files)."""
    co = crawler.rank0.coordinator
    sd = Path(session_dir)
    graph = co.graph()
    save_graph(sd, graph)
    atomic_write_bytes(sd / "exchange.npz", npz_bytes(**co.exchange_arrays()))
    graph_stats = {"nodes": co.n_nodes, "edges": co.n_edges}
    if co.kernels is not None:
        from .kernels.graphstats import graph_json  # (the Cython kernels: rank 0 with --stats only)

        # whole graph (exact SCCs, HyperBall estimates) and first N pages (exact APSD/SCC), labelled
        graph_stats.update(graph_json(co.kernels.close()))
    if co.host_ranks is not None:               # the final host ranks (= abc-graph rank --level host)
        co.host_ranks.update(co.urls, force=True)
        graph_stats["top_hosts"] = co.host_ranks.summary()
    # the registered counters (crawl/counters.STATS) per rank, then what other parts of a rank know
    per_rank = [{"rank": s["rank"], **per_rank_of(s)} | {
        k: s[k] for k in ("cpu_s", "warc_files", "idle_s", "idle_phase_s", "idle_slot_s", "idle_rest_s",
                          "idle_empty_s", "exchange_s", "loop_gap_s", "loop_gap_count", "loop_gaps", "phase_origin", "urls_per_connection", "connections",
                          "robots_fetches", "robots_adopted", "phases", "phase_warmup", "clock_offset_s",
                          "clock_rtt_s", "clock_syncs", "max_rss_kb", "urls_owned", "urls_known", "memory")} for s in summaries]
    total = lambda key: sum(s[key] for s in summaries)  # noqa: E731
    sums = totals(summaries)                       # every registered counter's sum, under its stats.json key
    stats = {
        "ranks": len(summaries),
        **sums,
        "wall_s": round(wall, 3),
        "pages_per_s": round(total("requests") / wall, 2) if wall > 0 else 0.0,
        "cpu_s": round(total("cpu_s"), 3),
        "assignment": assignment.describe(),
        "stopped": stopped,
        "per_rank": per_rank,
        # the supersteps' exchanges and the last one, at the end (its index is crawler.superstep): the
        # rows of exchange.npz's step_* arrays, and the final /metrics snapshot's
        "exchange": {"supersteps": crawler.superstep + 1, **sums["exchange"]},
        "imbalance": {
            "storage_pct": round(imbalance_pct([s["bytes"] for s in summaries]), 4),
            "request_pct": round(imbalance_pct([s["requests"] for s in summaries]), 4),
        },
        "overlap_pages": co.overlap_pages,
        "robots_fetches": total("robots_fetches"),
        "robots_adopted": total("robots_adopted"),
        "robots_redirects": total("robots_redirects"),
        "refused_connections": total("refused_connections"),  # the address rule, per connection
        "graph": graph_stats,
        "bounds": time_bounds(co, summaries, cfg, wall),
    }
    # issue 28: a crawl that sent nothing with work queued says so
    stats["stall"] = crawler.stall.summary()
    # issue 30: the hosts' addresses every rank agreed on, and the groups of hosts sharing one
    stats["politeness"] = {"addresses": summaries[0]["addresses"], "ip_groups": summaries[0]["ip_groups"],
                           "ip_delay_s": cfg.ip_politeness_delay, "delay_s": cfg.politeness_delay,
                           "delay_factor": cfg.delay_factor, "phase_seconds": phase_seconds_of(cfg)}
    # issue 29: no silent drops, no silent stop
    stats["dropped"] = dropped_by_limits(stats["links"], stats["errors"])
    stats["queued_at_stop"] = crawler.queued
    stats["stop_line"] = stop_line(stopped, crawler.queued, stats["dropped"])
    # issue 33: the links of the URL graph by kind (graph.npz link_kind)
    counts = np.bincount(graph.link_kinds(), minlength=len(KIND_NAMES)) if graph.link_src.size else [0] * 4
    stats["links_by_kind"] = {name: int(n) for name, n in zip(KIND_NAMES, counts)}
    stats["page_requisites"] = {"enabled": cfg.page_requisites, "any_host": cfg.requisites_any_host,
                                "stats_edges": cfg.stats_edges}
    # issue 34: what the ranks' log files hold at warning and above (SESSION/logs/rank-NNNNN.log)
    counts = log_counts or []
    stats["log"] = {"level": cfg.log_level, "warnings": sum(c.get("WARNING", 0) for c in counts),
                    "errors": sum(c.get("ERROR", 0) + c.get("CRITICAL", 0) for c in counts),
                    "per_rank": [c.get("WARNING", 0) for c in counts]}
    atomic_write_json(sd / "stats.json", stats)
    return stats


#: a directory in this variable makes every rank trace its Python allocations (tracemalloc, one
#: frame) and write their sizes by source line at the end of the crawl: ``rank-NNNNN.json`` there
#: (bench/memory.py --process attributes them to the crawler's structures); off by default
TRACEMALLOC_ENV = "ABC_TRACEMALLOC"


def _dump_tracemalloc(directory: Path, rank: int) -> None:
    """The live allocations of this rank by file and line (bytes, blocks), largest first, and the
    traced total beside the process's resident size."""
    import tracemalloc

    snap = tracemalloc.take_snapshot()
    stats = snap.statistics("lineno")
    rss_kb = 0
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                rss_kb = int(line.split()[1])
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write_json(directory / f"rank-{rank:05d}.json", {
        "rank": rank, "rss_kb": rss_kb, "traced_bytes": sum(s.size for s in stats),
        "lines": [[s.traceback[0].filename, s.traceback[0].lineno, s.size, s.count] for s in stats[:2000]]})


def time_bounds(co, summaries: list[dict], cfg, wall: float, top: int = 5) -> dict:
    """What bounded the session's wall time: a host (its politeness-bound makespan: its page
    requests and its robots.txt request, each followed by the host's least rest, max(politeness
    delay, Crawl-delay), before the next), a rank (its busy time: wall time minus its idle time),
    or the exchange (time in exchanges)."""
    from collections import Counter

    from .web.urls import host_of

    delays: dict[str, float] = {}
    for s in summaries:
        for h, d in s.get("crawl_delays", {}).items():
            delays[h] = max(delays.get(h, 0.0), d)
    req = Counter(host_of(u) for u in (co.urls[i] for i in np.flatnonzero(np.asarray(co.rank[:]) >= 0).tolist()) if u)

    def bound(h: str, n: int) -> float:
        return n * max(cfg.politeness_delay, delays.get(h, 0.0))     # n pages + robots.txt: n rests

    hosts = sorted(((bound(h, n), h, n) for h, n in req.items()), reverse=True)[:top]
    busy = [round(wall - s["idle_s"], 3) for s in summaries]
    return {
        "wall_s": round(wall, 3),
        "host_bound_s": round(hosts[0][0], 3) if hosts else 0.0,
        "hosts": [{"host": h, "requests": n, "bound_s": round(b, 3)} for b, h, n in hosts],
        "rank_busy_s": busy,
        "exchange_s": [s.get("exchange_s", 0.0) for s in summaries],
        "idle_slot_s": [s.get("idle_slot_s", 0.0) for s in summaries],
        "idle_empty_s": [s.get("idle_empty_s", 0.0) for s in summaries],
    }


def _print_summary(stats: dict, session_dir: str, out) -> None:
    ex, im, g = stats["exchange"], stats["imbalance"], stats["graph"]
    rows = [
        ("stopped", stats["stop_line"]),
        ("requests", f"{stats['requests']} in {stats['wall_s']:.1f} s ({stats['pages_per_s']:.0f}/s)"),
        ("pages ok / failed / redirected", f"{stats['pages_crawled']} / {stats['pages_failed']} / {stats['pages_redirected']}"),
        ("not modified (304)", str(stats["not_modified"])),
        ("bytes stored", format_bytes(stats["bytes_stored"])),
        ("exchange MV / wire", f"{format_bytes(ex['volume_bytes'])} / {format_bytes(ex['wire_bytes'])}"),
        ("messages thesis / MPI", f"{ex['messages_thesis']} / {ex['messages_mpi']} in {ex['supersteps']} supersteps"),
        ("imbalance storage / requests", f"{im['storage_pct']:.1f} % / {im['request_pct']:.1f} %"),
        ("overlap pages", str(stats["overlap_pages"])),
        ("time bounds", _bounds_line(stats["bounds"])),
        ("slot cuts", _cuts_line(stats["slot_cuts"], stats["errors"])),
        *graph_rows(g),
        ("errors", ", ".join(f"{k} {v}" for k, v in stats["errors"].items()) or "none"),
        *([("dropped by limits", describe_dropped(stats["dropped"]))] if stats["dropped"] else []),
        *([("log warnings / errors", f"{stats['log']['warnings']:,} / {stats['log']['errors']:,} "
            f"(in {Path(session_dir) / 'logs'}/rank-NNNNN.log)")] if stats.get("log", {}).get("warnings")
          or stats.get("log", {}).get("errors") else []),
        ("session", session_dir),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"  {k:<{width}}  {v}", file=out)
    print(f"abc-crawl: {stats['stop_line']}", file=out)


def _bounds_line(b: dict) -> str:
    """One line: the politeness bound of the biggest host against the wall time, the busiest rank,
    and the ranks' time waiting for a slot with work queued."""
    host = b["hosts"][0]["host"] if b["hosts"] else "-"
    busy = max(b["rank_busy_s"], default=0.0)
    slot = max(b["idle_slot_s"], default=0.0)
    return (f"wall {b['wall_s']:.1f} s; biggest host {host} politeness-bound {b['host_bound_s']:.1f} s; "
            f"busiest rank {busy:.1f} s; most waiting for a slot {slot:.1f} s")


def _cuts_line(cuts: dict, errors: dict) -> str:
    """Requests cut at a slot's end, by cause, and how many of them ended as failures."""
    if not cuts["total"]:
        return "none"
    failed = errors.get("slot_too_short", 0) + errors.get("slot_never_full", 0)
    return (f"{cuts['total']}: late start {cuts['late_start']}, starved rank {cuts['starved']}, "
            f"slow response {cuts['slow_response']}, warm-up {cuts['warm_up']}; pages failed by them {failed}")
