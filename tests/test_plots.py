"""Section 5 figures: selection from the grid, paired rebalancing gains, the
q = 0 floor, the 95% intervals of the means, files written, and bad input
through `colosim plot`."""

import dataclasses
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from colosim.analysis.summary import rebalancing_gains, summarize_point
from colosim.cli import app
from colosim.figures import results as result_figures
from colosim.figures.results import (
    QAxis,
    plot_results,
    reference,
    select,
    supported_figures,
)
from colosim.io.results import COLUMNS
from colosim.io.results import csv_text as rows_to_csv
from colosim.model.grid import evaluation_columns

runner = CliRunner()

#: (m, q) of each estimator at the base case; zeros included on purpose
LEVELS = {"gpa:0.1": (1.2, 0.08), "gpa:0.001": (1.5, 1.5e-3), "cantelli:4.4": (2.5, 0.0),
          "av:1.25": (1.2, 0.05), "perc:90": (1.6, 1e-4), "perc:100": (2.2, 0.0)}


def make_row(instance, estimator, q, m_abs=28, m_norm=28, algorithm="best-fit", capacity=1.0,
             clairvoyance=1.0, data="inst", rebalance=True, headroom=1.0):
    return dict(instance=instance, estimator=estimator, algorithm=algorithm, capacity=capacity,
                clairvoyance=clairvoyance, data=data, rebalance=rebalance, headroom=headroom, fit_rule="cpu",
                memory_capacity=None, memory_estimator="max", m_abs=m_abs, m_norm=m_norm, m=m_abs / m_norm, q=q,
                q_max=min(1.0, 2 * q),
                severity=0.01 if q else 0.0, oversize=0, q_ci_low=0.8 * q, q_ci_high=min(1.0, 1.2 * q + 1e-5),
                realizations=1000, evaluated=evaluation_columns(clairvoyance, 1000), calibrated_rho=None,
                m_abs_by_type=(), q_by_type=(), q_memory=None, q_memory_max=None, memory_bound=None)


