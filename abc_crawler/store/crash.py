"""What a crash leaves behind: the reason on disk before the job is torn down.

An unexpected exception on any rank (or in any thread of it) ends the whole
MPI job: a rank that stopped taking part in the exchange would leave the
others waiting in a collective forever, so the failing rank calls
``MPI_Abort``. The launcher then kills every rank and may cut off what was
still being forwarded of their stderr, so before the abort the failing rank:

1. writes ``SESSION/errors/rank-NNNNN.txt`` — rank, host, pid, superstep, UTC
   time, the thread, the full traceback, and the settings with their SHA-256 —
   flushed and fsynced (file and directory), on its own disk;
2. sends the same record to rank 0 and waits a few seconds for rank 0 to
   confirm it; rank 0 (which polls for such messages whenever it waits for the
   other ranks) writes the record into its own ``errors/`` too (the ranks may
   not share a disk) and marks ``manifest.json`` ``"stopped": "crashed"`` with
   the failing rank;
3. prints one line on stderr pointing at the file, then aborts.

When rank 0 itself fails it records the crash in the manifest directly. A
crash in a thread (the kernel thread, or any thread started with
:mod:`threading`) is caught by :func:`install_thread_hook` and raised again in
the main thread at the next superstep as :class:`ThreadCrash`, so it takes the
same path and is never lost inside the thread.

``abc-crawl --resume`` prints the one-line summary of the crash it resumes
after (``manifest.json["crash"]``).
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

__all__ = ["CrashContext", "CONTEXT", "ThreadCrash", "InjectedCrash", "PeerCrashed", "crash_path",
           "format_record", "write_record", "summary_line", "mark_manifest", "install_thread_hook",
           "raise_thread_failures", "parse_test_crash", "handle_crash", "stall_record", "STALL_RECORD"]

#: folder of the session that holds the crash records
ERRORS_DIR = "errors"
#: seconds a failing rank waits for rank 0 to confirm the record before it aborts
ACK_SECONDS = 5.0


class ThreadCrash(RuntimeError):
    """An exception in a thread, raised again in the main thread."""

    def __init__(self, thread: str, exc: BaseException, text: str):
        super().__init__(f"thread {thread!r} failed: {type(exc).__name__}: {exc}")
        self.thread = thread
        self.exc = exc
        self.text = text


class InjectedCrash(RuntimeError):
    """The test hook ``--test-crash``: a deliberate failure at a chosen superstep."""


class PeerCrashed(RuntimeError):
    """Rank 0 learnt that another rank crashed (its record travels with this exception)."""

    def __init__(self, record: dict):
        super().__init__(f"rank {record.get('rank')} crashed")
        self.record = record


@dataclass
class CrashContext:
    """What the crash handler needs to know; :func:`abc_crawler.run.run_crawl` fills it in."""

    rank: int = 0
    session_dir: str | None = None
    settings: dict | None = None
    superstep: Callable[[], int] | None = None
    comm: object | None = None          # the Communicator, once MPI is up


CONTEXT = CrashContext()


def crash_path(session_dir: str | os.PathLike, rank: int) -> Path:
    return Path(session_dir) / ERRORS_DIR / f"rank-{rank:05d}.txt"


def settings_digest(settings: dict | None) -> str:
    data = json.dumps(settings or {}, sort_keys=True, default=str).encode()
    return hashlib.sha256(data).hexdigest()


def build_record(rank: int, exc: BaseException, superstep: int | None, settings: dict | None,
                 thread: str | None = None, text: str | None = None) -> dict:
    """The crash record of ``exc`` on this process (plain data: it is sent to rank 0 too)."""
    if isinstance(exc, ThreadCrash):
        thread, text, exc = exc.thread, exc.text, exc.exc
    if text is None:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {
        "rank": rank, "host": platform.node(), "pid": os.getpid(),
        "superstep": superstep, "at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "thread": thread or threading.current_thread().name,
        "error": f"{type(exc).__name__}: {exc}".strip(),
        "traceback": text, "settings_sha256": settings_digest(settings), "settings": settings or {},
    }


def format_record(rec: dict) -> str:
    """The text of ``errors/rank-NNNNN.txt`` (a header of ``key: value`` lines, the traceback,
    then the settings as JSON)."""
    head = [f"{k}: {rec.get(k)}" for k in ("rank", "host", "pid", "superstep", "at", "thread", "error",
                                          "settings_sha256")]
    return ("abc-crawl crash record\n" + "\n".join(head) + "\n\n" + rec.get("traceback", "").rstrip("\n")
            + "\n\nsettings:\n" + json.dumps(rec.get("settings", {}), indent=1, sort_keys=True, default=str) + "\n")


def write_record(session_dir: str | os.PathLike, rec: dict, name: str | None = None) -> Path:
    """Write the record durably (temporary file, fsync, rename, fsync of the folder); ``name``: the
    file's name in ``errors/`` (default ``rank-NNNNN.txt``)."""
    path = crash_path(session_dir, rec["rank"]) if name is None else Path(session_dir) / ERRORS_DIR / name
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(format_record(rec))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


