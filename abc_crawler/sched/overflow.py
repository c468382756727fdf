"""The frontier past its memory share: each host's later URLs on disk, in order (BUbiNG's virtualizer).

Once a rank's frontier holds its share of ``--memory-budget`` in URLs waiting in memory, a new URL
of a host goes here instead of into URLStates — and so does every later URL of a host that has
URLs here, so each host's URLs stay in the order they came. They come back a block at a time
(:meth:`HostQueues.take`, oldest first) when the host has nothing left in memory or the frontier
runs low (:class:`~abc_crawler.sched.urlstates.URLStates` decides).

On disk: records (one line each: the URL's origin id, its facts, its path) are gathered per host
in memory up to :data:`BLOCK_BYTES` (or :data:`BUFFER_BYTES` for all hosts together), then appended
as one block to the current segment file ``SESSION/spill/NAME.seg-K.bin`` (rotated at
:data:`SEGMENT_BYTES`). A host keeps the list of its blocks (about 24 bytes per block of some
hundred URLs); a block is read back with one ``pread``. A segment whose blocks were all taken is
removed — after the next checkpoint, which may still list them (:meth:`checkpoint_written`).

A checkpoint writes every buffer out and syncs the segments (:meth:`checkpoint`): its block lists
and the frontier's checkpoint log together hold every URL the rank admitted.
"""
from __future__ import annotations

import os
from collections import deque
from pathlib import Path

__all__ = ["HostQueues", "Overflowing", "BLOCK_BYTES", "BUFFER_BYTES", "SEGMENT_BYTES"]

BLOCK_BYTES = 16 << 10        # a host's buffered records written as one block at this size
BUFFER_BYTES = 4 << 20        # all hosts' buffers together: written out past this
SEGMENT_BYTES = 64 << 20      # a segment file is rotated past this


