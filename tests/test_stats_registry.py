"""One stats namespace (issue 31): every counter of a rank is registered once in
``crawl/counters.STATS``; the counters, a rank's summary, the totals and ``per_rank`` of
``stats.json`` are made from it, and ``docs/SESSION_FORMAT.md`` documents each key (checked here,
with a control that an undocumented counter is caught)."""
from __future__ import annotations

import random
import re
from dataclasses import fields
from pathlib import Path

import pytest

from abc_crawler.crawl.counters import COUNT, KINDS, STATS, RankCounters, Stat, per_rank_of, summary_of, totals

DOC = (Path(__file__).resolve().parent.parent / "docs" / "SESSION_FORMAT.md").read_text()


def _section(title: str) -> str:
    """The text of the ``### title`` section of the stats.json chapter (to the next heading)."""
    start = DOC.index("## `stats.json`")
    m = re.search(rf"^###? {re.escape(title)}\s*$", DOC[start:], re.M)
    assert m, title
    body = DOC[start + m.end():]
    nxt = re.search(r"^##", body, re.M)
    return body[:nxt.start()] if nxt else body


def undocumented(stats) -> list[str]:
    """The keys of registered counters that docs/SESSION_FORMAT.md does not document where they go."""
    missing = []
    per_rank = _section("`per_rank`")
    top = _section("Totals") + _section("`errors`, `links`, `out_of_scope_hosts`")
    for s in stats:
        if s.per_rank and f"`{s.summary_key}`" not in per_rank:
            missing.append(f"per_rank.{s.summary_key}")
        if s.total is None:
            continue
        parent, _, key = s.total.rpartition(".")
        where = _section(f"`{parent}`") if parent else top
        if f"`{key}`" not in where:
            missing.append(s.total)
    return missing


def test_the_counters_are_the_registry():
    assert [f.name for f in fields(RankCounters)] == [s.name for s in STATS]
    assert len({s.summary_key for s in STATS}) == len(STATS)
    assert {s.kind for s in STATS} <= {COUNT, KINDS}


def test_every_registered_key_is_documented():
    assert undocumented(STATS) == []


def test_an_undocumented_counter_is_caught():
    ghost = Stat("ghost_hits", COUNT, "a counter nobody wrote down", total="ghost_hits", per_rank=True)
    nested = Stat("ghost_wire", COUNT, "another", total="exchange.ghost_wire")
    assert undocumented([ghost, nested]) == ["per_rank.ghost_hits", "ghost_hits", "exchange.ghost_wire"]


def _random_counters(rng: random.Random):
    c = RankCounters()
    for s in STATS:
        if s.kind == COUNT:
            setattr(c, s.name, rng.randrange(1000))
        else:
            for k in rng.sample("abcdefgh", rng.randrange(5)):
                getattr(c, s.name)[k] += rng.randrange(1, 9)
    return c


@pytest.mark.parametrize("seed", range(5))
def test_totals_are_the_sums_over_ranks_of_every_counter(seed):
    rng = random.Random(seed)
    ranks = [_random_counters(rng) for _ in range(rng.randrange(1, 5))]
    sums = totals([summary_of(c) for c in ranks])
    for s in STATS:
        if s.total is None:
            continue
        parent, _, key = s.total.rpartition(".")
        got = (sums[parent] if parent else sums)[key]
        if s.kind == COUNT:
            assert got == sum(getattr(c, s.name) for c in ranks), s.name
        else:
            want: dict[str, int] = {}
            for c in ranks:
                for k, v in getattr(c, s.name).items():
                    want[k] = want.get(k, 0) + v
            assert got == want, s.name
    one = summary_of(ranks[0])
    assert per_rank_of(one) == {s.summary_key: getattr(ranks[0], s.name) for s in STATS if s.per_rank}


def test_counters_round_trip_a_checkpoint_and_refuse_unknown_ones():
    c = _random_counters(random.Random(7))
    d = RankCounters()
    d.load(c.as_plain())
    assert d == c
    with pytest.raises(ValueError, match="unknown counters"):
        d.load({"no_such_counter": 1})
