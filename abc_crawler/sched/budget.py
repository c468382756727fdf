"""How one rank's ``--memory-budget`` is shared out, and its default (pure functions).

The budget bounds what grows with the URLs a rank knows: the URL-seen table (a fifth) and the
URLs waiting in the frontier's memory (two fifths, at :data:`BYTES_PER_WAITING_URL` each: the
columns, the path text and the crawl log's discovery columns). The rest is left for what does not
spill — the Bucket, per-host records, caches, buffers, the interpreter and its libraries.

>>> memory_shares(256 << 20)
(53687091, 1073741)
>>> overflow_buffers(256 << 20), overflow_buffers(64 << 10)
((16384, 4194304), (409, 3276))
>>> default_budget(24 << 30, 8) == (24 << 30) // 16
True
"""
from __future__ import annotations

__all__ = ["memory_shares", "overflow_buffers", "default_budget", "mem_total", "within_budget",
           "BYTES_PER_WAITING_URL"]

#: memory of one URL waiting in the frontier (columns ~20 B, path ~60 B, discovery ~3 B, slack)
BYTES_PER_WAITING_URL = 100
#: the smallest budget the shares are taken from (tests crawl small webs with it to force spilling)
MIN_BUDGET = 64 << 10


def memory_shares(budget: int) -> tuple[int, int]:
    """(bytes of the URL-seen table, URLs waiting in the frontier's memory) within ``budget``."""
    budget = max(int(budget), MIN_BUDGET)
    return budget // 5, (2 * budget // 5) // BYTES_PER_WAITING_URL


def overflow_buffers(budget: int) -> tuple[int, int]:
    """(bytes of one host's disk block, bytes buffered for all hosts) of the frontier's disk queues:
    at most 16 KiB and 4 MiB, and within an eighth of the frontier's share of a small budget."""
    share = 2 * max(int(budget), MIN_BUDGET) // 5
    buffered = max(2048, min(4 << 20, share // 8))
    return max(256, min(16 << 10, buffered // 8)), buffered


def default_budget(total_bytes: int, ranks_on_node: int) -> int:
    """Half the machine's memory, shared by the ranks on it."""
    return max(MIN_BUDGET, total_bytes // 2 // max(1, ranks_on_node))


def mem_total(path: str = "/proc/meminfo") -> int:
    """The machine's memory in bytes (``MemTotal``); 8 GiB where it cannot be read."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 8 << 30


def within_budget(frontier, budget: int, directory, rank: int, checkpoints: bool):
    """Put a rank's ``frontier`` within ``budget`` — URLs past its share wait in disk queues under
    ``directory``, the completed prefix leaves the columns (once a checkpoint wrote it, with
    ``checkpoints``) — and return the URL-seen set made for it (its table's share, runs under
    ``directory``, journaled with ``checkpoints``)."""
    from .overflow import HostQueues
    from .seenruns import SpillingSeen

    seen_bytes, waiting = memory_shares(budget)
    block, buffered = overflow_buffers(budget)
    frontier.enable_overflow(HostQueues(directory, f"frontier-rank-{rank:05d}", block_bytes=block,
                                        buffer_bytes=buffered), waiting)
    frontier.trim_completed = True
    frontier.keep_increments = checkpoints
    frontier.trim_min = max(256, waiting // 4)
    return SpillingSeen(directory, f"seen-rank-{rank:05d}", seen_bytes, journal=checkpoints)

