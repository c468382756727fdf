"""The part-vector file ``partvec.npz``: URL fingerprint → rank for the next session.

Format (version 1)
------------------
A NumPy ``.npz`` archive (``np.load(path, allow_pickle=False)`` reads it; no
pickles), written atomically (temporary file + rename):

================  ==============  ==========================================================
key               dtype, shape    meaning
================  ==============  ==========================================================
``format``        int64 scalar    1
``kind``          str scalar      ``"abc-partvec"``
``parts``         int64 scalar    K, the number of ranks the vector is for
``model``         str scalar      ``page-gp`` / ``site-gp`` / ``page-hp`` / ``site-hp``
                                  (``+remap`` appended after :func:`remap`)
``imbalance``     float64 scalar  tolerance ε the partitioner was given
``seed``          int64 scalar    partitioner seed (-1: none)
``n_buckets``     int64 scalar    M of the hash fallback (``fp % M % K``), 4096
``url_fp``        uint64 [N]      fingerprints of the assigned URLs, **sorted ascending**, distinct
``url_rank``      int16 [N]       rank of ``url_fp[i]``
``url_bytes``     int64 [N]       body bytes of the URL in the source session (for remapping)
``url_blob``,     uint8 [B],      the URLs in ``url_fp`` order, UTF-8, packed with
``url_off``       int64 [N+1]     :func:`abc_crawler.store.session.pack_strings`
``host_fp``       uint64 [H]      ``fingerprint(host)``, **sorted ascending**, distinct
``host_rank``     int16 [H]       rank holding most of that host's assigned pages (ties: lowest rank)
``host_blob``,    uint8, int64    the host names in ``host_fp`` order
``host_off``
``metrics``       str scalar      JSON: predicted metrics (:func:`~.metrics.predict` output of the
                                  model and of the hash baselines), partition report
``source``        str scalar      session directory the vector was computed from
``created``       str scalar      UTC ISO-8601 time of writing
================  ==============  ==========================================================

The N URLs are the pages the source session requested (the vertices of the
models; for site models every requested page of a host carries its host's
rank).

Owner rule (:func:`abc_crawler.web.ownership.partvec_owner`), :meth:`PartVec.owner`
    1. the URL's fingerprint is in ``url_fp`` → its ``url_rank``;
    2. else its host's fingerprint is in ``host_fp`` → that ``host_rank``;
    3. else ``fp % n_buckets % K`` (the ``hash`` assignment).
It is a pure function of the URL and the file, so every rank computes the
same owner. A crawler must use the vector with exactly ``parts`` ranks (use
:func:`remap` otherwise).

Examples
--------
>>> import numpy as np
>>> from abc_crawler.store.session import SessionGraph
>>> g = SessionGraph.from_urls(["http://a.test/", "http://a.test/x", "http://b.test/"], ranks=2)
>>> g.url_rank[:] = 0
>>> pv = make_partvec(g, np.array([1, 1, 0]), K=2, model="page-gp")
>>> pv.rank_of_fp(g.url_fp[0]), pv.host_rank("a.test"), pv.owner("http://a.test/new")
(1, 1, 1)
"""
from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..store.session import SessionGraph, atomic_write_bytes, pack_strings, unpack_strings
from ..web.urls import fingerprint, host_of
from ._np import uniq_index, uniq_inverse
from ..web.ownership import N_BUCKETS, partvec_owner, partvec_owners, url_hosts

__all__ = ["PARTVEC_FORMAT", "PARTVEC_FILE", "PartVec", "make_partvec", "save_partvec",
           "load_partvec", "remap"]

PARTVEC_FORMAT = 1
PARTVEC_FILE = "partvec.npz"
_KIND = "abc-partvec"


