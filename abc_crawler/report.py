"""``abc-report``: what a session's page-to-rank assignment cost on the actual crawl.

Usage::

    abc-report SESSION [--against OTHER] [--out DIR] [--parts 2,4,8,16,32,64]
               [--no-plots] [--no-hp] [--no-thesis] [--seed S] [--threads T]

For one session directory (DESIGN §9) the report puts side by side

measured
    the figures of ``stats.json`` (DESIGN §7): Türk volume ``volume_bytes``,
    ``wire_bytes``, ``messages_thesis``, ``messages_mpi``, storage and request
    imbalance. They are re-derived from ``graph.npz`` and ``exchange.npz``
    with the session's own owner function, and the report says whether the
    two agree (``check``).
predicted (stored)
    when ``manifest.json`` says the session was crawled with
    ``partvec:<path>`` and that file exists: the prediction
    ``abc-repartition`` stored in it (:func:`~abc_crawler.partition.metrics.predict`
    on the graph it was made from);
predicted (on OTHER)
    with ``--against OTHER``: the same part vector's owner rule evaluated on
    OTHER's graph, recomputed here (OTHER is normally the session the vector
    was made from, so this equals the stored prediction);
hash (on this graph)
    the URL-hash baseline predicted on the session's own graph — what the
    same crawl would have cost under ``--assign hash``;
OTHER measured, and this / OTHER
    with ``--against``: the other session's measured figures and the ratios
    (counts) or differences in percentage points (imbalances).

``wire_bytes`` and ``messages_mpi`` depend on the order in which the crawl
finds links, so the report gives lower bounds for them ("≥ n"): for
``wire_bytes`` the URL bytes that must cross (a rank sends each remote URL to
its owner once per session, as a line ``URL\\n``: Σ over distinct (own(u), v)
with own(v) ≠ own(u) of len(v) + 1; the crawler adds a redirect-hop count
``\\tN`` to a URL it first found as a redirect target), for ``messages_mpi``
the ordered rank pairs that exchange anything.

Then, unless ``--no-thesis``, Türk's Tables 6.1–6.5 for this session's graph:
for each K of ``--parts`` (default 2, 4, 8, 16, 32, 64; a K larger than the
requested pages is skipped, a site model's K larger than the hosts is left
out) the predicted volume of hash / site-hash / page-GP / site-GP, the
messages of hash / site-hash / page-HP / site-HP, and both imbalances of each.
The partitions are computed with :func:`abc_crawler.partition.cli.run_model`
(METIS with two constraints, Mt-KaHyPar KM1; balance repair) like
``abc-repartition``. On the 3,000-page session of ``make demo`` the whole
table took 13–16 s on two cores, about half of it page-HP (Mt-KaHyPar plus
the balance repair, up to 2.7 s at K = 64); ``--no-hp`` drops the hypergraph
models, ``--parts`` fewer K values, ``--no-thesis`` the table.

Output: ``DIR/report.md`` (Markdown with the tables, the PNG plots by relative
path and the definitions), ``DIR/report.json`` (every figure) and the PNGs,
each written atomically; ``DIR`` is ``SESSION/report`` by default. The main
table is printed on stdout.

Exit status: 0 on success; 2 with one line on stderr for bad input (missing
session directory, missing or unreadable ``stats.json`` / ``graph.npz`` /
``exchange.npz``, bad ``--parts``).

Examples
--------
>>> fmt_value("volume_bytes", 61544), fmt_value("storage_pct", 9.93906)
('61,544', '9.94')
"""
from __future__ import annotations

import argparse
import io
import json
import math
import sys
import time
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .exceptions import AbcError
from .session import SessionGraph, atomic_write_bytes, load_graph

__all__ = [
    "FIGURES",
    "DEFAULT_PARTS",
    "ReportError",
    "Session",
    "load_session",
    "measured_figures",
    "recompute_measured",
    "predicted_figures",
    "resolve_partvec",
    "dataset_properties",
    "thesis_table",
    "build_report",
    "render_markdown",
    "render_text",
    "make_plots",
    "fmt_value",
    "main",
]

PROG = "abc-report"
REPORT_FORMAT = 1

#: The compared figures: key, label, kind ("int" counts, "pct" percentages).
FIGURES = (
    ("volume_bytes", "volume_bytes (MV)", "int"),
    ("wire_bytes", "wire_bytes", "int"),
    ("messages_thesis", "messages_thesis", "int"),
    ("messages_mpi", "messages_mpi", "int"),
    ("storage_pct", "storage imbalance %", "pct"),
    ("request_pct", "request imbalance %", "pct"),
)
_KIND = {k: kind for k, _, kind in FIGURES}

#: K values of the thesis-style table (Türk's site-level experiments).
DEFAULT_PARTS = (2, 4, 8, 16, 32, 64)

#: Models of the thesis-style table, in column order.
_PARTITIONED = ("page-gp", "site-gp", "page-hp", "site-hp")
_TITLES = {"hash": "hash", "site-hash": "site-hash", "page-gp": "page-GP", "site-gp": "site-GP",
           "page-hp": "page-HP", "site-hp": "site-HP"}

#: ``stats.json`` rounds the imbalances to this many decimals.
PCT_DECIMALS = 4


