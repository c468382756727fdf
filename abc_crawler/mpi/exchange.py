"""Every MPI collective of the crawler, in one place.

One superstep exchange (:class:`SuperstepExchange`) is two rounds of
nonblocking collectives, so a rank keeps fetching while it waits for slower
ranks (a rank waiting in a blocking MPICH collective spins at 100 % CPU and
starves the others when ranks outnumber cores):

1. ``Ialltoall`` of the per-destination byte counts, ``Iallreduce`` of the
   status vector (work left, pages, stop flags, …), ``Igather`` of the
   report sizes to rank 0 and ``Iallgather`` of the shared-buffer sizes;
2. ``Ialltoallv`` of the URL bytes, ``Igatherv`` of the reports (pages and
   links this rank processed) to rank 0 and ``Iallgatherv`` of the buffers
   every rank sends to all (robots.txt answers, :mod:`abc_crawler.net.robots`).

With ``--dashboard`` each round also gathers every rank's *vitals* to rank 0
(their sizes, then the bytes: a few hundred per rank,
:mod:`abc_crawler.dashboard.vitals`); every rank passes vitals then, or none.

URLs travel as one UTF-8 buffer per destination (``\\n``-terminated lines) in
NumPy arrays, never as pickled lists. Control messages (settings, the final
per-rank summary) use the lowercase pickling calls. Bulk data that is not a
superstep's goes as bytes too: each rank's share of the previous session
from rank 0 (:meth:`Communicator.scatter_bytes`, ``Scatterv``) and each
rank's validator rows to rank 0 at the end (:meth:`Communicator.gather_bytes`,
``Gatherv``).

At the end of a session, ``--gather-warc`` streams files to rank 0 with
point-to-point messages (:meth:`Communicator.send_files_to_root`,
:meth:`Communicator.recv_files_from`): rank 0 serves one rank at a time; each
file is its length (``int64``) then chunks of at most ``chunk_bytes``, two in
flight, so a file of any size crosses with bounded memory.
"""
from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

__all__ = ["Communicator", "SuperstepExchange", "GATHER_CHUNK_BYTES", "EXCHANGE_POLL_MIN", "EXCHANGE_POLL_MAX"]

GATHER_CHUNK_BYTES = 4 << 20            # one message of a streamed file
#: how often a rank waiting for its superstep's exchange tests it: MPI's nonblocking collectives
#: progress only inside MPI calls, so each of their stages waits for every rank's next test. From
#: 0.5 ms, doubling while nothing happens, to 2 ms (a fixed 5 ms before: in the 8-rank lab crawl of
#: docs/BENCHMARKS.md a rank's time in exchanges fell from 3.11 to 2.45 s, the crawl's wall time by
#: 11 %, at the same CPU)
EXCHANGE_POLL_MIN, EXCHANGE_POLL_MAX = 0.0005, 0.002
_TAG_GO, _TAG_LEN, _TAG_DATA = 7301, 7302, 7303      # 71xx: clock samples; 72xx: kept for crash reports


def _wait(req) -> None:
    """Complete a request without spinning the CPU (short sleeps, backing off to 1 ms)."""
    pause = 0.00005
    while not req.Test():
        time.sleep(pause)
        pause = min(pause * 2, 0.001)

#: tests of a request between two yields of the core in :func:`_spin` (a test is 0.5–1 µs: some
#: 25–50 µs of polling, several round trips of two ranks that each have a core)
SPIN_TESTS = 50


def _spin(req, tests: int = SPIN_TESTS) -> None:
    """Complete a request by testing it tightly (the clock samples' round trip), yielding the core
    after every ``tests`` tests: with more ranks than cores the partner may be waiting for this
    core, and without the yield the rank would spin until the scheduler took the core away (a
    time slice of milliseconds, every sample: CPU spent, and a round trip the length of a slice)."""
    n = 0
    while not req.Test():
        n += 1
        if n >= tests:
            os.sched_yield()
            n = 0


#: point-to-point tags of the crash protocol (:mod:`abc_crawler.store.crash`)
TAG_CRASH, TAG_CRASH_ACK = 7201, 7202
#: point-to-point tag of phase-slot leases (:mod:`abc_crawler.sched.phases`)
TAG_LEASE = 7203


