"""Metric definitions of DESIGN §7 as pure functions.

Examples
--------
>>> imbalance_pct([10, 10, 10, 10])
0.0
>>> imbalance_pct([30, 10, 10, 10])
100.0
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["imbalance_pct"]


def imbalance_pct(weights: Sequence[float]) -> float:
    """(W_max − W_avg) / W_avg × 100; 0 when there is nothing to balance."""
    if not weights:
        return 0.0
    avg = sum(weights) / len(weights)
    if avg <= 0:
        return 0.0
    return (max(weights) - avg) / avg * 100.0
