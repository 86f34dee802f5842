"""The claims table on hand-made rows whose answers are known (one holding
and one failing case per kind of claim), config scaling, and the reproduce
pipeline end to end at a test scale."""

import math
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from colosim.analysis.claims import (
    FAILS,
    FITTED,
    HOLDS,
    MISSING,
    OUT_OF_SAMPLE,
    PAPER_SCALE,
    Claim,
    Results,
    claim_avg_ratio,
    claim_capacity,
    claim_clairvoyance,
    claim_comparable,
    claim_first_fit_best_fit,
    claim_frequency,
    claim_machine_count,
    claim_never,
    claim_no_pareto,
    claim_rebalancing,
    claims_markdown,
    count_holds,
    count_interval_holds,
    evaluate_claims,
    frequency_holds,
    frequency_interval_holds,
    median_interval,
    resolution,
    verdict_counts,
)
from colosim.cli import app
from colosim.config import load_config
from colosim.errors import InputError
from colosim.model.estimators import same_estimator
from colosim.runner.reproduce import SCALES, scale_config
from colosim.shipped import PAPER_CONFIGS

from .conftest import write_random_store
from .test_plots import make_row

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
R = 10_000


def res(rows, realizations=R, tasks=1000):
    return Results(rows=rows, realizations=realizations, tasks=tasks)


def points(estimator, qs, ms=None, **keys):
    """One row per instance with the given q (and m_abs)."""
    ms = ms or [28] * len(qs)
    return [make_row(k, estimator, q, m_abs=m, **keys) for k, (q, m) in enumerate(zip(qs, ms))]


# ---------------------------------------------------------------- tolerances


def test_frequency_tolerance():
    assert frequency_holds(3e-4 * 2.9, 3e-4, 1e-9) and frequency_holds(3e-4 / 2.9, 3e-4, 1e-9)
    assert not frequency_holds(3e-4 * 3.1, 3e-4, 1e-9) and not frequency_holds(3e-4 / 3.1, 3e-4, 1e-9)
    # paper's 2e-8 below what the sweep resolves: any q below 3 x resolution agrees
    assert frequency_holds(0.0, 2e-8, 1e-7) and frequency_holds(2.9e-7, 2e-8, 1e-7)
    assert not frequency_holds(3.1e-7, 2e-8, 1e-7)
    assert not frequency_holds(0.0, 1e-3, 1e-7)  # a zero is no match for a resolved q


def test_count_tolerance():
    assert count_holds(29.4, 28.0) and count_holds(26.6, 28.0)
    assert not count_holds(29.5, 28.0) and not count_holds(26.5, 28.0)


def test_interval_rules():
    # the interval meets [paper / 3, 3 x paper] = [1e-4, 9e-4] with either end
    assert frequency_interval_holds(5e-5, 1.1e-4, 3e-4, 1e-9) and frequency_interval_holds(8e-4, 2e-3, 3e-4, 1e-9)
    assert frequency_interval_holds(1e-6, 1e-2, 3e-4, 1e-9)  # around the band
    assert not frequency_interval_holds(5e-5, 9e-5, 3e-4, 1e-9)
    assert not frequency_interval_holds(9.1e-4, 2e-3, 3e-4, 1e-9)
    # the paper's 2e-8 below 3 x resolution: the interval must start below 3 x resolution
    assert frequency_interval_holds(2.9e-7, 1e-5, 2e-8, 1e-7) and not frequency_interval_holds(3.1e-7, 1e-5, 2e-8, 1e-7)
    assert not frequency_interval_holds(0.0, 1e-4, 1e-3, 1e-7)  # an interval below a resolved paper value
    # counts: the interval meets 28 +- 5% = [26.6, 29.4]
    assert count_interval_holds(29.0, 31.0, 28.0) and count_interval_holds(20.0, 26.7, 28.0)
    assert not count_interval_holds(29.5, 31.0, 28.0) and not count_interval_holds(20.0, 26.5, 28.0)


