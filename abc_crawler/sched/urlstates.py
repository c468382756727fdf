"""KSpider's URLStates: the append-only array of one rank's own URLs (seed 004), columnar.

Each URL has a state (IN_LIST → IN_PROGRESS → COMPLETED, or STALLED when its host could not be
reached). A sliding window of it, starting at the first entry not yet completed, bounds what the
scheduler (:class:`abc_crawler.sched.frontier.Frontier`, the Bucket built on this class) may take.

Storage is columnar (about 13 bytes per URL plus its path): the URL's path and query as UTF-8 in
1 MiB byte chunks, each allocated once at full size (a chunk is freed once all its URLs are
completed), a ``uint32`` position, a ``uint32`` origin id (``scheme://host[:port]``, interned once,
with its host), the state byte and the int32 link of its host's FIFO of IN_LIST URLs (in URLStates
order). Per host: the FIFO's ends and the count of URLs not completed, whose crossings of zero are
the work announcements of the phase slots.

Per-URL facts are columns beside the state byte, set when the URL is added (what travels with it
to its owner, :mod:`abc_crawler.web.urlline`) or counted while it is fetched — never side dicts:

=============  ======  ==============================================================
column         type    meaning
=============  ======  ==============================================================
``hops``       uint8   redirect hops that led to the URL (saturates at 255)
``depth``      uint16  link hops from a seed (``--max-depth``), or a sitemap file's index
                       level (saturates at 65,535)
``sitemap``    byte    1: a sitemap file (fetched for the URLs it lists, not a page)
``attempts``   uint8   retries so far (``--max-retries`` is at most 255)
``cuts``       uint8   counted slot-end cuts (``--max-slot-cuts`` is at most 255)
``free_cuts``  uint8   slot-end cuts that were not the request's fault (bounded by
                       :data:`abc_crawler.crawl.decisions.MAX_FREE_CUTS`)
=============  ======  ==============================================================
"""
from __future__ import annotations

import heapq
from array import array

import numpy as np

__all__ = ["URLStates", "IN_LIST", "IN_PROGRESS", "COMPLETED", "STALLED", "CHUNK_BITS", "CHUNK"]

# URLStates (one byte per URL)
IN_LIST, IN_PROGRESS, COMPLETED, STALLED = 0, 1, 2, 3
CHUNK_BITS = 20                      # path text in 1 MiB chunks; position = chunk << 20 | offset
CHUNK = 1 << CHUNK_BITS
_OFF_MASK = CHUNK - 1
#: the largest value of a ``uint8`` / ``uint16`` fact column (values saturate there)
MAX_U8, MAX_U16 = 255, 65535


class _URLView:
    """``frontier.urls[i]``: the URL text, rebuilt from its origin and path."""

    def __init__(self, f: "URLStates"):
        self._f = f

    def __getitem__(self, i: int) -> str:
        return self._f.url(i)

    def __len__(self) -> int:
        return len(self._f.states)