@dataclass
class PartVec:
    """A loaded part vector (see the module docstring for the file format).

    Attributes
    ----------
    K : int
        Number of ranks.
    model : str
    imbalance : float
    seed : int or None
    n_buckets : int
    url_fp : numpy.ndarray of uint64, sorted
    url_rank : numpy.ndarray of int16
    url_bytes : numpy.ndarray of int64
    url_blob, url_off : numpy.ndarray
        Packed URLs (decode one with :meth:`url`, all with :attr:`urls`).
    host_fp : numpy.ndarray of uint64, sorted
    host_rank_ : numpy.ndarray of int16
    host_blob, host_off : numpy.ndarray
    metrics : dict
    source : str
    created : str
    """

    K: int
    model: str
    imbalance: float
    seed: int | None
    n_buckets: int
    url_fp: np.ndarray
    url_rank: np.ndarray
    url_bytes: np.ndarray
    url_blob: np.ndarray
    url_off: np.ndarray
    host_fp: np.ndarray
    host_rank_: np.ndarray
    host_blob: np.ndarray
    host_off: np.ndarray
    metrics: dict = field(default_factory=dict)
    source: str = ""
    created: str = ""

    def __len__(self) -> int:
        return int(self.url_fp.shape[0])

    @property
    def urls(self) -> list[str]:
        """All assigned URLs, in ``url_fp`` order."""
        return unpack_strings(self.url_blob, self.url_off)

    @property
    def hosts(self) -> list[str]:
        """All hosts of the host table, in ``host_fp`` order."""
        return unpack_strings(self.host_blob, self.host_off)

    def url(self, i: int) -> str:
        """URL of entry ``i``."""
        return self.url_blob[self.url_off[i]:self.url_off[i + 1]].tobytes().decode()

    def rank_of_fp(self, fp: int) -> int | None:
        """Rank of a URL fingerprint, or None if the vector does not hold it."""
        fp = np.uint64(fp)
        i = int(np.searchsorted(self.url_fp, fp))
        if i < self.url_fp.shape[0] and self.url_fp[i] == fp:
            return int(self.url_rank[i])
        return None

    def ranks_of_fps(self, fps) -> np.ndarray:
        """Vectorized :meth:`rank_of_fp`: int64 ranks, -1 where absent."""
        return _lookup(self.url_fp, self.url_rank, np.asarray(fps, dtype=np.uint64))

    def host_rank(self, host: str) -> int | None:
        """Rank holding most of ``host``'s assigned pages, or None for an unknown host."""
        return self.host_rank_of_fp(fingerprint(host))

    def host_rank_of_fp(self, hfp: int) -> int | None:
        """:meth:`host_rank` by the host's fingerprint."""
        hfp = np.uint64(hfp)
        i = int(np.searchsorted(self.host_fp, hfp))
        if i < self.host_fp.shape[0] and self.host_fp[i] == hfp:
            return int(self.host_rank_[i])
        return None

    def host_ranks_of_fps(self, hfps) -> np.ndarray:
        """Vectorized :meth:`host_rank_of_fp`: int64 ranks, -1 for unknown hosts."""
        return _lookup(self.host_fp, self.host_rank_, np.asarray(hfps, dtype=np.uint64))

    def owner(self, url: str, fp: int | None = None) -> int:
        """Owner of a canonical URL under this vector (:func:`abc_crawler.web.ownership.partvec_owner`)."""
        return partvec_owner(self, url, fp)

    def owners_of_graph(self, graph: SessionGraph, hosts=None) -> np.ndarray:
        """Owner of every URL-table entry of ``graph`` (:func:`abc_crawler.web.ownership.partvec_owners`)."""
        return partvec_owners(self, graph, hosts)


def _lookup(keys: np.ndarray, vals: np.ndarray, q: np.ndarray) -> np.ndarray:
    if keys.shape[0] == 0:
        return np.full(q.shape, -1, dtype=np.int64)
    i = np.searchsorted(keys, q)
    i = np.minimum(i, keys.shape[0] - 1)
    hit = keys[i] == q
    return np.where(hit, vals[i].astype(np.int64), -1)


