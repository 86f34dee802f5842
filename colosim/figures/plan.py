"""The frontier figure of ``colosim plan``: machines against violations for
every family's probes, with the target line."""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import ScalarFormatter

from .characterization import save_png
from .results import FAMILY_COLORS


def frontier_figure(result) -> Figure:
    """Each family's probes on the training instances (small markers, joined
    in order of their bound) and its chosen value on the held-out instances
    (large marker, filled when it meets). x: the 95% upper bound of the
    mean violation frequency (q, or q_max per machine), with a line back to
    the mean; y: machines per 1,000 tasks with its 95% interval."""
    fig = Figure(figsize=(8.0, 5.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    metric = "q_max" if result.per_machine else "q"
    per = 1000 / result.tasks
    bounds, handles = [], []
    for f in result.families:
        color = FAMILY_COLORS.get(f.family, "0.3")
        tried = sorted(f.tried, key=lambda t: (t[1][metric + "_ci_high"], t[1]["m_abs_mean"]))
        x = np.array([s[metric + "_ci_high"] for _, s in tried])
        mean = np.array([s[metric + "_mean"] for _, s in tried])
        y = np.array([s["m_abs_mean"] for _, s in tried]) * per
        ax.plot(x, y, "-", color=color, lw=0.8, alpha=0.6)
        ax.errorbar(x, y, xerr=[x - np.where(mean > 0, mean, x), np.zeros_like(x)],
                    yerr=[y - np.array([s["m_abs_ci_low"] for _, s in tried]) * per,
                          np.array([s["m_abs_ci_high"] for _, s in tried]) * per - y],
                    fmt="o", ms=3.5, color=color, elinewidth=0.7, capsize=1.5)
        s = f.held_out
        hx, hy = s[metric + "_ci_high"], s["m_abs_mean"] * per
        label = (f"{f.chosen.estimator}" + (f" h={f.chosen.headroom:g}" if f.family == "max" else "")
                 + ("" if f.meets else " (misses)"))
        ax.errorbar([hx], [hy], yerr=[[hy - s["m_abs_ci_low"] * per], [s["m_abs_ci_high"] * per - hy]],
                    fmt="*", ms=13, color=color, mfc=color if f.meets else "white", mec=color, capsize=3,
                    label=label)
        # the legend's glyph: the star alone, without the interval's bar and caps
        handles.append(Line2D([], [], ls="none", marker="*", ms=11, color=color,
                              mfc=color if f.meets else "white", mec=color, label=label))
        bounds.extend(x.tolist() + [hx])
    ax.axvline(result.target, color="black", ls="--", lw=1)
    ax.text(result.target, 0.98, f" target {result.target:.3g}", transform=ax.get_xaxis_transform(),
            va="top", ha="left", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(ScalarFormatter())
    positive = [b for b in bounds if b > 0]
    if positive:
        ax.set_xlim(min(positive + [result.target]) / 2, min(1.0, max(positive + [result.target]) * 2))
    view = "worst machine q_max" if result.per_machine else "fleet-wide q"
    ax.set_xlabel(f"95% upper bound of mean {view} (line back to the mean)")
    ax.set_ylabel("machines per 1,000 tasks (mean, 95% interval)")
    ax.set_title(f"Plan for SLO {result.slo:.10g}: training probes (dots, {result.training} instances), "
                 f"held-out choice (stars, {result.held_out})", fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(handles=handles, fontsize=7, loc="upper right", title="held-out choice (hollow: misses)",
              title_fontsize=7)
    return fig


def plot_frontier(result, path) -> None:
    """Write the frontier figure as a PNG at ``path`` atomically."""
    save_png(frontier_figure(result), path)
