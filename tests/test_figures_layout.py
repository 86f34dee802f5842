"""Layout of the figures: direct labels spread apart and no text over
another (measured with the renderer), plain legend glyphs, titles by the
config's name, PDF output, Figure 12's log axis in observations, shared q
scales, the paper's values overlaid, and Figures 4 and 6."""

import json

import numpy as np
import pytest
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from colosim.analysis.claims import evaluate_claims, fmt
from colosim.figures import characterization as char
from colosim.figures import results as rf
from colosim.figures._labels import overlapping_texts, repel
from colosim.figures.paper import PAPER_MAX_AVG_Q, PAPER_Q, PAPER_REBALANCING_GAIN, PAPER_STYLE, Caption, caption_for
from tests.test_plots import full_table, make_row, write_csv

DRAW = {7: rf.draw_fig7, 8: rf.draw_fig8, 9: rf.draw_fig9, 10: rf.draw_fig10, 11: rf.draw_fig11,
        12: rf.draw_fig12, 13: rf.draw_fig13}


@pytest.fixture(scope="module")
def rows():
    return full_table(instances=3)


def test_repel_keeps_order_gap_and_bounds():
    ys = repel([0.5, 0.5, 0.5, 0.9, 0.1], 0.1)
    assert sorted(range(5), key=lambda i: ys[i]) == [4, 0, 1, 2, 3]  # ties in input order
    z = sorted(ys)
    assert all(b - a >= 0.1 - 1e-12 for a, b in zip(z, z[1:]))
    assert min(ys) >= 0 and max(ys) <= 1
    np.testing.assert_allclose(ys[:3], [0.4, 0.5, 0.6])  # a tie spread symmetrically about its place
    assert repel([0.2, 0.8], 0.1) == [0.2, 0.8]  # nothing to move
    assert repel([0.99, 0.99], 0.1) == pytest.approx([0.9, 1.0])  # pushed inside the bounds
    assert repel([0.5] * 3, 0.1, 0.0, 1.0) == repel([0.5] * 3, 0.1, 0.0, 1.0)


def test_overlap_check_finds_an_overlap_made_on_purpose():
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, "perc 70", transform=ax.transAxes)
    assert overlapping_texts(fig) == []
    ax.text(0.5, 0.5, "av 1.25", transform=ax.transAxes)
    assert ("perc 70", "av 1.25") in overlapping_texts(fig)
    # the old way of Figures 7 and 8: labels beside points that (nearly) coincide
    rows = [make_row(k, e, 0.01) for k in range(3) for e in ("perc:70", "av:1.25", "gpa:0.1")]
    fig = rf.draw_fig8(rows)
    ax = fig.axes[0]
    for e in ("perc 70", "av 1.25"):
        ax.annotate(e, (1.0, 0.01), xytext=(5, 4), textcoords="offset points", fontsize=7)
    assert ("perc 70", "av 1.25") in overlapping_texts(fig)


@pytest.mark.parametrize("n", sorted(DRAW))
def test_no_text_overlaps(rows, n):
    for realizations, caption in ((1000, Caption("baseline", True)), (None, Caption("my_experiment"))):
        fig = DRAW[n](rows, realizations, caption)
        assert overlapping_texts(fig) == [], (n, realizations)


def test_comparable_estimators_labelled_apart():
    # perc 70, av 1.25 and GPA 0.1 at (almost) the same (m, q): three labels, none over another
    rows = [make_row(k, e, q, m_abs=m) for k in range(3)
            for e, q, m in (("perc:70", 0.010, 35), ("av:1.25", 0.011, 35), ("gpa:0.1", 0.0105, 35), ("max", 0.0, 50))]
    fig = rf.draw_fig8(rows, 1000)
    texts = {t.get_text(): t for t in fig.axes[0].texts}
    assert {"perc 70", "av 1.25", "GPA ρ=0.1"} <= set(texts)
    assert overlapping_texts(fig) == []


def test_legend_glyphs_are_plain(rows):
    for n in (7, 9, 10, 11, 13):
        fig = DRAW[n](rows, 1000)
        legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
        assert legends, n
        for legend in legends:
            assert not legend.findobj(LineCollection), n  # no error bars or caps in a legend


