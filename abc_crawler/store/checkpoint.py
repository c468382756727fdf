"""Checkpoints and the report journal: a killed crawl resumes, losing and duplicating nothing.

Every ``checkpoint_seconds`` (rank 0 decides, in the exchange's status vector,
so all ranks checkpoint the same superstep) each rank saves its state after the
superstep's exchange, in two parts:

- the append-only structures go to ``checkpoint/rank-NNNNN.log`` as one
  increment per checkpoint (``CheckpointLog``): the URLs added to the frontier
  since the last checkpoint (origin ids, path lengths, path text, new origins)
  and the fingerprints of the URL-seen set whose flags changed (``uint64`` +
  ``uint8`` arrays) — O(what is new), not O(state);
- the rest — the frontier's state bytes (one per URL), counters, the report not
  yet sent to rank 0, the outbox, the size of its WARC file and the length of
  the log — to ``checkpoint/rank-NNNNN.SSSSSSSS.ckpt`` (temporary file +
  rename, after the log is on disk).

It keeps its two newest checkpoint files: a rank can be at most one checkpoint
ahead of another (it cannot finish the next exchange alone), so the newest
superstep every rank has is always on disk; the log is cut back to the length
the resumed checkpoint recorded.

Rank 0 appends the reports of every superstep to ``journal.bin`` before it
merges them; its checkpoint records the journal's length.

``abc-crawl --resume SESSION`` then: agrees on the newest superstep S that
every rank has; each rank reloads its state of S and **truncates its WARC file
to the size recorded at S** — responses written after S are dropped and their
URLs, IN_PROGRESS or IN_LIST in the state of S, are fetched again, so every
URL ends with exactly one record; rank 0 truncates the journal to S and
replays it to rebuild the graph. Counters continue from S, so the final
statistics add up across the restart.

Resume never destroys what it cannot rebuild. A checkpoint file
starts with a small header naming the files it depends on and the length each
must have at least (its WARC file, its increment log, rank 0's journal), so a
rank can tell whether it can resume from it without loading its state
(:func:`checkpoint_problems`). Before anything is cut back, the ranks compare
their placement with the manifest's (:func:`placement_problems`) and their
complete checkpoints (:func:`agree_resume`); a resume that could not restore
every rank is refused with every rank, host and missing file named, and no
file is changed.
"""
from __future__ import annotations

import os
import re
import struct
from pathlib import Path

from .plaindata import PlainDataError, dumps, loads
from .session import atomic_write_bytes

__all__ = ["save_checkpoint", "checkpoint_steps", "load_checkpoint", "prune_checkpoints", "Journal", "CheckpointFormatError",
           "CheckpointLog", "checkpoint_name", "checkpoint_problems", "resume_inventory", "agree_resume",
           "placement_problems", "placement_hostfile"]

_NAME = re.compile(r"rank-(\d{5})\.(\d{8})\.ckpt$")
#: a checkpoint file: two length-prefixed plain-data records (abc_crawler/store/plaindata.py), the header
#: then the state. Formats 1 (no header) and 2 were pickle streams: refused, never unpickled.
_HEADER_FORMAT = 3
#: the version of the state a rank saves (abc_crawler.crawl.state); 1: pickled crawler objects
STATE_VERSION = 7
#: the state versions this code reads (4: per-URL facts in dicts, moved into columns on resume;
#: 4 and 5: the WARC content-seen table as a dict, read into its compact form; 4–6: no URL dropped
#: from the frontier's columns, none on disk — 7 adds ``frontier.base`` and ``frontier.overflow``)
READ_VERSIONS = (4, 5, 6, 7)


def _dir(session_dir) -> Path:
    return Path(session_dir) / "checkpoint"


def checkpoint_name(rank: int, superstep: int) -> str:
    """Path of a checkpoint file relative to the session directory.

    >>> checkpoint_name(2, 17)
    'checkpoint/rank-00002.00000017.ckpt'
    """
    return f"checkpoint/rank-{rank:05d}.{superstep:08d}.ckpt"


def _needs(rank: int, state: dict) -> dict[str, int]:
    """Files (relative to the session directory) a checkpoint's state depends on -> least length:
    every WARC file of the rank so far (the closed ones whole, the current one to its size then)."""
    needs: dict[str, int] = {}
    warc = state.get("warc") or {}
    for name, size in warc.get("files", ()):
        if size:
            needs[f"warc/{name}"] = int(size)
    if state.get("log"):
        needs[f"checkpoint/rank-{rank:05d}.log"] = int(state["log"])
    if state.get("journal"):
        needs["journal.bin"] = int(state["journal"])
    return needs


def save_checkpoint(session_dir, rank: int, superstep: int, state: dict) -> Path:
    path = Path(session_dir) / checkpoint_name(rank, superstep)
    header = {"format": _HEADER_FORMAT, "rank": rank, "superstep": superstep, "needs": _needs(rank, state),
              "state_version": state.get("state_version", 1)}
    atomic_write_bytes(path, _record(header) + _record(state))
    prune_checkpoints(session_dir, rank, keep=2)
    return path


