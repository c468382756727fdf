"""--memory-budget's spilling, without fetching: the URL-seen set's sorted runs on disk
(sched/seenruns), the frontier's per-host disk queues (sched/overflow), and both under the router —
every URL exactly once on its owner, each host's URLs in the order they came, across a checkpoint."""
from __future__ import annotations

import random

import numpy as np
import pytest

from abc_crawler.crawl.counters import RankCounters
from abc_crawler.crawl.quotas import HostQuotas
from abc_crawler.crawl.routing import Router
from abc_crawler.sched import seenruns
from abc_crawler.sched.budget import default_budget, memory_shares
from abc_crawler.sched.frontier import Frontier
from abc_crawler.sched.overflow import HostQueues
from abc_crawler.sched.seen import new_fpset
from abc_crawler.sched.seenruns import SortedRuns, SpillingSeen
from abc_crawler.web.urls import fingerprint, host_of


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 4 keys, merges in chunks of 7, reads of 2 blocks: every boundary is crossed."""
    monkeypatch.setattr(seenruns, "BLOCK", 4)
    monkeypatch.setattr(seenruns, "MERGE_CHUNK", 7)
    monkeypatch.setattr(seenruns, "READ_BLOCKS", 2)


@pytest.mark.parametrize("seed", range(4))
def test_sorted_runs_answer_membership_exactly_through_merges(tmp_path, small_blocks, seed):
    rnd = np.random.default_rng(seed)
    runs = SortedRuns(tmp_path, "seen")
    held: set[int] = set()
    for _ in range(12):
        keys = np.unique(rnd.integers(0, 2 ** 64 - 1, size=int(rnd.integers(1, 60)), dtype=np.uint64,
                                      endpoint=True))
        keys = keys[~np.isin(keys, np.fromiter(held, dtype=np.uint64, count=len(held)))]
        runs.add_run(keys)
        held.update(keys.tolist())
        probe = np.concatenate([np.fromiter(held, dtype=np.uint64, count=len(held)),
                                rnd.integers(0, 2 ** 64 - 1, size=50, dtype=np.uint64, endpoint=True),
                                np.array([0, 2 ** 64 - 1], dtype=np.uint64)])
        rnd.shuffle(probe)
        got = runs.contains(probe)
        assert got.tolist() == [int(k) in held for k in probe.tolist()]
        assert len(runs) == len(held)
        # merged as they come: each run is more than twice the next, so O(log n) of them
        assert all(a.n > 2 * b.n for a, b in zip(runs.runs, runs.runs[1:]))
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(r.path.name for r in runs.runs)
    runs.close()
    assert list(tmp_path.iterdir()) == []


def test_spilling_seen_lets_each_fingerprint_through_once(tmp_path, small_blocks):
    rnd = random.Random(3)
    s = SpillingSeen(tmp_path, "seen", limit_bytes=2000)
    stream = [rnd.randrange(3000) for _ in range(20000)]
    new, waiting = [], []
    for fp in stream:
        a = s.add(fp)
        if a is None:
            waiting.append(fp)
        elif a:
            new.append(fp)
        if rnd.random() < 1 / 50:                          # resolved in batches of any size
            new += [fp for fp, ok in zip(waiting, s.resolve(waiting).tolist()) if ok]
            waiting = []
            s.maybe_spill()                                # (only when nothing waits)
    new += [fp for fp, ok in zip(waiting, s.resolve(waiting).tolist()) if ok]
    assert s.spills >= 5
    assert sorted(new) == sorted(set(stream))              # each once, none lost
    assert len(s) == len(set(stream))
    assert all(fp in s for fp in set(stream)) and 3001 not in s
    s.close()
    assert list(tmp_path.iterdir()) == []


def test_the_seen_table_spills_before_its_next_doubling_would_pass_the_limit(tmp_path):
    s = SpillingSeen(tmp_path, "seen", limit_bytes=300_000)
    peak = 0
    for fp in range(1, 200_000):
        s.add(fp)
        if fp % 1000 == 0:
            s.maybe_spill()
        peak = max(peak, s.mem.nbytes)
    assert s.spills >= 3
    assert peak <= 300_000
    assert len(s) == 199_999


def drain(f: Frontier, now: float = 0.0) -> list[str]:
    """Every URL out of the frontier through the Bucket, as a crawl takes them (no fetching)."""
    out = []
    for _ in range(1_000_000):
        f.schedule(now)
        els = f.ready(now, eager=True)
        if not els:
            if f.pending == 0:
                return out
            now += 1.0
            continue
        for e in els:
            for i in e.urls:
                out.append(f.url(i))
                f.complete(i)
            f.finish(e, now, 0.0)
    raise AssertionError("the frontier did not drain")


def drain_some(f: Frontier, n: int, done: list | None = None) -> None:
    """About ``n`` URLs out of the frontier (whole batches)."""
    k = 0
    while k < n:
        f.schedule(0.0)
        els = f.ready(0.0, eager=True)
        if not els:
            return
        for e in els:
            for i in e.urls:
                if done is not None:
                    done.append(f.url(i))
                f.complete(i)
                k += 1
            f.finish(e, 0.0, 0.0)


def by_host(urls: list[str]) -> dict[str, list[str]]:
    d: dict[str, list[str]] = {}
    for u in urls:
        d.setdefault(host_of(u), []).append(u)
    return d


def overflowing(tmp_path, cap: int = 5, block_bytes: int = 64, trim: bool = True) -> Frontier:
    """A frontier that keeps ``cap`` waiting URLs in memory and drops its completed prefix early
    (``trim``; after what a checkpoint wrote, as a crawl with checkpoints does)."""
    f = Frontier(n_columns=7, n_rows=2, batch_urls=3)
    f.enable_overflow(HostQueues(tmp_path, "frontier", block_bytes=block_bytes, buffer_bytes=400,
                                 segment_bytes=2000), cap)
    f.trim_completed, f.keep_increments, f.trim_min = trim, False, 16
    return f


def test_an_overflowing_frontier_gives_every_url_once_and_each_host_in_order(tmp_path):
    rnd = random.Random(5)
    f = overflowing(tmp_path)
    urls = [f"http://h{rnd.randrange(9)}.test/p{i}" for i in range(3000)]
    for u in urls:
        f.add(u, host_of(u))
    assert f.n_spilled > 2500 and f.n_in_list <= 5          # most of them went to disk
    assert f.pending == len(urls)
    assert f.host_pending("h3.test") == sum(host_of(u) == "h3.test" for u in urls)
    got = drain(f)
    assert sorted(got) == sorted(urls)
    assert by_host(got) == by_host(urls)
    assert f.n_spilled == 0 and f.pending == 0
    assert f.base > 2000 and len(f.states) < len(urls) - 2000     # the crawled prefix left the columns
    assert len(f) == len(urls)
    f.close_overflow()
    assert list(tmp_path.iterdir()) == []


def test_urls_added_while_the_frontier_drains_keep_their_hosts_order(tmp_path):
    rnd = random.Random(6)
    f = overflowing(tmp_path, cap=8)
    urls = [f"http://h{rnd.randrange(5)}.test/p{i}" for i in range(2000)]
    got: list[str] = []
    k = 0
    while k < len(urls) or f.pending:
        n = rnd.randrange(0, 40)
        for u in urls[k:k + n]:
            f.add(u, host_of(u))
        k += n
        f.schedule(0.0)
        for e in f.ready(0.0, eager=True):
            for i in e.urls:
                got.append(f.url(i))
                f.complete(i)
            f.finish(e, 0.0, 0.0)
    assert sorted(got) == sorted(set(urls))
    assert by_host(got) == by_host(list(dict.fromkeys(urls)))


def test_an_overflowing_frontier_resumes_from_its_checkpoint_with_nothing_lost(tmp_path):
    rnd = random.Random(7)
    f = overflowing(tmp_path)
    f.keep_increments = True                                # a crawl with checkpoints
    urls = [f"http://h{rnd.randrange(6)}.test/p{i}" for i in range(1500)]
    for u in urls[:1000]:
        f.add(u, host_of(u))
    done: list[str] = []
    incs = [f.take_increment()]                             # a first checkpoint
    drain_some(f, 300, done)
    incs.append(f.take_increment())                         # another one, then crawled on:
    drain_some(f, 100, done)                                # the prefix written out may go
    f.schedule(0.0)
    assert f.base > 0
    taken = f.ready(0.0, eager=True)
    for e in taken[:2]:
        for i in e.urls[:2]:
            done.append(f.url(i))
            f.complete(i)                                  # the rest of the batch: in progress
    incs.append(f.take_increment())                         # the checkpoint resumed from
    st = f.state_for_checkpoint()
    assert st["base"] == f.base
    assert st["overflow"]["blocks"]
    # after the checkpoint the crawl went on (blocks taken, segments emptied) and then died
    for u in urls[1000:]:
        f.add(u, host_of(u))
    for e in taken:
        for i in e.urls:
            if f.state(i) < 2:
                f.complete(i)
        f.finish(e, 0.0, 0.0)
    drain(f)                                                # (no checkpoint_written: it died first)
    g = overflowing(tmp_path)
    for inc in incs:
        g.apply_increment(inc)
    g.restore_state(st)
    assert g.pending == 1000 - len(done)
    got = drain(g)
    assert sorted(got + done) == sorted(urls[:1000])
    want = {h: [u for u in us if u not in done] for h, us in by_host(urls[:1000]).items()}
    assert by_host(got) == {h: us for h, us in want.items() if us}    # in progress again, in order


def make_router(rank, size, tmp_path, spill: bool) -> Router:
    if spill:
        d = tmp_path / f"r{rank}"
        seen = SpillingSeen(d, "seen", limit_bytes=1500)
        f = overflowing(d, cap=6)
    else:
        seen, f = new_fpset(), Frontier(n_columns=7, n_rows=2, batch_urls=3)
    return Router(rank, size, f, seen, RankCounters(), HostQuotas(10 ** 9, rank, size, site_level=False))


@pytest.mark.parametrize("seed", range(4))
def test_routers_that_spill_hold_every_url_once_on_its_owner_in_the_order_of_routers_that_do_not(tmp_path, seed):
    """Four ranks route random pages' links and exchange, supersteps on end, once with tiny memory
    shares (seen runs and disk queues) and once without: every rank's frontier gives out the same
    URLs, each once, each host's in the same order."""
    rnd = random.Random(seed)
    size = 4
    hosts = [f"h{i}.test" for i in range(9)]
    owner_of = {h: rnd.randrange(size) for h in hosts}
    universe = [f"http://{h}/p{j}" for h in hosts for j in range(150)]
    pages = [[(rnd.choice(universe), list(dict.fromkeys(rnd.sample(universe, rnd.randrange(0, 30)))))
              for _ in range(rnd.randrange(1, 12))] for _ in range(8 * size)]
    results = []
    for spill in (False, True):
        routers = [make_router(k, size, tmp_path / str(seed), spill) for k in range(size)]
        for step in range(8):
            for k, r in enumerate(routers):
                for src, hrefs in pages[step * size + k]:
                    r.route(fingerprint(src), [(u, fingerprint(u), owner_of[host_of(u)],
                                                0 if owner_of[host_of(u)] == k else len(u) + 1) for u in hrefs])
            outs = [r.payloads() for r in routers]
            for dst in range(size):
                for src in range(size):
                    if src != dst:
                        routers[dst].receive(outs[src][dst])
        assert all(not r.pending and r.queued == 0 for r in routers)
        results.append([drain(r.frontier) for r in routers])
        if spill:
            assert sum(r.seen.spills for r in routers) > 0
            assert all(r.frontier.overflow_bytes_written > 0 for r in routers if len(r.frontier) > 6)
    plain, spilled = results
    linked = {u for pg in pages for _, hrefs in pg for u in hrefs}
    for k in range(size):
        assert len(spilled[k]) == len(set(spilled[k]))
        assert {host_of(u) for u in spilled[k]} <= {h for h in hosts if owner_of[h] == k}
        assert by_host(spilled[k]) == by_host(plain[k])
    assert sorted(u for out in spilled for u in out) == sorted(linked)


