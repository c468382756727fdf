"""kernels/_fpmap.pyx against its pure-Python reference (kernels/fpmap.PyFPMap): every operation,
keys over the whole 64-bit range (0 and 2**64 - 1 included), through several doublings."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abc_crawler.kernels.fpmap import FPMap, PyFPMap, new_fpmap

KEYS = st.one_of(st.integers(0, 40), st.integers(0, 2 ** 64 - 1), st.sampled_from([0, 2 ** 64 - 1, 2 ** 63]))
OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), KEYS, st.integers(-2 ** 63, 2 ** 63 - 1)),
    st.tuples(st.just("get"), KEYS, st.integers(-5, 5)),
    st.tuples(st.just("intern"), st.lists(KEYS, max_size=30), st.integers(0, 1000)),
    st.tuples(st.just("lookup"), st.lists(KEYS, max_size=30), st.integers(-5, 5)),
), max_size=60)


def test_the_compiled_map_is_built():
    assert FPMap is not None, "kernels/_fpmap.pyx was not built: run `make venv`"


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_compiled_equals_reference(ops):
    a, b = new_fpmap(capacity=1), PyFPMap()
    for op, x, y in ops:
        if op == "put":
            a.put(x, y)
            b.put(x, y)
        elif op == "get":
            assert a.get(x, y) == b.get(x, y)
            assert (x in a) == (x in b)
        else:
            ks = np.array(x, dtype=np.uint64)
            ra, rb = getattr(a, op)(ks, y), getattr(b, op)(ks, y)
            if op == "intern":
                assert ra[0].tolist() == rb[0].tolist() and ra[1].tolist() == rb[1].tolist()
                assert ra[0].dtype == np.int64 and ra[1].dtype == np.uint64
            else:
                assert ra.tolist() == rb.tolist()
        assert len(a) == len(b)
    ka, va = a.items()
    kb, vb = b.items()
    assert dict(zip(ka.tolist(), va.tolist())) == dict(zip(kb.tolist(), vb.tolist()))


def test_a_million_keys_through_doublings_and_the_memory_per_key():
    rng = np.random.default_rng(3)
    ks = np.unique(rng.integers(0, 2 ** 63, size=1_000_000, dtype=np.uint64) * 2 + 1)
    m = new_fpmap()
    rows, new = m.intern(ks, 0)
    assert rows.tolist() == list(range(len(ks))) and new.tolist() == ks.tolist()
    again, none = m.intern(ks[::-1].copy(), len(ks))
    assert again.tolist() == list(range(len(ks)))[::-1] and len(none) == 0
    assert m.lookup(ks + 1).tolist() == [-1] * len(ks)      # even keys: none held
    assert len(m) == len(ks)
    assert m.nbytes / len(m) <= 17 / 0.35                   # grown at a load of 0.7: at least half full after


def test_bad_capacity_is_refused():
    with pytest.raises(ValueError):
        new_fpmap(0)