def test_median_interval_by_order_statistics():
    # 50 values: the 18th and 33rd order statistics (coverage 96.7%)
    assert median_interval(list(range(50))[::-1]) == (17.0, 32.0)
    assert median_interval([5, 1, 3, 2, 4, 6]) == (1.0, 6.0)  # [min, max] covers 96.9% of 6 values
    assert all(map(math.isnan, median_interval([1, 2, 3, 4, 5])))  # [min, max] covers 93.8%: too few


def test_resolution_counts_evaluation_columns():
    rows = points("gpa:0.01", [0, 0], ms=[10, 20])
    assert resolution(rows, 100) == pytest.approx(1 / 3000)
    rows = points("gpa:0.01", [0, 0], ms=[10, 20], clairvoyance=0.01)  # k = 1, |E| = 99
    assert resolution(rows, 100) == pytest.approx(1 / (30 * 99))


# ---------------------------------------------------------------- claim kinds


def test_machine_count_claim():
    ok = claim_machine_count(res(points("av:1", [0.3] * 3, ms=[27, 28, 29])), "", "", "av:1", 28.0, "mean")
    assert ok.verdict == HOLDS and ok.colosim.startswith("28 [") and "interval only" not in ok.comparison
    # mean 30.3 is outside 28 +- 5%, but its interval [28.9, 31.8] is not
    near = claim_machine_count(res(points("av:1", [0.3] * 3, ms=[30, 30, 31])), "", "", "av:1", 28.0, "mean")
    assert near.verdict == HOLDS and "holds by the interval only" in near.comparison
    # interval [29.9, 32.8] excludes [26.6, 29.4]
    bad = claim_machine_count(res(points("av:1", [0.3] * 3, ms=[31, 31, 32])), "", "", "av:1", 28.0, "mean")
    assert bad.verdict == FAILS
    # one instance: the point rule
    assert claim_machine_count(res(points("av:1", [0.3], ms=[30])), "", "", "av:1", 28.0, "mean").verdict == FAILS
    one = claim_machine_count(res(points("av:1", [0.3], ms=[29])), "", "", "av:1", 28.0, "mean")
    assert one.verdict == HOLDS and "point rule" in one.comparison
    # a median: order-statistic interval with 6 instances, the point rule with 3
    six = res(points("gpa:0.001", [1e-3] * 6, ms=[30, 40, 46, 49, 52, 60]))  # median 47.5, interval [30, 60]
    assert claim_machine_count(six, "", "", "gpa:0.001", 35.0, "median").verdict == HOLDS
    three = res(points("gpa:0.001", [1e-3] * 3, ms=[30, 47, 60]))
    c = claim_machine_count(three, "", "", "gpa:0.001", 35.0, "median")
    assert c.verdict == FAILS and c.colosim == "47" and "point rule" in c.comparison
    assert claim_machine_count(three, "", "", "gpa:0.001", 47.0, "median").verdict == HOLDS
    assert claim_machine_count(res([]), "", "", "av:1", 28.0, "mean").verdict == MISSING