#: the record of a crawl the stall watchdog stopped (rank 0's disk)
STALL_RECORD = "stall.txt"


def stall_record(stall: dict, superstep: int, settings: dict | None) -> dict:
    """The crash-style record of a crawl stopped by the stall watchdog: its report instead of a
    traceback (:mod:`abc_crawler.sched.watchdog`)."""
    from ..progress import stall_text

    last = stall.get("last") or {}
    text = stall_text(last) if last else "stalled"
    rows = "\n".join(f"  {h['host']} (rank {h.get('rank')}): {h.get('queued', 0)} queued, {h['why']}"
                     + (f" {h['seconds']:g} s" if h.get("seconds") else "") for h in last.get("hosts", []))
    return {
        "rank": 0, "host": platform.node(), "pid": os.getpid(), "superstep": superstep,
        "at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "thread": "MainThread",
        "error": text, "traceback": "hosts waiting, and what for:\n" + (rows or "  (none reported)"),
        "settings_sha256": settings_digest(settings), "settings": settings or {},
    }


def summary_line(rec: dict, session_dir: str | os.PathLike | None = None) -> str:
    """One line: who failed, where, why, and the file that says more."""
    where = f" ({crash_path(session_dir, rec['rank'])})" if session_dir else ""
    thread = f", thread {rec['thread']}" if rec.get("thread") not in (None, "MainThread") else ""
    step = rec.get("superstep")
    return (f"rank {rec['rank']} on {rec.get('host')} crashed at superstep {step if step is not None else '-'}"
            f"{thread}: {rec.get('error')}{where}")


def manifest_entry(rec: dict) -> dict:
    return {k: rec.get(k) for k in ("rank", "host", "pid", "superstep", "at", "thread", "error")} | {
        "file": f"{ERRORS_DIR}/rank-{rec['rank']:05d}.txt"}


def mark_manifest(session_dir: str | os.PathLike, rec: dict) -> bool:
    """Rank 0: ``"stopped": "crashed"`` and the failing rank in ``manifest.json`` (False if there is
    no manifest yet)."""
    from .session import atomic_write_json, read_json

    path = Path(session_dir) / "manifest.json"
    try:
        manifest = read_json(path)
    except (OSError, ValueError):
        return False
    if manifest.get("stopped") == "crashed":       # the first crash is the one to tell
        return True
    manifest["stopped"] = "crashed"
    manifest["crash"] = manifest_entry(rec)
    atomic_write_json(path, manifest)
    return True


# -- threads -------------------------------------------------------------------
_thread_failures: list[ThreadCrash] = []
_lock = threading.Lock()