def _record(obj) -> bytes:
    """``[8-byte little-endian length][plain-data record]``."""
    rec = dumps(obj)
    return struct.pack("<Q", len(rec)) + rec


class CheckpointFormatError(ValueError):
    """A checkpoint, log or journal file that is not of this format (an older pickle, or damaged)."""


_PICKLED = (f"a pickled file of an older abc-crawler (refused: reading a pickle can run code); resume the "
            "session with the version that wrote it, or start a new session")


def _read_record(fh, path: Path):
    start = fh.tell()
    head = fh.read(8)
    (n,) = struct.unpack("<Q", head) if len(head) == 8 else (None,)
    left = os.fstat(fh.fileno()).st_size - start - 8
    if n is None or n > left:
        # a checkpoint of formats 1-2 starts with the pickle itself (PROTO opcode 0x80, protocol 2-5)
        if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
            raise CheckpointFormatError(f"{path}: {_PICKLED}")
        raise CheckpointFormatError(f"{path}: truncated at byte {start}")
    data = fh.read(n)
    if data[:1] == b"\x80":          # a log or journal record of formats 1-2: [length][pickle]
        raise CheckpointFormatError(f"{path}: {_PICKLED}")
    try:
        return loads(data)
    except PlainDataError as exc:
        raise CheckpointFormatError(f"{path}: {exc}") from None


def checkpoint_steps(session_dir, rank: int) -> list[int]:
    """Supersteps this rank has a checkpoint of, ascending."""
    d = _dir(session_dir)
    if not d.is_dir():
        return []
    out = []
    for p in d.iterdir():
        m = _NAME.match(p.name)
        if m and int(m.group(1)) == rank:
            out.append(int(m.group(2)))
    return sorted(out)


def prune_checkpoints(session_dir, rank: int, keep: int = 2) -> None:
    for step in checkpoint_steps(session_dir, rank)[:-keep]:
        try:
            (_dir(session_dir) / f"rank-{rank:05d}.{step:08d}.ckpt").unlink()
        except FileNotFoundError:
            pass


def _read_checkpoint(path: Path, state: bool) -> tuple[dict, dict | None]:
    """(header, state or None); :class:`CheckpointFormatError` for a file of another format."""
    with open(path, "rb") as fh:
        header = _read_record(fh, path)
        if not (isinstance(header, dict) and header.get("format") == _HEADER_FORMAT and "needs" in header):
            raise CheckpointFormatError(f"{path}: not a checkpoint header of format {_HEADER_FORMAT}")
        return header, (_read_record(fh, path) if state else None)


def load_checkpoint(session_dir, rank: int, superstep: int) -> dict:
    return _read_checkpoint(_dir(session_dir) / f"rank-{rank:05d}.{superstep:08d}.ckpt", state=True)[1]


def checkpoint_problems(session_dir, rank: int, superstep: int) -> list[str]:
    """Why this rank could not resume from its checkpoint of ``superstep`` here ([] when it can).

    Each problem names a file under ``session_dir``: the checkpoint itself
    (missing or unreadable), or a file it depends on that is missing or
    shorter than the checkpoint recorded. Nothing is written.
    """
    sd = Path(session_dir)
    path = sd / checkpoint_name(rank, superstep)
    if not path.is_file():
        return [f"missing {path}"]
    try:
        header, _ = _read_checkpoint(path, state=False)
    except CheckpointFormatError as exc:      # an older pickle, or a damaged file: nothing of it is run
        return [f"unreadable {exc}"]
    except OSError as exc:
        return [f"unreadable {path} ({exc.strerror or exc})"]
    version = header.get("state_version", 1)
    if version not in READ_VERSIONS:
        return [f"{path}: checkpoint state version {version}, this abc-crawler reads version {STATE_VERSION} "
                "(resume the session with the abc-crawler version that wrote it, or start a new session)"]
    out = []
    for rel, length in sorted(header["needs"].items()):
        p = sd / rel
        try:
            size = p.stat().st_size
        except FileNotFoundError:
            out.append(f"missing {p} (the checkpoint of superstep {superstep} needs its first {length} bytes)")
            continue
        if size < length:
            out.append(f"{p} holds {size} bytes, the checkpoint of superstep {superstep} needs {length}")
    return out


def resume_inventory(session_dir, rank: int) -> dict[int, list[str]]:
    """Every superstep this rank holds a checkpoint of -> its problems ([] = usable)."""
    return {step: checkpoint_problems(session_dir, rank, step) for step in checkpoint_steps(session_dir, rank)}