def test_machine_count_claim_is_paper_scale_only_at_tiny_scale():
    tasks = SCALES["tiny"].tasks
    assert tasks != 1000
    # 28 x 40/1000 = 1.12 machines would "hold" after scaling by n/1000; it is judged neither way
    rows = points("av:1", [0.3] * 3, ms=[1, 1, 1])
    c = claim_machine_count(res(rows, tasks=tasks), "", "", "av:1", 28.0, "mean")
    assert c.verdict == PAPER_SCALE and c.paper == "28.0" and c.colosim.startswith("1")
    assert f"1,000 tasks per instance (this run: {tasks})" in c.comparison
    assert claim_machine_count(res(rows, tasks=tasks), "", "", "gpa:0.1", 35.0, "median").verdict == MISSING
    # at 1,000 tasks the same rows are judged, and fail
    assert claim_machine_count(res(rows), "", "", "av:1", 28.0, "mean").verdict == FAILS
    # in the table: counted apart, neither held nor failed
    claims = evaluate_claims({"baseline": res(rows + points("gpa:0.1", [0.1] * 3, ms=[2, 2, 2])
                                              + points("gpa:0.001", [1e-3] * 3, ms=[3, 3, 3]), tasks=tasks)})
    assert [c.verdict for c in claims if c.verdict == PAPER_SCALE] == [PAPER_SCALE] * 3
    n = verdict_counts(claims)
    assert n[FITTED][PAPER_SCALE] == n["all"][PAPER_SCALE] == 3 and n[OUT_OF_SAMPLE][PAPER_SCALE] == 0
    assert n["all"][HOLDS] + n["all"][FAILS] + n["all"][MISSING] == 20
    assert "| paper scale only |" in claims_markdown(claims)


def test_frequency_claim_uses_the_mean_over_instances():
    good = res(points("cantelli:1", [1e-4, 5e-4, 6e-4]))  # mean 4e-4 vs 3e-4
    c = claim_frequency(good, "", "", "cantelli:1", 3e-4)
    assert c.verdict == HOLDS and c.colosim.startswith("4.0e-04 [") and "95% interval" in c.comparison
    # interval around 1.1e-5 excludes [1e-4, 9e-4]
    bad = res(points("cantelli:1", [1.0e-5, 1.2e-5, 1.1e-5]))
    assert claim_frequency(bad, "", "", "cantelli:1", 3e-4).verdict == FAILS
    # the paper's 0: holds while the interval starts below 3 x resolution (1 / (3 x 28 x 10,000) here)
    zero = res(points("cantelli:4.4", [0.0, 0.0, 0.0]))
    assert claim_frequency(zero, "", "", "cantelli:4.4", 0.0).verdict == HOLDS
    tiny = res(points("cantelli:4.4", [0.0, 0.0, 1e-6]))
    assert claim_frequency(tiny, "", "", "cantelli:4.4", 0.0).verdict == HOLDS
    some = res(points("cantelli:4.4", [1e-4] * 3))
    assert claim_frequency(some, "", "", "cantelli:4.4", 0.0).verdict == FAILS
    # rows off the base case are not read
    off = res(points("cantelli:1", [3e-4] * 3, capacity=2.0))
    assert claim_frequency(off, "", "", "cantelli:1", 3e-4).verdict == MISSING


def test_frequency_claim_holds_by_the_interval_or_falls_back_to_the_point_rule():
    # mean 8e-5 is below 3e-4 / 3; three instances' interval [4.4e-5, 1.3e-4] meets the band
    three = claim_frequency(res(points("cantelli:1", [8e-5] * 3)), "", "", "cantelli:1", 3e-4)
    assert three.verdict == HOLDS and "holds by the interval only" in three.comparison
    spread = claim_frequency(res(points("cantelli:1", [0.0, 0.0, 2.4e-4])), "", "", "cantelli:1", 3e-4)
    assert spread.verdict == HOLDS and "holds by the interval only" in spread.comparison
    # one instance: no interval, the point rule decides
    one = claim_frequency(res(points("cantelli:1", [8e-5])), "", "", "cantelli:1", 3e-4)
    assert one.verdict == FAILS and "point rule" in one.comparison and "[" not in one.colosim.split(" (")[0]
    assert claim_frequency(res(points("cantelli:1", [1.1e-4])), "", "", "cantelli:1", 3e-4).verdict == HOLDS