def _excepthook(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    exc = args.exc_value if args.exc_value is not None else args.exc_type()
    text = "".join(traceback.format_exception(args.exc_type, exc, args.exc_traceback))
    name = args.thread.name if args.thread is not None else "?"
    with _lock:
        _thread_failures.append(ThreadCrash(name, exc, text))
    sys.stderr.write(f"abc-crawl: thread {name!r} failed: {args.exc_type.__name__}: {exc}\n")


def install_thread_hook() -> None:
    """Every uncaught exception in a thread is kept for :func:`raise_thread_failures`."""
    threading.excepthook = _excepthook


def record_thread_failure(name: str, exc: BaseException) -> None:
    """For threads that catch their own exceptions (e.g. to stop cleanly): hand one over."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    with _lock:
        _thread_failures.append(ThreadCrash(name, exc, text))


def raise_thread_failures() -> None:
    """Raise the first thread failure in the calling (main) thread."""
    with _lock:
        if _thread_failures:
            raise _thread_failures.pop(0)


def clear_thread_failures() -> None:
    with _lock:
        _thread_failures.clear()


# -- the test hook ------------------------------------------------------------------
def parse_test_crash(spec: str | None, ranks: int | None = None) -> tuple[str | int, int] | None:
    """``RANK:STEP`` (raise in the crawl loop of RANK at superstep STEP) or ``kernels:STEP``
    (rank 0's kernel thread fails on the batch of superstep STEP); None when not set."""
    if not spec:
        return None
    who, sep, step = spec.partition(":")
    try:
        if not sep:
            raise ValueError
        s = int(step)
        w: str | int = "kernels" if who == "kernels" else int(who)
    except ValueError:
        raise ValueError(f"test-crash: expected RANK:SUPERSTEP or kernels:SUPERSTEP, got {spec!r}") from None
    if s < 0 or (isinstance(w, int) and (w < 0 or (ranks is not None and w >= ranks))):
        raise ValueError(f"test-crash: rank or superstep out of range in {spec!r}")
    return w, s


# -- the handler -------------------------------------------------------------------
def handle_crash(exc: BaseException, stream=None) -> int:
    """Record ``exc`` (see the module docstring), then abort the MPI job. Returns the exit status
    for a single-process run (no abort needed)."""
    stream = stream if stream is not None else sys.stderr
    ctx = CONTEXT
    comm = ctx.comm
    rank = ctx.rank
    sd = ctx.session_dir
    try:
        step = ctx.superstep() if ctx.superstep is not None else None
    except Exception:  # noqa: BLE001 - the crawler may be half-built
        step = None
    if isinstance(exc, PeerCrashed):
        rec = exc.record
        if sd is not None:
            try:
                if not crash_path(sd, rec["rank"]).exists():
                    write_record(sd, rec)
                mark_manifest(sd, rec)
            except OSError as err:
                stream.write(f"abc-crawl: could not record the crash of rank {rec['rank']}: {err}\n")
        if comm is not None:
            comm.ack_crash(rec["rank"])
        stream.write(f"abc-crawl: {summary_line(rec, sd)}\n")
    else:
        rec = build_record(rank, exc, step, ctx.settings)
        stream.write(rec["traceback"])
        path = None
        if sd is not None:
            try:
                path = write_record(sd, rec)
                if rank == 0:
                    mark_manifest(sd, rec)
            except OSError as err:
                stream.write(f"abc-crawl: rank {rank}: could not write the crash record: {err}\n")
        if comm is not None and rank != 0 and comm.size > 1:
            comm.send_crash(rec, ACK_SECONDS)
        line = summary_line(rec, sd if path is not None else None)
        stream.write(f"abc-crawl: {line}\n")
        from . import logs

        logs.get("crash").error("%s\n%s", line, rec["traceback"].rstrip(), extra=logs.FILE_ONLY)
    stream.flush()
    if comm is not None and comm.size > 1:
        time.sleep(0.2)                   # let the launcher forward the line before the teardown
        comm.abort(1)
    return 1
