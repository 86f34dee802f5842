"""An instance's evaluation columns laid out for the evaluation (SPEC §5):
contiguous tiles of ``TILE`` columns, and each task's largest value.

Reading a tile streams one contiguous block instead of touching n rows a
page apart. :func:`column_tiles` is the one entry.
"""

import numpy as np
from numba import prange

from .._jit import pjit

__all__ = ["TILE", "column_tiles"]

TILE = 128


@pjit
def _lay_out(x, first, stop, tiles):
    """Fill ``tiles`` (n_tiles, n, TILE) with columns ``[first, stop)`` of
    ``x``, the last tile padded with zeros, and return each row's largest
    value over them: one pass over each row."""
    n_tiles, n, w_tile = tiles.shape
    out = np.empty(n, dtype=tiles.dtype)
    for i in prange(n):
        row = x[i]
        m = row[first]
        for tile in range(n_tiles):
            c0 = first + tile * w_tile
            w = min(w_tile, stop - c0)
            dst = tiles[tile, i]
            for t in range(w):
                v = row[c0 + t]
                dst[t] = v
                m = v if v > m else m
            for t in range(w, w_tile):
                dst[t] = 0
        out[i] = m
    return out


def column_tiles(x, tile0, stop, out=None):
    """Columns ``[tile0 * TILE, stop)`` of ``x`` (n, R) as tiles ``(n_tiles,
    n, TILE)``, the last one padded with zeros, and each task's largest
    value over them, ``(n,)`` (usage is non-negative, so the padding changes
    no maximum).

    ``out``, when given, is a 1-D array of x's dtype with room for the
    tiles: they are laid out in it (a caller that lays out instance after
    instance reuses one buffer instead of faulting in fresh pages).

    Tiles are aligned to column 0 whatever columns are needed, so that the
    evaluation groups columns the same way for every grid (and every
    grid point's severity is the same bits alone or in any grid).
    """
    n = x.shape[0]
    first = tile0 * TILE
    n_tiles = (stop - first + TILE - 1) // TILE
    shape = (n_tiles, n, TILE)
    size = n_tiles * n * TILE
    if out is None or out.dtype != x.dtype or out.size < size:
        tiles = np.empty(shape, dtype=x.dtype)
    else:
        tiles = out[:size].reshape(shape)
    return tiles, _lay_out(np.ascontiguousarray(x), first, stop, tiles)
