"""The superstep exchange under MPI: payloads, status reduction and reports arrive intact.

Written to pass at any number of ranks (run at 1, 2 and 4 by `make test`).
"""
import numpy as np
import pytest

from budget import per_test

pytestmark = [pytest.mark.mpi, pytest.mark.timeout(per_test(__file__))]   # tests/mpi/budget.py


def _comm():
    from abc_crawler.mpi.exchange import Communicator
    return Communicator()


def test_alltoallv_payloads_status_and_reports():
    c = _comm()
    rng = np.random.default_rng(c.rank)
    payloads = []
    for dst in range(c.size):
        n = int(rng.integers(0, 5))
        payloads.append("".join(f"http://r{c.rank}.test/to{dst}/{i}\n" for i in range(n)).encode())
    status = np.array([c.rank, 1, 10 * c.rank], dtype=np.int64)
    report = f"report of {c.rank}".encode() * (c.rank + 1)
    ex = c.start_superstep(payloads, status, report)
    c.wait(ex)
    # every rank recomputes what every other rank sent it
    for src in range(c.size):
        rs = np.random.default_rng(src)
        expect = b""
        for dst in range(c.size):
            n = int(rs.integers(0, 5))
            if dst == c.rank:
                expect = "".join(f"http://r{src}.test/to{dst}/{i}\n" for i in range(n)).encode()
        assert ex.received[src] == expect
    k = c.size
    assert ex.status.tolist() == [k * (k - 1) // 2, k, 10 * k * (k - 1) // 2]
    if c.rank == 0:
        assert ex.reports == [f"report of {r}".encode() * (r + 1) for r in range(k)]
    else:
        assert ex.reports is None


def test_empty_exchange_and_idle_callback_runs():
    from abc_crawler.mpi.exchange import EXCHANGE_POLL_MAX, EXCHANGE_POLL_MIN
    c = _comm()
    calls = []
    ex = c.start_superstep([b""] * c.size, np.zeros(2, dtype=np.int64), b"")
    c.wait(ex, idle=lambda pause: calls.append(pause))
    assert all(r == b"" for r in ex.received)
    # the pause it was given: from 0.5 ms, doubling while nothing is done, at most 2 ms
    assert all(EXCHANGE_POLL_MIN <= p <= EXCHANGE_POLL_MAX for p in calls)
    assert calls[:3] == [EXCHANGE_POLL_MIN, 2 * EXCHANGE_POLL_MIN, 4 * EXCHANGE_POLL_MIN][:len(calls)]
    if c.rank == 0:
        assert ex.reports == [b""] * c.size


def test_payload_count_is_checked():
    c = _comm()
    from abc_crawler.mpi.exchange import SuperstepExchange
    with pytest.raises(ValueError, match="one payload per rank"):
        SuperstepExchange(c.comm, [b""] * (c.size + 1), np.zeros(1, np.int64), b"")


def test_barrier_and_control_messages():
    c = _comm()
    c.barrier()
    got = c.bcast({"seeds": ["http://a.test/"]} if c.rank == 0 else None)
    assert got == {"seeds": ["http://a.test/"]}
    gathered = c.gather(c.rank * 2)
    if c.rank == 0:
        assert gathered == [2 * r for r in range(c.size)]


def test_dashboard_vitals_reach_rank_0_in_rank_order():
    c = _comm()
    vitals = (f'{{"rank": {c.rank}}}' * (c.rank % 3)).encode()     # rank 0 (and every third) sends none
    ex = c.start_superstep([b""] * c.size, np.array([1], np.int64), b"r%d" % c.rank, vitals=vitals)
    c.wait(ex)
    if c.rank == 0:
        assert ex.vitals == [(f'{{"rank": {r}}}' * (r % 3)).encode() for r in range(c.size)]
        assert ex.reports == [b"r%d" % r for r in range(c.size)]
    else:
        assert ex.vitals is None
    # without the dashboard no vitals are gathered at all
    ex = c.start_superstep([b""] * c.size, np.array([1], np.int64), b"")
    c.wait(ex)
    assert ex.vitals is None and ex.status.tolist() == [c.size]


def test_leases_arrive_whole_and_in_order_from_every_rank():
    """Phase-slot leases (point to point, polled): every rank sends three to every rank, itself
    included; each arrives once, intact and in its sender's order, and none is left at the end."""
    import time
    c = _comm()
    for n in range(3):
        for dst in range(c.size):
            c.send_lease(dst, f"h{c.rank}.test\t{n}\t{c.rank + n / 10!r}\t0.0".encode())
    got: list[bytes] = []
    for _ in range(5000):                          # bounded: 5 s at most
        got += c.poll_leases()
        if len(got) >= 3 * c.size:
            break
        time.sleep(0.001)
    by_src: dict[str, list[int]] = {}
    for m in got:
        host, slot, _, _ = m.decode().split("\t")
        by_src.setdefault(host, []).append(int(slot))
    assert by_src == {f"h{r}.test": [0, 1, 2] for r in range(c.size)}
    assert c.close_leases() == 0                   # nothing still travelling


def test_clock_samples_recover_each_ranks_offset_to_rank_0():
    """NTP-style samples of every rank against rank 0 (tight polls that yield the core,
    ``exchange._spin``) give each rank's skew back within half the round trip it kept."""
    from abc_crawler.mpi.clock import SharedClock, estimate_offset

    c = _comm()
    skew = 0.0 if c.rank == 0 else 3.5 * c.rank - 2.0       # rank 0's clock is the reference
    clock = SharedClock(skew=skew)
    samples = c.clock_samples(clock.local)
    if c.rank == 0:
        assert samples == []
        return
    assert len(samples) == 8
    offset, rtt = estimate_offset(samples)
    assert 0 <= rtt < 0.25, rtt                                # the estimate is not vacuous
    assert abs(offset - (-skew)) <= rtt / 2 + 1e-6, (offset, skew, rtt)
