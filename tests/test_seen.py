"""The URL-seen set with the reported flag (kernels/_fpset.pyx) against its reference and two Python sets."""
import random

import numpy as np
import pytest

from abc_crawler.sched import seen as seen_mod
from abc_crawler.exceptions import AbcError
from abc_crawler.kernels._fpset import FPSet       # the build must have made it: no skip, no fallback
from abc_crawler.sched.seen import PyFPSet

IMPLS = [PyFPSet, FPSet]


def test_the_crawl_uses_the_compiled_set_and_refuses_without_it(monkeypatch):
    assert isinstance(seen_mod.new_fpset(), FPSet)
    monkeypatch.setattr(seen_mod, "FPSet", None)
    monkeypatch.setattr(seen_mod, "_MISSING", "ImportError: no module", raising=False)
    with pytest.raises(AbcError, match=r"compiled URL-seen set .* is missing .*make venv"):
        seen_mod.new_fpset()


@pytest.mark.parametrize("cls", IMPLS)
def test_same_answers_as_two_python_sets(cls):
    rng = random.Random(7)
    s = cls(journal=False)
    seen, reported = set(), set()
    # small pool: many repeats; edge values 0 and 2**64-1; clustered keys probe far
    pool = [0, 1, 2**64 - 1, 2**63] + [rng.getrandbits(64) for _ in range(3000)] + list(range(1 << 20, (1 << 20) + 500))
    for _ in range(40000):
        fp = rng.choice(pool)
        op = rng.random()
        if op < 0.5:
            assert s.add(fp) == (fp not in seen)
            seen.add(fp)
        elif op < 0.75:
            assert s.report(fp) == (fp not in reported)
            reported.add(fp)
        else:
            assert (fp in s) == (fp in seen)
            assert s.is_reported(fp) == (fp in reported)
    assert len(s) == len(seen) and s.n_reported == len(reported)
    for fp in pool:
        assert (fp in s) == (fp in seen) and s.is_reported(fp) == (fp in reported)
    keys, flags = s.items()
    assert set(keys.tolist()) == seen | reported
    d = dict(zip(keys.tolist(), flags.tolist()))
    assert all((d[k] & 1 == 1) == (k in seen) and (d[k] & 2 == 2) == (k in reported) for k in d)


@pytest.mark.parametrize("cls", IMPLS)
def test_out_of_range_fingerprints_refused(cls):
    s = cls()
    with pytest.raises(OverflowError):
        s.add(-1)
    with pytest.raises(OverflowError):
        s.add(2**64)


@pytest.mark.parametrize("cls", IMPLS)
def test_journal_and_merge_rebuild_exactly(cls):
    rng = random.Random(3)
    s = cls(journal=True)
    logs = []
    for step in range(5):
        for _ in range(2000):
            fp = rng.getrandbits(64) if rng.random() < 0.7 else rng.getrandbits(10)
            (s.add if rng.random() < 0.6 else s.report)(fp)
        logs.append(s.take_changes())
    r = cls()
    for keys, flags in logs:
        r.merge(keys, flags)
    k1, f1 = s.items()
    k2, f2 = r.items()
    assert dict(zip(k1.tolist(), f1.tolist())) == dict(zip(k2.tolist(), f2.tolist()))
    assert len(r) == len(s) and r.n_reported == s.n_reported
    # the seen keys alone (what a spill writes): those with the SEEN flag, each once
    assert sorted(s.seen_keys().tolist()) == sorted(k for k, f in zip(k1.tolist(), f1.tolist()) if f & 1)
    assert len(s.seen_keys()) == len(s)
    assert s.take_changes()[0].size == 0
    s.journal = False
    s.add(12345678901)
    assert s.take_changes()[0].size == 0


def test_growth_keeps_everything():
    s = FPSet(capacity=16)
    keys = np.random.default_rng(1).integers(0, 2**63, size=50000, dtype=np.uint64).tolist()
    for k in keys:
        s.add(k)
    assert s.capacity >= 50000 / 0.7 and all(k in s for k in keys) and len(s) == len(set(keys))
    assert 2**63 + 5 not in s
