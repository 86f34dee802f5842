"""Section 5 figures (paper Figures 7–13, and Figure 14 of CPU and memory
together, beyond the paper) from a sweep's results table.

A results table (SPEC §5) holds one row per instance × grid point. Which of
the paper's figures it supports depends on its grid: Figures 7–9 need several
estimators at one setting, Figure 10 both ``inst`` and ``avg`` data, Figure 11
several capacities, Figure 12 several clairvoyance levels, Figure 13 runs
with and without rebalancing. :func:`supported_figures` decides this from the
rows alone, and :func:`plot_results` draws every supported figure.

Every figure shows the spread over instances, as the paper does (box plots:
quartiles, whiskers at 1.5 IQR; in the (m, q) plane, pale inter-quartile
bands), and beside it the mean over instances with its 95% interval
(:func:`colosim.analysis.summary.summarize_point`: Student's t for m, the
Korn–Graubard interval for q), drawn as a marker with capped bars. The
interval of q needs the store's realization count (the sidecar's
``realizations``); without it the mean of q is drawn alone and the caption
says so. Where a grid key is not the figure's subject, the figure uses the
paper's base case (Section 5.1: Best Fit, c = 1, full clairvoyance, inst
data, rebalancing, headroom 1) when the table holds it, else the first value
the table lists.

Violation frequencies are drawn on a log axis. A q of 0 has no place there,
so zeros are drawn at a floor one decade below the smallest positive q (or
upper bound of an interval) of the figure, marked by a dashed line labelled
``q = 0`` with the count of zero values, never dropped. An interval whose
lower bound lies at or below the floor (0 included) is drawn down to the
floor and ends there in a downward caret: below that, only its upper bound
is drawn.
"""

from __future__ import annotations

import contextlib
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..analysis.summary import rebalancing_gains, summarize_point
from ..errors import InputError
from ..io.atomic import atomic_path
from ..io.outputs import Kind, claim, claim_dir, image_kind, lock
from ..io.results import BASE_CASE, meta_path, read_results
from ..model.estimators import ESTIMATORS, family, same_estimator
from ..model.estimators import label as estimator_label
from ..model.estimators import parameter as param
from ..model.grid import check_row, observation_split
from ..model.intervals import mean_interval
from ..progress import Progress, no_progress
from . import memory as memory_figure
from ._labels import label_right
from .paper import PAPER_MAX_AVG_Q, PAPER_Q, PAPER_REBALANCING_GAIN, PAPER_STYLE, Caption, caption_for

#: the formats a figure can be written in
FORMATS = ("png", "svg", "pdf")

#: one colour per estimator family, in the estimator table's order
TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
         "#bcbd22", "#17becf")
FAMILY_COLORS = {f: TAB10[i % len(TAB10)]
                 for i, f in enumerate(dict.fromkeys(kind.family for kind in ESTIMATORS.values()))}
FAMILY_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

Q_LABEL = "violation frequency q (share of machine-realizations over c)"
M_LABEL = "normalized machines m = m_abs / m_norm"

#: what every interval marker is, for captions and legends
MEAN_NOTE = "mean and 95% interval over instances"
#: the style of the mean-and-interval marker drawn over box plots
MEAN_STYLE = {"fmt": "D", "color": "black", "mfc": "white", "mec": "black", "ms": 4.5, "capsize": 3,
              "lw": 1.3, "capthick": 1.3, "zorder": 5}
#: the marker ending an interval cut at the q floor (matplotlib's CARETDOWN)
CUT_MARKER = 7
#: the caption line for a figure holding such an interval
CUT_NOTE = "a caret on the q = 0 line: the interval reaches down to 0 (or below the axis)"


# ---------------------------------------------------------------- selection


def unique(values) -> list:
    """Distinct values in order of first appearance."""
    seen, out = set(), []
    for v in values:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def reference(rows: list[dict]) -> dict:
    """Per grid key, the paper's base-case value when the table holds it,
    else the first value the table lists."""
    ref = {}
    for key in BASE_CASE:
        values = unique(r[key] for r in rows)
        ref[key] = BASE_CASE[key] if BASE_CASE[key] in values else values[0]
    return ref


def select(rows: list[dict], free=(), ref: dict | None = None, **fixed) -> list[dict]:
    """Rows whose grid keys equal the reference, except keys in ``free``
    (any value) and keys given in ``fixed``."""
    ref = reference(rows) if ref is None else ref
    want = {k: v for k, v in ref.items() if k not in free}
    want.update(fixed)
    return [r for r in rows if all(r[k] == v for k, v in want.items())]


def point_summary(rows: list[dict], realizations: int | None) -> dict:
    """Mean and 95% interval over instances of m and q for the rows of one
    grid point (:func:`~colosim.analysis.summary.summarize_point`). Without
    ``realizations`` the interval of q cannot be told: m's interval only,
    q's bounds NaN."""
    if realizations is not None:
        return summarize_point(rows, realizations)
    m = np.array([r["m"] for r in rows], dtype=np.float64)
    m_low, m_high = mean_interval(m, bounds=(0.0, math.inf))
    return {"instances": len(rows), "m_mean": float(m.mean()), "m_ci_low": m_low, "m_ci_high": m_high,
            "q_mean": float(np.mean([r["q"] for r in rows])), "q_ci_low": math.nan, "q_ci_high": math.nan}


