"""The report's figures of one session: measured, re-derived from its files, and predicted.

The figures (:data:`FIGURES`) are those of ``stats.json``'s ``exchange`` and
``imbalance`` sections, defined in ``docs/SESSION_FORMAT.md``. Predictions are
:func:`~abc_crawler.partition.assignment_metrics.predict` of an owner array on a
session graph, with :func:`~abc_crawler.partition.assignment_metrics.exchange_lower_bounds`
for the two figures that depend on the crawl's order.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..partition.assignment_metrics import exchange_lower_bounds, predict
from ..partition.models import distinct_links, url_lengths
from ..web.ownership import owners_hash, owners_measured, owners_site_hash
from ..partition.partvec import load_partvec, remap
from ..store.session import SessionGraph
from .load import STATS_KEYS, SessionFiles

__all__ = ["FIGURES", "FIGURE_KIND", "PCT_DECIMALS", "measured_figures", "predicted_figures", "resolve_partvec",
           "assignment_owners", "recompute_measured"]

#: The compared figures: key, label, kind ("int" counts, "pct" percentages).
FIGURES = (
    ("volume_bytes", "volume_bytes (MV)", "int"),
    ("wire_bytes", "wire_bytes", "int"),
    ("messages_thesis", "messages_thesis", "int"),
    ("messages_mpi", "messages_mpi", "int"),
    ("storage_pct", "storage imbalance %", "pct"),
    ("request_pct", "request imbalance %", "pct"),
)
#: The kind of each figure, by key.
FIGURE_KIND = {k: kind for k, _, kind in FIGURES}

#: ``stats.json`` rounds the imbalances to this many decimals.
PCT_DECIMALS = 4


def measured_figures(s: SessionFiles) -> dict:
    """The measured figures of ``stats.json`` and the per-rank loads.

    Returns
    -------
    dict
        The keys of :data:`FIGURES`, ``bytes_per_rank``, ``requests_per_rank``
        (from ``per_rank`` of ``stats.json``, else from ``graph.npz``),
        ``supersteps``, ``requests``, ``pages_crawled``, ``ranks``.
    """
    ex, im = s.stats["exchange"], s.stats["imbalance"]
    out = {k: ex[k] for k in STATS_KEYS["exchange"]}
    out.update({k: im[k] for k in STATS_KEYS["imbalance"]})
    K = s.ranks
    per = s.stats.get("per_rank")
    if isinstance(per, list) and len(per) == K and all("bytes" in r and "requests" in r for r in per):
        per = sorted(per, key=lambda r: r.get("rank", 0))
        out["bytes_per_rank"] = [int(r["bytes"]) for r in per]
        out["requests_per_rank"] = [int(r["requests"]) for r in per]
    else:
        g = s.graph
        req = g.url_rank >= 0
        r = g.url_rank[req].astype(np.int64)
        out["bytes_per_rank"] = np.bincount(r, weights=g.url_bytes[req], minlength=K).astype(np.int64).tolist()
        out["requests_per_rank"] = np.bincount(r, minlength=K).astype(np.int64).tolist()
    out["supersteps"] = int(ex.get("supersteps", s.exchange["step_volume"].shape[0]))
    out["requests"] = int(s.stats.get("requests", int((s.graph.url_rank >= 0).sum())))
    out["pages_crawled"] = int(s.stats.get("pages_crawled", s.graph.n_nodes))
    out["ranks"] = K
    return out


def predicted_figures(graph: SessionGraph, owners, K: int, *, url_len=None, links=None) -> dict:
    """:func:`~abc_crawler.partition.assignment_metrics.predict` plus the exchange's lower bounds.

    Parameters
    ----------
    graph : SessionGraph
    owners : array_like of int, shape (U,)
        Rank of every URL-table entry.
    K : int

    Returns
    -------
    dict
        ``predict``'s keys; ``wire_urls`` and ``wire_url_bytes`` (each
        distinct (own(u), v) with own(v) ≠ own(u) sent once as ``v\\n``);
        ``rank_pairs`` (ordered rank pairs with a remote link);
        ``wire_bytes_min`` (= ``wire_url_bytes``) and ``messages_mpi_min``
        (= ``rank_pairs``), lower bounds of ``wire_bytes`` and
        ``messages_mpi``, which are None: they depend on the order in which
        the crawl finds the links.

    Examples
    --------
    >>> g = SessionGraph.from_urls(["http://a.test/", "http://b.test/", "http://c.test/"], ranks=2)
    >>> g.url_rank[:2] = [0, 1]
    >>> g.link_src = np.array([0, 0, 1], np.int32); g.link_dst = np.array([1, 2, 2], np.int32)
    >>> m = predicted_figures(g, np.array([0, 1, 1]), 2)
    >>> m["volume_bytes"], m["wire_bytes_min"], m["messages_thesis"], m["messages_mpi_min"]
    (30, 30, 1, 1)
    """
    url_len = url_lengths(graph) if url_len is None else url_len
    links = distinct_links(graph) if links is None else links
    m = predict(graph, owners, K, url_len=url_len, links=links)
    w = exchange_lower_bounds(owners, links, url_len, K)
    m.update(w)
    m.update(wire_bytes=None, wire_bytes_min=w["wire_url_bytes"], messages_mpi=None,
             messages_mpi_min=w["rank_pairs"])
    return m


def resolve_partvec(s: SessionFiles) -> dict | None:
    """The part vector a session was crawled with, as the crawl used it.

    Returns
    -------
    dict or None
        None for a hash / site-hash session. Otherwise ``path`` (as named
        in the manifest), ``found``, and when found: ``file``, ``pv`` (the
        vector with ``s.ranks`` parts: remapped like the crawl did when the
        session ran with ``--remap``), ``model``, ``K``, ``remapped_from``,
        ``source``, ``stored`` (the prediction stored in the file when it is
        for ``s.ranks`` ranks, else None), ``note``.
    """
    a = s.assignment
    if not a.startswith("partvec:"):
        return None
    raw = a[len("partvec:"):]
    rp = Path(raw)
    cands = [rp] if rp.is_absolute() else [rp, s.path / rp, s.path.parent / rp]
    cfg_assign = s.config.get("assign")
    if isinstance(cfg_assign, str) and cfg_assign not in ("hash", "site-hash"):
        cands.append(Path(cfg_assign))
    found = next((c for c in cands if c.is_file() or (c.is_dir() and (c / "partvec.npz").is_file())), None)
    info: dict = {"path": raw, "found": found is not None, "stored": None, "note": None, "pv": None}
    if found is None:
        info["note"] = f"part vector {raw} not found: the predicted columns are left out"
        return info
    try:
        pv0 = load_partvec(found)
    except (OSError, ValueError) as e:
        info.update(found=False, note=f"part vector {found} unreadable ({e}): the predicted columns are left out")
        return info
    pv = pv0
    if pv0.K != s.ranks:
        if not s.remap:
            info.update(found=False, note=f"part vector {found} is for {pv0.K} ranks but the session ran with "
                                          f"{s.ranks} without --remap: not the vector the crawl used")
            return info
        pv = remap(pv0, s.ranks)
    stored = pv0.metrics.get("predicted") if isinstance(pv0.metrics, dict) else None
    if not (isinstance(stored, dict) and stored.get("K") == s.ranks):
        stored = None
    info.update(file=str(found), pv=pv, model=pv.model, K=pv.K, source=pv0.source, stored=stored,
                remapped_from=pv0.K if pv is not pv0 else None)
    if stored is None:
        info["note"] = (f"part vector {found} stores no prediction for {s.ranks} ranks"
                        + (f" (made for {pv0.K}, remapped by the crawl)" if pv is not pv0 else ""))
    return info


def assignment_owners(s: SessionFiles, pvinfo: dict | None) -> np.ndarray | None:
    """Owners of every URL of ``s.graph`` under the session's own assignment (None if unknown)."""
    a = s.assignment
    if a == "hash":
        return owners_hash(s.graph, s.ranks, s.n_buckets)
    if a == "site-hash":
        return owners_site_hash(s.graph, s.ranks, s.n_buckets)
    if pvinfo is not None and pvinfo.get("pv") is not None:
        return pvinfo["pv"].owners_of_graph(s.graph)
    return None


