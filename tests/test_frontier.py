"""URLStates and Bucket (KSpider): states, transitions, window scan, politeness."""
import sys
from pathlib import Path

import pytest

from abc_crawler.sched.frontier import (COMPLETED, FETCHING, FREE, IN_LIST, IN_PROGRESS, QUEUING, STALLED, TIMEWAIT,
                                  Frontier)


sys.path.insert(0, str(Path(__file__).resolve().parent))   # frontier_scan: the old window scan


def make(**kw):
    args = dict(n_columns=7, n_rows=2, batch_urls=3, window=1000, flush_seconds=1.0)
    args.update(kw)
    return Frontier(**args)


def add(f, host, n, start=0):
    return [f.add(f"http://{host}/{i}", host) for i in range(start, start + n)]


def test_element_lifecycle_free_queuing_fetching_timewait_free():
    f = make()
    idx = add(f, "a.test", 3)
    assert f.schedule(now=0.0) == 3
    e = f.by_host["a.test"]
    assert e.state == QUEUING and e.urls == idx
    assert all(f.states[i] == IN_PROGRESS for i in idx)
    assert f.ready(now=0.0) == [e] and e.state == FETCHING
    for i in idx:
        f.complete(i)
    f.finish(e, now=1.0, rest=0.5)
    assert e.state == TIMEWAIT
    idx2 = add(f, "a.test", 1, start=3)
    f.schedule(now=1.2)                       # still resting: nothing placed
    assert f.states[idx2[0]] == IN_LIST and e.state == TIMEWAIT
    f.schedule(now=1.6)                       # rest over: FREE, then QUEUING again
    assert f.states[idx2[0]] == IN_PROGRESS
    assert f.by_host["a.test"].state == QUEUING


def test_finish_requires_fetching():
    f = make()
    add(f, "a.test", 1)
    f.schedule(0.0)
    with pytest.raises(ValueError):
        f.finish(f.by_host["a.test"], 0.0, 0.0)


def test_partial_element_waits_for_flush_timeout():
    f = make(flush_seconds=0.5)
    add(f, "a.test", 2)
    f.schedule(0.0)
    assert f.ready(0.4) == []
    assert [e.host for e in f.ready(0.5)] == ["a.test"]


def test_eager_ready_sends_filling_elements_oldest_first_up_to_the_limit():
    """With nothing in flight the caller asks eagerly: full or aged elements first, then the
    oldest still filling, never more than the limit; without eager they keep waiting."""
    f = make(flush_seconds=0.5)
    add(f, "a.test", 1)
    f.schedule(0.0)
    add(f, "b.test", 3)                       # full: ripe at once
    add(f, "c.test", 2)
    f.schedule(0.1)
    add(f, "d.test", 1)
    f.schedule(0.2)
    assert [e.host for e in f.ready(0.3)] == ["b.test"]
    assert f.ready(0.3) == []                 # a, c and d are filling, none aged
    got = f.ready(0.3, limit=2, eager=True)
    assert [e.host for e in got] == ["a.test", "c.test"] and all(e.state == FETCHING for e in got)
    assert [e.host for e in f.ready(0.3, limit=5, eager=True)] == ["d.test"]
    assert f.ready(0.3, eager=True) == []


def test_one_element_per_host():
    f = make(batch_urls=2)
    idx = add(f, "a.test", 5)
    assert f.schedule(0.0) == 2               # one element of L=2; the rest stay IN_LIST
    assert [f.states[i] for i in idx] == [IN_PROGRESS, IN_PROGRESS, IN_LIST, IN_LIST, IN_LIST]


def test_column_collisions_leave_urls_in_list():
    f = make(n_columns=1, n_rows=2)
    for h in ("a.test", "b.test", "c.test"):
        add(f, h, 1)
    assert f.schedule(0.0) == 2
    assert f.collisions == 1
    assert f.n_in_list == 1


def test_window_limits_scan_and_slides():
    f = make(window=4, batch_urls=100, n_rows=8)
    hosts = [f"h{i}.test" for i in range(10)]
    for h in hosts:
        add(f, h, 1)
    assert f.schedule(0.0) == 4               # only the first 4 entries are in the window
    for e in f.ready(10.0):
        for i in list(e.urls):
            f.complete(i)
        f.finish(e, 10.0, 0.0)
    assert f.lo == 4                          # window slid past the completed prefix
    assert f.schedule(10.0) == 4


def test_complete_twice_and_stalled():
    f = make()
    (i,) = add(f, "a.test", 1)
    f.complete(i, stalled=True)
    assert f.states[i] == STALLED
    with pytest.raises(ValueError):
        f.complete(i)


