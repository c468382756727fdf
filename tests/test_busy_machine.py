"""No page lost because the machine was busy: 8 ranks on two CPUs (pinned there, so the test is
the same on a machine with more cores), both kept busy by four CPU burners pinned to them too,
and now and then one rank descheduled for longer than a slot (SIGSTOP, then SIGCONT), crawl a
generated web of 20,000+ pages three times; every run stores every page exactly once, no request fails because it was cut at its slot's end, and the cut counters
show the cuts that happened (a starved rank, a late start) and were recovered; the server's log
shows each page answered once, the cut attempts apart."""
from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from crawlcheck import check_session, crawl_cli, generate, rank_pids, serve

BURN = ("import time\nend = time.monotonic() + {seconds}\nx = 0\n"
        "while time.monotonic() < end:\n    x += 1\n")


#: the two CPUs the crawl and the burners share (the first two this process may use)
CPUS = set(sorted(os.sched_getaffinity(0))[:2])


def burners(n: int, seconds: float) -> list[subprocess.Popen]:
    """``n`` pure-Python busy loops on CPUS that stop by themselves after ``seconds``."""
    return [subprocess.Popen([sys.executable, "-c", BURN.format(seconds=seconds)],
                             preexec_fn=lambda: os.sched_setaffinity(0, CPUS)) for _ in range(n)]


def unread_answer(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds an established TCP connection to ``port`` with bytes received
    and not yet read (an answer waiting: a request in flight), from /proc."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        return False
    for table in ("tcp", "tcp6"):
        try:
            lines = open(f"/proc/{pid}/net/{table}").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            rem_port = int(f[2].rsplit(":", 1)[1], 16)
            rx = int(f[4].split(":")[1], 16)
            if f[3] == "01" and rem_port == port and rx > 0 and f[9] in inodes:
                return True
    return False


@contextlib.contextmanager
def starver(session, port: int, pause: float = 1.5, every: float = 2.5, most: int = 12):
    """While the block runs, a descheduled rank as a loaded machine makes one: now and then one
    rank of the crawl is stopped (SIGSTOP) for ``pause`` seconds — longer than a phase slot — then
    continued; at most ``most`` times. The stopped rank is one caught with a request in flight (an
    answer from the web on ``port`` received and not yet read): a rank caught with none is
    continued at once (a 20 ms stop, as a busy machine makes them) and another one tried, so that
    every counted stop meets its request's slot end. Yields the list of (pid, seconds) stops made."""
    stops: list[tuple[int, float]] = []
    done = threading.Event()
    rng = random.Random(str(session))

    def run():
        while not done.wait(every) and len(stops) < most:
            for _ in range(100):                 # at most 100 tries a round
                pids = rank_pids(str(session))
                if len(pids) < 8 or done.is_set():
                    break
                pid = rng.choice(pids)
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:       # the rank ended meanwhile: try another one
                    continue
                t0 = time.monotonic()
                try:
                    done.wait(0.02)
                    loaded = unread_answer(pid, port)
                    if loaded:
                        done.wait(pause)
                finally:
                    try:
                        os.kill(pid, signal.SIGCONT)
                    except ProcessLookupError:
                        pass
                if loaded:
                    stops.append((pid, time.monotonic() - t0))
                    break
                done.wait(0.03)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        yield stops
    finally:
        done.set()
        t.join(timeout=10)


@pytest.fixture(scope="module")
def big_web(tmp_path_factory):
    d = tmp_path_factory.mktemp("busy")
    m = generate(d, n_hosts=60, n_pages=20000, seed=23)
    assert len(m["expected"]["requested"]) >= 20000
    return d


@pytest.mark.slow
@pytest.mark.timeout(1800)      # three 8-rank crawls of 20,000 pages with both cores busy (~4 min idle)
def test_eight_ranks_on_a_busy_machine_lose_no_page(big_web, tmp_path):
    recovered = starved = 0
    for run in range(3):
        session = tmp_path / f"run{run}"
        hogs = burners(4, 400)      # two per CPU: the ranks get about a third of each
        try:
            with serve(big_web) as srv, starver(session, srv.port) as stops:
                r = crawl_cli(8, big_web, session, "--no-stats", timeout=420, cpus=CPUS)
                rows = srv.rows()
        finally:
            for p in hogs:
                p.kill()
                p.wait()
        assert r.returncode == 0, r.stderr[-3000:]
        stats = json.loads((session / "stats.json").read_text())
        assert stats["stopped"] == "done"
        # exact node and edge sets, every page exactly once (the server's log too: a cut request asked
        # again is a failed attempt, no more of them than the crawler's own count), every payload
        facts = check_session(big_web, session, rows)
        assert "slot_too_short" not in stats["errors"] and "slot_never_full" not in stats["errors"], stats["errors"]
        cuts = stats["slot_cuts"]
        assert cuts["total"] == cuts["warm_up"] + cuts["late_start"] + cuts["starved"] + cuts["slow_response"]
        recovered += cuts["total"]
        starved += cuts["starved"]
        assert stops, "no rank was stopped: the crawl ended before the first stop"
        print(f"run {run}: wall {stats['wall_s']} s, {len(stops)} ranks stopped, cuts {cuts}, "
              f"log {facts['log']['once']}")
    # requests really were cut at slot ends (warm-up slots, late starts, starved ranks) and every
    # one of them was asked again: no page lost, none failed for it
    assert recovered > 0
    # a rank stopped with requests in flight has them cut at their slot's end: counted as starved
    # (no fault of the request, no count towards --max-slot-cuts), not as slow responses
    assert starved > 0