def test_max_from_averages_claims():
    def claims(q08, q10, spec="max"):
        rows = (points(spec, q08, ms=[1000] * 3, data="avg", headroom=0.8)
                + points(spec, q10, ms=[1000] * 3, data="avg", headroom=1.0)
                + points(spec, [0.5] * 3, ms=[1000] * 3, data="inst", headroom=0.8)  # inst: not read
                + points("gpa:0.01", [1e-2] * 3, ms=[1000] * 3, data="avg"))
        out = [c for c in evaluate_claims({"inst_vs_avg": res(rows)}) if c.claim.startswith("max from 5-minute")]
        assert [(c.source, c.paper, c.basis) for c in out] == [("§5.3", "3.0e-07", OUT_OF_SAMPLE),
                                                              ("§5.3", "5.0e-05", OUT_OF_SAMPLE)]
        return [c.verdict for c in out]
    # 3 x 1,000 bins x 10,000 columns: resolution 3.3e-8, so the paper's 3e-7 is resolved
    assert claims([3e-7] * 3, [5e-5] * 3) == [HOLDS, HOLDS]
    assert claims([3e-7] * 3, [5e-5] * 3, spec="perc:100") == [HOLDS, HOLDS]
    assert claims([5e-5] * 3, [5e-5] * 3) == [FAILS, HOLDS]
    assert claims([0.0] * 3, [1e-3] * 3) == [HOLDS, FAILS]  # 0 with interval [0, 1.2e-7] meets [1e-7, 9e-7]
    assert claims([], [5e-5] * 3) == [MISSING, HOLDS]


def test_inst_vs_avg_config_has_the_max_from_averages_points():
    cfg = load_config(CONFIGS / "inst_vs_avg.toml")
    have = {(str(p.estimator), p.data, p.headroom, p.clairvoyance, p.capacity, p.algorithm, p.rebalance)
            for p in cfg.points}
    for h in (0.8, 1.0):
        assert any(same_estimator(e, "max") and (d, hh, cl, c, a, rb) == ("avg", h, 1.0, 1.0, "best-fit", True)
                   for e, d, hh, cl, c, a, rb in have)


def test_never_claim_accepts_max_or_perc100():
    assert claim_never(res(points("perc:100", [0.0] * 4)), "", "").verdict == HOLDS
    assert claim_never(res(points("max", [0.0, 1e-7, 0.0])), "", "").verdict == FAILS


def test_pareto_claim():
    # on one trade-off line: more machines, fewer violations
    line = (points("av:1", [0.3] * 3, ms=[28] * 3) + points("gpa:0.1", [0.1] * 3, ms=[33] * 3)
            + points("perc:90", [1e-4] * 3, ms=[45] * 3) + points("gpa:0.001", [2e-3] * 3, ms=[40] * 3))
    assert claim_no_pareto(res(line), "", "").verdict == HOLDS
    # GPA beats av everywhere: fewer machines and fewer violations
    dom = (points("av:1", [0.3] * 3, ms=[34] * 3) + points("av:2", [0.01] * 3, ms=[50] * 3)
           + points("gpa:0.1", [0.1] * 3, ms=[33] * 3) + points("gpa:0.001", [2e-3] * 3, ms=[40] * 3))
    c = claim_no_pareto(res(dom), "", "")
    assert c.verdict == FAILS and "gpa over av" in c.colosim
    # perc 100 is not part of the comparison; one family alone cannot be judged
    assert claim_no_pareto(res(points("gpa:0.1", [0.1]) + points("perc:100", [0.0])), "", "").verdict == MISSING


def test_comparable_claim():
    trio = ["perc:70", "av:1.25", "gpa:0.1"]
    near = (points("perc:70", [0.05, 0.06, 0.07], ms=[33, 34, 34]) + points("av:1.25", [0.04] * 3, ms=[34] * 3)
            + points("gpa:0.1", [0.1] * 3, ms=[35] * 3))
    assert claim_comparable(res(near), "", "", trio).verdict == HOLDS
    far_m = near[:6] + points("gpa:0.1", [0.1] * 3, ms=[37] * 3)  # 37 / 34 > 1.05
    assert claim_comparable(res(far_m), "", "", trio).verdict == FAILS
    far_q = near[:6] + points("gpa:0.1", [0.2] * 3, ms=[35] * 3)  # 0.2 / 0.04 > 3
    assert claim_comparable(res(far_q), "", "", trio).verdict == FAILS
    assert claim_comparable(res(near[:6]), "", "", trio).verdict == MISSING


