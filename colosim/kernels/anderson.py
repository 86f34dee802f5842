"""Anderson–Darling normality statistic and the nested sums of Table 1.

Paper Section 3.4 (Table 1) tests, for samples of N tasks, whether the sum of
their instantaneous realizations is Gaussian. At the paper's scale (50 sizes ×
10,000 samples × 10,000 realizations) calling ``scipy.stats.anderson`` half a
million times is too slow, so the statistic is computed here, in the same way
as SciPy does for ``dist="norm"`` (mean and ``ddof=1`` std estimated from the
data; ``A2 = -n - sum((2i - 1)/n * (log Phi(w_i) + log Phi(-w_{n+1-i})))``),
and tested against SciPy on random inputs.

Three layers: :func:`anderson_darling_normal` and
:func:`nested_sum_statistics` validate and convert; ``_nested_sums`` is the
parallel driver (one sample per ``prange`` iteration, outputs indexed by sample,
so no two iterations write the same element and the results do not depend on
the number of threads); ``_a2_sorted`` and ``_log_ndtr`` are serial kernels.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from .._jit import jit, pjit
from ._sort import sort_float64

__all__ = ["anderson_darling_normal", "nested_sum_statistics"]

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_LOG_SQRT_PI = 0.5 * math.log(math.pi)


@jit
def _log_ndtr(x):
    """log of the standard normal CDF, accurate in both tails.

    Mirrors SciPy's ``special.log_ndtr``: ``log1p(-erfc(x/sqrt2)/2)`` for
    x >= -1; ``log(erfc(-x/sqrt2)/2)`` below, switching to the asymptotic
    expansion of ``erfcx`` where ``erfc`` would underflow.
    """
    t = x * _SQRT1_2
    if x >= -1.0:
        return math.log1p(-0.5 * math.erfc(t))
    u = -t
    if u < 25.0:
        return math.log(0.5 * math.erfc(u))
    # erfc(u) = exp(-u^2) erfcx(u), erfcx(u) ~ 1/(u sqrt(pi)) (1 - 1/(2u^2)
    # + 3/(4u^4) - 15/(8u^6)); the next term is below 1e-13 for u >= 25.
    v = 1.0 / (2.0 * u * u)
    series = 1.0 - v * (1.0 - 3.0 * v * (1.0 - 5.0 * v))
    return math.log(0.5 * series) - math.log(u) - _LOG_SQRT_PI - u * u


@jit
def _log_ndtr_pair(w):
    """(log Phi(w), log Phi(-w)) from a single ``erfc`` evaluation.

    With e = erfc(|w|/sqrt2), Phi(-|w|) = e/2 and Phi(|w|) = 1 - e/2; the
    small side is ``log(e/2)`` (asymptotic expansion where ``erfc``
    underflows), the large side ``log1p(-e/2)``, as in :func:`_log_ndtr`.
    """
    u = abs(w) * _SQRT1_2
    if u < 25.0:
        e = math.erfc(u)
        small = math.log(0.5 * e)
    else:
        e = 0.0
        small = _log_ndtr(-abs(w))
    large = math.log1p(-0.5 * e)
    if w >= 0.0:
        return large, small
    return small, large


@jit
def _a2_sorted(y):
    """A^2 of the ascending-sorted sample ``y`` against a normal with the
    sample's mean and ``ddof=1`` std; NaN when the sample is constant.

    Written per element: value i (0-based rank) enters with weight 2i + 1
    through log Phi(w_i) and with weight 2(n - 1 - i) + 1 through
    log sf(w_i) = log Phi(-w_i), which is SciPy's sum reordered.
    """
    n = y.shape[0]
    mean = 0.0
    for i in range(n):
        mean += y[i]
    mean /= n
    ss = 0.0
    for i in range(n):
        d = y[i] - mean
        ss += d * d
    if n < 2 or ss <= 0.0:
        return np.nan
    s = math.sqrt(ss / (n - 1))
    total = 0.0
    for i in range(n):
        log_cdf, log_sf = _log_ndtr_pair((y[i] - mean) / s)
        total += (2.0 * i + 1.0) * log_cdf + (2.0 * (n - 1 - i) + 1.0) * log_sf
    return -n - total / n


@pjit
def _a2_rows(values, out):
    for r in prange(values.shape[0]):
        y = np.sort(values[r])
        out[r] = _a2_sorted(y)


def anderson_darling_normal(values) -> np.ndarray | float:
    """Anderson–Darling statistic A^2 for normality with estimated mean and
    standard deviation (``scipy.stats.anderson(x, "norm")``'s statistic).

    Parameters
    ----------
    values : array_like, 1-D (one sample) or 2-D (one sample per row)
        Finite values; a constant sample gives NaN.

    Returns
    -------
    float or ndarray
        A^2 for the sample, or one per row.
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim not in (1, 2):
        raise ValueError(f"values must be 1-D or 2-D, not {arr.ndim}-D")
    if arr.shape[-1] < 2:
        raise ValueError("values: a sample needs at least 2 values")
    if not np.all(np.isfinite(arr)):
        raise ValueError("values must be finite")
    rows = np.ascontiguousarray(arr.reshape(-1, arr.shape[-1]))
    out = np.empty(rows.shape[0])
    _a2_rows(rows, out)
    return float(out[0]) if arr.ndim == 1 else out


@pjit
def _nested_sums(x, samples, sizes, a2, total_mean, bad_row):
    n_samples = samples.shape[0]
    n_real = x.shape[1]
    for r in prange(n_samples):
        acc = np.zeros(n_real)
        y = np.empty(n_real)
        keys = np.empty(n_real, dtype=np.uint64)
        scratch = np.empty(n_real, dtype=np.uint64)
        taken = 0
        for s in range(sizes.shape[0]):
            while taken < sizes[s]:
                row = samples[r, taken]
                for t in range(n_real):
                    v = x[row, t]
                    # NaN fails both comparisons; so do negative and +inf.
                    if not (v >= 0.0 and v < np.inf):
                        bad_row[r] = row
                    acc[t] += v
                taken += 1
            m = 0.0
            for t in range(n_real):
                y[t] = acc[t]
                m += acc[t]
            total_mean[r, s] = m / n_real
            sort_float64(y, keys, scratch)
            a2[r, s] = _a2_sorted(y)


def nested_sum_statistics(x, samples, sizes):
    """A^2 and mean of the summed realizations of nested task samples.

    For sample r and size ``sizes[s]``, the tasks are the rows
    ``samples[r, :sizes[s]]`` of ``x``; their realizations are summed per
    column in float64 (in row order, SPEC §9 "Sums of tasks") and the sum's
    10,000 (R) values are tested for normality.

    Parameters
    ----------
    x : ndarray (N, R), float32 or float64
        A store's instantaneous realizations (may be a memory map).
    samples : ndarray (n_samples, max(sizes)), int
        Row indices of each sample, in the order they are added.
    sizes : sequence of int
        Strictly increasing sample sizes, each <= ``samples.shape[1]``.

    Returns
    -------
    a2, total_mean : ndarray (n_samples, len(sizes)), float64
    bad_row : ndarray (n_samples,), int64
        -1, or a row of ``x`` that holds a NaN, infinite or negative value.
    """
    x = np.asarray(x)
    if x.ndim != 2 or x.dtype not in (np.float32, np.float64):
        raise ValueError("x must be a 2-D float32 or float64 array")
    if x.shape[1] < 2:
        raise ValueError("x needs at least 2 realizations per task")
    samples = np.ascontiguousarray(samples, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.ndim != 1 or sizes.size == 0 or np.any(np.diff(sizes) <= 0) or sizes[0] < 1:
        raise ValueError("sizes must be a non-empty, strictly increasing sequence of positive ints")
    if samples.ndim != 2 or samples.shape[1] < sizes[-1]:
        raise ValueError(f"samples must be 2-D with at least {int(sizes[-1])} columns")
    if samples.size and (samples.min() < 0 or samples.max() >= x.shape[0]):
        raise ValueError("samples hold a row index outside x")
    a2 = np.empty((samples.shape[0], sizes.size))
    total_mean = np.empty_like(a2)
    bad_row = np.full(samples.shape[0], -1, dtype=np.int64)
    _nested_sums(x, samples, sizes, a2, total_mean, bad_row)
    return a2, total_mean, bad_row
