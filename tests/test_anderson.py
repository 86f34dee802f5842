"""The Numba Anderson–Darling statistic against scipy.stats.anderson, and the
nested-sums driver of Table 1 against a naive per-sample computation."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from colosim.kernels._sort import sort_float64 as _sort_float64
from colosim.kernels.anderson import anderson_darling_normal, nested_sum_statistics

from . import naive

samples = hnp.arrays(
    np.float64,
    st.integers(8, 300),
    elements=st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
)


@given(samples)
def test_statistic_equals_scipy(x):
    # Away from (near-)constant samples, where both computations are
    # ill-conditioned and the statistic is meaningless.
    assume(np.std(x) > 1e-6 * (1.0 + np.abs(x).max()))
    assert anderson_darling_normal(x) == pytest.approx(naive.anderson_darling(x), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("make", [
    lambda g: g.normal(size=5000),
    lambda g: g.exponential(size=2000) ** 4,  # far tails: log_ndtr's asymptotic branch
    lambda g: np.r_[g.normal(size=999), 1e6],
    lambda g: g.integers(0, 3, 500).astype(float),  # heavy ties
])
def test_statistic_equals_scipy_on_shapes(make):
    x = make(np.random.default_rng(7))
    assert anderson_darling_normal(x) == pytest.approx(naive.anderson_darling(x), rel=1e-9)


@given(hnp.arrays(np.float64, st.integers(0, 400),
                  elements=st.floats(allow_nan=False) | st.sampled_from([0.0, -0.0, 1.5, -2.0])))
def test_radix_sort_equals_numpy_sort(x):
    a = x.copy()
    _sort_float64(a, np.empty(a.size, np.uint64), np.empty(a.size, np.uint64))
    assert np.array_equal(a, np.sort(x))


def test_rows_equal_single_samples_and_constant_is_nan():
    g = np.random.default_rng(1)
    rows = g.gamma(2.0, size=(5, 40))
    rows[3] = 0.25
    got = anderson_darling_normal(rows)
    assert np.isnan(got[3])
    for r in (0, 1, 2, 4):
        assert got[r] == anderson_darling_normal(rows[r])


def test_nested_sums_equal_naive_reference():
    g = np.random.default_rng(3)
    x = g.gamma(0.7, 0.1, size=(40, 300)).astype(np.float32)
    samples = np.stack([g.choice(40, 25, replace=False) for _ in range(6)])
    sizes = [1, 5, 10, 25]
    a2, mean, bad = nested_sum_statistics(x, samples, sizes)
    ref_a2, ref_mean = naive.nested_sums(x, samples, sizes)
    np.testing.assert_allclose(a2, ref_a2, rtol=1e-9)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-12)
    assert (bad == -1).all()


def test_nested_sums_flag_bad_rows_and_reject_bad_arguments():
    x = np.ones((5, 10), dtype=np.float32)
    x[2, 4] = np.nan
    x[3, 1] = -0.5
    _, _, bad = nested_sum_statistics(x, np.array([[0, 1], [2, 0], [4, 3]]), [2])
    assert bad.tolist() == [-1, 2, 3]
    with pytest.raises(ValueError, match="increasing"):
        nested_sum_statistics(x, np.array([[0, 1]]), [2, 1])
    with pytest.raises(ValueError, match="outside"):
        nested_sum_statistics(x, np.array([[0, 7]]), [2])
    with pytest.raises(ValueError, match="columns"):
        nested_sum_statistics(x, np.array([[0]]), [2])
