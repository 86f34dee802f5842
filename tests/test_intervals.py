"""Confidence intervals: the Korn–Graubard interval against Clopper–Pearson,
its invariants, and coverage measured on independent sweeps."""

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st

from colosim.analysis.summary import summarize_point
from colosim.engine import instance_metrics
from colosim.io.results import GRID_KEYS
from colosim.model.grid import GridPoint
from colosim.model.intervals import (
    mean_difference_interval,
    mean_interval,
    mean_q_interval,
    proportion_interval,
    row_q_interval,
    row_q_intervals,
)
from colosim.runner.sweep import instance_rows

from .conftest import random_usage


@given(n=st.integers(1, 5000), data=st.data())
def test_independent_trials_give_clopper_pearson(n, data):
    x = data.draw(st.integers(0, n))
    p = x / n
    low, high = proportion_interval(p, p * (1 - p) / n, n, math.inf)
    want = scipy.stats.binomtest(x, n).proportion_ci(0.95, method="exact")
    assert low == pytest.approx(want.low, rel=1e-9, abs=1e-15)
    assert high == pytest.approx(want.high, rel=1e-9, abs=1e-15)


@given(p=st.floats(0, 1), var=st.floats(0, 1), n=st.integers(1, 10**7), df=st.integers(1, 10**4))
def test_interval_holds_the_estimate_and_is_never_narrower_than_clopper_pearson(p, var, n, df):
    low, high = proportion_interval(p, var, n, df)
    assert 0 <= low <= p <= high <= 1
    cp_low, cp_high = proportion_interval(p, 0.0, n, math.inf)  # n independent trials
    assert low <= cp_low + 1e-12 and high >= cp_high - 1e-12


def test_no_violation_gives_the_exact_upper_bound():
    # 20 bins × 1000 columns, the effective count scaled by (z / t_999)^2
    low, high = row_q_interval(m_abs=20, columns=1000, violations=0, squares=0)
    n = 20_000 * (scipy.stats.norm.ppf(0.975) / scipy.stats.t.ppf(0.975, 999)) ** 2
    assert low == 0 and high == pytest.approx(1 - 0.025 ** (1 / n), rel=1e-9)


def test_violations_bunched_in_few_columns_widen_the_row_interval():
    # 50 violations among 20 bins × 1000 columns: one per column, or all 20
    # bins of 2.5 columns at once (the same q, far fewer independent events)
    spread = row_q_interval(20, 1000, 50, 50)
    bunched = row_q_interval(20, 1000, 60, 60 * 20)  # 3 columns with all 20 bins
    assert bunched[1] - bunched[0] > 3 * (spread[1] - spread[0])


def test_t_intervals():
    v = np.array([1.0, 2.0, 3.0, 4.0])
    low, high = mean_interval(v)
    half = scipy.stats.t.ppf(0.975, 3) * v.std(ddof=1) / 2
    assert (low, high) == pytest.approx((2.5 - half, 2.5 + half))
    assert all(math.isnan(b) for b in mean_interval([1.0]))
    assert all(math.isnan(b) for b in mean_q_interval([0.1], 100))
    d, dlow, dhigh = mean_difference_interval(v, v + 1)
    assert (d, dlow, dhigh) == (1.0, 1.0, 1.0)


# ---------------------------------------------------------------- coverage

POINTS = [GridPoint.make(estimator=e) for e in ("gpa:0.05", "cantelli:1", "av:1.25")]


def _population(n=1500, R=300, seed=11):
    return random_usage(np.random.default_rng(seed), n, R)


def _q(x, k, tasks=60):
    rows = instance_rows(3, k, x.shape[0], tasks)
    return [met for met in instance_metrics(x[rows], None, POINTS)]


def test_interval_of_mean_q_covers_the_mean_over_many_more_instances():
    """30 independent sweeps of 6 instances each; the truth is the mean
    over 600 other instances. Each of the 90 intervals (3 estimators)
    should hold it about 95% of the time."""
    x = _population()
    R = x.shape[1]
    truth_rows = [_q(x, k) for k in range(10_000, 10_600)]
    truth = [np.mean([r[p].q for r in truth_rows]) for p in range(len(POINTS))]
    covered, widths, t_widths = 0, [], []
    for sweep in range(30):
        metrics = [_q(x, k) for k in range(6 * sweep, 6 * sweep + 6)]
        for p in range(len(POINTS)):
            rows = [dict(zip(GRID_KEYS, POINTS[p].keys()), instance=i, m_abs=m[p].m_abs, m=m[p].m,
                         q=m[p].q, q_max=m[p].q_max) for i, m in enumerate(metrics)]
            s = summarize_point(rows, R)
            covered += s["q_ci_low"] <= truth[p] <= s["q_ci_high"]
            widths.append(s["q_ci_high"] - s["q_ci_low"])
            t_low, t_high = mean_interval([r["q"] for r in rows])
            t_widths.append(t_high - t_low)
    coverage = covered / 90
    assert coverage >= 0.85, coverage
    # with many violations per instance the interval is about Student's t
    # one, not a uselessly wide one
    assert np.median(np.array(widths) / np.array(t_widths)) < 1.5


def test_row_interval_covers_the_packing_s_own_violation_frequency():
    """One packing judged on 150 independent blocks of 200 columns: each
    block's interval should hold the frequency over all blocks about 95% of
    the time."""
    rng = np.random.default_rng(4)
    n = 80
    level = rng.gamma(1.5, 0.08, size=(n, 1))

    def columns(R):
        noise = rng.gamma(2.0, 1.0, size=(n, R)) / 2.0
        return (level * noise).astype(np.float32)

    observed = columns(400)
    point = GridPoint.make(estimator="gpa:0.05")
    from colosim.engine import evaluate, lay_out, pack_observed

    assign = pack_observed(observed, point)
    m = int(assign.max()) + 1
    blocks = []
    for _ in range(150):
        e = columns(200)
        (counts,), _, (squares,) = evaluate(lay_out(e, 0, 200), [assign], [np.full(m, 1.0)], [0])
        blocks.append((int(counts.sum()), int(squares)))
    truth = sum(v for v, _ in blocks) / (m * 200 * len(blocks))
    assert truth > 1e-3  # enough violations for the check to mean something
    hits = sum(lo <= truth <= hi for lo, hi in (row_q_interval(m, 200, v, sq) for v, sq in blocks))
    assert hits / len(blocks) >= 0.85, hits


@st.composite
def _rows(draw):
    m = draw(st.integers(1, 300))
    E = draw(st.integers(1, 10_000))
    # per-column violating bins V_t: the sums give violations and squares
    heavy = draw(st.integers(0, min(E, 50)))
    per = draw(st.lists(st.integers(0, m), min_size=heavy, max_size=heavy))
    spread = draw(st.integers(0, E - heavy)) if draw(st.booleans()) else 0
    return m, E, sum(per) + spread, sum(v * v for v in per) + spread


@given(rows=st.lists(_rows(), min_size=1, max_size=20))
def test_row_q_intervals_are_row_q_interval_bit_for_bit(rows):
    got = row_q_intervals(*(np.array(col) for col in zip(*rows)))
    want = [row_q_interval(*r) for r in rows]
    assert [tuple(map(float.hex, g)) for g in got] == [tuple(map(float.hex, w)) for w in want]
