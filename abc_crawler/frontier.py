"""The frontier of one rank: KSpider's URLStates array and Bucket (seed 004).

``URLStates`` is an append-only array of the rank's own URLs, each with a state
(IN_LIST → IN_PROGRESS → COMPLETED, or STALLED when its host could not be
reached). A sliding window of it, starting at the first entry not yet
completed, bounds what the scheduler may push into the ``Bucket``.

The Bucket has ``n_columns`` (a prime) × ``n_rows`` elements. A host hashes to
one column; an element holds one host's list of up to L URLs and moves
FREE → QUEUING → FETCHING → TIMEWAIT → FREE. A host occupies at most one
element at a time, so a rank has at most one connection per host. An element
is dispatched when full, or when it has waited ``flush_seconds`` (a departure
from the paper, which waits for a full list: small hosts would never be
fetched otherwise). After its batch, the host rests in TIMEWAIT for
max(politeness delay, robots Crawl-delay).

Scheduling costs O(hosts that changed), not O(URLs in the window): every host
keeps a FIFO of its IN_LIST URLs (in URLStates order, linked through an int32
array), and ``schedule`` visits only *marked* hosts — hosts that got a URL or
a URL back, whose element became FREE, whose column got a FREE element after
they found it full, whose back-off ended, that entered the window, or that
``admit`` may now accept (``readmit``). Hosts are visited in the order of their
oldest pending URL, as a window scan would meet them. TIMEWAIT ends, flush
times and back-offs are kept in heaps, so ``ready`` and ``next_wakeup`` do not
walk every element either.

Storage is columnar (about 13 bytes per URL plus its path): the URL's path and
query as UTF-8 in 1 MiB byte chunks, each allocated once at full size (a chunk
is freed once all its URLs are completed), a ``uint32`` position, a ``uint32`` origin id (``scheme://host[:port]``,
interned once, with its host), the state byte and the int32 FIFO link.

Every decision here is a pure function of the state and the ``now`` passed in,
so tests drive it without a clock or network.

Examples
--------
>>> f = Frontier(n_columns=7, n_rows=2, batch_urls=2, window=100, flush_seconds=1.0)
>>> for u in ["http://a.test/1", "http://a.test/2", "http://b.test/1"]:
...     _ = f.add(u, u.split("/")[2])
>>> f.schedule(now=0.0)
3
>>> [e.host for e in f.ready(now=0.0)]      # a.test is full; b.test waits for its flush
['a.test']
>>> [e.host for e in f.ready(now=1.0)]
['b.test']
>>> f.url(2)
'http://b.test/1'
"""
from __future__ import annotations

import heapq
from array import array
from dataclasses import dataclass, field

import numpy as np
import xxhash

__all__ = [
    "IN_LIST", "IN_PROGRESS", "COMPLETED", "STALLED",
    "FREE", "QUEUING", "FETCHING", "TIMEWAIT",
    "Element", "Frontier",
]

# URLStates (one byte per URL)
IN_LIST, IN_PROGRESS, COMPLETED, STALLED = 0, 1, 2, 3
# Element states
FREE, QUEUING, FETCHING, TIMEWAIT = "FREE", "QUEUING", "FETCHING", "TIMEWAIT"

CHUNK_BITS = 20                      # path text in 1 MiB chunks; position = chunk << 20 | offset
CHUNK = 1 << CHUNK_BITS
_OFF_MASK = CHUNK - 1


@dataclass
class Element:
    """One Bucket element: a host's batch of URL indices and its state."""

    column: int
    row: int
    state: str = FREE
    host: str = ""
    urls: list[int] = field(default_factory=list)
    since: float = 0.0        # when it entered QUEUING
    until: float = 0.0        # end of TIMEWAIT
    epoch: int = 0            # which occupation (heap entries of an earlier one are stale)

    def reset(self) -> None:
        self.state = FREE
        self.host = ""
        self.urls = []

    def __lt__(self, other: "Element") -> bool:      # heap ties (never equal epochs in practice)
        return (self.column, self.row) < (other.column, other.row)


class _Deadlines(dict):
    """``blocked_until``: host -> time; every assignment also goes into the frontier's heap."""

    def __init__(self, heap: list):
        super().__init__()
        self._heap = heap

    def __setitem__(self, host: str, until: float) -> None:
        super().__setitem__(host, until)
        heapq.heappush(self._heap, (until, host))

    def update(self, *a, **kw) -> None:
        for k, v in dict(*a, **kw).items():
            self[k] = v


class _URLView:
    """``frontier.urls[i]``: the URL text, rebuilt from its origin and path."""

    def __init__(self, f: "Frontier"):
        self._f = f

    def __getitem__(self, i: int) -> str:
        return self._f.url(i)

    def __len__(self) -> int:
        return len(self._f.states)


