"""Who owns a URL, written from docs/SESSION_FORMAT.md and partition/partvec.py's file format alone
— not with the crawler's code — so that the ownership check of crawlcheck is a check, not the
crawler comparing itself with itself:

* ``hash``: ``xxh3_64(url) % M % K`` (M: ``assign_buckets``);
* ``site-hash``: ``xxh3_64(host[:port]) % M % K``;
* a part vector (``partvec.npz``): the URL's rank in the vector; else the rank of its host there;
  else ``hash`` with the vector's M and K.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import xxhash

__all__ = ["owner_function"]


def _host(url: str) -> str:
    return url.split("/", 3)[2]


def _strings(blob: np.ndarray, off: np.ndarray) -> list[str]:
    b = blob.tobytes()
    return [b[off[i]:off[i + 1]].decode() for i in range(len(off) - 1)]


def owner_function(assign: str, ranks: int, buckets: int):
    """``url -> rank`` for the session's ``--assign`` value (a part vector: its file, or the session
    directory holding ``partvec.npz``)."""
    def h(text: str, m: int, k: int) -> int:
        return xxhash.xxh3_64_intdigest(text.encode()) % m % k

    if assign == "hash":
        return lambda url: h(url, buckets, ranks)
    if assign == "site-hash":
        return lambda url: h(_host(url), buckets, ranks)
    p = Path(assign)
    if p.is_dir():
        p = p / "partvec.npz"
    with np.load(p, allow_pickle=False) as z:
        urls = _strings(z["url_blob"], z["url_off"])
        by_url = dict(zip(urls, z["url_rank"].tolist()))
        by_host = dict(zip(_strings(z["host_blob"], z["host_off"]), z["host_rank"].tolist()))
        m, k = int(z["n_buckets"]), int(z["parts"])
    def owner(url: str) -> int:
        r = by_url.get(url)
        if r is None:
            r = by_host.get(_host(url))
        return h(url, m, k) if r is None else int(r)
    return owner
