"""The estimator table (SPEC §3, docs/estimators.md): every entry's contract,
the statistics it is built on, and properties of single estimators."""

import math
import re

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import logsumexp

from colosim.errors import InputError
from colosim.kernels import vector_packing
from colosim.kernels.stats import log_mgf
from colosim.model.estimators import (
    ESTIMATORS,
    SCALAR,
    STATISTICS,
    TaskStatistics,
    compute_statistics,
    effsize_grid,
    emp_allowance,
    family,
    label,
    parse_estimator,
    same_estimator,
)

from .conftest import usage_arrays
from .test_engine import SPECS


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_an_entry_needs_only_the_statistics_it_declares(name):
    kind = ESTIMATORS[name]
    spec = SPECS[name][-1]
    est = parse_estimator(spec)
    obs = np.random.default_rng(1).random((7, 30)).astype(np.float32)
    if kind.form == SCALAR:
        full = compute_statistics(obs, [est.param] if "percentile" in kind.needs else [])
        # every statistic the entry does not declare is withheld
        partial = TaskStatistics(**{f: (getattr(full, f) if f in kind.needs else None)
                                    for f in ("mean", "var", "maximum", "minimum")},
                                 percentile_levels=full.percentile_levels,
                                 percentiles=full.percentiles if "percentile" in kind.needs else None)
        a, b = est.items(partial)
        assert a.shape == b.shape == (7,) and np.all(b >= 0)
        np.testing.assert_array_equal(a, est.items(full)[0])
    else:
        assert kind.needs == {"observed"}
        V, code, params = est.state(obs, 1.0)
        assert V.shape[0] == 7 and code in (vector_packing.EMP, vector_packing.NSIGMA, vector_packing.EFFSIZE)


def test_the_table_is_consistent():
    assert set(STATISTICS) == {"mean", "var", "maximum", "minimum", "percentile"}
    for name, kind in ESTIMATORS.items():
        assert kind.name == name
        assert kind.paper == (name in ("gpa", "av", "perc", "cantelli", "max"))
        assert (kind.parameter is None) == (name == "max")


@pytest.mark.parametrize("spec, canonical, lab, fam", [
    ("gpa:0.010", "gpa:0.01", "GPA ρ=0.01", "gpa"),
    ("AV:1.0", "av:1", "av 1", "av"),
    (" perc : 1e2 ", "perc:100", "perc 100 (max)", "max"),
    ("perc:99.9", "perc:99.9", "perc 99.9", "perc"),
    ("max", "max", "max", "max"),
    ("cantelli:1.7", "cantelli:1.7", "Cantelli b=1.7", "cantelli"),
    ("gpa-cal:0.001", "gpa-cal:0.001", "gpa-cal 0.001", "gpa-cal"),
    ("emp:1e-05", "emp:1e-05", "emp 1e-05", "emp"),
])
def test_specs_parse_to_canonical_text_labels_and_families(spec, canonical, lab, fam):
    est = parse_estimator(spec)
    assert est.spec == canonical and str(est) == canonical
    assert label(canonical) == lab and family(canonical) == fam
    assert parse_estimator(canonical) == est


@pytest.mark.parametrize("spec, message", [
    ("av:1_0", "'1_0' is not a number"),  # Python's float() would read 10
    ("av:inf", "'inf' is not a number"),
    ("gpa:nan", "'nan' is not a number"),
    ("av:0x10", "is not a number"),
    ("gpa:1e-17", "too small to compute with"),  # 1 - rho == 1: z infinite
])
def test_parameters_are_plain_numbers_that_can_be_computed_with(spec, message):
    with pytest.raises(InputError, match=re.escape(message)):
        parse_estimator(spec)


def test_perc_100_is_max():
    assert same_estimator("perc:100", "max") and not same_estimator("perc:99", "max")