def summaries(rows: list[dict], key, realizations: int | None) -> dict:
    """:func:`point_summary` per value of ``key(row)`` (in table order)."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    return {k: point_summary(rs, realizations) for k, rs in groups.items()}


def interval_note(realizations: int | None, with_m: bool = False) -> str:
    """What the interval markers show, for a caption (``with_m``: the
    figure draws m's interval, which needs no realization count)."""
    if realizations is None:
        drawn = "mean and 95% interval of m" if with_m else "mean"
        return f"{drawn} over instances (no interval of q: realization count unknown)"
    return MEAN_NOTE


def mean_label(realizations: int | None) -> str:
    """The legend entry of the mean-of-q marker."""
    return MEAN_NOTE if realizations is not None else "mean over instances"


def _cut_line(*axes: QAxis) -> str:
    """The caption's :data:`CUT_NOTE` line when one of ``axes`` needs it."""
    return f"\n{CUT_NOTE}" if any(qa.has_cut for qa in axes) else ""


def by_estimator(rows: list[dict], metric: str) -> dict[str, np.ndarray]:
    """Per estimator (in table order), the metric over instances."""
    out: dict[str, list] = {}
    for r in rows:
        out.setdefault(r["estimator"], []).append(r[metric])
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


# ---------------------------------------------------------------- figures


@dataclass(frozen=True)
class FigureKind:
    number: int
    stem: str
    title: str
    rows: Callable[[list[dict]], list[dict]]  # the rows the figure reads
    why_not: Callable[[list[dict]], str | None]  # None when drawable
    draw: Callable[..., Figure]  # (rows, the store's realization count, Caption)


def _fig7_rows(rows):
    return select(rows)


def _fig8_rows(rows):
    return [r for r in select(rows) if family(r["estimator"]) in ("gpa", "av", "perc")]


def _fig9_rows(rows):
    return [r for r in select(rows) if family(r["estimator"]) == "gpa"]


def _fig10_rows(rows):
    return select(rows, free=("data", "headroom"))


def _fig11_rows(rows):
    # numeric capacities only (a fleet is not a point of the capacity axis)
    return [r for r in select(rows, free=("capacity", "rebalance")) if isinstance(r["capacity"], float)]


def _fig12_rows(rows):
    return select(rows, free=("clairvoyance",))


def _fig13_rows(rows):
    return select(rows, free=("rebalance", "algorithm"))


def _fig14_rows(rows):
    return memory_figure.memory_rows(rows, select)


def _draw_fig14(rows, realizations=None, caption: Caption = Caption()):
    return memory_figure.draw_memory(_fig14_rows(rows), realizations, caption)


def _need_estimators(select_rows, what):
    def why_not(rows):
        return None if select_rows(rows) else f"no {what} at the base setting"
    return why_not


def _need_levels(select_rows, key, what):
    def why_not(rows):
        if len(unique(r[key] for r in select_rows(rows))) < 2:
            return f"needs at least two {what}"
        return None
    return why_not


def _fig13_why_not(rows):
    if len(unique(r["rebalance"] for r in _fig13_rows(rows))) < 2:
        return "needs runs with and without rebalancing"
    if not rebalancing_gains(_fig13_rows(rows)):
        return "no av, GPA or Cantelli run with a non-zero q without rebalancing"
    return None


class QAxis:
    """Log-scale q with zeros drawn at a visible floor, and intervals of
    the mean of q cut at that floor."""

    def __init__(self, values, highs=()):
        """``values``: the figure's q values; ``highs``: the upper bounds of
        the intervals it draws (NaN ignored), so that an interval of a mean
        of 0 reaches above the floor."""
        values = np.asarray(values, dtype=np.float64)
        highs = np.asarray(highs, dtype=np.float64)
        positive = np.concatenate([values[values > 0], highs[highs > 0]])
        smallest = positive.min() if positive.size else 1e-5
        self.floor = 10.0 ** (math.floor(math.log10(smallest)) - 1)
        self.zeros = int(np.count_nonzero(values == 0))
        self.total = int(values.size)
        self._cut: set[int] = set()  # the axes holding an interval cut at the floor

    def __call__(self, values):
        values = np.asarray(values, dtype=np.float64)
        return np.where(values > 0, values, self.floor)

    def interval(self, ax, x, mean, low, high, xerr=None, **style):
        """Draw the mean ``mean`` at ``x`` with its interval [low, high]
        (just the mean when the bounds are NaN): a lower bound at or below
        the floor is drawn at the floor, ending in a downward caret.
        ``xerr`` and ``style`` go to :meth:`~matplotlib.axes.Axes.errorbar`."""
        y = float(self(mean))
        if math.isnan(low) or math.isnan(high):
            return ax.errorbar(x, y, xerr=xerr, **style)
        lo = max(low, self.floor)
        cut = low <= self.floor and y > self.floor  # a mean of 0: the marker at the floor says so
        hi = max(high, y)
        container = ax.errorbar(x, y, xerr=xerr, yerr=[[y - lo], [hi - y]], **style)
        if cut:
            self._cut.add(id(ax))
            ax.plot([x], [self.floor], ls="none", marker=CUT_MARKER, ms=6, color=style.get("color", "black"),
                    zorder=style.get("zorder", 2))
        return container

    @property
    def has_cut(self) -> bool:
        """Whether an interval was cut at the floor (see :data:`CUT_NOTE`)."""
        return bool(self._cut)

    def decorate(self, ax, label=True, values=None):
        """Log scale, limits, and the marked floor; ``values`` (the panel's
        q values) sets the zero count shown, default the whole figure's."""
        zeros, total = self.zeros, self.total
        if values is not None:
            values = np.asarray(values, dtype=np.float64)
            zeros, total = int(np.count_nonzero(values == 0)), int(values.size)
        cut = id(ax) in self._cut
        ax.set_yscale("log")
        if label:
            ax.set_ylabel(Q_LABEL)
        if zeros or cut:
            lo, hi = ax.get_ylim()
            ax.set_ylim(self.floor / 3, max(hi, self.floor * 10))
            ax.axhline(self.floor, color="0.4", lw=0.8, ls="--", zorder=0)
            ax.annotate(f"q = 0 ({zeros} of {total} values drawn here)" if zeros else "q = 0",
                        xy=(0.01, self.floor), xycoords=("axes fraction", "data"), va="top",
                        xytext=(0, -2), textcoords="offset points", fontsize=7, color="0.3")
        ax.grid(True, which="major", axis="y", alpha=0.3)


def _styles(specs):
    """Colour by family, marker by rank within the family."""
    seen: dict[str, int] = {}
    out = {}
    for s in specs:
        f = family(s)
        i = seen.get(f, 0)
        seen[f] = i + 1
        out[s] = (FAMILY_COLORS[f], FAMILY_MARKERS[i % len(FAMILY_MARKERS)])
    return out


def _box(ax, data, positions, color, width=0.6):
    # whiskers in the box's colour, so that the black interval of the mean stands out
    line = {"color": color, "lw": 1.0}
    bp = ax.boxplot(data, positions=positions, widths=width, patch_artist=True,
                    manage_ticks=False, showfliers=True,
                    flierprops={"marker": ".", "markersize": 3, "markeredgecolor": color},
                    whiskerprops=line, capprops=line,
                    medianprops={"color": "black", "lw": 1.2})
    for patch in bp["boxes"]:
        patch.set_facecolor(color)
        patch.set_alpha(0.55)
    return bp


def _mean_handle(label=MEAN_NOTE):
    """A legend entry for the mean-and-interval marker over box plots (the
    marker alone: no bars, no caps)."""
    return Line2D([], [], ls="none", marker=MEAN_STYLE["fmt"], color="black", mfc="white", ms=MEAN_STYLE["ms"],
                  label=label)


def _paper_handle(label="paper"):
    return Line2D([], [], **PAPER_STYLE, label=label)


def _highs(summary: dict) -> list[float]:
    return [s["q_ci_high"] for s in summary.values()]


def _at_base(rows, keys) -> bool:
    """Whether ``rows`` are at the paper's base case for ``keys`` (where the
    paper's values apply)."""
    return bool(rows) and all(r[k] == BASE_CASE[k] for r in rows for k in keys)


def _paper_q(spec: str) -> float | None:
    for s, v in PAPER_Q.items():
        if same_estimator(s, spec):
            return v
    return None


def _mq_figure(rows, text, fig_no, realizations=None, caption: Caption = Caption()):
    m = by_estimator(rows, "m")
    q = by_estimator(rows, "q")
    means = summaries(rows, lambda r: r["estimator"], realizations)
    paper = {s: v for s in m if (v := _paper_q(s)) is not None} if _at_base(rows, BASE_CASE) else {}
    qa = QAxis(np.concatenate(list(q.values())), _highs(means) + list(paper.values()))
    fig = Figure(figsize=(9, 6.4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    styles = _styles(m)
    labels, handles = [], []
    for spec in m:
        color, marker = styles[spec]
        s = means[spec]
        mv, qv = m[spec], qa(q[spec])
        mq1, mq3 = np.percentile(mv, [25, 75])
        qq1, qq3 = np.percentile(qv, [25, 75])
        m_mean, q_mean = s["m_mean"], float(qa(s["q_mean"]))
        # the spread over instances: broad pale inter-quartile bands through the mean
        band = {"color": color, "lw": 7, "alpha": 0.18, "solid_capstyle": "butt", "zorder": 1}
        ax.plot([mq1, mq3], [q_mean, q_mean], **band)
        ax.plot([m_mean, m_mean], [qq1, qq3], **band)
        xerr = None if math.isnan(s["m_ci_low"]) else [[m_mean - s["m_ci_low"]], [s["m_ci_high"] - m_mean]]
        qa.interval(ax, m_mean, s["q_mean"], s["q_ci_low"], s["q_ci_high"], xerr=xerr, fmt=marker, color=color,
                    ms=7, capsize=3, lw=1.6, label=estimator_label(spec))
        handles.append(Line2D([], [], ls="none", marker=marker, color=color, ms=7, label=estimator_label(spec)))
        labels.append((m_mean, q_mean, estimator_label(spec), color))
        if spec in paper:
            ax.plot([m_mean], [float(qa(paper[spec]))], **PAPER_STYLE)
    if paper:
        handles.append(_paper_handle("paper's mean q (§5.2), at colosim's m"))
    handles.append(Line2D([], [], color="0.5", lw=7, alpha=0.3, label="inter-quartile range over instances"))
    ax.set_xlabel(M_LABEL)
    qa.decorate(ax)
    n = len(unique(r["instance"] for r in rows))
    if caption.title:
        ax.set_title(caption.heading(fig_no, "§5.2", text) + "\n"
                     f"marker and capped bars: {interval_note(realizations, with_m=True)} (n = {n})\n"
                     "pale bands: inter-quartile range over instances" + _cut_line(qa), fontsize=10)
    fig.legend(handles=handles, loc="outside lower center", fontsize=8, frameon=False, ncols=4)
    # direct labels at the right edge, spread apart once the axes' size is known
    fig.draw_without_rendering()
    label_right(ax, labels)
    return fig


def draw_fig7(rows, realizations=None, caption: Caption = Caption()):
    return _mq_figure(_fig7_rows(rows), "machines used against capacity violations, every estimator", 7,
                      realizations, caption)


def draw_fig8(rows, realizations=None, caption: Caption = Caption()):
    return _mq_figure(_fig8_rows(rows), "machines against violations for GPA, av and perc", 8, realizations,
                      caption)


def draw_fig9(rows, realizations=None, caption: Caption = Caption()):
    rows = _fig9_rows(rows)
    q = by_estimator(rows, "q")
    means = summaries(rows, lambda r: r["estimator"], realizations)
    specs = sorted(q, key=lambda s: -param(s))
    fig = Figure(figsize=(6.5, 4.8), layout="constrained")
    ax = fig.add_subplot()
    errors = [(q[s] - param(s)) / param(s) for s in specs]
    pos = np.arange(len(specs))
    _box(ax, errors, pos, FAMILY_COLORS["gpa"])
    what = "error of the mean q" + (", 95% interval" if realizations is not None else "")
    handles = [Line2D([], [], ls="none", marker="^", color="black", ms=6, label=what)]
    base = _at_base(rows, BASE_CASE)
    for k, s in enumerate(specs):
        rho, m = param(s), means[s]
        err = (m["q_mean"] - rho) / rho
        low, high = (m["q_ci_low"] - rho) / rho, (m["q_ci_high"] - rho) / rho
        yerr = None if math.isnan(low) else [[err - low], [high - err]]
        ax.errorbar(k, err, yerr=yerr, label=what if k == 0 else None,
                    **{**MEAN_STYLE, "fmt": "^", "mfc": "black", "ms": 6})
        if base and (pq := _paper_q(s)) is not None:
            ax.plot([k], [(pq - rho) / rho], **PAPER_STYLE)
            if len(handles) == 1:
                handles.append(_paper_handle("paper's error of the mean q (§5.2)"))
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_xticks(pos, [f"ρ = {param(s):g}" for s in specs])
    ax.set_xlabel("GPA target violation probability ρ")
    ax.set_ylabel("relative error (q − ρ) / ρ  (0 = on target, −1 = q of 0)")
    ax.legend(handles=handles, fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    if caption.title:
        ax.set_title(caption.heading(9, "§5.2", "GPA's measured q against its target ρ") + "\n"
                     f"box: quartiles over instances\ntriangle and bars: {interval_note(realizations)}",
                     fontsize=10)
    return fig


def draw_fig10(rows, realizations=None, caption: Caption = Caption()):
    rows = _fig10_rows(rows)
    headrooms = sorted(unique(r["headroom"] for r in rows))
    specs = unique(r["estimator"] for r in rows)
    means = summaries(rows, lambda r: (r["headroom"], r["data"], r["estimator"]), realizations)
    keys = [k for k in BASE_CASE if k not in ("data", "headroom")]
    paper = ({h: v for h, v in PAPER_MAX_AVG_Q.items() if h in headrooms}
             if _at_base(rows, keys) and any(family(s) == "max" for s in specs) else {})
    qa = QAxis([r["q"] for r in rows], _highs(means) + list(paper.values()))
    fig = Figure(figsize=(max(8, 0.75 * len(specs) + 2), 3.6 * len(headrooms) + 0.8), layout="constrained")
    colors = {"inst": "#1f77b4", "avg": "#ff7f0e"}
    first, panels = None, []
    for i, h in enumerate(headrooms):
        ax = fig.add_subplot(len(headrooms), 1, i + 1, sharey=first)
        first = first or ax
        for j, data in enumerate(("inst", "avg")):
            sub = [r for r in rows if r["headroom"] == h and r["data"] == data]
            q = by_estimator(sub, "q")
            have = [k for k, s in enumerate(specs) if s in q]
            if have:
                pos = np.array(have) + (j - 0.5) * 0.38
                _box(ax, [qa(q[specs[k]]) for k in have], pos, colors[data], width=0.34)
                for k, x in zip(have, pos):
                    s = means[(h, data, specs[k])]
                    qa.interval(ax, x, s["q_mean"], s["q_ci_low"], s["q_ci_high"], **MEAN_STYLE)
                    if data == "avg" and h in paper and family(specs[k]) == "max":
                        ax.plot([x], [float(qa(paper[h]))], **PAPER_STYLE)
        ax.set_xticks(np.arange(len(specs)), [estimator_label(s) for s in specs], rotation=30, ha="right",
                      fontsize=8)
        panels.append((ax, [r["q"] for r in rows if r["headroom"] == h]))
        ax.set_ylabel("violation frequency q")
        ax.set_title(f"bin size multiplier (headroom) e = {h:g}", fontsize=9)
        ax.legend(handles=[Patch(color=colors[d], alpha=0.55, label=f"estimated from {d} data")
                           for d in ("inst", "avg")] + [_mean_handle(mean_label(realizations))]
                  + ([_paper_handle("paper: max from avg data (§5.3)")] if paper else []), fontsize=8,
                  loc="upper right")
    for ax, values in panels:  # once every panel is drawn: the shared q scale spans them all
        qa.decorate(ax, label=False, values=values)
    if caption.title:
        fig.suptitle(caption.heading(10, "§5.3", "estimating from instantaneous (inst) or 5-minute average (avg) "
                                     "usage") + "\nq always counted on instantaneous usage; box: quartiles over "
                     f"instances\ndiamond and bars: {interval_note(realizations)}" + _cut_line(qa), fontsize=10)
    return fig


def draw_fig11(rows, realizations=None, caption: Caption = Caption()):
    rows = _fig11_rows(rows)
    rebal = sorted(unique(r["rebalance"] for r in rows), reverse=True)
    caps = sorted(unique(r["capacity"] for r in rows))
    specs = unique(r["estimator"] for r in rows)
    colors = {s: TAB10[j % len(TAB10)] for j, s in enumerate(specs)}
    means = summaries(rows, lambda r: (r["rebalance"], r["capacity"], r["estimator"]), realizations)
    qa = QAxis([r["q"] for r in rows], _highs(means))
    fig = Figure(figsize=(max(8, 1.6 * len(caps) + 3), 3.8 * len(rebal) + 0.6), layout="constrained")
    width = 0.8 / len(specs)
    first, panels = None, []
    for i, rb in enumerate(rebal):
        ax = fig.add_subplot(len(rebal), 1, i + 1, sharey=first)
        first = first or ax
        for j, s in enumerate(specs):
            data, pos, point = [], [], []
            for k, c in enumerate(caps):
                v = [r["q"] for r in rows if r["rebalance"] == rb and r["capacity"] == c and r["estimator"] == s]
                if v:
                    data.append(qa(v))
                    pos.append(k - 0.4 + width * (j + 0.5))
                    point.append(means[(rb, c, s)])
            if data:
                _box(ax, data, pos, colors[s], width=width * 0.85)
                for x, m in zip(pos, point):
                    qa.interval(ax, x, m["q_mean"], m["q_ci_low"], m["q_ci_high"], **MEAN_STYLE)
        ax.set_xticks(np.arange(len(caps)), [f"{c:g}" for c in caps])
        ax.set_xlabel("machine capacity c (CPU; the trace's largest machine = 1)")
        panels.append((ax, [r["q"] for r in rows if r["rebalance"] == rb]))
        ax.set_ylabel("violation frequency q")
        ax.set_title("with rebalancing" if rb else "without rebalancing", fontsize=9)
    fig.legend(handles=[Patch(color=colors[s], alpha=0.55, label=estimator_label(s)) for s in specs]
               + [_mean_handle(mean_label(realizations).replace(" over", "\nover").replace("interval ", "interval\n"))],
               fontsize=8, loc="outside right center", frameon=False)
    for ax, values in panels:
        qa.decorate(ax, label=False, values=values)
    if caption.title:
        fig.suptitle(caption.heading(11, "§5.4", "violations against machine capacity") + "\nbox: quartiles over "
                     f"instances; diamond and bars: {interval_note(realizations)}" + _cut_line(qa), fontsize=10)
    return fig


def _log_box(ax, values, x, half, color):
    """A box plot (quartiles, whiskers at 1.5 IQR, fliers) at ``x`` on a log
    x axis, ``half`` decades wide on each side."""
    from matplotlib.cbook import boxplot_stats

    [st] = boxplot_stats(np.asarray(values, dtype=np.float64), whis=1.5)
    lo, hi = x / 10 ** half, x * 10 ** half
    ax.fill_between([lo, hi], st["q1"], st["q3"], color=color, alpha=0.55, lw=0, zorder=2)
    ax.plot([lo, hi, hi, lo, lo], [st["q1"], st["q1"], st["q3"], st["q3"], st["q1"]], color=color, lw=1.0, zorder=2)
    ax.plot([lo, hi], [st["med"]] * 2, color="black", lw=1.2, zorder=3)
    cap_lo, cap_hi = x / 10 ** (half / 2), x * 10 ** (half / 2)
    for a, b in ((st["whislo"], st["q1"]), (st["q3"], st["whishi"])):
        ax.plot([x, x], [a, b], color=color, lw=1.0, zorder=2)
    for w in (st["whislo"], st["whishi"]):
        ax.plot([cap_lo, cap_hi], [w, w], color=color, lw=1.0, zorder=2)
    if len(st["fliers"]):
        ax.plot(np.full(len(st["fliers"]), x), st["fliers"], ls="none", marker=".", ms=3, color=color)


def clairvoyance_positions(levels, realizations: int | None) -> tuple[list[float], str]:
    """The x of each clairvoyance level, and the axis label: observed
    realizations (clairvoyance × R, as the sweep splits them) when R is
    known, else the shares themselves."""
    if realizations is None:
        return [float(lv) for lv in levels], "clairvoyance (share of R observed; R unknown, so not in observations)"
    return ([float(observation_split(lv, realizations)[0]) for lv in levels],
            f"observed realizations (clairvoyance × R, R = {realizations:,})")


def draw_fig12(rows, realizations=None, caption: Caption = Caption()):
    rows = _fig12_rows(rows)
    specs = unique(r["estimator"] for r in rows)
    levels = sorted(unique(r["clairvoyance"] for r in rows))
    xs, xlabel = clairvoyance_positions(levels, realizations)
    logs = np.log10(xs)
    gaps = np.diff(logs)
    # each box as wide as its nearer neighbour allows, at most 0.12 decades each side
    half = [min(0.12, 0.35 * min([g for g in (gaps[k - 1] if k else None, gaps[k] if k < len(gaps) else None)
                                    if g is not None] or [1.0])) for k in range(len(xs))]
    means = summaries(rows, lambda r: (r["estimator"], r["clairvoyance"]), realizations)
    qa = QAxis([r["q"] for r in rows], _highs(means))  # one q scale: the panels are compared
    ncol = min(4, len(specs))
    nrow = math.ceil(len(specs) / ncol)
    fig = Figure(figsize=(3.3 * ncol + 0.5, 3.1 * nrow + 0.8), layout="constrained")
    first, panels = None, []
    for i, s in enumerate(specs):
        ax = fig.add_subplot(nrow, ncol, i + 1, sharey=first, sharex=first)
        first = first or ax
        sub = [r for r in rows if r["estimator"] == s]
        for k, lv in enumerate(levels):
            v = [r["q"] for r in sub if r["clairvoyance"] == lv]
            if not v:
                continue
            _log_box(ax, qa(v), xs[k], half[k], FAMILY_COLORS[family(s)])
            m = means[(s, lv)]
            qa.interval(ax, xs[k], m["q_mean"], m["q_ci_low"], m["q_ci_high"], **MEAN_STYLE)
        ax.set_xscale("log")
        ax.set_xlim(xs[0] / 10 ** (half[0] + 0.15), xs[-1] * 10 ** (half[-1] + 0.15))
        panels.append((ax, [r["q"] for r in sub]))
        ax.set_title(estimator_label(s), fontsize=9)
        if i % ncol == 0:
            ax.set_ylabel("violation frequency q")
    for ax, values in panels:
        qa.decorate(ax, label=False, values=values)
    fig.supxlabel(xlabel + "; log scale", fontsize=9)  # one label for every panel's shared x axis
    if caption.title:
        shares = ", ".join(f"{lv:g}" for lv in levels)
        fig.suptitle(caption.heading(12, "§5.5", "violations against clairvoyance") + f" (shares of R: {shares})\n"
                     f"box: quartiles over instances; diamond and bars: {interval_note(realizations)}"
                     + _cut_line(qa), fontsize=10)
    return fig


def draw_fig13(rows, realizations=None, caption: Caption = Caption()):
    # the gains' interval is Student's t over instances: no realization count needed
    rows = _fig13_rows(rows)
    gains = rebalancing_gains(rows)
    # table order, as the config lists them
    algorithms = [a for a in unique(r["algorithm"] for r in rows) if any(k[1] == a for k in gains)]
    specs = [s for s in unique(r["estimator"] for r in rows) if any(k[0] == s for k in gains)]
    n_inst = len(unique(r["instance"] for r in rows))
    base = _at_base(rows, [k for k in BASE_CASE if k not in ("rebalance", "algorithm")])
    fig = Figure(figsize=(max(7, 0.8 * len(specs) + 2), 3.8 * len(algorithms) + 0.6), layout="constrained")
    first = None
    for i, alg in enumerate(algorithms):
        ax = fig.add_subplot(len(algorithms), 1, i + 1, sharey=first)
        first = first or ax
        have = [s for s in specs if (s, alg) in gains]
        pos = np.arange(len(have))
        handles = [Line2D([], [], ls="none", marker="^", color="black", ms=6, label=MEAN_NOTE)]
        for k, s in enumerate(have):
            g = 100 * gains[(s, alg)]
            _box(ax, [g], [k], FAMILY_COLORS[family(s)])
            low, high = mean_interval(g)
            yerr = None if math.isnan(low) else [[g.mean() - low], [high - g.mean()]]
            ax.errorbar(k, g.mean(), yerr=yerr, label=MEAN_NOTE if k == 0 else None,
                        **{**MEAN_STYLE, "fmt": "^", "mfc": "black", "ms": 6})
            if base and alg == BASE_CASE["algorithm"] and family(s) in PAPER_REBALANCING_GAIN:
                ax.plot([k], [100 * PAPER_REBALANCING_GAIN[family(s)]], **PAPER_STYLE)
                if len(handles) == 1:
                    handles.append(_paper_handle("paper: mean gain of the family, GPA and av (§5.6)"))
        ax.axhline(0, color="0.3", lw=0.8)
        ax.set_xticks(pos, [f"{estimator_label(s)}\n(n={gains[(s, alg)].size})" for s in have], fontsize=8)
        ax.set_ylabel("relative gain (q_off − q_on) / q_off  [%]", fontsize=9)
        ax.set_title(f"{alg}; n = instances with q_off > 0 (of {n_inst})", fontsize=9)
        ax.legend(handles=handles, fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    if caption.title:
        fig.suptitle(caption.heading(13, "§5.6", "relative decrease of q by rebalancing, paired per instance")
                     + "\nperc, max and instances whose q without rebalancing is 0 omitted\n"
                     f"box: quartiles over instances\ntriangle and bars: {MEAN_NOTE} (none for n < 2)", fontsize=10)
    return fig


FIGURES: dict[int, FigureKind] = {
    7: FigureKind(7, "fig07_m_vs_q", "machines vs violations, every estimator", _fig7_rows,
                  _need_estimators(_fig7_rows, "estimator"), draw_fig7),
    8: FigureKind(8, "fig08_m_vs_q_gpa_av_perc", "machines vs violations, GPA, av, perc", _fig8_rows,
                  _need_estimators(_fig8_rows, "GPA, av or perc estimator"), draw_fig8),
    9: FigureKind(9, "fig09_gpa_relative_error", "GPA relative error (q - rho)/rho", _fig9_rows,
                  _need_estimators(_fig9_rows, "GPA estimator"), draw_fig9),
    10: FigureKind(10, "fig10_inst_vs_avg", "q estimated from inst vs avg data", _fig10_rows,
                   _need_levels(_fig10_rows, "data", "kinds of data (inst and avg)"), draw_fig10),
    11: FigureKind(11, "fig11_q_vs_capacity", "q against capacity, with and without rebalancing", _fig11_rows,
                   _need_levels(_fig11_rows, "capacity", "capacities"), draw_fig11),
    12: FigureKind(12, "fig12_q_vs_clairvoyance", "q against clairvoyance", _fig12_rows,
                   _need_levels(_fig12_rows, "clairvoyance", "clairvoyance levels"), draw_fig12),
    13: FigureKind(13, "fig13_rebalancing_gain", "relative gain of rebalancing", _fig13_rows,
                   _fig13_why_not, draw_fig13),
    # beyond the paper: CPU and memory together (docs/memory.md)
    14: FigureKind(14, "fig14_memory", "machines and violations with memory packed too", _fig14_rows,
                   memory_figure.why_not, _draw_fig14),
}


def supported_figures(rows: list[dict]) -> dict[int, str | None]:
    """For every figure number, ``None`` when the rows support it, else the
    reason it cannot be drawn."""
    return {n: kind.why_not(rows) for n, kind in FIGURES.items()}


def check_formats(formats) -> tuple[str, ...]:
    """``formats`` as a tuple of distinct names from :data:`FORMATS`
    (case ignored); none, or an unknown one, is an :class:`InputError`."""
    if isinstance(formats, str):
        formats = [f for f in formats.split(",") if f.strip()]
    out = tuple(dict.fromkeys(str(f).strip().lower() for f in formats))
    if not out:
        raise InputError(f"no figure format given (choose from {', '.join(FORMATS)})")
    for f in out:
        if f not in FORMATS:
            raise InputError(f"figure format {f!r} unknown (choose from {', '.join(FORMATS)})")
    return out


#: what may be replaced at a figure's PDF path: a PDF document
def _is_pdf(path: Path) -> bool:
    if not path.is_file():
        return False
    with path.open("rb") as f:
        return f.read(5) == b"%PDF-"


PDF = Kind("PDF document", _is_pdf)


def figure_kind(path: Path) -> Kind:
    """The kind of a figure file by its suffix (PNG, SVG or PDF)."""
    return PDF if Path(path).suffix.lower() == ".pdf" else image_kind(path)


def save_figure(fig: Figure, out_dir: Path, stem: str, formats=("png", "svg")) -> list[Path]:
    """Render to memory, then write each format atomically."""
    formats = check_formats(formats)
    paths = []
    # lay the figure out once, then keep that layout for every format
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    for fmt in formats:
        buf = io.BytesIO()
        meta = {"Date": None} if fmt == "svg" else {"CreationDate": None} if fmt == "pdf" else None
        fig.savefig(buf, format=fmt, dpi=130, metadata=meta)
        target = Path(out_dir) / f"{stem}.{fmt}"
        with atomic_path(target) as tmp:
            tmp.write_bytes(buf.getvalue())
        paths.append(target)
    return paths


def figures_to_draw(rows: list[dict], figures=None) -> list[int]:
    """The figure numbers to draw: those given (each checked to be one of
    Figures 7–14 that the rows support, else an :class:`InputError` saying
    why), or every supported one."""
    support = supported_figures(rows)
    if figures is None:
        return [n for n, why in support.items() if why is None]
    wanted = list(dict.fromkeys(figures))
    for n in wanted:
        if n not in FIGURES:
            raise InputError(f"no Figure {n} in Section 5 (known: {', '.join(map(str, FIGURES))})")
        if support[n] is not None:
            raise InputError(f"Figure {n} cannot be drawn from these results: {support[n]}")
    return wanted


def plot_results(rows: list[dict], out_dir, figures=None, formats=("png", "svg"),
                 progress: Progress = no_progress, realizations: int | None = None,
                 config=None, title: bool = True) -> dict[int, list[Path]]:
    """Draw the supported figures (all of them, or those numbered in
    ``figures``, see :func:`figures_to_draw`) into ``out_dir``; returns
    figure number → files written. ``realizations``, the store's
    realization count, gives the intervals of q (and Figure 12's axis in
    observations); without it q's mean is drawn alone. ``config`` (a path
    or name, or a :class:`~colosim.figures.paper.Caption`) titles the
    figures (:func:`~colosim.figures.paper.caption_for`: as the paper's
    figure only for the paper's configs); ``title=False`` draws no titles;
    ``formats``: any of png, svg, pdf."""
    formats = check_formats(formats)
    caption = config if isinstance(config, Caption) else caption_for(config, title=title)
    wanted = figures_to_draw(rows, figures)
    advance = progress("figures", len(wanted))
    out = {}
    for n in wanted:
        kind = FIGURES[n]
        fig = kind.draw(rows, realizations, caption)
        out[n] = save_figure(fig, Path(out_dir), kind.stem, formats)
        advance(1)
    return out


def load_results(path) -> list[dict]:
    """The rows of a results table, every row checked (as the sweep reads
    them: the schema, the grid keys' meaning, every (instance, grid point)
    once); a table without rows is an :class:`InputError`."""
    rows = read_results(path, check_point=check_row)
    if not rows:
        raise InputError(f"{path}: results table has a header but no rows")
    return rows


def sidecar_realizations(path) -> int | None:
    """The realization count recorded in the sidecar of the results table
    at ``path``; None without a sidecar or one without it (an earlier
    colosim's). A sidecar that is not a colosim results sidecar (not a
    regular file, not a JSON object of that format), or a count that is not
    a positive integer, is an :class:`InputError`."""
    from ..io.results import read_sidecar

    meta, problem = read_sidecar(path)
    if problem is not None:
        raise InputError(problem)
    value = None if meta is None else meta.get("realizations")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{meta_path(Path(path))}: realizations {value!r} is not a positive integer")
    return value


def figure_paths(out_dir, numbers, formats=("png", "svg")) -> list[Path]:
    """The files :func:`plot_results` writes for these figures."""
    return [Path(out_dir) / f"{FIGURES[n].stem}.{fmt}" for n in numbers for fmt in check_formats(formats)]


def sidecar_caption(path, title: bool = True) -> Caption:
    """The caption of the results table at ``path``: by the config its
    sidecar names (:func:`~colosim.figures.paper.caption_for`), else by the
    table's file name."""
    from ..io.results import read_sidecar, sidecar_config_path

    meta, _ = read_sidecar(path)
    return caption_for(sidecar_config_path(meta), results=path, title=title)


def plot_file(path, out_dir, figures=None, progress: Progress = no_progress, force: bool = False,
              formats=("png", "svg"), title: bool = True):
    """Draw Figures 7–14 from the results table at ``path`` (all it
    supports, or those numbered in ``figures``); the intervals of q use the
    realization count of its sidecar (:func:`sidecar_realizations`).

    Every input is checked, and every output claimed
    (:func:`colosim.io.outputs.claim`: ``out_dir`` a folder that is not an
    input, each figure file not an input, an existing one replaced only
    with ``force`` and only when it is an image of its kind), before
    anything is drawn or written; each figure file is locked while the run
    writes. Returns ``(written, skipped)``: figure number → files, and
    figure number → why it could not be drawn (for those not asked for by
    number). ``formats``: any of png, svg, pdf; ``title=False``: no
    titles. The figures are titled by the config the sidecar names (as the
    paper's figures only for the paper's configs), else by the table's
    file name. An :class:`InputError`'s message has its control characters
    escaped (it may quote the file)."""
    from ..errors import printable

    try:
        return _plot_file(Path(path), out_dir, figures, progress, force, check_formats(formats), title)
    except InputError as exc:
        raise InputError(printable(exc)) from None


def _plot_file(path: Path, out_dir, figures, progress: Progress, force: bool, formats, title: bool):
    rows = load_results(path)
    realizations = sidecar_realizations(path)
    caption = sidecar_caption(path, title)
    support = supported_figures(rows)
    if figures is None and not any(why is None for why in support.values()):
        raise InputError(f"{path}: supports none of Figures 7-14 ("
                         + "; ".join(f"{n}: {why}" for n, why in support.items()) + ")")
    wanted = figures_to_draw(rows, figures)
    inputs = [path, meta_path(path)]
    out_dir = claim_dir(out_dir, inputs=inputs)
    targets = figure_paths(out_dir, wanted, formats)
    for target in targets:
        claim(target, kind=figure_kind(target), inputs=inputs, force=force)
    made = not out_dir.exists()
    try:
        with contextlib.ExitStack() as stack:
            for target in targets:
                stack.enter_context(lock(target, can_wait=False))
            written = plot_results(rows, out_dir, figures=wanted, formats=formats, progress=progress,
                                   realizations=realizations, config=caption)
    except BaseException:
        if made:  # a folder this run made and left empty
            with contextlib.suppress(OSError):
                out_dir.rmdir()
        raise
    skipped = {n: why for n, why in support.items() if why is not None and figures is None}
    return written, skipped
