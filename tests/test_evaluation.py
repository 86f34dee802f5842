"""The one evaluator (SPEC §5) against the naive reference: exact float64
counts from float32 sums, the float64 path, per-bin capacities, many
packings sharing bins, and colosim.violations."""

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import colosim
from colosim.engine import as_rows, evaluate, lay_out
from colosim.kernels.tiles import TILE

from . import naive
from .conftest import usage_arrays


@st.composite
def packings(draw, dtype=np.float32):
    """An instance (tasks × columns), P packings of it that share bins (one
    base packing with a few tasks moved), a capacity per bin and a first
    evaluation column per packing."""
    x = draw(usage_arrays(max_tasks=14, max_columns=300, top=0.7)).astype(dtype)
    n, R = x.shape
    n_base = draw(st.integers(1, max(1, n // 2)))
    base = np.array(draw(st.lists(st.integers(0, n_base - 1), min_size=n, max_size=n)), dtype=np.int64)
    assigns, caps, firsts = [], [], []
    for _ in range(draw(st.integers(1, 5))):
        a = base.copy()
        for i in draw(st.lists(st.integers(0, n - 1), max_size=3)):
            a[i] = draw(st.integers(0, n_base))
        a = np.unique(a, return_inverse=True)[1].astype(np.int64)  # bins 0..m-1 all used
        m = int(a.max()) + 1
        assigns.append(a)
        caps.append(np.array(draw(st.lists(st.sampled_from([0.3, 1.0, 1.5]), min_size=m, max_size=m))))
        firsts.append(draw(st.integers(0, R - 1)))
    return x, assigns, caps, firsts


def check(x, assigns, caps, firsts):
    R = x.shape[1]
    got_counts, got_severity, got_squares = evaluate(lay_out(x, min(firsts), R), assigns, caps, firsts)
    # the rows read in place give the same bits as the tile layout
    rows = evaluate(as_rows(x, min(firsts), R), assigns, caps, firsts)
    for a, b in zip(rows[0], got_counts):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(rows[1], got_severity)  # bit for bit, not approximately
    np.testing.assert_array_equal(rows[2], got_squares)
    for a, c, first, counts, sev, sq in zip(assigns, caps, firsts, got_counts, got_severity, got_squares):
        want, excess = naive.violations_per_bin(x[:, first:], a, c)
        np.testing.assert_array_equal(counts, want)
        assert sq == int((naive.violations_per_column(x[:, first:], a, c) ** 2).sum())
        if x.dtype == np.float64:  # float64 sums: the severity too is exact but for the order of its sum
            assert sev == pytest.approx(sum(excess), rel=1e-12, abs=1e-300)
        else:  # severity from float32 sums (SPEC §5 fixes only the counts)
            assert sev == pytest.approx(sum(excess), rel=1e-4, abs=1e-6 * max(1, len(excess)))


@given(packings())
# two packings of one task judged from different first columns
@example((np.array([[0.5, 0.6, 0.5]], dtype=np.float32), [np.array([0]), np.array([0])],
          [np.array([0.3]), np.array([0.3])], [0, 2]))
def test_shared_evaluation_equals_naive(case):
    check(*case)


@given(packings(np.float64))
def test_float64_evaluation_equals_naive_exactly(case):
    check(*case)


@given(R=st.integers(1, 400), offset=st.integers(-4, 4), cap=st.sampled_from([0.5, 1.0, 1.7]),
       a=hnp.arrays(np.float32, 400, elements=st.floats(0, 0.25, width=32)),
       b=hnp.arrays(np.float32, 400, elements=st.floats(0, 0.375, width=32)))
# the sum exactly at the capacity is not a violation; one ulp above is
@example(R=1, offset=0, cap=1.0, a=np.full(400, 0.25, np.float32), b=np.full(400, 0.25, np.float32))
@example(R=1, offset=1, cap=1.0, a=np.full(400, 0.1, np.float32), b=np.full(400, 0.2, np.float32))
def test_float32_sums_at_the_capacity_are_decided_in_float64(R, offset, cap, a, b):
    # bins of three tasks whose exact sum sits within a few float32 ulps of
    # the capacity: float32 accumulation alone would misjudge many columns
    a, b = (a[:R] * np.float32(cap)).astype(np.float32), (b[:R] * np.float32(cap)).astype(np.float32)
    c = (np.float64(cap) - a.astype(np.float64) - b.astype(np.float64)).astype(np.float32)
    for _ in range(abs(offset)):
        c = np.nextafter(c, np.float32(np.inf) if offset > 0 else np.float32(0))
    x = np.stack([a, b, np.maximum(c, 0)] * 4)
    assign = np.repeat(np.arange(4), 3)
    (counts,), _, _ = evaluate(lay_out(x, 0, R), [assign], [np.full(4, cap)], [0])
    want, _ = naive.violations(x, assign, cap)
    np.testing.assert_array_equal(counts, want)


def test_violations_match_bincount_sums():
    rng = np.random.default_rng(5)
    e = rng.random((70, 500)).astype(np.float32) * 0.3
    assign = rng.integers(0, 9, size=70)
    assign[:9] = np.arange(9)
    q, counts = colosim.violations(e, assign, capacity=1.0)
    sums = np.zeros((9, 500))
    for t in range(500):
        sums[:, t] = np.bincount(assign, weights=e[:, t].astype(np.float64), minlength=9)
    np.testing.assert_array_equal(counts, (sums > 1.0).sum(axis=1))
    assert q == counts.sum() / (9 * 500)


@given(m=st.integers(1, 300), seed=st.integers(0, 2**32 - 1))
@example(m=255, seed=0)  # V_t up to 255: all eight bit planes of the counts
@example(m=256, seed=0)  # V_t = 256 needs a ninth
def test_column_squares_with_many_bins_violating_together(m, seed):
    # one task per bin: a column's count V_t reaches the number of bins, so
    # the per-column counts carry through every plane they need
    rng = np.random.default_rng(seed)
    R = 300
    x = rng.choice(np.array([0.2, 0.6], dtype=np.float32), size=(m, R), p=[0.3, 0.7])
    x[:, ::7] = 0.6  # columns where every bin violates: V_t = m
    assign = np.arange(m, dtype=np.int64)
    caps = np.full(m, 0.5)
    first = int(rng.integers(0, R))
    for layout in (lay_out(x, first, R), as_rows(x, first, R)):
        (counts,), _, (squares,) = evaluate(layout, [assign], [caps], [first])
        per_column = (x[:, first:] > 0.5).sum(axis=0).astype(np.int64)
        np.testing.assert_array_equal(counts, (x[:, first:] > 0.5).sum(axis=1))
        assert squares == int((per_column**2).sum())


def test_rows_and_tiles_agree_bit_for_bit_over_many_chunks():
    # more tiles than chunks: several tiles add into a chunk's severity
    # before the chunks are merged, in both readings
    rng = np.random.default_rng(7)
    x = rng.gamma(0.8, 0.06, size=(40, 9000)).astype(np.float32)
    base = rng.integers(0, 8, 40)
    assigns = [np.unique(base, return_inverse=True)[1].astype(np.int64)]
    moved = base.copy()
    moved[:3] = 8
    assigns.append(np.unique(moved, return_inverse=True)[1].astype(np.int64))
    caps = [np.full(int(a.max()) + 1, c) for a, c in zip(assigns, (0.35, 0.4))]
    firsts = [0, 1000]
    tiles = evaluate(lay_out(x, 0, 9000), assigns, caps, firsts)
    rows = evaluate(as_rows(x, 0, 9000), assigns, caps, firsts)
    assert sum(int(c.sum()) for c in tiles[0]) > 1000  # violations in many tiles
    for a, b in zip(rows[0], tiles[0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(rows[1], tiles[1])
    np.testing.assert_array_equal(rows[2], tiles[2])
    # 71 tiles: the per-column squares total several tiles in each of their
    # groups; each packing's sum_t V_t^2 is the naive one
    for p, (a, c, f) in enumerate(zip(assigns, caps, firsts)):
        per_column = naive.violations_per_column(x[:, f:], a, c)
        assert tiles[2][p] == int((per_column**2).sum()) and per_column.max() > 1


def _summed_additions(x, assigns, caps, firsts, tile_width):
    """The additions the evaluation should perform, counted naively: each
    distinct (set of tasks) summed once, from the first column any packing
    judges it on (rounded down to a tile; whole tiles when ``tile_width``),
    unless its tasks' maxima cannot exceed the smallest capacity it meets."""
    R = x.shape[1]
    start0 = min(firsts) // TILE * TILE
    bins = {}
    for a, c, f in zip(assigns, caps, firsts):
        for j in range(int(a.max()) + 1):
            members = tuple(np.flatnonzero(a == j))
            first, cap = bins.get(members, (R, np.inf))
            bins[members] = (min(first, f), min(cap, c[j]))
    maxima = x[:, start0:].max(axis=1).astype(np.float64)
    total = 0
    for members, (first, cap) in bins.items():
        if math.fsum(maxima[list(members)]) <= cap:
            continue
        if tile_width:
            total += len(members) * TILE * ((R + TILE - 1) // TILE - first // TILE)
        else:
            total += len(members) * (R - start0)
    return total


def test_the_evaluation_counts_the_additions_it_performs():
    rng = np.random.default_rng(3)
    x = rng.gamma(0.8, 0.06, size=(30, 1000)).astype(np.float32)
    base = rng.integers(0, 6, 30)
    moved = base.copy()
    moved[:2] = 6
    assigns = [np.unique(b, return_inverse=True)[1].astype(np.int64) for b in (base, moved, base)]
    caps = [np.full(int(a.max()) + 1, c) for a, c in zip(assigns, (0.35, 0.4, 5.0))]
    firsts = [0, 300, 700]
    work = {}
    evaluate(lay_out(x, min(firsts), 1000), assigns, caps, firsts, work)
    expected = _summed_additions(x, assigns, caps, firsts, tile_width=True)
    assert expected > 0
    assert work["additions"] == expected
    # one packing on its rows: every column from the first, no padding
    work = {}
    evaluate(as_rows(x, 300, 1000), assigns[1:2], caps[1:2], firsts[1:2], work)
    assert work["additions"] == _summed_additions(x, assigns[1:2], caps[1:2], firsts[1:2], tile_width=False)