def test_first_fit_best_fit_claim():
    def both(q_ff, q_bf, m_ff, m_bf):
        return (points("gpa:0.01", q_ff, ms=m_ff, algorithm="first-fit")
                + points("gpa:0.01", q_bf, ms=m_bf, algorithm="best-fit"))
    assert claim_first_fit_best_fit(
        res(both([0.010, 0.0101], [0.0101, 0.0100], [40, 41], [41, 41])), "", ""
    ).verdict == HOLDS
    assert claim_first_fit_best_fit(res(both([0.01] * 2, [0.01] * 2, [40, 41], [42, 41])), "", "").verdict == FAILS
    assert claim_first_fit_best_fit(res(both([0.0100] * 2, [0.0102] * 2, [41] * 2, [41] * 2)), "", "").verdict == FAILS
    # both below 3 x resolution: equal as far as the sweep can tell
    assert claim_first_fit_best_fit(res(both([0.0, 0.0], [1e-6, 0.0], [41] * 2, [41] * 2)), "", "").verdict == HOLDS
    assert claim_first_fit_best_fit(res(points("gpa:0.01", [0.01])), "", "").verdict == MISSING


def test_avg_ratio_claim():
    def data(ratio, zero_inst=False):
        rows = []
        for spec, q in (("gpa:0.1", 0.05), ("gpa:0.01", 0.005)):
            rows += points(spec, [q] * 2, data="inst") + points(spec, [q * ratio] * 2, data="avg")
        rows += points("gpa:0.001", [0.0] * 2, data="inst") + points("gpa:0.001", [1e-3] * 2, data="avg")
        rows += points("gpa:0.1", [1.0] * 2, data="avg", headroom=0.8)  # other headroom: not read
        return res(rows)
    ok = claim_avg_ratio(data(2.5), "", "", "gpa", 2.0, 3.0, "2–3×")
    assert ok.verdict == HOLDS and "gpa:0.001" not in ok.colosim  # q = 0 from inst: no ratio
    assert claim_avg_ratio(data(5.0), "", "", "gpa", 2.0, 3.0, "2–3×").verdict == FAILS
    assert claim_avg_ratio(data(1.0), "", "", "gpa", 2.0, 3.0, "2–3×").verdict == FAILS
    assert claim_avg_ratio(data(2.5), "", "", "cantelli", 10.0, 10.0, "about 10×").verdict == MISSING


def test_capacity_claim():
    def data(gpa_qs, av_qs):
        rows = []
        for c, qg, qa in zip([0.5, 1.0, 2.0], gpa_qs, av_qs):
            rows += points("gpa:0.001", [qg] * 2, capacity=c) + points("av:2", [qa] * 2, capacity=c)
            rows += points("gpa:0.001", [0.5] * 2, capacity=c, rebalance=False)  # not read
        return res(rows)
    assert claim_capacity(data([1e-3, 1.5e-3, 8e-4], [0.05, 0.01, 1e-3]), "", "").verdict == HOLDS
    assert claim_capacity(data([1e-2, 1.5e-3, 8e-4], [0.05, 0.01, 1e-3]), "", "").verdict == FAILS  # GPA varies
    assert claim_capacity(data([1e-3, 1.5e-3, 8e-4], [0.02, 0.01, 0.01]), "", "").verdict == FAILS  # av steady


