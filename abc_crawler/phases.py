"""KSpider's phase swapping: no two ranks talk to one host in the same time slot.

Under page-level assignment the pages of one host are spread over all ranks.
Hosts are hashed into ``n_phases >= K`` phases; time is cut into slots of
``phase_seconds`` on a clock shared by all ranks (rank 0's, see
:mod:`abc_crawler.clock`); in slot ``t`` rank ``r`` serves only hosts of phase
``(r + t) mod n_phases``. Since ``r ↦ (r + t) mod n`` is injective for
``n >= K``, the ranks serve pairwise distinct phases in every slot.

A request never outlives its slot: no request starts in the last
``phase_guard`` seconds of a slot, and its curl timeout is capped at the slot
end; a request cut short by that cap is put back and retried in the host's next
slot (it is not counted as a failure). The guard band at both ends of a slot
covers the clock error: each rank uses the larger of ``phase_guard`` (a floor)
and its own measured error bound (half the round trip of its best clock
sample plus drift since then, :meth:`abc_crawler.clock.SharedClock.error_bound`).
Two ranks serving one phase in consecutive slots would have to err by more than
the sum of their guards to overlap, and each guard is at least its rank's
error. If the bound is not known (no sync yet) or too large, the guard is
capped at 40 % of the slot.

Warm-up. While the frontier fills, a URL found for a host of another phase
waits about half a rotation (``n_phases`` slots) before its owner may fetch
it, at every link depth. So the rotation starts fast: counted from an
``origin`` all ranks agree on, the first ``n_phases`` slots last
``phase_seconds / 2**warmup``, the next ``n_phases`` twice that, and so on
until slots reach ``phase_seconds`` (with ``warmup = 3`` and 1 s slots at
K = 8: 8 slots of 0.125 s, 8 of 0.25 s, 8 of 0.5 s, then 1 s slots; fewer
halvings when a slot would be shorter than 50 ms or four guard bands). Slot
numbers keep counting up by one, so the ranks still serve pairwise distinct
phases in every slot, and every rank serves every phase once at every length:
a page too slow for the short slots is cut at most ``warmup`` times per rank,
and those cuts do not count towards ``max_slot_cuts``.

Examples
--------
>>> [active_phase(r, slot=3, n_phases=4) for r in range(4)]
[3, 0, 1, 2]
>>> slot_of(10.7, 2.0), slot_bounds(5, 2.0)
(5, (10.0, 12.0))
"""
from __future__ import annotations

import math

import xxhash

__all__ = ["phase_of", "active_phase", "slot_of", "slot_bounds", "PhaseClock"]


def phase_of(host: str, n_phases: int) -> int:
    """Phase of a host: a real hash of the host name (with port) mod n_phases."""
    return xxhash.xxh3_64_intdigest(b"phase:" + host.encode()) % n_phases


def active_phase(rank: int, slot: int, n_phases: int) -> int:
    """The phase rank ``rank`` serves in slot ``slot``."""
    return (rank + slot) % n_phases


def slot_of(t: float, phase_seconds: float) -> int:
    """Slot number of a time on the shared clock."""
    return math.floor(t / phase_seconds)


def slot_bounds(slot: int, phase_seconds: float) -> tuple[float, float]:
    return slot * phase_seconds, (slot + 1) * phase_seconds


#: shortest warm-up slot, seconds (``phase_warmup`` is lowered until no slot is shorter)
MIN_WARM_SLOT = 0.05


