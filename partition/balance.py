"""Part weights, imbalance and a greedy two-constraint balance repair.

METIS balances two constraints itself but may miss the tolerance slightly on
small or very skewed graphs (and works on scaled byte weights); Mt-KaHyPar
balances a single weight only. :func:`rebalance` runs after either
partitioner and moves vertices out of overloaded parts until every part
satisfies ``W[k, c] <= (1 + eps) * W_avg[c]`` for every constraint c (thesis
Eq. 4.1 / 5.3), on the true (unscaled) weights, whenever that is reachable
by single-vertex moves.

Algorithm
---------
Repeat: pick the part p and constraint c with the largest overload
``W[p, c] / cap[c]``; score every move of a vertex of p to another part q by
the cut damage (``conn(v, p) − conn(v, q)``, ``conn`` = total edge cost from
v into a part, one sparse product over p's rows) per unit of total overload
removed; apply the best moves that keep q within the cap in *every*
constraint, and only when none is left moves that overload q in another
constraint but still lower the total overload (a later round repairs q).
Every applied move lowers the total overload Σ max(0, W − cap) / cap, so the
loop ends. A vertex heavier than the cap makes the target unreachable; the
repair then stops and says so in its report. :func:`refine` then lowers the
cut by positive-gain moves that keep every cap.

For hypergraph models the gain is computed on the corresponding graph
(page graph for the page hypergraph, site graph for the site hypergraph), a
close proxy for connectivity−1 over the few moves the repair makes.
"""
from __future__ import annotations

import numpy as np

from ..graph.metrics import imbalance_pct
from ._np import uniq

__all__ = ["part_weights", "rebalance", "refine", "is_balanced"]


def part_weights(part, vwgt, K: int) -> np.ndarray:
    """Per-part sums of the vertex weights.

    Parameters
    ----------
    part : array_like of int, shape (n,)
    vwgt : array_like of int, shape (n,) or (n, m)
    K : int

    Returns
    -------
    numpy.ndarray of int64, shape (K, m)
    """
    p = np.asarray(part, dtype=np.int64)
    w = np.asarray(vwgt, dtype=np.int64)
    if w.ndim == 1:
        w = w[:, None]
    out = np.zeros((K, w.shape[1]), dtype=np.int64)
    for c in range(w.shape[1]):
        np.add.at(out[:, c], p, w[:, c])
    return out


def is_balanced(part, vwgt, K: int, eps: float) -> bool:
    """True when every part weighs at most ``(1 + eps) · W_avg`` in every constraint."""
    W = part_weights(part, vwgt, K)
    return bool(np.all(W <= W.sum(axis=0) / K * (1.0 + eps) + 1e-9))


def rebalance(part, vwgt, K: int, eps: float, xadj=None, adjncy=None, adjwgt=None,
              max_rounds: int | None = None) -> tuple[np.ndarray, dict]:
    """Move vertices until every part is within ``(1 + eps)`` of the average.

    Parameters
    ----------
    part : array_like of int, shape (n,)
        Initial partition (not modified).
    vwgt : array_like of int, shape (n, m)
        Vertex weights, one column per constraint.
    K : int
        Number of parts.
    eps : float
        Allowed imbalance, e.g. 0.05.
    xadj, adjncy, adjwgt : array_like, optional
        Symmetric CSR graph for the move gains; without it moves are chosen by
        weight only.
    max_rounds : int, optional
        Bound on the outer iterations (default ``8 * K * m + 64``).

    Returns
    -------
    part : numpy.ndarray of int64
        The repaired partition.
    report : dict
        ``moves`` (vertices moved), ``feasible`` (bool: all parts within the
        cap afterwards), ``imbalance_pct`` (list, per constraint, after).

    Notes
    -----
    The overload of a partition is ``Σ_k Σ_c max(0, W[k, c] − cap[c]) / cap[c]``.
    Each round takes the part p and constraint c with the largest
    ``W[p, c] / cap[c]`` and scores every move of a vertex of p to another
    part q by its cut damage per unit of overload removed. Moves that keep q
    within the caps in every constraint are taken first; when none is left,
    a move may overload q in the *other* constraint as long as the total
    overload still drops (e.g. a small page into a part that is short of
    pages but full of bytes), so a later round can repair q in turn. Every
    applied move strictly lowers the total overload, so the loop ends.
    """
    part = np.array(part, dtype=np.int64, copy=True)
    w = np.asarray(vwgt, dtype=np.int64)
    if w.ndim == 1:
        w = w[:, None]
    n, m = w.shape
    W = part_weights(part, w, K).astype(np.float64)
    cap = W.sum(axis=0) / K * (1.0 + eps)
    capd = np.where(cap > 0, cap, 1.0)
    wf = w.astype(np.float64)
    have_graph = xadj is not None and adjncy is not None
    if have_graph:
        import scipy.sparse as sp

        aw = np.ones(len(adjncy)) if adjwgt is None else np.asarray(adjwgt, dtype=np.float64)
        A = sp.csr_matrix((aw, np.asarray(adjncy), np.asarray(xadj)), shape=(n, n))

    def over(x):
        return np.maximum(x - cap, 0.0) / capd

    moves = 0
    rounds = 8 * K * m + 64 if max_rounds is None else max_rounds
    tiny = 1e-12
    for _ in range(rounds):
        ratio = W / capd
        p, c = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        if ratio[p, c] <= 1.0 + 1e-12:
            break
        vs = np.flatnonzero((part == p) & (w[:, c] > 0))
        if vs.size == 0:
            break
        if have_graph:
            onehot = sp.csr_matrix((np.ones(n), (np.arange(n), part)), shape=(n, K))
            conn = (A[vs] @ onehot).toarray()
            loss = np.maximum(conn[:, [p]] - conn, 0.0) + 1.0  # cut increase (+1: prefer fewer moves)
        else:
            loss = np.ones((vs.size, K))
        wv = wf[vs]                                                     # (nv, m)
        dp = (over(W[p] - wv) - over(W[p])).sum(axis=1)                 # (nv,)  <= 0
        oq = over(W[None, :, :] + wv[:, None, :])                       # (nv, K, m)
        dq = (oq - over(W)[None]).sum(axis=2)                           # (nv, K) >= 0
        delta = dp[:, None] + dq
        creates = (oq > 0).any(axis=2)
        delta[:, p] = np.inf
        ok = delta < -tiny
        score = np.where(ok, loss / np.where(ok, -delta, 1.0) + np.where(creates, 1e30, 0.0), np.inf)
        order = np.argsort(score, axis=None, kind="stable")
        moved = np.zeros(vs.size, dtype=bool)
        applied = 0
        for flat in order.tolist():
            i, q = divmod(flat, K)
            if not np.isfinite(score[i, q]):
                break
            if moved[i]:
                continue
            d = (over(W[p] - wv[i]) - over(W[p])).sum() + (over(W[q] + wv[i]) - over(W[q])).sum()
            if d >= -tiny:
                continue
            if score[i, q] < 1e30 and np.any(W[q] + wv[i] > cap):
                continue  # was a clean move when scored; q has filled up since
            v = vs[i]
            W[p] -= wv[i]
            W[q] += wv[i]
            part[v] = q
            moved[i] = True
            applied += 1
            if W[p, c] <= cap[c]:
                break
        moves += applied
        if applied == 0:
            break
    feasible = bool(np.all(W <= cap + 1e-9))
    return part, {"moves": int(moves), "feasible": feasible,
                  "imbalance_pct": [float(x) for x in np.atleast_1d(imbalance_pct(W))]}


