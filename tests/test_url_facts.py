"""Per-URL facts as columns of URLStates (issue 31): what travels with a URL (redirect hops, link
depth, sitemap level) and what is counted while it is fetched (retries, cuts) live beside the
state byte, survive a checkpoint (increments and state), and a version-4 state's dicts are moved
into them on resume."""
from __future__ import annotations

from abc_crawler.crawl.state import _facts_of_version_4
from abc_crawler.sched.frontier import Frontier
from abc_crawler.web.urls import fingerprint
from abc_crawler.sched.urlstates import MAX_U16, MAX_U8


def _frontier() -> Frontier:
    return Frontier(n_columns=7, n_rows=2, batch_urls=4, window=100, flush_seconds=0.0)


def _filled() -> tuple[Frontier, list[int]]:
    f = _frontier()
    ids = [f.add("http://a.test/1", "a.test"),
           f.add("http://a.test/2", "a.test", hops=2),
           f.add("http://b.test/sitemap.xml", "b.test", depth=1, sitemap=True),
           f.add("http://b.test/deep", "b.test", depth=7),
           f.add("http://c.test/x", "c.test", hops=999, depth=10 ** 6)]
    return f, ids


def test_facts_are_stored_by_index_and_saturate():
    f, (a1, a2, sm, deep, big) = _filled()
    assert (f.hops[a1], f.depth[a1], f.sitemap[a1]) == (0, 0, 0)
    assert f.hops[a2] == 2 and f.depth[a2] == 0
    assert f.sitemap[sm] == 1 and f.depth[sm] == 1
    assert f.depth[deep] == 7 and f.sitemap[deep] == 0
    assert f.hops[big] == MAX_U8 and f.depth[big] == MAX_U16


def test_retries_and_cuts_count_per_url_and_make_its_tries():
    f, (a1, a2, *_rest) = _filled()
    assert f.tries(a1) == 1
    assert f.count_retry(a1) == 1
    assert f.count_cut(a1, counted=True) == (1, 0)
    assert f.count_cut(a1, counted=False) == (1, 1)
    assert f.tries(a1) == 4 and f.tries(a2) == 1
    f.clear_cuts(a1)                            # an answer: its next request is cut afresh
    assert (f.cuts[a1], f.free_cuts[a1], f.attempts[a1]) == (0, 0, 1)
    for _ in range(300):
        f.count_retry(a2)
    assert f.attempts[a2] == MAX_U8


def test_facts_survive_a_checkpoint():
    f, ids = _filled()
    f.count_retry(ids[1])
    f.count_cut(ids[3], counted=False)
    f.count_cut(ids[3], counted=False)
    inc = f.take_increment()
    state = f.state_for_checkpoint()
    g = _frontier()
    g.apply_increment(inc)
    g.restore_state(state)
    for col in ("hops", "depth", "sitemap", "attempts", "cuts", "free_cuts"):
        assert list(getattr(g, col)) == list(getattr(f, col)), col
    # a second increment carries only the URLs added since
    j = f.add("http://d.test/", "d.test", hops=1, depth=3)
    inc2 = f.take_increment()
    g.apply_increment(inc2)
    assert (g.hops[j], g.depth[j]) == (1, 3)


def test_an_increment_without_fact_columns_reads_as_zero_facts():
    f, _ = _filled()
    inc = f.take_increment()
    for k in ("hops", "depth", "sitemap"):
        del inc[k]
    g = _frontier()
    g.apply_increment(inc)
    assert not any(g.hops) and not any(g.depth) and not any(g.sitemap)


def test_a_version_4_states_dicts_move_into_the_columns():
    f = _frontier()
    urls = ["http://a.test/r", "http://b.test/sitemap.xml", "http://b.test/p", "http://c.test/done"]
    ids = [f.add(u, u.split("/")[2]) for u in urls]
    f.complete(ids[3])                          # completed: its facts no longer matter
    st = {"state_version": 4,
          "hops": {fingerprint(urls[0]): 3, fingerprint(urls[3]): 1},
          "depth": {fingerprint(urls[2]): 5},
          "sitemaps": {fingerprint(urls[1]): 2},
          "attempts": {ids[0]: 1}, "cuts": {ids[2]: 2}, "free_cuts": {ids[2]: 4}}
    _facts_of_version_4(f, st)
    assert f.hops[ids[0]] == 3 and f.attempts[ids[0]] == 1
    assert f.sitemap[ids[1]] == 1 and f.depth[ids[1]] == 2
    assert f.depth[ids[2]] == 5 and f.sitemap[ids[2]] == 0
    assert (f.cuts[ids[2]], f.free_cuts[ids[2]]) == (2, 4)
    assert f.hops[ids[3]] == 0


def test_a_cut_url_waits_to_be_asked_again_until_answered():
    """was_cut: the URL's request was cut and it waits to be asked again (its request counted once);
    cut_and_left counts those not completed when the crawl stops."""
    f, (a1, a2, sm, deep, big) = _filled()
    assert not f.was_cut(a1) and f.cut_and_left() == 0
    f.count_cut(a1, counted=False)
    f.count_cut(a2, counted=True)
    f.count_cut(deep, counted=True)
    assert f.was_cut(a1) and f.was_cut(a2) and f.cut_and_left() == 3
    f.complete(a2)                             # answered when asked again
    f.clear_cuts(deep)                         # its cuts made a failure: a retry is a new request
    assert not f.was_cut(deep) and f.cut_and_left() == 1