def recompute_measured(s: SessionFiles, pvinfo: dict | None, url_len=None, links=None) -> dict:
    """Re-derive the measured figures from ``graph.npz`` and ``exchange.npz``.

    Owners are the measured ``url_rank`` of requested URLs and the session's
    assignment for link targets it never requested; the link figures come
    from :func:`~abc_crawler.partition.assignment_metrics.predict` on them, ``wire_bytes``
    and ``messages_mpi`` from the rows of ``exchange.npz``.

    Returns
    -------
    dict
        The figures (``available`` False, with ``note``, when the assignment's
        owners cannot be rebuilt, e.g. a missing part vector),
        ``wire_url_bytes`` (the URL bytes the graph says must cross; the
        measured ``wire_bytes`` must not be smaller, ``wire_ok``) and ``check``:
        ``{"consistent": bool, "differences": {key: [stats, recomputed]}}``
        (imbalances compared after rounding to :data:`PCT_DECIMALS`).
    """
    fb = assignment_owners(s, pvinfo)
    if fb is None:
        return {"available": False, "note": "the session's owner function cannot be rebuilt "
                                            "(part vector not found); no re-derivation"}
    g = s.graph
    own = owners_measured(g, fb)
    m = predicted_figures(g, own, s.ranks, url_len=url_len, links=links)
    rows = s.exchange["rows"]
    out = {k: m[k] for k in ("volume_bytes", "messages_thesis", "storage_pct", "request_pct",
                             "bytes_per_rank", "requests_per_rank")}
    out["wire_bytes"] = int(rows[:, 3].sum()) if rows.size else 0
    out["messages_mpi"] = int(rows.shape[0])
    out["wire_url_bytes"] = m["wire_url_bytes"]
    out["wire_ok"] = out["wire_bytes"] >= m["wire_url_bytes"]
    out["available"] = True
    meas = measured_figures(s)
    diff = {}
    for key, _, kind in FIGURES:
        a, b = meas[key], out[key]
        same = (round(float(b), PCT_DECIMALS) == round(float(a), PCT_DECIMALS)) if kind == "pct" else (a == b)
        if not same:
            diff[key] = [a, b]
    out["check"] = {"consistent": not diff, "differences": diff}
    return out
