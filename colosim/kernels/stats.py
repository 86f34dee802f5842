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
from ._sort import (
    _float_bits,
    _keys32,
    nonneg_work,
    order_statistics_float32,
    order_statistics_nonneg,
    select,
    select_work,
)

__all__ = ["task_statistics", "row_means", "row_maxima", "log_mgf"]


#: lanes of a row's float64 sums: lane j adds columns j, j + LANES, ... in
#: column order, so the lanes are independent and one vector instruction
#: adds many of them (the same bits on any processor: each lane's order is
#: fixed by the code, not by the compiler); the lanes are then added by
#: pairwise halving
LANES = 64

#: rows up to this length get their percentiles by sorting the radix
#: selection's keys: its fixed cost (passes over its 2,048 digits) is tens of
#: times that of sorting a short row (low clairvoyance levels observe 10 or
#: 100 columns)
SORT_MAX = 256
#: the bits of a float32 but its sign
MAGNITUDE = np.uint32(0x7FFFFFFF)

#: rows per task of the parallel loops (each task allocates its lanes once)
ROWS = 16


@jit
def _combine(acc):
    """The sum of ``acc`` (LANES,) by pairwise halving (a fixed order)."""
    w = acc.shape[0]
    while w > 1:
        w //= 2
        for j in range(w):
            acc[j] += acc[j + w]
    return acc[0]


@jit
def _lane_sum(row, acc):
    """float64 sum of ``row`` in :data:`LANES` lanes (``acc`` scratch)."""
    k = row.shape[0]
    kl = k // LANES * LANES
    acc[:] = 0.0
    for t in range(0, kl, LANES):
        seg = row[t : t + LANES]
        for j in range(LANES):
            acc[j] += np.float64(seg[j])
    for t in range(kl, k):
        acc[t - kl] += np.float64(row[t])
    return _combine(acc)


@jit
def _lane_squares(row, m, acc):
    """float64 sum of ``(row - m)**2`` in :data:`LANES` lanes."""
    k = row.shape[0]
    kl = k // LANES * LANES
    acc[:] = 0.0
    for t in range(0, kl, LANES):
        seg = row[t : t + LANES]
        for j in range(LANES):
            d = np.float64(seg[j]) - m
            acc[j] += d * d
    for t in range(kl, k):
        d = np.float64(row[t]) - m
        acc[t - kl] += d * d
    return _combine(acc)


@jit
def _extremes(row):
    """Largest and smallest value of ``row`` (exact in any order), in eight
    lanes held in locals: lanes in an array compile to masked stores of the
    lanes that change (vmaskmovps), microcoded and slow on AVX2 processors."""
    k = row.shape[0]
    kl = k // 8 * 8
    h0 = h1 = h2 = h3 = h4 = h5 = h6 = h7 = row[0]
    l0 = l1 = l2 = l3 = l4 = l5 = l6 = l7 = row[0]
    for t in range(0, kl, 8):
        # max(h, v) is v if v > h else h (Numba's max is that select)
        h0, h1, h2, h3 = max(h0, row[t]), max(h1, row[t + 1]), max(h2, row[t + 2]), max(h3, row[t + 3])
        h4, h5, h6, h7 = max(h4, row[t + 4]), max(h5, row[t + 5]), max(h6, row[t + 6]), max(h7, row[t + 7])
        l0, l1, l2, l3 = min(l0, row[t]), min(l1, row[t + 1]), min(l2, row[t + 2]), min(l3, row[t + 3])
        l4, l5, l6, l7 = min(l4, row[t + 4]), min(l5, row[t + 5]), min(l6, row[t + 6]), min(l7, row[t + 7])
    a = max(max(max(h0, h1), max(h2, h3)), max(max(h4, h5), max(h6, h7)))
    b = min(min(min(l0, l1), min(l2, l3)), min(min(l4, l5), min(l6, l7)))
    for t in range(kl, k):
        a = max(a, row[t])
        b = min(b, row[t])
    return np.float64(a), np.float64(b)