def full_table(instances=3, seed=0):
    """Every grid key varied: supports all of Figures 7–13."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(instances):
        for est, alg, c, cl, d, rb, h in itertools.product(
                LEVELS, ["first-fit", "best-fit"], [0.5, 1.0], [0.1, 1.0], ["inst", "avg"], [True, False], [0.8, 1.0]):
            m, q = LEVELS[est]
            q = min(1.0, q * float(np.exp(rng.normal(0, 0.3))) * (0.93 if rb else 1.0) * (2.5 if d == "avg" else 1))
            m_abs = int(round(28 * m * (1 + rng.normal(0, 0.02))))
            rows.append(make_row(k, est, q, m_abs, 28, alg, c, cl, d, rb, h))
    return rows


def as_csv_rows(rows):
    return [tuple(r[c] for c in COLUMNS) for r in rows]


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    out = tmp_path_factory.mktemp("figs")
    # PNG only here, for speed; the CLI test below writes SVG too
    return out, plot_results(full_table(), out, formats=("png",))


def test_every_figure_drawn(drawn):
    out, written = drawn
    assert sorted(written) == [7, 8, 9, 10, 11, 12, 13]
    for n, paths in written.items():
        [png] = paths
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
        assert png.parent == out and png.stem == result_figures.FIGURES[n].stem
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary left


def test_selection_follows_the_grid():
    rows = full_table(instances=2)
    support = supported_figures(rows)
    assert all(why is None for n, why in support.items() if n <= 13)  # the paper's; 14 needs memory
    assert "memory" in support[14]
    # only capacity varies, no GPA: m-q figures and Figure 11, nothing else
    only_cap = [r for r in rows if r["estimator"] in ("av:1.25", "perc:90") and r["algorithm"] == "best-fit"
                and r["clairvoyance"] == 1.0 and r["data"] == "inst" and r["rebalance"] and r["headroom"] == 1.0]
    support = supported_figures(only_cap)
    assert [n for n, why in support.items() if why is None] == [7, 8, 11]
    assert "GPA" in support[9] and "clairvoyance" in support[12] and "rebalancing" in support[13]
    # Cantelli and max only: Figure 8 (GPA, av, perc) has nothing to show
    cm = [make_row(0, "cantelli:1", 0.1), make_row(0, "max", 0.0)]
    assert supported_figures(cm)[8] is not None and supported_figures(cm)[7] is None
    # rebalancing on/off but every q without rebalancing is 0: no gain to draw
    zero = [make_row(0, "gpa:0.1", 0.0, rebalance=rb) for rb in (True, False)]
    assert "non-zero q" in supported_figures(zero)[13]
    # perc is omitted from Figure 13, as in the paper
    perc = [make_row(0, "perc:90", 0.1, rebalance=rb) for rb in (True, False)]
    assert supported_figures(perc)[13] is not None


def test_reference_prefers_the_paper_base_case():
    rows = [make_row(0, "av:1", 0.1, capacity=c, data=d) for c in (0.5, 2.0, 1.0) for d in ("avg", "inst")]
    ref = reference(rows)
    assert ref["capacity"] == 1.0 and ref["data"] == "inst"
    rows = [make_row(0, "av:1", 0.1, capacity=c, headroom=0.8) for c in (0.5, 2.0)]
    ref = reference(rows)
    assert ref["capacity"] == 0.5 and ref["headroom"] == 0.8  # first listed when the base value is absent
    assert {r["capacity"] for r in select(rows)} == {0.5}
    assert {r["capacity"] for r in select(rows, free=("capacity",))} == {0.5, 2.0}


def test_rebalancing_gain_is_paired_per_instance():
    rows = []
    q_off = {0: 0.10, 1: 0.02, 2: 0.0}
    q_on = {0: 0.09, 1: 0.021, 2: 0.0}
    for k in q_off:
        # instance order and row order must not matter: pairs are matched by key
        rows.append(make_row(k, "gpa:0.01", q_on[k], rebalance=True))
    for k in reversed(list(q_off)):
        rows.append(make_row(k, "gpa:0.01", q_off[k], rebalance=False))
        rows.append(make_row(k, "perc:90", 0.5, rebalance=False))
        rows.append(make_row(k, "perc:90", 0.4, rebalance=True))
    gains = rebalancing_gains(rows)
    assert list(gains) == [("gpa:0.01", "best-fit")]  # perc omitted
    # instance 2 (q_off = 0) omitted; instance 1 got worse
    np.testing.assert_allclose(sorted(gains[("gpa:0.01", "best-fit")]), sorted([0.1, -0.05]))


def test_zero_q_is_drawn_at_a_marked_floor():
    qa = QAxis([0.0, 3e-4, 0.02, 0.0])
    assert qa.floor == 1e-5 and qa.zeros == 2
    np.testing.assert_array_equal(qa([0.0, 3e-4]), [1e-5, 3e-4])
    rows = [make_row(k, e, q) for k in range(3) for e, q in (("max", 0.0), ("av:1.25", 0.05))]
    fig = result_figures.draw_fig7(rows)
    ax = fig.axes[0]
    assert any("q = 0 (3 of 6" in t.get_text() for t in ax.texts)
    # the figure's floor: a decade below its smallest positive q (0.05)
    assert ax.get_yscale() == "log" and ax.get_ylim()[0] < 1e-3 < ax.get_ylim()[1]
    assert any(np.allclose(line.get_ydata(), 1e-3) for line in ax.lines)
    points = [line for line in ax.lines if line.get_marker() in result_figures.FAMILY_MARKERS
              and line.get_markerfacecolor() != "gold"]  # not the paper's value (max: q = 0)
    assert len(points) == 2  # the zero-q estimator is plotted, not dropped


def write_csv(path, rows):
    Path(path).write_text(rows_to_csv(as_csv_rows(rows)))


def test_cli_plot_draws_asked_figure(tmp_path):
    write_csv(tmp_path / "r.csv", full_table(instances=2))
    res = runner.invoke(app, ["plot", str(tmp_path / "r.csv"), "--out", str(tmp_path / "f"), "--figure", "9"])
    assert res.exit_code == 0, res.output
    png, svg = tmp_path / "f" / "fig09_gpa_relative_error.png", tmp_path / "f" / "fig09_gpa_relative_error.svg"
    assert sorted((tmp_path / "f").iterdir()) == [png, svg]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert b"<svg" in svg.read_bytes()[:2000] and svg.stat().st_size > 10_000


def bad(tmp_path, *args):
    res = runner.invoke(app, ["plot", *args, "--out", str(tmp_path / "figs")])
    lines = res.output.strip().splitlines()
    assert res.exit_code == 2, res.output
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    assert not (tmp_path / "figs").exists()
    return lines[0]


def test_bad_input_exits_2_with_one_line(tmp_path):
    good = rows_to_csv(as_csv_rows([make_row(0, "gpa:0.01", 0.003), make_row(1, "gpa:0.01", 0.02)]))
    cases = {
        "notcsv.csv": ("hello,world\n1,2\n", "not a colosim results table"),
        "empty.csv": (good.splitlines()[0] + "\n", "no rows"),
        "badq.csv": (good.replace("0.02,", "zero,", 1), "line 3: malformed row"),
        "range.csv": (good.replace(",0.02,", ",1.5,", 1), "line 3: q and q_max"),
        "spec.csv": (good.replace("gpa:0.01", "gpa:7", 1), "line 2"),
        "data.csv": (good.replace(",inst,", ",peak,", 1), "line 2: data"),
        "short.csv": (good + "3,gpa:0.01,best-fit\n", f"line 4: 3 values for {len(COLUMNS)} columns"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        line = bad(tmp_path, str(tmp_path / name))
        assert name in line and message in line, line
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00garbage")
    assert "bin.csv" in bad(tmp_path, str(tmp_path / "bin.csv"))
    assert "not found" in bad(tmp_path, str(tmp_path / "missing.csv"))
    (tmp_path / "ok.csv").write_text(good)
    assert "Figure 11" in bad(tmp_path, str(tmp_path / "ok.csv"), "--figure", "11")
    assert "Figure 99" in bad(tmp_path, str(tmp_path / "ok.csv"), "--figure", "99")


def test_failed_plot_keeps_existing_figures(tmp_path, drawn):
    out, written = drawn
    target = tmp_path / "figs"
    target.mkdir()
    keep = target / "fig09_gpa_relative_error.png"
    keep.write_bytes(b"old")
    (tmp_path / "bad.csv").write_text("not,a,table\n")
    res = runner.invoke(app, ["plot", str(tmp_path / "bad.csv"), "--out", str(target)])
    assert res.exit_code == 2 and keep.read_bytes() == b"old"


def errorbars(ax):
    from matplotlib.container import ErrorbarContainer

    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def y_segment(container):
    """(low, high) of an error-bar container's vertical bar."""
    [(x0, y0), (x1, y1)] = container.lines[2][-1].get_segments()[0]
    assert x0 == x1
    return y0, y1


