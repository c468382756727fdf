"""An NTP-style shared clock over MPI: each rank's offset to rank 0's clock.

A rank sends its time t0; rank 0 notes t1 on receipt and t2 on reply; the rank
notes t3 on receipt of the reply. The offset of rank 0's clock against the
rank's is δ = ((t1 − t0) + (t2 − t3)) / 2 and the round trip
(t3 − t0) − (t2 − t1); of several samples the one with the lowest round trip is
kept (its error is at most half its round trip). The exchange of samples is in
:meth:`abc_crawler.mpi.exchange.Communicator.clock_samples`.

Examples
--------
>>> # rank clock 0.5 s behind rank 0, 2 ms each way
>>> estimate_offset([(10.0, 10.502, 10.503, 10.005), (11.0, 11.51, 11.511, 11.02)])
(0.5, 0.004)
"""
from __future__ import annotations

import time

__all__ = ["estimate_offset", "SharedClock"]


def estimate_offset(samples) -> tuple[float, float]:
    """(offset, round trip) of the sample with the lowest round trip."""
    best = None
    for t0, t1, t2, t3 in samples:
        rtt = (t3 - t0) - (t2 - t1)
        off = ((t1 - t0) + (t2 - t3)) / 2
        if best is None or rtt < best[1]:
            best = (off, rtt)
    if best is None:
        raise ValueError("no clock samples")
    return round(best[0], 9), round(best[1], 9)


class SharedClock:
    """This rank's clock (``local``), and rank 0's clock as estimated here (``shared``).

    ``skew`` shifts the local clock; it exists only so tests can inject an
    offset into one rank and check that the estimate recovers it.
    """

    #: assumed worst drift between two clocks (100 ppm; quartz is specified at ±20–50 ppm)
    DRIFT = 1e-4

    def __init__(self, skew: float = 0.0, reference: bool = False):
        self.skew = skew
        self.offset = 0.0
        self.rtt = 0.0
        self.syncs = 0
        self.reference = reference       # rank 0: the shared clock is this clock
        self._synced_at: float | None = None

    def local(self) -> float:
        return time.time() + self.skew

    def shared(self) -> float:
        return self.local() + self.offset

    def update(self, offset: float, rtt: float) -> None:
        self.offset = offset
        self.rtt = rtt
        self.syncs += 1
        self._synced_at = time.monotonic()

    def error_bound(self) -> float:
        """Seconds by which ``shared()`` may differ from rank 0's clock now.

        Half the round trip of the sample the offset came from, plus drift since
        that sample at :attr:`DRIFT`; 0 on rank 0; infinite before the first sync.
        """
        if self.reference:
            return 0.0
        if self._synced_at is None:
            return float("inf")
        return self.rtt / 2 + self.DRIFT * (time.monotonic() - self._synced_at)