def test_release_returns_url_to_list():
    f = make()
    idx = add(f, "a.test", 2)
    f.schedule(0.0)
    f.release(idx[1])
    assert f.states[idx[1]] == IN_LIST and f.n_in_list == 1 and f.n_in_progress == 1


def test_admit_vetoes_hosts():
    f = make()
    add(f, "a.test", 1)
    add(f, "b.test", 1)
    assert f.schedule(0.0, admit=lambda h: h == "b.test") == 1
    assert "a.test" not in f.by_host


def test_blocked_host_and_wakeup():
    f = make()
    add(f, "a.test", 1)
    f.block("a.test", 5.0)
    assert f.schedule(0.0) == 0
    assert f.next_wakeup(0.0) == 5.0
    assert f.schedule(5.0) == 1


def test_counts_cover_every_element():
    f = make()
    add(f, "a.test", 1)
    f.schedule(0.0)
    c = f.counts()
    assert c["elements_free"] + c["elements_queuing"] == 14 and c["elements_queuing"] == 1
    assert c["in_progress"] == 1 and c["completed"] == 0
    assert (FREE, QUEUING, FETCHING, TIMEWAIT) == ("FREE", "QUEUING", "FETCHING", "TIMEWAIT")
    assert (IN_LIST, IN_PROGRESS, COMPLETED, STALLED) == (0, 1, 2, 3)


# -- per-host queues (O(hosts changed)) against the window scan they replace ----------------------

def test_url_text_roundtrip_and_origins():
    f = make()
    urls = ["http://a.test/x?q=1", "https://a.test/", "http://a.test:8080/é", "http://b.test/" + "p" * 3000]
    idx = [f.add(u, u.split("/")[2]) for u in urls]
    assert [f.url(i) for i in idx] == urls and [f.urls[i] for i in idx] == urls
    assert f.host(idx[1]) == "a.test" and f.n_hosts == 3      # http and https of a.test: one host


def test_chunks_reclaimed_when_completed(monkeypatch):
    import abc_crawler.sched.urlstates as fr
    f = make()
    n = 3 * fr.CHUNK // 1000 + 10          # paths of ~1000 bytes: more than 3 chunks
    for i in range(n):
        f.add(f"http://a.test/{i:0990d}", "a.test")
    assert len(f._chunks) >= 3
    first = [i for i in range(n) if f._pos[i] >> fr.CHUNK_BITS == 0]
    for i in first:
        f.complete(i)
    assert f._chunks[0] is None and f._chunks[1] is not None
    with pytest.raises(KeyError):
        f.url(first[0])
    assert f.url(first[-1] + 1).endswith(f"{first[-1] + 1:0990d}")


def test_release_keeps_host_order():
    f = make(batch_urls=3)
    idx = add(f, "a.test", 6)
    f.schedule(0.0)
    (e,) = f.ready(0.0)
    for i in reversed(e.urls):
        f.release(i)
    f.finish(e, 0.0, 0.0)
    f.schedule(0.0)
    assert f.by_host["a.test"].urls == idx[:3]


def test_schedule_visits_only_changed_hosts():
    f = make(n_columns=101, n_rows=4, batch_urls=2)
    for h in range(50):
        add(f, f"h{h}.test", 5)
    assert f.schedule(0.0) == 100
    assert f.schedule(0.0) == 0 and not f._marked           # nothing changed: nothing visited
    add(f, "h7.test", 1, start=5)
    assert f._marked == {f._host_ids["h7.test"]}
    assert f.schedule(0.0) == 0                              # its element is full


def test_collision_waiters_get_the_freed_element():
    f = make(n_columns=1, n_rows=1)
    add(f, "a.test", 1)
    add(f, "b.test", 1)
    assert f.schedule(0.0) == 1 and f.collisions == 1
    (e,) = f.ready(5.0)
    f.complete(e.urls[0])
    f.finish(e, 5.0, 0.0)
    assert f.schedule(5.0) == 1 and "b.test" in f.by_host


def test_readmit_after_phase_change():
    f = make()
    add(f, "a.test", 1)
    phase = {"a.test": False}
    admit = phase.get
    assert f.schedule(0.0, admit) == 0
    phase["a.test"] = True
    assert f.schedule(0.0, admit) == 0                       # same admit, not told: not asked again
    f.readmit()
    assert f.schedule(0.0, admit) == 1