def test_clairvoyance_claim_reads_the_level_of_100_observations():
    def data(q_at, realizations=R, levels=(0.001, 0.01, 0.1)):
        rows = []
        for lv in levels:
            rows += points("gpa:0.01", [q_at.get(lv, 0.5)] * 2, clairvoyance=lv)
            rows += points("av:1.25", [0.1] * 2, clairvoyance=lv)
        rows += points("gpa:0.01", [0.01] * 2) + points("av:1.25", [0.1] * 2)
        return res(rows, realizations=realizations)
    # R = 10,000: level 0.01 observes 100; level 0.001 (10 obs.) may be far off
    c = claim_clairvoyance(data({0.01: 0.02}), "", "")
    assert c.verdict == HOLDS and "clairvoyance 0.01 (100 obs.)" in c.colosim
    assert claim_clairvoyance(data({0.01: 0.05}), "", "").verdict == FAILS
    # R = 2,000: 0.01 observes 20, so 0.1 (200 obs.) is read
    c = claim_clairvoyance(data({0.1: 0.02}, realizations=2000), "", "")
    assert c.verdict == HOLDS and "0.1 (200 obs.)" in c.colosim
    assert claim_clairvoyance(data({}, levels=(0.001,)), "", "").verdict == MISSING


def test_rebalancing_claim():
    def data(q_on):
        rows = []
        for k, (off, on) in enumerate(zip([0.1, 0.02, 0.0], q_on)):
            rows += [make_row(k, "gpa:0.01", off, rebalance=False), make_row(k, "gpa:0.01", on, rebalance=True)]
            rows += [make_row(k, "gpa:0.01", 0.9, rebalance=False, algorithm="first-fit"),
                     make_row(k, "gpa:0.01", 0.1, rebalance=True, algorithm="first-fit")]  # not read
        return res(rows)
    c = claim_rebalancing(data([0.093, 0.0186, 0.0]), "", "", "gpa")  # 7% and 7%; the zero pair omitted
    assert c.verdict == HOLDS and "over 2 " in c.colosim and c.paper == "7%"
    # a 2.5% gain (the paper's share of the last machine, not a gain) does not pass for the 7%
    assert claim_rebalancing(data([0.0975, 0.0195, 0.0]), "", "", "gpa").verdict == FAILS
    assert claim_rebalancing(data([0.08, 0.016, 0.0]), "", "", "gpa").verdict == FAILS  # 20%
    assert claim_rebalancing(data([0.093, 0.0186, 0.0]), "", "", "av").verdict == MISSING


def test_evaluate_claims_without_results_marks_all_not_evaluated():
    claims = evaluate_claims({})
    assert len(claims) == 23 and {c.verdict for c in claims} == {MISSING}
    table = claims_markdown(claims)
    assert table.count("\n| ") == 23 and "- all: 0 of 23 hold, 0 do not, 0 paper scale only, 23 not evaluated" in table


def test_fitted_claims_are_spec_12s_rows():
    claims = evaluate_claims({})
    assert {c.basis for c in claims} == {FITTED, OUT_OF_SAMPLE}
    fitted = [(c.source, c.paper) for c in claims if c.basis == FITTED]
    assert fitted == [("§5.2", "28.0"), ("§5.2", "3.0e-04"), ("§5.2", "2.0e-06"), ("§5.3", "0"),
                      ("§5.2", "2.0e-08"), ("§5.2", "5.0e-06"), ("§5.2", "7.0e-05"), ("§5.2, Fig. 9", "1.6e-03"),
                      ("§5.3, Fig. 10", "2–3×"), ("§5.6", "35.0"), ("§5.6", "47.0")]
    out = {c.claim for c in claims if c.basis == OUT_OF_SAMPLE}
    assert len(out) == 12 and "Cantelli from averages: about 10× the violations" in out
    assert "| 1 | §5.2 | fitted | av 1 packs" in claims_markdown(claims)