class ReportError(AbcError):
    """Bad input: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line, exit 2
        raise ReportError(message)


# --------------------------------------------------------------------------- loading


@dataclass
class Session:
    """A session directory as the report reads it.

    Attributes
    ----------
    path : pathlib.Path
    stats : dict
        ``stats.json``.
    manifest : dict
        ``manifest.json`` ({} if absent).
    graph : SessionGraph
    exchange : dict of numpy.ndarray
        ``exchange.npz`` (``rows``, ``step_volume``, ``step_pages``, ``step_t``).
    """

    path: Path
    stats: dict
    manifest: dict
    graph: SessionGraph
    exchange: dict

    @property
    def ranks(self) -> int:
        return int(self.stats.get("ranks") or self.graph.ranks)

    @property
    def assignment(self) -> str:
        """``hash``, ``site-hash`` or ``partvec:<path>`` (manifest first, then stats)."""
        return str(self.manifest.get("assignment") or self.stats.get("assignment") or "hash")

    @property
    def config(self) -> dict:
        c = self.manifest.get("config")
        return c if isinstance(c, dict) else {}

    @property
    def n_buckets(self) -> int:
        return int(self.config.get("assign_buckets") or 4096)

    @property
    def remap(self) -> bool:
        return bool(self.config.get("remap", False))

    @property
    def name(self) -> str:
        return self.path.name or str(self.path)


def _read_json(path: Path, required: bool) -> dict:
    if not path.is_file():
        if required:
            raise ReportError(f"{path.parent}: no {path.name} (is this a finished session directory?)")
        return {}
    try:
        with open(path, "rb") as fh:
            obj = json.load(fh)
    except (OSError, ValueError) as e:
        raise ReportError(f"{path}: unreadable ({e})") from None
    if not isinstance(obj, dict):
        raise ReportError(f"{path}: expected a JSON object")
    return obj


_STATS_KEYS = {"exchange": ("volume_bytes", "wire_bytes", "messages_thesis", "messages_mpi"),
               "imbalance": ("storage_pct", "request_pct")}


def load_session(path) -> Session:
    """Read a session directory; :class:`ReportError` (one line) for anything missing.

    Parameters
    ----------
    path : str or path-like
        Session directory holding ``stats.json``, ``graph.npz`` and
        ``exchange.npz`` (``manifest.json`` is read when present).
    """
    p = Path(path)
    if not p.exists():
        raise ReportError(f"{p}: no such session directory")
    if not p.is_dir():
        raise ReportError(f"{p}: not a directory (give the session directory)")
    stats = _read_json(p / "stats.json", required=True)
    for sect, keys in _STATS_KEYS.items():
        d = stats.get(sect)
        missing = [k for k in keys if not isinstance(d, dict) or k not in d]
        if missing:
            raise ReportError(f"{p / 'stats.json'}: missing {sect}.{missing[0]}")
    manifest = _read_json(p / "manifest.json", required=False)
    if not (p / "graph.npz").is_file():
        raise ReportError(f"{p}: no graph.npz (is this a finished session directory?)")
    try:
        graph = load_graph(p)
    except (OSError, ValueError, KeyError) as e:
        raise ReportError(f"{p / 'graph.npz'}: unreadable ({e})") from None
    ex_path = p / "exchange.npz"
    if not ex_path.is_file():
        raise ReportError(f"{p}: no exchange.npz (is this a finished session directory?)")
    try:
        with np.load(ex_path, allow_pickle=False) as z:
            exchange = {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise ReportError(f"{ex_path}: unreadable ({e})") from None
    rows = exchange.get("rows")
    if rows is None or rows.ndim != 2 or rows.shape[1] != 5:
        raise ReportError(f"{ex_path}: 'rows' missing or not of shape (N, 5)")
    exchange.setdefault("step_volume", np.zeros((0, graph.ranks), np.int64))
    exchange.setdefault("step_t", np.zeros(0))
    return Session(p, stats, manifest, graph, exchange)


# --------------------------------------------------------------------------- figures


def measured_figures(s: Session) -> dict:
    """The measured figures of ``stats.json`` (DESIGN §7) and the per-rank loads.

    Returns
    -------
    dict
        The keys of :data:`FIGURES`, ``bytes_per_rank``, ``requests_per_rank``
        (from ``per_rank`` of ``stats.json``, else from ``graph.npz``),
        ``supersteps``, ``requests``, ``pages_crawled``, ``ranks``.
    """
    ex, im = s.stats["exchange"], s.stats["imbalance"]
    out = {k: ex[k] for k in _STATS_KEYS["exchange"]}
    out.update({k: im[k] for k in _STATS_KEYS["imbalance"]})
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


def _wire_model(owners: np.ndarray, links, url_len: np.ndarray, n_urls: int, K: int) -> dict:
    """Wire bytes and URLs of the crawler's exchange rule, and the rank pairs that exchange."""
    from .partition._np import uniq

    s, d = links
    os_, od = owners[s], owners[d]
    r = os_ != od
    U = max(n_urls, 1)
    key = uniq(os_[r] * U + d[r])  # distinct (sender rank, URL)
    return {"wire_url_bytes": int((url_len[key % U] + 1).sum()), "wire_urls": int(key.size),
            "rank_pairs": int(uniq(os_[r] * K + od[r]).size)}


def predicted_figures(graph: SessionGraph, owners, K: int, *, url_len=None, links=None) -> dict:
    """:func:`~abc_crawler.partition.metrics.predict` plus the exchange model.

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
    from .partition.metrics import predict
    from .partition.models import distinct_links, url_lengths

    url_len = url_lengths(graph) if url_len is None else url_len
    links = distinct_links(graph) if links is None else links
    m = predict(graph, owners, K, url_len=url_len, links=links)
    w = _wire_model(np.asarray(owners, dtype=np.int64), links, url_len, len(graph.urls), K)
    m.update(w)
    m.update(wire_bytes=None, wire_bytes_min=w["wire_url_bytes"], messages_mpi=None,
             messages_mpi_min=w["rank_pairs"])
    return m


def resolve_partvec(s: Session) -> dict | None:
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
    from .partition.partvec import load_partvec, remap

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


def _assignment_owners(s: Session, pvinfo: dict | None) -> np.ndarray | None:
    """Owners of every URL of ``s.graph`` under the session's own assignment (None if unknown)."""
    from .partition.owners import owners_hash, owners_site_hash

    a = s.assignment
    if a == "hash":
        return owners_hash(s.graph, s.ranks, s.n_buckets)
    if a == "site-hash":
        return owners_site_hash(s.graph, s.ranks, s.n_buckets)
    if pvinfo is not None and pvinfo.get("pv") is not None:
        return pvinfo["pv"].owners_of_graph(s.graph)
    return None


