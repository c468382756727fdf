"""Sort-based ``unique`` helpers.

NumPy 2.3+ switched ``np.unique`` on integer arrays to a hash-based kernel that
is 10–60× slower than sorting on the key sizes used here (1M int64 keys:
about 2 s against 0.04 s measured with NumPy 2.4), so the models use these.
"""
from __future__ import annotations

import numpy as np

__all__ = ["uniq", "uniq_index", "uniq_inverse"]


def uniq(x) -> np.ndarray:
    """Sorted distinct values of ``x`` (like ``np.unique(x)``)."""
    a = np.sort(np.asarray(x).ravel(), kind="stable")
    if a.size == 0:
        return a
    return a[np.r_[True, a[1:] != a[:-1]]]


def uniq_index(x) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and the index of each one's first occurrence."""
    x = np.asarray(x).ravel()
    order = np.argsort(x, kind="stable")
    a = x[order]
    if a.size == 0:
        return a, order
    first = np.r_[True, a[1:] != a[:-1]]
    return a[first], order[first]


def uniq_inverse(x) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and, for every element, the index of its value in them."""
    x = np.asarray(x).ravel()
    order = np.argsort(x, kind="stable")
    a = x[order]
    if a.size == 0:
        return a, np.zeros(0, dtype=np.int64)
    first = np.r_[True, a[1:] != a[:-1]]
    inv = np.empty(x.size, dtype=np.int64)
    inv[order] = np.cumsum(first) - 1
    return a[first], inv
