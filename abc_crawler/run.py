"""Run one crawl session on all ranks and write the session directory.

Rank 0 reads the inputs (settings, seeds, resolve list) and broadcasts them,
so the ranks need not share a file system; every rank writes its own WARC
file; rank 0 writes the graph, the exchange counters, ``stats.json`` and
``manifest.json`` (each atomically).
"""
from __future__ import annotations

import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from . import __version__
from .config import CrawlConfig
from .coordinator import Coordinator, KernelWorker
from .crawler import STATUS_FIELDS, RankCrawler, StopFlag
from .exceptions import AbcError, ConfigError
from .exchange import Communicator
from .metrics import imbalance_pct
from .ownership import make_assignment
from .phases import PhaseClock
from .progress import Progress, format_bytes, graph_rows
from .scope import Scope, read_seeds
from .checkpoint import Journal, checkpoint_steps
from .session import atomic_write_bytes, atomic_write_json, npz_bytes, read_json, save_graph
from .warc import warc_path

__all__ = ["run_crawl"]


def _utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _resume_config(resume: str, overrides: dict, ranks: int) -> tuple[CrawlConfig, dict]:
    """Rank 0: the settings of the session to resume (flags given now win) and its manifest."""
    sd = Path(resume)
    try:
        manifest = read_json(sd / "manifest.json")
    except FileNotFoundError:
        raise AbcError(f"{sd}: no manifest.json (not a session directory)") from None
    if manifest.get("ranks") != ranks:
        raise AbcError(f"{sd}: the session ran on {manifest.get('ranks')} ranks; resume it with mpiexec -n "
                       f"{manifest.get('ranks')} (this run has {ranks})")
    saved = dict(manifest["config"])
    saved.update({k: v for k, v in overrides.items() if v is not None})
    saved["session_dir"] = str(sd)
    return CrawlConfig.build(saved), manifest


