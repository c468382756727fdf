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


class PhaseClock:
    """Which phase a rank may serve now, and until when (pure, given shared-clock times)."""

    def __init__(self, rank: int, ranks: int, n_phases: int, phase_seconds: float, guard: float,
                 error=None):
        if n_phases < ranks:
            raise ValueError(f"phases: n-phases ({n_phases}) must be >= the number of ranks ({ranks})")
        if not 0 <= 2 * guard < phase_seconds:
            raise ValueError(f"phases: phase-guard ({guard}) must be less than half of phase-seconds ({phase_seconds})")
        self.rank = rank
        self.n_phases = n_phases
        self.phase_seconds = phase_seconds
        self.min_guard = guard
        self.error = error               # callable: this rank's clock error bound (seconds), or None
        self._cache: dict[str, int] = {}

    @property
    def guard(self) -> float:
        """Guard band now: the floor, or the clock's error bound when larger (≤ 40 % of a slot)."""
        if self.error is None:
            return self.min_guard
        return min(max(self.min_guard, self.error()), 0.4 * self.phase_seconds)

    def phase(self, host: str) -> int:
        p = self._cache.get(host)
        if p is None:
            p = self._cache[host] = phase_of(host, self.n_phases)
        return p

    def window(self, t: float) -> tuple[int, float, float] | None:
        """(active phase, usable start, usable end) of the slot containing shared time ``t``,
        or None when ``t`` is in a guard band."""
        s = slot_of(t, self.phase_seconds)
        a, b = slot_bounds(s, self.phase_seconds)
        g = self.guard
        lo, hi = a + g, b - g
        if not lo <= t < hi:
            return None
        return active_phase(self.rank, s, self.n_phases), lo, hi

    def next_start(self, t: float) -> float:
        """Shared time at which the next usable window begins (after ``t``)."""
        s = slot_of(t, self.phase_seconds)
        a, _ = slot_bounds(s, self.phase_seconds)
        g = self.guard
        if t < a + g:
            return a + g
        return a + self.phase_seconds + g