def agree_resume(inventories: list[dict[int, list[str]]], hosts: list[str], session_dir) -> tuple[int | None, list[str]]:
    """The superstep every rank can resume from, or None and one line per rank that cannot.

    ``inventories[r]`` is rank r's :func:`resume_inventory`. The newest
    superstep usable on every rank wins. Otherwise the target is the superstep
    usable on the most ranks (the newest of those), and each rank lacking it
    is named with its host and what it misses.

    >>> ok = {4: [], 5: []}
    >>> agree_resume([ok, {5: [], 6: []}], ["a", "b"], "s")
    (5, [])
    >>> agree_resume([ok, {}, ok], ["a", "b", "b"], "s")[1]
    ['rank 1 on host b: missing s/checkpoint/rank-00001.00000005.ckpt']
    >>> agree_resume([{}, {}], ["a", "b"], "s")[1][0][:40]
    'no rank holds a checkpoint in s: nothing'
    """
    usable = [{s for s, problems in inv.items() if not problems} for inv in inventories]
    common = set.intersection(*usable) if usable else set()
    if common:
        return max(common), []
    counts: dict[int, int] = {}
    for steps in usable:
        for s in steps:
            counts[s] = counts.get(s, 0) + 1
    if not counts:
        if not any(inventories):
            return None, [f"no rank holds a checkpoint in {session_dir}: nothing to resume from (the crawl "
                          "stopped before its first checkpoint, or ran with --checkpoint-seconds 0); "
                          "start a new session"]
        target = max(s for inv in inventories for s in inv)
    else:
        target = max(counts, key=lambda s: (counts[s], s))
    lines = []
    for r, (inv, host) in enumerate(zip(inventories, hosts)):
        if target in usable[r]:
            continue
        problems = inv.get(target) or [f"missing {Path(session_dir) / checkpoint_name(r, target)}"]
        lines.extend(f"rank {r} on host {host}: {p}" for p in problems)
    return None, lines


def placement_hostfile(hosts: list[str]) -> list[str]:
    """Hostfile lines (``HOST:SLOTS``, in order) that place rank r on ``hosts[r]`` with MPICH's hydra.

    >>> placement_hostfile(["n1", "n1", "n2", "n2"])
    ['n1:2', 'n2:2']
    """
    lines: list[list] = []
    for h in hosts:
        if lines and lines[-1][0] == h:
            lines[-1][1] += 1
        else:
            lines.append([h, 1])
    return [f"{h}:{n}" for h, n in lines]


def placement_problems(expected: list[str] | None, hosts: list[str]) -> list[str]:
    """Lines naming every rank that now runs on another host than the session's manifest says.

    >>> placement_problems(["n1", "n1", "n2", "n2"], ["n1", "n2", "n2", "n2"])
    ['rank 1 ran on host n1, now on n2']
    >>> placement_problems(None, ["n1"])
    []
    """
    if not expected:
        return []
    return [f"rank {r} ran on host {e}, now on {h}" for r, (e, h) in enumerate(zip(expected, hosts)) if e != h]


def _append_record(fh, obj) -> None:
    """One ``[8-byte little-endian length][plain-data record]`` record."""
    fh.write(_record(obj))


def _sync(fh) -> int:
    """Flush to disk; the file's length (what a checkpoint records)."""
    fh.flush()
    os.fsync(fh.fileno())
    return fh.tell()


def _cut_and_read(path: Path, length: int, must_exist: bool):
    """Cut a record log back to ``length`` bytes and yield its records."""
    if not path.exists():
        if must_exist and length:
            raise FileNotFoundError(path)
        return
    with open(path, "r+b") as fh:
        fh.truncate(length)
    size = path.stat().st_size
    with open(path, "rb") as fh:
        while fh.tell() < size:
            yield _read_record(fh, path)


class CheckpointLog:
    """A rank's append-only log of checkpoint increments: ``[len][plain-data record]`` records.

    ``append`` writes one increment (a dict of NumPy arrays and bytes, written as they are) and
    returns the log's length once it is on disk; a checkpoint records that length.
    """

    def __init__(self, session_dir, rank: int):
        self.path = _dir(session_dir) / f"rank-{rank:05d}.log"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "ab")

    def append(self, increment: dict) -> int:
        _append_record(self._fh, increment)
        return _sync(self._fh)

    def close(self) -> None:
        self._fh.close()

    @staticmethod
    def truncate_and_read(session_dir, rank: int, length: int):
        """Cut the log to ``length`` bytes (what a checkpoint recorded) and yield its increments."""
        return _cut_and_read(_dir(session_dir) / f"rank-{rank:05d}.log", length, must_exist=True)


class Journal:
    """Rank 0's append-only log of every superstep's reports: ``[len][superstep, t, reports…]`` records."""

    def __init__(self, session_dir):
        self.path = Path(session_dir) / "journal.bin"
        self._fh = open(self.path, "ab")

    def append(self, superstep: int, t: float, reports: list[bytes]) -> None:
        _append_record(self._fh, (superstep, t, reports))

    def flush(self) -> int:
        """Flush to disk; returns the journal's length (what a checkpoint records)."""
        return _sync(self._fh)

    def close(self) -> None:
        self._fh.close()

    @staticmethod
    def truncate_and_read(session_dir, length: int):
        """Cut the journal to ``length`` bytes and yield its records (superstep, t, reports)."""
        return (tuple(r) for r in _cut_and_read(Path(session_dir) / "journal.bin", length, must_exist=False))
