"""colosim's estimators, packing, rebalancing and violations against the
naive reference (tests/naive.py), and packing invariants (Hypothesis)."""

import math
import zlib

import numba
import numpy as np
import pytest
from hypothesis import given, strategies as st

import colosim
from colosim.estimators import compute_statistics, parse_estimator
from colosim.kernels.packing import pack_items

from . import naive
from .conftest import random_usage

ESTIMATORS = ["av:1", "av:1.25", "av:2", "perc:50", "perc:90", "perc:99", "perc:100", "max",
              "cantelli:1", "cantelli:1.7", "gpa:0.1", "gpa:0.01", "gpa:0.001", "gpa:0.5"]


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("algorithm", ["first-fit", "best-fit"])
@pytest.mark.parametrize("rebalance", [False, True])
def test_run_matches_naive_reference(estimator, algorithm, rebalance):
    rng = np.random.default_rng([zlib.crc32(estimator.encode()), len(algorithm), rebalance])
    for trial in range(3):
        n, R = int(rng.integers(20, 60)), int(rng.integers(50, 300))
        x = random_usage(rng, n, R)
        y = (x * 0.8).astype(np.float32)
        capacity = float(rng.choice([0.5, 1.0, 2.0]))
        clairvoyance = float(rng.choice([0.1, 0.5, 1.0]))
        data = str(rng.choice(["inst", "avg"]))
        headroom = float(rng.choice([0.8, 1.0]))
        got = colosim.run(x, y, estimator, capacity, algorithm, clairvoyance, data, rebalance, headroom)
        want = naive.run(x, y, estimator, capacity, algorithm, clairvoyance, data, rebalance, headroom)
        np.testing.assert_array_equal(got.assign, want["assign"])
        np.testing.assert_array_equal(got.counts, want["counts"])
        for key in ("m_abs", "m_norm", "m", "q", "q_max", "oversize"):
            assert getattr(got, key) == want[key], key
        # severity is taken from float32 sums (SPEC §5 fixes only the counts)
        assert got.severity == pytest.approx(want["severity"], rel=1e-4, abs=1e-6)


def test_rebalancing_moves_tasks_on_these_inputs():
    # the comparison above is only meaningful if rebalancing does something
    rng = np.random.default_rng(3)
    moved = 0
    for _ in range(20):
        x = random_usage(rng, 50, 100)
        moved += colosim.run(x, None, "av:1", rebalance=True).moves
    assert moved > 0


def test_statistics_match_numpy():
    rng = np.random.default_rng(0)
    obs = random_usage(rng, 40, 333)
    levels = [0, 33.3, 50, 90, 99.9, 100]
    s = compute_statistics(obs, levels)
    o = obs.astype(np.float64)
    np.testing.assert_array_equal(s.percentiles, np.percentile(o, levels, axis=1).T)
    np.testing.assert_allclose(s.mean, o.mean(axis=1), rtol=1e-13)
    np.testing.assert_allclose(s.var, o.var(axis=1), rtol=1e-10)
    np.testing.assert_array_equal(s.maximum, o.max(axis=1))


def test_violations_match_bincount_sums():
    rng = np.random.default_rng(5)
    e = random_usage(rng, 70, 500)
    assign = rng.integers(0, 9, size=70)
    assign[:9] = np.arange(9)
    q, counts = colosim.violations(e, assign, capacity=1.0)
    sums = np.zeros((9, 500))
    for t in range(500):
        sums[:, t] = np.bincount(assign, weights=e[:, t].astype(np.float64), minlength=9)
    np.testing.assert_array_equal(counts, (sums > 1.0).sum(axis=1))
    assert q == counts.sum() / (9 * 500)


# ---------------------------------------------------------------- properties

usage = st.integers(0, 2**32 - 1).map(lambda s: np.random.default_rng(s))
sizes = st.tuples(st.integers(1, 40), st.integers(1, 60))


def _items(spec, obs):
    est = parse_estimator(spec)
    lv = [est.param] if est.needs_percentile else []
    a, b = est.items(compute_statistics(obs, lv))
    return np.ascontiguousarray(a), np.ascontiguousarray(b), est.z


@given(rng=usage, shape=sizes, spec=st.sampled_from(ESTIMATORS),
       algorithm=st.sampled_from([0, 1]), rebalance=st.booleans(),
       cap=st.sampled_from([0.05, 0.3, 1.0, 3.0]))
