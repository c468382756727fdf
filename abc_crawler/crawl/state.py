"""A rank's checkpoint state: explicit, versioned plain data (numbers, strings, bytes, NumPy arrays,
dicts and lists), never pickled classes of the crawler, so renaming a field in the code cannot
break ``--resume`` of an older session silently: an older version is read or refused with a
message that says so.

Version history:

* 1 (sessions before the rank loop was split into :mod:`abc_crawler.crawl`): the pickled objects
  themselves (counters, report, per-host dicts) — refused: resume it with the version that wrote
  it, or start a new session;
* 2: this module's :func:`capture` with one WARC file per rank (``warc/rank-NNNNN.warc.gz``) —
  refused (the files are named and rotated otherwise since): resume it with the version that
  wrote it, or start a new session;
* 4: the same state as 3 (with ``quotas``), written as plain-data records
  (:mod:`abc_crawler.store.plaindata`: MessagePack, no pickle — reading a session from elsewhere runs
  nothing); the pickled files of versions 1–3 are refused with a message, never unpickled;
* 5: the per-URL facts are columns of the frontier (:mod:`abc_crawler.sched.urlstates`): the redirect
  hops, link depth and sitemap level of each URL travel in the checkpoint log's increments, its
  retries and cuts in the frontier's state (``counts``, sparse); the dicts of version 4 (``hops``,
  ``depth``, ``sitemaps`` by fingerprint, ``attempts``, ``cuts``, ``free_cuts`` by index) are gone.
  A state of version 4 is still read: its dicts are moved into the columns;
* 3: the WARC writer's state lists its files (rotation at ``--warc-max-bytes``), and every
  increment of the checkpoint log carries the validator rows of the pages stored since the last
  checkpoint (:mod:`abc_crawler.store.validators`). Keys added since, read with a default when absent
  (an older state of version 3 means the same without them): ``depth`` (URL fingerprint → link
  hops from a seed, with ``--max-depth``) and ``sitemaps`` (fingerprint → sitemap-index level of
  the sitemap files admitted); the counters ``bytes_decoded`` and ``sitemaps``; ``quotas`` (the
  per-host limit's shares, :meth:`abc_crawler.crawl.quotas.HostQuotas.as_plain`: contended hosts,
  their counts and the URLs deferred).
"""
from __future__ import annotations

import time

from ..store.checkpoint import READ_VERSIONS, STATE_VERSION, CheckpointFormatError, CheckpointLog, Journal, load_checkpoint, save_checkpoint
from ..graph.coordinator import SuperstepReport
from ..exceptions import AbcError
from ..web.urls import fingerprint
from ..sched.urlstates import COMPLETED, MAX_U16, MAX_U8

__all__ = ["STATE_VERSION", "capture", "save", "restore", "check_version"]



def check_version(st: dict, where: str = "checkpoint") -> None:
    """Refuse a state this code cannot read, saying what to do."""
    v = st.get("state_version", 1) if isinstance(st, dict) else 1
    if v not in READ_VERSIONS:
        raise AbcError(f"{where}: checkpoint state version {v}, this abc-crawler reads version {STATE_VERSION}: "
                       "resume the session with the abc-crawler version that wrote it, or start a new session")


def _facts_of_version_4(f, st: dict) -> None:
    """A state of version 4 kept the per-URL facts in dicts (redirect hops, depth and sitemap level
    by URL fingerprint; retries and cuts by URL index): into the frontier's columns. The facts of
    completed URLs no longer matter (and their text may be gone)."""
    by_fp = {k: st.get(k) or {} for k in ("hops", "depth", "sitemaps")}
    if any(by_fp.values()):
        for idx in range(len(f)):
            if f.states[idx] >= COMPLETED:
                continue
            fp = fingerprint(f.url(idx))
            if fp in by_fp["hops"]:
                f.hops[idx] = min(by_fp["hops"][fp], MAX_U8)
            if fp in by_fp["sitemaps"]:
                f.sitemap[idx] = 1
                f.depth[idx] = min(by_fp["sitemaps"][fp], MAX_U16)
            elif fp in by_fp["depth"]:
                f.depth[idx] = min(by_fp["depth"][fp], MAX_U16)
    for name in ("attempts", "cuts", "free_cuts"):
        col = getattr(f, name)
        for idx, n in (st.get(name) or {}).items():
            col[idx] = min(n, MAX_U8)


def _report_plain(rep: SuperstepReport) -> dict:
    return {k: list(v) if isinstance(v, list) else v for k, v in vars(rep).items()}


def _report_from(d: dict) -> SuperstepReport:
    return SuperstepReport(**d)


