"""The claims table on hand-made rows whose answers are known (one holding
and one failing case per kind of claim), config scaling, and the reproduce
pipeline end to end at a test scale."""

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from colosim.analysis.claims import (
    FAILS,
    HOLDS,
    MISSING,
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
    evaluate_claims,
    frequency_holds,
    resolution,
)
from colosim.cli import app
from colosim.config import load_config
from colosim.errors import InputError
from colosim.runner.reproduce import SCALES, scale_config

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


def test_resolution_counts_evaluation_columns():
    rows = points("gpa:0.01", [0, 0], ms=[10, 20])
    assert resolution(rows, 100) == pytest.approx(1 / 3000)
    rows = points("gpa:0.01", [0, 0], ms=[10, 20], clairvoyance=0.01)  # k = 1, |E| = 99
    assert resolution(rows, 100) == pytest.approx(1 / (30 * 99))


# ---------------------------------------------------------------- claim kinds


def test_machine_count_claim():
    ok = claim_machine_count(res(points("av:1", [0.3] * 3, ms=[27, 28, 29])), "", "", "av:1", 28.0, "mean")
    assert ok.verdict == HOLDS and ok.colosim == "28"
    bad = claim_machine_count(res(points("av:1", [0.3] * 3, ms=[30, 30, 31])), "", "", "av:1", 28.0, "mean")
    assert bad.verdict == FAILS
    # median, and the paper's count scaled to 200-task instances (47 x 0.2 = 9.4)
    small = res(points("gpa:0.001", [1e-3] * 3, ms=[9, 9, 30]), tasks=200)
    assert claim_machine_count(small, "", "", "gpa:0.001", 47.0, "median").verdict == HOLDS
    assert claim_machine_count(small, "", "", "gpa:0.001", 47.0, "mean").verdict == FAILS
    assert claim_machine_count(small, "", "", "av:1", 28.0, "mean").verdict == MISSING


def test_frequency_claim_uses_the_mean_over_instances():
    good = res(points("cantelli:1", [1e-4, 5e-4, 6e-4]))  # mean 4e-4 vs 3e-4
    assert claim_frequency(good, "", "", "cantelli:1", 3e-4).verdict == HOLDS
    bad = res(points("cantelli:1", [0.0, 0.0, 2.4e-4]))  # mean 8e-5: off by more than 3
    assert claim_frequency(bad, "", "", "cantelli:1", 3e-4).verdict == FAILS
    # the paper's 0: holds only below 3 x resolution (1 / (3 x 28 x 10,000) here)
    zero = res(points("cantelli:4.4", [0.0, 0.0, 0.0]))
    assert claim_frequency(zero, "", "", "cantelli:4.4", 0.0).verdict == HOLDS
    tiny = res(points("cantelli:4.4", [0.0, 0.0, 1e-6]))
    assert claim_frequency(tiny, "", "", "cantelli:4.4", 0.0).verdict == HOLDS
    some = res(points("cantelli:4.4", [0.0, 0.0, 1e-4]))
    assert claim_frequency(some, "", "", "cantelli:4.4", 0.0).verdict == FAILS
    # rows off the base case are not read
    off = res(points("cantelli:1", [3e-4] * 3, capacity=2.0))
    assert claim_frequency(off, "", "", "cantelli:1", 3e-4).verdict == MISSING


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
    assert c.verdict == HOLDS and "over 2 " in c.colosim
    assert claim_rebalancing(data([0.08, 0.016, 0.0]), "", "", "gpa").verdict == FAILS  # 20%
    assert claim_rebalancing(data([0.093, 0.0186, 0.0]), "", "", "av").verdict == MISSING


def test_evaluate_claims_without_results_marks_all_not_evaluated():
    claims = evaluate_claims({})
    assert len(claims) == 21 and {c.verdict for c in claims} == {MISSING}
    table = claims_markdown(claims)
    assert table.count("\n| ") == 21 and "0 of 21 claims hold, 0 do not, 21 not evaluated" in table


# ---------------------------------------------------------------- scales


def test_scale_config_small_is_documented_transformation():
    for path in sorted(CONFIGS.glob("*.toml")):
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
    for path in sorted(CONFIGS.glob("*.toml")):
        text = re.sub(r"\[source\].*?(?=\[instances\])", '[source]\nkind = "store"\npath = "store.h5"\n\n',
                      path.read_text(), flags=re.S)
        (folder / path.name).write_text(text)
    return folder


def test_reproduce_end_to_end_at_test_scale(tmp_path, store_configs):
    out = tmp_path / "out"
    run = CliRunner().invoke(app, ["reproduce", "--out", str(out), "--scale", "tiny", "--configs", str(store_configs)])
    assert run.exit_code == 0, run.output
    report = (out / "REPORT.md").read_text()
    names = sorted(p.stem for p in CONFIGS.glob("*.toml"))
    tables = [p for p in (out / "results").glob("*.csv") if not p.name.endswith(".summary.csv")]
    assert sorted(p.stem for p in tables) == names
    assert "Scale **tiny**" in report and "3 instances of 40 tasks" in report
    rows = [line for line in report.splitlines() if re.match(r"\| \d+ \| §", line)]
    assert len(rows) == 21 and all(("**holds**" in r) != ("**does not hold**" in r) for r in rows)
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
    assert "unknown scale 'huge'" in bad("--scale", "huge", "--configs", str(store_configs))
    assert "backend must be" in bad("--backend", "mpi", "--configs", str(store_configs))
    assert "configs folder not found" in bad("--configs", str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    assert "no *.toml" in bad("--configs", str(tmp_path / "empty"))
    (store_configs / "broken.toml").write_text("[grid]\nfoo = 1\n")
    assert "broken.toml" in bad("--scale", "tiny", "--configs", str(store_configs))


# ---------------------------------------------------------------- properties

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

freq = st.one_of(st.just(0.0), st.floats(1e-9, 1.0))


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
