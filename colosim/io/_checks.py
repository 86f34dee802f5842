"""The check every usage array gets when it is read or handed in: finite
and non-negative values (SPEC §10), in one pass without temporaries."""

import numpy as np
from numba import prange

from .._jit import pjit
from ..errors import InputError

__all__ = ["usage_problem", "statistics_problem", "raise_usage_problem"]


@pjit
def usage_problem(x):
    """0 when every value of ``x`` (n, k) is finite and non-negative, 1 when
    one is NaN or infinite, 2 when one is negative (and none is NaN or
    infinite). One branch-free pass that vectorizes."""
    n, k = x.shape
    big = np.inf
    nonfinite = np.zeros(n, dtype=np.bool_)
    negative = np.zeros(n, dtype=np.bool_)
    for i in prange(n):
        row = x[i]
        finite = True
        nonneg = True
        for t in range(k):
            v = row[t]
            finite &= (v == v) & (v != big) & (v != -big)
            nonneg &= v >= 0
        nonfinite[i] = not finite
        negative[i] = not nonneg
    if nonfinite.any():
        return 1
    if negative.any():
        return 2
    return 0


def statistics_problem(mean: np.ndarray, maximum: np.ndarray, minimum: np.ndarray) -> int:
    """:func:`usage_problem` of float32 rows, read from their statistics
    over every column instead of a pass of its own: a float64 sum of
    float32 values cannot overflow, so it is NaN exactly when a value is NaN
    (or both infinities are there), and the extremes show the infinities and
    the negative values (-0.0 is not negative)."""
    if np.isnan(mean).any() or np.isinf(maximum).any() or np.isinf(minimum).any():
        return 1
    if (minimum < 0).any():
        return 2
    return 0


def raise_usage_problem(name: str, problem: int) -> None:
    """The :class:`InputError` naming ``name`` of a problem code (of
    :func:`usage_problem`), if any."""
    if problem == 1:
        raise InputError(f"{name} holds NaN or infinite values")
    if problem == 2:
        raise InputError(f"{name} holds negative values")