def test_verdicts_are_counted_per_basis():
    def claim(verdict, basis):
        return Claim("§5", "c", "p", "v", "rule", verdict, basis)
    claims = ([claim(HOLDS, FITTED)] * 2 + [claim(FAILS, FITTED), claim(PAPER_SCALE, FITTED)]
              + [claim(HOLDS, OUT_OF_SAMPLE), claim(FAILS, OUT_OF_SAMPLE), claim(MISSING, OUT_OF_SAMPLE)])
    n = verdict_counts(claims)
    assert n[FITTED] == {HOLDS: 2, FAILS: 1, PAPER_SCALE: 1, MISSING: 0}
    assert n[OUT_OF_SAMPLE] == {HOLDS: 1, FAILS: 1, PAPER_SCALE: 0, MISSING: 1}
    assert n["all"] == {HOLDS: 3, FAILS: 2, PAPER_SCALE: 1, MISSING: 1}
    table = claims_markdown(claims)
    assert "- fitted: 2 of 4 hold, 1 do not, 1 paper scale only, 0 not evaluated" in table
    assert "- out of sample: 1 of 3 hold, 1 do not, 0 paper scale only, 1 not evaluated" in table
    assert "- all: 3 of 7 hold, 2 do not, 1 paper scale only, 1 not evaluated" in table
    assert table.count("| out of sample |") == 3 and table.count("| fitted |") == 4


# ---------------------------------------------------------------- scales


def test_scale_config_small_is_documented_transformation():
    for path in (CONFIGS / f"{name}.toml" for name in PAPER_CONFIGS):
        paper = load_config(path)
        assert scale_config(paper, "paper") is paper
        small = scale_config(paper, "small")
        assert (small.source.tasks, small.source.realizations) == (3000, 2000)
        assert (small.instances.count, small.instances.tasks) == (10, 200)
        assert small.instances.seed == paper.instances.seed and small.source.seed == paper.source.seed
        assert small.grid == paper.grid and small.source.store is None
        assert small.fingerprint() != paper.fingerprint()
        s = SCALES["small"]
        assert small.points == paper.points and s.tasks <= s.store_tasks


def test_scale_keeps_a_store_source_and_rejects_unknown_scales(tmp_path):
    (tmp_path / "c.toml").write_text('[source]\nkind = "store"\npath = "s.h5"\n'
                                     "[instances]\ncount = 50\ntasks = 30\nseed = 1\n[grid]\n")
    cfg = scale_config(load_config(tmp_path / "c.toml"), "tiny")
    assert cfg.source.path == "s.h5" and (cfg.instances.count, cfg.instances.tasks) == (3, 30)
    with pytest.raises(InputError, match="unknown scale 'huge'"):
        scale_config(cfg, "huge")


# ---------------------------------------------------------------- pipeline


@pytest.fixture
def store_configs(tmp_path):
    """The project's configs with their source replaced by a small random
    store (grids untouched)."""
    folder = tmp_path / "configs"
    folder.mkdir()
    write_random_store(folder / "store.h5", 150, 300, seed=3)
    for path in sorted(CONFIGS / f"{name}.toml" for name in PAPER_CONFIGS):
        text = re.sub(r"\[source\].*?(?=\[instances\])", '[source]\nkind = "store"\npath = "store.h5"\n\n',
                      path.read_text(), flags=re.S)
        (folder / path.name).write_text(text)
    return folder


