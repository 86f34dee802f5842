"""Section 5 figures (paper Figures 7–13) from a sweep's results table.

A results table (SPEC §5) holds one row per instance × grid point. Which of
the paper's figures it supports depends on its grid: Figures 7–9 need several
estimators at one setting, Figure 10 both ``inst`` and ``avg`` data, Figure 11
several capacities, Figure 12 several clairvoyance levels, Figure 13 runs
with and without rebalancing. :func:`supported_figures` decides this from the
rows alone, and :func:`plot_results` draws every supported figure.

Every figure shows the spread over instances, as the paper does: box plots
(quartiles, whiskers at 1.5 IQR) or, in the (m, q) plane, the median with
inter-quartile bars in both directions and thin min–max bars. Where a grid
key is not the figure's subject, the figure uses the paper's base case
(Section 5.1: Best Fit, c = 1, full clairvoyance, inst data, rebalancing,
headroom 1) when the table holds it, else the first value the table lists.

Violation frequencies are drawn on a log axis. A q of 0 has no place there,
so zeros are drawn at a floor one decade below the smallest positive q of the
figure, marked by a dashed line labelled ``q = 0`` with the count of zero
values, never dropped.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..analysis.summary import rebalancing_gains
from ..errors import InputError
from ..io.atomic import atomic_path
from ..io.results import BASE_CASE, read_results
from ..model.estimators import ESTIMATORS, family
from ..model.estimators import label as estimator_label
from ..model.estimators import parameter as param
from ..model.grid import check_row
from ..progress import Progress, no_progress

#: one colour per estimator family, in the estimator table's order
TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
         "#bcbd22", "#17becf")
FAMILY_COLORS = {f: TAB10[i % len(TAB10)]
                 for i, f in enumerate(dict.fromkeys(kind.family for kind in ESTIMATORS.values()))}
FAMILY_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

Q_LABEL = "violation frequency q (share of machine-realizations over c)"
M_LABEL = "normalized machines m = m_abs / m_norm"


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
    draw: Callable[[list[dict]], Figure]


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
    """Log-scale q with zeros drawn at a visible floor."""

    def __init__(self, values):
        values = np.asarray(values, dtype=np.float64)
        positive = values[values > 0]
        smallest = positive.min() if positive.size else 1e-5
        self.floor = 10.0 ** (math.floor(math.log10(smallest)) - 1)
        self.zeros = int(np.count_nonzero(values == 0))
        self.total = int(values.size)

    def __call__(self, values):
        values = np.asarray(values, dtype=np.float64)
        return np.where(values > 0, values, self.floor)

    def decorate(self, ax, label=True, values=None):
        """Log scale, limits, and the marked floor; ``values`` (the panel's
        q values) sets the zero count shown, default the whole figure's."""
        zeros, total = self.zeros, self.total
        if values is not None:
            values = np.asarray(values, dtype=np.float64)
            zeros, total = int(np.count_nonzero(values == 0)), int(values.size)
        ax.set_yscale("log")
        if label:
            ax.set_ylabel(Q_LABEL)
        if zeros:
            lo, hi = ax.get_ylim()
            ax.set_ylim(self.floor / 3, max(hi, self.floor * 10))
            ax.axhline(self.floor, color="0.4", lw=0.8, ls="--", zorder=0)
            ax.annotate(f"q = 0 ({zeros} of {total} values drawn here)",
                        xy=(0.01, self.floor), xycoords=("axes fraction", "data"),
                        xytext=(0, 3), textcoords="offset points", fontsize=7, color="0.3")
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
    bp = ax.boxplot(data, positions=positions, widths=width, patch_artist=True,
                    manage_ticks=False, showfliers=True,
                    flierprops={"marker": ".", "markersize": 3, "markeredgecolor": color},
                    medianprops={"color": "black", "lw": 1.2})
    for patch in bp["boxes"]:
        patch.set_facecolor(color)
        patch.set_alpha(0.55)
    return bp


