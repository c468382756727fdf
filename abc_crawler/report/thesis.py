"""Türk's Tables 6.1–6.5 for one session graph: every model's predicted figures for each K.

For each K the hash and site-hash baselines and the four partitioned models
(page-GP, site-GP: METIS on the graph models; page-HP, site-HP: Mt-KaHyPar on
the hypergraph models; each followed by the two-constraint balance repair) are
computed with :func:`abc_crawler.partition.repartition.run_model`, like
``abc-repartition``, and evaluated with :func:`.figures.predicted_figures`.
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from ..partition.hypergraph import HypergraphError
from ..partition.metis import MetisError, MetisWarning
from ..partition.models import (distinct_links, page_graph, page_hypergraph, site_graph, site_hypergraph,
                                url_lengths)
from ..web.ownership import N_BUCKETS, owners_hash, owners_site_hash, url_hosts
from ..partition.repartition import BadInput, run_model
from ..store.session import SessionGraph
from .figures import predicted_figures

__all__ = ["DEFAULT_PARTS", "PARTITIONED_MODELS", "MODEL_TITLES", "dataset_properties", "thesis_table"]

#: K values of the thesis-style table (Türk's site-level experiments).
DEFAULT_PARTS = (2, 4, 8, 16, 32, 64)

#: Models of the thesis-style table, in column order.
PARTITIONED_MODELS = ("page-gp", "site-gp", "page-hp", "site-hp")
#: How tables and plots name each assignment.
MODEL_TITLES = {"hash": "hash", "site-hash": "site-hash", "page-gp": "page-GP", "site-gp": "site-GP",
                "page-hp": "page-HP", "site-hp": "site-HP"}


def dataset_properties(graph: SessionGraph, url_len=None, hosts=None) -> dict:
    """Türk's Table 6.1 for a session graph: sizes of the page/site graphs and hypergraphs.

    Returns
    -------
    dict
        ``{"page": {...}, "site": {...}}`` with vertices, edges, average and
        maximum edge weight (bytes), average and maximum vertex weight (KB),
        nets, pins, average net size; ``site`` also pages per site.
    """
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
                 imbalance: float = 0.05, n_buckets: int = N_BUCKETS, url_len=None, hosts=None, links=None) -> dict:
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
    t0 = time.perf_counter()
    url_len = url_lengths(graph) if url_len is None else url_len
    hosts = url_hosts(graph) if hosts is None else hosts
    links = distinct_links(graph) if links is None else links
    req = graph.url_rank >= 0
    n_pages = int(req.sum())
    n_hosts = int(np.unique(hosts[0][req]).size) if n_pages else 0
    models = [m for m in PARTITIONED_MODELS if hp or m.endswith("gp")]
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
        for model in PARTITIONED_MODELS:
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