def test_titles_follow_the_config(tmp_path, rows):
    fig = rf.draw_fig7(rows, None, caption_for("/somewhere/configs/baseline.toml"))
    assert fig.axes[0].get_title().startswith("Figure 7 (paper §5.2)")
    fig = rf.draw_fig7(rows, None, caption_for("/home/me/tighter.toml"))
    title = fig.axes[0].get_title()
    assert title.startswith("tighter: ") and "cf. paper Figure 7" in title and "Figure 7 (paper" not in title
    fig = rf.draw_fig12(rows, None)  # name unknown: never the paper's
    assert "(paper §5.5)" not in fig.get_suptitle() and "cf. paper Figure 12" in fig.get_suptitle()
    # plot_file reads the config from the sidecar, else names the figures by the table
    write_csv(tmp_path / "mine.csv", rows)
    assert rf.sidecar_caption(tmp_path / "mine.csv") == Caption("mine", False)
    meta = {"format": "colosim-results", "config": "configs/capacity.toml"}
    (tmp_path / "mine.csv.json").write_text(json.dumps(meta))
    assert rf.sidecar_caption(tmp_path / "mine.csv") == Caption("capacity", True)


def test_titles_can_be_dropped(rows):
    for n, draw in DRAW.items():
        fig = draw(rows, 1000, Caption("baseline", True, title=False))
        assert not fig.get_suptitle(), n
        assert all("Figure" not in ax.get_title() and "§" not in ax.get_title() for ax in fig.axes), n
    assert rf.draw_fig7(rows, 1000, Caption(title=True)).axes[0].get_title()


def test_pdf_and_formats(tmp_path, rows):
    write_csv(tmp_path / "r.csv", rows)
    written, _ = rf.plot_file(tmp_path / "r.csv", tmp_path / "f", figures=[9], formats=("pdf",), title=False)
    [pdf] = written[9]
    assert pdf.suffix == ".pdf" and pdf.read_bytes()[:5] == b"%PDF-"
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == ["fig09_gpa_relative_error.pdf"]
    # an existing figure is replaced only with force, and only a PDF by a PDF
    from colosim.errors import InputError

    with pytest.raises(InputError):
        rf.plot_file(tmp_path / "r.csv", tmp_path / "f", figures=[9], formats=("pdf",))
    rf.plot_file(tmp_path / "r.csv", tmp_path / "f", figures=[9], formats=("pdf",), force=True)
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "fig09_gpa_relative_error.pdf").write_text("my notes")
    with pytest.raises(InputError):
        rf.plot_file(tmp_path / "r.csv", tmp_path / "g", figures=[9], formats=("pdf",), force=True)
    assert (tmp_path / "g" / "fig09_gpa_relative_error.pdf").read_text() == "my notes"
    written, _ = rf.plot_file(tmp_path / "r.csv", tmp_path / "h", figures=[9], formats=("png", "svg", "pdf"))
    assert [p.suffix for p in written[9]] == [".png", ".svg", ".pdf"]
    for bad in ((), ("jpeg",)):
        with pytest.raises(InputError, match="format"):
            rf.plot_file(tmp_path / "r.csv", tmp_path / "i", figures=[9], formats=bad)
    assert not (tmp_path / "i").exists()


def _box_centres(ax):
    """x of each drawn median line (black, two points) of Figure 12's boxes."""
    out = []
    for line in ax.lines:
        x = line.get_xdata()
        if len(x) == 2 and line.get_color() == "black" and x[0] != x[1]:
            out.append(float(np.sqrt(x[0] * x[1])))
    return sorted(set(np.round(out, 6)))


def test_clairvoyance_axis_is_log_in_observations(rows):
    fig = rf.draw_fig12(rows, 1000)
    for ax in fig.axes:
        assert ax.get_xscale() == "log"
    label = fig.get_supxlabel()
    assert "observed realizations" in label and "R = 1,000" in label
    # levels 0.1 and 1 of R = 1,000: 100 and 1,000 observed realizations
    np.testing.assert_allclose(_box_centres(fig.axes[0]), [100, 1000])
    fig = rf.draw_fig12(rows, None)  # R unknown: the shares, on a log axis, and the label says so
    assert fig.axes[0].get_xscale() == "log"
    assert "R unknown" in fig.get_supxlabel()
    np.testing.assert_allclose(_box_centres(fig.axes[0]), [0.1, 1.0])


def test_compared_panels_share_their_y_scale(rows):
    for n in (10, 11, 12, 13):
        fig = DRAW[n](rows, 1000)
        axes = [ax for ax in fig.axes if ax.get_visible()]
        assert len(axes) >= 2, n
        fig.draw_without_rendering()
        for ax in axes[1:]:
            assert axes[0].get_shared_y_axes().joined(axes[0], ax), n
            assert ax.get_ylim() == pytest.approx(axes[0].get_ylim()), n
        # every value is inside the shared range (none clipped by a panel drawn first)
        top = max(np.max(line.get_ydata()) for ax in axes for line in ax.lines if len(line.get_ydata()))
        assert top <= axes[0].get_ylim()[1], n