def _prepare(cfg: CrawlConfig, ranks: int, resume: bool = False) -> dict:
    """Rank 0: read and validate every input; returns what all ranks need."""
    scope = Scope.from_file(cfg.resolve) if cfg.resolve else Scope()
    seeds, problems = read_seeds(cfg.seeds, scope)
    for p in problems:
        print(str(p), file=sys.stderr)
    assignment = make_assignment(cfg.assign, ranks, cfg.assign_buckets, cfg.remap)
    if cfg.phases == "on" or (cfg.phases == "auto" and not assignment.site_level):
        try:
            PhaseClock(0, ranks, cfg.n_phases or ranks, cfg.phase_seconds, cfg.phase_guard)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    session_dir = cfg.session_dir or str(Path("sessions") / datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S"))
    sd = Path(session_dir)
    if not resume and ((sd / "manifest.json").exists() or (sd / "warc").exists()):
        raise AbcError(f"{sd}: session directory already holds a session (choose another --session-dir)")
    sd.mkdir(parents=True, exist_ok=True)
    # Rank 0 read the assignment (a part vector may exist on its file system only); it is sent to all.
    return {"scope": scope, "seeds": seeds, "seed_problems": len(problems), "session_dir": str(sd),
            "assignment": assignment}


def run_crawl(cfg: CrawlConfig | None, comm: Communicator | None = None, out=None,
              resume: str | None = None, overrides: dict | None = None) -> int:
    """Crawl on every rank of ``comm``; returns the process exit status.

    With ``resume`` (a session directory), ``cfg`` is ignored: the session's
    own settings are used, updated with the non-None ``overrides``.
    """
    comm = comm or Communicator()
    out = out if out is not None else sys.stderr
    stop = StopFlag()
    stop.install()
    prep: dict | str
    manifest_before = None
    if comm.rank == 0:
        try:
            if resume is not None:
                cfg, manifest_before = _resume_config(resume, overrides or {}, comm.size)
            prep = _prepare(cfg, comm.size, resume=resume is not None)
            prep["cfg"] = cfg
        except AbcError as exc:
            prep = str(exc)
    else:
        prep = None
    prep = comm.bcast(prep)
    if isinstance(prep, str):
        if comm.rank == 0:
            print(f"abc-crawl: {prep}", file=sys.stderr)
        return 2
    cfg = prep["cfg"]
    session_dir = prep["session_dir"]
    step = -1
    if resume is not None:
        # the newest superstep every rank has a checkpoint of (-1: none; start afresh)
        mine = checkpoint_steps(session_dir, comm.rank)
        step = comm.allreduce_min(mine[-1] if mine else -1)
        if step < 0:
            for p in (warc_path(session_dir, comm.rank), Path(session_dir) / "journal.bin"):
                if comm.rank == 0 or p.name != "journal.bin":
                    p.unlink(missing_ok=True)
    assignment = prep["assignment"]
    progress = Progress(STATUS_FIELDS, cfg.progress_seconds, out) if comm.rank == 0 else None
    crawler = RankCrawler(cfg, comm, prep["scope"], assignment, prep["seeds"], session_dir, stop, progress)
    hostnames = comm.gather(platform.node())
    started = _utc()
    resumes = list((manifest_before or {}).get("resumed", []))
    if comm.rank == 0:
        kernels = KernelWorker(cfg.stats_max_pages, distance_error=cfg.stats_distance_error) if cfg.stats else None
        crawler.coordinator = Coordinator(comm.size, kernels)
    if step >= 0:
        crawler.restore(step)
    if comm.rank == 0:
        crawler.journal = Journal(session_dir)
        if resume is not None:
            started = manifest_before.get("started", started)
            resumes.append({"at": _utc(), "from_superstep": step})
        manifest = _manifest(cfg, comm.size, hostnames, assignment, started, None, "running", session_dir)
        manifest["resumed"] = resumes
        atomic_write_json(Path(session_dir) / "manifest.json", manifest)
        what = f"resumed from superstep {step}" if resume is not None else f"{len(prep['seeds'])} seed(s)"
        print(f"abc-crawl: {comm.size} rank(s), {what}, assignment {assignment.describe()}, "
              f"session {session_dir}", file=out)
    comm.barrier()
    if crawler.phase_clock is not None:
        crawler.sync_clock()
        # the warm-up of the phase rotation starts now on rank 0's clock, the same for every rank
        crawler.phase_clock.set_origin(comm.bcast(crawler.clock.shared() if comm.rank == 0 else None))
    if step < 0:
        crawler.t0 = time.monotonic()
    t_wall = time.time() - (time.monotonic() - crawler.t0)
    stopped = crawler.run()
    wall = time.time() - t_wall
    summaries = comm.gather(crawler.summary())
    if comm.rank == 0:
        if progress is not None:
            progress.close()
        _write_session(cfg, crawler, summaries, wall, session_dir, assignment, stopped, hostnames, started, out,
                       resumes)
    comm.barrier()
    return 0


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
    }


