"""Confidence intervals of what colosim reports (docs/spec.md, "Intervals").

Two kinds of number need one:

- **A violation frequency** (a proportion of bin × column trials, often
  tiny or zero): the Korn–Graubard interval (Korn & Graubard 1998), a
  Clopper–Pearson interval on the *effective* number of trials. The
  estimate's variance comes from independent units — the evaluation
  columns of one instance (:func:`row_q_interval`), or the instances of a
  grid point (:func:`mean_q_interval`) — so that correlation between the
  trials of one unit (bins sharing a time window, tasks shared by instances)
  widens the interval instead of being assumed away. The effective number
  is ``p(1 - p) / variance``, never more than the real number of trials
  (so the interval is never narrower than Clopper–Pearson on independent
  trials), and it is scaled by ``(z / t_df)^2`` for the units' degrees of
  freedom, which widens the interval when the units are few. With no
  violation at all the interval is ``[0, upper]``: an upper bound.
- **A mean over instances** of anything else (m_abs, m, q_max): Student's
  t interval.

All are two-sided at :data:`LEVEL` and deterministic: no resampling, no
seed.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

#: The confidence level of every interval colosim reports.
LEVEL = 0.95


# scipy.special's quantile functions (not scipy.stats' distribution objects,
# whose argument checks cost far more than the quantile): ndtri for the
# normal, stdtrit for Student's t, betaincinv for the beta distribution

@functools.lru_cache(maxsize=4096)
def _t_ratio(df: float, level: float) -> float:
    """``(z / t_df)^2`` at two-sided ``level`` (1 for infinite df)."""
    if math.isinf(df):
        return 1.0
    tail = 0.5 + level / 2
    return (float(special.ndtri(tail)) / float(special.stdtrit(df, tail))) ** 2


def proportion_interval(p: float, variance: float, trials: float, df: float,
                        level: float = LEVEL) -> tuple[float, float]:
    """Korn–Graubard interval of a proportion ``p`` estimated from
    ``trials`` trials with this estimated ``variance`` and ``df`` degrees of
    freedom of the variance estimate. ``(0, 1)`` when it cannot be told
    (no trials, or df < 1)."""
    if not trials > 0 or not df >= 1:
        return 0.0, 1.0
    p = min(max(p, 0.0), 1.0)
    n = float(trials)
    if 0.0 < p < 1.0 and variance > 0:
        n = min(n, p * (1.0 - p) / variance)
    n *= _t_ratio(df, level)
    x = p * n
    alpha = 1.0 - level
    low = 0.0 if x <= 0 else float(special.betaincinv(x, n - x + 1, alpha / 2))
    high = 1.0 if x >= n else float(special.betaincinv(x + 1, n - x, 1 - alpha / 2))
    return low, high


def row_q_interval(m_abs: int, columns: int, violations: int, squares: int,
                   level: float = LEVEL) -> tuple[float, float]:
    """Interval of one instance's q (SPEC §5) from its evaluation columns.

    ``violations = sum_t V_t`` and ``squares = sum_t V_t^2``, with ``V_t``
    the number of the packing's ``m_abs`` bins that violate in column t of
    the ``columns`` evaluation columns: the columns are independent
    realizations, so the per-column rates ``V_t / m_abs`` are independent
    and their sample variance gives the variance of q."""
    E = columns
    if E < 2:
        return 0.0, 1.0
    m = float(m_abs)
    q = violations / (m * E)
    var_rate = max(0.0, (squares / (m * m) - E * q * q) / (E - 1))  # sample variance of V_t / m
    return proportion_interval(q, var_rate / E, m * E, E - 1, level)


def row_q_intervals(m_abs, columns, violations, squares, level: float = LEVEL) -> list[tuple[float, float]]:
    """:func:`row_q_interval` of many rows at once (arrays of equal
    length, every ``m_abs`` >= 1): the same floating-point operations
    elementwise, and the same quantile function called on arrays, so the
    same bits, row by row."""
    m = np.asarray(m_abs, dtype=np.float64)
    E = np.asarray(columns, dtype=np.int64)
    v = np.asarray(violations, dtype=np.int64)
    sq = np.asarray(squares, dtype=np.int64)
    out = [(0.0, 1.0)] * m.size
    ok = np.flatnonzero(E >= 2)
    if ok.size == 0:
        return out
    m, E, v, sq = m[ok], E[ok].astype(np.float64), v[ok].astype(np.float64), sq[ok].astype(np.float64)
    q = v / (m * E)
    var_rate = np.maximum(0.0, (sq / (m * m) - E * q * q) / (E - 1))
    variance = var_rate / E
    trials = m * E
    # proportion_interval, elementwise (trials > 0 and df = E - 1 >= 1 here)
    p = np.minimum(np.maximum(q, 0.0), 1.0)
    n = trials.copy()
    inner = (0.0 < p) & (p < 1.0) & (variance > 0)
    n[inner] = np.minimum(n[inner], p[inner] * (1.0 - p[inner]) / variance[inner])
    n = n * np.array([_t_ratio(float(df), level) for df in (E - 1)])
    x = p * n
    alpha = 1.0 - level
    low = np.zeros_like(x)
    high = np.ones_like(x)
    some = x > 0
    low[some] = special.betaincinv(x[some], n[some] - x[some] + 1, alpha / 2)
    below = x < n
    high[below] = special.betaincinv(x[below] + 1, n[below] - x[below], 1 - alpha / 2)
    for i, lo, hi in zip(ok.tolist(), low.tolist(), high.tolist()):
        out[i] = (lo, hi)
    return out


def mean_q_interval(q: np.ndarray, trials: float, level: float = LEVEL) -> tuple[float, float]:
    """Interval of the mean of the instances' ``q`` (one value per
    instance); ``trials`` is the sum over instances of ``m_abs × |E|``.
    ``(nan, nan)`` with fewer than two instances."""
    q = np.asarray(q, dtype=np.float64)
    K = q.size
    if K < 2:
        return math.nan, math.nan
    return proportion_interval(float(q.mean()), float(q.var(ddof=1)) / K, trials, K - 1, level)


def mean_interval(values: np.ndarray, level: float = LEVEL,
                  bounds: tuple[float, float] = (-math.inf, math.inf)) -> tuple[float, float]:
    """Student's t interval of the mean of ``values``, clipped to
    ``bounds``; ``(nan, nan)`` with fewer than two values."""
    v = np.asarray(values, dtype=np.float64)
    K = v.size
    if K < 2:
        return math.nan, math.nan
    half = float(special.stdtrit(K - 1, 0.5 + level / 2)) * float(v.std(ddof=1)) / math.sqrt(K)
    mean = float(v.mean())
    return max(bounds[0], mean - half), min(bounds[1], mean + half)


def mean_difference_interval(a: np.ndarray, b: np.ndarray, level: float = LEVEL) -> tuple[float, float, float]:
    """Mean of the paired differences ``b - a`` and its Student's t
    interval (``nan`` bounds with fewer than two pairs)."""
    d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    low, high = mean_interval(d, level)
    return float(d.mean()) if d.size else math.nan, low, high
