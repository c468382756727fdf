"""Partition one of Türk's models of a session graph and map the parts back onto URLs.

:func:`run_model` is what ``abc-repartition`` (:mod:`.cli`) and ``abc-report``'s
thesis tables run for each model and K: build the model (:mod:`.models`),
partition it (METIS with two constraints for the graph models, Mt-KaHyPar KM1
for the hypergraph models, then the two-constraint balance repair of
:mod:`.balance`) and turn the vertex parts into a part vector
(:mod:`.partvec`) and an owner per URL.
"""
from __future__ import annotations

import time

import numpy as np

from ..store.session import SessionGraph
from .models import MODELS, build_model, page_graph, site_graph, url_lengths
from ..web.ownership import url_hosts
from .partvec import make_partvec

__all__ = ["run_model", "BadInput"]


class BadInput(ValueError):
    """A user error: reported in one line, exit status 2."""



def run_model(graph: SessionGraph, model: str, K: int, *, imbalance: float = 0.05, seed: int | None = None,
              threads: int = 2, hp_weight: str = "pages", hp_preset: str = "default",
              site_start: bool = True, url_len=None, hosts=None, methods=("kway", "rb"),
              tries: int = 4, ncuts: int = 4) -> dict:
    """Build a model, partition it and map the parts back onto URLs.

    Parameters
    ----------
    graph : SessionGraph
    model : {"page-gp", "site-gp", "page-hp", "site-hp"}
    K : int
    imbalance : float, optional
    seed : int, optional
    threads : int, optional
        Mt-KaHyPar threads (hypergraph models).
    hp_weight : {"pages", "both", "bytes"}, optional
    hp_preset : str, optional
        Mt-KaHyPar preset.
    site_start : bool, optional
        page-gp only: also partition the site graph with METIS, project it
        onto pages and keep it if, after the same repair and refinement, its
        cut is lower (default True).
    methods : sequence of {"kway", "rb"}, optional
        Graph models: METIS k-way and/or recursive bisection (default both).
    tries : int, optional
        Graph models: METIS runs per method (seeds ``seed``, ``seed + 1``, …);
        the balanced start with the lowest cut after repair and refinement
        wins (default 4).
    ncuts : int, optional
        Graph models: ``METIS_OPTION_NCUTS`` of every run (default 4).
    url_len, hosts : optional
        Precomputed :func:`.models.url_lengths` / :func:`abc_crawler.web.ownership.url_hosts`.

    Returns
    -------
    dict
        ``model`` (the model object), ``part`` (per vertex), ``url_part``
        (per URL-table entry, -1 where not requested), ``partvec``
        (:class:`.partvec.PartVec` without metrics), ``owners`` (per URL, by
        the part vector's owner rule), ``report`` (objective, imbalance,
        repair, units), ``build_s`` (model construction), ``partition_s``
        (partitioner runs, including page-gp's site start, repair and
        refinement).

    Raises
    ------
    BadInput
        K out of range for the model.
    """
    from .hypergraph import partition_hypergraph
    from .metis import partition_graph

    if model not in MODELS:
        raise BadInput(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")
    url_len = url_lengths(graph) if url_len is None else url_len
    hosts = url_hosts(graph) if hosts is None else hosts
    gran, kind = MODELS[model]
    t0 = time.perf_counter()
    m = build_model(graph, model, url_len=url_len, hosts=hosts)
    guide = None
    if kind == "hypergraph":
        guide = page_graph(graph, url_len) if gran == "page" else site_graph(graph, url_len, hosts)
    build_s = time.perf_counter() - t0
    n = m.n_vertices
    what = "requested pages" if gran == "page" else "hosts with requested pages"
    if K > n:
        raise BadInput(f"--parts {K} exceeds the {n} {what} of the session")
    t1 = time.perf_counter()
    if kind == "graph":
        starts = {}
        if gran == "page" and site_start:
            # hosts as the coarsest level: METIS on the site graph, projected onto pages
            sg = site_graph(graph, url_len, hosts)
            if sg.n_vertices >= K:
                rs = partition_graph(sg, K, imbalance, seed, repair=False, methods=methods, tries=tries,
                                     ncuts=ncuts)
                starts["site-metis"] = rs.part[sg.vertex_of_url[np.flatnonzero(graph.url_rank >= 0)]]
        r = partition_graph(m, K, imbalance, seed, starts=starts, methods=methods, tries=tries,
                            ncuts=ncuts)
        report = {"objective": "cut", "cut": r.cut, "metis_edgecut": r.metis_edgecut, "start": r.start,
                  "starts": r.starts, "byte_unit": r.units[0], "edge_unit": r.edge_unit}
    else:
        r = partition_hypergraph(m, K, imbalance, seed, threads=threads, weight=hp_weight, preset=hp_preset,
                                 repair_graph=guide)
        report = {"objective": "km1", "km1": r.km1, "mt_km1": r.mt_km1, "weight": r.weight}
    partition_s = time.perf_counter() - t1
    report.update({"imbalance_pct": r.imbalance_pct, "repair": r.repair, "seconds": partition_s,
                   "vertices": n})
    part = r.part
    url_part = np.full(len(graph.urls), -1, dtype=np.int64)
    req = np.flatnonzero(graph.url_rank >= 0)
    url_part[req] = part[m.vertex_of_url[req]]
    pv = make_partvec(graph, url_part, K, model, imbalance, seed, hosts=hosts)
    return {"model": m, "guide": guide, "part": part, "url_part": url_part, "partvec": pv,
            "owners": pv.owners_of_graph(graph, hosts), "report": report, "build_s": build_s,
            "partition_s": partition_s}