class HostQueues:
    """Per-host FIFOs of records (bytes, one line each) on disk; hosts are ints."""

    def __init__(self, directory: str | os.PathLike, name: str, *, block_bytes: int = BLOCK_BYTES,
                 buffer_bytes: int = BUFFER_BYTES, segment_bytes: int = SEGMENT_BYTES):
        self.dir = Path(directory)
        self.name = name
        self.block_bytes, self.buffer_bytes, self.segment_bytes = block_bytes, buffer_bytes, segment_bytes
        self._buf: dict[int, list[bytes]] = {}        # host -> records not written yet (newest)
        self._buf_size: dict[int, int] = {}
        self._buffered = 0
        self._blocks: dict[int, deque] = {}           # host -> (segment, offset, length, records)
        self._count: dict[int, int] = {}              # host -> records here (blocks and buffer)
        self.n = 0                                    # records here
        self._live: dict[int, int] = {}               # segment -> blocks not taken
        self._fds: dict[int, int] = {}                # segment -> read descriptor
        self._seg = -1                                # segment being written
        self._fh = None
        self._seg_size = 0
        self._dead: list[int] = []                    # segments emptied since the last checkpoint
        self._checkpointed = False                    # a checkpoint may list blocks (removal waits)
        self._fresh = True
        self.bytes_written = 0
        self._rr: deque[int] = deque()                # hosts with records, round-robin

    # -- what is here ------------------------------------------------------
    def count(self, host: int) -> int:
        return self._count.get(host, 0)

    def hosts(self) -> list[int]:
        return list(self._count)                      # (a host leaves it when its count is 0)

    @property
    def nbytes(self) -> int:
        """Memory held: buffered records and block lists (approximate for the lists)."""
        return self._buffered + 32 * sum(len(b) for b in self._blocks.values()) + 100 * len(self._count)

    # -- in and out ----------------------------------------------------------
    def put(self, host: int, record: bytes) -> None:
        """Append one record (ending in a newline) to ``host``'s queue."""
        k = self._count.get(host, 0)
        if not k:
            self._rr.append(host)
        self._count[host] = k + 1
        self.n += 1
        buf = self._buf.get(host)
        if buf is None:
            buf = self._buf[host] = []
            self._buf_size[host] = 0
        buf.append(record)
        self._buf_size[host] += len(record)
        self._buffered += len(record)
        if self._buf_size[host] >= self.block_bytes:
            self._write_block(host)
        elif self._buffered >= self.buffer_bytes:
            self.flush()

    def take(self, host: int) -> list[bytes]:
        """``host``'s oldest records, without their newlines: its oldest block, or what is buffered
        ([] when none)."""
        blocks = self._blocks.get(host)
        if blocks:
            seg, off, length, k = blocks.popleft()
            if not blocks:
                del self._blocks[host]
            data = os.pread(self._fd(seg), length, off)
            if len(data) != length:
                raise OSError(f"{self._path(seg)}: short read of a frontier block")
            self._live[seg] -= 1
            if self._live[seg] == 0 and seg != self._seg:
                self._retire(seg)
            recs = data.split(b"\n")[:-1]
        else:
            recs = [r[:-1] for r in self._buf.pop(host, [])]
            self._buffered -= self._buf_size.pop(host, 0)
        if recs:
            left = self._count[host] - len(recs)
            if left:
                self._count[host] = left
            else:
                del self._count[host]
            self.n -= len(recs)
        return recs

    def next_host(self) -> int | None:
        """A host with records, in turn (round-robin over the hosts that have some)."""
        rr = self._rr
        while rr:
            h = rr.popleft()
            if self._count.get(h):
                rr.append(h)
                return h
        return None

    # -- files ---------------------------------------------------------------
    def _path(self, seg: int) -> Path:
        return self.dir / f"{self.name}.seg-{seg}.bin"

    def _fd(self, seg: int) -> int:
        if seg == self._seg and self._fh is not None:
            self._fh.flush()                          # the segment being written: its blocks out first
        fd = self._fds.get(seg)
        if fd is None:
            fd = self._fds[seg] = os.open(self._path(seg), os.O_RDONLY)
        return fd

    def _write_block(self, host: int) -> None:
        recs = self._buf.pop(host)
        size = self._buf_size.pop(host)
        self._buffered -= size
        if self._fh is None or self._seg_size >= self.segment_bytes:
            self._new_segment()
        data = b"".join(recs)
        off = self._seg_size
        self._fh.write(data)
        self._seg_size += len(data)
        self.bytes_written += len(data)
        self._blocks.setdefault(host, deque()).append((self._seg, off, len(data), len(recs)))
        self._live[self._seg] = self._live.get(self._seg, 0) + 1

    def _new_segment(self) -> None:
        if self._fresh:                               # a new crawl: files of an earlier one go
            self.dir.mkdir(parents=True, exist_ok=True)
            for p in self.dir.glob(f"{self.name}.seg-*.bin"):
                p.unlink()
            self._fresh = False
        if self._fh is not None:
            self._fh.close()
            old = self._seg
            if self._live.get(old, 0) == 0:
                self._retire(old)
        self._seg += 1
        self._fh = open(self._path(self._seg), "ab")
        self._seg_size = self._fh.tell()
        self._live.setdefault(self._seg, 0)

    def _retire(self, seg: int) -> None:
        fd = self._fds.pop(seg, None)
        if fd is not None:
            os.close(fd)
        self._live.pop(seg, None)
        if self._checkpointed:
            self._dead.append(seg)
        else:
            self._unlink(seg)

    def _unlink(self, seg: int) -> None:
        try:
            os.unlink(self._path(seg))
        except FileNotFoundError:
            pass

    def flush(self) -> None:
        """Every host's buffered records out as blocks."""
        for h in list(self._buf):
            self._write_block(h)

    def close(self) -> None:
        """Remove every segment (the crawl ended)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        for seg in list(self._live) + self._dead:
            self._unlink(seg)
        self._live.clear()
        self._dead = []

    # -- checkpoints ---------------------------------------------------------
    def checkpoint(self) -> dict:
        """Everything written and synced; the block lists (plain data) for the checkpoint."""
        self.flush()
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
        self._checkpointed = True
        return {"seg": self._seg, "blocks": {h: list(b) for h, b in self._blocks.items()}}

    def checkpoint_written(self) -> None:
        """The checkpoint is durable: segments emptied before it are not needed any more."""
        for seg in self._dead:
            self._unlink(seg)
        self._dead = []

    def restore(self, st: dict | None) -> None:
        """A resume: the block lists of the checkpoint; segments it does not list are removed."""
        self._fresh = False
        self._checkpointed = True
        keep = set()
        for h, blocks in (st or {}).get("blocks", {}).items():
            h = int(h)
            dq = deque(tuple(b) for b in blocks)
            if not dq:
                continue
            self._blocks[h] = dq
            k = sum(b[3] for b in dq)
            self._count[h] = k
            self.n += k
            self._rr.append(h)
            for seg, *_ in dq:
                keep.add(seg)
                self._live[seg] = self._live.get(seg, 0) + 1
        if self.dir.is_dir():
            for p in self.dir.glob(f"{self.name}.seg-*.bin"):
                if int(p.name.rsplit("-", 1)[1].split(".")[0]) not in keep:
                    p.unlink()
        self._seg = max([(st or {}).get("seg", -1)] + list(keep))
        self._fh = None            # the next block starts a new segment


class Overflowing:
    """URLStates' side of the disk queues (a mixin of :class:`~abc_crawler.sched.urlstates.URLStates`,
    whose fields it uses): which URLs go to disk and how they come back."""

    def enable_overflow(self, queues, cap_urls: int) -> None:
        """From now on, URLs past ``cap_urls`` IN_LIST in memory go to ``queues``
        (:class:`~abc_crawler.sched.overflow.HostQueues`)."""
        self._ov = queues
        self._ov_cap = max(1, int(cap_urls))

    @property
    def overflow_bytes_written(self) -> int:
        """Bytes of URL records written to disk so far."""
        return self._ov.bytes_written if self._ov is not None else 0

    def _spill(self, h: int, o: int, path: bytes, hops: int, depth: int, sitemap: bool, hop: int, via: int) -> None:
        self._ov.put(h, b"%d\t%d\t%d\t%d\t%d\t%d\t" % (o, hops, depth, 1 if sitemap else 0, hop, via) + path + b"\n")
        if self._hpend[h] == 0:
            self._work_changed.add(h)
        self._hpend[h] += 1
        self.n_spilled += 1
        if self._head[h] < 0:
            self._starved.add(h)

    def _refill(self, h: int) -> int:
        """Host ``h``'s oldest URLs on disk back into the columns, in order; how many."""
        recs = self._ov.take(h)
        cb = self.on_refill
        for rec in recs:
            o, hops, depth, sm, hop, via, path = rec.split(b"\t", 6)
            i = self._append(int(o), path)
            self._hpend[h] -= 1                    # (counted when it went to disk)
            self._set_facts(i, int(hops), int(depth), sm == b"1")
            if cb is not None:
                cb(i, int(hop), int(via))
        self.n_spilled -= len(recs)
        return len(recs)

    def refill(self) -> int:
        """Bring URLs back from disk: a block for each host left with none in memory (up to twice
        the share), then blocks in turn while fewer than half the share are in memory."""
        ov = self._ov
        if ov is None or not ov.n:
            return 0
        cap = self._ov_cap
        n = 0
        if self._starved:
            left = set()
            for h in sorted(self._starved):
                if self.n_in_list >= 2 * cap:
                    left.add(h)
                elif self._head[h] < 0 and ov.count(h):
                    n += self._refill(h)
            self._starved = left
        while self.n_in_list < cap // 2 and ov.n:
            n += self._refill(ov.next_host())
        return n

    def restore_overflow(self, st: dict | None) -> None:
        """After :meth:`restore_states`: the URLs on disk the checkpoint listed count as pending."""
        ov = self._ov
        if ov is None:
            if st and st.get("blocks"):
                raise ValueError("the checkpoint has frontier URLs on disk, but this rank keeps none there")
            return
        ov.restore(st)
        for h in ov.hosts():
            if self._hpend[h] == 0:
                self._work_changed.add(h)
            self._hpend[h] += ov.count(h)
            if self._head[h] < 0:
                self._starved.add(h)
        self.n_spilled = ov.n