class SuperstepExchange:
    """One in-flight superstep exchange; drive it with :meth:`test`."""

    def __init__(self, comm: MPI.Comm, payloads: list[bytes], status: np.ndarray, report: bytes,
                 shared: bytes = b"", vitals: bytes | None = None):
        self.comm = comm
        k = comm.Get_size()
        if len(payloads) != k:
            raise ValueError(f"need one payload per rank ({k}), got {len(payloads)}")
        self.payloads = payloads
        self.report = np.frombuffer(report, dtype=np.uint8) if report else np.zeros(0, np.uint8)
        self.send_counts = np.array([len(p) for p in payloads], dtype=np.int64)
        self.recv_counts = np.zeros(k, dtype=np.int64)
        self.status_in = np.ascontiguousarray(status, dtype=np.int64)
        self.status_out = np.zeros_like(self.status_in)
        self.report_len = np.array([self.report.size], dtype=np.int64)
        self.report_lens = np.zeros(k, dtype=np.int64) if comm.Get_rank() == 0 else None
        self.shared = np.frombuffer(shared, dtype=np.uint8) if shared else np.zeros(0, np.uint8)
        self.shared_len = np.array([self.shared.size], dtype=np.int64)
        self.shared_lens = np.zeros(k, dtype=np.int64)
        self._reqs = [
            comm.Ialltoall([self.send_counts, MPI.INT64_T], [self.recv_counts, MPI.INT64_T]),
            comm.Iallreduce([self.status_in, MPI.INT64_T], [self.status_out, MPI.INT64_T], op=MPI.SUM),
            comm.Igather([self.report_len, MPI.INT64_T],
                         [self.report_lens, MPI.INT64_T] if self.report_lens is not None else None, root=0),
            comm.Iallgather([self.shared_len, MPI.INT64_T], [self.shared_lens, MPI.INT64_T]),
        ]
        # the dashboard's vitals (issue 24): the same collective on every rank or on none
        self.vitals_out = None
        self.vitals: list[bytes] | None = None         # rank 0: what each rank sent
        if vitals is not None:
            self.vitals_out = np.frombuffer(vitals, dtype=np.uint8) if vitals else np.zeros(0, np.uint8)
            self.vitals_len = np.array([self.vitals_out.size], dtype=np.int64)
            self.vitals_lens = np.zeros(k, dtype=np.int64) if comm.Get_rank() == 0 else None
            self._reqs.append(comm.Igather([self.vitals_len, MPI.INT64_T], [self.vitals_lens, MPI.INT64_T]
                                           if self.vitals_lens is not None else None, root=0))
        self._round = 1
        self.received: list[bytes] | None = None
        self.shared_in: list[bytes] | None = None     # what each rank sent to all
        self.reports: list[bytes] | None = None
        self.t_start = time.monotonic()

    def _start_round2(self) -> None:
        comm = self.comm
        k = comm.Get_size()
        sdispl = np.zeros(k, dtype=np.int64)
        np.cumsum(self.send_counts[:-1], out=sdispl[1:])
        rdispl = np.zeros(k, dtype=np.int64)
        np.cumsum(self.recv_counts[:-1], out=rdispl[1:])
        self._sendbuf = np.frombuffer(b"".join(self.payloads), dtype=np.uint8) if self.send_counts.sum() else np.zeros(1, np.uint8)
        self._recvbuf = np.empty(max(1, int(self.recv_counts.sum())), dtype=np.uint8)
        self._rdispl = rdispl
        self._reqs = [comm.Ialltoallv([self._sendbuf, (self.send_counts, sdispl), MPI.BYTE],
                                      [self._recvbuf, (self.recv_counts, rdispl), MPI.BYTE])]
        if comm.Get_rank() == 0:
            gdispl = np.zeros(k, dtype=np.int64)
            np.cumsum(self.report_lens[:-1], out=gdispl[1:])
            self._gdispl = gdispl
            self._gatherbuf = np.empty(max(1, int(self.report_lens.sum())), dtype=np.uint8)
            recv = [self._gatherbuf, (self.report_lens, gdispl), MPI.BYTE]
        else:
            recv = None
        send = self.report if self.report.size else np.zeros(0, np.uint8)
        self._reqs.append(comm.Igatherv([send, MPI.BYTE], recv, root=0))
        adispl = np.zeros(k, dtype=np.int64)
        np.cumsum(self.shared_lens[:-1], out=adispl[1:])
        self._adispl = adispl
        self._sharedbuf = np.empty(max(1, int(self.shared_lens.sum())), dtype=np.uint8)
        self._reqs.append(comm.Iallgatherv([self.shared, MPI.BYTE],
                                           [self._sharedbuf, (self.shared_lens, adispl), MPI.BYTE]))
        if self.vitals_out is not None:
            vrecv = None
            if comm.Get_rank() == 0:
                self._vdispl = np.zeros(k, dtype=np.int64)
                np.cumsum(self.vitals_lens[:-1], out=self._vdispl[1:])
                self._vitalsbuf = np.empty(max(1, int(self.vitals_lens.sum())), dtype=np.uint8)
                vrecv = [self._vitalsbuf, (self.vitals_lens, self._vdispl), MPI.BYTE]
            self._reqs.append(comm.Igatherv([self.vitals_out, MPI.BYTE], vrecv, root=0))
        self._round = 2

    def test(self) -> bool:
        """Progress the exchange; True once all of it has completed."""
        if self._round == 3:
            return True
        if not MPI.Request.Testall(self._reqs):
            return False
        if self._round == 1:
            self._start_round2()
            if not MPI.Request.Testall(self._reqs):
                return False
        raw = self._recvbuf.tobytes()
        offs = self._rdispl.tolist()
        cnts = self.recv_counts.tolist()
        self.received = [raw[o:o + c] for o, c in zip(offs, cnts)]
        a = self._sharedbuf.tobytes()
        self.shared_in = [a[o:o + c] for o, c in zip(self._adispl.tolist(), self.shared_lens.tolist())]
        if self.comm.Get_rank() == 0:
            g = self._gatherbuf.tobytes()
            self.reports = [g[o:o + c] for o, c in zip(self._gdispl.tolist(), self.report_lens.tolist())]
            if self.vitals_out is not None:
                v = self._vitalsbuf.tobytes()
                self.vitals = [v[o:o + c] for o, c in zip(self._vdispl.tolist(), self.vitals_lens.tolist())]
        self._round = 3
        return True

    @property
    def status(self) -> np.ndarray:
        return self.status_out


