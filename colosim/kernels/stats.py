"""Per-task statistics over the observation columns (SPEC §3)."""

import math

import numpy as np
from numba import prange

from .._jit import pjit


@pjit
def task_statistics(observed, levels):
    """Mean, population variance (ddof = 0), maximum and percentiles at
    ``levels`` (NumPy's ``method="linear"``) of each row, in float64.

    Rows are independent, so the ``prange`` over rows gives the same bits
    whatever the thread count.
    """
    n, k = observed.shape
    n_levels = levels.shape[0]
    mean = np.empty(n)
    var = np.empty(n)
    maximum = np.empty(n)
    perc = np.empty((n, n_levels))
    for i in prange(n):
        row = observed[i]
        s = 0.0
        mx = -np.inf
        for t in range(k):
            v = np.float64(row[t])
            s += v
            if v > mx:
                mx = v
        mu = s / k
        ss = 0.0
        for t in range(k):
            d = np.float64(row[t]) - mu
            ss += d * d
        mean[i] = mu
        var[i] = ss / k
        maximum[i] = mx
        if n_levels > 0:
            ordered = np.sort(row.astype(np.float64))
            for p in range(n_levels):
                perc[i, p] = _linear_percentile(ordered, levels[p])
    return mean, var, maximum, perc


@pjit
def row_means(x):
    """float64 mean of each row over all its columns (for m_norm, SPEC §5)."""
    n, k = x.shape
    out = np.empty(n)
    for i in prange(n):
        s = 0.0
        for t in range(k):
            s += np.float64(x[i, t])
        out[i] = s / k
    return out


def _linear_percentile_py(ordered, level):
    # NumPy's linear method: virtual index (k - 1) * q, then a lerp that is
    # evaluated from the upper end when the fraction is >= 0.5.
    k = ordered.shape[0]
    index = (k - 1) * (level / 100.0)
    lo = math.floor(index)
    gamma = index - lo
    lo = int(lo)
    hi = min(lo + 1, k - 1)
    a = ordered[lo]
    b = ordered[hi]
    diff = b - a
    if gamma >= 0.5:
        return b - diff * (1.0 - gamma)
    return a + diff * gamma


from .._jit import jit as _jit  # noqa: E402

_linear_percentile = _jit(_linear_percentile_py)
