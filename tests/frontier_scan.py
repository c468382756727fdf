"""The window-scan Frontier as of commit ebe161a (before per-host queues): reference for tests and benchmarks.

``URLStates`` is an append-only array of the rank's own URLs, each with a state
(IN_LIST → IN_PROGRESS → COMPLETED, or STALLED when its host could not be
reached). The scheduler scans a sliding window of it, starting at the first
entry not yet completed, and pushes IN_LIST URLs into the ``Bucket``.

The Bucket has ``n_columns`` (a prime) × ``n_rows`` elements. A host hashes to
one column; an element holds one host's list of up to L URLs and moves
FREE → QUEUING → FETCHING → TIMEWAIT → FREE. A host occupies at most one
element at a time, so a rank has at most one connection per host. An element
is dispatched when full, or when it has waited ``flush_seconds`` (a departure
from the paper, which waits for a full list: small hosts would never be
fetched otherwise). After its batch, the host rests in TIMEWAIT for
max(politeness delay, robots Crawl-delay).

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
"""
from __future__ import annotations

from dataclasses import dataclass, field

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

_IN_LIST_BYTE = bytes([IN_LIST])


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

    def reset(self) -> None:
        self.state = FREE
        self.host = ""
        self.urls = []


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
        self.urls: list[str] = []
        self.hosts: list[str] = []
        self.states = bytearray()
        self.lo = 0                       # first entry that may not be COMPLETED
        self.elements = [[Element(c, r) for r in range(n_rows)] for c in range(n_columns)]
        self.by_host: dict[str, Element] = {}   # hosts that hold an element (not FREE)
        self.batch_limit: dict[str, int] = {}   # per-host L override (e.g. 1 when Crawl-delay is set)
        self.blocked_until: dict[str, float] = {}  # hosts not to be scheduled before a time (robots back-off)
        self.n_in_list = 0
        self.n_in_progress = 0
        self.n_completed = 0
        self.collisions = 0               # URLs that found their column full during a scan
        self._columns: dict[str, int] = {}

    # -- URLStates ---------------------------------------------------------
    def add(self, url: str, host: str) -> int:
        """Append a new URL (the caller has done the URL-seen test); return its index."""
        self.urls.append(url)
        self.hosts.append(host)
        self.states.append(IN_LIST)
        self.n_in_list += 1
        return len(self.urls) - 1

    def complete(self, idx: int, stalled: bool = False) -> None:
        """Mark a URL done (fetched, failed, disallowed); it is never scheduled again."""
        old = self.states[idx]
        if old == IN_PROGRESS:
            self.n_in_progress -= 1
        elif old == IN_LIST:
            self.n_in_list -= 1
        else:
            raise ValueError(f"URL #{idx} completed twice")
        self.states[idx] = STALLED if stalled else COMPLETED
        self.n_completed += 1
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

    def _advance_lo(self) -> None:
        st = self.states
        n = len(st)
        lo = self.lo
        while lo < n and st[lo] >= COMPLETED:
            lo += 1
        self.lo = lo

    @property
    def pending(self) -> int:
        """URLs not completed (IN_LIST or IN_PROGRESS)."""
        return self.n_in_list + self.n_in_progress

    # -- Bucket ------------------------------------------------------------
    def column_of(self, host: str) -> int:
        c = self._columns.get(host)
        if c is None:
            c = self._columns[host] = xxhash.xxh3_64_intdigest(host.encode()) % self.n_columns
        return c

    def _element_for(self, host: str, now: float) -> Element | None:
        e = self.by_host.get(host)
        if e is not None:
            if e.state == QUEUING and len(e.urls) < self.batch_limit.get(host, self.batch_urls):
                return e
            return None                    # busy: FETCHING, TIMEWAIT or full
        if self.blocked_until.get(host, 0.0) > now:
            return None
        for e in self.elements[self.column_of(host)]:
            if e.state == FREE:
                e.state = QUEUING
                e.host = host
                e.urls = []
                e.since = now
                self.by_host[host] = e
                return e
        self.collisions += 1
        return None

    def schedule(self, now: float, admit=None) -> int:
        """Scan the window once and push IN_LIST URLs into the Bucket.

        ``admit(host) -> bool`` can veto hosts (e.g. not in the active phase).
        Returns the number of URLs placed.
        """
        self._release_timewait(now)
        st = self.states
        end = min(len(st), self.lo + self.window)
        pos = self.lo
        placed = 0
        skip: set[str] = set()
        while True:
            pos = st.find(_IN_LIST_BYTE, pos, end)
            if pos < 0:
                break
            host = self.hosts[pos]
            if host not in skip:
                if admit is not None and not admit(host):
                    skip.add(host)
                else:
                    e = self._element_for(host, now)
                    if e is None:
                        skip.add(host)
                    else:
                        e.urls.append(pos)
                        st[pos] = IN_PROGRESS
                        self.n_in_list -= 1
                        self.n_in_progress += 1
                        placed += 1
            pos += 1
        return placed

    def evict(self, predicate) -> int:
        """QUEUING elements whose host matches ``predicate`` give their URLs back and become FREE."""
        n = 0
        for host, e in list(self.by_host.items()):
            if e.state == QUEUING and predicate(host):
                for idx in e.urls:
                    self.release(idx)
                    n += 1
                del self.by_host[host]
                e.reset()
        return n

    def _release_timewait(self, now: float) -> None:
        for host, e in list(self.by_host.items()):
            if e.state == TIMEWAIT and e.until <= now:
                del self.by_host[host]
                e.reset()

    def ready(self, now: float, limit: int | None = None) -> list[Element]:
        """QUEUING elements that are full or aged; they move to FETCHING."""
        out = []
        for host, e in self.by_host.items():
            if e.state != QUEUING or not e.urls:
                continue
            if len(e.urls) >= self.batch_limit.get(host, self.batch_urls) or now - e.since >= self.flush_seconds:
                out.append(e)
                if limit is not None and len(out) >= limit:
                    break
        for e in out:
            e.state = FETCHING
        return out

    def finish(self, e: Element, now: float, rest: float) -> None:
        """A batch ended: the host rests ``rest`` seconds in TIMEWAIT."""
        if e.state != FETCHING:
            raise ValueError(f"element of {e.host} finished while {e.state}")
        e.state = TIMEWAIT
        e.urls = []
        e.until = now + rest
        if rest <= 0:
            del self.by_host[e.host]
            e.reset()

    def next_wakeup(self, now: float, queuing: bool = True) -> float | None:
        """Earliest time at which waiting work becomes schedulable, if any.

        ``queuing=False`` leaves out partial elements reaching their flush time
        (useless while no element can be started).
        """
        t = None
        for host, e in self.by_host.items():
            if e.state == TIMEWAIT:
                c = e.until
            elif queuing and e.state == QUEUING and e.urls:
                c = e.since + self.flush_seconds
            else:
                continue
            t = c if t is None or c < t else t
        for host, until in self.blocked_until.items():
            if until > now:
                t = until if t is None or until < t else t
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