def capture(crawler, log_len: int) -> dict:
    """The rank's state after the current superstep's exchange, as plain data."""
    runner, router = crawler.runner, crawler.router
    c = crawler.counters.as_plain()
    c["requests"] -= runner.in_flight        # in-flight requests are asked again after a resume
    r0 = crawler.rank0
    return {
        "state_version": STATE_VERSION,
        "superstep": crawler.superstep, "log": log_len, "frontier": crawler.frontier.state_for_checkpoint(),
        "counters": c, "report": _report_plain(router.report), "outbox": [list(o) for o in router.outbox],
        "hosts": crawler.hosts.as_plain(), "budget": crawler.budget,
        "quotas": crawler.quotas.as_plain(),
        "elapsed": time.monotonic() - crawler.t0, "cpu_s": crawler.cpu_seconds(),
        "warc": crawler.warc.checkpoint(), "connections": crawler.fetcher.connections,
        # counters kept outside RankCounters: robots.txt answers (fetched, adopted, redirects) and idle time
        "robots_counts": [crawler.robots.fetches, crawler.robots.adopted, crawler.robots.redirects],
        "idle": vars(crawler.runner.idle).copy(),
        "journal": r0.journal.flush() if r0 is not None and r0.journal is not None else 0,
    }


def save(crawler) -> None:
    """Write this rank's checkpoint of the current superstep (WARC batch written and fsynced first,
    and the crawl log's lines)."""
    crawler.router.resolve()                   # no URL waits for the seen set's disk check
    crawler.warc.flush()
    crawler.crawl_log.flush(sync=True)
    if crawler.ckpt_log is None:
        crawler.ckpt_log = CheckpointLog(crawler.session_dir, crawler.rank)
    # new URLs and changed fingerprints since the last checkpoint: appended to the log
    log_len = crawler.ckpt_log.append({"frontier": crawler.frontier.take_increment(),
                                       "seen": crawler.seen.take_changes(),
                                       "validators": crawler.validators.take_increment(),
                                       "discovery": crawler.router.discovery.take_increment()})
    save_checkpoint(crawler.session_dir, crawler.rank, crawler.superstep, capture(crawler, log_len))
    crawler.frontier.checkpoint_written()


def restore(crawler, superstep: int) -> None:
    """Continue from this rank's checkpoint of ``superstep`` (all ranks call it with the same one)."""
    try:
        st = load_checkpoint(crawler.session_dir, crawler.rank, superstep)
    except CheckpointFormatError as exc:      # an older pickle or a damaged file: refused, nothing run
        raise AbcError(str(exc)) from None
    check_version(st, f"{crawler.session_dir}: rank {crawler.rank}, superstep {superstep}")
    # restored in place into the parts the rank was built with (empty: a resume comes before any seed)
    f, seen, discovery = crawler.frontier, crawler.seen, crawler.router.discovery
    if len(f) or len(seen) or len(discovery):
        raise AbcError(f"rank {crawler.rank}: a resume needs an empty frontier")
    validators = crawler.validators
    validators.reset()                         # in place: the WARC writer and the pages hold it
    for inc in CheckpointLog.truncate_and_read(crawler.session_dir, crawler.rank, st["log"]):
        f.apply_increment(inc["frontier"])
        seen.merge(*inc["seen"])
        validators.apply_increment(inc["validators"])
        discovery.apply_increment(inc.get("discovery"))     # (absent from logs written before the crawl log)
    discovery.restored(len(f))
    if hasattr(seen, "restored"):
        seen.restored()
    # URLs that were being fetched are fetched again; the Bucket starts empty
    f.restore_state(st["frontier"])
    crawler.counters.load(st["counters"])      # in place: every part holds this one object
    crawler.router.restore_pending(_report_from(st["report"]), st["outbox"])
    if st["state_version"] == 4:
        _facts_of_version_4(f, st)
    crawler.hosts.load_plain(st["hosts"])
    crawler.quotas.load(st.get("quotas", {}))
    crawler.budget = st["budget"]
    crawler.t0 = time.monotonic() - st["elapsed"]
    crawler.cpu_before = st["cpu_s"]
    crawler.fetcher.connections = st["connections"]
    if "robots_counts" in st:                  # (a checkpoint of an earlier version: they start at 0)
        crawler.robots.fetches, crawler.robots.adopted, crawler.robots.redirects = st["robots_counts"]
        for k, v in st["idle"].items():
            setattr(crawler.runner.idle, k, v)
    crawler.warc.restore(st["warc"])
    crawler.superstep = superstep + 1
    crawler.resumed_from = superstep
    r0 = crawler.rank0
    if r0 is not None:
        for step, t, reports in Journal.truncate_and_read(crawler.session_dir, st["journal"]):
            for data in reports:
                r0.coordinator.consume(data)
            r0.coordinator.end_superstep(step, t)