def test_checkpoint_increments_restore_exactly():
    rng = __import__("random").Random(5)
    f = make(batch_urls=4)
    incs = []
    for step in range(4):
        for _ in range(200):
            h = f"h{rng.randrange(30)}.test"
            f.add(f"{rng.choice(['http', 'https'])}://{h}/{rng.random()}", h)
        f.schedule(float(step))
        for e in f.ready(float(step) + 10):
            for i in e.urls[:2]:
                f.complete(i)
            f.finish(e, float(step), 0.0)
        incs.append(f.take_increment())
    st = f.state_for_checkpoint()
    g = make(batch_urls=4)
    for inc in incs:
        g.apply_increment(inc)
    g.restore_state(st)
    assert len(g) == len(f)
    want = bytes(1 if s == IN_PROGRESS else s for s in f.states).replace(b"\x01", b"\x00")
    assert bytes(g.states) == want
    assert all(g.url(i) == f.url(i) for i in range(len(f)) if f.states[i] < COMPLETED)
    assert g.n_in_list == f.n_in_list + f.n_in_progress and g.n_completed == f.n_completed
    # the restored frontier schedules every pending URL once, in order per host
    got = []
    t = 100.0
    while g.pending:
        g.schedule(t)
        for e in g.ready(t + 10):
            got += e.urls
            for i in e.urls:
                g.complete(i)
            g.finish(e, t, 0.0)
        t += 1
    assert sorted(got) == [i for i in range(len(f)) if f.states[i] < COMPLETED]


@pytest.mark.parametrize("seed", range(12))
def test_same_decisions_as_the_window_scan(seed):
    """Random adds, schedules, batches, releases, back-offs, evictions and vetoes: the per-host
    queues place the same URLs into the same elements as the window scan of commit ebe161a."""
    import random

    from frontier_scan import Frontier as ScanFrontier

    rng = random.Random(seed)
    kw = dict(n_columns=rng.choice([1, 3, 7]), n_rows=rng.choice([1, 2]), batch_urls=rng.choice([1, 2, 4]),
              window=rng.choice([5, 20, 1000]), flush_seconds=rng.choice([0.0, 0.5]))
    new, old = Frontier(**kw), ScanFrontier(**kw)
    hosts = [f"h{i}.test" for i in range(rng.choice([3, 12]))]
    now = 0.0
    fetching = []
    vetoed: set[str] = set()
    n = 0
    for step in range(400):
        op = rng.random()
        if op < 0.3:
            for _ in range(rng.randrange(1, 6)):
                h = rng.choice(hosts)
                u = f"http://{h}/{n}"
                n += 1
                assert new.add(u, h) == old.add(u, h)
        elif op < 0.35:
            h = rng.choice(hosts)
            t = now + rng.choice([0.5, 2.0])
            new.block(h, t)
            old.blocked_until[h] = t
        elif op < 0.4:
            vetoed = set(rng.sample(hosts, rng.randrange(len(hosts))))
        elif op < 0.43:
            pred = set(rng.sample(hosts, 2)).__contains__
            assert new.evict(pred) == old.evict(pred)
        elif op < 0.75 and fetching:
            en, eo = fetching.pop(rng.randrange(len(fetching)))
            assert en.urls == eo.urls
            for i in list(en.urls):
                r = rng.random()
                if r < 0.7:
                    new.complete(i, stalled=r < 0.1)
                    old.complete(i, stalled=r < 0.1)
                else:
                    new.release(i)
                    old.release(i)
            rest = rng.choice([0.0, 0.3, 1.0])
            new.finish(en, now, rest)
            old.finish(eo, now, rest)
        else:
            now += rng.choice([0.0, 0.1, 0.25, 0.6])
        admit = (lambda h: h not in vetoed) if vetoed else None
        new.schedule(now, admit)
        old.schedule(now, admit)
        assert bytes(new.states) == bytes(old.states), step
        assert {h: (e.state, e.urls) for h, e in new.by_host.items()} == \
               {h: (e.state, e.urls) for h, e in old.by_host.items()}, step
        limit = rng.choice([None, 1, 2])
        rn, ro = new.ready(now, limit), old.ready(now, limit)
        assert [e.host for e in rn] == [e.host for e in ro], step
        fetching += list(zip(rn, ro))
        assert (new.n_in_list, new.n_in_progress, new.n_completed, new.lo) == \
               (old.n_in_list, old.n_in_progress, old.n_completed, old.lo)
        # TIMEWAIT ends and flush times are the scan's; back-offs only of hosts with work
        wn, wo = new.next_wakeup(now, queuing=True), old.next_wakeup(now, queuing=True)
        if not old.blocked_until:
            assert wn == wo
