"""Each rank's log: the standard :mod:`logging` module, one file per rank.

``abc-crawl --log-level LEVEL`` (debug, info, warning, error; default info)
sets what each rank writes to ``SESSION/logs/rank-NNNNN.log``, one line per
message, UTC times::

    2026-11-27T15:04:05.123Z WARNING rank 3: host h012.test given up after 8 transport failures in a row (last: connect_failed)

Errors also go to stderr as they come; warnings stay in the files (a crawl of
the open web meets thousands of dead hosts), and the summary says how many each
rank wrote. Modules log through ``logging.getLogger("abc.<module>")``
(:func:`get`); lines are flushed as they are written, so ``tail -f`` follows
them and a killed rank loses none. A record logged with ``extra=FILE_ONLY`` (an
error the caller has printed already) goes to the file alone.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> h = setup(d, 2, "info", stderr=None)
>>> get("crawl").warning("host %s given up", "a.test")
>>> get("crawl").debug("not written at info")
>>> close()
>>> line = (d / "logs" / "rank-00002.log").read_text().splitlines()[0]
>>> line.split(" ", 1)[1]
'WARNING rank 2: host a.test given up'
>>> h.counts["WARNING"]
1
"""
from __future__ import annotations

import logging
import sys
import time
from collections import Counter
from pathlib import Path

__all__ = ["FILE_ONLY", "LEVELS", "setup", "close", "get", "log_path", "warning_counts"]

ROOT = "abc"
FILE_ONLY = {"file_only": True}
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class _Counting(logging.FileHandler):
    """A file handler that flushes every line and counts the records it wrote by level."""

    def __init__(self, path: Path):
        super().__init__(path, mode="a", encoding="utf-8")
        self.counts: Counter = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[record.levelname] += 1
        super().emit(record)         # StreamHandler.emit flushes after each record


class _Formatter(logging.Formatter):
    converter = time.gmtime

    def __init__(self, rank: int):
        super().__init__("%(asctime)s.%(msecs)03dZ %(levelname)s rank " + str(rank) + ": %(message)s",
                         datefmt="%Y-%m-%dT%H:%M:%S")


def log_path(session_dir, rank: int) -> Path:
    return Path(session_dir) / "logs" / f"rank-{rank:05d}.log"


def setup(session_dir, rank: int, level: str = "info", stderr=sys.stderr) -> _Counting:
    """This rank's log file at ``level``, and errors to ``stderr`` (None: not); replaces an earlier setup
    (a process that runs several crawls, as the tests do)."""
    close()
    path = log_path(session_dir, rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    logger = logging.getLogger(ROOT)
    logger.setLevel(LEVELS[level])
    logger.propagate = False
    fh = _Counting(path)
    fh.setFormatter(_Formatter(rank))
    logger.addHandler(fh)
    if stderr is not None:
        err = logging.StreamHandler(stderr)
        err.setLevel(logging.ERROR)
        err.setFormatter(logging.Formatter(f"abc-crawl: rank {rank}: %(levelname)s: %(message)s"))
        err.addFilter(lambda record: not getattr(record, "file_only", False))
        logger.addHandler(err)
    return fh


def close() -> None:
    """Flush and detach every handler of the crawler's loggers."""
    logger = logging.getLogger(ROOT)
    for h in list(logger.handlers):
        logger.removeHandler(h)
        h.close()


def get(name: str) -> logging.Logger:
    """The logger of one module (``abc.<name>``)."""
    return logging.getLogger(f"{ROOT}.{name}")


def warning_counts() -> dict[str, int]:
    """Records at WARNING and above written to this rank's log file so far."""
    for h in logging.getLogger(ROOT).handlers:
        if isinstance(h, _Counting):
            return {k: v for k, v in h.counts.items() if k in ("WARNING", "ERROR", "CRITICAL")}
    return {}
