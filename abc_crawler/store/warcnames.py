"""The names of a session's WARC files: ``SESSION-rank-NNNNN-SSSSS.warc.gz``, sorting by session,
rank and sequence (:mod:`abc_crawler.store.warc` writes them, the CDXJ index, ``--gather-warc`` and
the session's file records read them)."""
from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["session_prefix", "warc_name", "parse_warc_name"]

_NAME = re.compile(r"^(?P<prefix>[A-Za-z0-9_-]+)-rank-(?P<rank>\d{5})-(?P<seq>\d{5})\.warc\.gz$")


def session_prefix(session_dir: str | os.PathLike) -> str:
    """The session's name as it starts its WARC file names: the directory's name, characters other
    than letters, digits, ``_`` and ``-`` replaced by ``_``.

    >>> session_prefix("sessions/2026-01-02 run.1"), session_prefix("/")
    ('2026-01-02_run_1', 'abc')
    """
    name = Path(os.path.abspath(session_dir)).name
    return re.sub(r"[^A-Za-z0-9_-]", "_", name) or "abc"


def warc_name(prefix: str, rank: int, seq: int) -> str:
    """The name of a rank's WARC file number ``seq``: sorts by session, rank, sequence.

    >>> warc_name("s1", 3, 0)
    's1-rank-00003-00000.warc.gz'
    """
    return f"{prefix}-rank-{rank:05d}-{seq:05d}.warc.gz"


def parse_warc_name(name: str) -> tuple[str, int, int] | None:
    """``(prefix, rank, seq)`` of a name made by :func:`warc_name`, else None.

    >>> parse_warc_name("s1-rank-00003-00012.warc.gz"), parse_warc_name("rank-00003.warc.gz")
    (('s1', 3, 12), None)
    """
    m = _NAME.match(name)
    return None if m is None else (m["prefix"], int(m["rank"]), int(m["seq"]))