class Frontier:
    """URLStates + Bucket of one rank."""

    def __init__(self, *, n_columns: int = 199, n_rows: int = 8, batch_urls: int = 16,
                 window: int = 250_000, flush_seconds: float = 0.05):
        if n_columns < 1 or n_rows < 1 or batch_urls < 1 or window < 1:
            raise ValueError("bucket dimensions, batch size and window must be >= 1")
        self.n_columns = n_columns
        self.n_rows = n_rows
        self.batch_urls = batch_urls
        self.window = window
        self.flush_seconds = flush_seconds
        # -- URLStates, columnar ------------------------------------------------
        self.states = bytearray()
        self._pos = array("I")            # chunk << CHUNK_BITS | offset of the path
        self._origin = array("I")         # origin id
        self._next = array("i")           # next URL of the host's FIFO (-1: none)
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
        self._hcol = array("i")           # per host: Bucket column
        # -- scheduling state -----------------------------------------------------
        self.lo = 0                       # first entry that may not be COMPLETED
        self.elements = [[Element(c, r) for r in range(n_rows)] for c in range(n_columns)]
        self.by_host: dict[str, Element] = {}   # hosts that hold an element (not FREE)
        self.batch_limit: dict[str, int] = {}   # per-host L override (e.g. 1 when Crawl-delay is set)
        self._blk_heap: list[tuple[float, str]] = []  # (until, host): every back-off set
        self.blocked_until: dict[str, float] = _Deadlines(self._blk_heap)  # hosts not to be scheduled before a time
        self.n_in_list = 0
        self.n_in_progress = 0
        self.n_completed = 0
        self.collisions = 0               # host visits that found their column full
        self._marked: set[int] = set()    # host ids to visit at the next schedule()
        self._vetoed: set[int] = set()    # hosts admit() refused
        self._col_wait: dict[int, list[int]] = {}   # column -> hosts that found it full
        self._win_heap: list[tuple[int, int]] = []  # (head URL, host): hosts waiting for the window
        self._tw_heap: list[tuple[float, int, Element]] = []     # (until, epoch, element): TIMEWAIT ends
        self._flush_heap: list[tuple[float, int, Element]] = []  # (since, epoch, element): QUEUING ages
        self._ripe: list[tuple[int, Element]] = []               # (epoch, element): full or aged
        self._epoch = 0
        self._admit_last = None
        self._mark_urls = 0               # checkpoint increments: URLs / origins already written
        self._mark_origins = 0

    # -- URLStates ---------------------------------------------------------
    def add(self, url: str, host: str) -> int:
        """Append a new URL (the caller has done the URL-seen test); return its index."""
        s = url.find("/", url.find("://") + 3)
        if s < 0:
            s = len(url)
        prefix = url[:s]
        o = self._origin_ids.get(prefix)
        if o is None:
            o = self._new_origin(prefix, host)
        return self._append(o, url[s:].encode())

    def _new_origin(self, prefix: str, host: str) -> int:
        h = self._host_ids.get(host)
        if h is None:
            h = self._host_ids[host] = len(self._host_names)
            self._host_names.append(host)
            self._head.append(-1)
            self._tail.append(-1)
            self._hpend.append(0)
            self._hcol.append(xxhash.xxh3_64_intdigest(host.encode()) % self.n_columns)
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
        if c >= 4096 and self._pos.typecode == "I":
            self._pos = array("Q", self._pos)      # more than 4 GiB of paths: 64-bit positions
        self._pos.append(c << CHUNK_BITS | u)
        self._chunks[c][u:u + k] = path
        used[c] = u + k
        self._chunk_live[c] += 1
        self.states.append(IN_LIST)
        self._origin.append(o)
        self._next.append(-1)
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
        """URLs not completed (IN_LIST or IN_PROGRESS)."""
        return self.n_in_list + self.n_in_progress

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

    def waiting_for_rest(self, now: float) -> bool:
        """Some host with work is resting (TIMEWAIT) or backing off now."""
        if self._tw_heap:
            return True
        return any(u > now for u, _ in self._blk_heap)

    # -- Bucket ------------------------------------------------------------
    def column_of(self, host: str) -> int:
        h = self._host_ids.get(host)
        if h is not None:
            return self._hcol[h]
        return xxhash.xxh3_64_intdigest(host.encode()) % self.n_columns

    def readmit(self) -> None:
        """``admit`` may answer differently now (a new phase slot): hosts it refused are visited again."""
        self._marked |= self._vetoed
        self._vetoed.clear()

    def schedule(self, now: float, admit=None) -> int:
        """Push IN_LIST URLs of the hosts that changed into the Bucket.

        ``admit(host) -> bool`` can veto hosts (e.g. not in the active phase); a
        refused host is asked again after ``readmit()`` or with another ``admit``.
        Returns the number of URLs placed.
        """
        if admit != self._admit_last:
            self._admit_last = admit
            self.readmit()
        self._release_timewait(now)
        bh = self._blk_heap
        while bh and bh[0][0] <= now:
            h = self._host_ids.get(heapq.heappop(bh)[1])
            if h is not None:
                self._marked.add(h)
        if not self._marked:
            return 0
        marked = self._marked
        self._marked = set()
        head_of = self._head
        if len(marked) > 1:
            order = sorted(marked, key=head_of.__getitem__)
        else:
            order = marked
        st = self.states
        nxt = self._next
        names = self._host_names
        by_host = self.by_host
        blocked = self.blocked_until
        limits = self.batch_limit
        wend = self.lo + self.window
        placed = 0
        for h in order:
            i = head_of[h]
            while i >= 0 and st[i] != IN_LIST:      # skip URLs completed while listed
                i = nxt[i]
            head_of[h] = i
            if i < 0:
                self._tail[h] = -1
                continue
            if i >= wend:
                heapq.heappush(self._win_heap, (i, h))
                continue
            host = names[h]
            if admit is not None and not admit(host):
                self._vetoed.add(h)
                continue
            limit = limits.get(host, self.batch_urls) if limits else self.batch_urls
            e = by_host.get(host)
            if e is not None:
                if e.state != QUEUING or len(e.urls) >= limit:
                    continue                         # busy: marked again when its element is FREE
            else:
                until = blocked.get(host, 0.0) if blocked else 0.0
                if until > now:
                    continue                         # marked when the back-off ends (_blk_heap)
                c = self._hcol[h]
                for e in self.elements[c]:
                    if e.state == FREE:
                        break
                else:
                    self.collisions += 1
                    self._col_wait.setdefault(c, []).append(h)
                    continue
                self._epoch += 1
                e.state = QUEUING
                e.host = host
                e.urls = []
                e.since = now
                e.epoch = self._epoch
                by_host[host] = e
                heapq.heappush(self._flush_heap, (now, e.epoch, e))
            urls = e.urls
            n0 = len(urls)
            while i >= 0 and len(urls) < limit:
                if st[i] == IN_LIST:
                    if i >= wend:
                        break
                    urls.append(i)
                    st[i] = IN_PROGRESS
                i = nxt[i]
            while i >= 0 and st[i] != IN_LIST:
                i = nxt[i]
            head_of[h] = i
            if i < 0:
                self._tail[h] = -1
            elif i >= wend:
                heapq.heappush(self._win_heap, (i, h))
            k = len(urls) - n0
            placed += k
            if len(urls) >= limit:
                heapq.heappush(self._ripe, (e.epoch, e))
        self.n_in_list -= placed
        self.n_in_progress += placed
        return placed

    def _free(self, e: Element) -> None:
        """An element becomes FREE: its host and the hosts waiting for its column are visited again."""
        host = e.host
        del self.by_host[host]
        e.reset()
        h = self._host_ids.get(host)
        if h is not None and self._head[h] >= 0:
            self._marked.add(h)
        w = self._col_wait.pop(e.column, None)
        if w:
            self._marked.update(w)

    def evict(self, predicate) -> int:
        """QUEUING elements whose host matches ``predicate`` give their URLs back and become FREE."""
        n = 0
        for host, e in list(self.by_host.items()):
            if e.state == QUEUING and predicate(host):
                for idx in e.urls:
                    self.release(idx)
                    n += 1
                self._free(e)
        return n

    def _release_timewait(self, now: float) -> None:
        tw = self._tw_heap
        while tw and tw[0][0] <= now:
            until, ep, e = heapq.heappop(tw)
            if e.state == TIMEWAIT and e.epoch == ep and e.until <= now:
                self._free(e)

    def ready(self, now: float, limit: int | None = None, eager: bool = False) -> list[Element]:
        """QUEUING elements that are full or aged, oldest occupation first; they move to FETCHING.

        ``eager``: the caller has nothing in flight, so waiting for an element to fill
        gains nothing; when fewer than ``limit`` are full or aged, the oldest others go too.
        """
        fh = self._flush_heap
        ripe = self._ripe
        flush = self.flush_seconds
        while fh and now - fh[0][0] >= flush:
            since, ep, e = heapq.heappop(fh)
            if e.state == QUEUING and e.epoch == ep:
                heapq.heappush(ripe, (ep, e))
        out = []
        while ripe and (limit is None or len(out) < limit):
            ep, e = heapq.heappop(ripe)
            if e.state == QUEUING and e.epoch == ep and e.urls:
                e.state = FETCHING
                out.append(e)
        while eager and fh and (limit is None or len(out) < limit):
            since, ep, e = heapq.heappop(fh)
            if e.state == QUEUING and e.epoch == ep and e.urls:
                e.state = FETCHING
                out.append(e)
        return out

    def finish(self, e: Element, now: float, rest: float) -> None:
        """A batch ended: the host rests ``rest`` seconds in TIMEWAIT."""
        if e.state != FETCHING:
            raise ValueError(f"element of {e.host} finished while {e.state}")
        e.state = TIMEWAIT
        e.urls = []
        e.until = now + rest
        if rest <= 0:
            self._free(e)
        else:
            heapq.heappush(self._tw_heap, (e.until, e.epoch, e))

    def next_wakeup(self, now: float, queuing: bool = True) -> float | None:
        """Earliest time at which waiting work becomes schedulable, if any.

        ``queuing=False`` leaves out partial elements reaching their flush time
        (useless while no element can be started).
        """
        t = None
        tw = self._tw_heap
        while tw and not (tw[0][2].state == TIMEWAIT and tw[0][2].epoch == tw[0][1]):
            heapq.heappop(tw)
        if tw:
            t = tw[0][0]
        if queuing:
            fh = self._flush_heap
            while fh and not (fh[0][2].state == QUEUING and fh[0][2].epoch == fh[0][1] and fh[0][2].urls):
                heapq.heappop(fh)
            if fh:
                c = fh[0][0] + self.flush_seconds
                t = c if t is None or c < t else t
            rp = self._ripe                # full or aged, not taken yet (ready's limit)
            while rp and not (rp[0][1].state == QUEUING and rp[0][1].epoch == rp[0][0] and rp[0][1].urls):
                heapq.heappop(rp)
            if rp:
                c = rp[0][1].since + self.flush_seconds
                t = c if t is None or c < t else t
        if self._blk_heap:
            c = self._blk_heap[0][0]
            t = c if t is None or c < t else t
        return t

    def busy_elements(self) -> int:
        return sum(1 for e in self.by_host.values() if e.state == FETCHING)

    def counts(self) -> dict[str, int]:
        by_state = {FREE: 0, QUEUING: 0, FETCHING: 0, TIMEWAIT: 0}
        for col in self.elements:
            for e in col:
                by_state[e.state] += 1
        return {"in_list": self.n_in_list, "in_progress": self.n_in_progress,
                "completed": self.n_completed, "collisions": self.collisions,
                **{f"elements_{k.lower()}": v for k, v in by_state.items()}}

    def nbytes(self) -> int:
        """Bytes held by the per-URL columns and the path text (not the per-host tables)."""
        return (len(self.states) + self._pos.itemsize * len(self._pos) + 4 * len(self._origin)
                + 4 * len(self._next) + sum(len(c) for c in self._chunks if c is not None))

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
        for o, k in zip(inc["origin"].tolist(), inc["lens"].tolist()):
            self._append(o, text[p:p + k])
            p += k
        self._mark_urls, self._mark_origins = len(self.states), len(self._origin_prefix)

    def state_for_checkpoint(self) -> dict:
        """The mutable part (the append-only part goes through ``take_increment``)."""
        return {"n": len(self.states), "states": bytes(self.states), "collisions": self.collisions,
                "batch_limit": dict(self.batch_limit)}

    def restore_state(self, st: dict) -> None:
        """After the increments were replayed: states of the checkpoint; URLs that were being
        fetched are fetched again, the Bucket starts empty, FIFOs and counts are rebuilt."""
        n = st["n"]
        if n != len(self.states):
            raise ValueError(f"checkpoint has {n} URLs, the log {len(self.states)}")
        a = np.frombuffer(st["states"], dtype=np.uint8).copy()
        a[a == IN_PROGRESS] = IN_LIST
        self.states = bytearray(a.tobytes())
        self.collisions = st["collisions"]
        self.batch_limit = dict(st["batch_limit"])
        self.n_in_list = int(np.count_nonzero(a == IN_LIST))
        self.n_in_progress = 0
        self.n_completed = n - self.n_in_list
        self.reset_bucket()
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

    def reset_bucket(self) -> None:
        """Every element FREE, no back-off: the state a resumed rank starts from."""
        for col in self.elements:
            for e in col:
                e.reset()
        self.by_host.clear()
        self.blocked_until.clear()
        self._tw_heap, self._flush_heap, self._ripe = [], [], []
        self._blk_heap.clear()
        self._col_wait.clear()
        self._vetoed.clear()
        self._admit_last = None
        self._marked = set(range(len(self._host_names)))
