"""URLStates and Bucket (KSpider): states, transitions, window scan, politeness."""
import pytest

from abc_crawler.frontier import (COMPLETED, FETCHING, FREE, IN_LIST, IN_PROGRESS, QUEUING, STALLED, TIMEWAIT,
                                  Frontier)


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


def test_one_element_per_host_and_batch_limit():
    f = make(batch_urls=2)
    idx = add(f, "a.test", 5)
    assert f.schedule(0.0) == 2               # one element of L=2; the rest stay IN_LIST
    assert [f.states[i] for i in idx] == [IN_PROGRESS, IN_PROGRESS, IN_LIST, IN_LIST, IN_LIST]
    f.batch_limit["b.test"] = 1
    add(f, "b.test", 3)
    assert f.schedule(0.0) == 1


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
    f.blocked_until["a.test"] = 5.0
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