def _stars(ax):
    return [line for line in ax.lines if line.get_marker() == PAPER_STYLE["marker"] and line.get_label()[:1] == "_"]


def test_paper_values_overlaid(rows):
    # the base case holds gpa:0.001, cantelli:4.4, perc:90, perc:99 (as the paper's claims) and perc:100 (max)
    ax = rf.draw_fig7(rows).axes[0]
    want = [PAPER_Q[s] for s in ("gpa:0.001", "cantelli:4.4", "perc:90", "max")]
    ys = sorted(float(line.get_ydata()[0]) for line in _stars(ax))
    positive = sorted(v for v in want if v > 0)
    assert len(ys) == len(want) and all(any(y == pytest.approx(v) for y in ys) for v in positive)
    assert any("paper" in t.get_text() for t in ax.get_figure().legends[0].get_texts())
    ax = rf.draw_fig9(rows).axes[0]
    [star] = _stars(ax)
    assert star.get_ydata()[0] == pytest.approx((PAPER_Q["gpa:0.001"] - 0.001) / 0.001)
    fig = rf.draw_fig10(rows)
    assert [float(s.get_ydata()[0]) for ax in fig.axes for s in _stars(ax)] == pytest.approx(
        [PAPER_MAX_AVG_Q[0.8], PAPER_MAX_AVG_Q[1.0]])
    fig = rf.draw_fig13(rows)
    best = [ax for ax in fig.axes if ax.get_title().startswith("best-fit")][0]
    assert {float(s.get_ydata()[0]) for s in _stars(best)} == {100 * PAPER_REBALANCING_GAIN["gpa"]}
    assert not any(_stars(ax) for ax in fig.axes if ax is not best)
    # away from the base case the paper's values do not apply
    off = [dict(r, capacity=0.5) for r in rows if r["capacity"] == 0.5]
    assert not _stars(rf.draw_fig7(off).axes[0])


def test_paper_values_are_the_claims():
    papers = {c.paper for c in evaluate_claims({})}
    for v in list(PAPER_Q.values()) + list(PAPER_MAX_AVG_Q.values()):
        assert v == 0 or fmt(v) in papers, v
    assert {f"{100 * g:.0f}%" for g in PAPER_REBALANCING_GAIN.values()} <= papers


def test_figure4_range_fits_the_data():
    bins = 50
    centroids = np.zeros((3, bins))
    centroids[:, :10] = 0.1  # every cluster below 0.2 of a machine
    edges = np.arange(bins + 1) / bins
    right = char.centroid_range(centroids, edges)
    assert 0.2 <= right <= 0.25
    fig = char.figure_clusters(centroids, np.array([0.5, 0.3, 0.2]))
    assert fig.axes[0].get_xlim() == pytest.approx((0, right))
    assert fig.axes[0].get_shared_y_axes().joined(fig.axes[0], fig.axes[1])
    centroids[0, -1] = 0.5  # a cluster reaching the top bin: the whole range
    assert char.centroid_range(centroids, edges) == 1.0


def test_figure6_median_visible():
    rng = np.random.default_rng(0)
    error = rng.normal(0, 0.02, size=(30, 3, 2))
    ax = char.figure_percentile_error([10, 20, 30], [90, 99], error).axes[0]
    boxes = [p for p in ax.patches]
    medians = [line for line in ax.lines if line.get_color() == "black" and line.get_linewidth() >= 2
               and len(line.get_xdata())]
    assert len(medians) >= 6 and all(m.get_zorder() > b.get_zorder() for m in medians for b in boxes)


def test_plan_frontier_legend_is_plain():
    from types import SimpleNamespace

    from colosim.figures.plan import frontier_figure

    def summary(q, m):
        return {"q_mean": q, "q_ci_high": 1.5 * q, "m_abs_mean": m, "m_abs_ci_low": m - 1, "m_abs_ci_high": m + 1}

    points = (("gpa", [(0.02, 30), (0.005, 34)], True), ("av", [(0.03, 29), (0.01, 33)], False))
    families = [SimpleNamespace(family=f, tried=[(f"{f}:{k}", summary(q, m)) for k, (q, m) in enumerate(pts)],
                                held_out=summary(*pts[-1]), chosen=SimpleNamespace(estimator=f"{f}:1", headroom=1.0),
                                meets=meets)
                for f, pts, meets in points]
    result = SimpleNamespace(per_machine=False, tasks=1000, families=families, target=0.01, slo=0.01, training=5,
                             held_out=5)
    fig = frontier_figure(result)
    legend = fig.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["gpa:1", "av:1 (misses)"]
    assert not legend.findobj(LineCollection)
    assert overlapping_texts(fig) == []