@pjit
def task_statistics(x, k, levels):
    """Mean, population variance (ddof = 0), maximum, minimum and the
    percentiles at ``levels`` (NumPy's ``method="linear"``) of the first
    ``k`` columns of each row of ``x``, in float64: ``(mean, var, maximum,
    minimum, percentiles (n, len(levels)))``. (A C-contiguous ``x`` and
    ``k`` rather than a view of its columns: the rows' type then says they
    are contiguous, and the lanes vectorize.)

    The mean is the row's float64 sum in :data:`LANES` lanes divided by k;
    the variance a second pass from that mean while the row is in cache.
    Rows are independent: the same bits whatever the thread count.
    """
    n = x.shape[0]
    n_levels = levels.shape[0]
    mean = np.empty(n)
    var = np.empty(n)
    maximum = np.empty(n)
    minimum = np.empty(n)
    perc = np.empty((n, n_levels))
    for blk in prange((n + ROWS - 1) // ROWS):
        acc = np.empty(LANES)
        work = select_work(k if n_levels > 0 else 0)
        short = np.empty(k if n_levels > 0 and k <= SORT_MAX else 0, dtype=np.uint32)
        nonneg = nonneg_work(k if n_levels > 0 and k > SORT_MAX and x.itemsize == 4 else 0)
        ends = np.empty(2, dtype=np.float32)
        ranks, order = _percentile_ranks(k, levels)  # the same for every row
        found = np.empty(ranks.shape[0], dtype=np.float32)
        value = np.empty(ranks.shape[0], dtype=np.float32)
        for i in range(blk * ROWS, min(blk * ROWS + ROWS, n)):
            row = x[i][:k]
            m = _lane_sum(row, acc) / k
            mean[i] = m
            var[i] = _lane_squares(row, m, acc) / k
            maximum[i], minimum[i] = _extremes(row)
            if n_levels > 0:
                # float32: rows without NaN or negatives by the range-adapted selection, other long rows by
                # radix selection on the bit patterns, short rows by sorting those keys
                if row.itemsize == 4:
                    if k > SORT_MAX and m == m and minimum[i] >= 0:  # no NaN, no negative value
                        ends[0], ends[1] = minimum[i], maximum[i]
                        keys = ends.view(np.uint32)
                        _percentiles_nonneg(row, levels, perc[i], keys[0] & MAGNITUDE, keys[1] & MAGNITUDE, nonneg,
                                            ranks, order, found, value)
                    elif k > SORT_MAX or not _percentiles_short(row, levels, perc[i], short, work[2]):
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
    """float64 mean of each row over all its columns (the per-task means of
    m_norm, SPEC §5): the same sum as :func:`task_statistics`, so the same
    bits."""
    n, k = x.shape
    out = np.empty(n)
    for blk in prange((n + ROWS - 1) // ROWS):
        acc = np.empty(LANES)
        for i in range(blk * ROWS, min(blk * ROWS + ROWS, n)):
            out[i] = _lane_sum(x[i], acc) / k
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
def _percentiles_short(row, levels, out, keys, counts):
    """What :func:`_percentiles_sorted` gives, for a short float32 row, by
    sorting the very keys the radix selection selects among
    (:func:`colosim.kernels._sort._keys32`, into ``keys``: uint32, as long
    as the row; ``counts`` takes its histogram, unused) and turning the
    wanted ones back into floats as it does: the same order statistics,
    bit for bit. False, and nothing written, for a row with NaN."""
    k = row.shape[0]
    for i in range(k):
        if row[i] != row[i]:
            return False
    _keys32(row, keys, counts)
    keys.sort()
    value = np.empty(2, dtype=np.uint32)
    for p in range(levels.shape[0]):
        index = (k - 1) * (levels[p] / 100.0)
        lo = int(math.floor(index))
        value[0] = _float_bits(keys[lo])
        value[1] = _float_bits(keys[min(lo + 1, k - 1)])
        both = value.view(np.float32)
        out[p] = _lerp(np.float64(both[0]), np.float64(both[1]), index - lo)
    return True


@jit
def _percentile_ranks(k, levels):
    """The order statistics NumPy's linear method needs at ``levels`` of k
    values (floor(index) and the next), ascending, and where each goes."""
    L = levels.shape[0]
    ranks = np.empty(2 * L, dtype=np.int64)
    for p in range(L):
        lo = int(math.floor((k - 1) * (levels[p] / 100.0)))
        ranks[2 * p] = lo
        ranks[2 * p + 1] = min(lo + 1, k - 1)
    order = np.argsort(ranks)
    return ranks[order], order


@jit
def _lerp_found(found, order, k, levels, out, value):
    """The percentiles from the order statistics ``found`` (in the order of
    :func:`_percentile_ranks`; ``value`` scratch of their size)."""
    L = levels.shape[0]
    for r in range(2 * L):
        value[order[r]] = found[r]
    for p in range(L):
        index = (k - 1) * (levels[p] / 100.0)
        lo = int(math.floor(index))
        out[p] = _lerp(np.float64(value[2 * p]), np.float64(value[2 * p + 1]), index - lo)


@jit
def _percentiles_sorted(row, levels, out, work):
    """Percentiles of float32 values by NumPy's linear method on the order
    statistics it needs, found by radix selection
    (:func:`order_statistics_float32`): float32 to float64 is exact and
    monotone, so they are those NumPy finds on the float64 values."""
    k = row.shape[0]
    ranks, order = _percentile_ranks(k, levels)
    found = np.empty(ranks.shape[0], dtype=np.float32)
    order_statistics_float32(row, ranks, found, work)
    _lerp_found(found, order, k, levels, out, np.empty_like(found))


@jit
def _percentiles_nonneg(row, levels, out, kmin, kmax, work, ranks, order, found, value):
    """:func:`_percentiles_sorted` for a row with no NaN and no negative
    value, whose smallest and largest keys are ``kmin`` and ``kmax``
    (:func:`order_statistics_nonneg`: the same order statistics, bit for
    bit), given the row's ranks and order (:func:`_percentile_ranks`, the
    same for every row of a length) and scratch ``found`` and ``value`` of
    their size."""
    order_statistics_nonneg(row, ranks, found, kmin, kmax, work)
    _lerp_found(found, order, row.shape[0], levels, out, value)