def _mq_figure(rows, title, fig_no):
    m = by_estimator(rows, "m")
    q = by_estimator(rows, "q")
    qa = QAxis(np.concatenate(list(q.values())))
    fig = Figure(figsize=(9, 5.8), layout="constrained")
    ax = fig.add_subplot()
    styles = _styles(m)
    for spec in m:
        color, marker = styles[spec]
        mv, qv = m[spec], qa(q[spec])
        mq1, mmed, mq3 = np.percentile(mv, [25, 50, 75])
        qq1, qmed, qq3 = np.percentile(qv, [25, 50, 75])
        ax.plot([mv.min(), mv.max()], [qmed, qmed], color=color, lw=0.6, alpha=0.6)
        ax.plot([mmed, mmed], [qv.min(), qv.max()], color=color, lw=0.6, alpha=0.6)
        ax.errorbar(mmed, qmed, xerr=[[mmed - mq1], [mq3 - mmed]], yerr=[[qmed - qq1], [qq3 - qmed]],
                    fmt=marker, color=color, ms=7, capsize=3, lw=1.6, label=estimator_label(spec))
        ax.annotate(estimator_label(spec), (mmed, qmed), xytext=(5, 4), textcoords="offset points",
                    fontsize=7, color=color)
    ax.set_xlabel(M_LABEL)
    qa.decorate(ax)
    n = len(unique(r["instance"] for r in rows))
    ax.set_title(f"Figure {fig_no} (paper §5.2): {title}\n"
                 f"median over {n} instances; bars: inter-quartile range (thick), min–max (thin)",
                 fontsize=10)
    fig.legend(loc="outside right center", fontsize=8, frameon=False)
    return fig


def draw_fig7(rows):
    return _mq_figure(_fig7_rows(rows), "machines used against capacity violations, every estimator", 7)


def draw_fig8(rows):
    return _mq_figure(_fig8_rows(rows), "machines against violations for GPA, av and perc", 8)


def draw_fig9(rows):
    rows = _fig9_rows(rows)
    q = by_estimator(rows, "q")
    specs = sorted(q, key=lambda s: -param(s))
    fig = Figure(figsize=(6.5, 4.5), layout="constrained")
    ax = fig.add_subplot()
    errors = [(q[s] - param(s)) / param(s) for s in specs]
    pos = np.arange(len(specs))
    _box(ax, errors, pos, FAMILY_COLORS["gpa"])
    ax.plot(pos, [(q[s].mean() - param(s)) / param(s) for s in specs], "k^", ms=6,
            label="error of the mean q")
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_xticks(pos, [f"ρ = {param(s):g}" for s in specs])
    ax.set_xlabel("GPA target violation probability ρ")
    ax.set_ylabel("relative error (q − ρ) / ρ  (0 = on target, −1 = q of 0)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title("Figure 9 (paper §5.2): GPA's measured q against its target ρ\n"
                 "box: quartiles over instances", fontsize=10)
    return fig


def draw_fig10(rows):
    rows = _fig10_rows(rows)
    headrooms = sorted(unique(r["headroom"] for r in rows))
    specs = unique(r["estimator"] for r in rows)
    qa = QAxis([r["q"] for r in rows])
    fig = Figure(figsize=(max(8, 0.75 * len(specs) + 2), 3.6 * len(headrooms) + 0.6), layout="constrained")
    colors = {"inst": "#1f77b4", "avg": "#ff7f0e"}
    for i, h in enumerate(headrooms):
        ax = fig.add_subplot(len(headrooms), 1, i + 1)
        for j, data in enumerate(("inst", "avg")):
            sub = [r for r in rows if r["headroom"] == h and r["data"] == data]
            q = by_estimator(sub, "q")
            have = [k for k, s in enumerate(specs) if s in q]
            if have:
                _box(ax, [qa(q[specs[k]]) for k in have], np.array(have) + (j - 0.5) * 0.38,
                     colors[data], width=0.34)
        ax.set_xticks(np.arange(len(specs)), [estimator_label(s) for s in specs], rotation=30, ha="right",
                      fontsize=8)
        qa.decorate(ax, label=False, values=[r["q"] for r in rows if r["headroom"] == h])
        ax.set_ylabel("violation frequency q")
        ax.set_title(f"bin size multiplier (headroom) e = {h:g}", fontsize=9)
        ax.legend(handles=[Patch(color=colors[d], alpha=0.55, label=f"estimated from {d} data")
                           for d in ("inst", "avg")], fontsize=8, loc="upper right")
    fig.suptitle("Figure 10 (paper §5.3): estimating from instantaneous (inst) or 5-minute average (avg) "
                 "usage\nq always counted on instantaneous usage; box: quartiles over instances", fontsize=10)
    return fig


