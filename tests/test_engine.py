"""The engine against the naive reference (tests/naive.py): every estimator
of the table, every algorithm, single capacities and fleets, one point at a
time and many points of one instance together."""

import math
import zlib

import numpy as np
import pytest

import colosim
from colosim.engine import CAL_RHO_MIN, instance_metrics
from colosim.model.estimators import ESTIMATORS
from colosim.model.grid import ALGORITHMS, GridPoint

from . import naive
from .conftest import random_usage

#: specs of every estimator of the table, at the parameters of its naive reference
SPECS = {name: naive.specs(name) for name in ESTIMATORS}
FLEETS = [1.0, 0.6, "1:0.5,0.5:0.5", "0.6:2,1.2:1,2:1"]


def test_every_estimator_of_the_table_has_a_naive_reference():
    assert set(ESTIMATORS) == set(naive.MODELS)


def compare(got, want):
    np.testing.assert_array_equal(got.assign, want["assign"])
    np.testing.assert_array_equal(got.counts, want["counts"])
    np.testing.assert_array_equal(got.bin_type, want["types"])
    for key in ("m_abs", "m_norm", "m", "q", "q_max", "oversize"):
        assert getattr(got, key) == want[key], key
    assert got.calibrated_rho == want["rho"]
    # severity is taken from float32 sums (SPEC §5 fixes only the counts)
    assert got.severity == pytest.approx(want["severity"], rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("family", sorted(SPECS))
@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_run_matches_naive_reference(family, algorithm):
    rng = np.random.default_rng([zlib.crc32(family.encode()), zlib.crc32(algorithm.encode())])
    for spec in SPECS[family]:
        for capacity in FLEETS:
            n, R = int(rng.integers(12, 40)), int(rng.integers(40, 160))
            x = random_usage(rng, n, R, scale=0.04 if family == "gpa-cal" else 0.08)
            y = (x * 0.8).astype(np.float32)
            clairvoyance = float(rng.choice([0.1, 0.5, 1.0]))
            data = str(rng.choice(["inst", "avg"]))
            rebalance = bool(rng.integers(0, 2))
            headroom = float(rng.choice([0.8, 1.0]))
            got = colosim.run(x, y, spec, capacity, algorithm, clairvoyance, data, rebalance, headroom)
            want = naive.run(x, y, spec, capacity, algorithm, clairvoyance, data, rebalance, headroom)
            compare(got, want)


def test_rebalancing_moves_tasks_on_these_inputs():
    # the comparisons above are only meaningful if rebalancing does something
    rng = np.random.default_rng(3)
    moved = 0
    for _ in range(20):
        x = random_usage(rng, 50, 100)
        moved += colosim.run(x, None, "av:1", rebalance=True).moves
    assert moved > 0


def test_gpa_cal_meets_its_target_on_the_observations():
    # with full clairvoyance O = E, so the run's own q is the calibration's
    rng = np.random.default_rng(4)
    searched = 0
    for _ in range(4):
        x = random_usage(rng, 30, 150, scale=0.02)
        res = colosim.run(x, None, "gpa-cal:0.02")
        assert res.q <= 0.02 or res.calibrated_rho == CAL_RHO_MIN
        searched += CAL_RHO_MIN < res.calibrated_rho < 0.5
    assert searched > 0  # the bisection itself was exercised


def test_pack_returns_the_packing_run_evaluates():
    rng = np.random.default_rng(6)
    x = random_usage(rng, 60, 200)
    for spec in ("gpa:0.01", "emp:0.05", "gpa-cal:0.01", "perc:90"):
        for capacity in (1.0, "1:0.5,0.5:0.5"):
            for algorithm in ALGORITHMS:
                np.testing.assert_array_equal(colosim.pack(x, spec, capacity, algorithm),
                                              colosim.run(x, None, spec, capacity, algorithm).assign)


def mixed_points():
    return [GridPoint.make(e, a, c, cl, d, rb, h)
            for e in ("gpa:0.01", "av:1", "perc:90", "emp:0.05", "hoeffding:0.1", "gpa-cal:0.02", "effsize:0.01")
            for a in ("best-fit", "first-fit-decreasing")
            for c in (0.75, 1.0, "1:0.5,0.5:0.5")
            for cl in (0.3, 1.0)
            for d in ("inst", "avg")
            for rb in (True, False)
            for h in (0.9,)]


def test_many_points_of_one_instance_equal_the_naive_reference_point_by_point():
    # the shared path: one statistics pass per (data, clairvoyance), one
    # scalar-kernel call for all scalar points, one evaluation of every
    # packing at several capacities, fleets and first columns
    rng = np.random.default_rng(21)
    x = random_usage(rng, 30, 120, scale=0.05)
    y = (x * 0.7).astype(np.float32)
    points = mixed_points()
    got = instance_metrics(x, y, points)
    for p, met in zip(points, got):
        cap = p.capacity if isinstance(p.capacity, float) else p.capacity.spec
        want = naive.run(x, y, p.estimator.spec, cap, p.algorithm, p.clairvoyance, p.data, p.rebalance,
                         p.headroom)
        compare(met, want)


def test_a_point_scores_the_same_alone_and_in_any_grid():
    # no number of a point depends on the other points of the grid: not the
    # statistics, packings, shared bins, or the columns laid out (a grid
    # without clairvoyance 1 starts its evaluation at a later column)
    rng = np.random.default_rng(12)
    x = random_usage(rng, 80, 700)
    points = [p for p in mixed_points() if p.data == "inst" and p.rebalance][::3]
    together = instance_metrics(x, x, points)
    later = [p for p in points if p.clairvoyance < 1]
    for group in (later, points[::-1]):
        for p, met in zip(group, instance_metrics(x, x, group)):
            alone = instance_metrics(x, x, [p])[0]
            want = together[points.index(p)]
            for m in (met, alone):
                assert m.row(("calibrated_rho", "m_abs_by_type", "q_by_type")) == \
                    want.row(("calibrated_rho", "m_abs_by_type", "q_by_type"))
                np.testing.assert_array_equal(m.assign, want.assign)
                np.testing.assert_array_equal(m.counts, want.counts)


def test_the_scalar_and_vector_kernels_agree_on_gaussian_items():
    # a single-type fleet "C:1" takes the vector kernel; the number C the scalar one
    rng = np.random.default_rng(8)
    x = random_usage(rng, 60, 100)
    for spec in ("gpa:0.01", "av:1.25", "hoeffding:0.1", "max"):
        for algorithm in ALGORITHMS:
            for rebalance in (True, False):
                scalar = colosim.run(x, None, spec, 0.8, algorithm, rebalance=rebalance)
                vector = colosim.run(x, None, spec, "0.8:1", algorithm, rebalance=rebalance)
                np.testing.assert_array_equal(scalar.assign, vector.assign)
                assert scalar.row() == vector.row() and scalar.moves == vector.moves


def test_metrics_of_fleets_add_up():
    rng = np.random.default_rng(9)
    x = random_usage(rng, 70, 300)
    res = colosim.run(x, None, "gpa:0.01", "1:0.25,0.5:0.75", "best-fit", 0.5)
    assert sum(res.m_abs_by_type) == res.m_abs
    n_eval = 300 - 150
    total = sum(q * m for q, m in zip(res.q_by_type, res.m_abs_by_type))
    assert total == pytest.approx(res.q * res.m_abs, rel=1e-12)
    assert res.m_norm == max(1, math.ceil(math.fsum(x.astype(np.float64).mean(1).tolist()) / (0.25 + 0.375)))
    assert res.counts.sum() == round(res.q * res.m_abs * n_eval)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("kwargs, culprit", [
    (dict(estimator="gpa:0"), "gpa:0"),
    (dict(estimator="nope"), "nope"),
    (dict(estimator="emp:1"), "emp:1"),
    (dict(estimator="emp"), "emp"),
    (dict(estimator="gpa-cal:x"), "gpa-cal:x"),
    (dict(estimator="nsigma:nan"), "nsigma:nan"),
    (dict(capacity=0.0), "capacity"),
    (dict(capacity=-1), "capacity"),
    (dict(capacity="1:0.5,"), "1:0.5,"),
    (dict(capacity="1:0,0.5:1"), "share"),
    (dict(capacity="1:1,1:2"), "twice"),
    (dict(clairvoyance=0.0), "clairvoyance"),
    (dict(clairvoyance=1.5), "clairvoyance"),
    (dict(clairvoyance=0.999), "no evaluation column"),
    (dict(headroom=0.0), "headroom"),
    (dict(headroom=1.2), "headroom"),
    (dict(algorithm="worst-fit"), "algorithm"),
    (dict(algorithm="worst-fit-decreasing"), "worst-fit-decreasing"),
    (dict(data="peak"), "data"),
])
def test_run_rejects_bad_arguments(kwargs, culprit):
    x = np.full((3, 10), 0.1)
    with pytest.raises(colosim.InputError, match=culprit.replace("+", r"\+")):
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


def test_violations_takes_one_capacity():
    x = np.full((3, 10), 0.1)
    with pytest.raises(colosim.InputError, match="one number"):
        colosim.violations(x, np.zeros(3, dtype=int), capacity="1:1")
