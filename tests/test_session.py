"""The session files written at the end of a crawl: .npz writer and graph round trip."""
from __future__ import annotations

import io
import zipfile

import numpy as np

from hypothesis import given, settings, strategies as st

from abc_crawler.store.session import (SessionGraph, load_graph, npz_bytes, npz_stored_bytes, pack_strings,
                                       save_graph, take_strings, unpack_strings)


def test_npz_bytes_round_trips_every_dtype_and_shape(tmp_path):
    rng = np.random.default_rng(3)
    arrays = {
        "scalar": np.int64(7),
        "fp": rng.integers(0, 2**63, size=5000, dtype=np.uint64),
        "small": np.array([-1, 0, 5], dtype=np.int16),
        "empty": np.zeros(0, dtype=np.int32),
        "matrix": rng.random((17, 3)),
        "status": np.full(10000, 200, dtype=np.int16),
        "blob": np.frombuffer(b"http://a.test/x\xc3\xa9", dtype=np.uint8),
    }
    p = tmp_path / "x.npz"
    p.write_bytes(npz_bytes(**arrays))
    with np.load(p, allow_pickle=False) as z:
        assert sorted(z.files) == sorted(arrays)
        for k, a in arrays.items():
            got = z[k]
            assert got.dtype == np.asarray(a).dtype and got.shape == np.asarray(a).shape, k
            assert np.array_equal(got, a), k
    with zipfile.ZipFile(p) as zf:   # compressed, not stored
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_DEFLATED}
        status = zf.getinfo("status.npy")
        assert status.compress_size < status.file_size // 20


def test_stored_npz_bytes_read_back_the_same_uncompressed():
    arrays = {"fp": np.arange(1000, dtype=np.uint64), "blob": np.frombuffer(b"x\xc3\xa9" * 50, dtype=np.uint8)}
    data = npz_stored_bytes(**arrays)
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        assert all(np.array_equal(z[k], a) and z[k].dtype == a.dtype for k, a in arrays.items())
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_STORED}


@settings(max_examples=300, deadline=None)
@given(strings=st.lists(st.text(max_size=12), max_size=40), seed=st.integers(0, 2**32 - 1),
       chunk=st.integers(1, 7))
def test_take_strings_reorders_packed_strings_as_lists_would(strings, seed, chunk):
    order = np.random.default_rng(seed).permutation(len(strings))
    blob, off = take_strings(*pack_strings(strings), order, chunk=chunk)
    want_blob, want_off = pack_strings([strings[i] for i in order])
    assert blob.dtype == want_blob.dtype and off.dtype == want_off.dtype
    assert np.array_equal(blob, want_blob) and np.array_equal(off, want_off)
    assert unpack_strings(blob, off) == [strings[i] for i in order]


def test_graph_round_trip(tmp_path):
    urls = ["http://a.test/", "http://a.test/é", "http://b.test:8080/x?y=1"]
    g = SessionGraph.from_urls(urls, ranks=4)
    g.url_rank[:] = [0, 3, -1]
    g.url_status[:] = [200, 404, 0]
    g.link_src = np.array([0, 0, 1], dtype=np.int32)
    g.link_dst = np.array([1, 2, 0], dtype=np.int32)
    save_graph(tmp_path, g)
    h = load_graph(tmp_path)
    assert h.ranks == 4 and h.urls == urls
    for name in ("url_fp", "url_status", "url_rank", "link_src", "link_dst", "edge_src"):
        assert np.array_equal(getattr(h, name), getattr(g, name)), name
        assert getattr(h, name).dtype == getattr(g, name).dtype, name
