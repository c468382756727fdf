"""The session metrics' shared definitions, as pure functions.

Every module that computes a metric of ``stats.json`` (the crawl, ``abc-report``,
``abc-repartition``'s predictions, the benchmarks) takes these two rules from
here, so each is written once:

- the **imbalance** of per-rank weights W: (W_max − W_avg) / W_avg × 100, 0 when
  there is nothing to balance (:func:`imbalance_pct`);
- the **cost of one URL on the wire**: the exchange sends a URL as one line of
  UTF-8 text, so it costs its UTF-8 length plus the newline that ends the line
  (:func:`url_wire_cost`). Türk's volume (``volume_bytes``) sums this over the
  links whose two ends have different owners; a part vector's graph cut is
  weighed in the same unit.

The definitions of every metric are in ``docs/SESSION_FORMAT.md``.

Examples
--------
>>> imbalance_pct([10, 10, 10, 10])
0.0
>>> imbalance_pct([30, 10, 10, 10])
100.0
>>> url_wire_cost(len("http://a.test/".encode()))
15
"""
from __future__ import annotations

import numpy as np

__all__ = ["imbalance_pct", "url_wire_cost", "URL_TERMINATOR_BYTES"]

#: Bytes a URL costs on the wire beyond its UTF-8 text: the ``\\n`` that ends its line.
URL_TERMINATOR_BYTES = 1


def imbalance_pct(weights) -> float | np.ndarray:
    """(W_max − W_avg) / W_avg × 100 over the ranks (or parts); 0 when W_avg is not positive.

    Parameters
    ----------
    weights : array_like, shape (K,) or (K, m)
        The weight of every rank, empty ones included; with m columns (one
        per constraint) the imbalance of each column.

    Returns
    -------
    float or numpy.ndarray
        A float for one column, an array of m floats for m columns; 0.0 for
        no ranks at all.

    Examples
    --------
    >>> imbalance_pct([])
    0.0
    >>> imbalance_pct([[10, 1], [30, 1]]).tolist()
    [50.0, 0.0]
    """
    W = np.asarray(weights, dtype=np.float64)
    if W.shape[0] == 0:
        return 0.0 if W.ndim == 1 else np.zeros(W.shape[1:])
    avg = W.mean(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(avg > 0, (W.max(axis=0) - avg) / np.where(avg > 0, avg, 1) * 100.0, 0.0)
    return float(r) if np.ndim(r) == 0 else r


def url_wire_cost(utf8_length):
    """Bytes one URL of ``utf8_length`` UTF-8 bytes costs on the exchange: the length + the newline.

    Works element-wise on a NumPy array of lengths.

    Examples
    --------
    >>> url_wire_cost(14)
    15
    >>> url_wire_cost(np.array([14, 15])).tolist()
    [15, 16]
    """
    return utf8_length + URL_TERMINATOR_BYTES