class PhaseClock:
    """Which phase a rank may serve now, and until when (pure, given shared-clock times)."""

    def __init__(self, rank: int, ranks: int, n_phases: int, phase_seconds: float, guard: float,
                 error=None, warmup: int = 0, origin: float | None = None):
        if n_phases < ranks:
            raise ValueError(f"phases: n-phases ({n_phases}) must be >= the number of ranks ({ranks})")
        if warmup < 0:
            raise ValueError(f"phases: phase-warmup ({warmup}) must be >= 0")
        if not 0 <= 2 * guard < phase_seconds:
            raise ValueError(f"phases: phase-guard ({guard}) must be less than half of phase-seconds ({phase_seconds})")
        # no warm-up slot shorter than MIN_WARM_SLOT or than four guard bands: fewer halvings instead
        while warmup > 0 and phase_seconds / 2 ** warmup < max(MIN_WARM_SLOT, 4 * guard):
            warmup -= 1
        self.rank = rank
        self.n_phases = n_phases
        self.phase_seconds = phase_seconds
        self.min_guard = guard
        self.error = error               # callable: this rank's clock error bound (seconds), or None
        self.warmup = warmup
        self.origin: float | None = None
        self.set_origin(origin)
        self._cache: dict[str, int] = {}

    def set_origin(self, origin: float | None) -> None:
        """Start the warm-up at shared time ``origin`` (None: no warm-up, regular slots only).

        Before the origin the slots are the regular ones; the one containing the
        origin ends there (it may be too short to use), and the numbering goes on
        by one per slot from there, so every rank that knows the origin agrees on
        every slot.
        """
        if origin is None or self.warmup == 0:
            self.origin = None
            return
        self.origin = float(origin)
        self._base = slot_of(self.origin, self.phase_seconds) + 1
        self._warm_span = self.n_phases * self.phase_seconds * (1 - 2.0 ** -self.warmup)

    def slot(self, t: float) -> tuple[int, float, float]:
        """(slot number, start, end) of the slot containing shared time ``t``."""
        L = self.phase_seconds
        o = self.origin
        if o is None or t < o:
            s = slot_of(t, L)
            return s, s * L, (s + 1) * L if o is None else min((s + 1) * L, o)
        n, m = self.n_phases, self.warmup
        x = t - o
        if x >= self._warm_span:
            j = math.floor((x - self._warm_span) / L)
            a = o + self._warm_span + j * L
            return self._base + m * n + j, a, a + L
        # level k (0 .. m-1): n slots of L / 2**(m-k), starting at n * L * (2**(k-m) - 2**-m)
        k = min(m - 1, int(math.log2(x / (n * L * 2.0 ** -m) + 1)))
        while k > 0 and x < n * L * (2.0 ** (k - m) - 2.0 ** -m):
            k -= 1
        while k < m - 1 and x >= n * L * (2.0 ** (k + 1 - m) - 2.0 ** -m):
            k += 1
        lk = L * 2.0 ** (k - m)
        ck = n * L * (2.0 ** (k - m) - 2.0 ** -m)
        j = min(n - 1, math.floor((x - ck) / lk))
        a = o + ck + j * lk
        return self._base + k * n + j, a, a + lk

    def guard_for(self, length: float) -> float:
        """Guard band of a slot of ``length`` seconds: the floor, or the clock's error bound when
        larger, at most 40 % of the slot."""
        if self.error is None:
            return self.min_guard
        return min(max(self.min_guard, self.error()), 0.4 * length)

    @property
    def guard(self) -> float:
        """Guard band of a regular slot now."""
        return self.guard_for(self.phase_seconds)

    def phase(self, host: str) -> int:
        p = self._cache.get(host)
        if p is None:
            p = self._cache[host] = phase_of(host, self.n_phases)
        return p

    def window(self, t: float) -> tuple[int, float, float] | None:
        """(active phase, usable start, usable end) of the slot containing shared time ``t``,
        or None when ``t`` is in a guard band."""
        s, a, b = self.slot(t)
        g = self.guard_for(b - a)
        lo, hi = a + g, b - g
        if not lo <= t < hi:
            return None
        return active_phase(self.rank, s, self.n_phases), lo, hi

    def slot_length(self, t: float) -> float:
        _, a, b = self.slot(t)
        return b - a

    def next_start(self, t: float) -> float:
        """Shared time at which the next usable window begins (after ``t``)."""
        _, a, b = self.slot(t)
        g = self.guard_for(b - a)
        if t < a + g:
            return a + g
        # slots never get shorter, so half the shortest slot past b is inside the next one
        _, a2, b2 = self.slot(b + 0.5 * self.phase_seconds / 2 ** self.warmup)
        return a2 + self.guard_for(b2 - a2)