def test_memory_shares_and_the_default_budget():
    seen, waiting = memory_shares(256 << 20)
    assert seen == (256 << 20) // 5 and waiting * 100 <= 2 * (256 << 20) // 5
    assert memory_shares(1)[0] == memory_shares(64 << 10)[0]     # below the floor: the floor's
    assert default_budget(24 << 30, 8) == (24 << 30) // 16
    assert default_budget(24 << 30, 1) == 12 << 30


def test_dropping_the_completed_prefix_moves_fifos_that_start_at_urls_completed_while_listed(tmp_path):
    """A URL may be completed while it waits in its host's FIFO (it is skipped when the host is
    visited): a host not visited since still starts there. Dropping the prefix moves such a head
    (and tail) past the dropped URLs, so the host's later URLs are linked and scheduled right."""
    f = Frontier(n_columns=7, n_rows=2, batch_urls=3)
    f.trim_completed, f.keep_increments, f.trim_min = True, False, 4
    quiet = [f.add(f"http://quiet.test/p{i}", "quiet.test") for i in range(3)]
    busy = [f"http://busy.test/p{i}" for i in range(40)]
    for u in busy:
        f.add(u, "busy.test")
    only_busy = lambda h: h == "busy.test"      # noqa: E731  (one object: quiet.test stays vetoed)
    f.schedule(0.0, admit=only_busy)            # quiet.test visited and vetoed: its FIFO starts at p0
    for i in quiet:
        f.complete(i)                            # completed while listed, quiet.test not visited again
    assert drain_host(f, only_busy) == busy
    assert f.base >= 40                          # the quiet host's completed URLs went with the rest
    f.add("http://quiet.test/later", "quiet.test")
    f.add("http://quiet.test/later2", "quiet.test")
    assert drain(f) == ["http://quiet.test/later", "http://quiet.test/later2"]


def drain_host(f: Frontier, admit) -> list[str]:
    """Every URL ``admit`` lets out (the same veto throughout)."""
    out = []
    for _ in range(1000):
        f.schedule(0.0, admit=admit)
        els = f.ready(0.0, eager=True)
        if not els:
            return out
        for e in els:
            for i in e.urls:
                out.append(f.url(i))
                f.complete(i)
            f.finish(e, 0.0, 0.0)
    raise AssertionError("did not drain")