def draw_fig11(rows):
    rows = _fig11_rows(rows)
    rebal = sorted(unique(r["rebalance"] for r in rows), reverse=True)
    caps = sorted(unique(r["capacity"] for r in rows))
    specs = unique(r["estimator"] for r in rows)
    colors = {s: TAB10[j % len(TAB10)] for j, s in enumerate(specs)}
    qa = QAxis([r["q"] for r in rows])
    fig = Figure(figsize=(max(8, 1.6 * len(caps) + 3), 3.8 * len(rebal) + 0.6), layout="constrained")
    width = 0.8 / len(specs)
    for i, rb in enumerate(rebal):
        ax = fig.add_subplot(len(rebal), 1, i + 1)
        for j, s in enumerate(specs):
            data, pos = [], []
            for k, c in enumerate(caps):
                v = [r["q"] for r in rows if r["rebalance"] == rb and r["capacity"] == c and r["estimator"] == s]
                if v:
                    data.append(qa(v))
                    pos.append(k - 0.4 + width * (j + 0.5))
            if data:
                _box(ax, data, pos, colors[s], width=width * 0.85)
        ax.set_xticks(np.arange(len(caps)), [f"{c:g}" for c in caps])
        ax.set_xlabel("machine capacity c (CPU; the trace's largest machine = 1)")
        qa.decorate(ax, label=False, values=[r["q"] for r in rows if r["rebalance"] == rb])
        ax.set_ylabel("violation frequency q")
        ax.set_title("with rebalancing" if rb else "without rebalancing", fontsize=9)
    fig.legend(handles=[Patch(color=colors[s], alpha=0.55, label=estimator_label(s)) for s in specs],
               fontsize=8, loc="outside right center", frameon=False)
    fig.suptitle("Figure 11 (paper §5.4): violations against machine capacity\n"
                 "box: quartiles over instances", fontsize=10)
    return fig


def draw_fig12(rows):
    rows = _fig12_rows(rows)
    specs = unique(r["estimator"] for r in rows)
    levels = sorted(unique(r["clairvoyance"] for r in rows))
    ncol = min(4, len(specs))
    nrow = math.ceil(len(specs) / ncol)
    fig = Figure(figsize=(3.3 * ncol + 0.5, 3.1 * nrow + 0.8), layout="constrained")
    for i, s in enumerate(specs):
        ax = fig.add_subplot(nrow, ncol, i + 1)
        sub = [r for r in rows if r["estimator"] == s]
        qa = QAxis([r["q"] for r in sub])
        data = [qa([r["q"] for r in sub if r["clairvoyance"] == lv]) for lv in levels]
        keep = [k for k, d in enumerate(data) if d.size]
        _box(ax, [data[k] for k in keep], keep, FAMILY_COLORS[family(s)])
        ax.set_xticks(np.arange(len(levels)), [f"{lv:g}" for lv in levels], rotation=45, fontsize=7)
        qa.decorate(ax, label=False)
        ax.set_title(estimator_label(s), fontsize=9)
        if i % ncol == 0:
            ax.set_ylabel("violation frequency q")
        if i // ncol == nrow - 1:
            ax.set_xlabel("clairvoyance (share of R observed)")
    fig.suptitle("Figure 12 (paper §5.5): violations against clairvoyance; each panel has its own q scale\n"
                 "box: quartiles over instances", fontsize=10)
    return fig


