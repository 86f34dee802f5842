"""Per-bin running sums over the evaluation columns and the violation counts
q_j (SPEC §5).

The columns are cut into fixed tiles; within a tile each task's row is added
to its bin's running sums in ascending instance position (float64), and then
every sum is compared with the capacity. Tiles are independent, so the
``prange`` over tiles gives the same counts whatever the thread count; the
severity sum is merged tile by tile in tile order, so it is bit-identical
too.
"""

import numpy as np
from numba import prange

from .._jit import pjit

TILE = 256


@pjit
def bin_violations(x, first, stop, assign, n_bins, capacity):
    """Count, for each bin j, the columns t in ``[first, stop)`` where
    ``sum_{i in B_j} x[i, t] > capacity``.

    Returns ``(counts int64 (n_bins,), severity_sum, n_violations)`` where
    ``severity_sum`` adds ``(S - c) / c`` over all violating (bin, column).
    """
    n = x.shape[0]
    width = stop - first
    n_tiles = (width + TILE - 1) // TILE
    tile_counts = np.zeros((n_tiles, n_bins), dtype=np.int64)
    tile_severity = np.zeros(n_tiles)
    for tile in prange(n_tiles):
        t0 = first + tile * TILE
        w = min(TILE, stop - t0)
        sums = np.zeros((n_bins, TILE))
        for i in range(n):
            row = sums[assign[i]]
            src = x[i]
            for t in range(w):
                row[t] += np.float64(src[t0 + t])
        sev = 0.0
        for j in range(n_bins):
            c = 0
            for t in range(w):
                s = sums[j, t]
                if s > capacity:
                    c += 1
                    sev += (s - capacity) / capacity
            tile_counts[tile, j] = c
        tile_severity[tile] = sev
    counts = np.zeros(n_bins, dtype=np.int64)
    severity = 0.0
    for tile in range(n_tiles):
        severity += tile_severity[tile]
        for j in range(n_bins):
            counts[j] += tile_counts[tile, j]
    return counts, severity, counts.sum()