def refine(part, vwgt, K: int, eps: float, xadj, adjncy, adjwgt=None, max_passes: int = 8,
           ) -> tuple[np.ndarray, dict]:
    """Greedy k-way boundary refinement of the cut under both balance caps.

    Each pass computes, for every vertex, the part q maximizing
    ``conn(v, q) − conn(v, own)`` (``conn`` = edge cost into a part), then
    applies the strictly positive moves in decreasing gain order, skipping a
    move when it would push part q over ``(1 + eps) · W_avg`` in any
    constraint or when a neighbour of v already moved in this pass (so every
    applied gain is exact and the cut strictly decreases). Stops when a pass
    moves nothing or after ``max_passes``.

    Parameters
    ----------
    part : array_like of int, shape (n,)
    vwgt : array_like of int, shape (n, m)
    K : int
    eps : float
    xadj, adjncy, adjwgt : array_like
        Symmetric CSR graph.
    max_passes : int, optional

    Returns
    -------
    part : numpy.ndarray of int64
    report : dict
        ``moves``, ``passes``, ``gain`` (total cut reduction).
    """
    import scipy.sparse as sp

    part = np.array(part, dtype=np.int64, copy=True)
    w = np.asarray(vwgt, dtype=np.int64)
    if w.ndim == 1:
        w = w[:, None]
    n = w.shape[0]
    xadj = np.asarray(xadj, dtype=np.int64)
    adjncy = np.asarray(adjncy, dtype=np.int64)
    aw = np.ones(adjncy.size) if adjwgt is None else np.asarray(adjwgt, dtype=np.float64)
    A = sp.csr_matrix((aw, adjncy, xadj), shape=(n, n))
    W = part_weights(part, w, K)
    cap = W.sum(axis=0) / K * (1.0 + eps)
    moves = passes = 0
    total_gain = 0.0
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(xadj))
    for passes in range(1, max_passes + 1):
        # only boundary vertices (a neighbour in another part) can have a positive gain
        bnd = uniq(src[part[src] != part[adjncy]])
        if bnd.size == 0:
            break
        onehot = sp.csr_matrix((np.ones(n), (np.arange(n), part)), shape=(n, K))
        conn = (A[bnd] @ onehot).toarray()
        r = np.arange(bnd.size)
        own = conn[r, part[bnd]]
        conn[r, part[bnd]] = -np.inf
        best = np.argmax(conn, axis=1)
        gain = conn[r, best] - own
        sel = np.flatnonzero(gain > 0)
        if sel.size == 0:
            break
        sel = sel[np.argsort(-gain[sel], kind="stable")]
        touched = np.zeros(n, dtype=bool)
        applied = 0
        for i in sel.tolist():
            v = int(bnd[i])
            if touched[v]:
                continue
            q, p = int(best[i]), int(part[v])
            if np.any(W[q] + w[v] > cap):
                continue
            W[p] -= w[v]
            W[q] += w[v]
            part[v] = q
            total_gain += gain[i]
            applied += 1
            touched[v] = True
            touched[adjncy[xadj[v]:xadj[v + 1]]] = True
        moves += applied
        if applied == 0:
            break
    return part, {"moves": int(moves), "passes": int(passes), "gain": int(round(total_gain))}
