"""Every figure of the report as one JSON-serializable dict (:func:`build_report`)."""
from __future__ import annotations

import time
from datetime import datetime, timezone

import numpy as np

from ..partition.models import distinct_links, url_lengths
from ..web.ownership import owners_hash, url_hosts
from ..web.parser import EMBED
from .figures import (FIGURE_KIND, FIGURES, PCT_DECIMALS, measured_figures, predicted_figures, recompute_measured,
                      resolve_partvec)
from .load import SessionFiles
from .thesis import DEFAULT_PARTS, dataset_properties, thesis_table
from .timing import graph_figure_rows, time_figures

__all__ = ["REPORT_FORMAT", "build_report", "per_superstep", "requisite_figures"]

#: Version of ``report.json``.
REPORT_FORMAT = 1


def per_superstep(s: SessionFiles) -> dict:
    """Volume, MPI messages, wire bytes and end time of every superstep, from ``exchange.npz``."""
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


def requisite_figures(g) -> dict:
    """How the session's requisites (URLs found only by embed links: style sheets, images, scripts)
    enter the partition models: each requested one is a vertex weighted by its own bytes and one
    request (Türk's vertex weights), tied to the pages that embed it by its embed links, whose
    exchange a partition saves when the requisite lands on the page's rank.

    ``urls``: requested URLs that were found only by embed links; ``bytes_pct``: their share of the
    bytes stored; ``embed_links``: embed links to requested URLs; ``embed_links_local_pct``: of
    those, the share whose two ends were requested by the same rank in this session."""
    kinds = g.link_kinds()
    src, dst = g.link_src.astype(np.int64), g.link_dst.astype(np.int64)
    req = g.url_rank >= 0
    embed = kinds == EMBED
    by_embed = np.zeros(len(g.urls), dtype=bool)
    by_other = np.zeros(len(g.urls), dtype=bool)
    by_embed[dst[embed]] = True
    by_other[dst[~embed]] = True
    only = req & by_embed & ~by_other
    total_bytes = int(g.url_bytes[req].sum())
    e = embed & req[dst] & req[src]
    local = int(np.count_nonzero(g.url_rank[src[e]] == g.url_rank[dst[e]]))
    n_e = int(np.count_nonzero(e))
    return {"urls": int(np.count_nonzero(only)), "requested": int(np.count_nonzero(req)),
            "bytes_pct": round(100.0 * int(g.url_bytes[only].sum()) / total_bytes, 2) if total_bytes else 0.0,
            "embed_links": n_e, "embed_links_local_pct": round(100.0 * local / n_e, 2) if n_e else 0.0}


def _ratio(a, b):
    if a is None or b is None:
        return None
    if b == 0:
        return None if a else 1.0
    return a / b


def build_report(session: SessionFiles, against: SessionFiles | None = None, *, parts=DEFAULT_PARTS, thesis: bool = True,
                 hp: bool = True, seed: int = 1, threads: int = 2) -> dict:
    """Every figure of the report as one JSON-serializable dict (see :mod:`abc_crawler.report`)."""
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
                                 if FIGURE_KIND[key] == "pct" else meas[key] - p[key])
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
        "requisites": requisite_figures(g),
        "columns": columns,
        "recomputed": rec,
        "prediction_error": errors,
        "ratios": ratios,
        "per_superstep": {"session": per_superstep(session),
                          "against": None if against is None else per_superstep(against)},
        "notes": notes,
        "time": time_figures(session.stats, against.stats if against is not None else None),
        "graph": {"session": graph_figure_rows(session.stats),
                  "against": graph_figure_rows(against.stats) if against is not None else None},
    }
    if thesis:
        rep["dataset"] = dataset_properties(g, url_len, hosts)
        rep["thesis"] = thesis_table(g, parts, hp=hp, seed=seed, threads=threads, n_buckets=session.n_buckets,
                                     url_len=url_len, hosts=hosts, links=links)
    rep["seconds"] = round(time.perf_counter() - t0, 3)
    return rep
