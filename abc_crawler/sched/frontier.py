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

import xxhash

from .urlstates import COMPLETED, IN_LIST, IN_PROGRESS, STALLED, URLStates
from .visits import HostVisits

__all__ = [
    "IN_LIST", "IN_PROGRESS", "COMPLETED", "STALLED",
    "FREE", "QUEUING", "FETCHING", "TIMEWAIT",
    "Element", "Frontier", "URLStates",
]

# Element states
FREE, QUEUING, FETCHING, TIMEWAIT = "FREE", "QUEUING", "FETCHING", "TIMEWAIT"



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


class Frontier(URLStates):
    """URLStates + Bucket of one rank."""

    def __init__(self, *, n_columns: int = 199, n_rows: int = 8, batch_urls: int = 16,
                 window: int = 250_000, flush_seconds: float = 0.05):
        if n_columns < 1 or n_rows < 1 or batch_urls < 1 or window < 1:
            raise ValueError("bucket dimensions, batch size and window must be >= 1")
        super().__init__(window)
        self.n_columns = n_columns
        self.n_rows = n_rows
        self.batch_urls = batch_urls
        self.flush_seconds = flush_seconds
        self._hcol = array("i")           # per host: Bucket column
        self.elements = [[Element(c, r) for r in range(n_rows)] for c in range(n_columns)]
        self.by_host: dict[str, Element] = {}   # hosts that hold an element (not FREE)
        self._blk_heap: list[tuple[float, str]] = []  # (until, host): every back-off set
        # what this rank knows of each host (its rest, back-off, failures, robots.txt, slot leases)
        self.hosts = HostVisits()
        self.collisions = 0               # host visits that found their column full
        self._vetoed: set[int] = set()    # hosts admit() refused
        self._col_wait: dict[int, list[int]] = {}   # column -> hosts that found it full
        self._tw_heap: list[tuple[float, int, Element]] = []     # (until, epoch, element): TIMEWAIT ends
        self._flush_heap: list[tuple[float, int, Element]] = []  # (since, epoch, element): QUEUING ages
        self._ripe: list[tuple[int, Element]] = []               # (epoch, element): full or aged
        self._epoch = 0
        self._admit_last = None

    def _host_added(self, host: str) -> None:
        self._hcol.append(xxhash.xxh3_64_intdigest(host.encode()) % self.n_columns)

    def waiting_for_rest(self, now: float) -> bool:
        """Some host with work is resting (TIMEWAIT) or backing off now."""
        if self._tw_heap:
            return True
        return any(u > now for u, _ in self._blk_heap)

    def backoff_end(self) -> float:
        """When the latest back-off in force ends (0: none). Every back-off is in the heap until it
        ends (an entry a later ``block`` replaced is skipped), so this costs the back-offs set, not
        every host ever seen."""
        hosts = self.hosts
        return max((u for u, h in self._blk_heap if hosts[h].blocked_until == u), default=0.0)

    # -- Bucket ------------------------------------------------------------
    def column_of(self, host: str) -> int:
        h = self._host_ids.get(host)
        if h is not None:
            return self._hcol[h]
        return xxhash.xxh3_64_intdigest(host.encode()) % self.n_columns

    def block(self, host: str, until: float) -> None:
        """No element of ``host`` before ``until`` (a back-off, a lease's politeness rest)."""
        self.hosts[host].blocked_until = until
        heapq.heappush(self._blk_heap, (until, host))

    def hold_off(self, host: str, until: float, now: float, block: bool = True) -> None:
        """This rank sends ``host`` nothing before ``until`` (monotonic; a retry's back-off, a lease's
        rest): its rest ends no earlier, and (``block``) no element of it is scheduled before — never
        earlier than a rest or back-off it already has. ``block=False``: its rest only (a host with
        nothing queued here: a batch it gets later waits for it, and this rank's idle time is not
        counted as waiting for it)."""
        v = self.hosts[host]
        if until > v.next_at:
            v.next_at = until
        if block and until > now and until > v.blocked_until:
            self.block(host, until)

    def blocked_until(self, host: str) -> float:
        """When ``host``'s back-off ends (0: none set)."""
        v = self.hosts.get(host)
        return 0.0 if v is None else v.blocked_until

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
        if self.trim_completed:                      # the completed prefix out of the columns
            self.trim(min(e.urls) for e in self.by_host.values() if e.urls)
        if self._ov is not None and self._ov.n:
            self.refill()                            # URLs back from disk (they mark their hosts)
        if not self._marked:
            return 0
        marked = self._marked
        self._marked = set()
        ov = self._ov
        head_of = self._head
        if len(marked) > 1:
            order = sorted(marked, key=head_of.__getitem__)
        else:
            order = marked
        st = self.states                             # columns from self.base: URL i is st[i - b]
        nxt = self._next
        b = self.base
        names = self._host_names
        by_host = self.by_host
        visits = self.hosts
        wend = self.lo + self.window
        placed = 0
        for h in order:
            i = head_of[h]
            while i >= 0 and st[i - b] != IN_LIST:  # skip URLs completed while listed
                i = nxt[i - b]
            head_of[h] = i
            if i < 0:
                self._tail[h] = -1
                if ov is not None and ov.count(h):
                    self._starved.add(h)
                continue
            if i >= wend:
                heapq.heappush(self._win_heap, (i, h))
                continue
            host = names[h]
            if admit is not None and not admit(host):
                self._vetoed.add(h)
                continue
            limit = self.batch_urls
            e = by_host.get(host)
            if e is not None:
                if e.state != QUEUING or len(e.urls) >= limit:
                    continue                         # busy: marked again when its element is FREE
            else:
                v = visits.get(host)
                if v is not None and v.blocked_until > now:
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
                if st[i - b] == IN_LIST:
                    if i >= wend:
                        break
                    urls.append(i)
                    st[i - b] = IN_PROGRESS
                i = nxt[i - b]
            while i >= 0 and st[i - b] != IN_LIST:
                i = nxt[i - b]
            head_of[h] = i
            if i < 0:
                self._tail[h] = -1
                if ov is not None and ov.count(h):
                    self._starved.add(h)
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

    def counts(self) -> dict[str, int]:
        by_state = {FREE: 0, QUEUING: 0, FETCHING: 0, TIMEWAIT: 0}
        for col in self.elements:
            for e in col:
                by_state[e.state] += 1
        return {"in_list": self.n_in_list, "in_progress": self.n_in_progress,
                "completed": self.n_completed, "collisions": self.collisions,
                **{f"elements_{k.lower()}": v for k, v in by_state.items()}}

    # -- checkpoints ---------------------------------------------------------
    def state_for_checkpoint(self) -> dict:
        """The mutable part (the append-only part goes through ``take_increment``)."""
        return {"n": len(self), "base": self.base, "states": bytes(self.states), "collisions": self.collisions,
                "counts": self.counts_for_checkpoint(),
                "overflow": self._ov.checkpoint() if self._ov is not None else None}

    def checkpoint_written(self) -> None:
        """The checkpoint is durable (URLs on disk that it no longer lists may go)."""
        if self._ov is not None:
            self._ov.checkpoint_written()

    def close_overflow(self) -> None:
        """The crawl ended: the disk segments go."""
        if self._ov is not None:
            self._ov.close()

    def restore_state(self, st: dict) -> None:
        """After the increments were replayed: states of the checkpoint; URLs that were being
        fetched are fetched again, the Bucket starts empty, FIFOs and counts are rebuilt."""
        self.reset_bucket()
        self.restore_states(st)
        self.restore_overflow(st.get("overflow"))
        self.restore_counts(st.get("counts", {}))
        self.collisions = st["collisions"]

    def reset_bucket(self) -> None:
        """Every element FREE, no back-off: the state a resumed rank starts from."""
        for col in self.elements:
            for e in col:
                e.reset()
        self.by_host.clear()
        for v in self.hosts.values():
            v.blocked_until = 0.0
        self._tw_heap, self._flush_heap, self._ripe = [], [], []
        self._blk_heap.clear()
        self._col_wait.clear()
        self._vetoed.clear()
        self._admit_last = None
        self._marked = set(range(len(self._host_names)))
