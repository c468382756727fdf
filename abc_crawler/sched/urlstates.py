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

from ..arrays import distinct
from .overflow import Overflowing

__all__ = ["URLStates", "IN_LIST", "IN_PROGRESS", "COMPLETED", "STALLED", "CHUNK_BITS", "CHUNK"]

# URLStates (one byte per URL)
IN_LIST, IN_PROGRESS, COMPLETED, STALLED = 0, 1, 2, 3
CHUNK_BITS = 20                      # path text in 1 MiB chunks; position = chunk << 20 | offset
CHUNK = 1 << CHUNK_BITS
_OFF_MASK = CHUNK - 1
#: the largest value of a ``uint8`` / ``uint16`` fact column (values saturate there)
MAX_U8, MAX_U16 = 255, 65535
#: least completed URLs dropped from the columns' front at once (and at least the URLs after them)
TRIM_MIN = 1 << 16


class _URLView:
    """``frontier.urls[i]``: the URL text, rebuilt from its origin and path."""

    def __init__(self, f: "URLStates"):
        self._f = f

    def __getitem__(self, i: int) -> str:
        return self._f.url(i)

    def __len__(self) -> int:
        return len(self._f)


class URLStates(Overflowing):
    """The URLs of one rank, their states and per-host FIFOs (past the memory share, a host's later
    URLs wait on disk: :class:`~abc_crawler.sched.overflow.Overflowing`)."""

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
        # the completed prefix dropped from the columns (trim_completed): column j is URL base + j
        self.base = 0
        self.trim_completed = False
        self.keep_increments = True       # checkpoints read the columns from _mark_urls: keep them
        self.trim_min = TRIM_MIN
        self.on_trim = None               # f(base): URLs below base were dropped

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
        self._set_facts(i, hops, depth, sitemap)
        return i

    def _set_facts(self, i: int, hops: int, depth: int, sitemap: bool) -> None:
        """The facts URL ``i`` came with, into its columns (saturated)."""
        j = i - self.base
        if hops:
            self.hops[j] = min(hops, MAX_U8)
        if depth:
            self.depth[j] = min(depth, MAX_U16)
        if sitemap:
            self.sitemap[j] = 1

    def tries(self, idx: int) -> int:
        """Which request of URL ``idx`` the next one is: 1 + its retries and slot-end cuts."""
        j = idx - self.base
        return 1 + self.attempts[j] + self.cuts[j] + self.free_cuts[j]

    def count_retry(self, idx: int) -> int:
        """One more retry of URL ``idx``; its retries so far."""
        j = idx - self.base
        n = self.attempts[j] = min(self.attempts[j] + 1, MAX_U8)
        return n

    def count_cut(self, idx: int, counted: bool) -> tuple[int, int]:
        """One more slot-end cut of URL ``idx`` (``counted``: its own fault); its ``(counted,
        free)`` cuts so far."""
        col = self.cuts if counted else self.free_cuts
        j = idx - self.base
        col[j] = min(col[j] + 1, MAX_U8)
        return self.cuts[j], self.free_cuts[j]

    def was_cut(self, idx: int) -> bool:
        """URL ``idx``'s last request was cut at a slot's end and it waits to be asked again."""
        j = idx - self.base
        return bool(self.cuts[j] or self.free_cuts[j])

    def cut_and_left(self) -> int:
        """URLs whose request was cut at a slot's end and that were not completed since."""
        st = np.frombuffer(self.states, dtype=np.uint8)
        cut = (np.frombuffer(self.cuts, dtype=np.uint8) > 0) | (np.frombuffer(self.free_cuts, dtype=np.uint8) > 0)
        return int(np.count_nonzero(cut & (st < COMPLETED)))

    def clear_cuts(self, idx: int) -> None:
        """URL ``idx`` had an answer (or its cuts made a failure): its next request, if any, is
        cut afresh."""
        j = idx - self.base
        self.cuts[j] = self.free_cuts[j] = 0

    # -- a URL's facts, by its index (the columns start at ``base``) ----------------------------
    def hops_of(self, idx: int) -> int:
        return self.hops[idx - self.base]

    def depth_of(self, idx: int) -> int:
        return self.depth[idx - self.base]

    def is_sitemap(self, idx: int) -> bool:
        return bool(self.sitemap[idx - self.base])

    def attempts_of(self, idx: int) -> int:
        return self.attempts[idx - self.base]

    def state(self, idx: int) -> int:
        return self.states[idx - self.base]

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
        i = self.base + len(self.states)
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
            self._next[t - self.base] = i
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
        j = idx - self.base
        if j < 0:
            raise KeyError(f"URL #{idx} was completed and its text reclaimed")
        p = self._pos[j]
        c = p >> CHUNK_BITS
        chunk = self._chunks[c]
        if chunk is None:
            raise KeyError(f"URL #{idx} was completed and its text reclaimed")
        end = self._chunk_used[c]
        if j + 1 < len(self._pos):
            q = self._pos[j + 1]
            if q >> CHUNK_BITS == c:
                end = q & _OFF_MASK
        return self._origin_prefix[self._origin[j]] + chunk[p & _OFF_MASK:end].decode()

    @property
    def urls(self) -> _URLView:
        return _URLView(self)

    def host(self, idx: int) -> str:
        return self._host_names[self._origin_host[self._origin[idx - self.base]]]

    def __len__(self) -> int:
        """URLs ever added (those dropped from the columns' front included)."""
        return self.base + len(self.states)

    @property
    def n_hosts(self) -> int:
        return len(self._host_names)

    def complete(self, idx: int, stalled: bool = False) -> None:
        """Mark a URL done (fetched, failed, disallowed); it is never scheduled again."""
        j = idx - self.base
        old = self.states[j]
        if old == IN_PROGRESS:
            self.n_in_progress -= 1
        elif old == IN_LIST:
            self.n_in_list -= 1          # its FIFO node is skipped when reached
        else:
            raise ValueError(f"URL #{idx} completed twice")
        self.states[j] = STALLED if stalled else COMPLETED
        self.n_completed += 1
        h = self._origin_host[self._origin[j]]
        self._hpend[h] -= 1
        if self._hpend[h] == 0:
            self._work_changed.add(h)
        c = self._pos[j] >> CHUNK_BITS
        live = self._chunk_live[c] = self._chunk_live[c] - 1
        if live == 0 and c < len(self._chunks) - 1:
            self._chunks[c] = None        # every URL of the chunk is done: its text goes
        if idx == self.lo:
            self._advance_lo()

    def release(self, idx: int) -> None:
        """Put an IN_PROGRESS URL back to IN_LIST (its batch was cut short)."""
        j = idx - self.base
        if self.states[j] != IN_PROGRESS:
            raise ValueError(f"URL #{idx} is not in progress")
        self.states[j] = IN_LIST
        self.n_in_progress -= 1
        self.n_in_list += 1
        if idx < self.lo:
            self.lo = idx
        h = self._origin_host[self._origin[j]]
        self._fifo_insert(h, idx)
        self._marked.add(h)

    def _fifo_insert(self, h: int, idx: int) -> None:
        """Insert ``idx`` into host ``h``'s FIFO in URLStates order."""
        nxt = self._next
        b = self.base
        head = self._head[h]
        if head < 0:
            self._head[h] = self._tail[h] = idx
            nxt[idx - b] = -1
        elif idx < head:
            nxt[idx - b] = head
            self._head[h] = idx
        else:
            p = head
            while nxt[p - b] >= 0 and nxt[p - b] < idx:
                p = nxt[p - b]
            nxt[idx - b] = nxt[p - b]
            nxt[p - b] = idx
            if nxt[idx - b] < 0:
                self._tail[h] = idx

    def _advance_lo(self) -> None:
        st = self.states
        n = len(st)
        b = self.base
        j = self.lo - b
        while j < n and st[j] >= COMPLETED:
            j += 1
        self.lo = lo = j + b
        wh = self._win_heap
        end = lo + self.window
        while wh and wh[0][0] < end:
            self._marked.add(heapq.heappop(wh)[1])

    @property
    def changed(self) -> bool:
        """Some host's queue changed since the last schedule, which will visit it."""
        return bool(self._marked)

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
        m, n = self._mark_urls, len(self)
        b = self.base                     # (never above _mark_urls: trim keeps what is not written)
        mo = self._mark_origins
        inc = {"first": m, "origins": [(self._origin_prefix[o], self._host_names[self._origin_host[o]])
                                       for o in range(mo, len(self._origin_prefix))]}
        pos = np.frombuffer(self._pos, dtype=np.uint32 if self._pos.typecode == "I" else np.uint64)[m - b:n - b].astype(np.int64)
        inc["origin"] = np.frombuffer(self._origin, dtype=np.uint32)[m - b:n - b].copy()
        chunk = pos >> CHUNK_BITS
        off = pos & _OFF_MASK
        end = np.empty_like(off)
        if n > m:
            end[:-1] = np.where(chunk[1:] == chunk[:-1], off[1:], -1)
            end[-1] = -1
        parts = []
        lens = np.zeros(n - m, dtype=np.uint32)
        for c in distinct(chunk).tolist():
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
        inc["hops"] = np.frombuffer(self.hops, dtype=np.uint8)[m - b:n - b].copy()
        inc["depth"] = np.frombuffer(self.depth, dtype=np.uint16)[m - b:n - b].copy()
        inc["sitemap"] = np.frombuffer(self.sitemap, dtype=np.uint8)[m - b:n - b].copy()
        self._mark_urls, self._mark_origins = n, len(self._origin_prefix)
        return inc

    def apply_increment(self, inc: dict) -> None:
        """Append what ``take_increment`` returned (replaying a checkpoint log)."""
        if inc["first"] != len(self):
            raise ValueError(f"checkpoint increment starts at URL #{inc['first']}, frontier has {len(self)}")
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
        self._mark_urls, self._mark_origins = len(self), len(self._origin_prefix)

    def counts_for_checkpoint(self) -> dict:
        """The facts counted while URLs are fetched (retries, cuts), sparse: ``{column: (indices,
        values)}`` of the URLs where they are not 0."""
        out = {}
        for name in ("attempts", "cuts", "free_cuts"):
            a = np.frombuffer(getattr(self, name), dtype=np.uint8)
            nz = np.flatnonzero(a)
            out[name] = (nz.astype(np.int64) + self.base, a[nz].copy())
        return out

    def restore_counts(self, d: dict) -> None:
        """The sparse counts of :meth:`counts_for_checkpoint` (``{}``: all 0)."""
        n = len(self.states)
        for name in ("attempts", "cuts", "free_cuts"):
            col = bytearray(n)
            if name in d:
                idx, val = d[name]
                idx = np.asarray(idx, dtype=np.int64) - self.base
                keep = idx >= 0
                a = np.frombuffer(col, dtype=np.uint8)
                a[idx[keep]] = np.asarray(val, dtype=np.uint8)[keep]
            setattr(self, name, col)

    def restore_states(self, st: dict) -> np.ndarray:
        """After the increments were replayed: the checkpoint's states; URLs that were being
        fetched are IN_LIST again; FIFOs, counts and chunk bookkeeping are rebuilt. Returns the
        host id of every URL."""
        n = st["n"]
        if n != len(self.states) or self.base:
            raise ValueError(f"checkpoint has {n} URLs, the log {len(self)}")
        a = np.full(n, COMPLETED, dtype=np.uint8)       # URLs the checkpointed rank had dropped: done
        first = st.get("base", 0)
        a[first:] = np.frombuffer(st["states"], dtype=np.uint8)
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
        self._marked = set(hosts[live].tolist()) if live.size else set()
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

    def trim(self, held=()) -> int:
        """Drop the completed prefix from the columns (``trim_completed``): the URLs below the
        window's start, none that a checkpoint has yet to write (``keep_increments``) or that
        ``held`` (indices of URLs some part still holds) names; only when at least
        ``trim_min`` URLs and as many as stay go, so each URL is moved O(1) times. Returns how many."""
        if not self.trim_completed:
            return 0
        upto = self.lo
        if self.keep_increments:
            upto = min(upto, self._mark_urls)
        k = upto - self.base
        if k < self.trim_min or k < len(self.states) - k:
            return 0
        upto = min([upto, *held])
        k = upto - self.base
        if k < self.trim_min:
            return 0
        # a host's FIFO may still start at URLs completed while listed (skipped when the host is
        # visited): its head moves past the dropped ones first (all below upto are completed)
        heads = np.frombuffer(self._head, dtype=np.int32)
        nxt, b = self._next, self.base
        for h in np.flatnonzero((heads >= 0) & (heads < upto)).tolist():
            i = self._head[h]
            while 0 <= i < upto:
                i = nxt[i - b]
            self._head[h] = i
            if i < 0:
                self._tail[h] = -1
        for name in ("states", "_pos", "_origin", "_next", "hops", "depth", "sitemap", "attempts", "cuts",
                     "free_cuts"):
            del getattr(self, name)[:k]
        self.base = upto
        if self.on_trim is not None:
            self.on_trim(upto)
        return k