def recompute_measured(s: Session, pvinfo: dict | None, url_len=None, links=None) -> dict:
    """Re-derive the measured figures from ``graph.npz`` and ``exchange.npz``.

    Owners are the measured ``url_rank`` of requested URLs and the session's
    assignment for link targets it never requested; the link figures come
    from :func:`~abc_crawler.partition.metrics.predict` on them, ``wire_bytes``
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
    from .partition.owners import owners_measured

    fb = _assignment_owners(s, pvinfo)
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


# --------------------------------------------------------------------------- thesis tables


def dataset_properties(graph: SessionGraph, url_len=None, hosts=None) -> dict:
    """Türk's Table 6.1 for a session graph: sizes of the page/site graphs and hypergraphs.

    Returns
    -------
    dict
        ``{"page": {...}, "site": {...}}`` with vertices, edges, average and
        maximum edge weight (bytes), average and maximum vertex weight (KB),
        nets, pins, average net size; ``site`` also pages per site.
    """
    from .partition.models import page_graph, page_hypergraph, site_graph, site_hypergraph, url_lengths
    from .partition.owners import url_hosts

    url_len = url_lengths(graph) if url_len is None else url_len
    hosts = url_hosts(graph) if hosts is None else hosts
    out = {}
    for kind, gm, hm in (("page", page_graph(graph, url_len), page_hypergraph(graph)),
                         ("site", site_graph(graph, url_len, hosts), site_hypergraph(graph, hosts))):
        _, _, c = gm.edge_list()
        vw = gm.vwgt[:, 0] / 1024.0
        nets = np.diff(hm.eptr)
        d = {"vertices": gm.n_vertices, "edges": gm.n_edges,
             "avg_edge_weight": float(c.mean()) if c.size else 0.0,
             "max_edge_weight": int(c.max()) if c.size else 0,
             "avg_vertex_kb": float(vw.mean()) if vw.size else 0.0,
             "max_vertex_kb": float(vw.max()) if vw.size else 0.0,
             "nets": hm.n_nets, "pins": hm.n_pins,
             "avg_net_size": float(nets.mean()) if nets.size else 0.0,
             "max_net_size": int(nets.max()) if nets.size else 0}
        if kind == "site":
            pps = gm.vwgt[:, 1]
            d["avg_pages_per_site"] = float(pps.mean()) if pps.size else 0.0
            d["max_pages_per_site"] = int(pps.max()) if pps.size else 0
        out[kind] = d
    return out


def thesis_table(graph: SessionGraph, parts, *, hp: bool = True, seed: int = 1, threads: int = 2,
                 imbalance: float = 0.05, n_buckets: int = 4096, url_len=None, hosts=None, links=None) -> dict:
    """Predicted metrics of every model on ``graph`` for each K (Türk Tables 6.2–6.5).

    Parameters
    ----------
    graph : SessionGraph
    parts : iterable of int
        K values; those larger than the number of requested pages are skipped.
    hp : bool, optional
        Also run the hypergraph models (Mt-KaHyPar).
    seed, threads, imbalance :
        As for ``abc-repartition``.
    n_buckets : int, optional
        M of the hash baselines.

    Returns
    -------
    dict
        ``rows``: one dict per K with ``K`` and, per assignment name (``hash``,
        ``site-hash``, ``page-gp``, ``site-gp``, ``page-hp``, ``site-hp``), the
        :func:`predicted_figures` dict plus ``seconds``, or None where the
        model does not apply (K > hosts for site models, ``--no-hp``, a
        partitioner missing); ``skipped`` K values; ``notes``; ``seconds``.
    """
    from .partition.cli import BadInput, run_model
    from .partition.hypergraph import HypergraphError
    from .partition.metis import MetisError, MetisWarning
    from .partition.models import distinct_links, url_lengths
    from .partition.owners import owners_hash, owners_site_hash, url_hosts

    t0 = time.perf_counter()
    url_len = url_lengths(graph) if url_len is None else url_len
    hosts = url_hosts(graph) if hosts is None else hosts
    links = distinct_links(graph) if links is None else links
    req = graph.url_rank >= 0
    n_pages = int(req.sum())
    n_hosts = int(np.unique(hosts[0][req]).size) if n_pages else 0
    models = [m for m in _PARTITIONED if hp or m.endswith("gp")]
    broken: dict[str, str] = {}
    notes: list[str] = []
    rows, skipped = [], []
    for K in parts:
        if K > n_pages:
            skipped.append(K)
            continue
        row: dict = {"K": K}
        for name, own in (("hash", owners_hash(graph, K, n_buckets)),
                          ("site-hash", owners_site_hash(graph, K, n_buckets, hosts=hosts))):
            row[name] = predicted_figures(graph, own, K, url_len=url_len, links=links) | {"seconds": 0.0}
        for model in _PARTITIONED:
            row[model] = None
            if model not in models or model in broken or (model.startswith("site") and K > n_hosts):
                continue
            t = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MetisWarning)
                    res = run_model(graph, model, K, imbalance=imbalance, seed=seed, threads=threads,
                                    url_len=url_len, hosts=hosts)
            except BadInput as e:
                notes.append(f"{model} K={K}: {e}")
                continue
            except (MetisError, HypergraphError) as e:
                broken[model] = str(e)
                notes.append(f"{model}: left out ({e})")
                continue
            row[model] = predicted_figures(graph, res["owners"], K, url_len=url_len, links=links) | {
                "seconds": round(time.perf_counter() - t, 3)}
        rows.append(row)
    if skipped:
        notes.append(f"K = {', '.join(map(str, skipped))} skipped: more parts than the {n_pages} requested pages")
    big = [r["K"] for r in rows if r["K"] > n_hosts]
    if big:
        notes.append(f"site models need K <= {n_hosts} hosts: not run for K = {', '.join(map(str, big))}")
    if not hp:
        notes.append("hypergraph models (page-HP, site-HP) not run (--no-hp)")
    return {"parts": list(parts), "skipped": skipped, "rows": rows, "models": ["hash", "site-hash", *models],
            "pages": n_pages, "hosts": n_hosts, "hp": hp, "seed": seed, "imbalance": imbalance,
            "notes": notes, "seconds": round(time.perf_counter() - t0, 3)}


# --------------------------------------------------------------------------- the report


def _per_superstep(s: Session) -> dict:
    ex = s.exchange
    sv = np.asarray(ex["step_volume"], dtype=np.int64)
    rows = ex["rows"]
    S = max(sv.shape[0], int(rows[:, 0].max()) + 1 if rows.size else 0)
    vol = np.zeros(S, np.int64)
    vol[: sv.shape[0]] = sv.sum(axis=1) if sv.size else 0
    msgs = np.bincount(rows[:, 0], minlength=S) if rows.size else np.zeros(S, np.int64)
    wire = np.bincount(rows[:, 0], weights=rows[:, 3], minlength=S) if rows.size else np.zeros(S)
    t = np.asarray(ex.get("step_t", np.zeros(0)), dtype=np.float64)
    return {"volume": vol.tolist(), "messages_mpi": msgs.astype(np.int64).tolist(),
            "wire_bytes": wire.astype(np.int64).tolist(), "t": t.tolist()}


def _ratio(a, b):
    if a is None or b is None:
        return None
    if b == 0:
        return None if a else 1.0
    return a / b


def build_report(session: Session, against: Session | None = None, *, parts=DEFAULT_PARTS, thesis: bool = True,
                 hp: bool = True, seed: int = 1, threads: int = 2) -> dict:
    """Every figure of the report as one JSON-serializable dict (see the module docstring)."""
    from .partition.models import distinct_links, url_lengths
    from .partition.owners import owners_hash, url_hosts

    t0 = time.perf_counter()
    g = session.graph
    url_len, links, hosts = url_lengths(g), distinct_links(g), url_hosts(g)
    K = session.ranks
    pvinfo = resolve_partvec(session)
    notes = []
    meas = measured_figures(session)
    rec = recompute_measured(session, pvinfo, url_len=url_len, links=links)
    if not rec["available"]:
        notes.append(rec["note"])
    else:
        if not rec["check"]["consistent"]:
            notes.append("stats.json and the figures re-derived from graph.npz/exchange.npz differ: "
                         + ", ".join(f"{k} {a} vs {b}" for k, (a, b) in rec["check"]["differences"].items()))
        if not rec["wire_ok"]:
            notes.append(f"exchange.npz holds fewer wire bytes ({rec['wire_bytes']:,}) than the URLs the graph "
                         f"says were sent ({rec['wire_url_bytes']:,})")
    hash_base = predicted_figures(g, owners_hash(g, K, session.n_buckets), K, url_len=url_len, links=links)
    columns: dict[str, dict] = {"measured": meas}
    pv_out = None
    if pvinfo is not None:
        if pvinfo.get("note"):
            notes.append(pvinfo["note"])
        pv_out = {k: v for k, v in pvinfo.items() if k != "pv"}
        if pvinfo["stored"] is not None:
            columns["predicted_stored"] = dict(pvinfo["stored"], wire_bytes=None, messages_mpi=None)
    if against is not None and pvinfo is not None and pvinfo.get("pv") is not None:
        ag = against.graph
        columns["predicted_on_against"] = predicted_figures(ag, pvinfo["pv"].owners_of_graph(ag), K)
    columns["hash_on_session"] = hash_base
    ag_meas = None
    ratios = None
    if against is not None:
        ag_meas = measured_figures(against)
        columns["against_measured"] = ag_meas
        ratios = {}
        for key, _, kind in FIGURES:
            a, b = meas[key], ag_meas[key]
            ratios[key] = round(a - b, PCT_DECIMALS) if kind == "pct" else _ratio(a, b)
    # how close the prediction was
    errors = {}
    for col in ("predicted_stored", "predicted_on_against"):
        if col in columns:
            p = columns[col]
            # stats.json holds the imbalances rounded: compare with the prediction rounded the same way
            errors[col] = {key: (round(meas[key] - round(p[key], PCT_DECIMALS), PCT_DECIMALS)
                                 if _KIND[key] == "pct" else meas[key] - p[key])
                           for key, _, _ in FIGURES if p.get(key) is not None}
    rep = {
        "format": REPORT_FORMAT,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "session": {"path": str(session.path), "ranks": K, "assignment": session.assignment,
                    "requests": meas["requests"], "pages_crawled": meas["pages_crawled"],
                    "supersteps": meas["supersteps"], "stopped": session.stats.get("stopped"),
                    "wall_s": session.stats.get("wall_s"), "links": int(links[0].size)},
        "against": None if against is None else {
            "path": str(against.path), "ranks": against.ranks, "assignment": against.assignment,
            "requests": ag_meas["requests"], "pages_crawled": ag_meas["pages_crawled"],
            "supersteps": ag_meas["supersteps"], "stopped": against.stats.get("stopped"),
            "wall_s": against.stats.get("wall_s")},
        "partvec": pv_out,
        "columns": columns,
        "recomputed": rec,
        "prediction_error": errors,
        "ratios": ratios,
        "per_superstep": {"session": _per_superstep(session),
                          "against": None if against is None else _per_superstep(against)},
        "notes": notes,
    }
    if thesis:
        rep["dataset"] = dataset_properties(g, url_len, hosts)
        rep["thesis"] = thesis_table(g, parts, hp=hp, seed=seed, threads=threads, n_buckets=session.n_buckets,
                                     url_len=url_len, hosts=hosts, links=links)
    rep["seconds"] = round(time.perf_counter() - t0, 3)
    return rep


# --------------------------------------------------------------------------- rendering


def fmt_value(key: str, v) -> str:
    """A figure as text: thousands separators for counts, 2 decimals for percentages."""
    if v is None:
        return "—"
    if _KIND.get(key) == "pct" or isinstance(v, float) and key not in _KIND:
        return f"{v:.2f}"
    return f"{int(v):,}"


def _fmt_ratio(key: str, r) -> str:
    if r is None:
        return "—"
    if _KIND[key] == "pct":
        return f"{r:+.2f} pp"
    if r == 0:
        return "0"
    return f"{r:.3f}" + (f" ({1 / r:.2f}× less)" if r < 1 else "")


def _column_titles(rep: dict) -> list[tuple[str, str]]:
    me = Path(rep["session"]["path"]).name
    other = Path(rep["against"]["path"]).name if rep["against"] else "OTHER"
    titles = {"measured": f"measured ({me})", "predicted_stored": "predicted (stored)",
              "predicted_on_against": f"predicted (on {other})", "hash_on_session": f"hash (on {me})",
              "against_measured": f"measured ({other})"}
    return [(k, titles[k]) for k in titles if k in rep["columns"]]


def _main_rows(rep: dict) -> tuple[list[str], list[list[str]]]:
    cols = _column_titles(rep)
    head = ["figure"] + [t for _, t in cols]
    if rep["ratios"] is not None:
        head.append(f"{Path(rep['session']['path']).name} / {Path(rep['against']['path']).name}")
    body = []
    for key, label, _ in FIGURES:
        line = [label]
        for c, _ in cols:
            v = rep["columns"][c].get(key)
            lo = rep["columns"][c].get(f"{key}_min")
            if v is None and lo is not None:
                line.append(f"≥ {lo:,}")
            else:
                line.append(fmt_value(key, v))
        if rep["ratios"] is not None:
            line.append(_fmt_ratio(key, rep["ratios"][key]))
        body.append(line)
    return head, body


def _text_table(head: list[str], body: list[list[str]]) -> str:
    w = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
    fmt = lambda r: "  ".join(c.ljust(w[0]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r))  # noqa: E731
    return "\n".join([fmt(head), "  ".join("-" * x for x in w)] + [fmt(r) for r in body])


def _md_table(head: list[str], body: list[list[str]], align_first_left: bool = True) -> str:
    sep = ["---" if (i == 0 and align_first_left) else "---:" for i in range(len(head))]
    esc = lambda c: str(c).replace("|", "\\|")  # noqa: E731
    return "\n".join("| " + " | ".join(esc(c) for c in r) + " |" for r in [head, sep] + body)


def _summary_lines(rep: dict) -> list[str]:
    s = rep["session"]
    lines = [f"session {s['path']}: {s['ranks']} ranks, assignment {s['assignment']}, {s['requests']:,} requests, "
             f"{s['pages_crawled']:,} pages, {s['supersteps']} supersteps"]
    pv = rep["partvec"]
    if pv and pv.get("file"):
        extra = f", remapped from K={pv['remapped_from']}" if pv.get("remapped_from") else ""
        lines.append(f"part vector {pv['file']}: model {pv['model']}, K={pv['K']}{extra}, "
                     f"made from {pv.get('source') or '?'}")
    if rep["against"]:
        a = rep["against"]
        lines.append(f"against {a['path']}: {a['ranks']} ranks, assignment {a['assignment']}, "
                     f"{a['requests']:,} requests, {a['supersteps']} supersteps")
        r = rep["ratios"]["volume_bytes"]
        v = rep["columns"]["measured"]["volume_bytes"]
        o = rep["columns"]["against_measured"]["volume_bytes"]
        if r is not None:
            lines.append(f"measured volume {v:,} B against {o:,} B: ratio {r:.3f}"
                         + (f", a {1 / r:.2f}-fold reduction" if 0 < r < 1 else ""))
    rec = rep["recomputed"]
    if rec.get("available"):
        lines.append("check: stats.json " + ("equals" if rec["check"]["consistent"] else "DIFFERS from")
                     + " the figures re-derived from graph.npz and exchange.npz")
    for col, err in rep["prediction_error"].items():
        exact = all(v == 0 for v in err.values())
        name = "stored prediction" if col == "predicted_stored" else "prediction on the other session's graph"
        lines.append(f"{name}: " + ("measured figures equal it exactly" if exact else
                                    "measured − predicted: " + ", ".join(
                                        f"{k} {fmt_value(k, v) if _KIND[k] == 'int' else f'{v:+.4f}'}"
                                        for k, v in err.items() if v != 0)))
    return lines


def _thesis_text_rows(th: dict) -> tuple[list[str], list[list[str]]]:
    head = ["K", "vol hash", "vol site-hash", "vol page-GP", "vol site-GP", "msg hash", "msg page-HP"]
    body = []
    for r in th["rows"]:
        line = [str(r["K"])]
        for m in ("hash", "site-hash", "page-gp", "site-gp"):
            line.append(fmt_value("volume_bytes", r[m]["volume_bytes"]) if r.get(m) else "—")
        for m in ("hash", "page-hp"):
            line.append(fmt_value("messages_thesis", r[m]["messages_thesis"]) if r.get(m) else "—")
        body.append(line)
    return head, body


def render_text(rep: dict) -> str:
    """The stdout summary: header lines, the main table, a compact thesis table."""
    out = [f"{PROG}: " + ln for ln in _summary_lines(rep)[:1]]
    out += ["  " + ln for ln in _summary_lines(rep)[1:]]
    out.append("")
    out.append(_text_table(*_main_rows(rep)))
    th = rep.get("thesis")
    if th and th["rows"]:
        out.append("")
        out.append(f"predicted on this session's graph (Türk Tables 6.4/6.5; imbalances in report.md), "
                   f"{th['seconds']:.1f} s:")
        out.append(_text_table(*_thesis_text_rows(th)))
    for n in rep["notes"] + (th["notes"] if th else []):
        out.append(f"note: {n}")
    return "\n".join(out)


_DEFINITIONS = """\
All figures follow DESIGN §7 and `docs/SESSION_FORMAT.md`; own(p) is the rank that requests URL p.