def test_reproduce_end_to_end_at_test_scale(tmp_path, store_configs):
    out = tmp_path / "out"
    run = CliRunner().invoke(app, ["reproduce", "--out", str(out), "--scale", "tiny", "--configs", str(store_configs)])
    assert run.exit_code == 0, run.output
    report = (out / "REPORT.md").read_text()
    names = sorted(PAPER_CONFIGS)
    tables = [p for p in (out / "results").glob("*.csv") if not p.name.endswith(".summary.csv")]
    assert sorted(p.stem for p in tables) == names
    assert "Scale **tiny**" in report and "3 instances of 40 tasks" in report
    rows = [line for line in report.splitlines() if re.match(r"\| \d+ \| §", line)]
    cells = ("| **holds** |", "| **does not hold** |", "| paper scale only |", "| not evaluated |")
    assert len(rows) == 23 and all(sum(r.endswith(c) for c in cells) == 1 for r in rows)
    # at 40 tasks per instance the three machine counts are judged neither way
    assert [r.split(" | ")[1] for r in rows if r.endswith("| paper scale only |")] == ["§5.2", "§5.6", "§5.6"]
    assert re.search(r"- fitted: \d+ of 11 hold, \d+ do not, 3 paper scale only", report)
    assert re.search(r"- out of sample: \d+ of 12 hold, \d+ do not, 0 paper scale only", report)
    assert "reads a store, not the built-in population" in report
    for n in (7, 8, 9, 10, 11, 12, 13):
        [link] = re.findall(rf"!\[Figure {n}\]\((\S+)\)", report)
        png = out / link
        assert png.read_bytes()[:4] == b"\x89PNG" and png.with_suffix(".svg").stat().st_size > 0
    # rerun: every sweep reused, same claims
    again = CliRunner().invoke(
        app, ["reproduce", "--out", str(out), "--scale", "tiny", "--configs", str(store_configs)]
    )
    assert again.exit_code == 0 and again.output.count("results reused") == len(names)
    assert [line for line in (out / "REPORT.md").read_text().splitlines() if re.match(r"\| \d+ \| §", line)] == rows


def test_reproduce_bad_input_exits_2(tmp_path, store_configs):
    def bad(*args):
        r = CliRunner().invoke(app, ["reproduce", "--out", str(tmp_path / "o"), *args])
        lines = r.output.strip().splitlines()
        assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.output
        assert not (tmp_path / "o" / "REPORT.md").exists()
        return lines[0]
    assert "--scale" in (message := bad("--scale", "huge", "--configs", str(store_configs))) and "'small'" in message
    assert "--backend" in (message := bad("--backend", "mpi", "--configs", str(store_configs))) and "'dask'" in message
    assert "configs folder not found" in bad("--configs", str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    assert "no *.toml" in bad("--configs", str(tmp_path / "empty"))
    (store_configs / "broken.toml").write_text("[grid]\nfoo = 1\n")
    assert "broken.toml" in bad("--scale", "tiny", "--configs", str(store_configs))


# ---------------------------------------------------------------- properties

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

freq = st.one_of(st.just(0.0), st.floats(1e-9, 1.0))


@given(freq, freq, freq, st.floats(1e-9, 1e-3))
def test_interval_rule_extends_the_point_rule(a, b, paper, r):
    low, high = min(a, b), max(a, b)
    assert frequency_interval_holds(a, a, paper, r) == frequency_holds(a, paper, r)
    assert count_interval_holds(a, a, paper) == count_holds(a, paper)
    if frequency_holds(a, paper, r) or frequency_holds(b, paper, r):  # a wider interval never fails more
        assert frequency_interval_holds(low, high, paper, r)


@given(freq, freq, st.floats(1e-9, 1e-3))
def test_frequency_rule_is_symmetric_and_scale_free(a, b, r):
    assert frequency_holds(a, b, r) == frequency_holds(b, a, r)
    if a >= 3 * r and b >= 3 * r:
        assert frequency_holds(a, b, r) == (max(a, b) <= 3 * min(a, b))


@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=8), st.randoms())
def test_rebalancing_claim_ignores_row_order(pairs, rnd):
    rows = []
    for k, (off, on) in enumerate(pairs):
        rows += [make_row(k, "av:1.25", off, rebalance=False), make_row(k, "av:1.25", on, rebalance=True)]
    a = claim_rebalancing(res(rows), "", "", "av")
    rnd.shuffle(rows)
    b = claim_rebalancing(res(rows), "", "", "av")
    assert a == b
    usable = [(off - on) / off for off, on in pairs if off > 0]
    assert (a.verdict == MISSING) == (not usable)
    if usable:
        assert a.verdict == (HOLDS if abs(sum(usable) / len(usable) - 0.07) <= 0.05 * 0.07 else FAILS)
