"""The check every usage array gets when it is read or handed in: finite
and non-negative values (SPEC §10), in one pass without temporaries."""

import numpy as np
from numba import prange

from .._jit import pjit

__all__ = ["usage_problem"]


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
