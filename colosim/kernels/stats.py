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
from ._sort import order_statistics_float32, select, select_work

__all__ = ["task_statistics", "row_means", "row_maxima", "log_mgf"]


#: rows handled together: their sums are independent chains of additions,
#: so the processor overlaps them (each row's sum keeps its column order)
BLOCK = 4


@jit
def _moments(observed, i0, i1, mean, var, maximum, minimum):
    """Mean (a sequential float64 sum in column order divided by k),
    population variance (a second pass from that mean), maximum and minimum
    of rows ``i0 .. i1 - 1`` (at most :data:`BLOCK`), as four independent
    accumulator chains."""
    k = observed.shape[1]
    r0 = observed[i0]
    r1 = observed[min(i0 + 1, i1 - 1)]
    r2 = observed[min(i0 + 2, i1 - 1)]
    r3 = observed[min(i0 + 3, i1 - 1)]
    s0 = s1 = s2 = s3 = 0.0
    a0 = a1 = a2 = a3 = -np.inf
    b0 = b1 = b2 = b3 = np.inf
    for t in range(k):
        v0 = np.float64(r0[t])
        v1 = np.float64(r1[t])
        v2 = np.float64(r2[t])
        v3 = np.float64(r3[t])
        s0 += v0
        s1 += v1
        s2 += v2
        s3 += v3
        a0 = v0 if v0 > a0 else a0
        a1 = v1 if v1 > a1 else a1
        a2 = v2 if v2 > a2 else a2
        a3 = v3 if v3 > a3 else a3
        b0 = v0 if v0 < b0 else b0
        b1 = v1 if v1 < b1 else b1
        b2 = v2 if v2 < b2 else b2
        b3 = v3 if v3 < b3 else b3
    m0, m1, m2, m3 = s0 / k, s1 / k, s2 / k, s3 / k
    q0 = q1 = q2 = q3 = 0.0
    for t in range(k):
        d0 = np.float64(r0[t]) - m0
        d1 = np.float64(r1[t]) - m1
        d2 = np.float64(r2[t]) - m2
        d3 = np.float64(r3[t]) - m3
        q0 += d0 * d0
        q1 += d1 * d1
        q2 += d2 * d2
        q3 += d3 * d3
    ms = (m0, m1, m2, m3)
    qs = (q0, q1, q2, q3)
    mx = (a0, a1, a2, a3)
    mn = (b0, b1, b2, b3)
    for r in range(i1 - i0):
        mean[i0 + r] = ms[r]
        var[i0 + r] = qs[r] / k
        maximum[i0 + r] = mx[r]
        minimum[i0 + r] = mn[r]


@pjit
def task_statistics(observed, levels):
    """Mean, population variance (ddof = 0), maximum, minimum and the
    percentiles at ``levels`` (NumPy's ``method="linear"``) of each row, in
    float64: ``(mean, var, maximum, minimum, percentiles (n, len(levels)))``.

    The mean is a sequential sum in column order divided by k; the variance a
    second pass from that mean. Rows are taken :data:`BLOCK` at a time
    (independent sums, the same bits as one row at a time).
    """
    n, k = observed.shape
    n_levels = levels.shape[0]
    mean = np.empty(n)
    var = np.empty(n)
    maximum = np.empty(n)
    minimum = np.empty(n)
    perc = np.empty((n, n_levels))
    for blk in prange((n + BLOCK - 1) // BLOCK):
        i0 = blk * BLOCK
        i1 = min(i0 + BLOCK, n)
        _moments(observed, i0, i1, mean, var, maximum, minimum)
        if n_levels > 0:
            work = select_work(k)
            for i in range(i0, i1):
                row = observed[i]
                if row.itemsize == 4:  # float32 data: radix selection on the bit patterns
                    _percentiles_sorted(row, levels, perc[i], work)
                else:
                    _percentiles_selected(row.astype(np.float64), levels, perc[i])
    return mean, var, maximum, minimum, perc


@pjit
def row_maxima(x, first, stop):
    """Each row's largest value over columns ``[first, stop)``."""
    n = x.shape[0]
    out = np.empty(n, dtype=x.dtype)
    for i in prange(n):
        row = x[i]
        m = row[first]
        for t in range(first + 1, stop):
            v = row[t]
            m = v if v > m else m
        out[i] = m
    return out


@pjit
def row_means(x):
    """float64 mean of each row over all its columns, summed in column order
    (the per-task means of m_norm, SPEC §5); rows :data:`BLOCK` at a time."""
    n, k = x.shape
    out = np.empty(n)
    for blk in prange((n + BLOCK - 1) // BLOCK):
        i0 = blk * BLOCK
        i1 = min(i0 + BLOCK, n)
        r0 = x[i0]
        r1 = x[min(i0 + 1, i1 - 1)]
        r2 = x[min(i0 + 2, i1 - 1)]
        r3 = x[min(i0 + 3, i1 - 1)]
        s0 = s1 = s2 = s3 = 0.0
        for t in range(k):
            s0 += np.float64(r0[t])
            s1 += np.float64(r1[t])
            s2 += np.float64(r2[t])
            s3 += np.float64(r3[t])
        ss = (s0, s1, s2, s3)
        for r in range(i1 - i0):
            out[i0 + r] = ss[r] / k
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
            select(values, start, k - 1, lo)
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
def _percentiles_sorted(row, levels, out, work):
    """Percentiles of float32 values by NumPy's linear method on the order
    statistics it needs, found by radix selection
    (:func:`order_statistics_float32`): float32 to float64 is exact and
    monotone, so they are those NumPy finds on the float64 values."""
    k = row.shape[0]
    L = levels.shape[0]
    ranks = np.empty(2 * L, dtype=np.int64)
    for p in range(L):
        lo = int(math.floor((k - 1) * (levels[p] / 100.0)))
        ranks[2 * p] = lo
        ranks[2 * p + 1] = min(lo + 1, k - 1)
    order = np.argsort(ranks)
    found = np.empty(2 * L, dtype=np.float32)
    order_statistics_float32(row, ranks[order], found, work)
    value = np.empty(2 * L, dtype=np.float32)
    for r in range(2 * L):
        value[order[r]] = found[r]
    for p in range(L):
        index = (k - 1) * (levels[p] / 100.0)
        lo = int(math.floor(index))
        out[p] = _lerp(np.float64(value[2 * p]), np.float64(value[2 * p + 1]), index - lo)