def _host_table(hosts: list[str], host_of_entry: np.ndarray, ranks: np.ndarray, K: int):
    """Majority rank per host: (sorted host fps, ranks, host names in that order)."""
    H = len(hosts)
    cnt = np.zeros((H, K), dtype=np.int64)
    np.add.at(cnt, (host_of_entry, ranks.astype(np.int64)), 1)
    has = cnt.sum(axis=1) > 0
    maj = np.argmax(cnt, axis=1)  # first maximum = lowest rank on ties
    idx = np.flatnonzero(has)
    hfp = np.array([fingerprint(hosts[h]) for h in idx], dtype=np.uint64)
    hfp, first = uniq_index(hfp)
    idx = idx[first]
    return hfp, maj[idx].astype(np.int16), [hosts[h] for h in idx]


def make_partvec(graph: SessionGraph, url_part, K: int, model: str, imbalance: float = 0.05,
                 seed: int | None = None, metrics: dict | None = None, n_buckets: int = N_BUCKETS,
                 source: str = "", hosts=None) -> PartVec:
    """Build a :class:`PartVec` from a rank per URL-table entry.

    Parameters
    ----------
    graph : SessionGraph
    url_part : array_like of int, shape (U,)
        Rank of every URL-table entry; entries of URLs that were not
        requested are ignored (they are left to the fallback rule).
    K : int
    model : str
    imbalance : float, optional
    seed : int, optional
    metrics : dict, optional
    n_buckets : int, optional
    source : str, optional
    hosts : tuple, optional
        Precomputed :func:`~abc_crawler.web.ownership.url_hosts`.

    Returns
    -------
    PartVec
    """
    up = np.asarray(url_part, dtype=np.int64)
    U = len(graph.urls)
    if up.shape != (U,):
        raise ValueError(f"url_part has shape {up.shape}, expected ({U},)")
    if not (1 <= K <= np.iinfo(np.int16).max):
        raise ValueError(f"K={K} out of range [1, 32767]")
    idx = np.flatnonzero(graph.url_rank >= 0)
    r = up[idx]
    if r.size and (r.min() < 0 or r.max() >= K):
        raise ValueError(f"url_part assigns a requested URL to a rank outside [0, {K})")
    fp = graph.url_fp[idx].astype(np.uint64)
    fp, first = uniq_index(fp)  # sorted; a (never seen) fp collision keeps one entry
    idx, r = idx[first], r[first]
    hid, names = hosts if hosts is not None else url_hosts(graph)
    hfp, hrank, hnames = _host_table(names, hid[idx], r, K)
    ublob, uoff = pack_strings(graph.urls[i] for i in idx)
    hblob, hoff = pack_strings(hnames)
    return PartVec(K=int(K), model=model, imbalance=float(imbalance), seed=seed, n_buckets=int(n_buckets),
                   url_fp=fp, url_rank=r.astype(np.int16), url_bytes=graph.url_bytes[idx].astype(np.int64),
                   url_blob=ublob, url_off=uoff, host_fp=hfp, host_rank_=hrank, host_blob=hblob,
                   host_off=hoff, metrics=dict(metrics or {}), source=str(source),
                   created=datetime.now(timezone.utc).isoformat(timespec="seconds"))


def _path(path: str | os.PathLike) -> Path:
    p = Path(path)
    return p / PARTVEC_FILE if p.is_dir() else p