def test_figures_draw_the_interval_of_the_mean():
    rows = full_table(instances=4)
    # Figure 7: one marker per estimator, with m's and q's 95% interval
    ax = result_figures.draw_fig7(rows, realizations=1000).axes[0]
    bars = errorbars(ax)
    assert len(bars) == len(LEVELS) and all(b.has_xerr and b.has_yerr for b in bars)
    assert "mean and 95% interval over instances" in ax.get_title()
    # the bar is the interval of summarize_point, not a quartile range
    base = [r for r in select(rows) if r["estimator"] == "gpa:0.1"]
    s = summarize_point(base, 1000)
    [gpa] = [b for b in bars if b.get_label() == "GPA ρ=0.1"]
    np.testing.assert_allclose(y_segment(gpa), (s["q_ci_low"], s["q_ci_high"]))
    # without a realization count: m's interval only
    ax = result_figures.draw_fig7(rows).axes[0]
    assert not any(b.has_yerr for b in errorbars(ax)) and all(b.has_xerr for b in errorbars(ax))
    assert "realization count unknown" in ax.get_title()
    # box figures: one interval per box; Figure 10 draws 6 estimators x 2 data x 2 headrooms
    fig = result_figures.draw_fig10(rows, realizations=1000)
    assert [len(errorbars(ax)) for ax in fig.axes] == [2 * len(LEVELS)] * 2
    assert all(b.has_yerr for ax in fig.axes for b in errorbars(ax))
    assert "95% interval" in fig.get_suptitle()
    fig = result_figures.draw_fig11(rows, realizations=1000)
    assert sum(len(errorbars(ax)) for ax in fig.axes) == 2 * 2 * len(LEVELS)  # rebalance x capacity x estimator
    fig = result_figures.draw_fig12(rows, realizations=1000)
    assert [len(errorbars(ax)) for ax in fig.axes] == [2] * len(LEVELS)
    ax = result_figures.draw_fig9(rows, realizations=1000).axes[0]
    assert len(errorbars(ax)) == 2 and all(b.has_yerr for b in errorbars(ax))  # gpa:0.1 and gpa:0.001
    # Figure 13: Student's t interval of the mean gain (no realization count needed)
    fig = result_figures.draw_fig13(rows)
    assert all(b.has_yerr for ax in fig.axes for b in errorbars(ax)) and errorbars(fig.axes[0])


