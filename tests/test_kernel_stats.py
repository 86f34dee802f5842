"""The per-row kernels (statistics, row means, the usage check, the tile
layout) against plain NumPy references, bit for bit, for any number of rows
and any column range."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from colosim.io._checks import usage_problem
from colosim.kernels.stats import LANES, row_means, task_statistics
from colosim.kernels.tiles import TILE, column_tiles


def _sequential(values: np.ndarray) -> float:
    """A float64 sum in column order (np.cumsum adds one term at a time)."""
    return float(np.cumsum(values.astype(np.float64))[-1]) if values.size else 0.0


def _lanes(values: np.ndarray) -> float:
    """The kernels' sum: lane j adds columns j, j + LANES, ... in column
    order, then the lanes are added by pairwise halving."""
    lanes = [_sequential(values[j::LANES]) for j in range(LANES)]
    w = LANES
    while w > 1:
        w //= 2
        lanes = [lanes[j] + lanes[j + w] for j in range(w)] + lanes[w:]
    return lanes[0]


matrices = st.tuples(st.integers(1, 40), st.integers(1, 300), st.integers(0, 2**32 - 1),
                     st.sampled_from([np.float32, np.float64]))


def _matrix(n, k, seed, dtype):
    rng = np.random.default_rng(seed)
    x = rng.gamma(0.5, 0.1, size=(n, k)).astype(dtype)
    x[rng.random((n, k)) < 0.1] = 0.0  # ties and zeros
    return x


@settings(max_examples=80, deadline=None)
@given(matrices, st.integers(1, 300))
def test_statistics_are_those_of_one_row_at_a_time(spec, k):
    """Over the first k columns (a prefix of the rows, as the observation
    columns of a clairvoyance level), bit for bit: lane sums, NumPy's
    extremes and percentiles; any number of rows (whole tasks of the
    parallel loop and the rest)."""
    x = _matrix(*spec)
    n = x.shape[0]
    k = min(k, x.shape[1])
    levels = np.array([0.0, 37.5, 90.0, 100.0])
    mean, var, maximum, minimum, perc = task_statistics(x, k, levels)
    for i in range(n):
        row = x[i, :k]
        mu = _lanes(row) / k
        assert mean[i] == mu
        assert var[i] == _lanes((row.astype(np.float64) - mu) ** 2) / k
        assert maximum[i] == row.max() and minimum[i] == row.min()
        assert np.array_equal(perc[i], np.percentile(row.astype(np.float64), levels))
    if k == x.shape[1]:
        assert np.array_equal(row_means(x), mean)
    np.testing.assert_allclose(mean, x[:, :k].astype(np.float64).mean(axis=1), rtol=1e-12, atol=1e-300)


@settings(max_examples=60, deadline=None)
@given(matrices, st.integers(0, 299), st.integers(1, 300), st.sampled_from([None, "small", "large"]))
def test_tile_layout_and_maxima(spec, first, stop, out):
    x = _matrix(*spec)
    k = x.shape[1]
    stop = min(stop, k)
    tile0 = min(first, stop - 1) // TILE
    buffer = {None: None, "small": np.zeros(3, dtype=x.dtype),
              "large": np.full(10**5, 7, dtype=x.dtype)}[out]
    tiles, maxima = column_tiles(x, tile0, stop, buffer)
    cols = x[:, tile0 * TILE : stop]
    n_tiles = -(-cols.shape[1] // TILE)
    padded = np.zeros((x.shape[0], n_tiles * TILE), dtype=x.dtype)
    padded[:, : cols.shape[1]] = cols
    assert np.array_equal(tiles, padded.reshape(x.shape[0], n_tiles, TILE).transpose(1, 0, 2))
    assert np.array_equal(maxima, cols.max(axis=1))


@settings(max_examples=60, deadline=None)
@given(matrices, st.sampled_from([None, np.nan, np.inf, -np.inf, -1e-30, -0.0]), st.data())
def test_usage_problem_is_numpys_verdict(spec, bad, data):
    x = _matrix(*spec)
    if bad is not None:
        i = data.draw(st.integers(0, x.shape[0] - 1))
        t = data.draw(st.integers(0, x.shape[1] - 1))
        x[i, t] = bad
    want = 1 if not np.isfinite(x).all() else 2 if (x < 0).any() else 0
    assert usage_problem(x) == want


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6000), st.integers(0, 2**32 - 1),
       st.sampled_from(["gamma", "narrow", "ties", "zeros", "spread"]),
       st.lists(st.floats(0, 100), min_size=1, max_size=6))
def test_percentiles_by_radix_selection_are_numpys(k, seed, shape, levels):
    """Long rows take every path of the selection: few wanted top digits
    (gathered one by one) and many (gathered in one pass), all keys of a
    digit equal, one top and one second digit for all keys, ranks that
    share digits."""
    rng = np.random.default_rng(seed)
    row = {"gamma": lambda: rng.gamma(0.6, 0.05, k),
           "narrow": lambda: 0.5 + rng.random(k) * 1e-6,  # one top digit, one second digit
           "ties": lambda: rng.integers(0, 3, k) / 4.0,
           "zeros": lambda: np.where(rng.random(k) < 0.9, 0.0, rng.random(k)),
           "spread": lambda: rng.random(k) * 2.0 ** rng.integers(-30, 10, k)}[shape]()  # many top digits
    x = np.ascontiguousarray(row[None, :], dtype=np.float32)
    if shape == "zeros":
        x[0, ::7] = -0.0
    levels = np.array(sorted(levels))
    got = task_statistics(x, k, levels)[4][0]
    assert np.array_equal(got, np.percentile(x[0].astype(np.float64), levels))


_ROWS = {"gamma": lambda rng, k: rng.gamma(0.6, 0.05, k),
         "narrow": lambda rng, k: 0.5 + rng.random(k) * 1e-6,
         "ties": lambda rng, k: rng.integers(0, 3, k) / 4.0,
         "zeros": lambda rng, k: np.where(rng.random(k) < 0.9, 0.0, rng.random(k)),
         "half-zeros": lambda rng, k: np.where(rng.random(k) < 0.5, 0.0, rng.gamma(0.5, 0.1, k)),
         "spread": lambda rng, k: rng.random(k) * 2.0 ** rng.integers(-30, 10, k),
         "constant": lambda rng, k: np.full(k, 0.25),
         "ascending": lambda rng, k: np.sort(rng.random(k)),
         "descending": lambda rng, k: np.sort(rng.random(k))[::-1],
         "few": lambda rng, k: rng.choice(rng.random(5), k),
         "huge": lambda rng, k: np.where(rng.random(k) < 0.01, np.inf, rng.random(k)),
         # far outliers around a narrow cluster: a first-level bucket of several keys gathered without a branch,
         # then second-level buckets one key wide
         "narrow-outliers": lambda rng, k: rng.permutation(np.concatenate(
             [(0.0, 1e30, 3e-30), 0.5 + rng.random(max(k - 3, 0)) * 1e-6]))[:k],
         # two keys two ulps apart and a far one: a first-level tie or a bucket of both, then one key wide
         "close-ties": lambda rng, k: rng.choice(
             np.array([0.25, np.nextafter(np.nextafter(np.float32(0.25), 1, dtype=np.float32), 1,
                                          dtype=np.float32), 0.75], dtype=np.float32), k)}


def _float32_row(rng, shape: str, k: int) -> np.ndarray:
    """A float32 row of ``_ROWS[shape]``, every seventh zero made -0.0."""
    row = np.ascontiguousarray(_ROWS[shape](rng, k), dtype=np.float32)
    if shape in ("zeros", "half-zeros"):
        row[::7] = np.where(row[::7] == 0, np.float32(-0.0), row[::7])
    return row


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 12000), st.integers(0, 2**32 - 1), st.sampled_from(sorted(_ROWS)),
       st.lists(st.floats(0, 100), min_size=1, max_size=6))
def test_float32_percentiles_are_numpys_on_every_row_shape(k, seed, shape, levels):
    """task_statistics' float32 percentiles (sorted keys for short rows,
    the radix selection for the others) are NumPy's values on rows of ties,
    zeros of either sign, constant, sorted and reversed rows, and
    infinities."""
    rng = np.random.default_rng(seed)
    x = _float32_row(rng, shape, k)[None, :].copy()
    levels = np.array(sorted(levels))
    got = task_statistics(x, k, levels)[4][0]
    with np.errstate(invalid="ignore"):  # inf - inf in NumPy's lerp
        assert np.array_equal(got, np.percentile(x[0].astype(np.float64), levels), equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 256), st.integers(0, 2**32 - 1), st.sampled_from(sorted(_ROWS)),
       st.lists(st.floats(0, 100), min_size=1, max_size=6))
def test_short_row_percentiles_are_the_radix_selections_bit_for_bit(k, seed, shape, levels):
    """Short rows' percentiles from the radix selection's keys, sorted, are
    its very bits (zeros of either sign included), and NumPy's values; a row
    with NaN is refused and left to the radix selection."""
    from colosim.kernels._sort import select_work
    from colosim.kernels.stats import SORT_MAX, _percentiles_short, _percentiles_sorted

    assert k <= SORT_MAX
    rng = np.random.default_rng(seed)
    row = _float32_row(rng, shape, k)
    levels = np.array(sorted(levels))
    want = np.empty(levels.size)
    _percentiles_sorted(row, levels, want, select_work(k))
    got = np.empty(levels.size)
    assert _percentiles_short(row, levels, got, np.empty(k, np.uint32), np.zeros((4, 2048), np.int32))
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
    with np.errstate(invalid="ignore"):  # inf - inf in NumPy's lerp
        assert np.array_equal(got, np.percentile(row.astype(np.float64), levels), equal_nan=True)
    x = row[None, :].copy()
    assert np.array_equal(task_statistics(x, k, levels)[4][0].view(np.uint64), want.view(np.uint64))
    row[rng.integers(k)] = np.nan
    assert not _percentiles_short(row, levels, got, np.empty(k, np.uint32), np.zeros((4, 2048), np.int32))


def _nested(rng, k):
    # a few far values, a cluster, and a tighter cluster inside it: a
    # first-level bucket large enough for a second level, and one there
    # large enough for the general selection
    row = 0.5 + (rng.random(k) - 0.5) * 2e-3
    row[: k // 2] = 0.5 + (rng.random(k // 2) - 0.5) * 2e-7
    row[:3] = (0.0, 1e30, 3e-30)
    return rng.permutation(row)


@settings(max_examples=80, deadline=None)
@given(st.integers(257, 12000), st.integers(0, 2**32 - 1),
       st.sampled_from(sorted(set(_ROWS) | {"nested"})), st.lists(st.floats(0, 1), min_size=1, max_size=10))
@example(3000, 1, "nested", [0.1, 0.3, 0.5, 0.9])  # a second-level bucket for the general selection
@example(9000, 2, "few", [0.2, 0.5, 0.99])  # ties
@example(5000, 3, "narrow-outliers", [0.5, 0.51])
@example(5000, 4, "close-ties", [0.1, 0.5, 0.9])
def test_non_negative_selection_is_the_radix_selection_bit_for_bit(k, seed, shape, fractions):
    """The selection for rows without NaN or negative values (its buckets
    over the keys' own range, sorted small buckets, a second level, then the
    general selection) finds the very bits of the general one, for any
    ascending ranks, repeated ones included — but for zero, which it finds
    as 0.0 whatever its sign (the general one may return -0.0)."""
    from colosim.kernels._sort import nonneg_work, order_statistics_float32, order_statistics_nonneg, select_work

    rng = np.random.default_rng(seed)
    row = (np.ascontiguousarray(_nested(rng, k), dtype=np.float32) if shape == "nested"
           else _float32_row(rng, shape, k))
    ranks = np.sort(np.array([min(k - 1, int(f * k)) for f in fractions], dtype=np.int64))
    want = np.empty(ranks.size, np.float32)
    order_statistics_float32(row, ranks, want, select_work(k))
    keys = row.view(np.uint32) & np.uint32(0x7FFFFFFF)
    got = np.empty(ranks.size, np.float32)
    order_statistics_nonneg(row, ranks, got, keys.min(), keys.max(), nonneg_work(k))
    assert not np.signbit(got).any()
    assert np.array_equal(got.view(np.uint32), (want + np.float32(0.0)).view(np.uint32))
