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
from ._sort import _float_bits, _keys32, order_statistics_float32, select, select_work

__all__ = ["task_statistics", "row_means", "row_maxima", "log_mgf"]


#: lanes of a row's float64 sums: lane j adds columns j, j + LANES, ... in
#: column order, so the lanes are independent and one vector instruction
#: adds many of them (the same bits on any processor: each lane's order is
#: fixed by the code, not by the compiler); the lanes are then added by
#: pairwise halving
LANES = 64

#: values sampled from a float32 row for the cuts that bracket each
#: percentile's order statistics (:func:`_bracket_ranks`), the number of
#: cuts (eight: the counting pass keeps one counter each), and the least
#: row length where bracketing is tried
SAMPLE = 128
CUTS = 8
BRACKET_MIN = 2048

#: rows up to this length get their percentiles by sorting the radix
#: selection's keys: its fixed cost (passes over its 2,048 digits) is tens of
#: times that of sorting a short row (low clairvoyance levels observe 10 or
#: 100 columns)
SORT_MAX = 256

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
def _extremes(row, hi, lo):
    """Largest and smallest value of ``row`` (lanes ``hi``, ``lo`` scratch of
    its dtype; exact in any order)."""
    k = row.shape[0]
    kl = k // LANES * LANES
    hi[:] = row[0]
    lo[:] = row[0]
    for t in range(0, kl, LANES):
        seg = row[t : t + LANES]
        for j in range(LANES):
            v = seg[j]
            hi[j] = v if v > hi[j] else hi[j]
            lo[j] = v if v < lo[j] else lo[j]
    a = hi[0]
    b = lo[0]
    for j in range(1, LANES):
        a = hi[j] if hi[j] > a else a
        b = lo[j] if lo[j] < b else b
    for t in range(kl, k):
        v = row[t]
        a = v if v > a else a
        b = v if v < b else b
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
        hi = np.empty(LANES, dtype=x.dtype)
        lo = np.empty(LANES, dtype=x.dtype)
        work = select_work(k if n_levels > 0 else 0)
        pool = np.empty(k if n_levels > 0 else 0, dtype=x.dtype)
        short = np.empty(k if n_levels > 0 and k <= SORT_MAX else 0, dtype=np.uint32)
        sample = np.empty(SAMPLE, dtype=x.dtype)
        found = np.empty(2, dtype=x.dtype)
        for i in range(blk * ROWS, min(blk * ROWS + ROWS, n)):
            row = x[i][:k]
            m = _lane_sum(row, acc) / k
            mean[i] = m
            var[i] = _lane_squares(row, m, acc) / k
            maximum[i], minimum[i] = _extremes(row, hi, lo)
            if n_levels > 0:
                if row.itemsize == 4:  # float32: sorted keys, bracketed, else radix selection on the bit patterns
                    if k <= SORT_MAX:
                        if not _percentiles_short(row, levels, perc[i], short, work[2]):
                            _percentiles_sorted(row, levels, perc[i], work)
                    elif k < BRACKET_MIN or not _percentiles_bracketed(row, levels, perc[i], pool, sample, found):
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


