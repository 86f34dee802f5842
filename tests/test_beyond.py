"""Beyond the paper (docs/beyond.md): emp, gpa-cal, hoeffding, effsize,
nsigma, sorted orders and mixed fleets against the naive reference
(tests/naive.py), and their invariants (Hypothesis)."""

import math
import zlib

import numba
import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy.special import logsumexp

import colosim
from colosim.beyond import CAL_RHO_MIN, calibrate_gpa, effsize_grid, emp_allowance
from colosim.experiment import GridPoint
from colosim.kernels.packing import pack_items
from colosim.kernels.vector_packing import (
    EMP, GAUSS, log_mgf, pack_vector, state_load, violations_per_bin_capacity,
)

from . import naive
from .conftest import random_usage

NEW = ["emp:0", "emp:0.05", "emp:0.2", "nsigma:0", "nsigma:1.5", "nsigma:3",
       "effsize:0.1", "effsize:0.001", "hoeffding:0.05", "hoeffding:0.5"]
ALGORITHMS = ["first-fit", "best-fit", "first-fit-decreasing", "best-fit-decreasing"]
FLEETS = [((1.0,), (1.0,)), ((1.0, 0.5), (0.5, 0.5)), ((0.6, 1.2, 2.0), (2.0, 1.0, 1.0))]


def _capacity(caps, shares):
    if len(caps) == 1:
        return caps[0]
    return ",".join(f"{c}:{s}" for c, s in zip(caps, shares))