def test_packing_invariants(rng, shape, spec, algorithm, rebalance, cap):
    n, k = shape
    obs = random_usage(rng, n, k)
    a, b, z = _items(spec, obs)
    assign, m, _ = pack_items(a, b, z, cap, algorithm, rebalance)
    # every task in exactly one bin, bins 0..m-1 all used
    assert assign.shape == (n,) and assign.min() == 0 and assign.max() == m - 1
    assert set(np.unique(assign)) == set(range(m))
    # every bin feasible under the estimator's own test, but an oversize task alone
    for j in range(m):
        tasks = list(np.flatnonzero(assign == j))
        L = naive.load(tasks, a, b, z)
        assert L <= cap or (len(tasks) == 1 and naive.load(tasks, a, b, z) > cap)
    # bins are numbered in opening order: the first task of bin j precedes that of j+1
    # (without rebalancing; rebalancing only moves tasks into the last bin)
    if not rebalance:
        firsts = [np.flatnonzero(assign == j)[0] for j in range(m)]
        assert firsts == sorted(firsts)
        # a bin is opened only when no open bin fits
        for j in range(1, m):
            i = firsts[j]
            for d in range(j):
                earlier = [t for t in np.flatnonzero(assign == d) if t < i]
                assert naive.load(earlier + [i], a, b, z) > cap


@given(rng=usage, shape=sizes, cap=st.sampled_from([0.3, 1.0, 2.0]), rebalance=st.booleans())
def test_max_with_full_clairvoyance_never_violates_but_through_oversize(rng, shape, cap, rebalance):
    n, R = shape
    x = random_usage(rng, n, R)
    res = colosim.run(x, None, "max", capacity=cap, rebalance=rebalance)
    for j in np.flatnonzero(res.counts):
        members = np.flatnonzero(res.assign == j)
        assert len(members) == 1 and x[members[0]].max() > cap
    assert res.oversize >= np.count_nonzero(res.counts)


@given(rng=usage, shape=sizes, spec=st.sampled_from(ESTIMATORS), cl=st.sampled_from([0.2, 0.5, 1.0]))
def test_metrics_ranges(rng, shape, spec, cl):
    n, R = shape
    R = max(R, 2)
    x = random_usage(rng, n, R)
    res = colosim.run(x, x, spec, clairvoyance=cl)
    assert 0.0 <= res.q <= res.q_max <= 1.0
    assert res.m == res.m_abs / res.m_norm and res.m_norm >= 1
    assert res.severity >= 0 and (res.severity > 0) == (res.q > 0)
    assert res.counts.sum() == round(res.q * res.m_abs * (R - (0 if cl == 1 else max(1, math.floor(cl * R + 0.5)))))


def test_results_do_not_depend_on_thread_count():
    rng = np.random.default_rng(11)
    x = random_usage(rng, 300, 3000)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = colosim.run(x, x, "gpa:0.01", clairvoyance=0.3)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = colosim.run(x, x, "gpa:0.01", clairvoyance=0.3)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one.assign, many.assign)
    np.testing.assert_array_equal(one.counts, many.counts)
    assert one.severity == many.severity


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("kwargs, culprit", [
    (dict(estimator="gpa:0"), "gpa:0"),
    (dict(estimator="nope"), "nope"),
    (dict(capacity=0.0), "capacity"),
    (dict(capacity=-1), "capacity"),
    (dict(clairvoyance=0.0), "clairvoyance"),
    (dict(clairvoyance=1.5), "clairvoyance"),
    (dict(clairvoyance=0.999), "no evaluation column"),
    (dict(headroom=0.0), "headroom"),
    (dict(headroom=1.2), "headroom"),
    (dict(algorithm="worst-fit"), "algorithm"),
    (dict(data="peak"), "data"),
])
def test_run_rejects_bad_arguments(kwargs, culprit):
    x = np.full((3, 10), 0.1)
    with pytest.raises(ValueError, match=culprit):
        colosim.run(x, x, **kwargs)


@pytest.mark.parametrize("bad, culprit", [
    (np.array([[0.1, np.nan]]), "NaN"),
    (np.array([[0.1, np.inf]]), "infinite"),
    (np.array([[0.1, -0.2]]), "negative"),
    (np.array([0.1, 0.2]), "2-D"),
    (np.array([["a", "b"]]), "numbers"),
])
def test_api_rejects_bad_arrays(bad, culprit):
    with pytest.raises(ValueError, match=culprit):
        colosim.pack(bad)
    with pytest.raises(ValueError, match=culprit):
        colosim.violations(bad, np.zeros(len(np.atleast_2d(bad)), dtype=int))
    with pytest.raises(ValueError, match=culprit):
        colosim.run(bad)