class Communicator:
    """The crawler's view of MPI: rank, size and the few collectives it uses."""

    def __init__(self, comm: MPI.Comm | None = None):
        self.comm = comm if comm is not None else MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self._sends: list = []            # point-to-point sends in flight (their buffers kept alive)

    def bcast(self, obj, root: int = 0):
        """Small control objects (settings, seeds) from rank 0 to all. The ranks first meet in a
        non-blocking barrier completed with short sleeps (:func:`_wait`), so ranks that wait here
        for long — e.g. while rank 0 closes the statistics and writes the session — sleep instead
        of spinning in MPI's progress loop (issue 37: ranks 1..K-1 spent 14 % of an 8-rank
        crawl's CPU there)."""
        if self.size > 1:
            _wait(self.comm.Ibarrier())
        return self.comm.bcast(obj, root=root)

    def ranks_on_node(self) -> int:
        """How many ranks run on this rank's machine (MPI's shared-memory split)."""
        if self.size == 1:
            return 1
        # the split is a blocking collective that spins while it waits: the ranks meet in a
        # sleeping barrier first (they reach this point as their imports finish, up to a second
        # apart when ranks outnumber cores)
        _wait(self.comm.Ibarrier())
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            return node.Get_size()
        finally:
            node.Free()

    def gather(self, obj, root: int = 0):
        """Small control objects (per-rank summaries) to rank 0."""
        return self.comm.gather(obj, root=root)

    def allgather(self, obj) -> list:
        """Small control objects from every rank to every rank (e.g. each rank's problems)."""
        return self.comm.allgather(obj)

    def gather_bytes(self, data: bytes, root: int = 0) -> list[bytes] | None:
        """Bulk data of every rank to ``root`` (e.g. each rank's validator rows at the end): the
        lengths by ``Gather``, the bytes by ``Gatherv``; ``root`` gets one ``bytes`` per rank,
        the others None."""
        comm = self.comm
        k = self.size
        mine = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, np.uint8)
        lens = np.zeros(k, dtype=np.int64) if self.rank == root else None
        comm.Gather([np.array([mine.size], np.int64), MPI.INT64_T], [lens, MPI.INT64_T] if lens is not None else None,
                    root=root)
        if self.rank != root:
            comm.Gatherv([mine, MPI.BYTE], None, root=root)
            return None
        displ = np.zeros(k, dtype=np.int64)
        np.cumsum(lens[:-1], out=displ[1:])
        buf = np.empty(max(1, int(lens.sum())), dtype=np.uint8)
        comm.Gatherv([mine, MPI.BYTE], [buf, (lens, displ), MPI.BYTE], root=root)
        raw = buf.tobytes()
        return [raw[o:o + n] for o, n in zip(displ.tolist(), lens.tolist())]

    def scatter_bytes(self, chunks: list[bytes] | None, root: int = 0) -> bytes:
        """Bulk data from ``root`` to every rank, a different part each (e.g. each rank's share of
        the previous session): ``chunks[r]`` goes to rank r (given on ``root`` only). The lengths by
        ``Scatter``, the bytes by ``Scatterv``."""
        comm = self.comm
        k = self.size
        n = np.zeros(1, dtype=np.int64)
        if self.rank == root:
            if chunks is None or len(chunks) != k:
                raise ValueError(f"need one chunk per rank ({k})")
            lens = np.array([len(c) for c in chunks], dtype=np.int64)
            displ = np.zeros(k, dtype=np.int64)
            np.cumsum(lens[:-1], out=displ[1:])
            comm.Scatter([lens, MPI.INT64_T], [n, MPI.INT64_T], root=root)
            send = np.frombuffer(b"".join(chunks), dtype=np.uint8) if lens.sum() else np.zeros(1, np.uint8)
            buf = np.empty(max(1, int(n[0])), dtype=np.uint8)
            comm.Scatterv([send, (lens, displ), MPI.BYTE], [buf, int(n[0]), MPI.BYTE], root=root)
        else:
            comm.Scatter(None, [n, MPI.INT64_T], root=root)
            buf = np.empty(max(1, int(n[0])), dtype=np.uint8)
            comm.Scatterv(None, [buf, int(n[0]), MPI.BYTE], root=root)
        return buf[:int(n[0])].tobytes()

    def send_files_to_root(self, paths: list[Path], chunk_bytes: int = GATHER_CHUNK_BYTES) -> None:
        """Not rank 0: once rank 0 says go, stream each file to it (length, then chunks).

        The length is the file's size when it is opened; a file that cannot be
        opened is sent as length -1 and no chunk.
        """
        go = np.zeros(1, np.int8)
        _wait(self.comm.Irecv([go, MPI.INT8_T], source=0, tag=_TAG_GO))
        for path in paths:
            try:
                fh = open(path, "rb")
            except OSError:
                _wait(self.comm.Isend([np.array([-1], np.int64), MPI.INT64_T], dest=0, tag=_TAG_LEN))
                continue
            with fh:
                left = os.fstat(fh.fileno()).st_size
                _wait(self.comm.Isend([np.array([left], np.int64), MPI.INT64_T], dest=0, tag=_TAG_LEN))
                in_flight: list = []         # (request, buffer): at most two chunks on the wire
                while left > 0:
                    buf = np.empty(min(chunk_bytes, left), np.uint8)
                    n = fh.readinto(buf)
                    if n < len(buf):         # the file shrank: pad, rank 0's checksum will tell
                        buf[n:] = 0
                    if len(in_flight) == 2:
                        _wait(in_flight.pop(0)[0])
                    in_flight.append((self.comm.Isend([buf, MPI.BYTE], dest=0, tag=_TAG_DATA), buf))
                    left -= len(buf)
                for req, _ in in_flight:
                    _wait(req)

    def recv_files_from(self, src: int, sinks: list, chunk_bytes: int = GATHER_CHUNK_BYTES) -> list[int]:
        """Rank 0: tell ``src`` to go and receive its files in order, each into ``sinks[i].write``.

        Returns each file's length as the sender announced it (-1: it could not open it).
        """
        self.comm.Send([np.ones(1, np.int8), MPI.INT8_T], dest=src, tag=_TAG_GO)
        lengths = []
        for sink in sinks:
            head = np.zeros(1, np.int64)
            _wait(self.comm.Irecv([head, MPI.INT64_T], source=src, tag=_TAG_LEN))
            length = int(head[0])
            lengths.append(length)
            sizes = [min(chunk_bytes, length - o) for o in range(0, max(length, 0), chunk_bytes)]
            bufs = [np.empty(min(chunk_bytes, max(length, 1)), np.uint8) for _ in range(2)]
            reqs = []
            for i, n in enumerate(sizes[:2]):
                reqs.append(self.comm.Irecv([bufs[i], n, MPI.BYTE], source=src, tag=_TAG_DATA))
            for i, n in enumerate(sizes):
                _wait(reqs[i])
                sink.write(memoryview(bufs[i % 2])[:n])
                if i + 2 < len(sizes):
                    reqs.append(self.comm.Irecv([bufs[i % 2], sizes[i + 2], MPI.BYTE], source=src, tag=_TAG_DATA))
        return lengths

    def allreduce_min(self, value: int) -> int:
        """The smallest of an integer over all ranks (control message)."""
        return self.comm.allreduce(value, op=MPI.MIN)

    def send_lease(self, dst: int, data: bytes) -> None:
        """Hand a host's phase slot to ``dst`` (a small message; never blocks)."""
        buf = np.frombuffer(data, dtype=np.uint8).copy()
        self._sends.append((self.comm.Isend([buf, MPI.BYTE], dest=dst, tag=TAG_LEASE), buf))
        if len(self._sends) > 64:
            self._reap_sends()

    def poll_leases(self) -> list[bytes]:
        """Leases other ranks sent this rank since the last call."""
        out = []
        status = MPI.Status()
        probe = self.comm.Iprobe
        # MPICH's Iprobe looks for a match first and runs the progress engine after it, so a
        # message that arrived since the last call is found only by the next one: every lease
        # waited for a second poll (bench/lease_latency.py, a poll every 10 ms: median 16.1 ms with
        # one probe, 5.4 ms with two). The second probe sees what the first one's progress took in.
        found = (probe(source=MPI.ANY_SOURCE, tag=TAG_LEASE, status=status)
                 or probe(source=MPI.ANY_SOURCE, tag=TAG_LEASE, status=status))
        while found:
            buf = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
            self.comm.Recv([buf, MPI.BYTE], source=status.Get_source(), tag=TAG_LEASE)
            out.append(buf.tobytes())
            found = probe(source=MPI.ANY_SOURCE, tag=TAG_LEASE, status=status)
        self._reap_sends()
        return out

    def _reap_sends(self) -> None:
        """Forget the lease sends that completed."""
        if self._sends:
            self._sends = [(r, b) for r, b in self._sends if not r.Test()]

    def close_leases(self) -> int:
        """At the end of a crawl (collective): take every lease still travelling, so that no
        message is left unreceived at MPI_Finalize; returns how many came too late to be used."""
        late = 0
        req = self.comm.Ibarrier()
        while not req.Test():
            late += len(self.poll_leases())
            time.sleep(0.001)
        late += len(self.poll_leases())
        for r, _ in self._sends:
            if not r.Test():
                r.Cancel()
                r.Wait()
        self._sends = []
        return late

    def barrier(self) -> None:
        """A barrier that does not spin: Ibarrier polled with short sleeps."""
        req = self.comm.Ibarrier()
        while not req.Test():
            self.check_crash()
            time.sleep(0.001)

    # -- the crash protocol (abc_crawler.store.crash) --------------------------------------
    def send_crash(self, record: dict, timeout: float) -> bool:
        """A failing rank other than 0: send its crash record to rank 0 and wait up to
        ``timeout`` seconds for rank 0 to confirm it wrote it; True if confirmed."""
        data = np.frombuffer(pickle.dumps(record), dtype=np.uint8)
        sreq = self.comm.Isend([data, MPI.BYTE], dest=0, tag=TAG_CRASH)
        ack = np.zeros(1, np.int8)
        rreq = self.comm.Irecv([ack, MPI.INT8_T], source=0, tag=TAG_CRASH_ACK)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if rreq.Test():
                return True
            time.sleep(0.005)
        return False

    def check_crash(self) -> None:
        """Rank 0: raise :class:`abc_crawler.store.crash.PeerCrashed` if another rank reported a crash."""
        if self.rank != 0 or self.size == 1:
            return
        status = MPI.Status()
        if not self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=TAG_CRASH, status=status):
            return
        buf = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
        self.comm.Recv([buf, MPI.BYTE], source=status.Get_source(), tag=TAG_CRASH)
        from ..store.crash import PeerCrashed

        raise PeerCrashed(pickle.loads(buf.tobytes()))

    def ack_crash(self, rank: int) -> None:
        """Rank 0: confirm to ``rank`` that its crash record is written."""
        if rank != self.rank:
            self.comm.Isend([np.ones(1, np.int8), MPI.INT8_T], dest=rank, tag=TAG_CRASH_ACK)

    def abort(self, code: int) -> None:
        """End every rank of the job (after a crash)."""
        self.comm.Abort(code)

    def clock_samples(self, local_clock, n: int = 8) -> list[tuple[float, float, float, float]]:
        """NTP-style samples (t0, t1, t2, t3) of this rank against rank 0 (rank 0 gets []).

        Rank 0 serves the ranks one at a time; a rank waiting for its turn
        sleeps between polls so it does not steal the CPU from the pair
        measuring; the pair itself polls tightly, so the round trip stays small,
        and gives its core up now and then (:func:`_spin`): with more ranks than
        cores its partner may be waiting for this very core.
        """
        comm = self.comm
        tag_go, tag_ping, tag_pong = 7101, 7102, 7103
        samples: list[tuple[float, float, float, float]] = []
        if self.rank == 0:
            ping = np.zeros(1, dtype=np.float64)
            pong = np.zeros(2, dtype=np.float64)
            for r in range(1, self.size):
                comm.Send([np.zeros(1, np.int8), MPI.INT8_T], dest=r, tag=tag_go)
                for _ in range(n):
                    _spin(comm.Irecv([ping, MPI.DOUBLE], source=r, tag=tag_ping))
                    pong[0] = local_clock()
                    pong[1] = local_clock()
                    comm.Send([pong, MPI.DOUBLE], dest=r, tag=tag_pong)
        else:
            go = np.zeros(1, np.int8)
            req = comm.Irecv([go, MPI.INT8_T], source=0, tag=tag_go)
            while not req.Test():
                time.sleep(0.0005)
            ping = np.zeros(1, dtype=np.float64)
            pong = np.zeros(2, dtype=np.float64)
            for _ in range(n):
                req = comm.Irecv([pong, MPI.DOUBLE], source=0, tag=tag_pong)
                ping[0] = t0 = local_clock()
                comm.Send([ping, MPI.DOUBLE], dest=0, tag=tag_ping)
                _spin(req)
                t3 = local_clock()
                samples.append((t0, float(pong[0]), float(pong[1]), t3))
        self.barrier()
        return samples

    def start_superstep(self, payloads: list[bytes], status: np.ndarray, report: bytes,
                        shared: bytes = b"", vitals: bytes | None = None) -> SuperstepExchange:
        """Start one superstep's exchange; ``vitals`` (the dashboard's, every rank or none) go to rank 0."""
        return SuperstepExchange(self.comm, payloads, status, report, shared, vitals)

    def wait(self, ex: SuperstepExchange, idle=None) -> None:
        """Complete ``ex`` without spinning: ``idle(pause)`` does useful work meanwhile for at most
        ``pause`` seconds (it returns how much it did, None when it had nothing to do, and then the
        rank sleeps ``pause``); the pause backs off from :data:`EXCHANGE_POLL_MIN` to
        :data:`EXCHANGE_POLL_MAX` while nothing is done, and starts again after work."""
        pause = EXCHANGE_POLL_MIN
        while not ex.test():
            self.check_crash()
            did = idle(pause) if idle is not None else None
            if did is None:
                time.sleep(pause)
            pause = EXCHANGE_POLL_MIN if did else min(pause * 2, EXCHANGE_POLL_MAX)
