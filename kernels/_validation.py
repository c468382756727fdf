"""Input checks shared by the kernel wrappers, and the kernels' exceptions.

Every public ``add_edges`` validates the whole batch here *before* it changes
any state, so a rejected batch leaves the kernel as it was.
"""
from __future__ import annotations

import operator

import numpy as np

__all__ = ["DistanceOverflowError", "as_edge_arrays", "as_count", "as_csr"]


class DistanceOverflowError(OverflowError):
    """A shortest distance does not fit the distance matrix's cell type.

    Raised by :class:`abc_crawler.kernels.APSD` when an insertion makes a pair
    reachable whose distance is at least the type's sentinel (255 for uint8,
    65535 for uint16).  The matrix is then incomplete, so the instance refuses
    further updates and reads of distance statistics; rebuild it with a wider
    ``dtype``.
    """


def as_count(k, what: str = "k") -> int:
    """Return ``k`` as a non-negative ``int``; raise ``ValueError`` otherwise."""
    try:
        k = operator.index(k)
    except TypeError:
        raise ValueError(f"{what} must be an integer, got {k!r}") from None
    if k < 0:
        raise ValueError(f"{what} must be >= 0, got {k}")
    return k


def _as_ids(a, name: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of node ids, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        if arr.size == 0:       # np.asarray([]) is float64: an empty batch is fine
            return np.empty(0, dtype=np.int32)
        raise ValueError(f"{name}: expected integer node ids, got dtype {arr.dtype}")
    return arr


def as_edge_arrays(src, dst, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate an edge batch and return it as two C-contiguous int32 arrays.

    Parameters
    ----------
    src, dst : array_like of int
        Edge ``e`` is ``src[e] -> dst[e]``.  Any integer dtype is accepted;
        int32 C-contiguous arrays are returned as they are (no copy).
    n_nodes : int
        Node ids must lie in ``[0, n_nodes)``.

    Returns
    -------
    src, dst : ndarray of int32

    Raises
    ------
    ValueError
        Not 1-D, not integer, lengths differ, or a node id out of range; the
        message names the first offending edge, e.g.
        ``edge 3: (5, 17): node id 17 out of range [0, 10)``.

    Notes
    -----
    O(m) time for m edges; one comparison pass over each array.

    Examples
    --------
    >>> s, d = as_edge_arrays([0, 1], [1, 2], 3)
    >>> s.dtype, d.tolist()
    (dtype('int32'), [1, 2])
    """
    s = _as_ids(src, "src")
    d = _as_ids(dst, "dst")
    if s.shape[0] != d.shape[0]:
        raise ValueError(f"src and dst differ in length: {s.shape[0]} != {d.shape[0]}")
    if s.shape[0]:
        # Compare in the caller's dtype, before any narrowing cast can wrap.
        bad = (s < 0) | (s >= n_nodes) | (d < 0) | (d >= n_nodes)
        if bad.any():
            e = int(np.argmax(bad))
            u, v = int(s[e]), int(d[e])
            which = u if not 0 <= u < n_nodes else v
            raise ValueError(f"edge {e}: ({u}, {v}): node id {which} out of range [0, {n_nodes})")
    return (np.ascontiguousarray(s, dtype=np.int32), np.ascontiguousarray(d, dtype=np.int32))


def as_csr(indptr, indices) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate a CSR digraph; return ``(indptr int64, indices int32, n)``.

    ``indices`` is returned with at least one entry (a 0 when the graph has
    no edge), so that kernels may take its address; ``indptr[n]`` says how
    many are edges.

    Raises
    ------
    ValueError
        Not 1-D integer arrays, ``indptr`` not running from 0 to
        ``len(indices)`` or decreasing, or a target out of ``[0, n)``; the
        message says which and where.

    Examples
    --------
    >>> ip, ix, n = as_csr([0, 2, 2], [1, 0])
    >>> ip.dtype, ix.tolist(), n
    (dtype('int64'), [1, 0], 2)
    """
    ip = np.asarray(indptr)
    ix = np.asarray(indices)
    if ip.ndim != 1 or ip.shape[0] < 1 or ip.dtype.kind not in "iu":
        raise ValueError(f"indptr: expected a 1-D integer array of n + 1 >= 1 entries, got shape {ip.shape}, "
                         f"dtype {ip.dtype}")
    if ix.ndim != 1 or (ix.size and ix.dtype.kind not in "iu"):
        raise ValueError(f"indices: expected a 1-D integer array, got shape {ix.shape}, dtype {ix.dtype}")
    n = ip.shape[0] - 1
    if int(ip[0]) != 0 or int(ip[n]) != ix.shape[0]:
        raise ValueError(f"indptr must run from 0 to len(indices) = {ix.shape[0]}, got {int(ip[0])} .. {int(ip[n])}")
    if n and (np.diff(ip) < 0).any():
        raise ValueError(f"indptr decreases at row {int(np.argmax(np.diff(ip) < 0))}")
    if ix.size and (int(ix.min()) < 0 or int(ix.max()) >= n):
        bad = int(np.argmax((ix < 0) | (ix >= n)))
        raise ValueError(f"indices[{bad}] = {int(ix[bad])} out of range [0, {n})")
    if n >= 2 ** 31 - 1:
        raise ValueError(f"too many nodes for int32 ids: {n}")
    return (np.ascontiguousarray(ip, dtype=np.int64),
            np.ascontiguousarray(ix, dtype=np.int32) if ix.size else np.zeros(1, np.int32), n)