- **volume_bytes (MV)** — Türk's volume: over every distinct link (u, v) found on a requested URL u with
  own(v) ≠ own(u), the UTF-8 length of v's URL + 1. It is what a naive exchange sends, and what a part vector's
  page-graph cut predicts (plus links to URLs the previous session never requested).
- **wire_bytes** — bytes the exchange actually moved between different ranks. The crawler sends a remote URL to
  its owner at most once per session (the sender's URL-seen set remembers it), as a line `URL\\n`, plus a
  redirect-hop count `\\tN` when it first found the URL as a redirect target, which depends on the order of
  discovery. "≥ n" is the URL part: Σ over distinct (own(u), v) with own(v) ≠ own(u) of len(v) + 1.
- **messages_thesis (NM)** — over every requested URL u, the number of distinct ranks ≠ own(u) among the owners of
  u's links (connectivity − 1 of u's net; the page-hypergraph objective).
- **messages_mpi** — (superstep, src, dst ≠ src) triples with a non-empty payload. It depends on how the links
  fall into supersteps, so it is not predicted; "≥ n" is a lower bound: the ordered rank pairs that exchange
  anything at all.
- **storage imbalance** — (W_max − W_avg) / W_avg × 100 with W = body bytes of the requested URLs per rank;
  **request imbalance** the same with W = requests per rank (robots.txt fetches excluded).
