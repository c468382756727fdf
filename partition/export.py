"""Export the models as METIS ``.graph`` and hMETIS ``.hgr`` files.

So that the standard command-line tools (``gpmetis``, ``graphchk``,
``hmetis``, ``MtKaHyPar``, ...) can be run on a session too.

``<kind>.graph`` (METIS graph format, 1-based)
    ``%`` comment lines describing the vertices and units, then the header
    ``n m 011 2`` (vertex weights + edge weights, two constraints), then one
    line per vertex: ``w_bytes w_pages  v1 c1  v2 c2 ...``. Byte weights are
    divided by the power-of-two unit given in the comments when their total
    would exceed 2**29 (METIS's ``idx_t`` is 32-bit), as are edge costs
    (kept >= 1). Vertex i (0-based) is the i-th vertex of the model: the
    i-th requested URL in URL-table order (page) or the i-th host in order of
    first appearance (site).

``<kind>.hgr`` (hMETIS hypergraph format, 1-based)
    ``%`` comment lines, the header ``N n 10`` (vertex weights; nets have unit
    cost, so no net weights), N lines of pins (net j = j-th requested page),
    then n lines with one vertex weight each: the single weight the
    Mt-KaHyPar run balances (``--hp-weight``, default the page count; see
    :func:`~abc_crawler.partition.hypergraph.hp_weights`), since hMETIS files
    carry one weight per vertex.
"""
from __future__ import annotations

import os

import numpy as np

from ..store.session import atomic_write_bytes
from .hypergraph import hp_weights
from .metis import WEIGHT_LIMIT, scale_weights

__all__ = ["write_metis_graph", "write_hmetis", "read_metis_graph"]


def _rows(ptr: np.ndarray, cols: list[np.ndarray]) -> list[str]:
    """Format CSR rows as space-separated text, interleaving the column arrays."""
    inter = np.stack(cols, axis=1).ravel() if len(cols) > 1 else cols[0]
    toks = list(map(str, inter.tolist()))
    k = len(cols)
    p = (ptr * k).tolist()
    return [" ".join(toks[p[i]:p[i + 1]]) for i in range(len(p) - 1)]


def write_metis_graph(path: str | os.PathLike, g, comment: str = "") -> dict:
    """Write a :class:`~abc_crawler.partition.models.WeightedGraph` as a METIS graph file.

    Parameters
    ----------
    path : path
    g : WeightedGraph
    comment : str, optional
        Extra ``%`` comment line.

    Returns
    -------
    dict
        ``{"byte_unit": int, "edge_unit": int}`` used for the file.
    """
    wb, bu = scale_weights(g.vwgt[:, 0], WEIGHT_LIMIT)
    wp = g.vwgt[:, 1]
    ew, eu = scale_weights(g.adjwgt, WEIGHT_LIMIT)
    ew = np.maximum(ew, 1)
    head = [f"% abc-crawler {g.kind} graph (Turk's model): vertex i = "
            + ("i-th requested URL in URL-table order" if g.kind == "page" else "i-th host by first appearance"),
            f"% weights: bytes/{bu}, requested pages; edge cost: (URL bytes + 1 per link)/{eu}"]
    if comment:
        head.append("% " + comment)
    head.append(f"{g.n_vertices} {g.n_edges} 011 2")
    adj = _rows(g.xadj, [g.adjncy.astype(np.int64) + 1, ew])
    lines = [f"{b} {p} {a}".rstrip() for b, p, a in zip(wb.tolist(), wp.tolist(), adj)]
    atomic_write_bytes(path, ("\n".join(head + lines) + "\n").encode())
    return {"byte_unit": bu, "edge_unit": eu}


def write_hmetis(path: str | os.PathLike, hg, comment: str = "", weight: str = "pages") -> dict:
    """Write a :class:`~abc_crawler.partition.models.Hypergraph` as an hMETIS file.

    Parameters
    ----------
    path : path
    hg : Hypergraph
    comment : str, optional
    weight : {"pages", "both", "bytes"}, optional
        The single vertex weight written
        (:func:`~abc_crawler.partition.hypergraph.hp_weights`).

    Returns
    -------
    dict
        ``{"vertex_weight": str}`` describing the single vertex weight.
    """
    w, unit = hp_weights(hg.vwgt, weight)
    head = [f"% abc-crawler {hg.kind} hypergraph (Turk's model): net j = j-th requested page; vertex i = "
            + ("i-th requested URL" if hg.kind == "page" else "i-th host by first appearance"),
            f"% nets have unit cost; vertex weight = {unit}"]
    if comment:
        head.append("% " + comment)
    head.append(f"{hg.n_nets} {hg.n_vertices} 10")
    nets = _rows(hg.eptr, [hg.eind.astype(np.int64) + 1])
    atomic_write_bytes(path, ("\n".join(head + nets + [str(x) for x in w.tolist()]) + "\n").encode())
    return {"vertex_weight": unit}


def read_metis_graph(path: str | os.PathLike):
    """Read a METIS graph file written by :func:`write_metis_graph` (fmt 011, ncon 2).

    Returns
    -------
    xadj : numpy.ndarray of int64
    adjncy : numpy.ndarray of int64 (0-based)
    adjwgt : numpy.ndarray of int64
    vwgt : numpy.ndarray of int64, shape (n, ncon)
    """
    with open(path) as fh:
        lines = [ln for ln in fh.read().splitlines() if not ln.startswith("%")]
    hdr = lines[0].split()
    n, fmt, ncon = int(hdr[0]), hdr[2] if len(hdr) > 2 else "000", int(hdr[3]) if len(hdr) > 3 else 1
    if fmt != "011":
        raise ValueError(f"{path}: fmt {fmt}, this reader handles 011")
    xadj = [0]
    adjncy, adjwgt, vw = [], [], []
    for ln in lines[1:n + 1]:
        t = [int(x) for x in ln.split()]
        vw.append(t[:ncon])
        rest = t[ncon:]
        adjncy.extend(x - 1 for x in rest[0::2])
        adjwgt.extend(rest[1::2])
        xadj.append(len(adjncy))
    return (np.array(xadj, np.int64), np.array(adjncy, np.int64), np.array(adjwgt, np.int64),
            np.array(vw, np.int64).reshape(n, ncon))