@jit
def _bracket_ranks(row, lo, hi, sample, pool, found):
    """``found[0], found[1]`` = the ``lo``-th and ``hi``-th smallest values
    of ``row`` (0-based, ``lo <= hi <= lo + 1``; zeros as the radix
    selection orders them), without reordering ``row``:

    1. :data:`CUTS` cut values, order statistics of ``sample`` (values of
       the row at even strides) spread around the ranks' place in it;
    2. one pass counts the values below each cut (branch-free, it
       vectorizes): the ranks lie between two cuts, ``a`` and ``b``;
    3. one pass gathers the values in ``(a, b)`` (``(a, +inf]`` without a
       cut above) into ``pool`` and counts
       those equal to ``a`` (ties, such as zeros) rather than keeping them;
    4. a selection within the pool names the ranks.

    False, and ``found`` unspecified, when the row holds NaN or the pool
    a zero (whose sign is the radix selection's to say): the caller then
    selects otherwise."""
    k = row.shape[0]
    s = sample.shape[0]
    for j in range(s):
        sample[j] = row[(j * k) // s]
    pos = lo * (s - 1) / (k - 1)
    p = lo / (k - 1)
    margin = 3.0 * math.sqrt(s * p * (1.0 - p)) + 2.0
    jl = max(0, int(math.floor(pos - margin)))
    jh = min(s - 1, int(math.ceil(pos + margin)) + 1)
    cut = np.empty(CUTS, dtype=row.dtype)
    prev = 0
    for m in range(CUTS):
        j = jl + (m * (jh - jl)) // (CUTS - 1)
        select(sample, prev, s - 1, j)
        cut[m] = sample[j]
        prev = j
    c0, c1, c2, c3, c4, c5, c6, c7 = cut[0], cut[1], cut[2], cut[3], cut[4], cut[5], cut[6], cut[7]
    n0 = n1 = n2 = n3 = n4 = n5 = n6 = n7 = nan = 0
    for t in range(k):
        v = row[t]
        nan += v != v
        n0 += v < c0
        n1 += v < c1
        n2 += v < c2
        n3 += v < c3
        n4 += v < c4
        n5 += v < c5
        n6 += v < c6
        n7 += v < c7
    if nan:
        return False
    below_cut = (n0, n1, n2, n3, n4, n5, n6, n7)
    # a: the last cut with at most lo values below it (or none: -inf);
    # b: the first cut with more than hi values below it (or none: +inf)
    a = -1
    b = CUTS
    for m in range(CUTS):
        if below_cut[m] <= lo:
            a = m
    for m in range(CUTS - 1, -1, -1):
        if below_cut[m] > hi:
            b = m
    low = cut[a] if a >= 0 else -np.inf
    high = cut[b] if b < CUTS else np.inf
    below = below_cut[a] if a >= 0 else 0
    inside = (below_cut[b] if b < CUTS else k) - below
    top = b == CUTS  # no cut above: up to +inf included
    ties = 0
    size = 0
    for t in range(k):  # branch-free: a branch would mispredict on real rows
        v = row[t]
        ties += v == low
        pool[size] = v
        size += (v > low) & ((v < high) | top)
    if ties + size != inside or hi >= below + inside:  # cannot happen without NaN
        return False
    q = lo - below
    if q < ties:
        # the ties are zeros: those of the radix selection's order, where a
        # -0.0 among the first k - k % 4 values comes before every +0.0
        negative_zeros = _negative_zeros(row, k - k % 4) if low == 0 else 0
        va = _tie(low, q, negative_zeros)
        if hi - below < ties:
            vb = _tie(low, hi - below, negative_zeros)
        else:  # the smallest value of the pool
            vb = pool[0]
            for t in range(1, size):
                if pool[t] < vb:
                    vb = pool[t]
    else:
        r = q - ties
        select(pool, 0, size - 1, r)
        va = pool[r]
        vb = va
        if hi > lo:
            vb = pool[r + 1]
            for t in range(r + 2, size):  # smallest value above rank r
                if pool[t] < vb:
                    vb = pool[t]
    if (va == 0 and q >= ties) or (vb == 0 and hi - below >= ties):
        return False  # a zero in the pool: its sign is the radix selection's to say
    found[0] = va
    found[1] = vb
    return True


@jit
def _negative_zeros(row, stop):
    """The number of -0.0 among ``row[:stop]``."""
    bits = row.view(np.uint32)
    sign = np.uint32(0x80000000)
    count = 0
    for t in range(stop):
        count += bits[t] == sign
    return count


@jit
def _tie(value, rank, negative_zeros):
    """The value at ``rank`` among ties of ``value``: a zero is -0.0 at the
    ranks of the -0.0 that the radix selection orders first."""
    if value == 0:
        zero = value - value  # +0.0 of value's type
        return -zero if rank < negative_zeros else zero
    return value


@jit
def _percentiles_bracketed(row, levels, out, pool, sample, found):
    """Percentiles of float32 values by NumPy's linear method, each level's
    two order statistics found by :func:`_bracket_ranks` (the values those
    of :func:`_percentiles_sorted`, so the same bits). False when a level's
    bracket misses (``out`` then partly written)."""
    k = row.shape[0]
    for p in range(levels.shape[0]):
        index = (k - 1) * (levels[p] / 100.0)
        lo = int(math.floor(index))
        if not _bracket_ranks(row, lo, min(lo + 1, k - 1), sample, pool, found):
            return False
        out[p] = _lerp(np.float64(found[0]), np.float64(found[1]), index - lo)
    return True