def _write_session(cfg, crawler: RankCrawler, summaries: list[dict], wall: float, session_dir: str,
                   assignment, stopped: str, hostnames, started: str, out, resumes=()) -> None:
    co = crawler.coordinator
    sd = Path(session_dir)
    save_graph(sd, co.graph())
    atomic_write_bytes(sd / "exchange.npz", npz_bytes(**co.exchange_arrays()))
    graph_stats = {"nodes": co.n_nodes, "edges": len(co.edge_src)}
    if co.kernels is not None:
        from .kernels.graphstats import graph_json  # (the Cython kernels: rank 0 with --stats only)

        # whole graph (exact SCCs, HyperBall estimates) and first N pages (exact APSD/SCC), labelled
        graph_stats.update(graph_json(co.kernels.close()))
    per_rank = [{k: s[k] for k in ("rank", "pages", "bytes", "requests", "cpu_s")} | {
        k: s[k] for k in ("responses", "nodes", "idle_s", "idle_phase_s", "batches", "urls_per_connection",
                          "connections", "robots_fetches", "robots_adopted", "duplicates", "slot_cuts", "warm_cuts", "retries", "phases", "phase_warmup",
                          "clock_offset_s",
                          "clock_rtt_s", "clock_syncs", "max_rss_kb")} for s in summaries]
    errors: dict[str, int] = {}
    links: dict[str, int] = {}
    oos: dict[str, int] = {}
    for s in summaries:
        for k, v in s["errors"].items():
            errors[k] = errors.get(k, 0) + v
        for k, v in s["links"].items():
            links[k] = links.get(k, 0) + v
        for k, v in s["out_of_scope_hosts"].items():
            oos[k] = oos.get(k, 0) + v
    total = lambda key: sum(s[key] for s in summaries)  # noqa: E731
    pages = total("pages")
    stats = {
        "ranks": len(summaries),
        "pages_crawled": pages,
        "pages_failed": total("pages_failed"),
        "pages_redirected": total("pages_redirected"),
        "requests": total("requests"),
        "retries": total("retries"),
        "bytes_stored": total("bytes"),
        "wall_s": round(wall, 3),
        "pages_per_s": round(total("requests") / wall, 2) if wall > 0 else 0.0,
        "cpu_s": round(total("cpu_s"), 3),
        "assignment": assignment.describe(),
        "stopped": stopped,
        "per_rank": per_rank,
        "exchange": {
            "supersteps": crawler.superstep,
            "volume_bytes": total("volume_bytes"),
            "wire_bytes": total("wire_bytes"),
            "wire_urls": total("wire_urls"),
            "messages_thesis": total("messages_thesis"),
            "messages_mpi": total("messages_mpi"),
        },
        "imbalance": {
            "storage_pct": round(imbalance_pct([s["bytes"] for s in summaries]), 4),
            "request_pct": round(imbalance_pct([s["requests"] for s in summaries]), 4),
        },
        "overlap_pages": co.overlap_pages,
        "duplicates": total("duplicates"),
        "robots_fetches": total("robots_fetches"),
        "robots_adopted": total("robots_adopted"),
        "errors": dict(sorted(errors.items())),
        "links": dict(sorted(links.items())),
        "out_of_scope_hosts": dict(sorted(oos.items(), key=lambda kv: -kv[1])[:50]),
        "graph": graph_stats,
    }
    atomic_write_json(sd / "stats.json", stats)
    manifest = _manifest(cfg, len(summaries), hostnames, assignment, started, _utc(), stopped, session_dir)
    manifest["resumed"] = list(resumes)
    atomic_write_json(sd / "manifest.json", manifest)
    _print_summary(stats, session_dir, out)


def _print_summary(stats: dict, session_dir: str, out) -> None:
    ex, im, g = stats["exchange"], stats["imbalance"], stats["graph"]
    rows = [
        ("stopped", stats["stopped"]),
        ("requests", f"{stats['requests']} in {stats['wall_s']:.1f} s ({stats['pages_per_s']:.0f}/s)"),
        ("pages ok / failed / redirected", f"{stats['pages_crawled']} / {stats['pages_failed']} / {stats['pages_redirected']}"),
        ("bytes stored", format_bytes(stats["bytes_stored"])),
        ("exchange MV / wire", f"{format_bytes(ex['volume_bytes'])} / {format_bytes(ex['wire_bytes'])}"),
        ("messages thesis / MPI", f"{ex['messages_thesis']} / {ex['messages_mpi']} in {ex['supersteps']} supersteps"),
        ("imbalance storage / requests", f"{im['storage_pct']:.1f} % / {im['request_pct']:.1f} %"),
        ("overlap pages", str(stats["overlap_pages"])),
        *graph_rows(g),
        ("errors", ", ".join(f"{k} {v}" for k, v in stats["errors"].items()) or "none"),
        ("session", session_dir),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"  {k:<{width}}  {v}", file=out)
