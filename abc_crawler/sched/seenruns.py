"""The URL-seen set past its memory share: sorted fingerprint runs on disk, checked in bulk.

IRLbot's DRUM, in the small: while the rank's in-memory :class:`~abc_crawler.kernels._fpset.FPSet`
is within its share of ``--memory-budget``, it is the whole URL-seen set. When it outgrows the
share, its fingerprints are sorted and written as a *run* (a file of sorted, distinct ``uint64``
under ``SESSION/spill/``) and the table starts empty. From then on a fingerprint the table does not
hold is *maybe* new: the router keeps such URLs aside and, once per batch (the superstep's
exchange, or a full batch), :meth:`SpillingSeen.resolve` checks them all at once against every run
— sorted, block by block, with ``pread`` (no ``mmap``: the file's pages do not count as the rank's
memory and are dropped by the kernel when it needs them). Only what is on no run is new.

Each run keeps one key of every :data:`BLOCK` in memory (8 bytes per 1,024 URLs), so a batch reads
only the blocks its keys fall in. Runs are merged, streamed, whenever a run is not more than twice
the size of the one written after it (so there are O(log n) runs, each key written O(log n) times).
Runs are disjoint: a spill writes only the keys no run holds.

What is not kept past a spill: the "reported to rank 0" mark. A URL whose text this rank sent to
rank 0 before a spill may be sent again (rank 0 keeps the first; it only costs bytes).

>>> import tempfile
>>> s = SpillingSeen(tempfile.mkdtemp(), "seen", limit_bytes=1)
>>> s.add(5), s.add(5), len(s)
(True, False, 1)
>>> s.maybe_spill(), s.add(5), s.add(6)         # on disk now: maybe new, until resolved
(True, None, None)
>>> s.resolve([5, 6]).tolist(), len(s)
([False, True], 2)
>>> s.close()
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .seen import new_fpset

__all__ = ["SortedRuns", "SpillingSeen", "BLOCK"]

#: keys per block of a run: one key of each block is kept in memory
BLOCK = 1024
#: keys read or written at once when runs are merged (8 MiB)
MERGE_CHUNK = 1 << 20
#: most blocks read by one ``pread`` while checking (8 MiB)
READ_BLOCKS = 1024
#: keys checked against the runs at once (the check's own arrays stay a few MiB)
CHECK_CHUNK = 1 << 18


class _Run:
    __slots__ = ("path", "n", "sparse", "fd")

    def __init__(self, path: Path, n: int, sparse: np.ndarray):
        self.path, self.n, self.sparse = path, n, sparse
        self.fd = os.open(path, os.O_RDONLY)

    def close(self) -> None:
        """Close and remove the file."""
        os.close(self.fd)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def read(self, first: int, count: int) -> np.ndarray:
        """Keys ``first`` to ``first + count`` (fewer at the end)."""
        count = min(count, self.n - first)
        if count <= 0:
            return np.zeros(0, dtype=np.uint64)
        data = os.pread(self.fd, count * 8, first * 8)
        if len(data) != count * 8:
            raise OSError(f"{self.path}: short read at key {first}")
        return np.frombuffer(data, dtype=np.uint64)

    def contains_sorted(self, q: np.ndarray) -> np.ndarray:
        """Which of the sorted keys ``q`` this run holds."""
        out = np.zeros(len(q), dtype=bool)
        if not self.n or not len(q):
            return out
        blk = np.searchsorted(self.sparse, q, side="right").astype(np.int64) - 1
        lo = int(np.searchsorted(blk, 0))            # keys below the run's first: not in it
        if lo == len(q):
            return out
        ub, starts = np.unique(blk[lo:], return_index=True)
        starts = np.append(starts, len(q) - lo) + lo
        i = 0
        while i < len(ub):                           # consecutive blocks: one read of up to READ_BLOCKS
            j = i
            while j + 1 < len(ub) and ub[j + 1] == ub[j] + 1 and ub[j + 1] - ub[i] < READ_BLOCKS:
                j += 1
            keys = self.read(int(ub[i]) * BLOCK, int(ub[j] - ub[i] + 1) * BLOCK)
            a, b = starts[i], starts[j + 1]
            pos = np.searchsorted(keys, q[a:b])
            ok = pos < len(keys)
            hit = np.zeros(b - a, dtype=bool)
            hit[ok] = keys[pos[ok]] == q[a:b][ok]
            out[a:b] = hit
            i = j + 1
        return out


class SortedRuns:
    """Sorted, distinct, disjoint ``uint64`` runs in files ``DIR/NAME.run-K.u64``, checked in bulk.
    Files of an earlier process under the same name are removed when it is made (a resume rebuilds
    the runs from the checkpoint log)."""

    def __init__(self, directory: str | os.PathLike, name: str):
        self.dir = Path(directory)
        self.name = name
        self.dir.mkdir(parents=True, exist_ok=True)
        for p in self.dir.glob(f"{name}.run-*.u64"):
            p.unlink()
        self.runs: list[_Run] = []
        self._closed = 0                             # keys of runs removed by close()
        self._serial = 0
        self.bytes_written = 0                       # every byte written, merges included

    def __len__(self) -> int:
        return sum(r.n for r in self.runs) + self._closed

    def __bool__(self) -> bool:
        return bool(self.runs)

    @property
    def nbytes(self) -> int:
        """Memory held: the sampled keys."""
        return sum(r.sparse.nbytes for r in self.runs)

    def contains(self, keys) -> np.ndarray:
        """Which of ``keys`` (any order, repeats allowed) some run holds."""
        q = np.asarray(keys, dtype=np.uint64)
        if not self.runs or not len(q):
            return np.zeros(len(q), dtype=bool)
        order = np.argsort(q, kind="stable")
        out = np.empty(len(q), dtype=bool)
        out[order] = self.contains_sorted(q[order])
        return out

    def contains_sorted(self, q: np.ndarray) -> np.ndarray:
        """Which of the ascending keys ``q`` some run holds, :data:`CHECK_CHUNK` keys at a time."""
        hit = np.zeros(len(q), dtype=bool)
        for a in range(0, len(q), CHECK_CHUNK):
            part = q[a:a + CHECK_CHUNK]
            h = hit[a:a + CHECK_CHUNK]
            for r in self.runs:
                h |= r.contains_sorted(part)
        return hit

    def add_run(self, keys: np.ndarray) -> None:
        """A new run of sorted, distinct keys that no run holds; runs are merged as they come."""
        if not len(keys):
            return
        w = self._writer()
        w.write(np.asarray(keys, dtype=np.uint64))
        self.runs.append(w.close())
        while len(self.runs) >= 2 and self.runs[-2].n <= 2 * self.runs[-1].n:
            b, a = self.runs.pop(), self.runs.pop()
            self.runs.append(self._merge(a, b))

    def _writer(self) -> "_RunWriter":
        self._serial += 1
        return _RunWriter(self.dir / f"{self.name}.run-{self._serial}.u64", self)

    def _merge(self, a: _Run, b: _Run) -> _Run:
        """One run of two disjoint ones, streamed in chunks of :data:`MERGE_CHUNK` keys."""
        w = self._writer()
        ca, cb = a.read(0, MERGE_CHUNK), b.read(0, MERGE_CHUNK)
        pa, pb = len(ca), len(cb)
        while len(ca) or len(cb):
            if not len(ca) or not len(cb):
                w.write(ca if len(ca) else cb)
                ca = cb = np.zeros(0, dtype=np.uint64)
            else:
                bound = min(ca[-1], cb[-1])
                ka = int(np.searchsorted(ca, bound, side="right"))
                kb = int(np.searchsorted(cb, bound, side="right"))
                w.write(np.sort(np.concatenate((ca[:ka], cb[:kb]))))
                ca, cb = ca[ka:], cb[kb:]
            if not len(ca) and pa < a.n:
                ca = a.read(pa, MERGE_CHUNK)
                pa += len(ca)
            if not len(cb) and pb < b.n:
                cb = b.read(pb, MERGE_CHUNK)
                pb += len(cb)
        a.close()
        b.close()
        return w.close()

    def close(self) -> None:
        """Remove every run (their keys still count in ``len``)."""
        self._closed += sum(r.n for r in self.runs)
        for r in self.runs:
            r.close()
        self.runs = []


class _RunWriter:
    def __init__(self, path: Path, owner: SortedRuns):
        self.path, self.owner = path, owner
        self.fh = open(path, "wb")
        self.n = 0
        self.last = None
        self.sparse: list[np.ndarray] = []

    def write(self, keys: np.ndarray) -> None:
        if not len(keys):
            return
        if self.last is not None and keys[0] <= self.last:
            raise ValueError(f"{self.path}: run keys out of order")
        self.sparse.append(keys[(-self.n) % BLOCK::BLOCK].copy())
        self.fh.write(keys.tobytes())
        self.n += len(keys)
        self.last = keys[-1]
        self.owner.bytes_written += keys.nbytes

    def close(self) -> _Run:
        self.fh.close()
        sparse = np.concatenate(self.sparse) if self.sparse else np.zeros(0, dtype=np.uint64)
        return _Run(self.path, self.n, sparse)


class SpillingSeen:
    """The URL-seen set within a memory limit: the compiled table, and sorted runs on disk past it.

    Until the first spill it *is* the table (``add`` and ``report`` are the table's own methods,
    no extra call) and answers True (new) or False (known). After it, :meth:`add` answers False
    (known) or None (not in memory: maybe new, to be checked by :meth:`resolve`). The caller keeps
    a None URL aside and asks :meth:`resolve` for the batch; a fingerprint added once is known to
    the table from then on, so a URL named again in the same batch is answered False.
    """

    def __init__(self, directory: str | os.PathLike, name: str, limit_bytes: int, journal: bool = False):
        self.limit = int(limit_bytes)
        self.runs = SortedRuns(directory, name)
        self._journal = journal
        self._kept: list[tuple[np.ndarray, np.ndarray]] = []   # journal of tables spilled since taken
        self._dup = 0                     # fingerprints both in the table and on a run
        self.spills = 0
        self._table(new_fpset(journal=journal))

    def _table(self, t) -> None:
        self.mem = t
        self.report = t.report
        self.is_reported = t.is_reported
        self.add = t.add if not self.runs else self._add_maybe

    def _add_maybe(self, fp: int):
        return None if self.mem.add(fp) else False

    def resolve(self, fps) -> np.ndarray:
        """Which of the maybe-new fingerprints ``fps`` (each answered None by :meth:`add`) are new:
        on no run."""
        found = self.runs.contains(fps)
        self._dup += int(np.count_nonzero(found))
        return ~found

    def maybe_spill(self) -> bool:
        """Spill the table if it holds its limit or more (call it when no fingerprint waits for
        :meth:`resolve`: a spilled one would be found on its own run)."""
        if not self._full():
            return False
        self.spill()
        return True

    def _full(self) -> bool:
        """The table holds its limit, or is near its next doubling (at 70 % load) when that
        doubling — the old table and the new one, three times this one, for a moment — would pass
        the limit."""
        m = self.mem
        n = len(m)
        return n > 0 and (m.nbytes >= self.limit or (3 * m.nbytes > self.limit and n >= 0.6 * m.capacity))

    def spill(self) -> None:
        """The table's seen keys out as a run (only those no run holds); a new, empty table."""
        if self._journal:
            self._kept.append(self.mem.take_changes())
        keys = self.mem.seen_keys()
        keys.sort()
        if self.runs:
            keys = keys[~self.runs.contains_sorted(keys)]
        self.mem = None                   # the table goes before the run is merged
        self.runs.add_run(keys)
        self._dup = 0
        self.spills += 1
        self._table(new_fpset(journal=self._journal))

    def __len__(self) -> int:
        return len(self.mem) + len(self.runs) - self._dup

    def __contains__(self, fp: int) -> bool:
        return fp in self.mem or bool(self.runs.contains(np.array([fp], dtype=np.uint64))[0])

    @property
    def n_reported(self) -> int:
        return self.mem.n_reported

    @property
    def nbytes(self) -> int:
        """Memory held: the table and the runs' sampled keys."""
        return self.mem.nbytes + self.runs.nbytes

    # -- checkpoints ---------------------------------------------------------
    @property
    def journal(self) -> bool:
        return self._journal

    def take_changes(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, flags) changed since the last call, spilled tables' included."""
        parts = self._kept + [self.mem.take_changes()]
        self._kept = []
        return (np.concatenate([k for k, _ in parts]).astype(np.uint64),
                np.concatenate([f for _, f in parts]).astype(np.uint8))

    def merge(self, keys, flags) -> None:
        """OR flags in (replaying a checkpoint log), spilling whenever the table is full; call
        :meth:`restored` after the last."""
        keys = np.asarray(keys, dtype=np.uint64)
        flags = np.asarray(flags, dtype=np.uint8)
        step = max(1, self.limit // 32)              # a part well below the table's limit
        for i in range(0, len(keys), step):
            self.mem.merge(keys[i:i + step], flags[i:i + step])
            if self._full():                         # the rule of maybe_spill
                self.spill()
                self._kept = []                      # replayed changes are in the log already

    def restored(self) -> None:
        """After a replay: count the table's fingerprints a run holds too."""
        if self.runs:
            self._dup = int(np.count_nonzero(self.runs.contains(self.mem.seen_keys())))

    def close(self) -> None:
        self.runs.close()

