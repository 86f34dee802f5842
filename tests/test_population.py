"""The built-in synthetic population (colosim.sources.population).

Determinism, values, model components, bad inputs and file round trips of
SyntheticPopulation, then the paper's targets it must reproduce, asserted at
SPEC §12's tolerances (rows docs/population.md reports as not met are strict
xfails).
"""

import hashlib
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import sparse, stats

import colosim
from colosim.engine import instance_metrics
from colosim.errors import InputError
from colosim.io import open_series, open_store, write_series
from colosim.kernels.anderson import anderson_darling_normal
from colosim.kernels.population import phases
from colosim.model.grid import GridPoint
from colosim.sources import population as syn
from colosim.sources.population import (
    MAX_RECORDS,
    MIN_RECORDS,
    TRACE_START_US,
    WINDOW_US,
    PopulationModel,
    SyntheticPopulation,
    factor_spec,
)
from colosim.sources.realize import draw_indices, realize

from . import naive


def digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


# ------------------------------------------------------------ determinism
def test_same_seed_same_bytes():
    a = SyntheticPopulation(50, seed=7)
    b = SyntheticPopulation(50, seed=7)
    for k in (0, 13, 49):
        assert digest(*a.task(k)) == digest(*b.task(k))
    assert digest(a.lengths(), a.task_id) == digest(b.lengths(), b.task_id)


def test_task_independent_of_population_size_and_order():
    small = SyntheticPopulation(20, seed=3)
    big = SyntheticPopulation(5000, seed=3)
    # generate in another order, with other tasks in between
    later = [big.task(k) for k in (4999, 17, 2, 1234)]
    for k, (inst, avg) in zip((17, 2), later[1:3]):
        si, sa = small.task(k)
        assert digest(si, sa) == digest(inst, avg)
    np.testing.assert_array_equal(small.lengths(), big.lengths()[:20])
    np.testing.assert_array_equal(small.task_id, big.task_id[:20])


def test_seeds_differ():
    a = SyntheticPopulation(30, seed=1)
    b = SyntheticPopulation(30, seed=2)
    assert not np.array_equal(a.lengths(), b.lengths())
    assert digest(*a.task(0)) != digest(*b.task(0))


def test_model_changes_records():
    a = SyntheticPopulation(10, seed=1)
    b = SyntheticPopulation(10, seed=1, model=PopulationModel().replace(cv_ref=0.5))
    assert digest(*a.task(3)) != digest(*b.task(3))


# --------------------------------------------------- values and durations
def test_values_and_lengths():
    pop = SyntheticPopulation(300, seed=11)
    lengths = pop.lengths()
    assert lengths.dtype == np.int64
    assert lengths.min() >= MIN_RECORDS and lengths.max() <= MAX_RECORDS
    # both ends of the range occur (whole-trace tasks and 2-hour-ish tasks)
    assert (lengths == MAX_RECORDS).any() and lengths.min() < 100
    for k in range(pop.n_tasks):
        inst, avg = pop.task(k)
        assert inst.dtype == np.float32 and avg.dtype == np.float32
        assert len(inst) == len(avg) == lengths[k]
        for v in (inst, avg):
            assert np.isfinite(v).all() and v.min() >= 0 and v.max() <= 1


def test_records_start_times():
    pop = SyntheticPopulation(40, seed=5)
    for k in (0, 7, 39):
        inst, avg, start = pop.records(k)
        assert start.dtype == np.int64 and len(start) == len(inst)
        assert np.all(np.diff(start) == WINDOW_US)
        assert start[0] >= TRACE_START_US
        assert start[-1] <= TRACE_START_US + (MAX_RECORDS - 1) * WINDOW_US
        np.testing.assert_array_equal(inst, pop.task(k)[0])


def test_task_ids_unique_and_sorted():
    ids = SyntheticPopulation(1000, seed=0).task_id
    assert ids.dtype == np.int64 and ids.shape == (1000, 2)
    keys = [tuple(r) for r in ids]
    assert keys == sorted(keys) and len(set(keys)) == 1000


