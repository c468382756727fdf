"""How long a phase-slot lease takes from one rank to another, polled as the crawl polls it.

    .venv/bin/python bench/lease_latency.py [--leases 200] [--runs 3] [--out bench/results/lease_latency.json]

The script starts itself under ``mpiexec -n 2``. Rank 1 sends leases to rank 0 (``Communicator.
send_lease``) at random moments, 0 to 20 ms after the two ranks meet; rank 0 polls every
``LEASE_POLL_MIN`` (10 ms), as the fetch loop of a rank under phase slots of up to 1 s does,
and notes when each lease is taken (both ranks on one machine, one clock). Two ways of polling,
interleaved round by round:

* ``abc``: ``Communicator.poll_leases`` (a second probe when the first finds nothing: MPICH's
  ``MPI_Iprobe`` runs its progress engine after it looks for a match, so the first probe only takes
  a new message in);
* ``one-probe``: one ``MPI_Iprobe`` per poll, as ``poll_leases`` did before (a lease waited for a
  second poll).

A lease's latency is time a leased slot loses at its start (``stats.json`` per rank:
``lease_wait_ms``, ``lease_wait_max_ms``).
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

MODES = ("abc", "one-probe")


def _one_probe(comm) -> list[bytes]:
    """The single-probe poll (the code before this benchmark's change)."""
    import numpy as np
    from mpi4py import MPI
    from abc_crawler.mpi.exchange import TAG_LEASE
    out = []
    status = MPI.Status()
    while comm.comm.Iprobe(source=MPI.ANY_SOURCE, tag=TAG_LEASE, status=status):
        buf = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
        comm.comm.Recv([buf, MPI.BYTE], source=status.Get_source(), tag=TAG_LEASE)
        out.append(buf.tobytes())
    return out


def _measure(comm, mode: str, n: int, poll: float, rng: random.Random) -> list[float]:
    """Rank 0: the latencies (seconds) of ``n`` leases; rank 1: sends them."""
    lat = []
    for i in range(n):
        comm.barrier()
        if comm.rank == 1:
            time.sleep(rng.uniform(0.0, 0.02))
            comm.send_lease(0, f"h.test\t{i}\t0.0\t{time.time()!r}".encode())
        else:
            got: list[bytes] = []
            deadline = time.monotonic() + 2.0
            while not got and time.monotonic() < deadline:
                time.sleep(poll)
                got = comm.poll_leases() if mode == "abc" else _one_probe(comm)
            now = time.time()
            if not got:
                raise SystemExit(f"{mode}: lease {i} did not arrive within 2 s")
            lat.append(now - float(got[0].decode().split("\t")[3]))
        comm.barrier()
    return lat


def ranks_main(args) -> None:
    from abc_crawler.sched.phases import LEASE_POLL_MIN
    from abc_crawler.mpi.exchange import Communicator
    comm = Communicator()
    rng = random.Random(7 + comm.rank)
    res: dict[str, list[float]] = {m: [] for m in MODES}
    per_round: dict[str, list[float]] = {m: [] for m in MODES}
    for r in range(args.runs):
        for mode in (MODES if r % 2 == 0 else MODES[::-1]):
            lat = _measure(comm, mode, args.leases, LEASE_POLL_MIN, rng)
            if comm.rank == 0:
                res[mode] += lat
                per_round[mode].append(statistics.median(lat))
    comm.close_leases()
    if comm.rank == 0:
        import json
        out = {"poll_s": LEASE_POLL_MIN, "leases_per_round": args.leases, "runs": args.runs}
        for m in MODES:
            v = sorted(res[m])
            out[m] = {"median_ms": round(1000 * statistics.median(v), 2),
                      "p90_ms": round(1000 * v[int(0.9 * len(v))], 2), "max_ms": round(1000 * v[-1], 2),
                      "round_medians_ms": [round(1000 * x, 2) for x in per_round[m]]}
        print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--leases", type=int, default=200, help="leases a round, per mode")
    ap.add_argument("--runs", type=int, default=3, help="interleaved rounds")
    ap.add_argument("--out", default=None, help="result JSON (default bench/results/lease_latency.json)")
    ap.add_argument("--ranks-side", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ranks_side:
        ranks_main(args)
        return
    import json
    import harness
    venv = ROOT / ".venv" / "bin"
    cmd = [str(venv / "mpiexec"), "-n", "2", str(venv / "python"), __file__, "--ranks-side",
           "--leases", str(args.leases), "--runs", str(args.runs)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    if p.returncode != 0:
        raise SystemExit(f"mpiexec failed ({p.returncode}): {p.stderr[-2000:]}")
    fig = json.loads(p.stdout.strip().splitlines()[-1])
    print(harness.describe_header("phase-slot lease latency, 2 ranks on one machine"))
    print(f"poll every {1000 * fig['poll_s']:.0f} ms, {fig['leases_per_round']} leases a round and mode, "
          f"{fig['runs']} interleaved rounds")
    for m in MODES:
        f = fig[m]
        print(f"  {m:10s} median {f['median_ms']:6.2f} ms  p90 {f['p90_ms']:6.2f} ms  max {f['max_ms']:6.2f} ms"
              f"  (round medians {f['round_medians_ms']})")
    ratio = fig["one-probe"]["median_ms"] / fig["abc"]["median_ms"]
    print(f"one-probe / abc, median latency: {ratio:.2f}x")
    path = harness.write_result("lease_latency", {"figures": fig, "ratio_median": round(ratio, 3)},
                                args.out)
    print(f"result: {path}")


if __name__ == "__main__":
    main()