def _compare(got, want):
    np.testing.assert_array_equal(got.assign, want["assign"])
    np.testing.assert_array_equal(got.counts, want["counts"])
    for key in ("m_abs", "m_norm", "m", "q", "q_max", "oversize"):
        assert getattr(got, key) == want[key], key
    if hasattr(got, "bin_type"):  # the new points' evaluation sums in float64
        assert got.severity == pytest.approx(want["severity"], rel=1e-12, abs=0)
    else:  # the paper's path takes severity from float32 sums (SPEC §5 fixes only the counts)
        assert got.severity == pytest.approx(want["severity"], rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("estimator", NEW)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_new_estimators_match_naive_reference(estimator, algorithm):
    rng = np.random.default_rng([zlib.crc32(estimator.encode()), len(algorithm)])
    for fleet in FLEETS:
        n, R = int(rng.integers(15, 40)), int(rng.integers(40, 120))
        x = random_usage(rng, n, R)
        y = (x * 0.8).astype(np.float32)
        clairvoyance = float(rng.choice([0.3, 1.0]))
        data = str(rng.choice(["inst", "avg"]))
        headroom = float(rng.choice([0.8, 1.0]))
        rebalance = bool(rng.integers(0, 2))
        got = colosim.run(x, y, estimator, _capacity(*fleet), algorithm, clairvoyance, data, rebalance, headroom)
        want = naive.run_beyond(x, y, estimator, list(fleet[0]), list(fleet[1]), algorithm, clairvoyance,
                                data, rebalance, headroom)
        _compare(got, want)
        np.testing.assert_array_equal(got.bin_type, want["types"])


@pytest.mark.parametrize("estimator", ["av:1", "perc:90", "max", "cantelli:1", "gpa:0.01"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_paper_estimators_with_sorted_orders_and_fleets_match_naive(estimator, algorithm):
    rng = np.random.default_rng([zlib.crc32(estimator.encode()), len(algorithm), 1])
    for fleet in FLEETS:
        x = random_usage(rng, int(rng.integers(20, 50)), 80)
        rebalance = bool(rng.integers(0, 2))
        got = colosim.run(x, None, estimator, _capacity(*fleet), algorithm, 0.5, "inst", rebalance, 1.0)
        want = naive.run_beyond(x, None, estimator, list(fleet[0]), list(fleet[1]), algorithm, 0.5, "inst",
                                rebalance, 1.0)
        _compare(got, want)


@pytest.mark.parametrize("target", [0.0, 0.01, 0.05])
@pytest.mark.parametrize("fleet", FLEETS[:2])
def test_gpa_cal_matches_naive_bisection(target, fleet):
    rng = np.random.default_rng([int(target * 1000), len(fleet[0])])
    x = random_usage(rng, 30, 100, scale=0.04)
    got = colosim.run(x, None, f"gpa-cal:{target}", _capacity(*fleet), "best-fit", 0.5)
    want = naive.run_beyond(x, None, f"gpa-cal:{target}", list(fleet[0]), list(fleet[1]), "best-fit", 0.5)
    assert got.calibrated_rho == want["rho"]
    _compare(got, want)


def test_gpa_cal_rho_meets_the_target_on_the_observations():
    rng = np.random.default_rng(4)
    hits = 0
    for _ in range(3):
        x = random_usage(rng, 30, 150, scale=0.02)
        p = GridPoint.make("gpa-cal:0.02", capacity=1.0)
        rho, (assign, m, _, _, _) = calibrate_gpa(x, p)
        q_obs = naive.violations(x, assign, 1.0)[0].sum() / (m * x.shape[1])
        assert q_obs <= 0.02 or rho == CAL_RHO_MIN
        hits += CAL_RHO_MIN < rho < 0.5
    assert hits > 0  # the bisection itself was exercised


def test_gpa_sorted_order_equals_pack_items_on_the_permuted_instance():
    from colosim.estimators import parse_estimator

    rng = np.random.default_rng(8)
    x = random_usage(rng, 60, 100)
    o = x.astype(np.float64)
    a, b = o.mean(1), o.var(1)
    z = parse_estimator("gpa:0.01").z
    order = np.argsort(-(a + z * np.sqrt(b)), kind="stable")
    for alg, code in (("first-fit-decreasing", 0), ("best-fit-decreasing", 1)):
        want_p, _, _ = pack_items(a[order].copy(), b[order].copy(), z, 1.0, code, True)
        want = np.empty_like(want_p)
        want[order] = want_p
        np.testing.assert_array_equal(colosim.pack(x, "gpa:0.01", algorithm=alg), want)


# ---------------------------------------------------------------- properties

usage = st.integers(0, 2**32 - 1).map(lambda s: np.random.default_rng(s))
sizes = st.tuples(st.integers(1, 40), st.integers(1, 60))


@given(rng=usage, shape=sizes, z=st.sampled_from([0.0, 1.0, 3.09]), algorithm=st.sampled_from([0, 1]),
       rebalance=st.booleans(), cap=st.sampled_from([0.05, 0.3, 1.0, 3.0]))
def test_gauss_vector_kernel_equals_the_paper_kernel(rng, shape, z, algorithm, rebalance, cap):
    o = random_usage(rng, *shape).astype(np.float64)
    a, b = o.mean(1), o.var(1)
    want, m, moves = pack_items(a, b, z, cap, algorithm, rebalance)
    got, m2, moves2, types = pack_vector(np.stack([a, b], 1), GAUSS, np.array([z]), np.array([cap]),
                                         np.array([1.0]), algorithm, rebalance)
    np.testing.assert_array_equal(got, want)
    assert (m, moves) == (m2, moves2) and (types == 0).all()


@given(rng=usage, k=st.integers(1, 80), rho=st.sampled_from([0.0, 0.01, 0.1, 0.29, 0.5, 0.9]),
       cap=st.floats(0.0, 3.0))
def test_emp_load_makes_the_fit_test_exact(rng, k, rho, cap):
    # fits iff share of columns above cap <= rho  <=>  L <= cap
    S = (rng.random(k) * 2).round(int(rng.integers(1, 4)))  # ties on purpose
    r = emp_allowance(rho, k)
    assert r == math.floor(round(rho * 100) * k / 100)
    L = state_load(S.copy(), EMP, np.array([float(r)]))
    assert (np.count_nonzero(S > cap) <= rho * k + 1e-9) == (L <= cap)


@given(rng=usage, shape=sizes, rho=st.sampled_from([0.0, 0.02, 0.1]), rebalance=st.booleans(),
       algorithm=st.sampled_from(ALGORITHMS))
def test_emp_with_full_clairvoyance_meets_rho_on_every_bin(rng, shape, rho, rebalance, algorithm):
    n, R = shape
    x = random_usage(rng, n, R)
    res = colosim.run(x, None, f"emp:{rho}", algorithm=algorithm, rebalance=rebalance)
    for j in range(res.m_abs):
        members = np.flatnonzero(res.assign == j)
        lone_oversize = len(members) == 1 and np.count_nonzero(x[members[0]] > 1.0) > rho * R
        assert res.counts[j] <= rho * R or lone_oversize


@given(rng=usage, shape=sizes, rho=st.sampled_from([0.5, 0.1, 0.001]))
def test_effsize_lies_between_the_mean_and_the_chernoff_worst_case(rng, shape, rho):
    x = random_usage(rng, *shape).astype(np.float64)
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


@given(rng=usage, shape=sizes, fleet=st.sampled_from(FLEETS[1:]), algorithm=st.sampled_from(ALGORITHMS),
       rebalance=st.booleans())
def test_fleet_types_follow_the_shares_and_metrics_add_up(rng, shape, fleet, algorithm, rebalance):
    n, R = shape
    x = random_usage(rng, n, max(R, 2))
    res = colosim.run(x, None, "gpa:0.01", _capacity(*fleet), algorithm, 0.5, rebalance=rebalance)
    caps, shares = fleet
    assert sum(res.m_abs_by_type) == res.m_abs
    n_eval = x.shape[1] - max(1, math.floor(0.5 * x.shape[1] + 0.5))
    total = sum(q * m for q, m in zip(res.q_by_type, res.m_abs_by_type))
    assert total == pytest.approx(res.q * res.m_abs, rel=1e-12, abs=1e-12)
    if not rebalance:
        # opening order: every prefix of opened bins follows the lowest opened/share rule
        opened = [0] * len(caps)
        for t in res.bin_type:
            assert t == min(range(len(caps)), key=lambda u: (opened[u] / shares[u], u))
            opened[t] += 1
    # each bin judged against its own capacity
    want, _ = naive.violations_per_bin(x[:, x.shape[1] - n_eval:], res.assign, [caps[t] for t in res.bin_type])
    np.testing.assert_array_equal(res.counts, want)


@given(rng=usage, shape=sizes, spec=st.sampled_from(NEW + ["gpa:0.05"]))
def test_sorted_orders_open_bins_by_decreasing_standalone_load(rng, shape, spec):
    x = random_usage(rng, *shape)
    ffd = colosim.run(x, None, spec, algorithm="first-fit-decreasing", rebalance=False)
    V, load_state, _ = naive.beyond_model(x, spec, 1.0)
    standalone = [load_state(naive.bin_state([i], V)) for i in range(len(x))]
    order = naive.sorted_order(standalone)
    # the first task of each bin, in the sorted order, comes in bin order
    position = {i: p for p, i in enumerate(order)}
    firsts = [min(position[i] for i in np.flatnonzero(ffd.assign == j)) for j in range(ffd.m_abs)]
    assert firsts == sorted(firsts)
    assert [standalone[order[p]] for p in firsts] == sorted((standalone[order[p]] for p in firsts), reverse=True)


def test_per_bin_capacity_violations_equal_naive():
    rng = np.random.default_rng(2)
    x = random_usage(rng, 50, 300)
    assign = np.unique(rng.integers(0, 9, 50), return_inverse=True)[1].astype(np.int64)
    m = int(assign.max()) + 1
    caps = rng.choice([0.3, 0.5, 1.0], size=m)
    counts, sev = violations_per_bin_capacity(x, 100, 300, assign, m, caps)
    want, excess = naive.violations_per_bin(x[:, 100:], assign, caps)
    np.testing.assert_array_equal(counts, want)
    assert sev.sum() == pytest.approx(sum(excess), rel=1e-12, abs=1e-300)


def test_new_points_do_not_depend_on_thread_count():
    rng = np.random.default_rng(11)
    x = random_usage(rng, 200, 1500)
    before = numba.get_num_threads()
    runs = []
    try:
        for threads in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(threads)
            runs.append([colosim.run(x, x, spec, "1:0.5,0.5:0.5", "best-fit-decreasing", 0.3)
                         for spec in ("emp:0.01", "effsize:0.01", "nsigma:2", "gpa-cal:0.01")])
    finally:
        numba.set_num_threads(before)
    for one, many in zip(*runs):
        np.testing.assert_array_equal(one.assign, many.assign)
        np.testing.assert_array_equal(one.counts, many.counts)
        assert one.severity == many.severity


def test_paper_points_keep_their_path_beside_new_ones():
    # a grid that mixes both gives the paper's points exactly as alone
    from colosim.experiment import instance_metrics

    rng = np.random.default_rng(12)
    x = random_usage(rng, 80, 400)
    paper = [GridPoint.make(e, clairvoyance=0.5) for e in ("gpa:0.01", "av:1", "perc:90")]
    new = [GridPoint.make("emp:0.01", clairvoyance=0.5), GridPoint.make("av:1", "first-fit-decreasing")]
    alone = instance_metrics(x, None, paper)
    mixed = instance_metrics(x, None, [new[0], paper[0], paper[1], new[1], paper[2]])
    for a, b in zip(alone, [mixed[1], mixed[2], mixed[4]]):
        assert a.row() == b.row()
        np.testing.assert_array_equal(a.assign, b.assign)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("kwargs, culprit", [
    (dict(estimator="emp:1"), "emp:1"),
    (dict(estimator="emp:-0.1"), "emp:-0.1"),
    (dict(estimator="emp"), "emp"),
    (dict(estimator="gpa-cal:1"), "gpa-cal:1"),
    (dict(estimator="gpa-cal:x"), "gpa-cal:x"),
    (dict(estimator="hoeffding:0"), "hoeffding:0"),
    (dict(estimator="effsize:1"), "effsize:1"),
    (dict(estimator="nsigma:-1"), "nsigma:-1"),
    (dict(estimator="nsigma:nan"), "nsigma:nan"),
    (dict(algorithm="worst-fit-decreasing"), "worst-fit-decreasing"),
    (dict(capacity="1:0.5,"), "1:0.5,"),
    (dict(capacity="1:0.5,0.5"), "0.5"),
    (dict(capacity="1:0,0.5:1"), "share"),
    (dict(capacity="-1:1"), "capacity"),
    (dict(capacity="a:1"), "a:1"),
    (dict(capacity="1:1,1:2"), "twice"),
])
def test_new_specs_reject_bad_input(kwargs, culprit):
    x = np.full((3, 10), 0.1)
    with pytest.raises(colosim.InputError, match=culprit.replace("+", r"\+")):
        colosim.run(x, x, **kwargs)


# ---------------------------------------------------------------- sweeps

SWEEP = """
[source]
kind = "store"
path = "store.h5"

[instances]
count = 2
tasks = 40
seed = 5

[grid]
estimator = ["gpa:0.01", "gpa-cal:0.01", "emp:0.01"]
algorithm = ["best-fit", "first-fit-decreasing"]
capacity = [1.0, "1:0.5,0.5:0.5"]
clairvoyance = [0.5]
"""


def test_sweep_appends_rho_and_per_type_columns(tmp_path, small_store, monkeypatch):
    import csv
    from pathlib import Path

    from typer.testing import CliRunner

    from colosim.cli import app
    from colosim.sweep import COLUMNS, instance_rows, read_results

    _, x, y = small_store
    (tmp_path / "sweep.toml").write_text(SWEEP)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["sweep", "sweep.toml", "--out", "r.csv"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(Path("r.csv").read_text().splitlines()))
    assert tuple(rows[0]) == COLUMNS + ("calibrated_rho", "m_abs_by_type", "q_by_type")
    assert len(rows) == 2 * 3 * 2 * 2
    typed = read_results("r.csv")
    for r, t in zip(rows, typed):
        assert (r["calibrated_rho"] != "") == (r["estimator"] == "gpa-cal:0.01")
        assert (r["m_abs_by_type"] != "") == (r["capacity"] == "1:0.5,0.5:0.5")
        cap = t["capacity"]
        idx = instance_rows(5, t["instance"], 120, 40)
        want = colosim.run(x[idx], y[idx], t["estimator"], cap, t["algorithm"], t["clairvoyance"])
        assert t["m_abs"] == want.m_abs and t["q"] == want.q
        assert t.get("calibrated_rho") == getattr(want, "calibrated_rho", None)
        if t["m_abs_by_type"]:
            assert t["m_abs_by_type"] == want.m_abs_by_type and t["q_by_type"] == want.q_by_type
    again = CliRunner().invoke(app, ["sweep", "sweep.toml", "--out", "r.csv"])
    assert again.exit_code == 0 and "nothing recomputed" in again.output
    info = CliRunner().invoke(app, ["info", "r.csv"])
    assert info.exit_code == 0 and "1:0.5,0.5:0.5" in info.output


@pytest.mark.parametrize("line, culprit", [
    ('capacity = ["1:0.5;0.5:0.5"]', "1:0.5;0.5:0.5"),
    ('algorithm = ["next-fit-decreasing"]', "next-fit-decreasing"),
    ('estimator = ["emp:2"]', "emp:2"),
])
def test_sweep_config_rejects_bad_new_values(tmp_path, line, culprit):
    from typer.testing import CliRunner

    from colosim.cli import app

    text = SWEEP.replace('capacity = [1.0, "1:0.5,0.5:0.5"]', "").replace(
        'algorithm = ["best-fit", "first-fit-decreasing"]', "").replace(
        'estimator = ["gpa:0.01", "gpa-cal:0.01", "emp:0.01"]', "") + line + "\n"
    (tmp_path / "c.toml").write_text(text)
    (tmp_path / "store.h5").write_bytes(b"")
    res = CliRunner().invoke(app, ["sweep", str(tmp_path / "c.toml"), "--out", str(tmp_path / "r.csv")])
    assert res.exit_code == 2
    assert culprit in res.output and "c.toml" in res.output


def test_shipped_beyond_configs_are_valid_and_paper_scale():
    from pathlib import Path

    from colosim.config import load_config

    configs = sorted((Path(__file__).resolve().parents[1] / "configs" / "beyond").glob("*.toml"))
    assert {c.stem for c in configs} >= {"estimators", "gpa_cal", "sorted_orders", "fleet", "correlation",
                                         "correlation_independent"}
    for c in configs:
        cfg = load_config(c)
        assert cfg.instances.count == 50 and cfg.instances.tasks == 1000
        assert cfg.source.tasks == 100000 and cfg.source.realizations == 10000 and cfg.points()


def test_plot_draws_the_frontier_of_new_estimators_and_fleets(tmp_path):
    from colosim.plots.section5 import check_rows, plot_results, supported_figures

    rng = np.random.default_rng(3)
    x = random_usage(rng, 60, 300)
    rows = []
    for spec in ("emp:0.01", "nsigma:2", "effsize:0.01", "hoeffding:0.1", "gpa-cal:0.01", "gpa:0.01", "av:1"):
        for cl in (0.5, 1.0):
            for cap in (1.0, "1:0.5,0.5:0.5"):
                r = colosim.run(x, None, spec, cap, "best-fit-decreasing", cl)
                rows.append(dict(instance=0, estimator=spec, algorithm="best-fit-decreasing",
                                 capacity=cap if isinstance(cap, float) else "1:0.5,0.5:0.5", clairvoyance=cl,
                                 data="inst", rebalance=True, headroom=1.0, m_abs=r.m_abs, m_norm=r.m_norm,
                                 m=r.m, q=r.q, q_max=r.q_max, severity=r.severity, oversize=r.oversize))
    check_rows(rows)
    support = supported_figures(rows)
    assert support[7] is None and support[12] is None and support[11] is not None
    written = plot_results(rows, tmp_path, figures=[7, 12], formats=("png",))
    assert all(p.exists() for ps in written.values() for p in ps)
