"""Per-task statistics of usage rows (SPEC §3): the moments, extremes and
percentiles the estimators need, the row means of m_norm (SPEC §5), and
the log moment generating function of ``effsize`` (docs/estimators.md).

Rows are independent, so every ``prange`` over rows gives the same bits
whatever the thread count.
"""

import math

import numpy as np
from numba import prange

from .._jit import jit, pjit
from ._sort import sort_float32

__all__ = ["task_statistics", "row_means", "log_mgf"]


@pjit
def task_statistics(observed, levels):
    """Mean, population variance (ddof = 0), maximum, minimum and the
    percentiles at ``levels`` (NumPy's ``method="linear"``) of each row, in
    float64: ``(mean, var, maximum, minimum, percentiles (n, len(levels)))``.

    The mean is a sequential sum in column order divided by k; the variance a
    second pass from that mean.
    """
    n, k = observed.shape
    n_levels = levels.shape[0]
    mean = np.empty(n)
    var = np.empty(n)
    maximum = np.empty(n)
    minimum = np.empty(n)
    perc = np.empty((n, n_levels))
    for i in prange(n):
        row = observed[i]
        s = 0.0
        mx = -np.inf
        mn = np.inf
        for t in range(k):
            v = np.float64(row[t])
            s += v
            if v > mx:
                mx = v
            if v < mn:
                mn = v
        mu = s / k
        ss = 0.0
        for t in range(k):
            d = np.float64(row[t]) - mu
            ss += d * d
        mean[i] = mu
        var[i] = ss / k
        maximum[i] = mx
        minimum[i] = mn
        if n_levels > 0:
            if row.itemsize == 4:  # float32 data: radix sort of the bit patterns
                _percentiles_sorted(row, levels, perc[i])
            else:
                _percentiles_selected(row.astype(np.float64), levels, perc[i])
    return mean, var, maximum, minimum, perc


@pjit
def row_means(x):
    """float64 mean of each row over all its columns, summed in column order
    (the per-task means of m_norm, SPEC §5)."""
    n, k = x.shape
    out = np.empty(n)
    for i in prange(n):
        s = 0.0
        for t in range(k):
            s += np.float64(x[i, t])
        out[i] = s / k
    return out


@pjit
def log_mgf(observed, s_grid):
    """``ln mean_t exp(s_g x_t)`` of every row (float64) at every ``s_g``,
    computed as ``s_g max + ln mean exp(s_g (x_t - max))`` so that it never
    overflows."""
    n, k = observed.shape
    G = s_grid.shape[0]
    out = np.empty((n, G))
    for i in prange(n):
        mx = -np.inf
        for t in range(k):
            v = np.float64(observed[i, t])
            if v > mx:
                mx = v
        for g in range(G):
            s = s_grid[g]
            acc = 0.0
            for t in range(k):
                acc += math.exp(s * (np.float64(observed[i, t]) - mx))
            out[i, g] = s * mx + math.log(acc / k)
    return out


@jit
def _select(a, lo, hi, k):
    """Reorder ``a[lo:hi + 1]`` in place so that ``a[k]`` is its k-th
    smallest, smaller-or-equal values before it and greater-or-equal after
    (Hoare quickselect, median-of-three pivot; duplicates split evenly)."""
    while hi > lo:
        mid = (lo + hi) >> 1
        if a[mid] < a[lo]:
            a[mid], a[lo] = a[lo], a[mid]
        if a[hi] < a[lo]:
            a[hi], a[lo] = a[lo], a[hi]
        if a[hi] < a[mid]:
            a[hi], a[mid] = a[mid], a[hi]
        pivot = a[mid]
        i, j = lo, hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return


@jit
def _lerp(a, b, gamma):
    # NumPy's linear method evaluates the lerp from the upper end when the
    # fraction is >= 0.5
    diff = b - a
    if gamma >= 0.5:
        return b - diff * (1.0 - gamma)
    return a + diff * gamma


@jit
def _percentiles_selected(values, levels, out):
    """Percentiles at ascending ``levels`` of float64 ``values`` (reordered
    in place) by NumPy's linear method, with selection instead of a full
    sort: each level needs only the order statistics at floor(index) and the
    next one, and after selecting one rank the next level's search starts
    above it."""
    k = values.shape[0]
    start = 0
    for p in range(levels.shape[0]):
        index = (k - 1) * (levels[p] / 100.0)
        lo = int(math.floor(index))
        gamma = index - lo
        if lo < start:  # same rank as the previous level: already in place
            lo_value = values[lo]
        else:
            _select(values, start, k - 1, lo)
            lo_value = values[lo]
            start = lo
        if lo + 1 < k:
            hi_value = values[lo + 1]
            for t in range(lo + 2, k):  # smallest value above rank lo
                if values[t] < hi_value:
                    hi_value = values[t]
        else:
            hi_value = lo_value
        out[p] = _lerp(lo_value, hi_value, gamma)


@jit
def _percentiles_sorted(row, levels, out):
    """Percentiles of float32 values by a radix sort, then NumPy's linear
    method on the sorted values: float32 to float64 is exact and monotone,
    so the order statistics are those NumPy finds on the float64 values."""
    k = row.shape[0]
    ordered = np.empty(k, dtype=np.float32)
    sort_float32(row, ordered)
    for p in range(levels.shape[0]):
        index = (k - 1) * (levels[p] / 100.0)
        lo = int(math.floor(index))
        hi = min(lo + 1, k - 1)
        out[p] = _lerp(np.float64(ordered[lo]), np.float64(ordered[hi]), index - lo)