@given(rng=usage, shape=st.tuples(st.integers(1, 30), st.integers(1, 300)), distinct=st.integers(1, 8),
       levels=st.lists(st.floats(0, 100), min_size=1, max_size=6))
def test_percentiles_equal_numpy_bit_for_bit(rng, shape, distinct, levels):
    # realizations resampled from a few records repeat values: selection must
    # handle long runs of duplicates exactly as NumPy's sort-based method
    obs = (rng.integers(0, distinct, size=shape) * rng.random()).astype(np.float32)
    obs[(obs == 0) & (rng.random(shape) < 0.5)] = -0.0  # a negative zero is still zero usage
    for data in (obs, obs.astype(np.float64)):
        s = compute_statistics(data, levels)
        want = np.percentile(obs.astype(np.float64), s.percentile_levels, axis=1).T
        np.testing.assert_array_equal(s.percentiles, want)


def test_every_shipped_config_is_valid():
    from pathlib import Path

    from colosim.config import load_config

    configs = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.toml"))
    assert {c.name for c in configs} >= {"baseline.toml", "clairvoyance.toml", "capacity.toml",
                                          "inst_vs_avg.toml", "rebalancing.toml", "firstfit_vs_bestfit.toml"}
    for c in configs:
        cfg = load_config(c)
        assert cfg.instances.count == 50 and cfg.instances.tasks == 1000
        assert cfg.source.realizations == 10000 and cfg.points()


@given(rng=usage, n=st.integers(1, 50), R=st.integers(1, 300), P=st.integers(1, 8))
def test_shared_evaluation_of_many_packings_equals_naive(rng, n, R, P):
    # packings that share bins (copies with a few tasks moved), judged at
    # several capacities on different suffixes of the columns
    from colosim.kernels.evaluate import evaluate_packings

    x = random_usage(rng, n, R)
    base = rng.integers(0, max(1, n // 4), size=n)
    assigns, caps = [], []
    for _ in range(P):
        a = base.copy()
        moved = rng.random(n) < 0.2
        a[moved] = rng.integers(0, max(1, n // 4) + 1, size=moved.sum())
        _, a = np.unique(a, return_inverse=True)  # bins 0..m-1 all used
        assigns.append(a.astype(np.int64))
        caps.append(float(rng.choice([0.3, 1.0, 1.5])))
    firsts = [int(f) for f in rng.integers(0, R, size=P)]
    got = evaluate_packings(x, firsts, R, assigns, [a.max() + 1 for a in assigns], caps)
    for a, c, first, (counts, sev, nviol) in zip(assigns, caps, firsts, got):
        want, excess = naive.violations(x[:, first:], a, c)
        np.testing.assert_array_equal(counts, want)
        assert nviol == want.sum()
        assert sev == pytest.approx(sum(excess), rel=1e-4, abs=1e-6 * max(1, len(excess)))


@given(rng=usage, R=st.integers(1, 400), offset=st.integers(-4, 4), cap=st.sampled_from([0.5, 1.0, 1.7]))
def test_float32_sums_at_the_capacity_are_decided_in_float64(rng, R, offset, cap):
    # bins of three tasks whose exact sum sits within a few float32 ulps of
    # the capacity: float32 accumulation alone would misjudge many columns
    from colosim.kernels.evaluate import evaluate_packings

    n = 12
    x = np.empty((n, R), dtype=np.float32)
    for j in range(0, n, 3):
        a = (rng.random(R) * cap / 2).astype(np.float32)
        b = (rng.random(R) * cap / 3).astype(np.float32)
        c = (np.float64(cap) - a.astype(np.float64) - b.astype(np.float64)).astype(np.float32)
        c = np.nextafter(c, np.float32(np.inf) if offset > 0 else np.float32(0)) if offset else c
        for _ in range(abs(offset) - 1):
            c = np.nextafter(c, np.float32(np.inf) if offset > 0 else np.float32(0))
        x[j], x[j + 1], x[j + 2] = a, b, np.maximum(c, 0)
    assign = np.repeat(np.arange(n // 3), 3)
    (counts, _, _), = evaluate_packings(x, 0, R, [assign], [n // 3], [cap])
    want, _ = naive.violations(x, assign, cap)
    np.testing.assert_array_equal(counts, want)