class URLStates:
    """The URLs of one rank, their states and per-host FIFOs."""

    def __init__(self, window: int):
        self.window = window
        self.states = bytearray()
        self._pos = array("I")            # chunk << CHUNK_BITS | offset of the path
        self._origin = array("I")         # origin id
        self._next = array("i")           # next URL of the host's FIFO (-1: none)
        # per-URL facts (see the module's table)
        self.hops = array("B")
        self.depth = array("H")
        self.sitemap = bytearray()
        self.attempts = bytearray()
        self.cuts = bytearray()
        self.free_cuts = bytearray()
        self._chunks: list = []           # path text: bytearrays of CHUNK bytes (None once freed)
        self._chunk_used: list[int] = []  # bytes written into each chunk
        self._chunk_live: list[int] = []  # URLs of the chunk not completed
        # origins (scheme://host[:port]) and hosts, interned
        self._origin_ids: dict[str, int] = {}
        self._origin_prefix: list[str] = []
        self._origin_host = array("I")
        self._host_ids: dict[str, int] = {}
        self._host_names: list[str] = []
        self._head = array("i")           # per host: first URL of its IN_LIST FIFO
        self._tail = array("i")
        self._hpend = array("i")          # per host: URLs not completed (IN_LIST or IN_PROGRESS)
        self._work_changed: set[int] = set()   # hosts whose pending count crossed zero
        self.lo = 0                       # first entry that may not be COMPLETED
        self.n_in_list = 0
        self.n_in_progress = 0
        self.n_completed = 0
        self._marked: set[int] = set()    # host ids whose queue changed (the scheduler visits them)
        self._win_heap: list[tuple[int, int]] = []  # (head URL, host): hosts waiting for the window
        self._mark_urls = 0               # checkpoint increments: URLs / origins already written
        self._mark_origins = 0
        # past the memory share: later URLs of a host on disk (sched/overflow), in order
        self._ov = None                   # HostQueues, once enable_overflow was called
        self._ov_cap = 0                  # IN_LIST URLs held in memory before new ones go to disk
        self.n_spilled = 0                # URLs on disk (pending, not in the columns yet)
        self._starved: set[int] = set()   # hosts with URLs on disk and none IN_LIST in memory
        self.on_refill = None             # f(idx, hop, via): a URL came back from disk as ``idx``

    def _host_added(self, host: str) -> None:
        """A new host got id ``len(self._host_names) - 1`` (the Bucket adds its column)."""

    def add(self, url: str, host: str, hops: int = 0, depth: int = 0, sitemap: bool = False,
            hop: int = 0, via: int = -1) -> int:
        """Append a new URL (the caller has done the URL-seen test) with its facts: the redirect
        ``hops`` that led to it, its link ``depth`` (or a sitemap file's index level) and whether it
        is a ``sitemap`` file; return its index — or -1 when it went to disk (the frontier holds its
        share of memory, or its host has URLs there): it comes back later as a new index, with
        ``hop`` and ``via`` given to :attr:`on_refill`."""
        s = url.find("/", url.find("://") + 3)
        if s < 0:
            s = len(url)
        prefix = url[:s]
        o = self._origin_ids.get(prefix)
        if o is None:
            o = self._new_origin(prefix, host)
        if self._ov is not None:
            h = self._origin_host[o]
            if self.n_in_list >= self._ov_cap or self._ov.count(h):
                self._spill(h, o, url[s:].encode(), hops, depth, sitemap, hop, via)
                return -1
        i = self._append(o, url[s:].encode())
        if hops:
            self.hops[i] = min(hops, MAX_U8)
        if depth:
            self.depth[i] = min(depth, MAX_U16)
        if sitemap:
            self.sitemap[i] = 1
        return i

    # -- past the memory share ------------------------------------------------
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
        self._ov.put(h, b"%d\t%d\t%d\t%d\t%d\t%d\t" % (o, min(hops, MAX_U8), min(depth, MAX_U16),
                                                       1 if sitemap else 0, hop, via) + path + b"\n")
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
            if hops != b"0":
                self.hops[i] = int(hops)
            if depth != b"0":
                self.depth[i] = int(depth)
            if sm == b"1":
                self.sitemap[i] = 1
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

    def tries(self, idx: int) -> int:
        """Which request of URL ``idx`` the next one is: 1 + its retries and slot-end cuts."""
        return 1 + self.attempts[idx] + self.cuts[idx] + self.free_cuts[idx]

    def count_retry(self, idx: int) -> int:
        """One more retry of URL ``idx``; its retries so far."""
        n = self.attempts[idx] = min(self.attempts[idx] + 1, MAX_U8)
        return n

    def count_cut(self, idx: int, counted: bool) -> tuple[int, int]:
        """One more slot-end cut of URL ``idx`` (``counted``: its own fault); its ``(counted,
        free)`` cuts so far."""
        col = self.cuts if counted else self.free_cuts
        col[idx] = min(col[idx] + 1, MAX_U8)
        return self.cuts[idx], self.free_cuts[idx]

    def was_cut(self, idx: int) -> bool:
        """URL ``idx``'s last request was cut at a slot's end and it waits to be asked again."""
        return bool(self.cuts[idx] or self.free_cuts[idx])

    def cut_and_left(self) -> int:
        """URLs whose request was cut at a slot's end and that were not completed since."""
        st = np.frombuffer(self.states, dtype=np.uint8)
        cut = (np.frombuffer(self.cuts, dtype=np.uint8) > 0) | (np.frombuffer(self.free_cuts, dtype=np.uint8) > 0)
        return int(np.count_nonzero(cut & (st < COMPLETED)))

    def clear_cuts(self, idx: int) -> None:
        """URL ``idx`` had an answer (or its cuts made a failure): its next request, if any, is
        cut afresh."""
        self.cuts[idx] = self.free_cuts[idx] = 0

    def _new_origin(self, prefix: str, host: str) -> int:
        h = self._host_ids.get(host)
        if h is None:
            h = self._host_ids[host] = len(self._host_names)
            self._host_names.append(host)
            self._head.append(-1)
            self._tail.append(-1)
            self._hpend.append(0)
            self._host_added(host)
        o = self._origin_ids[prefix] = len(self._origin_prefix)
        self._origin_prefix.append(prefix)
        self._origin_host.append(h)
        return o

    def _append(self, o: int, path: bytes) -> int:
        used = self._chunk_used
        k = len(path)
        if not used or used[-1] + k > len(self._chunks[-1]):
            self._new_chunk(k)
        c = len(used) - 1
        u = used[c]
        i = len(self.states)
        if c >= (1 << 32) >> CHUNK_BITS and self._pos.typecode == "I":
            self._pos = array("Q", self._pos)      # more than 4 GiB of paths: 64-bit positions
        self._pos.append(c << CHUNK_BITS | u)
        self._chunks[c][u:u + k] = path
        used[c] = u + k
        self._chunk_live[c] += 1
        self.states.append(IN_LIST)
        self._origin.append(o)
        self._next.append(-1)
        self.hops.append(0)
        self.depth.append(0)
        self.sitemap.append(0)
        self.attempts.append(0)
        self.cuts.append(0)
        self.free_cuts.append(0)
        h = self._origin_host[o]
        if self._hpend[h] == 0:
            self._work_changed.add(h)
        self._hpend[h] += 1
        t = self._tail[h]
        if t < 0 or self._head[h] < 0:
            self._head[h] = i
        else:
            self._next[t] = i
        self._tail[h] = i
        self._marked.add(h)
        self.n_in_list += 1
        return i

    def _new_chunk(self, need: int) -> None:
        """A fresh chunk, allocated once at its full size (no regrowth, so peak memory = held)."""
        if self._chunks and self._chunk_live[-1] == 0:
            self._chunks[-1] = None
        self._chunks.append(bytearray(max(CHUNK, need)))
        self._chunk_used.append(0)
        self._chunk_live.append(0)

    def url(self, idx: int) -> str:
        """The URL text of entry ``idx`` (gone once its whole chunk is completed)."""
        p = self._pos[idx]
        c = p >> CHUNK_BITS
        chunk = self._chunks[c]
        if chunk is None:
            raise KeyError(f"URL #{idx} was completed and its text reclaimed")
        end = self._chunk_used[c]
        if idx + 1 < len(self._pos):
            q = self._pos[idx + 1]
            if q >> CHUNK_BITS == c:
                end = q & _OFF_MASK
        return self._origin_prefix[self._origin[idx]] + chunk[p & _OFF_MASK:end].decode()

    @property
    def urls(self) -> _URLView:
        return _URLView(self)

    def host(self, idx: int) -> str:
        return self._host_names[self._origin_host[self._origin[idx]]]

    def __len__(self) -> int:
        return len(self.states)

    @property
    def n_hosts(self) -> int:
        return len(self._host_names)

    def complete(self, idx: int, stalled: bool = False) -> None:
        """Mark a URL done (fetched, failed, disallowed); it is never scheduled again."""
        old = self.states[idx]
        if old == IN_PROGRESS:
            self.n_in_progress -= 1
        elif old == IN_LIST:
            self.n_in_list -= 1          # its FIFO node is skipped when reached
        else:
            raise ValueError(f"URL #{idx} completed twice")
        self.states[idx] = STALLED if stalled else COMPLETED
        self.n_completed += 1
        h = self._origin_host[self._origin[idx]]
        self._hpend[h] -= 1
        if self._hpend[h] == 0:
            self._work_changed.add(h)
        c = self._pos[idx] >> CHUNK_BITS
        live = self._chunk_live[c] = self._chunk_live[c] - 1
        if live == 0 and c < len(self._chunks) - 1:
            self._chunks[c] = None        # every URL of the chunk is done: its text goes
        if idx == self.lo:
            self._advance_lo()

    def release(self, idx: int) -> None:
        """Put an IN_PROGRESS URL back to IN_LIST (its batch was cut short)."""
        if self.states[idx] != IN_PROGRESS:
            raise ValueError(f"URL #{idx} is not in progress")
        self.states[idx] = IN_LIST
        self.n_in_progress -= 1
        self.n_in_list += 1
        if idx < self.lo:
            self.lo = idx
        h = self._origin_host[self._origin[idx]]
        self._fifo_insert(h, idx)
        self._marked.add(h)

    def _fifo_insert(self, h: int, idx: int) -> None:
        """Insert ``idx`` into host ``h``'s FIFO in URLStates order."""
        nxt = self._next
        head = self._head[h]
        if head < 0:
            self._head[h] = self._tail[h] = idx
            nxt[idx] = -1
        elif idx < head:
            nxt[idx] = head
            self._head[h] = idx
        else:
            p = head
            while nxt[p] >= 0 and nxt[p] < idx:
                p = nxt[p]
            nxt[idx] = nxt[p]
            nxt[p] = idx
            if nxt[idx] < 0:
                self._tail[h] = idx

    def _advance_lo(self) -> None:
        st = self.states
        n = len(st)
        lo = self.lo
        while lo < n and st[lo] >= COMPLETED:
            lo += 1
        self.lo = lo
        wh = self._win_heap
        end = lo + self.window
        while wh and wh[0][0] < end:
            self._marked.add(heapq.heappop(wh)[1])

    @property
    def pending(self) -> int:
        """URLs not completed (IN_LIST or IN_PROGRESS, or waiting on disk)."""
        return self.n_in_list + self.n_in_progress + self.n_spilled

    def host_pending(self, host: str) -> int:
        """URLs of ``host`` not completed (0 for a host never seen)."""
        h = self._host_ids.get(host)
        return 0 if h is None else self._hpend[h]

    def take_work_changes(self) -> list[tuple[str, bool]]:
        """Hosts whose pending count went from zero to more or back since the last call, with
        whether they have work now (a host that went and came back is reported once, as it is)."""
        out = [(self._host_names[h], self._hpend[h] > 0) for h in sorted(self._work_changed)]
        self._work_changed.clear()
        return out

    def nbytes(self) -> int:
        """Bytes held by the per-URL columns and the path text (not the per-host tables)."""
        return (len(self.states) + self._pos.itemsize * len(self._pos) + 4 * len(self._origin)
                + 4 * len(self._next) + 7 * len(self.hops) + sum(len(c) for c in self._chunks if c is not None)
                + (self._ov.nbytes if self._ov is not None else 0))

    def text_bytes(self) -> int:
        """Path bytes written into chunks not freed."""
        return sum(u for c, u in zip(self._chunks, self._chunk_used) if c is not None)

    # -- checkpoints ---------------------------------------------------------
    def take_increment(self) -> dict:
        """What was appended since the last call (origins, URLs' origin ids and paths): for an
        append-only checkpoint log. Paths of URLs whose text was already reclaimed are empty."""
        m, n = self._mark_urls, len(self.states)
        mo = self._mark_origins
        inc = {"first": m, "origins": [(self._origin_prefix[o], self._host_names[self._origin_host[o]])
                                       for o in range(mo, len(self._origin_prefix))]}
        pos = np.frombuffer(self._pos, dtype=np.uint32 if self._pos.typecode == "I" else np.uint64)[m:n].astype(np.int64)
        inc["origin"] = np.frombuffer(self._origin, dtype=np.uint32)[m:n].copy()
        chunk = pos >> CHUNK_BITS
        off = pos & _OFF_MASK
        end = np.empty_like(off)
        if n > m:
            end[:-1] = np.where(chunk[1:] == chunk[:-1], off[1:], -1)
            end[-1] = -1
        parts = []
        lens = np.zeros(n - m, dtype=np.uint32)
        for c in np.unique(chunk).tolist():
            data = self._chunks[c]
            sel = chunk == c
            if data is None:
                continue
            e = np.where(end[sel] < 0, self._chunk_used[c], end[sel])
            o = off[sel]
            lens[sel] = e - o
            parts.append(bytes(data[int(o[0]):int(e[-1])]))
        inc["lens"] = lens
        inc["text"] = b"".join(parts)
        # the facts set when a URL is added
        inc["hops"] = np.frombuffer(self.hops, dtype=np.uint8)[m:n].copy()
        inc["depth"] = np.frombuffer(self.depth, dtype=np.uint16)[m:n].copy()
        inc["sitemap"] = np.frombuffer(self.sitemap, dtype=np.uint8)[m:n].copy()
        self._mark_urls, self._mark_origins = n, len(self._origin_prefix)
        return inc

    def apply_increment(self, inc: dict) -> None:
        """Append what ``take_increment`` returned (replaying a checkpoint log)."""
        if inc["first"] != len(self.states):
            raise ValueError(f"checkpoint increment starts at URL #{inc['first']}, frontier has {len(self.states)}")
        for prefix, host in inc["origins"]:
            self._new_origin(prefix, host)
        text = inc["text"]
        p = 0
        first = len(self.states)
        for o, k in zip(inc["origin"].tolist(), inc["lens"].tolist()):
            self._append(o, text[p:p + k])
            p += k
        if "hops" in inc:                    # (absent from logs written before the facts were columns)
            self.hops[first:] = array("B", np.asarray(inc["hops"], dtype=np.uint8).tobytes())
            self.depth[first:] = array("H", np.asarray(inc["depth"], dtype=np.uint16).tobytes())
            self.sitemap[first:] = np.asarray(inc["sitemap"], dtype=np.uint8).tobytes()
        self._mark_urls, self._mark_origins = len(self.states), len(self._origin_prefix)

    def counts_for_checkpoint(self) -> dict:
        """The facts counted while URLs are fetched (retries, cuts), sparse: ``{column: (indices,
        values)}`` of the URLs where they are not 0."""
        out = {}
        for name in ("attempts", "cuts", "free_cuts"):
            a = np.frombuffer(getattr(self, name), dtype=np.uint8)
            nz = np.flatnonzero(a)
            out[name] = (nz.astype(np.int64), a[nz].copy())
        return out

    def restore_counts(self, d: dict) -> None:
        """The sparse counts of :meth:`counts_for_checkpoint` (``{}``: all 0)."""
        n = len(self.states)
        for name in ("attempts", "cuts", "free_cuts"):
            col = bytearray(n)
            if name in d:
                idx, val = d[name]
                a = np.frombuffer(col, dtype=np.uint8)
                a[np.asarray(idx, dtype=np.int64)] = np.asarray(val, dtype=np.uint8)
            setattr(self, name, col)

    def restore_states(self, st: dict) -> np.ndarray:
        """After the increments were replayed: the checkpoint's states; URLs that were being
        fetched are IN_LIST again; FIFOs, counts and chunk bookkeeping are rebuilt. Returns the
        host id of every URL."""
        n = st["n"]
        if n != len(self.states):
            raise ValueError(f"checkpoint has {n} URLs, the log {len(self.states)}")
        a = np.frombuffer(st["states"], dtype=np.uint8).copy()
        a[a == IN_PROGRESS] = IN_LIST
        self.states = bytearray(a.tobytes())
        self.n_in_list = int(np.count_nonzero(a == IN_LIST))
        self.n_in_progress = 0
        self.n_completed = n - self.n_in_list
        # FIFOs of the IN_LIST URLs, in order
        nh = len(self._host_names)
        self._head = array("i", [-1]) * nh
        self._tail = array("i", [-1]) * nh
        hosts = np.frombuffer(self._origin_host, dtype=np.uint32)[np.frombuffer(self._origin, dtype=np.uint32)] \
            if n else np.zeros(0, dtype=np.uint32)
        live = np.flatnonzero(a == IN_LIST)
        nxt = np.full(n, -1, dtype=np.int32)
        if live.size:
            hl = hosts[live]
            order = np.argsort(hl, kind="stable")
            srt, hs = live[order], hl[order]
            same = hs[1:] == hs[:-1]
            nxt[srt[:-1][same]] = srt[1:][same]
            first = np.r_[True, ~same]
            last = np.r_[~same, True]
            for h, i in zip(hs[first].tolist(), srt[first].tolist()):
                self._head[h] = i
            for h, i in zip(hs[last].tolist(), srt[last].tolist()):
                self._tail[h] = i
        self._next = array("i", nxt.tobytes())
        self._marked = set(np.unique(hosts[live]).tolist()) if live.size else set()
        pend = np.bincount(hosts[live].astype(np.int64), minlength=nh) if live.size else np.zeros(nh, np.int64)
        self._hpend = array("i", pend.astype(np.int32).tobytes())
        self._work_changed = set(np.flatnonzero(pend).tolist())
        # chunk bookkeeping: live counts, reclaim chunks whose URLs are all completed
        pos = np.frombuffer(self._pos, dtype=np.uint32 if self._pos.typecode == "I" else np.uint64)
        counts = np.bincount((pos[a < COMPLETED] >> CHUNK_BITS).astype(np.int64), minlength=len(self._chunks))
        self._chunk_live = counts.tolist()
        for c in range(len(self._chunks) - 1):
            if self._chunk_live[c] == 0:
                self._chunks[c] = None
        self.lo = 0
        self._win_heap = []
        self._advance_lo()
        return hosts

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