def draw_fig13(rows):
    rows = _fig13_rows(rows)
    gains = rebalancing_gains(rows)
    # table order, as the config lists them
    algorithms = [a for a in unique(r["algorithm"] for r in rows) if any(k[1] == a for k in gains)]
    specs = [s for s in unique(r["estimator"] for r in rows) if any(k[0] == s for k in gains)]
    n_inst = len(unique(r["instance"] for r in rows))
    fig = Figure(figsize=(max(7, 0.8 * len(specs) + 2), 3.8 * len(algorithms) + 0.6), layout="constrained")
    for i, alg in enumerate(algorithms):
        ax = fig.add_subplot(len(algorithms), 1, i + 1)
        have = [s for s in specs if (s, alg) in gains]
        pos = np.arange(len(have))
        for k, s in enumerate(have):
            _box(ax, [100 * gains[(s, alg)]], [k], FAMILY_COLORS[family(s)])
        ax.plot(pos, [100 * gains[(s, alg)].mean() for s in have], "k^", ms=6, label="mean")
        ax.axhline(0, color="0.3", lw=0.8)
        ax.set_xticks(pos, [f"{estimator_label(s)}\n(n={gains[(s, alg)].size})" for s in have], fontsize=8)
        ax.set_ylabel("relative gain (q_off − q_on) / q_off  [%]", fontsize=9)
        ax.set_title(f"{alg}; n = instances with q_off > 0 (of {n_inst})", fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle("Figure 13 (paper §5.6): relative decrease of q by rebalancing, paired per instance\n"
                 "perc, max and instances whose q without rebalancing is 0 omitted", fontsize=10)
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
}


def supported_figures(rows: list[dict]) -> dict[int, str | None]:
    """For every figure number, ``None`` when the rows support it, else the
    reason it cannot be drawn."""
    return {n: kind.why_not(rows) for n, kind in FIGURES.items()}


def save_figure(fig: Figure, out_dir: Path, stem: str, formats=("png", "svg")) -> list[Path]:
    """Render to memory, then write each format atomically."""
    paths = []
    # lay the figure out once, then keep that layout for every format
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    for fmt in formats:
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=130, metadata={"Date": None} if fmt == "svg" else None)
        target = Path(out_dir) / f"{stem}.{fmt}"
        with atomic_path(target) as tmp:
            tmp.write_bytes(buf.getvalue())
        paths.append(target)
    return paths


def figures_to_draw(rows: list[dict], figures=None) -> list[int]:
    """The figure numbers to draw: those given (each checked to be one of
    Figures 7–13 that the rows support, else an :class:`InputError` saying
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
                 progress: Progress = no_progress) -> dict[int, list[Path]]:
    """Draw the supported figures (all of them, or those numbered in
    ``figures``, see :func:`figures_to_draw`) into ``out_dir``; returns
    figure number → files written."""
    wanted = figures_to_draw(rows, figures)
    advance = progress("figures", len(wanted))
    out = {}
    for n in wanted:
        kind = FIGURES[n]
        fig = kind.draw(rows)
        out[n] = save_figure(fig, Path(out_dir), kind.stem, formats)
        advance(1)
    return out


def load_results(path) -> list[dict]:
    """The rows of a results table, every row checked; a table without rows
    is an :class:`InputError`."""
    rows = read_results(path, check_point=check_row)
    if not rows:
        raise InputError(f"{path}: results table has a header but no rows")
    return rows


def plot_file(path, out_dir, figures=None, progress: Progress = no_progress):
    """Draw Figures 7–13 from the results table at ``path`` (all it
    supports, or those numbered in ``figures``). Returns ``(written,
    skipped)``: figure number → files, and figure number → why it could not
    be drawn (for those not asked for by number)."""
    rows = load_results(path)
    support = supported_figures(rows)
    if figures is None and not any(why is None for why in support.values()):
        raise InputError(f"{path}: supports none of Figures 7-13 ("
                         + "; ".join(f"{n}: {why}" for n, why in support.items()) + ")")
    written = plot_results(rows, out_dir, figures=figures, progress=progress)
    skipped = {n: why for n, why in support.items() if why is not None and figures is None}
    return written, skipped