- **predicted (stored)** — the metrics `abc-repartition` stored in the part vector the session was crawled with,
  computed on the graph it was made from. **predicted (on OTHER)** — the vector's owner rule (URL → its rank; a new
  URL → its host's majority rank, else hash) applied to the other session's graph and recomputed here. **hash** —
  the URL-hash assignment (xxh3 fingerprint → 4096 buckets → rank) on this session's graph with its number of ranks.
- On an unchanged web a session crawled with a part vector requests the same URLs and finds the same links as the
  session the vector was made from, so every predicted figure is met exactly.
"""


def render_markdown(rep: dict, plots: dict[str, str] | None = None) -> str:
    """``report.md``: summary, main table, plots (relative paths), thesis tables, definitions."""
    plots = plots or {}
    s = rep["session"]
    md = [f"# ABC session report: `{Path(s['path']).name}`", ""]
    md += [f"- {ln}" for ln in _summary_lines(rep)]
    md += ["", "## Measured and predicted", "", _md_table(*_main_rows(rep)), ""]
    if rep["notes"]:
        md += [f"> note: {n}" for n in rep["notes"]] + [""]
    for key, title in (("measured_vs_predicted", "Measured and predicted figures"),
                       ("per_rank", "Per-rank load"), ("supersteps", "Exchange per superstep")):
        if key in plots:
            md += [f"### {title}", "", f"![{title}]({plots[key]})", ""]
    th = rep.get("thesis")
    if th:
        md += ["## Türk's models on this session's graph", "",
               f"Predicted with each assignment on the graph of this session (K parts, imbalance tolerance "
               f"{100 * th['imbalance']:g} % on bytes and pages, seed {th['seed']}; partitions computed in "
               f"{th['seconds']:.1f} s). Volumes in bytes, imbalances in %. GP = METIS on Türk's graph "
               f"model (objective: volume), HP = Mt-KaHyPar on the hypergraph model (objective: messages), both "
               f"followed by the two-constraint balance repair of `abc-repartition`. These partitions are "
               f"computed afresh on this session's graph: METIS and Mt-KaHyPar depend on the vertex order, so "
               f"a figure here may differ a little from what `abc-repartition` found on another session of the "
               f"same web.", ""]
        ds = rep["dataset"]
        head = ["property", "page-based", "site-based"]
        p, q = ds["page"], ds["site"]
        body = [["vertices", f"{p['vertices']:,}", f"{q['vertices']:,}"],
                ["edges", f"{p['edges']:,}", f"{q['edges']:,}"],
                ["average edge weight (bytes)", f"{p['avg_edge_weight']:.2f}", f"{q['avg_edge_weight']:.2f}"],
                ["maximum edge weight (bytes)", f"{p['max_edge_weight']:,}", f"{q['max_edge_weight']:,}"],
                ["average vertex weight (KB)", f"{p['avg_vertex_kb']:.2f}", f"{q['avg_vertex_kb']:.2f}"],
                ["maximum vertex weight (KB)", f"{p['max_vertex_kb']:.2f}", f"{q['max_vertex_kb']:.2f}"],
                ["average pages per site", "", f"{q['avg_pages_per_site']:.2f}"],
                ["maximum pages per site", "", f"{q['max_pages_per_site']:,}"],
                ["nets", f"{p['nets']:,}", f"{q['nets']:,}"],
                ["pins", f"{p['pins']:,}", f"{q['pins']:,}"],
                ["average net size", f"{p['avg_net_size']:.2f}", f"{q['avg_net_size']:.2f}"]]
        md += ["### Dataset properties (cf. Table 6.1)", "", _md_table(head, body), ""]
        if th["rows"]:
            md += _thesis_md(th)
        if "thesis" in plots:
            md += ["", f"![volume and messages against K]({plots['thesis']})", ""]
        md += [f"> note: {n}" for n in th["notes"]] + ([""] if th["notes"] else [])
    md += ["## Definitions", "", _DEFINITIONS]
    return "\n".join(md)


def _cell(r: dict, m: str, key: str) -> str:
    return fmt_value(key, r[m][key]) if r.get(m) else "—"


def _thesis_md(th: dict) -> list[str]:
    md = []
    for gran, gp, hp, hsh in (("Page", "page-gp", "page-hp", "hash"), ("Site", "site-gp", "site-hp", "site-hash")):
        head = ["K", f"volume {_TITLES[gp]}", f"volume {_TITLES[hsh]}", f"messages {_TITLES[hp]}",
                f"messages {_TITLES[hsh]}"]
        body = [[str(r["K"]), _cell(r, gp, "volume_bytes"), _cell(r, hsh, "volume_bytes"),
                 _cell(r, hp, "messages_thesis"), _cell(r, hsh, "messages_thesis")] for r in th["rows"]]
        n = "6.4" if gran == "Page" else "6.5"
        md += [f"### {gran}-based volume and messages (cf. Table {n})", "", _md_table(head, body), ""]
    for gran, names in (("Page", ("page-gp", "page-hp", "hash")), ("Site", ("site-gp", "site-hp", "site-hash"))):
        head = ["K"] + [f"storage {_TITLES[m]}" for m in names] + [f"requests {_TITLES[m]}" for m in names]
        body = [[str(r["K"])] + [_cell(r, m, "storage_pct") for m in names]
                + [_cell(r, m, "request_pct") for m in names] for r in th["rows"]]
        n = "6.2" if gran == "Page" else "6.3"
        md += [f"### {gran}-based imbalance, % (cf. Table {n})", "", _md_table(head, body), ""]
    head = ["K"] + [f"volume {_TITLES[m]}" for m in ("hash", "site-hash", "page-gp", "site-gp")] + [
        f"messages {_TITLES[m]}" for m in ("hash", "page-hp")]
    body = [[str(r["K"])] + [_cell(r, m, "volume_bytes") + (
        f" ({r[m]['storage_pct']:.1f} / {r[m]['request_pct']:.1f})" if r.get(m) else "")
        for m in ("hash", "site-hash", "page-gp", "site-gp")] + [_cell(r, m, "messages_thesis") + (
            f" ({r[m]['storage_pct']:.1f} / {r[m]['request_pct']:.1f})" if r.get(m) else "")
        for m in ("hash", "page-hp")] for r in th["rows"]]
    md += ["### All in one (storage % / request % in brackets)", "", _md_table(head, body), ""]
    return md


# --------------------------------------------------------------------------- plots


def _thousands():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v == int(v) else f"{v:,.4g}")


def _save(fig, path: Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    atomic_write_bytes(path, buf.getvalue())


def _bar_labels(ax, bars, texts) -> None:
    for b, t in zip(bars, texts):
        ax.annotate(t, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                    fontsize=7 if len(t) <= 8 else 6, xytext=(0, 2), textcoords="offset points")


def make_plots(rep: dict, out_dir: Path) -> dict[str, str]:
    """Write the PNG plots into ``out_dir``; returns {name: file name}.

    ``measured_vs_predicted.png`` (grouped bars per figure), ``per_rank.png``
    (stored bytes and requests per rank), ``supersteps.png`` (volume and MPI
    messages per superstep, cumulative volume over time), ``thesis.png``
    (volume and messages against K).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    out: dict[str, str] = {}
    cols = _column_titles(rep)
    colors = {"measured": "#1f77b4", "predicted_stored": "#ff7f0e", "predicted_on_against": "#ffbb78",
              "hash_on_session": "#7f7f7f", "against_measured": "#2ca02c"}
    me = Path(rep["session"]["path"]).name

    # 1. measured vs predicted, one panel per figure
    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    for ax, (key, label, kind) in zip(axes.ravel(), FIGURES):
        x = np.arange(len(cols))
        for i, (c, _) in enumerate(cols):
            d = rep["columns"][c]
            v = d.get(key)
            if v is not None:
                b = ax.bar(i, v, color=colors[c])
                _bar_labels(ax, b, [fmt_value(key, v)])
            elif d.get(f"{key}_min") is not None:
                lo = d[f"{key}_min"]
                b = ax.bar(i, lo, color="white", edgecolor=colors[c], hatch="//")
                _bar_labels(ax, b, [f"≥{lo:,}"])
            else:
                ax.annotate("n/a", (i, 0), ha="center", va="bottom", fontsize=7, color="0.4",
                            xytext=(0, 2), textcoords="offset points")
        ax.set_xticks(x, [t.replace(" (", "\n(") for _, t in cols], fontsize=7)
        ax.set_title(label, fontsize=10)
        ax.margins(y=0.25)
        ax.yaxis.set_major_formatter(_thousands())
        if kind == "pct":
            ax.set_ylabel("%")
    fig.suptitle(f"{me}: measured and predicted (DESIGN §7)")
    fig.tight_layout()
    _save(fig, out_dir / "measured_vs_predicted.png")
    plt.close(fig)
    out["measured_vs_predicted"] = "measured_vs_predicted.png"

    # 2. per-rank load
    K = rep["session"]["ranks"]
    series = [(f"measured ({me})", rep["columns"]["measured"], colors["measured"])]
    if "predicted_stored" in rep["columns"]:
        series.append(("predicted (stored)", rep["columns"]["predicted_stored"], colors["predicted_stored"]))
    if rep["against"] and rep["against"]["ranks"] == K:
        series.append((f"measured ({Path(rep['against']['path']).name})", rep["columns"]["against_measured"],
                       colors["against_measured"]))
    fig, axes = plt.subplots(1, 2, figsize=(min(24, max(10, 0.5 * K * len(series) + 4)), 4.6))
    width = 0.8 / len(series)
    for ax, key, title in ((axes[0], "bytes_per_rank", "stored bytes per rank"),
                           (axes[1], "requests_per_rank", "requests per rank")):
        for i, (name, d, col) in enumerate(series):
            v = np.asarray(d.get(key) or [0] * K, dtype=float)
            ax.bar(np.arange(K) + (i - (len(series) - 1) / 2) * width, v, width, label=name, color=col)
        avg = np.mean(rep["columns"]["measured"][key]) if K else 0
        ax.axhline(avg, color="k", lw=0.8, ls="--", label="average (measured)")
        ax.set_xticks(np.arange(K) if K <= 32 else np.arange(0, K, max(1, K // 16)))
        ax.set_xlabel("rank")
        ax.set_title(title)
        ax.yaxis.set_major_formatter(_thousands())
    axes[0].set_ylabel("bytes")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    _save(fig, out_dir / "per_rank.png")
    plt.close(fig)
    out["per_rank"] = "per_rank.png"

    # 3. per superstep
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    runs = [(me, rep["per_superstep"]["session"], colors["measured"])]
    if rep["per_superstep"]["against"] is not None:  # drawn first, so this session's lines stay on top
        runs.insert(0, (Path(rep["against"]["path"]).name, rep["per_superstep"]["against"],
                        colors["against_measured"]))
    for name, d, col in runs:
        x = np.arange(len(d["volume"]))
        mk = {"marker": "o", "ms": 3} if len(x) <= 40 else {"lw": 1}
        axes[0].plot(x, d["volume"], color=col, label=name, **mk)
        axes[1].plot(np.arange(len(d["messages_mpi"])), d["messages_mpi"], color=col, label=name, **mk)
        t = d["t"][: len(d["volume"])]
        if t:
            axes[2].step(t, np.cumsum(d["volume"][: len(t)]), where="post", color=col, label=name)
    axes[0].set_title("volume (MV) per superstep")
    axes[0].set_ylabel("bytes")
    axes[1].set_title("MPI messages per superstep")
    axes[1].set_ylabel("messages")
    axes[2].set_title("cumulative volume over time")
    axes[2].set_xlabel("seconds since the crawl start")
    axes[2].set_ylabel("bytes")
    axes[0].yaxis.set_major_formatter(_thousands())
    axes[2].yaxis.set_major_formatter(_thousands())
    for ax in axes[:2]:
        ax.set_xlabel("superstep")
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    _save(fig, out_dir / "supersteps.png")
    plt.close(fig)
    out["supersteps"] = "supersteps.png"

    # 4. thesis figures
    th = rep.get("thesis")
    if th and th["rows"]:
        fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
        Ks = [r["K"] for r in th["rows"]]
        style = {"hash": ("#7f7f7f", "o"), "site-hash": ("#bcbd22", "s"), "page-gp": ("#1f77b4", "^"),
                 "site-gp": ("#17becf", "v"), "page-hp": ("#d62728", "D"), "site-hp": ("#ff9896", "d")}
        panels = ((axes[0], "volume_bytes", ("hash", "site-hash", "page-gp", "site-gp"), "predicted volume (bytes)"),
                  (axes[1], "messages_thesis", ("hash", "site-hash", "page-hp", "site-hp"),
                   "predicted messages (thesis)"),
                  (axes[2], "max_pct", ("hash", "site-hash", "page-gp", "site-gp", "page-hp", "site-hp"),
                   "max(storage, request) imbalance %"))
        for ax, key, names, title in panels:
            for m in names:
                if key == "max_pct":
                    pts = [(r["K"], max(0.01, r[m]["storage_pct"], r[m]["request_pct"]))
                           for r in th["rows"] if r.get(m)]
                else:
                    pts = [(r["K"], r[m][key]) for r in th["rows"] if r.get(m)]
                if pts:
                    col, mk = style[m]
                    ax.plot(*zip(*pts), marker=mk, color=col, label=_TITLES[m])
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(Ks, [str(k) for k in Ks])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(_thousands())
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xlabel("K (parts)")
            ax.set_title(title, fontsize=10)
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=8)
        axes[2].axhline(100 * th["imbalance"], color="k", lw=0.8, ls="--")
        fig.suptitle(f"Türk's models on the graph of {me} (cf. Figures 6.4, 6.5)")
        fig.tight_layout()
        _save(fig, out_dir / "thesis.png")
        plt.close(fig)
        out["thesis"] = "thesis.png"
    return out


# --------------------------------------------------------------------------- CLI


def _parse_parts(text: str) -> tuple[int, ...]:
    try:
        parts = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ReportError(f"--parts: expected comma-separated integers like 2,4,8, got {text!r}") from None
    if not parts or min(parts) < 1:
        raise ReportError(f"--parts: every K must be >= 1, got {text!r}")
    return tuple(sorted(set(parts)))


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON-serializable: {type(o)}")


def _clean(o):
    """NaN/inf (not valid JSON) → None."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_clean(v) for v in o]
    return o


def _main(argv) -> int:
    ap = _Parser(prog=PROG, description="Report a crawl session's communication volume, messages and load "
                 "imbalance, measured beside predicted (and against another session).")
    ap.add_argument("session", help="session directory")
    ap.add_argument("--against", metavar="OTHER", help="another session to compare with (e.g. the one the "
                    "part vector was made from)")
    ap.add_argument("--out", metavar="DIR", help="where report.md, report.json and the PNGs go "
                    "(default SESSION/report)")
    ap.add_argument("--parts", default=",".join(map(str, DEFAULT_PARTS)),
                    help="K values of the thesis-style table (default 2,4,8,16,32,64)")
    ap.add_argument("--no-thesis", action="store_true", help="leave out the thesis-style table")
    ap.add_argument("--no-hp", action="store_true", help="leave out the hypergraph models (Mt-KaHyPar)")
    ap.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    ap.add_argument("--seed", type=int, default=1, help="partitioner seed (default 1)")
    ap.add_argument("--threads", type=int, default=2, help="Mt-KaHyPar threads (default 2)")
    a = ap.parse_args(argv)
    parts = _parse_parts(a.parts)
    if a.seed < 0:
        raise ReportError(f"--seed must be >= 0, got {a.seed}")
    if a.threads < 1:
        raise ReportError(f"--threads must be >= 1, got {a.threads}")
    session = load_session(a.session)
    against = load_session(a.against) if a.against else None
    out_dir = Path(a.out) if a.out else session.path / "report"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ReportError(f"--out {out_dir}: cannot create ({e.strerror})") from None
    rep = build_report(session, against, parts=parts, thesis=not a.no_thesis, hp=not a.no_hp, seed=a.seed,
                       threads=a.threads)
    plots: dict[str, str] = {}
    if not a.no_plots:
        try:
            plots = make_plots(rep, out_dir)
        except ImportError:
            rep["notes"].append("matplotlib is not installed: no plots (pip install matplotlib)")
    rep["plots"] = plots
    rep["out"] = str(out_dir)
    atomic_write_bytes(out_dir / "report.md", render_markdown(rep, plots).encode())
    atomic_write_bytes(out_dir / "report.json",
                       (json.dumps(_clean(rep), indent=1, default=_json_default) + "\n").encode())
    print(render_text(rep))
    print(f"wrote {out_dir / 'report.md'}, {out_dir / 'report.json'}"
          + (f" and {len(plots)} plots" if plots else ""))
    return 0


def main(argv=None) -> int:
    """Entry point of ``abc-report``; returns the exit status."""
    try:
        return _main(sys.argv[1:] if argv is None else list(argv))
    except ReportError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