def test_intervals_reaching_zero_on_the_log_axis():
    # all q = 0: an upper bound only, from the floor; some q = 0: cut at the floor with a caret
    rows = [make_row(k, "max", 0.0) for k in range(3)]
    rows += [make_row(k, "av:1.25", q) for k, q in enumerate((0.0, 0.0, 1e-3))]
    ax = result_figures.draw_fig7(rows, realizations=1000).axes[0]
    s_max = summarize_point(rows[:3], 1000)
    assert s_max["q_ci_low"] == 0 and 1e-4 < s_max["q_ci_high"] < 1e-3
    floor = 1e-5  # a decade below the smallest positive q or upper bound (max's)
    assert ax.get_yscale() == "log"
    by_label = {b.get_label(): b for b in errorbars(ax)}
    np.testing.assert_allclose(y_segment(by_label["max"]), (floor, s_max["q_ci_high"]))
    np.testing.assert_allclose(y_segment(by_label["av 1.25"]), (floor, summarize_point(rows[3:], 1000)["q_ci_high"]))
    carets = [line for line in ax.lines if line.get_marker() == result_figures.CUT_MARKER]
    # for av only: max's mean sits at the floor already
    assert len(carets) == 1 and carets[0].get_ydata()[0] == pytest.approx(floor)
    assert result_figures.CUT_NOTE in ax.get_title()
    assert ax.get_ylim()[0] < floor  # the floor, its line and the carets are in view


def test_plot_takes_realizations_from_the_sidecar(tmp_path, monkeypatch):
    write_csv(tmp_path / "r.csv", full_table(instances=2))
    seen = []

    def draw(rows, realizations, caption):
        seen.append(realizations)
        return result_figures.draw_fig9(rows, realizations, caption)

    monkeypatch.setitem(result_figures.FIGURES, 9, dataclasses.replace(result_figures.FIGURES[9], draw=draw))
    result_figures.plot_file(tmp_path / "r.csv", tmp_path / "a", figures=[9])  # no sidecar: no q intervals
    (tmp_path / "r.csv.json").write_text(json.dumps({"format": "colosim-results", "realizations": 500}))
    result_figures.plot_file(tmp_path / "r.csv", tmp_path / "b", figures=[9])
    assert seen == [None, 500]
    (tmp_path / "r.csv.json").write_text(json.dumps({"format": "colosim-results", "realizations": "many"}))
    line = bad(tmp_path, str(tmp_path / "r.csv"))
    assert "r.csv.json" in line and "realizations" in line
