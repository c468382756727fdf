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
"""
from __future__ import annotations

import os
import pickle
import re
import struct
from pathlib import Path

from .session import atomic_write_bytes

__all__ = ["save_checkpoint", "checkpoint_steps", "load_checkpoint", "prune_checkpoints", "Journal",
           "CheckpointLog"]

_NAME = re.compile(r"rank-(\d{5})\.(\d{8})\.ckpt$")


def _dir(session_dir) -> Path:
    return Path(session_dir) / "checkpoint"


def save_checkpoint(session_dir, rank: int, superstep: int, state: dict) -> Path:
    path = _dir(session_dir) / f"rank-{rank:05d}.{superstep:08d}.ckpt"
    atomic_write_bytes(path, pickle.dumps(state, protocol=5))
    prune_checkpoints(session_dir, rank, keep=2)
    return path


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


def load_checkpoint(session_dir, rank: int, superstep: int) -> dict:
    with open(_dir(session_dir) / f"rank-{rank:05d}.{superstep:08d}.ckpt", "rb") as fh:
        return pickle.load(fh)


def _append_record(fh, obj) -> None:
    """One ``[8-byte little-endian length][pickle]`` record."""
    rec = pickle.dumps(obj, protocol=5)
    fh.write(struct.pack("<Q", len(rec)) + rec)


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
    with open(path, "rb") as fh:
        while True:
            head = fh.read(8)
            if len(head) < 8:
                return
            (n,) = struct.unpack("<Q", head)
            yield pickle.loads(fh.read(n))


class CheckpointLog:
    """A rank's append-only log of checkpoint increments: ``[len][pickle]`` records.

    ``append`` writes one increment (a dict of NumPy arrays and bytes; pickle
    protocol 5 copies the arrays' buffers as they are) and returns the log's
    length once it is on disk; a checkpoint records that length.
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
        return _cut_and_read(Path(session_dir) / "journal.bin", length, must_exist=False)
