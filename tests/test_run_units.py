"""Unit tests of run.py's pure helpers and of partition/repartition.run_model (issue 32 item 5), on
hand-made inputs whose answers are worked out here."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from abc_crawler.run import _bounds_line, _cuts_line, time_bounds
from abc_crawler.partition.repartition import BadInput, run_model
from abc_crawler.store.session import SessionGraph


def _co(urls, ranks):
    return SimpleNamespace(urls=urls, rank=ranks)


def test_time_bounds_name_the_host_politeness_holds_longest():
    urls = ["http://a.test/1", "http://a.test/2", "http://a.test/3", "http://b.test/1", "http://c.test/1", None]
    ranks = [0, 1, 0, 1, -1, 0]                 # c.test never requested; a row without text is skipped
    summaries = [{"idle_s": 2.0, "crawl_delays": {"b.test": 10.0}, "exchange_s": 0.5, "idle_slot_s": 1.0,
                  "idle_empty_s": 0.25},
                 {"idle_s": 7.5, "crawl_delays": {}, "exchange_s": 0.75}]
    b = time_bounds(_co(urls, ranks), summaries, SimpleNamespace(politeness_delay=1.0), wall=30.0)
    # a.test: 3 requests x 1 s; b.test: 1 request x its Crawl-delay 10 s
    assert b["hosts"] == [{"host": "b.test", "requests": 1, "bound_s": 10.0},
                          {"host": "a.test", "requests": 3, "bound_s": 3.0}]
    assert b["host_bound_s"] == 10.0 and b["wall_s"] == 30.0
    assert b["rank_busy_s"] == [28.0, 22.5] and b["exchange_s"] == [0.5, 0.75]
    assert b["idle_slot_s"] == [1.0, 0.0] and b["idle_empty_s"] == [0.25, 0.0]
    line = _bounds_line(b)
    assert "biggest host b.test politeness-bound 10.0 s" in line and "busiest rank 28.0 s" in line


def test_time_bounds_of_a_crawl_that_requested_nothing():
    b = time_bounds(_co([], []), [{"idle_s": 1.0}], SimpleNamespace(politeness_delay=1.0), wall=1.0)
    assert b["hosts"] == [] and b["host_bound_s"] == 0.0
    assert "biggest host -" in _bounds_line(b)


def test_the_cuts_line_counts_the_pages_cuts_failed():
    none = {"total": 0, "late_start": 0, "starved": 0, "slow_response": 0, "warm_up": 0}
    assert _cuts_line(none, {}) == "none"
    cuts = {"total": 9, "late_start": 1, "starved": 2, "slow_response": 5, "warm_up": 1}
    line = _cuts_line(cuts, {"slot_too_short": 2, "slot_never_full": 1, "timeout": 4})
    assert line.startswith("9: ") and line.endswith("pages failed by them 3")


def _two_cliques(n_each=6):
    """Two host cliques of ``n_each`` pages, joined by one link: the cut a 2-way partition should find."""
    urls = [f"http://{h}.test/p{i}" for h in ("a", "b") for i in range(n_each)]
    g = SessionGraph.from_urls(urls, ranks=2)
    g.url_rank[:] = 0
    g.url_bytes[:] = 1000
    src, dst = [], []
    for base in (0, n_each):
        for i in range(n_each):
            for j in range(n_each):
                if i != j:
                    src.append(base + i)
                    dst.append(base + j)
    src.append(0)
    dst.append(n_each)                          # the one link between the cliques
    g.link_src, g.link_dst = np.array(src, np.int32), np.array(dst, np.int32)
    return g


@pytest.mark.parametrize("model", ["page-gp", "site-gp"])
def test_run_model_splits_two_cliques_at_their_one_link(model):
    g = _two_cliques()
    r = run_model(g, model, 2, seed=1, tries=2)
    owners = np.asarray(r["owners"])
    assert set(owners[:6].tolist()) != set(owners[6:].tolist())       # the two cliques on two ranks
    assert len(set(owners[:6].tolist())) == 1 and len(set(owners[6:].tolist())) == 1
    assert max(r["report"]["imbalance_pct"]) <= 5.0 + 1e-9      # (bytes, requests)
    assert r["url_part"].shape == (12,) and (r["url_part"] >= 0).all()


def test_run_model_refuses_bad_input_by_name():
    g = _two_cliques(2)
    with pytest.raises(BadInput, match="unknown model 'page-xx'"):
        run_model(g, "page-xx", 2)
    with pytest.raises(BadInput, match="--parts 5 exceeds the 4 requested pages"):
        run_model(g, "page-gp", 5)
    with pytest.raises(BadInput, match="--parts 3 exceeds the 2 hosts with requested pages"):
        run_model(g, "site-gp", 3)