def test_statistics_match_numpy():
    rng = np.random.default_rng(0)
    obs = (rng.gamma(1.5, 0.05, size=(40, 333))).astype(np.float32)
    levels = [0, 33.3, 50, 90, 99.9, 100]
    s = compute_statistics(obs, levels)
    o = obs.astype(np.float64)
    np.testing.assert_array_equal(s.percentiles, np.percentile(o, levels, axis=1).T)
    np.testing.assert_allclose(s.mean, o.mean(axis=1), rtol=1e-13)
    np.testing.assert_allclose(s.var, o.var(axis=1), rtol=1e-10)
    np.testing.assert_array_equal(s.maximum, o.max(axis=1))
    np.testing.assert_array_equal(s.minimum, o.min(axis=1))


@given(values=st.integers(1, 8).flatmap(
           lambda distinct: hnp.arrays(np.int64, st.tuples(st.integers(1, 30), st.integers(1, 300)),
                                       elements=st.integers(0, distinct - 1))),
       scale=st.floats(1e-3, 1.0), negative_zeros=st.booleans(),
       levels=st.lists(st.floats(0, 100), min_size=1, max_size=6))
# one realization: every level is that value
@example(values=np.array([[3]]), scale=0.5, negative_zeros=False, levels=[0.0, 50.0, 100.0])
# long runs of duplicates, the case selection must handle as NumPy's sort does
@example(values=np.array([[0, 0, 1, 1, 1, 1, 2]]), scale=0.25, negative_zeros=True, levels=[49.9, 50.0, 83.4])
def test_percentiles_equal_numpy_bit_for_bit(values, scale, negative_zeros, levels):
    # realizations resampled from a few records repeat values
    obs = (values * scale).astype(np.float32)
    if negative_zeros:  # a negative zero is still zero usage
        obs[obs == 0] = -0.0
    for data in (obs, obs.astype(np.float64)):
        s = compute_statistics(data, levels)
        want = np.percentile(obs.astype(np.float64), s.percentile_levels, axis=1).T
        np.testing.assert_array_equal(s.percentiles, want)


@given(S=hnp.arrays(np.float64, st.integers(1, 80), elements=st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.0])
                    | st.floats(0, 2)),
       rho=st.sampled_from([0.0, 0.01, 0.1, 0.29, 0.5, 0.9]), cap=st.floats(0.0, 3.0))
# 0.29 × 100 is 29 (the decimal written), not 28 (its binary product)
@example(S=np.linspace(0, 2, 100), rho=0.29, cap=1.0)
def test_emp_load_makes_the_fit_test_exact(S, rho, cap):
    # fits iff the share of columns above cap <= rho  <=>  L <= cap
    k = len(S)
    r = emp_allowance(rho, k)
    assert r == math.floor(round(rho * 100) * k / 100)
    est = parse_estimator(f"emp:{rho}")
    _, code, params = est.state(S[None, :], cap)
    from colosim.kernels.vector_packing import _state_load

    L = _state_load(S.copy(), code, params)
    assert (np.count_nonzero(S > cap) <= rho * k + 1e-9) == (L <= cap)


@given(observed=usage_arrays(max_columns=60), rho=st.sampled_from([0.5, 0.1, 0.001]))
def test_effsize_lies_between_the_mean_and_the_chernoff_worst_case(observed, rho):
    x = observed.astype(np.float64)
    s = effsize_grid(rho, 1.0)
    lam = log_mgf(x, s)
    np.testing.assert_allclose(lam, logsumexp(s[None, :, None] * x[:, None, :], axis=2) - math.log(x.shape[1]),
                               rtol=1e-12, atol=1e-12)
    gamma = math.log(1 / rho)
    S = lam.sum(0)
    L = min((S + gamma) / s)
    # Jensen: ln E e^{sX} >= s E X; and ln E e^{sX} <= s max X
    assert L >= x.mean(1).sum() * (1 - 1e-12)
    assert L <= x.max(1).sum() + gamma / s.max() + 1e-9
