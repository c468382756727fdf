"""Distance figures of a digraph from its neighbourhood function, exact or estimated.

The neighbourhood function N(t) counts the ordered pairs (x, y) with
d(x, y) <= t, x = y included (so N(0) = n).  Every distance figure of the
crawled graph (``docs/SESSION_FORMAT.md``) is a function of it, over the ordered pairs
u != v with a finite distance:

* reachable pairs = N(T) - N(0), T the last distance;
* average distance = sum_t t (N(t) - N(t-1)) / (N(T) - N(0));
* effective diameter (alpha = 0.9) = the alpha-quantile of those distances,
  interpolated: the smallest t with F(t) >= alpha, where
  F(t) = (N(t) - N(0)) / (N(T) - N(0)), minus the part of the step from
  t - 1 to t that is not needed: ``t - 1 + (alpha - F(t-1)) / (F(t) - F(t-1))``
  (Boldi & Vigna's interpolated effective diameter, over pairs u != v);
* diameter = T (exact only: an estimate of T is a lower bound at best).

The same functions serve the exact N(t) (from APSD's distance histogram over
the first N pages, :func:`exact_figures`) and HyperBall's estimate of it
over the whole graph (:func:`estimated_figures`), whose standard errors come
from a delete-a-group jackknife over the counters' register groups
(``_hyperball.pyx``).

Examples
--------
>>> nf = [3, 5, 6]                    # the path 0 -> 1 -> 2
>>> f = figures(nf)
>>> f["reachable_pairs"], f["avg_distance"], round(f["effective_diameter"], 3)
(3.0, 1.3333333333333333, 1.7)
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["figures", "exact_figures", "estimated_figures", "jackknife", "log2m_for_error",
           "counter_rse", "nf_from_histogram", "ALPHA"]

ALPHA = 0.9
HLL_BETA = 1.04         # a HyperLogLog counter's relative standard error is ~ 1.04 / sqrt(m)
LOG2M_MIN, LOG2M_MAX = 4, 12


def log2m_for_error(rse: float) -> int:
    """b such that 2^b registers give a counter's relative standard error <= ``rse``.

    b = ceil(log2((1.04 / rse)^2)), clipped to 4 .. 12 (16 to 4096 registers).

    Examples
    --------
    >>> log2m_for_error(0.1), log2m_for_error(0.05), log2m_for_error(0.5)
    (7, 9, 4)
    """
    rse = float(rse)
    if not rse > 0:
        raise ValueError(f"target error must be > 0, got {rse!r}")
    b = math.ceil(math.log2((HLL_BETA / rse) ** 2))
    return min(max(b, LOG2M_MIN), LOG2M_MAX)


def counter_rse(log2m: int) -> float:
    """Relative standard error of one HyperLogLog counter of 2^log2m registers."""
    return HLL_BETA / math.sqrt(2 ** log2m)


def nf_from_histogram(n: int, hist) -> np.ndarray:
    """Exact N(t) from a histogram of pairs u != v by finite distance (``hist[0]`` ignored).

    Examples
    --------
    >>> nf_from_histogram(3, [0, 2, 1]).tolist()
    [3.0, 5.0, 6.0]
    """
    h = np.asarray(hist, dtype=np.float64).copy()
    if h.size == 0:
        h = np.zeros(1)
    h[0] = n
    return np.cumsum(h)


def _fractions(nf) -> np.ndarray | None:
    """F(t) = (N(t) - N(0)) / (N(T) - N(0)), or None if no pair u != v is connected."""
    nf = np.maximum.accumulate(np.asarray(nf, dtype=np.float64))
    if nf.size < 2 or nf[-1] - nf[0] <= 0:
        return None
    return (nf - nf[0]) / (nf[-1] - nf[0])


def _quantile(frac: np.ndarray, level: float) -> float:
    """The interpolated ``level``-quantile of the distances: smallest t with F(t) >= level,
    less the unneeded part of the step from t - 1."""
    level = min(max(level, 0.0), 1.0)
    t = max(int(np.searchsorted(frac, level - 1e-12)), 1)
    t = min(t, frac.size - 1)
    step = frac[t] - frac[t - 1]
    return float(t - 1 + ((level - frac[t - 1]) / step if step > 0 else 1.0))


def _cdf_at(frac: np.ndarray, x: float) -> float:
    """F interpolated linearly at a real distance x (the inverse of :func:`_quantile`)."""
    t = min(int(math.floor(x)), frac.size - 2)
    return float(frac[t] + (x - t) * (frac[t + 1] - frac[t]))


def figures(nf, alpha: float = ALPHA) -> dict:
    """Reachable pairs, average distance and effective diameter from one N(t).

    Parameters
    ----------
    nf : array_like of float
        N(0), N(1), ..., N(T) (non-decreasing; estimates may be fractional).
    alpha : float
        Quantile of the effective diameter (0.9).

    Returns
    -------
    dict
        ``reachable_pairs``, ``avg_distance``, ``effective_diameter`` (all
        0.0 when no pair u != v is connected).
    """
    frac = _fractions(nf)
    if frac is None:
        return {"reachable_pairs": 0.0, "avg_distance": 0.0, "effective_diameter": 0.0}
    nf = np.maximum.accumulate(np.asarray(nf, dtype=np.float64))
    total = nf[-1] - nf[0]
    at = np.diff(nf)                            # pairs at distance t = 1 .. T
    avg = float(np.dot(np.arange(1, nf.size), at) / total)
    return {"reachable_pairs": float(total), "avg_distance": avg,
            "effective_diameter": _quantile(frac, alpha)}


def jackknife(full: float, replicates) -> float:
    """Delete-a-group jackknife standard error: sqrt((G-1)/G sum (r_g - mean r)^2).

    Examples
    --------
    >>> round(jackknife(1.0, [1.0, 1.0, 1.0]), 12), round(jackknife(1.0, [0.9, 1.1]), 6)
    (0.0, 0.1)
    """
    r = np.asarray(replicates, dtype=np.float64)
    g = r.size
    if g < 2:
        return float("nan")
    return float(math.sqrt((g - 1) / g * float(((r - r.mean()) ** 2).sum())))


def _labelled(value: float, se: float) -> dict:
    rse = se / abs(value) if value else (0.0 if se == 0 else float("inf"))
    return {"estimate": value, "se": se, "rse": rse}


def _quantile_se(nf, replicates, alpha: float, z: float = 5.0) -> float:
    """Standard error of the effective diameter, from Woodruff's interval.

    The jackknife gives the error ``s`` of the estimated CDF at the
    estimated quantile; the quantiles of the levels alpha -/+ z s bound the
    estimate, and the larger of its distances to them, divided by z, is its
    standard error.  Where the CDF is smooth this is the jackknife's error
    (slope times s); near an integer distance it is larger: the
    interpolated quantile is piecewise linear in F with a slope
    1 / (F(t) - F(t-1)) that changes at every integer, and when the
    estimate and the true value lie on two sides of one, the local slope
    understates the error many times (measured, ``bench/hyperball_errors.py``:
    on a crawl of a generated web whose CDF jumps 0.53 -> 0.88 -> 0.99 at
    t = 4, 5, 6, a jackknife of the quantile put 11 % of 100 estimates more
    than 3 errors from the truth, this interval none).
    With z = 5, an estimate is within 5 standard errors of the truth
    whenever the CDF's error is within 5 jackknife errors, kink or not.
    z = 3 was not enough: the jackknife's ``s`` itself understates the
    CDF's error now and then (HyperLogLog's bias is not in it), and over
    300 random node numberings of one crawl's graph (1,500 pages; the
    numbering decides which node gets which hash) 4 estimates were more
    than 4 stated errors from the exact value, up to 6.5; with z = 5 none
    was more than 4 and 2 more than 3, for a median error only 3 % larger
    (0.169 against 0.164; ``tests/test_kernels_whole.py`` checks the
    coverage).
    """
    frac = _fractions(nf)
    if frac is None:
        return 0.0
    q = _quantile(frac, alpha)
    at = []
    for g in range(replicates.shape[1]):
        fg = _fractions(replicates[:, g])
        at.append(0.0 if fg is None else _cdf_at(fg, q))
    s = jackknife(alpha, at)
    if not s > 0:
        return 0.0
    return max(_quantile(frac, alpha + z * s) - q, q - _quantile(frac, alpha - z * s)) / z


def estimated_figures(nf, replicates, alpha: float = ALPHA) -> dict:
    """HyperBall's figures, each ``{"estimate", "se", "rse"}``.

    Standard errors: a delete-a-group jackknife over the counters' register
    groups for the reachable pairs and the average distance (smooth
    functions of N); for the effective diameter, a quantile, from Woodruff's
    interval on the jackknife error of the CDF (:func:`_quantile_se`).

    Parameters
    ----------
    nf : array_like, shape (T + 1,)
        Estimated N(t) from all registers.
    replicates : array_like, shape (T + 1, G)
        N(t) estimated without register group g, for every g.

    Returns
    -------
    dict
        ``reachable_pairs``, ``avg_distance``, ``effective_diameter`` and
        ``neighbourhood_function`` (``estimate`` and ``rse`` are lists over
        t), plus ``distances_seen`` (T: the passes that changed a counter).
    """
    nf = np.asarray(nf, dtype=np.float64)
    rep = np.asarray(replicates, dtype=np.float64).reshape(nf.size, -1)
    full = figures(nf, alpha)
    reps = [figures(rep[:, g], alpha) for g in range(rep.shape[1])]
    out = {k: _labelled(full[k], jackknife(full[k], [r[k] for r in reps]))
           for k in ("reachable_pairs", "avg_distance")}
    out["effective_diameter"] = _labelled(full["effective_diameter"], _quantile_se(nf, rep, alpha))
    se_t = [jackknife(nf[t], rep[t]) for t in range(nf.size)]
    out["neighbourhood_function"] = {"estimate": nf.tolist(),
                                     "rse": [s / v if v else 0.0 for s, v in zip(se_t, nf.tolist())]}
    out["distances_seen"] = int(nf.size - 1)
    return out


def exact_figures(n: int, hist, alpha: float = ALPHA) -> dict:
    """Exact figures from a histogram of pairs u != v by distance (APSD's ``histogram()``).

    Examples
    --------
    >>> f = exact_figures(3, [0, 2, 1])
    >>> f["reachable_pairs"], f["diameter"], round(f["effective_diameter"], 3)
    (3, 2, 1.7)
    """
    f = figures(nf_from_histogram(n, hist), alpha)
    h = np.asarray(hist)
    nz = np.flatnonzero(h[1:]) if h.size > 1 else np.zeros(0, np.int64)
    return {"reachable_pairs": int(round(f["reachable_pairs"])), "avg_distance": f["avg_distance"],
            "effective_diameter": f["effective_diameter"], "diameter": int(nz[-1] + 1) if nz.size else 0}