def test_one_phase_makes_inst_equal_avg():
    """With one phase per window the sampled second is the whole window."""
    pop = SyntheticPopulation(20, seed=2, model=PopulationModel().replace(phases=1))
    for k in range(20):
        inst, avg = pop.task(k)
        np.testing.assert_array_equal(inst, avg)


def test_inst_same_mean_as_avg_but_more_variable():
    pop = SyntheticPopulation(400, seed=21)
    d, se, more = [], [], 0
    for k in range(pop.n_tasks):
        inst, avg = (v.astype(np.float64) for v in pop.task(k))
        # inst - avg is the sampled second's deviation from its window mean,
        # independent from window to window
        diff = inst - avg
        d.append(diff.mean())
        se.append(diff.std() / np.sqrt(len(diff)))
        more += inst.std() >= avg.std()
    d, se = np.array(d), np.array(se)
    flat = se < 1e-6  # no within-window variance: inst and avg coincide
    assert np.all(np.abs(d[flat]) < 1e-6)
    z = d[~flat] / se[~flat]
    # unbiased: the standardized differences look like N(0, 1)
    assert abs(z.mean()) < 4 / np.sqrt(len(z))
    assert 0.6 < z.std() < 1.4
    assert more >= 0.97 * pop.n_tasks


# ------------------------------------------------------ model components
@given(
    cv2=st.floats(0.0, 400.0),
    shape=st.floats(0.05, 4.0),
    p_on=st.floats(0.05, 4.0),
    n_phases=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_phases_kernel_matches_naive(cv2, shape, p_on, n_phases, seed):
    g = np.random.default_rng(seed)
    T = 37
    level = g.random(T) * 0.6
    a, b, p, pi = factor_spec(cv2, shape, p_on)
    u = g.random(T * n_phases)
    inst = np.empty(T)
    avg = np.empty(T)
    phases(u, level, n_phases, a, b, p, pi, inst, avg)
    ri, ra = naive.phases(u, level, n_phases, a, b, p, pi)
    np.testing.assert_allclose(inst, ri, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(avg, ra, rtol=1e-12, atol=1e-15)


@given(cv2=st.floats(0.0, 1000.0), shape=st.floats(0.05, 5.0), p_on=st.floats(0.05, 5.0))
def test_factor_has_unit_mean_and_requested_cv(cv2, shape, p_on):
    """Exact moments of F = a + b (U/pi)**p on U < pi (else 0)."""
    a, b, p, pi = factor_spec(cv2, shape, p_on)
    assert a >= 0 and b >= 0 and p > 0 and 0 < pi <= 1
    mean = pi * (a + b / (p + 1))
    second = pi * (a * a + 2 * a * b / (p + 1) + b * b / (2 * p + 1))
    assert mean == pytest.approx(1.0, rel=1e-9)
    assert second - 1 == pytest.approx(cv2, rel=1e-7, abs=1e-9)


@given(
    K=st.integers(2, 6),
    cv2=st.floats(0.0, 50.0),
    conc=st.floats(0.2, 10.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_levels_mean_one_and_cv_or_idle(K, cv2, conc, seed):
    rel, share = syn._levels(np.random.default_rng(seed), K, cv2, conc)
    assert share.sum() == pytest.approx(1.0)
    assert rel.min() >= 0
    assert share @ rel == pytest.approx(1.0, rel=1e-9)
    got = share @ (rel * rel) - 1
    # either the requested spread, or less with an idle level at 0
    assert got == pytest.approx(cv2, rel=1e-6, abs=1e-9) or (got < cv2 and rel.min() < 1e-9)


def test_factor_draws_match_moments():
    g = np.random.default_rng(0)
    for cv2, shape in ((0.05, 0.5), (0.4, 1.5), (3.0, 1.0), (30.0, 0.8)):
        a, b, p, pi = factor_spec(cv2, shape, 2.0)
        u = g.random(400_000)
        f = np.where(u < pi, a + b * (u / pi) ** p, 0.0)
        assert f.mean() == pytest.approx(1.0, rel=0.03)
        assert f.var() == pytest.approx(cv2, rel=0.1)
        assert f.max() <= a + b + 1e-12  # bounded


# ----------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    "kwargs, culprit",
    [
        (dict(n_tasks=0), "n_tasks"),
        (dict(n_tasks=2.5), "n_tasks"),
        (dict(n_tasks=5, seed=-1), "seed"),
        (dict(n_tasks=5, model="x"), "model"),
    ],
)
def test_bad_arguments(kwargs, culprit):
    with pytest.raises(InputError, match=culprit):
        SyntheticPopulation(**kwargs)


@pytest.mark.parametrize(
    "change, culprit",
    [
        (dict(mean_sigma=-1.0), "mean_sigma"),
        (dict(multi_share=1.5), "multi_share"),
        (dict(phases=0), "phases"),
        (dict(dwell_max=0.5), "dwell_max"),
        (dict(mean_max=2.0), "mean_max"),
        (dict(cv_ref=float("nan")), "cv_ref"),
        (dict(shape_min=5.0), "shape_min"),
    ],
)
def test_bad_model(change, culprit):
    with pytest.raises(InputError, match=culprit):
        PopulationModel().replace(**change)


def test_task_out_of_range():
    pop = SyntheticPopulation(5, seed=0)
    with pytest.raises(InputError, match="task 5"):
        pop.task(5)
    with pytest.raises(InputError, match="task -1"):
        pop.records(-1)


# ---------------------------------------------------------- file round trips
def test_series_round_trip(tmp_path):
    pop = SyntheticPopulation(12, seed=4)
    arrays = pop.to_series_arrays()
    path = tmp_path / "synthetic.h5"
    write_series(path, **arrays, source=pop.source, filters={})
    s = open_series(path)
    assert s.n_tasks == 12
    np.testing.assert_array_equal(s.lengths(), pop.lengths())
    np.testing.assert_array_equal(s.task_id, pop.task_id)
    for k in (0, 5, 11):
        inst, avg = s.task(k)
        ri, ra, rs = pop.records(k)
        np.testing.assert_array_equal(inst, ri)
        np.testing.assert_array_equal(avg, ra)
        np.testing.assert_array_equal(s.start_time[s.offsets[k]:s.offsets[k + 1]], rs)


def test_realize_from_population(tmp_path):
    pop = SyntheticPopulation(30, seed=8)
    out = tmp_path / "store.h5"
    realize(pop, out, n_tasks=10, n_realizations=64, seed=2, source=pop.source)
    store = open_store(out)
    x = np.asarray(store.x)
    rows = np.random.default_rng([2, 0]).choice(30, 10, replace=False)
    for j in (0, 9):
        inst, _ = pop.task(int(rows[j]))
        ix, _ = draw_indices(2, j, len(inst), 64, "independent")
        np.testing.assert_array_equal(x[j], inst[ix])



# ------------------------------------------ the paper's targets (SPEC §12)
# Each row of SPEC §12's table at SPEC §12's tolerance: a violation frequency
# within a factor of 3 of the paper's, or both below 3 × the resolution
# 1 / (sum over instances of m_abs × |E|); a machine count or a share within
# ±5% (relative); a slope or an intercept within ±20% (relative). The rows
# docs/population.md reports as not met are strict xfails (raises=
# AssertionError): the day the population meets one, XPASS fails the suite
# and the docs' table must change.
#
# The sample is the one of docs/population.md's "Measured vs paper" table
# (benchmarks/calibrate_population.py measure --instances 8, seed 1): the
# paper's instances (1,000 consecutive tasks of the population, R = 10,000,
# realized by the SPEC §8 recipe), 8 of them, so the packing rows reproduce
# the table's seed-1 column. All packings of an instance run in one engine
# call (what colosim.run does for one point; checked below), about 0.2 s an
# instance, so the 8 instances cost little more than realizing them (~1 s
# each). The record-level rows (lines, KS, histograms) use all 8,000 tasks;
# Table 1's A-D uses 400 nested samples of 50 / 500 tasks drawn from all
# 8,000 (samples drawn within one instance of 1,000 would share its few big
# tasks and be strongly correlated).

SEED = 1
INSTANCES = 8
TASKS = 1000  # per instance
R = 10_000
DELTA = 12  # KS windows (records)
AD_SIZES = (50, 500)
AD_SAMPLES = 400
PACKED = (
    [(e, "inst") for e in ("av:1", "cantelli:1", "cantelli:1.7", "cantelli:4.4", "perc:99", "perc:95",
                           "perc:90", "gpa:0.1", "gpa:0.05", "gpa:0.01", "gpa:0.001")]
    + [(f"gpa:{rho}", "avg") for rho in ("0.1", "0.05", "0.01", "0.001")]
)


def _point(estimator, data):
    """SPEC §12's packing: c = 1, best-fit, full clairvoyance, rebalancing."""
    return GridPoint.make(estimator, "best-fit", 1.0, 1.0, data, True, 1.0)


@pytest.fixture(scope="module")
def paper_sample():
    """Every SPEC §12 row measured on the sample described above (~15 s)."""
    pop = SyntheticPopulation(INSTANCES * TASKS, seed=SEED)
    n = pop.n_tasks
    moments = np.empty((n, 4))  # mean, std of inst; mean, std of avg (records)
    above = np.empty(n)  # histogram mass above 0.3 (bins 30..99, SPEC §9)
    realized_mean = np.empty(n)
    windows = np.empty((2, n, DELTA))
    g = np.random.default_rng([SEED, 9, 2])
    # Table 1: nested samples (the first 50 of each 500), as sparse selectors
    chosen = np.stack([g.choice(n, AD_SIZES[-1], replace=False) for _ in range(AD_SAMPLES)])
    select = {size: sparse.csr_array((np.ones(AD_SAMPLES * size), (np.repeat(np.arange(AD_SAMPLES), size),
                                                                   chosen[:, :size].ravel())),
                                     shape=(AD_SAMPLES, n))
              for size in AD_SIZES}
    sums = {size: np.zeros((AD_SAMPLES, R)) for size in AD_SIZES}
    points = [_point(e, d) for e, d in PACKED]
    packs = {key: [] for key in PACKED}
    run_check = None
    for i in range(INSTANCES):
        a, b = i * TASKS, (i + 1) * TASKS
        x = np.empty((TASKS, R), dtype=np.float32)
        y = np.empty_like(x)
        for j, k in enumerate(range(a, b)):
            inst, avg = pop.task(k)
            i64, a64 = inst.astype(np.float64), avg.astype(np.float64)
            moments[k] = i64.mean(), i64.std(), a64.mean(), a64.std()
            above[k] = np.mean(np.minimum(99, np.floor(100 * i64)) >= 30)
            nw = len(inst) // DELTA  # >= 2: MIN_RECORDS = 2 * DELTA
            k1 = g.integers(nw)
            k2 = g.integers(nw - 1)
            k2 += k2 >= k1
            windows[0, k] = i64[k1 * DELTA:(k1 + 1) * DELTA]
            windows[1, k] = i64[k2 * DELTA:(k2 + 1) * DELTA]
            ix, iy = draw_indices(SEED, k, len(inst), R, "independent")
            x[j] = inst[ix]
            y[j] = avg[iy]
        realized_mean[a:b] = x.mean(axis=1, dtype=np.float64)
        x64 = x.astype(np.float64)
        for size in AD_SIZES:
            sums[size] += select[size][:, a:b] @ x64
        del x64
        for key, metrics in zip(PACKED, instance_metrics(x, y, points)):
            packs[key].append((int(metrics.m_abs), float(metrics.q)))
        if i == 0:
            one = colosim.run(x, y, estimator="gpa:0.001", capacity=1.0, algorithm="best-fit",
                              clairvoyance=1.0, data="inst", rebalance=True, headroom=1.0)
            run_check = ((int(one.m_abs), float(one.q)), packs[("gpa:0.001", "inst")][0])
    with warnings.catch_warnings():
        # SciPy may fall back from the exact p-value, saying so (SPEC §9 accepts it)
        warnings.filterwarnings("ignore", "ks_2samp: Exact calculation unsuccessful", RuntimeWarning)
        ks_p = stats.ks_2samp(windows[0], windows[1], axis=1, method="auto").pvalue
    critical = 0.787 / (1 + 4 / R - 25 / R**2)  # SPEC §9, 5%
    return {
        "tasks": n,
        "sum500": 500 * float(realized_mean.mean()),
        "lines": {"inst": np.polyfit(moments[:, 0], moments[:, 1], 1),
                  "avg": np.polyfit(moments[:, 2], moments[:, 3], 1)},
        "above_0.3": float(above.mean()),
        "ks_share": float(np.mean(ks_p < 0.05)),
        "ad_share": {size: float(np.mean(anderson_darling_normal(sums[size]) > critical)) for size in AD_SIZES},
        "packs": packs,
        "run_check": run_check,
    }


def _m_abs(sample, estimator, data="inst"):
    return np.array([m for m, _ in sample["packs"][(estimator, data)]])


def _mean_q(sample, estimator, data="inst"):
    return float(np.mean([q for _, q in sample["packs"][(estimator, data)]]))


def _resolution(sample, estimator, data="inst"):
    """1 / (sum over instances of m_abs × |E|), |E| = R at clairvoyance 1."""
    return 1.0 / (int(_m_abs(sample, estimator, data).sum()) * R)


def _check_relative(what, ours, paper, tol):
    assert abs(ours - paper) <= tol * abs(paper), (
        f"{what}: measured {ours:.4g}, paper {paper:.4g}, "
        f"off by {ours / paper - 1:+.1%} (SPEC §12: within ±{tol:.0%})")


def _check_frequency(what, ours, paper, resolution):
    both_unresolved = ours < 3 * resolution and paper < 3 * resolution
    within_3 = ours > 0 and paper > 0 and paper / 3 <= ours <= 3 * paper
    assert both_unresolved or within_3, (
        f"{what}: measured {ours:.3g}, paper {paper:.3g}, 3 × resolution {3 * resolution:.3g} "
        f"(SPEC §12: within a factor of 3, or both below 3 × resolution)")


def _documented_miss(reason):
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"docs/population.md: {reason}")


@pytest.mark.slow
def test_engine_batch_matches_run(paper_sample):
    """The fixture packs all points of an instance in one engine call; one
    point of it equals colosim.run's result."""
    ours, batch = paper_sample["run_check"]
    assert ours == batch


@pytest.mark.slow
def test_mean_total_of_500_tasks(paper_sample):
    """Fig. 5: 500 random tasks use 13.5 machines' worth in total."""
    _check_relative("mean total inst usage of 500 tasks", paper_sample["sum500"], 13.5, 0.05)


@pytest.mark.slow
@pytest.mark.parametrize("data, slope, intercept", [("inst", 0.36, 0.015), ("avg", 0.31, 0.010)])
def test_std_mean_line(paper_sample, data, slope, intercept):
    """Fig. 3: the least-squares std ~ mean line of the task's records."""
    ours_slope, ours_intercept = paper_sample["lines"][data]
    _check_relative(f"std ~ mean slope, {data}", ours_slope, slope, 0.20)
    _check_relative(f"std ~ mean intercept, {data}", ours_intercept, intercept, 0.20)


@pytest.mark.slow
def test_inst_line_above_avg_line(paper_sample):
    """Fig. 3 (and Fig. 2): instantaneous usage varies more than the average."""
    (si, ii), (sa, ia) = paper_sample["lines"]["inst"], paper_sample["lines"]["avg"]
    assert si + ii > sa + ia and ii > ia, f"inst {si:.3g} m + {ii:.3g}, avg {sa:.3g} m + {ia:.3g}"


@pytest.mark.slow
def test_histograms_mostly_below_0_3(paper_sample):
    """Fig. 4: the tasks' usage histograms are mostly 0 above 0.3."""
    above = paper_sample["above_0.3"]
    assert above < 0.02, f"histogram mass above 0.3: {above:.3%} of records (bound 2%)"


@pytest.mark.slow
@_documented_miss("22.4% of tasks (seed 1) vs the paper's about 30%")
def test_time_invariance_rejections(paper_sample):
    """Section 3.3: about 30% of tasks reject KS time invariance (Delta 12)."""
    _check_relative(f"KS rejection share, Delta {DELTA}, {paper_sample['tasks']} tasks",
                    paper_sample["ks_share"], 0.30, 0.05)


@pytest.mark.slow
@pytest.mark.parametrize("size, paper", [
    pytest.param(50, 0.78, marks=_documented_miss("89% of sums rejected at N = 50 vs the paper's 78%")),
    pytest.param(500, 0.09, marks=_documented_miss("15% of sums rejected at N = 500 vs the paper's about 9%")),
])
def test_sums_turn_gaussian(paper_sample, size, paper):
    """Table 1: A-D rejects normality of 78% of sums of 50 tasks, about 9% of 500."""
    _check_relative(f"A-D rejection share, N = {size}, {AD_SAMPLES} samples",
                    paper_sample["ad_share"][size], paper, 0.05)


@pytest.mark.slow
def test_av1_machines(paper_sample):
    """Section 5.2: av 1 packs 1,000 tasks into 28.0 machines on average."""
    m = _m_abs(paper_sample, "av:1")
    _check_relative(f"mean m_abs of av 1 over {m.size} instances {m.tolist()}", float(m.mean()), 28.0, 0.05)


@pytest.mark.slow
@pytest.mark.parametrize("rho, paper", [("0.1", 35.0), ("0.001", 47.0)])
def test_gpa_median_machines(paper_sample, rho, paper):
    """Section 5.6: GPA's median m_abs is 35 at rho 0.1, 47 at rho 0.001."""
    m = _m_abs(paper_sample, f"gpa:{rho}")
    _check_relative(f"median m_abs of gpa {rho} over {m.size} instances {m.tolist()}",
                    float(np.median(m)), paper, 0.05)


@pytest.mark.slow
@pytest.mark.parametrize("estimator, paper", [
    ("cantelli:1", 3e-4),
    ("cantelli:1.7", 2e-6),
    ("cantelli:4.4", 0.0),
    ("perc:99", 2e-8),
    ("gpa:0.001", 1.6e-3),
    pytest.param("perc:95", 5e-6, marks=_documented_miss("9.9e-7 (seed 1) vs the paper's 5e-6")),
    pytest.param("perc:90", 7e-5, marks=_documented_miss("1.7e-5 (seed 1) vs the paper's 7e-5")),
])
def test_violation_frequency(paper_sample, estimator, paper):
    """Section 5.2 and Fig. 9: mean q over the instances (c = 1)."""
    _check_frequency(f"q of {estimator}, mean over {INSTANCES} instances", _mean_q(paper_sample, estimator),
                     paper, _resolution(paper_sample, estimator))


@pytest.mark.slow
def test_gpa_from_averages_violates_2_to_3_times_more(paper_sample):
    """Section 5.3: GPA sized from 5-minute averages gives 2-3x the q of GPA
    from instantaneous data (geometric mean over rho 0.1, 0.05, 0.01, 0.001,
    as docs/population.md measures it; the paper's range, not widened)."""
    rhos = ("0.1", "0.05", "0.01", "0.001")
    ratios = [_mean_q(paper_sample, f"gpa:{r}", "avg") / _mean_q(paper_sample, f"gpa:{r}") for r in rhos]
    gm = float(np.exp(np.mean(np.log(ratios))))
    assert 2.0 <= gm <= 3.0, (f"q(avg) / q(inst) of gpa: geometric mean {gm:.3g} "
                              f"({', '.join(f'{r}: {v:.3g}' for r, v in zip(rhos, ratios))}); paper 2-3x")