def save_partvec(path: str | os.PathLike, pv: PartVec) -> Path:
    """Write ``pv`` atomically to ``path`` (a file, or a session directory).

    Returns
    -------
    pathlib.Path
        The file written.
    """
    p = _path(path)
    buf = io.BytesIO()
    np.savez_compressed(
        buf, format=np.int64(PARTVEC_FORMAT), kind=np.str_(_KIND), parts=np.int64(pv.K),
        model=np.str_(pv.model), imbalance=np.float64(pv.imbalance),
        seed=np.int64(-1 if pv.seed is None else pv.seed), n_buckets=np.int64(pv.n_buckets),
        url_fp=pv.url_fp.astype(np.uint64), url_rank=pv.url_rank.astype(np.int16),
        url_bytes=pv.url_bytes.astype(np.int64), url_blob=pv.url_blob, url_off=pv.url_off,
        host_fp=pv.host_fp.astype(np.uint64), host_rank=pv.host_rank_.astype(np.int16),
        host_blob=pv.host_blob, host_off=pv.host_off,
        metrics=np.str_(json.dumps(pv.metrics, sort_keys=True)), source=np.str_(pv.source),
        created=np.str_(pv.created))
    atomic_write_bytes(p, buf.getvalue())
    return p


def load_partvec(path: str | os.PathLike) -> PartVec:
    """Read a part vector (a ``partvec.npz`` file or a directory holding one).

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not a part vector, unsupported format version, or inconsistent arrays.
    """
    p = _path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no part vector")
    with np.load(p, allow_pickle=False) as z:
        if "kind" not in z.files or str(z["kind"]) != _KIND:
            raise ValueError(f"{p}: not an ABC part vector")
        version = int(z["format"])
        if version != PARTVEC_FORMAT:
            raise ValueError(f"{p}: part-vector format {version}, this ABC reads {PARTVEC_FORMAT}")
        seed = int(z["seed"])
        pv = PartVec(K=int(z["parts"]), model=str(z["model"]), imbalance=float(z["imbalance"]),
                     seed=None if seed < 0 else seed, n_buckets=int(z["n_buckets"]),
                     url_fp=z["url_fp"], url_rank=z["url_rank"], url_bytes=z["url_bytes"],
                     url_blob=z["url_blob"], url_off=z["url_off"], host_fp=z["host_fp"],
                     host_rank_=z["host_rank"], host_blob=z["host_blob"], host_off=z["host_off"],
                     metrics=json.loads(str(z["metrics"])), source=str(z["source"]),
                     created=str(z["created"]))
    n = pv.url_fp.shape[0]
    if (pv.url_rank.shape != (n,) or pv.url_off.shape != (n + 1,) or pv.url_bytes.shape != (n,)
            or pv.host_rank_.shape != pv.host_fp.shape or pv.host_off.shape != (pv.host_fp.shape[0] + 1,)):
        raise ValueError(f"{p}: inconsistent array lengths")
    if n > 1 and np.any(pv.url_fp[1:] <= pv.url_fp[:-1]):
        raise ValueError(f"{p}: url_fp is not sorted and distinct")
    if pv.host_fp.shape[0] > 1 and np.any(pv.host_fp[1:] <= pv.host_fp[:-1]):
        raise ValueError(f"{p}: host_fp is not sorted and distinct")
    if n and (pv.url_rank.min() < 0 or pv.url_rank.max() >= pv.K):
        raise ValueError(f"{p}: ranks outside [0, {pv.K})")
    return pv


