"""Hypergraph partitioning of the page/site hypergraphs with Mt-KaHyPar.

Objective KM1 (connectivity−1, thesis Eq. 5.1 = number of messages), k-way,
two threads by default, imbalance ε.

Mt-KaHyPar balances **one** vertex weight and needs its total to fit int32
(bytes go in KB or a coarser unit, below :data:`HP_WEIGHT_LIMIT`). Türk's
models have two (bytes, pages), so :func:`partition_hypergraph` gives it one
of them and then enforces ``(1 + ε)`` on *both* with
:func:`~abc_crawler.partition.balance.rebalance` on the true weights:

``weight="pages"`` (default)
    the page (request) count. Measured on the synthetic 20k-page graph this
    gives the lowest connectivity−1 after the repair (K=64: 29.3k against
    32.1k for ``both``), with the fewest repair moves.
``weight="both"``
    ``w_i = S · (bytes_i / B + 1 / n)`` (B = total bytes, n = vertices,
    S = 2**28): both constraints normalized to the same total and added.
    Balancing the sum does not bound either constraint (K=64: 40 % page
    imbalance before the repair), so the repair has more to do.
``weight="bytes"``
    bytes in KB (``ceil(bytes / 1024)``; a coarser power-of-two unit if the
    total still exceeds 2**30).

``kahypar`` (the sequential KaHyPar) is not used: its wheel lacks the
``.ini`` presets and exits the process without one.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["HypergraphError", "HypergraphPartition", "hp_weights", "partition_hypergraph"]

#: Bound on the total single vertex weight given to Mt-KaHyPar (int32 with headroom).
HP_WEIGHT_LIMIT = 2**30
_INIT: dict = {}


class HypergraphError(RuntimeError):
    """mtkahypar is missing or failed."""


def _mtkahypar():
    try:
        import mtkahypar
    except ImportError:
        raise HypergraphError("the hypergraph models need Mt-KaHyPar: `pip install mtkahypar` "
                              "(part of the `partition` extra)") from None
    return mtkahypar


def _initializer(threads: int):
    mt = _mtkahypar()
    # Mt-KaHyPar's thread pool is process-wide: the first call fixes the thread count.
    if "init" not in _INIT:
        _INIT["init"] = mt.initialize(int(threads), False)
        _INIT["threads"] = int(threads)
    return mt, _INIT["init"]


def hp_weights(vwgt: np.ndarray, weight: str = "pages") -> tuple[np.ndarray, str]:
    """Single int vertex weight for Mt-KaHyPar from the (bytes, pages) columns.

    Parameters
    ----------
    vwgt : numpy.ndarray of int64, shape (n, 2)
    weight : {"pages", "both", "bytes"}

    Returns
    -------
    w : numpy.ndarray of int64
        Total <= 2**30.
    unit : str
        Human-readable description of the weight.
    """
    vwgt = np.asarray(vwgt, dtype=np.int64)
    n = vwgt.shape[0]
    if weight == "pages":
        return vwgt[:, 1].copy(), "pages"
    if weight == "bytes":
        unit = 1024
        while int(((vwgt[:, 0] + unit - 1) // unit).sum()) > HP_WEIGHT_LIMIT:
            unit *= 2
        return (vwgt[:, 0] + unit - 1) // unit, f"bytes/{unit}"
    if weight == "both":
        S = float(2**28)
        B = float(vwgt[:, 0].sum())
        P = float(vwgt[:, 1].sum())
        w = np.zeros(n)
        if B > 0:
            w += vwgt[:, 0] / B
        if P > 0:
            w += vwgt[:, 1] / P
        return np.maximum(np.rint(w * S).astype(np.int64), 1), "2^28*(bytes/B+pages/P)"
    raise ValueError(f"weight must be 'both', 'bytes' or 'pages', got {weight!r}")


@dataclass
class HypergraphPartition:
    """Result of :func:`partition_hypergraph`.

    Attributes
    ----------
    part : numpy.ndarray of int64
    km1 : int
        Connectivity−1 after the balance repair (computed here).
    mt_km1 : int
        Connectivity−1 reported by Mt-KaHyPar (before repair).
    imbalance_pct : list of float
        Imbalance per constraint (bytes, pages), in percent, after repair.
    weight : str
        The single weight given to Mt-KaHyPar.
    seconds : float
    repair : dict
    """

    part: np.ndarray
    km1: int
    mt_km1: int
    imbalance_pct: list
    weight: str
    seconds: float
    repair: dict = field(default_factory=dict)


def partition_hypergraph(hg, K: int, imbalance: float = 0.05, seed: int | None = 0, *,
                         threads: int = 2, weight: str = "pages", preset: str = "default",
                         repair_graph=None, repair: bool = True) -> HypergraphPartition:
    """K-way KM1 partition of a :class:`~abc_crawler.partition.models.Hypergraph`.

    Parameters
    ----------
    hg : Hypergraph
    K : int
        Number of parts, ``1 <= K <= hg.n_vertices``.
    imbalance : float, optional
        ε (default 0.05).
    seed : int, optional
        Mt-KaHyPar's random seed (``mtkahypar.set_seed``).
    threads : int, optional
        Threads of Mt-KaHyPar's process-wide pool (fixed by the first call).
    weight : {"pages", "both", "bytes"}, optional
        The single weight Mt-KaHyPar balances (see the module docstring).
    preset : {"default", "quality", "deterministic", "highest_quality"}, optional
        Mt-KaHyPar preset. Only ``deterministic`` gives the same partition
        for the same seed on every run; the others are multi-threaded and
        vary slightly from run to run.
    repair_graph : WeightedGraph, optional
        Graph whose cut guides the balance repair (page graph for the page
        hypergraph, site graph for the site hypergraph); without it the repair
        moves by weight only.
    repair : bool, optional
        Enforce ε on both constraints with
        :func:`~abc_crawler.partition.balance.rebalance` (default True).

    Returns
    -------
    HypergraphPartition

    Raises
    ------
    HypergraphError
        mtkahypar is missing or failed.
    ValueError
        Bad K, imbalance or weight.
    """
    from ..graph.metrics import imbalance_pct
    from .balance import part_weights, rebalance

    n = hg.n_vertices
    if not isinstance(K, (int, np.integer)) or K < 1:
        raise ValueError(f"K must be an integer >= 1, got {K!r}")
    if K > n:
        raise ValueError(f"K={K} exceeds the number of vertices {n}")
    if not (imbalance > 0):
        raise ValueError(f"imbalance must be > 0, got {imbalance!r}")
    w, unit = hp_weights(hg.vwgt, weight)
    t0 = time.perf_counter()
    if K == 1:
        part = np.zeros(n, dtype=np.int64)
        mt_km1 = 0
    else:
        mt, init = _initializer(threads)
        presets = {"default": mt.PresetType.DEFAULT, "quality": mt.PresetType.QUALITY,
                   "deterministic": mt.PresetType.DETERMINISTIC,
                   "highest_quality": mt.PresetType.HIGHEST_QUALITY}
        if preset not in presets:
            raise ValueError(f"preset must be one of {', '.join(presets)}")
        ctx = init.context_from_preset(presets[preset])
        ctx.set_partitioning_parameters(int(K), float(imbalance), mt.Objective.KM1)
        ctx.logging = False
        if seed is not None:
            mt.set_seed(int(seed))
        eptr = hg.eptr.tolist()
        pins = hg.eind.tolist()
        nets = [pins[eptr[j]:eptr[j + 1]] for j in range(hg.n_nets)]
        try:
            h = init.create_hypergraph(ctx, n, hg.n_nets, nets, w.tolist(), hg.ewgt.tolist())
            ph = h.partition(ctx)
        except Exception as e:  # mtkahypar raises its own exception types
            raise HypergraphError(f"Mt-KaHyPar failed: {e}") from e
        part = np.asarray(ph.get_partition(), dtype=np.int64)
        mt_km1 = int(ph.km1())
    rep: dict = {}
    if repair and K > 1:
        rg = repair_graph
        part, rep = rebalance(part, hg.vwgt, K, imbalance,
                              None if rg is None else rg.xadj, None if rg is None else rg.adjncy,
                              None if rg is None else rg.adjwgt)
    imb = imbalance_pct(part_weights(part, hg.vwgt, K))
    return HypergraphPartition(part, hg.km1(part), mt_km1, [float(x) for x in np.atleast_1d(imb)],
                               unit, time.perf_counter() - t0, rep)