def remap(pv: PartVec, new_K: int) -> PartVec:
    """Map a K-way part vector onto ``new_K`` ranks without repartitioning.

    Parameters
    ----------
    pv : PartVec
    new_K : int

    Returns
    -------
    PartVec
        A new vector; ``pv`` is not modified (returned as is when
        ``new_K == pv.K``).

    Notes
    -----
    ``rank mod new_K`` would be poor: it ignores the part weights and, for
    ``new_K`` not dividing K, piles two parts on some ranks and one on
    others. Instead the units below are packed greedily (LPT: heaviest
    first, each onto the rank whose larger normalized load — bytes/B or
    pages/P — ends up smallest; ties to the lowest rank):

    * ``new_K <= K``: the units are the old parts. Parts are merged whole, so
      no link between two assigned pages becomes remote: the page-graph cut
      and the page-hypergraph connectivity−1 can only go down, and the
      balance is that of the bin packing. (Links to URLs outside the vector
      follow the fallback rule, whose host majorities and ``fp % M % K``
      change with K, so their share of the volume may move either way.)
    * ``new_K > K``: parts must be split; the units are the (old part, host)
      groups, so a host's pages within a part stay together (most links are
      intra-host); a group heavier than half of a new rank's share is cut
      into runs of consecutive URLs in sorted order (pages of one directory
      tend to link to each other). Re-running ``abc-repartition --parts
      new_K`` on the session gives better cuts.

    The host table is recomputed from the new ranks; ``metrics`` is reset to
    ``{"remapped_from": K}`` (recompute with :func:`~.metrics.predict`).
    """
    if not (1 <= new_K <= np.iinfo(np.int16).max):
        raise ValueError(f"new_K={new_K} out of range [1, 32767]")
    old = pv.url_rank.astype(np.int64)
    if new_K == pv.K:
        return pv
    urls = pv.urls
    hosts_of = [host_of(u) for u in urls]
    hmap: dict[str, int] = {}
    hid = np.fromiter((hmap.setdefault(h, len(hmap)) for h in hosts_of), dtype=np.int64, count=len(urls))
    if new_K < pv.K:
        unit = old
    else:
        unit = uniq_inverse(old * max(len(hmap), 1) + hid)[1]
        # split groups heavier than half a new rank's share into runs of URL-sorted pages
        wt = pv.url_bytes / max(float(pv.url_bytes.sum()), 1.0) + 1.0 / max(len(urls), 1)
        thr = (wt.sum() / new_K) / 2
        order = sorted(range(len(urls)), key=lambda i: (unit[i], urls[i]))
        order = np.asarray(order, dtype=np.int64)
        u_o, w_o = unit[order], wt[order]
        cum = np.cumsum(w_o) - w_o
        start = np.r_[True, u_o[1:] != u_o[:-1]] if u_o.size else np.zeros(0, bool)
        base = np.maximum.accumulate(np.where(start, cum, 0.0)) if u_o.size else cum
        chunk = np.floor((cum - base) / thr).astype(np.int64)
        sub = np.empty_like(unit)
        sub[order] = uniq_inverse(u_o * (int(chunk.max()) + 1 if chunk.size else 1) + chunk)[1]
        unit = sub
    nu = int(unit.max()) + 1 if unit.size else 0
    ub = np.zeros(nu)
    up = np.zeros(nu)
    np.add.at(ub, unit, pv.url_bytes.astype(np.float64))
    np.add.at(up, unit, 1.0)
    B, P = max(ub.sum(), 1.0), max(up.sum(), 1.0)
    wb, wp = ub / B, up / P
    order = np.lexsort((np.arange(nu), -(wb + wp)))
    lb = np.zeros(new_K)
    lp = np.zeros(new_K)
    to = np.zeros(nu, dtype=np.int64)
    for u in order:
        r = int(np.argmin(np.maximum(lb + wb[u], lp + wp[u])))
        to[u] = r
        lb[r] += wb[u]
        lp[r] += wp[u]
    new_rank = to[unit] if unit.size else unit
    hfp, hrank, hnames = _host_table(list(hmap), hid, new_rank, new_K)
    hblob, hoff = pack_strings(hnames)
    model = pv.model if pv.model.endswith("+remap") else pv.model + "+remap"
    return PartVec(K=int(new_K), model=model, imbalance=pv.imbalance, seed=pv.seed, n_buckets=pv.n_buckets,
                   url_fp=pv.url_fp, url_rank=new_rank.astype(np.int16), url_bytes=pv.url_bytes,
                   url_blob=pv.url_blob, url_off=pv.url_off, host_fp=hfp, host_rank_=hrank,
                   host_blob=hblob, host_off=hoff, metrics={"remapped_from": pv.K}, source=pv.source,
                   created=datetime.now(timezone.utc).isoformat(timespec="seconds"))
